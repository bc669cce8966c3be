"""plan.py — 把消息树切成会话节点：主干 + 分支 + 续接 / 分叉的会话 + 子代理，每个都是一个 SessionNode

    消息树 ──► Planner.run()   从根沿“继续的孩子”走成一段 = 一个节点，其余孩子各开一个子节点（fork_point = 分叉处）
           ──► nodes()         ID、标题、created_at、source
           ──► save_order()    根在前、父在子前

    节点的种类（标题的后缀）：trunk 根 → 活动端（无后缀）· branch 用户造成的分叉（“分支 N”或 Pi 的 label）·
    resume / fork 换了 sessionId 的续接 / 分叉会话 · subagent 子代理（挂在发起调用的节点下，fork_point 0）·
    orphan 主干之外的另一个根（例如父条目不在文件里）

在分叉处继续哪个孩子：同一会话的优先，其中通向活动端的优先，否则子树里最近还在动的那个。

保证：节点 ID = sha256(格式, 文件名, 会话 ID, 分支第一条消息)[:12]，只由来源决定——同一文件再导入得到同一组节点；
标题、created_at、source 也只由记录决定（没有时间戳时才用文件的修改时间），所以再导入时“未变化”就是真的未变化。
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from s11_session import SessionNode

from .convert import COMPACT
from .graph import Tree, level_order, spawner
from .transcript import Transcript, is_prompt, plain_text, text_or_none

__all__ = ["Planned", "Planner", "node_id", "nodes", "save_order", "copy_bytes"]


@dataclass
class Planned:
    start: str
    parent: Optional[int]
    fork_point: int
    messages: List[dict]
    own: List[str]
    kind: str          # trunk | branch | resume | fork | subagent | orphan
    active: bool = False


class Planner:
    """把消息树切成节点：一个节点 = 从分支起点沿“继续的孩子”一直走下去的一段，其余孩子各开一个子节点。

    在分叉处继续哪个孩子：同一会话的优先，其中通向活动端的优先，否则子树里最近还在动的那个——
    所以根 → 活动端是一个节点（主干），换了 sessionId 的地方开新节点（续接 / 分叉会话）。"""

    def __init__(self, tree: Tree, active: Optional[str]):
        self.tree, self.t, self.active = tree, tree.t, active
        self.on_active = self._path_to(active)
        self.newest = self._newest()
        self.plan: List[Planned] = []
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

    def run(self) -> List[Planned]:
        main_roots = sorted(self.tree.roots(), key=lambda uid: (uid not in self.on_active, self.t.entries[uid].seq))
        main_roots = [uid for uid in main_roots if uid not in self.tree.spawn_hint]
        for index, root in enumerate(main_roots):
            self._grow(root, None, 0, [], "trunk" if index == 0 else "orphan")
        self._attach_subagents()
        return self.plan

    def _attach_subagents(self) -> None:
        pending = list(self.tree.sub_roots)
        while pending:   # 子代理也可能启动子代理：等它的启动者先有了节点
            ready = [root for root in pending if spawner(self.tree, root) in self.owner]
            for root in ready:
                self._grow(root, self.owner[spawner(self.tree, root)], 0, [], "subagent")
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
        planned = Planned(start, parent, fork_point, messages, own, kind, active=own[-1] == self.active)
        self.plan.append(planned)
        for uid in own:
            self.owner[uid] = len(self.plan) - 1
        return len(self.plan) - 1


# ── 节点：ID、标题、来源 ────────────────────────────────────────────────────────────────────
def node_id(t: Transcript, start: str) -> str:
    """由来源决定的 12 位十六进制 ID（start 是分支第一条消息）：同一文件再导入，得到同一组节点。"""
    key = "\x00".join([t.format.name, t.file, t.entries[start].session or "", start])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def _base_title(t: Transcript, trunk: Optional[Planned]) -> str:
    """格式自己的标题（Claude：custom-title > ai-title；Pi：会话名）> 文件里的 summary > 第一句用户输入 > 文件名。"""
    for key in t.format.title_keys:
        if t.titles.get(key):
            return _one_line(t.titles[key])
    summaries = [text for leaf, text in t.summaries if leaf in t.entries]   # 指向别的文件的 summary 不算
    if summaries:
        return _one_line(summaries[-1])
    for message in trunk.messages if trunk else []:
        if is_prompt(message) and plain_text(message).strip():
            return _one_line(plain_text(message))
    return t.file


def _one_line(text: str, width: int = 48) -> str:
    """压成一行，超过 width 个字时留 width 个字再加 “…”。

    不用 s11_text.shorten：它在正好 width + 1 个字时不截断，标题就会和以前导入的不一样，
    再导入时每个节点都会被当成“变了”重写一遍。"""
    text = " ".join(text.split())
    return text[:width] + ("…" if len(text) > width else "")


def _title(t: Transcript, planned: Planned, base: str, number: int) -> str:
    entries = t.entries
    session = (entries[planned.start].session or "")[:8]
    if planned.kind == "subagent":
        return f"子代理：{_subagent_title(t, planned)}"
    label = _label(t, planned)
    suffix = {"trunk": "", "orphan": " · 另一个起点", "resume": f" · 续接会话 {session}",
              "fork": f" · 分叉会话 {session}", "branch": f" · {_one_line(label, 24)}" if label else f" · 分支 {number}"}
    return base + suffix[planned.kind]


def _label(t: Transcript, planned: Planned) -> Optional[str]:
    """这一段里第一条带 label 的消息的 label（Pi 的 /tree 书签）。"""
    return next((t.entries[uid].message["label"] for uid in planned.own if t.entries[uid].message.get("label")), None)


def _subagent_title(t: Transcript, planned: Planned) -> str:
    entry = t.entries[planned.start]
    spawn = t.spawned.get(entry.agent or "")
    if spawn and t.task_titles.get(spawn[1] or ""):
        return _one_line(t.task_titles[spawn[1]], 32)
    return _one_line(plain_text(entry.message) or entry.agent or "未命名", 32)


def _created_at(planned: Planned, t: Transcript) -> str:
    """分支第一条消息的时间（UTC，和章节的 created_at 同一格式）；没有时间戳就用文件的修改时间。"""
    for message in planned.messages[planned.fork_point:] + planned.messages[:planned.fork_point]:
        stamp = message.get("timestamp")
        if isinstance(stamp, str) and re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", stamp):
            return stamp[:10] + " " + stamp[11:19]
    stamp = t.header.get("timestamp")
    if isinstance(stamp, str) and len(stamp) >= 19:
        return stamp[:10] + " " + stamp[11:19]
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(os.path.getmtime(t.path)))


def _source(t: Transcript, planned: Planned) -> Dict[str, Any]:
    """节点的来历。键的先后是固定的（它们照原样写进节点文件）；格式自己的字段由格式表的 origin 给出。"""
    entry = t.entries[planned.start]
    agent_version, cwd, extra = t.format.origin(t, entry)
    source = {"format": t.format.name, "file": t.file,
              "session_id": entry.session or text_or_none(t.header.get("id")),
              "agent_version": agent_version, "cwd": cwd,
              "subagent": planned.kind == "subagent", "active_end": planned.active,
              "first_id": planned.start, "imported_messages": len(planned.messages)}
    source.update(extra)
    if planned.kind == "subagent" and entry.agent:
        source["agent_id"] = entry.agent
    label = _label(t, planned)
    if label:
        source["label"] = label
    return source


def nodes(t: Transcript, plan: List[Planned]) -> List[SessionNode]:
    trunk = next((p for p in plan if p.kind == "trunk"), None)
    base = _base_title(t, trunk)
    ids = [node_id(t, planned.start) for planned in plan]
    made, branch_numbers = [], Counter()
    for planned, session_id in zip(plan, ids):
        parent_id = ids[planned.parent] if planned.parent is not None else None
        branch_numbers[planned.kind] += 1
        made.append(SessionNode(session_id=session_id, title=_title(t, planned, base, branch_numbers[planned.kind]),
                                parent_id=parent_id, messages=planned.messages,
                                created_at=_created_at(planned, t),
                                fork_point=planned.fork_point if parent_id else None, source=_source(t, planned)))
    return made


def save_order(made: List[SessionNode]) -> List[SessionNode]:
    """根在前、父在子前：按这个顺序保存，中途被杀也不会留下找不到父节点的分支。"""
    by_parent: Dict[Optional[str], List[SessionNode]] = {}
    for node in made:
        by_parent.setdefault(node.parent_id, []).append(node)
    return level_order(by_parent.get(None, []), lambda node: by_parent.get(node.session_id, []))


def copy_bytes(plan: List[Planned]) -> int:
    """分叉节点重复保存的父节点前缀有多少字节（紧凑 JSON）。每个父节点只算一次前缀和，每条消息只编码一次。"""
    prefix_sums: Dict[int, List[int]] = {}
    total = 0
    for planned in plan:
        if planned.parent is None or not planned.fork_point:
            continue
        sums = prefix_sums.setdefault(planned.parent, [0])
        messages = plan[planned.parent].messages
        while len(sums) <= planned.fork_point:
            sums.append(sums[-1] + len(COMPACT(messages[len(sums) - 1]).encode("utf-8")))
        total += sums[planned.fork_point]
    return total
