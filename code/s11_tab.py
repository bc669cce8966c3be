"""s11_tab.py — 8.11 的 Gradio 标签页：一个按钮 + 一个结果区

    [🌿 运行主会话 → 双分支 → 恢复 → 导出]      api_name="run_demo"
    ┌──────────────────────┬──────────────────────┐
    │ 会话树（mermaid）      │ Markdown 导出预览      │
    │ + 文字摘要             │ （恢复后的分支 B）      │
    └──────────────────────┴──────────────────────┘
    ▸ 本次写入的文件（折叠）：路径、字节数、JSON；下载 .md / .html

Key insight: 这里只摆放控件，所有逻辑都在 s11_workbench.run_demo_safely 里（不依赖 gradio，可单测）。
会话文字只进 gr.Markdown（会做 HTML 清洗），从不进 gr.HTML。
"""

from __future__ import annotations

import os

import gradio as gr

from s11_workbench import (
    DRIFT_PLACEHOLDER,
    display_path,
    files_markdown,
    run_demo_safely,
    run_drift_demo_safely,
)

RUN_LABEL = "🌿 运行主会话 → 双分支 → 恢复 → 导出"
TREE_PLACEHOLDER = ("#### 🌳 会话树\n\n👆 点击上方按钮，这里会画出本次运行的会话树："
                    "主会话 → 分支 A / 分支 B（📂 恢复续跑）。")
EXPORT_PLACEHOLDER = "#### 📤 Markdown 导出预览\n\n运行后，这里显示恢复定稿的分支 B 导出的 Markdown 报告。"
FILES_PLACEHOLDER = "运行后，这里列出本次写入的 3 个 JSON 会话文件。"


def intro(sessions_dir: str) -> str:
    return (
        "## 🕹️ 8.11 会话持久化与多分支：存档 · 分叉 · 恢复 · 导出\n\n"
        "🧪 **本页不调用大模型**：它会真实运行 `SessionStore` 的本地存档、分支、恢复和导出逻辑，"
        f"所以不消耗 Token，但会在 `{display_path(os.path.abspath(sessions_dir))}/` 目录下写入演示会话文件。\n\n"
        "点一次按钮，程序一次性跑完 **主会话 → A/B 双分支 → 恢复定稿 → Markdown 导出**；"
        "下方结果区同时展示 **会话树** 与 **导出预览**，没有额外隐藏操作。"
    )


def build(ctx) -> None:
    """在当前 gr.Blocks / gr.Tab 上下文里搭好 8.11 的界面（ctx 见 app.TabContext）。"""
    sessions_dir = ctx.sessions_dir
    gr.Markdown(intro(sessions_dir))
    run_button = gr.Button(RUN_LABEL, variant="primary", size="lg", elem_id="s11-run")
    status = gr.Markdown("", elem_id="s11-status")
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=360):
            tree = gr.Markdown(TREE_PLACEHOLDER, elem_id="s11-tree", container=True, padding=True)
        with gr.Column(scale=1, min_width=360):
            export = gr.Markdown(EXPORT_PLACEHOLDER, elem_id="s11-export", container=True, padding=True,
                                 max_height=720)
    with gr.Accordion("本次写入的文件", open=False, elem_id="s11-files-accordion"):
        files = gr.Markdown(FILES_PLACEHOLDER, elem_id="s11-files", max_height=640)
        with gr.Row():
            markdown_download = gr.DownloadButton("⬇️ 下载 Markdown 导出 (.md)", value=None,
                                                  interactive=False, elem_id="s11-download-md")
            html_download = gr.DownloadButton("⬇️ 下载 HTML 导出 (.html)", value=None,
                                              interactive=False, elem_id="s11-download-html")

    gr.Markdown("---\n### 🧭 会话 ≠ 代码：恢复前先对账\n\n会话分支保存的是推理历史，Git 分支保存的是代码状态。"
                "`SessionStore(..., workspace=...)` 每次存档都记下工作区快照（提交、分支或文件摘要），"
                "`resume()` 恢复前先对比。这个演示只用一个临时目录，跑完即删，不写入会话目录。")
    drift_button = gr.Button("🔍 会话 ≠ 代码：恢复前先对账", variant="secondary", elem_id="s11-drift-run")
    drift = gr.Markdown(DRIFT_PLACEHOLDER, elem_id="s11-drift", container=True, padding=True)
    drift_button.click(run_drift_demo_safely, inputs=None, outputs=drift, api_name="drift_demo",
                       concurrency_limit=16)

    def on_run():
        """/run_demo 的 API 输出：状态、会话树、导出预览、文件清单、.md 路径、.html 路径（失败时为 None）。"""
        run, error = run_demo_safely(sessions_dir)
        if run is None:
            return error, TREE_PLACEHOLDER, EXPORT_PLACEHOLDER, FILES_PLACEHOLDER, None, None
        done = (f"✅ 已写入 {len(run.files)} 个会话文件，用时 {run.elapsed_ms} ms。"
                "展开下方「本次写入的文件」可查看 JSON 并下载导出。")
        return (done, run.tree_markdown, run.export_markdown, files_markdown(run.files),
                run.markdown_download, run.html_download)

    def enable_downloads(markdown_path, html_path):
        return (gr.DownloadButton(interactive=markdown_path is not None),
                gr.DownloadButton(interactive=html_path is not None))

    # 每次点击互不依赖、可以并行（store 的写入是原子的），所以放开默认的“同一时刻只跑一个”。
    # API 只返回普通值（脚本拿到的是文件路径）；按钮是否可点由随后的私有事件决定。
    run_button.click(
        on_run, inputs=None, outputs=[status, tree, export, files, markdown_download, html_download],
        api_name="run_demo", concurrency_limit=16,
    ).then(enable_downloads, inputs=[markdown_download, html_download],
           outputs=[markdown_download, html_download], api_visibility="private", queue=False)
