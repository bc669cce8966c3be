"""gradio_fixes.py — 绕过 gradio 6.31 的几处行为，全在这一个文件里：每处一个函数，docstring 说它绕过什么

    app.build_app() ──> install()   每个函数只改 gradio 的一处（一个函数或一个类的几个方法），装一次（再装什么都不做）
        forget_shown_values()    不给每个页面另存一份页面配置和输出的值（只供深链接用）
        keep_replacement_ids()   带属性的更新不再让页面状态每轮多一份组件
        safe_cache_cleanup()     下载缓存的定时清理不因处理函数同时加文件而停掉
        bound_page_sessions()    页面会话表满了先丢已关闭的页面
        calm_queue()             空闲的队列每 10 ms 看一次有没有新事件，不是每 1 ms
    app.py 导入 gradio 之前 ──> quiet_analytics()   不在每个事件之后重算监控统计
    各标签页接事件 ──> listen(trigger, handler, outputs, inputs=…)   输入输出多的事件：在处理函数的线程里一次解读、
                                                                   整理好，不为每一格各走一趟线程池
    切换标签页的按钮 ──> open_tab_js(label)   在浏览器里点那个标签，不让 gr.Tabs 当任何事件的输出
    app.build_app() 搭完 ──> progress_on_few(demo)   没指定的事件，“处理中”只盖在一格输出上，不盖满几十格

在 gradio 6.31 上重新量过（把一个函数换成什么都不做，再跑 tests/workbench/test_server_hardening.py、
tests/workbench/test_app_client.py 里对应的测试）：六处都还需要——6.x 的 #13756 修掉的是队列的事件表、
time_last_used 和 pending_streams 的累积，没碰这里的几处。
  keep_replacement_ids 关掉：同一页面 5 轮里组件表 368 → 372 → 376 → 380 → 384（每轮 +4，永不回落）
  forget_shown_values  关掉：页面会话里留着刚显示过的会话文字——每页多一份它最近收到的输出（不逐轮增长；
                       量到的一页：输出 11 KB，多留 9.5 KB），外加一整份页面配置（487 个组件，pickle 153 KB）；
                       建这一份要在事件循环上花约 35 ms CPU（每个新页面的第一个事件，全班同时打开就是 50 × 35 ms），
                       每个带属性的更新再算两次组件配置（更新的大半开销）
  safe_cache_cleanup   关掉：2,000 个缓存文件的清理抛 RuntimeError: Set changed size during iteration
  bound_page_sessions  关掉：会话表满时丢的是最久没点的开着的页面，已关闭的页面还留着
  quiet_analytics      6.31 每完成一个事件仍把最近 10,000 条记录建成 pandas 表（queueing.compute_analytics_summary）：
                       每个事件多花约 8 ms（1,000 条）到 14 ms（10,000 条）CPU；enable_monitoring=False 也不省这一步
  calm_queue           关掉：空闲的服务器 10 s 用 0.58 s CPU（队列每 1 ms 醒一次）；开着：约 0.22 s
升级 gradio 时按上面的方法再量一次，不需要了的就删掉（连同它在 install() 里的那一行）。

Key insight: 这里只改 gradio 的内部函数，不改它的行为约定；gradio 改了这些函数的名字时，
install() 会在启动时直接报错（AttributeError），而不是悄悄失效。
"""

from __future__ import annotations

import datetime
import functools
import json
import os


def install() -> None:
    """装上所有的修补（build_app 每次都调；每个函数只装一次）。forget_shown_values 换掉 SessionState.__setitem__，
    keep_replacement_ids 再包在它外面，所以先装前者。"""
    forget_shown_values()
    keep_replacement_ids()
    safe_cache_cleanup()
    bound_page_sessions()
    calm_queue()


def quiet_analytics() -> None:
    """gradio 每处理完一个事件，就把最近 10,000 个事件的记录建成一张 pandas 表、重算一遍监控页的统计
    （一堂课下来每个事件要多花几毫秒 CPU，还越来越多）。本工作台不开监控页（launch 的 enable_monitoring=False）：
    不再逐个事件重算，只记最近 1,000 个。要在 gradio 建队列之前设（它在那时读环境变量）；自己设了的照用。"""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000000")
    os.environ.setdefault("GRADIO_ANALYTICS_MAX_EVENTS", "1000")


def keep_replacement_ids() -> None:
    """处理函数返回带属性的组件（gr.Radio(choices=…)、gr.update(…)）时，gradio 在页面状态里放一个新建的替身组件，
    替身有一个新的 _id；这个组件下次作为输入时，gradio 按新 _id 又登记一遍——每个这样的组件每轮多一份配置
    （一个页面每轮 +4 份，一堂课几十 MB）。这里让替身沿用原组件的 _id，登记的还是原来那一格。
    只改 SessionState.__setitem__。"""
    from gradio.blocks import Block
    from gradio.state_holder import SessionState
    if getattr(SessionState.__setitem__, "s11_keeps_ids", False):
        return
    original = SessionState.__setitem__

    def setitem(self, key, value):
        if isinstance(value, Block) and getattr(value, "_id", key) != key and key in self.blocks_config.blocks:
            value._id = key   # 替身占原组件的位置，而不是再开一个新位置
        original(self, key, value)

    setitem.s11_keeps_ids = True
    SessionState.__setitem__ = setitem


def forget_shown_values() -> None:
    """gradio 给每个页面会话另存一整份页面配置（SessionState.config_values：每个组件的属性和最近一次输出的值），
    只供 gr.DeepLinkButton 的“深链接”用。本工作台不用深链接，这一份却让服务器内存随每个打开过的页面而长
    （还把会话文字多留一份），新页面第一个事件时在事件循环上现算（约 35 ms），每个带属性的更新和每次写 gr.State
    又各重算一遍。这里让它一直是空的：建页面会话时不抄（_WithoutBlocks），写组件或状态时不算（__setitem__ 只做
    gradio 的另一半：gr.State 记值和存活期，其余组件换进页面的组件表），两个更新它的函数什么也不做。
    只改 SessionState 的 __init__、__setitem__、_update_config、_update_value_in_config。"""
    from gradio.components import State
    from gradio.state_holder import SessionState
    if getattr(SessionState, "s11_forgets", False):
        return
    original_init = SessionState.__init__

    def __init__(self, blocks):
        original_init(self, _WithoutBlocks(blocks))

    def __setitem__(self, key, value):
        block = self.blocks_config.blocks.get(key)
        if isinstance(block, State):
            self._state_ttl[key] = (block.time_to_live, datetime.datetime.now())
            self.state_data[key] = value
        else:
            self.blocks_config.blocks[key] = value

    def nothing(self, *args):
        return None

    SessionState.__init__, SessionState.__setitem__ = __init__, __setitem__
    SessionState._update_config = SessionState._update_value_in_config = nothing
    SessionState.s11_forgets = True


class _WithoutBlocks:
    """交给 SessionState.__init__ 的 Blocks 替身：默认配置照旧（页面会话拿它的一份拷贝），组件表是空的——
    __init__ 只为表里的组件抄配置，所以 config_values 从空开始。"""

    def __init__(self, blocks):
        self.default_config, self.blocks = blocks.default_config, {}


def safe_cache_cleanup() -> None:
    """gradio 清理下载缓存时的一个线程竞争：每隔一段时间在线程池里遍历每个组件的临时文件集合（注释说拷了一份，
    6.31 的代码其实直接遍历原集合），这时处理函数的线程正往同一个集合里加文件，遍历就抛
    "Set changed size during iteration"，清理任务随之停掉，缓存从此只增不减（50 人 30 分钟的课上遇到过一次）。
    这里先拷一份再遍历，删掉的再从集合里去掉；其余与 gradio 的 delete_files_created_by_app 相同。
    只改 gradio.route_utils.delete_files_created_by_app。"""
    from gradio import route_utils
    if getattr(route_utils.delete_files_created_by_app, "s11_safe", False):
        return

    def delete_files_created_by_app(blocks, age):
        keep = set()
        for component in list(blocks.blocks.values()):
            keep.update(getattr(component, "keep_in_cache", ()) or ())
        for files in list(blocks.temp_file_sets):
            removed = set()
            for name in list(files):
                if name in keep:
                    continue
                try:
                    changed = datetime.datetime.fromtimestamp(os.lstat(name).st_ctime)
                    if age is None or (datetime.datetime.now() - changed).total_seconds() > age:
                        os.remove(name)
                        removed.add(name)
                except FileNotFoundError:
                    removed.add(name)   # 已经不在了：也不必再记着
            files.difference_update(removed)

    delete_files_created_by_app.s11_safe = True
    route_utils.delete_files_created_by_app = delete_files_created_by_app


def bound_page_sessions() -> None:
    """gradio 的页面会话表满了（state_session_capacity，app.launch_options 设成 PAGE_SESSIONS）时丢最久没用的那个，
    不管它还开没开着——上课时一个同学读久了，他的视图状态就没了。这里改成先丢已关闭的（心跳已断开），
    只有全是开着的页面时才丢最久没用的。只改 StateHolder.update。"""
    from gradio.state_holder import StateHolder
    if getattr(StateHolder.update, "s11_bounded", False):
        return

    def update(self, session_id):
        with self.lock:
            if session_id in self.session_data:
                self.session_data.move_to_end(session_id)
            while len(self.session_data) > self.capacity:
                victim = next((key for key, state in self.session_data.items()
                               if key != session_id and getattr(state, "is_closed", False)), None)
                if victim is None:
                    victim = next(iter(self.session_data))
                self.session_data.pop(victim, None)
                self.time_last_used.pop(victim, None)

    update.s11_bounded = True
    StateHolder.update = update


def calm_queue() -> None:
    """gradio 的队列在没有事件时每 1 ms 醒一次看看（Queue.sleep_when_free，Windows 上 50 ms），进度推送每 10 ms
    醒一次：服务器什么也不做时也占着约 6 % 的一个核（量到的：空闲 10 s 用 0.58 s CPU），全班同时用时还在和处理函数
    抢同一个事件循环。这里改成 10 ms 和 100 ms（空闲 10 s 用约 0.2 s CPU）。代价：空闲时来的事件平均晚约 5 ms
    开始（最多 10 ms），读者觉不出来；本工作台不用 gr.Progress，进度推送慢一些没有影响。只改 Queue.__init__。"""
    from gradio.queueing import Queue
    if getattr(Queue.__init__, "s11_calm", False):
        return
    original = Queue.__init__

    @functools.wraps(original)
    def init(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.sleep_when_free = max(self.sleep_when_free, 0.01)
        self.progress_update_sleep_when_free = max(self.progress_update_sleep_when_free, 0.1)

    init.s11_calm = True
    Queue.__init__ = init


def listen(trigger, handler, outputs: list, *, inputs: list = (), **options):
    """trigger(handler, inputs=inputs, outputs=outputs, **options)，只是输入的解读（component.preprocess）和输出的
    整理（component.postprocess）都在处理函数自己的工作线程里一次做完，再以 preprocess=False、postprocess=False
    交给 gradio。为什么：gradio 6.31 把每一格输入、每一格输出都单独交给线程池（anyio.to_thread.run_sync），一格
    一次线程往返；浏览器的一个事件有 45–66 格输出，全班同时点时每次往返都要在事件循环上排队——课堂开场那一波里，
    服务器时间的大半是这些往返（load_classroom.py 的 preprocess / postprocess 两列），不是解读、整理本身。
    规则和 gradio 的相同（_taken、_ready，按这个页面自己的组件），文件照旧由 gradio 搬进、搬出缓存。
    处理函数的 gr.EventData、gr.Request 参数要排在各输入之后（gradio 按参数的位置把它们插进来）。"""
    return trigger(_in_handler(handler, list(inputs), outputs), inputs=list(inputs), outputs=outputs,
                   preprocess=False, postprocess=False, **options)


def open_tab_js(label: str) -> str:
    """事件的 js=：在浏览器里点名字含 label 的标签页（app.py 的 gr.Tabs），代替把 gr.Tabs 放进事件的输出。
    为什么：gradio 6.31 的页面把当过事件“进度目标”的每个组件（事件没指定 show_progress_on 时就是它的全部输出，
    见 progress_on_few）记进一张“加载状态”表，从此以后，任何事件的每一次状态变化（排队、开始、完成）都把表里的
    每个组件连同它的所有子组件重读一遍（取值、深拷贝、在组件树里逐个查找）。
    gr.Tabs 的子组件就是整个页面（446 个）：它当过一次输出，之后页面上每点一下，浏览器都要把整页的值拷贝几遍
    （量到的：浏览器里选一个会话 0.9 s 主线程时间，大半花在这里）。所以大容器（Tabs、整块的 Column）不当输出。"""
    return ("() => { const tab = Array.from(document.querySelectorAll('button[role=tab]'))"
            f".find((button) => button.textContent.includes({json.dumps(label, ensure_ascii=False)}));"
            " if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click(); }")


def progress_on_few(demo) -> None:
    """页面搭完后调一次：没有自己指定 show_progress_on 的事件，“处理中”只盖在它第一格看得见的输出组件上
    （gr.State、gr.BrowserState 和布局块不算：布局块的每个子组件也要重读；一格也没有就不盖）；
    show_progress="hidden" 的事件一格也不记。
    为什么：gradio 6.31 的页面把每个事件的“进度目标”（不指定时 = 它的全部输出）记进加载状态表，从此任何事件的
    每一次状态变化（排队、开始、完成），都把表里的每一格在组件树里找一遍、取值、深拷贝一遍（open_tab_js 说的
    同一张表）。会话浏览器的一个事件有 45–66 格输出：量到的，浏览器里选一个会话主线程约 1.2 s → 0.4 s
    （CDP 采样，四次选中的平均）。一闪而过的“处理中”盖在一格上还是几十格上，读者看到的差不多；要盖在读者正看着的
    那一格，事件自己指定 show_progress_on（会话浏览器按动作区指定，explorer_tab.wire）。"""
    import gradio as gr

    for fn in demo.fns.values():
        if fn.show_progress_on is not None:
            continue
        shown = [block for block in fn.outputs if isinstance(block, gr.components.Component)
                 and not isinstance(block, (gr.State, gr.BrowserState))]
        fn.show_progress_on = [] if fn.show_progress == "hidden" else shown[:1]


def _in_handler(handler, inputs: list, outputs: list):
    """handler 的包装：前 len(inputs) 个参数按 inputs 逐格解读，返回值按 outputs 逐格整理。functools.wraps：
    gradio 看签名和类型注解（gr.EventData、gr.Request 参数）时看到的是 handler 自己的。"""
    @functools.wraps(handler)
    def run(*args, **kwargs):
        page = _page_blocks()
        taken = [_taken(page.get(block._id, block), value) for block, value in zip(inputs, args)]
        values = handler(*taken, *args[len(inputs):], **kwargs)
        if len(outputs) == 1:
            return _ready(page.get(outputs[0]._id, outputs[0]), values)
        return [_ready(page.get(block._id, block), value) for block, value in zip(outputs, values)]
    return run


def _page_blocks() -> dict:
    """这个页面自己的各组件（gradio 在处理函数的上下文里放着页面会话的 blocks_config）：上次带属性的更新换上的
    替身在这里，比如选项已经换过的下拉框——按它整理，和 gradio 自己整理时用的是同一个。"""
    from gradio.context import LocalContext
    config = LocalContext.blocks_config.get(None)
    return config.blocks if config is not None else {}


def _taken(block, value):
    """一格输入交给处理函数的样子，与 gradio 的 preprocess_data 相同：状态（gr.State）gradio 已从页面会话里取好；
    文件这类有数据模型的组件先按模型核对（gradio 核对过、转成了字典），再由组件解读（比如单选框核对选项）。"""
    if block.stateful:
        return value
    model = getattr(block, "data_model", None)
    if model is not None and value is not None:
        value = model.model_validate(value, context={"validate_meta": True})
    return block.preprocess(value)


def _ready(block, value):
    """一格输出交给 gradio 之前的样子，与 gradio 的 postprocess_data 相同：状态（gr.State）和没有值的更新原样；
    带属性的更新（gr.Radio(choices=…)、gr.update(value=…)）里的值按更新之后的组件整理；普通值按组件整理。"""
    from gradio import utils
    from gradio.blocks import Block
    if block.stateful or not hasattr(block, "postprocess"):
        return value
    if isinstance(value, Block):
        args = value.constructor_args
        if "value" in args:
            args["value"] = _dumped(_updated(block, args).postprocess(args["value"]))
        return value
    if utils.is_prop_update(value):
        if "value" not in value:
            return value
        return {**value, "value": _dumped(_updated(block, value).postprocess(value["value"]))}
    return _dumped(block.postprocess(value))


def _updated(block, props: dict):
    """更新之后的组件（gradio 在页面会话里换上的替身）：原来的属性加上这次更新的；只有属性变了才新建。"""
    changed = {key: item for key, item in props.items() if key not in ("value", "__type__")}
    if not changed:
        return block
    return type(block)(**{**block.constructor_args, **changed, "value": None, "render": False})


def _dumped(value):
    """整理的结果是 gradio 的数据模型（表格、对话、文件）时，转成它发给浏览器的普通字典。"""
    from gradio.data_classes import GradioModel, GradioRootModel
    return value.model_dump() if isinstance(value, (GradioModel, GradioRootModel)) else value
