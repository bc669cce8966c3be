"""A lesson in Debian's chromium: a teacher and two students in separate browser contexts.

Both students solve level 1 of 🎯 练习 by clicking; the teacher's class panel (above the tabs, teacher mode only)
shows their names and progress and flags the idle one; a level file the teacher uploads, then publishes, reaches both; the class fork
map shows both students' forks of a shelf session; no student page holds the other's name, space id or the
teacher secret; archiving at the end leaves nothing visible to a new student; at 390 px, light and dark, neither the
teacher's page nor a student's is wider than the window.

One server, one browser, one walk: the students click side by side (each step clicked on both pages, then awaited
on both), and what the walk does not prove through clicks (the quiet student's clock, the shelf session and the
students' forks of it) is prepared through the logic directly. Waits are on conditions, never on fixed sleeps,
except one layout pass after a viewport change.

Set S11_LESSON_SCREENSHOTS=docs to also write docs/lesson-*.png (1400/390 px, light/dark) during the run.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

import pytest

from browser_tabs import click_message, eventually, looks, open_tab, serving
from conftest import REPO
from s11_exercises import builtin_exercises

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TAB = "🎯 练习"
LEVELS = len(builtin_exercises())   # the class table counts "solved / all levels"
TEACHER = "lesson-browser-teacher-" + secrets.token_hex(8)
NAMES = ("学生甲-" + secrets.token_hex(3), "学生乙-" + secrets.token_hex(3))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from s11_workbench.spaces import Limits

    # All three pages come from 127.0.0.1, like a class behind one NAT address: the teacher raises the per-address
    # share (--students-per-address). With the default share of one student, the three pages' load events filled
    # it, and a student's first click was refused while they ran (CI's timeout on "save the name").
    with serving(tmp_path_factory.mktemp("lesson_sessions"), teacher_secret=TEACHER,
                 limits=Limits(students_per_address=3)) as (url, demo):
        yield url, demo.s11_spaces


class Visitor:
    def __init__(self, browser, url: str, *, query: str = "", width: int = 1400, scheme: str = "light"):
        self.context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
        self.page = self.context.new_page()
        self.page.goto(f"{url}/{query}", wait_until="commit")   # several pages load at once; ready() waits
        self.clicks = 0   # clicks that chose a fork position (typing one is impossible: see no_position_box)

    def ready(self) -> "Visitor":
        self.page.get_by_role("tab").first.wait_for(timeout=30_000)
        return self

    def open_lesson(self) -> None:
        """Open the tab and wait, as a reader would, until the page-load and tab events have settled: their result
        redraws the lesson page (a late one would undo the first clicks). The load has reached the lesson once the
        8.11 tab's button is enabled (its event and the lesson's load follow the same one); until then and while
        the tab's own event runs, the lesson's controls show Gradio's progress overlay."""
        open_tab(self.page, TAB)
        self.page.locator("#s11l-levels").get_by_text("第 1 关").wait_for(timeout=15_000)
        self.page.wait_for_function(
            "() => { const run = document.querySelector('#s11-run');"
            " return run && !run.disabled && !document.querySelector("
            "'[id^=\"s11l-\"] .wrap.full:not(.hide), [id^=\"s11l-\"] .wrap.minimal:not(.hide)'); }",
            timeout=30_000)

    def notice(self) -> str:
        return self.page.locator("#s11l-notice").inner_text()

    def act(self, click, expect: str) -> None:
        """Click, then wait for a new notice containing `expect` (each action rewrites the notice)."""
        self.begin(click, expect)()

    def begin(self, click, expect: str, line: str = "s11l-notice"):
        """Click now; return the wait for the new text of `line` (the notice, or the fork's own result line under
        its button) containing `expect` (another page can be clicked meanwhile)."""
        before = self.page.locator(f"#{line}").inner_text()
        click()
        return lambda: self.page.wait_for_function(
            "([line, before, expect]) => { const n = document.getElementById(line);"
            " const t = n ? n.innerText : ''; return t !== before && t.includes(expect); }",
            arg=[line, before, expect], timeout=30_000)

    def choose(self, elem_id: str, text: str) -> None:
        self.page.locator(f"#{elem_id}").get_by_text(text).first.click()

    def action_tab(self, name: str) -> None:
        self.page.locator(f"#s11l-{name}-tab-button").click()

    def fork(self, at: int, first_message: str = ""):
        """Fork the way a student does: click message `at` in the conversation (no position is typed; the control has
        no box for one), see the button name it, optionally write the new branch's first message, click the button.
        The result shows under the button, and the control is cleared."""
        click_message(self.page, at, "#s11l-path")
        self.page.locator("#s11l-fork").get_by_text(f"第 {at} 条").wait_for(timeout=15_000)
        self.clicks += 2
        if first_message:
            self.page.locator("#s11l-fork-text textarea").fill(first_message)
        wait = self.begin(lambda: self.page.locator("#s11l-fork").click(), "分叉出新会话", "s11l-fork-result")

        def cleared():
            wait()
            self.page.locator("#s11l-fork").get_by_text("在选中的消息之后分叉").wait_for(timeout=15_000)
            assert self.page.locator("#s11l-fork-text textarea").input_value() == ""
            assert self.page.locator("#s11l-fork-title textarea, #s11l-fork-title input").first.input_value() == ""
        return cleared

    def resume(self, role: str, text: str, count: int):
        self.action_tab("resume")
        self.choose("s11l-role", role)
        self.page.locator("#s11l-resume-text textarea").fill(text)
        return self.begin(lambda: self.page.locator("#s11l-resume").click(), f"现在有 {count} 条消息")

    def select_tree(self, text: str):
        """Pick a node of "your tree"; done when it is checked and the tree drawing marks it (a new map)."""
        before = self.page.locator("#s11l-mine").inner_html()
        self.choose("s11l-tree", text)
        return lambda: self.page.wait_for_function(
            "([before, text]) => { const t = document.querySelector('#s11l-tree');"
            " const c = t && t.querySelector('input:checked');"
            " const label = c && c.closest('label');"
            " const mine = document.querySelector('#s11l-mine');"
            " return label && label.innerText.includes(text) && mine && mine.innerHTML !== before"
            " && mine.querySelector('svg'); }", arg=[before, text], timeout=15_000)

    def overflow(self) -> dict:
        """Page width against the window's, at 390 px, light and dark (Gradio follows the system scheme live)."""
        widths = {}
        size = self.page.viewport_size
        self.page.set_viewport_size({"width": 390, "height": 900})
        for scheme in ("light", "dark"):
            self.page.emulate_media(color_scheme=scheme)
            self.page.wait_for_function(
                "(dark) => document.body.classList.contains('dark') === dark", arg=scheme == "dark")
            self.page.wait_for_timeout(200)   # one layout pass after the resize (no event to wait on)
            widths[scheme] = self.page.evaluate("[document.documentElement.scrollWidth, innerWidth]")
        self.page.emulate_media(color_scheme="light")
        self.page.set_viewport_size(size)
        return widths

    def no_position_box(self) -> None:
        """The lesson's fork control has nowhere to type a position: no number box, the pick box is not visible."""
        control = self.page.locator("#s11l-fork-tab")
        assert control.locator("input[type=number]").count() == 0
        assert not self.page.locator("#s11l-fork-at").is_visible()

    def close(self) -> None:
        self.context.close()


LEVEL_ONE = [   # (what to do, argument...) in order; every step ends with a new notice or a re-drawn tree
    ("start",), ("fork", 5), ("resume", "assistant", "方案 A：LRU 上限", 6), ("resume", "user", "按方案 A 继续", 7),
    ("select_tree", "= 主会话"), ("fork", 5), ("resume", "assistant", "方案 B：弱引用", 6),
    ("resume", "user", "先对比压测", 7), ("resume", "user", "压测完成，选 B", 8),
    ("resume", "assistant", "已完成重构", 9)]


def step(student: Visitor, what: str, *args):
    if what == "start":
        return student.begin(lambda: student.page.locator("#s11l-start").click(), "已开始")
    return getattr(student, what)(*args)


def solve_level_one(students, names) -> None:
    """Both students type a name and solve level 1 by clicking, side by side: each step is clicked on every page,
    then awaited on every page (the server runs them at once, as it would in a class)."""
    for student, name in zip(students, names):
        student.page.locator("#s11l-name textarea, #s11l-name input").first.fill(name)
    saving = [s.begin(lambda s=s: s.page.locator("#s11l-name-save").click(), "老师会看到你叫") for s in students]
    await_all(zip(students, saving), "save the name")
    for student in students:
        student.choose("s11l-levels", "第 1 关")
    for student in students:
        student.page.locator("#s11l-verdict").get_by_text("还没开始").wait_for(timeout=15_000)
    for what in LEVEL_ONE:
        await_all([(student, step(student, *what)) for student in students], what)
    for student in students:
        page = student.page
        page.locator("#s11l-hint").get_by_text("这一关完成了").wait_for(timeout=15_000)
        assert page.locator("#s11l-verdict").inner_text().count("✅") == 4
        page.locator("#s11l-levels").get_by_text("✅ 第 1 关").wait_for(timeout=15_000)
        student.no_position_box()
        assert student.clicks == 4   # two forks, each a click on message 5 and one on the button; nothing typed


def await_all(waits, what) -> None:
    """Each student's wait in turn; a timeout names the step and what that student's notice reads instead."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    for student, wait in waits:
        try:
            wait()
        except PlaywrightTimeout:
            student.page.screenshot(path="/tmp/lesson-step-timeout.png", full_page=True)
            raise AssertionError(f"step {what}: the notice still reads {student.notice()!r}") from None


def row_of(table, text: str):
    """The visible table row holding `text` (Gradio keeps hidden copies of the cells for measuring)."""
    cell = table.get_by_text(text).locator("visible=true").first
    return cell.locator("xpath=ancestor::div[contains(concat(' ', @class, ' '), ' virtual-row ')][1]")


def shoot(visitor: Visitor, name: str, folder: str) -> None:
    visitor.page.evaluate("document.fonts.ready")
    visitor.page.wait_for_timeout(600)
    visitor.page.screenshot(path=str(Path(REPO / folder / name)), full_page=True)


def in_view(page, selector: str) -> bool:
    return page.evaluate("""(selector) => { const r = document.querySelector(selector).getBoundingClientRect();
        return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; }""", selector)


def pick_node(student: Visitor, label: str, last: str) -> None:
    """Pick a node of "your tree" and wait until its conversation (ending at message `last`) is shown."""
    student.choose("s11l-tree", label)
    student.page.wait_for_function(
        "([label, last]) => { const c = document.querySelector('#s11l-tree input:checked');"
        " const chat = document.querySelector('#s11l-path');"
        " return c && c.closest('label').innerText.includes(label) && chat && chat.innerText.includes(last); }",
        arg=[label, last], timeout=15_000)


def shoot_shots(visitor: Visitor, name: str) -> None:
    """The lesson's fork control at 1400 and 390 px, light and dark, into S11_FORK_SCREENSHOTS (if set)."""
    folder = os.environ.get("S11_FORK_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    size = visitor.page.viewport_size
    for width in (1400, 390):
        visitor.page.set_viewport_size({"width": width, "height": 900})
        visitor.page.locator("#s11l-fork-buttons").evaluate("e => e.scrollIntoView({block: 'nearest'})")
        for scheme in ("light", "dark"):
            visitor.page.emulate_media(color_scheme=scheme)
            visitor.page.wait_for_timeout(300)
            visitor.page.screenshot(path=str(Path(folder) / f"{name}-{width}-{scheme}.png"))
    visitor.page.emulate_media(color_scheme="light")
    visitor.page.set_viewport_size(size)


@pytest.mark.parametrize("width", looks(390, 1400))
def test_levels_2_and_3_by_clicking_only_with_the_fork_control_in_view(browser, server, width):
    """Issue 42 items 1 and 3: a student picks the fork position by clicking a message of the lesson's conversation
    (the control has no position box), sees the button name it without scrolling, and the control clears after the
    fork; level 2 (fork at message 3 with a first message) and level 3 (resume branch B) are solved that way, and the
    page is never wider than the window."""
    url, _ = server
    student = Visitor(browser, url, width=width).ready()
    try:
        page = student.page
        student.open_lesson()
        student.no_position_box()
        student.choose("s11l-levels", "第 2 关")
        page.locator("#s11l-verdict").get_by_text("还没开始").wait_for(timeout=15_000)
        student.act(lambda: page.locator("#s11l-start").click(), "已开始「第 2 关")
        pick_node(student, "= 主会话", "#5")
        page.locator("#s11l-path").get_by_role("button", name="清空").click()   # the chat's own clear redraws it
        page.locator("#s11l-path").get_by_text("#5", exact=True).wait_for(timeout=15_000)
        # the fork button stays refused until a message is picked: never a silent fork at 0
        refused = student.begin(lambda: page.locator("#s11l-fork").click(), "分叉位置还没选", "s11l-fork-result")
        refused()
        click_message(page, 3, "#s11l-path")
        page.locator("#s11l-fork").get_by_text("第 3 条").wait_for(timeout=15_000)
        # the control is scrolled into view once its note has grown
        assert eventually(page, lambda: in_view(page, "#s11l-fork") and in_view(page, "#s11l-picked")), \
            "the fork button is out of view"
        shoot_shots(student, "lesson-fork-picked")
        page.locator("#s11l-fork-title textarea, #s11l-fork-title input").first.fill("新思路")
        student.fork(3, "换个方向：先看 ws_pool 的长连接")()
        page.locator("#s11l-hint").get_by_text("这一关完成了").wait_for(timeout=15_000)
        page.locator("#s11l-levels").get_by_text("✅ 第 2 关").wait_for(timeout=15_000)
        assert page.evaluate("[document.documentElement.scrollWidth, innerWidth]")[0] <= page.viewport_size["width"]

        student.choose("s11l-levels", "第 3 关")
        page.locator("#s11l-verdict").get_by_text("还没开始").wait_for(timeout=15_000)
        student.act(lambda: page.locator("#s11l-start").click(), "已开始「第 3 关")
        pick_node(student, "方案 B", "#7")
        student.resume("user", "压测完成：方案 B 峰值内存更低，决定采用方案 B", 8)()
        student.resume("assistant", "已按弱引用方案完成重构，问题闭环", 9)()
        page.locator("#s11l-hint").get_by_text("这一关完成了").wait_for(timeout=15_000)
        assert student.clicks == 2   # one fork: a click on message 3 and one on the button; no position typed
        for scheme, (page_width, window) in student.overflow().items():
            assert page_width <= window, f"the lesson at 390 px ({scheme}) is {page_width} px wide"
    finally:
        student.close()


def test_a_lesson_with_a_teacher_and_two_students(browser, server, tmp_path):
    url, spaces = server
    started = time.monotonic()
    shots = os.environ.get("S11_LESSON_SCREENSHOTS")
    teacher = Visitor(browser, url, query=f"?teacher={TEACHER}")
    first, second = Visitor(browser, url), Visitor(browser, url)
    try:
        for visitor in (teacher, first, second):
            visitor.ready()
        # the class panel sits above the tabs for the teacher, and nowhere for a student
        teacher.page.locator("#s11c-panel").wait_for(state="visible", timeout=15_000)
        assert not first.page.locator("#s11c-panel").is_visible()
        for student in (first, second):
            student.open_lesson()
        solve_level_one((first, second), NAMES)
        print(f"both solved level 1: {time.monotonic() - started:.1f} s")

        # the second student goes quiet: no progress on level 2 for ten minutes (the clock is moved, not waited)
        second.choose("s11l-levels", "第 2 关")
        # as a reader does, wait for level 2's page (the start also carries the picked level, so a quick click
        # could not restart level 1 any more); the notice must name level 2
        second.page.locator("#s11l-verdict").get_by_text("还没开始").wait_for(timeout=15_000)
        second.act(lambda: second.page.locator("#s11l-start").click(), "已开始「第 2 关")
        ids = {row["space_id"] for row in spaces.list_spaces(TEACHER)}
        by_name = {spaces.display_names(TEACHER).get(space_id): space_id for space_id in ids}
        quiet = Path(spaces.spaces_dir) / by_name[NAMES[1]] / ".lesson.json"
        progress = json.loads(quiet.read_text(encoding="utf-8"))
        progress["levels"]["rewind"]["last_progress"] -= 600
        quiet.write_text(json.dumps(progress), encoding="utf-8")

        teacher.page.locator("#s11c-refresh").click()
        table = teacher.page.locator("#s11c-class")
        table.get_by_text(NAMES[1]).locator("visible=true").first.wait_for(timeout=15_000)
        # the table also refreshes itself on a timer: wait for the answer to the click, not an older tick's table
        from playwright.sync_api import expect
        expect(row_of(table, NAMES[1])).to_contain_text("卡住了", timeout=15_000)
        expect(row_of(table, NAMES[0])).to_contain_text(f"1/{LEVELS}", timeout=15_000)
        rows = {name: row_of(table, name).inner_text() for name in NAMES}
        assert f"1/{LEVELS}" in rows[NAMES[0]] and "做完了" in rows[NAMES[0]] and "卡住了" not in rows[NAMES[0]]
        assert f"1/{LEVELS}" in rows[NAMES[1]] and "卡住了" in rows[NAMES[1]]
        # a row opens that student's space read-only
        row_of(table, NAMES[0]).locator(".body-cell").first.click()
        teacher.page.locator("#s11c-student").get_by_text("只读").wait_for(timeout=15_000)
        assert NAMES[0] in teacher.page.locator("#s11c-student").inner_text()

        # the teacher publishes a level of their own; it reaches both students
        teacher.open_lesson()
        teacher.page.locator("#s11l-author").get_by_text("老师：自己出一关").click()
        # the level-file upload answers the teacher link (its event carries the secret since issue 41)
        from s11_workbench.lesson_tab import EXAMPLE
        uploaded = tmp_path / "my-level-upload.json"
        uploaded.write_text(EXAMPLE.replace("我的一关：", "我的一关（上传的）："), encoding="utf-8")
        teacher.page.locator("#s11l-level-file input[type=file]").set_input_files(str(uploaded))
        teacher.page.locator("#s11l-level-check").get_by_text("✅ 关卡「我的一关（上传的）").wait_for(timeout=15_000)
        teacher.page.locator("#s11l-publish").click()
        teacher.page.locator("#s11l-level-check").get_by_text("已把").wait_for(timeout=15_000)
        for student in (first, second):   # coming back to the tab re-reads the levels (no reload needed)
            student.page.get_by_role("tab").first.click()
            student.open_lesson()
        for student in (first, second):
            student.page.locator("#s11l-levels").get_by_text("我的一关").wait_for(timeout=15_000)

        # a shelf session, one fork by each student, the teacher's class fork map
        own = spaces.open(spaces.new_token())
        root = own.store.create_session("课堂共享会话", [{"role": "user", "content": f"第 {n} 条"} for n in range(1, 7)])
        spaces.publish(TEACHER, own.space_id, root)
        for name, at in zip(NAMES, (3, 5)):
            student_space = spaces._space(by_name[name])
            student_space.fork_from(spaces.shelf(), root, at=at, new_messages=[{"role": "user", "content": name}])
        teacher.page.locator("#s11c-map-box").get_by_text("全班的分叉图").click()
        teacher.page.locator("#s11c-refresh").click()   # a reload would drop the teacher link (by design)
        teacher.page.wait_for_function(
            "() => { const i = document.querySelector('#s11c-shelf input'); return i && i.value.includes('课堂共享会话'); }",
            timeout=15_000)
        teacher.page.locator("#s11c-draw").click()
        fork_map = teacher.page.locator("#s11c-map")
        fork_map.get_by_text("第 5 条之后").wait_for(timeout=15_000)
        text = fork_map.inner_text()
        assert "第 3 条之后：1 人" in text and NAMES[0] in text and NAMES[1] in text
        row_of(teacher.page.locator("#s11c-forks"), NAMES[1]).locator(".body-cell").first.click()
        teacher.page.wait_for_function(
            "(name) => { const c = document.querySelector('#s11c-path'); return c && c.innerText.includes(name); }",
            arg=NAMES[1], timeout=15_000)

        if shots:
            shoot(teacher, "lesson-class-light.png", shots)
            shoot(first, "lesson-light.png", shots)

        # a phone: neither the teacher's page (class table, a student opened, the fork map drawn) nor a student's
        # page (a level in progress, both trees drawn) is wider than the window, light or dark
        for who, visitor in (("teacher", teacher), ("student", first)):
            for scheme, (page_width, window) in visitor.overflow().items():
                assert page_width <= window, f"{who}'s page at 390 px ({scheme}) is {page_width} px wide"

        # nothing of the other student, and no teacher secret, on a student's page
        for student, other in ((first, 1), (second, 0)):
            html = student.page.content()
            assert NAMES[other] not in html and by_name[NAMES[other]] not in html and TEACHER not in html

        # end of class: archive everything; a new student sees nothing of it
        teacher.page.locator("#s11c-archive-box").get_by_text("下课").click()
        teacher.page.locator("#s11c-archive").click()
        teacher.page.locator("#s11c-notice").get_by_text("请先勾选").wait_for(timeout=15_000)
        teacher.page.locator("#s11c-confirm").get_by_text("我确认").click()
        teacher.page.locator("#s11c-archive").click()
        teacher.page.locator("#s11c-notice").get_by_text("已归档").wait_for(timeout=15_000)
        # (the teacher's own page reopens an empty space of its own right away)
        assert all(row["sessions"] == 0 for row in spaces.list_spaces(TEACHER)) and len(spaces.archives()) == 1
        assert spaces.display_names(TEACHER) == {}
        newcomer = Visitor(browser, url)
        try:
            newcomer.open_lesson()
            levels = " ".join(newcomer.page.locator("#s11l-levels label").all_inner_texts())   # options only
            assert "✅" not in levels and "▶" not in levels
            html = newcomer.page.content()
            assert not any(name in html for name in NAMES) and not any(sid in html for sid in by_name.values())
        finally:
            newcomer.close()
    finally:
        for visitor in (teacher, first, second):
            visitor.close()
    print(f"lesson browser walk: {time.monotonic() - started:.1f} s")
