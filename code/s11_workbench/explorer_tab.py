"""explorer_tab.py — 「🌳 会话树浏览器」标签页：只摆控件、接事件，逻辑全在 explorer.py

    ┌ 来源：📁 我的空间 / 📚 共享书架 / 👩‍🏫 学生空间（老师） ──────────────────────────────┐
    │ 🔍 搜索  [会话列表]            │ 标题 · ID · 路径                                       │
    │ 🌳 会话树  ├─ 分支 ◀ 活动端     │ 对话路径（Chatbot：思考 / 工具调用折叠）  ◀ 上一页 下一页 ▶ │
    │                              │ [🌿 分叉] [📂 续写] [📤 导出] [🗑️ 删除/恢复/清空] [📥 导入]   │
    └ 🗺️ 分支图（mermaid） · 🩺 体检 · 👩‍🏫 老师：所有空间 / 发布到书架 ─────────────────────────┘
    ⚠️ 确认条（页面顶部）：清空回收站、永久删除、发布之前先说清楚删什么、释放多少、遮住几处，点「确认」才做

Key insight: 每个事件都经 PageEvent 把浏览器里的空间令牌（ctx.visitor）和服务器端的 gr.State（视图、老师密钥）
交给 Explorer 的一个方法，拿回一整页 Page，再由 page_outputs() 摊到各个控件上——这里没有任何判断逻辑。
会话文字只进 Chatbot / Markdown（已转义）/ Dataframe / Radio / Code，从不进 gr.HTML。
"""

from __future__ import annotations

import gradio as gr
from gradio.context import Context

from s11_workbench import agent_folders_tab, compare_tab, share_tab
from s11_workbench.explorer import (
    ID_COLUMN,
    LIST_HEADERS,
    MINE,
    PAGE_SIZE,
    ROLES,
    SHELF,
    UPLOAD_SUFFIXES,
    Explorer,
    Page,
    View,
)

LABEL = "🌳 会话树浏览器"
# 表格在自己的框里滚动，会话树限高，代码块折行
CSS = """
#s11x-list, #s11x-spaces, #s11x-agents-table { contain: inline-size; }
#s11x-tree .wrap { max-height: 360px; overflow-y: auto; }
#s11x-map .mermaid, #s11x-map svg { max-width: 100%; height: auto; }
#s11x-map pre, #s11x-map pre code, #s11x-path pre, #s11x-path pre code { white-space: pre-wrap !important; overflow-wrap: anywhere; }
#s11x-notice:empty { display: none; }
#s11x-confirm { border: 2px solid var(--color-accent); border-radius: var(--radius-lg); padding: var(--spacing-lg); }
""" + share_tab.CSS + compare_tab.CSS   # 「📦 分享」与「⚖️ 对比 / 🔀 收敛」面板的样式（share_tab.py、compare_tab.py）
INTRO = ("## 🌳 会话树浏览器：挑一个节点，分叉、续写、导出\n\n"
         "这里列出 **你自己空间** 里的全部会话（8.11 标签页的演示也写在这里），还有老师放上 **共享书架** 的会话。"
         "选中一个节点看它从根开始的完整路径；在任意一条消息之后 **分叉**，或给它 **续写** 一轮"
         "（由你输入，不调用大模型）；**导出** 脱敏的 Markdown / HTML。别的同学看不到你的空间。")
TEACHER_HEADERS = ["空间", "会话数", "大小", "最后活动"]


class PageEvent:
    """把 Explorer 的一个动作接成事件处理函数：输入按 API 的顺序 (令牌, 视图, 老师密钥, *控件的值) 进来，
    交给 action(令牌, 视图, *控件的值, teacher=老师密钥)，拿回的整页 Page 由 page_outputs() 摊到各控件上。"""

    def __init__(self, action):
        self.action = action

    def __call__(self, token, current, secret, *values):
        return page_outputs(self.action(token, current, *values, teacher=secret))


def page_outputs(page: Page) -> list:
    """Page -> 各输出控件的新值（顺序与 build() 里的 outputs 列表一致）。"""
    view = page.view
    writable = not page.read_only
    problems = gr.skip() if page.problems is None else gr.Markdown(page.problems, visible=bool(page.problems))
    return [
        page.notice, gr.Column(visible=bool(page.confirm)), page.confirm, view, page.space_label,
        gr.Radio(choices=page.source_choices, value=view.source),
        page.list_note, page.rows,
        gr.Radio(choices=page.tree_choices, value=view.session_id if page.tree_choices else None),
        page.details, page.chat, page.path_note, page.window_start,
        gr.Button(interactive=writable), gr.Button(interactive=writable),
        gr.Button(interactive=writable),
        gr.DownloadButton(value=page.downloads[0], interactive=page.downloads[0] is not None),
        gr.DownloadButton(value=page.downloads[1], interactive=page.downloads[1] is not None),
        page.preview, page.map_markdown, problems,
        gr.Dropdown(choices=page.trash_choices, value=None), page.trash_note,
        gr.Dropdown(choices=page.examples, value=page.examples[0] if page.examples else None),
        gr.Column(visible=page.teacher), page.teacher_rows,
        gr.Button(visible=page.teacher and view.source != SHELF),
        gr.Button(visible=page.teacher and view.source == SHELF),
        gr.skip() if page.report is None else page.report,
        gr.skip() if page.draft is None else page.draft,
    ]


def build(ctx) -> None:
    """在当前 gr.Tab 里搭好浏览器（ctx 见 app.TabContext：spaces、visitor）。"""
    explorer = Explorer(ctx.spaces, upload_root=gr.utils.get_upload_folder())
    visitor = ctx.visitor
    teacher = ctx.teacher   # 老师密钥：app.py 在页面加载时放进服务器端的 gr.State，浏览器改不了
    view = gr.State(View())

    gr.Markdown(INTRO)
    notice = gr.Markdown("", elem_id="s11x-notice")
    with gr.Column(visible=False, elem_id="s11x-confirm") as confirm_box:   # 清空回收站 / 永久删除 / 发布：先确认
        confirm_text = gr.Markdown("", elem_id="s11x-confirm-text")
        with gr.Row():
            confirm_button = gr.Button("✅ 确认", variant="stop", min_width=120, elem_id="s11x-confirm-yes")
            cancel_button = gr.Button("取消", min_width=120, elem_id="s11x-confirm-no")
    with gr.Row(equal_height=False):
        space_label = gr.Markdown("", elem_id="s11x-space")
        source = gr.Radio([("📁 我的空间", MINE), ("📚 共享书架", SHELF)], value=MINE, label="来源",
                          elem_id="s11x-source")
    with gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=300):
            with gr.Row(equal_height=True):
                search = gr.Textbox(placeholder="🔍 搜索标题或 ID", show_label=False, scale=4, min_width=160,
                                    elem_id="s11x-search", max_length=200)
                refresh = gr.Button("🔄 刷新", scale=1, min_width=96, elem_id="s11x-refresh")
            list_note = gr.Markdown("", elem_id="s11x-list-note")
            table = gr.Dataframe(headers=LIST_HEADERS, datatype="str", interactive=False, max_height=300,
                                 wrap=True, column_widths=["58%", "42%"], elem_id="s11x-list",
                                 label="会话列表（点一行选中）")
            tree = gr.Radio([], label="🌳 会话树（◀ 活动端 = 对话现在停在哪里）", elem_id="s11x-tree")
        with gr.Column(scale=3, min_width=300):
            details = gr.Markdown("👈 在左侧列表或会话树里选一个会话。", elem_id="s11x-details")
            chat = gr.Chatbot([], allow_tags=False, sanitize_html=True, render_markdown=True, latex_delimiters=[],
                              height=520, show_label=False, feedback_options=None, group_consecutive_messages=False,
                              buttons=["copy", "copy_all"],   # 不要“分享到 Hugging Face”：页面全程离线
                              elem_id="s11x-path", placeholder="选中会话后，这里显示从根到它的完整对话")
            with gr.Row(equal_height=False, elem_id="s11x-window"):
                path_note = gr.Markdown("", elem_id="s11x-path-note")
                earlier = gr.Button("◀ 更早", size="sm", min_width=70, scale=0, elem_id="s11x-earlier")
                later = gr.Button("最新 ▶", size="sm", min_width=70, scale=0, elem_id="s11x-latest")
            # 两个 gr.Number 都不设 precision / minimum：那样 gradio 自己先转换，"abc" 或 NaN 在它那里抛出、
            # 留下堆栈；现在原样交给 explorer.py 检查，给出中文提示
            start = gr.Number(label=f"跳到第几条（每页 {PAGE_SIZE} 条，回车）", step=1, elem_id="s11x-start")
            with gr.Tabs(elem_id="s11x-actions"):
                with gr.Tab("🌿 分叉", elem_id="s11x-fork-tab"):
                    fork_at = gr.Number(label="保留前几条消息（在第 k 条之后分叉；点对话里的消息可直接填入）",
                                        step=1, value=0, elem_id="s11x-fork-at")
                    fork_text = gr.Textbox(label="新分支的第一条消息（可选，以 user 身份）", lines=2,
                                           max_length=20_000, elem_id="s11x-fork-text")
                    fork_title = gr.Textbox(label="新分支的标题（可选）", max_length=200, elem_id="s11x-fork-title")
                    fork_button = gr.Button("🌿 在这里分叉", variant="primary", elem_id="s11x-fork")
                with gr.Tab("📂 续写", elem_id="s11x-resume-tab"):
                    role = gr.Radio([(label, value) for value, label in ROLES.items()], value="user",
                                    label="这一轮的角色", elem_id="s11x-role")
                    resume_text = gr.Textbox(label="追加一轮（你来输入，不调用大模型）", lines=3,
                                             max_length=20_000, elem_id="s11x-resume-text")
                    resume_button = gr.Button("📂 续写并保存", variant="primary", elem_id="s11x-resume")
                with gr.Tab("📤 导出", elem_id="s11x-export-tab"):
                    export_button = gr.Button("📤 导出选中的会话（已脱敏）", elem_id="s11x-export")
                    with gr.Row():
                        markdown_download = gr.DownloadButton("⬇️ Markdown (.md)", value=None, interactive=False,
                                                              elem_id="s11x-download-md")
                        html_download = gr.DownloadButton("⬇️ HTML (.html)", value=None, interactive=False,
                                                          elem_id="s11x-download-html")
                    preview = gr.Code("", language="markdown", label="导出预览（Markdown 原文）", max_lines=30,
                                      interactive=False, elem_id="s11x-preview")
                with gr.Tab("🔗 分享", elem_id="s11x-share-tab"):   # 整棵树 + 脱敏复核（share_tab.py）
                    share_tab.build(ctx, view)
                with gr.Tab("🗑️ 删除 / 恢复", elem_id="s11x-trash-tab"):
                    delete_button = gr.Button("🗑️ 把选中的会话移进回收站", variant="stop", elem_id="s11x-delete")
                    trash = gr.Dropdown([], label="回收站", elem_id="s11x-trash")
                    trash_note = gr.Markdown("", elem_id="s11x-trash-note")
                    with gr.Row():
                        restore_button = gr.Button("♻️ 恢复", min_width=120, elem_id="s11x-restore")
                        purge_button = gr.Button("🔥 永久删除", min_width=120, elem_id="s11x-purge")
                        empty_button = gr.Button("🧹 清空回收站", min_width=120, elem_id="s11x-empty-trash")
                with gr.Tab("📥 导入", elem_id="s11x-import-tab"):
                    upload = gr.File(label="上传 Claude Code / Pi / Codex / Gemini CLI 的会话记录",
                                     file_types=list(UPLOAD_SUFFIXES),
                                     type="filepath", elem_id="s11x-upload")
                    import_button = gr.Button("📥 导入上传的文件", elem_id="s11x-import")
                    examples = gr.Dropdown([], label="或者导入一个示例（examples/）", elem_id="s11x-examples")
                    example_button = gr.Button("📥 导入示例", elem_id="s11x-import-example")
                    report = gr.Textbox("", label="导入报告", lines=6, max_lines=20, interactive=False,
                                        elem_id="s11x-report")
                    agents = agent_folders_tab.panel(ctx.agent_folders)   # 只有 --agent-folders 时才有
    with gr.Accordion("🗺️ 分支图（点节点打开它）", open=True, elem_id="s11x-map-accordion"):
        branch_map = gr.Markdown("", elem_id="s11x-map")
    problems = gr.Markdown("", visible=False, elem_id="s11x-problems")
    with gr.Column(visible=False, elem_id="s11x-teacher") as teacher_box:
        gr.Markdown("### 👩‍🏫 老师：全部学生空间（点一行只读打开）")
        teacher_table = gr.Dataframe(headers=TEACHER_HEADERS, datatype="str", interactive=False, max_height=300,
                                     elem_id="s11x-spaces")
        with gr.Row():
            publish_button = gr.Button("📚 把选中的会话发布到共享书架（先看脱敏计数）", elem_id="s11x-publish")
            unpublish_button = gr.Button("🚫 从共享书架撤下", elem_id="s11x-unpublish")

    outputs = [notice, confirm_box, confirm_text, view, space_label, source, list_note, table, tree, details, chat,
               path_note, start, resume_button, delete_button, restore_button, markdown_download, html_download,
               preview, branch_map, problems, trash, trash_note, examples, teacher_box, teacher_table,
               publish_button, unpublish_button, report, resume_text]

    def wire(trigger, action, inputs, api_name):
        """每个事件的输入都以 (令牌, 视图, 老师密钥) 开头；API 名字固定，脚本与测试按名字调用。"""
        return trigger(PageEvent(action), inputs=[visitor, view, teacher, *inputs], outputs=outputs,
                       api_name=api_name, concurrency_limit=8)

    wire(refresh.click, explorer.refresh, [search], "explorer_refresh")
    wire(search.submit, explorer.refresh, [search], "explorer_search")
    wire(source.input, explorer.switch_source, [source], "explorer_source")
    wire(tree.input, explorer.select, [tree], "explorer_select")
    wire(earlier.click, explorer.earlier, [], "explorer_earlier")
    wire(start.submit, explorer.window, [start], "explorer_window")
    wire(later.click, explorer.latest, [], "explorer_latest")
    wire(fork_button.click, explorer.fork, [fork_at, fork_text, fork_title], "explorer_fork")
    wire(resume_button.click, explorer.resume, [resume_text, role], "explorer_resume")
    wire(export_button.click, explorer.export, [], "explorer_export")
    wire(delete_button.click, explorer.delete, [], "explorer_delete")
    wire(restore_button.click, explorer.restore, [trash], "explorer_restore")
    wire(purge_button.click, explorer.ask_purge, [trash], "explorer_purge")
    wire(empty_button.click, explorer.ask_empty_trash, [], "explorer_empty_trash")
    wire(confirm_button.click, explorer.confirm, [], "explorer_confirm")
    wire(cancel_button.click, explorer.cancel, [], "explorer_cancel")
    wire(import_button.click, explorer.import_upload, [upload], "explorer_import")
    wire(example_button.click, explorer.import_example, [examples], "explorer_import_example")
    wire(publish_button.click, explorer.publish, [], "explorer_publish")
    wire(unpublish_button.click, explorer.unpublish, [], "explorer_unpublish")

    if agents is not None:
        agents.wire(explorer, ctx, view, outputs, page_outputs)

    def on_row(token, current, secret, evt: gr.EventData):
        row = _event_field(evt, "row_value")   # 排序、搜索之后 evt.index 会指错行，row_value 才是点中的那一行
        return page_outputs(explorer.select(token, current, row[ID_COLUMN] if len(row) > ID_COLUMN else None, secret))

    table.select(on_row, inputs=[visitor, view, teacher], outputs=outputs, api_visibility="private",
                 concurrency_limit=8)

    def on_space_row(token, current, secret, evt: gr.EventData):
        row = _event_field(evt, "row_value")
        return page_outputs(explorer.open_space(token, current, row[0] if row else None, secret))

    teacher_table.select(on_space_row, inputs=[visitor, view, teacher], outputs=outputs, api_visibility="private",
                         concurrency_limit=8)

    def on_message(current: View, evt: gr.EventData):
        """点对话里的一条消息 -> 分叉位置填成它的编号（在它之后分叉）。"""
        index = _event_field(evt, "index")
        index = index[0] if isinstance(index, list) and index else index
        numbers = current.chat_numbers
        return numbers[index] if isinstance(index, int) and 0 <= index < len(numbers) else gr.skip()

    chat.select(on_message, inputs=[view], outputs=[fork_at], api_visibility="private", queue=False)
    # Chatbot 自带的“清空”只清掉页面上的显示：立刻重画，免得读者以为会话被删了（删除在「🗑️ 删除 / 恢复」里）
    chat.clear(PageEvent(explorer.redraw), inputs=[visitor, view, teacher], outputs=outputs, api_visibility="private",
               concurrency_limit=8)

    compare_tab.build(ctx, explorer, view, tree, outputs, page_outputs)   # ⚖️ 对比 / 🔀 收敛（compare_tab.py）
    tab = Context.block
    tabs = tab.parent if isinstance(tab, gr.Tab) and tab.id is not None else None   # app.py 的 gr.Tabs

    def on_load(token, secret, request: gr.Request):
        """页面加载（接在 app.py 领取令牌之后）：?session=<id> 在自己的空间里选中它，并切到本页。"""
        session_id = request.query_params.get("session") if request is not None else None
        jump = gr.Tabs(selected=tab.id) if session_id else gr.skip()
        return page_outputs(explorer.open_page(token, secret, session_id)) + ([jump] if tabs is not None else [])

    ctx.ready.then(on_load, inputs=[visitor, teacher], outputs=outputs + ([tabs] if tabs is not None else []),
                   api_visibility="private", concurrency_limit=8)
    if isinstance(tab, gr.Tab):   # 从 8.11 标签页切过来时，刚跑的演示会话立刻出现在列表里
        def on_tab(token, current, secret):
            if not token:   # 页面还在领令牌：交给随后的页面加载事件来画，免得晚到的“缺少令牌”盖住它
                return [gr.skip()] * len(outputs)
            return page_outputs(explorer.render(token, current, secret))

        tab.select(on_tab, inputs=[visitor, view, teacher], outputs=outputs, api_visibility="private",
                   concurrency_limit=8)


def _event_field(evt, name: str):
    """事件数据里的一项。用 gr.EventData 而不是 gr.SelectData：脚本不带事件数据直接调用时，
    SelectData 在 gradio 内部就抛错（不是干净的拒绝），EventData 则把 None 交给我们处理。"""
    data = getattr(evt, "_data", None)
    value = data.get(name) if isinstance(data, dict) else None
    return value if value is not None else []
