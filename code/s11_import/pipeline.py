"""pipeline.py — 把各个阶段串起来：import_file() / import_folder()（读 → 建树 → 规划 → 写仓库），以及找要导入的文件

    import_file(path, store)
      ├─ _read_all()   lines.read_lines + formats.dispatch；格式带的附属文件（Claude 的子代理）随后读
      ├─ _build()      graph：修复 → 建树 → 格式的整形步骤 → 标签 → 活动端；plan：切成节点
      │                （这两步都不碰仓库；从读到写完都暂停循环垃圾回收）
      └─ _write()      和仓库里的节点比较（没变的不写，续写过的不覆盖）→ store.write_costs() 算出确切要写的字节，
                       交给 budget.before() 检查限额（不够就一个字节都不写）→ 在 store.batch() 里父先子后逐个
                       save()（共享前缀只编码一次），每写一个节点 budget.during() 再看一眼磁盘余量

    import_folder(folder, store)   文件夹里的每个会话文件；同一个 Claude Code 项目文件夹里续接 / 分叉同一段历史的
                                   文件（--resume、--fork-session：第一行接在别的文件的消息上，或重放了别的文件的开头，
                                   或写着 forkedFrom）读进同一棵树：挂在分叉处，重放的行只留一份（先读的为准）
    find_transcripts(paths)        文件夹里递归找会话文件；子代理文件由主文件带入，不单独列出
    list_examples()                EXAMPLES_DIR（仓库的 examples/）里的示例记录

保证：全部读完、规划完、算好要写多少字节并经 budget 同意之后才写仓库，出错或被拒绝时仓库一个字节都不变
（拒绝的消息说明需要多少）；写的过程中 budget.during() 发现磁盘余量不够时停下，已写的节点都是完整的
（父先子后），报告里说明停在哪里。一个节点保存失败（别人正在保存、仓库拒绝），它和它的分支这次跳过并写进警告，其余照常。导入文件夹时一组文件出错，只是这一组没有导入（problems 里写明）。
节点 ID 只由来源决定，单独导入一个文件和导入它所在的文件夹，同一段对话得到同一个节点。
本模块不打印、不读命令行参数：命令行在 s11_cli。
"""

from __future__ import annotations

import gc
import os
import re
from contextlib import contextmanager
from typing import Dict, Iterator, List, Optional, Tuple

from s11_format import SessionError
from s11_session import SessionNode, SessionStore
from s11_text import describe_os_error, human_size, os_error_reason, printable

from . import archive, compressed, continuation, tree_jsonl
from .convert import MAX_DEPTH, TEXT_LIMIT, TOOL_OUTPUT_LIMIT
from .formats import CLAUDE, FORMATS, detect, dispatch, dispatch_document, known_formats, refusal
from .graph import Tree, active_ends, apply_labels, repair
from .lines import DEFAULT_MAX_BYTES, read_head, read_lines
from .plan import Planned, Planner, copy_bytes, node_id, nodes, save_order
from .report import CompanionFile, FolderReport, ImportReport, NoConversation, UnsupportedFormat
from .transcript import Transcript

__all__ = ["import_file", "import_folder", "find_transcripts", "list_examples", "EXAMPLES_DIR", "sniff_format",
           "TRANSCRIPT_SUFFIXES", "companion_owner", "looks_like_transcript"]

EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")
TRANSCRIPT_SUFFIXES = (".jsonl", ".json")   # Gemini CLI 的旧会话和检查点是 .json
_MAX_FILES = 10_000                          # 一次导入的文件夹里最多这么多个文件


class WriteBudget:
    """导入写仓库之前和期间的限额检查（工作台的空间用它；命令行不设限额）。两个方法都可以抛 SessionError：

    before(nbytes, sessions)  写任何东西之前：这次确切要写 nbytes 字节、新建 sessions 个会话；抛错 = 一个字节都不写
    during(written)           每写完一个节点：到现在写了 written 字节；抛错 = 停在这里（已写的节点完整）
    after(saved)              before 同意之后，写完或中途停下（出错也调）：store.save() 成功了 saved 次"""

    def before(self, nbytes: int, sessions: int) -> None:
        """默认不设限。"""

    def during(self, written: int) -> None:
        """默认不设限。"""

    def after(self, saved: int) -> None:
        """默认什么都不做。"""


NO_BUDGET = WriteBudget()


def import_file(path: str, store: SessionStore, *, max_bytes: int = DEFAULT_MAX_BYTES,
                dry_run: bool = False, budget: WriteBudget = NO_BUDGET) -> ImportReport:
    """导入一个 Claude Code / Pi / Codex CLI / Gemini CLI 的会话记录（或装着一个会话和它子代理文件夹的 .zip），
    返回 ImportReport。

    格式不对（UnsupportedFormat）、太大（TranscriptTooLarge）、没有对话（NoConversation）、是别的会话的
    子代理文件（CompanionFile，消息里写明该导入哪个文件）时抛错，仓库不变。
    dry_run=True 只读和规划，报告里写明会写哪些节点、要写多少字节（bytes_planned），但什么都不保存。
    budget（见 WriteBudget）在写之前拿到确切的字节数，可以拒绝。
    """
    path = os.fspath(path)
    if archive.is_archive(path):   # 一个 zip 装着会话文件和它的子代理文件夹（浏览器一次只能传一个文件）
        with archive.unpacked(path, max_bytes) as folder:
            session = archive.the_session(find_transcripts([folder])[0], folder, printable(os.path.basename(path)))
            return import_file(session, store, max_bytes=max_bytes, dry_run=dry_run, budget=budget)
    if os.path.isfile(path) and tree_jsonl.is_tree_file(path):   # 本项目自己导出的会话树：原样复原，不走格式表
        return tree_jsonl.import_tree(path, store, max_bytes=max_bytes, dry_run=dry_run, budget=budget)
    _refuse_companion(path)
    return _import_paths([path], store, max_bytes, dry_run, budget)


def import_folder(folder: str, store: SessionStore, *, max_bytes: int = DEFAULT_MAX_BYTES,
                  dry_run: bool = False, budget: WriteBudget = NO_BUDGET) -> FolderReport:
    """导入一个文件夹（递归）：每组会话文件一份报告；同一项目里续接 / 分叉同一段历史的 Claude Code 文件是一组、
    一棵树。导入不了的文件写进 problems，其余照常导入。再导入一次什么都不写（节点 ID 只由来源决定）。"""
    folder = os.fspath(folder)
    result = FolderReport(folder)
    files, result.problems = find_transcripts([folder])
    for group in _groups(files, max_bytes, result.problems):
        try:
            result.reports.append(_import_paths(group, store, max_bytes, dry_run, budget))
        except SessionError as exc:
            result.problems.append(str(exc))
        except OSError as exc:
            result.problems.append(describe_os_error(exc))
    return result


def _refuse_companion(path: str) -> None:
    """单独导入一个子代理文件：它的会话文件还在，就请读者导入那个文件（子代理会挂在发起它的调用下）；
    会话文件不在了，就把它当一棵独立的树导入（活动端是它最新的叶子）。"""
    for row in FORMATS:
        owner = row.owner_of(path)
        if owner and os.path.isfile(owner[0]) and os.path.abspath(owner[0]) != os.path.abspath(path):
            raise CompanionFile(f"{printable(os.path.basename(path))} 是会话 {printable(owner[1] or '?')} 的子代理记录，"
                                f"不是独立的会话：请导入它所属的会话文件 {printable(os.path.basename(owner[0]))}"
                                f"（子代理会挂在启动它的那次调用下面）；仓库没有任何改动")


def _import_paths(paths: List[str], store: SessionStore, max_bytes: int, dry_run: bool,
                  budget: WriteBudget = NO_BUDGET) -> ImportReport:
    with _paused_gc():
        t, size = _read_all(paths, max_bytes)
        plan = _build(t)
        made = nodes(t, plan)
        report = ImportReport(file=t.file, format=t.format.name, bytes_read=size, skipped=t.skipped,
                              skipped_total=t.skipped_total, skipped_by_reason=dict(t.skipped_by_reason),
                              dropped=dict(t.dropped), warnings=t.warnings,
                              messages=sum(len(p.own) for p in plan), files=list(t.files), unit=t.unit,
                              missing_subagents=list(t.missing_agents))
        _write(store, save_order(made), report, dry_run, budget, plan)
    written = set(report.node_ids)
    report.root_ids = [n.session_id for n in made if n.parent_id is None and n.session_id in written]
    actives = [n.session_id for n, p in zip(made, plan) if p.active and n.session_id in written]
    first_home = [n.session_id for n, p in zip(made, plan) if p.active and n.session_id in written
                  and t.entries[p.start].home == t.file]
    moved = {kept: child for kept, child, _ in report.continued}   # 活动端在续写过的节点上：Agent 的新对话在子节点里
    actives, first_home = [moved.get(sid, sid) for sid in actives], [moved.get(sid, sid) for sid in first_home]
    report.active_ids = actives
    report.active_id = (first_home or actives or [None])[0]
    _note_absorbed(store, t, written, report)
    return report


@contextmanager
def _paused_gc() -> Iterator[None]:
    """json.loads 造出几百万个小对象，每隔一阵就触发一次扫描整个（还在长大的）堆的回收；
    导入只建树、不产生循环引用，所以读、规划和写仓库期间暂停循环回收器，结束后恢复原状
    （写的时候编码每条消息又造出几万个对象：20 MB 的记录在这里还会触发一次扫描全部的回收，约 0.1 秒）。"""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ── 读 + 建树 + 规划（不碰仓库）──────────────────────────────────────────────────────────────
def _read_all(paths: List[str], max_bytes: int) -> Tuple[Transcript, int]:
    """读一组会话文件（通常只有一个）和它们的附属文件，进同一个 Transcript。"""
    t = Transcript(paths[0])
    t.file = compressed.logical_name(paths[0])   # .jsonl.zst 和它没压缩的原文是同一个会话文件（同一组节点 ID）
    size = 0
    for path in paths:
        name = compressed.logical_name(path)
        t.home, t.file_label = name, (f"{name} " if len(paths) > 1 else "")
        t.files.append(name)
        size += _read_one(path, t, max_bytes)
        if t.format is None:
            raise _unrecognised(t, size, name)
        prefix = t.file_label
        for companion in t.format.companion_files(path, t):
            t.file_label, t.file_agent = f"{prefix}{os.path.basename(companion.path)} ", companion.agent
            t.agents[companion.agent] = {**t.agents.get(companion.agent, {}), **companion.info}
            try:
                size += _read_compressed(companion.path, t, max_bytes) if compressed.is_compressed(companion.path) \
                    else read_lines(companion.path, t, max_bytes, dispatch, dispatch_document)
            except (SessionError, OSError) as exc:   # 一个坏的子代理文件不拖累整个会话
                reason = str(exc) if isinstance(exc, SessionError) else os_error_reason(exc)
                t.warnings.append(f"子代理文件 {os.path.basename(companion.path)} 没有读：{reason}")
        t.file_label, t.file_agent = "", None
    t.home = t.file
    t.format.finish(t)
    return t, size


def _read_one(path: str, t: Transcript, max_bytes: int) -> int:
    name = printable(os.path.basename(path))
    if os.path.isdir(path):   # 导入的是一个文件；整个文件夹交给 import_folder
        raise SessionError(f"无法读取 {name}：这是一个文件夹（用 import_folder 导入整个文件夹）；仓库没有任何改动")
    try:
        if compressed.is_compressed(path):
            return _read_compressed(path, t, max_bytes)
        return read_lines(path, t, max_bytes, dispatch, dispatch_document)
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        raise SessionError(f"无法读取 {name}：{os_error_reason(exc)}；仓库没有任何改动") from None


def _read_compressed(path: str, t: Transcript, max_bytes: int) -> int:
    """Codex 的 .jsonl.zst：流式解压（解出的字节按同一个 max_bytes 计）到临时文件，再照常读。"""
    with compressed.unpacked(path, max_bytes) as (plain, complete):
        size = read_lines(plain, t, max_bytes, dispatch, dispatch_document)
    if not complete and size == 0:   # 只有文件头就断了：不是“空文件”，是坏的压缩文件
        raise UnsupportedFormat(f"{printable(os.path.basename(path))} 不是有效的 zstd 压缩文件（压缩流在开头就断了，"
                                "解不出任何内容）；仓库没有任何改动")
    if not complete:
        t.warnings.append(f"{printable(os.path.basename(path))} 的压缩流在中途断了：只导入了解出来的前 "
                          f"{human_size(size)}（最后一行若不完整，已记进跳过的行）")
    return size


def _unrecognised(t: Transcript, size: int, name: str) -> SessionError:
    name = printable(name)
    if size == 0 or (not t.objects and t.skipped_total == t.skipped_by_reason.get("空行", 0)):
        return NoConversation(f"{name} 是空文件，没有可导入的对话；仓库没有任何改动")
    other = refusal(t)
    if other:
        return UnsupportedFormat(f"{name} 是 {other}；仓库没有任何改动")
    return UnsupportedFormat(f"{name} 不是 {known_formats()} 的会话记录（认不出任何一种条目）；仓库没有任何改动")


def _build(t: Transcript) -> List[Planned]:
    if not any(entry.kind == "message" for entry in t.order):
        raise NoConversation(f"{printable(t.file)} 是 {t.format.display_name} 的记录，但里面没有任何对话消息"
                             f"（只有文件头、快照或元数据）；仓库没有任何改动")
    for sample, what in ((t.duplicates, "行重复了前面已有的 uuid / id，保留第一次出现的那行"),
                         (t.glued, "行有几个 JSON 对象粘在一起，已分别读出"),
                         (t.bad_utf8, "行不是有效的 UTF-8，解不开的字节已换成 �")):
        if sample.count:
            t.warnings.append(f"{sample.count} {what}（第 {sample.text()} 行）")
    repair(t, t.format.repairs)
    tree = Tree(t)
    for step in t.format.reshape:
        step(tree)
    apply_labels(t, tree)
    planner = Planner(tree, active_ends(tree, t.format.active_hints))
    plan = planner.run()
    t.passed_over = planner.passed_over
    if t.convert.flattened:
        t.warnings.append(f"{t.convert.flattened} 处嵌套超过 {MAX_DEPTH} 层的工具参数已存成 JSON 文本")
    if t.convert.truncated:
        t.warnings.append(f"{t.convert.truncated} 段过长的文本已截断（工具输出上限 {TOOL_OUTPUT_LIMIT} 字符，"
                          f"其它文本 {TEXT_LIMIT} 字符），块上的 truncated_from 记着原长")
    return plan


# ── 写入仓库 ───────────────────────────────────────────────────────────────────────────────
def _same(existing: SessionNode, node: SessionNode, equal: Optional[dict] = None) -> bool:
    """仓库里的节点与记录里的是否相同（字段和每条消息都 ==）。equal：这次导入里已经比过、相等的
    {(id(仓库的消息), id(记录的消息)): (两个对象)}——共用前缀的节点两边都是同一批对象，每对只深比一次；
    对象本身也存着，它们活着，id 就不会被别的对象重用。"""
    if (existing.title, existing.parent_id, existing.fork_point, existing.created_at, existing.source) != \
            (node.title, node.parent_id, node.fork_point, node.created_at, node.source):
        return False
    if len(existing.messages) != len(node.messages):
        return False
    if equal is None:
        return existing.messages == node.messages
    for old, new in zip(existing.messages, node.messages):
        pair = (id(old), id(new))
        seen = equal.get(pair)
        if seen is None or seen[0] is not old or seen[1] is not new:
            if old != new:
                return False
            equal[pair] = (old, new)
    return True


def _edited_in_store(existing: SessionNode) -> bool:
    """导入的节点在仓库里被续写过（消息数和导入时记下的不一样），或者根本不是导入的：不覆盖。"""
    source = existing.source if isinstance(existing.source, dict) else {}
    return source.get("imported_messages") != len(existing.messages)


def _write(store: SessionStore, ordered: List[SessionNode], report: ImportReport, dry_run: bool,
           budget: WriteBudget, planned: List[Planned]) -> None:
    """先决定每个节点写不写（读仓库里的同 ID 节点比较），再一次算出确切的字节交给 budget，最后才写。
    budget.before 同意之后，写完、停下或出错都调 budget.after（在这一批的日志行也写下之后）。"""
    saves: List[int] = []   # budget 同意之后才有：store.save() 成功了几次
    try:
        with store.batch() as batch:   # write_costs 编好的每条消息，随后的 save 和分叉复制的字节数直接用（不再编码）；
            plan, blocked = _decide(store, ordered, report)   # 仓库里共用前缀的节点，每块只读、只解析一次
            costs = store.write_costs([node for node, _ in plan])
            report.bytes_planned = sum(costs)
            report.copy_bytes = copy_bytes(planned, batch.lines)
            if dry_run:
                report.node_ids += [node.session_id for node in ordered if node.session_id not in blocked]
                report.written += len(plan)
                report.updated += sum(existing for _, existing in plan)
                return
            budget.before(report.bytes_planned, sum(not existing for _, existing in plan))
            saves.append(0)
            _save_all(store, ordered, plan, costs, blocked, report, budget, saves)
    finally:
        if saves:
            budget.after(saves[0])


def _save_all(store: SessionStore, ordered: List[SessionNode], plan: list, costs: List[int], blocked: set,
              report: ImportReport, budget: WriteBudget, saves: List[int]) -> None:
    """父先子后逐个保存 plan 里的节点；没变的只记进 node_ids。"""
    writing = {node.session_id: (cost, existing) for (node, existing), cost in zip(plan, costs)}
    for node in ordered:
        if node.parent_id in blocked or node.session_id in blocked:
            blocked.add(node.session_id)
            continue
        if node.session_id in writing:
            cost, existing = writing[node.session_id]
            try:
                store.save(node)
            except SessionError as exc:   # 别人正好在保存同一节点（ConflictError），或仓库拒绝了它：它和它的分支这次不写
                report.warnings.append(f"节点 {node.session_id} 没有保存，它和它的分支这次跳过：{exc}")
                blocked.add(node.session_id)
                continue
            saves[0] += 1
            report.bytes_written += cost
            report.written += 1
            report.updated += existing
        report.node_ids.append(node.session_id)
        try:
            budget.during(report.bytes_written)
        except SessionError as exc:
            report.warnings.append(f"写了 {report.written} 个节点（{human_size(report.bytes_written)}）后停下："
                                   f"{exc}；已写的节点都完整，腾出空间后重新导入即可补齐")
            return


def _decide(store: SessionStore, ordered: List[SessionNode], report: ImportReport) -> Tuple[list, set]:
    """[(要保存的节点, 是否是更新)] 和不写的节点（读不出来的、续写过的及它们的分支）；没变的算 unchanged。
    续写过的节点不覆盖；Agent 在那之后又写的对话落进它的子节点（continuation.land），ordered 里补上这个子节点。"""
    plan, blocked, equal = [], set(), {}
    landed: Dict[str, Tuple[SessionNode, int]] = {}   # 续写过的节点 ID -> (装 Agent 新对话的子节点, 分叉处)
    for index, node in enumerate(ordered):
        moved = landed.get(node.parent_id or "")
        if moved and node.fork_point is not None and node.fork_point > moved[1]:
            node.parent_id = moved[0].session_id   # 从 Agent 新对话里分出去的分支：挂到装着那段对话的子节点下
        if node.parent_id in blocked:
            blocked.add(node.session_id)
            continue
        try:
            existing = store.load(node.session_id)
        except SessionError as exc:
            report.warnings.append(f"节点 {node.session_id} 在仓库里读不出来，保持原样，它和它的分支没有导入：{exc}")
            blocked.add(node.session_id)
            continue
        if existing is not None and _same(existing, node, equal):
            report.unchanged += 1
            continue
        if existing is not None and _edited_in_store(existing):
            report.kept += 1
            child = continuation.land(store, existing, node)
            if child is None:
                report.warnings.append(f"节点 {node.session_id}（{existing.title}）在仓库里续写过，保留仓库里的版本，没有用记录覆盖")
                imported = continuation.imported_count(existing)
                if imported is None or len(node.messages) > imported:   # Agent 那边确有新对话，却接不上
                    report.diverged.append(node.session_id)
                continue
            landed[node.session_id] = (child[0], child[0].fork_point)
            report.continued.append((node.session_id, child[0].session_id, len(node.messages) - child[0].fork_point))
            if child[1] is None:
                report.unchanged += 1
            else:
                plan.append(child)
            continue
        if existing is not None:   # Agent 又追加了对话：在读入的那一版上改，save() 会核对修订号
            existing.title, existing.parent_id, existing.fork_point = node.title, node.parent_id, node.fork_point
            existing.messages, existing.source, existing.created_at = node.messages, node.source, node.created_at
            ordered[index] = node = existing
        plan.append((node, existing is not None))
    if landed:   # 子节点排在它的父节点（续写过的那个）后面：父先子后地保存
        ordered[:] = [item for node in ordered for item in
                      ([node, landed[node.session_id][0]] if node.session_id in landed else [node])]
    return plan, blocked


def _note_absorbed(store: SessionStore, t: Transcript, node_ids: set, report: ImportReport) -> None:
    """活动端换到了另一条旧分支：上次导入时那条分支的节点现在属于主干，旧节点留着（可能有人从它分叉过）。"""
    for uid in t.passed_over:
        old = node_id(t, uid)
        if old not in node_ids and os.path.exists(store.path_of(old)):
            report.warnings.append(f"上次导入的分支节点 {old} 现在是主干的一部分（活动端移动了），旧节点保留未动，可自行删除")


# ── 找要导入的文件 ──────────────────────────────────────────────────────────────────────────
def list_examples() -> List[str]:
    """examples/ 里为本项目写的示例记录：每种格式的主文件（子代理文件在子文件夹里，随主文件导入）。"""
    if not os.path.isdir(EXAMPLES_DIR):
        return []
    names = sorted(name for name in os.listdir(EXAMPLES_DIR) if name.endswith(TRANSCRIPT_SUFFIXES))
    return [os.path.join(EXAMPLES_DIR, name) for name in names
            if os.path.isfile(os.path.join(EXAMPLES_DIR, name)) and not companion_owner(os.path.join(EXAMPLES_DIR, name))]


def find_transcripts(paths: List[str]) -> Tuple[List[str], List[str]]:
    """命令行参数 → 要导入的文件；文件夹里递归找 *.jsonl / *.json（子代理文件由主文件带入，不单独列出；
    它的会话文件不在时写进问题里）。不跟符号链接，最多 _MAX_FILES 个文件。返回 (文件, 问题)。"""
    files, problems = [], []
    for path in paths:
        if os.path.isdir(path):
            found, skipped = [], []
            for candidate in _walk(path, problems):
                owner = companion_owner(candidate)
                if owner is None:
                    found.append(candidate)
                elif not os.path.isfile(owner[0]):
                    skipped.append(candidate)
                    problems.append(f"{printable(os.path.relpath(candidate, path))} 是会话 "
                                    f"{printable(owner[1] or '?')} 的子代理记录，它的会话文件 "
                                    f"{printable(os.path.basename(owner[0]))} 不在这里，没有单独导入"
                                    f"（要看它就单独导入这个文件）")
            files += _prefer_jsonl(found)
            if not found and not skipped:
                problems.append(f"文件夹 {printable(path)} 里没有 .jsonl / .json 会话记录")
        elif os.path.isfile(path):
            files.append(path)
        else:
            problems.append(f"找不到文件或文件夹：{printable(path)}")
    return files, problems


def _walk(folder: str, problems: List[str]) -> List[str]:
    found = []
    for root, dirs, names in os.walk(folder):   # os.walk 默认不进符号链接指向的文件夹
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            if looks_like_transcript(name) and not os.path.islink(path):
                found.append(path)
        if len(found) > _MAX_FILES:
            problems.append(f"文件夹 {printable(folder)} 里的记录超过 {_MAX_FILES} 个，只导入了前 {_MAX_FILES} 个")
            return found[:_MAX_FILES]
    return found


def looks_like_transcript(name: str) -> bool:
    """文件夹里哪些文件当会话记录：*.jsonl；.json 只认 Gemini CLI 的命名（session-*.json、checkpoint-*.json）——
    文件夹里别的 JSON（比如一个会话仓库的节点文件、meta.json）不是记录；以点开头的文件（会话仓库自己的 .journal.jsonl）
    也不是。单独导入一个文件时不看名字。"""
    if name.startswith("."):
        return False
    if name.endswith((".jsonl", ".jsonl.zst")):   # .jsonl.zst：Codex 压缩过的旧 rollout
        return True
    return name.endswith(".json") and name.startswith(("session-", "checkpoint-"))


def _prefer_jsonl(paths: List[str]) -> List[str]:
    """Gemini CLI 续聊旧的 .json 会话时把它迁移成同名的 .jsonl（旧文件不删）：两份都在时只导入 .jsonl；
    Codex 的 x.jsonl.zst 旁边还有没压缩的 x.jsonl 时也只导入 .jsonl（两份是同一个会话）。"""
    present = set(paths)
    return [path for path in paths if not (path.endswith(".json") and path + "l" in present)
            and not (path.endswith(compressed.ZST_SUFFIX) and path[:-len(compressed.ZST_SUFFIX)] in present)]


def companion_owner(path: str) -> Optional[Tuple[str, Optional[str]]]:
    """某种格式的主文件会把它带进来（Claude 的子代理文件）：(主文件, 会话 ID)，否则 None。"""
    return next((owner for owner in (row.owner_of(path) for row in FORMATS) if owner), None)


# ── 一个项目文件夹 = 一片森林：哪些文件续接 / 分叉了同一段历史 ────────────────────────────────────
_UUID = re.compile(rb'"uuid"\s*:\s*"([^"\\]{1,200})"')


def sniff_format(path: str) -> Optional[str]:
    """只看开头几个对象认格式（列会话、分组用），认不出是 None；排版过的 JSON 文档看文件名和开头。"""
    head = read_head(path)
    row = next((row for row in map(detect, head) if row), None)
    if row is not None:
        return row.name
    try:
        with open(path, "rb") as handle:
            start = handle.read(4096)
    except OSError:
        return None
    if start.lstrip()[:1] in (b"{", b"[") and (b'"sessionId"' in start or b'"history"' in start
                                               or b'"role"' in start):
        return "gemini-cli"
    return None


class _Head:
    """分组要用的一个 Claude Code 会话文件的开头：第一条对话行的 uuid 和父 uuid、forkedFrom、开始时间。"""

    def __init__(self, path: str):
        self.path, self.name = path, os.path.basename(path)
        self.first = self.parent = self.forked = self.started = None
        for obj in read_head(path):
            if isinstance(obj.get("forkedFrom"), dict) and isinstance(obj["forkedFrom"].get("sessionId"), str):
                self.forked = self.forked or obj["forkedFrom"]["sessionId"]
            if self.first is None and isinstance(obj.get("uuid"), str):
                self.first = obj["uuid"]
                self.parent = obj.get("parentUuid") if isinstance(obj.get("parentUuid"), str) else None
                self.started = obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None


def _groups(files: List[str], max_bytes: int, problems: List[str]) -> List[List[str]]:
    """文件 → 要一起读的几组。同一文件夹里的 Claude Code 会话文件：第一条对话行接在另一个文件的消息上、
    开头的 uuid 在另一个文件里出现过（重放）、或写着 forkedFrom 另一个会话，就和那个文件同组。其余各自一组。

    只读每个文件的开头，再用一个正则把每个文件扫一遍、找那几个 uuid（C 里完成，不解析 JSON），所以分组的代价
    和文件夹的大小成正比。一组内先读开始得早的（时间相同时先读没有 forkedFrom 的，再按文件名）：重放的行
    先读到的那份为准，所以共同的历史属于原来的会话。"""
    by_folder: Dict[str, List[_Head]] = {}
    singles: List[List[str]] = []
    for path in files:
        if sniff_format(path) == CLAUDE:
            by_folder.setdefault(os.path.dirname(path), []).append(_Head(path))
        else:
            singles.append([path])
    groups = []
    for heads in by_folder.values():
        groups += _link_heads(heads, max_bytes, problems)
    order = {path: index for index, path in enumerate(files)}
    return sorted(groups + singles, key=lambda group: order[group[0]])


def _link_heads(heads: List[_Head], max_bytes: int, problems: List[str]) -> List[List[str]]:
    if len(heads) == 1:
        return [[heads[0].path]]
    wanted = {value.encode("utf-8", "replace") for head in heads for value in (head.first, head.parent) if value}
    holders: Dict[bytes, List[int]] = {}
    for index, head in enumerate(heads):
        for uid in _uuids_in(head.path, wanted):
            holders.setdefault(uid, []).append(index)
    up = list(range(len(heads)))

    def find(i: int) -> int:
        while up[i] != i:
            up[i] = up[up[i]]
            i = up[i]
        return i

    by_session = {os.path.splitext(head.name)[0]: index for index, head in enumerate(heads)}
    for index, head in enumerate(heads):
        linked = [other for value in (head.parent, head.first) if value
                  for other in holders.get(value.encode("utf-8", "replace"), []) if other != index]
        if head.forked in by_session:
            linked.append(by_session[head.forked])
        for other in linked:
            up[find(index)] = find(other)
    components: Dict[int, List[_Head]] = {}
    for index, head in enumerate(heads):
        components.setdefault(find(index), []).append(head)
    groups = []
    for members in components.values():
        members.sort(key=lambda head: (head.started or "\uffff", head.forked is not None, head.name))
        paths = [head.path for head in members]
        total = sum(_size(path) for path in paths)
        if len(paths) > 1 and total > max_bytes:
            problems.append(f"{'、'.join(printable(head.name) for head in members[:5])} 共享同一段历史，但加起来有 "
                            f"{human_size(total)}，超过一次导入的上限 {human_size(max_bytes)}：分别导入，不合成一棵树")
            groups += [[path] for path in paths]
        else:
            groups.append(paths)
    return groups


def _uuids_in(path: str, wanted: set) -> set:
    found = set()
    try:
        with open(path, "rb") as handle:
            for raw in handle:
                if b'"uuid"' in raw:
                    found.update(uid for uid in _UUID.findall(raw) if uid in wanted)
    except OSError:
        pass
    return found


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
