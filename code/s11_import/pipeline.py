"""pipeline.py — 把各个阶段串起来：import_file()（读 → 建树 → 规划 → 写仓库），以及找要导入的文件

    import_file(path, store)
      ├─ _read_all()   lines.read_lines + formats.dispatch；格式带的附属文件（Claude 的子代理）随后读
      ├─ _build()      graph：修复 → 建树 → 格式的整形步骤 → 标签 → 活动端；plan：切成节点
      │                （这两步都不碰仓库；期间暂停循环垃圾回收）
      └─ _write()      父先子后逐个 store.save()；和仓库里的节点比较，没变的不写，续写过的不覆盖

    find_transcripts(paths)  文件夹里递归找 *.jsonl，由主文件带入的附属文件不单独列出
    list_examples()          EXAMPLES_DIR（仓库的 examples/）里的示例记录

保证：全部读完、规划完才写仓库，出错时仓库一个字节都不变；一个节点保存失败（别人正在保存、仓库拒绝），
它和它的分支这次跳过并写进警告，其余照常。本模块不打印、不读命令行参数：命令行在 s11_cli。
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from typing import Iterator, List, Optional, Tuple

from s11_format import SessionError
from s11_session import SessionNode, SessionStore
from s11_text import os_error_reason

from .convert import MAX_DEPTH, TEXT_LIMIT, TOOL_OUTPUT_LIMIT
from .formats import FORMATS, dispatch, known_formats
from .graph import Tree, active_end, apply_labels, repair
from .lines import DEFAULT_MAX_BYTES, read_lines
from .plan import Planned, Planner, copy_bytes, node_id, nodes, save_order
from .report import ImportReport, NoConversation, UnsupportedFormat
from .transcript import Transcript, line_list

__all__ = ["import_file", "find_transcripts", "list_examples", "EXAMPLES_DIR"]

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")


def import_file(path: str, store: SessionStore, *, max_bytes: int = DEFAULT_MAX_BYTES,
                dry_run: bool = False) -> ImportReport:
    """导入一个 Claude Code / Pi 的 JSONL 记录，返回 ImportReport。

    格式不对（UnsupportedFormat）、太大（TranscriptTooLarge）、没有对话（NoConversation）时抛错，仓库不变。
    dry_run=True 只读和规划，报告里写明会写哪些节点，但什么都不保存。
    """
    path = os.fspath(path)
    with _paused_gc():
        t, size = _read_all(path, max_bytes)
        plan = _build(t)
        made = nodes(t, plan)
        report = ImportReport(file=t.file, format=t.format.name, bytes_read=size, skipped=t.skipped,
                              dropped=dict(t.dropped), warnings=t.warnings, copy_bytes=copy_bytes(plan),
                              messages=sum(len(p.own) for p in plan))
    _write(store, save_order(made), report, dry_run)
    written = set(report.node_ids)
    report.root_ids = [n.session_id for n in made if n.parent_id is None and n.session_id in written]
    report.active_id = next((n.session_id for n, p in zip(made, plan) if p.active and n.session_id in written), None)
    _note_absorbed(store, t, written, report)
    return report


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
def _read_all(path: str, max_bytes: int) -> Tuple[Transcript, int]:
    t = Transcript(path)
    if os.path.isdir(path):   # 导入的是一个文件；整个文件夹交给 find_transcripts
        raise SessionError(f"无法读取 {t.file}：这是一个文件夹；仓库没有任何改动")
    try:
        size = read_lines(path, t, max_bytes, dispatch)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise SessionError(f"无法读取 {t.file}：{os_error_reason(exc)}；仓库没有任何改动") from None
    if t.format is None:
        raise _unrecognised(t, size)
    for companion, agent in t.format.companion_files(path, t):
        t.file_label, t.file_agent = f"{os.path.basename(companion)} ", agent
        size += read_lines(companion, t, max_bytes, dispatch)
    t.file_label, t.file_agent = "", None
    return t, size


def _unrecognised(t: Transcript, size: int) -> SessionError:
    if size == 0 or (not t.objects and all(reason == "空行" for _, reason in t.skipped)):
        return NoConversation(f"{t.file} 是空文件，没有可导入的对话；仓库没有任何改动")
    return UnsupportedFormat(f"{t.file} 不是 {known_formats()} 的会话记录（认不出任何一种条目）；仓库没有任何改动")


def _build(t: Transcript) -> List[Planned]:
    if not any(entry.kind == "message" for entry in t.order):
        raise NoConversation(f"{t.file} 里没有任何对话消息（只有文件头、快照或元数据）；仓库没有任何改动")
    if t.duplicates:
        t.warnings.append(f"{len(t.duplicates)} 行重复了前面已有的 uuid / id，保留第一次出现的那行（第 "
                          f"{line_list([str(line) for line in t.duplicates])} 行）")
    repair(t, t.format.repairs)
    tree = Tree(t)
    for step in t.format.reshape:
        step(tree)
    apply_labels(t, tree)
    planner = Planner(tree, active_end(tree, t.format.active_hints(t)))
    plan = planner.run()
    t.passed_over = planner.passed_over
    if t.convert.flattened:
        t.warnings.append(f"{t.convert.flattened} 处嵌套超过 {MAX_DEPTH} 层的工具参数已存成 JSON 文本")
    if t.convert.truncated:
        t.warnings.append(f"{t.convert.truncated} 段过长的文本已截断（工具输出上限 {TOOL_OUTPUT_LIMIT} 字符，"
                          f"其它文本 {TEXT_LIMIT} 字符），块上的 truncated_from 记着原长")
    return plan


# ── 写入仓库 ───────────────────────────────────────────────────────────────────────────────
def _same(existing: SessionNode, node: SessionNode) -> bool:
    return (existing.title, existing.parent_id, existing.fork_point, existing.created_at, existing.source,
            existing.messages) == (node.title, node.parent_id, node.fork_point, node.created_at, node.source,
                                   node.messages)


def _edited_in_store(existing: SessionNode) -> bool:
    """导入的节点在仓库里被续写过（消息数和导入时记下的不一样），或者根本不是导入的：不覆盖。"""
    source = existing.source if isinstance(existing.source, dict) else {}
    return source.get("imported_messages") != len(existing.messages)


def _write(store: SessionStore, ordered: List[SessionNode], report: ImportReport, dry_run: bool) -> None:
    blocked: set = set()
    for node in ordered:
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


def _note_absorbed(store: SessionStore, t: Transcript, node_ids: set, report: ImportReport) -> None:
    """活动端换到了另一条旧分支：上次导入时那条分支的节点现在属于主干，旧节点留着（可能有人从它分叉过）。"""
    for uid in t.passed_over:
        old = node_id(t, uid)
        if old not in node_ids and os.path.exists(store.path_of(old)):
            report.warnings.append(f"上次导入的分支节点 {old} 现在是主干的一部分（活动端移动了），旧节点保留未动，可自行删除")


# ── 找要导入的文件 ──────────────────────────────────────────────────────────────────────────
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
            found = [p for p in _walk_jsonl(path) if not _is_companion(p)]
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


def _is_companion(path: str) -> bool:
    """某种格式的主文件会把它带进来（Claude 的 <会话ID>/subagents/agent-x.jsonl）：不单独导入。"""
    return any(row.is_companion(path) for row in FORMATS)
