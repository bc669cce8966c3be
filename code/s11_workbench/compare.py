"""compare.py — 会话树浏览器里的「⚖️ 对比 / 🔀 收敛」：挑两个节点并排看，再收敛成一个记下决定的节点（不 import gradio）

    浏览器 ──token──> Comparer.<动作>(token, 浏览器的 View, *控件的值)      每次都 spaces.open(token) 重新解析空间
                        │ pickers()   当前这棵树的节点 → 两个下拉框的选项和默认的一对（8.11 演示之后就是 分支 A / 分支 B）
                        │ compare()   store.compare(A, B) → Comparison：相同的前缀（折叠）、按轮对齐的两列、条数与工具调用、
                        │             工作区文件级差异；Pair（两边的修订号、可带过来的消息）存在服务器端 gr.State
                        │ converge()  store.converge(胜出的一支, [另一支], 决定, carry=勾选的消息, revisions=对比时的修订号)
                        ▼
                 s11_converge（store 层）：输入不对就是一句中文，什么都不写；对比之后有人保存过就 ConflictError

Key insight: 对比只读、收敛只写一个新节点：页面上的两列只是 store.compare() 的结果排成表格，收敛按钮只是一次
store.converge()——被收敛的分支一个字节都不改，树上的“已收敛到 …”是从新节点推出来的。

Safety: 会话文字只以纯文本进页面：表格单元格经 literal_inline（逐个转义 ASCII 标点，| 也在内），
下拉框、勾选框的标签本身就是纯文本；从不进 gr.HTML。收敛只在读者自己的空间里（书架、老师查看是只读的）。
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field

import s11_export
from s11_converge import tool_call_count
from s11_import import usage
from s11_session import ConflictError, SessionError
from s11_text import shorten
from s11_tree import PAGE_STYLE, Forest, branch_prefixes, content_text, creation_order, root_of, walk
from s11_workbench.explorer import (
    MINE,
    ExplorerError,
    View,
    _as_count,
    branch_label,
    branch_names,
    explain,
    names_in_forest,
)
from s11_workbench.markdown import literal_inline

log = logging.getLogger(__name__)

CELL_CHARS = 240        # 表格里一条消息最多显示多少字（全文在对话路径和导出里）
MAX_ROWS = 200          # 表格最多对齐多少轮（更长的两边各自在对话路径里看）
SHARED_SHOWN = 50       # 折叠的相同前缀里最多列出多少条
CHOICE_CHARS = 36
CARRY_LABEL_CHARS = 60
MAX_DECISION_CHARS = 20_000


@dataclass(frozen=True)
class Pair:
    """一次对比的结论里收敛要用的部分（存在服务器端 gr.State）。"""
    a_id: str
    b_id: str
    revisions: tuple = ()       # ((ID, 修订号), …)：收敛时交给 store.converge 核对
    carry_a: tuple = ()         # A 这一边可带过来的消息：((标签, "ID:K"), …)
    carry_b: tuple = ()
    title_a: str = ""
    title_b: str = ""


@dataclass
class Pickers:
    choices: list = field(default_factory=list)   # [(标签, ID)]，按树的先序
    a: str | None = None
    b: str | None = None
    note: str = ""


@dataclass
class Comparison:
    notice: str = ""
    summary: str = ""           # 关系、共同祖先、两边的条数与工具调用
    shared_label: str = "相同的前缀"
    shared: str = ""
    table: str = ""
    workspace: str = ""
    pair: Pair | None = None
    winner_choices: list = field(default_factory=list)
    winner: str | None = None


class Comparer:
    """页面的三个动作；只持有 Spaces，按访客区分的数据都在参数里。"""

    def __init__(self, spaces):
        self.spaces = spaces

    def _own(self, token, view: View):
        own = self.spaces.open(token)   # 每次都重新验令牌
        if not isinstance(view, View) or view.source != MINE:
            raise ExplorerError("对比与收敛只在「📁 我的空间」里进行：先切回我的空间（书架上的会话先分叉过来）")
        return own

    # ── 两个下拉框 ───────────────────────────────────────────────────────────────────
    def pickers(self, token, view: View, a: str | None = None, b: str | None = None) -> Pickers:
        """选中节点所在的整棵树（没选中时是最近保存的那棵）→ 选项；a / b 仍在树里就保留，否则给默认的一对
        （b 为 None 时 B 就是浏览器里选中的节点：从会话树里挑）。"""
        try:
            own = self._own(token, view)
            summaries = own.store.list_sessions()
        except Exception as error:
            if not isinstance(error, (SessionError, OSError)):
                log.exception("compare pickers failed")
            return Pickers(note=explain(error))
        if not summaries:
            return Pickers(note="空间里还没有会话：先在「8.11」标签页运行演示，或导入一份记录。")
        forest = Forest(summaries)
        selected = view.session_id if view.session_id in forest.by_id else None
        start = selected or max(summaries, key=creation_order)["session_id"]
        steps = list(branch_prefixes(walk(forest, root_of(start, forest.by_id)), PAGE_STYLE))
        nodes = [step.node for step, _ in steps]
        names = branch_names([(node,) for node in nodes])   # 与会话树、分支图同样的名字：分支 A、B、B.A
        choices = [(choice_label(step.node, prefix, names.get(step.node["session_id"])), step.node["session_id"])
                   for step, prefix in steps]
        ids = {node["session_id"] for node in nodes}
        if len(ids) < 2:
            return Pickers(choices, None, None, "这棵树只有一个节点：先分叉出第二个分支再来对比。")
        default_a, default_b = default_pair(nodes, selected)
        b = b if b in ids else default_b
        if a not in ids or a == b:
            order = [node["session_id"] for node in nodes]
            a = default_a if default_a in ids and default_a != b else next(sid for sid in order if sid != b)
        return Pickers(choices, a, b, "")

    # ── ⚖️ 对比 ─────────────────────────────────────────────────────────────────────
    def compare(self, token, view: View, a_id: str | None, b_id: str | None) -> Comparison:
        try:
            own = self._own(token, view)
            if not a_id or not b_id:
                raise ExplorerError("请先在上面选好 A 和 B 两个节点")
            result = own.store.compare(a_id, b_id)
            names = names_in_forest(Forest(own.store.list_sessions()), (a_id, b_id))
        except Exception as error:
            if not isinstance(error, (SessionError, OSError)):
                log.exception("compare failed")
            return Comparison(notice=explain(error))
        return comparison_of(result, names)

    def carry_choices(self, token, pair: Pair | None, winner: str | None) -> list:
        """胜出的一支换了：可勾选的换成另一支的消息（令牌无效时什么都不给）。"""
        try:
            self.spaces.open(token)
        except Exception as error:
            if not isinstance(error, (SessionError, OSError)):
                log.exception("carry choices failed")
            return []
        return carry_for(pair, winner)

    # ── 🔀 收敛 ─────────────────────────────────────────────────────────────────────
    def converge(self, token, view: View, pair: Pair | None, winner: str | None, carry, decision: str,
                 title: str = "") -> tuple[str, str | None]:
        """-> (提示, 新节点的 ID 或 None)。对比之后两边有人保存过就 ConflictError：请重新对比。"""
        try:
            own = self._own(token, view)
            if not isinstance(pair, Pair):
                raise ExplorerError("请先点「⚖️ 对比」，再收敛")
            if winner not in (pair.a_id, pair.b_id):
                raise ExplorerError("请选胜出的一支（A 或 B）")
            loser = pair.b_id if winner == pair.a_id else pair.a_id
            allowed = {value for _, value in (pair.carry_b if loser == pair.b_id else pair.carry_a)}
            picked = [value for value in (carry or []) if isinstance(value, str)]
            stray = [value for value in picked if value not in allowed]
            if stray:
                raise ExplorerError("只能勾选另一支自己的消息（换了胜出的一支之后请重新勾选）")
            text = str(decision or "")
            if len(text) > MAX_DECISION_CHARS:
                raise ExplorerError(f"决定最多 {MAX_DECISION_CHARS:,} 字符")
            name = " ".join(str(title or "").split()) or None
            target = own.writable()
            target.throttle()
            target.require_room(sessions=1, nbytes=len(text.encode("utf-8")))
            node = target.store.converge(winner, [loser], text, carry=picked, title=name,
                                         revisions=dict(pair.revisions))
        except ConflictError as error:
            return f"⚠️ {literal_inline(str(error), 300)}", None
        except Exception as error:
            if not isinstance(error, (SessionError, OSError)):
                log.exception("converge failed")
            return explain(error), None
        carried = sum(1 for message in node.messages if "origin" in message)
        return (f"✅ 已收敛：新节点 `{node.session_id}`（{len(node.messages)} 条）接在 `{winner}` 之后，"
                f"带过来 {carried} 条消息；分支 `{loser}` 原样保留，树上标着“已收敛到 {node.session_id}”。"
                f"在「📤 导出」里可以看到 🔀 收敛卡片。"), node.session_id


    # ── 🏷️ 标签 ─────────────────────────────────────────────────────────────────────
    def label(self, token, view: View, number, text: str = "") -> tuple[View, str]:
        """给浏览器里选中的会话的第 number 条消息加标签（空 = 去掉），用页面读入时的修订号保存。
        -> (新视图, 提示)；别的标签页先存过就 ConflictError，视图改成重新读入。"""
        try:
            own = self._own(token, view)
            if not view.session_id:
                raise ExplorerError("请先在列表或会话树里选一个会话")
            count = _as_count(number)
            target = own.writable()
            target.throttle()
            target.require_room(sessions=0, nbytes=len(str(text or "").encode("utf-8")))
            node = target.store.label(view.session_id, count, str(text or ""), revision=view.revision)
        except ConflictError as error:
            return dataclasses.replace(view, revision=-1), explain(error)
        except Exception as error:
            if not isinstance(error, (SessionError, OSError)):
                log.exception("label failed")
            return view, explain(error)
        label = node.messages[count - 1].get("label")
        done = (f"🏷️ 已给第 {count} 条加上标签「{literal_inline(label, 80)}」" if label
                else f"🏷️ 已去掉第 {count} 条的标签")
        return dataclasses.replace(view, revision=node.revision), f"{done}（会话 {node.session_id}，修订 {node.revision}）"


# ── 页面各块（纯函数，测试直接调用）──────────────────────────────────────────────────────────
def choice_label(node: dict, prefix: str, name: str | None = None) -> str:
    """'├─ 分支 A · +2：方案 A：为 cache… · 修复登录服务内存泄漏 · 分支 · 7 条 [4d67e2e6b66c]'（纯文本）。
    name 是会话树里的名字（branch_names：根是空串，不写）；之后是分支新增的第一句：同名的分支在窄屏上也分得清。"""
    head = f"{side_title(name)} · " if name != "" else ""
    added = f"+{node['message_count'] - node['fork_point']}：{node['first_added']} · " \
        if node.get("fork_point") is not None and node.get("first_added") else ""
    icon = "🔀 " if node.get("converged_from") and "🔀" not in node["title"] else ""
    return (f"{prefix}{head}{added}{icon}{shorten(node['title'], CHOICE_CHARS)} · {node['message_count']} 条 "
            f"[{node['session_id']}]")


def side_title(name: str | None) -> str:
    """会话树里的名字 -> 对比里怎么叫它：'B.A' -> '分支 B.A'，根（空串）-> '🌱 根'，不知道 -> '（未命名分支）'。"""
    return "🌱 根" if name == "" else branch_label(name)


def default_pair(nodes: list[dict], selected: str | None) -> tuple[str | None, str | None]:
    """默认对比哪两个：B = 选中的节点（没选中时是最后创建的叶子），A = 它最早的兄弟（没有兄弟时是别的叶子或父节点）。

    8.11 演示之后：主会话 → 分支 A、分支 B，B 最后创建 -> (A, B)。"""
    parents = {node.get("parent_id") for node in nodes}
    leaves = sorted((node for node in nodes if node["session_id"] not in parents), key=creation_order)
    by_id = {node["session_id"]: node for node in nodes}
    b = selected if selected in by_id else (leaves[-1]["session_id"] if leaves else None)
    if b is None:
        return None, None
    parent = by_id[b].get("parent_id")
    siblings = sorted((node for node in nodes if node.get("parent_id") == parent and parent
                       and node["session_id"] != b), key=creation_order)
    if siblings:
        return siblings[0]["session_id"], b
    others = [node["session_id"] for node in reversed(leaves) if node["session_id"] != b]
    return (others[0] if others else parent), b


def comparison_of(result: dict, names: dict | None = None) -> Comparison:
    """store.compare() 的结果 -> 页面上的各块。names：ID -> 会话树里的名字（names_in_forest），两边都叫
    「分支 A」「分支 B.A」这样的名字，和会话树、分支图上一样；不在里面的叫「（未命名分支）」。"""
    a_id, b_id, common = result["a_id"], result["b_id"], result["common"]
    only_a, only_b = result["only_a"], result["only_b"]
    names = names or {}
    title = {"a": side_title(names.get(a_id)), "b": side_title(names.get(b_id))}
    counts = [f"**A** = **{title['a']}**（{literal_inline(result['title_a'], 40)}）`{a_id}`：之后 {len(only_a)} 条消息、"
              f"{tool_call_count(only_a)} 次工具调用",
              f"**B** = **{title['b']}**（{literal_inline(result['title_b'], 40)}）`{b_id}`：之后 {len(only_b)} 条消息、"
              f"{tool_call_count(only_b)} 次工具调用"]
    summary = "\n\n".join([f"⚖️ {literal_inline(result['note'], 300)}", *(f"- {line}" for line in counts),
                             usage_table(result)])
    pair = Pair(a_id, b_id, ((a_id, result["revision_a"]), (b_id, result["revision_b"])),
                carry_choices("A", a_id, only_a, common), carry_choices("B", b_id, only_b, common),
                result["title_a"], result["title_b"])
    return Comparison(
        summary=summary,
        shared_label=(f"前 {common} 条相同（点开看）" if common else "开头没有相同的消息"),
        shared=shared_lines(result),
        table=delta_table(result, title),
        workspace=workspace_text(result.get("workspace_diff"), result),
        pair=pair,
        winner_choices=[(f"A：{title['a']} · {shorten(side_name(result, 'a'), 24)} [{a_id}]", a_id),
                        (f"B：{title['b']} · {shorten(side_name(result, 'b'), 24)} [{b_id}]", b_id)],
        winner=b_id)


def usage_table(result: dict) -> str:
    """两支各花了多少，并排：分叉之后的部分和整条分支（从根开始）。token 数来自导入的 Agent 记录
    （消息上的 usage，见 s11_import.usage）；没有记录时照实写“没有记录”，而不是 0。"""
    shared = result.get("shared") or []
    columns = [("A · 分叉之后", result["only_a"]), ("B · 分叉之后", result["only_b"]),
               ("A · 整条分支", [*shared, *result["only_a"]]), ("B · 整条分支", [*shared, *result["only_b"]])]
    sums = [usage.totals(messages) for _, messages in columns]
    if not any(total.recorded or total.duration_ms for total in sums):
        return "💰 花费：两边都没有记录 token 数（只有导入的 Agent 会话才有）；工具调用次数见上。"

    def cell(total, key: str) -> str:
        if key == "tool_calls":
            return f"{total.tool_calls:,}"
        if key == "duration_ms":
            return f"{total.duration_ms / 1000:,.1f} 秒" if total.duration_ms else "—"
        return f"{getattr(total, key):,}" if total.recorded else "没有记录"

    rows = [("输入 token", "input"), ("输出 token", "output"), ("缓存读", "cache_read"), ("缓存写", "cache_write"),
            ("推理 token", "reasoning"), ("工具调用", "tool_calls"), ("耗时", "duration_ms")]
    lines = ["💰 **花费**（A、B 并排）", "", "| | " + " | ".join(name for name, _ in columns) + " |",
             "| --- |" + " ---: |" * len(columns)]
    for name, key in rows:
        if key in ("cache_read", "cache_write", "reasoning") and not any(getattr(total, key) for total in sums):
            continue
        lines.append(f"| {name} | " + " | ".join(cell(total, key) for total in sums) + " |")
    return "\n".join(lines)


def shared_lines(result: dict) -> str:
    """相同的前缀（折叠起来的那一块）：每条一行开头。"""
    shared = result.get("shared") or []
    if not shared:
        return "（两边从第 1 条起就不同）"
    lines = [f"- {_cell(message, number)}" for number, message in enumerate(shared[:SHARED_SHOWN], 1)]
    if len(shared) > SHARED_SHOWN:
        lines.append(f"- …还有 {len(shared) - SHARED_SHOWN} 条（在对话路径里看全文）")
    where = f"继承自共同祖先 `{result['ancestor']}`" if result.get("ancestor") else "两边逐条相同"
    return "\n".join([f"两边的第 1–{len(shared)} 条逐条相同（{where}）：", "", *lines])


def _cell(message, number: int | None = None) -> str:
    if not isinstance(message, dict):
        return "—"
    role = str(message.get("role", ""))
    icon = s11_export.ROLE_ICONS.get(role, s11_export.DEFAULT_ICON)
    text = content_text(message.get("content"))
    tools = tool_call_count([message])
    marks = [text for kind, text in s11_export.message_marks(message) if kind in ("label", "converge", "origin")]
    extra = (f" 🔧×{tools}" if tools else "") + "".join(f" · {literal_inline(mark, 40)}" for mark in marks)
    head = f"**#{number}** " if number is not None else ""   # 表格里轮次已在第一列
    return f"{head}{icon} {literal_inline(shorten(text, CELL_CHARS)) or '（空）'}{extra}"


def delta_table(result: dict, title: dict | None = None) -> str:
    """两边之后的消息按轮对齐：第 k 行是两边各自的第 common+k 条（一边没有就是“—”）。Markdown 表格。
    title：{"a": "分支 A", "b": "分支 B"}（side_title），写在表头里。"""
    only_a, only_b, common = result["only_a"], result["only_b"], result["common"]
    rows = max(len(only_a), len(only_b))
    if not rows:
        return "两边在相同的前缀之后都没有新消息。"
    title = title or {"a": "A", "b": "B"}
    lines = [f"| 轮 | A · {title['a']}：{literal_inline(side_name(result, 'a'), 30)} "
             f"| B · {title['b']}：{literal_inline(side_name(result, 'b'), 30)} |",
             "| --- | --- | --- |"]
    for index in range(min(rows, MAX_ROWS)):
        number = common + index + 1
        left = _cell(only_a[index]) if index < len(only_a) else "—"
        right = _cell(only_b[index]) if index < len(only_b) else "—"
        lines.append(f"| {number} | {left} | {right} |")
    if rows > MAX_ROWS:
        lines.append(f"\n…只对齐了前 {MAX_ROWS} 轮，其余在对话路径里看。")
    return "\n".join(lines)


def side_name(result: dict, side: str) -> str:
    """一边叫什么：它在共同前缀之后的第一句（同名的分支靠它分清），没有就用标题。"""
    delta = result[f"only_{side}"]
    first = content_text(delta[0].get("content")) if delta and isinstance(delta[0], dict) else ""
    return first or result[f"title_{side}"]


def workspace_text(diff, result: dict) -> str:
    recorded = [side for side, key in (("A", "workspace_a"), ("B", "workspace_b")) if result.get(key)]
    if diff is None:
        if not recorded:
            return "🗂️ 代码快照：两边保存时都没有记录工作区，无从比较（会话 ≠ 代码）。"
        return f"🗂️ 代码快照：只有 {recorded[0]} 记录了工作区，无从比较。"
    if not diff:
        return "🗂️ 代码快照：两边保存时的工作区文件一致。"
    return "\n".join(["🗂️ 代码快照：A → B 的文件级差异", *(f"- {literal_inline(line, 200)}" for line in diff[:50])])


def carry_choices(side: str, session_id: str, messages: list, common: int) -> tuple:
    """一边可带过来的消息 -> ((勾选框标签, "ID:K"), …)；标签是纯文本。"""
    out = []
    for number, message in enumerate(messages[:MAX_ROWS], common + 1):
        text = content_text(message.get("content")) if isinstance(message, dict) else str(message)
        role = str(message.get("role", "")) if isinstance(message, dict) else ""
        out.append((f"{side} #{number} {role}：{shorten(text, CARRY_LABEL_CHARS)}", f"{session_id}:{number}"))
    return tuple(out)


def carry_for(pair: Pair | None, winner: str | None) -> list:
    """胜出的一支定了，可勾选的就是另一支自己的消息。"""
    if not isinstance(pair, Pair) or winner not in (pair.a_id, pair.b_id):
        return []
    return list(pair.carry_b if winner == pair.a_id else pair.carry_a)

