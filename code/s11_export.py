"""s11_export — 把一个会话渲染成 Markdown，或一张离线可看的 HTML 页面（纯函数，不读写磁盘）。

    session dict ──► _view(): redacted copy (s11_redact) + lineage path + counts
                       │
                       └─► message_parts(): text | thinking | tool_call | tool_output | image | unknown
                                 │
                 ┌───────────────┴───────────────┐
          render_markdown()                 render_html()
          the chapter's export_markdown     <!doctype html>, CSP, no <script>,
          layout; risky text → a fence      every string through html.escape()

Key insight: 导出的是不可信文本——消息里的 ```、### 或 <script> 不能改写文档结构：
普通文本原样输出（与章节的 export_markdown 逐字节一致），可疑文本装进一个结尾由我们掌控的代码围栏。

Guarantees: the input dicts are never mutated; with redact=True (the default) the title, every
message string and the lineage titles are masked; with redact=False the original text is kept verbatim.

Out of scope: turning message Markdown into HTML (the page shows text pre-wrapped — the standard
library has no Markdown parser), embedding images (a placeholder line instead), links between
exported pages, and reading or writing files (that is SessionStore's job).
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, NamedTuple

import s11_redact

ROLE_ICONS = {"system": "🧠", "user": "👤", "assistant": "🤖", "tool": "🔧", "toolResult": "🔧"}
DEFAULT_ICON = "📄"
TOOL_ROLES = {"tool", "toolResult"}   # their text is a tool's output, so it is shown as output
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


class Part(NamedTuple):
    kind: str              # text | thinking | tool_call | tool_output | image | unknown
    text: str
    caption: str = ""      # tool name, tool-call id or unknown block type
    is_error: bool = False


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


# ── the parts of a message ──────────────────────────────────────────────────────────────────


def message_parts(message: dict, tool_names: dict[str, str] | None = None) -> list[Part]:
    """Flatten one message (string content or a list of Claude / Pi blocks) into display parts.

    tool_names maps tool-call ids to tool names (see tool_call_names), because a Claude
    tool_result only names the call id.

    >>> message_parts({"role": "toolResult", "toolName": "bash", "content": [{"type": "text", "text": "ok"}]})
    [Part(kind='tool_output', text='ok', caption='bash', is_error=False)]
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


def _as_tool_output(parts: list[Part], message: dict) -> list[Part]:
    # Pi's toolResult (and OpenAI-style "tool") messages carry a tool's output as plain text blocks.
    caption = _as_text(message.get("toolName") or message.get("name"))
    is_error = bool(message.get("isError") or message.get("is_error"))
    return [Part("tool_output", part.text, caption, is_error) if part.kind == "text" else part for part in parts]


def _block_part(block: Any) -> Part:
    if isinstance(block, str):
        return Part("text", block)
    if not isinstance(block, dict):
        return Part("unknown", _pretty_json(block), type(block).__name__)
    reader = _BLOCK_READERS.get(block.get("type"), _unknown_block)
    return reader(block)


def _tool_result_part(block: dict) -> Part:
    # Claude's tool_result content is either a string or a list of blocks (text, image, …).
    content = block.get("content")
    if isinstance(content, list):
        text = "\n".join(_block_part(item).text for item in content)
    else:
        text = _as_text(content)
    return Part("tool_output", text, _as_text(block.get("tool_use_id")), bool(block.get("is_error")))


def _image_part(block: dict) -> Part:
    source = block.get("source") if isinstance(block.get("source"), dict) else {}
    media_type = source.get("media_type") or block.get("mimeType") or "image"
    return Part("image", f"图片（{media_type}，未随导出保存）")


def _unknown_block(block: dict) -> Part:
    return Part("unknown", _pretty_json(block), _as_text(block.get("type")))


_BLOCK_READERS = {
    "text": lambda block: Part("text", _as_text(block.get("text"))),
    "thinking": lambda block: Part("thinking", _as_text(block.get("thinking"))),
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


def _pretty_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


# ── what both formats show ──────────────────────────────────────────────────────────────────


def _view(session: dict, lineage: list[dict] | None, redact: bool) -> _View:
    title = str(session.get("title") or "未命名会话")
    messages = [item if isinstance(item, dict) else {"content": item} for item in session.get("messages") or []]
    path = _lineage_path(session, lineage, len(messages))
    counts: dict[str, int] = {}
    if redact:
        (title, messages), counts = s11_redact.redact_value([title, messages])
        # Ancestors' titles are masked too, but counted in their own exports, not in this one.
        path, _ = s11_redact.redact_value(path)
    return _View(str(session.get("session_id") or ""), title, session.get("parent_id"),
                 str(session.get("created_at") or ""), _fork_point(session), messages, path, counts,
                 tool_call_names(messages))


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
# Lines are judged after any quote / list markers, because "> ### x" is a heading too.
_CONTAINER_PREFIX = r"^[ \t]*(?:(?:>|[-*+]|[0-9]{1,9}[.)])[ \t]*)*"
_HEADING = re.compile(_CONTAINER_PREFIX + r"#{1,6}(?:[ \t]|$)")
_SETEXT_UNDERLINE = re.compile(_CONTAINER_PREFIX + r"(?:=+|-+)[ \t]*$")
_ANY_FENCE = re.compile(_CONTAINER_PREFIX + r"(?:`{3,}|~{3,})")
_TOP_LEVEL_FENCE = re.compile(r"(`{3,})[^`]*$|(~{3,})")
_RAW_HTML_OR_SCRIPT_URL = re.compile(r"<[A-Za-z/!?]|(?<![A-Za-z])(?:javascript|vbscript):", re.IGNORECASE)
# Every rule below needs one of these characters; text without any of them is inert (a fast path).
_MAYBE_STRUCTURE = re.compile(r"[<:#=`~-]")
_INLINE_SPECIALS = re.compile(r"([\\`*_\[\]<>&~|#])")


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
    view = _view(session, lineage, redact)
    lines = [f"# 🗂️ 会话导出：{_inline(view.title)}", "",
             f"- **会话 ID**：{_code_span(view.session_id)}",
             f"- **父分支**：{_code_span(view.parent_id or '无（根会话）')}",
             f"- **创建时间**：{_inline(view.created_at)}",
             f"- **消息条数**：{len(view.messages)}",
             *_markdown_extra_facts(view), "", "---", ""]
    for number, message in enumerate(view.messages, 1):
        role = str(message.get("role", "unknown"))
        lines += [f"### {number}. {ROLE_ICONS.get(role, DEFAULT_ICON)} {_code_span(role)}", "",
                  "\n\n".join(_markdown_part(part) for part in message_parts(message, view.tool_names)), ""]
        if number == view.fork_point:
            lines += [f"> 🌿 {_inline(_divider_sentence(view))}", ""]
    return "\n".join(lines)


def _markdown_extra_facts(view: _View) -> list[str]:
    # Full-width colons stay outside **…**: CommonMark won't close bold right after punctuation.
    facts = []
    if len(view.path) > 1:
        facts.append(f"- **分支路径**：{_inline(_path_sentence(view.path))}")
    if view.fork_point:
        facts.append(f"- **分叉点**：{_inline(_fork_sentence(view))}")
    if view.counts:
        facts.append(f"- **脱敏**：{_inline(_counts_sentence(view.counts))}")
    return facts


def _markdown_part(part: Part) -> str:
    return _MARKDOWN_RENDERERS[part.kind](part)


def _markdown_text(text: str) -> str:
    # We don't sanitise Markdown line by line (that needs a full CommonMark parser); plain text goes
    # out as-is, anything else into a fence — the one block whose end the text can't move.
    return text if _is_inert_markdown(text) else _fence(text)


def _markdown_thinking(part: Part) -> str:
    if not _is_inert_markdown(part.text):
        return f"> 💭 **思考**\n\n{_fence(part.text)}"
    quoted = "\n".join(f"> {line}" if line else ">" for line in _LINE_BREAK.split(part.text))
    return f"> 💭 **思考**\n>\n{quoted}"


def _markdown_captioned(label: str, part: Part, info: str = "") -> str:
    caption = f"**{label}** {_code_span(part.caption)}" if part.caption else f"**{label}**"
    error = " ❌ 出错" if part.is_error else ""
    return f"{caption}{error}\n\n{_fence(part.text, info)}"


_MARKDOWN_RENDERERS = {
    "text": lambda part: _markdown_text(part.text),
    "thinking": _markdown_thinking,
    "tool_call": lambda part: _markdown_captioned("🔧 调用工具", part, "json"),
    "tool_output": lambda part: _markdown_captioned("📤 工具结果", part),
    "image": lambda part: f"🖼️ {_inline(part.text)}",
    "unknown": lambda part: _markdown_captioned("📦 未知内容块", part, "json"),
}


def _is_inert_markdown(text: str) -> bool:
    """True when text can sit between two message headings without changing the document's outline.

    >>> _is_inert_markdown("看这段：\\n```py\\nx = 1\\n```"), _is_inert_markdown("```py\\nx = 1")
    (True, False)
    """
    if not _MAYBE_STRUCTURE.search(text):
        return True
    if _RAW_HTML_OR_SCRIPT_URL.search(text):
        return False
    open_fence, previous = "", ""
    for line in _LINE_BREAK.split(text):
        if open_fence:
            open_fence = "" if _closes_fence(open_fence, line) else open_fence
        elif opener := _TOP_LEVEL_FENCE.match(line):
            open_fence = opener.group(1) or opener.group(2)
        elif _ANY_FENCE.match(line) or _HEADING.match(line) or (previous.strip() and _SETEXT_UNDERLINE.match(line)):
            return False   # an indented or nested fence may outlive the message; the rest fake headings
        previous = line
    return not open_fence


def _closes_fence(fence: str, line: str) -> bool:
    # Only an unindented closer counts, so we never believe a fence is closed when CommonMark doesn't.
    closer = line.rstrip(" \t")
    return len(closer) >= len(fence) and set(closer) == {fence[0]}


def _fence(text: str, info: str = "") -> str:
    # A backtick fence closes only on a run at least as long as its opener (CommonMark), so one
    # longer than any run inside the text cannot be closed early by the text.
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def _code_span(text: str) -> str:
    text = _LINE_BREAK.sub(" ", str(text))   # a line break would end the heading or list line
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _longest_backtick_run(text: str) -> int:
    if "`" not in text:
        return 0
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


def _inline(text: str) -> str:
    # Titles and dates sit inside a heading or list line: keep them on one line, with no markup or HTML.
    return _INLINE_SPECIALS.sub(r"\\\1", _LINE_BREAK.sub(" ", str(text)))


# ── HTML ────────────────────────────────────────────────────────────────────────────────────

_CSS = """
:root { color-scheme: light dark; --bg: #f6f6f3; --fg: #1f2328; --muted: #656d76; --card: #ffffff;
  --line: #deded8; --code: #f0f0eb; --think: #f4f0fb; --think-edge: #8250df; --error: #cf222e; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #16181c; --fg: #e6e6e1; --muted: #9ea6b0; --card: #1f2227; --line: #33373e;
    --code: #272b32; --think: #231f30; --think-edge: #a98bf5; --error: #ff7b72; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 15px/1.7 system-ui, -apple-system,
  "PingFang SC", "Noto Sans CJK SC", "Microsoft YaHei", sans-serif, "Apple Color Emoji",
  "Segoe UI Emoji", "Noto Color Emoji"; }
main { max-width: 54rem; margin: 0 auto; padding: 1.5rem 1rem 4rem; }
h1 { font-size: 1.5rem; line-height: 1.35; margin: .75rem 0 1rem; }
code, pre { font-family: ui-monospace, "SF Mono", Menlo, Consolas, "Noto Sans Mono CJK SC", monospace;
  font-size: .86em; }
.breadcrumb ol { display: flex; flex-wrap: wrap; gap: .25rem .5rem; margin: 0; padding: 0;
  list-style: none; color: var(--muted); font-size: .85rem; }
.breadcrumb li + li::before { content: "→"; margin-right: .5rem; }
.breadcrumb [aria-current] { color: var(--fg); font-weight: 600; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0 0 1.5rem;
  padding: .75rem 1rem; background: var(--card); border: 1px solid var(--line); border-radius: 8px; }
.facts div { display: contents; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; overflow-wrap: anywhere; }
.message { margin: .75rem 0; padding: .75rem 1rem; background: var(--card); border: 1px solid var(--line);
  border-left: 4px solid var(--role, var(--line)); border-radius: 8px; }
.message.inherited { border-left-style: dashed; }
.message h2 { margin: 0 0 .4rem; font-size: .9rem; color: var(--muted); }
[data-role="system"] { --role: #8250df; } [data-role="user"] { --role: #0969da; }
[data-role="assistant"] { --role: #1a7f37; } [data-role="tool"], [data-role="toolResult"] { --role: #bf8700; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; }
figure { margin: .6rem 0 0; }
figcaption, .note { color: var(--muted); font-size: .85rem; }
pre { margin: .25rem 0 0; padding: .6rem .8rem; max-height: 30rem; overflow: auto; white-space: pre-wrap;
  overflow-wrap: anywhere; background: var(--code); border-radius: 6px; }
.error pre { border-left: 3px solid var(--error); }
.error figcaption { color: var(--error); }
.thinking { margin: .4rem 0; padding: .4rem .8rem; background: var(--think);
  border-left: 3px solid var(--think-edge); border-radius: 6px; color: var(--muted); }
.thinking summary { cursor: pointer; }
.fork { margin: 1.25rem 0; text-align: center; color: var(--muted); font-size: .85rem;
  border-top: 1px dashed var(--muted); line-height: 0; }
.fork span { padding: 0 .75rem; background: var(--bg); }
"""


def render_html(session: dict, lineage: list[dict] | None = None, *, redact: bool = True) -> str:
    """Render one session as a standalone, offline HTML page (inline CSS, no script, no URL).

    >>> page = render_html({"session_id": "s1", "title": "<b>", "messages": [{"role": "user", "content": "<i>"}]})
    >>> "&lt;b&gt;" in page and "&lt;i&gt;" in page and "<script" not in page
    True
    """
    view = _view(session, lineage, redact)
    return "\n".join([
        "<!doctype html>", '<html lang="zh-CN">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        f"<title>会话导出：{_escape(view.title)}</title>", f"<style>{_CSS}</style>", "</head>",
        "<body>", "<main>", _html_breadcrumb(view.path), _html_header(view), *_html_messages(view),
        "</main>", "</body>", "</html>", ""])


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
    if view.counts:
        facts.append(("脱敏", _escape(_counts_sentence(view.counts))))
    rows = "".join(f"<div><dt>{term}</dt><dd>{value}</dd></div>" for term, value in facts)
    return f'<header><h1>🗂️ 会话导出：{_escape(view.title)}</h1><dl class="facts">{rows}</dl></header>'


def _html_messages(view: _View) -> list[str]:
    sections = []
    for number, message in enumerate(view.messages, 1):
        role = str(message.get("role", "unknown"))
        inherited = " inherited" if number <= view.fork_point else ""
        parts = "\n".join(_HTML_RENDERERS[part.kind](part) for part in message_parts(message, view.tool_names))
        sections.append(f'<section class="message{inherited}" data-role="{_escape(role)}" id="m{number}">\n'
                        f"<h2>{ROLE_ICONS.get(role, DEFAULT_ICON)} {number}. <code>{_escape(role)}</code></h2>\n"
                        f"{parts}\n</section>")
        if number == view.fork_point:
            sections.append(f'<p class="fork" role="separator"><span>🌿 {_escape(_divider_sentence(view))}</span></p>')
    return sections


def _html_figure(css_class: str, label: str, part: Part) -> str:
    caption = f"{label} <code>{_escape(part.caption)}</code>" if part.caption else label
    error = " error" if part.is_error else ""
    status = " · ❌ 出错" if part.is_error else ""
    # The newline after <pre> is eaten by the HTML parser, so a leading newline in the text survives.
    return (f'<figure class="{css_class}{error}"><figcaption>{caption}{status}</figcaption>'
            f"<pre>\n{_escape(part.text)}</pre></figure>")


_HTML_RENDERERS = {
    "text": lambda part: f'<div class="text">{_escape(part.text)}</div>',
    "thinking": lambda part: ('<details class="thinking" open><summary>💭 思考</summary>'
                              f'<div class="text">{_escape(part.text)}</div></details>'),
    "tool_call": lambda part: _html_figure("tool-call", "🔧 调用工具", part),
    "tool_output": lambda part: _html_figure("tool-output", "📤 工具结果", part),
    "image": lambda part: f'<p class="note">🖼️ {_escape(part.text)}</p>',
    "unknown": lambda part: _html_figure("unknown", "📦 未知内容块", part),
}
