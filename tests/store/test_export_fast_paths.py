"""The exporter's shortcuts print exactly what its general path prints: each fast check is compared with the
slower check it replaced (written out here), and whole exports with the message-by-message general path."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

import s11_export
from s11_export import render_markdown

# Characters every Markdown rule of the exporter looks at, line breaks of all three kinds, CJK and a
# non-BMP character, so generated texts hit fences, headings, underlines, HTML, images and script links.
ALPHABET = list("ab 中\n\r\t`~#=-*+>:<![]()1.)|&\\_/?") + ["\r\n", "😀"]
TOKENS = ["```", "~~~", "---", "===", "### ", "<b>", "<!--", "![x](u)", "javascript:", "VBScript:", "> ", "1. ",
          "- ", "```mermaid", "\n\n"]
TEXTS = st.lists(st.sampled_from(ALPHABET + TOKENS), max_size=24).map("".join)


def reference_is_inert(text):
    """The inertness check before the str `in` pre-checks: the same rules, each run as its regex."""
    e = s11_export
    if not e._MAYBE_STRUCTURE.search(text):
        return True
    if e._IMAGE in text or e._RAW_HTML.search(text) or e._SCRIPT_URL.search(text):
        return False
    if "\r" in text:
        text = e._LINE_BREAK.sub("\n", text)
    start = 0 if e._FIRST_LINE.match(text) else e._next_line(e._NEXT_LINE, text, 0)
    while start >= 0:
        end = e._line_end(text, start)
        line = text[start:end]
        if opener := e._TOP_LEVEL_FENCE.match(line):
            fence = opener.group(1) or opener.group(2)
            if e._fence_language(line, fence) == "mermaid":
                return False
            end = e._closing_line_end(text, end, fence)
            if end < 0:
                return False
        elif e._is_structure_after_markers(line, lambda start=start: e._previous_line_has_text(text, start)):
            return False
        start = e._next_line(e._NEXT_LINE, text, end)
    return True


def reference_code_span(text):
    text = s11_export._one_line(str(text))
    ticks = "`" * (s11_export._longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def reference_inline(text):
    return s11_export._INLINE_SPECIALS.sub(r"\\\1", s11_export._one_line(str(text)))


@settings(max_examples=1500, deadline=None)
@given(TEXTS)
def test_the_fast_inertness_check_agrees_with_the_regex_one(text):
    assert s11_export._is_inert_markdown(text) == reference_is_inert(text)


@settings(max_examples=500, deadline=None)
@given(TEXTS)
def test_code_spans_and_inline_text_match_their_general_form(text):
    assert s11_export._code_span(text) == reference_code_span(text)
    assert s11_export._inline(text) == reference_inline(text)
    assert s11_export._fence_ticks(text) == "`" * max(3, s11_export._longest_backtick_run(text) + 1)


def test_the_inline_characters_are_exactly_the_escaped_class():
    escaped = {chr(code) for code in range(0x250) if s11_export._INLINE_SPECIALS.fullmatch(chr(code))}
    assert set(s11_export._INLINE_CHARS) == escaped


def test_every_structure_character_sends_a_text_down_the_slow_path():
    # each character of the class, alone on an otherwise plain line, is one the pre-check must not skip
    for char in "<:!#=`~-":
        for text in (f"{char * 3}\n", f"字\n{char * 3}", f"x{char}![a](b)", f"<{char}a"):
            assert s11_export._is_inert_markdown(text) == reference_is_inert(text), (char, text)


# Messages: plain two-key ones (the shortcut), the same with extra keys, marks, tool fields, content blocks,
# non-string roles and contents, so every branch of markdown_chunks is taken.
ROLES = st.sampled_from(["user", "assistant", "system", "tool", "toolResult", "weird`role", "", "unknown"])
PLAIN = st.fixed_dictionaries({"role": ROLES, "content": TEXTS})
EXTRA = st.fixed_dictionaries(
    {"role": ROLES | st.integers(0, 3), "content": TEXTS | st.none() | st.integers(0, 3)},
    optional={"toolName": st.sampled_from(["bash", "Read`x", "", "toolu_1"]), "isError": st.booleans(),
              "is_error": st.booleans(), "label": st.sampled_from(["最终方案", ""]), "name": st.sampled_from(["grep", ""]),
              "meta": st.booleans(), "timestamp": st.sampled_from(["2026-01-01", ""])})
BLOCKS = st.fixed_dictionaries({"role": ROLES, "content": st.lists(st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": TEXTS}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": st.sampled_from(["toolu_1", "", "t2"]),
                           "name": st.sampled_from(["Bash", "Read`x"]), "input": st.just({"a": 1})}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": st.sampled_from(["toolu_1", "t2"]),
                           "content": TEXTS})), max_size=3)})
CONVERGE = st.fixed_dictionaries({"role": st.just("user"), "content": TEXTS,
                                  "converge": st.just({"chosen": {"session_id": "a", "title": "A"}, "others": []})})
MESSAGES = st.lists(st.one_of(PLAIN, PLAIN, EXTRA, BLOCKS, CONVERGE, TEXTS), max_size=8)


def general_markdown(view):
    """Every message through _markdown_body, the general path the shortcuts stand in for."""
    pieces = []
    for number, message in enumerate(view.messages, 1):
        role = str(message.get("role", "unknown"))
        pieces.append(f"\n### {number}. {s11_export.ROLE_ICONS.get(role, s11_export.DEFAULT_ICON)} "
                      f"{reference_code_span(role)}\n\n" + "".join(s11_export._markdown_body(view, message)))
        if number == view.fork_point:
            pieces.append(f"\n> 🌿 {reference_inline(s11_export._divider_sentence(view))}\n")
    return "".join(pieces)


@settings(max_examples=600, deadline=None)
@given(MESSAGES, st.integers(0, 9))
def test_every_shortcut_prints_what_the_general_path_prints(messages, fork_point):
    session = {"session_id": "s1", "title": "t", "messages": messages, "created_at": "2026-01-01 00:00:00",
               "parent_id": "p0", "fork_point": fork_point}
    view = s11_export.prepare(session, None, redact=False)
    page = render_markdown(session, redact=False)
    general = general_markdown(view)
    assert page.endswith(general)
    head = page[: len(page) - len(general)]
    assert head.endswith("---\n") or head.endswith("\n\n")   # the header, or the converge card after it


def reference_converge_number(messages):
    return next((number for number in range(len(messages), 0, -1)
                 if isinstance(messages[number - 1].get("converge"), dict)), 0)


def reference_tool_call_names(messages):
    names = {}
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") in ("tool_use", "toolCall") and block.get("id"):
                names[str(block["id"])] = s11_export._as_text(block.get("name"))
    return names


ODD_VALUES = st.none() | st.just(False) | st.just(0) | st.just("") | st.just([]) | st.just({}) | st.just({"a": 1})


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(PLAIN, BLOCKS, CONVERGE, st.fixed_dictionaries(
    {"role": st.just("user"), "content": ODD_VALUES, "converge": ODD_VALUES})), max_size=8))
def test_the_screened_scans_find_what_the_message_by_message_loops_find(messages):
    card = s11_export.converge_card(messages)
    assert (card.number if card else 0) == reference_converge_number(messages)
    assert s11_export.tool_call_names(messages) == reference_tool_call_names(messages)


def test_a_two_key_message_whose_keys_are_not_role_and_content_still_shows_its_mark():
    page = render_markdown({"session_id": "s1", "messages": [{"content": "x", "label": "最终方案"}]}, redact=False)
    assert "🏷️ 最终方案" in page and re.search(r"### 1\. 📄 `unknown`\n\n🏷️ 最终方案\n\nx\n$", page)
