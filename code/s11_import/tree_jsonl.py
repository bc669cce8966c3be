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

导出默认脱敏（与 HTML 页面用同一张复核表、同一份选择）：标题、来源、消息里的字符串；工作区快照不带。
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any, Dict, List, Optional, Tuple

import s11_review
import s11_tree_export
from s11_format import SessionError, UnsupportedVersion, validate_session_id
from s11_session import SessionNode, SessionStore
from s11_text import printable

from .lines import DEFAULT_MAX_BYTES
from .report import ImportReport, TranscriptTooLarge

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "DISPLAY_NAME", "BadTreeFile", "jsonl_lines", "render_jsonl",
           "is_tree_file", "read_tree", "import_tree"]

FORMAT_NAME = "s11-session-tree"
FORMAT_VERSION = 1
DISPLAY_NAME = "8.11 会话树 JSONL"
BAD_LINES_SHOWN = 20
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
        value = json.loads(raw)
    except ValueError:
        return False
    return isinstance(value, dict) and value.get("format") == FORMAT_NAME


def read_tree(path: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Tuple[dict, List[SessionNode]]:
    """读并检查整个文件 → (文件头, 复原的节点，父在子前)。任何坏行都抛 BadTreeFile（全部行号），版本更新抛
    UnsupportedVersion，太大抛 TranscriptTooLarge；不碰仓库。"""
    name = printable(os.path.basename(path))
    size = os.path.getsize(path)
    if size > max_bytes:
        raise TranscriptTooLarge(f"{name} 有 {size:,} 字节，超过上限 {max_bytes:,} 字节；仓库没有任何改动")
    with open(path, "rb") as handle:
        raw = handle.read(max_bytes + 1)
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    head = _read_head(lines[0] if lines else b"", name)
    problems: List[Tuple[int, str]] = []
    nodes: List[SessionNode] = []
    full: Dict[str, list] = {}
    for number, line in enumerate(lines[1:], 2):
        node, problem = _read_node(line, number, full)
        if problem:
            problems.append((number, problem))
        elif node is not None:
            if node.session_id in full:
                problems.append((number, f"节点 {node.session_id} 在前面已经出现过"))
                continue
            full[node.session_id] = node.messages
            nodes.append(node)
    if not problems and head.get("nodes") != len(nodes):
        problems.append((len(lines) + 1, f"文件头说有 {head.get('nodes')} 个节点，实际读到 {len(nodes)} 个"
                                         "（文件被截断或拼接过？）"))
    if problems:
        shown = "；".join(f"第 {number} 行：{reason}" for number, reason in problems[:BAD_LINES_SHOWN])
        more = f"；另有 {len(problems) - BAD_LINES_SHOWN} 行有问题" if len(problems) > BAD_LINES_SHOWN else ""
        raise BadTreeFile(f"{name} 有 {len(problems)} 行不对，什么都没有导入：{shown}{more}")
    return head, nodes


def _read_head(raw: bytes, name: str) -> dict:
    try:
        head = json.loads(raw)
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


def _read_node(raw: bytes, number: int, full: Dict[str, list]) -> Tuple[Optional[SessionNode], str]:
    """一行 → (节点, "") 或 (None, 问题)。空行算问题：本格式不写空行。"""
    if not raw.strip():
        return None, "空行"
    try:
        data = json.loads(raw)
    except ValueError as exc:
        return None, f"不是 JSON（{printable(str(exc))[:80]}）"
    if not isinstance(data, dict):
        return None, "不是 JSON 对象"
    try:
        validate_session_id(data.get("session_id"))
        parent_id = data.get("parent_id")
        if parent_id is not None:
            validate_session_id(parent_id)
    except SessionError as exc:
        return None, printable(str(exc))[:120]
    title, messages, inherit = data.get("title"), data.get("messages"), data.get("inherit", 0)
    if not isinstance(title, str):
        return None, "title 不是字符串"
    if not isinstance(messages, list):
        return None, "messages 不是列表"
    if isinstance(inherit, bool) or not isinstance(inherit, int) or inherit < 0:
        return None, "inherit 应是不小于 0 的整数"
    fork_point = data.get("fork_point")
    if fork_point is not None and (isinstance(fork_point, bool) or not isinstance(fork_point, int) or fork_point < 0):
        return None, "fork_point 应是不小于 0 的整数或 null"
    if inherit:
        if parent_id not in full:
            return None, f"inherit={inherit}，但父节点 {parent_id} 不在它前面的行里"
        if inherit > len(full[parent_id]):
            return None, f"inherit={inherit} 超过父节点的 {len(full[parent_id])} 条消息"
    converged = data.get("converged_from")
    if converged is not None and (not isinstance(converged, list) or not all(isinstance(i, str) for i in converged)):
        return None, "converged_from 应是 ID 的列表"
    source = data.get("source")
    if source is not None and not isinstance(source, dict):
        return None, "source 应是对象或 null"
    created_ns = data.get("created_ns", 0)
    if isinstance(created_ns, bool) or not isinstance(created_ns, int):
        return None, "created_ns 应是整数"
    history = (full[parent_id][:inherit] if inherit else []) + messages
    node = SessionNode.from_dict({**{key: value for key, value in data.items() if key not in ("inherit", "revision")},
                                  "messages": history, "created_ns": created_ns})
    node.revision = 0
    if converged is not None and getattr(node, "converged_from", None) != converged:
        node.converged_from = list(converged)
    return node, ""


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
                budget=None) -> ImportReport:
    """导入一个本格式的文件（见模块文档）。返回 ImportReport（format = DISPLAY_NAME）。"""
    head, nodes = read_tree(path, max_bytes=max_bytes)
    name = os.path.basename(path)
    report = ImportReport(file=name, format=DISPLAY_NAME, bytes_read=os.path.getsize(path),
                          messages=int(head.get("messages") or 0), files=[name])
    to_write, clashes = [], []
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
        for node, cost in zip(to_write, costs):
            store.save(node)
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
    return report
