"""lab_tab.py — 🧪 为什么要这样写：实验室标签页（只摆控件，逻辑全在 lab.py）

    ### 💥 写到一半被杀                         一个实验一段，顺序同 lab.EXPERIMENTS
    这个实验做什么……
    [▶ 运行：写到一半被杀]                      api_name="lab_kill"
    ┌─────────────────────┬─────────────────────┐
    │ 📖 书中原版          │ 🛡️ 本仓库            │  证据：字节数、异常原文、丢了什么
    └─────────────────────┴─────────────────────┘
    两三句：本仓库哪个函数造成了差别
    ▸ 源码（折叠）：书中原版 | 本仓库              inspect 现场读取

Key insight: 实验都在自己的临时文件夹里跑，不读写任何访客的会话，所以这一页不需要 ctx 里的空间；
"写到一半被杀"每次点击会起两个子进程，所以它单独排队、同一时刻只跑一个，其他实验最多同时跑两个。
"""

from __future__ import annotations

import functools

import gradio as gr

from s11_workbench.lab import BOOK, EXPERIMENTS, OURS, STORE_NAMES, experiment_sources, run_experiment_safely

LABEL = "🧪 为什么要这样写"
# 证据里的异常原文、文件尾巴要整段可见：代码块自动折行，而不是藏在横向滚动条后面
CSS = """
.lab-result pre, .lab-result pre code { white-space: pre-wrap !important; overflow-wrap: anywhere !important;
  word-break: break-word; }
"""
# 每次点击都会起进程或写临时文件：排队而不是一拥而上（2 核的机器上 50 个同学同时点也不会拖垮服务器）
CONCURRENCY = {"kill": ("lab-kill", 1)}
DEFAULT_CONCURRENCY = ("lab", 2)
COLUMN_MIN_WIDTH = 320

INTRO = (
    "## 🧪 为什么要这样写：同一个故障，书中原版和本仓库各跑一遍\n\n"
    "第 8.11 节最后给了几条工程建议：文件要有版本号和迁移策略、要能识别写入中断、导出前要脱敏、"
    "会话要和代码对账。书里印出来的代码一条都没做——而读者会照抄印出来的代码。"
    "下面每个实验都让 **书中原版**（`code/s11_book.py`，一字未改）真的坏一次，"
    "旁边 **本仓库** 的代码挺过同一个故障，再指给你看是哪个函数做到的。\n\n"
    "每个实验都在自己的临时文件夹里运行，几秒内结束，跑完即删，不会碰 `gradio_sessions/` 里的任何会话。"
)


def placeholder(kind: str) -> str:
    return f"#### {'📖' if kind == BOOK else '🛡️'} {STORE_NAMES[kind]}\n\n👆 点击上方按钮运行实验，结果显示在这里。"


def build(ctx) -> None:
    """在当前 gr.Tab 里为 EXPERIMENTS 的每一行搭一段：说明、按钮、两栏结果、源码。"""
    gr.Markdown(INTRO, elem_id="lab-intro")
    for key, experiment in EXPERIMENTS.items():
        _experiment_row(key, experiment)


def _experiment_row(key: str, experiment) -> None:
    book_code, ours_code = experiment_sources(key)
    with gr.Group(elem_id=f"lab-{key}", elem_classes=["lab-experiment"]):
        gr.Markdown(f"### {experiment.title}\n\n{experiment.question}", elem_id=f"lab-{key}-question",
                    padding=True)
        button = gr.Button(f"▶ 运行：{experiment.title}", variant="primary", elem_id=f"lab-{key}-run")
        with gr.Row(equal_height=False):   # 两栏；窄屏上每栏不足 COLUMN_MIN_WIDTH 时上下排
            with gr.Column(min_width=COLUMN_MIN_WIDTH):
                book = gr.Markdown(placeholder(BOOK), elem_id=f"lab-{key}-book", elem_classes=["lab-result"],
                                   container=True, padding=True)
            with gr.Column(min_width=COLUMN_MIN_WIDTH):
                ours = gr.Markdown(placeholder(OURS), elem_id=f"lab-{key}-ours", elem_classes=["lab-result"],
                                   container=True, padding=True)
        gr.Markdown(f"🔎 **差别在哪里：** {experiment.explanation}", elem_id=f"lab-{key}-why", padding=True)
        with gr.Accordion("查看源码：书中原版 ↔ 本仓库", open=False, elem_id=f"lab-{key}-source"):
            with gr.Row(equal_height=False):
                with gr.Column(min_width=COLUMN_MIN_WIDTH):
                    gr.Code(book_code, language="python", label=f"📖 {STORE_NAMES[BOOK]}", interactive=False,
                            max_lines=40, wrap_lines=True, elem_id=f"lab-{key}-book-code")
                with gr.Column(min_width=COLUMN_MIN_WIDTH):
                    gr.Code(ours_code, language="python", label=f"🛡️ {STORE_NAMES[OURS]}", interactive=False,
                            max_lines=40, wrap_lines=True, elem_id=f"lab-{key}-ours-code")
    concurrency_id, limit = CONCURRENCY.get(key, DEFAULT_CONCURRENCY)
    button.click(functools.partial(run_experiment_safely, key), inputs=None, outputs=[book, ours],
                 api_name=f"lab_{key}", concurrency_id=concurrency_id, concurrency_limit=limit)
