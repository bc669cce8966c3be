"""app.py — 本书配套工作台：每一节一个标签页

    python app.py [--host 127.0.0.1] [--port 7860] [--sessions-dir gradio_sessions]

    tabs() = (demo_tab, explorer_tab, lab_tab)   每个 code/s11_workbench/*_tab.py 有 LABEL、CSS 和 build(ctx)
       └─> gr.Tab(LABEL) 里调 build(ctx)            ctx = TabContext(sessions_dir, spaces, visitor, teacher, ready)
    新增一页 = 在 code/s11_workbench/ 写一对 xxx.py（逻辑）+ xxx_tab.py（布局），再在 tabs() 里加上它的名字。

    页面加载 ──> enter_space：浏览器里的空间令牌（gr.BrowserState）有效就沿用，否则领一个新的；
                 带 ?teacher=<启动时打印的密钥> 打开时，教师密钥只记在服务器端的 gr.State 里。
    每个请求 ──> 处理函数拿 visitor 作输入，ctx.spaces.open(token) 重新验签（见 code/s11_workbench/spaces.py）。

关键洞察：这里只是外壳。gradio 导入要 ~5 秒，所以先打印一句提示再导入；逻辑全在 code/ 里。
全程离线：主题只用系统字体，不加载 Google Fonts，关闭统计上报。
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, NamedTuple

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

HERE = Path(__file__).resolve().parent
# code/ 是一组课程文件而不是包：叫 code 的包会遮住标准库的 code 模块（pdb 要用）
sys.path.insert(0, str(HERE / "code"))

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

# 整页的样式；每个标签页自己的样式在它的 CSS 里（launch_options 把它们接在后面）
CSS = """
.gradio-container { max-width: 1400px !important; margin: 0 auto !important; }
/* 页签在窄屏上换行（不横向溢出），每一页都带着文字露在外面，不收进只有“⋯”图标的菜单：
   gradio 量隐藏的那一排按钮的总宽决定要不要收起，把那一排量成 0 宽，它就全部摆出来（再由上一条换行） */
.tab-container:not(.visually-hidden) { flex-wrap: wrap; height: auto; }
.tab-wrapper { height: auto; }
.tab-container.visually-hidden > button { width: 0 !important; min-width: 0 !important; padding: 0 !important; }
"""


def tabs() -> tuple:
    """工作台的标签页，按页面上的顺序。它们 import gradio（~5 秒），所以用到时才导入：`python app.py` 能先检查
    会话目录、先打印“正在加载”，`import app` 也不必等 gradio。"""
    from s11_workbench import demo_tab, explorer_tab, lab_tab
    return demo_tab, explorer_tab, lab_tab


class TabContext(NamedTuple):
    """每个标签页的 build(ctx) 拿到的东西。按访客区分的数据只经由 visitor（gr.BrowserState）传进事件。"""
    sessions_dir: str   # 会话根目录（--sessions-dir）
    spaces: Any         # s11_workbench.spaces.Spaces：每个浏览器一个私有空间
    visitor: Any        # gr.BrowserState：本浏览器的空间令牌；处理函数每次都 spaces.open(token)
    teacher: Any = None  # gr.State：用教师链接打开时是教师密钥，否则 None（只在服务器端，浏览器改不了）
    ready: Any = None    # 页面加载事件：需要令牌的加载逻辑写成 ctx.ready.then(...)，首次访问也拿得到令牌
    agent_folders: Any = None   # --agent-folders：AgentFolders 的参数（home、env）；None = 没有这块面板


FORGET_TEACHER_LINK_JS = """() => {
  const url = new URL(window.location.href);
  if (url.searchParams.has("teacher")) {
    url.searchParams.delete("teacher");
    window.history.replaceState(window.history.state, "", url);
  }
}"""


def enter_space(spaces, token, request) -> tuple:
    """页面加载：(令牌, 教师密钥或 None)。令牌有效就原样返回，否则领一个新的；领得太快时 gr.Error。"""
    import gradio as gr

    from s11_workbench.spaces import SpaceError
    client = request.client.host if request is not None and request.client else None
    try:
        token = spaces.ensure_token(token, client=client)
    except SpaceError as error:
        raise gr.Error(str(error)) from None
    secret = request.query_params.get("teacher") if request is not None else None
    return token, (secret if spaces.is_teacher(secret) else None)


def launch_options(demo=None) -> dict:
    """传给 launch() 的主题与样式（Gradio 6 起 theme/css 属于 launch，不属于 Blocks），以及课堂防护：
    单个上传的上限、会话目录不经 /gradio_api/file= 外泄、上传限速中间件（传入 build_app 的结果时）。"""
    import gradio as gr

    from s11_workbench.spaces import Limits
    theme = gr.themes.Soft(primary_hue="emerald", secondary_hue="sky", neutral_hue="slate",
                           font=SANS_FONTS, font_mono=MONO_FONTS)
    spaces = getattr(demo, "s11_spaces", None)
    css = CSS + "".join(tab.CSS for tab in tabs())
    options = {"theme": theme, "css": css, "footer_links": ["api", "settings"], "ssr_mode": False,
               "max_file_size": (spaces.limits if spaces is not None else Limits()).max_upload_bytes}
    if spaces is not None:
        from starlette.middleware import Middleware

        from s11_workbench.upload_guard import UploadGuard
        options["blocked_paths"] = [os.path.abspath(spaces.sessions_dir)]
        options["app_kwargs"] = {"middleware": [Middleware(UploadGuard, spaces=spaces)]}
    return options


def build_app(sessions_dir: str | os.PathLike = DEFAULT_SESSIONS_DIR, *, teacher_secret: str | None = None,
              limits=None, agent_folders: dict | None = None):
    """搭好整个工作台并返回 gr.Blocks（测试可以在进程内 launch 它）；demo.s11_spaces 是它的 Spaces。
    agent_folders：None = 没有「本机 Agent 文件夹」面板；{} = 本机默认文件夹；测试给 {"home": 临时目录, "env": {}}。
    只有只对本机开放时才给（main() 检查）。"""
    import gradio as gr

    from s11_workbench.spaces import Limits, Spaces
    spaces = Spaces(sessions_dir, limits=limits or Limits(), teacher_secret=teacher_secret)
    with gr.Blocks(title="第 8 章 · Agent 工作台", delete_cache=DELETE_CACHE, analytics_enabled=False) as demo:
        # BrowserState 的加密密钥会出现在页面配置里：用服务器密钥的单向派生，重启后浏览器里的令牌仍能解开
        visitor = gr.BrowserState(None, storage_key="s11-space", secret=spaces.browser_secret())
        teacher = gr.State(None)

        def on_load(token, request):
            return enter_space(spaces, token, request)
        # 本文件有 from __future__ import annotations，写在参数上的 gr.Request 只是字符串、gradio 解析不到（gr 是局部导入）
        on_load.__annotations__["request"] = gr.Request

        # 公开为 /enter_space：脚本（gradio_client）也要先领一个令牌，再把它传给 /run_demo 等接口
        # 只验签或签发令牌、不碰磁盘：放开 gradio 默认的“同一时刻只跑一个”，全班同时打开页面也不排队
        ready = demo.load(on_load, inputs=[visitor], outputs=[visitor, teacher], api_name="enter_space",
                          concurrency_limit=16)
        # 教师身份已记在服务器端：把密钥从地址栏抹掉，投屏、截图、浏览器历史里都不再带着它（刷新就回到学生视图）
        ready.then(None, js=FORGET_TEACHER_LINK_JS)
        ctx = TabContext(os.fspath(sessions_dir), spaces, visitor, teacher, ready, agent_folders)
        with gr.Tabs():
            for tab in tabs():
                # id：页面加载时（如 ?session= 链接）可以直接切到这一页（explorer_tab 从 gr.Tab 上读它）
                with gr.Tab(tab.LABEL, id=tab.__name__.rpartition(".")[2]):
                    tab.build(ctx)
    demo.s11_spaces = spaces
    return demo


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="第 8 章配套 Gradio 工作台")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", DEFAULT_HOST),
                        help="监听地址（也可用环境变量 GRADIO_SERVER_NAME；默认只对本机开放）")
    parser.add_argument("--port", type=int, default=None, help="端口（也可用环境变量 GRADIO_SERVER_PORT；默认 7860）")
    parser.add_argument("--sessions-dir", default=os.fspath(DEFAULT_SESSIONS_DIR),
                        help="演示会话写到哪里（默认仓库下的 gradio_sessions/）")
    parser.add_argument("--agent-folders", action="store_true",
                        help="在浏览器的「📥 导入」里列出本机 Claude Code / Pi / Codex / Gemini CLI 的会话（只读；"
                             "只能在只对本机开放时用）")
    args = parser.parse_args(argv)
    if args.port is None:
        env_port = os.environ.get("GRADIO_SERVER_PORT", str(DEFAULT_PORT))
        if not env_port.isdigit() or not 0 < int(env_port) < 65536:
            parser.error(f"环境变量 GRADIO_SERVER_PORT={env_port!r} 不是有效端口（1–65535）")
        args.port = int(env_port)
    if not 0 < args.port < 65536:
        parser.error(f"--port {args.port} 不是有效端口（1–65535）")
    if args.agent_folders:
        from s11_workbench.agent_folders import available_for
        problem = available_for(args.host)
        if problem is not None:
            parser.error(problem)
    return args


def use_private_gradio_cache() -> None:
    """Gradio 的上传与下载缓存放进本次启动自己的目录（mkdtemp：0700、名字随机），退出（含 Ctrl+C）时整个删掉。

    默认的 /tmp/gradio 是所有账号共用的固定名字，gradio 退出时也不清理它登记之外的文件。
    自己设了 GRADIO_TEMP_DIR 的就照用不误。"""
    if os.environ.get("GRADIO_TEMP_DIR"):
        return
    folder = tempfile.mkdtemp(prefix="s11_gradio_")
    os.environ["GRADIO_TEMP_DIR"] = folder
    atexit.register(shutil.rmtree, folder, True)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from s11_workbench.demo import check_sessions_dir  # 不依赖 gradio：目录用不了就立刻说，不等第一个同学点击
    problem = check_sessions_dir(args.sessions_dir)
    if problem is not None:
        print(f"❌ {problem}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    use_private_gradio_cache()
    print("正在加载 Gradio（约 5 秒）…", flush=True)
    demo = build_app(args.sessions_dir, agent_folders={} if args.agent_folders else None)
    print(f"会话文件目录：{os.path.abspath(args.sessions_dir)}", flush=True)
    demo.launch(server_name=args.host, server_port=args.port, prevent_thread_lock=True, quiet=True,
                **launch_options(demo))
    from s11_workbench.spaces import classroom_links, own_address
    # 与教师链接同一个地址：浏览器按地址分开存空间令牌，换一种写法（localhost）就是另一个空间
    print(f"✅ 工作台已就绪：{own_address(args.host, args.port)}（Ctrl+C 退出；请一直用这个地址打开，"
          "你的私人空间属于这个浏览器和这个地址）", flush=True)
    for line in classroom_links(args.host, args.port, demo.s11_spaces.teacher_secret):
        print(line, flush=True)
    demo.block_thread()


if __name__ == "__main__":
    main()
