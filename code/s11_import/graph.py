"""graph.py — 按 id 还原完整的图，修好它，再拉直录制造成的假分叉：得到只含消息的树（Tree）

    repair(t, 修复步骤)       缺父条目 → 根（警告）；环 → 断开（警告）；格式自己的修复步骤；再查一次环
        follow_compact_boundaries   Claude：compact_boundary 接到 logicalParentUuid（会成环的不跟）
        chain_loose_roots           Claude：同一会话里第二个没有父条目的，接在上一条消息后面
    Tree(t)                  先把每条消息接到最近的“留下的”祖先消息（anchors），再丢掉结构条目
    整形步骤（格式表决定用哪些）：
        merge_streams        同一个 stream（Claude 的 message.id）分几行写出的消息 → 一条消息
        split_sidechains     子代理的链（isSidechain）从主线上摘下，稍后挂到启动它的节点下（spawner）
        linearise            不是用户输入的消息（工具结果、钩子行旁的回复）各归到最近的用户输入之下，按时间串成一条线
    apply_labels(t, tree)    Pi 的 label → 目标消息（目标是结构条目时落到最近的消息上）
    active_ends(tree)        每个会话文件一个活动端：第一个落在主线消息上的线索；一个都不中就取最新的非子代理叶子

关键洞察：先接线，再丢弃——结构条目被“跳过”而不是把链剪断，否则会出现假根、整段对话被剪掉。

保证：不递归（几千层的链照样走完）；每一步对条目数是线性的（排序的那步是 n log n）：compact_boundary 会不会
成环用并查集判断（不再每次沿链走到根），流式分段合并时只过滤新来的块，拉直假分叉是一次分组加一次排序；
除了合并流式分段和写上 label，只改父子关系，不改消息；人为改坏的环、缺失的父条目都会变成警告，
而不是死循环或丢消息。本模块不看格式名：格式表把步骤交给它。
"""

from __future__ import annotations

import re
from collections import deque
from typing import Callable, Dict, Iterable, List, Optional, TypeVar

from . import usage
from .transcript import Entry, Transcript, line_list, plain_text

__all__ = ["repair", "follow_compact_boundaries", "bridge_gaps", "chain_loose_roots", "Tree", "merge_streams", "split_sidechains",
           "linearise", "spawner", "spawn_links", "apply_labels", "active_ends", "level_order"]

Item = TypeVar("Item")
_TEAMMATE = re.compile(r'<teammate-message(?:\s+[\w-]+="[^"]*")*\s*>')


def level_order(roots: Iterable[Item], children: Callable[[Item], Iterable[Item]]) -> List[Item]:
    """广度优先：根在前，父在子前（[根, 它的孩子们, 孙子们…]）。显式队列，不递归。"""
    order, queue = [], deque(roots)
    while queue:
        item = queue.popleft()
        order.append(item)
        queue.extend(children(item))
    return order


# ── 修复：缺父、环、compact_boundary、空父 ─────────────────────────────────────────────────
def repair(t: Transcript, format_repairs: Iterable[Callable[[Transcript, set], None]] = ()) -> None:
    """缺父条目的成为根，断开文件里本来就有的环，再做格式自己的修复（每一步拿到 t 和孤儿的 uid），最后再查一次环。"""
    orphans = [e for e in t.order if e.parent is not None and e.parent not in t.entries]
    missing = t.state.setdefault("missing_parents", {})
    for entry in orphans:
        missing[entry.uid] = entry.parent   # bridge_gaps 用：缺的是哪一条
        entry.parent = None
    if orphans:
        t.warnings.append(f"{len(orphans)} 个条目的父条目不在文件里，已作为新的根（第 "
                          f"{_lines(orphans)} 行）")
    orphan_ids = {e.uid for e in orphans}
    _break_cycles(t)
    for step in format_repairs:
        step(t, orphan_ids)
    if format_repairs:   # 修复步骤改过父指针才需要再查（没有修复步骤时第二遍什么也找不到）
        _break_cycles(t)


def _lines(entries: List[Entry]) -> str:
    return line_list([f"{e.label_file}{e.line}" for e in entries[:9]])


class _Components:
    """并查集：同一棵树里的条目在同一个集合里。把一个根接到某条目下面之前，先问它俩是否已在同一棵树里——
    在的话，这条边会成环。每次问答几乎是常数时间（路径压缩），所以一万个 compact_boundary 也只是线性的。"""

    def __init__(self, t: Transcript):
        self.up: Dict[str, str] = {}
        for entry in t.order:
            if entry.parent is not None:
                self.join(entry.uid, entry.parent)

    def find(self, uid: str) -> str:
        root = uid
        while self.up.get(root, root) != root:
            root = self.up[root]
        while uid != root:   # 路径压缩：下次直接跳到根
            self.up[uid], uid = root, self.up.get(uid, uid)
        return root

    def join(self, a: str, b: str) -> None:
        first, second = self.find(a), self.find(b)
        if first != second:
            self.up[first] = second


def follow_compact_boundaries(t: Transcript, orphans: set) -> None:
    """/compact 之后的 compact_boundary 没有 parentUuid，只有 logicalParentUuid：接上它，一个会话还是一棵树。"""
    trees = _Components(t)
    previous: Optional[Entry] = None
    for entry in t.order:
        if entry.logical and entry.parent is None:
            target = entry.logical if entry.logical in t.entries else None
            if target and trees.find(target) != trees.find(entry.uid):
                entry.parent = target
            else:
                fallback = previous.uid if previous and trees.find(previous.uid) != trees.find(entry.uid) else None
                entry.parent = fallback
                reason = "不在文件里" if target is None else "会形成环"
                t.warnings.append(f"第 {entry.label_file}{entry.line} 行 compact_boundary 的 logicalParentUuid "
                                  f"{reason}，改接到文件里的上一条消息")
            if entry.parent is not None:
                trees.join(entry.uid, entry.parent)
        if entry.kind == "message" and not entry.sidechain:
            previous = entry


def bridge_gaps(t: Transcript, orphans: set) -> None:
    """记录缺了几行（父条目不在文件里），但同一个文件（子代理文件按它自己）里更早已经有消息：接回文件里的上一条
    消息，一个会话还是一棵树——中途换了 sessionId（续接）也一样；缺口处插一条提示消息（notice "gap"），浏览器
    和导出里看得见“这里缺了记录”。文件的第一条就缺父（从已经删掉的文件续接来的）仍然是根。"""
    missing = t.state.get("missing_parents", {})
    previous: Dict[tuple, Entry] = {}
    bridged: List[Entry] = []
    for entry in list(t.order):
        key = (entry.home, entry.label_file, entry.sidechain, entry.agent)
        if entry.uid in orphans and key in previous:
            _insert_gap(t, entry, previous[key], missing.get(entry.uid))
            bridged.append(entry)
        if entry.kind == "message":
            previous[key] = entry
    if bridged:
        orphans -= {entry.uid for entry in bridged}
        t.warnings.append(f"其中 {len(bridged)} 处缺口之前同一文件里还有消息：已接回上一条消息（第 {_lines(bridged)} 行），"
                          f"缺口处插了一条提示")


def _insert_gap(t: Transcript, entry: Entry, before: Entry, missing: Optional[str]) -> None:
    gap = Entry(f"gap-{entry.uid}", before.uid, entry.line, "message",
                {"role": "system", "notice": "gap", "content": [{"type": "text", "text":
                 f"（这里缺了记录：下一条的父条目 {str(missing or '?')[:60]} 不在文件里，按文件顺序接在上一条消息后面）"}]},
                entry.session, entry.sidechain)
    gap.seq = gap.last_seq = entry.seq
    gap.home, gap.label_file, gap.agent = entry.home, entry.label_file, entry.agent
    gap.message["id"] = gap.uid
    if entry.sidechain:
        gap.message["subagent"] = True
    t.entries[gap.uid] = gap
    t.order.append(gap)
    entry.parent = gap.uid


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


def _break_cycles(t: Transcript) -> None:
    """手工改坏的文件里可能有 parentUuid 环：环里文件位置最靠后的条目断开，成为根。每个条目只走一次。"""
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
            t.warnings.append(f"第 {victim.label_file}{victim.line} 行处的父子关系形成了环（{len(cycle)} 个条目），"
                              f"已在这里断开")
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
    """一次回复按内容块分几行写出（Claude 的 message.id 相同；Codex 的推理 + 工具调用 + 回答）：合回一条消息。"""
    entries = tree.t.entries
    first_blocks: Dict[str, list] = {}   # 合并过的消息 → 它原来的第一个块（全是空白时留下它）
    for uid in tree.top_down():
        entry, parent = entries[uid], tree.parent[uid]
        if parent is None or entry.stream is None:
            continue
        group = entries[tree.head.get(parent, parent)]
        if group.stream == entry.stream and group.sidechain == entry.sidechain:
            _absorb(group, entry, first_blocks)
            tree.head[uid] = group.uid
    for uid, first in first_blocks.items():
        if not entries[uid].message["content"]:
            entries[uid].message["content"] = first
    if tree.head:
        for uid in tree.head:
            del tree.parent[uid]
        for uid, parent in tree.parent.items():
            tree.parent[uid] = tree.head.get(parent, parent) if parent else None
        tree.children = tree._children()


def _blocks(content) -> list:
    if isinstance(content, list):
        return content
    return [] if content is None else [{"type": "text", "text": content}]


def _visible(blocks: list) -> list:
    """流式开头常有一个只含换行的 text 块：它是录制的痕迹，不是回复的内容。"""
    return [b for b in blocks if b.get("type") != "text" or str(b.get("text", "")).strip()]


def _absorb(group: Entry, part: Entry, first_blocks: Dict[str, list]) -> None:
    """把一个分段并进它的消息：只过滤新来的块（以前每来一段就把越来越长的整条内容重新过滤一遍，是二次方的）。"""
    message = group.message
    if group.uid not in first_blocks:
        blocks = _blocks(message["content"])
        first_blocks[group.uid] = blocks[:1]
        message["content"] = _visible(blocks)
    message["content"].extend(_visible(_blocks(part.message["content"])))
    usage.add(message, part.message.get("usage"), part.message.get("duration_ms"))   # 每次调用只记了一次：相加
    if part.message.get("interrupted"):
        message["interrupted"] = part.message["interrupted"]
    group.last_seq = max(group.last_seq, part.seq)


def linearise(tree: Tree) -> None:
    """不是用户输入的消息（工具结果、钩子行旁的回复、重试）不开分支：每条消息归到最近的用户输入（或根）那一组，
    有分叉的组按文件顺序串成一条线；用户输入的每一句仍挂在原来的父消息下——只有它们能开出真正的分支。

    一次广度优先分组，再对每个需要拉直的组排一次序：n log n。以前每插入一个孩子就排一次序、沿链往下找末端，
    一个父消息下有几千个工具结果时是二次方的。"""
    entries = tree.t.entries
    group_of: Dict[str, str] = {}
    members: Dict[str, List[str]] = {}
    for uid in tree.top_down():
        parent = tree.parent[uid]
        head = uid if parent is None or entries[uid].prompt else group_of[parent]
        group_of[uid] = head
        members.setdefault(head, []).append(uid)
    tangled = {group_of[uid] for uid, kids in tree.children.items()
               if sum(1 for kid in kids if not entries[kid].prompt) > 1}
    for head in tangled:
        line = [head] + sorted(members[head][1:], key=lambda uid: entries[uid].seq)
        for previous, current in zip(line, line[1:]):
            tree.parent[current] = previous
    if tangled:
        tree.children = tree._children()


# ── 子代理、标签、活动端 ──────────────────────────────────────────────────────────────────────
def split_sidechains(tree: Tree) -> None:
    """子代理的消息（isSidechain）绝不拼进主线：每段子代理链的开头单独记下，稍后挂到启动它的节点下。"""
    entries = tree.t.entries
    moved = False
    for uid, parent in list(tree.parent.items()):
        if not entries[uid].sidechain or (parent is not None and entries[parent].sidechain):
            continue
        if parent is not None:
            tree.parent[uid] = None
            moved = True
        tree.sub_roots.append(uid)
        tree.spawn_hint[uid] = parent
    if moved:
        tree.children = tree._children()


def spawner(tree: Tree, root: str) -> Optional[str]:
    """启动这段子代理的消息，按可信程度依次试：它在主线上的父消息；toolUseResult.agentId 对上的那次调用；
    meta.json 的 toolUseId（或 agent_progress 的 parentToolUseID）；Workflow 的 runId；工具结果末尾的
    “agentId: …”；最后是 Task 的 prompt 与子代理的第一句相同（teammate 的包装先去掉）。"""
    if tree.spawn_hint.get(root):
        return tree.spawn_hint[root]
    for result, call in spawn_links(tree.t, tree.t.entries[root]):
        found = tree.message_of(tree.t.tool_calls.get(call or "")) or tree.message_of(result)
        if found:
            return found
    return _by_time(tree, root)


def _by_time(tree: Tree, root: str) -> Optional[str]:
    """没有任何 id 把子代理和启动它的调用连起来（旧版的 Task 调用没写 agentId）：找同一会话文件里、时间上在子代理
    第一条消息之前的最后一次 Task / Agent 调用；没有时间或没有这样的调用，就挂在这个会话主干的第一条消息下
    （列在会话下面，而不是自成一棵树）。"""
    t = tree.t
    entry = t.entries[root]
    started = str((entry.message or {}).get("timestamp") or "")
    best, best_time, best_call = None, "", ""
    for call in t.task_titles.keys() | {call for _, call in t.task_prompts.values()}:
        holder = t.entries.get(t.tool_calls.get(call, ""))
        if holder is None or holder.sidechain or holder.home != entry.home or holder.message is None:
            continue
        stamp = str(holder.message.get("timestamp") or "")
        if (not started or not stamp or stamp <= started) and (best is None or stamp >= best_time):
            best, best_time, best_call = holder.uid, stamp, call
    found = tree.message_of(best) if best else None
    if found is not None and best_call in t.task_titles:   # 子代理的标题用这次调用的描述
        t.agents.setdefault(entry.agent or "", {}).setdefault("title", t.task_titles[best_call])
    if found is None:
        trunk = [uid for uid in tree.roots() if uid not in tree.sub_roots and not t.entries[uid].sidechain
                 and t.entries[uid].home == entry.home]
        found = trunk[0] if trunk else None
    if found is not None:
        t.warnings.append(f"子代理 {entry.agent or root}（{entry.label_file.strip() or '主文件'}）没有 id 连到启动它的调用："
                          f"按时间挂在 {'最近的一次 Task 调用' if best else '会话的开头'} 下")
    return found


def spawn_links(t: Transcript, entry: Entry) -> List[tuple]:
    """(工具结果消息, tool_use id) 的候选，先试的在前（见 spawner）。"""
    agent = entry.agent or ""
    info = t.agents.get(agent, {})
    links = [t.spawned.get(agent), (None, info.get("tool_use")), t.runs.get(info.get("run") or ""),
             t.state.get("tails", {}).get(agent)]
    text = _unwrapped_prompt(plain_text(entry.message))
    links.append(t.task_prompts.get(text) if text else None)
    return [link for link in links if link and (link[0] or link[1])]


def _unwrapped_prompt(text: str) -> str:
    """teammate 收到的第一句包在 <teammate-message …>…</teammate-message> 里：去掉包装再比。"""
    text = text.strip()
    opening = _TEAMMATE.match(text)
    if opening and text.endswith("</teammate-message>"):
        text = text[opening.end():-len("</teammate-message>")].strip()
    return text[:4000]


def apply_labels(t: Transcript, tree: Tree) -> None:
    """Pi 的 label 条目 → 目标消息的 label（目标是结构条目时落到最近的消息上）。"""
    for target, label in t.labels.items():
        found = tree.message_of(target)
        if found:
            t.entries[found].message["label"] = label


def active_ends(tree: Tree, hints: Callable[[Transcript, str], List[str]]) -> Dict[str, Optional[str]]:
    """每个会话文件的对话现在停在哪条消息：hints（格式给出的线索，先试的在前）里第一个落在主线消息上的；
    一个都不中就取这个文件里最新的非子代理叶子；这个文件的消息都有了后续（别的文件从它末尾接着聊）时，
    取它自己最新的那条消息。整份记录都是子代理（单独导入的子代理文件）时取最新的叶子。"""
    t = tree.t
    newest_leaf: Dict[str, str] = {}
    newest: Dict[str, str] = {}
    any_leaf: Optional[str] = None
    for uid in tree.parent:
        entry = t.entries[uid]
        leaf = not tree.children.get(uid)
        if leaf and (any_leaf is None or entry.last_seq > t.entries[any_leaf].last_seq):
            any_leaf = uid
        if entry.sidechain:
            continue
        for table, wanted in ((newest, True), (newest_leaf, leaf)):
            if wanted and (entry.home not in table or entry.last_seq > t.entries[table[entry.home]].last_seq):
                table[entry.home] = uid
    ends: Dict[str, Optional[str]] = {}
    for home in t.files or [t.file]:
        found = next((uid for uid in map(tree.message_of, hints(t, home))
                      if uid and not t.entries[uid].sidechain), None)
        ends[home] = found or newest_leaf.get(home) or newest.get(home)
    if not newest and any_leaf:
        ends[t.files[0] if t.files else t.file] = any_leaf
    return ends
