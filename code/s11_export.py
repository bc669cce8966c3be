"""s11_export — 把一个会话渲染成 Markdown，或一张离线可看的 HTML 页面（纯函数，不读写磁盘）。

    一个会话字典 ──► prepare()：脱敏后的副本（s11_redact）+ 分支路径 + 脱敏计数 + 来源信息（两种格式共用一份）
                       │
                       ├─► message_parts(): text | thinking | tool_call | tool_output | image | unknown
                       └─► message_marks(): 🏷️ label · 🗜️ summary · ⚙️ meta · 🛰️ subagent · model · 🕒 time
                                 │
                 ┌───────────────┴───────────────┐
          markdown_chunks()                  html_chunks()
          章节 export_markdown 的版式；      <!doctype html>、CSP、没有 <script>、没有 URL，
          可疑文本 → 装进代码围栏            每个字符串都过 _escape()（即 html.escape）
                 │                                │
          render_markdown() = "".join        render_html() = "".join

关键洞察：导出的是不可信文本——消息里的 ```、### 、<script> 或 ![](http://…) 不能改写文档结构，
也不能让阅读器去外网取图：普通文本原样输出（与章节的 export_markdown 逐字节一致），
可疑文本装进一个结尾由我们掌控的代码围栏。

保证：传入的字典从不被修改；redact=True（默认）时，标题、消息里的每个字符串、来源信息和分支路径上的标题
都会脱敏；redact=False 时原文逐字保留。每项检查都只是一次线性扫描（`in` / str.find，或者唯一的循环
只是单个字符类的正则）；消息文本一直作为独立的片段传递，直到最后才拼接：导出一个 200 MB 的会话，
花费只是对它做 json.loads 的几倍，调用方也可以把片段逐个流式写进文件。

不做：把消息里的 Markdown 转成 HTML（页面按 pre-wrap 原样显示文本——标准库没有 Markdown 解析器）；
嵌入图片（改成一行占位说明）；导出页面之间的链接；来源会话的工作目录（那是别人机器上的路径）；
读写文件（那是 SessionStore 的事）。
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Any, NamedTuple

import s11_redact

ROLE_ICONS = {"system": "🧠", "user": "👤", "assistant": "🤖", "tool": "🔧", "toolResult": "🔧"}
DEFAULT_ICON = "📄"
TOOL_ROLES = {"tool", "toolResult"}   # 这些角色的文本是工具的输出，所以按工具结果显示
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
# 导入记录的 source.format -> 显示名（与 s11_import.formats 的表一致，测试核对；导出模块不依赖导入包）
FORMAT_NAMES = {"claude-code": "Claude Code", "pi": "Pi", "codex": "Codex CLI", "gemini-cli": "Gemini CLI"}


class Part(NamedTuple):
    kind: str              # text | thinking | tool_call | tool_output | image | unknown
    text: str
    caption: str = ""      # 工具名、工具调用 id，或未知内容块的类型
    is_error: bool = False
    truncated_from: int = 0   # 导入器截断过这段文本时，它原来的长度（按字符计）


class _View(NamedTuple):
    session_id: str
    title: str
    parent_id: str | None
    created_at: str
    fork_point: int        # 开头有几条消息继承自父分支；根会话为 0
    messages: list[dict]
    path: list[dict]       # 从根会话一路到本会话的分支路径摘要
    counts: dict[str, int]
    tool_names: dict[str, str]
    source: str            # 一句话说明导入的节点从哪里来；不是导入的为 ""


# ── 一条消息的各个部分 ──────────────────────────────────────────────────────────────────────


def message_parts(message: dict, tool_names: dict[str, str] | None = None) -> list[Part]:
    """把一条消息（字符串内容，或 Claude / Pi 的内容块列表）摊平成用于显示的各个部分。

    tool_names 把工具调用 id 映射到工具名（见 tool_call_names），因为 Claude 的 tool_result
    只写调用 id。

    >>> message_parts({"role": "toolResult", "toolName": "bash", "content": [{"type": "text", "text": "ok"}]})
    [Part(kind='tool_output', text='ok', caption='bash', is_error=False, truncated_from=0)]
    """
    content = message.get("content")
    blocks = content if isinstance(content, (list, tuple)) else [content]
    parts = [_block_part(block) for block in blocks if block is not None]
    if message.get("role") in TOOL_ROLES:
        parts = _as_tool_output(parts, message)
    names = tool_names or {}
    return [part._replace(caption=names.get(part.caption, part.caption)) if part.kind == "tool_output" else part
            for part in parts]


def tool_call_names(messages: list[dict]) -> dict[str, str]:
    """会话里的每个工具调用 id → 它的工具名。

    >>> tool_call_names([{"content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]}])
    {'toolu_1': 'Bash'}
    """
    names = {}
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, (list, tuple)) else []:
            if isinstance(block, dict) and block.get("type") in ("tool_use", "toolCall") and block.get("id"):
                names[str(block["id"])] = _as_text(block.get("name"))
    return names


def message_marks(message: dict) -> list[tuple[str, str]]:
    """导入的消息额外带着的标记，按固定顺序给出 (kind, 简短文字) 对。

    >>> message_marks({"role": "user", "label": "修复前", "summary": True, "model": "m1"})
    [('label', '🏷️ 修复前'), ('summary', '🗜️ 压缩摘要'), ('model', '模型 m1')]
    """
    return [(key, show(message[key])) for key, show in _MARKS.items() if message.get(key) not in (None, False, "")]


_MARKS = {   # 消息里的键 -> 它的值显示成什么；布尔型的键只要出现就行
    "converge": lambda value: "🔀 收敛",
    "origin": lambda value: _origin_text(value),
    "label": lambda value: f"🏷️ {_one_line(value)}",
    "summary": lambda value: "🗜️ 压缩摘要",
    "meta": lambda value: "⚙️ 代理注入的文字",
    "subagent": lambda value: "🛰️ 子代理",
    "model": lambda value: f"模型 {_one_line(value)}",
    "timestamp": lambda value: f"🕒 {_one_line(value)}",
}


def _origin_text(origin: Any) -> str:
    """收敛时从别的分支带过来的消息：{"session_id": "A", "index": 6} -> '↪️ 带自 A 的第 6 条'。"""
    if not isinstance(origin, dict):
        return "↪️ 带自其他分支"
    return f"↪️ 带自 {_one_line(origin.get('session_id'))} 的第 {_one_line(origin.get('index'))} 条"


# ── 🔀 收敛卡片：收敛节点（s11_converge）的决定、来源和带过来的消息 ─────────────────────────────────
class ConvergeCard(NamedTuple):
    decision: str
    number: int                    # 决定是第几条消息
    chosen: tuple[str, str]        # (ID, 标题)
    others: list[tuple[str, str]]
    carried: list[tuple[int, str]]  # (第几条, '↪️ 带自 A 的第 6 条')


def converge_card(messages: list[dict]) -> ConvergeCard | None:
    """消息里最后一条带 "converge" 记录的就是决定；带 "origin" 的是带过来的消息。不是收敛节点返回 None。

    传进来的是已脱敏的消息，所以卡片上的标题和决定也已脱敏。"""
    found = next((number for number in range(len(messages), 0, -1)
                  if isinstance(messages[number - 1].get("converge"), dict)), 0)
    if not found:
        return None
    record = messages[found - 1]["converge"]

    def pair(item: Any) -> tuple[str, str]:
        item = item if isinstance(item, dict) else {}
        return _one_line(item.get("session_id")), _one_line(item.get("title") or "未命名会话")

    others = record.get("others") if isinstance(record.get("others"), (list, tuple)) else []
    carried = [(number, _origin_text(message["origin"])) for number, message in enumerate(messages, 1)
               if "origin" in message]
    decision = " ".join(part.text for part in message_parts(messages[found - 1]) if part.kind == "text")
    return ConvergeCard(_one_line(decision), found, pair(record.get("chosen")), [pair(item) for item in others], carried)


def _markdown_converge_card(card: ConvergeCard) -> str:
    lines = ["", "> **🔀 收敛**", ">",
             f"> - **选定**：{_code_span(card.chosen[0])} {_inline(card.chosen[1])}",
             "> - **收敛了**：" + "；".join(f"{_code_span(sid)} {_inline(title)}" for sid, title in card.others),
             f"> - **决定**（第 {card.number} 条）：{_inline(card.decision)}"]
    if card.carried:
        lines.append("> - **带过来的消息**：" + "；".join(f"第 {number} 条 {_inline(text)}"
                                                   for number, text in card.carried))
    return "\n".join(lines + [""])


def _html_converge_card(card: ConvergeCard) -> str:
    facts = [("选定", f"<code>{_escape(card.chosen[0])}</code> {_escape(card.chosen[1])}"),
             ("收敛了", "；".join(f"<code>{_escape(sid)}</code> {_escape(title)}" for sid, title in card.others)),
             (f"决定（第 {card.number} 条）", f'<span class="text">{_escape(card.decision)}</span>')]
    if card.carried:
        facts.append(("带过来的消息", "；".join(f"第 {number} 条 {_escape(text)}"
                                           for number, text in card.carried)))
    rows = "".join(f"<div><dt>{term}</dt><dd>{value}</dd></div>" for term, value in facts)
    return f'<section class="converge-card" aria-label="收敛"><h2>🔀 收敛</h2><dl class="facts">{rows}</dl></section>'


def truncation_note(original_length: int) -> str:
    """导入器截断过的文本写 '…已截断，原长 N 字符'（0 = 没有截断）。"""
    return f"…已截断，原长 {original_length} 字符" if original_length else ""


def _as_tool_output(parts: list[Part], message: dict) -> list[Part]:
    # Pi 的 toolResult 消息（以及 OpenAI 风格的 "tool" 消息）把工具的输出放在普通的 text 块里。
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
    # Claude 的 tool_result 的 content 要么是字符串，要么是内容块列表（text、image……）。
    content = block.get("content")
    if isinstance(content, (list, tuple)):
        text = "\n".join(_flat_text(_block_part(item)) for item in content)
    else:
        text = _as_text(content)
    return Part("tool_output", text, _as_text(block.get("tool_use_id")), bool(block.get("is_error")))


def _flat_text(part: Part) -> str:
    note = truncation_note(part.truncated_from)
    return f"{part.text}\n{note}" if note else part.text


def _image_part(block: dict) -> Part:
    # 图片类型：Claude 放在 source.media_type，Pi 放在 mimeType，导入器留下的占位块放在 media_type。
    source = block.get("source") if isinstance(block.get("source"), dict) else {}
    media_type = _one_line(block.get("media_type") or source.get("media_type") or block.get("mimeType") or "image")
    size = block.get("size")
    size_text = f"{_human_size(size)}，" if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else ""
    return Part("image", f"图片（{media_type}，{size_text}未随导出保存）")


def _human_size(count: int) -> str:
    """1536 -> '1.5 KB'（图片 base64 文本的大小，由导入器量出）。"""
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


# ── 两种格式都要显示的内容 ──────────────────────────────────────────────────────────────────


def prepare(session: dict, lineage: list[dict] | None = None, *, redact: bool = True) -> _View:
    """两种格式共用的那一份内容（脱敏后的副本、分支路径、计数）：要同时导出 Markdown 和 HTML 时，
    先 prepare() 一次，再把结果交给 markdown_chunks() / html_chunks()——会话只脱敏一次。

    >>> view = prepare({"session_id": "s1", "title": "a@example.com", "messages": []})
    >>> "<h1>🗂️ 会话导出：[已脱敏:邮箱]</h1>" in render_html(view), view.counts
    (True, {'邮箱': 1})
    """
    return _view(session, lineage, redact)


def _prepared(session, lineage: list[dict] | None, redact: bool) -> _View:
    return session if isinstance(session, _View) else _view(session, lineage, redact)


def _view(session: dict, lineage: list[dict] | None, redact: bool) -> _View:
    title = str(session.get("title") or "未命名会话")
    messages = [item if isinstance(item, dict) else {"content": item} for item in session.get("messages") or []]
    path = _lineage_path(session, lineage, len(messages))
    source = _source_sentence(session.get("source"))
    counts: dict[str, int] = {}
    if redact:
        # share：没有命中的消息不拷贝，与传入的字典共用（导出只读它们；元组还是元组，下面当列表读）
        (title, messages, source), counts = s11_redact.redact_value([title, messages, source], share=True)
        # 祖先会话的标题也要脱敏，但计数算在它们自己的导出里，不算在这一份里。路径只显示标题、ID 和条数：
        # 只留这几项
        fields = [s11_redact.redact(value) if isinstance(value, str) else value
                  for value in (entry.get(key) for entry in path for key in _PATH_FIELDS)]
        path = [dict(zip(_PATH_FIELDS, fields[start:start + len(_PATH_FIELDS)]))
                for start in range(0, len(fields), len(_PATH_FIELDS))]
    return _View(str(session.get("session_id") or ""), title, session.get("parent_id"),
                 str(session.get("created_at") or ""), _fork_point(session), messages, path, counts,
                 tool_call_names(messages), source)


_PATH_FIELDS = ("session_id", "title", "message_count", "fork_point", "parent_id")   # 路径用到的摘要字段


def _lineage_path(session: dict, lineage: list[dict] | None, message_count: int) -> list[dict]:
    # 允许没有 lineage，或 lineage 只到父分支为止：路径的最后一段总是本会话。
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
    return " → ".join([f"{entry.get('title') or '未命名会话'}（{entry.get('session_id')}）" for entry in path])


# ── Markdown ────────────────────────────────────────────────────────────────────────────────

_LINE_BREAK = re.compile(r"\r\n|\r|\n")   # CommonMark 认的换行符（str.splitlines 认得更多）
# 下面每条规则都要用到其中某个字符；一个都不含的文本必然无害（快速通道）。_is_inert_markdown 用 8 次 str 的 `in`
# 查这几个字符（每次都是 C 里的一趟查找，比这个字符类的正则逐字符地扫快几倍），测试拿这条正则核对两者一致。
_STRUCTURE_CHARS = "<:!#=`~-"
_MAYBE_STRUCTURE = re.compile(r"[<:!#=`~-]")
_RAW_HTML = re.compile(r"<[A-Za-z/!?]")   # 标签、注释、声明，或 <scheme:…> 自动链接
_IMAGE = "!["                              # ![alt](url)、![alt][ref]、![ref]：阅读器会去取那个 URL
# 先写字面量 ':'，正则引擎就能从一个冒号直接跳到下一个冒号；再由后顾断言回头读出协议名（scheme）。
_SCRIPT_URL = re.compile(r":(?:(?<=[Jj][Aa][Vv][Aa][Ss][Cc][Rr][Ii][Pp][Tt]:)|(?<=[Vv][Bb][Ss][Cc][Rr][Ii][Pp][Tt]:))")
# 跳过引用 / 列表标记之后可能是文档结构的行：标题、代码围栏，或 setext 标题的下划线。
# 唯一的循环只是一个字符类，所以匹配不上的一行，代价就是这一行的长度。
_MAYBE_STRUCTURE_LINE = r"[ \t>*+0-9.)-]*(?:[#`~=]|-[ \t]*(?:\n|\Z))"
_FIRST_LINE = re.compile(f"(?={_MAYBE_STRUCTURE_LINE})")
_NEXT_LINE = re.compile(f"\n(?={_MAYBE_STRUCTURE_LINE})")            # 字面量打头：找得快
_FENCE_LINE = {"`": re.compile(r"\n(?=```)"), "~": re.compile(r"\n(?=~~~)")}
_TOP_LEVEL_FENCE = re.compile(r"(`{3,})[^`]*$|(~{3,})")
_BLANKS = re.compile(r"[ \t]*")
_DIGITS = re.compile(r"[0-9]*")
_HEADING_MARK = re.compile(r"#{1,6}(?:[ \t]|$)")
_INLINE_SPECIALS = re.compile(r"[\\`*_\[\]<>&~|#]")


def markdown_chunks(session: dict, lineage: list[dict] | None = None, *, redact: bool = True) -> Iterator[str]:
    """分片版的 render_markdown()：把大会话写进文件时，不必先拼出一个巨大的字符串。
    session 也可以是 prepare() 的结果（这时 lineage 和 redact 不再起作用）。

    >>> "".join(markdown_chunks({"session_id": "s1", "messages": []})).split("\\n")[0]
    '# 🗂️ 会话导出：未命名会话'
    """
    view = _prepared(session, lineage, redact)
    yield "\n".join([f"# 🗂️ 会话导出：{_inline(view.title)}", "",
                     f"- **会话 ID**：{_code_span(view.session_id)}",
                     f"- **父分支**：{_code_span(view.parent_id or '无（根会话）')}",
                     f"- **创建时间**：{_inline(view.created_at)}",
                     f"- **消息条数**：{len(view.messages)}",
                     *_markdown_extra_facts(view), "", "---", ""])
    card = converge_card(view.messages)
    if card is not None:
        yield _markdown_converge_card(card) + "\n"
    for number, message in enumerate(view.messages, 1):
        role = str(message.get("role", "unknown"))
        yield f"\n### {number}. {ROLE_ICONS.get(role, DEFAULT_ICON)} {_code_span(role)}\n\n"
        yield from _markdown_body(view, message)
        if number == view.fork_point:
            yield f"\n> 🌿 {_inline(_divider_sentence(view))}\n"


def _markdown_body(view: _View, message: dict) -> list[str]:
    """一条消息标题之下的片段：标记一行（有的话），然后每个部分，之间空一行。"""
    marks = message_marks(message)
    pieces = [" · ".join(_inline(text) for _, text in marks)] if marks else []
    for part in message_parts(message, view.tool_names):
        if pieces:
            pieces.append("\n\n")
        pieces += _markdown_part(part)
    pieces.append("\n")
    return pieces


def render_markdown(session: dict, lineage: list[dict] | None = None, *, redact: bool = True) -> str:
    """按章节 export_markdown 的版式渲染一个会话，另外写明分支和脱敏信息。

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
    # 全角冒号放在 **…** 外面：紧跟在标点后面的 **，CommonMark 不会把它当成粗体的结尾。
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
    # 不逐行清洗 Markdown（那需要一个完整的 CommonMark 解析器）：普通文本原样输出，
    # 其余的一律装进代码围栏——只有这种块，文本挪不动它的结尾。
    return [text] if _is_inert_markdown(text) else _fence(text)


def _markdown_thinking(part: Part) -> list[str]:
    if not _is_inert_markdown(part.text):
        return ["> 💭 **思考**\n\n", *_fence(part.text)]
    return ["> 💭 **思考**\n>\n", _quote(part.text)]


def _quote(text: str) -> str:
    """'a\\n\\nb' -> '> a\\n>\\n> b' （空行写成单独一个 '>'）；用几次 str 操作完成，不写循环。"""
    if "\r" in text:
        text = _LINE_BREAK.sub("\n", text)
    quoted = "\n" + ("> " + text.replace("\n", "\n> ")) + "\n"
    # 连续的空行，每一遍只能修好其中隔一个的那些，所以两遍就全修好了。
    quoted = quoted.replace("\n> \n", "\n>\n").replace("\n> \n", "\n>\n")
    return quoted[1:-1]


def _markdown_captioned(label: str, part: Part, info: str = "") -> list[str]:
    return [_markdown_caption(label, part.caption, part.is_error), *_fence(part.text, info)]


def _markdown_caption(label: str, caption: str, is_error: bool) -> str:
    caption = f"**{label}** {_code_span(caption)}" if caption else f"**{label}**"
    error = " ❌ 出错" if is_error else ""
    return f"{caption}{error}\n\n"


_MARKDOWN_RENDERERS = {
    "text": lambda part: _markdown_text(part.text),
    "thinking": _markdown_thinking,
    "tool_call": lambda part: _markdown_captioned("🔧 调用工具", part, "json"),
    "tool_output": lambda part: _markdown_captioned("📤 工具结果", part),
    "image": lambda part: [f"🖼️ {_inline(part.text)}"],
    "unknown": lambda part: _markdown_captioned("📦 未知内容块", part, "json"),
}


def _is_inert_markdown(text: str) -> bool:
    """文本放在两条消息的标题之间时，既不改变文档的大纲，也不会在预览里显示图片、运行脚本链接
    或画出图表，才返回 True。

    >>> _is_inert_markdown("看这段：\\n```py\\nx = 1\\n```"), _is_inert_markdown("```py\\nx = 1")
    (True, False)
    >>> _is_inert_markdown("图：![](http://tracker.example/p.png)"), _is_inert_markdown("```mermaid\\ngraph TD\\n```")
    (False, False)
    """
    if not any(map(text.__contains__, _STRUCTURE_CHARS)):   # 没有任何一种结构会用到的字符
        return True
    # 三种一出现就不行的写法：先用 `in` 查各自必有的那个字符（多数文本连它都没有），有才去找整个写法
    if ("!" in text and _IMAGE in text) or ("<" in text and _RAW_HTML.search(text)) or \
            (":" in text and _SCRIPT_URL.search(text)):
        return False
    if "\r" in text:
        text = _LINE_BREAK.sub("\n", text)   # 统一成一种换行：下面的每次查找都只找 "\n"
    start = 0 if _FIRST_LINE.match(text) else _next_line(_NEXT_LINE, text, 0)
    while start >= 0:
        end = _line_end(text, start)
        line = text[start:end]
        if opener := _TOP_LEVEL_FENCE.match(line):
            fence = opener.group(1) or opener.group(2)
            if _fence_language(line, fence) == "mermaid":
                return False   # Gradio 的预览会把它画出来，连同可点击的链接
            end = _closing_line_end(text, end, fence)
            if end < 0:
                return False   # 没有闭合：它会吞掉后面的标题
        elif _is_structure_after_markers(line, lambda start=start: _previous_line_has_text(text, start)):
            return False   # 缩进或嵌套的围栏可能延续到消息之外；其余几种会伪造标题
        start = _next_line(_NEXT_LINE, text, end)
    return True


def _next_line(finder: re.Pattern[str], text: str, position: int) -> int:
    """position 之后、finder 挑出的下一行的起点；没有就是 -1。

    被它跳过的行改变不了围栏状态，也改变不了大纲，所以 Python 根本不用看它们。
    """
    match = finder.search(text, position)
    return match.end() if match else -1


def _closing_line_end(text: str, position: int, fence: str) -> int:
    # 从一个以三个围栏字符开头的行，跳到下一个这样的行（别的行都关不上这个围栏）。
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
    # 跳过任意一串引用 / 列表标记之后：代码围栏、ATX 标题，或者（紧挨在一行文字下面的）setext 下划线。
    # 下划线的判断在每个位置上都是 O(1)：'-' 或 '=' 必须一直连到行尾。
    core = line.rstrip(" \t")
    underline_from = len(core.rstrip(core[-1])) if core[-1:] in ("-", "=") else len(core)
    for position in _marker_ends(line):
        if line.startswith(("```", "~~~"), position) or _HEADING_MARK.match(line, position):
            return True
        if underline_from <= position < len(core) and previous_has_text():
            return True
    return False


def _marker_ends(line: str) -> Iterator[int]:
    """一串引用 / 列表标记之后，正文可能开始的每一个位置。

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
                return   # "1234567890." 不是列表标记，后面没有 . 或 ) 的 "12" 也不是
            position = digits_end + 1
        else:
            return
        position = _BLANKS.match(line, position).end()
        yield position


def _fence_language(line: str, fence: str) -> str:
    words = line[len(fence):].split(None, 1)
    return words[0].lower() if words else ""


def _closes_fence(fence: str, line: str) -> bool:
    # 只认没有缩进的结束行：CommonMark 认为围栏还没关时，我们绝不会以为它已经关了。
    closer = line.rstrip(" \t")
    return len(closer) >= len(fence) and closer.count(fence[0]) == len(closer)


def fenced(text: str, language: str = "") -> str:
    """把不可信的文本装进一个它关不上的代码围栏：'a ``` b' -> 用 4 个反引号的围栏。

    所有把会话文字显示成 Markdown 的模块（各个标签页、实验室）都用这一个函数。
    """
    return "".join(_fence(text, language))


def _fence(text: str, info: str = "") -> list[str]:
    # 反引号围栏只会被一串至少和开头一样长的反引号关上（CommonMark），所以比文本里任何一串都长的围栏，
    # 不会被文本提前关上。
    ticks = _fence_ticks(text)
    return [f"{ticks}{info}\n", text, f"\n{ticks}"]


def _fence_ticks(text: str) -> str:
    """比 text 里最长的一串反引号长、至少三个的围栏。文本里连着的反引号多半不超过三四个：一次 `in` 查一个长度
    （一个字符串查找，比把每一串反引号都找出来量一遍的正则快得多）；查到十几个还有，才回去逐串量。

    >>> _fence_ticks("a `b` ``c``"), _fence_ticks("x ```` y"), _fence_ticks("`" * 40)
    ('```', '`````', '`````````````````````````````````````````')
    """
    ticks = "```"
    while "`" in text and ticks in text:
        if len(ticks) > 16:   # 一次 `in` 就是一趟：查的次数有上限，整个仍是线性的
            return "`" * (_longest_backtick_run(text) + 1)
        ticks += "`"
    return ticks


def _code_span(text: str) -> str:
    text = _one_line(str(text))   # 换行会让标题行或列表行提前结束
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _longest_backtick_run(text: str) -> int:
    """最长的一串反引号有多长。

    >>> _longest_backtick_run("a `b` ```c``` d"), _longest_backtick_run("none")
    (3, 0)
    """
    return max(map(len, _BACKTICKS.findall(text)), default=0) if "`" in text else 0


_BACKTICKS = re.compile("`+")


def _inline(text: str) -> str:
    # 标题和日期放在标题行或列表行里：让它们留在一行之内，不带标记、不带 HTML、不成图片
    # （"![x](u)" 的 "[" 转义之后，读起来就只是文字）。替换用函数而不用 r"\\\1" 这样的模板：
    # re 每次调用都要回到 Python 里解析带反斜杠的模板，而函数只在真有要转义的字符时才调用。
    return _INLINE_SPECIALS.sub(_backslashed, _one_line(str(text)))


def _backslashed(match: re.Match[str]) -> str:
    """'*' -> '\\*'"""
    return "\\" + match.group()


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
.converge-card { margin: 0 0 1.5rem; padding: .5rem 1rem .25rem; border: 2px dashed var(--think-edge);
  border-radius: 8px; }
.converge-card h2 { margin: 0 0 .4rem; font-size: 1rem; }
.converge-card .facts { margin: 0 0 .5rem; border: 0; padding: 0; }
"""


def html_chunks(session: dict, lineage: list[dict] | None = None, *, redact: bool = True) -> Iterator[str]:
    """分片版的 render_html()：把大会话写进文件时，不必先拼出一个巨大的字符串。session 也可以是 prepare() 的结果。"""
    view = _prepared(session, lineage, redact)
    yield "\n".join([
        "<!doctype html>", '<html lang="zh-CN">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>会话导出：{_escape(view.title)}</title>", f"<style>{_CSS}</style>", "</head>",
        "<body>", "<main>", _html_breadcrumb(view.path), _html_header(view), ""])
    card = converge_card(view.messages)
    if card is not None:
        yield _html_converge_card(card) + "\n"
    for number, message in enumerate(view.messages, 1):
        yield from _html_message(view, number, message)
        if number == view.fork_point:
            yield f'<p class="fork" role="separator"><span>🌿 {_escape(_divider_sentence(view))}</span></p>\n'
    yield "</main>\n</body>\n</html>\n"


def render_html(session: dict, lineage: list[dict] | None = None, *, redact: bool = True) -> str:
    """把一个会话渲染成一张独立、离线可看的 HTML 页面（CSS 内联，没有脚本，没有 URL）。

    >>> page = render_html({"session_id": "s1", "title": "<b>", "messages": [{"role": "user", "content": "<i>"}]})
    >>> "&lt;b&gt;" in page and "&lt;i&gt;" in page and "<script" not in page
    True
    """
    return "".join(html_chunks(session, lineage, redact=redact))


def _escape(value: Any) -> str:
    """html.escape(value, quote=True)，只是不含的字符不去替换：str.replace 哪怕一处也没换，也要先数一遍整段文字，
    而 `in` 找一个字符快得多——导出里的大段工具输出多半五个字符一个都不含。

    >>> _escape("a < b & 'c'")
    'a &lt; b &amp; &#x27;c&#x27;'
    """
    text = str(value)
    for char, entity in _HTML_ENTITIES:   # 顺序同 html.escape："&" 必须最先换
        if char in text:
            text = text.replace(char, entity)
    return text


_HTML_ENTITIES = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#x27;"))


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


def _html_message(view: _View, number: int, message: dict) -> list[str]:
    """一条消息的 <section>，分成几个片段（长文本各自是一个片段，不和别的拼在一起）。"""
    role = str(message.get("role", "unknown"))
    shown_role = _escape(role)
    marks = message_marks(message)
    classes = ["message", *(["inherited"] if number <= view.fork_point else []),
               *(kind for kind, _ in marks if kind in ("summary", "meta", "subagent"))]
    pieces = [f'<section class="{" ".join(classes)}" data-role="{shown_role}" id="m{number}">\n'
              f"<h2>{ROLE_ICONS.get(role, DEFAULT_ICON)} {number}. <code>{shown_role}</code></h2>\n"]
    if marks:
        items = "".join(f'<li class="mark-{kind}">{_escape(text)}</li>' for kind, text in marks)
        pieces.append(f'<ul class="marks" aria-label="消息标记">{items}</ul>\n')
    for part in message_parts(message, view.tool_names):
        pieces += _HTML_RENDERERS[part.kind](part)
        if part.truncated_from:
            pieces.append(f'<p class="note">✂️ {_escape(truncation_note(part.truncated_from))}</p>')
        pieces.append("\n")
    pieces.append("</section>\n")
    return pieces


def _html_figure(css_class: str, label: str, part: Part) -> list[str]:
    caption = f"{label} <code>{_escape(part.caption)}</code>" if part.caption else label
    error = " error" if part.is_error else ""
    status = " · ❌ 出错" if part.is_error else ""
    # HTML 解析器会吃掉紧跟在 <pre> 后面的那个换行，所以文本开头自己的换行能保留下来。
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


# 加速（像 heapq 换上 _heapq）：s11_fast.export 就地读常见的内容块、用 orjson 排版工具参数，结果与上面的
# message_parts 逐项相同（tests/fast 拿这里作 oracle）。S11_PLAIN=1 关掉它；没有 s11_fast 这个目录时就用上面的。
if not os.environ.get("S11_PLAIN"):
    try:
        from s11_fast.export import accelerate
    except ImportError:
        pass
    else:
        message_parts = accelerate(sys.modules[__name__])
