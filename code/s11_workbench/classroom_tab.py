"""classroom_tab.py — 老师的课堂面板：app.py 把它放在所有标签页上方，只在教师模式下显示

    ┌ 🧑‍🏫 课堂（只有老师看得到） [🔄 刷新]  每 15 秒自己刷新（gr.Timer） ─────────────────────────┐
    │ 📣 全班做 [第 2 关 ▼] [全班做这一关]            [📊 导出进度表 .csv] → 下载                   │
    │ 名字 │ 关卡进度 │ 当前关卡 │ 演示 │ 分叉 │ 续写 │ 收敛 │ 导入 │ 最后活动 │ 状态 ⚠️ │ 空间 │  点表头排序
    │ 👀 点一行：只读打开那位同学的空间（会话树 + 每关的判定）  [关卡 ▼] [🔁 让他重新开始这一关]   │
    │ ▸ 🗺️ 全班的分叉图：书架会话 [▼] [画出来] → 文字图 + 每个分叉一行（点一行看那条路径）       │
    │ ▸ 🗄️ 下课：☐ 我确认  保留 [14] 天  [归档全班]   归档列表 [♻️ 放回]                          │
    └──────────────────────────────────────────────────────────────────────────────────────────┘

Key insight: 面板对学生永远是隐藏的、空的——数据只在老师密钥验过之后才填进去，学生的页面上
没有任何别人的名字、空间或进度；每个事件都重新验令牌和老师密钥（classroom.py）。
定时器只在老师的页面上开（载入时验过密钥才载入面板、才 active），表、书架列表、画过的分叉图没变时只回 gr.skip()。
"""

from __future__ import annotations

import gradio as gr

from s11_workbench.classroom import ARCHIVE_HEADERS, CLASS_HEADERS, MAP_HEADERS, SPACE_COLUMN, Classroom
from s11_workbench.downloads import content_key
from s11_workbench.explorer import explain
from s11_workbench.lesson import refresh_seconds

LABEL = "🧑‍🏫 课堂"
CSS = """
#s11c-panel { border: 2px solid var(--color-accent); border-radius: 12px; padding: 8px; }
#s11c-class, #s11c-forks, #s11c-archives, #s11c-map, #s11c-student, #s11c-path, #s11c-csv { contain: inline-size; }
/* 学生的会话树、分叉图是代码围栏：gradio 给里面的 <code> 写了 white-space: pre，只改 <pre> 换不了行，
   一行长名字就把整个面板（连同页面）撑宽，手机上横向溢出。<code> 也要换行 */
#s11c-map pre, #s11c-student pre, #s11c-map pre code, #s11c-student pre code {
  white-space: pre-wrap !important; overflow-wrap: anywhere; }
#s11c-notice:empty { display: none; }
"""


def _event_field(evt, name: str):
    data = getattr(evt, "_data", None)
    value = data.get(name) if isinstance(data, dict) else None
    return value if value is not None else []


def _shelf_dropdown(choices: list, picked) -> gr.Dropdown:
    """书架会话的新选项：选着的那个还在就留着，否则选第一个。"""
    values = [value for _, value in choices]
    return gr.Dropdown(choices=choices, value=picked if picked in values else (values[0] if values else None))


def build(ctx, seconds: float | None = None) -> None:
    """搭好（隐藏的）课堂面板；页面加载后，只有教师模式才显示并填上数据，并开始每 seconds 秒自己刷新一次。"""
    classroom = Classroom(ctx.spaces)
    visitor, teacher = ctx.visitor, ctx.teacher
    seconds = seconds or refresh_seconds()
    with gr.Column(visible=False, elem_id="s11c-panel") as panel:
        with gr.Row(equal_height=True):
            gr.Markdown("## 🧑‍🏫 课堂（只有老师看得到）")
            refresh = gr.Button("🔄 刷新", scale=0, min_width=100, elem_id="s11c-refresh")
        clock = gr.Timer(seconds, active=False)   # 载入时验过老师密钥才开：学生的页面从不轮询
        notice = gr.Markdown("", elem_id="s11c-notice")
        with gr.Row(equal_height=True):
            class_level = gr.Dropdown(classroom.level_choices(), value="", label="📣 全班做哪一关（后面的关卡对同学锁着）",
                                      scale=3, min_width=200, elem_id="s11c-level")
            level_button = gr.Button("📣 全班做这一关", scale=1, min_width=140, elem_id="s11c-level-set")
            csv_button = gr.Button("📊 导出进度表（.csv）", scale=1, min_width=140, elem_id="s11c-csv-make")
        csv_file = gr.File(label="进度表（.csv）", visible=False, interactive=False, elem_id="s11c-csv")
        note = gr.Markdown("", elem_id="s11c-note")
        table = gr.Dataframe(headers=CLASS_HEADERS, datatype="str", interactive=False, max_height=360, wrap=True,
                             elem_id="s11c-class", label=f"全班（每 {seconds:g} 秒自己刷新；点表头排序，点一行只读打开）")
        student = gr.Markdown("", elem_id="s11c-student")
        chosen_space = gr.State(None)   # 点开的那位同学（服务器端，浏览器改不了）
        with gr.Row(equal_height=True, visible=False, elem_id="s11c-restart-row") as restart_row:
            restart_level = gr.Dropdown([], label="他开始过的关卡", scale=3, min_width=200, elem_id="s11c-restart-level")
            restart_button = gr.Button("🔁 让他重新开始这一关（会话进他的回收站）", scale=2, min_width=200,
                                       elem_id="s11c-restart")
        with gr.Accordion("🗺️ 全班的分叉图：从一个书架会话分出去的所有分支", open=False,
                          elem_id="s11c-map-box") as map_box:
            with gr.Row(equal_height=True):
                shelf = gr.Dropdown([], label="书架上的会话", scale=4, elem_id="s11c-shelf")
                draw = gr.Button("🗺️ 画出来", scale=1, min_width=100, elem_id="s11c-draw")
            fork_map = gr.Markdown("", elem_id="s11c-map")
            forks = gr.Dataframe(headers=MAP_HEADERS, datatype="str", interactive=False, max_height=300, wrap=True,
                                 elem_id="s11c-forks", label="每个分叉一行（点一行只读看那条路径）")
            path = gr.Code("", language="markdown", label="这条路径（只读、已脱敏）", max_lines=30, interactive=False,
                           elem_id="s11c-path")
        with gr.Accordion("🗄️ 下课：归档全班的空间（保留期内可以放回）", open=False, elem_id="s11c-archive-box"):
            with gr.Row(equal_height=True):
                confirm = gr.Checkbox(label="我确认：下课了，归档全班的空间", value=False, elem_id="s11c-confirm")
                keep = gr.Number(14, label="保留几天", precision=0, minimum=1, maximum=365, elem_id="s11c-keep")
                archive_button = gr.Button("🗄️ 归档全班", variant="stop", elem_id="s11c-archive")
            archives = gr.Dataframe(headers=ARCHIVE_HEADERS, datatype="str", interactive=False, max_height=200,
                                    elem_id="s11c-archives", label="归档（点一行选中它）")
            chosen = gr.Textbox("", label="要放回的归档", interactive=False, elem_id="s11c-chosen")
            restore_button = gr.Button("♻️ 放回这份归档", elem_id="s11c-restore")

    def guarded(work):
        """老师的动作：先 work()；令牌或老师密钥不对时只给一句提示，什么都不显示。"""
        try:
            return work()
        except Exception as error:   # noqa: BLE001 页面只给一句话
            return explain(error)

    # 页面上已有的：表的指纹、书架的选项、画着的分叉图（会话 ID 和它的指纹）——定时刷新没变的就不重发
    seen = gr.State({})

    def on_load(token, secret):
        if not (token and ctx.spaces.is_teacher(secret)):
            return (gr.Column(visible=False), "", "", [], gr.Dropdown(choices=[], value=None), [], gr.Timer(active=False),
                    gr.skip(), {})
        classroom.remember_teacher(token, secret)
        result = classroom.table(token, secret)
        choices = classroom.shelf_choices()
        known = {"table": content_key(result.rows), "shelf": content_key(choices)}
        return (gr.Column(visible=True), "", result.note, result.rows,
                gr.Dropdown(choices=choices, value=choices[0][1] if choices else None),
                classroom.archive_rows(token, secret), gr.Timer(active=True), classroom.class_level(), known)

    load_outputs = [panel, notice, note, table, shelf, archives, clock, class_level, seen]
    # 页面载入时只验老师密钥，写进一个 State；验过了它才变，它的 change 才载入面板。学生的页面从不跑 on_load：
    # 页面加载时每多一个事件输出（尤其是面板这一整列），浏览器以后每点一下都要多重读它一次
    # （gradio_fixes.open_tab_js 说了为什么）
    is_teacher = gr.State(False)
    ctx.ready.then(lambda token, secret: bool(token and ctx.spaces.is_teacher(secret)) or gr.skip(),
                   inputs=[visitor, teacher], outputs=[is_teacher], api_visibility="private")
    is_teacher.change(on_load, inputs=[visitor, teacher], outputs=load_outputs, api_visibility="private",
                      concurrency_limit=4)
    refresh.click(on_load, inputs=[visitor, teacher], outputs=load_outputs, api_name="class_refresh",
                  concurrency_limit=4)

    def on_tick(token, secret, known, picked):
        """定时刷新：重算全班的表（每个空间的行和摘要都有缓存）、书架的选项、画着的分叉图；没变的回 gr.skip()。"""
        if not (token and ctx.spaces.is_teacher(secret)):
            return gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.Timer(active=False), gr.skip()
        known = dict(known or {})
        result = classroom.table(token, secret)
        rows = gr.skip()
        if content_key(result.rows) != known.get("table"):
            rows, known["table"] = result.rows, content_key(result.rows)
        choices = classroom.shelf_choices()
        shelf_update = gr.skip()
        if content_key(choices) != known.get("shelf"):   # 刚发布（或撤下）的书架会话：不必点 🔄 就出现在列表里
            shelf_update, known["shelf"] = _shelf_dropdown(choices, picked), content_key(choices)
        drawn = known.get("drawn")
        map_text = map_rows = gr.skip()
        if drawn and drawn[0] in {value for _, value in choices}:
            text, found = classroom.fork_map(token, secret, drawn[0])
            if content_key([text, found]) != drawn[1]:
                map_text, map_rows, known["drawn"] = text, found, (drawn[0], content_key([text, found]))
        return result.note, rows, shelf_update, map_text, map_rows, gr.skip(), known

    clock.tick(on_tick, inputs=[visitor, teacher, seen, shelf], outputs=[note, table, shelf, fork_map, forks, clock, seen],
               api_visibility="private", concurrency_limit=4, show_progress="hidden")

    def on_map_open(token, secret, known, picked):
        """打开分叉图时马上重读书架（不等下一次定时刷新）：刚发布的会话就在列表里。"""
        if not (token and ctx.spaces.is_teacher(secret)):
            return gr.skip(), gr.skip()
        choices = classroom.shelf_choices()
        return _shelf_dropdown(choices, picked), {**(known or {}), "shelf": content_key(choices)}

    map_box.expand(on_map_open, inputs=[visitor, teacher, seen, shelf], outputs=[shelf, seen],
                   api_visibility="private", concurrency_limit=4)

    def on_class_row(token, secret, evt: gr.EventData):
        row = _event_field(evt, "row_value")
        space_id = row[SPACE_COLUMN] if len(row) > SPACE_COLUMN else None
        try:
            text = classroom.student(token, secret, space_id)
            started = classroom.started_levels(token, secret, space_id)
        except Exception as error:   # noqa: BLE001 页面只给一句话
            return explain(error), None, gr.Row(visible=False), gr.skip()
        return (text, space_id, gr.Row(visible=bool(started)),
                gr.Dropdown(choices=started, value=started[-1][1] if started else None))

    table.select(on_class_row, inputs=[visitor, teacher], outputs=[student, chosen_space, restart_row, restart_level],
                 api_visibility="private", concurrency_limit=4)

    def on_restart(token, secret, space_id, level_id):
        message = guarded(lambda: classroom.restart(token, secret, space_id, level_id))
        text = guarded(lambda: classroom.student(token, secret, space_id))
        try:   # 重新开始过的那一关不再是“开始过的”：选项跟着变
            started = classroom.started_levels(token, secret, space_id)
        except Exception:   # noqa: BLE001 上面已经给了那一句话
            started = []
        return (message, text, gr.Row(visible=bool(started)),
                gr.Dropdown(choices=started, value=started[-1][1] if started else None))

    restart_button.click(on_restart, inputs=[visitor, teacher, chosen_space, restart_level],
                         outputs=[notice, student, restart_row, restart_level], api_name="class_restart_level",
                         concurrency_limit=2)

    def on_level(token, secret, level_id):
        return guarded(lambda: classroom.set_level(token, secret, level_id))

    level_button.click(on_level, inputs=[visitor, teacher, class_level], outputs=[notice], api_name="class_level",
                       concurrency_limit=2)

    def on_csv(token, secret):
        try:
            return "", gr.File(value=classroom.csv_file(token, secret), visible=True)
        except Exception as error:   # noqa: BLE001
            return explain(error), gr.File(value=None, visible=False)

    csv_button.click(on_csv, inputs=[visitor, teacher], outputs=[notice, csv_file], api_name="class_csv",
                     concurrency_limit=2)

    def on_draw(token, secret, session_id, known):
        try:
            text, rows = classroom.fork_map(token, secret, session_id)
        except Exception as error:   # noqa: BLE001
            return explain(error), [], gr.skip()
        return text, rows, {**(known or {}), "drawn": (session_id, content_key([text, rows]))}

    draw.click(on_draw, inputs=[visitor, teacher, shelf, seen], outputs=[fork_map, forks, seen],
               api_name="class_fork_map", concurrency_limit=4)

    def on_fork_row(token, secret, evt: gr.EventData):
        row = _event_field(evt, "row_value")
        if len(row) < len(MAP_HEADERS):
            return ""
        return guarded(lambda: classroom.path(token, secret, row[-2], row[-1]))

    forks.select(on_fork_row, inputs=[visitor, teacher], outputs=[path], api_visibility="private",
                 concurrency_limit=4)

    def on_archive(token, secret, sure, days):
        message = guarded(lambda: classroom.archive(token, secret, sure, days))
        rows = guarded(lambda: classroom.archive_rows(token, secret))
        table_rows = guarded(lambda: classroom.table(token, secret).rows)
        return (message, rows if isinstance(rows, list) else [], table_rows if isinstance(table_rows, list) else [],
                False, "")

    archive_button.click(on_archive, inputs=[visitor, teacher, confirm, keep],
                         outputs=[notice, archives, table, confirm, student], api_name="class_archive",
                         concurrency_limit=1)

    def on_archive_row(evt: gr.EventData):
        row = _event_field(evt, "row_value")
        return row[0] if row else ""

    archives.select(on_archive_row, inputs=None, outputs=[chosen], api_visibility="private", queue=False)

    def on_restore(token, secret, name):
        message = guarded(lambda: classroom.restore(token, secret, name))
        rows = guarded(lambda: classroom.archive_rows(token, secret))
        table_rows = guarded(lambda: classroom.table(token, secret).rows)
        return message, rows if isinstance(rows, list) else [], table_rows if isinstance(table_rows, list) else []

    restore_button.click(on_restore, inputs=[visitor, teacher, chosen], outputs=[notice, archives, table],
                         api_name="class_restore_archive", concurrency_limit=1)
