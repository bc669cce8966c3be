"""s11_export — 把一个会话渲染成 Markdown，或一张离线可看的 HTML 页面（纯函数，不读写磁盘）。

    session dict ──► _view(): redacted copy (s11_redact) + lineage path + counts + source facts
                       │
                       ├─► message_parts(): text | thinking | tool_call | tool_output | image | unknown
                       └─► message_marks(): 🏷️ label · 🗜️ summary · ⚙️ meta · 🛰️ subagent · model · 🕒 time
                                 │
                 ┌───────────────┴───────────────┐
          markdown_chunks()                  html_chunks()
          the chapter's export_markdown      <!doctype html>, CSP, no <script>, no URL,
          layout; risky text → a fence       every string through html.escape()
                 │                                │
          render_markdown() = "".join        render_html() = "".join

Key insight: 导出的是不可信文本——消息里的 ```、### 、<script> 或 ![](http://…) 不能改写文档结构，
也不能让阅读器去外网取图：普通文本原样输出（与章节的 export_markdown 逐字节一致），
可疑文本装进一个结尾由我们掌控的代码围栏。

Guarantees: the input dicts are never mutated; with redact=True (the default) the title, every
message string, the source facts and the lineage titles are masked; with redact=False the original
text is kept verbatim. Every check is one linear scan (`in` / str.find, or a regex whose only loop is a
single character class), and message text travels as its own chunk until the final join: a 200 MB
session costs a few times what json.loads of it costs, and a caller can stream the chunks to a file.

Out of scope: turning message Markdown into HTML (the page shows text pre-wrapped — the standard
library has no Markdown parser), embedding images (a placeholder line instead), links between
exported pages, the source's working folder (a path from someone's machine), and reading or
writing files (that is SessionStore's job).
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import s11_redact

ROLE_ICONS = {"system": "🧠", "user": "👤", "assistant": "🤖", "tool": "🔧", "toolResult": "🔧"}
DEFAULT_ICON = "📄"
TOOL_ROLES = {"tool", "toolResult"}   # their text is a tool's output, so it is shown as output
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
FORMAT_NAMES = {"claude-code": "Claude Code", "pi": "Pi"}


class Part(NamedTuple):
    kind: str              # text | thinking | tool_call | tool_output | image | unknown
    text: str
    caption: str = ""      # tool name, tool-call id or unknown block type
    is_error: bool = False
    truncated_from: int = 0   # the original length in characters when the importer cut this text


class _View(NamedTuple):
    session_id: str
    title: str
    parent_id: str | None
    created_at: str
    fork_point: int        # how many leading messages came from the parent; 0 for a root
    messages: list[dict]
    path: list[dict]       # lineage summaries from the root down to this session
    counts: dict[str, int]
    tool_names: dict[str, str]
    source: str            # one sentence about where an imported node came from; "" otherwise


# ── the parts of a message ──────────────────────────────────────────────────────────────────


def message_parts(message: dict, tool_names: dict[str, str] | None = None) -> list[Part]:
    """Flatten one message (string content or a list of Claude / Pi blocks) into display parts.

    tool_names maps tool-call ids to tool names (see tool_call_names), because a Claude
    tool_result only names the call id.

    >>> message_parts({"role": "toolResult", "toolName": "bash", "content": [{"type": "text", "text": "ok"}]})
    [Part(kind='tool_output', text='ok', caption='bash', is_error=False, truncated_from=0)]
    """
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    parts = [_block_part(block) for block in blocks if block is not None]
    if message.get("role") in TOOL_ROLES:
        parts = _as_tool_output(parts, message)
    names = tool_names or {}
    return [part._replace(caption=names.get(part.caption, part.caption)) if part.kind == "tool_output" else part
            for part in parts]


def tool_call_names(messages: list[dict]) -> dict[str, str]:
    """Map every tool-call id in the session to its tool name.

    >>> tool_call_names([{"content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]}])
    {'toolu_1': 'Bash'}
    """
    names = {}
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") in ("tool_use", "toolCall") and block.get("id"):
                names[str(block["id"])] = _as_text(block.get("name"))
    return names


def message_marks(message: dict) -> list[tuple[str, str]]:
    """The extras an imported message carries, as (kind, short text) pairs in a fixed order.

    >>> message_marks({"role": "user", "label": "修复前", "summary": True, "model": "m1"})
    [('label', '🏷️ 修复前'), ('summary', '🗜️ 压缩摘要'), ('model', '模型 m1')]
    """
    if not _MARKS.keys() & message.keys():   # the chapter's messages carry none: one set test, in C
        return []
    return [(key, show(message[key])) for key, show in _MARKS.items() if message.get(key) not in (None, False, "")]


_MARKS = {   # message key -> how its value reads; booleans only need to be there
    "label": lambda value: f"🏷️ {_one_line(value)}",
    "summary": lambda value: "🗜️ 压缩摘要",
    "meta": lambda value: "⚙️ 代理注入的文字",
    "subagent": lambda value: "🛰️ 子代理",
    "model": lambda value: f"模型 {_one_line(value)}",
    "timestamp": lambda value: f"🕒 {_one_line(value)}",
}


def truncation_note(original_length: int) -> str:
    """'…已截断，原长 N 字符' for a text the importer cut (0 = not cut)."""
    return f"…已截断，原长 {original_length} 字符" if original_length else ""


def _as_tool_output(parts: list[Part], message: dict) -> list[Part]:
    # Pi's toolResult (and OpenAI-style "tool") messages carry a tool's output as plain text blocks.
    caption = _as_text(message.get("toolName") or message.get("name"))
    is_error = bool(message.get("isError") or message.get("is_error"))
    return [part._replace(kind="tool_output", caption=caption, is_error=is_error) if part.kind == "text" else part
            for part in parts]


def _block_part(block: Any) -> Part:
    if isinstance(block, str):
        return Part("text", block)
    if not isinstance(block, dict):
        return Part("unknown", _pretty_json(block), type(block).__name__)
    part = _BLOCK_READERS.get(block.get("type"), _unknown_block)(block)
    return part._replace(truncated_from=_original_length(block)) if "truncated_from" in block else part


def _original_length(block: dict) -> int:
    value = block.get("truncated_from")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _tool_result_part(block: dict) -> Part:
    # Claude's tool_result content is either a string or a list of blocks (text, image, …).
    content = block.get("content")
    if isinstance(content, list):
        text = "\n".join(_flat_text(_block_part(item)) for item in content)
    else:
        text = _as_text(content)
    return Part("tool_output", text, _as_text(block.get("tool_use_id")), bool(block.get("is_error")))


def _flat_text(part: Part) -> str:
    note = truncation_note(part.truncated_from)
    return f"{part.text}\n{note}" if note else part.text


def _image_part(block: dict) -> Part:
    # Claude keeps the type in source.media_type, Pi in mimeType, the importer's placeholder in media_type.
    source = block.get("source") if isinstance(block.get("source"), dict) else {}
    media_type = _one_line(block.get("media_type") or source.get("media_type") or block.get("mimeType") or "image")
    size = block.get("size")
    size_text = f"{_human_size(size)}，" if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else ""
    return Part("image", f"图片（{media_type}，{size_text}未随导出保存）")


def _human_size(count: int) -> str:
    """1536 -> '1.5 KB' (the size of the image's base64 text, as the importer measured it)."""
    if count < 1024:
        return f"{count} 字节"
    for unit in ("KB", "MB", "GB"):
        count /= 1024
        if count < 1024 or unit == "GB":
            return f"{count:.1f} {unit}"
    return ""


def _unknown_block(block: dict) -> Part:
    return Part("unknown", _pretty_json(block), _as_text(block.get("type")))


_BLOCK_READERS = {
    "text": lambda block: Part("text", _as_text(block.get("text"))),
    "thinking": lambda block: Part("thinking", _as_text(block.get("thinking"))),
    "redacted_thinking": lambda block: Part("thinking", "（加密的思考内容，未随导出保存）"),
    "tool_use": lambda block: Part("tool_call", _pretty_json(block.get("input", {})), _as_text(block.get("name"))),
    "toolCall": lambda block: Part("tool_call", _pretty_json(block.get("arguments", {})),
                                   _as_text(block.get("name"))),
    "tool_result": _tool_result_part,
    "image": _image_part,
}


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else _pretty_json(value)


def _one_line(value: Any) -> str:
    text = _as_text(value)
    return _LINE_BREAK.sub(" ", text) if "\n" in text or "\r" in text else text


def _pretty_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


# ── what both formats show ──────────────────────────────────────────────────────────────────


def _view(session: dict, lineage: list[dict] | None, redact: bool) -> _View:
    title = str(session.get("title") or "未命名会话")
    messages = [item if isinstance(item, dict) else {"content": item} for item in session.get("messages") or []]
    path = _lineage_path(session, lineage, len(messages))
    source = _source_sentence(session.get("source"))
    counts: dict[str, int] = {}
    if redact:
        (title, messages, source), counts = s11_redact.redact_value([title, messages, source])
        # Ancestors' titles are masked too, but counted in their own exports, not in this one.
        path, _ = s11_redact.redact_value(path)
    return _View(str(session.get("session_id") or ""), title, session.get("parent_id"),
                 str(session.get("created_at") or ""), _fork_point(session), messages, path, counts,
                 tool_call_names(messages), source)


def _lineage_path(session: dict, lineage: list[dict] | None, message_count: int) -> list[dict]:
    # Tolerate no lineage, or one that stops at the parent: this session always ends the path.
    path = [entry for entry in lineage or [] if isinstance(entry, dict)]
    if not path or path[-1].get("session_id") != session.get("session_id"):
        path.append({"session_id": session.get("session_id"), "title": session.get("title"),
                     "message_count": message_count, "fork_point": session.get("fork_point"),
                     "parent_id": session.get("parent_id")})
    return path


def _fork_point(session: dict) -> int:
    value = session.get("fork_point")
    is_count = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if is_count and session.get("parent_id") else 0


def _source_sentence(source: Any) -> str:
    """{"format": "pi", "file": "a.jsonl", "session_id": "s9"} -> 'Pi 会话记录 a.jsonl（会话 s9）'."""
    if not isinstance(source, dict) or not source:
        return ""
    kind = source.get("format")
    details = [f"{label} {_one_line(source[key])}" for key, label in
               (("session_id", "会话"), ("agent_version", "版本"), ("git_branch", "Git 分支"))
               if source.get(key) not in (None, "")]
    sentence = f"{FORMAT_NAMES.get(kind, _one_line(kind or '未知格式'))} 会话记录 {_one_line(source.get('file') or '')}"
    sentence = sentence.rstrip() + (f"（{'，'.join(details)}）" if details else "")
    flags = [text for key, text in (("subagent", "子代理"), ("active_end", "对话当前停在本分支末尾"))
             if source.get(key)]
    if source.get("label") not in (None, ""):
        flags.insert(0, f"🏷️ {_one_line(source['label'])}")
    return " · ".join([sentence, *flags])


def _fork_sentence(view: _View) -> str:
    added = max(len(view.messages) - view.fork_point, 0)
    return f"第 {view.fork_point} 条消息（前 {view.fork_point} 条继承自父分支，其后 {added} 条为本分支新增）"


def _divider_sentence(view: _View) -> str:
    if view.fork_point >= len(view.messages):
        return f"以上 {view.fork_point} 条继承自父分支 {view.parent_id}，本分支还没有新消息"
    return f"以上 {view.fork_point} 条继承自父分支 {view.parent_id}，以下为本分支新增"


def _counts_sentence(counts: dict[str, int]) -> str:
    return "、".join(f"{label} ×{count}" for label, count in counts.items())


def _path_sentence(path: list[dict]) -> str:
    return " → ".join(f"{entry.get('title') or '未命名会话'}（{entry.get('session_id')}）" for entry in path)


# ── Markdown ────────────────────────────────────────────────────────────────────────────────

_LINE_BREAK = re.compile(r"\r\n|\r|\n")   # CommonMark's line endings (str.splitlines knows more)
# Every rule below needs one of these characters; text without any of them is inert (a fast path).
_MAYBE_STRUCTURE = re.compile(r"[<:!#=`~-]")
_RAW_HTML = re.compile(r"<[A-Za-z/!?]")   # a tag, comment, declaration or <scheme:…> autolink
_IMAGE = "!["                              # ![alt](url), ![alt][ref], ![ref]: a viewer would fetch the URL
# A literal ':' first lets the regex engine jump from colon to colon; the lookbehinds then read the scheme.
_SCRIPT_URL = re.compile(r":(?:(?<=[Jj][Aa][Vv][Aa][Ss][Cc][Rr][Ii][Pp][Tt]:)|(?<=[Vv][Bb][Ss][Cc][Rr][Ii][Pp][Tt]:))")
# A line that might be structure once its quote / list markers are skipped: a heading, a fence, or a
# setext underline. Its only loop is one character class, so a line that does not match costs its length.
_MAYBE_STRUCTURE_LINE = r"[ \t>*+0-9.)-]*(?:[#`~=]|-[ \t]*(?:\n|\Z))"
_FIRST_LINE = re.compile(f"(?={_MAYBE_STRUCTURE_LINE})")
_NEXT_LINE = re.compile(f"\n(?={_MAYBE_STRUCTURE_LINE})")            # a literal first: fast to find
_FENCE_LINE = {"`": re.compile(r"\n(?=```)"), "~": re.compile(r"\n(?=~~~)")}
_TOP_LEVEL_FENCE = re.compile(r"(`{3,})[^`]*$|(~{3,})")
_BLANKS = re.compile(r"[ \t]*")
_DIGITS = re.compile(r"[0-9]*")
_HEADING_MARK = re.compile(r"#{1,6}(?:[ \t]|$)")
_INLINE_SPECIALS = re.compile(r"([\\`*_\[\]<>&~|#])")


def markdown_chunks(session: dict, lineage: list[dict] | None = None, *, redact: bool = True) -> Iterator[str]:
    """render_markdown() in pieces, for writing a big session to a file without one giant string.

    >>> "".join(markdown_chunks({"session_id": "s1", "messages": []})).split("\\n")[0]
    '# 🗂️ 会话导出：未命名会话'
    """
    view = _view(session, lineage, redact)
    yield "\n".join([f"# 🗂️ 会话导出：{_inline(view.title)}", "",
                     f"- **会话 ID**：{_code_span(view.session_id)}",
                     f"- **父分支**：{_code_span(view.parent_id or '无（根会话）')}",
                     f"- **创建时间**：{_inline(view.created_at)}",
                     f"- **消息条数**：{len(view.messages)}",
                     *_markdown_extra_facts(view), "", "---", ""])
    for number, message in enumerate(view.messages, 1):
        role = str(message.get("role", "unknown"))
        yield f"\n### {number}. {ROLE_ICONS.get(role, DEFAULT_ICON)} {_code_span(role)}\n\n"
        marks = message_marks(message)
        bodies = [[" · ".join(_inline(text) for _, text in marks)]] if marks else []
        bodies += [_markdown_part(part) for part in message_parts(message, view.tool_names)]
        for index, pieces in enumerate(bodies):
            yield from ["\n\n", *pieces] if index else pieces
        yield "\n"
        if number == view.fork_point:
            yield f"\n> 🌿 {_inline(_divider_sentence(view))}\n"


def render_markdown(session: dict, lineage: list[dict] | None = None, *, redact: bool = True) -> str:
    """Render one session in the chapter's export_markdown layout, plus branch / redaction facts.

    >>> print(render_markdown({"session_id": "s1", "title": "t", "messages": [{"role": "user", "content": "hi"}],
    ...                        "created_at": "2026-08-25 18:46:40"}))
    # 🗂️ 会话导出：t
    <BLANKLINE>
    - **会话 ID**：`s1`
    - **父分支**：`无（根会话）`
    - **创建时间**：2026-08-25 18:46:40
    - **消息条数**：1
    <BLANKLINE>
    ---
    <BLANKLINE>
    ### 1. 👤 `user`
    <BLANKLINE>
    hi
    <BLANKLINE>
    """
    return "".join(markdown_chunks(session, lineage, redact=redact))


def _markdown_extra_facts(view: _View) -> list[str]:
    # Full-width colons stay outside **…**: CommonMark won't close bold right after punctuation.
    facts = []
    if len(view.path) > 1:
        facts.append(f"- **分支路径**：{_inline(_path_sentence(view.path))}")
    if view.fork_point:
        facts.append(f"- **分叉点**：{_inline(_fork_sentence(view))}")
    if view.source:
        facts.append(f"- **来源**：{_inline(view.source)}")
    if view.counts:
        facts.append(f"- **脱敏**：{_inline(_counts_sentence(view.counts))}")
    return facts


def _markdown_part(part: Part) -> list[str]:
    pieces = _MARKDOWN_RENDERERS[part.kind](part)
    note = truncation_note(part.truncated_from)
    return [*pieces, f"\n\n✂️ {note}"] if note else pieces


def _markdown_text(text: str) -> list[str]:
    # We don't sanitise Markdown line by line (that needs a full CommonMark parser); plain text goes
    # out as-is, anything else into a fence — the one block whose end the text can't move.
    return [text] if _is_inert_markdown(text) else _fence(text)


def _markdown_thinking(part: Part) -> list[str]:
    if not _is_inert_markdown(part.text):
        return ["> 💭 **思考**\n\n", *_fence(part.text)]
    return ["> 💭 **思考**\n>\n", _quote(part.text)]


def _quote(text: str) -> str:
    """'a\\n\\nb' -> '> a\\n>\\n> b' (an empty line is a bare '>'), in a few str passes instead of a loop."""
    if "\r" in text:
        text = _LINE_BREAK.sub("\n", text)
    quoted = "\n" + ("> " + text.replace("\n", "\n> ")) + "\n"
    # Each pass fixes every other one of consecutive empty lines, so two passes fix them all.
    quoted = quoted.replace("\n> \n", "\n>\n").replace("\n> \n", "\n>\n")
    return quoted[1:-1]


def _markdown_captioned(label: str, part: Part, info: str = "") -> list[str]:
    caption = f"**{label}** {_code_span(part.caption)}" if part.caption else f"**{label}**"
    error = " ❌ 出错" if part.is_error else ""
    return [f"{caption}{error}\n\n", *_fence(part.text, info)]


_MARKDOWN_RENDERERS = {
    "text": lambda part: _markdown_text(part.text),
    "thinking": _markdown_thinking,
    "tool_call": lambda part: _markdown_captioned("🔧 调用工具", part, "json"),
    "tool_output": lambda part: _markdown_captioned("📤 工具结果", part),
    "image": lambda part: [f"🖼️ {_inline(part.text)}"],
    "unknown": lambda part: _markdown_captioned("📦 未知内容块", part, "json"),
}


def _is_inert_markdown(text: str) -> bool:
    """True when text can sit between two message headings without changing the document's outline,
    showing an image, running a script link or drawing a diagram in the preview.

    >>> _is_inert_markdown("看这段：\\n```py\\nx = 1\\n```"), _is_inert_markdown("```py\\nx = 1")
    (True, False)
    >>> _is_inert_markdown("图：![](http://tracker.example/p.png)"), _is_inert_markdown("```mermaid\\ngraph TD\\n```")
    (False, False)
    """
    if not _MAYBE_STRUCTURE.search(text):
        return True
    if _IMAGE in text or _RAW_HTML.search(text) or _SCRIPT_URL.search(text):
        return False
    if "\r" in text:
        text = _LINE_BREAK.sub("\n", text)   # one kind of line break: every search below looks for "\n"
    start = 0 if _FIRST_LINE.match(text) else _next_line(_NEXT_LINE, text, 0)
    while start >= 0:
        end = _line_end(text, start)
        line = text[start:end]
        if opener := _TOP_LEVEL_FENCE.match(line):
            fence = opener.group(1) or opener.group(2)
            if _fence_language(line, fence) == "mermaid":
                return False   # the Gradio preview would draw it, clickable links and all
            end = _closing_line_end(text, end, fence)
            if end < 0:
                return False   # never closed: it would swallow the headings that follow
        elif _is_structure_after_markers(line, lambda start=start: _previous_line_has_text(text, start)):
            return False   # an indented or nested fence may outlive the message; the rest fake headings
        start = _next_line(_NEXT_LINE, text, end)
    return True


def _next_line(finder: re.Pattern[str], text: str, position: int) -> int:
    """Start of the next line after position that finder picks out, or -1.

    Lines it skips cannot change the fence state or the outline, so Python never looks at them.
    """
    match = finder.search(text, position)
    return match.end() if match else -1


def _closing_line_end(text: str, position: int, fence: str) -> int:
    # Jump from one line that starts with three fence characters to the next (nothing else can close it).
    start = _next_line(_FENCE_LINE[fence[0]], text, position)
    while start >= 0:
        end = _line_end(text, start)
        if _closes_fence(fence, text[start:end]):
            return end
        start = _next_line(_FENCE_LINE[fence[0]], text, end)
    return -1


def _line_end(text: str, start: int) -> int:
    found = text.find("\n", start)
    return len(text) if found < 0 else found


def _previous_line_has_text(text: str, start: int) -> bool:
    if start == 0:
        return False
    begin = text.rfind("\n", 0, start - 1) + 1
    return bool(text[begin:start - 1].strip())


def _is_structure_after_markers(line: str, previous_has_text) -> bool:
    # After any run of quote / list markers: a fence, an ATX heading, or (under a line of text) a
    # setext underline. The underline test is O(1) per position: the dashes or '=' must run to the end.
    core = line.rstrip(" \t")
    underline_from = len(core.rstrip(core[-1])) if core[-1:] in ("-", "=") else len(core)
    for position in _marker_ends(line):
        if line.startswith(("```", "~~~"), position) or _HEADING_MARK.match(line, position):
            return True
        if underline_from <= position < len(core) and previous_has_text():
            return True
    return False


def _marker_ends(line: str) -> Iterator[int]:
    """Every position where the text after a run of quote / list markers could start.

    >>> list(_marker_ends("> - 1. x")), list(_marker_ends("---"))
    ([0, 2, 4, 7], [0, 1, 2, 3])
    """
    position = _BLANKS.match(line).end()
    yield position
    while position < len(line):
        char = line[position]
        if char in ">-*+":
            position += 1
        elif "0" <= char <= "9":
            digits_end = _DIGITS.match(line, position).end()
            if digits_end - position > 9 or not line.startswith((".", ")"), digits_end):
                return   # "1234567890." is not a list marker, and neither is "12" without . or )
            position = digits_end + 1
        else:
            return
        position = _BLANKS.match(line, position).end()
        yield position


def _fence_language(line: str, fence: str) -> str:
    words = line[len(fence):].split(None, 1)
    return words[0].lower() if words else ""


def _closes_fence(fence: str, line: str) -> bool:
    # Only an unindented closer counts, so we never believe a fence is closed when CommonMark doesn't.
    closer = line.rstrip(" \t")
    return len(closer) >= len(fence) and closer.count(fence[0]) == len(closer)


def fenced(text: str, language: str = "") -> str:
    """Wrap untrusted text in a code fence it cannot close: 'a ``` b' -> a fence of 4 backticks.

    Every module that shows session text as Markdown (the tabs, the lab) uses this one.
    """
    return "".join(_fence(text, language))


def _fence(text: str, info: str = "") -> list[str]:
    # A backtick fence closes only on a run at least as long as its opener (CommonMark), so one
    # longer than any run inside the text cannot be closed early by the text.
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return [f"{ticks}{info}\n", text, f"\n{ticks}"]


def _code_span(text: str) -> str:
    text = _one_line(str(text))   # a line break would end the heading or list line
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _longest_backtick_run(text: str) -> int:
    """Length of the longest run of backticks, by doubling then halving a substring test.

    >>> _longest_backtick_run("a `b` ```c``` d"), _longest_backtick_run("none")
    (3, 0)
    """
    if "`" not in text:
        return 0
    found, missing = 1, 2   # "`" * found is in text; "`" * missing is not known to be, until checked
    while "`" * missing in text:
        found, missing = missing, missing * 2
    while missing - found > 1:
        middle = (found + missing) // 2
        found, missing = (middle, missing) if "`" * middle in text else (found, middle)
    return found


def _inline(text: str) -> str:
    # Titles and dates sit inside a heading or list line: keep them on one line, with no markup,
    # no HTML and no image ("![x](u)" reads as text once its "[" is escaped).
    return _INLINE_SPECIALS.sub(r"\\\1", _one_line(str(text)))


# ── HTML ────────────────────────────────────────────────────────────────────────────────────

_CSS = """
:root { color-scheme: light dark; --bg: #f6f6f3; --fg: #1f2328; --muted: #656d76; --card: #ffffff;
  --line: #deded8; --code: #f0f0eb; --think: #f4f0fb; --think-edge: #8250df; --error: #cf222e;
  --summary: #fff8e5; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #16181c; --fg: #e6e6e1; --muted: #9ea6b0; --card: #1f2227; --line: #33373e;
    --code: #272b32; --think: #231f30; --think-edge: #a98bf5; --error: #ff7b72; --summary: #2a2619; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 15px/1.7 system-ui, -apple-system,
  "PingFang SC", "Noto Sans CJK SC", "Microsoft YaHei", sans-serif, "Apple Color Emoji",
  "Segoe UI Emoji", "Noto Color Emoji"; overflow-wrap: anywhere; }
main { max-width: 54rem; margin: 0 auto; padding: 1.5rem 1rem 4rem; }
h1 { font-size: 1.5rem; line-height: 1.35; margin: .75rem 0 1rem; }
code, pre { font-family: ui-monospace, "SF Mono", Menlo, Consolas, "Noto Sans Mono CJK SC", monospace;
  font-size: .86em; }
.breadcrumb ol { display: flex; flex-wrap: wrap; gap: .25rem .5rem; margin: 0; padding: 0;
  list-style: none; color: var(--muted); font-size: .85rem; }
.breadcrumb li { min-width: 0; }
.breadcrumb li + li::before { content: "→"; margin-right: .5rem; }
.breadcrumb [aria-current] { color: var(--fg); font-weight: 600; }
.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .15rem 1rem;
  margin: 0 0 1.5rem; padding: .75rem 1rem; background: var(--card); border: 1px solid var(--line);
  border-radius: 8px; }
.facts div { display: contents; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; min-width: 0; }
.message { margin: .75rem 0; padding: .75rem 1rem; background: var(--card); border: 1px solid var(--line);
  border-left: 4px solid var(--role, var(--line)); border-radius: 8px; }
.message.inherited { border-left-style: dashed; }
.message.summary { background: var(--summary); }
.message h2 { margin: 0 0 .4rem; font-size: .9rem; color: var(--muted); }
[data-role="system"] { --role: #8250df; } [data-role="user"] { --role: #0969da; }
[data-role="assistant"] { --role: #1a7f37; } [data-role="tool"], [data-role="toolResult"] { --role: #bf8700; }
.marks { display: flex; flex-wrap: wrap; gap: .25rem .4rem; margin: 0 0 .5rem; padding: 0; list-style: none;
  font-size: .8rem; color: var(--muted); }
.marks li { min-width: 0; padding: 0 .5rem; border: 1px solid var(--line); border-radius: .8rem; }
.text { white-space: pre-wrap; }
figure { margin: .6rem 0 0; }
figcaption, .note { color: var(--muted); font-size: .85rem; }
.note { margin: .3rem 0 0; }
pre { margin: .25rem 0 0; padding: .6rem .8rem; max-height: 30rem; overflow: auto; white-space: pre-wrap;
  background: var(--code); border-radius: 6px; }
.error pre { border-left: 3px solid var(--error); }
.error figcaption { color: var(--error); }
.thinking { margin: .4rem 0; padding: .4rem .8rem; background: var(--think);
  border-left: 3px solid var(--think-edge); border-radius: 6px; color: var(--muted); }
.thinking summary { cursor: pointer; }
.fork { display: flex; align-items: center; gap: .75rem; margin: 1.25rem 0; color: var(--muted);
  font-size: .85rem; line-height: 1.5; text-align: center; }
.fork::before, .fork::after { content: ""; flex: 1 1 1rem; border-top: 1px dashed var(--muted); }
.fork span { flex: 0 1 auto; min-width: 0; }
"""


def html_chunks(session: dict, lineage: list[dict] | None = None, *, redact: bool = True) -> Iterator[str]:
    """render_html() in pieces, for writing a big session to a file without one giant string."""
    view = _view(session, lineage, redact)
    yield "\n".join([
        "<!doctype html>", '<html lang="zh-CN">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>会话导出：{_escape(view.title)}</title>", f"<style>{_CSS}</style>", "</head>",
        "<body>", "<main>", _html_breadcrumb(view.path), _html_header(view), ""])
    for number, message in enumerate(view.messages, 1):
        yield from _html_message(view, number, message)
        if number == view.fork_point:
            yield f'<p class="fork" role="separator"><span>🌿 {_escape(_divider_sentence(view))}</span></p>\n'
    yield "</main>\n</body>\n</html>\n"


def render_html(session: dict, lineage: list[dict] | None = None, *, redact: bool = True) -> str:
    """Render one session as a standalone, offline HTML page (inline CSS, no script, no URL).

    >>> page = render_html({"session_id": "s1", "title": "<b>", "messages": [{"role": "user", "content": "<i>"}]})
    >>> "&lt;b&gt;" in page and "&lt;i&gt;" in page and "<script" not in page
    True
    """
    return "".join(html_chunks(session, lineage, redact=redact))


def _escape(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _html_breadcrumb(path: list[dict]) -> str:
    items = []
    for depth, entry in enumerate(path):
        current = ' aria-current="page"' if depth == len(path) - 1 else ""
        title = _escape(entry.get("title") or "未命名会话")
        items.append(f"<li{current}>{title} <code>{_escape(entry.get('session_id'))}</code>"
                     f" · {_escape(entry.get('message_count', '?'))} 条</li>")
    return f'<nav class="breadcrumb" aria-label="分支路径"><ol>{"".join(items)}</ol></nav>'


def _html_header(view: _View) -> str:
    parent = f"<code>{_escape(view.parent_id)}</code>" if view.parent_id else "无（根会话）"
    facts = [("会话 ID", f"<code>{_escape(view.session_id)}</code>"), ("父分支", parent),
             ("创建时间", _escape(view.created_at)), ("消息条数", str(len(view.messages)))]
    if view.fork_point:
        facts.append(("分叉点", _escape(_fork_sentence(view))))
    if view.source:
        facts.append(("来源", _escape(view.source)))
    if view.counts:
        facts.append(("脱敏", _escape(_counts_sentence(view.counts))))
    rows = "".join(f"<div><dt>{term}</dt><dd>{value}</dd></div>" for term, value in facts)
    return f'<header><h1>🗂️ 会话导出：{_escape(view.title)}</h1><dl class="facts">{rows}</dl></header>'


def _html_message(view: _View, number: int, message: dict) -> Iterator[str]:
    role = str(message.get("role", "unknown"))
    marks = message_marks(message)
    classes = ["message", *(["inherited"] if number <= view.fork_point else []),
               *(kind for kind, _ in marks if kind in ("summary", "meta", "subagent"))]
    yield (f'<section class="{" ".join(classes)}" data-role="{_escape(role)}" id="m{number}">\n'
           f"<h2>{ROLE_ICONS.get(role, DEFAULT_ICON)} {number}. <code>{_escape(role)}</code></h2>\n")
    if marks:
        items = "".join(f'<li class="mark-{kind}">{_escape(text)}</li>' for kind, text in marks)
        yield f'<ul class="marks" aria-label="消息标记">{items}</ul>\n'
    for part in message_parts(message, view.tool_names):
        yield from _HTML_RENDERERS[part.kind](part)
        if part.truncated_from:
            yield f'<p class="note">✂️ {_escape(truncation_note(part.truncated_from))}</p>'
        yield "\n"
    yield "</section>\n"


def _html_figure(css_class: str, label: str, part: Part) -> list[str]:
    caption = f"{label} <code>{_escape(part.caption)}</code>" if part.caption else label
    error = " error" if part.is_error else ""
    status = " · ❌ 出错" if part.is_error else ""
    # The newline after <pre> is eaten by the HTML parser, so a leading newline in the text survives.
    return [f'<figure class="{css_class}{error}"><figcaption>{caption}{status}</figcaption><pre>\n',
            _escape(part.text), "</pre></figure>"]


_HTML_RENDERERS = {
    "text": lambda part: ['<div class="text">', _escape(part.text), "</div>"],
    "thinking": lambda part: ['<details class="thinking" open><summary>💭 思考</summary><div class="text">',
                              _escape(part.text), "</div></details>"],
    "tool_call": lambda part: _html_figure("tool-call", "🔧 调用工具", part),
    "tool_output": lambda part: _html_figure("tool-output", "📤 工具结果", part),
    "image": lambda part: [f'<p class="note">🖼️ {_escape(part.text)}</p>'],
    "unknown": lambda part: _html_figure("unknown", "📦 未知内容块", part),
}
