"""history_panel.py — 会话树浏览器里的「📜 操作历史 · ↶ 撤销 / ↷ 重做」：全部逻辑（不 import gradio，测试直接驱动）

    浏览器 ──token──> HistoryPanel.<动作>(token, view, *控件的值, teacher=老师密钥)
                        │ explorer.space_for()：每次重新验令牌；只读来源（共享书架、老师查看学生）只能看，不能改
                        ▼
             s11_history：timeline · undo · redo · revisions · load_revision · revert（日志的格式在 s11_journal）
                        ▼
             HistoryPage   ↶ 撤销 / ↷ 重做 的是哪一步 · 操作历史（新的在前，用浏览器的分支名：“分叉了分支 B.A（自第 6 条）”）
                           · 选中会话的每一版 · 👁️ 看这一版（只读）· ⏪ 回到这一版（存成新的一版）
                           · explorer：撤销、重做、回到某一版之后浏览器的整页（列表、树、选中跟着变）

Key insight: 撤销也是向前走的一步（s11_history）：撤销分叉 = 新节点进回收站，撤销续写 = 上一版的内容存成新的一版，
撤销删除 = 从回收站取回。所以这里的每个按钮都只是“再做一个能撤销的操作”，什么都不会丢；面板只负责把日志
说成人话、把结果写在点过的按钮下面，并让浏览器重画（撤销掉的分叉从列表和树里消失，出现在回收站里）。

Safety: 会话标题只以转义过的 Markdown（literal_inline）、Radio 的纯文字标签和 Chatbot（与浏览器同一个画法）出现，
从不进 gr.HTML；只读来源里看旧版时照样脱敏（和浏览器显示只读来源一样）。
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

import s11_export
import s11_history
import s11_journal
import s11_redact
from s11_session import ConflictError, SessionError, SessionNotFound
from s11_text import hide_paths, human_size, shorten
from s11_tree import Forest
from s11_workbench.explorer import (
    PAGE_SIZE,
    Explorer,
    ExplorerError,
    Page,
    View,
    branch_label,
    chat_rows,
    explain,
    names_in_forest,
)
from s11_workbench.markdown import literal_inline

HISTORY_SHOWN = 30        # 操作历史显示最近几步（更早的：命令行 `python code/s11_cli.py history --limit N`）
REVISIONS_SHOWN = 12      # 一个会话最多列出最近几版（每一版都要读它的头；更早的：命令行 history ID）
TITLE_CHARS = 30
READ_ONLY = ("这是只读的来源（📚 共享书架或 👩‍🏫 学生空间）：这里只能看操作历史和旧版，不能撤销、重做或回到某一版"
             "——它们只作用于你自己的空间。切回「📁 我的空间」再试")
AREAS = ("undo", "revisions")   # 结果写在哪一排按钮下面


@dataclass
class HistoryPage:
    """面板上的全部内容。notice 写在 area 那一排按钮的下面（"" 或 None：结果行保持原样）。"""
    notice: str = ""
    area: str | None = None
    writable: bool = False        # False：只读来源（或令牌无效），撤销 / 重做 / 回到这一版都不显示
    can_undo: bool = False
    can_redo: bool = False
    next_step: str = ""           # ↶ / ↷ 各会做哪一步
    timeline: str = ""            # 操作历史（Markdown，已转义）
    revision_choices: list = field(default_factory=list)   # [(标签, 修订号)]，新的在前
    revision: int | None = None   # 选中的那一版
    revisions_note: str = ""
    looking: list | None = None   # 👁️ 看这一版：Chatbot 的行（None：保持原样，[]：清空）
    looking_note: str | None = None
    looked: tuple | None = None   # 正在看哪一版：(会话, 修订号)；换了选中的会话就清空“看这一版”（None：保持原样）
    explorer: Page | None = None  # 浏览器要重画的整页（None：浏览器不必重画）


class HistoryPanel:
    """面板的全部动作。只持有浏览器的 Explorer（同一个令牌规则、同一个重画）；按访客区分的数据都在参数里。"""

    def __init__(self, explorer: Explorer):
        self.explorer = explorer

    # ── 动作 ──────────────────────────────────────────────────────────────────────
    def show(self, token, view: View, teacher: str | None = None, revision=None, looked: tuple = ()) -> HistoryPage:
        """只重画面板（浏览器里做了别的动作、换了选中的会话、页面载入）：结果行不动；
        选中的会话变了，“看这一版”清空。"""
        page = self._page(token, view, teacher, revision)
        if looked and (not view.session_id or looked[0] != view.session_id):
            page.looking, page.looking_note, page.looked = [], "", ()
        return page

    def undo(self, token, view: View, teacher: str | None = None) -> HistoryPage:
        """↶ 撤销最近一个还没撤销的操作（s11_history.undo）；之后浏览器重画。"""
        return self._step(token, view, teacher, s11_history.undo, "↶")

    def redo(self, token, view: View, teacher: str | None = None) -> HistoryPage:
        """↷ 重做最近一次撤销的操作。"""
        return self._step(token, view, teacher, s11_history.redo, "↷")

    def look(self, token, view: View, revision, teacher: str | None = None) -> HistoryPage:
        """👁️ 看选中会话的第 revision 版（只读，不改任何文件）：最后 PAGE_SIZE 条消息，和现在这一版比一比。"""
        def action(space):
            session_id = _selected(view)
            number = _revision_number(revision)
            old = s11_history.load_revision(space.store, session_id, number)
            live = space.store.load(session_id)
            clean = s11_redact.redact if space.read_only else str
            note = _looking_note(old, live, names_of_one(space.store, session_id))
            return "", None, {"looking": _chat(old, clean), "looking_note": note, "looked": (session_id, number),
                              "revision": number}
        return self._act(token, view, teacher, action, "revisions", revision)

    def revert(self, token, view: View, revision, teacher: str | None = None) -> HistoryPage:
        """⏪ 回到第 revision 版：它的内容存成新的一版（s11_history.revert；现在这一版留在历史里，↶ 撤销就回去）。
        页面读入之后别处又保存过（view.revision 过期）就不做，重新载入让读者再看一眼。"""
        def action(space):
            store = _writable(space).store
            session_id = _selected(view)
            number = _revision_number(revision)
            live = store.load(session_id)
            if live is None:
                raise SessionNotFound(f"会话 {session_id} 不在了（在回收站里？先取回它，再回到某一版）")
            if view.revision >= 0 and live.revision != view.revision:
                raise ConflictError(f"会话 {session_id} 在页面读入（第 {view.revision} 版）之后又被保存过，现在是第 "
                                    f"{live.revision} 版：页面已重新载入，请再看一眼再回到第 {number} 版")
            old = s11_history.load_revision(store, session_id, number)   # 先读：没有这一版时什么都不写
            space.throttle()
            space.require_room(sessions=0, nbytes=_approximate_bytes(old))
            node = s11_history.revert(store, session_id, number)
            name = names_of_one(store, session_id)
            done = (f"⏪ 已把 {literal_inline(name)} 回到第 {number} 版：它的内容存成了新的第 {node.revision} 版（{len(node.messages)} 条消息）；"
                    f"原来的第 {live.revision} 版还在下面的列表里，↶ 撤销就回去")
            return done, _refreshed(view), {"revision": number}
        return self._act(token, view, teacher, action, "revisions", revision)

    # ── 内部 ──────────────────────────────────────────────────────────────────────
    def _step(self, token, view: View, teacher, step: Callable, mark: str) -> HistoryPage:
        def action(space):
            store = _writable(space).store
            space.throttle()
            space.require_room(sessions=0)
            # 动手之前记下这一步和分支名：撤销掉的分叉随后就不在树里了，结果里仍叫它“分支 B.A”
            state = s11_history.replay(store.storage_dir)
            stack = state.done if step is s11_history.undo else state.undone
            names = names_of(Forest(store.list_sessions()))
            parent = self._parent_of(store, view.session_id)   # 撤销的正是选中的分叉时，改选它的父节点
            done = step(store)
            text = done["text"]
            if stack and stack[-1]["n"] == done.get("target"):
                verb = "撤销" if step is s11_history.undo else "重做"
                text = f"{verb}了第 {done['target']} 步：{s11_journal.describe(stack[-1], names)}"
            return f"{mark} {literal_inline(text)}", _after_step(store, view, parent, done), {}
        return self._act(token, view, teacher, action, "undo")

    def _act(self, token, view: View, teacher, action: Callable, area: str, revision=None) -> HistoryPage:
        """action(space) -> (结果, 浏览器的新视图或 None, 额外字段)；失败时结果是一句中文，浏览器照样重画
        （冲突之后页面要读入最新的修订号）。然后画出面板。"""
        extra: dict = {}
        changed = None
        try:
            space, _own = self.explorer.space_for(token, view, teacher)
            notice, changed, extra = action(space)
        except Exception as error:   # 面板只给一句话；意外的错误由 explain() 说明，堆栈进服务器日志
            notice = _explain(error)
            if isinstance(error, ConflictError):
                changed = _refreshed(view)
        shown_view = changed if changed is not None else view
        page = self._page(token, shown_view, teacher, extra.pop("revision", revision))
        page.notice, page.area = notice, area
        for key, value in extra.items():
            setattr(page, key, value)
        if changed is not None:   # 浏览器重画：结果只写在面板里，浏览器别处的结果行清空（area 不是它的任何一块）
            page.explorer = self.explorer.render(token, changed, teacher, "", check=True, area="history")
        return page

    def _page(self, token, view: View, teacher, revision=None) -> HistoryPage:
        try:
            space, _own = self.explorer.space_for(token, view, teacher)
        except Exception as error:
            return HistoryPage(notice=_explain(error), area="undo", timeline="")
        store = space.store
        page = HistoryPage(writable=not space.read_only)
        try:
            names = names_of(Forest(store.list_sessions()))
            state = s11_history.replay(store.storage_dir)
            rows, skipped = s11_history.timeline(store, HISTORY_SHOWN, state)
        except (SessionError, OSError) as error:
            page.timeline = _explain(error)
            return page
        page.timeline = timeline_markdown(rows, skipped, names)
        page.can_undo = page.writable and bool(state.done)
        page.can_redo = page.writable and bool(state.undone)
        page.next_step = next_step_text(state, names, page.writable)
        if view.session_id:
            self._revisions(page, store, view, revision, names.get(view.session_id, view.session_id))
        return page

    def _revisions(self, page: HistoryPage, store, view: View, revision, name: str) -> None:
        try:
            found = s11_history.revisions(store, view.session_id, newest=REVISIONS_SHOWN)
        except (SessionError, OSError):
            found = []
        page.revision_choices = revision_choices(found)
        numbers = [number for _, number in page.revision_choices]
        page.revision = revision if revision in numbers else None
        if len(numbers) >= REVISIONS_SHOWN:   # 只读了最新的几版：总数不知道，也不必知道
            page.revisions_note = (f"{literal_inline(name)} 的最近 {len(numbers)} 版（更早的用命令行 "
                                   f"`history {view.session_id}` 看；每一版都还在）")
        elif numbers:
            page.revisions_note = f"{literal_inline(name)} 共 {len(numbers)} 版（每次保存留下一版，撤销、回到某一版也是新的一版）"

    @staticmethod
    def _parent_of(store, session_id: str | None) -> str | None:
        if not session_id:
            return None
        summary = next((s for s in store.list_sessions() if s["session_id"] == session_id), None)
        return summary.get("parent_id") if summary else None


# ── 日志 → 人话 ─────────────────────────────────────────────────────────────────────────────
def names_of(forest: Forest) -> dict[str, str]:
    """每个还在的会话在浏览器里的叫法：分支 -> '分支 B.A'，子代理 -> '🤖 子代理 1'，根 -> '「标题」'（与浏览器的会话树同一套分支名）。
    回收站里的会话不在森林里：日志里照旧写「标题」[ID]。"""
    return {session_id: branch_label(name) if name else f"「{shorten(forest.by_id[session_id]['title'], TITLE_CHARS)}」"
            for session_id, name in names_in_forest(forest, forest.by_id).items()}


def names_of_one(store, session_id: str) -> str:
    """一个会话的叫法（'分支 B'、'「标题」'）；不在了就是它的 ID。"""
    names = names_of(Forest(store.list_sessions()))
    return names.get(session_id, session_id)


def described(record: dict, names: dict[str, str], window: dict[int, dict]) -> str:
    """一条记录 -> 一句中文（s11_journal.describe，带上分支名）。撤销 / 重做的那一步还在窗口里时，
    也用分支名重说一遍它（否则用撤销时记下的那句）。"""
    if record["op"] in ("undo", "redo") and record.get("target") in window:
        record = {**record, "what": s11_journal.describe(window[record["target"]], names)}
    return s11_journal.describe(record, names)


def timeline_markdown(rows: list[dict], skipped: list[str], names: dict[str, str]) -> str:
    """操作历史：新的在前，一行一步；撤销掉的划掉（还能重做的注明“可以 ↷ 重做”——之后做了新操作就不能了）。
    文字一律转义。"""
    if not rows:
        return "（还没有操作：在这个空间里新建、分叉、续写、删除……每一步都会记在这里，也都能撤销）"
    window = {row["n"]: row["record"] for row in rows}
    last_step = {}   # 第几步 -> 最后一次撤销 / 重做它的是哪个（旧的在前地看，后来的盖掉先前的）
    for row in reversed(rows):
        if row["op"] in ("undo", "redo"):
            last_step[row["record"].get("target")] = row["op"]
    lines = []
    for row in rows:
        text = literal_inline(described(row["record"], names, window))
        when = literal_inline(row["at"][5:] if len(row["at"]) >= 16 else row["at"])
        line = f"第 {row['n']} 步 · {when} · {text}"
        if row["undone"]:
            lines.append(f"- ~~{line}~~ （↶ 已撤销，可以 ↷ 重做）")
        elif last_step.get(row["n"]) == "undo":
            lines.append(f"- ~~{line}~~ （↶ 已撤销）")
        else:
            lines.append(f"- {line}")
    if skipped:
        lines.append(f"- ⚠️ 日志里有 {len(skipped)} 行读不懂（写到一半被中断或被改坏），已跳过")
    return "\n".join(lines)


def next_step_text(state, names: dict[str, str], writable: bool) -> str:
    """↶ / ↷ 各会做哪一步（按钮旁边的一行）。"""
    if not writable:
        return "🔒 " + READ_ONLY
    parts = []
    if state.done:
        top = state.done[-1]
        what = literal_inline(s11_journal.describe(top, names))
        parts.append(f"第 {top['n']} 步是有意的彻底删除，撤销不了" if top.get("purge")
                     else f"↶ 撤销会倒回第 {top['n']} 步：{what}")
    else:
        parts.append("没有可以撤销的操作")
    if state.undone:
        top = state.undone[-1]
        parts.append(f"↷ 重做会再做第 {top['n']} 步：{literal_inline(s11_journal.describe(top, names))}")
    return "\n\n".join(parts)


def revision_choices(found: list[dict]) -> list[tuple[str, int]]:
    """s11_history.revisions() -> 单选框的选项，新的在前：'第 3 版 · 9 条 · 1.2 KB · 12-07 03:40:12 · ◀ 现在'。
    同一个 ID 早先的一生（older_life）和回收站里的副本按号读不到，不列出；同号的只列一次（现在这一版优先）。"""
    seen: set = set()
    choices = []
    for entry in sorted(found, key=lambda e: (e["revision"], e["live"]), reverse=True):
        if entry["older_life"] or entry["revision"] in seen or (entry["in_trash"] and not entry["live"]
                                                                 and any(e["live"] for e in found)):
            continue
        seen.add(entry["revision"])
        count = "读不了" if entry["message_count"] is None else f"{entry['message_count']} 条"
        mark = " · ◀ 现在" if entry["live"] else (" · 🗑️ 回收站里" if entry["in_trash"] else "")
        choices.append((f"第 {entry['revision']} 版 · {count} · {human_size(entry['bytes'])} · {entry['at'][5:]}{mark}",
                        entry["revision"]))
        if len(choices) >= REVISIONS_SHOWN:
            break
    return choices


# ── 看一版 ──────────────────────────────────────────────────────────────────────────────────
def _chat(node, clean: Callable[[str], str]) -> list:
    """那一版的最后 PAGE_SIZE 条消息 -> Chatbot 的行（与浏览器的对话路径同一个画法）。"""
    tool_names = s11_export.tool_call_names(node.messages)
    rows: list = []
    for index in range(max(0, len(node.messages) - PAGE_SIZE), len(node.messages)):
        message = node.messages[index]
        rows += chat_rows(message if isinstance(message, dict) else {"content": message}, index + 1, tool_names, clean)
    return rows


def _looking_note(old, live, name: str) -> str:
    """'👁️ 只读：分支 B 的第 2 版，7 条消息。和现在的第 3 版（9 条）比：前 7 条相同，现在多了 2 条。'"""
    head = f"👁️ 只读：{literal_inline(name)} 的第 {old.revision} 版，{len(old.messages)} 条消息"
    if len(old.messages) > PAGE_SIZE:
        head += f"（下面只显示最后 {PAGE_SIZE} 条）"
    if live is None:
        return head + "。这个会话现在不在（在回收站里）"
    same = _shared_prefix(old.messages, live.messages)
    if same == len(old.messages) == len(live.messages):
        return head + f"。内容和现在的第 {live.revision} 版一样"
    bits = [f"前 {same} 条相同"]
    if len(old.messages) > same:
        bits.append(f"这一版之后的 {len(old.messages) - same} 条现在没有了")
    if len(live.messages) > same:
        bits.append(f"现在多了 {len(live.messages) - same} 条")
    return head + f"。和现在的第 {live.revision} 版（{len(live.messages)} 条）比：" + "，".join(bits) + \
        "。要回到它，点「⏪ 回到这一版」（存成新的一版，什么都不丢）"


def _shared_prefix(first: list, second: list) -> int:
    same = 0
    for one, other in zip(first, second):
        if one != other:
            break
        same += 1
    return same


# ── 小工具 ──────────────────────────────────────────────────────────────────────────────────
def _selected(view: View) -> str:
    if not view.session_id:
        raise ExplorerError("请先在列表或会话树里选一个会话，再看它的每一版")
    return view.session_id


def _writable(space):
    if space.read_only:
        raise ExplorerError(READ_ONLY)
    return space


def _revision_number(value) -> int:
    """单选框的值 -> 修订号。没选、或不是整数（浏览器之外直接调 API）时说清楚收到了什么。"""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ExplorerError("还没选哪一版：先在「这个会话的每一版」里选一版")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ExplorerError(f"版本号应是不小于 0 的整数，收到 {shorten(repr(value), 40)}：先在「这个会话的每一版」里选一版")
    return value


def _approximate_bytes(node) -> int:
    """回到某一版要写的字节（估计）：消息的 JSON 长度。大会话分块存放，实际只多头、索引和尾部，这里宁多勿少。"""
    return sum(len(str(message).encode("utf-8")) for message in node.messages)


def _refreshed(view: View) -> View:
    """会话可能换了一版：重新读入修订号，对话回到最新的位置；等确认的动作作废。"""
    return dataclasses.replace(view, revision=-1, start=None, focus=None, end=None, last_fork=None, pending=())


def _after_step(store, view: View, parent: str | None, done: dict) -> View:
    """撤销 / 重做之后选中哪个会话：原来选中的还在就不动；不在了（撤销的正是它的分叉）就选它的父节点；
    都没有就选这一步里还在的第一个会话。"""
    alive = {s["session_id"] for s in store.list_sessions()}
    for candidate in (view.session_id, parent, *done.get("ids", [])):
        if candidate and candidate in alive:
            return dataclasses.replace(_refreshed(view), session_id=candidate, chat_numbers=())
    return dataclasses.replace(_refreshed(view), session_id=None, chat_numbers=())


def _explain(error: BaseException) -> str:
    """异常 -> 结果行的一句话。仓库的话原样说（冲突要说清是哪一步、为什么，而不是浏览器续写时那句“输入框里的话
    还在”），但其中的会话标题是别人写的文字：整句转义后才进 Markdown。"""
    if isinstance(error, SessionError):
        return f"⚠️ {literal_inline(hide_paths(shorten(str(error), 300)))}"
    return explain(error)
