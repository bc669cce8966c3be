"""continuation.py — 读者在导入的节点上续写过，Agent 又接着写了：Agent 的新对话放进它的一个子节点，两边都不丢

    导入时                 读者在页面上续写            Agent 又写了 2 轮，再导入
    [A] 1..8 (导入 8 条)   [A] 1..8 + 读者 9..10      [A] 1..8 + 读者 9..10          ← 原样保留，一个字节不改
                                                       └─ [A′] 1..8 + Agent 9..12     ← 自第 8 条分叉（A′ 的 ID 由 A 定）

Key insight: 两边从“导入时的那 N 条”之后才分开，这正是会话树的分叉：不必合并、不必挑一边，
把 Agent 的版本当作从第 N 条长出来的分支就行。以后 Agent 再写，A′ 照常更新；读者又在 A′ 上续写，就再长出 A″。

保证：续写过的节点从不被覆盖；Agent 的新消息只落进由续写节点的 ID 决定的子节点（同样的记录再导入得到同一个 ID）；
两边的前 N 条对不上（Agent 那边回退、改写了历史）时不猜，返回 None，由调用方照旧保留并写明。
本模块只用 store 的公开 API（load）。
"""

from __future__ import annotations

import hashlib
from typing import Optional, Tuple

from s11_session import SessionNode, SessionStore

MAX_CONTINUATIONS = 64   # 一个节点最多接几层“Agent 接着写的”（每层都要读者在上一层续写过，实际只有一两层）
TITLE_SUFFIX = " · Agent 接着写的"


def continuation_id(session_id: str) -> str:
    """续写过的节点 -> 装 Agent 新对话的子节点的 ID（只由它决定）：'a1b2…' -> 12 位十六进制。"""
    return hashlib.sha256(f"continued\x00{session_id}".encode()).hexdigest()[:12]


def imported_count(node: SessionNode) -> Optional[int]:
    """节点导入时有几条消息（source.imported_messages）；不是导入的节点为 None。"""
    source = node.source if isinstance(node.source, dict) else {}
    count = source.get("imported_messages")
    return count if type(count) is int and 0 <= count <= len(node.messages) else None


def land(store: SessionStore, kept: SessionNode, fresh: SessionNode) -> Optional[Tuple[SessionNode, Optional[bool]]]:
    """kept 是仓库里续写过的节点，fresh 是这次从记录读出的同一节点。Agent 有新消息时 ->
    (要落下的子节点, 它是不是仓库里已有的：True 更新 / False 新建 / None 已经一样、不必写)；没有新消息或对不上 -> None。"""
    current = kept
    for _ in range(MAX_CONTINUATIONS):
        count = imported_count(current)
        if count is None or count >= len(fresh.messages) or current.messages[:count] != fresh.messages[:count]:
            return None
        child = _child_of(current, fresh, count)
        existing = store.load(child.session_id)
        if existing is None:
            return child, False
        if imported_count(existing) == len(existing.messages):   # 读者没在它上面续写过：照常更新
            if (existing.messages, existing.title, existing.source) == (child.messages, child.title, child.source):
                return existing, None
            existing.messages, existing.title, existing.source = child.messages, child.title, child.source
            return existing, True
        current = existing   # 读者在 A′ 上也续写过：再往下接一层
    return None


def _child_of(parent: SessionNode, fresh: SessionNode, count: int) -> SessionNode:
    source = dict(fresh.source) if isinstance(fresh.source, dict) else {}
    source["imported_messages"] = len(fresh.messages)
    source["continues"] = parent.session_id   # 它装的是 parent 续写之后 Agent 写的对话
    title = parent.title if parent.title.endswith(TITLE_SUFFIX) else parent.title + TITLE_SUFFIX
    return SessionNode(session_id=continuation_id(parent.session_id), title=title, parent_id=parent.session_id,
                       messages=fresh.messages, created_at=fresh.created_at, fork_point=count, source=source)
