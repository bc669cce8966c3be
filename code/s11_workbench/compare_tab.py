"""compare_tab.py — 会话树浏览器里的「⚖️ 对比 / 🔀 收敛」面板：只摆控件、接事件，逻辑全在 compare.py

    ┌ ⚖️ 对比 / 🔀 收敛 ───────────────────────────────────────────────────────────────────┐
    │ [A ▾ 分支 A]  [B ▾ 分支 B]   [会话树里选中的 → A] [→ B]   [⚖️ 对比]                       │
    │ ⚖️ A 与 B 是兄弟分支…  A：之后 2 条、0 次工具调用 · B：之后 4 条…                          │
    │ ▸ 前 5 条相同（点开看）                                                                │
    │ | 轮 | A | B |   按轮对齐的两列（手机上每轮上下叠放，没有横向滚动条）                          │
    │ 🗂️ 代码快照的文件级差异                                                                │
    │ 🔀 收敛：胜出的一支 (•) B  ☐ A #6 带过来  [决定……]  [🔀 收敛]                               │
    └──────────────────────────────────────────────────────────────────────────────────────┘

由 explorer_tab.build() 在末尾调用一次：build(ctx, explorer, view, tree, outputs, page_outputs)。收敛成功后把
浏览器切到新节点（explorer.select 的整页结果摊到浏览器的 outputs 上），树和分支图随之画出虚线和“已收敛到 …”。
下面另有一个小面板「🏷️ 标签」：给浏览器里选中的会话的第 k 条消息加标签（store.label，带页面读入时的修订号）。
会话文字只进 Markdown（已转义）、Dropdown / Radio / CheckboxGroup 的纯文本标签，从不进 gr.HTML。
"""

from __future__ import annotations

import gradio as gr
from gradio.context import Context

from s11_workbench.compare import MAX_DECISION_CHARS, Comparer, carry_for

CSS = """
#s11c-diff table { display: table !important; width: 100%; table-layout: fixed; overflow: visible !important; }
#s11c-diff th, #s11c-diff td { overflow-wrap: anywhere; word-break: break-word; vertical-align: top; }
#s11c-diff th:first-child, #s11c-diff td:first-child { width: 3.5em; }
#s11c-result:empty, #s11c-note:empty { display: none; }
@media (max-width: 640px) {
  #s11c-diff table, #s11c-diff tbody, #s11c-diff tr, #s11c-diff td { display: block !important; width: 100% !important; }
  #s11c-diff thead { display: none; }
  #s11c-diff tr { border-top: 2px solid var(--border-color-primary); padding: .3rem 0; }
  #s11c-diff td { border: 0 !important; padding: .15rem .25rem !important; }
  #s11c-diff td:first-child { font-weight: 600; }
  #s11c-diff td:first-child::before { content: "第 "; }
  #s11c-diff td:first-child::after { content: " 轮"; }
  #s11c-diff td:nth-child(2)::before { content: "A　"; font-weight: 600; }
  #s11c-diff td:nth-child(3)::before { content: "B　"; font-weight: 600; }
}
"""
INTRO = ("挑同一棵树上的两个节点 **并排对比**：相同的前缀折叠起来，之后的消息按轮对齐。看完了就 **收敛**："
         "选胜出的一支，勾上另一支里值得留下的消息，写一句决定——会在胜出的一支后面新建一个 🔀 收敛节点，"
         "另一支原样保留。8.11 演示之后，这里默认就是「分支 A」对「分支 B」。")


def build(ctx, explorer, view, tree, outputs: list, page_outputs) -> None:
    """在浏览器里搭好面板。view / tree / outputs / page_outputs 来自 explorer_tab.build()。"""
    comparer = Comparer(ctx.spaces)
    visitor, teacher = ctx.visitor, ctx.teacher
    tab = Context.block
    pair = gr.State(None)

    with gr.Accordion("⚖️ 对比 / 🔀 收敛", open=True, elem_id="s11c-panel") as panel:
        gr.Markdown(INTRO)
        with gr.Row(equal_height=False):
            pick_a = gr.Dropdown([], label="A", elem_id="s11c-a", min_width=260, scale=1)
            pick_b = gr.Dropdown([], label="B", elem_id="s11c-b", min_width=260, scale=1)
        with gr.Row(equal_height=True):
            to_a = gr.Button("会话树里选中的 → A", size="sm", min_width=150, elem_id="s11c-to-a")
            to_b = gr.Button("会话树里选中的 → B", size="sm", min_width=150, elem_id="s11c-to-b")
            compare_button = gr.Button("⚖️ 对比", variant="primary", min_width=120, elem_id="s11c-compare")
        note = gr.Markdown("", elem_id="s11c-note")
        summary = gr.Markdown("", elem_id="s11c-summary")
        with gr.Accordion("相同的前缀", open=False, visible=False, elem_id="s11c-shared") as shared_box:
            shared = gr.Markdown("", elem_id="s11c-shared-text")
        table = gr.Markdown("", elem_id="s11c-diff")
        workspace = gr.Markdown("", elem_id="s11c-workspace")
        with gr.Column(visible=False, elem_id="s11c-converge") as converge_box:
            gr.Markdown("#### 🔀 收敛：选胜出的一支，勾上要带过来的消息，写下决定")
            winner = gr.Radio([], label="胜出的一支（新节点接在它后面）", elem_id="s11c-winner")
            carry = gr.CheckboxGroup([], label="从另一支带过来的消息（可选；每条会记下它来自哪里）",
                                     elem_id="s11c-carry")
            decision = gr.Textbox(label="决定：为什么这样选（作为一条 user 消息保存，显示成 🔀 收敛）", lines=2,
                                  max_length=MAX_DECISION_CHARS, elem_id="s11c-decision",
                                  placeholder="例如：压测数据支持方案 B；A 的 LRU 上限也留着")
            title = gr.Textbox(label="新节点的标题（可选）", max_length=200, elem_id="s11c-title")
            converge_button = gr.Button("🔀 收敛", variant="primary", elem_id="s11c-converge-button")
        result = gr.Markdown("", elem_id="s11c-result")

    with gr.Accordion("🏷️ 给选中会话的一条消息加标签（书签：“最终方案”“从这里走错了”）", open=False,
                      elem_id="s11c-label-panel"):
        with gr.Row(equal_height=True):
            label_at = gr.Number(label="第几条消息（和对话路径里的 #编号 一样）", precision=0, minimum=1,
                                 min_width=200, elem_id="s11c-label-at")
            label_text = gr.Textbox(label="标签（留空 = 去掉）", max_length=80, min_width=200,
                                    elem_id="s11c-label-text")
            label_button = gr.Button("🏷️ 保存标签", min_width=120, elem_id="s11c-label-button")

    picker_outputs = [pick_a, pick_b, note]

    def pickers(token, current, a, b):
        """保留读者挑好的 A、B（仍在这棵树里的话）。"""
        found = comparer.pickers(token, current, a, b)
        return [gr.Dropdown(choices=found.choices, value=found.a), gr.Dropdown(choices=found.choices, value=found.b),
                found.note]

    def fresh(token, current):
        """进入本页、页面加载：默认的一对（8.11 演示之后就是 分支 A / 分支 B）。"""
        return pickers(token, current, None, None)

    def from_tree(token, current, a, b):
        """在会话树（或分支图）里选了一个节点：它成为 B，A 仍在这棵树里就保留。"""
        return pickers(token, current, a, None)

    def take(side):
        def handler(token, current, a, b):
            selected = current.session_id if current is not None else None
            return pickers(token, current, selected if side == "a" else a, selected if side == "b" else b)
        return handler

    def compare(token, current, a, b):
        shown = comparer.compare(token, current, a, b)
        done = shown.pair is not None
        return [shown.notice or "", shown.summary, gr.Accordion(label=shown.shared_label, visible=done, open=False),
                shown.shared, shown.table, shown.workspace, gr.Column(visible=done),
                gr.Radio(choices=shown.winner_choices, value=shown.winner),
                gr.CheckboxGroup(choices=carry_for(shown.pair, shown.winner), value=[]), shown.pair, ""]

    def on_winner(token, current_pair, chosen):
        return gr.CheckboxGroup(choices=comparer.carry_choices(token, current_pair, chosen), value=[])

    def converge(token, current, secret, current_pair, chosen, picked, text, name):
        notice, new_id = comparer.converge(token, current, current_pair, chosen, picked, text, name)
        if new_id is None:
            return [notice, gr.skip(), gr.skip(), *([gr.skip()] * len(outputs))]
        page = page_outputs(explorer.select(token, current, new_id, teacher=secret))
        return [notice, gr.Column(visible=False), "", *page]

    def label(token, current, secret, number, text):
        new_view, notice = comparer.label(token, current, number, text)
        return page_outputs(explorer.render(token, new_view, secret, notice))

    common = {"concurrency_limit": 8, "api_visibility": "private"}
    label_button.click(label, inputs=[visitor, view, teacher, label_at, label_text], outputs=outputs,
                       api_name="explorer_label", concurrency_limit=8)
    panel.expand(pickers, inputs=[visitor, view, pick_a, pick_b], outputs=picker_outputs, **common)
    tree.change(from_tree, inputs=[visitor, view, pick_a, pick_b], outputs=picker_outputs, **common)
    if isinstance(tab, gr.Tab):   # 切到这一页时（从 8.11 标签页跑完演示切过来：A / B 已经是分支 A / 分支 B）；
        tab.select(fresh, inputs=[visitor, view], outputs=picker_outputs, **common)   # 页面载入时不做
    else:
        ctx.ready.then(fresh, inputs=[visitor, view], outputs=picker_outputs, **common)
    to_a.click(take("a"), inputs=[visitor, view, pick_a, pick_b], outputs=picker_outputs, **common)
    to_b.click(take("b"), inputs=[visitor, view, pick_a, pick_b], outputs=picker_outputs, **common)
    compare_button.click(compare, inputs=[visitor, view, pick_a, pick_b],
                         outputs=[note, summary, shared_box, shared, table, workspace, converge_box, winner, carry,
                                  pair, result], api_name="explorer_compare", concurrency_limit=8)
    winner.input(on_winner, inputs=[visitor, pair, winner], outputs=[carry], **common)
    converge_button.click(converge, inputs=[visitor, view, teacher, pair, winner, carry, decision, title],
                          outputs=[result, converge_box, decision, *outputs], api_name="explorer_converge",
                          concurrency_limit=8).then(
        pickers, inputs=[visitor, view, pick_a, pick_b], outputs=picker_outputs, **common)
