"""s11_tree.py — 从会话摘要算出会话树：一个遍历，命令行、8.11 标签页和会话树浏览器共用

    list_sessions() 的摘要 ──► Forest(summaries)        by_id、kids（按创建先后）、roots
                                 │
                                 ├─ walk(forest, root)   先序遍历，显式栈：Step(节点, 深度, 是否最后一个孩子)
                                 └─ branch_prefixes()    Step → '│   ├── ' 这样的前缀（两种画法，缩进有上限）

    修复登录服务内存泄漏 [5d38f60f4c00] 5 条
    ├── 修复登录服务内存泄漏 · 分支 [4d67e2e6b66c] 7 条（自第 5 条分叉，+2：方案 A…）
    └── 修复登录服务内存泄漏 · 分支 [0994dd416b46] 9 条（自第 5 条分叉，+4：方案 B…）
        └── 🔀 收敛 [c0ffee000001] 11 条（自第 9 条分叉，+2：…） ⇠┄ 收敛了 [4d67e2e6b66c]

收敛节点（摘要里有 converged_from）画成父节点下的普通孩子，再用虚线记号“⇠┄ 收敛了 […]”指向被收敛的分支；
被收敛的分支行尾标“已收敛到 […]”——这只是从收敛节点推出来的，被收敛的分支文件从不改写。

关键洞察：树只存在于 parent_id 里；把“找孩子、走一遍、画前缀”各写一次，三个页面画出的是同一棵树。

保证：父节点已删除（或读不了）的分支自成一棵树；人为改坏的 parent_id 环不会让遍历停不下来；
几千层的分叉链不爆递归，缩进最多 MAX_INDENT 层（更深的节点在行首标出层数），所以每行的长度有上限。
本模块只依赖标准库和 s11_text。
"""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, NamedTuple, Optional

from s11_text import printable, shorten

__all__ = ["Forest", "Step", "walk", "branch_prefixes", "root_of", "creation_order", "CLI_STYLE", "PAGE_STYLE",
           "MAX_INDENT", "render_text", "describe", "first_added", "content_text", "message_labels",
           "converged_into", "own_labels", "marks_text", "SUMMARY_KEYS", "summary_of", "summary_from"]

MAX_INDENT = 16        # 最多缩进几层；更深的节点标出层数，不再加宽
MAX_TITLE_SHOWN = 60   # 文字树里一个标题最多显示几个字
FIRST_ADDED_CHARS = 24


def creation_order(summary: Dict[str, Any]) -> tuple:
    """摘要的创建先后：created_at 只精确到秒，同一秒里的靠 created_ns，再靠 ID 稳定下来。"""
    return summary.get("created_at") or "", summary.get("created_ns", 0), summary["session_id"]


class Forest:
    """一组摘要（每个至少有 session_id / parent_id / created_at）组成的森林。

    kids[None] 是根：parent_id 为 None，或父节点不在这组摘要里（已删除）的节点。孩子按创建先后排好。"""

    def __init__(self, summaries: List[Dict[str, Any]]):
        self.by_id: Dict[str, Dict[str, Any]] = {s["session_id"]: s for s in summaries}
        self.in_order = sorted(self.by_id.values(), key=creation_order)
        self.kids: Dict[Optional[str], List[Dict[str, Any]]] = {}
        for summary in self.in_order:
            parent = summary.get("parent_id")
            self.kids.setdefault(parent if parent in self.by_id else None, []).append(summary)

    def roots(self) -> List[Dict[str, Any]]:
        """根在前；人为改坏的 parent_id 环里没有根，环上的节点排在后面各自补作起点（walk 会跳过已走过的）。"""
        return self.kids.get(None, []) + self.in_order

    def children(self, session_id: str) -> List[Dict[str, Any]]:
        return self.kids.get(session_id, [])


class Step(NamedTuple):
    """遍历的一步：node 是摘要，depth 从 0（根）数起，last 说明它是不是父节点的最后一个孩子。"""
    node: Dict[str, Any]
    depth: int
    last: bool


def walk(forest: Forest, root_id: Optional[str] = None) -> Iterator[Step]:
    """先序遍历（父在子前，兄弟按创建先后）：root_id 这棵子树；不给 root_id 就走整个森林。

    显式栈，不递归；每个节点只出现一次（seen 挡住改坏的环）。"""
    seen: set = set()
    starts = [forest.by_id[root_id]] if root_id is not None else forest.roots()
    for start in starts:
        if start["session_id"] in seen:
            continue
        stack = [Step(start, 0, True)]
        while stack:
            step = stack.pop()
            if step.node["session_id"] in seen:
                continue
            seen.add(step.node["session_id"])
            yield step
            children = forest.children(step.node["session_id"])
            for index in range(len(children) - 1, -1, -1):
                stack.append(Step(children[index], step.depth + 1, index == len(children) - 1))


class Style(NamedTuple):
    """一种画法：分支记号（不是 / 是最后一个孩子）和它下面那一列的续线（还有 / 没有更多兄弟）。"""
    branch: str
    last_branch: str
    more: str
    no_more: str


CLI_STYLE = Style("├── ", "└── ", "│   ", "    ")
# 页面上（单选框、列表）的标签是 HTML 文本，普通空格会被折叠：用不换行空格
PAGE_STYLE = Style("├─ ", "└─ ", "│\u00a0\u00a0", "\u00a0\u00a0\u00a0")


def branch_prefixes(steps: Iterator[Step], style: Style = CLI_STYLE,
                    max_indent: int = MAX_INDENT) -> Iterator[tuple]:
    """给 walk() 的每一步配上前缀：(Step, '│   ├── ')。根的前缀是空串。

    只记住每一层“下面还有没有兄弟”（与深度成正比的状态），所以 5,000 层的链也是线性的；
    深度超过 max_indent 的节点不再加宽，改在前缀里写 '…（第 N 层）'。"""
    more: List[bool] = []   # more[i]：第 i+1 层的祖先后面还有兄弟
    for step in steps:
        del more[max(step.depth - 1, 0):]
        if step.depth == 0:
            yield step, ""
        else:
            shown = more[:max_indent]
            indent = "".join(style.more if flag else style.no_more for flag in shown)
            marker = f"…（第 {step.depth} 层）" if step.depth > max_indent else ""
            yield step, indent + marker + (style.last_branch if step.last else style.branch)
        more.append(not step.last)


def root_of(session_id: str, by_id: Dict[str, Dict[str, Any]]) -> str:
    """沿 parent_id 走到这棵树的根（父节点不在 by_id 里就停；人为改坏的环也会停下）。"""
    seen, current = set(), session_id
    while current not in seen and by_id.get(current, {}).get("parent_id") in by_id:
        seen.add(current)
        current = by_id[current]["parent_id"]
    return current


# ── 摘要里“这个分支做了什么” ───────────────────────────────────────────────────────────────────
def content_text(content: Any) -> str:
    """消息内容的纯文字（压成一行）：字符串原样；内容块取 text / name / type。

    [{"type": "text", "text": "方案 A"}, {"type": "tool_use", "name": "Bash"}] -> '方案 A Bash'
    """
    if isinstance(content, list):
        content = " ".join(str(b.get("text") or b.get("name") or b.get("type", "")) for b in content
                           if isinstance(b, dict))
    return " ".join(str(content or "").split())


SUMMARY_KEYS = ("session_id", "title", "parent_id", "message_count", "created_at", "fork_point", "revision",
                "created_ns", "first_added", "active_end", "converged_from", "labels", "subagent",
                "spawned_at")   # 摘要的字段，按这个顺序


def summary_of(data: Dict[str, Any]) -> Dict[str, Any]:
    """会话文件读出的字典（小会话整个，大会话只有头）→ list_sessions() 的一条摘要，键按 SUMMARY_KEYS 的顺序。"""
    messages = data.get("messages")
    source = data.get("source")
    return {"session_id": data["session_id"], "title": data.get("title", "未命名会话"),
            "parent_id": data.get("parent_id"),
            "message_count": len(messages) if messages is not None else data["message_count"],
            "created_at": data.get("created_at") or "", "fork_point": data.get("fork_point"),
            "revision": data.get("revision", 0), "created_ns": data.get("created_ns", 0),
            "first_added": (first_added(messages, data.get("fork_point")) if messages is not None
                            else data["first_added"]),   # version 4 的头里存着
            # 导入的节点是否是 Agent 当前停住的那一端（会话树浏览器的“◀ 活动端”，不必逐个读文件）
            "active_end": isinstance(source, dict) and source.get("active_end") is True,
            "converged_from": list(data.get("converged_from") or []),   # 🔀 收敛节点收敛了哪些分支
            "labels": (message_labels(messages) if messages is not None
                       else list(data.get("labels") or [])),   # 🏷️ [[第几条, 标签], …]
            # 导入的 Claude Code 子代理：会话树把它画成 🤖 子代理，挂在父节点第 spawned_at 条（Task 调用）下
            "subagent": isinstance(source, dict) and source.get("subagent") is True,
            "spawned_at": _spawned_at(source)}


def summary_from(values: tuple) -> Dict[str, Any]:
    """仓库的摘要缓存只存值（列表存成元组）-> 一条新的摘要。两个列表字段给新的列表：调用方改了它，下一次列出不受影响。"""
    summary = dict(zip(SUMMARY_KEYS, values))
    summary["converged_from"], summary["labels"] = list(summary["converged_from"]), list(summary["labels"])
    return summary


def _spawned_at(source: Any) -> Optional[int]:
    """source.spawned_at：正整数才算（人为改坏的文件里可能是别的）。"""
    value = source.get("spawned_at") if isinstance(source, dict) else None
    return value if type(value) is int and value > 0 else None


def first_added(messages: List[Dict[str, Any]], fork_point: Optional[int]) -> str:
    """分支新增的第一条消息的前 FIRST_ADDED_CHARS 个字（根会话、没有新增时为空串）。

    fork_point 为 0（子代理、在开头分叉的分支）：全部消息都是新增的，取第一条。
    🔀 收敛节点（最后一条带 "converge"）：取它的决定，不取排在前面的“带过来的消息”——树上写的是定了什么。"""
    if fork_point is None or fork_point >= len(messages) or type(messages[fork_point]) is not dict:
        return ""   # 不是字典的消息只会出现在坏文件里（列表不逐条检查消息，见 s11_format.decode_listing）
    if type(messages[-1]) is dict and isinstance(messages[-1].get("converge"), dict):
        fork_point = len(messages) - 1
    try:
        text = content_text(messages[fork_point].get("content"))
    except RecursionError:   # 同上：坏文件里嵌套极深的内容
        return ""
    return text[:FIRST_ADDED_CHARS] + ("…" if len(text) > FIRST_ADDED_CHARS else "")


def message_labels(messages: List[Dict[str, Any]]) -> List[list]:
    """带标签（键 "label"，Pi 的书签导入后也是它）的消息 -> [[第几条（1 起）, 标签], …]。

    [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "label": "最终方案"}] -> [[2, '最终方案']]
    """
    return [[number, message["label"]] for number, message in enumerate(messages, 1)
            if isinstance(message, dict) and isinstance(message.get("label"), str) and message["label"].strip()]


def own_labels(summary: Dict[str, Any]) -> List[list]:
    """摘要里这个节点自己那一段（分叉点之后）的标签；继承来的标签在祖先那一行已经显示过。"""
    start = summary.get("fork_point") or 0 if summary.get("parent_id") else 0
    return [item for item in summary.get("labels") or [] if item[0] > start]


def converged_into(summaries: Any) -> Dict[str, List[str]]:
    """被收敛的分支 -> 收敛了它的节点 ID（按创建先后）：{"A": ["C"]}。只从收敛节点的 converged_from 推出来。"""
    into: Dict[str, List[str]] = {}
    for summary in sorted(summaries, key=creation_order):
        for other in summary.get("converged_from") or []:
            into.setdefault(other, []).append(summary["session_id"])
    return into


# ── 文字树（命令行、体检报告）──────────────────────────────────────────────────────────────────
def describe(summary: Dict[str, Any]) -> str:
    """'标题 [id] 7 条（自第 5 条分叉，+2：方案 A…）'；标题和新增内容都经过 printable()。"""
    title = shorten(printable(summary["title"]), MAX_TITLE_SHOWN)
    text = f"{title} [{summary['session_id']}] {summary['message_count']} 条"
    if summary.get("subagent") and summary.get("parent_id") and not summary.get("fork_point"):
        where = f"在父会话第 {summary['spawned_at']} 条启动，" if summary.get("spawned_at") else ""
        text += f"（🤖 子代理，{where}全部为新增"
        text += f"：{printable(summary['first_added'])}）" if summary.get("first_added") else "）"
    elif summary.get("fork_point") is not None:
        added = summary["message_count"] - summary["fork_point"]
        text += f"（自第 {summary['fork_point']} 条分叉，+{added}"
        text += f"：{printable(summary['first_added'])}）" if summary.get("first_added") else "）"
    return text


MAX_MARKS_SHOWN = 3   # 一行最多显示几个标签、几个收敛来源


def marks_text(summary: Dict[str, Any], into: Dict[str, List[str]]) -> str:
    """一行末尾的标记：' 🏷️ #7 最终方案 ⇠┄ 收敛了 [A] · 已收敛到 [C]'（文字都经过 printable()）。"""
    parts = [f"🏷️ #{number} {shorten(printable(text), 20)}" for number, text in own_labels(summary)[:MAX_MARKS_SHOWN]]
    sources = summary.get("converged_from") or []
    if sources:
        shown = " ".join(f"[{sid}]" for sid in sources[:MAX_MARKS_SHOWN])
        parts.append(f"⇠┄ 收敛了 {shown}" + (f" 等 {len(sources)} 个" if len(sources) > MAX_MARKS_SHOWN else ""))
    targets = into.get(summary["session_id"]) or []
    if targets:
        parts.append("已收敛到 " + " ".join(f"[{sid}]" for sid in targets[:MAX_MARKS_SHOWN]))
    return (" " + " · ".join(parts)) if parts else ""


def render_text(forest: Forest, root_id: Optional[str] = None) -> str:
    """整个森林（或 root_id 这棵子树）的文字图，每个节点一行、几百个字以内；没有会话时写明。
    收敛节点行尾“⇠┄ 收敛了 [ID]”是指向被收敛分支的虚线；被收敛的分支行尾“已收敛到 [ID]”。"""
    into = converged_into(forest.by_id.values())
    lines = [prefix + describe(step.node) + marks_text(step.node, into)
             for step, prefix in branch_prefixes(walk(forest, root_id))]
    return "\n".join(lines) if lines else "（还没有会话）"
