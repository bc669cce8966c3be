"""lesson_tab.py — 「🎯 练习」标签页：只摆控件、接事件，逻辑全在 lesson.py

    ┌ 名字（可选，只有老师看得到） [保存] ──────────────────────────────────────────────────┐
    │ 关卡                │ 🎯 第 2 关 · 回到第 3 条……（说明）                                   │
    │ ✅ 第 1 关          │ 🎯 目标树（mermaid）          │ 🌳 你的树（同一个画法）                │
    │ ▶ 第 2 关           │ ✅ 主会话 5 条  ⬜ 新思路：自第 3 条分叉 …    💡 下一条提示            │
    │ · 第 3 关 …         │ 你的树：点一个节点选中它                                               │
    │ [🚀 开始这一关]     │ 它的对话（点一条消息 = 在它之后分叉）                                  │
    │ [📖 看答案]         │ 🌿 分叉：📌 已选中第 k 条 · 第一条消息 · 标题 · [🌿 分叉] [⏮ 从头分叉]  │
    │                     │ [📂 续写] [🔀 收敛] [🩺 体检] [🪟 第二个标签页] [📤 导出]               │
    └ 🧑‍🏫 老师：自己出一关（JSON，当场检查）[发布给全班] ──────────────────────────────────────┘

Key insight: 每个事件把 (令牌, 视图, 老师密钥, *控件的值) 交给 Lesson 的一个方法，拿回整页 LessonPage，
由 page_outputs() 摊到各控件上；关卡作者和同学写的文字只进转义过的 Markdown、Radio、Code，从不进 gr.HTML。

全班做第 N 关：第一次打开这一页之后，一个 gr.Timer 每隔一会儿看一眼 <会话目录>/class.json 的修改时间（一次 stat）；
老师改过时这一页切到那一关，关卡列表里后面的关卡标 🔒（选了只得到一句说明，服务器端拒绝）。

对话和分叉控件与会话树浏览器是同一个（fork_control_tab.py）：点消息选位置，不用填数字，分叉成功后控件清空。
"""

from __future__ import annotations

import gradio as gr
from gradio.context import Context

from s11_workbench import fork_control_tab
from s11_workbench.explorer import ROLES, Explorer
from s11_workbench.gradio_fixes import listen
from s11_workbench.lesson import Lesson, LessonPage, LessonView, refresh_seconds
from s11_workbench.shown import Shown, ShownEvent

LABEL = "🎯 练习"
# 分叉控件的页面脚本（点一条消息后把分叉按钮移进视野）：两页共用，由这一页交给 app.py 装一次
JS = fork_control_tab.JS
CSS = """
#s11l-levels .wrap { flex-direction: column; }
#s11l-goal .mermaid, #s11l-goal svg, #s11l-mine .mermaid, #s11l-mine svg { max-width: 100%; height: auto; }
/* 两棵树、判定、说明和代码框的宽度只由页面定，不由内容定：mermaid 画好之前的源码、画出来的 SVG、
   代码编辑器里的长行都不许把整页撑宽（手机上会横向溢出）；放不下的在自己的框里横向滚动 */
#s11l-goal, #s11l-mine, #s11l-goal-list, #s11l-instructions, #s11l-verdict, #s11l-hint, #s11l-notice,
#s11l-doctor-report, #s11l-second, #s11l-solution, #s11l-preview, #s11l-level-json, #s11l-level-map,
#s11l-level-check { contain: inline-size; }
#s11l-goal, #s11l-mine { overflow-x: auto; }
#s11l-goal pre, #s11l-mine pre, #s11l-goal pre code, #s11l-mine pre code { white-space: pre-wrap !important;
  overflow-wrap: anywhere; }
#s11l-tree .wrap { max-height: 320px; overflow-y: auto; }
#s11l-path pre, #s11l-path pre code { white-space: pre-wrap !important; overflow-wrap: anywhere; }
#s11l-fork-result:empty { display: none; }
#s11l-fork-result { font-weight: 600; }
#s11l-notice:empty { display: none; }
#s11l-verdict ul { margin: 0; }
""" + fork_control_tab.CSS   # 分叉控件的样式：两页共用，和它的脚本一样由这一页交出去
INTRO = ("## 🎯 练习：看着目标树，用会话树的动作把它做出来\n\n"
         "每一关有一棵 **目标树** 和 **你的树**（在你自己的空间里；宽屏上左右并排，手机上上下排）。每做一个动作，下面立刻判一次：对上的部分打 ✅，"
         "没对上的给出下一条提示。判分只看形状——谁是谁的分支、在第几条分叉、有几条消息——不看 ID，也不看你写了什么字。")
EXAMPLE = """{
  "format": "s11-exercise", "version": 1, "id": "my-level",
  "title": "我的一关：在第 2 条之后分叉",
  "instructions": "从主会话的第 2 条之后分叉，写一条新的 user 消息。",
  "start": {"nodes": [{"key": "main", "parent": null, "title": "练习会话", "messages": [
    {"role": "system", "content": "你是助手。"}, {"role": "user", "content": "你好"},
    {"role": "assistant", "content": "你好！"}]}]},
  "goal": {"nodes": [{"key": "main", "label": "主会话", "parent": null},
    {"key": "x", "label": "新分支", "parent": "main", "fork_point": 2, "messages": 3, "added_roles": ["user"]}],
    "active_end": "x"},
  "solution": ["选中主会话，点对话里的第 2 条分叉，第一条消息随便写一句。"]
}"""


# 每个事件只回它改得动的控件；属性（选项、可见、可点）没变时只回值（为什么见 shown.py）。
PAGE = ("notice", "view", "shown", "levels", "mine", "tree", "verdict", "hint", "solution", "solution_button",
        "others", "doctor", "second", "preview", "download_md", "download_html", "chat", "fork_result",
        *fork_control_tab.FORM)
LEVEL = PAGE + ("instructions", "goal", "goal_list", "tools", "class_note")   # 换了一关：说明、目标树也要重画
# 打开、切回这个标签页：这一关重画，老师的出题区、自己的名字（第一次打开时）；出题区每次都再判一次——上一次
# 没能送到（全班同时打开时）或出了错，老师不必刷新页面；没变时只回 gr.skip()
LOAD = LEVEL + ("author", "name")


class LessonEvent(ShownEvent):
    """Lesson 的一个动作 -> 事件处理函数（见 shown.py）：拿回的整页 LessonPage 由 page_outputs() 摊到各控件上。"""

    def __init__(self, action, names: tuple = PAGE):
        super().__init__(action, names, page_outputs)


def page_outputs(page: LessonPage, names: tuple = LOAD, shown: dict | None = None) -> list:
    """LessonPage -> names 里各控件的新值（顺序同 names）。shown：这个页面上次收到的属性（gr.State）。"""
    view, shown = page.view, Shown(shown)
    same = gr.skip() if not page.static else None   # 这一关不变的部分：操作之后不重发（mermaid 不必重画）
    tree_value = view.session_id if page.tree_choices else None
    downloads = [path if path else None for path in page.downloads]
    at_fork = page.area == "fork"   # 分叉的结果写在分叉按钮下面（读者正看着那里）
    values = {
        "notice": lambda: "" if at_fork else page.notice, "view": lambda: view,
        "chat": lambda: page.chat, "fork_result": lambda: page.notice if at_fork else "",
        **{name: (lambda index=index: fork_control_tab.values(None, index) if page.fork_reset else gr.skip())
           for index, name in enumerate(fork_control_tab.FORM)},
        "levels": lambda: shown.prop("levels", tuple(page.level_choices),
                                lambda: gr.Radio(choices=page.level_choices, value=view.level), view.level),
        "instructions": lambda: same or page.instructions, "goal": lambda: same or page.goal_map,
        "goal_list": lambda: same or page.goal_text, "mine": lambda: page.current_map,
        "tree": lambda: shown.prop("tree", tuple(page.tree_choices),
                              lambda: gr.Radio(choices=page.tree_choices, value=tree_value), tree_value),
        "verdict": lambda: page.verdict, "hint": lambda: page.hint,
        "solution": lambda: shown.prop("solution", bool(page.solution),
                                  lambda: gr.Markdown(page.solution, visible=bool(page.solution)), page.solution),
        "solution_button": lambda: "🙈 收起答案" if view.show_solution else "📖 看答案",   # 按钮的值就是它的字
        "others": lambda: shown.prop("others", tuple(page.converge_choices),
                                lambda: gr.CheckboxGroup(choices=page.converge_choices, value=[]), []),
        "doctor": lambda: page.doctor, "second": lambda: page.second, "preview": lambda: page.preview,
        "download_md": lambda: shown.prop("download_md", downloads[0] is not None,
                                     lambda: gr.DownloadButton(value=downloads[0], interactive=downloads[0] is not None),
                                     downloads[0]),
        "download_html": lambda: shown.prop("download_html", downloads[1] is not None,
                                       lambda: gr.DownloadButton(value=downloads[1],
                                                                 interactive=downloads[1] is not None), downloads[1]),
        "author": lambda: shown.prop("author", page.teacher, lambda: gr.Accordion(visible=page.teacher),
                                gr.skip()),
        "second_text": lambda: gr.skip() if page.draft is None else page.draft,
        "resume_text": lambda: gr.skip() if page.main_draft is None else page.main_draft,
        "name": lambda: gr.skip() if page.name is None else page.name,
        "class_note": lambda: page.class_note,
        "tools": lambda: same or shown.prop("tools", bool(page.tools),
                                       lambda: gr.Markdown(_tools_note(page.tools), visible=bool(page.tools)),
                                       _tools_note(page.tools)),
    }
    # “已显示的属性”最后才定下来：先算其余各格（它们往 shown 里记），再把记下的交出去
    result = {name: values[name]() for name in names if name != "shown"}
    result["shown"] = shown.merged()
    return [result[name] for name in names]


TOOL_NAMES = {"doctor": "🩺 体检", "second": "🪟 第二个标签页", "export": "📤 导出", "converge": "🔀 收敛",
              "undo": "↶ 撤销（在 “🌳 会话树浏览器” 的 “📜 操作历史” 里）"}


def _tools_note(tools: tuple) -> str:
    return "这一关要用到：" + "、".join(f"**{TOOL_NAMES[tool]}**" for tool in tools) if tools else ""


def build(ctx) -> None:
    """在当前 gr.Tab 里搭好练习页（ctx 见 app.TabContext）。"""
    lesson = Lesson(ctx.spaces, explorer=Explorer(ctx.spaces, upload_root=gr.utils.get_upload_folder()))
    visitor, teacher = ctx.visitor, ctx.teacher
    view = gr.State(LessonView())

    gr.Markdown(INTRO)
    class_note = gr.Markdown("", elem_id="s11l-class-note")
    notice = gr.Markdown("", elem_id="s11l-notice")
    with gr.Row(equal_height=True):
        name = gr.Textbox(label="你的名字（可选，只有老师看得到，可以随时改）", max_length=40, scale=4, min_width=200,
                          elem_id="s11l-name")
        name_button = gr.Button("💾 保存名字", scale=1, min_width=110, elem_id="s11l-name-save")
    with gr.Row(equal_height=False):
        with gr.Column(scale=1, min_width=240):
            # 一开始就列出内置关卡（没有 ✓）：第一次打开这一页时再换成带进度的那一份
            levels = gr.Radio(lesson.level_choices(), label="关卡（✅ 做完 · ▶ 做到一半 · 🧑‍🏫 老师出的）", elem_id="s11l-levels")
            start_button = gr.Button("🚀 开始这一关（重新开始会另写一份起点）", variant="primary",
                                     elem_id="s11l-start")
            solution_button = gr.Button("📖 看答案", elem_id="s11l-solution-button")
            solution = gr.Markdown("", visible=False, elem_id="s11l-solution")
        with gr.Column(scale=3, min_width=300):
            instructions = gr.Markdown("", elem_id="s11l-instructions")
            tools = gr.Markdown("", visible=False, elem_id="s11l-tools")
            with gr.Row(equal_height=False):
                with gr.Column(min_width=280):
                    gr.Markdown("#### 🎯 目标树")
                    goal = gr.Markdown("", elem_id="s11l-goal")
                    goal_list = gr.Markdown("", elem_id="s11l-goal-list")
                with gr.Column(min_width=280):
                    gr.Markdown("#### 🌳 你的树")
                    mine = gr.Markdown("", elem_id="s11l-mine")
            verdict = gr.Markdown("", elem_id="s11l-verdict")
            hint = gr.Markdown("", elem_id="s11l-hint")
            tree = gr.Radio([], label="你的树：点一个节点选中它（= 目标里的哪一个，对上了就标 ✅）", elem_id="s11l-tree")
            # 和会话树浏览器同一个对话与分叉控件：点一条消息 = 在它之后分叉，不用填数字
            chat = gr.Chatbot([], allow_tags=False, sanitize_html=True, render_markdown=True, latex_delimiters=[],
                              height=360, show_label=False, feedback_options=None, group_consecutive_messages=False,
                              buttons=["copy"], elem_id="s11l-path", elem_classes="s11-fork-chat",
                              placeholder="在「你的树」里选一个节点，这里显示它从根开始的对话")
            with gr.Accordion("🌿 分叉", open=True, elem_id="s11l-fork-tab"):
                fork = fork_control_tab.build("s11l")
            with gr.Tabs(elem_id="s11l-actions"):
                with gr.Tab("📂 续写", elem_id="s11l-resume-tab"):
                    role = gr.Radio([(label, value) for value, label in ROLES.items()], value="user",
                                    label="这一轮的角色", elem_id="s11l-role")
                    resume_text = gr.Textbox(label="追加一轮（你来输入）", lines=2, max_length=20_000,
                                             elem_id="s11l-resume-text")
                    resume_button = gr.Button("📂 续写并保存", variant="primary", elem_id="s11l-resume")
                with gr.Tab("🔀 收敛", elem_id="s11l-converge-tab"):
                    others = gr.CheckboxGroup([], label="选中的节点胜出；勾选要收敛进来的其他分支", elem_id="s11l-others")
                    decision = gr.Textbox(label="你的决定（会成为收敛节点的最后一条消息）", lines=2, max_length=20_000,
                                          elem_id="s11l-decision")
                    converge_button = gr.Button("🔀 收敛", variant="primary", elem_id="s11l-converge")
                with gr.Tab("🩺 体检", elem_id="s11l-doctor-tab"):
                    with gr.Row():
                        doctor_button = gr.Button("🩺 体检（check()）", elem_id="s11l-doctor")
                        quarantine_button = gr.Button("🧹 把读不了的文件移进回收站", elem_id="s11l-quarantine")
                    doctor = gr.Markdown("", elem_id="s11l-doctor-report")
                with gr.Tab("🪟 第二个标签页", elem_id="s11l-second-tab"):
                    gr.Markdown("这里模拟同一个会话在另一个浏览器标签页里打开：它记着读入时的修订号。")
                    second_open = gr.Button("📌 在第二个标签页打开选中的会话", elem_id="s11l-second-open")
                    second_text = gr.Textbox(label="第二个标签页要续写的一轮（user）", lines=2, max_length=20_000,
                                             elem_id="s11l-second-text")
                    second_button = gr.Button("📂 在第二个标签页续写", elem_id="s11l-second-resume")
                    second = gr.Markdown("", elem_id="s11l-second")
                with gr.Tab("📤 导出", elem_id="s11l-export-tab"):
                    export_button = gr.Button("📤 导出选中的会话（已脱敏）", elem_id="s11l-export")
                    with gr.Row():
                        markdown_download = gr.DownloadButton("⬇️ Markdown (.md)", value=None, interactive=False,
                                                              elem_id="s11l-download-md")
                        html_download = gr.DownloadButton("⬇️ HTML (.html)", value=None, interactive=False,
                                                          elem_id="s11l-download-html")
                    preview = gr.Code("", language="markdown", label="导出预览", max_lines=20, interactive=False,
                                      elem_id="s11l-preview")
    with gr.Accordion("🧑‍🏫 老师：自己出一关，发布给全班", open=False, visible=False,
                      elem_id="s11l-author") as author:
        gr.Markdown("写一个练习文件（格式见 `code/s11_exercises.py` 的说明），或上传一个 .json；每次改动都当场检查。")
        level_text = gr.Code(EXAMPLE, language="json", label="关卡 JSON", interactive=True, elem_id="s11l-level-json")
        level_upload = gr.File(label="或上传关卡 .json", file_types=[".json"], type="filepath", elem_id="s11l-level-file")
        level_check = gr.Markdown("", elem_id="s11l-level-check")
        level_map = gr.Markdown("", elem_id="s11l-level-map")
        publish_button = gr.Button("📣 发布给全班", variant="primary", elem_id="s11l-publish")

    # 新页面上各控件的属性就是这里搭出来的样子：第一次事件也不必为它们发整个组件
    shown = gr.State({"levels": tuple(lesson.level_choices()), "tree": (), "others": (), "solution": False,
                      "download_md": False, "download_html": False, "tools": False})
    components = {"notice": notice, "view": view, "shown": shown, "levels": levels, "instructions": instructions,
                  "goal": goal, "goal_list": goal_list, "mine": mine, "tree": tree, "verdict": verdict, "hint": hint,
                  "solution": solution, "solution_button": solution_button, "others": others, "doctor": doctor,
                  "second": second, "preview": preview, "download_md": markdown_download,
                  "download_html": html_download, "author": author, "second_text": second_text,
                  "resume_text": resume_text, "name": name, "tools": tools, "class_note": class_note, "chat": chat,
                  "fork_result": fork.result, **dict(zip(fork_control_tab.FORM, fork.form()))}

    def wire(trigger, action, inputs, api_name, names=PAGE):
        return listen(trigger, LessonEvent(action, names), [components[key] for key in names],
                      inputs=[visitor, view, teacher, *inputs, shown], api_name=api_name, concurrency_limit=8)

    wire(levels.input, lesson.pick, [levels], "lesson_pick", LEVEL)
    wire(start_button.click, lesson.start, [levels], "lesson_start", LEVEL)
    wire(tree.input, lesson.select, [tree], "lesson_select")
    wire(fork.button.click, lesson.fork, [fork.at, fork.text, fork.title], "lesson_fork")
    fork_control_tab.wire_picking(fork, chat, view)   # 点一条消息 / 「从头分叉」= 选位置
    # 对话框自带的“清空”只清掉页面上的显示：立刻重画，免得同学以为会话被删了
    listen(chat.clear, LessonEvent(lesson.render), [components[key] for key in PAGE],
           inputs=[visitor, view, teacher, shown], api_visibility="private", concurrency_limit=8)
    wire(resume_button.click, lesson.resume, [resume_text, role], "lesson_resume", PAGE + ("resume_text",))
    wire(converge_button.click, lesson.converge, [others, decision], "lesson_converge")
    wire(doctor_button.click, lesson.doctor, [], "lesson_doctor")
    wire(quarantine_button.click, lesson.quarantine, [], "lesson_quarantine")
    wire(second_open.click, lesson.second_open, [], "lesson_second_open")
    wire(second_button.click, lesson.second_resume, [second_text], "lesson_second_resume", PAGE + ("second_text",))
    wire(export_button.click, lesson.export, [], "lesson_export")
    wire(solution_button.click, lesson.toggle_solution, [], "lesson_solution")
    wire(name_button.click, lesson.set_name, [name], "lesson_name", PAGE + ("name",))
    wire(name.submit, lesson.set_name, [name], "lesson_name_submit", PAGE + ("name",))

    def on_check(text):
        return lesson.check_level_text(text)

    level_text.change(on_check, inputs=[level_text], outputs=[level_check, level_map], api_visibility="private",
                      concurrency_limit=4, trigger_mode="always_last")

    def on_upload(path, secret):
        text, verdict, drawing = lesson.upload_level(path, teacher=secret)
        return (gr.skip() if text is None else text), verdict, drawing

    level_upload.upload(on_upload, inputs=[level_upload, teacher], outputs=[level_text, level_check, level_map],
                        api_visibility="private", concurrency_limit=4)

    def on_publish(token, secret, text):
        return lesson.publish_level(token, text, teacher=secret)

    publish_button.click(on_publish, inputs=[visitor, teacher, level_text], outputs=[level_check],
                         api_name="lesson_publish", concurrency_limit=4)

    # 老师定的「全班做第 N 关」：第一次打开这一页时记下 class.json 的版本（class_seen）；定时器每次只看一眼它的修改时间，
    # 变了才把新版本写进 class_changed（一个 State：不变时 gr.skip() 什么都不建），它的 change 事件才重画 LEVEL 这一组
    class_seen, class_changed = gr.State(None), gr.State(None)
    # 定时器等第一次打开这一页才开（on_tab）：没点开练习的页面从不轮询
    clock = gr.Timer(refresh_seconds(), active=False)

    def on_tick(seen):
        stamp = lesson.class_stamp()
        return gr.skip() if stamp == seen else stamp   # seen 是 None（载入那一步没送到）也算变了：宁可多画一次

    clock.tick(on_tick, inputs=[class_seen], outputs=[class_changed], api_visibility="private",
               concurrency_limit=8, show_progress="hidden")

    def on_class_change(token, current, secret, stamp, known):
        if not token or stamp is None:
            return [gr.skip()] * (len(LEVEL) + 1)
        return [*page_outputs(lesson.follow_class(token, current, secret), LEVEL, known), stamp]

    listen(class_changed.change, on_class_change, [components[key] for key in LEVEL] + [class_seen],
           inputs=[visitor, view, teacher, class_changed, shown], api_visibility="private",
           concurrency_limit=8, show_progress="hidden")

    # 老师的出题区：打开时就把编辑框里的关卡（一开始是示例）检查一遍，不必先改一个字
    author.expand(on_check, inputs=[level_text], outputs=[level_check, level_map], api_visibility="private",
                  concurrency_limit=4)
    tab = Context.block
    if isinstance(tab, gr.Tab):
        # 第一次打开这一页才载入（回到上次做的那一关、填上名字、开定时器），不在页面载入时做：页面加载时每多
        # 一个事件输出，浏览器以后每点一下都要多重读一格（gradio_fixes.open_tab_js 说了为什么），没打开练习的
        # 读者不该为它付。再切回来：这一关重画，老师的出题区也再判一次（在会话树浏览器里做的动作也立刻判）
        def on_tab(token, current, secret, known):
            if not token:
                return [gr.skip()] * (len(LOAD) + 2)
            if current == LessonView():
                opened = page_outputs(lesson.open_page(token, secret), LOAD, known)
                return [*opened, lesson.class_stamp(), gr.Timer(active=True)]
            page = lesson.render(token, current, secret, counts="progress")
            return [*page_outputs(page, LOAD, known), gr.skip(), gr.skip()]

        listen(tab.select, on_tab, [components[key] for key in LOAD] + [class_seen, clock],
               inputs=[visitor, view, teacher, shown], api_visibility="private", concurrency_limit=8)
    else:   # 单独搭这一页（没有标签栏）：页面载入时就打开
        def on_load(token, secret, known):
            return [*page_outputs(lesson.open_page(token, secret), LOAD, known), lesson.class_stamp(),
                    gr.Timer(active=True)]

        listen(ctx.ready.then, on_load, [components[key] for key in LOAD] + [class_seen, clock],
               inputs=[visitor, teacher, shown], api_visibility="private", concurrency_limit=8)
