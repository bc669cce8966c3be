"""A class view a teacher can project (issue 42 item 6), driven through the logic (Classroom / Lesson with space
tokens) and, for the timers, through the event functions the built page wires: the table refreshes itself, leaves
the teacher out, counts each kind of step right, the teacher sets the class level (levels beyond it are locked on
every student's page, checked on the server), restarts one student's level into the trash and downloads a CSV."""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import pytest

from s11_workbench import classroom as class_logic
from s11_workbench.classroom import CLASS_HEADERS, Classroom
from s11_workbench.explorer import Explorer, View
from s11_workbench.lesson import Lesson, LessonView, read_progress
from s11_workbench.spaces import SpaceError, Spaces

REPO = Path(__file__).resolve().parents[2]
LINES = [{"role": "user" if n % 2 else "assistant", "content": f"第 {n} 条"} for n in range(6)]


@pytest.fixture()
def room(tmp_path):
    spaces = Spaces(tmp_path / "class")
    lesson = Lesson(spaces)
    return spaces, lesson, Classroom(spaces, lesson.levels)


def rows_by_name(classroom, token, secret) -> dict:
    return {row[0]: dict(zip(CLASS_HEADERS, row)) for row in classroom.table(token, secret).rows}


def class_file_bytes(spaces) -> bytes | None:
    path = Path(spaces.sessions_dir) / "class.json"
    return path.read_bytes() if path.exists() else None


# ── the teacher's own space is not a student ───────────────────────────────────────────────────────────────
def test_the_teachers_spaces_are_neither_rows_nor_forks_in_the_map(room):
    spaces, lesson, classroom = room
    secret = spaces.teacher_secret
    laptop, projector, student = spaces.new_token(), spaces.new_token(), spaces.new_token()
    spaces.set_display_name(student, "小明")
    own = spaces.open(laptop)
    root = own.store.create_session("老师的会话", LINES)
    spaces.publish(secret, own.space_id, root)
    # the teacher forks the shelf session in the laptop's space, then opens the class view on the projector
    own.fork_from(spaces.shelf(), root, at=2)
    spaces.open(student).fork_from(spaces.shelf(), root, at=4)
    classroom.remember_teacher(laptop, secret)
    rows = classroom.table(projector, secret).rows
    assert [row[0] for row in rows] == ["小明"]
    assert own.space_id not in {row[-1] for row in rows}
    text, forks = classroom.fork_map(projector, secret, root)
    assert [(row[0], row[1]) for row in forks] == [("小明", "第 4 条之后")]
    assert "第 2 条之后" not in text
    # a student cannot make their space "the teacher's"
    with pytest.raises(SpaceError, match="教师"):
        classroom.remember_teacher(student, None)
    assert spaces.verify(student) not in json.loads(class_file_bytes(spaces))["teacher_spaces"]


# ── counts per kind ────────────────────────────────────────────────────────────────────────────────────────
def test_a_student_who_only_forked_an_imported_shelf_session_has_one_fork_and_no_import(room):
    spaces, lesson, classroom = room
    secret = spaces.teacher_secret
    teacher, student = spaces.new_token(), spaces.new_token()
    spaces.set_display_name(student, "只分叉")
    page = Explorer(spaces).import_example(teacher, View(), "claude-code-rate-limit.jsonl")
    imported = page.view.session_id
    assert spaces.open(teacher).store.load(imported).source   # a real import, with provenance
    spaces.publish(secret, spaces.verify(teacher), imported)
    spaces.open(student).fork_from(spaces.shelf(), imported, at=2)
    row = rows_by_name(classroom, teacher, secret)["只分叉"]
    assert (row["分叉"], row["导入"]) == (1, 0)           # it used to count one import: the copied root has a source
    assert (row["续写"], row["收敛"], row["演示"]) == (0, 0, "")


def test_each_kind_of_step_is_counted_once(room):
    from s11_workbench import demo

    spaces, lesson, classroom = room
    secret = spaces.teacher_secret
    teacher, student = spaces.new_token(), spaces.new_token()
    spaces.set_display_name(student, "小红")
    explorer = Explorer(spaces)

    def row() -> dict:
        return rows_by_name(classroom, teacher, secret)["小红"]

    demo.run_demo(spaces.open(student).folder)        # the demo's own branches and saves are not the student's
    assert (row()["演示"], row()["分叉"], row()["续写"]) == ("✅", 0, 0)
    explorer.import_example(student, View(), "claude-code-rate-limit.jsonl")
    assert (row()["导入"], row()["分叉"]) == (1, 0)   # one import, however many nodes it wrote
    store = spaces.open(student).store
    main = store.create_session("自己的会话", LINES)
    child = store.fork(main, [{"role": "user", "content": "另一个想法"}], at=3)
    assert (row()["分叉"], row()["续写"]) == (1, 0)
    for text in ("继续", "再继续"):
        node = store.load(child.session_id)
        node.messages.append({"role": "user", "content": text})
        store.save(node)
    assert row()["续写"] == 2
    other = store.fork(main, [{"role": "user", "content": "第三条路"}], at=2)
    store.converge(child.session_id, [other.session_id], "选第一条路")
    assert (row()["分叉"], row()["收敛"], row()["导入"], row()["续写"]) == (2, 1, 1, 2)


def test_a_levels_starting_nodes_are_never_forks_even_after_a_restart(room):
    spaces, lesson, classroom = room
    teacher, student = spaces.new_token(), spaces.new_token()
    spaces.set_display_name(student, "重来")
    page = lesson.start(student, lesson.pick(student, LessonView(), "rewind").view)
    page = lesson.fork(student, page.view, 3, "my fork")
    assert rows_by_name(classroom, teacher, spaces.teacher_secret)["重来"]["分叉"] == 1
    lesson.start(student, page.view, "rewind")    # the student starts the level again: a second set of seeds
    assert rows_by_name(classroom, teacher, spaces.teacher_secret)["重来"]["分叉"] == 1


# ── stuck minutes ──────────────────────────────────────────────────────────────────────────────────────────
STUCK_CASES = {
    "misses-just-now": ({"misses": 5, "last_progress": 0}, 20, "连续 5 次没对上，刚有进展"),
    "misses-minutes-ago": ({"misses": 6, "last_progress": 0}, 190, "连续 6 次没对上，上次进展在 3 分钟前"),
    "quiet-nine-minutes": ({"misses": 0, "last_progress": 0}, 9 * 60 + 5, "9 分钟没有进展"),
    "quiet-and-missing": ({"misses": 2, "started_at": 0}, 12 * 60, "12 分钟没有进展，连续 2 次没对上"),
}


@pytest.mark.parametrize("entry, seconds, said", STUCK_CASES.values(), ids=STUCK_CASES.keys())
def test_stuck_minutes_never_say_zero(entry, seconds, said):
    start = 1_000_000.0
    entry = {key: (start if key in ("last_progress", "started_at") else value) for key, value in entry.items()}
    assert class_logic.stuck_reason(entry, start + seconds) == said


def test_the_table_says_just_now_not_zero_minutes(room):
    spaces, lesson, classroom = room
    student = spaces.new_token()
    spaces.set_display_name(student, "刚来")
    page = lesson.start(student, lesson.pick(student, LessonView(), "rewind").view)
    for _ in range(5):
        page = lesson.fork(student, page.view, 5, "wrong again")
    row = rows_by_name(classroom, spaces.new_token(), spaces.teacher_secret)["刚来"]
    assert row["状态"].startswith("⚠️ 卡住了") and "刚有进展" in row["状态"]
    assert "0 分钟" not in json.dumps(row, ensure_ascii=False)


# ── the class level ──────────────────────────────────────────────────────────────────────────────────────────
def test_the_class_level_locks_later_levels_on_the_server(room):
    spaces, lesson, classroom = room
    secret = spaces.teacher_secret
    teacher, student = spaces.new_token(), spaces.new_token()
    page = lesson.start(student, lesson.pick(student, LessonView(), "resume").view)   # level 3, before the lock
    assert "已开始" in page.notice
    assert "📣" in classroom.set_level(teacher, secret, "rewind")                    # the class does level 2
    folder = spaces.open(student).folder
    before = read_progress(folder)
    labels = dict((value, label) for label, value in lesson.open_page(student).level_choices)
    assert labels["rewind"].startswith(("·", "▶")) and labels["resume"].startswith("🔒")
    assert "老师还没开放" in labels["export"]
    refused = lesson.pick(student, LessonView(level="rewind"), "resume")
    assert "还没开放" in refused.notice and "第 2 关" in refused.notice and refused.view.level == "rewind"
    assert "还没开放" in lesson.start(student, LessonView(), "resume").notice
    # an action on the level the student was doing when it got locked is refused too, and writes nothing
    acted = lesson.fork(student, page.view, 2, "still here")
    assert "还没开放" in acted.notice and acted.view.level == "rewind"
    assert read_progress(folder) == before
    # a reload lands on the class level, not the locked one
    assert lesson.open_page(student).view.level == "rewind"
    # a page still showing the locked level picks (or starts) an open one at the first click
    assert lesson.pick(student, page.view, "rebuild").view.level == "rebuild"
    assert "已开始" in lesson.start(student, page.view, "rebuild").notice
    # the teacher's own page is never locked
    assert "还没开放" not in lesson.pick(teacher, LessonView(), "resume", teacher=secret).notice
    # opening every level again
    assert "🔓" in classroom.set_level(teacher, secret, "")
    assert "已开始" in lesson.start(student, LessonView(), "export").notice


def test_only_the_teacher_sets_the_class_level_and_a_bad_level_changes_nothing(room):
    spaces, lesson, classroom = room
    teacher, student = spaces.new_token(), spaces.new_token()
    classroom.set_level(teacher, spaces.teacher_secret, "rewind")
    saved = class_file_bytes(spaces)
    for secret in (None, "", "guess", spaces.teacher_secret[:-1], ["x"]):
        with pytest.raises(SpaceError, match="教师"):
            classroom.set_level(student, secret, "")
    with pytest.raises(SpaceError):
        classroom.set_level("0" * 16 + "." + "0" * 32, spaces.teacher_secret, "")
    for bad in ("no-such-level", "../x", "=1+1"):
        with pytest.raises(Exception, match="没有关卡"):
            classroom.set_level(teacher, spaces.teacher_secret, bad)
    assert class_file_bytes(spaces) == saved
    assert classroom.class_level() == "rewind"


def test_a_broken_class_file_means_no_lock(room):
    spaces, lesson, classroom = room
    student = spaces.new_token()
    for text in ("{not json", '["rewind"]', '{"level": 3}', "x" * 70_000):
        Path(spaces.sessions_dir, "class.json").write_text(text, encoding="utf-8")
        page = lesson.start(student, LessonView(), "export")
        assert "已开始" in page.notice and page.class_note == ""


def test_a_student_page_follows_the_class_level_when_the_teacher_changes_it(room):
    spaces, lesson, classroom = room
    teacher, student = spaces.new_token(), spaces.new_token()
    page = lesson.pick(student, LessonView(), "rebuild")
    seen = lesson.class_stamp()
    classroom.set_level(teacher, spaces.teacher_secret, "resume")
    assert lesson.class_stamp() != seen
    followed = lesson.follow_class(student, page.view)
    assert followed.view.level == "resume" and "全班做" in followed.notice
    assert "全班现在做" in followed.class_note
    assert read_progress(spaces.open(student).folder)["current"] == "resume"
    # the teacher's own page stays where it is
    mine = lesson.pick(teacher, LessonView(), "rebuild", teacher=spaces.teacher_secret)
    assert lesson.follow_class(teacher, mine.view, teacher=spaces.teacher_secret).view.level == "rebuild"


# ── restart one student's level ────────────────────────────────────────────────────────────────────────────
def test_restarting_a_students_level_moves_its_sessions_to_their_trash(room):
    spaces, lesson, classroom = room
    secret = spaces.teacher_secret
    teacher, student, other = spaces.new_token(), spaces.new_token(), spaces.new_token()
    spaces.set_display_name(student, "<b>小刚</b>")
    page = lesson.start(student, lesson.pick(student, LessonView(), "rewind").view)
    page = lesson.fork(student, page.view, 5, "wrong")
    kept = spaces.open(student).store.create_session("别的会话", LINES)   # not part of the level: stays
    store = spaces.open(student).store
    level_ids = {s["session_id"] for s in store.list_sessions()} - {kept}
    seeds = set(read_progress(spaces.open(student).folder)["levels"]["rewind"]["anchors"].values())
    assert seeds < level_ids and len(level_ids) == len(seeds) + 1   # the level's starting nodes and the fork
    with pytest.raises(SpaceError, match="教师"):
        classroom.restart(other, None, spaces.verify(student), "rewind")
    assert {s["session_id"] for s in store.list_sessions()} == level_ids | {kept}
    message = classroom.restart(teacher, secret, spaces.verify(student), "rewind")
    assert f"{len(level_ids)} 个会话" in message and "回收站" in message and "<b>" not in message and "小刚" in message
    assert {s["session_id"] for s in store.list_sessions()} == {kept}
    progress = read_progress(spaces.open(student).folder)
    assert "rewind" not in progress["levels"] and progress["restarted"][-1]["level"] == "rewind"
    # the student starts afresh; nothing was deleted: every session comes back from the trash
    assert "请先点「🚀 开始这一关」" in lesson.fork(student, page.view, 3, "x").notice
    assert "已开始" in lesson.start(student, LessonView(), "rewind").notice
    assert all(store.restore(sid) for sid in level_ids)
    # a level the student never started, or no such level: a Chinese sentence, nothing moves
    before = {s["session_id"] for s in store.list_sessions()}
    with pytest.raises(Exception, match="还没开始这一关"):
        classroom.restart(teacher, secret, spaces.verify(student), "export")
    with pytest.raises(Exception, match="没有关卡"):
        classroom.restart(teacher, secret, spaces.verify(student), "nope")
    with pytest.raises(SpaceError, match="空间名"):
        classroom.restart(teacher, secret, "../" + spaces.verify(student), "rewind")
    assert {s["session_id"] for s in store.list_sessions()} == before


# ── CSV ───────────────────────────────────────────────────────────────────────────────────────────────────
HOSTILE = ["=HYPERLINK(\"http://x\",\"点我\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "小明,\"引号\"\n第二行"]


@pytest.mark.parametrize("name", HOSTILE, ids=["equals", "plus", "minus", "at", "tab", "comma-quote-newline"])
def test_spreadsheet_cells_never_start_a_formula(name):
    safe = class_logic.spreadsheet_safe(name)
    assert not safe.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert safe.endswith(name)
    assert class_logic.spreadsheet_safe(3) == 3 and class_logic.spreadsheet_safe("小明") == "小明"


def test_the_progress_csv_holds_the_table_with_hostile_names_neutralised(room):
    spaces, lesson, classroom = room
    teacher = spaces.new_token()
    names = []
    for name in ("=cmd|' /C calc'!A0", "@小红", "普通的名字"):
        token = spaces.new_token()
        names.append(spaces.set_display_name(token, name))
        lesson.start(token, lesson.pick(token, LessonView(), "rebuild").view)
    with pytest.raises(SpaceError, match="教师"):
        classroom.csv_file(teacher, None)
    path = classroom.csv_file(teacher, spaces.teacher_secret)
    assert path.endswith(".csv") and not path.startswith(spaces.sessions_dir)
    raw = Path(path).read_bytes()
    assert raw.startswith("\ufeff".encode())
    parsed = list(csv.reader(raw.decode("utf-8-sig").splitlines()))
    assert parsed[0] == CLASS_HEADERS and len(parsed) == 4
    cells = [cell for row in parsed[1:] for cell in row]
    assert not any(cell.startswith(("=", "+", "-", "@")) for cell in cells)
    assert {row[0] for row in parsed[1:]} == {"'" + names[0], "'" + names[1], names[2]}
    assert class_logic.progress_csv(["a"], [[7]]).endswith("a\r\n7\r\n")


# ── the page's events ──────────────────────────────────────────────────────────────────────────────────────
@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The built workbench (in process): its spaces, and the event functions the timers and panels fire."""
    import gradio as gr

    sys.path.insert(0, str(REPO))
    try:
        import app
    finally:
        sys.path.remove(str(REPO))
    demo = app.build_app(tmp_path_factory.mktemp("sessions"))

    def by_id(elem_id):
        return next(block for block in demo.blocks.values() if getattr(block, "elem_id", None) == elem_id)

    def event(block, name):
        return [fn for fn in demo.fns.values() if (block._id, name) in fn.targets]

    timers = [block for block in demo.blocks.values() if isinstance(block, gr.Timer)]
    return demo, by_id, event, timers


def class_tick(page):
    demo, by_id, event, timers = page
    table = by_id("s11c-class")
    return next(fn for timer in timers for fn in event(timer, "tick") if table in fn.outputs)


def test_the_class_timer_shows_a_new_fork_and_a_new_shelf_session_on_its_next_tick(page):
    import gradio as gr

    demo, by_id, event, timers = page
    spaces = demo.s11_spaces
    secret = spaces.teacher_secret
    tick = class_tick(page)
    names = [block for block in tick.outputs]
    table_at, shelf_at, seen_at = names.index(by_id("s11c-class")), names.index(by_id("s11c-shelf")), len(names) - 1
    teacher, student = spaces.new_token(), spaces.new_token()
    spaces.set_display_name(student, "投影上的小明")
    first = tick.fn(teacher, secret, {}, None)
    rows = first[table_at]
    assert [row[0] for row in rows] == ["投影上的小明"] and rows[0][CLASS_HEADERS.index("分叉")] == 0
    known = first[seen_at]
    assert tick.fn(teacher, secret, known, None)[table_at] == gr.skip()        # nothing changed: nothing sent
    store = spaces.open(student).store
    store.fork(store.create_session("小明的会话", LINES), [{"role": "user", "content": "新的想法"}], at=2)
    after = tick.fn(teacher, secret, known, None)
    assert after[table_at][0][CLASS_HEADERS.index("分叉")] == 1          # the next tick shows it, no click
    own = spaces.open(teacher)
    published = spaces.publish(secret, own.space_id, own.store.create_session("刚发布的会话", LINES))
    ticked = tick.fn(teacher, secret, after[seen_at], None)
    shelf = ticked[shelf_at]
    assert isinstance(shelf, gr.Dropdown) and any("刚发布的会话" in label for label, _ in shelf.choices)
    assert shelf.value == published                                      # nothing was picked: it is picked
    spaces.publish(secret, own.space_id, own.store.create_session("又一个会话", LINES))
    assert tick.fn(teacher, secret, ticked[seen_at], published)[shelf_at].value == published   # a pick stays
    # a student's page (no secret) gets nothing, and its timer is switched off
    refused = tick.fn(student, None, {}, None)
    assert refused[table_at] == gr.skip() and any(isinstance(out, gr.Timer) and out.active is False
                                                  for out in refused)


def test_opening_the_fork_map_rereads_the_shelf_at_once(page):
    import gradio as gr

    demo, by_id, event, timers = page
    spaces = demo.s11_spaces
    opened = event(by_id("s11c-map-box"), "expand")
    assert opened and by_id("s11c-shelf") in opened[0].outputs
    teacher = spaces.new_token()
    own = spaces.open(teacher)
    published = spaces.publish(spaces.teacher_secret, own.space_id, own.store.create_session("打开就看得到", LINES))
    dropdown, known = opened[0].fn(teacher, spaces.teacher_secret, {}, None)
    assert published in [value for _, value in dropdown.choices] and dropdown.value is not None
    assert "shelf" in known
    assert opened[0].fn(spaces.new_token(), None, {}, None)[0] == gr.skip()   # a student's page gets nothing


def test_the_class_timer_starts_only_on_the_teachers_page(page):
    demo, by_id, event, timers = page
    panel_timer = next(timer for timer in timers if event(timer, "tick") and by_id("s11c-class")
                       in event(timer, "tick")[0].outputs)
    assert panel_timer.active is False                               # built switched off
    spaces = demo.s11_spaces
    load = next(fn for fn in demo.fns.values() if panel_timer in fn.outputs and by_id("s11c-panel") in fn.outputs)
    at = load.outputs.index(panel_timer)
    assert load.fn(spaces.new_token(), spaces.teacher_secret)[at].active is True
    assert load.fn(spaces.new_token(), None)[at].active is False


def test_the_lesson_timer_switches_a_students_page_only_when_the_class_level_changes(page):
    """The student page's timer only looks at class.json's stamp and writes a State (cheap: nothing is rebuilt);
    the State's change event redraws the level, switched to the class level, with later levels locked."""
    import gradio as gr

    from s11_workbench.lesson_tab import LEVEL

    demo, by_id, event, timers = page
    spaces = demo.s11_spaces
    levels = by_id("s11l-levels")
    redraws = [fn for fn in demo.fns.values() if levels in fn.outputs and any(
        target[1] == "change" for target in fn.targets)]
    assert len(redraws) == 1
    redraw = redraws[0]
    changed = demo.blocks[redraw.targets[0][0]]
    tick = next(fn for timer in timers for fn in event(timer, "tick") if fn.outputs == [changed])
    student = spaces.new_token()
    stamp = Classroom(spaces).plan.stamp()
    assert tick.fn(stamp) == gr.skip()                                  # nothing changed: nothing at all
    Classroom(spaces).set_level(spaces.new_token(), spaces.teacher_secret, "rewind")
    new_stamp = tick.fn(stamp)
    assert new_stamp != stamp and new_stamp != gr.skip()
    outputs = redraw.fn(student, LessonView(level="rebuild"), None, new_stamp, {})
    assert outputs[LEVEL.index("view")].level == "rewind" and outputs[-1] == new_stamp
    choices = outputs[LEVEL.index("levels")].choices
    assert any(label.startswith("🔒") for label, _ in choices)
    Classroom(spaces).set_level(spaces.new_token(), spaces.teacher_secret, "")


def test_the_author_panel_checks_its_level_when_it_opens(page):
    from s11_workbench.lesson_tab import EXAMPLE

    demo, by_id, event, timers = page
    expand = event(by_id("s11l-author"), "expand")
    assert expand and by_id("s11l-level-check") in expand[0].outputs
    verdict, drawing = expand[0].fn(EXAMPLE)
    assert verdict.startswith("✅") and "mermaid" in drawing


def test_the_old_hex_id_table_is_gone_from_the_explorer(page):
    demo, by_id, event, timers = page
    assert not [block for block in demo.blocks.values() if getattr(block, "elem_id", None) == "s11x-spaces"]


def test_class_file_stays_small_however_many_teacher_browsers(room):
    spaces, lesson, classroom = room
    for _ in range(30):
        classroom.remember_teacher(spaces.new_token(), spaces.teacher_secret)
    data = json.loads(class_file_bytes(spaces))
    assert len(data["teacher_spaces"]) == 8 and len(class_file_bytes(spaces)) < 1024
    assert os.path.getsize(Path(spaces.sessions_dir) / "class.json") < 1024
