"""story_tab.py — 「👣 一步一步看磁盘」标签页：书中的演示一步一页，每页是那一刻的会话目录

    gr.Walkthrough（gradio 自带的分步布局：宽屏一排步骤，手机上是进度条）
    ┌ 1 空目录 ─ 2 新建主会话 ─ 3 追加并存档 ─ 4 分叉出分支 A ─ 5 分叉出分支 B ─ 6 恢复分支 B ─ 7 导出 ┐
    │ ### 第 4 / 7 步 · 分叉出分支 A    书中那一行代码 · 📖 书里的一句话 · 和上一步相比        │
    │ ┌ 🌳 会话树（文字） ┐ ┌ 📁 sessions/ 里的文件：🆕 / ✏️ 的那几行加粗 ┐                      │
    │ [◀ 上一步] [下一步 ▶] [⟲ 重来]                                                            │
    └───────────────────────────────────────────────────────────────────────────────────────────┘
    第 1 步的 下一步 ▶ ──> story.run_story()：临时文件夹里跑一遍，七页一次算好，填进七个 Step
    其余按钮只翻页（gr.Walkthrough(selected=n)），⟲ 重来 回到第 1 步、清掉算好的七页（下一次是新的一遍、新的 ID）

Key insight: 翻页时服务器什么都不算（一次不排队的小请求，只回一个 selected）——每个 Step 里的按钮本来就知道
自己要去第几步；唯一的计算
（拍七张快照，约 10 毫秒 CPU）在第 1 步的“下一步”里做一次。这一遍属于这个页面（gr.State），不写访客的空间。
会话文字只进 gr.Markdown（围栏里或转义过），从不进 gr.HTML。
"""

from __future__ import annotations

import logging
from pathlib import Path

import gradio as gr

from s11_workbench import story

log = logging.getLogger(__name__)

LABEL = "👣 一步一步看磁盘"
CSS = """
#s11s-walk pre, #s11s-walk pre code { white-space: pre-wrap !important; overflow-wrap: anywhere; }
#s11s-walk .prose, #s11s-walk .prose * { overflow-wrap: anywhere; }
#s11s-walk table { width: 100%; table-layout: auto; }
#s11s-walk td, #s11s-walk th { padding: 4px 6px; }
#s11s-walk td code { word-break: break-all; }
#s11s-walk td:not(:first-child), #s11s-walk th { white-space: nowrap; }
/* 这一步出现或变了的文件：那一行是粗体（story.files_table），这里再给它一个底色（深色模式另配，文字对比度都够） */
#s11s-walk tr:has(td strong) { background: #fef3c7; }
.dark #s11s-walk tr:has(td strong) { background: #4a3510; }
/* 手机上 gradio 在进度条上方写英文的“Step 4/7:”：藏起来，只留步骤名（每页的标题里另有“第 4 / 7 步”） */
#s11s-walk .step-title strong { display: none; }
#s11s-status:empty { display: none; }
.s11s-controls button { min-width: 0 !important; }
@media (max-width: 520px) {
  #s11s-walk table { font-size: 12px; }
  #s11s-walk td, #s11s-walk th { padding: 3px 3px; }
  #s11s-walk .block.padded { padding: 8px 6px; }
}
"""
INTRO = ("## 👣 一步一步看磁盘：主会话 → 双分支 → 恢复 → 导出\n\n"
         "8.11 页一次跑完的那个演示，在这里一步一停：每一步之后，会话目录里有哪些文件、哪个是新出现或刚变的、"
         "它有多少字节、`revision` 和 `fork_point` 是几，和上一步比变了什么。"
         "这一遍跑在只属于这个页面的临时文件夹里，不写进你的会话空间。")
# 翻页之后，如果这一页的开头已经滚出了屏幕（手机上按钮在长长的一页底下），把它滚回来
SCROLL_TO_TOP = Path(__file__).with_name("story_tab.js").read_text(encoding="utf-8")
LAST = len(story.STEPS) - 1


def go_to(number: int):
    def select():
        return gr.Walkthrough(selected=number)
    return select


def page_values(pages: list) -> list:
    return [text for page in pages for text in page]


def build(ctx) -> None:
    """在当前 gr.Tab 里搭好分步演示（ctx 见 app.TabContext；这一页不用访客的空间）。"""
    gr.Markdown(INTRO, elem_id="s11s-intro")
    ran = gr.State(False)   # 这个页面是否已经算好七页（⟲ 重来 把它清掉）
    waiting = story.waiting_pages()
    views, controls = [], []
    with gr.Walkthrough(selected=0, elem_id="s11s-walk") as walk:
        for number, page in enumerate(waiting):
            with gr.Step(story.STEPS[number].title, id=number, elem_id=f"s11s-step-{number}"):
                if number == 0:
                    status = gr.Markdown("", elem_id="s11s-status")
                head = gr.Markdown(page.head, elem_id=f"s11s-head-{number}")
                with gr.Row(equal_height=False):
                    with gr.Column(scale=2, min_width=280):
                        tree = gr.Markdown(page.tree, elem_id=f"s11s-tree-{number}", container=True)
                    with gr.Column(scale=3, min_width=280):
                        files = gr.Markdown(page.files, elem_id=f"s11s-files-{number}", container=True)
                views += [head, tree, files]
                controls.append(step_buttons(number))

    def on_start(already):
        """第 1 步的 下一步 ▶：还没算就先算好七页（一次），再翻到第 2 步；算不了时留在第 1 步，状态行是一句中文。"""
        if already:
            return [gr.skip(), ""] + [gr.skip()] * len(views) + [gr.Walkthrough(selected=1)]
        try:
            pages = story.story_pages(story.run_story())
        except story.StoryError as error:
            log.warning("s11 story failed: %s", error)
            return [False, f"⚠️ {error}"] + [gr.skip()] * len(views) + [gr.skip()]
        return [True, ""] + page_values(pages) + [gr.Walkthrough(selected=1)]

    def on_restart():
        """⟲ 重来：回到第 1 步，七页换回占位；下一次“下一步”在新的临时文件夹里重新跑（新的 ID）。"""
        return [False, ""] + page_values(waiting) + [gr.Walkthrough(selected=0)]

    everything = [ran, status, *views, walk]
    for number, (back, forward, restart) in enumerate(controls):
        if number == 0:
            moves = [forward.click(on_start, inputs=[ran], outputs=everything, api_visibility="private",
                                   concurrency_limit=8)]
        else:   # 只翻页：不回服务器算任何东西，也不排队
            moves = [back.click(go_to(number - 1), outputs=[walk], api_visibility="private", queue=False),
                     restart.click(on_restart, outputs=everything, api_visibility="private", queue=False)]
            if forward is not None:
                moves.append(forward.click(go_to(number + 1), outputs=[walk], api_visibility="private",
                                           queue=False))
        for move in moves:
            move.then(None, js=SCROLL_TO_TOP, queue=False)


def step_buttons(number: int) -> tuple:
    """一步下面的三个按钮：◀ 上一步（第一步没有）、下一步 ▶（最后一步没有）、⟲ 重来（第一步没有）。"""
    with gr.Row(elem_classes="s11s-controls"):
        back = gr.Button("◀ 上一步", size="sm", elem_id=f"s11s-back-{number}") if number > 0 else None
        forward = (gr.Button("下一步 ▶", variant="primary", size="sm", elem_id=f"s11s-next-{number}")
                   if number < LAST else None)
        restart = gr.Button("⟲ 重来", size="sm", elem_id=f"s11s-restart-{number}") if number > 0 else None
    return back, forward, restart
