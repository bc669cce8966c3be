"""shown.py — 页面上已显示的属性：属性没变的控件只回值，变了才回整个组件（explorer_tab、lesson_tab 共用，不 import gradio）

    事件 ──> ShownEvent(action, names, outputs)(令牌, 视图, 老师密钥, *控件的值, shown)
               └─> outputs(action(…), names, shown)：每一格调 Shown.prop(键, 现在的属性, 整个组件, 只回值)
                     shown[键] == 现在的属性 ──> 只回值（plain）
                     否则                    ──> 回整个组件（update()），记下现在的属性
               └─> 最后一格 "shown" = Shown.merged()：这次发过的属性 + 上次记着、这次没碰的

    例：shown = {"tree": ("a", "b")}；这次树的选项还是 ("a", "b") ──> 只回选中的值；变成 ("a", "b", "c") ──> 回
    gr.Radio(choices=…)，shown 记成 {"tree": ("a", "b", "c")}。

Key insight: gradio 处理一个带属性的更新（gr.Radio(choices=…)、gr.DownloadButton(…)，连 gr.skip() 也算）要在
事件循环里新建一个组件，全班同时点时所有页面都在那里排队；只回值的那一格在处理函数的线程里整理好
（gradio_fixes.listen），不占事件循环（load_classroom.py 量过）。所以每个页面在一个 gr.State 里记着它已有的属性。
"""

from __future__ import annotations


class Shown:
    """一次事件里“这个页面已有哪些属性”：before 是上次记下的（gr.State 的值；不是 dict = 不知道，全部按组件发）。"""

    def __init__(self, before):
        self.before = before if isinstance(before, dict) else {}
        self.sent: dict = {}

    def prop(self, key: str, props, update, plain):
        """属性和页面上已有的一样：只回值（plain；可调用的就调它，比如布局块没有值时的 gr.skip）；
        否则回整个组件（update()），并记下现在的属性。"""
        self.sent[key] = props
        if key in self.before and self.before[key] == props:
            return plain() if callable(plain) else plain
        return update()

    def merged(self) -> dict:
        """存回 gr.State 的：这次发过的属性，加上上次记着、这次没碰的。"""
        kept = {key: value for key, value in self.before.items() if key not in self.sent}
        return {**kept, **self.sent}


class ShownEvent:
    """把一个动作接成事件处理函数：输入按 API 的顺序 (令牌, 视图, 老师密钥, *控件的值, 已显示的属性) 进来，
    交给 action(令牌, 视图, *控件的值, teacher=老师密钥)，拿回的整页由 outputs(页, names, 已显示的属性) 摊到各控件上。"""

    def __init__(self, action, names: tuple, outputs):
        self.action, self.names, self.outputs = action, names, outputs

    def __call__(self, token, current, secret, *values):
        *values, shown = values
        return self.outputs(self.action(token, current, *values, teacher=secret), self.names, shown)
