"""A projected class view in Debian's chromium (issue 42 item 6): a teacher page and two student pages in separate
browser contexts, the class timers shortened to 2 s (S11_CLASS_REFRESH_SECONDS).

Untouched, the teacher's table shows a student's new fork and the shelf list a just-published session (no 🔄 click);
the teacher's own space is not a row; 「全班做这一关」 with level 2 switches both student pages to it and locks level 3
(shown with 🔒, refused with a Chinese reason when picked); the teacher restarts one student's level; the progress
CSV downloads with a hostile name neutralised; at 1400 and 390 px, light and dark, neither page is wider than the
window. Screenshots go to /tmp/shots-classy/.

Steps that are not about clicking (a student's fork, a shelf session) are made through the logic, as the lesson
walk does; waits are on conditions, never on fixed sleeps, except one layout pass after a viewport change.
"""

from __future__ import annotations

import csv
import io
import json
import secrets
import time
from pathlib import Path

import pytest

from browser_tabs import open_tab, serving
from s11_workbench.classroom import CLASS_HEADERS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEACHER = "class-browser-teacher-" + secrets.token_hex(8)
NAMES = ("=学生甲" + secrets.token_hex(2), "学生乙" + secrets.token_hex(2))   # the first one starts like a formula
SHOTS = Path("/tmp/shots-classy")
LINES = [{"role": "user" if n % 2 else "assistant", "content": f"第 {n} 条"} for n in range(6)]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from s11_workbench.spaces import Limits

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("S11_CLASS_REFRESH_SECONDS", "2")   # read when the page is built
        with serving(tmp_path_factory.mktemp("class_sessions"), teacher_secret=TEACHER,
                     limits=Limits(students_per_address=3)) as (url, demo):
            yield url, demo.s11_spaces


class Visitor:
    def __init__(self, browser, url: str, *, query: str = ""):
        self.context = browser.new_context(viewport={"width": 1400, "height": 900}, color_scheme="light",
                                           accept_downloads=True)
        self.page = self.context.new_page()
        self.page.goto(f"{url}/{query}", wait_until="commit")
        self.page.get_by_role("tab").first.wait_for(timeout=30_000)

    def text(self, elem_id: str) -> str:
        return self.page.locator(f"#{elem_id}").inner_text()

    def wait_text(self, elem_id: str, text: str, timeout: int = 20_000) -> None:
        self.page.wait_for_function(
            "([id, text]) => { const e = document.getElementById(id); return e && e.innerText.includes(text); }",
            arg=[elem_id, text], timeout=timeout)

    def open_lesson(self) -> None:
        open_tab(self.page, "🎯 练习")
        self.page.locator("#s11l-levels").get_by_text("第 1 关").wait_for(timeout=15_000)
        self.page.wait_for_function(   # the page-load events have settled (their answer redraws the lesson)
            "() => { const run = document.querySelector('#s11-run');"
            " return run && !run.disabled && !document.querySelector("
            "'[id^=\"s11l-\"] .wrap.full:not(.hide), [id^=\"s11l-\"] .wrap.minimal:not(.hide)'); }",
            timeout=30_000)

    def save_name(self, name: str) -> None:
        self.page.locator("#s11l-name textarea, #s11l-name input").first.fill(name)
        self.page.locator("#s11l-name-save").click()
        self.wait_text("s11l-notice", "老师会看到你叫")

    def choose(self, elem_id: str, option: str) -> None:
        self.page.locator(f"#{elem_id} input").first.click()
        self.page.get_by_role("option", name=option).first.click()

    def width(self) -> tuple:
        return tuple(self.page.evaluate("[document.documentElement.scrollWidth, innerWidth]"))

    def shoot(self, name: str) -> dict:
        """1400 px and 390 px, light and dark: a full-page shot of each; returns the page width at each."""
        widths = {}
        for width in (1400, 390):
            self.page.set_viewport_size({"width": width, "height": 900})
            for scheme in ("light", "dark"):
                self.page.emulate_media(color_scheme=scheme)
                self.page.wait_for_function(
                    "(dark) => document.body.classList.contains('dark') === dark", arg=scheme == "dark")
                self.page.wait_for_timeout(300)   # one layout pass after the resize (no event to wait on)
                widths[(width, scheme)] = self.width()
                self.page.screenshot(path=str(SHOTS / f"{name}-{width}-{scheme}.png"), full_page=True)
        self.page.emulate_media(color_scheme="light")
        self.page.set_viewport_size({"width": 1400, "height": 900})
        return widths

    def close(self) -> None:
        self.context.close()


def row_of(table, text: str):
    """The visible table row holding `text` (Gradio keeps hidden copies of the cells for measuring)."""
    cell = table.get_by_text(text).locator("visible=true").first
    return cell.locator("xpath=ancestor::div[contains(concat(' ', @class, ' '), ' virtual-row ')][1]")


def test_a_projected_class_view_keeps_itself_current_and_runs_the_class(browser, server):
    url, spaces = server
    SHOTS.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    teacher = Visitor(browser, url, query=f"?teacher={TEACHER}")
    students = [Visitor(browser, url), Visitor(browser, url)]
    try:
        teacher.page.locator("#s11c-panel").wait_for(state="visible", timeout=15_000)
        for student, name in zip(students, NAMES):
            student.open_lesson()
            student.save_name(name)
        by_name = {name: space_id for space_id, name in spaces.display_names(TEACHER).items()}

        # the table fills in by itself (nobody clicks 🔄); the teacher's own space is not a student's row
        table = teacher.page.locator("#s11c-class")
        for name in NAMES:
            table.get_by_text(name).locator("visible=true").first.wait_for(timeout=20_000)
        assert teacher.text("s11c-note").startswith("2 个同学")
        first = spaces._space(by_name[NAMES[0]]).store
        first.fork(first.create_session("甲的会话", LINES), [{"role": "user", "content": "新想法"}], at=3)
        column = CLASS_HEADERS.index("分叉")
        teacher.page.wait_for_function(   # the next tick shows the fork (one fork in the first student's row), nobody clicked
            "([name, column]) => [...document.querySelectorAll('#s11c-class .virtual-row')].some(row =>"
            " row.innerText.includes(name) && row.querySelector(`[data-col=\"${column}\"]`)"
            " && row.querySelector(`[data-col=\"${column}\"]`).innerText.trim() === '1')",
            arg=[NAMES[0], column], timeout=20_000)

        # a session published now shows up in the fork map's list on the next tick
        # (written in the teacher's own space: the page-load recorded it in class.json, and it stays out of the table)
        own = spaces._space(json.loads(Path(spaces.sessions_dir, "class.json").read_text())["teacher_spaces"][0])
        shelf_id = spaces.publish(TEACHER, own.space_id, own.store.create_session("刚发布的共享会话", LINES))
        teacher.page.locator("#s11c-map-box").get_by_text("全班的分叉图").click()
        teacher.page.locator("#s11c-shelf input").click()
        teacher.page.get_by_role("option", name="刚发布的共享会话").first.wait_for(timeout=20_000)
        teacher.page.keyboard.press("Escape")
        assert shelf_id

        # the class level set to 2: both student pages switch to it by themselves, level 3 is locked
        teacher.choose("s11c-level", "第 2 关 · 回到第 3 条，换个思路")
        teacher.page.locator("#s11c-level-set").click()
        teacher.wait_text("s11c-notice", "全班做「第 2 关")
        for student in students:
            student.wait_text("s11l-class-note", "全班现在做「第 2 关")
            student.page.locator("#s11l-levels").get_by_text("🔒 第 3 关").wait_for(timeout=20_000)
            assert "第 2 关" in student.text("s11l-instructions")
        second = students[1]
        second.page.locator("#s11l-levels").get_by_text("🔒 第 3 关").click()
        second.wait_text("s11l-notice", "这一关还没开放")
        checked = second.page.locator("#s11l-levels input:checked").locator("xpath=ancestor::label[1]")
        assert "第 2 关" in checked.inner_text()   # the choice went back to the class level
        assert "第 3 关" not in second.text("s11l-instructions")

        # the first student starts level 2; the teacher restarts it for them (their sessions go to their trash)
        students[0].page.locator("#s11l-start").click()
        students[0].wait_text("s11l-notice", "已开始「第 2 关")
        # the table's next tick shows the start (latest activity first: the rows may swap on that tick); a click
        # before it could land on the other student's row as it moves
        teacher.page.wait_for_function(
            "([name, level, status]) => [...document.querySelectorAll('#s11c-class .virtual-row')].some(row => {"
            " const cell = column => row.querySelector(`[data-col=\"${column}\"]`);"
            " return row.innerText.includes(name) && cell(level) && cell(level).innerText.includes('第 2 关')"
            " && cell(status) && cell(status).innerText.includes('做题中'); })",
            arg=[NAMES[0], CLASS_HEADERS.index("当前关卡"), CLASS_HEADERS.index("状态")], timeout=20_000)
        row_of(table, NAMES[0]).locator(".body-cell").first.click()
        teacher.page.locator("#s11c-restart").wait_for(state="visible", timeout=20_000)
        teacher.page.locator("#s11c-restart").click()
        teacher.wait_text("s11c-notice", "重新开始「第 2 关")
        assert "回收站" in teacher.text("s11c-notice")

        # the progress table as CSV: the formula-looking name is neutralised
        teacher.page.locator("#s11c-csv-make").click()
        link = teacher.page.locator("#s11c-csv a").first
        link.wait_for(timeout=20_000)
        with teacher.page.expect_download(timeout=15_000) as info:
            link.click()
        text = Path(info.value.path()).read_bytes().decode("utf-8-sig")
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0][:2] == ["名字", "关卡进度"]
        assert {row[0] for row in rows[1:]} == {"'" + NAMES[0], NAMES[1]}

        # 1400 / 390 px, light and dark: looked at by hand; no page wider than the window
        for who, visitor in (("teacher", teacher), ("student", second)):
            for (width, scheme), (page_width, window) in visitor.shoot(f"class-{who}").items():
                assert page_width <= window, f"{who}'s page at {width} px ({scheme}) is {page_width} px wide"
    finally:
        for visitor in (teacher, *students):
            visitor.close()
    print(f"class browser walk: {time.monotonic() - started:.1f} s")
