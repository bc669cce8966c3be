"""tree_jsonl.py — 本项目自己的会话树 JSONL：导出一棵树（或子树、路径），在另一台机器上导入，得到同一棵树

格式（FORMAT_NAME = "s11-session-tree"，FORMAT_VERSION = 1）：UTF-8，一行一个 JSON 对象。

    第 1 行  文件头 {"format": "s11-session-tree", "version": 1, "scope": "tree" | "subtree" | "path",
                   "focus": 选中的节点, "root": 第一个节点, "nodes": 节点行数, "messages": 消息行里的消息总数,
                   "redacted": true/false, "manifest": {"masked": {规则: 处数}, "unmasked": n,
                               "added": [{"chars": 字符数, "count": 处数}]（读者加的字符串本身不写出）},
                   "omitted": ["workspace"]（脱敏时不带工作区快照）, "exported_at": "YYYY-MM-DD HH:MM:SS"}
    之后每行  一个节点，父节点总在它前面（先序）：
             {"session_id", "parent_id", "title", "created_at", "created_ns", "fork_point",
              "inherit": n,          前 n 条消息与文件里它的父节点的前 n 条相同，不再重复写
              "messages": [...],     其余的消息（完整历史 = 父节点完整历史[:n] + messages）
              "source", "workspace"（不脱敏时）, "converged_from"（收敛节点，见 issue 21）, 以及 to_dict() 的其它字段}

关键洞察：节点 ID、parent_id、fork_point、converged_from 原样写下，导入时原样保存——所以它不走 formats.py 的
格式表（那张表从 Agent 的事件流里重建一棵树、按来源算出新 ID），而是一个单独的读写器：导入即复原。
pipeline.import_file() 看到第一行是这个文件头就交给 import_tree()，所以命令行的 import 和浏览器的上传都认它。

导入的保证：先读完、逐行检查（坏行按行号全部报出，抛 BadTreeFile），再和仓库比较：同 ID 的节点已存在且内容相同就
不写（所以导入两次什么都不写），内容不同就整个拒绝（绝不覆盖别人的节点）；版本比本模块新的文件拒绝，不去猜；
store.write_costs() 算出确切字节交给 budget 之后，才在 store.batch() 里父先子后逐个保存。出错时仓库一个字节都不变。

逐行检查的内容（别人的文件可能是故意造的）：嵌套超过 MAX_NESTING 层的行在 json.loads 之前就拒绝（线性扫描，
不会 RecursionError）；load() 会判为损坏的字段（fork_point 超出消息条数、布尔值或负数，非字符串的 created_at，
不是对象的 workspace / source，非整数的 created_ns）；converged_from 守 converge() 的规则，parent_id 与
converged_from 不许绕成环；消息的标签守 set_label() 的 MAX_LABEL_CHARS。
有界：一个 3 MB 的文件可以让 3,000 个节点各继承 10 万条消息。所以先只数每个节点完整历史的条数，展开后的总条数
超过 MAX_HISTORY_MESSAGES（与 Agent 导入器的 MAX_COPIED_MESSAGES 同一个上限）或总字节超过 MAX_HISTORY_BYTES
就抛 TooManyBranches，在拼出任何历史、规划任何写入之前；拼出的历史引用父节点的同一批消息对象，不复制消息。

导出默认脱敏（与 HTML 页面用同一张复核表、同一份选择）：标题、来源、消息里的字符串；工作区快照不带。
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Tuple

import s11_review
import s11_tree_export
from s11_converge import MAX_LABEL_CHARS, check_converged_from
from s11_format import MAX_NESTING, SessionError, UnsupportedVersion, too_deep, validate_session_id
from s11_session import SessionNode, SessionStore
from s11_text import human_size, printable
from s11_tree import message_labels

from .lines import DEFAULT_MAX_BYTES
from .plan import MAX_COPIED_MESSAGES
from .report import ImportReport, TooManyBranches, TranscriptTooLarge

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "DISPLAY_NAME", "BadTreeFile", "jsonl_lines", "render_jsonl",
           "is_tree_file", "read_tree", "import_tree"]

FORMAT_NAME = "s11-session-tree"
FORMAT_VERSION = 1
DISPLAY_NAME = "8.11 会话树 JSONL"
BAD_LINES_SHOWN = 20
MAX_HISTORY_MESSAGES = MAX_COPIED_MESSAGES   # 展开后的消息总数上限：与 Agent 导入器的分叉复制同一个上限
MAX_HISTORY_BYTES = 10 * DEFAULT_MAX_BYTES   # 展开后的总字节（紧凑 JSON）：最大的文件展开十倍
_HEAD_BYTES = 64 * 1024


class BadTreeFile(SessionError):
    """文件头认得，但有坏行（消息里按行号列出）、行数不对或与仓库冲突。仓库不变。"""


# ── 导出 ───────────────────────────────────────────────────────────────────────────────────────
def jsonl_lines(prepared: s11_tree_export.Prepared) -> Iterator[str]:
    """s11_tree_export.prepare() 的结果 → 文件的每一行（带换行符）。"""
    gathered = prepared.gathered
    manifest = prepared.manifest
    head = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "scope": gathered.scope, "focus": gathered.focus,
            "root": gathered.nodes[0].session_id if gathered.nodes else None, "nodes": len(gathered.nodes),
            "messages": sum(len(messages) for messages in prepared.messages), "redacted": manifest.redacted,
            "manifest": {"masked": manifest.masked, "unmasked": manifest.unmasked,
                         "added": [{"chars": chars, "count": count}   # 不写字符串本身：读者要遮的正是它
                                   for _, chars, count in s11_review.added_summary(manifest)]},
            "omitted": ["workspace"] if manifest.redacted else [],
            "exported_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    yield _dump(head)
    for position, node in enumerate(gathered.nodes):
        line = {"session_id": node.session_id, "parent_id": node.parent_id, "title": prepared.titles[position],
                "created_at": node.created_at, "created_ns": node.created_ns, "fork_point": node.fork_point,
                "inherit": node.own_from, "messages": prepared.messages[position],
                "source": prepared.sources[position]}
        if not manifest.redacted:
            line["workspace"] = node.workspace
        if node.converged_from:
            line["converged_from"] = list(node.converged_from)
        for key, value in node.extra.items():
            line.setdefault(key, value)
        yield _dump(line)


def render_jsonl(prepared: s11_tree_export.Prepared) -> str:
    return "".join(jsonl_lines(prepared))


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


# ── 读 ─────────────────────────────────────────────────────────────────────────────────────────
def is_tree_file(path: str) -> bool:
    """第一行是不是本格式的文件头（只读开头几 KB；读不了就是 False，交给别的导入器去报错）。"""
    try:
        with open(path, "rb") as handle:
            first = handle.read(_HEAD_BYTES).split(b"\n", 1)[0]
    except OSError:
        return False
    return first.startswith(b'{"format":"' + FORMAT_NAME.encode() + b'"') or _header_of(first)


def _header_of(raw: bytes) -> bool:
    try:
        value = None if _too_deep(raw) else json.loads(raw)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("format") == FORMAT_NAME


def read_tree(path: str, *, max_bytes: int = DEFAULT_MAX_BYTES, max_messages: int = MAX_HISTORY_MESSAGES,
              max_history_bytes: int = MAX_HISTORY_BYTES) -> Tuple[dict, List[SessionNode]]:
    """读并检查整个文件 → (文件头, 复原的节点，父在子前)。任何坏行都抛 BadTreeFile（全部行号），版本更新抛
    UnsupportedVersion，文件太大抛 TranscriptTooLarge，展开后的历史太多抛 TooManyBranches；不碰仓库。

    先逐行检查、只记每个节点完整历史的条数（整数），算出展开后的总条数和总字节、过了上限这一关，才把历史
    拼出来：拼出来的列表引用父节点的同一批消息对象（不复制消息），总长度也就不超过 max_messages。"""
    name = printable(os.path.basename(path))
    size = os.path.getsize(path)
    if size > max_bytes:
        raise TranscriptTooLarge(f"{name} 有 {size:,} 字节，超过上限 {max_bytes:,} 字节；仓库没有任何改动")
    with open(path, "rb") as handle:
        raw = handle.read(size + 1)   # 按实际大小读：read(max_bytes + 1) 会为再小的文件也先预留 200 MB
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    head = _read_head(lines[0] if lines else b"", name)
    rows, problems = _read_rows(lines[1:])
    if not problems and head.get("nodes") != len(rows):
        problems.append((len(lines) + 1, f"文件头说有 {head.get('nodes')} 个节点，实际读到 {len(rows)} 个"
                                         "（文件被截断或拼接过？）"))
    problems = problems or _cycle(rows)
    if problems:
        shown = "；".join(f"第 {number} 行：{reason}" for number, reason in problems[:BAD_LINES_SHOWN])
        more = f"；另有 {len(problems) - BAD_LINES_SHOWN} 行有问题" if len(problems) > BAD_LINES_SHOWN else ""
        raise BadTreeFile(f"{name} 有 {len(problems)} 行不对，什么都没有导入：{shown}{more}")
    _check_expansion(rows, name, max_messages, max_history_bytes)
    return head, _nodes(rows)


def _read_head(raw: bytes, name: str) -> dict:
    try:
        head = None if _too_deep(raw) else json.loads(raw)
    except ValueError:
        head = None
    if not isinstance(head, dict) or head.get("format") != FORMAT_NAME:
        raise BadTreeFile(f"{name} 第 1 行不是 {DISPLAY_NAME} 的文件头；仓库没有任何改动")
    version = head.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise BadTreeFile(f"{name} 第 1 行：version 应是正整数，收到 {printable(repr(version))[:40]}；仓库没有任何改动")
    if version > FORMAT_VERSION:
        raise UnsupportedVersion(f"{name} 是 {DISPLAY_NAME} 第 {version} 版，本程序只认到第 {FORMAT_VERSION} 版：请升级后"
                                 "再导入（不去猜新版本的意思）；仓库没有任何改动")
    return head


def _too_deep(raw: bytes) -> bool:
    """这一行比仓库存得下的更深吗？与会话文件同一种数法（行的对象第 1 层，messages 第 2 层，消息第 3 层），
    用仓库读文件时的同一个扫描（s11_format.too_deep：线性、不递归）。在 json.loads 之前问：它在十万层的行上会
    RecursionError。"""
    return too_deep(raw, MAX_NESTING + 2)
_STEP = [1 if byte == ord("[") else -1 if byte == ord("]") else 0 for byte in range(256)]


@dataclass
class _Row:
    """检查过的一个节点行，历史还没展开：own 是它自己写下的消息，length 是完整历史的条数（inherit + len(own)）。"""
    number: int
    data: dict
    own: list
    inherit: int
    length: int

    @property
    def session_id(self) -> str:
        return self.data["session_id"]


def _read_rows(lines: List[bytes]) -> Tuple[List[_Row], List[Tuple[int, str]]]:
    rows: Dict[str, _Row] = {}
    problems: List[Tuple[int, str]] = []
    for number, line in enumerate(lines, 2):
        row, problem = _read_row(line, number, rows)
        if problem:
            problems.append((number, problem))
        elif row.session_id in rows:
            problems.append((number, f"节点 {row.session_id} 在前面已经出现过"))
        else:
            rows[row.session_id] = row
    return list(rows.values()), problems


def _read_row(raw: bytes, number: int, rows: Dict[str, _Row]) -> Tuple[Optional[_Row], str]:
    """一行 → (_Row, "") 或 (None, 问题)。空行算问题：本格式不写空行。"""
    if not raw.strip():
        return None, "空行"
    if _too_deep(raw):
        return None, f"嵌套超过 {MAX_NESTING} 层（一条消息、工作区快照最多 {MAX_NESTING} 层），没有解析它"
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return None, f"不是 JSON（{printable(str(exc))[:80]}）"
    if not isinstance(data, dict):
        return None, "不是 JSON 对象"
    problem = _wrong_field(data) or _wrong_ids(data)
    if problem:
        return None, problem
    parent_id, own, inherit = data.get("parent_id"), data["messages"], data.get("inherit", 0)
    if inherit:
        if parent_id not in rows:
            return None, f"inherit={inherit}，但父节点 {parent_id} 不在它前面的行里"
        if inherit > rows[parent_id].length:
            return None, f"inherit={inherit} 超过父节点的 {rows[parent_id].length} 条消息"
    length = inherit + len(own)
    fork_point = data.get("fork_point")
    if fork_point is not None and fork_point > length:
        return None, f"fork_point={fork_point} 超过这个节点的 {length} 条消息"
    label = _long_label(own, inherit)
    return (None, label) if label else (_Row(number, data, own, inherit, length), "")


def _natural(value: Any) -> bool:
    return type(value) is int and value >= 0   # type() 而不是 isinstance：True 不是 1


def _wrong_field(data: dict) -> str:
    """字段的类型和取值：load() 会判为损坏的（s11_format.check_fields 的同一组规则），这里先按行拒绝。"""
    get = data.get
    converged = get("converged_from")
    rules = ((isinstance(get("title"), str), "title 不是字符串"),
             (isinstance(get("messages"), list), "messages 不是列表"),
             (_natural(get("inherit", 0)), "inherit 应是不小于 0 的整数"),
             (get("fork_point") is None or _natural(get("fork_point")), "fork_point 应是不小于 0 的整数或 null"),
             (get("created_at") is None or isinstance(get("created_at"), str), "created_at 应是字符串或 null"),
             (type(get("created_ns", 0)) is int, "created_ns 应是整数"),
             (get("workspace") is None or isinstance(get("workspace"), dict), "workspace 应是对象或 null"),
             (get("source") is None or isinstance(get("source"), dict), "source 应是对象或 null"),
             (converged is None or (isinstance(converged, list) and all(isinstance(i, str) for i in converged)),
              "converged_from 应是 ID 的列表"))
    return next((problem for ok, problem in rules if not ok), "")


def _wrong_ids(data: dict) -> str:
    """session_id、parent_id 合法；converged_from 守 converge() 的规则（不含自己和父节点、不重复、有上限）。"""
    try:
        validate_session_id(data.get("session_id"))
        if data.get("parent_id") is not None:
            validate_session_id(data["parent_id"])
        check_converged_from(SimpleNamespace(session_id=data["session_id"], parent_id=data.get("parent_id"),
                                             converged_from=data.get("converged_from")))
    except SessionError as exc:
        return printable(str(exc))[:160]
    return ""


def _long_label(own: list, inherit: int) -> str:
    """消息的标签守 set_label() 的上限（同一句话）。继承来的消息在父节点那一行已经查过。"""
    for number, label in message_labels(own):
        length = len(" ".join(label.split()))
        if length > MAX_LABEL_CHARS:
            return f"第 {inherit + number} 条消息：标签最多 {MAX_LABEL_CHARS} 字符，这个有 {length:,} 字符"
    return ""


def _cycle(rows: List[_Row]) -> List[Tuple[int, str]]:
    """parent_id 和 converged_from 只能指向在这个节点之前就有的节点（分叉、收敛都是这样造出来的），所以
    沿这两种边走不可能回到自己；走回来了就是伪造的文件。深度优先、用栈不用递归，每个节点只走一次。"""
    by_id = {row.session_id: row for row in rows}
    edges = {row.session_id: [target for target in [row.data.get("parent_id"), *(row.data.get("converged_from") or [])]
                              if target in by_id] for row in rows}
    done: set = set()
    for start in edges:
        if start in done:
            continue
        path, stack, on_path = [start], [iter(edges[start])], {start}
        while stack:
            target = next(stack[-1], None)
            if target is None:
                finished = path.pop()
                on_path.discard(finished)
                done.add(finished)
                stack.pop()
            elif target in on_path:
                ring = path[path.index(target):] + [target]
                shown = " → ".join(ring[:8]) + (" → …" if len(ring) > 8 else "")
                return [(by_id[target].number, f"parent_id / converged_from 绕成了环（{shown}）：分叉和收敛只能"
                                               "指向在它之前就有的节点")]
            elif target not in done:
                path.append(target)
                on_path.add(target)
                stack.append(iter(edges[target]))
    return []


def _check_expansion(rows: List[_Row], name: str, max_messages: int, max_bytes: int) -> None:
    """展开后（每个节点的完整历史 = 继承的前缀 + 自己的消息）一共多少条、多少字节：超过上限就在拼出任何历史、
    规划任何写入之前拒绝。一个 3 MB 的文件可以让 3,000 个节点各继承 10 万条消息——展开就是 3 亿条。"""
    total = sum(row.length for row in rows)
    if total > max_messages:
        raise TooManyBranches(f"{name}：这份文件展开后共有 {total:,} 条消息（每个节点都带着从父节点继承的前缀），"
                              f"超过上限 {max_messages:,}；什么都没有导入")
    size = _expanded_bytes(rows)
    if size > max_bytes:
        raise TooManyBranches(f"{name}：这份文件展开后共有 {human_size(size)}（每个节点都带着从父节点继承的前缀），"
                              f"超过上限 {human_size(max_bytes)}；什么都没有导入")


def _expanded_bytes(rows: List[_Row]) -> int:
    """每个节点完整历史的紧凑 JSON 字节之和。每条消息只编码一次；继承的前缀用父节点的前缀和（一个整数列表，
    总长就是上面已经限住的总条数）。"""
    sums: Dict[str, List[int]] = {}
    total = 0
    for row in rows:
        prefix = sums[row.data["parent_id"]][:row.inherit + 1] if row.inherit else [0]
        sizes = (len(_dump(message).encode("utf-8", "surrogatepass")) - 1 for message in row.own)
        sums[row.session_id] = prefix + list(accumulate(sizes, initial=prefix[-1]))[1:]
        total += sums[row.session_id][-1]
    return total


def _nodes(rows: List[_Row]) -> List[SessionNode]:
    """展开：完整历史 = 父节点完整历史[:inherit] + 自己的消息（列表里是同一批消息对象的引用，不是副本）。"""
    full: Dict[str, list] = {}
    nodes = []
    for row in rows:
        data = row.data
        history = (full[data["parent_id"]][:row.inherit] if row.inherit else []) + row.own
        full[row.session_id] = history
        node = SessionNode.from_dict({**{key: value for key, value in data.items() if key not in ("inherit", "revision")},
                                      "messages": history, "created_ns": data.get("created_ns", 0)})
        node.revision = 0
        converged = data.get("converged_from")
        if converged is not None and getattr(node, "converged_from", None) != converged:
            node.converged_from = list(converged)
        nodes.append(node)
    return nodes


# ── 导入 ───────────────────────────────────────────────────────────────────────────────────────
def _same(existing: SessionNode, node: SessionNode) -> bool:
    """仓库里的节点与文件里的相同（脱敏的文件不带工作区：那就不比工作区）。"""
    mine, theirs = existing.to_dict(), node.to_dict()
    if node.workspace is None:
        mine.pop("workspace", None)
        theirs.pop("workspace", None)
    return mine == theirs and \
        (getattr(existing, "converged_from", None) or None) == (getattr(node, "converged_from", None) or None)


def import_tree(path: str, store: SessionStore, *, max_bytes: int = DEFAULT_MAX_BYTES, dry_run: bool = False,
                budget=None, max_messages: int = MAX_HISTORY_MESSAGES,
                max_history_bytes: int = MAX_HISTORY_BYTES) -> ImportReport:
    """导入一个本格式的文件（见模块文档）。返回 ImportReport（format = DISPLAY_NAME）。
    max_messages / max_history_bytes：展开后的历史的上限（见 read_tree）。"""
    head, nodes = read_tree(path, max_bytes=max_bytes, max_messages=max_messages, max_history_bytes=max_history_bytes)
    name = os.path.basename(path)
    report = ImportReport(file=name, format=DISPLAY_NAME, bytes_read=os.path.getsize(path),
                          messages=int(head.get("messages") or 0), files=[name])
    to_write, clashes = [], []
    saves = None   # budget.before 同意之后是成功保存的次数
    try:
        with store.batch():   # 读仓库里的节点时共用前缀的块只读一次；write_costs 编好的每条消息，随后的 save 直接用
            for node in nodes:
                existing = store.load(node.session_id)
                if existing is None:
                    to_write.append(node)
                elif _same(existing, node):
                    report.unchanged += 1
                else:
                    clashes.append(node.session_id)
            if clashes:
                shown = "、".join(clashes[:10]) + (f" 等 {len(clashes)} 个" if len(clashes) > 10 else "")
                raise BadTreeFile(f"{printable(name)}：仓库里已有同 ID、内容不同的节点 {shown}；为了不覆盖它们，"
                                  "什么都没有导入（要并排保留，请导入到另一个会话目录）")
            try:
                costs = store.write_costs(to_write)   # 同时检查每个节点能不能保存（ID、消息、字段），出错时什么都没写
            except SessionError as exc:
                raise BadTreeFile(f"{printable(name)}：有节点不能保存，什么都没有导入：{exc}") from None
            report.bytes_planned = sum(costs)
            written = {node.session_id for node in to_write}
            report.node_ids = [node.session_id for node in nodes]
            present = set(report.node_ids)
            report.root_ids = [node.session_id for node in nodes if node.parent_id not in present]
            focus = head.get("focus")
            report.active_id = focus if focus in present else (report.node_ids[0] if nodes else None)
            report.active_ids = [report.active_id] if report.active_id else []
            if dry_run:
                report.written = len(to_write)
                return report
            if budget is not None:
                budget.before(report.bytes_planned, len(to_write))
            saves = 0   # 从这里起 budget 同意了：写完、停下或出错，离开这一批（日志行写下）之后都告诉它
            for node, cost in zip(to_write, costs):
                store.save(node)
                saves += 1
                report.written += 1
                report.bytes_written += cost
                if budget is not None:
                    try:
                        budget.during(report.bytes_written)
                    except SessionError as exc:
                        report.warnings.append(f"写了 {report.written} 个节点后停下：{exc}；已写的节点都完整，"
                                               "腾出空间后重新导入即可补齐")
                        done = {n.session_id for n in to_write[:report.written]}
                        report.node_ids = [sid for sid in report.node_ids if sid in done or sid not in written]
                        return report
    finally:
        if budget is not None and saves is not None:
            budget.after(saves)   # 限额据此释放预留
    return report
