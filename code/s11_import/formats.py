"""formats.py — 格式表：每种 Agent 的记录占一行，认格式和分派每一行记录都只查这张表

    FORMATS = (Format(CLAUDE, "Claude Code", claude.sniff, claude.READERS, …),   claude.py
               Format(PI, "Pi", pi.sniff, pi.READERS, …),                          pi.py
               Format(CODEX, "Codex CLI", codex.sniff, codex.READERS, …),          codex.py
               Format(GEMINI, "Gemini CLI", gemini.sniff, gemini.READERS, …))      gemini.py

    一个对象 ──► dispatch(t, obj, 行号, 行内序号)
        还没认出格式：哪一行的 sniff(obj) 说“是我写的”就是哪种格式（几种 sniff 互斥）；
                      在它之前读到的对象先记着，认出后按这种格式补读
        已经认出：readers[kind(obj)](t, obj, 行号, 行内序号)；没有 kind → skipped；不认识的 kind → 格式的 unknown
    一个 JSON 文档（Gemini 的 .json）──► dispatch_document：哪一行的 sniff_document 认它，就交给那行的 document
    都不认：refusal() 看看它是不是这些 Agent 的别的文件（Gemini 的 logs.json、Codex 的 history.jsonl……），
           拒绝时说出看到的是什么

关键洞察：格式之间的差别只有几处（怎么认、怎么读一行、id 怎么取、活动端在哪、来源里记什么、要不要拉直假分叉），
把它们写成一行里的几列，建图和规划就不用知道有几种格式。认格式看对象的形状而不只看 type：
Gemini 的消息也叫 {"type": "user"}，旧版 Codex 的条目也叫 {"type": "message"}。

加一种格式 = 一个新文件（它的 sniff、READERS、ids、active_hints、origin）+ 这里的一行；sniff 必须和其它行互斥
（测试用每种格式的样例对象检查）。认不出任何一种格式的文件导入时得到 UnsupportedFormat，
消息里列出 known_formats()（“Claude Code、Pi、Codex CLI 或 Gemini CLI”），仓库不变。
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

import s11_import.claude as claude  # 不写 from . import：那样看起来像是引用整个包（包又引用本模块）
import s11_import.codex as codex
import s11_import.gemini as gemini
import s11_import.graph as graph
import s11_import.pi as pi

from .transcript import Entry, Transcript

__all__ = ["Format", "FORMATS", "CLAUDE", "PI", "CODEX", "GEMINI", "FORMAT_NAMES", "detect", "detect_document",
           "dispatch", "dispatch_document", "known_formats", "refusal", "type_field"]

Reader = Callable[[Transcript, dict, int, int], None]


def type_field(obj: dict) -> Optional[str]:
    """大多数格式：对象的 type 字段就是 readers 的键。"""
    kind = obj.get("type")
    return kind if isinstance(kind, str) else None


def skip_unknown(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """不认识的类型：记进 skipped；它若带 id，仍留作接线用的结构条目，免得它的子条目变成孤儿。"""
    t.skip(line, f"未知的条目类型 {str(obj.get('type'))[:40]!r}", "未知的条目类型")
    uid, parent = t.format.ids(t, obj, line, sub)
    if uid:
        t.add(Entry(uid, parent, line, "link"))


def _no_companions(path: str, t: Transcript) -> Iterable[Any]:
    return ()


def _never(value: Any) -> Any:
    return None


def _nothing(t: Transcript) -> None:
    return None


@dataclass(frozen=True)
class Format:
    """格式表的一行。前七列每种格式都要有；其余有默认值（不需要就不写）。"""
    name: str                   # 写进 source.format、节点 ID 和报告的名字
    display_name: str           # 给人看的名字
    sniff: Callable[[dict], bool]                     # 这个对象是不是这种格式写的（认格式只靠它）
    readers: Dict[str, Reader]  # kind → 读取函数
    ids: Callable[[Transcript, dict, int, int], Tuple[Optional[str], Optional[str]]]   # 一行的 (uid, parent)
    active_hints: Callable[[Transcript, str], List[str]]   # 一个会话文件的活动端线索，先试的在前
    origin: Callable[[Transcript, Entry], Tuple[Optional[str], Optional[str], Dict[str, Any]]]   # 来源字段
    kind: Callable[[dict], Optional[str]] = type_field   # 对象 → readers 的键
    unknown: Reader = skip_unknown                       # readers 里没有的 kind
    title_keys: Tuple[str, ...] = ()                     # t.titles 里哪些键可以当标题，先找的在前
    repairs: Tuple[Callable[[Transcript, set], None], ...] = ()   # graph.repair 里的修复步骤
    reshape: Tuple[Callable[[graph.Tree], None], ...] = ()        # 树建好之后的整形步骤，按顺序做
    companion_files: Callable[[str, Transcript], Iterable[Any]] = _no_companions   # 随主文件读的文件
    owner_of: Callable[[str], Any] = _never              # 这个文件若是别的会话的一部分：(会话文件, 会话 ID)
    finish: Callable[[Transcript], None] = _nothing      # 所有文件读完之后（Claude：只在镜像里的子代理）
    sniff_document: Callable[[Any], Any] = _never        # 一整个 JSON 文档是不是这种格式
    document: Optional[Callable[[Transcript, Any], None]] = None   # 读这样的文档


CLAUDE, PI, CODEX, GEMINI = "claude-code", "pi", "codex", "gemini-cli"

FORMATS: Tuple[Format, ...] = (
    Format(CLAUDE, "Claude Code", claude.sniff, claude.READERS, claude.ids, claude.active_hints, claude.origin,
           unknown=claude.unknown, title_keys=("custom-title", "ai-title"),
           repairs=(graph.bridge_gaps, graph.follow_compact_boundaries, graph.chain_loose_roots),
           reshape=(graph.merge_streams, graph.split_sidechains, graph.linearise),
           companion_files=claude.subagent_files, owner_of=claude.owner_of, finish=claude.finish),
    Format(PI, "Pi", pi.sniff, pi.READERS, pi.ids, pi.active_hints, pi.origin, title_keys=("session_info",)),
    Format(CODEX, "Codex CLI", codex.sniff, codex.READERS, codex.ids, codex.active_hints, codex.origin,
           kind=codex.kind, unknown=codex.unknown, reshape=(graph.merge_streams,),
           companion_files=codex.referenced_files),
    Format(GEMINI, "Gemini CLI", gemini.sniff, gemini.READERS, gemini.ids, gemini.active_hints, gemini.origin,
           kind=gemini.kind, unknown=gemini.unknown, title_keys=("summary",),
           sniff_document=gemini.sniff_document, document=gemini.document),
)

FORMAT_NAMES = {row.name: row.display_name for row in FORMATS}


def known_formats() -> str:
    """错误消息里的格式列表：'Claude Code、Pi、Codex CLI 或 Gemini CLI'。"""
    names = list(FORMAT_NAMES.values())
    return "、".join(names[:-1]) + " 或 " + names[-1]


def detect(obj: dict) -> Optional[Format]:
    """一个对象 → 写这种对象的格式；谁都不认就是 None。"""
    return next((row for row in FORMATS if row.sniff(obj)), None)


def detect_document(doc: Any) -> Optional[Format]:
    return next((row for row in FORMATS if row.document and row.sniff_document(doc)), None)


def dispatch(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """把一个对象交给它的格式的读取函数；格式还没认出来时先认格式。"""
    t.objects += 1
    row = t.format
    if row is None:
        row = t.format = detect(obj)
        if row is None:   # 还认不出格式：先记着，认出来之后再按那种格式读
            t.pending.append((line, sub, obj))
            return
        for early in t.pending:
            _read(t, early[2], early[0], early[1])
        t.pending = []
    kind = row.kind(obj)   # 以下就是 _read：每个对象都走这里，少一层调用
    if kind is None:
        _read(t, obj, line, sub)
        return
    (row.readers.get(kind) or row.unknown)(t, obj, line, sub)


def dispatch_document(t: Transcript, doc: Any) -> None:
    """一整个 JSON 文档（不是 JSONL）：交给认得它的格式；都不认就什么都不做（调用者据此拒绝）。"""
    t.objects += 1
    row = detect_document(doc)
    if row is None:
        t.pending.append((1, 0, doc))
        return
    t.format = row
    row.document(t, doc)


def _read(t: Transcript, obj: dict, line: int, sub: int) -> None:
    kind = t.format.kind(obj)
    if kind is None:
        value = obj.get("type")
        t.skip(line, "缺少 type 字段" if value is None else "type 不是字符串", "缺少 type 字段")
        return
    reader = t.format.readers.get(kind)
    (reader or t.format.unknown)(t, obj, line, sub)


# ── 认得出是谁的文件，但不是会话记录 ───────────────────────────────────────────────────────────
_OTHER_FILES = (   # (这个对象 / 文档像什么, 它是什么)
    (lambda value: isinstance(value, list) and bool(value) and isinstance(value[0], dict)
     and {"sessionId", "messageId", "message"} <= value[0].keys(),
     "Gemini CLI 的 logs.json（只记了输入过的提示，不是会话记录；会话在 chats/ 里）"),
    (lambda value: isinstance(value, dict) and {"display", "project"} <= value.keys() and "timestamp" in value,
     "Claude Code 的 history.jsonl（只记了输入过的提示，不是会话记录；会话在 projects/ 里）"),
    (lambda value: isinstance(value, dict) and "text" in value and "ts" in value and
     ("session_id" in value or "conversation_id" in value),
     "Codex CLI 的 history.jsonl（只记了输入过的提示，不是会话记录；会话在 sessions/ 里）"),
    (lambda value: isinstance(value, dict) and {"id", "thread_name", "updated_at"} <= value.keys(),
     "Codex CLI 的 session_index.jsonl（会话名的索引，不是会话记录）"),
)


def refusal(t: Transcript) -> Optional[str]:
    """认不出格式的文件：它若是这些 Agent 的别的文件（提示历史、索引），说出它是什么。"""
    for _, _, value in t.pending[:5]:
        for looks_like, what in _OTHER_FILES:
            if looks_like(value):
                return what
    return None
