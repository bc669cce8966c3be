"""formats.py — 格式表：每种 Agent 的记录占一行，认格式和分派每一行记录都只查这张表

    FORMATS = (Format(CLAUDE, "Claude Code", claude.READERS, …),      claude.py：Claude Code 的行和规则
               Format(PI, "Pi", pi.READERS, …))                       pi.py：Pi 的行和规则

    一个对象 {"type": ...} ──► dispatch(t, obj, 行号, 行内序号)
        还没认出格式：type 在哪一行的 readers 里就是哪种格式；在它之前读到的对象先记着，认出后按这种格式补读
        已经认出：readers[type](t, obj, 行号, 行内序号)
        不认识的 type：记进 skipped；带 id 的仍留作接线的结构条目，免得它的子条目变成孤儿

关键洞察：格式之间的差别只有几处（怎么读一行、id 怎么取、活动端在哪、来源里记什么、要不要拉直假分叉），
把它们写成一行里的几列，建图和规划就不用知道有几种格式。

加一种格式 = 一个新文件（它的 READERS、ids、active_hints、origin）+ 这里的一行。readers 的 type 只能属于一种格式
（同一个 type 出现在两行里时，先列的那行胜出）；认不出任何一种格式的文件导入时得到 UnsupportedFormat，
消息里列出 known_formats()（“Claude Code 或 Pi”），仓库不变。
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from . import claude, graph, pi
from .transcript import Entry, Transcript

__all__ = ["Format", "FORMATS", "CLAUDE", "PI", "FORMAT_NAMES", "detect", "dispatch", "known_formats"]

Reader = Callable[[Transcript, dict, int, int], None]


def _no_companions(path: str, t: Transcript) -> Iterable[Tuple[str, str]]:
    return ()


def _never(path: str) -> bool:
    return False


@dataclass(frozen=True)
class Format:
    """格式表的一行。前六列每种格式都要有；其余有默认值（不需要就不写）。"""
    name: str                   # 写进 source.format、节点 ID 和报告的名字
    display_name: str           # 给人看的名字
    readers: Dict[str, Reader]  # 条目 type → 读取函数；认格式也靠它
    ids: Callable[[Transcript, dict, int, int], Tuple[Optional[str], Optional[str]]]   # 一行的 (uid, parent)
    active_hints: Callable[[Transcript], List[str]]   # 活动端的线索，先试的在前
    origin: Callable[[Transcript, Entry], Tuple[Optional[str], Optional[str], Dict[str, Any]]]   # 来源字段
    title_keys: Tuple[str, ...] = ()                  # t.titles 里哪些键可以当标题，先找的在前
    repairs: Tuple[Callable[[Transcript, set], None], ...] = ()   # graph.repair 里的修复步骤
    reshape: Tuple[Callable[[graph.Tree], None], ...] = ()        # 树建好之后的整形步骤，按顺序做
    companion_files: Callable[[str, Transcript], Iterable[Tuple[str, str]]] = _no_companions   # 随主文件读的文件
    is_companion: Callable[[str], bool] = _never      # 这个文件由别的主文件带入（导入文件夹时不单独导入）


CLAUDE, PI = "claude-code", "pi"

FORMATS: Tuple[Format, ...] = (
    Format(CLAUDE, "Claude Code", claude.READERS, claude.ids, claude.active_hints, claude.origin,
           title_keys=("custom-title", "ai-title"),
           repairs=(graph.follow_compact_boundaries, graph.chain_loose_roots),
           reshape=(graph.merge_streams, graph.split_sidechains, graph.linearise),
           companion_files=claude.subagent_files, is_companion=claude.is_subagent_file),
    Format(PI, "Pi", pi.READERS, pi.ids, pi.active_hints, pi.origin, title_keys=("session_info",)),
)

FORMAT_NAMES = {row.name: row.display_name for row in FORMATS}


def known_formats() -> str:
    """错误消息里的格式列表：'Claude Code 或 Pi'。"""
    return " 或 ".join(FORMAT_NAMES.values())


def detect(kind: str) -> Optional[Format]:
    """一个条目 type → 写这种 type 的格式；谁都不写就是 None。"""
    return next((row for row in FORMATS if kind in row.readers), None)


def dispatch(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """把一个对象交给它的格式的读取函数；格式还没认出来时先认格式。"""
    kind = obj.get("type")
    t.objects += 1
    if not isinstance(kind, str):
        t.skip(line, "缺少 type 字段" if kind is None else "type 不是字符串")
        return
    if t.format is None:
        t.format = detect(kind)
        if t.format is None:   # 还认不出格式：先记着，认出来之后再按那种格式读
            t.pending.append((line, sub, obj))
            return
        for early in t.pending:
            _read(t, early[2], early[0], early[1])
        t.pending = []
    _read(t, obj, line, sub)


def _read(t: Transcript, obj: dict, line: int, sub: int) -> None:
    reader = t.format.readers.get(obj.get("type"))
    if reader is None:
        _unknown(t, obj, line, sub)
    else:
        reader(t, obj, line, sub)


def _unknown(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """未知类型：记进 skipped；它若带 id，仍留作接线用的结构条目，免得它的子条目变成孤儿。"""
    t.skip(line, f"未知的条目类型 {str(obj.get('type'))[:40]!r}")
    uid, parent = t.format.ids(t, obj, line, sub)
    if uid:
        t.add(Entry(uid, parent, line, "link"))
