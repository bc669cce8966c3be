"""demo_tab.py — 8.11 的 Gradio 标签页：一个按钮 + 一个结果区

    [🌿 运行主会话 → 双分支 → 恢复 → 导出]                         api_name="run_demo"
    ┌ #s11-result（唯一结果区，没有折叠面板，也没有自带滚动条的框）──────────────┐
    │ ✅ 状态                                                                  │
    │ ┌ 会话树 ────────────────┐ ┌ 分支 B 的导出预览 ─────────────────────────┐ │
    │ │ 文字摘要 + mermaid      │ │ 🟦 1–5 继承 · 🟩 6–7 分叉 · 🟧 8–9 恢复后  │ │
    │ │ 五步：存档 读档 分叉…   │ │ [⬇️ .md] [⬇️ .html]                        │ │
    │ │ [👣 一步一步看…]        │ │   （链接：切到「👣 一步一步看磁盘」页）    │ │
    │ └────────────────────────┘ └────────────────────────────────────────────┘ │
    │ 字段说明：version · revision · fork_point · workspace · created_ns · source │
    │ ┌ ① 主会话 ┐ ┌ ② 分支 A ┐ ┌ ③ 分支 B：revision 1 → 2，messages 7 → 9 ┐      │
    └──────────────────────────────────────────────────────────────────────────┘
    窄屏（手机）时各列自动上下排，文字树在图之前。

Key insight: 这里只摆放控件，所有逻辑都在 demo.py 里（不依赖 gradio，可单测）。
会话文字只进 gr.Markdown（会做 HTML 清洗），从不进 gr.HTML。
"""

from __future__ import annotations

import logging
from pathlib import Path

import gradio as gr
from gradio.context import Context

from s11_text import public_name
from s11_workbench import story_tab
from s11_workbench.demo import explain_error, field_notes_markdown, files_markdown, run_demo_safely
from s11_workbench.gradio_fixes import listen, open_tab_js
from s11_workbench.spaces import SpaceError

log = logging.getLogger(__name__)

LABEL = "8.11 会话持久化与多分支"
# 结果区：没有自带滚动条的框，长内容交给整页滚动；代码与 JSON 自动折行，手机上不会横向溢出
CSS = """
#s11-result pre, #s11-result pre code { white-space: pre-wrap !important; overflow-wrap: anywhere; word-break: break-word; }
#s11-result pre { overflow: visible !important; max-height: none !important; }
#s11-result .prose, #s11-result .prose * { overflow-wrap: anywhere; }
#s11-result td code { overflow-wrap: normal; white-space: nowrap; }
#s11-result .mermaid, #s11-result svg { max-width: 100%; height: auto; }
#s11-status:empty { display: none; }
@media (max-width: 520px) { #s11-result .block.padded { padding: 8px 6px; } }
/* 导出预览的三个分组标题：继承 / 分叉新增 / 恢复后追加，各一种颜色（深色模式另配底色，文字对比度都 ≥ 4.5） */
#s11-export h2 { font-size: 1rem; margin: 1.4em 0 .6em; padding: .45em .75em; border-left: 6px solid;
  border-radius: 6px; color: #111827; }
#s11-export h2:nth-of-type(1) { border-color: #2563eb; background: #dbeafe; }
#s11-export h2:nth-of-type(2) { border-color: #16a34a; background: #dcfce7; }
#s11-export h2:nth-of-type(3) { border-color: #d97706; background: #ffedd5; }
.dark #s11-export h2 { color: #f3f4f6; }
.dark #s11-export h2:nth-of-type(1) { background: #1e3a5f; }
.dark #s11-export h2:nth-of-type(2) { background: #14432a; }
.dark #s11-export h2:nth-of-type(3) { background: #4a2c0a; }
"""
RUN_LABEL = "🌿 运行主会话 → 双分支 → 恢复 → 导出"
TREE_PLACEHOLDER = ("#### 🌳 会话树\n\n👆 点击上方按钮，这里会画出本次运行的会话树："
                    "主会话 → 分支 A / 分支 B（📂 恢复续跑），并列出这一次点击的五个步骤。")
EXPORT_PLACEHOLDER = ("#### 📤 Markdown 导出预览\n\n运行后，这里显示恢复定稿的分支 B 导出的 Markdown 报告，"
                      "按 继承 / 分叉新增 / 恢复后追加 分成三组。")
FILE_NAMES = ("① 🌱 主会话", "② 🌿 分支 A", "③ 🌿 分支 B")
STORY_LINK = "👣 一步一步看：每一步之后，会话目录里多了什么、变了什么"


def intro(sessions_dir: str) -> str:
    return (
        "## 🕹️ 8.11 会话持久化与多分支：存档 · 读档 · 分叉 · 恢复 · 导出\n\n"
        "🧪 **本页不调用大模型**：它会真实运行 `SessionStore` 的本地存档、分支、恢复和导出逻辑，"
        f"所以不消耗 Token，但会在 `{public_name(sessions_dir)}/` 目录下写入演示会话文件。\n\n"
        "点一次按钮，程序一次性跑完 **主会话 → A/B 双分支 → 恢复定稿 → Markdown 导出**；"
        "下方唯一结果区同时展示 **会话树摘要**、**Markdown 导出预览**、**三个会话文件** 与下载，没有额外隐藏操作。"
    )


def file_placeholder(name: str) -> str:
    return f"#### {name}\n\n运行后，这里显示它的 JSON 文件原文。"


# 下载按钮可不可点只看状态行，只在浏览器里算（为什么见 demo_tab.js）
ENABLE_DOWNLOADS = Path(__file__).with_name("demo_tab.js").read_text(encoding="utf-8")


def story_link(tab) -> None:
    """会话树下面的一个链接按钮：一次点击切到「👣 一步一步看磁盘」（同一个演示，每一步之后看一次磁盘）。
    这一页不在 app.py 的 gr.Tabs 里时（单独搭这一页）不放。"""
    tabs = tab.parent if isinstance(tab, gr.Tab) else None
    if not isinstance(tabs, gr.Tabs):
        return
    link = gr.Button(STORY_LINK, size="sm", variant="secondary", elem_id="s11-to-story")
    link.click(None, js=open_tab_js(story_tab.LABEL))   # 在浏览器里切：gr.Tabs 不当输出（见 open_tab_js）


def enable_run_button():
    return gr.Button(interactive=True)


def build(ctx) -> None:
    """在当前 gr.Blocks / gr.Tab 上下文里搭好 8.11 的界面（ctx 见 app.TabContext）。"""
    sessions_dir = ctx.sessions_dir
    tab = Context.block   # app.py 的 gr.Tab（单独搭这一页的测试里不是）：结果区里那个链接要切到它的兄弟页
    gr.Markdown(intro(sessions_dir), elem_id="s11-intro")
    # 页面加载事件（ctx.ready）领到空间令牌之前按钮不可点：太早点击只会得到“缺少空间令牌”
    run_button = gr.Button(RUN_LABEL, variant="primary", size="lg", elem_id="s11-run",
                           interactive=ctx.ready is None)
    if ctx.ready is not None:
        ctx.ready.then(enable_run_button, inputs=None, outputs=run_button, api_visibility="private", queue=False)
    with gr.Column(elem_id="s11-result"):
        status = gr.Markdown("", elem_id="s11-status")
        with gr.Row(equal_height=False, elem_id="s11-story"):
            with gr.Column(scale=2, min_width=300):
                tree = gr.Markdown(TREE_PLACEHOLDER, elem_id="s11-tree", container=True)
                story_link(tab)
            with gr.Column(scale=3, min_width=300):
                export = gr.Markdown(EXPORT_PLACEHOLDER, elem_id="s11-export", container=True)
                with gr.Row(elem_id="s11-downloads"):
                    markdown_download = gr.DownloadButton("⬇️ 下载 Markdown 导出 (.md)", value=None,
                                                          interactive=False, elem_id="s11-download-md",
                                                          min_width=160)
                    html_download = gr.DownloadButton("⬇️ 下载 HTML 导出 (.html)", value=None,
                                                      interactive=False, elem_id="s11-download-html",
                                                      min_width=160)
        gr.Markdown(field_notes_markdown(), elem_id="s11-field-notes")
        with gr.Row(equal_height=False, elem_id="s11-files"):
            file_views = []
            for number, name in enumerate(FILE_NAMES, 1):
                with gr.Column(min_width=280):
                    file_views.append(gr.Markdown(file_placeholder(name), elem_id=f"s11-file-{number}",
                                                  container=True))

    def on_run(token):
        """/run_demo(token) 的 API 输出（按顺序）：状态、会话树、导出预览、3 个会话文件卡片、.md 路径、.html 路径。

        token 是本浏览器的空间令牌（ctx.visitor）：演示写进访客自己的空间，会话树浏览器里能接着分叉。
        失败时（含令牌无效、点得太快、空间已满）状态是一句以 ⚠️ 开头的中文，其余恢复成占位文字，两个路径为 None。
        """
        try:
            space = ctx.spaces.open(token).writable()
            space.throttle()
            space.require_room(sessions=3, nbytes=64 * 1024)
            run, error = run_demo_safely(space.folder, shown_from=sessions_dir)
        except SpaceError as refusal:
            run, error = None, f"⚠️ {refusal}"
        except OSError as failure:   # 建不了访客的空间目录（会话根目录坏了）：同样一句中文，说清是哪个目录
            log.exception("s11 space folder unavailable under %s", sessions_dir)
            run, error = None, explain_error(failure, sessions_dir)
        if run is None:
            return (error, TREE_PLACEHOLDER, EXPORT_PLACEHOLDER, *map(file_placeholder, FILE_NAMES), None, None)
        done = (f"✅ 已写入 {len(run.files)} 个会话文件，用时 {run.elapsed_ms} ms。"
                "往下看：会话树、分支 B 的导出（按来历分三组）、三个会话文件，下载按钮在导出预览下方。")
        return (done, run.tree_markdown, run.preview_markdown, *files_markdown(run.files),
                run.markdown_download, run.html_download)

    # 每次点击互不依赖、可以并行（store 的写入是原子的），所以放开默认的“同一时刻只跑一个”。
    # API 只返回普通值（脚本拿到的是文件路径）；按钮是否可点由随后的私有事件决定。
    listen(
        run_button.click, on_run, [status, tree, export, *file_views, markdown_download, html_download],
        inputs=[ctx.visitor], api_name="run_demo", concurrency_limit=16,
    ).then(None, inputs=[status], outputs=[markdown_download, html_download], js=ENABLE_DOWNLOADS,
           api_visibility="private", queue=False)
