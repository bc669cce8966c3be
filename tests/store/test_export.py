"""Export: the chapter's Markdown layout, hostile text kept inert, blocks rendered, a safe offline page,
imported messages shown with their marks, no remote image anywhere, and linear work on any text."""

import copy
import doctest
import html
import json
import re
import subprocess
import sys
import tracemalloc
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s11_export
from s11_export import html_chunks, markdown_chunks, render_html, render_markdown

try:   # the regular-expression parser: public as sre_parse until 3.11, private since
    from re import _parser as regex_parser
except ImportError:   # pragma: no cover - Python 3.10
    import sre_parse as regex_parser

try:
    from markdown_it import MarkdownIt
except ImportError:   # gradio brings markdown-it-py; without it the parser-based checks are skipped
    MarkdownIt = None

needs_commonmark = pytest.mark.skipif(MarkdownIt is None, reason="markdown-it-py not installed: no CommonMark parser")
REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO.parent / "shared" / "samples"   # ../shared/samples from the repo

# ── the chapter's demo, branch B (5 inherited messages + 4 of its own) ──────────────────────

MAIN_MESSAGES = [
    {"role": "system", "content": "你是一名资深 Python 后端工程师，负责诊断并修复 Web 服务内存泄漏。"},
    {"role": "user", "content": "服务连续运行 3 天后，内存占用从 200MB 一路涨到 3GB，帮我定位根因。"},
    {"role": "assistant", "content": "已初步检查日志：怀疑全局缓存未清理 + 长连接未释放，先深入阅读代码确认。"},
    {"role": "user", "content": "我怀疑是 event_listener 注册表无限增长，帮忙重点排查。"},
    {"role": "assistant", "content": "已 grep 全局注册表，定位到 cache_store 与 ws_pool 两处高度可疑的点。"},
]
BRANCH_B_MESSAGES = MAIN_MESSAGES + [
    {"role": "assistant", "content": "方案 B：改用 WeakValueDictionary 弱引用缓存，让 GC 自动回收。"},
    {"role": "user", "content": "先别改代码，我要先对比 A/B 两套方案的压测数据再拍板。"},
    {"role": "user", "content": "压测完成：方案 B 峰值内存更低、吞吐更稳，决定采用方案 B。"},
    {"role": "assistant", "content": "✅ 已按弱引用方案完成重构，内存曲线回归平稳，问题闭环。"},
]
ROOT = {"session_id": "5d38f60f4c00", "title": "修复登录服务内存泄漏", "parent_id": None,
        "messages": MAIN_MESSAGES, "created_at": "2026-08-25 18:46:40", "fork_point": None}
BRANCH_B = {"session_id": "0994dd416b46", "title": "修复登录服务内存泄漏 · 分支", "parent_id": "5d38f60f4c00",
            "messages": BRANCH_B_MESSAGES, "created_at": "2026-08-25 18:46:40", "fork_point": 5}
BRANCH_B_LINEAGE = [
    {"session_id": "5d38f60f4c00", "title": "修复登录服务内存泄漏", "message_count": 5, "fork_point": None, "parent_id": None},
    {"session_id": "0994dd416b46", "title": "修复登录服务内存泄漏 · 分支", "message_count": 9, "fork_point": 5,
     "parent_id": "5d38f60f4c00"},
]
CHAPTER_ICONS = {"system": "🧠", "user": "👤", "assistant": "🤖"}


def chapter_export_lines(session):
    """The chapter's export_markdown, line for line (written out here, not imported)."""
    lines = [f"# 🗂️ 会话导出：{session['title']}", "",
             f"- **会话 ID**：`{session['session_id']}`",
             f"- **父分支**：`{session['parent_id'] or '无（根会话）'}`",
             f"- **创建时间**：{session['created_at']}",
             f"- **消息条数**：{len(session['messages'])}", "", "---", ""]
    for i, msg in enumerate(session["messages"], 1):
        role = msg.get("role", "unknown")
        lines += [f"### {i}. {CHAPTER_ICONS.get(role, '📄')} `{role}`", "", str(msg.get("content", "")), ""]
    return lines


def is_ordered_subsequence(wanted, lines):
    remaining = iter(lines)
    return all(any(line == want for line in remaining) for want in wanted)


def commonmark_headings(markdown):
    tokens = MarkdownIt("commonmark").parse(markdown)
    return [(token.tag, tokens[index + 1].content) for index, token in enumerate(tokens) if token.type == "heading_open"]


def commonmark_raw_html(markdown):
    tokens = MarkdownIt("commonmark").parse(markdown)
    children = [child for token in tokens for child in token.children or []]
    return [token.content for token in tokens + children if token.type in ("html_block", "html_inline")]


def expected_headings(session):
    roles = [message["role"] for message in session["messages"]]
    return [("h1", f"🗂️ 会话导出：{session['title']}")] + [
        ("h3", f"{number}. {s11_export.ROLE_ICONS.get(role, '📄')} `{role}`") for number, role in enumerate(roles, 1)]


# ── Markdown: the chapter's layout ──────────────────────────────────────────────────────────


def test_a_plain_root_session_renders_byte_identical_to_the_chapter():
    assert render_markdown(ROOT) == "\n".join(chapter_export_lines(ROOT))


def test_branch_b_keeps_every_chapter_line_in_the_chapters_order():
    lines = render_markdown(BRANCH_B, BRANCH_B_LINEAGE).split("\n")
    assert is_ordered_subsequence(chapter_export_lines(BRANCH_B), lines)


def test_the_subsequence_check_can_fail():
    lines = render_markdown(BRANCH_B, BRANCH_B_LINEAGE).split("\n")
    assert not is_ordered_subsequence(list(reversed(chapter_export_lines(BRANCH_B))), lines)


def test_a_fork_shows_its_branch_path_and_fork_point_in_the_header():
    lines = render_markdown(BRANCH_B, BRANCH_B_LINEAGE).split("\n")
    header = lines[:lines.index("---")]
    path_line = next(line for line in header if line.startswith("- **分支路径**："))
    assert path_line.index("5d38f60f4c00") < path_line.index("0994dd416b46")
    assert "- **分叉点**：第 5 条消息（前 5 条继承自父分支，其后 4 条为本分支新增）" in header


def test_a_fork_marks_where_its_own_messages_begin():
    markdown = render_markdown(BRANCH_B, BRANCH_B_LINEAGE)
    divider = markdown.index("> 🌿 以上 5 条继承自父分支")
    assert markdown.index("### 5. ") < divider < markdown.index("### 6. ")


@pytest.mark.parametrize("lineage", [None, []])
def test_without_lineage_only_this_session_is_shown(lineage):
    markdown = render_markdown(BRANCH_B, lineage)
    assert "分支路径" not in markdown and "- **分叉点**：第 5 条消息" in markdown
    page = render_html(BRANCH_B, lineage)
    crumbs = re.search(r'<nav class="breadcrumb" aria-label="分支路径"><ol>(.*?)</ol></nav>', page).group(1)
    assert crumbs.count("<li") == 1 and 'aria-current="page"' in crumbs


@needs_commonmark
def test_header_labels_render_bold_with_the_full_width_colon_outside():
    secret_session = dict(BRANCH_B, title="联系 ops@example.com")
    rendered = MarkdownIt("commonmark").render(render_markdown(secret_session, BRANCH_B_LINEAGE))
    for label in ["会话 ID", "父分支", "创建时间", "消息条数", "分支路径", "分叉点", "脱敏"]:
        assert f"<strong>{label}</strong>：" in rendered


# ── hostile text stays inert and in place ───────────────────────────────────────────────────

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "看代码：\n```python\nprint('unclosed')",
    "### 99. fake\n伪造的标题",
    "第一行\n---",
    "第一行\n=",
    "<pre>没有闭合",
    "<!-- 没有闭合的注释",
    "- 列表\n  ```\n  缩进的围栏\n```",
    "   ```\n缩进三格的围栏没有闭合",
    "```\n缩进四格的不是结束围栏\n    ```",
    "> ### 引用里的标题",
    "~~~\n波浪线围栏没有闭合",
    "`````反引号很长",
    "[点我](javascript:alert(1))",
    "回车\r### 99. fake",
]


def hostile_session():
    messages = []
    for text in HOSTILE:
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": "下一条正常消息"}]
    return {"session_id": "badbadbad000", "title": "恶意内容", "parent_id": None, "messages": messages,
            "created_at": "2026-08-25 18:46:40", "fork_point": None}


def test_hostile_markdown_text_appears_verbatim_between_its_own_heading_and_the_next():
    markdown = render_markdown(hostile_session(), redact=False)
    for number, text in enumerate(HOSTILE, 1):
        own, following = markdown.index(f"### {2 * number - 1}. "), markdown.index(f"### {2 * number}. ")
        assert own < markdown.index(text, own) < following


@needs_commonmark
def test_hostile_markdown_cannot_add_swallow_or_fake_headings():
    session = hostile_session()
    assert commonmark_headings(render_markdown(session)) == expected_headings(session)


@needs_commonmark
def test_hostile_markdown_leaves_no_raw_html_for_a_renderer():
    markdown = render_markdown(hostile_session())
    assert commonmark_raw_html(markdown) == []
    rendered = MarkdownIt("commonmark").render(markdown)
    assert not re.search(r"<(script|img)\b", rendered) and "javascript:" not in re.findall(r'href="([^"]*)"', rendered)


def test_a_script_url_link_is_fenced_rather_than_left_to_the_renderers_judgement():
    markdown = render_markdown(hostile_session(), redact=False)
    assert "\n```\n[点我](javascript:alert(1))\n```\n" in markdown


def test_a_closed_code_fence_stays_markdown_instead_of_being_fenced_again():
    text = "改成这样：\n```python\ncache = WeakValueDictionary()\n```"
    markdown = render_markdown({"session_id": "s", "title": "t", "messages": [{"role": "assistant", "content": text}]})
    assert f"`\n\n{text}\n" in markdown and "````" not in markdown


def test_the_fence_around_risky_text_is_longer_than_any_backtick_run_inside():
    markdown = render_markdown({"session_id": "s", "title": "t", "messages": [{"role": "user", "content": "``````\n### x"}]})
    assert "\n```````\n``````\n### x\n```````\n" in markdown


@given(st.lists(st.sampled_from(["`", "``", "```", "````", "`" * 16, "`" * 17, "`" * 40, "a", "\n", "汉", "~~~"]),
                max_size=12).map("".join))
def test_the_fence_is_one_backtick_longer_than_the_longest_run_and_at_least_three(text):
    # _fence_ticks looks for runs with `in`, one length at a time, up to a bound; past it, it measures every run
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    assert s11_export._fence_ticks(text) == "`" * max(3, longest + 1)


def test_titles_ids_and_roles_cannot_break_their_line():
    session = {"session_id": "a`b", "title": "标题\n### 2. 👤 `user`", "created_at": "<img src=x>",
               "messages": [{"role": "us`er\n# h", "content": "正文"}]}
    lines = render_markdown(session).split("\n")
    assert lines[0] == "# 🗂️ 会话导出：标题 \\#\\#\\# 2. 👤 \\`user\\`"
    assert lines[2] == "- **会话 ID**：``a`b``" and lines[4] == "- **创建时间**：\\<img src=x\\>"
    assert "### 1. 📄 ``us`er # h``" in lines


# ── content blocks from real Claude Code and Pi sessions ────────────────────────────────────


def sample_messages(file_name):
    path = SAMPLES / file_name
    if not path.exists():
        pytest.skip(f"sample {path} is not present")
    messages = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue   # the Pi demo file ends with a torn line on purpose
        if isinstance(entry, dict) and isinstance(entry.get("message"), dict) and "role" in entry["message"]:
            messages.append(entry["message"])
    return messages


def as_session(messages):
    return {"session_id": "sample", "title": "样例", "parent_id": None, "messages": messages, "created_at": ""}


SAMPLE_FILES = ["claude_real_rewind_branch_03eb5929.jsonl", "claude_edge_cases_malformed_lines.jsonl",
                "claude_dag_cross_session_fork.jsonl", "pi_v1_real_large_session_prefix32.jsonl",
                "pi_v3_branching_compaction_unknown_entry.jsonl", "pi_v3_demo_branch_label_torn_tail.jsonl"]


def test_pi_thinking_text_and_tool_calls_render_readably():
    assistant = next(m for m in sample_messages("pi_v3_demo_branch_label_torn_tail.jsonl")
                     if isinstance(m["content"], list) and any(b.get("type") == "thinking" for b in m["content"]))
    markdown = render_markdown(as_session([assistant]))
    assert "> 💭 **思考**\n>\n> 需要先运行测试。" in markdown
    assert "我先检查测试结果。" in markdown
    assert '**🔧 调用工具** `bash`\n\n```json\n{\n  "command": "npm test"\n}\n```' in markdown
    page = render_html(as_session([assistant]))
    assert 'class="thinking"' in page and "需要先运行测试。" in page and "&quot;npm run build&quot;" in page


def test_pi_tool_results_render_as_fenced_output_with_the_tool_name():
    result = next(m for m in sample_messages("pi_v3_demo_branch_label_torn_tail.jsonl") if m["role"] == "toolResult")
    output = result["content"][0]["text"]
    markdown = render_markdown(as_session([result]))
    assert f"**📤 工具结果** `bash`\n\n```\n{output}\n```" in markdown


def test_claude_tool_use_and_its_result_are_paired_by_tool_name():
    messages = sample_messages("claude_real_rewind_branch_03eb5929.jsonl")
    call_index = next(i for i, m in enumerate(messages)
                      if isinstance(m["content"], list) and m["content"] and m["content"][0].get("type") == "tool_use")
    call, result = messages[call_index]["content"][0], messages[call_index + 1]["content"][0]
    markdown = render_markdown(as_session(messages[call_index:call_index + 2]))
    assert f"**🔧 调用工具** `{call['name']}`" in markdown
    assert json.dumps(call["input"], ensure_ascii=False, indent=2) in markdown
    assert f"**📤 工具结果** `{call['name']}`" in markdown and result["content"] in markdown


def test_claude_error_results_are_flagged():
    messages = sample_messages("claude_edge_cases_malformed_lines.jsonl")
    failed = next(m for m in messages if isinstance(m["content"], list)
                  and any(isinstance(b, dict) and b.get("is_error") for b in m["content"]))
    assert "❌ 出错" in render_markdown(as_session([failed]))
    assert 'class="tool-output error"' in render_html(as_session([failed]))


def test_claude_thinking_shows_its_text_but_not_its_signature():
    thinking = next(b for m in sample_messages("claude_real_rewind_branch_03eb5929.jsonl") if isinstance(m["content"], list)
                    for b in m["content"] if b.get("type") == "thinking")
    for output in (render_markdown(as_session([{"role": "assistant", "content": [thinking]}])),
                   render_html(as_session([{"role": "assistant", "content": [thinking]}]))):
        assert thinking["thinking"][:60] in output.replace("&#x27;", "'") and thinking["signature"] not in output


@pytest.mark.parametrize("file_name", SAMPLE_FILES)
def test_every_sample_renders_without_python_reprs(file_name):
    session = as_session(sample_messages(file_name))
    for output in (render_markdown(session), render_html(session)):
        assert "{'type'" not in output and "'type':" not in output


@needs_commonmark
@pytest.mark.parametrize("file_name", SAMPLE_FILES)
def test_every_sample_keeps_exactly_one_heading_per_message(file_name):
    session = as_session(sample_messages(file_name))
    markdown = render_markdown(session)
    assert commonmark_headings(markdown) == expected_headings(session)
    assert commonmark_raw_html(markdown) == []


def test_a_claude_tool_result_with_a_list_of_blocks_is_flattened_into_one_output():
    message = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": [
        {"type": "text", "text": "第一段输出"}, {"type": "image", "source": {"media_type": "image/jpeg", "data": "/9j/"}}]}]}
    markdown = render_markdown(as_session([message]))
    assert "**📤 工具结果** `toolu_9`\n\n```\n第一段输出\n图片（image/jpeg，未随导出保存）\n```" in markdown


def test_images_and_unknown_blocks_get_a_placeholder_and_pretty_json():
    message = {"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "future_block", "payload": {"键": [1, 2]}}]}
    markdown = render_markdown(as_session([message]))
    assert "🖼️ 图片（image/png，未随导出保存）" in markdown and "iVBORw0KGgo" not in markdown
    assert '**📦 未知内容块** `future_block`\n\n```json\n{\n  "type": "future_block",\n  "payload": {\n    "键": [' in markdown


# ── redaction ───────────────────────────────────────────────────────────────────────────────

KEY = "sk-" + "proj-" + "Xy7Qm2Lp9Rt4Vn8Kc3Hs6Jd1"   # fake; glued so secret scanners stay quiet


def secret_session():
    return {"session_id": "5ec7e7000001", "title": f"排查 {KEY} 泄漏", "parent_id": None, "created_at": "2026-08-25 18:46:40",
            "messages": [{"role": "user", "content": f"key 是 {KEY}，发到 ops@example.com"},
                         {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "bash",
                                                            "arguments": {"command": f"export OPENAI_API_KEY={KEY}"}}]}]}


def test_redaction_masks_title_and_messages_and_counts_each_kind_in_the_header():
    session = secret_session()
    markdown, page = render_markdown(session), render_html(session)
    assert KEY not in markdown and "ops@example.com" not in markdown
    assert KEY not in page and "ops@example.com" not in page
    assert "- **脱敏**：API密钥 ×3、邮箱 ×1" in markdown.split("\n")   # title, message, tool argument
    assert "<dt>脱敏</dt><dd>API密钥 ×3、邮箱 ×1</dd>" in page


def test_redact_false_keeps_the_original_text_verbatim():
    session = secret_session()
    markdown, page = render_markdown(session, redact=False), render_html(session, redact=False)
    assert f"# 🗂️ 会话导出：排查 {KEY} 泄漏" in markdown and f"key 是 {KEY}，发到 ops@example.com" in markdown
    assert f"export OPENAI_API_KEY={KEY}" in markdown and "脱敏" not in markdown
    assert f"key 是 {KEY}，发到 ops@example.com" in page and "已脱敏" not in page


@pytest.mark.parametrize("redact", [True, False])
def test_rendering_never_mutates_the_session_or_the_lineage(redact):
    session, lineage = secret_session(), copy.deepcopy(BRANCH_B_LINEAGE)
    session_before, lineage_before = copy.deepcopy(session), copy.deepcopy(lineage)
    render_markdown(session, lineage, redact=redact)
    render_html(session, lineage, redact=redact)
    assert session == session_before and lineage == lineage_before


# ── HTML: one standalone, offline, inert page ───────────────────────────────────────────────


class PageAudit(HTMLParser):
    """Collects tags, attributes and the text inside each <section>, checking sections balance."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.attributes, self.section_texts, self.depth = [], [], [], 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [(tag, name, value or "") for name, value in attrs]
        if tag == "section":
            assert self.depth == 0, "sections must not nest"
            self.depth, self.section_texts = 1, [*self.section_texts, ""]

    def handle_endtag(self, tag):
        if tag == "section":
            assert self.depth == 1, "</section> without <section>"
            self.depth = 0

    def handle_data(self, data):
        if self.depth:
            self.section_texts[-1] += data


def audit(page):
    parser = PageAudit()
    parser.feed(page)
    parser.close()
    assert parser.depth == 0, "unclosed <section>"
    return parser


def test_page_is_a_standalone_offline_document():
    page = render_html(BRANCH_B, BRANCH_B_LINEAGE)
    assert page.startswith("<!doctype html>") and '<meta charset="utf-8">' in page and '<meta name="viewport"' in page
    assert ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; img-src data:\">") in page
    assert "color-scheme: light dark" in page and "@media (prefers-color-scheme: dark)" in page
    assert '"PingFang SC"' in page and '"Noto Sans CJK SC"' in page
    for outside_world in ("http:", "https:", "//", "url(", "@import", "<script", "<link"):
        assert outside_world not in page


def test_page_has_breadcrumb_definition_list_and_one_section_per_message():
    page = render_html(BRANCH_B, BRANCH_B_LINEAGE)
    parser = audit(page)
    assert ("nav", "aria-label", "分支路径") in parser.attributes
    assert parser.tags.count("section") == len(BRANCH_B_MESSAGES)
    assert parser.tags.count("dt") == parser.tags.count("dd") >= 5
    crumbs = re.search(r"<ol>(.*?)</ol>", page).group(1)
    assert crumbs.index("修复登录服务内存泄漏 <code>5d38f60f4c00</code>") < crumbs.index('aria-current="page"')
    for message, text in zip(BRANCH_B_MESSAGES, parser.section_texts):
        assert message["content"] in text


def test_page_marks_inherited_messages_and_the_fork_point():
    page = render_html(BRANCH_B, BRANCH_B_LINEAGE)
    classes = re.findall(r'<section class="([^"]*)"', page)
    assert classes == ["message inherited"] * 5 + ["message"] * 4
    assert page.index('id="m5"') < page.index('class="fork"') < page.index('id="m6"')


def test_hostile_text_is_escaped_inert_and_stays_in_its_own_section():
    session = hostile_session()
    page = render_html(session, redact=False)
    parser = audit(page)
    assert parser.tags.count("section") == len(session["messages"])
    assert not {"script", "img", "iframe", "object", "embed", "a", "link", "form"} & set(parser.tags)
    assert not [attr for attr in parser.attributes if attr[1].startswith("on") or attr[1] in ("src", "href")]
    for number, text in enumerate(HOSTILE):
        # HTML turns a lone \r into \n, so compare the text as the browser will show it.
        assert text.replace("\r", "\n") in parser.section_texts[2 * number].replace("\r", "\n")
    assert "<script" not in page


def test_attribute_values_from_the_session_cannot_break_out():
    session = {"session_id": 'x" onmouseover="alert(1)', "title": "t",
               "messages": [{"role": 'user" onclick="alert(1)', "content": "hi"}]}
    parser = audit(render_html(session))
    assert not [attr for attr in parser.attributes if attr[1].startswith("on")]


@given(st.text(alphabet=st.sampled_from(list("&<>\"'a;#x27amp") + ["汉", "🤖", "\udc80", "\x00"]), max_size=40))
def test_escaping_gives_what_html_escape_gives_for_any_text(text):
    # _escape skips the replacements a text does not need; what it returns must be html.escape's, byte for byte
    # ("&" first, so "&lt;" in the input becomes "&amp;lt;", never "&lt;" again).
    assert s11_export._escape(text) == html.escape(text, quote=True)


def test_a_leading_newline_in_tool_output_survives_the_pre_element():
    message = {"role": "toolResult", "toolName": "bash", "content": [{"type": "text", "text": "\n空行开头"}]}
    parser = audit(render_html(as_session([message])))
    assert "\n\n空行开头" in parser.section_texts[0]   # the first newline after <pre> is dropped by HTML


# ── linear work on any text (a long run of "-" once took 47 s) ─────────────────────────────


def line_by_line_oracle(text):
    """The previous inertness check, written out: one regex per line — right, but quadratic on a long
    run of '-' under a line of text (its prefix loop and the underline both match dashes)."""
    prefix = r"^[ \t]*(?:(?:>|[-*+]|[0-9]{1,9}[.)])[ \t]*)*"
    heading, underline = re.compile(prefix + r"#{1,6}(?:[ \t]|$)"), re.compile(prefix + r"(?:=+|-+)[ \t]*$")
    any_fence, top_fence = re.compile(prefix + r"(?:`{3,}|~{3,})"), re.compile(r"(`{3,})[^`]*$|(~{3,})")
    if re.search(r"<[A-Za-z/!?]|(?<![A-Za-z])(?:javascript|vbscript):", text, re.IGNORECASE):
        return False
    open_fence, previous = "", ""
    for line in re.split(r"\r\n|\r|\n", text):
        if open_fence:
            closer = line.rstrip(" \t")
            open_fence = "" if len(closer) >= len(open_fence) and set(closer) == {open_fence[0]} else open_fence
        elif opener := top_fence.match(line):
            open_fence = opener.group(1) or opener.group(2)
        elif any_fence.match(line) or heading.match(line) or (previous.strip() and underline.match(line)):
            return False
        previous = line
    return not open_fence


MARKDOWN_TOKENS = ["-", "=", "#", "`", "~", ">", "*", "+", "1", "2.", "3)", "1234567890.", " ", "\t", "\n", "\r",
                   "\r\n", "字", "x", "```", "~~~", "---", "###", "####### ", "```py", "script:", "<b>", ":"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(MARKDOWN_TOKENS), max_size=18).map("".join))
def test_the_linear_check_agrees_with_the_line_by_line_oracle(text):
    assert s11_export._is_inert_markdown(text) == line_by_line_oracle(text)


def test_the_structure_characters_looked_for_with_in_are_the_regex_class():
    # _is_inert_markdown looks for these 8 characters with `in`; the character class says which ones they must be
    looked_for = {chr(code) for code in range(0x3100) if any(map(chr(code).__contains__, s11_export._STRUCTURE_CHARS))}
    assert looked_for == {chr(code) for code in range(0x3100) if s11_export._MAYBE_STRUCTURE.search(chr(code))}
    assert len(s11_export._STRUCTURE_CHARS) == 8


@pytest.mark.parametrize(("text", "inert"), [
    ("图 ![x](http://t.example/p.png)", False), ("a <b>x</b>", False), ("[x](javascript:alert(1))", False),
    ("see: VBScript:run", False), ("a ! [not an image] < 3 : ok", True), ("plain -- text", True)])
def test_the_three_always_risky_forms_are_found_behind_their_first_character(text, inert):
    # each of the three checks first asks `in` for a character its form must hold ("!", "<" or ":")
    assert s11_export._is_inert_markdown(text) is inert


def unbounded_repeats_inside_unbounded_repeats(pattern):
    """Sub-patterns like (?:x[ \t]*)* — a loop inside a loop, the shape that backtracks super-linearly."""
    found = []

    def walk(items, inside_loop):
        for op, argument in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                low, high, body = argument
                unbounded = high == regex_parser.MAXREPEAT
                if unbounded and inside_loop:
                    found.append(str(body))
                walk(body, inside_loop or unbounded)
            elif name == "SUBPATTERN":
                walk(argument[-1], inside_loop)
            elif name == "BRANCH":
                for branch in argument[1]:
                    walk(branch, inside_loop)
            elif name in ("ASSERT", "ASSERT_NOT"):
                walk(argument[1], inside_loop)

    walk(regex_parser.parse(pattern.pattern, pattern.flags), False)
    return found


def module_patterns():
    values = list(vars(s11_export).values())
    values += [item for value in values if isinstance(value, dict) for item in value.values()]
    return [value for value in values if isinstance(value, re.Pattern)]


def test_no_pattern_of_the_exporter_nests_one_loop_inside_another():
    assert len(module_patterns()) >= 8
    assert unbounded_repeats_inside_unbounded_repeats(re.compile(r"^[ \t]*(?:(?:>|[-*+])[ \t]*)*-+$"))   # can fail
    assert {pattern.pattern: unbounded_repeats_inside_unbounded_repeats(pattern) for pattern in module_patterns()
            if unbounded_repeats_inside_unbounded_repeats(pattern)} == {}


def count_lines_looked_at(monkeypatch):
    seen = []
    original = s11_export._line_end
    monkeypatch.setattr(s11_export, "_line_end", lambda text, start: seen.append(start) or original(text, start))
    return seen


def test_lines_inside_a_closed_fence_and_plain_lines_are_never_looked_at_one_by_one(monkeypatch):
    seen = count_lines_looked_at(monkeypatch)
    code = "```python\n" + "# 注释里的井号不是标题\n--\n" * 50_000 + "```\n" + "- 普通的列表项\n" * 50_000 + "结尾"
    assert s11_export._is_inert_markdown(code)
    assert len(seen) == 2   # the opener and the closer; list items and the fence's content are skipped in C


def test_a_text_that_only_looks_like_a_fence_inside_costs_one_look_per_fence_line(monkeypatch):
    seen = count_lines_looked_at(monkeypatch)
    text = "````\n" + "```\n" * 10_000 + "````"
    assert s11_export._is_inert_markdown(text)
    assert len(seen) == 10_002


N = 100_000   # at 40,000 the old check took 47 s; now each case takes milliseconds
PATHOLOGICAL = {   # name -> (message text, whether it must be fenced)
    "a long run of dashes under text, then a letter": ("文字\n" + "-" * N + "x", False),
    "a long setext underline": ("文字\n" + "-" * N, True),
    "a long run of '=' under text, then a letter": ("文字\n" + "=" * N + "x", False),
    "dashes and spaces, then a letter": ("文字\n" + "- " * N + "x", False),
    "one dash, many spaces, a letter": ("文字\n-" + " " * N + "x", False),
    "ordered markers, then a letter": ("文字\n" + "1." * N + "x", False),
    "quote markers, then a heading": ("> " * N + "# 标题", True),
    "many closed fences": ("```\n" * N, False),
    "many fences, the last never closed": ("```\n" * (N + 1), True),
    "many fences after carriage returns": ("```\r" * N, False),
    "many setext underlines": ("文字\n-\n" * (N // 4), True),
    "many short dash lines under text, then letters": ("文字\n" + ("-" * 50 + "x\n") * (N // 50), False),
    "a long backtick run": ("`" * N, True),
    "a long run of colons": (":" * N, False),
    "many 'script:' without a scheme before": ("script:" * (N // 7), False),
    "a long run of '!'": ("!" * N, False),
}


@pytest.mark.parametrize("name", PATHOLOGICAL)
def test_pathological_text_exports_whole_and_in_place(name):
    text, fenced = PATHOLOGICAL[name]
    session = {"session_id": "s", "title": text[:300], "messages": [{"role": "user", "content": text}]}
    ticks = "`" * max(3, max(map(len, re.findall("`+", text)), default=0) + 1)
    body = f"{ticks}\n{text}\n{ticks}" if fenced else text
    assert render_markdown(session, redact=False).endswith(f"### 1. 👤 `user`\n\n{body}\n")
    assert s11_export._escape(text) in render_html(session, redact=False)


# ── big sessions: message text travels as its own chunk, memory stays near the output ──────


def big_session(messages=400, size=10_000):
    text = ("内存从 200MB 涨到 3GB，先看 cache_store 与 ws_pool。" * (size // 40))[:size]
    return {"session_id": "b1g", "title": "大会话", "messages": [
        {"role": "user" if number % 2 else "assistant", "content": [
            {"type": "text", "text": f"{number} {text}"},
            {"type": "tool_result", "tool_use_id": f"t{number}", "content": f"{number}\n{text}"}]}
        for number in range(messages)]}


def test_message_text_is_passed_through_as_its_own_chunk_not_copied():
    session = big_session(messages=2)
    chunks = list(markdown_chunks(session, redact=False))
    for block in session["messages"][1]["content"]:
        text = block.get("text") or block.get("content")
        assert any(chunk is text for chunk in chunks)   # the inert text, and the fenced tool output


def traced_peak(function):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        result = function()
        return tracemalloc.get_traced_memory()[1] - before, result
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("chunks", [markdown_chunks, html_chunks])
def test_streaming_a_big_export_holds_about_one_message_at_a_time(chunks):
    session = big_session()   # ~8 MB of text
    peak, written = traced_peak(lambda: sum(len(chunk) for chunk in chunks(session, redact=False)))
    assert written > 8_000_000 and peak < 1_000_000


@pytest.mark.parametrize("render", [render_markdown, render_html])
def test_a_whole_export_costs_little_more_than_the_string_it_returns(render):
    session = big_session()
    peak, output = traced_peak(lambda: render(session, redact=False))
    assert peak < 1.25 * sys.getsizeof(output)


# ── no remote image, in the Markdown or in any viewer of it (the export must stay offline) ──

TRACKER = "tracker.example"
REMOTE_IMAGES = [
    f"看图 ![截图](http://{TRACKER}/a.png)",
    f"![](https://{TRACKER}/b.png)",
    f"![图][r]\n\n[r]: http://{TRACKER}/c.png",
    f"<http://{TRACKER}/d.png>",
    f"<img src=http://{TRACKER}/e.png>",
    f'<img src="https://{TRACKER}/f.png" alt="x">',
    f"[![徽章](https://{TRACKER}/g.svg)](https://{TRACKER}/)",
    f"![x](<http://{TRACKER}/h.png>)",
    f'![x]( http://{TRACKER}/i.png "标题")',
    "![shortcut]",                            # resolved by the definition in the next message
    f"[shortcut]: http://{TRACKER}/j.png",
    f"```\n代码块\n```\n\n![k](http://{TRACKER}/k.png)",
]


def remote_image_session():
    messages = [{"role": "user", "content": text} for text in REMOTE_IMAGES]
    messages += [
        {"role": "assistant", "content": [{"type": "thinking", "thinking": f"![t](http://{TRACKER}/t.png)"},
                                          {"type": "text", "text": f"![u](http://{TRACKER}/u.png)"}]},
        {"role": "toolResult", "toolName": f"![n](http://{TRACKER}/n.png)",
         "content": [{"type": "text", "text": f"![o](http://{TRACKER}/o.png)"}]},
        {"role": "user", "label": f"![l](http://{TRACKER}/l.png)", "model": f"<img src=http://{TRACKER}/m.png>",
         "content": [{"type": "image", "omitted": True, "media_type": f"![p](http://{TRACKER}/p.png)", "size": 9}]},
        {"role": f"![r](http://{TRACKER}/r.png)", "content": "角色名里的图片"},
    ]
    return {"session_id": "1mg000000001", "title": f"标题 ![s](http://{TRACKER}/s.png)", "messages": messages,
            "source": {"format": "pi", "file": f"![f](http://{TRACKER}/f.png).jsonl"}}


def inline_tokens(markdown):
    tokens = MarkdownIt("commonmark").parse(markdown)
    return tokens + [child for token in tokens for child in token.children or []]


@needs_commonmark
def test_no_image_survives_in_the_markdown_export():
    session = remote_image_session()
    markdown = render_markdown(session, redact=False)
    assert [token.type for token in inline_tokens(markdown) if token.type in ("image", "html_inline", "html_block")] == []
    assert "<img" not in MarkdownIt("commonmark").render(markdown)
    headings = commonmark_headings(markdown)   # the title's "[" is escaped, so compare it apart
    assert headings[1:] == expected_headings(session)[1:] and "\\[s\\]" in headings[0][1]
    for text in REMOTE_IMAGES:   # every link is still there to read, as text
        assert text in markdown


@needs_commonmark
def test_the_image_check_can_fail():
    tokens = inline_tokens(f"![](http://{TRACKER}/a.png)")
    assert [token.type for token in tokens if token.type == "image"] == ["image"]


URL_ATTRIBUTES = {"src", "href", "srcset", "action", "formaction", "poster", "data", "background", "ping", "cite",
                  "longdesc", "manifest", "xlink:href", "srcdoc", "style"}


def test_no_element_of_the_html_export_has_a_remote_src_or_href():
    page = render_html(remote_image_session(), redact=False)
    parser = audit(page)
    assert [attribute for attribute in parser.attributes if attribute[1] in URL_ATTRIBUTES] == []
    assert f'content="{s11_export.CONTENT_SECURITY_POLICY}"' in page
    assert s11_export.CONTENT_SECURITY_POLICY.startswith("default-src 'none';")
    style = page[page.index("<style>"):page.index("</style>")]
    assert "url(" not in style and "@import" not in style
    assert "&lt;img src=http://tracker.example/e.png&gt;" in page   # shown, as text


# ── imported messages: truncation, omitted images and the marks a real transcript carries ────

SOURCE = {"format": "claude-code", "file": "03eb5929.jsonl", "session_id": "03eb5929-52b3",
          "agent_version": "2.1.42", "cwd": "/home/alice/secret-project", "git_branch": "main",
          "subagent": False, "active_end": True}


def imported_session():
    return {"session_id": "1mp0rted0001", "title": "导入的会话", "parent_id": None, "fork_point": None,
            "created_at": "2026-02-16 18:47:50", "source": dict(SOURCE), "messages": [
                {"role": "user", "id": "u1", "timestamp": "2026-02-16T18:47:50.590Z",
                 "content": [{"type": "text", "text": "前面一段", "truncated_from": 250000}]},
                {"role": "assistant", "model": "claude-opus-4-6", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "a.py"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                              "content": "前 100 行", "truncated_from": 123456}]},
                {"role": "user", "content": [{"type": "image", "omitted": True, "media_type": "image/png",
                                              "size": 48_000}]},
                {"role": "user", "summary": True, "content": "此前对话的摘要"},
                {"role": "user", "meta": True, "content": "<local-command-stdout>ok</local-command-stdout>"},
                {"role": "assistant", "subagent": True, "label": "检查点", "content": "子代理的结论"},
                {"role": "toolResult", "toolName": "bash", "toolCallId": "c1",
                 "content": [{"type": "text", "text": "输出", "truncated_from": 99999}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                    {"type": "text", "text": "列表里的输出", "truncated_from": 5000}]}]},
            ]}


def message_markdown(markdown, number):
    start = markdown.index(f"\n### {number}. ")
    end = markdown.find("\n### ", start + 1)
    return markdown[start:end if end >= 0 else len(markdown)]


def message_html(page, number):
    start = page.index(f'id="m{number}"')
    return page[start:page.index("</section>", start)]


def test_truncated_text_says_how_long_it_was_in_both_exports():
    session = imported_session()
    markdown, page = render_markdown(session, redact=False), render_html(session, redact=False)
    for number, length in [(1, 250000), (3, 123456), (8, 99999), (9, 5000)]:
        note = f"…已截断，原长 {length} 字符"
        assert note in message_markdown(markdown, number) and note in message_html(page, number)
    assert "前面一段\n\n✂️ …已截断，原长 250000 字符" in markdown
    assert '<p class="note">✂️ …已截断，原长 123456 字符</p>' in message_html(page, 3)


@pytest.mark.parametrize("bad", ["12", -5, True, None, {"n": 1}])
def test_a_malformed_truncation_length_is_ignored(bad):
    session = {"session_id": "s", "messages": [{"role": "user",
                                                "content": [{"type": "text", "text": "x", "truncated_from": bad}]}]}
    assert "已截断" not in render_markdown(session) and "已截断" not in render_html(session)


def test_an_omitted_image_is_a_placeholder_with_its_type_and_size():
    session = imported_session()
    placeholder = "图片（image/png，46.9 KB，未随导出保存）"
    assert f"🖼️ {placeholder}" in message_markdown(render_markdown(session), 4)
    assert placeholder in message_html(render_html(session), 4)


def test_message_marks_sit_under_the_heading_in_markdown():
    markdown = render_markdown(imported_session(), redact=False)
    assert "### 1. 👤 `user`\n\n🕒 2026-02-16T18:47:50.590Z\n\n前面一段" in markdown
    assert "### 2. 🤖 `assistant`\n\n模型 claude-opus-4-6\n\n**🔧 调用工具** `Read`" in markdown
    assert "### 5. 👤 `user`\n\n🗜️ 压缩摘要\n\n" in markdown
    assert "### 6. 👤 `user`\n\n⚙️ 代理注入的文字\n\n" in markdown
    assert "### 7. 🤖 `assistant`\n\n🏷️ 检查点 · 🛰️ 子代理\n\n子代理的结论" in markdown


def test_message_marks_are_a_list_and_classes_in_html():
    page = render_html(imported_session(), redact=False)
    assert '<section class="message summary" data-role="user" id="m5">' in page
    assert '<section class="message meta" data-role="user" id="m6">' in page
    assert '<section class="message subagent" data-role="assistant" id="m7">' in page
    assert ('<ul class="marks" aria-label="消息标记"><li class="mark-label">🏷️ 检查点</li>'
            '<li class="mark-subagent">🛰️ 子代理</li></ul>') in message_html(page, 7)
    assert '<li class="mark-model">模型 claude-opus-4-6</li>' in message_html(page, 2)


@needs_commonmark
def test_marks_add_no_heading_and_keep_the_chapter_heading_per_message():
    session = imported_session()
    assert commonmark_headings(render_markdown(session)) == expected_headings(session)


def test_where_an_imported_node_came_from_is_in_the_header_without_the_working_folder():
    session = imported_session()
    markdown, page = render_markdown(session, redact=False), render_html(session, redact=False)
    sentence = ("Claude Code 会话记录 03eb5929.jsonl（会话 03eb5929-52b3，版本 2.1.42，Git 分支 main）"
                " · 对话当前停在本分支末尾")
    assert f"- **来源**：{sentence}" in markdown.split("\n")
    assert f"<dt>来源</dt><dd>{sentence}</dd>" in page
    assert "secret-project" not in markdown and "secret-project" not in page


def test_a_subagent_node_and_its_label_show_in_the_source_line():
    session = dict(imported_session(), source=dict(SOURCE, subagent=True, active_end=False, label="修复前"))
    assert "· 🏷️ 修复前 · 子代理" in render_markdown(session, redact=False)


def test_marks_and_source_are_redacted_and_counted():
    session = imported_session()
    session["source"]["file"] = f"{KEY}.jsonl"
    session["messages"][6]["label"] = "发给 ops@example.com"
    markdown, page = render_markdown(session), render_html(session)
    assert KEY not in markdown and "ops@example.com" not in markdown and KEY not in page
    assert "- **脱敏**：API密钥 ×1、邮箱 ×1" in markdown.split("\n")


HOSTILE_EXTRAS = {"label": "<script>alert(1)</script>\n### 99. 伪造", "model": "{{7*7}} ${7*7}",
                  "timestamp": f"![t](http://{TRACKER}/t.png)", "summary": "<b>是</b>"}


def hostile_import_session():
    hostile_blocks = [
        {"type": "text", "text": "```mermaid\ngraph TD\n  A-->B\n  click A href \"javascript:alert(1)\"\n```"},
        {"type": "thinking", "thinking": "${7*7} {{constructor.constructor('alert(1)')()}}"},
        {"type": "text", "text": "```python\n没有闭合的围栏\n### 99. 伪造", "truncated_from": 777},
        {"type": "tool_use", "id": "t1", "name": "<img src=x onerror=alert(1)>", "input": {"c": "</pre><script>"}},
        {"type": "text", "text": "[点我](javascript:alert(1)) 与 [它](JaVaScRiPt:alert(2))"},
        {"type": "text", "text": "~~~mermaid\nsequenceDiagram\n~~~"},
    ]
    return {"session_id": "h0st11e00001", "title": "恶意的导入会话", "parent_id": None,
            "source": {"format": "<b>pi</b>", "file": "<img src=x onerror=alert(1)>.jsonl", "label": "`x`\n# y"},
            "messages": [dict({"role": "assistant", "content": hostile_blocks}, **HOSTILE_EXTRAS),
                         {"role": "user", "content": "${7*7}"}]}


@needs_commonmark
def test_hostile_imported_content_stays_inert_in_markdown():
    session = hostile_import_session()
    markdown = render_markdown(session, redact=False)
    tokens = inline_tokens(markdown)
    assert commonmark_headings(markdown) == expected_headings(session)
    assert [token.type for token in tokens if token.type in ("html_block", "html_inline", "image")] == []
    assert [token.info for token in tokens if token.type == "fence" and "mermaid" in token.info.lower()] == []
    hrefs = [token.attrGet("href") for token in tokens if token.type == "link_open"]
    assert not [href for href in hrefs if "script" in href.lower()]
    assert "${7*7}" in markdown and "{{7\\*7}}" in markdown and "49" not in markdown


def test_hostile_imported_content_stays_inert_in_html():
    session = hostile_import_session()
    page = render_html(session, redact=False)
    parser = audit(page)
    assert not {"script", "img", "a", "iframe", "svg", "math"} & set(parser.tags)
    assert not [attribute for attribute in parser.attributes if attribute[1].startswith("on")]
    assert "${7*7}" in page and "{{7*7}}" in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page and "</pre><script>" not in page


def test_the_export_benchmark_runs_and_prints_its_tables():
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_export.py"), "--messages", "40",
                           "--memory-mb", "0.3"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "machine :" in done.stdout and "## 1. export of a 40-message node" in done.stdout
    assert re.search(r"^render_markdown redact=False\s+[\d.]+\s+[\d.]+\s+[\d.]+x", done.stdout, re.MULTILINE)
    assert re.search(r"^markdown_chunks → file\s+[\d.]+", done.stdout, re.MULTILINE)
    assert not list((REPO / "benchmarks").glob(".bench-export-*"))   # scratch folders removed


def test_docstring_examples_hold():
    assert doctest.testmod(s11_export).failed == 0


# The exporter's shortcut for plain string messages must print exactly what the general path prints.
_TEXTS = st.text(alphabet=st.sampled_from(list("ab 中\n\t`~#=-*>:<![]()1.)|&\\_")), max_size=40)
_MESSAGES = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "tool", "toolResult", "weird`role", ""]),
     "content": _TEXTS},
    optional={"toolName": st.sampled_from(["bash", "Read`x", ""]), "isError": st.booleans(),
              "label": st.sampled_from(["最终方案", ""]), "name": st.sampled_from(["grep", ""])})


@settings(max_examples=300, deadline=None)
@given(st.lists(_MESSAGES, max_size=6))
def test_the_plain_message_shortcut_prints_what_the_general_path_prints(messages):
    session = {"session_id": "s1", "title": "t", "messages": messages, "created_at": "2026-01-01 00:00:00"}
    view = s11_export._view(session, None, False)
    general = "".join(f"\n### {n}. {s11_export.ROLE_ICONS.get(str(m.get('role')), s11_export.DEFAULT_ICON)} "
                      f"{s11_export._code_span(str(m.get('role')))}\n\n" + "".join(s11_export._markdown_body(view, m))
                      for n, m in enumerate(view.messages, 1))
    page = render_markdown(session, redact=False)
    assert page.endswith(general) and page[: len(page) - len(general)].endswith("---\n")


def test_a_message_without_a_role_still_shows_its_label():
    page = s11_export.render_markdown({"session_id": "s1", "messages": [{"content": "x", "label": "最终方案"}]},
                                      redact=False)
    assert "🏷️ 最终方案" in page and re.search(r"### 1\. 📄 `unknown`\n\n🏷️ 最终方案\n\nx\n$", page)
