"""plan.py — 把消息树切成会话节点：主干 + 分支 + 续接 / 分叉的会话 + 子代理，每个都是一个 SessionNode

    消息树 ──► Planner.run()   从根沿“继续的孩子”走成一段 = 一个节点，其余孩子各开一个子节点（fork_point = 分叉处）
           ──► nodes()         ID、标题、created_at、source
           ──► save_order()    根在前、父在子前

    节点的种类（标题的后缀）：trunk 根 → 活动端（无后缀）· branch 用户造成的分叉（“分支 N”或 Pi 的 label）·
    resume / fork 换了 sessionId 的续接 / 分叉会话 · subagent 子代理（挂在发起调用的节点下，fork_point 0）·
    orphan 主干之外的另一个根（例如父条目不在文件里）

在分叉处继续哪个孩子：同一会话的优先，其中通向活动端的优先，否则子树里最近还在动的那个。
一次读进好几个会话文件时（文件夹里续接 / 分叉同一段历史的文件），每个文件有自己的活动端和标题。

保证：节点 ID = sha256(格式, 会话文件名, 会话 ID, 分支第一条消息)[:12]，只由来源决定——同一文件再导入得到同一组节点；
标题、created_at、source 也只由记录决定（没有时间戳时才用文件的修改时间），所以再导入时“未变化”就是真的未变化。
有界：每个分支节点复制分叉处之前的消息（书里的设计）；复制的消息总数超过 MAX_COPIED_MESSAGES 时在写入前
拒绝（TooManyBranches），而不是先占满内存、再往仓库里写几十 GB。其余每一步对消息数是线性的。
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections import Counter, deque
from dataclasses import dataclass
from itertools import chain
from typing import Any, Dict, List, Optional, Tuple

from s11_format import encode_message_lines
from s11_session import SessionNode
from s11_text import printable

from .graph import Tree, level_order, spawn_links, spawner
from .report import TooManyBranches
from .transcript import Transcript, is_prompt, plain_text, prompt_title, text_or_none

__all__ = ["Planned", "Planner", "node_id", "nodes", "save_order", "copy_bytes", "MAX_COPIED_MESSAGES"]

MAX_COPIED_MESSAGES = 2_000_000   # 分叉节点复制的消息总数上限（真实的 20 MB 记录 rewind 20 多次约 15 万条）


@dataclass
class Planned:
    start: str
    parent: Optional[int]
    fork_point: int
    messages: List[dict]
    own: List[str]
    kind: str          # trunk | branch | resume | fork | subagent | orphan
    active: bool = False
    spawned_at: Optional[int] = None   # 子代理：启动它的那条消息在父节点里是第几条（1 起）


class Planner:
    """把消息树切成节点：一个节点 = 从分支起点沿“继续的孩子”一直走下去的一段，其余孩子各开一个子节点。

    在分叉处继续哪个孩子：同一会话的优先，其中通向活动端的优先，否则子树里最近还在动的那个——
    所以根 → 活动端是一个节点（主干），换了 sessionId 的地方开新节点（续接 / 分叉会话）。
    actives 是每个会话文件的活动端（导入一个文件时只有一个）。"""

    def __init__(self, tree: Tree, actives: Dict[str, Optional[str]]):
        self.tree, self.t = tree, tree.t
        self.actives = {uid for uid in actives.values() if uid}
        self.on_active: set = set()
        for uid in self.actives:
            self.on_active |= self._path_to(uid)
        self.newest = self._newest()
        self.plan: List[Planned] = []
        self.owner: Dict[str, int] = {}
        self.passed_over: List[str] = []   # 继续主线的子消息：上次导入时它可能是一条分支
        self.copied = 0                    # 分叉节点复制的消息数（有上限）
        self.waiting: Dict[str, List[str]] = {}   # 启动者消息 → 等它有了节点才能挂上去的子代理
        self.spawners: Dict[str, Optional[str]] = {}
        self.number: Dict[str, int] = {}   # 消息 → 它在自己节点里是第几条（1 起）：子代理挂在哪一条下

    def _path_to(self, uid: Optional[str]) -> set:
        path = set()
        while uid is not None and uid not in self.on_active and uid not in path:
            path.add(uid)
            uid = self.tree.parent.get(uid)
        return path

    def _newest(self) -> Dict[str, int]:
        """每条消息的子树里最新一行的位置：分支沿着“最近还在动”的方向延伸。"""
        newest = {}
        entries, children = self.t.entries, self.tree.children
        for uid in reversed(self.tree.top_down()):   # 子代理的链开头也是根，一并算进去
            kids = children.get(uid)
            own = entries[uid].last_seq
            if not kids:
                newest[uid] = own
            elif len(kids) == 1:
                newest[uid] = max(own, newest[kids[0]])
            else:
                newest[uid] = max(own, max(newest[k] for k in kids))
        return newest

    def run(self) -> List[Planned]:
        entries = self.t.entries
        main_roots = sorted(self.tree.roots(), key=lambda uid: (uid not in self.on_active, entries[uid].seq))
        trunks: set = set()
        for root in main_roots:
            if root in self.tree.spawn_hint:
                continue
            home = entries[root].home
            self._grow(root, None, 0, [], "orphan" if home in trunks else "trunk")
            trunks.add(home)
        self._attach_subagents()
        return self.plan

    def _attach_subagents(self) -> None:
        """子代理挂到启动它的调用所在的节点下；子代理也可能启动子代理，那就等它的启动者先有了节点。
        每个子代理只登记一次（按启动者消息），启动者一有节点就挂上去，所以一万层嵌套的子代理也是线性的。"""
        for root in self.tree.sub_roots:
            self.spawners[root] = spawner(self.tree, root)
            self.waiting.setdefault(self.spawners[root] or "", []).append(root)
        ready: deque = deque()
        for spawn in [spawn for spawn in self.waiting if spawn in self.owner]:
            ready.extend(self.waiting.pop(spawn))
        self._drain(ready)
        while self.waiting:   # 找不到启动它的调用：自成一棵树（它自己启动的子代理照样挂在它下面）
            for root in self.waiting.pop(next(iter(self.waiting))):
                self._grow(root, None, 0, [], "subagent", ready)
                self._drain(ready)

    def _drain(self, ready: deque) -> None:
        while ready:
            root = ready.popleft()
            self._grow(root, self.owner[self.spawners[root]], 0, [], "subagent", ready)
            self.plan[self.owner[root]].spawned_at = self.number.get(self.spawners[root])

    def _grow(self, start: str, parent: Optional[int], fork_point: int, prefix: List[dict], kind: str,
              ready: Optional[deque] = None) -> None:
        queue = deque([(start, parent, fork_point, prefix, kind)])
        while queue:
            for item in self._segment(*queue.popleft(), ready):
                self.copied += item[2]
                if self.copied > MAX_COPIED_MESSAGES:
                    raise TooManyBranches(f"{printable(self.t.file)} 的分支太多：每个分支节点都复制分叉处之前的全部消息，这份记录"
                                          f"要复制超过 {MAX_COPIED_MESSAGES} 条消息；仓库没有任何改动")
                index = item[1]
                queue.append((item[0], index, item[2], self.plan[index].messages[:item[2]], item[3]))

    def _segment(self, start: str, parent: Optional[int], fork_point: int, prefix: List[dict], kind: str,
                 ready: Optional[deque]):
        """从 start 往下走成一个节点；返回在路上遇到的分支起点（下一批节点）。"""
        entries, children = self.t.entries, self.tree.children
        own, current, session, starts = [start], start, entries[start].session, []
        while current not in self.actives and children.get(current):
            kids = children[current]
            follow = kids[0] if len(kids) == 1 else self._continuation(kids, session)   # 只有一个孩子：就是它
            position = fork_point + len(own)
            starts += [(k, position) for k in kids if k != follow]
            if entries[follow].session not in (session, None) and not entries[follow].sidechain:
                starts.append((follow, position))   # 换了 sessionId：续接 / 分叉出来的会话是一个新节点
                break
            self.passed_over += [follow] if len(kids) > 1 else []
            own.append(follow)
            current = follow
        if current in self.actives:
            starts += [(k, fork_point + len(own)) for k in children.get(current, [])]
        index = self._record(start, parent, fork_point, prefix, own, kind, ready)
        return [(k, index, position, self._kind_of(k, session, index, position)) for k, position in starts]

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

    def _record(self, start, parent, fork_point, prefix, own, kind, ready) -> int:
        messages = prefix + [self.t.entries[uid].message for uid in own]
        planned = Planned(start, parent, fork_point, messages, own, kind, active=own[-1] in self.actives)
        self.plan.append(planned)
        index = len(self.plan) - 1
        for position, uid in enumerate(own, fork_point + 1):
            self.owner[uid] = index
            self.number[uid] = position
            if ready is not None and uid in self.waiting:   # 等着这条消息的子代理现在可以挂上去了
                ready.extend(self.waiting.pop(uid))
        return index


# ── 节点：ID、标题、来源 ────────────────────────────────────────────────────────────────────
def node_id(t: Transcript, start: str) -> str:
    """由来源决定的 12 位十六进制 ID（start 是分支第一条消息）：同一文件再导入，得到同一组节点。

    文件名是这条消息所属的会话文件：单独导入一个文件和导入它所在的文件夹，同一段对话得到同一个 ID。"""
    entry = t.entries[start]
    key = "\x00".join([t.format.name, entry.home or t.file, entry.session or "", start])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


def _base_title(t: Transcript, home: str, first: Optional[Planned]) -> str:
    """像 Agent 自己的会话列表那样起名：格式自己的标题（Claude：custom-title > ai-title；Pi：会话名；Gemini：summary）
    > 文件里的 summary > 第一句用户输入（去掉 Agent 的包装标签，斜杠命令写成命令）> 文件名。

    home 是会话文件；first 是这个文件的第一个节点（主干，或续接 / 分叉会话的那个节点）。"""
    titles = t.titles.get(home, {})
    for key in t.format.title_keys:
        if titles.get(key):
            return _one_line(titles[key])
    summaries = [text for where, leaf, text in t.summaries if where == home and leaf in t.entries]   # 指向别的文件的不算
    if summaries:
        return _one_line(summaries[-1])
    messages = first.messages if first else []
    for index in range(first.fork_point if first else 0, len(messages)):
        if is_prompt(messages[index]):
            title = prompt_title(plain_text(messages[index]))
            if title:
                return _one_line(title)
    return home


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
    """Task 调用的描述 > 子代理 meta.json 的描述 / Workflow 的 label > 它收到的第一句 > agentId。"""
    entry = t.entries[planned.start]
    agent = entry.agent or ""
    call = next((call for _, call in spawn_links(t, entry) if call in t.task_titles), None)
    if call:
        return _one_line(t.task_titles[call], 32)
    if t.agents.get(agent, {}).get("title"):
        return _one_line(t.agents[agent]["title"], 32)
    return _one_line(prompt_title(plain_text(entry.message)) or agent or "未命名", 32)


_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


def _created_at(planned: Planned, t: Transcript) -> str:
    """分支第一条消息的时间（UTC，和章节的 created_at 同一格式）；没有时间戳就用文件的修改时间。"""
    messages = planned.messages
    for index in chain(range(planned.fork_point, len(messages)), range(planned.fork_point)):
        stamp = messages[index].get("timestamp")
        if isinstance(stamp, str) and _STAMP.match(stamp):
            return stamp[:10] + " " + stamp[11:19]
    stamp = t.header.get("timestamp") or t.header.get("startTime")
    if isinstance(stamp, str) and _STAMP.match(stamp):
        return stamp[:10] + " " + stamp[11:19]
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(os.path.getmtime(t.path)))


def _source(t: Transcript, planned: Planned) -> Dict[str, Any]:
    """节点的来历。键的先后是固定的（它们照原样写进节点文件）；格式自己的字段由格式表的 origin 给出。"""
    entry = t.entries[planned.start]
    agent_version, cwd, extra = t.format.origin(t, entry)
    source = {"format": t.format.name, "file": entry.home or t.file,
              "session_id": entry.session or text_or_none(t.header.get("id")),
              "agent_version": agent_version, "cwd": cwd,
              "subagent": planned.kind == "subagent", "active_end": planned.active,
              "first_id": planned.start, "imported_messages": len(planned.messages)}
    source.update(extra)
    if planned.kind == "subagent" and entry.agent:
        source["agent_id"] = entry.agent
    if planned.kind == "subagent" and planned.spawned_at is not None:
        source["spawned_at"] = planned.spawned_at   # 会话树把它画在父节点的这一条（Task 调用）下
    label = _label(t, planned)
    if label:
        source["label"] = label
    return source


def nodes(t: Transcript, plan: List[Planned]) -> List[SessionNode]:
    firsts: Dict[str, Planned] = {}
    for planned in plan:   # 每个会话文件的第一个节点（主干优先）：标题从它取
        home = t.entries[planned.start].home or t.file
        current = firsts.get(home)
        if planned.kind != "subagent" and (current is None or (planned.kind == "trunk" != current.kind)):
            firsts[home] = planned
    bases: Dict[str, str] = {}
    ids = [node_id(t, planned.start) for planned in plan]
    made, branch_numbers = [], Counter()
    for planned, session_id in zip(plan, ids):
        home = t.entries[planned.start].home or t.file
        if home not in bases:
            bases[home] = _base_title(t, home, firsts.get(home))
        parent_id = ids[planned.parent] if planned.parent is not None else None
        branch_numbers[planned.kind] += 1
        made.append(SessionNode(session_id=session_id, title=_title(t, planned, bases[home],
                                                                    branch_numbers[planned.kind]),
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


def copy_bytes(plan: List[Planned], known: Optional[Dict[int, Tuple[Any, bytes]]] = None) -> int:
    """分叉节点重复保存的父节点前缀有多少字节（每条消息一行紧凑 JSON，和仓库写下的一样）。每个父节点只算一次前缀和。

    known 是仓库这一批已经编码好的消息（s11_chunks.Batch.lines：id(消息) → (消息, 一行字节)）：要写的节点的消息
    都在里面，不必再编码一遍（20 MB 的带分支记录省下约一次完整的编码）；不在里面的（没变、不写的节点）才在这里编码，
    每条只编码一次。"""
    known = known if known is not None else {}
    extra: Dict[int, Tuple[Any, bytes]] = {}
    prefix_sums: Dict[int, List[int]] = {}
    total = 0
    for planned in plan:
        if planned.parent is None or not planned.fork_point:
            continue
        sums = prefix_sums.setdefault(planned.parent, [0])
        segment = plan[planned.parent].messages[len(sums) - 1:planned.fork_point]
        lines = [known.get(id(message)) or extra.get(id(message)) for message in segment]
        fresh = [message for message, line in zip(segment, lines) if line is None or line[0] is not message]
        if fresh:   # 一次编码这一段里还没编码过的（逐条调用要慢几倍），结果记进 extra
            encode_message_lines(fresh, memo=extra)
        for message, line in zip(segment, lines):
            if line is None or line[0] is not message:
                line = extra[id(message)]
            sums.append(sums[-1] + len(line[1]))
        total += sums[planned.fork_point]
    return total
