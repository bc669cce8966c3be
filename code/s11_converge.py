"""s11_converge.py — 分叉 + 收敛：对比同一棵树上的两个节点，把它们收敛成一个记下决定的新节点；给消息加标签

    compare(A, B)                                     converge(B, [A], "采用方案 B，LRU 上限也留着", carry=[(A, 6)])
    ┌ ancestor: 主会话（最近的共同祖先）                   主会话 ─┬─ 分支 A ┄┄┄┄┄┄┄┐（虚线：converged_from）
    │ common: 5（开头 5 条两边相同）                             └─ 分支 B ── 🔀 收敛（B 的 9 条 + A 的第 6 条
    │ only_a: A 的第 6–7 条   only_b: B 的第 6–9 条                              + 一条 user 的决定）
    └ workspace_a / workspace_b：两边保存时的代码快照       分支 A 的文件一个字节不变；“已收敛到 …”是从收敛节点推出来的

收敛节点 = 一个普通的子节点（parent_id = 选定的节点，fork_point = 它的消息条数），另外：
  * 带过来的消息是原消息的副本，多一个键 "origin": {"session_id": 来源, "index": 它在来源里是第几条（1 起）}；
  * 最后一条是读者写的决定：{"role": "user", "content": 决定, "converge": {"chosen": {id, title},
    "others": [{id, title}, …]}}，页面和导出把它显示成“🔀 收敛”；
  * 节点本身记下 converged_from = 其他分支的 ID（文件写成 version 5，见 s11_format）。

关键洞察：对话的“合并”不是文本的三方合并，而是一个看得见的节点——选了哪一支、为什么、哪几条是从别处带来的，
全写在这个新节点里；被收敛的分支一个字节都不改，随时还能回去接着走。

保证：输入不对（ID 不存在、不在同一棵树、选定的节点也在“其他”里、决定为空、带过来的第几条超出范围）抛中文的
SessionError，什么都不写；收敛节点只用一次 save() 写下（全有或全无、新 ID 永不冲突）；revisions 给出时，
对比之后有人保存过其中任何一个节点就 ConflictError——不在过期的对比上做决定（和 save() 一样不丢任何一轮）。
标签（set_label）是消息自己的键 "label"，改的是这一个节点，用读入时的修订号保存，过期同样 ConflictError。
限制：核对修订号与写下收敛节点之间没有跨文件的锁（别人恰好在这一瞬间保存，收敛节点仍基于它读到的那一版，
那一版也仍完整地留在收敛节点里）；同一棵树 = 沿 parent_id 走到同一个祖先（父节点已删除的分支自成一棵树）。
本模块只依赖标准库和 s11_format / s11_tree / s11_export / s11_workspace / s11_text。
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

import s11_export
import s11_journal  # 📜 收敛、标签各记一行日志
import s11_workspace
from s11_format import (
    MAX_CONVERGED,
    ConflictError,
    InvalidMessage,
    SessionError,
    SessionNotFound,
    validate_session_id,
)
from s11_text import printable, shorten

__all__ = ["compare", "converge", "set_label", "check_converged_from", "tool_call_count", "parse_carry",
           "MAX_DECISION_CHARS", "MAX_LABEL_CHARS", "CONVERGE_TITLE"]

MAX_DECISION_CHARS = 20_000   # 决定写多长都行，但一条消息总得有个上限
MAX_LABEL_CHARS = 80
MAX_CARRY = 200               # 一次最多带过来多少条消息
CONVERGE_TITLE = "🔀 收敛"     # 默认标题：“🔀 收敛：<决定的前 DECISION_TITLE_CHARS 个字>”
DECISION_TITLE_CHARS = 60


# ── ⚖️ 对比 ───────────────────────────────────────────────────────────────────────────────────
def compare(store: Any, a_id: str, b_id: str) -> Dict[str, Any]:
    """两个节点 -> {"ancestor", "common", "only_a", "only_b", "workspace_a", "workspace_b", …}。

    ancestor 是最近的共同祖先的 ID（可能就是 A 或 B 本身），不在同一棵树上为 None；common 是两边开头相同的
    消息条数（不超过它们从共同祖先继承的条数）；only_a / only_b 是之后各自的消息。另有 relation、note（一句中文）、
    revision_a / revision_b（converge 的 revisions 用）、title_a / title_b、workspace_diff（两份快照都有时
    文件级的差异，每项一行中文；否则 None）、shared（相同的那 common 条）。"""
    a, b = _load(store, a_id, "A"), _load(store, b_id, "B")
    if a.session_id == b.session_id:
        raise SessionError(f"A 和 B 是同一个会话 {a.session_id}：请选两个不同的节点来对比")
    chain_a, chain_b = store.lineage(a.session_id), store.lineage(b.session_id)
    ancestor = _nearest_common(chain_a, chain_b)
    if ancestor is None:
        common = 0
        relation, note = "unrelated", (f"两个会话不在同一棵树上：{_named(a)} 与 {_named(b)} 没有共同的祖先，"
                                       f"也就没有共享的历史；下面是两边的全部消息")
    else:
        bound = min(_inherited_from(chain_a, ancestor, len(a.messages)),
                    _inherited_from(chain_b, ancestor, len(b.messages)))
        common = _same_prefix(a.messages, b.messages, bound)
        relation, note = _relation(a, b, ancestor, chain_a, common)
    workspace_diff = (s11_workspace.compare(a.workspace, b.workspace)
                      if a.workspace is not None and b.workspace is not None else None)
    return {"a_id": a.session_id, "b_id": b.session_id, "title_a": a.title, "title_b": b.title,
            "revision_a": a.revision, "revision_b": b.revision,
            "ancestor": ancestor, "relation": relation, "note": note, "common": common,
            "shared": a.messages[:common], "only_a": a.messages[common:], "only_b": b.messages[common:],
            "workspace_a": a.workspace, "workspace_b": b.workspace, "workspace_diff": workspace_diff}


def _nearest_common(chain_a: List[Dict[str, Any]], chain_b: List[Dict[str, Any]]) -> Optional[str]:
    """两条“根 → 节点”的摘要链里最深的公共节点。"""
    in_b = {summary["session_id"] for summary in chain_b}
    return next((s["session_id"] for s in reversed(chain_a) if s["session_id"] in in_b), None)


def _inherited_from(chain: List[Dict[str, Any]], ancestor: str, own_count: int) -> int:
    """节点的前几条消息一路继承自 ancestor：沿祖先链往下取各段分叉点的最小值（节点就是 ancestor 时是它的条数）。"""
    ids = [summary["session_id"] for summary in chain]
    start = ids.index(ancestor)
    bound = chain[start]["message_count"] if start < len(chain) - 1 else own_count
    for summary in chain[start + 1:]:
        fork = summary.get("fork_point")
        bound = min(bound, fork if isinstance(fork, int) else 0)
    return bound


def _same_prefix(first: List[Any], second: List[Any], bound: int) -> int:
    count = 0
    for left, right in zip(first[:bound], second[:bound]):
        if left != right:
            break
        count += 1
    return count


def _relation(a: Any, b: Any, ancestor: str, chain_a: List[Dict[str, Any]], common: int) -> Tuple[str, str]:
    if ancestor == a.session_id:
        return "a_ancestor", f"A {_named(a)} 是 B {_named(b)} 的祖先：B 在前 {common} 条之后接着走"
    if ancestor == b.session_id:
        return "b_ancestor", f"B {_named(b)} 是 A {_named(a)} 的祖先：A 在前 {common} 条之后接着走"
    if a.parent_id == b.parent_id == ancestor:
        return "siblings", f"A 与 B 是兄弟分支：都从 [{ancestor}] 分叉，前 {common} 条相同"
    title = next((s["title"] for s in chain_a if s["session_id"] == ancestor), "")
    return "cousins", (f"A 与 B 最近的共同祖先是 {shorten(printable(title), 40)} [{ancestor}]，"
                       f"前 {common} 条相同")


def _named(node: Any) -> str:
    return f"{shorten(printable(node.title), 40)} [{node.session_id}]"


def tool_call_count(messages: Iterable[Any]) -> int:
    """几条消息里一共有几次工具调用（内容块里的 tool_use / toolCall 等，和导出的“🔧 调用工具”同一种算法）。"""
    return sum(1 for message in messages if isinstance(message, dict)
               for part in s11_export.message_parts(message) if part.kind == "tool_call")


# ── 🔀 收敛 ───────────────────────────────────────────────────────────────────────────────────
def converge(store: Any, chosen_id: str, other_ids: Any, decision: Any, *, carry: Any = (),
             title: Optional[str] = None, revisions: Optional[Dict[str, int]] = None) -> Any:
    """在 chosen_id 下新建收敛节点并保存，返回它（SessionNode）。先检查全部输入，出错时什么都没写。"""
    chosen = _load(store, chosen_id, "选定的")
    others = _others(store, chosen, other_ids)
    text = _decision_text(decision)
    _check_same_tree(store, chosen, others)
    _check_revisions(revisions, [chosen, *others])
    carried = _carried(parse_carry(carry), {node.session_id: node for node in others}, chosen)
    # 默认标题就是决定本身（会话树、列表、分支图里一眼看到“定了什么”），不是选定分支的旧标题
    name = " ".join(str(title).split()) if title is not None and str(title).strip() else \
        f"{CONVERGE_TITLE}：{shorten(printable(text), DECISION_TITLE_CHARS)}"
    if len(name) > 200:
        raise InvalidMessage("收敛节点的标题最多 200 字符")
    record = {"chosen": {"session_id": chosen.session_id, "title": chosen.title},
              "others": [{"session_id": node.session_id, "title": node.title} for node in others]}
    messages = list(chosen.messages) + carried + [{"role": "user", "content": text, "converge": record}]
    node = type(chosen)(title=name, parent_id=chosen.session_id, messages=messages,
                        fork_point=len(chosen.messages), workspace=chosen.workspace,
                        converged_from=[node.session_id for node in others])
    with s11_journal.operation(store, "converge", chosen=chosen.session_id, others=node.converged_from):   # 📜
        store.save(node)   # 新 ID、修订 0：和 fork 一样不会与别人冲突；一次原子写入
    return node


def _load(store: Any, session_id: Any, role: str) -> Any:
    try:
        validate_session_id(session_id)
    except SessionError as exc:
        raise SessionError(f"{role}会话 ID 不对：{exc}") from None
    node = store.load(session_id)
    if node is None:
        raise SessionNotFound(f"未找到{role}会话：{session_id}")
    return node


def _others(store: Any, chosen: Any, other_ids: Any) -> List[Any]:
    if isinstance(other_ids, str):
        other_ids = [other_ids]
    try:
        ids = list(other_ids or [])
    except TypeError:
        raise SessionError("other_ids 必须是会话 ID 的列表") from None
    if not ids:
        raise SessionError("至少要有一个被收敛的其他分支（other_ids 为空）")
    if len(ids) > MAX_CONVERGED:
        raise SessionError(f"一次最多收敛 {MAX_CONVERGED} 个分支，收到 {len(ids)} 个")
    if chosen.session_id in ids:
        raise SessionError(f"选定的会话 {chosen.session_id} 也出现在被收敛的分支里：它是胜出的一支，不能收敛进自己")
    duplicated = sorted({sid for sid in ids if ids.count(sid) > 1}, key=str)
    if duplicated:
        raise SessionError(f"被收敛的分支重复了：{printable(', '.join(map(str, duplicated)))[:200]}")
    return [_load(store, sid, "被收敛的") for sid in ids]


def _decision_text(decision: Any) -> str:
    if not isinstance(decision, str) or not decision.strip():
        raise InvalidMessage("决定不能为空：写一句为什么选这一支（它会作为一条 user 消息留在收敛节点里）")
    if len(decision) > MAX_DECISION_CHARS:
        raise InvalidMessage(f"决定最多 {MAX_DECISION_CHARS:,} 字符，这条有 {len(decision):,} 字符")
    return decision


def _root(store: Any, node: Any) -> str:
    chain = store.lineage(node.session_id)
    return chain[0]["session_id"] if chain else node.session_id


def _check_same_tree(store: Any, chosen: Any, others: List[Any]) -> None:
    root = _root(store, chosen)
    for node in others:
        if _root(store, node) != root:
            raise SessionError(f"会话 {node.session_id} 与选定的 {chosen.session_id} 不在同一棵树上"
                               f"（根分别是 {_root(store, node)} 和 {root}），不能收敛")


def _check_revisions(revisions: Optional[Dict[str, int]], nodes: List[Any]) -> None:
    if revisions is None:
        return
    if not isinstance(revisions, dict):
        raise SessionError("revisions 必须是 {会话 ID: 修订号} 字典")
    for node in nodes:
        seen = revisions.get(node.session_id)
        if seen is not None and seen != node.revision:
            raise ConflictError(f"会话 {node.session_id} 在你对比（修订 {seen}）之后已被保存为修订 {node.revision}；"
                                f"请重新对比再收敛，否则决定是基于过期的内容做的")


def parse_carry(carry: Any) -> List[Tuple[str, int]]:
    """carry -> [(会话 ID, 第几条)]：接受 (ID, k) 对，或命令行的 "ID:K" 字符串。"""
    if carry is None:
        return []
    if isinstance(carry, str) or (isinstance(carry, tuple) and len(carry) == 2 and isinstance(carry[0], str)
                                  and isinstance(carry[1], int)):
        carry = [carry]   # 只给了一条
    pairs = []
    for item in carry:
        if isinstance(item, str):
            sid, sep, number = item.rpartition(":")
            if not sep or not sid:
                raise SessionError(f"带过来的消息要写成 ID:K（第 K 条，1 起），收到 {printable(item)[:80]}")
            try:
                item = (sid, int(number))
            except ValueError:
                raise SessionError(f"带过来的消息 {printable(item)[:80]}：K 必须是整数") from None
        if not isinstance(item, (tuple, list)) or len(item) != 2:
            raise SessionError(f"带过来的消息要写成 (会话 ID, 第几条)，收到 {printable(repr(item))[:80]}")
        sid, number = item
        if isinstance(number, bool) or not isinstance(number, int):
            raise SessionError(f"带过来的消息 {printable(repr(item))[:80]}：第几条必须是整数")
        pairs.append((sid, number))
    if len(pairs) > MAX_CARRY:
        raise SessionError(f"一次最多带过来 {MAX_CARRY} 条消息，收到 {len(pairs)} 条")
    return pairs


def _carried(pairs: List[Tuple[str, int]], others: Dict[str, Any], chosen: Any) -> List[Dict[str, Any]]:
    """按给出的顺序复制要带过来的消息，每条加上 origin。只能从被收敛的分支带，不能重复，不能超出范围。"""
    copies, seen = [], set()
    for sid, number in pairs:
        source = others.get(sid)
        if source is None:
            where = "选定的会话自己" if sid == chosen.session_id else f"{printable(str(sid))[:64]}"
            raise SessionError(f"只能从被收敛的分支带消息过来：{where} 不在被收敛的分支里")
        if not 1 <= number <= len(source.messages):
            raise SessionError(f"会话 {sid} 只有 {len(source.messages)} 条消息，没有第 {number} 条")
        if (sid, number) in seen:
            raise SessionError(f"会话 {sid} 的第 {number} 条带了两次")
        seen.add((sid, number))
        message = source.messages[number - 1]
        copy = dict(message) if isinstance(message, dict) else {"role": "user", "content": message}
        copy["origin"] = {"session_id": sid, "index": number}
        copies.append(copy)
    return copies


def check_converged_from(node: Any) -> None:
    """保存前检查节点的 converged_from：会话 ID 的列表，互不重复，不含自己和父节点，最多 MAX_CONVERGED 个。"""
    value = getattr(node, "converged_from", None)
    if not value:
        return
    where = f"会话 {node.session_id}：converged_from"
    if not isinstance(value, list):
        raise InvalidMessage(f"{where} 必须是会话 ID 的列表")
    if len(value) > MAX_CONVERGED or len(set(map(str, value))) != len(value):
        raise InvalidMessage(f"{where} 最多 {MAX_CONVERGED} 个、互不重复的 ID")
    for sid in value:
        validate_session_id(sid)
        if sid in (node.session_id, node.parent_id):
            raise InvalidMessage(f"{where} 不能包含节点自己或它的父节点 {sid}")


# ── 🏷️ 标签 ───────────────────────────────────────────────────────────────────────────────────
def set_label(store: Any, session_id: str, number: Any, text: Any, *, revision: Optional[int] = None) -> Any:
    """第 number 条消息（1 起）的标签改成 text（去掉首尾空白；空串 = 去掉标签），保存并返回节点。"""
    node = _load(store, session_id, "")
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(node.messages):
        raise SessionError(f"会话 {node.session_id} 只有 {len(node.messages)} 条消息，没有第 {printable(repr(number))[:20]} 条")
    if not isinstance(text, str):
        raise InvalidMessage("标签必须是文字")
    label = " ".join(text.split())
    if len(label) > MAX_LABEL_CHARS:
        raise InvalidMessage(f"标签最多 {MAX_LABEL_CHARS} 字符，这个有 {len(label)} 字符")
    if revision is not None:
        node.revision = revision   # 用读者看到的修订号保存：别人先存过就 ConflictError
    message = node.messages[number - 1]
    message = dict(message) if isinstance(message, dict) else {"role": "user", "content": message}
    if label:
        message["label"] = label
    else:
        message.pop("label", None)
    node.messages[number - 1] = message   # 换成新对象：与父节点共用的那个消息对象不受影响
    with s11_journal.operation(store, "label", number=number):   # 📜 日志里一行 label
        store.save(node)
    return node
