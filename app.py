"""app.py — 本书配套工作台：每一节一个标签页

    python app.py [--host 127.0.0.1] [--port 7860] [--sessions-dir gradio_sessions]

    SECTIONS ──> 每个模块一个 build(ctx) ──> gr.Tab      ctx = TabContext(sessions_dir, spaces, visitor)
    新增一节 = 写一个 code/sNN_tab.py + 在 SECTIONS 里加一行。

Key insight: 这里只是外壳。gradio 导入要 ~5 秒，所以先打印一句提示再导入；逻辑全在 code/ 里。
全程离线：主题只用系统字体，不加载 Google Fonts，关闭统计上报。
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path
from typing import Any, NamedTuple

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

HERE = Path(__file__).resolve().parent
# code/ 是一组课程文件而不是包：叫 code 的包会遮住标准库的 code 模块（pdb 要用）
sys.path.insert(0, str(HERE / "code"))

SECTIONS = [
    ("8.11 会话持久化与多分支", "s11_tab"),
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
DEFAULT_SESSIONS_DIR = HERE / "gradio_sessions"
# Gradio 的下载缓存：每 10 分钟清一次超过 1 小时的文件，一堂长课里不会无限增长
DELETE_CACHE = (600, 3600)

SANS_FONTS = ["system-ui", "-apple-system", "Segoe UI", "PingFang SC", "Hiragino Sans GB",
              "Microsoft YaHei", "Noto Sans CJK SC", "Noto Sans SC", "WenQuanYi Micro Hei",
              "Apple Color Emoji", "Segoe UI Emoji", "Noto Color Emoji", "sans-serif"]
MONO_FONTS = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "DejaVu Sans Mono",
              "Noto Sans Mono CJK SC", "Noto Color Emoji", "monospace"]

CSS = """
.gradio-container { max-width: 1400px !important; margin: 0 auto !important; }
#s11-tree .mermaid, #s11-tree svg { max-width: 100%; }
#s11-tree pre, #s11-tree pre code, #s11-export pre, #s11-export pre code { white-space: pre-wrap !important; overflow-wrap: anywhere; }
#s11-status:empty { display: none; }
"""


class TabContext(NamedTuple):
    """每个标签页的 build(ctx) 拿到的东西。按访客区分的数据只经由 visitor（gr.BrowserState）传进事件。"""
    sessions_dir: str   # 会话根目录（--sessions-dir）
    spaces: Any         # s11_spaces.Spaces：每个浏览器一个私有空间（尚未接入时为 None）
    visitor: Any        # gr.BrowserState：本浏览器的空间令牌


def launch_options() -> dict:
    """传给 launch() 的主题与样式（Gradio 6 起 theme/css 属于 launch，不属于 Blocks）。"""
    import gradio as gr
    theme = gr.themes.Soft(primary_hue="emerald", secondary_hue="sky", neutral_hue="slate",
                           font=SANS_FONTS, font_mono=MONO_FONTS)
    return {"theme": theme, "css": CSS, "footer_links": ["api", "settings"], "ssr_mode": False}


def build_app(sessions_dir: str | os.PathLike = DEFAULT_SESSIONS_DIR):
    """搭好整个工作台并返回 gr.Blocks（测试可以在进程内 launch 它）。"""
    import gradio as gr
    with gr.Blocks(title="第 8 章 · Agent 工作台", delete_cache=DELETE_CACHE, analytics_enabled=False) as demo:
        ctx = TabContext(os.fspath(sessions_dir), spaces=None, visitor=gr.BrowserState(None, storage_key="s11-space"))
        with gr.Tabs():
            for label, module_name in SECTIONS:
                with gr.Tab(label):
                    importlib.import_module(module_name).build(ctx)
    return demo


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="第 8 章配套 Gradio 工作台")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", DEFAULT_HOST),
                        help="监听地址（也可用环境变量 GRADIO_SERVER_NAME；默认只对本机开放）")
    parser.add_argument("--port", type=int, default=None, help="端口（也可用环境变量 GRADIO_SERVER_PORT；默认 7860）")
    parser.add_argument("--sessions-dir", default=os.fspath(DEFAULT_SESSIONS_DIR),
                        help="演示会话写到哪里（默认仓库下的 gradio_sessions/）")
    args = parser.parse_args(argv)
    if args.port is None:
        env_port = os.environ.get("GRADIO_SERVER_PORT", str(DEFAULT_PORT))
        if not env_port.isdigit() or not 0 < int(env_port) < 65536:
            parser.error(f"环境变量 GRADIO_SERVER_PORT={env_port!r} 不是有效端口（1–65535）")
        args.port = int(env_port)
    if not 0 < args.port < 65536:
        parser.error(f"--port {args.port} 不是有效端口（1–65535）")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    print("正在加载 Gradio（约 5 秒）…", flush=True)
    demo = build_app(args.sessions_dir)
    print(f"会话文件目录：{os.path.abspath(args.sessions_dir)}", flush=True)
    demo.launch(server_name=args.host, server_port=args.port, prevent_thread_lock=True, quiet=True,
                **launch_options())
    print(f"✅ 工作台已就绪：{demo.local_url}（Ctrl+C 退出）", flush=True)
    demo.block_thread()


if __name__ == "__main__":
    main()
