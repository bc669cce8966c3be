"""agent_folders_tab.py — 浏览器「📥 导入」里的「💻 本机 Agent 文件夹」面板（逻辑在 agent_folders.py）

只有 `python app.py --agent-folders` 且只对本机开放时，explorer_tab 才调 panel()；否则这块面板根本不存在，
它的事件也不存在（课堂上的脚本也调不到）。
"""

from __future__ import annotations

import gradio as gr
from gradio.context import Context

from s11_workbench.agent_folders import (
    FOLLOW_SECONDS,
    HEADERS,
    RISK_HEADERS,
    AgentFolders,
    AtRisk,
    Caller,
    Followed,
    Listing,
)

KEY_PARAMETER = "agents"   # 启动时打印的链接 ?agents=<钥匙>：页面载入时记进本浏览器（加密的 BrowserState）

INTRO = ("列出本机 **Claude Code、Pi、Codex CLI、Gemini CLI** 默认文件夹里的会话（这些文件夹只读，从不写）。"
         "点一行选中它，再点「📥 导入」；勾上「👀 跟随」，会话文件变长后会自动再导入（同一组节点更新，"
         "你在这里续写过的节点不会被覆盖）。下面「🛟 快要被删掉的会话」列出 Agent 快要删掉的会话"
         "（Claude Code、Gemini CLI 离保留期限不到 5 天的，Codex 压缩和归档的），「🛟 全部保留」一次都导进来。")


class Panel:
    """面板上的控件；wire() 在 explorer_tab 搭好整页输出之后把事件接上。"""

    def __init__(self, options: dict, key=None):
        self.options = options
        # 面板钥匙存在这个浏览器里（app.py 建的加密 BrowserState）：刷新页面仍然有效；别的浏览器、别的账户没有它
        self.key = key if key is not None else gr.State(None)
        with gr.Accordion("💻 本机 Agent 文件夹（只在这台电脑上打开时有）", open=False, elem_id="s11x-agents"):
            gr.Markdown(INTRO)
            with gr.Row(equal_height=True):
                self.folder = gr.Textbox(label="另外再看一个文件夹（可选）", max_length=1000, scale=4, min_width=200,
                                         elem_id="s11x-agents-folder")
                self.list_button = gr.Button("🔄 列出本机会话", scale=1, min_width=120, elem_id="s11x-agents-list")
            self.note = gr.Markdown("", elem_id="s11x-agents-note")
            self.table = gr.Dataframe(headers=["#", *HEADERS], datatype="str", interactive=False, max_height=320,
                                      wrap=True, column_widths=["6%", "14%", "22%", "36%", "9%", "13%"],
                                      elem_id="s11x-agents-table", label="本机会话（点一行选中）")
            with gr.Row(equal_height=True):
                self.follow = gr.Checkbox(label="👀 跟随（文件变长后自动再导入）", value=False,
                                          elem_id="s11x-agents-follow")
                self.import_button = gr.Button("📥 导入选中的会话", variant="primary", elem_id="s11x-agents-import")
            self.timer = gr.Timer(FOLLOW_SECONDS, active=False)
            # 快要被 Agent 删掉的会话（Claude Code / Gemini CLI 的保留期限、Codex 压缩和归档的）：一键全部保留
            self.risk_note = gr.Markdown("", elem_id="s11x-agents-risk-note")
            self.risk_table = gr.Dataframe(headers=RISK_HEADERS, datatype="str", interactive=False, max_height=240,
                                           wrap=True, column_widths=["16%", "34%", "34%", "16%"],
                                           elem_id="s11x-agents-risk", label="🛟 快要被删掉的会话")
            self.keep_button = gr.Button("🛟 全部保留", elem_id="s11x-agents-keep")
        self.risk = gr.State(AtRisk())
        self.listing = gr.State(Listing())
        self.chosen = gr.State(None)
        self.followed = gr.State(Followed())

    def wire(self, explorer, ctx, view, outputs: list, page_outputs) -> None:
        folders = AgentFolders(explorer, **self.options)
        visitor, teacher = ctx.visitor, ctx.teacher
        key = self.key   # 每个事件都把浏览器里的钥匙当作一个输入带上

        if self.options.get("key"):
            def on_load(request: gr.Request):
                given = request.query_params.get(KEY_PARAMETER) if request is not None else None
                return given if given else gr.skip()   # 链接里带着就记下（对不对由每次点击时核对）；没带就不动
            # 页面自己的加载事件（与 app.py 领令牌的那个同时发出）：地址栏里的 ?agents= 这时还在，
            # app.py 在领到令牌之后才把它从地址栏抹掉
            Context.root_block.load(on_load, inputs=None, outputs=[self.key], api_visibility="private", queue=False)

        def on_list(folder, kept, request: gr.Request):
            try:
                listing = folders.list(caller(request, kept), folder)
            except Exception as error:   # ExplorerError 与 OSError：一句中文
                from s11_workbench.explorer import explain
                return Listing(), [], explain(error), None
            rows = [[str(number), *row] for number, row in enumerate(listing.rows, 1)]
            return listing, rows, listing.note, None

        listed = self.list_button.click(on_list, inputs=[self.folder, key],
                                        outputs=[self.listing, self.table, self.note, self.chosen],
                                        api_visibility="private", concurrency_limit=2)

        def on_risk(kept, request: gr.Request):
            try:
                risk = folders.at_risk(caller(request, kept))
            except Exception as error:   # ExplorerError 与 OSError：一句中文
                from s11_workbench.explorer import explain
                return AtRisk(), [], explain(error)
            return risk, [list(row) for row in risk.rows], risk.note

        listed.then(on_risk, inputs=[key], outputs=[self.risk, self.risk_table, self.risk_note],
                    api_visibility="private", concurrency_limit=2)

        def on_keep(token, current, secret, risk, kept, request: gr.Request):
            return page_outputs(folders.keep_all(caller(request, kept), token, current, risk, secret))

        self.keep_button.click(on_keep, inputs=[visitor, view, teacher, self.risk, key], outputs=outputs,
                               api_visibility="private", concurrency_limit=2)
        self.folder.submit(on_list, inputs=[self.folder, key],
                           outputs=[self.listing, self.table, self.note, self.chosen],
                           api_visibility="private", concurrency_limit=2)

        def on_row(evt: gr.EventData):
            row = getattr(evt, "_data", None) or {}
            value = row.get("row_value") if isinstance(row, dict) else None
            try:
                return int(value[0]) - 1
            except (TypeError, ValueError, IndexError):
                return None

        self.table.select(on_row, inputs=None, outputs=[self.chosen], api_visibility="private", queue=False)

        def on_import(token, current, secret, listing, chosen, follow, kept, request: gr.Request):
            page, followed = folders.import_row(caller(request, kept), token, current, listing, chosen,
                                                bool(follow), secret)
            return [*page_outputs(page), followed, gr.Timer(active=bool(followed.path))]

        self.import_button.click(on_import, inputs=[visitor, view, teacher, self.listing, self.chosen, self.follow,
                                                    key],
                                 outputs=[*outputs, self.followed, self.timer], api_visibility="private",
                                 concurrency_limit=2)

        def on_tick(token, current, secret, followed, kept, request: gr.Request):
            page, followed = folders.tick(caller(request, kept), token, current, followed, secret)
            if page is None:
                return [gr.skip()] * len(outputs) + [followed]
            return [*page_outputs(page), followed]

        self.timer.tick(on_tick, inputs=[visitor, view, teacher, self.followed, key],
                        outputs=[*outputs, self.followed],
                        api_visibility="private", concurrency_limit=2, show_progress="hidden")

        def on_unfollow(follow):
            return (gr.skip(), gr.skip()) if follow else (Followed(), gr.Timer(active=False))

        self.follow.input(on_unfollow, inputs=[self.follow], outputs=[self.followed, self.timer],
                          api_visibility="private", queue=False)


def panel(options, key=None) -> Panel | None:
    """options 是 None（没有 --agent-folders：面板不存在）或 AgentFolders 的参数（home、env、key）；
    key 是 app.py 建在页面最外层的 gr.BrowserState，存着本浏览器的面板钥匙。"""
    return None if options is None else Panel(dict(options), key)


def caller(request, key=None) -> Caller:
    """请求 -> Caller：对端地址、Host 与 Origin 表头、这个连接进来的端口（服务器自己的套接字，不是 Host 说的），
    和浏览器带来的面板钥匙 key。"""
    if request is None:
        return Caller()
    headers = getattr(request, "headers", None) or {}
    scope = getattr(getattr(request, "request", None), "scope", None) or {}
    server = scope.get("server") or ()
    port = server[1] if len(server) > 1 and isinstance(server[1], int) else 0
    client = request.client.host if request.client else None
    return Caller(client, headers.get("host"), port, headers.get("origin"), key if isinstance(key, str) else None)
