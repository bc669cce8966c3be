"""fork_control_tab.py — 一个分叉控件的布局和接线：会话树浏览器和练习都用它（逻辑在 fork_control.py）

    对话（Chatbot，点一条消息 = 选位置） ← 页面脚本（fork_control_tab.js）：点完把下面这一块移进视野
    ┌ 🌿 分叉 ──────────────────────────────────────────────────────────┐
    │ 📌 已选中第 6 条：……（picked）          [看不见的位置框 at："<会话>#6"] │
    │ 新分支的第一条消息（可选） · 新分支的标题（可选）                      │
    │ [🌿 在第 6 条之后分叉] [⏮ 从头分叉（0 条）]                            │
    │ ✅ 已在第 6 条之后分叉出新会话 ……（结果行）                            │
    └───────────────────────────────────────────────────────────────────┘

Key insight: 位置不是一个能填数字的框（gradio 的数字框没有值时显示 0，页面一载入就是“0”），而是点出来的选择，
放在看不见的框里；选择、清空、深链接都经 values() 摊到同样五格（FORM），两页的行为因此一样。
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr

from s11_workbench.fork_control import (
    CLEARED,
    FORK_LABEL,
    NO_PICK,
    PICK_HINT,
    START_LABEL,
    Pick,
    click_pick,
    start_pick,
)

FORM = ("fork_at", "fork_text", "fork_title", "picked", "fork_button")   # 分叉后要清空的五格，按这个顺序
# 点一条消息之后，把分叉按钮移进视野（两页共用；lesson_tab.py 把它交给 app.py 装一次）
JS = Path(__file__).with_name("fork_control_tab.js").read_text(encoding="utf-8")
# 脚本把按钮移进视野时，下面留一点空：按钮不贴着屏幕底边
CSS = ".s11-fork-buttons { scroll-margin-bottom: 24px; }\n"


class ForkControl:
    """控件里的各格：picked（说明）、at（看不见的位置框）、text、title、button、start、result（结果行）。"""

    def __init__(self, **controls):
        self.__dict__.update(controls)

    def form(self) -> list:
        """FORM 五格对应的组件。"""
        return [self.at, self.text, self.title, self.picked, self.button]


def build(prefix: str, result_line=None) -> ForkControl:
    """在当前布局里搭一个分叉控件；prefix 是页面的 elem_id 前缀（"s11x"、"s11l"）。
    result_line()：页面自己的结果行（浏览器的结果行都归它管）；不给就在按钮下面新建一行。"""
    picked = gr.Markdown(PICK_HINT, elem_id=f"{prefix}-picked")
    # visible="hidden"：在页面里、看不见；读者不能在这里填数字，只能点消息或「从头分叉」
    at = gr.Textbox(NO_PICK, visible="hidden", show_label=False, max_length=100, elem_id=f"{prefix}-fork-at")
    text = gr.Textbox(label="新分支的第一条消息（可选，以用户身份）", lines=2, max_length=20_000,
                      elem_id=f"{prefix}-fork-text")
    title = gr.Textbox(label="新分支的标题（可选）", max_length=200, elem_id=f"{prefix}-fork-title")
    with gr.Row(elem_id=f"{prefix}-fork-buttons", elem_classes="s11-fork-buttons"):
        button = gr.Button(FORK_LABEL, variant="primary", min_width=160, elem_id=f"{prefix}-fork")
        start = gr.Button(START_LABEL, min_width=140, elem_id=f"{prefix}-fork-start")
    result = result_line() if result_line else gr.Markdown("", elem_id=f"{prefix}-fork-result")
    return ForkControl(picked=picked, at=at, text=text, title=title, button=button, start=start, result=result)


def values(pick: Pick | None, index: int, *, clear_text: bool = True):
    """FORM 第 index 格的新值：pick 是新的选择（None = 清空，什么都没选）。按钮的值就是它的字。"""
    pick = pick or CLEARED
    text = "" if clear_text else gr.skip()
    return (pick.value, text, text, pick.note, pick.label)[index]


def wire_picking(control: ForkControl, chat, view) -> None:
    """点对话里的一条消息 / 点「从头分叉」-> 位置框、说明和按钮上的字；上一次的结果行（比如“还没选”）清掉。
    只在浏览器这一页，不读磁盘。
    view 是页面的 gr.State：它的 session_id 和 chat_numbers（对话框第 i 行是第几条消息）由服务器画对话时记下。"""
    outputs = [control.at, control.picked, control.button, control.result]

    def on_message(current, evt: gr.EventData):
        data = getattr(evt, "_data", None)
        index = data.get("index") if isinstance(data, dict) else None
        pick = click_pick(getattr(current, "session_id", None), getattr(current, "chat_numbers", ()), index)
        return [gr.skip()] * 4 if pick is None else [pick.value, pick.note, pick.label, ""]

    def on_start(current):
        pick = start_pick(getattr(current, "session_id", None))
        return [pick.value, pick.note, pick.label, "" if pick.value else gr.skip()]

    chat.select(on_message, inputs=[view], outputs=outputs, api_visibility="private", queue=False)
    control.start.click(on_start, inputs=[view], outputs=outputs, api_visibility="private", queue=False)
