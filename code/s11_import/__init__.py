"""s11_import.py — 把真实 Agent 的会话记录（Claude Code / Pi 的 JSONL）导入成 8.11 的会话树

    <session>.jsonl ──► _read(): 一行一个 JSON；坏行、空行、未知类型 → skipped（行号从 1 开始）
         │                       两个对象粘在一行 → 都读出来；按 uuid / id 建索引，重复的留第一次
         ├─ <session>/subagents/agent-*.jsonl（Claude Code 子代理，随主文件一起读）
         ▼
    _repair()    缺父节点 → 根（警告）；compact_boundary 接到 logicalParentUuid；环 → 断开（警告）
    _relink()    先把每条消息接到最近的“留下的”祖先消息，再丢掉 progress / hook / model_change……
    _merge()     同一个 message.id 分几行流式写出的 assistant → 一条消息
    _linearise() 钩子行、并行工具结果造成的“假分叉” → 按时间串成一条线；用户造成的分叉才保留
    _active_end() Pi：最后一个有效条目；Claude Code：最新的 last-prompt.leafUuid，否则最新的叶子
    _plan()      根 → 活动端是一个节点（主干），其余每条分支一个子节点（fork_point = 分叉处）
         ▼
    SessionNode(id = sha256(格式, 文件名, 会话 ID, 分支第一条消息)[:12]) ─► store.save()

    真实记录                                   导入后（store.render_tree）
    u1─a1─u2─a2─┬─u3─a3   ← /rewind 之前       标题 [5f0c…] 8 条
                └─u3'─a3' ← 活动端             └── 标题 · 分支 1 [91ab…] 6 条（自第 4 条分叉，+2）

关键洞察：Agent 记录的是“事件流”，会话树要的是“用户做过的选择”——先按 id 还原完整的图，
再把录制产生的假分叉（钩子行、流式分段）拉直，只有用户亲手造成的分叉才变成 fork。

保证：源文件只读不改；全部解析和规划完成后才写仓库，格式不对 / 太大 / 没有对话时仓库一个字节都不变；
节点按“父先子后”逐个原子保存，导入进程中途被杀只会少写几个完整节点（check() 只可能报告 store 自己的临时文件）；
节点 ID 由来源决定，同一文件再导入一次什么都不写，Agent 追加了对话后再导入只更新变化的节点
（在仓库里续写过的导入节点不会被覆盖，只给出警告）。

有界：工具输出超过 TOOL_OUTPUT_LIMIT 字符、其它文本超过 TEXT_LIMIT 字符截断并记下原长（truncated_from）；
图片只留占位（媒体类型 + base64 长度）；不保存思考签名、Pi 的系统提示词快照（customType 以 system-prompt 结尾）、
Claude 的 toolUseResult（其中的 originalFile 是整份文件的拷贝）；单个文件上限 DEFAULT_MAX_BYTES（200 MB）。

不做：Codex / Gemini 等其它格式；合并两个不同文件里的同一会话（每个文件是一棵独立的树）；
活动端移动到另一条旧分支后，上一次导入时那条分支的旧节点保留不动（警告里会点名）。
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import re
import time
from collections import Counter, deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple

from s11_session import SessionError, SessionNode, SessionStore
from s11_text import human_size, os_error_reason

__all__ = ["import_file", "list_examples", "ImportReport", "UnsupportedFormat", "NoConversation",
           "TranscriptTooLarge", "EXAMPLES_DIR", "DEFAULT_MAX_BYTES", "TOOL_OUTPUT_LIMIT", "TEXT_LIMIT"]

DEFAULT_MAX_BYTES = 200 * 1024 * 1024   # 真实记录通常 < 20 MB；Claude Code 自己遇到 60 MB 的单行就打不开了
TOOL_OUTPUT_LIMIT = 20_000              # 工具输出（和工具调用参数里的长字符串）最多保留这么多字符
TEXT_LIMIT = 100_000                    # 用户 / 助手文本、思考最多保留这么多字符
EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
CLAUDE, PI = "claude-code", "pi"
FORMAT_NAMES = {CLAUDE: "Claude Code", PI: "Pi"}
_SNIFF_BYTES = 8192            # 开头这么多字节里有 NUL 就是二进制文件
_SNIFF_LINES = 2000            # 这么多行里还认不出格式，就不是会话记录
_MAX_TAIL_ATTEMPTS = 1000      # 在残行里找“后面接着写的完整一行”时最多试这么多个起点
_MAX_DEPTH = 60                # 工具参数里更深的部分存成 JSON 文本（仓库拒绝嵌套超过 100 层的消息）
_TASK_TOOLS = {"Task", "Agent"}


# ── 错误：都是 SessionError（ValueError）的子类，消息里写明文件名 ───────────────────────────
class UnsupportedFormat(SessionError):
    """不是 Claude Code / Pi 的会话记录（二进制、别的 JSON、普通文本）。仓库不变。"""


class NoConversation(SessionError):
    """认得格式，但里面一条对话都没有（空文件、只有文件头、只有快照）。仓库不变。"""


class TranscriptTooLarge(SessionError):
    """文件超过大小上限。仓库不变。"""


# ── 导入报告 ───────────────────────────────────────────────────────────────────────────────
@dataclass
class ImportReport:
    """一次导入的结果。node_ids 按树的层次排列（根在前，父在子前）。"""
    file: str
    format: str
    node_ids: List[str] = field(default_factory=list)
    root_ids: List[str] = field(default_factory=list)
    active_id: Optional[str] = None
    skipped: List[Tuple[int, str]] = field(default_factory=list)
    dropped: Dict[str, int] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)
    messages: int = 0           # 导入的不同消息条数（分叉复制的前缀不重复计）
    bytes_read: int = 0
    bytes_written: int = 0
    copy_bytes: int = 0         # 分叉节点复制父节点前缀所占的字节（按紧凑 JSON 计）
    written: int = 0            # 本次写入的节点（新建 + 更新）
    updated: int = 0
    unchanged: int = 0
    kept: int = 0               # 仓库里被续写过、因此没有覆盖的节点

    def describe(self) -> str:
        """多行中文报告，命令行和工作台都用它。"""
        lines = [f"导入 {self.file}（{FORMAT_NAMES.get(self.format, self.format)} 格式，读入 {human_size(self.bytes_read)}）",
                 f"  会话节点 {len(self.node_ids)} 个：新写入 {self.written - self.updated}，更新 {self.updated}，"
                 f"未变化 {self.unchanged}" + (f"，保留仓库里续写过的 {self.kept}" if self.kept else ""),
                 f"  消息 {self.messages} 条；活动端（对话现在停在这里）：{self.active_id or '无'}"]
        lines += _describe_skipped(self.skipped)
        if self.dropped:
            shown = "、".join(f"{kind} ×{count}" for kind, count in sorted(self.dropped.items()))
            lines.append(f"  没有变成消息的条目：{shown}")
        lines += [f"  ⚠️ {warning}" for warning in self.warnings]
        ratio = f"，是读入的 {self.bytes_written / self.bytes_read:.2f} 倍" if self.bytes_read and self.bytes_written else ""
        lines.append(f"  写入 {human_size(self.bytes_written)}{ratio}；分叉复制的前缀约 {human_size(self.copy_bytes)}")
        return "\n".join(lines)


def _describe_skipped(skipped: List[Tuple[int, str]], shown: int = 20) -> List[str]:
    if not skipped:
        return ["  跳过的行：无"]
    lines = [f"  跳过 {len(skipped)} 行："] + [f"    第 {line} 行：{reason}" for line, reason in skipped[:shown]]
    if len(skipped) > shown:
        lines.append(f"    ……另有 {len(skipped) - shown} 行")
    return lines


# ── 条目：记录里的一行（消息，或只用来接线的结构条目）─────────────────────────────────────────
class Entry:
    """一行记录。kind 为 "message"（会变成消息）或 "link"（结构条目：只用来把消息接到正确的祖先上）。

    seq 是在所有读入文件里的先后（“最新”按它算）；stream 是 Claude 的 message.id（流式分段共用）；
    logical 是 compact_boundary 的 logicalParentUuid；agent 是子代理的 agentId；prompt 表示用户亲手输入。"""
    __slots__ = ("uid", "parent", "line", "seq", "kind", "message", "session", "sidechain",
                 "stream", "logical", "agent", "prompt", "last_seq", "label_file")

    def __init__(self, uid: str, parent: Optional[str], line: int, kind: str, message: Optional[dict] = None,
                 session: Optional[str] = None, sidechain: bool = False):
        self.uid, self.parent, self.line, self.kind = uid, parent, line, kind
        self.message, self.session, self.sidechain = message, session, sidechain
        self.seq = self.last_seq = 0
        self.stream = self.logical = self.agent = None
        self.prompt = False
        self.label_file = ""


class _Transcript:
    """一次读取的全部状态：条目索引（文件顺序）、跳过的行、丢弃的条目、标题、活动端线索。"""

    def __init__(self, path: str):
        self.path, self.file = path, os.path.basename(path)
        self.format: Optional[str] = None
        self.entries: Dict[str, Entry] = {}
        self.order: List[Entry] = []
        self.skipped: List[Tuple[int, str]] = []
        self.dropped: Counter = Counter()
        self.warnings: List[str] = []
        self.duplicates: List[int] = []
        self.file_label = ""              # 读子代理文件时，跳过原因前面写上它的文件名
        self.file_agent: Optional[str] = None
        self.header: Dict[str, Any] = {}
        self.sessions: Dict[str, Dict[str, str]] = {}
        self.titles: Dict[str, str] = {}
        self.summaries: List[Tuple[str, str]] = []
        self.leaf_hints: List[str] = []
        self.labels: Dict[str, str] = {}
        self.tool_calls: Dict[str, str] = {}          # tool_use id → 持有这次调用的消息
        self.task_prompts: Dict[str, str] = {}        # Task 工具的 prompt → 持有调用的消息
        self.task_titles: Dict[str, str] = {}         # tool_use id → 子代理的描述
        self.spawned: Dict[str, Tuple[str, str]] = {}  # agentId → (工具结果消息, tool_use id)
        self.previous_uid: Optional[str] = None       # Pi v1：没有 id，按文件顺序串起来
        self.passed_over: List[str] = []
        self.pending: List[Tuple[int, int, dict]] = []
        self.objects = 0
        self.convert = _Converter()

    def skip(self, line: int, reason: str) -> None:
        self.skipped.append((line, f"{self.file_label}{reason}"))

    def add(self, entry: Entry) -> None:
        if entry.uid in self.entries:   # 续跑 / 分叉会重放旧行：第一次出现的那份为准
            self.duplicates.append(entry.line)
            return
        entry.seq = entry.last_seq = len(self.order)
        entry.label_file = self.file_label
        self.entries[entry.uid] = entry
        self.order.append(entry)


# ── 读行：容忍残行、空行、非对象、粘连 ────────────────────────────────────────────────────────
def _objects(raw: bytes, line: int, t: _Transcript) -> Iterator[dict]:
    """一行 → 0..n 个 JSON 对象；读不出来的部分记进 skipped。"""
    try:
        value = json.loads(raw)
    except RecursionError:
        t.skip(line, "JSON 嵌套太深")
        return
    except ValueError as exc:
        yield from _recover(raw, line, t, exc)
        return
    if isinstance(value, dict):
        yield value
    else:
        t.skip(line, f"不是 JSON 对象（是 {_json_kind(value)}）")


def _recover(raw: bytes, line: int, t: _Transcript, error: ValueError) -> Iterator[dict]:
    """两个对象粘在一行（{...}{...}），或写到一半被打断后又接着写了一行（{"type":"mess{...}）。"""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        t.skip(line, "空行")
        return
    found, position = _leading_objects(text)
    torn = position < len(text)
    if torn:
        tail = _complete_tail(text, position)
        found += [tail] if tail is not None else []
        detail = getattr(error, "msg", None) or getattr(error, "reason", None) or str(error)
        t.skip(line, f"JSON 不完整（写入被中断？）：{detail}" + (f"；其中 {len(found)} 个完整对象已读出" if found else ""))
    if isinstance(error, UnicodeDecodeError) and found:
        t.warnings.append(f"第 {line} 行不是有效的 UTF-8，解不开的字节已换成 �")
    if len(found) > 1:
        t.warnings.append(f"第 {line} 行有 {len(found)} 个 JSON 对象粘在一起，已分别读出")
    yield from (value for value in found if isinstance(value, dict))


def _leading_objects(text: str) -> Tuple[List[Any], int]:
    """从行首起一个接一个地读完整的 JSON 值（粘连的情形）；返回读出的值和读到的位置。"""
    decoder, found, position = json.JSONDecoder(), [], 0
    while position < len(text):
        try:
            value, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            break
        found.append(value)
        while position < len(text) and text[position] in " \t\r\n":
            position += 1
    return found, position


def _complete_tail(text: str, start: int) -> Optional[dict]:
    """残行后面接着写的那一整行：一个恰好结束在行尾的对象。从右往左试 '{"' 的位置，
    先遇到的是它内部的小对象（解析便宜、结束得早），第一个结束在行尾的就是它；试的次数有上限。"""
    decoder, position = json.JSONDecoder(), len(text)
    for _ in range(_MAX_TAIL_ATTEMPTS):
        position = text.rfind('{"', start + 1, position)
        if position < 0:
            return None
        try:
            value, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            continue
        if end == len(text) and isinstance(value, dict):
            return value
    return None


def _json_kind(value: Any) -> str:
    return {str: "字符串", int: "数字", float: "数字", list: "数组", bool: "布尔值"}.get(type(value), "null")


def _read_file(path: str, t: _Transcript, max_bytes: int) -> int:
    """读一个文件的全部行，交给格式对应的读取函数；返回读入的字节数。"""
    size = _check_size(path, max_bytes)
    with open(path, "rb") as handle:
        if b"\x00" in handle.read(_SNIFF_BYTES):
            raise UnsupportedFormat(f"{os.path.basename(path)} 是二进制文件，不是 Claude Code 或 Pi 的会话记录")
        handle.seek(0)
        for line, raw in enumerate(handle, 1):
            for sub, obj in enumerate(_objects(raw, line, t)):
                _dispatch(t, obj, line, sub)
            if t.format is None and line >= _SNIFF_LINES:
                break
    return size


def _check_size(path: str, max_bytes: int) -> int:
    size = os.path.getsize(path)
    if size > max_bytes:
        raise TranscriptTooLarge(f"{os.path.basename(path)} 有 {human_size(size)}，超过导入上限 {human_size(max_bytes)}"
                                 f"；仓库没有任何改动")
    return size


def _dispatch(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    kind = obj.get("type")
    t.objects += 1
    if not isinstance(kind, str):
        t.skip(line, "缺少 type 字段" if kind is None else "type 不是字符串")
        return
    if t.format is None:
        t.format = _detect(kind)
        if t.format is None:   # 还认不出格式：先记着，认出来之后再按那种格式读
            t.pending.append((line, sub, obj))
            return
        for early in t.pending:
            _dispatch_known(t, early[2], early[0], early[1])
        t.pending = []
    _dispatch_known(t, obj, line, sub)


def _dispatch_known(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    readers = CLAUDE_READERS if t.format == CLAUDE else PI_READERS
    reader = readers.get(obj.get("type"))
    if reader is None:
        _unknown(t, obj, line, sub)
    else:
        reader(t, obj, line, sub)


def _detect(kind: str) -> Optional[str]:
    if kind in PI_READERS:
        return PI
    if kind in CLAUDE_READERS:
        return CLAUDE
    return None


def _unknown(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    """未知类型：记进 skipped；它若带 id，仍留作接线用的结构条目，免得它的子条目变成孤儿。"""
    t.skip(line, f"未知的条目类型 {str(obj.get('type'))[:40]!r}")
    uid, parent = _ids(t, obj, line, sub)
    if uid:
        t.add(Entry(uid, parent, line, "link"))


def _ids(t: _Transcript, obj: dict, line: int, sub: int) -> Tuple[Optional[str], Optional[str]]:
    """(uid, parent)。Pi v1 的条目没有 id：按行号编号，并接在文件里的上一个条目后面（与 Pi 自己的迁移一致）。"""
    if t.format == CLAUDE:
        return _text(obj.get("uuid")), _text(obj.get("parentUuid"))
    if "id" in obj:
        return _text(obj.get("id")), _text(obj.get("parentId"))
    uid = f"L{line}" if not sub else f"L{line}.{sub}"
    parent, t.previous_uid = t.previous_uid, uid
    return uid, parent


def _text(value: Any) -> Optional[str]:
    return value if isinstance(value, str) and value else None


# ── 内容块：保留 Agent 的原生形状，但有界 ─────────────────────────────────────────────────────
class _Converter:
    """content（字符串或块列表）→ 有界的副本：长文本截断、图片占位、去掉签名；统计截断和图片数。"""

    def __init__(self):
        self.truncated = 0
        self.flattened = 0
        self.images = 0

    def content(self, value: Any, limit: int) -> Any:
        if value is None or (isinstance(value, str) and len(value) <= limit):
            return value
        if isinstance(value, str):
            return [self.text_block("text", "text", value, limit)]
        if isinstance(value, list):
            return [self.block(item, limit) for item in value]
        return [{"type": "text", "text": self.cut(json.dumps(value, ensure_ascii=False), limit)[0]}]

    def block(self, block: Any, limit: int) -> dict:
        if isinstance(block, dict) and block.get("type") == "text":   # 最常见的块走捷径
            text = block.get("text")
            if isinstance(text, str) and len(text) <= limit:
                return {"type": "text", "text": text}
        if isinstance(block, str):
            return self.text_block("text", "text", block, limit)
        if not isinstance(block, dict):
            return {"type": "text", "text": json.dumps(block, ensure_ascii=False)}
        return _BLOCKS.get(block.get("type"), _other_block)(self, block, limit)

    def cut(self, text: str, limit: int) -> Tuple[str, Optional[int]]:
        if len(text) <= limit:
            return text, None
        self.truncated += 1
        return text[:limit], len(text)

    def text_block(self, kind: str, key: str, text: Any, limit: int) -> dict:
        text, original = self.cut(text if isinstance(text, str) else _json_text(text), limit)
        block = {"type": kind, key: text}
        if original is not None:
            block["truncated_from"] = original
        return block

    def image(self, block: dict) -> dict:
        """{"type": "image", "omitted": true, "media_type": ..., "size": base64 的字节数}"""
        self.images += 1
        source = block.get("source") if isinstance(block.get("source"), dict) else {}
        data = source.get("data", block.get("data"))
        media = source.get("media_type") or block.get("mimeType") or block.get("media_type") or "image"
        return {"type": block.get("type") or "image", "omitted": True, "media_type": str(media),
                "size": len(data) if isinstance(data, str) else 0}

    def bounded(self, value: Any, limit: int) -> Tuple[Any, Optional[int]]:
        """工具参数的副本：过长的字符串截断，嵌套超过 _MAX_DEPTH 层的部分换成它的 JSON 文本
        （仓库拒绝存太深的消息）。显式栈，不用递归。返回 (副本, 被截断的最长原长)。"""
        longest: Optional[int] = None
        root: List[Any] = [None]
        stack: List[Tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
        while stack:
            item, holder, key, depth = stack.pop()
            if isinstance(item, (dict, list)) and depth >= _MAX_DEPTH:
                self.flattened += 1
                item = _deep_text(item)
            if isinstance(item, str):
                holder[key], original = self.cut(item, limit)
                longest = max(longest or 0, original) if original is not None else longest
            elif isinstance(item, dict):
                holder[key] = copy = {}
                stack.extend((child, copy, name, depth + 1) for name, child in item.items())
            elif isinstance(item, list):
                holder[key] = copy = [None] * len(item)
                stack.extend((child, copy, index, depth + 1) for index, child in enumerate(item))
            else:
                holder[key] = item
        return root[0], longest


def _deep_text(value: Any) -> str:
    try:
        return _COMPACT(value)
    except RecursionError:
        return "（嵌套太深，已省略）"


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode   # C 编码器：没有缩进才用得上


def _json_text(value: Any) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _tool_call_block(convert: _Converter, block: dict, key: str) -> dict:
    arguments, original = convert.bounded(block.get(key, {}), TOOL_OUTPUT_LIMIT)
    copy = {"type": block["type"], "id": block.get("id"), "name": block.get("name"), key: arguments}
    if original is not None:
        copy["truncated_from"] = original
    return copy


def _tool_result_block(convert: _Converter, block: dict, limit: int) -> dict:
    content = block.get("content")
    if isinstance(content, list):   # 工具结果里再套工具结果不合常理：按未知块（有界、不递归）保留
        content = [_other_block(convert, item, TOOL_OUTPUT_LIMIT) if isinstance(item, dict) and
                   item.get("type") == "tool_result" else convert.block(item, TOOL_OUTPUT_LIMIT) for item in content]
    copy = {"type": "tool_result", "tool_use_id": block.get("tool_use_id"),
            "content": convert.content(content, TOOL_OUTPUT_LIMIT) if not isinstance(content, list) else content}
    if block.get("is_error"):
        copy["is_error"] = True
    if isinstance(copy["content"], list) and any("truncated_from" in b for b in copy["content"]):
        copy["truncated_from"] = max(b.get("truncated_from", 0) for b in copy["content"])
    return copy


def _other_block(convert: _Converter, block: dict, limit: int) -> dict:
    copy, original = convert.bounded(block, limit)   # 不认识的块原样保留（有界），导出按“未知内容块”显示
    if original is not None:
        copy["truncated_from"] = original
    return copy


_BLOCKS = {
    "text": lambda c, b, limit: c.text_block("text", "text", b.get("text"), limit),
    "thinking": lambda c, b, limit: c.text_block("thinking", "thinking", b.get("thinking"), limit),  # 不要签名
    "redacted_thinking": lambda c, b, limit: {"type": "redacted_thinking", "omitted": True},
    "image": lambda c, b, limit: c.image(b),
    "document": lambda c, b, limit: c.image(b),
    "tool_use": lambda c, b, limit: _tool_call_block(c, b, "input"),
    "toolCall": lambda c, b, limit: _tool_call_block(c, b, "arguments"),
    "tool_result": _tool_result_block,
}


# ── Claude Code 的行 ───────────────────────────────────────────────────────────────────────
def _claude_message(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    body = obj.get("message")
    if not isinstance(body, dict):
        return t.skip(line, "message 字段不是对象")
    if "content" not in body:
        return t.skip(line, "message 缺少 content")
    uid, parent = _ids(t, obj, line, sub)
    uid = uid or f"line-{t.file_label.strip()}{line}.{sub}"   # 没有 uuid 的行：按位置编号，仍然可以当父节点
    role = _text(body.get("role")) or obj["type"]
    message = _claude_fields(t, obj, body, role, uid)
    entry = Entry(uid, parent, line, "message", message, _text(obj.get("sessionId")), bool(obj.get("isSidechain")))
    entry.stream = _text(body.get("id")) if role == "assistant" else None
    entry.agent = _text(obj.get("agentId")) or (t.file_agent if entry.sidechain else None)
    entry.prompt = _is_prompt(message)
    _note_spawn(t, obj, entry)
    _note_tool_calls(t, message, entry.uid)
    _note_session(t, obj)
    t.add(entry)


def _claude_fields(t: _Transcript, obj: dict, body: dict, role: str, uid: str) -> dict:
    message = {"role": role, "content": t.convert.content(body["content"], TEXT_LIMIT), "id": uid}
    if isinstance(obj.get("timestamp"), str):
        message["timestamp"] = obj["timestamp"]
    if role == "assistant" and isinstance(body.get("model"), str):
        message["model"] = body["model"]
    for flag, key in (("isMeta", "meta"), ("isCompactSummary", "summary"), ("isSidechain", "subagent")):
        if obj.get(flag):
            message[key] = True
    return message


def _is_prompt(message: dict) -> bool:
    """用户亲手输入的一句话（而不是工具结果、注入的提示、摘要或命令输出）：只有它能开出真正的分支。"""
    if message["role"] != "user" or message.get("meta") or message.get("summary"):
        return False
    content = message["content"]
    typed = isinstance(content, str) or any(b.get("type") in ("text", "image") for b in content or [])
    return typed and not _plain_text(message).lstrip().startswith("<local-command-")   # 命令的输出不是提问


def _note_spawn(t: _Transcript, obj: dict, entry: Entry) -> None:
    """工具结果的 toolUseResult.agentId 说明它启动了哪个子代理（整份 toolUseResult 不保存）。"""
    result = obj.get("toolUseResult")
    agent = _text(result.get("agentId")) if isinstance(result, dict) else None
    if agent is None:
        return
    content = entry.message["content"] if isinstance(entry.message["content"], list) else []
    call = next((b.get("tool_use_id") for b in content if b.get("type") == "tool_result"), None)
    t.spawned.setdefault(agent, (entry.uid, call))


def _note_tool_calls(t: _Transcript, message: dict, uid: str) -> None:
    content = message["content"]
    for block in content if isinstance(content, list) else []:
        if block.get("type") in ("tool_use", "toolCall") and isinstance(block.get("id"), str):
            t.tool_calls[block["id"]] = uid
            arguments = block.get("input") or block.get("arguments")
            if block.get("name") in _TASK_TOOLS and isinstance(arguments, dict):
                _note_task(t, block["id"], arguments, uid)


def _note_task(t: _Transcript, call_id: str, arguments: dict, uid: str) -> None:
    if isinstance(arguments.get("prompt"), str):
        t.task_prompts.setdefault(arguments["prompt"].strip(), uid)
    title = arguments.get("description") or arguments.get("subagent_type")
    if isinstance(title, str):
        t.task_titles[call_id] = title


def _note_session(t: _Transcript, obj: dict) -> None:
    session = _text(obj.get("sessionId"))
    if session and session not in t.sessions:
        t.sessions[session] = {"cwd": _text(obj.get("cwd")), "version": _text(obj.get("version")),
                               "git_branch": _text(obj.get("gitBranch"))}


def _claude_link(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    """progress / attachment / system：不是消息，但后面的消息常常挂在它们下面，所以先留着接线。"""
    kind = obj["type"]
    subtype = obj.get("subtype")
    t.dropped[f"{kind}:{subtype}" if isinstance(subtype, str) else kind] += 1
    uid, parent = _ids(t, obj, line, sub)
    if uid is None:
        return
    entry = Entry(uid, parent, line, "link", None, _text(obj.get("sessionId")), bool(obj.get("isSidechain")))
    if subtype == "compact_boundary":
        entry.logical = _text(obj.get("logicalParentUuid"))
    _note_session(t, obj)
    t.add(entry)


def _claude_meta(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    """标题、活动端线索和纯元数据行：不进树。"""
    kind = obj["type"]
    t.dropped[kind] += 1
    if kind == "summary" and isinstance(obj.get("summary"), str):
        t.summaries.append((_text(obj.get("leafUuid")) or "", obj["summary"]))
    elif kind == "last-prompt" and _text(obj.get("leafUuid")):
        t.leaf_hints.append(obj["leafUuid"])
    elif kind in ("ai-title", "custom-title"):
        title = obj.get("customTitle") or obj.get("aiTitle") or obj.get("title")
        if isinstance(title, str) and title.strip():
            t.titles[kind] = title   # 最后一次为准


CLAUDE_READERS = {"user": _claude_message, "assistant": _claude_message,
                  **{kind: _claude_link for kind in ("system", "progress", "attachment")},
                  **{kind: _claude_meta for kind in ("summary", "last-prompt", "ai-title", "custom-title", "agent-name",
                                                     "file-history-snapshot", "queue-operation", "permission-mode",
                                                     "pr-link", "mode")}}


# ── Pi 的行 ────────────────────────────────────────────────────────────────────────────────
def _pi_header(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    if t.header:
        t.dropped["session"] += 1
        return
    t.header = obj


def _pi_message(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    body = obj.get("message")
    if not isinstance(body, dict):
        return t.skip(line, "message 字段不是对象")
    role = _text(body.get("role"))
    if role is None:
        return t.skip(line, "消息缺少 role")
    message = _PI_ROLES.get(role, _pi_plain)(t.convert, body, role)
    if role == "assistant" and isinstance(body.get("model"), str):
        message["model"] = body["model"]
    _pi_add(t, obj, line, sub, message)


def _pi_add(t: _Transcript, obj: dict, line: int, sub: int, message: dict) -> None:
    uid, parent = _ids(t, obj, line, sub)
    if uid is None:
        return t.skip(line, "条目缺少 id")
    if "id" in obj:
        message["id"] = uid
    if isinstance(obj.get("timestamp"), str):
        message["timestamp"] = obj["timestamp"]
    entry = Entry(uid, parent, line, "message", message, _text(t.header.get("id")))
    entry.prompt = _is_prompt(message)
    _note_tool_calls(t, message, uid)
    t.add(entry)


def _pi_plain(convert: _Converter, body: dict, role: str) -> dict:
    message = {"role": role, "content": convert.content(body.get("content"), TEXT_LIMIT)}
    if isinstance(body.get("errorMessage"), str):
        message["error"] = body["errorMessage"]
    return message


def _pi_tool_result(convert: _Converter, body: dict, role: str) -> dict:
    message = {"role": "toolResult", "content": convert.content(body.get("content"), TOOL_OUTPUT_LIMIT),
               "toolCallId": body.get("toolCallId"), "toolName": body.get("toolName")}
    if body.get("isError"):
        message["isError"] = True
    return message


def _pi_bash(convert: _Converter, body: dict, role: str) -> dict:
    """用户在 Pi 里用 ! 直接跑的命令：命令和输出合成一段文本。"""
    text = f"$ {body.get('command', '')}\n{body.get('output') or ''}"
    block = convert.text_block("text", "text", text, TOOL_OUTPUT_LIMIT)
    message = {"role": "bashExecution", "content": [block]}
    if body.get("exitCode") not in (0, None):
        message["isError"] = True
    return message


def _pi_custom(convert: _Converter, body: dict, role: str) -> dict:
    return {"role": "custom", "content": convert.content(body.get("content"), TEXT_LIMIT), "meta": True}


_PI_ROLES = {"toolResult": _pi_tool_result, "bashExecution": _pi_bash, "custom": _pi_custom, "hookMessage": _pi_custom}


def _pi_summary(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    """压缩摘要 / 分支摘要：Agent 当时看到的就是它，所以作为一条可见消息保留，标记 summary。"""
    role = "compactionSummary" if obj["type"] == "compaction" else "branchSummary"
    summary = obj.get("summary")
    message = {"role": role, "content": t.convert.content(summary if isinstance(summary, str) else "", TEXT_LIMIT),
               "summary": True}
    _pi_add(t, obj, line, sub, message)


def _pi_custom_message(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    _pi_add(t, obj, line, sub, _pi_custom(t.convert, obj, "custom"))


def _pi_link(t: _Transcript, obj: dict, line: int, sub: int) -> None:
    """model_change / label / session_info / custom …：不是消息；名字和标签记下来，条目留作接线。"""
    kind = obj["type"]
    custom = obj.get("customType")
    system_prompt = kind == "custom" and isinstance(custom, str) and custom.endswith("system-prompt")
    t.dropped["custom:system-prompt" if system_prompt else kind] += 1   # 系统提示词快照不保存
    if kind == "label" and _text(obj.get("targetId")):
        _set_label(t, obj["targetId"], obj.get("label"))
    elif kind == "session_info" and isinstance(obj.get("name"), str) and obj["name"].strip():
        t.titles["session_info"] = obj["name"]
    uid, parent = _ids(t, obj, line, sub)
    if uid:
        t.add(Entry(uid, parent, line, "link"))


def _set_label(t: _Transcript, target: str, label: Any) -> None:
    if isinstance(label, str) and label.strip():
        t.labels[target] = label
    else:
        t.labels.pop(target, None)   # label 为空表示清除


PI_READERS = {"session": _pi_header, "message": _pi_message, "compaction": _pi_summary,
              "branch_summary": _pi_summary, "custom_message": _pi_custom_message,
              **{kind: _pi_link for kind in ("model_change", "thinking_level_change", "label", "session_info",
                                             "custom")}}


# ── 修复：缺父、compact_boundary、空父、环 ─────────────────────────────────────────────────
def _repair(t: _Transcript) -> None:
    orphans = [e for e in t.order if e.parent is not None and e.parent not in t.entries]
    for entry in orphans:
        entry.parent = None
    if orphans:
        t.warnings.append(f"{len(orphans)} 个条目的父条目不在文件里，已作为新的根（第 "
                          f"{_lines(orphans)} 行）")
    if t.format == CLAUDE:
        _follow_compact_boundaries(t)
        _chain_loose_roots(t, {e.uid for e in orphans})
    _break_cycles(t)


def _lines(entries: List[Entry], shown: int = 8) -> str:
    text = "、".join(f"{e.label_file}{e.line}" for e in entries[:shown])
    return text + ("……" if len(entries) > shown else "")


def _follow_compact_boundaries(t: _Transcript) -> None:
    """/compact 之后的 compact_boundary 没有 parentUuid，只有 logicalParentUuid：接上它，一个会话还是一棵树。"""
    previous: Optional[Entry] = None
    for entry in t.order:
        if entry.logical and entry.parent is None:
            target = entry.logical if entry.logical in t.entries else None
            if target and not _reaches(t, target, entry.uid):
                entry.parent = target
            else:
                entry.parent = previous.uid if previous and not _reaches(t, previous.uid, entry.uid) else None
                reason = "不在文件里" if target is None else "会形成环"
                t.warnings.append(f"第 {entry.line} 行 compact_boundary 的 logicalParentUuid {reason}，"
                                  f"改接到文件里的上一条消息")
        if entry.kind == "message" and not entry.sidechain:
            previous = entry


def _chain_loose_roots(t: _Transcript, orphans: set) -> None:
    """同一会话里第二个 parentUuid 为空的条目（旧版 /compact、手写的记录）：接在同一会话的上一条消息后面。"""
    seen_root: set = set()
    last_message: Dict[Optional[str], Entry] = {}
    chained: List[Entry] = []
    for entry in t.order:
        loose = entry.parent is None and not entry.sidechain and entry.uid not in orphans and not entry.logical
        if loose and entry.session in seen_root and entry.session in last_message:
            entry.parent = last_message[entry.session].uid
            chained.append(entry)
        elif loose:
            seen_root.add(entry.session)
        if entry.kind == "message" and not entry.sidechain:
            last_message[entry.session] = entry
    if chained:
        t.warnings.append(f"{len(chained)} 条消息的 parentUuid 为空但不是会话的开头，已按文件顺序接在前一条消息后面"
                          f"（第 {_lines(chained)} 行）")


def _reaches(t: _Transcript, start: str, target: str) -> bool:
    """从 start 沿父链往上走，会不会走到 target（用来判断一条新的连线会不会成环）。"""
    seen, current = set(), start
    while current is not None and current not in seen:
        if current == target:
            return True
        seen.add(current)
        entry = t.entries.get(current)
        current = entry.parent if entry else None
    return False


def _break_cycles(t: _Transcript) -> None:
    """手工改坏的文件里可能有 parentUuid 环：环里文件位置最靠后的条目断开，成为根。"""
    state: Dict[str, int] = {}
    for start in t.order:
        path: List[Entry] = []
        current: Optional[Entry] = start
        while current is not None and current.uid not in state:
            state[current.uid] = 1
            path.append(current)
            current = t.entries.get(current.parent) if current.parent else None
        if current is not None and state[current.uid] == 1:
            cycle = path[path.index(current):]
            victim = max(cycle, key=lambda e: e.seq)
            victim.parent = None
            t.warnings.append(f"第 {victim.line} 行处的父子关系形成了环（{len(cycle)} 个条目），已在这里断开")
        for entry in path:
            state[entry.uid] = 2


# ── 树：先接到最近的消息祖先，再合并流式分段、拉直假分叉 ──────────────────────────────────────
class _Tree:
    """只含消息的树。parent / children 以 uid 为键；head 把并入别人的流式分段映射到那条消息。"""

    def __init__(self, t: _Transcript):
        self.t = t
        self.anchor = _anchors(t)
        self.head: Dict[str, str] = {}
        self.parent: Dict[str, Optional[str]] = {}
        for entry in t.order:
            if entry.kind == "message":
                self.parent[entry.uid] = self.anchor.get(entry.parent) if entry.parent else None
        self.children = self._children()
        self.sub_roots: List[str] = []
        self.spawn_hint: Dict[str, Optional[str]] = {}

    def _children(self) -> Dict[str, List[str]]:
        children: Dict[str, List[str]] = {}
        for uid, parent in self.parent.items():   # dict 保持文件顺序，子列表因此按时间排好
            if parent is not None:
                children.setdefault(parent, []).append(uid)
        return children

    def message_of(self, uid: Optional[str]) -> Optional[str]:
        """任意条目 → 它所在或最近的祖先消息（合并后的那条）。"""
        found = self.anchor.get(uid) if uid else None
        return self.head.get(found, found) if found else None

    def roots(self) -> List[str]:
        return [uid for uid, parent in self.parent.items() if parent is None]

    def top_down(self) -> List[str]:
        """父在子前的顺序（广度优先）。"""
        order, queue = [], deque(self.roots())
        while queue:
            uid = queue.popleft()
            order.append(uid)
            queue.extend(self.children.get(uid, []))
        return order


def _anchors(t: _Transcript) -> Dict[str, Optional[str]]:
    """每个条目 → 它自己（若是消息）或最近的消息祖先；结构条目因此被“跳过”而不是把链剪断。"""
    anchor: Dict[str, Optional[str]] = {}
    for start in t.order:
        path: List[Entry] = []
        current: Optional[Entry] = start
        while current is not None and current.uid not in anchor and current.kind != "message":
            path.append(current)
            current = t.entries.get(current.parent) if current.parent else None
        if current is None:
            found = None
        elif current.kind == "message":
            found = anchor.setdefault(current.uid, current.uid)
        else:
            found = anchor[current.uid]
        for entry in path:
            anchor[entry.uid] = found
    return anchor


def _merge_streams(tree: _Tree) -> None:
    """Claude Code 把一次 API 回复按内容块分几行写，每行一个 uuid、共用 message.id：合回一条消息。"""
    entries = tree.t.entries
    for uid in tree.top_down():
        entry, parent = entries[uid], tree.parent[uid]
        if parent is None or entry.stream is None:
            continue
        group = entries[tree.head.get(parent, parent)]
        if group.stream == entry.stream and group.sidechain == entry.sidechain:
            _absorb(group, entry)
            tree.head[uid] = group.uid
    if tree.head:
        for uid in tree.head:
            del tree.parent[uid]
        for uid, parent in tree.parent.items():
            tree.parent[uid] = tree.head.get(parent, parent) if parent else None
        tree.children = tree._children()


def _absorb(group: Entry, part: Entry) -> None:
    content = group.message["content"]
    if not isinstance(content, list):
        group.message["content"] = content = [] if content is None else [{"type": "text", "text": content}]
    extra = part.message["content"]
    content.extend(extra if isinstance(extra, list) else ([] if extra is None else [{"type": "text", "text": extra}]))
    # 流式开头常有一个只含换行的 text 块：它是录制的痕迹，不是回复的内容
    content[:] = [b for b in content if b.get("type") != "text" or str(b.get("text", "")).strip()] or content[:1]
    group.last_seq = max(group.last_seq, part.seq)


def _linearise(tree: _Tree) -> None:
    """一个父消息下的“非用户输入”子消息（工具结果、钩子行旁的回复、重试）按时间串成一条线；
    用户输入的每一句仍是各自的分支起点。"""
    entries = tree.t.entries
    work = [uid for uid, kids in tree.children.items() if len(kids) > 1]
    while work:
        parent = work.pop()
        kids = tree.children.get(parent, [])
        others = [uid for uid in kids if not entries[uid].prompt]
        for previous, current in zip(others, others[1:]):
            end = _chain_end(tree, previous, entries[current].seq)
            kids.remove(current)
            tree.parent[current] = end
            siblings = tree.children.setdefault(end, [])
            siblings.append(current)
            siblings.sort(key=lambda uid: entries[uid].seq)
            if len(siblings) > 1:
                work.append(end)


def _chain_end(tree: _Tree, start: str, before_seq: int) -> str:
    """从 start 顺着“最新的子消息”往下走，停在时间上早于 before_seq 的最后一条。"""
    current = start
    while True:
        kids = tree.children.get(current)
        if not kids or tree.t.entries[kids[-1]].seq > before_seq:
            return current
        current = kids[-1]


def _split_sidechains(tree: _Tree) -> None:
    """子代理的消息（isSidechain）绝不拼进主线：每段子代理链的开头单独记下，稍后挂到启动它的节点下。"""
    entries = tree.t.entries
    for uid, parent in list(tree.parent.items()):
        if not entries[uid].sidechain or (parent is not None and entries[parent].sidechain):
            continue
        if parent is not None:
            tree.children[parent].remove(uid)
            tree.parent[uid] = None
        tree.sub_roots.append(uid)
        tree.spawn_hint[uid] = parent


def _spawner(tree: _Tree, root: str) -> Optional[str]:
    """启动这段子代理的消息：它在主线上的父消息；或 toolUseResult.agentId 对上的那次调用；或 Task 的 prompt 相同。"""
    t, entry = tree.t, tree.t.entries[root]
    if tree.spawn_hint.get(root):
        return tree.spawn_hint[root]
    if entry.agent and entry.agent in t.spawned:
        result, call = t.spawned[entry.agent]
        return tree.message_of(t.tool_calls.get(call or "")) or tree.message_of(result)
    text = _plain_text(entry.message).strip()
    return tree.message_of(t.task_prompts.get(text)) if text else None


def _plain_text(message: Optional[dict]) -> str:
    content = (message or {}).get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _active_end(tree: _Tree) -> Optional[str]:
    """Pi：文件里最后一个有效条目；Claude Code：最新且存在的 last-prompt.leafUuid，否则最新的非子代理叶子。"""
    t = tree.t
    hints = [e.uid for e in t.order[-1:]] if t.format == PI else list(reversed(t.leaf_hints))
    for hint in hints:
        found = tree.message_of(hint)
        if found and not t.entries[found].sidechain:
            return found
    leaves = [uid for uid in tree.parent if not tree.children.get(uid) and not t.entries[uid].sidechain]
    return max(leaves, key=lambda uid: t.entries[uid].last_seq, default=None)


# ── 规划：把消息树切成节点（主干 + 分支 + 续接的会话 + 子代理）──────────────────────────────────
@dataclass
class _Planned:
    start: str
    parent: Optional[int]
    fork_point: int
    messages: List[dict]
    own: List[str]
    kind: str          # trunk | branch | resume | fork | subagent | orphan
    active: bool = False


class _Planner:
    """把消息树切成节点：一个节点 = 从分支起点沿“继续的孩子”一直走下去的一段，其余孩子各开一个子节点。

    在分叉处继续哪个孩子：同一会话的优先，其中通向活动端的优先，否则子树里最近还在动的那个——
    所以根 → 活动端是一个节点（主干），换了 sessionId 的地方开新节点（续接 / 分叉会话）。"""

    def __init__(self, tree: _Tree, active: Optional[str]):
        self.tree, self.t, self.active = tree, tree.t, active
        self.on_active = self._path_to(active)
        self.newest = self._newest()
        self.plan: List[_Planned] = []
        self.owner: Dict[str, int] = {}
        self.passed_over: List[str] = []   # 继续主线的子消息：上次导入时它可能是一条分支

    def _path_to(self, uid: Optional[str]) -> set:
        path = set()
        while uid is not None:
            path.add(uid)
            uid = self.tree.parent.get(uid)
        return path

    def _newest(self) -> Dict[str, int]:
        """每条消息的子树里最新一行的位置：分支沿着“最近还在动”的方向延伸。"""
        newest = {}
        for uid in reversed(self.tree.top_down()):   # 子代理的链开头也是根，一并算进去
            kids = self.tree.children.get(uid, [])
            newest[uid] = max([self.t.entries[uid].last_seq] + [newest[k] for k in kids])
        return newest

    def run(self) -> List[_Planned]:
        main_roots = sorted(self.tree.roots(), key=lambda uid: (uid not in self.on_active, self.t.entries[uid].seq))
        main_roots = [uid for uid in main_roots if uid not in self.tree.spawn_hint]
        for index, root in enumerate(main_roots):
            self._grow(root, None, 0, [], "trunk" if index == 0 else "orphan")
        self._attach_subagents()
        return self.plan

    def _attach_subagents(self) -> None:
        pending = list(self.tree.sub_roots)
        while pending:   # 子代理也可能启动子代理：等它的启动者先有了节点
            ready = [root for root in pending if _spawner(self.tree, root) in self.owner]
            for root in ready:
                self._grow(root, self.owner[_spawner(self.tree, root)], 0, [], "subagent")
            if not ready:
                for root in pending:   # 找不到启动它的调用：自成一棵树
                    self._grow(root, None, 0, [], "subagent")
                break
            pending = [root for root in pending if root not in ready]

    def _grow(self, start: str, parent: Optional[int], fork_point: int, prefix: List[dict], kind: str) -> None:
        queue = deque([(start, parent, fork_point, prefix, kind)])
        while queue:
            queue.extend(self._segment(*queue.popleft()))

    def _segment(self, start: str, parent: Optional[int], fork_point: int, prefix: List[dict], kind: str):
        """从 start 往下走成一个节点；返回在路上遇到的分支起点（下一批节点）。"""
        entries, children = self.t.entries, self.tree.children
        own, current, session, starts = [start], start, entries[start].session, []
        while current != self.active and children.get(current):
            kids = children[current]
            follow = self._continuation(kids, session)
            position = fork_point + len(own)
            starts += [(k, position) for k in kids if k != follow]
            if entries[follow].session not in (session, None) and not entries[follow].sidechain:
                starts.append((follow, position))   # 换了 sessionId：续接 / 分叉出来的会话是一个新节点
                break
            self.passed_over += [follow] if len(kids) > 1 else []
            own.append(follow)
            current = follow
        if current == self.active:
            starts += [(k, fork_point + len(own)) for k in children.get(current, [])]
        index = self._record(start, parent, fork_point, prefix, own, kind)
        return [(k, index, position, self.plan[index].messages[:position], self._kind_of(k, session, index, position))
                for k, position in starts]

    def _continuation(self, kids: List[str], session: Optional[str]) -> str:
        """分叉处沿哪个孩子继续：同一会话的优先，其中通向活动端的优先，否则最近还在动的那条。"""
        same = [k for k in kids if self.t.entries[k].session in (session, None)] or kids
        on_path = [k for k in same if k in self.on_active]
        return on_path[0] if on_path else max(same, key=lambda k: self.newest[k])

    def _kind_of(self, start: str, session: Optional[str], parent: int, position: int) -> str:
        entry = self.t.entries[start]
        if entry.sidechain:
            return "subagent"
        if entry.session in (session, None):
            return "branch"
        return "resume" if position == len(self.plan[parent].messages) else "fork"

    def _record(self, start, parent, fork_point, prefix, own, kind) -> int:
        messages = prefix + [self.t.entries[uid].message for uid in own]
        planned = _Planned(start, parent, fork_point, messages, own, kind, active=own[-1] == self.active)
        self.plan.append(planned)
        for uid in own:
            self.owner[uid] = len(self.plan) - 1
        return len(self.plan) - 1


# ── 节点：ID、标题、来源 ────────────────────────────────────────────────────────────────────
def _node_id(t: _Transcript, planned: _Planned) -> str:
    """由来源决定的 12 位十六进制 ID：同一文件再导入，得到同一组节点。"""
    entry = t.entries[planned.start]
    key = "\x00".join([t.format or "", t.file, entry.session or "", planned.start])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def _base_title(t: _Transcript, trunk: Optional[_Planned]) -> str:
    """custom-title > ai-title > Pi 的会话名 > 文件里的 summary > 第一句用户输入 > 文件名。"""
    for key in ("custom-title", "session_info", "ai-title"):
        if t.titles.get(key):
            return _one_line(t.titles[key])
    summaries = [text for leaf, text in t.summaries if leaf in t.entries]   # 指向别的文件的 summary 不算
    if summaries:
        return _one_line(summaries[-1])
    for message in trunk.messages if trunk else []:
        if _is_prompt(message) and _plain_text(message).strip():
            return _one_line(_plain_text(message))
    return t.file


def _one_line(text: str, width: int = 48) -> str:
    text = " ".join(text.split())
    return text[:width] + ("…" if len(text) > width else "")


def _title(t: _Transcript, planned: _Planned, base: str, number: int) -> str:
    entries = t.entries
    session = (entries[planned.start].session or "")[:8]
    if planned.kind == "subagent":
        return f"子代理：{_subagent_title(t, planned)}"
    label = next((entries[uid].message.get("label") for uid in planned.own if entries[uid].message.get("label")), None)
    suffix = {"trunk": "", "orphan": " · 另一个起点", "resume": f" · 续接会话 {session}",
              "fork": f" · 分叉会话 {session}", "branch": f" · {_one_line(label, 24)}" if label else f" · 分支 {number}"}
    return base + suffix[planned.kind]


def _subagent_title(t: _Transcript, planned: _Planned) -> str:
    entry = t.entries[planned.start]
    spawn = t.spawned.get(entry.agent or "")
    if spawn and t.task_titles.get(spawn[1] or ""):
        return _one_line(t.task_titles[spawn[1]], 32)
    return _one_line(_plain_text(entry.message) or entry.agent or "未命名", 32)


def _created_at(planned: _Planned, t: _Transcript) -> str:
    """分支第一条消息的时间（UTC，和章节的 created_at 同一格式）；没有时间戳就用文件的修改时间。"""
    for message in planned.messages[planned.fork_point:] + planned.messages[:planned.fork_point]:
        stamp = message.get("timestamp")
        if isinstance(stamp, str) and re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", stamp):
            return stamp[:10] + " " + stamp[11:19]
    stamp = t.header.get("timestamp")
    if isinstance(stamp, str) and len(stamp) >= 19:
        return stamp[:10] + " " + stamp[11:19]
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(os.path.getmtime(t.path)))


def _source(t: _Transcript, planned: _Planned) -> Dict[str, Any]:
    entry = t.entries[planned.start]
    meta = t.sessions.get(entry.session or "", {})
    source = {"format": t.format, "file": t.file, "session_id": entry.session or _text(t.header.get("id")),
              "agent_version": meta.get("version") if t.format == CLAUDE else None,   # Pi 不记录自己的版本
              "cwd": meta.get("cwd") if t.format == CLAUDE else _text(t.header.get("cwd")),
              "subagent": planned.kind == "subagent", "active_end": planned.active,
              "first_id": planned.start, "imported_messages": len(planned.messages)}
    if meta.get("git_branch"):
        source["git_branch"] = meta["git_branch"]
    if t.format == PI and isinstance(t.header.get("version"), int):
        source["format_version"] = t.header["version"]
    if planned.kind == "subagent" and entry.agent:
        source["agent_id"] = entry.agent
    label = next((t.entries[uid].message["label"] for uid in planned.own if t.entries[uid].message.get("label")), None)
    if label:
        source["label"] = label
    return source


def _nodes(t: _Transcript, plan: List[_Planned]) -> List[SessionNode]:
    trunk = next((p for p in plan if p.kind == "trunk"), None)
    base = _base_title(t, trunk)
    ids = [_node_id(t, planned) for planned in plan]
    nodes, branch_numbers = [], Counter()
    for planned, node_id in zip(plan, ids):
        parent_id = ids[planned.parent] if planned.parent is not None else None
        branch_numbers[planned.kind] += 1
        nodes.append(SessionNode(session_id=node_id, title=_title(t, planned, base, branch_numbers[planned.kind]),
                                 parent_id=parent_id, messages=planned.messages,
                                 created_at=_created_at(planned, t),
                                 fork_point=planned.fork_point if parent_id else None, source=_source(t, planned)))
    return nodes


def _apply_labels(t: _Transcript, tree: _Tree) -> None:
    """Pi 的 label 条目 → 目标消息的 label（目标是结构条目时落到最近的消息上）。"""
    for target, label in t.labels.items():
        found = tree.message_of(target)
        if found:
            t.entries[found].message["label"] = label


def _level_order(nodes: List[SessionNode]) -> List[SessionNode]:
    """根在前、父在子前：按这个顺序保存，中途被杀也不会留下找不到父节点的分支。"""
    by_parent: Dict[Optional[str], List[SessionNode]] = {}
    for node in nodes:
        by_parent.setdefault(node.parent_id, []).append(node)
    order, queue = [], deque(by_parent.get(None, []))
    while queue:
        node = queue.popleft()
        order.append(node)
        queue.extend(by_parent.get(node.session_id, []))
    return order


def _copy_bytes(plan: List[_Planned]) -> int:
    """分叉节点重复保存的父节点前缀有多少字节（紧凑 JSON）。每个父节点只算一次前缀和，每条消息只编码一次。"""
    prefix_sums: Dict[int, List[int]] = {}
    total = 0
    for planned in plan:
        if planned.parent is None or not planned.fork_point:
            continue
        sums = prefix_sums.setdefault(planned.parent, [0])
        messages = plan[planned.parent].messages
        while len(sums) <= planned.fork_point:
            sums.append(sums[-1] + len(_COMPACT(messages[len(sums) - 1]).encode("utf-8")))
        total += sums[planned.fork_point]
    return total


@contextmanager
def _paused_gc() -> Iterator[None]:
    """json.loads 造出几百万个小对象，每隔一阵就触发一次扫描整个（还在长大的）堆的回收；
    导入只建树、不产生循环引用，所以读和规划期间暂停循环回收器，结束后恢复原状。"""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ── 读 + 建树 + 规划（不碰仓库）──────────────────────────────────────────────────────────────
def _read_all(path: str, max_bytes: int) -> Tuple[_Transcript, int]:
    t = _Transcript(path)
    if os.path.isdir(path):   # 导入的是一个文件；整个文件夹交给 find_transcripts
        raise SessionError(f"无法读取 {t.file}：这是一个文件夹；仓库没有任何改动")
    try:
        size = _read_file(path, t, max_bytes)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise SessionError(f"无法读取 {t.file}：{os_error_reason(exc)}；仓库没有任何改动") from None
    if t.format is None:
        raise _unrecognised(t, size)
    if t.format == CLAUDE:
        size += _read_subagents(path, t, max_bytes)
    return t, size


def _unrecognised(t: _Transcript, size: int) -> SessionError:
    if size == 0 or (not t.objects and all(reason == "空行" for _, reason in t.skipped)):
        return NoConversation(f"{t.file} 是空文件，没有可导入的对话；仓库没有任何改动")
    return UnsupportedFormat(f"{t.file} 不是 Claude Code 或 Pi 的会话记录（认不出任何一种条目）；仓库没有任何改动")


def _read_subagents(path: str, t: _Transcript, max_bytes: int) -> int:
    """<sessionId>.jsonl 旁边的 <sessionId>/subagents/agent-*.jsonl；agent-acompact-* 是内部压缩用的，不导入。"""
    folder = os.path.join(os.path.dirname(path), os.path.splitext(t.file)[0], "subagents")
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    size = 0
    for name in names:
        if not (name.startswith("agent-") and name.endswith(".jsonl")):
            continue
        if name.startswith("agent-acompact"):
            t.dropped["subagent:acompact"] += 1
            continue
        t.file_label, t.file_agent = f"{name} ", name[len("agent-"):-len(".jsonl")]
        size += _read_file(os.path.join(folder, name), t, max_bytes)
    t.file_label, t.file_agent = "", None
    return size


def _build(t: _Transcript) -> Tuple[_Tree, List[_Planned]]:
    if not any(entry.kind == "message" for entry in t.order):
        raise NoConversation(f"{t.file} 里没有任何对话消息（只有文件头、快照或元数据）；仓库没有任何改动")
    if t.duplicates:
        t.warnings.append(f"{len(t.duplicates)} 行重复了前面已有的 uuid / id，保留第一次出现的那行（第 "
                          f"{'、'.join(map(str, t.duplicates[:8]))}{'……' if len(t.duplicates) > 8 else ''} 行）")
    _repair(t)
    tree = _Tree(t)
    if t.format == CLAUDE:
        _merge_streams(tree)
        _split_sidechains(tree)
        _linearise(tree)
    _apply_labels(t, tree)
    planner = _Planner(tree, _active_end(tree))
    plan = planner.run()
    t.passed_over = planner.passed_over
    if t.convert.flattened:
        t.warnings.append(f"{t.convert.flattened} 处嵌套超过 {_MAX_DEPTH} 层的工具参数已存成 JSON 文本")
    if t.convert.truncated:
        t.warnings.append(f"{t.convert.truncated} 段过长的文本已截断（工具输出上限 {TOOL_OUTPUT_LIMIT} 字符，"
                          f"其它文本 {TEXT_LIMIT} 字符），块上的 truncated_from 记着原长")
    return tree, plan


# ── 写入仓库 ───────────────────────────────────────────────────────────────────────────────
def _same(existing: SessionNode, node: SessionNode) -> bool:
    return (existing.title, existing.parent_id, existing.fork_point, existing.created_at, existing.source,
            existing.messages) == (node.title, node.parent_id, node.fork_point, node.created_at, node.source,
                                   node.messages)


def _edited_in_store(existing: SessionNode) -> bool:
    """导入的节点在仓库里被续写过（消息数和导入时记下的不一样），或者根本不是导入的：不覆盖。"""
    source = existing.source if isinstance(existing.source, dict) else {}
    return source.get("imported_messages") != len(existing.messages)


def _write(store: SessionStore, nodes: List[SessionNode], report: ImportReport, dry_run: bool) -> None:
    blocked: set = set()
    for node in nodes:
        if node.parent_id in blocked:
            blocked.add(node.session_id)
            continue
        try:
            existing = store.load(node.session_id)
        except SessionError as exc:
            report.warnings.append(f"节点 {node.session_id} 在仓库里读不出来，保持原样，它和它的分支没有导入：{exc}")
            blocked.add(node.session_id)
            continue
        try:
            _write_one(store, node, existing, report, dry_run)
        except SessionError as exc:   # 别人正好在保存同一节点（ConflictError），或仓库拒绝了它：它和它的分支这次不写
            report.warnings.append(f"节点 {node.session_id} 没有保存，它和它的分支这次跳过：{exc}")
            blocked.add(node.session_id)
            continue
        report.node_ids.append(node.session_id)


def _write_one(store: SessionStore, node: SessionNode, existing: Optional[SessionNode], report: ImportReport,
               dry_run: bool) -> None:
    if existing is not None and _same(existing, node):
        report.unchanged += 1
        return
    if existing is not None and _edited_in_store(existing):
        report.kept += 1
        report.warnings.append(f"节点 {node.session_id}（{existing.title}）在仓库里续写过，保留仓库里的版本，没有用记录覆盖")
        return
    if existing is not None:   # Agent 又追加了对话：在读入的那一版上改，save() 会核对修订号
        existing.title, existing.parent_id, existing.fork_point = node.title, node.parent_id, node.fork_point
        existing.messages, existing.source, existing.created_at = node.messages, node.source, node.created_at
    if not dry_run:
        store.save(existing or node)   # 失败时抛错，下面的计数不变
        report.bytes_written += os.path.getsize(store.path_of(node.session_id))
    report.written += 1
    report.updated += existing is not None


def _note_absorbed(store: SessionStore, t: _Transcript, node_ids: set, report: ImportReport) -> None:
    """活动端换到了另一条旧分支：上次导入时那条分支的节点现在属于主干，旧节点留着（可能有人从它分叉过）。"""
    for uid in t.passed_over:
        key = "\x00".join([t.format or "", t.file, t.entries[uid].session or "", uid])
        old = hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]
        if old not in node_ids and os.path.exists(store.path_of(old)):
            report.warnings.append(f"上次导入的分支节点 {old} 现在是主干的一部分（活动端移动了），旧节点保留未动，可自行删除")


# ── 公共 API ──────────────────────────────────────────────────────────────────────────────
def import_file(path: str, store: SessionStore, *, max_bytes: int = DEFAULT_MAX_BYTES,
                dry_run: bool = False) -> ImportReport:
    """导入一个 Claude Code / Pi 的 JSONL 记录，返回 ImportReport。

    格式不对（UnsupportedFormat）、太大（TranscriptTooLarge）、没有对话（NoConversation）时抛错，仓库不变。
    dry_run=True 只读和规划，报告里写明会写哪些节点，但什么都不保存。
    """
    path = os.fspath(path)
    with _paused_gc():
        t, size = _read_all(path, max_bytes)
        tree, plan = _build(t)
        nodes = _nodes(t, plan)
        report = ImportReport(file=t.file, format=t.format or "", bytes_read=size, skipped=t.skipped,
                              dropped=dict(t.dropped), warnings=t.warnings, copy_bytes=_copy_bytes(plan),
                              messages=sum(len(p.own) for p in plan))
    _write(store, _level_order(nodes), report, dry_run)
    written = set(report.node_ids)
    report.root_ids = [n.session_id for n in nodes if n.parent_id is None and n.session_id in written]
    report.active_id = next((n.session_id for n, p in zip(nodes, plan) if p.active and n.session_id in written), None)
    _note_absorbed(store, t, written, report)
    return report


def list_examples() -> List[str]:
    """examples/ 里为本项目写的示例记录（子代理文件随主文件导入，不单独列出）。"""
    if not os.path.isdir(EXAMPLES_DIR):
        return []
    return sorted(os.path.join(EXAMPLES_DIR, name) for name in os.listdir(EXAMPLES_DIR) if name.endswith(".jsonl"))


def find_transcripts(paths: List[str]) -> Tuple[List[str], List[str]]:
    """命令行参数 → 要导入的文件；文件夹里递归找 *.jsonl（子代理文件由主文件带入）。返回 (文件, 问题)。"""
    files, problems = [], []
    for path in paths:
        if os.path.isdir(path):
            found = [p for p in _walk_jsonl(path) if not _is_subagent_file(p)]
            files += found
            if not found:
                problems.append(f"文件夹 {path} 里没有 .jsonl 会话记录")
        elif os.path.isfile(path):
            files.append(path)
        else:
            problems.append(f"找不到文件或文件夹：{path}")
    return files, problems


def _walk_jsonl(folder: str) -> List[str]:
    found = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        found += [os.path.join(root, name) for name in sorted(names) if name.endswith(".jsonl")]
    return found


def _is_subagent_file(path: str) -> bool:
    """<dir>/<sessionId>/subagents/agent-x.jsonl，且 <dir>/<sessionId>.jsonl 存在：由主文件带入。"""
    subagents = os.path.dirname(path)
    session_dir = os.path.dirname(subagents)
    return os.path.basename(subagents) == "subagents" and os.path.isfile(session_dir + ".jsonl")

