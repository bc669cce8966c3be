"""history_tab.py — 会话树浏览器里的「📜 操作历史 · ↶ 撤销 / ↷ 重做」面板：只摆控件、接事件，逻辑全在 history_panel.py

    ┌ 📜 操作历史 · ↶ 撤销 / ↷ 重做 ─────────────────────────────────────────────┐
    │ [↶ 撤销] [↷ 重做]                                                            │
    │ ↶ 撤销了第 7 步：分叉了分支 B.A（自第 6 条）        ← 结果就写在这两个按钮下面   │
    │ ↶ 撤销会倒回第 6 步：续写了分支 B：revision 2 → 3                               │
    │ - 第 7 步 · 12-07 03:40:12 · ~~分叉了分支 B.A（自第 6 条）~~（↶ 已撤销）         │
    │ 🕰️ 选中会话的每一版  (•) 第 3 版 · 9 条 · ◀ 现在  ( ) 第 2 版 · 7 条 …          │
    │ [👁️ 看这一版] [⏪ 回到这一版]                                                   │
    │ ⏪ 已把 分支 B 回到第 2 版……                        ← 结果写在这两个按钮下面     │
    │ 👁️ 只读：分支 B 的第 2 版……（对话，和浏览器同一个画法）                          │
    └────────────────────────────────────────────────────────────────────────────┘

由 explorer_tab.build() 在动作区里调 panel() 摆好控件，最后调 wire(...) 接事件（和 agent_folders_tab 一样）。
撤销、重做、回到某一版之后，浏览器的整页（explorer.render）摊到浏览器的 outputs 上：列表、树、回收站、选中都跟着变。
浏览器里做了别的动作（视图 gr.State 变了）时面板自己重画；只读来源（书架、老师查看）按钮都不显示。
会话文字只进转义过的 Markdown、Radio 的纯文字标签和 Chatbot，从不进 gr.HTML。
"""

from __future__ import annotations

import gradio as gr
from gradio.context import Context

from s11_workbench.history_panel import HistoryPage, HistoryPanel

TITLE = "📜 操作历史 · ↶ 撤销 / ↷ 重做"
CSS = """
#s11h-timeline { max-height: 320px; overflow-y: auto; contain: inline-size; }
#s11h-timeline li, #s11h-next p, #s11h-revisions label { overflow-wrap: anywhere; }
#s11h-looking, #s11h-looking-note, #s11h-next { contain: inline-size; }
#s11h-undo-result:empty, #s11h-revision-result:empty, #s11h-looking-note:empty { display: none; }
"""
INTRO = ("每一步（新建、续写、分叉、收敛、删除、恢复、导入）都记在空间的操作日志里。**↶ 撤销** 倒回最近的一步："
         "撤销分叉 = 新分支进回收站，撤销续写 = 上一版的内容存成新的一版，撤销删除 = 取回；**↷ 重做** 再做一遍。"
         "什么都不会丢，旧版一直读得到。")
UNDO_LABEL, REDO_LABEL = "↶ 撤销", "↷ 重做"
LOOK_LABEL, BACK_LABEL = "👁️ 看这一版", "⏪ 回到这一版"
# 面板的输出，按这个顺序（history_outputs 给出同样顺序的值）
NAMES = ("undo", "redo", "undo_result", "next_step", "timeline", "revisions", "revisions_note", "back",
         "revision_result", "looking_note", "looking", "looked")


class _Panel:
    """面板的控件；wire() 接好事件。"""

    def __init__(self, **controls):
        self.__dict__.update(controls)

    def outputs(self) -> list:
        return [getattr(self, name) for name in NAMES]

    def wire(self, explorer, ctx, view, outputs: list, page_outputs) -> None:
        """接事件。view / outputs / page_outputs 来自 explorer_tab.build()：撤销之后浏览器整页重画。"""
        panel = HistoryPanel(explorer)
        visitor, teacher = ctx.visitor, ctx.teacher
        mine = self.outputs()
        keep_explorer = [gr.skip()] * len(outputs)

        def with_explorer(page: HistoryPage) -> list:
            return history_outputs(page) + (page_outputs(page.explorer) if page.explorer is not None else keep_explorer)

        def show(token, current, secret, revision, looked):
            return history_outputs(panel.show(token, current, secret, revision, looked))

        def undo(token, current, secret):
            return with_explorer(panel.undo(token, current, secret))

        def redo(token, current, secret):
            return with_explorer(panel.redo(token, current, secret))

        def look(token, current, secret, revision):
            return history_outputs(panel.look(token, current, revision, secret))

        def back(token, current, secret, revision):
            return with_explorer(panel.revert(token, current, revision, secret))

        steps = {"concurrency_limit": 8, "trigger_mode": "once"}
        self.undo.click(undo, inputs=[visitor, view, teacher], outputs=mine + outputs, api_name="explorer_undo",
                        **steps)
        self.redo.click(redo, inputs=[visitor, view, teacher], outputs=mine + outputs, api_name="explorer_redo",
                        **steps)
        self.look.click(look, inputs=[visitor, view, teacher, self.revisions], outputs=mine,
                        api_name="explorer_revision_look", **steps)
        self.back.click(back, inputs=[visitor, view, teacher, self.revisions], outputs=mine + outputs,
                        api_name="explorer_revert", **steps)
        # Chatbot 自带的 🗑️ 只是关掉这里的显示（那一版还在）：连说明一起收起
        self.looking.clear(lambda: (gr.Chatbot(visible=False), "", ()), outputs=[self.looking, self.looking_note,
                                                                                 self.looked], queue=False)
        # 浏览器里的任何动作都会换掉视图（选中、修订号……）：面板跟着重画（结果行不动）
        quiet = {"concurrency_limit": 8, "api_visibility": "private", "show_progress": "hidden"}
        refresh_inputs = [visitor, view, teacher, self.revisions, self.looked]
        view.change(show, inputs=refresh_inputs, outputs=mine, trigger_mode="always_last", **quiet)
        tab = Context.block   # wire() 在 explorer_tab.build() 的最后调用：这时就是浏览器所在的 gr.Tab
        if isinstance(tab, gr.Tab):   # 切到这一页时画（第一次打开、从 8.11 标签页刚跑完演示切回来）；页面载入时不画
            tab.select(show, inputs=refresh_inputs, outputs=mine, **quiet)   # （链接打开时 view.change 会画）
        else:
            ctx.ready.then(show, inputs=refresh_inputs, outputs=mine, **quiet)


def panel() -> _Panel:
    """在当前位置（浏览器的动作区）摆好面板的控件。"""
    with gr.Accordion(TITLE, open=True, elem_id="s11h-panel"):
        gr.Markdown(INTRO)
        with gr.Row(equal_height=True):
            undo = gr.Button(UNDO_LABEL, interactive=False, min_width=110, elem_id="s11h-undo")
            redo = gr.Button(REDO_LABEL, interactive=False, min_width=110, elem_id="s11h-redo")
        undo_result = gr.Markdown("", elem_id="s11h-undo-result", elem_classes="s11x-result")
        next_step = gr.Markdown("", elem_id="s11h-next")
        timeline = gr.Markdown("", elem_id="s11h-timeline")
        revisions = gr.Radio([], label="🕰️ 选中会话的每一版（新的在前，最近 12 版）", elem_id="s11h-revisions")
        revisions_note = gr.Markdown("", elem_id="s11h-revisions-note")
        with gr.Row(equal_height=True):
            look = gr.Button(LOOK_LABEL, min_width=110, elem_id="s11h-look")
            back = gr.Button(BACK_LABEL, min_width=110, elem_id="s11h-back")
        revision_result = gr.Markdown("", elem_id="s11h-revision-result", elem_classes="s11x-result")
        looking_note = gr.Markdown("", elem_id="s11h-looking-note")
        looking = gr.Chatbot([], allow_tags=False, sanitize_html=True, render_markdown=True, latex_delimiters=[],
                             height=400, show_label=False, feedback_options=None, group_consecutive_messages=False,
                             buttons=["copy"], visible=False, elem_id="s11h-looking")
        looked = gr.State(())
    return _Panel(undo=undo, redo=redo, undo_result=undo_result, next_step=next_step, timeline=timeline,
                  revisions=revisions, revisions_note=revisions_note, look=look, back=back,
                  revision_result=revision_result, looking_note=looking_note, looking=looking, looked=looked)


def history_outputs(page: HistoryPage) -> list:
    """HistoryPage -> NAMES 各控件的新值。结果行：area 那一块写结果，另一块清空；area 为 None 时都不动。"""
    def result(area: str):
        if page.area is None:
            return gr.skip()
        return page.notice if page.area == area else ""

    values = {
        "undo": gr.Button(visible=page.writable, interactive=page.can_undo),
        "redo": gr.Button(visible=page.writable, interactive=page.can_redo),
        "undo_result": result("undo"),
        "next_step": page.next_step,
        "timeline": page.timeline,
        "revisions": gr.Radio(choices=page.revision_choices, value=page.revision),
        "revisions_note": page.revisions_note,
        "back": gr.Button(visible=page.writable),
        "revision_result": result("revisions"),
        "looking_note": gr.skip() if page.looking_note is None else page.looking_note,
        "looking": gr.skip() if page.looking is None else gr.Chatbot(value=page.looking, visible=bool(page.looking)),
        "looked": gr.skip() if page.looked is None else page.looked,
    }
    return [values[name] for name in NAMES]
