"""explorer_tab.py — 「🌳 会话树浏览器」标签页：只摆控件、接事件，逻辑全在 explorer.py

    ┌ 来源：📁 我的空间 / 📚 共享书架 / 👩‍🏫 学生空间（老师） ──────────────────────────────┐
    │ 🔍 搜索（标题、ID、每条消息）   │ 标题 · 分支名 · 路径                                    │
    │ 🔎 全文命中（点一行跳过去）      │ 🌿 分岔处 ◀ 分支 B（2/2）▶                              │
    │ 会话列表（按树分组）             │ 对话路径（点一条消息 = 选分叉位置；✏️ 改写用户消息 = 分叉）│
    │ 🌳 会话树  ├─ 分支 A ◀ 活动端    │ ▸ 🌿 分叉 ▸ 📂 恢复 ▸ 📤 导出 ▸ 🔗 分享 ▸ 🗑️ 回收站 ▸ 📥 导入 │
    │                                │   每块的结果写在它自己的按钮下面（*_result）               │
    └ 🗺️ 分支图（mermaid） · 🩺 体检 · 👩‍🏫 老师：所有空间 / 发布到书架 ─────────────────────────┘
    ⚠️ 确认条（回收站和 📚 发布按钮正下方）：清空回收站、永久删除、发布之前先说清楚删什么、释放多少、遮住几处，
       点「确认」才做

Key insight: 每个事件都经 PageEvent 把浏览器里的空间令牌（ctx.visitor）和服务器端的 gr.State（视图、老师密钥）
交给 Explorer 的一个方法，拿回一整页 Page，再由 page_outputs() 摊到这个事件改得动的控件上（属性没变的只回值，
见 PAGE / PICKED / SOURCE……和记着“页面上已有的属性”的 shown）——这里没有任何判断逻辑。
会话文字只进 Chatbot / Markdown（已转义）/ Dataframe / Radio / Code，从不进 gr.HTML。
每块动作各有一个函数（_resume_area、_export_area……）搭它的控件：别的面板（书架、比较、分享）照样接在旁边。
分叉是对话正下方的分叉控件（fork_control_tab.py，练习页用的同一个）：点一条消息 = 选位置，位置从不悄悄变成 0。
"""

from __future__ import annotations

import json
from pathlib import Path

import gradio as gr
from gradio.context import Context

from s11_workbench import agent_folders_tab, compare_tab, fork_control_tab, history_tab, share_tab
from s11_workbench.explorer import (
    AREAS,
    CHAT_FILTERS,
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
from s11_workbench.gradio_fixes import listen
from s11_workbench.shown import Shown, ShownEvent

LABEL = "🌳 会话树浏览器"
# 表格在自己的框里滚动，会话树限高，代码块折行；分支图的字不小于 12 px（窄屏上图按宽度缩小时，改看文字树）
CSS = """
#s11x-list, #s11x-hits, #s11x-agents-table, #s11x-agents-risk, #s11x-preview { contain: inline-size; }
#s11x-tree .wrap { max-height: 360px; overflow-y: auto; }
#s11x-map .mermaid, #s11x-map svg { max-width: 100%; height: auto; }
#s11x-map pre, #s11x-map pre code, #s11x-path pre, #s11x-path pre code { white-space: pre-wrap !important; overflow-wrap: anywhere; }
#s11x-notice:empty, .s11x-result:empty { display: none; }
#s11x-map a { cursor: pointer; }
#s11x-map a:focus-visible { outline: 3px solid var(--color-accent); outline-offset: 2px; }
#s11x-confirm { border: 2px solid var(--color-accent); border-radius: var(--radius-lg); padding: var(--spacing-lg); }
.s11x-result { font-weight: 600; }
#s11x-siblings { align-items: center; }
/* 分叉处的分隔线（explorer.DIVIDER_RULE 开头的那一行）：不是气泡，是横贯对话的一条线和一句说明 */
#s11x-path .message-row:has(.prose > hr:first-child) { justify-content: center; max-width: 100%; }
#s11x-path .message-row:has(.prose > hr:first-child) .message,
#s11x-path .message-row:has(.prose > hr:first-child) .bubble { background: none !important; border: none !important;
  box-shadow: none !important; width: 100%; max-width: 100%; }
#s11x-path .message-row:has(.prose > hr:first-child) .prose { text-align: center; color: var(--body-text-color-subdued);
  font-size: var(--text-sm); }
#s11x-path .message-row:has(.prose > hr:first-child) .prose hr { margin: 4px 0; border-top: 2px dashed var(--color-accent); }
#s11x-path .message-row:has(.prose > hr:first-child) .prose p { margin: 0; }
#s11x-path .message-row:has(.prose > hr:first-child) .flex-wrap,
#s11x-path .message-row:has(.prose > hr:first-child) .flex-wrap > div { width: 100%; max-width: 100%; }
#s11x-path .message-row:has(.prose > hr:first-child) + .message-buttons { display: none; }
#s11x-actions > .block { margin-bottom: 6px; }
/* 分支图后面跟着文字版：宽屏看图；窄屏上图里的字会缩到 12 px 以下，改看文字版 */
#s11x-map .mermaid ~ * { display: none; }
@media (max-width: 720px) {
  #s11x-map .mermaid { visibility: hidden; position: absolute; left: 0; right: 0; height: 0; overflow: hidden; }   /* 不用 display: none：mermaid 要量字，量到 0 就报错 */
  #s11x-map .mermaid ~ * { display: block; }
  #s11x-map pre, #s11x-map pre code, #s11x-map p { font-size: 13px !important; }
  #s11x-map p { line-height: 1.9; overflow-wrap: anywhere; }
  #s11x-map p code { white-space: pre; background: none !important; border: none !important; padding: 0 !important; }
}
""" + share_tab.CSS + compare_tab.CSS   # 「📦 分享」与「⚖️ 对比 / 🔀 收敛」面板的样式（share_tab.py、compare_tab.py）
CSS += history_tab.CSS   # 「📜 操作历史 · ↶ 撤销 / ↷ 重做」（history_tab.py）
# 页面自己的脚本（点分支图里的节点、上传之前查大小和后缀）：在 explorer_tab.js 里，app.py 把各页的 JS 合在一起交给 launch(js=...)
JS = Path(__file__).with_name("explorer_tab.js").read_text(encoding="utf-8")
# ?session= 链接一打开就切到本页的脚本：放进页面的 <head>（app.py 交给 launch(head_paths=...)），挂页面之前就在等标签栏
HEAD = str(Path(__file__).with_name("explorer_tab_head.html"))
INTRO = ("## 🌳 会话树浏览器：挑一个节点，分叉、恢复、导出\n\n"
         "这里列出 **你自己空间** 里的全部会话（8.11 标签页的演示也写在这里），还有老师放上 **共享书架** 的会话。"
         "选中一个节点看它从根开始的完整路径；**点对话里的一条消息** 就在它之后 **分叉**，"
         "或点用户消息上的 ✏️ 改写它，改写后的话成为新分支的第一条（和聊天软件一样）；"
         "**恢复** 一个会话给它续写一轮（由你输入，不调用大模型）；**导出** 脱敏的 Markdown / HTML。"
         "别的同学看不到你的空间。")
HIT_HEADERS = ["会话", "第几条", "上下文", "ID"]


# 每个事件只回它改得动的控件；属性（选项、可见、可点）和页面上已有的一样时只回值（为什么见 shown.py）。
RESULTS = tuple(f"{area}_result" for area in AREAS)
FORK_FORM = fork_control_tab.FORM   # 分叉控件的五格：位置、第一条消息、标题、说明、按钮
# 所有输出，按这个顺序（compare_tab.py、agent_folders_tab.py 用 outputs + page_outputs(page) 接整页）
ALL = ("notice", "confirm_box", "confirm_text", "view", "space_label", "source", "list_note", "table", "tree",
       "details", "chat", "chat_filter", "path_note", "start", "resume_button", "delete", "restore", "download_md",
       "download_html", "preview", "map", "problems", "trash", "trash_note", "examples", "teacher_box", "student", "publish",
       "unpublish", "report", "resume_text", *RESULTS, "sibling_row", "sibling_text", "previous", "next",
       "hits_note", "hits", *FORK_FORM, "remembered", "shown")
# 每个动作都重画的部分（列表、树、路径……每次都从磁盘重读）；下面几组只在会变的动作上加进来
PAGE = tuple(name for name in ALL if name not in ("problems", "teacher_box", "report", "resume_text", *FORK_FORM))
CHECKED = PAGE + ("problems",)                   # 顺便体检的动作（check=True）：体检结果那一格
PICKED = PAGE + FORK_FORM                        # 可能换了选中的会话：分叉表单清空
SOURCE = CHECKED + ("teacher_box",) + FORK_FORM  # 换来源、打开或切回本页：老师区要不要显示；链接选好的位置
IMPORTED = PAGE + FORK_FORM + ("report",)        # 导入：报告框
# 新页面上各控件的属性就是 build() 搭出来的样子：第一次事件也不必为它们发整个组件
BUILT = {"source": ((("📁 我的空间", MINE), ("📚 共享书架", SHELF))), "tree": (), "writable": True,
         "download_md": False, "download_html": False, "problems": False, "trash": (), "examples": (),
         "teacher": False, "publish": False, "unpublish": False, "confirm": False, "siblings": False,
         "previous": False, "next": False, "hits": False}
RESUME_LABEL, DELETE_LABEL, RESTORE_LABEL = "📂 恢复并保存这一轮", "🗑️ 把选中的会话移进回收站", "♻️ 从回收站取回"
PREVIOUS_LABEL, NEXT_LABEL = "◀ 上一个分支", "下一个分支 ▶"
PUBLISH_LABEL, UNPUBLISH_LABEL = "📚 把选中的会话发布到共享书架（先看脱敏计数）", "🚫 从共享书架撤下"


class PageEvent(ShownEvent):
    """Explorer 的一个动作 -> 事件处理函数（见 shown.py）：拿回的整页 Page 由 page_outputs() 摊到 names 各控件上。"""

    def __init__(self, action, names: tuple = PAGE):
        super().__init__(action, names, page_outputs)


def page_outputs(page: Page, names: tuple = ALL, shown: dict | None = None) -> list:
    """Page -> names 里各控件的新值（顺序同 names）。shown：这个页面上次收到的属性（gr.State；None = 不知道，
    全部按组件发）。page.area 为 None：提示与各块的结果行都保持原样（切换标签页时的重画不该抹掉刚显示的警告）。"""
    view, shown = page.view, Shown(shown)
    writable = not page.read_only
    keep = page.area is None
    sibling_text, previous, following = page.siblings
    tree_value = view.session_id if page.tree_choices else None
    example = page.examples[0] if page.examples else None
    md, html = page.downloads

    def button(key, label, **props):
        """按钮的值就是它的字：属性没变时只回字。"""
        return lambda: shown.prop(key, next(iter(props.values())), lambda: gr.Button(**props), label)

    def fork_form(index):
        if not page.fork_reset:
            return gr.skip()
        return fork_control_tab.values(page.fork_pick, index)   # 清空，或 ?session=&m= 链接选好的那一条

    values = {
        "notice": lambda: gr.skip() if keep else (page.notice if not page.area else ""),
        "confirm_box": lambda: shown.prop("confirm", bool(page.confirm),
                                     lambda: gr.Column(visible=bool(page.confirm)), gr.skip),
        "confirm_text": lambda: page.confirm, "view": lambda: view, "space_label": lambda: page.space_label,
        "source": lambda: shown.prop("source", tuple(page.source_choices),
                                lambda: gr.Radio(choices=page.source_choices, value=view.source), view.source),
        "list_note": lambda: page.list_note, "table": lambda: page.rows,
        "tree": lambda: shown.prop("tree", tuple(page.tree_choices),
                              lambda: gr.Radio(choices=page.tree_choices, value=tree_value), tree_value),
        "details": lambda: page.details, "chat": lambda: page.chat, "path_note": lambda: page.path_note,
        "chat_filter": lambda: view.shown,
        "start": lambda: page.window_start,
        "resume_button": button("writable", RESUME_LABEL, interactive=writable),
        "delete": button("writable", DELETE_LABEL, interactive=writable),
        "restore": button("writable", RESTORE_LABEL, interactive=writable),
        "download_md": lambda: shown.prop("download_md", md is not None,
                                     lambda: gr.DownloadButton(value=md, interactive=md is not None), md),
        "download_html": lambda: shown.prop("download_html", html is not None,
                                       lambda: gr.DownloadButton(value=html, interactive=html is not None), html),
        "preview": lambda: page.preview, "map": lambda: page.map_markdown,
        "problems": lambda: gr.skip() if page.problems is None else shown.prop(
            "problems", bool(page.problems),
            lambda: gr.Markdown(page.problems, visible=bool(page.problems)), page.problems),
        "trash": lambda: shown.prop("trash", tuple(page.trash_choices),
                               lambda: gr.Dropdown(choices=page.trash_choices, value=None), None),
        "trash_note": lambda: page.trash_note,
        "examples": lambda: shown.prop("examples", tuple(page.examples),
                                  lambda: gr.Dropdown(choices=page.examples, value=example), example),
        "teacher_box": lambda: shown.prop("teacher", page.teacher,
                                     lambda: gr.Column(visible=page.teacher), gr.skip),
        "student": lambda: shown.prop("student", tuple(page.teacher_rows),
                                 lambda: gr.Dropdown(choices=page.teacher_rows, value=None), None),
        "publish": button("publish", PUBLISH_LABEL, visible=page.teacher and view.source != SHELF),
        "unpublish": button("unpublish", UNPUBLISH_LABEL, visible=page.teacher and view.source == SHELF),
        "report": lambda: gr.skip() if page.report is None else page.report,
        "resume_text": lambda: gr.skip() if page.draft is None else page.draft,
        **{name: (lambda area=area: gr.skip() if keep else (page.notice if page.area == area else ""))
           for name, area in zip(RESULTS, AREAS)},
        "sibling_row": lambda: shown.prop("siblings", bool(sibling_text),
                                     lambda: gr.Row(visible=bool(sibling_text)), gr.skip),
        "sibling_text": lambda: sibling_text,
        "previous": button("previous", PREVIOUS_LABEL, interactive=previous is not None),
        "next": button("next", NEXT_LABEL, interactive=following is not None),
        "hits_note": lambda: page.hits_note,
        "hits": lambda: shown.prop("hits", bool(page.hits),
                              lambda: gr.Dataframe(value=page.hits, visible=bool(page.hits)), page.hits),
        **{name: (lambda index=index: fork_form(index)) for index, name in enumerate(FORK_FORM)},
        # 不回 None、也不回上次写的 ID：页面刚载入时浏览器可能还没从 localStorage 读出它存的那个，回一个值会盖掉它
        "remembered": lambda: view.session_id if view.source == MINE and view.session_id else gr.skip(),
    }
    # “已显示的属性”最后才定下来：先算其余各格（它们往 shown 里记），再把记下的交出去
    result = {name: values[name]() for name in names if name != "shown"}
    result["shown"] = shown.merged()
    return [result[name] for name in names]


def build(ctx) -> None:
    """在当前 gr.Tab 里搭好浏览器（ctx 见 app.TabContext：spaces、visitor）。"""
    explorer = Explorer(ctx.spaces, upload_root=gr.utils.get_upload_folder())
    visitor = ctx.visitor
    teacher = ctx.teacher   # 老师密钥：app.py 在页面加载时放进服务器端的 gr.State，浏览器改不了
    view = gr.State(View())
    # 这个浏览器上次选中的会话（只是一个 ID）：重新载入页面时回到它，照样在空间里重新核对
    remembered = gr.BrowserState(None, storage_key="s11-explorer-pick", secret=ctx.spaces.browser_secret())
    results = {}

    def result_line(area: str):
        results[area] = gr.Markdown("", elem_id=f"s11x-{area}-result", elem_classes="s11x-result")
        return results[area]

    gr.Markdown(INTRO)
    notice = gr.Markdown("", elem_id="s11x-notice")
    with gr.Row(equal_height=False):
        space_label = gr.Markdown("", elem_id="s11x-space")
        source = gr.Radio([("📁 我的空间", MINE), ("📚 共享书架", SHELF)], value=MINE, label="来源",
                          elem_id="s11x-source")
    with gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=300):
            with gr.Row(equal_height=True):
                search = gr.Textbox(placeholder="🔍 搜索标题、ID 或任意一条消息（回车）", show_label=False, scale=4,
                                    min_width=160, elem_id="s11x-search", max_length=200)
                refresh = gr.Button("🔄 刷新", scale=1, min_width=96, elem_id="s11x-refresh")
            result_line("list")
            hits_note = gr.Markdown("", elem_id="s11x-hits-note")
            hits = gr.Dataframe(headers=HIT_HEADERS, datatype="str", interactive=False, max_height=300, wrap=True,
                                column_widths=["22%", "12%", "46%", "20%"], elem_id="s11x-hits", visible=False,
                                label="全文命中（点一行跳到那条消息）")
            list_note = gr.Markdown("", elem_id="s11x-list-note")
            table = gr.Dataframe(headers=LIST_HEADERS, datatype="str", interactive=False, max_height=420,
                                 wrap=True, column_widths=["72%", "28%"], elem_id="s11x-list",
                                 label="会话列表（每棵树：根在前、分支缩进；点一行选中）")
            tree = gr.Radio([], label="🌳 会话树（点一个节点选中它；◀ 活动端 = 对话现在停在哪里）", elem_id="s11x-tree")
        with gr.Column(scale=3, min_width=300):
            details = gr.Markdown("在会话列表或会话树里选一个会话（宽屏在左边，手机上在上面）。", elem_id="s11x-details")
            with gr.Row(equal_height=True, visible=False, elem_id="s11x-siblings") as sibling_row:
                previous_sibling = gr.Button(PREVIOUS_LABEL, size="sm", min_width=90, scale=0, interactive=False,
                                             elem_id="s11x-sibling-prev")
                sibling_text = gr.Markdown("", elem_id="s11x-sibling-text")
                next_sibling = gr.Button(NEXT_LABEL, size="sm", min_width=90, scale=0, interactive=False,
                                         elem_id="s11x-sibling-next")
            # 对话的过滤（像 claude-code-log）：只藏行，点留下的消息照样在它的绝对位置分叉（explorer.CHAT_FILTERS）
            chat_filter = gr.Radio([(label, key) for key, label in CHAT_FILTERS.items()], value="all",
                                   label="对话里显示", container=False, elem_id="s11x-chat-filter")
            chat = gr.Chatbot([], allow_tags=False, sanitize_html=True, render_markdown=True, latex_delimiters=[],
                              height=520, show_label=False, feedback_options=None, group_consecutive_messages=False,
                              buttons=["copy", "copy_all"],   # 不要“分享到 Hugging Face”：页面全程离线
                              editable="user",                # ✏️ 改写一条用户消息 = 在它之前分叉
                              elem_id="s11x-path", elem_classes="s11-fork-chat",   # 分叉控件的脚本认这个类
                              placeholder="选中会话后，这里显示从根到它的完整对话")
            with gr.Row(equal_height=False, elem_id="s11x-window"):
                path_note = gr.Markdown("", elem_id="s11x-path-note")
                earlier = gr.Button("◀ 更早", size="sm", min_width=70, scale=0, elem_id="s11x-earlier")
                later = gr.Button("最新 ▶", size="sm", min_width=70, scale=0, elem_id="s11x-latest")
            # 分叉控件紧贴在对话下面：点一条消息，说明和按钮就在读者眼前（页面脚本再把它移进视野）
            with gr.Accordion("🌿 分叉", open=True, elem_id="s11x-fork-tab"):
                fork = fork_control_tab.build("s11x", lambda: result_line("fork"))
            # gr.Number 不设 precision / minimum：那样 gradio 自己先转换，"abc" 或 NaN 在它那里抛出、
            # 留下堆栈；现在原样交给 explorer.py 检查，给出中文提示
            start = gr.Number(label=f"跳到第几条（每页 {PAGE_SIZE} 条，回车）", step=1, elem_id="s11x-start")
            result_line("path")
            with gr.Column(elem_id="s11x-actions"):
                resume = _resume_area(result_line)
                export = _export_area(result_line)
                with gr.Accordion("🔗 分享整棵树", open=False, elem_id="s11x-share-tab"):   # 脱敏复核（share_tab.py）
                    share_tab.build(ctx, view)
                trash = _trash_area(result_line)
                # 老师的发布 / 撤下就在确认条上面：确认条出现在点过的按钮旁边（以前在页面底部，相隔上千像素）
                with gr.Row():
                    publish_button = gr.Button(PUBLISH_LABEL, visible=False, elem_id="s11x-publish")
                    unpublish_button = gr.Button(UNPUBLISH_LABEL, visible=False, elem_id="s11x-unpublish")
                result_line("teacher")
                # 清空回收站 / 永久删除 / 发布：先确认（就在回收站和发布按钮下面，点过的按钮旁边）
                with gr.Column(visible=False, elem_id="s11x-confirm") as confirm_box:
                    confirm_text = gr.Markdown("", elem_id="s11x-confirm-text")
                    with gr.Row():
                        confirm_button = gr.Button("✅ 确认", variant="stop", min_width=120, elem_id="s11x-confirm-yes")
                        cancel_button = gr.Button("取消", min_width=120, elem_id="s11x-confirm-no")
                result_line("confirm")
                imports = _import_area(result_line, ctx)
                history = history_tab.panel()   # 📜 操作历史 · ↶ 撤销 / ↷ 重做（history_tab.py）
    with gr.Accordion("🗺️ 分支图（每个节点写着分支名和它新增的第一句；点一个节点选中它）", open=True,
                      elem_id="s11x-map-accordion"):
        branch_map = gr.Markdown("", elem_id="s11x-map")
        result_line("map")
        # 点分支图里的节点时，页面的脚本（JS）把 ID 写进这里；visible="hidden"：在页面里、但看不见
        map_pick = gr.Textbox("", visible="hidden", show_label=False, max_length=100, elem_id="s11x-map-pick")
    problems = gr.Markdown("", visible=False, elem_id="s11x-problems")
    with gr.Column(visible=False, elem_id="s11x-teacher") as teacher_box:
        # 全班的名字、进度和分叉图在页面上方的 🧑‍🏫 课堂面板里（classroom_tab.py）；这里按名字只读打开一位同学的空间，
        # 在里面选一个会话，就能用上面的「发布到书架」把它给全班
        student = gr.Dropdown([], value=None, label="👩‍🏫 老师：只读打开一位同学的空间（按名字，最近活动的在前）",
                              elem_id="s11x-student")

    shown = gr.State(dict(BUILT))
    components = {"notice": notice, "confirm_box": confirm_box, "confirm_text": confirm_text, "view": view,
                  "space_label": space_label, "source": source, "list_note": list_note, "table": table, "tree": tree,
                  "details": details, "chat": chat, "chat_filter": chat_filter, "path_note": path_note, "start": start,
                  "resume_button": resume.button, "delete": trash.delete, "restore": trash.restore,
                  "download_md": export.markdown, "download_html": export.html, "preview": export.preview,
                  "map": branch_map, "problems": problems, "trash": trash.choices, "trash_note": trash.note,
                  "examples": imports.examples, "teacher_box": teacher_box, "student": student,
                  "publish": publish_button, "unpublish": unpublish_button, "report": imports.report,
                  "resume_text": resume.text, **{f"{area}_result": results[area] for area in AREAS},
                  "sibling_row": sibling_row, "sibling_text": sibling_text, "previous": previous_sibling,
                  "next": next_sibling, "hits_note": hits_note, "hits": hits, "fork_at": fork.at,
                  "fork_text": fork.text, "fork_title": fork.title, "picked": fork.picked, "fork_button": fork.button,
                  "remembered": remembered, "shown": shown}
    outputs = [components[name] for name in ALL]

    def targets(names: tuple) -> list:
        return [components[name] for name in names]

    def wire(trigger, action, inputs, api_name, names=PAGE, progress="chat", **options):
        """每个事件的输入都以 (令牌, 视图, 老师密钥) 开头、以已显示的属性结尾；API 名字固定，脚本与测试按名字调用。
        trigger_mode="once"：同一个页面上，前一次还没回来时再点不会再发一次（双击只分叉一次）。
        listen（gradio_fixes.py）：几十格输入输出在处理函数的线程里一次解读、整理好，全班同时点时不为每一格排队。
        progress：“处理中”只盖在这一格上（读者在这块区域里等结果的那一格），不盖满几十格输出
        （为什么见 gradio_fixes.progress_on_few）。"""
        return listen(trigger, PageEvent(action, names), targets(names),
                      inputs=[visitor, view, teacher, *inputs, shown], api_name=api_name, concurrency_limit=8,
                      trigger_mode="once", show_progress_on=[components[progress]], **options)

    wire(refresh.click, explorer.refresh, [search], "explorer_refresh", CHECKED, "table")
    wire(map_pick.change, explorer.map_pick, [map_pick], "explorer_map_pick", PICKED, "map")
    wire(imports.refused.change, explorer.refuse_upload, [imports.refused], "explorer_upload_refused", IMPORTED, "report")
    wire(search.submit, explorer.refresh, [search], "explorer_search", CHECKED, "table")
    wire(source.input, explorer.switch_source, [source], "explorer_source", SOURCE, "table")
    wire(tree.input, explorer.select, [tree], "explorer_select", PICKED)
    wire(earlier.click, explorer.earlier, [], "explorer_earlier")
    wire(start.submit, explorer.window, [start], "explorer_window")
    wire(later.click, explorer.latest, [], "explorer_latest")
    wire(chat_filter.input, explorer.show_only, [chat_filter], "explorer_show_only")
    wire(previous_sibling.click, explorer.previous_sibling, [], "explorer_sibling_previous", PICKED)
    wire(next_sibling.click, explorer.next_sibling, [], "explorer_sibling_next", PICKED)
    wire(fork.button.click, explorer.fork, [fork.at, fork.text, fork.title], "explorer_fork", PICKED)
    wire(resume.button.click, explorer.resume, [resume.text, resume.role], "explorer_resume",
         PAGE + ("resume_text",))
    wire(export.button.click, explorer.export, [], "explorer_export", progress="preview")
    wire(trash.delete.click, explorer.delete, [], "explorer_delete", CHECKED, "trash")
    wire(trash.restore.click, explorer.restore, [trash.choices], "explorer_restore", CHECKED + FORK_FORM, "trash")
    wire(trash.purge.click, explorer.ask_purge, [trash.choices], "explorer_purge", progress="trash")
    wire(trash.empty.click, explorer.ask_empty_trash, [], "explorer_empty_trash", progress="trash")
    wire(confirm_button.click, explorer.confirm, [], "explorer_confirm", CHECKED, "table")
    wire(cancel_button.click, explorer.cancel, [], "explorer_cancel", progress="confirm_text")
    wire(imports.button.click, explorer.import_upload, [imports.upload], "explorer_import", IMPORTED, "report")
    wire(imports.example_button.click, explorer.import_example, [imports.examples], "explorer_import_example",
         IMPORTED, "report")
    wire(publish_button.click, explorer.publish, [], "explorer_publish", progress="table")
    wire(unpublish_button.click, explorer.unpublish, [], "explorer_unpublish", CHECKED, "table")

    def on_upload(token, path):
        """文件一传上来就检查后缀和大小：不行就清掉它，原因写在导入按钮下面（中文）。
        没问题时什么也不回：读者可能已经点了“导入”，这次检查晚回来时不能把导入的结果行擦掉。"""
        problem = explorer.check_upload(token, path)
        return (None, problem) if problem else (gr.skip(), gr.skip())

    # 上一个文件留下的问题（结果行和报告框里的“只能导入 …”）在新文件一传上来就擦掉：只在浏览器里做，不等服务器
    imports.upload.upload(None, outputs=[results["import"], imports.report], js="() => ['', '']",
                          api_visibility="private", queue=False)
    # show_progress="hidden"：检查只要几毫秒，不在结果行上盖一层英文的 “processing”
    imports.upload.upload(on_upload, inputs=[visitor, imports.upload], outputs=[imports.upload, results["import"]],
                          api_visibility="private", concurrency_limit=8, show_progress="hidden")

    if imports.agents is not None:
        imports.agents.wire(explorer, ctx, view, outputs, page_outputs)

    def on_row(token, current, secret, known, evt: gr.EventData):
        row = _event_field(evt, "row_value")   # 排序、搜索之后 evt.index 会指错行，row_value 才是点中的那一行
        page = explorer.select(token, current, row[ID_COLUMN] if len(row) > ID_COLUMN else None, secret)
        return page_outputs(page, PICKED, known)

    listen(table.select, on_row, targets(PICKED), inputs=[visitor, view, teacher, shown], api_visibility="private",
           concurrency_limit=8, show_progress_on=[chat])

    def on_hit(token, current, secret, known, evt: gr.EventData):
        row = _event_field(evt, "row_value")
        if len(row) < len(HIT_HEADERS):
            return [gr.skip()] * len(PICKED)
        return page_outputs(explorer.jump(token, current, row[3], row[1], secret), PICKED, known)

    listen(hits.select, on_hit, targets(PICKED), inputs=[visitor, view, teacher, shown], api_visibility="private",
           concurrency_limit=8, show_progress_on=[chat])

    def on_student(token, current, secret, space_id, known):
        if not space_id:
            return [gr.skip()] * len(SOURCE)
        return page_outputs(explorer.open_space(token, current, space_id, secret), SOURCE, known)

    listen(student.input, on_student, targets(SOURCE), inputs=[visitor, view, teacher, student, shown],
           api_visibility="private", concurrency_limit=8, show_progress_on=[table])

    fork_control_tab.wire_picking(fork, chat, view)   # 点一条消息 / 「从头分叉」= 选位置

    def on_edit(token, current, secret, known, evt: gr.EventData):
        """✏️ 改写了一条用户消息 -> 在它之前分叉，改写后的话是新分支的第一条。"""
        index = _event_field(evt, "index")
        index = index[0] if isinstance(index, list) and index else index
        return page_outputs(explorer.edit_fork(token, current, index, _event_field(evt, "value"), secret), PICKED,
                            known)

    listen(chat.edit, on_edit, targets(PICKED), inputs=[visitor, view, teacher, shown], api_visibility="private",
           concurrency_limit=8, trigger_mode="once", show_progress_on=[chat])
    # Chatbot 自带的“清空”只清掉页面上的显示：立刻重画，免得读者以为会话被删了（删除在「🗑️ 回收站」里）
    listen(chat.clear, PageEvent(explorer.redraw), targets(PAGE), inputs=[visitor, view, teacher, shown],
           api_visibility="private", concurrency_limit=8, show_progress_on=[chat])

    compare_tab.build(ctx, explorer, view, tree, outputs, page_outputs)   # ⚖️ 对比 / 🔀 收敛（compare_tab.py）
    history.wire(explorer, ctx, view, outputs, page_outputs)   # ↶ 撤销之后浏览器整页重画
    tab = Context.block

    def on_load(token, secret, kept, known, request: gr.Request):
        """打开这一页：?session=<id>[&m=<k>] 在自己的空间里选中它（并突出第 k 条；切到本页的是 HEAD 里的脚本）；
        没有链接时回到这个浏览器上次选中的会话（kept）。"""
        query = request.query_params if request is not None else {}
        page = explorer.open_page(token, secret, query.get("session"), query.get("m"), kept)
        return page_outputs(page, SOURCE, known)

    if not isinstance(tab, gr.Tab):   # 单独搭这一页（没有标签栏）：页面载入时就画
        listen(ctx.ready.then, on_load, targets(SOURCE), inputs=[visitor, teacher, remembered, shown],
               api_visibility="private", concurrency_limit=8, show_progress_on=[table])
        return
    # 在标签栏里：页面载入时不画这一页，第一次切过来（on_tab）才画。页面加载时每多一个事件输出，浏览器以后
    # 每点一下都要多重读一格（为什么见 gradio_fixes.open_tab_js），只看 8.11 的读者不该为这一页的几十格付。
    # ?session= 链接也一样：HEAD 里的脚本一开始就切过来，on_tab 第一次画时照着链接选中它
    def on_tab(token, current, secret, kept, known, request: gr.Request):
        if not token:   # 还没领到令牌：画不了（先点这一页、页面载入的事件晚回来时，这个事件到达时也已带着令牌：
            #               tests/browser/test_explorer_pick_browser.py 扣住页面的事件再点这一页，量过）
            return [gr.skip()] * len(SOURCE)
        if current == View():   # 第一次切过来：和 on_load 一样（链接、上次选中的会话），谁先回来结果都一样
            return on_load(token, secret, kept, known, request)
        page = explorer.render(token, current, secret)
        page.area = None   # 提示与结果行保持原样：链接打开时的警告不会一闪就没
        return page_outputs(page, SOURCE, known)

    listen(tab.select, on_tab, targets(SOURCE), inputs=[visitor, view, teacher, remembered, shown],
           api_visibility="private", concurrency_limit=8, show_progress_on=[table])


class _Controls:
    """一块动作区里的控件（属性按需要设）。"""

    def __init__(self, **controls):
        self.__dict__.update(controls)


def _resume_area(result_line) -> _Controls:
    with gr.Accordion("📂 恢复：给选中的会话续写一轮", open=False, elem_id="s11x-resume-tab"):
        role = gr.Radio([(label, value) for value, label in ROLES.items()], value="user",
                        label="这一轮的角色", elem_id="s11x-role")
        text = gr.Textbox(label="追加一轮（你来输入，不调用大模型）", lines=3,
                          max_length=20_000, elem_id="s11x-resume-text")
        button = gr.Button(RESUME_LABEL, variant="primary", elem_id="s11x-resume")
        result_line("resume")
    return _Controls(role=role, text=text, button=button)


def _export_area(result_line) -> _Controls:
    with gr.Accordion("📤 导出", open=False, elem_id="s11x-export-tab"):
        button = gr.Button("📤 导出选中的会话（已脱敏）", elem_id="s11x-export")
        result_line("export")
        with gr.Row():
            markdown = gr.DownloadButton("⬇️ 下载 Markdown (.md)", value=None, interactive=False,
                                         elem_id="s11x-download-md")
            html = gr.DownloadButton("⬇️ 下载 HTML (.html)", value=None, interactive=False,
                                     elem_id="s11x-download-html")
        # 长行折到框的宽度（wrap_lines）、框自己不撑宽页面：手机上导出之后页面仍是 390 px 宽
        preview = gr.Code("", language="markdown", label="导出预览（Markdown 原文）", max_lines=30,
                          interactive=False, wrap_lines=True, elem_id="s11x-preview")
    return _Controls(button=button, markdown=markdown, html=html, preview=preview)


def _trash_area(result_line) -> _Controls:
    with gr.Accordion("🗑️ 删除 / 回收站", open=False, elem_id="s11x-trash-tab"):
        delete = gr.Button(DELETE_LABEL, variant="stop", elem_id="s11x-delete")
        choices = gr.Dropdown([], label="回收站（标题 · 大小 · 删除时间）", elem_id="s11x-trash")
        note = gr.Markdown("", elem_id="s11x-trash-note")
        with gr.Row():
            restore = gr.Button(RESTORE_LABEL, min_width=120, elem_id="s11x-restore")
            purge = gr.Button("🔥 永久删除", min_width=120, elem_id="s11x-purge")
            empty = gr.Button("🧹 清空回收站", min_width=120, elem_id="s11x-empty-trash")
        result_line("trash")
    return _Controls(delete=delete, choices=choices, note=note, restore=restore, purge=purge, empty=empty)


def _import_area(result_line, ctx) -> _Controls:
    with gr.Accordion("📥 导入", open=False, elem_id="s11x-import-tab"):
        # 不设 file_types：gradio 会先在浏览器里用英文弹窗拒绝别的后缀；改由 check_upload 在服务器上查，写一句中文
        upload = gr.File(label="上传 Claude Code / Pi / Codex / Gemini CLI 的会话记录（.jsonl / .json / .jsonl.zst；"
                               "连子代理文件夹一起打成 .zip）",
                         type="filepath", elem_id="s11x-upload")
        # 页面的脚本（JS）在上传之前按这里的规则查大小和后缀；不行就把问题写进 refused（都在页面里、看不见）
        rules = json.dumps({"max": ctx.spaces.limits.max_upload_bytes, "suffixes": list(UPLOAD_SUFFIXES)})
        gr.Textbox(rules, visible="hidden", show_label=False, interactive=False, elem_id="s11x-upload-rules")
        refused = gr.Textbox("", visible="hidden", show_label=False, max_length=2000, elem_id="s11x-upload-refused")
        button = gr.Button("📥 导入上传的文件", elem_id="s11x-import")
        examples = gr.Dropdown([], label="或者导入一个示例（examples/）", elem_id="s11x-examples")
        example_button = gr.Button("📥 导入示例", elem_id="s11x-import-example")
        result_line("import")
        report = gr.Textbox("", label="导入报告", lines=6, max_lines=20, interactive=False,
                            elem_id="s11x-report")
        agents = agent_folders_tab.panel(ctx.agent_folders, ctx.agents_key)   # 只有 --agent-folders 时才有
    return _Controls(upload=upload, button=button, examples=examples, example_button=example_button,
                     report=report, agents=agents, refused=refused)


def _event_field(evt, name: str):
    """事件数据里的一项。用 gr.EventData 而不是 gr.SelectData：脚本不带事件数据直接调用时，
    SelectData 在 gradio 内部就抛错（不是干净的拒绝），EventData 则把 None 交给我们处理。"""
    data = getattr(evt, "_data", None)
    value = data.get(name) if isinstance(data, dict) else None
    return value if value is not None else []
