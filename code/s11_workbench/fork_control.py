"""fork_control.py — 一个分叉控件的逻辑（不 import gradio）：选位置、核对位置、写结果行

    点对话里的第 k 条消息 ──> click_pick(会话, 行号 → 消息编号) ──> Pick("<会话>#k", 说明, 按钮上的字)
    点「⏮ 从头分叉（0 条）」 ──> start_pick(会话)              ──> Pick("<会话>#0", …)
    ?session=<会话>&m=<k> 链接 ──> link_pick(会话, k)           ──> 同上；没有 m ──> NO_PICK（什么都没选）
    重新载入页面、换了会话、分叉成功 ──> NO_PICK
                                        │  （值放在页面上一个看不见的框里，分叉按钮把它交回服务器）
                                        ▼
    🌿 分叉 ──> position(值, 现在选中的会话) ──> k，或一句中文拒绝：没选 / 选的是别的会话 / 不是 0 以上的整数

Key insight: 分叉位置只有一个来处——读者点过的那条消息，或明确点了「从头分叉」；框里空着就拒绝，
从不把“没选”当成 0。值里带着会话 ID：换了会话之后，还没清掉的旧选择也落不到新会话上。

会话树浏览器（explorer_tab.py）和练习（lesson_tab.py）用同一个控件（fork_control_tab.py），
分叉本身都是 Explorer.fork。脚本和测试直接调接口时也可以交一个整数（3、"3"）：那是它们明确给出的位置。
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from s11_session import SessionError
from s11_workbench.markdown import literal_inline

PICK_HINT = "👆 点对话里的一条消息，在它之后分叉（新分支继承它和它之前的全部消息）；或点「⏮ 从头分叉（0 条）」。"
FORK_LABEL = "🌿 在选中的消息之后分叉"
START_LABEL = "⏮ 从头分叉（0 条）"
NO_PICK = ""                       # 什么都没选：分叉按钮会拒绝，不会当成 0
_PICK = re.compile(r"([A-Za-z0-9_-]{1,64})#(\d{1,9})")
_NUMBER = re.compile(r"\d{1,9}(?:\.0*)?")


class ForkPickError(SessionError):
    """分叉位置不成立（没选、选的是别的会话、不是 0 以上的整数）：消息是给读者看的中文，什么都没写进磁盘。"""


@dataclass(frozen=True)
class Pick:
    """控件上的一次选择：value 交回服务器，note 写在控件顶上，label 是分叉按钮上的字。"""
    value: str
    note: str
    label: str


CLEARED = Pick(NO_PICK, PICK_HINT, FORK_LABEL)


def pick_value(session_id: str, number: int) -> str:
    """("a1b2c3", 6) -> "a1b2c3#6"：位置连同它属于哪个会话。"""
    return f"{session_id}#{number}"


def message_pick(session_id: str, number: int) -> Pick:
    """在第 number 条之后分叉的选择（number ≥ 1）。"""
    note = (f"📌 已选中第 {number} 条：新分支继承第 1–{number} 条，分叉按钮就在下面。"
            f" 这条消息的链接：`?session={session_id}&m={number}`")
    return Pick(pick_value(session_id, number), note, f"🌿 在第 {number} 条之后分叉")


def start_pick(session_id: str | None) -> Pick:
    """读者明确选了「从头分叉」：什么都不继承。没选会话时给出提示，不做选择。"""
    if not session_id:
        return Pick(NO_PICK, "⚠️ 先选一个会话，再选从哪里分叉", FORK_LABEL)
    return Pick(pick_value(session_id, 0), "📌 已选「从头分叉」：新分支什么都不继承（0 条），从空白开始。",
                "🌿 从头分叉（0 条）")


def click_pick(session_id: str | None, chat_numbers, index) -> Pick | None:
    """点了对话框里的第 index 行 -> 那一行的消息编号（chat_numbers 由服务器在画对话时记下）。
    行号不对（伪造的事件、页面还没画完）-> None：控件保持原样。

    例：chat_numbers = (1, 2, 2, 3)（第 2 条消息画成了两行），点第 2 行 -> 在第 2 条之后分叉。"""
    if isinstance(index, list) and index:
        index = index[0]
    if not session_id or isinstance(index, bool) or not isinstance(index, int):
        return None
    if not 0 <= index < len(chat_numbers):
        return None
    number = chat_numbers[index]
    return message_pick(session_id, number) if number >= 1 else start_pick(session_id)


def link_pick(session_id: str | None, number: int | None) -> Pick:
    """?session=<id>&m=<k> 打开的页面：第 k 条已经选好；链接没有（合法的）m 时什么都没选。"""
    if not session_id or number is None or number < 1:
        return CLEARED
    return message_pick(session_id, number)


def position(value, session_id: str | None) -> int | None:
    """分叉按钮交回来的值 -> 保留前几条。None = 什么都没选（调用方决定怎么说）；不成立时抛 ForkPickError。

    例："a1b2c3#6"（选中的会话是 a1b2c3）-> 6；"a1b2c3#0" -> 0；3 或 "3"（接口直接给的）-> 3；
    "" / None -> None；"ffff00#6"（别的会话）、"-1"、"2.5"、True -> ForkPickError。"""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        raise ForkPickError(f"分叉位置必须是 0 以上的整数，收到 {value!r}，没有分叉")
    if isinstance(value, int):
        return _counted(value, str(value))
    if isinstance(value, float):
        return _counted(int(value) if value.is_integer() else -1, str(value))
    text = str(value).strip()
    found = _PICK.fullmatch(text)
    if found:
        if found.group(1) != session_id:
            raise ForkPickError("选中的消息属于另一个会话（页面上显示的已经换了）：请在现在的对话里重新点一条，没有分叉")
        return int(found.group(2))
    if _NUMBER.fullmatch(text):
        return int(float(text))
    raise ForkPickError(f"分叉位置必须是 0 以上的整数，收到 {literal_inline(text, 40)}，没有分叉")


def _counted(number: int, shown: str) -> int:
    if number < 0:
        raise ForkPickError(f"分叉位置必须是 0 以上的整数，收到 {literal_inline(shown, 40)}，没有分叉")
    return number


def nothing_picked() -> ForkPickError:
    """按了分叉、却什么都没选：不猜，告诉读者怎么选。"""
    return ForkPickError(f"分叉位置还没选：先在对话里点一条消息（在它之后分叉），或点「{START_LABEL}」；没有分叉")


def result_line(keep: int, child_id: str, added: int, total: int) -> str:
    """分叉成功后写在分叉按钮下面的一行。"""
    inherited = f"继承前 {keep} 条" if keep else "什么都不继承（从空白开始）"
    return (f"✅ 已在第 {keep} 条之后分叉出新会话 {child_id}：{inherited}，新增 {added} 条，共 {total} 条；"
            "会话树和对话已经切到它，分叉表单已清空")
