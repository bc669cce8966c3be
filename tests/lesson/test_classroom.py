"""The lesson tab's logic, the teacher's class view and the end-of-class archive, driven the way the page
and the command line use them (Lesson / Classroom methods with a space token; the CLI's main() in this process, and
once as a real subprocess)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from s11_exercises import builtin_exercises
from s11_workbench.classroom import CLASS_HEADERS, Classroom
from s11_workbench.lesson import Lesson, LessonView, is_stuck, read_progress
from s11_workbench.spaces import SpaceError, Spaces

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "code" / "s11_cli.py"
LEVELS = len(builtin_exercises())   # the class table counts "solved / all levels"


@pytest.fixture()
def room(tmp_path):
    spaces = Spaces(tmp_path / "class")
    lesson = Lesson(spaces)
    return spaces, lesson, Classroom(spaces, lesson.levels)


def solve_rebuild(lesson, token):
    page = lesson.pick(token, LessonView(), "rebuild")
    page = lesson.start(token, page.view)
    main = page.view.session_id
    for turns in ([("assistant", "A"), ("user", "go A")],
                  [("assistant", "B"), ("user", "compare"), ("user", "B wins"), ("assistant", "done")]):
        page = lesson.select(token, page.view, main)
        page = lesson.fork(token, page.view, 5, "")
        for role, text in turns:
            page = lesson.resume(token, page.view, text, role)
    return page


def test_a_level_solved_through_the_page_actions_is_ticked_and_kept_in_the_space(room):
    spaces, lesson, _ = room
    token = spaces.new_token()
    page = solve_rebuild(lesson, token)
    assert page.solved and "🎉" in page.hint
    assert page.level_choices[0] == ("✅ 第 1 关 · 亲手搭出演示树", "rebuild")
    progress = read_progress(spaces.open(token).folder)
    assert progress["levels"]["rebuild"]["solved_at"]
    # a reload (open_page) comes back to the same level, still solved
    again = lesson.open_page(token)
    assert again.view.level == "rebuild" and again.solved


def test_start_begins_the_level_the_page_shows_even_before_the_pick_has_answered(room):
    """A student who solved level 1 picks level 2 and clicks start at once: the pick's answer (the new view) has
    not reached the page yet, so the start still carries level 1's view. It starts level 2, the level the page
    shows, and level 1 stays solved (a loaded browser-test run restarted level 1 here, wiping it)."""
    spaces, lesson, _ = room
    token = spaces.new_token()
    solved = solve_rebuild(lesson, token)
    page = lesson.start(token, solved.view, "rewind")             # the view still says level 1
    assert page.view.level == "rewind" and "已开始" in page.notice
    progress = read_progress(spaces.open(token).folder)
    assert set(progress["levels"]) == {"rebuild", "rewind"} and progress["current"] == "rewind"
    assert progress["levels"]["rebuild"]["solved_at"]                 # not started over
    # a level the page cannot show is refused in Chinese, and nothing is written
    before = json.dumps(read_progress(spaces.open(token).folder), sort_keys=True)
    refused = lesson.start(token, page.view, "no-such-level")
    assert r"没有关卡 no\-such\-level" in refused.notice   # Markdown-escaped, and whole
    assert json.dumps(read_progress(spaces.open(token).folder), sort_keys=True) == before
    # without a level from the page (a script), the view decides, as before
    assert lesson.start(token, solved.view).view.level == "rebuild"


def test_the_verdict_follows_every_action(room):
    spaces, lesson, _ = room
    token = spaces.new_token()
    page = lesson.start(token, lesson.pick(token, LessonView(), "rewind").view)
    assert page.verdict.count("✅") == 3 and "⬜" in page.verdict
    page = lesson.fork(token, page.view, 5, "another idea")
    assert "第 5 条" in page.hint and "第 3 条" in page.hint      # wrong fork point, named
    main = [sid for label, sid in page.tree_choices if "= 主会话" in label][0]
    page = lesson.fork(token, lesson.select(token, page.view, main).view, 3, "look at ws_pool")
    assert page.solved


def test_every_action_rechecks_the_token(room):
    spaces, lesson, classroom = room
    for bad in (None, "", "0" * 16 + "." + "0" * 32, "x" * 500):
        page = lesson.fork(bad, LessonView(level="rebuild", session_id="abc"), 5, "")
        assert "令牌" in page.notice and page.tree_choices == []
        with pytest.raises(SpaceError):
            classroom.table(bad, spaces.teacher_secret)


def test_a_student_cannot_see_another_students_nodes_or_name(room):
    spaces, lesson, _ = room
    alice, bob = spaces.new_token(), spaces.new_token()
    spaces.set_display_name(alice, "Alice-Secret-Name")
    page = solve_rebuild(lesson, alice)
    alice_ids = {sid for _, sid in page.tree_choices}
    # Bob selects Alice's node by id: refused, his page never lists it
    bob_page = lesson.select(bob, LessonView(level="rebuild"), next(iter(alice_ids)))
    assert "不在你的空间里" in bob_page.notice
    # (the notice only echoes the id Bob typed himself)
    text = json.dumps([vars(bob_page)[k] for k in vars(bob_page) if k not in ("view", "notice")],
                      ensure_ascii=False, default=str)
    assert not any(sid in text for sid in alice_ids) and "Alice-Secret-Name" not in text
    assert lesson.open_page(bob).name is None and lesson.open_page(alice).name == "Alice-Secret-Name"


def test_the_class_view_is_for_the_teacher_only(room):
    spaces, lesson, classroom = room
    student = spaces.new_token()
    for secret in (None, "", "guess", ["x"]):
        with pytest.raises(SpaceError, match="教师"):
            classroom.table(student, secret)
        with pytest.raises(SpaceError):
            classroom.archive(student, secret, True, 1)


def test_the_class_view_shows_names_progress_and_flags_the_stuck(room):
    spaces, lesson, classroom = room
    fast, slow, silent = spaces.new_token(), spaces.new_token(), spaces.new_token()
    spaces.set_display_name(fast, "小明")
    spaces.set_display_name(slow, "<img src=x onerror=alert(1)>\n小红")
    solve_rebuild(lesson, fast)
    page = lesson.start(slow, lesson.pick(slow, LessonView(), "rewind").view)
    for _ in range(5):
        page = lesson.fork(slow, page.view, 5, "still the wrong fork point")
    lesson.open_page(silent)   # opened the page, did nothing: stays out of the way
    table = classroom.table(spaces.new_token(), spaces.teacher_secret)
    rows = {row[0]: dict(zip(CLASS_HEADERS, row)) for row in table.rows}
    assert set(rows) == {"小明", "<img src=x onerror=alert(1)> 小红"}
    assert rows["小明"]["关卡进度"] == f"1/{LEVELS}" and rows["小明"]["状态"].startswith("✅")
    assert rows["小明"]["分叉"] == 2
    assert rows["<img src=x onerror=alert(1)> 小红"]["状态"].startswith("⚠️ 卡住了")
    assert "另有 1 个空间" in table.note    # the silent one; the teacher's own fresh space is not a student


def test_the_class_table_follows_every_new_step_of_a_student(room):
    """The class view keeps one store per space and remembers which sessions are imports: a refresh after
    a student's next step still shows that step (nothing cached goes stale)."""
    from s11_workbench.explorer import Explorer, View
    spaces, lesson, classroom = room
    student, teacher = spaces.new_token(), spaces.new_token()
    spaces.set_display_name(student, "小明")

    def row() -> dict:
        rows = classroom.table(teacher, spaces.teacher_secret).rows
        return dict(zip(CLASS_HEADERS, rows[0]))

    assert (row()["分叉"], row()["导入"], row()["关卡进度"]) == (0, 0, f"0/{LEVELS}")
    explorer = Explorer(spaces)
    explorer.import_example(student, View(), "claude-code-rate-limit.jsonl")
    imported, forks = row()["导入"], row()["分叉"]
    assert imported >= 1
    page = lesson.start(student, lesson.pick(student, LessonView(), "rewind").view)
    assert row()["分叉"] == forks   # the level's starting nodes are not the student's forks
    lesson.fork(student, page.view, 3, "another plan")
    after = row()
    assert after["关卡进度"] == f"1/{LEVELS}" and after["导入"] == imported and after["分叉"] == forks + 1
    solve_rebuild(lesson, student)
    assert (row()["关卡进度"], row()["分叉"]) == (f"2/{LEVELS}", forks + 3)


def test_stuck_means_no_progress_for_minutes_or_repeated_misses():
    now = time.time()
    assert not is_stuck({})
    assert not is_stuck({"started_at": now, "last_progress": now, "misses": 1}, now)
    assert is_stuck({"started_at": now, "last_progress": now - 9 * 60, "misses": 0}, now)
    assert is_stuck({"started_at": now, "last_progress": now, "misses": 5}, now)
    assert not is_stuck({"solved_at": now, "last_progress": now - 3600}, now)


def test_display_names_are_hostile_text_trimmed_and_changeable(room):
    spaces, lesson, classroom = room
    token = spaces.new_token()
    page = lesson.set_name(token, LessonView(), "  \x1b[2J名字\r\n" + "长" * 100)
    assert "\x1b" not in page.name and "\n" not in page.name and len(page.name) <= 40
    lesson.set_name(token, LessonView(), "新名字")
    assert spaces.display_names(spaces.teacher_secret) == {spaces.verify(token): "新名字"}
    lesson.set_name(token, LessonView(), "")
    assert spaces.display_names(spaces.teacher_secret) == {}


def test_a_teacher_level_is_checked_on_the_spot_and_reaches_every_student(room):
    spaces, lesson, _ = room
    from s11_workbench.lesson_tab import EXAMPLE
    teacher_token, student = spaces.new_token(), spaces.new_token()
    verdict, drawing = lesson.check_level_text('{"format": "s11-exercise"}')
    assert verdict.startswith("❌") and "version" in verdict and drawing == ""
    verdict, drawing = lesson.check_level_text(EXAMPLE)
    assert verdict.startswith("✅") and "mermaid" in drawing
    assert "教师" in lesson.publish_level(student, EXAMPLE, teacher=None)
    assert "my-level" not in [level for _, level in lesson.open_page(student).level_choices]
    assert "发布" in lesson.publish_level(teacher_token, EXAMPLE, teacher=spaces.teacher_secret)
    choices = lesson.open_page(student).level_choices
    assert ("· 我的一关：在第 2 条之后分叉 🧑‍🏫", "my-level") in choices
    page = lesson.start(student, lesson.pick(student, LessonView(), "my-level").view)
    page = lesson.fork(student, page.view, 2, "hi")
    assert page.solved


def test_the_fork_map_shows_every_students_forks_of_a_shelf_session(room):
    spaces, lesson, classroom = room
    teacher_token = spaces.new_token()
    own = spaces.open(teacher_token)
    root = own.store.create_session("共享的会话", [{"role": "user", "content": str(n)} for n in range(6)])
    spaces.publish(spaces.teacher_secret, own.space_id, root)
    a, b = spaces.new_token(), spaces.new_token()
    spaces.set_display_name(a, "甲")
    spaces.set_display_name(b, "乙")
    spaces.open(a).fork_from(spaces.shelf(), root, at=3, new_messages=[{"role": "user", "content": "x"}])
    fork_b = spaces.open(b).fork_from(spaces.shelf(), root, at=5)
    node = spaces.open(b).store.load(fork_b.session_id)
    node.messages += [{"role": "user", "content": "y"}, {"role": "assistant", "content": "z"}]
    spaces.open(b).store.save(node)
    text, rows = classroom.fork_map(teacher_token, spaces.teacher_secret, root)
    assert "第 3 条之后：1 人" in text and "第 5 条之后：1 人" in text
    assert [(r[0], r[1], r[2]) for r in rows] == [("甲", "第 3 条之后", "4 条"), ("乙", "第 5 条之后", "7 条")]
    path = classroom.path(teacher_token, spaces.teacher_secret, rows[1][4], rows[1][5])
    assert "z" in path
    with pytest.raises(SpaceError):
        classroom.fork_map(a, None, root)


def test_archiving_from_the_page_needs_confirmation_and_leaves_nothing_for_a_new_student(room):
    spaces, lesson, classroom = room
    student, teacher_token = spaces.new_token(), spaces.new_token()
    spaces.set_display_name(student, "小明")
    solve_rebuild(lesson, student)
    with pytest.raises(SpaceError, match="确认"):
        classroom.archive(teacher_token, spaces.teacher_secret, False, 14)
    message = classroom.archive(teacher_token, spaces.teacher_secret, True, 14)
    assert "已归档 2 个空间" in message
    assert classroom.table(spaces.new_token(), spaces.teacher_secret).rows == []
    newcomer = lesson.open_page(spaces.new_token())
    assert newcomer.tree_choices == [] and all(mark.startswith("·") for mark, _ in newcomer.level_choices)
    # the old token opens an empty space; restoring the archive brings everything back
    assert spaces.open(student).store.list_sessions() == []
    name = classroom.archive_rows(teacher_token, spaces.teacher_secret)[0][0]
    assert "放回" in classroom.restore(teacher_token, spaces.teacher_secret, name)
    assert lesson.open_page(student).solved


def test_an_expired_archive_is_removed(room):
    spaces, lesson, _ = room
    solve_rebuild(lesson, spaces.new_token())
    info = spaces.archive_all(60)
    assert [row["name"] for row in spaces.archives()] == [info["name"]]
    assert spaces.purge_expired_archives(now=time.time() + 30) == []
    assert spaces.purge_expired_archives(now=time.time() + 61) == [info["name"]]
    assert spaces.archives() == [] and not os.path.exists(os.path.join(spaces.archives_dir, info["name"]))


# ── command line ─────────────────────────────────────────────────────────────────────────
def cli(*args):
    """s11_cli.main(args) here, with what it prints and its exit code (a Python start-up per call is most of what a
    subprocess costs)."""
    import s11_cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = s11_cli.main(list(args))
        except SystemExit as stop:   # argparse's own exits (-h)
            code = stop.code
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def cli_process(*args):
    return subprocess.run([sys.executable, str(CLI), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO / "code")})


def test_cli_archive_list_and_restore(room, tmp_path):
    spaces, lesson, _ = room
    token = spaces.new_token()
    solve_rebuild(lesson, token)
    folder = str(tmp_path / "class")
    done = cli("--dir", folder, "class", "archive", "--keep-days", "3")
    assert done.returncode == 0 and "已归档 1 个空间" in done.stdout
    assert spaces.list_spaces(spaces.teacher_secret) == []
    listed = cli("--dir", folder, "class", "archives")
    name = spaces.archives()[0]["name"]
    assert listed.returncode == 0 and name in listed.stdout
    back = cli("--dir", folder, "class", "restore-archive", name)
    assert back.returncode == 0 and "已放回 1 个空间" in back.stdout
    assert lesson.open_page(token).solved
    assert "没有归档" in cli("--dir", folder, "class", "archives").stdout


def test_cli_restore_never_overwrites_a_space_in_use(room, tmp_path):
    spaces, lesson, _ = room
    token = spaces.new_token()
    solve_rebuild(lesson, token)
    name = spaces.archive_all(3600)["name"]
    lesson.open_page(token)
    spaces.set_display_name(token, "写过了")   # the same space is used again after the archive
    out = cli_process("--dir", str(tmp_path / "class"), "class", "restore-archive", name)   # another process
    assert out.returncode == 0 and "留在归档里没动" in out.stdout
    assert spaces.display_names(spaces.teacher_secret) == {spaces.verify(token): "写过了"}
    assert [row["spaces"] for row in spaces.archives()] == [1]


@pytest.mark.parametrize("args, complaint", [
    (["class", "archive", "--keep-days", "0"], "--keep-days"),
    (["class", "archive", "--keep-days", "many"], "不是数字"),
    (["class", "restore-archive", "../../etc"], "归档名"),
    (["class", "restore-archive", "20200101-000000-abcd"], "没有归档"),
])
def test_cli_bad_archive_input_is_a_chinese_error(room, tmp_path, args, complaint):
    out = cli("--dir", str(tmp_path / "class"), *args)
    assert out.returncode == 2 and out.stderr.startswith("错误：") and complaint in out.stderr
    assert "Traceback" not in out.stderr


def test_level_converge_solved_through_the_page(room):
    spaces, lesson, _ = room
    token = spaces.new_token()
    page = lesson.start(token, lesson.pick(token, LessonView(), "converge").view)
    assert page.tools == ("converge",)
    ids = {label.split(" = ")[-1].rstrip(" ✅"): sid for label, sid in page.tree_choices if " = " in label}
    page = lesson.select(token, page.view, ids["分支 B"])
    page = lesson.converge(token, page.view, [], "B")
    assert "至少一个" in page.notice and not page.solved
    page = lesson.converge(token, page.view, [ids["分支 A"]], "采用方案 B：峰值内存更低")
    assert "已收敛" in page.notice and page.solved


def test_reopening_the_lesson_tab_brings_back_a_teachers_authoring_area(room):
    """The authoring area is shown when the lesson tab first opens; when that event's result never reached the page
    (or it rendered an error page without the teacher flag), opening the tab again shows it, without a reload."""
    import gradio as gr

    from s11_workbench.lesson_tab import LOAD, page_outputs

    spaces, lesson, _ = room
    token = spaces.new_token()
    teacher = lesson.render(token, LessonView(), spaces.teacher_secret)
    student = lesson.render(token, LessonView(), None)
    assert teacher.teacher and not student.teacher
    author = LOAD.index("author")
    lost_load = page_outputs(teacher, LOAD, {})                      # the load never arrived: nothing shown
    error_load = page_outputs(teacher, LOAD, {"author": False})      # the load rendered a page without it
    for outputs in (lost_load, error_load):
        assert isinstance(outputs[author], gr.Accordion) and outputs[author].visible is True
        assert outputs[LOAD.index("shown")]["author"] is True
    shown = page_outputs(teacher, LOAD, {})[LOAD.index("shown")]       # a normal load: the tab sends nothing new
    assert shown["author"] is True
    assert page_outputs(teacher, LOAD, shown)[author] == gr.skip()
    hidden = page_outputs(student, LOAD, page_outputs(student, LOAD, {})[LOAD.index("shown")])
    assert hidden[author] == gr.skip()                                 # a student's page never gets it
    assert page_outputs(student, LOAD, {})[LOAD.index("author")].visible is False


def test_a_late_page_load_never_erases_a_name_the_student_is_typing(room):
    """In a class the page-load result can arrive seconds after the page shows: for a student with no saved name
    it leaves the name box alone (whatever was typed meanwhile stays); a saved name is filled in; an emptied name
    stays empty on the next load; saving sends the value."""
    import gradio as gr

    from s11_workbench.lesson_tab import LOAD, PAGE, page_outputs

    spaces, lesson, _ = room
    token = spaces.new_token()
    name = LOAD.index("name")
    assert page_outputs(lesson.open_page(token), LOAD, {})[name] == gr.skip()
    saved = page_outputs(lesson.set_name(token, LessonView(), "小林"), PAGE + ("name",), {})
    assert saved[-1] == "小林"
    assert page_outputs(lesson.open_page(token), LOAD, {})[name] == "小林"
    lesson.set_name(token, LessonView(), "")
    assert page_outputs(lesson.open_page(token), LOAD, {})[name] == gr.skip()
    assert page_outputs(lesson.open_page("not-a-token"), LOAD, {})[name] == gr.skip()   # an error page too


def test_the_lesson_tabs_select_event_updates_the_authoring_area(tmp_path):
    import gradio as gr

    from s11_workbench import lesson_tab

    sys.path.insert(0, str(REPO))
    try:
        import app
    finally:
        sys.path.remove(str(REPO))
    demo = app.build_app(tmp_path / "sessions")
    author = next(block for block in demo.blocks.values() if getattr(block, "elem_id", None) == "s11l-author")
    tab = next(block for block in demo.blocks.values() if isinstance(block, gr.Tab) and block.label == lesson_tab.LABEL)
    selects = [fn for fn in demo.fns.values() if (tab._id, "select") in fn.targets]
    assert selects, "the lesson tab has no select event"
    assert any(author in fn.outputs for fn in selects)


def test_only_the_teacher_link_can_upload_a_level_file(room, tmp_path):
    """Issue 41 item 12: the level-file upload answered anyone who sent the event. A student (no secret, or a wrong
    one) gets one Chinese refusal, the editor keeps its text (None = leave it), no level is published."""
    spaces, lesson, _ = room
    from s11_workbench.lesson_tab import EXAMPLE
    level = tmp_path / "level.json"
    level.write_text(EXAMPLE, encoding="utf-8")
    for secret in (None, "", "not-the-secret", spaces.teacher_secret[:-1]):
        text, verdict, drawing = lesson.upload_level(str(level), teacher=secret)
        assert text is None and drawing == "" and verdict == "❌ 上传关卡文件需要教师链接：学生不能上传关卡"
    assert lesson.levels.published() == []
    text, verdict, drawing = lesson.upload_level(str(level), teacher=spaces.teacher_secret)
    assert text == EXAMPLE and verdict.startswith("✅") and "mermaid" in drawing
    huge = tmp_path / "huge.json"
    huge.write_bytes(b" " * (64 * 1024 + 1))
    assert lesson.upload_level(str(huge), teacher=spaces.teacher_secret) == (None, "❌ 读不了上传的文件（最大 64 KB）", "")


def test_a_space_too_big_to_judge_says_so_on_the_lesson_page_and_in_the_teacher_s_row(room, monkeypatch):
    """Issue 41 item 5 through both doors that judge: the student's lesson click and the teacher's row click get the
    judge's sentence instead of a verdict (the bound is lowered here; test_judge_bounds builds the real 1,500)."""
    import s11_exercises
    spaces, lesson, classroom = room
    student, teacher = spaces.new_token(), spaces.new_token()
    page = lesson.start(student, lesson.pick(student, LessonView(), "rewind").view)
    main = read_progress(spaces.open(student).folder)["levels"]["rewind"]["anchors"]["main"]
    for at in (1, 2, 4):
        page = lesson.fork(student, lesson.select(student, page.view, main).view, at, "试试")
    monkeypatch.setattr(s11_exercises, "MAX_JUDGED_SESSIONS", 2)
    page = lesson.select(student, page.view, page.view.session_id)
    assert "这个空间的会话太多，无法判题（3 个，上限 2）" in page.hint and not page.solved
    row = classroom.student(teacher, spaces.teacher_secret, spaces.verify(student))
    assert "这个空间的会话太多，无法判题（3 个，上限 2）" in row


# ── issue 41 item 12: invisible and huge display names ──────────────────────────────────────────────────
INVISIBLE_NAMES = {
    "hangul-filler": "\u3164\u3164\u3164",
    "choseong-filler": "\u115f",
    "jungseong-filler": "\u1160",
    "halfwidth-filler": "\uffa0\uffa0",
    "zero-width-space": "\u200b\u200b",
    "joiners-and-marks": "\u200d\u200c\u2060\ufeff",
    "bidi-controls": "\u202e\u2066\u200f",
    "variation-selectors": "\ufe0f\ufe00",
    "braille-blank": "\u2800\u2800",
    "tag-characters": "\U000e0041\U000e0042",
    "combining-mark-alone": "\u0301\u0308",
    "fillers-between-spaces": " \u3164 \u3000 \uffa0 ",
}


@pytest.mark.parametrize("name", INVISIBLE_NAMES.values(), ids=INVISIBLE_NAMES.keys())
def test_an_invisible_name_is_refused_in_chinese_and_the_saved_name_stays(room, name):
    spaces, lesson, _ = room
    token = spaces.new_token()
    lesson.set_name(token, LessonView(), "小明")
    profile = Path(spaces.open(token).folder) / ".profile.json"
    before = profile.read_bytes()
    page = lesson.set_name(token, LessonView(), name)
    assert "看得见的字" in page.notice and page.name != name
    assert profile.read_bytes() == before
    assert spaces.display_names(spaces.teacher_secret) == {spaces.verify(token): "小明"}
    with pytest.raises(SpaceError, match="看得见的字"):
        spaces.set_display_name(token, name)


def test_a_huge_name_is_refused_before_any_work_and_the_saved_name_stays(room):
    spaces, lesson, _ = room
    token = spaces.new_token()
    lesson.set_name(token, LessonView(), "小明")
    page = lesson.set_name(token, LessonView(), "长" * 2_000_000)
    assert "太长" in page.notice and "2,000,000" in page.notice
    assert spaces.display_names(spaces.teacher_secret) == {spaces.verify(token): "小明"}


def test_invisible_characters_inside_a_visible_name_are_removed(room):
    spaces, lesson, _ = room
    token = spaces.new_token()
    page = lesson.set_name(token, LessonView(), "\u3164小\u200b明\u202e\u115f  同学\uffa0")
    assert page.name == "小明 同学"
    assert spaces.display_names(spaces.teacher_secret) == {spaces.verify(token): "小明 同学"}
    family = lesson.set_name(token, LessonView(), "👨\u200d👩\u200d👧 一家")   # emoji joiners stay inside a name
    assert family.name == "👨\u200d👩\u200d👧 一家"
    assert lesson.set_name(token, LessonView(), " \u3000 ").name == ""      # only spaces: no name, as before
    assert spaces.display_names(spaces.teacher_secret) == {}


def test_a_saved_invisible_or_huge_name_shows_as_no_name_in_the_class_view(room):
    spaces, _, classroom = room
    filler, huge = spaces.new_token(), spaces.new_token()
    (Path(spaces.open(filler).folder) / ".profile.json").write_text(json.dumps({"name": "\u3164\u3164"}))
    (Path(spaces.open(huge).folder) / ".profile.json").write_text(json.dumps({"name": "\u3164" * 500 + "小红"}))
    # the stored text is cut to MAX_NAME_INPUT characters before it is cleaned: the visible name lies past the cut
    assert spaces.display_names(spaces.teacher_secret) == {}   # no row shows an empty-looking name
    assert spaces.display_name(filler) == ""
