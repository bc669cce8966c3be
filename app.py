"""app.py — 本书配套工作台：每一节一个标签页

    python app.py [--host 127.0.0.1] [--port 7860] [--sessions-dir gradio_sessions] [--students-per-address 1]
                  [--agent-folders] [--allow-host 名字 …]

    tabs() = (demo_tab, story_tab, explorer_tab, lesson_tab, lab_tab)   每个 code/s11_workbench/*_tab.py 有 LABEL、CSS 和 build(ctx)
       └─> gr.Tab(LABEL) 里调 build(ctx)            ctx = TabContext(sessions_dir, spaces, visitor, teacher, ready, …)
    新增一页 = 在 code/s11_workbench/ 写一对 xxx.py（逻辑）+ xxx_tab.py（布局），再在 tabs() 里加上它的名字。

    页面加载 ──> enter_space：浏览器里的空间令牌（gr.BrowserState）有效就沿用，否则领一个新的；
                 带 ?teacher=<启动时打印的密钥> 打开时，教师密钥只记在服务器端的 gr.State 里。
    每个请求 ──> 处理函数拿 visitor 作输入，ctx.spaces.open(token) 重新验签（见 code/s11_workbench/spaces.py）。

    服务器的外壳还管五件事（逻辑在 code/s11_workbench/ 的 host_guard.py、upload_guard.py、queue_guard.py、spaces.py）：
      名字    HostGuard：只回答用本机名字（课堂模式下再加 IP 地址、--host 与 --allow-host 的名字）叫它的请求，
              别的网页把自己的域名解析到 127.0.0.1 也进不来（DNS 重绑定）；本机 Agent 文件夹另有更严的一道
      请求体  UploadGuard：表头有歧义就拒绝，读进来的字节边读边数（分块发送也有上限）
      排队    QueueGuard：每位访客（空间、地址）同时排队或运行中的事件有上限
      内存    gradio 的几处内存与清理问题绕过在 code/s11_workbench/gradio_fixes.py（每处一个函数、说明绕过什么）；
              页面会话最多 PAGE_SESSIONS 个，先丢已关闭的页面；glibc 的 malloc arena 限成 MALLOC_ARENA_MAX 个
      临时目录 本次启动的所有临时文件（上传、导出、下载缓存、实验室）都在一个 s11_run_* 目录里，
              Ctrl+C、SIGTERM、SIGHUP、正常退出都会删掉它；启动时删掉同一会话目录以前的启动留下、主人已不在的

关键洞察：这里只是外壳。gradio 导入要 ~5 秒，所以先打印一句提示再导入；逻辑全在 code/ 里。
全程离线：主题只用系统字体，不加载 Google Fonts，关闭统计上报；浏览器里不留运行记录（run_history=False）。
"""

from __future__ import annotations

import argparse
import atexit
import os
import re
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve().parent
# code/ 是一组课程文件而不是包：叫 code 的包会遮住标准库的 code 模块（pdb 要用）
sys.path.insert(0, str(HERE / "code"))

from s11_workbench import gradio_fixes  # noqa: E402  (只用标准库；它改的 gradio 函数在 install() 里才导入)

gradio_fixes.quiet_analytics()   # 要在 gradio 建队列之前：关掉统计上报和逐个事件重算的监控统计

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
DEFAULT_SESSIONS_DIR = HERE / "gradio_sessions"
# Gradio 的下载缓存：每 10 分钟清一次超过 1 小时的文件，一堂长课里不会无限增长
DELETE_CACHE = (600, 3600)
# gradio 为每个打开过的页面保留一整份页面配置（约 0.5 MB）；默认留到 10,000 个。这里最多留这么多，
# 超出时先丢已关闭的页面（心跳断开的），还开着的页面只在全是开着的时才丢最久没用的那个
PAGE_SESSIONS = 200
# glibc 默认每个线程一个 malloc arena（最多 8×核数），gradio 的线程池让碎片越积越多；2 个就够用
MALLOC_ARENA_MAX = 2

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
/* 没打开的页签和收起的折叠面板照样排版、只是看不见（gradio 用的是 display: none）：mermaid 在里面画图时要量字的
   大小，量到 0 就画出“Syntax error”并在控制台报错（在 8.11 页点了运行就切走、分支图收起时选节点都会遇到）。
   高 0、裁掉溢出、不接鼠标：页面上看不到、点不到，读屏软件也跳过（visibility: hidden） */
.tabitem[style*="display: none"], .gr-accordion > div[style*="display: none"] {
  display: block !important; visibility: hidden !important; position: absolute !important; left: 0; right: 0; top: 0;
  height: 0 !important; overflow: hidden !important; pointer-events: none; }
/* 页脚只留「API」一项：gradio 仍在它后面放一个分隔点（手机上 API 链接隐藏后只剩这个点） */
footer > .divider:last-child { display: none; }
"""


def tabs() -> tuple:
    """工作台的标签页，按页面上的顺序。它们 import gradio（~5 秒），所以用到时才导入：`python app.py` 能先检查
    会话目录、先打印“正在加载”，`import app` 也不必等 gradio。"""
    from s11_workbench import demo_tab, explorer_tab, lab_tab, lesson_tab, story_tab
    return demo_tab, story_tab, explorer_tab, lesson_tab, lab_tab


def panels() -> tuple:
    """标签页上方的面板（也有 CSS 和 build(ctx)）：课堂面板只在教师模式下显示，学生的页面上它是隐藏的、空的。"""
    from s11_workbench import classroom_tab
    return (classroom_tab,)


class TabContext(NamedTuple):
    """每个标签页的 build(ctx) 拿到的东西。按访客区分的数据只经由 visitor（gr.BrowserState）传进事件。"""
    sessions_dir: str   # 会话根目录（--sessions-dir）
    spaces: Any         # s11_workbench.spaces.Spaces：每个浏览器一个私有空间
    visitor: Any        # gr.BrowserState：本浏览器的空间令牌；处理函数每次都 spaces.open(token)
    teacher: Any = None  # gr.State：用教师链接打开时是教师密钥，否则 None（只在服务器端，浏览器改不了）
    ready: Any = None    # 页面加载事件：需要令牌的加载逻辑写成 ctx.ready.then(...)，首次访问也拿得到令牌
    agent_folders: Any = None   # --agent-folders：AgentFolders 的参数（home、env、key）；None = 没有这块面板
    agents_key: Any = None      # gr.BrowserState：本浏览器记着的本机 Agent 文件夹钥匙（只在有这块面板时）


# 页面载入后把 ?teacher= 和 ?agents= 从地址栏抹掉（浏览器里运行的代码都在 .js 文件里，不写在 Python 字符串里）
FORGET_LINK_SECRETS_JS = (HERE / "code" / "s11_workbench" / "forget_link_secrets.js").read_text(encoding="utf-8")
# gradio 自己写死的英文 aria-label、title、上传框和页脚的字换成中文；对话里每条消息的 aria-label 换成纯文字
ARIA_ZH_JS = (HERE / "code" / "s11_workbench" / "aria_zh.js").read_text(encoding="utf-8")


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


def launch_options(demo=None, hosts=None) -> dict:
    """传给 launch() 的主题、样式与各页的脚本（Gradio 6 起 theme/css/js 属于 launch，不属于 Blocks），以及课堂防护：
    单个上传的上限、会话目录不经 /gradio_api/file= 外泄、上传限速中间件（传入 build_app 的结果时）；
    Host 白名单（host_guard.py）：hosts=None 只认本机的三个名字，否则是 allowed_hosts(--host, --allow-host)（见 serve()）。
    run_history=False：gradio 默认把公开接口最近 100 次的输入输出存进浏览器的 localStorage，
    公用电脑、老师的投屏电脑上会留下没脱敏的审阅表和全班的表；enable_monitoring=False：不开 /monitoring 页；
    页脚只留「API」：gradio 的 ⚙ 设置面板是英文的，里面的运行记录也已关掉。"""
    import gradio as gr

    from s11_workbench.spaces import Limits
    theme = gr.themes.Soft(primary_hue="emerald", secondary_hue="sky", neutral_hue="slate",
                           font=SANS_FONTS, font_mono=MONO_FONTS)
    spaces = getattr(demo, "s11_spaces", None)
    css = CSS + "".join(tab.CSS for tab in tabs() + panels())
    # 各页自己的脚本（只是页面的代码，从不执行会话文字）：每页的 JS 读自它的 .js 文件（"() => {...}"），页面载入时依次运行
    scripts = [ARIA_ZH_JS] + [tab.JS for tab in tabs() + panels() if getattr(tab, "JS", "")]
    js = "() => {\n" + "\n".join(f"({script})();" for script in scripts) + "\n}" if scripts else None
    # 要在页面挂好之前就运行的脚本（?session= 链接直接打开会话树浏览器）：各页的 HEAD 是一个 .html 文件
    heads = [tab.HEAD for tab in tabs() + panels() if getattr(tab, "HEAD", "")]
    options = {"theme": theme, "css": css, "js": js, "footer_links": ["api"], "ssr_mode": False,
               "max_file_size": (spaces.limits if spaces is not None else Limits()).max_upload_bytes,
               "state_session_capacity": PAGE_SESSIONS, "run_history": False, "enable_monitoring": False,
               "head_paths": heads}
    if spaces is not None:
        from starlette.middleware import Middleware

        from s11_workbench.host_guard import HostGuard
        from s11_workbench.upload_guard import UploadGuard
        options["blocked_paths"] = [os.path.abspath(spaces.sessions_dir)]
        # 先核对 Host（叫错名字的请求连请求体都不读），再管请求体
        options["app_kwargs"] = {"middleware": [Middleware(HostGuard, allowed=hosts),
                                                Middleware(UploadGuard, spaces=spaces,
                                                           upload_folder=gr.utils.get_upload_folder())]}
    return options


def build_app(sessions_dir: str | os.PathLike = DEFAULT_SESSIONS_DIR, *, teacher_secret: str | None = None,
              limits=None, agent_folders: dict | None = None):
    """搭好整个工作台并返回 gr.Blocks（测试可以在进程内 launch 它）；demo.s11_spaces 是它的 Spaces。
    agent_folders：None = 没有「本机 Agent 文件夹」面板；{} = 本机默认文件夹；测试给 {"home": 临时目录, "env": {}}。
    只有只对本机开放时才给（main() 检查）。"""
    import gradio as gr

    from s11_workbench.queue_guard import QueueGuard
    from s11_workbench.spaces import Limits, Spaces
    gradio_fixes.install()
    spaces = Spaces(sessions_dir, limits=limits or Limits(), teacher_secret=teacher_secret,
                    client_address=current_client_address)
    with gr.Blocks(title="第 8 章 · Agent 工作台", delete_cache=DELETE_CACHE, analytics_enabled=False) as demo:
        # BrowserState 的加密密钥会出现在页面配置里：用服务器密钥的单向派生，重启后浏览器里的令牌仍能解开
        visitor = gr.BrowserState(None, storage_key="s11-space", secret=spaces.browser_secret())
        teacher = gr.State(None)
        # 放在页面的最外层（不在哪个标签页里）：标签页没打开过时，里面的 BrowserState 还没挂上、存不进浏览器
        agents_key = (gr.BrowserState(None, storage_key="s11-agents", secret=spaces.browser_secret())
                      if agent_folders is not None else None)

        def on_load(token, request):
            return enter_space(spaces, token, request)
        # 本文件有 from __future__ import annotations，写在参数上的 gr.Request 只是字符串、gradio 解析不到（gr 是局部导入）
        on_load.__annotations__["request"] = gr.Request

        # 公开为 /enter_space：脚本（gradio_client）也要先领一个令牌，再把它传给 /run_demo 等接口
        # 只验签或签发令牌、不碰磁盘：放开 gradio 默认的“同一时刻只跑一个”，全班同时打开页面也不排队
        ready = demo.load(on_load, inputs=[visitor], outputs=[visitor, teacher], api_name="enter_space",
                          concurrency_limit=16)
        # 教师身份已记在服务器端：把密钥从地址栏抹掉，投屏、截图、浏览器历史里都不再带着它（刷新就回到学生视图）
        ready.then(None, js=FORGET_LINK_SECRETS_JS)
        ctx = TabContext(os.fspath(sessions_dir), spaces, visitor, teacher, ready, agent_folders, agents_key)
        for panel in panels():
            panel.build(ctx)
        with gr.Tabs():
            for tab in tabs():
                # id：页面加载时（如 ?session= 链接）可以直接切到这一页（explorer_tab 从 gr.Tab 上读它）
                with gr.Tab(tab.LABEL, id=tab.__name__.rpartition(".")[2]):
                    tab.build(ctx)
    gradio_fixes.progress_on_few(demo)   # 每个事件的“处理中”只盖一格（为什么见这个函数）
    QueueGuard(spaces).install(demo._queue)   # Blocks 退出 with 时才建好队列
    demo.s11_spaces = spaces
    return demo


def current_client_address():
    """正在处理的事件来自哪个访客地址（gradio 在调用处理函数前把请求放进 LocalContext）；不在事件里时 None。"""
    from gradio.context import LocalContext
    request = LocalContext.request.get(None)
    client = getattr(request, "client", None)
    return getattr(client, "host", None)


class ChineseHelp(argparse.HelpFormatter):
    """`python app.py --help` 的“usage:”换成中文（各选项的说明本来就是中文）。"""

    def add_usage(self, usage, actions, groups, prefix=None):
        return super().add_usage(usage, actions, groups, prefix="用法：")


# argparse 自己拼的几种错误，换成中文（按顺序试，第一条匹配的生效；没列出的原样显示）
ARGPARSE_ERRORS = [
    (r"argument (\S+): invalid int value: (.*)", r"\1 后面应是一个整数，现在是 \2"),
    (r"argument (\S+): expected one argument", r"\1 后面要跟一个值"),
    (r"unrecognized arguments: (.*)", r"不认识的参数：\1（python app.py --help 列出所有参数）"),
    (r"argument (\S+): (.*)", r"参数 \1：\2"),
]


class ChineseParser(argparse.ArgumentParser):
    """argparse 的标题、出错时的前缀和常见的几种错误（ARGPARSE_ERRORS）说中文。"""

    def __init__(self, **kwargs):
        super().__init__(formatter_class=ChineseHelp, add_help=False, **kwargs)
        self._optionals.title = "选项"
        self.add_argument("-h", "--help", action="help", help="显示这段帮助后退出")

    def error(self, message):
        for pattern, chinese in ARGPARSE_ERRORS:
            if re.fullmatch(pattern, message):
                message = re.sub(pattern, chinese, message)
                break
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}：错误：{message}\n")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = ChineseParser(description="第 8 章配套 Gradio 工作台")
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", DEFAULT_HOST), metavar="地址",
                        help="监听地址（也可用环境变量 GRADIO_SERVER_NAME；默认只对本机开放）")
    parser.add_argument("--port", type=int, default=None, metavar="端口", help="端口（也可用环境变量 GRADIO_SERVER_PORT；默认 7860）")
    parser.add_argument("--sessions-dir", default=os.fspath(DEFAULT_SESSIONS_DIR), metavar="目录",
                        help="演示会话写到哪里（默认仓库下的 gradio_sessions/）")
    parser.add_argument("--agent-folders", action="store_true",
                        help="在浏览器的「📥 导入」里列出本机 Claude Code / Pi / Codex / Gemini CLI 的会话（只读；"
                             "只能在只对本机开放时用）")
    parser.add_argument("--allow-host", action="append", default=[], metavar="名字",
                        help="课堂模式（--host 不是本机地址）下另外认的服务器名字，如 lab.example.edu（可写多次；"
                             "前面有反向代理时写上它对外的端口，如 lab.example.edu:443）。"
                             "工作台只回答用本机名字、IP 地址、--host 的名字或这里的名字叫它的请求（防 DNS 重绑定）")
    parser.add_argument("--students-per-address", type=int, default=1, metavar="N",
                        help="一个访客地址后面有几位同学（默认 1）。整班在同一个 NAT / 代理后面、服务器看到的都是"
                             "同一个地址时设成班级人数：按地址的限额（领新空间、新建、上传、排队）随之放大 N 倍")
    args = parser.parse_args(argv)
    if not 1 <= args.students_per_address <= 1000:
        parser.error(f"--students-per-address {args.students_per_address} 无效：应是 1–1000 的整数")
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


def use_run_folder(sessions_dir: str) -> str:
    """本次启动的临时目录（见 code/s11_workbench/run_folder.py）：先删掉同一会话目录以前的启动留下的
    （主人进程已不在），再新建一个，让本进程的所有临时文件都落在里面——gradio 的上传与下载缓存
    （GRADIO_TEMP_DIR，自己设了的照用不误）、导出、实验室的临时文件夹（TMPDIR，子进程也继承）。
    退出时（atexit，以及 main() 的 finally）整个删掉。"""
    from s11_workbench import run_folder
    for folder in run_folder.remove_leftovers(sessions_dir):
        print(f"🧹 删除了上次启动留下的临时目录 {os.path.basename(folder)}", flush=True)
    folder = run_folder.create(sessions_dir)
    atexit.register(run_folder.remove, folder)
    if not os.environ.get("GRADIO_TEMP_DIR"):
        os.environ["GRADIO_TEMP_DIR"] = os.path.join(folder, "gradio")
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = folder
    return folder


def stop_on_signals() -> None:
    """Ctrl+C（SIGINT）、kill（SIGTERM）、关掉终端（SIGHUP）都当作 Ctrl+C：gradio 关掉服务器，main() 正常返回，
    临时目录随之删除。SIGINT 也要重新装上：从脚本或后台启动时它可能被设成了“忽略”。"""
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), interrupt)


def limit_malloc_arenas(count: int = MALLOC_ARENA_MAX) -> None:
    """glibc：最多 count 个 malloc arena（等同于环境变量 MALLOC_ARENA_MAX，但在进程里设，不必改启动命令）。
    自己设了 MALLOC_ARENA_MAX 的照用；不是 glibc 时什么都不做。"""
    if os.environ.get("MALLOC_ARENA_MAX") or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        libc.mallopt(-8, int(count))   # M_ARENA_MAX
    except (OSError, AttributeError):
        pass


def settle_heap() -> int:
    """搭好页面之后：先回收一次，再把此刻的全部对象（gradio、pydantic、各页的组件，约 18 万个）移出垃圾回收的
    代际（gc.freeze），返回移出了多少个。为什么：Python 的“满”回收（第 2 代）每次都要遍历全部被跟踪的对象，
    这一堆启动时建好、一直活着的对象让每次约 100 ms（这台 2 核机器），期间整个进程停住；冻结之后满回收只看
    启动之后新建的对象。只在 serve() 里调：测试在一个进程里搭很多个页面，冻结会让丢掉的那些永远不被回收。"""
    import gc
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


TRIM_SECONDS = 60   # 每隔多久让 glibc 把空闲的内存页还给系统（S11_MALLOC_TRIM_SECONDS=0 关掉）


def trim_memory_periodically(seconds: float | None = None) -> bool:
    """glibc：每 seconds 秒调一次 malloc_trim(0)，把堆里整页空闲的内存还给系统（madvise），
    一堂课里 RSS 不因碎片慢慢往上走。调一次约 1–3 ms，在后台线程里。不是 glibc 时什么都不做，返回 False。"""
    if seconds is None:
        seconds = float(os.environ.get("S11_MALLOC_TRIM_SECONDS", TRIM_SECONDS))
    if seconds <= 0 or not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    import threading

    def run():
        while True:
            time.sleep(seconds)
            trim(0)
    threading.Thread(target=run, name="s11-malloc-trim", daemon=True).start()
    return True


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    from s11_workbench import run_folder
    from s11_workbench.demo import check_sessions_dir  # 不依赖 gradio：目录用不了就立刻说，不等第一个同学点击
    problem = check_sessions_dir(args.sessions_dir)
    if problem is not None:
        print(f"❌ {problem}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    stop_on_signals()
    limit_malloc_arenas()
    trim_memory_periodically()
    folder = use_run_folder(args.sessions_dir)
    try:
        serve(args)
    except KeyboardInterrupt:
        pass
    finally:
        run_folder.remove(folder)
    try:
        print("👋 已停止，本次的临时文件已删除", flush=True)
    except OSError:   # 终端已经关了（SIGHUP）
        pass


def serve(args: argparse.Namespace) -> None:
    import secrets

    from s11_workbench.host_guard import allowed_hosts
    from s11_workbench.spaces import Limits
    print("正在加载 Gradio（约 5 秒）…", flush=True)
    # 本机 Agent 文件夹的钥匙：只打印在这个终端里，本机的别的账户、别的浏览器拿不到（见 agent_folders.access_problem）
    agents_key = secrets.token_urlsafe(24) if args.agent_folders else None
    demo = build_app(args.sessions_dir, limits=Limits(students_per_address=args.students_per_address),
                     agent_folders={"key": agents_key} if args.agent_folders else None)
    print(f"会话文件目录：{os.path.abspath(args.sessions_dir)}", flush=True)
    settle_heap()
    demo.launch(server_name=args.host, server_port=args.port, prevent_thread_lock=True, quiet=True,
                **launch_options(demo, hosts=allowed_hosts(args.host, args.allow_host)))
    from s11_workbench.spaces import classroom_links, own_address
    address = own_address(args.host, args.port)
    # 与教师链接同一个地址：浏览器按地址分开存空间令牌，换一种写法（localhost）就是另一个空间
    print(f"✅ 工作台已就绪：{address}（Ctrl+C 退出；请一直用这个地址打开，"
          "你的私人空间属于这个浏览器和这个地址）", flush=True)
    if agents_key:
        print(f"💻 本机 Agent 文件夹：用这个链接打开一次（只给自己用）：{address}?agents={agents_key}", flush=True)
    for line in classroom_links(args.host, args.port, demo.s11_spaces.teacher_secret):
        print(line, flush=True)
    try:
        while demo.is_running:   # 不用 gradio 的 block_thread：它在 Ctrl+C 时打印一行英文
            time.sleep(0.1)
    except KeyboardInterrupt:
        print("⏹️ 收到停止信号，正在关闭服务器…", flush=True)
    finally:
        demo.close()


if __name__ == "__main__":
    main()
