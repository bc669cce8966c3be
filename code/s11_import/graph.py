"""graph.py — 按 id 还原完整的图，修好它，再拉直录制造成的假分叉：得到只含消息的树（Tree）

    repair(t, 修复步骤)       缺父条目 → 根（警告）；格式自己的修复步骤；环 → 断开（警告）
        follow_compact_boundaries   Claude：compact_boundary 接到 logicalParentUuid（会成环的不跟）
        chain_loose_roots           Claude：同一会话里第二个没有父条目的，接在上一条消息后面
    Tree(t)                  先把每条消息接到最近的“留下的”祖先消息（anchors），再丢掉结构条目
    整形步骤（格式表决定用哪些）：
        merge_streams        同一个 message.id 分几行流式写出的 assistant → 一条消息
        split_sidechains     子代理的链（isSidechain）从主线上摘下，稍后挂到启动它的节点下（spawner）
        linearise            一个父消息下的非用户输入（工具结果、钩子行旁的回复）→ 按时间串成一条线
    apply_labels(t, tree)    Pi 的 label → 目标消息（目标是结构条目时落到最近的消息上）
    active_end(tree, hints)  第一个落在主线消息上的线索；一个都不中就取最新的非子代理叶子

关键洞察：先接线，再丢弃——结构条目被“跳过”而不是把链剪断，否则会出现假根、整段对话被剪掉。

保证：不递归（几千层的链照样走完）；除了合并流式分段和写上 label，只改父子关系，不改消息；
人为改坏的环、缺失的父条目都会变成警告，而不是死循环或丢消息。本模块不看格式名：格式表把步骤交给它。
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Dict, Iterable, List, Optional, TypeVar

from .transcript import Entry, Transcript, line_list, plain_text

__all__ = ["repair", "follow_compact_boundaries", "chain_loose_roots", "Tree", "merge_streams", "split_sidechains",
           "linearise", "spawner", "apply_labels", "active_end", "level_order"]

Item = TypeVar("Item")


def level_order(roots: Iterable[Item], children: Callable[[Item], Iterable[Item]]) -> List[Item]:
    """广度优先：根在前，父在子前（[根, 它的孩子们, 孙子们…]）。显式队列，不递归。"""
    order, queue = [], deque(roots)
    while queue:
        item = queue.popleft()
        order.append(item)
        queue.extend(children(item))
    return order


# ── 修复：缺父、compact_boundary、空父、环 ─────────────────────────────────────────────────
def repair(t: Transcript, format_repairs: Iterable[Callable[[Transcript, set], None]] = ()) -> None:
    """缺父条目的成为根，再做格式自己的修复（每一步拿到 t 和孤儿的 uid），最后断开环。"""
    orphans = [e for e in t.order if e.parent is not None and e.parent not in t.entries]
    for entry in orphans:
        entry.parent = None
    if orphans:
        t.warnings.append(f"{len(orphans)} 个条目的父条目不在文件里，已作为新的根（第 "
                          f"{_lines(orphans)} 行）")
    orphan_ids = {e.uid for e in orphans}
    for step in format_repairs:
        step(t, orphan_ids)
    _break_cycles(t)


def _lines(entries: List[Entry]) -> str:
    return line_list([f"{e.label_file}{e.line}" for e in entries])


def follow_compact_boundaries(t: Transcript, orphans: set) -> None:
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


def chain_loose_roots(t: Transcript, orphans: set) -> None:
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


def _reaches(t: Transcript, start: str, target: str) -> bool:
    """从 start 沿父链往上走，会不会走到 target（用来判断一条新的连线会不会成环）。"""
    seen, current = set(), start
    while current is not None and current not in seen:
        if current == target:
            return True
        seen.add(current)
        entry = t.entries.get(current)
        current = entry.parent if entry else None
    return False


def _break_cycles(t: Transcript) -> None:
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
class Tree:
    """只含消息的树。parent / children 以 uid 为键；head 把并入别人的流式分段映射到那条消息。"""

    def __init__(self, t: Transcript):
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
        return level_order(self.roots(), lambda uid: self.children.get(uid, []))


def _anchors(t: Transcript) -> Dict[str, Optional[str]]:
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


def merge_streams(tree: Tree) -> None:
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


def linearise(tree: Tree) -> None:
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


def _chain_end(tree: Tree, start: str, before_seq: int) -> str:
    """从 start 顺着“最新的子消息”往下走，停在时间上早于 before_seq 的最后一条。"""
    current = start
    while True:
        kids = tree.children.get(current)
        if not kids or tree.t.entries[kids[-1]].seq > before_seq:
            return current
        current = kids[-1]


# ── 子代理、标签、活动端 ──────────────────────────────────────────────────────────────────────
def split_sidechains(tree: Tree) -> None:
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


def spawner(tree: Tree, root: str) -> Optional[str]:
    """启动这段子代理的消息：它在主线上的父消息；或 toolUseResult.agentId 对上的那次调用；或 Task 的 prompt 相同。"""
    t, entry = tree.t, tree.t.entries[root]
    if tree.spawn_hint.get(root):
        return tree.spawn_hint[root]
    if entry.agent and entry.agent in t.spawned:
        result, call = t.spawned[entry.agent]
        return tree.message_of(t.tool_calls.get(call or "")) or tree.message_of(result)
    text = plain_text(entry.message).strip()
    return tree.message_of(t.task_prompts.get(text)) if text else None


def apply_labels(t: Transcript, tree: Tree) -> None:
    """Pi 的 label 条目 → 目标消息的 label（目标是结构条目时落到最近的消息上）。"""
    for target, label in t.labels.items():
        found = tree.message_of(target)
        if found:
            t.entries[found].message["label"] = label


def active_end(tree: Tree, hints: List[str]) -> Optional[str]:
    """对话现在停在哪条消息：hints（格式给出的线索，先试的在前）里第一个落在主线消息上的；
    一个都不中就取最新的非子代理叶子。"""
    t = tree.t
    for hint in hints:
        found = tree.message_of(hint)
        if found and not t.entries[found].sidechain:
            return found
    leaves = [uid for uid in tree.parent if not tree.children.get(uid) and not t.entries[uid].sidechain]
    return max(leaves, key=lambda uid: t.entries[uid].last_seq, default=None)
