"""scripts/screenshot_lesson.py — screenshots of the 🎯 练习 tab and the teacher's class view for the README

    python scripts/screenshot_lesson.py [--out docs]

Starts the app on a free port with a temporary sessions folder and a known teacher secret, lets three scripted
students work (names, one level solved, one wrong fork, one shelf fork each, through the same Lesson/Spaces calls
the page makes), then Debian's chromium shoots:
  docs/lesson-light.png, docs/lesson-dark.png, docs/lesson-phone.png, docs/lesson-phone-dark.png   a student on level 2
  docs/lesson-class-light.png, docs/lesson-class-dark.png, docs/lesson-class-phone.png            the teacher's panel
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "code"))
sys.path.insert(0, str(REPO / "scripts"))

from screenshot import CHROMIUM, CHROMIUM_ARGS, free_port  # noqa: E402

TEACHER = "screenshot-teacher-secret"
STUDENT_SHOTS = {"lesson-light.png": (1400, "light"), "lesson-dark.png": (1400, "dark"),
                 "lesson-phone.png": (390, "light"), "lesson-phone-dark.png": (390, "dark")}
CLASS_SHOTS = {"lesson-class-light.png": (1400, "light"), "lesson-class-dark.png": (1400, "dark"),
               "lesson-class-phone.png": (390, "light")}


def class_of_three(spaces) -> None:
    """Three students: one solved level 1, one stuck on level 2, one idle; each forked the shelf session."""
    from s11_workbench.lesson import Lesson, LessonView
    lesson = Lesson(spaces)
    own = spaces.open(spaces.new_token())
    root = own.store.create_session("修复登录服务内存泄漏", [{"role": "user", "content": f"第 {n} 条"} for n in range(1, 8)])
    spaces.publish(TEACHER, own.space_id, root)
    for name, at in (("小明", 3), ("小红", 5), ("阿强", 5)):
        token = spaces.new_token()
        lesson.set_name(token, LessonView(), name)
        page = lesson.start(token, lesson.pick(token, LessonView(), "rebuild").view)
        if name == "小明":
            main = page.view.session_id
            for turns in ([("assistant", "A"), ("user", "go")], [("assistant", "B"), ("user", "c"), ("user", "d"),
                                                                  ("assistant", "e")]):
                page = lesson.fork(token, lesson.select(token, page.view, main).view, 5, "")
                for role, text in turns:
                    page = lesson.resume(token, page.view, text, role)
        elif name == "小红":
            page = lesson.start(token, lesson.pick(token, page.view, "rewind").view)
            for _ in range(5):
                page = lesson.fork(token, page.view, 5, "再试一次")
        spaces.open(token).fork_from(spaces.shelf(), root, at=at, new_messages=[{"role": "user", "content": name}])


def settle(page) -> None:
    page.evaluate("document.fonts.ready")
    page.mouse.move(0, 0)
    page.wait_for_timeout(800)


def open_tab(page, label: str) -> None:
    tab = page.get_by_role("tab", name=label)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
    else:
        page.get_by_role("button", name="More tabs").click()
        page.locator(".overflow-dropdown button", has_text=label).click()


def student_shot(browser, url: str, width: int, scheme: str, path: Path) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(f"{url}/?__theme={scheme}")
    page.get_by_role("tab").first.wait_for()
    open_tab(page, "🎯 练习")
    page.locator("#s11l-levels").get_by_text("第 2 关").click()
    page.locator("#s11l-verdict").get_by_text("还没开始").wait_for(timeout=30_000)
    page.locator("#s11l-start").click()
    page.locator("#s11l-notice").get_by_text("已开始").wait_for(timeout=30_000)
    page.locator("#s11l-path").get_by_text("#5", exact=True).first.click()   # a click picks the fork position
    page.locator("#s11l-fork").get_by_text("第 5 条").wait_for(timeout=30_000)
    page.locator("#s11l-fork").click()
    page.locator("#s11l-hint").get_by_text("第 5 条").wait_for(timeout=30_000)
    page.locator("#s11l-mine svg[id^='mermaid']").wait_for(timeout=30_000)
    page.locator("#s11l-goal svg[id^='mermaid']").first.wait_for(timeout=30_000)
    settle(page)
    page.screenshot(path=str(path), full_page=True)
    context.close()
    print(f"wrote {path} ({width} px, {scheme})")


def class_shot(browser, url: str, width: int, scheme: str, path: Path) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(f"{url}/?teacher={TEACHER}&__theme={scheme}")
    page.locator("#s11c-panel").wait_for(state="visible", timeout=30_000)
    page.locator("#s11c-class").get_by_text("小红").locator("visible=true").first.wait_for(timeout=30_000)
    page.locator("#s11c-class").get_by_text("小明").locator("visible=true").first.click()
    page.locator("#s11c-student").get_by_text("只读").wait_for(timeout=30_000)
    page.locator("#s11c-map-box").get_by_text("全班的分叉图").click()
    page.locator("#s11c-draw").click()
    page.locator("#s11c-map").get_by_text("第 5 条之后").wait_for(timeout=30_000)
    page.locator("#s11c-archive-box").get_by_text("下课").click()
    settle(page)
    page.screenshot(path=str(path), full_page=True)   # the panel on top, the tabs below it
    context.close()
    print(f"wrote {path} ({width} px, {scheme})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    import app

    with tempfile.TemporaryDirectory() as scratch:
        demo = app.build_app(Path(scratch) / "gradio_sessions", teacher_secret=TEACHER)
        demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                    **app.launch_options(demo))
        try:
            class_of_three(demo.s11_spaces)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                url = demo.local_url.rstrip("/")
                for name, (width, scheme) in CLASS_SHOTS.items():   # first: the student shots add spaces
                    class_shot(browser, url, width, scheme, out / name)
                for name, (width, scheme) in STUDENT_SHOTS.items():
                    student_shot(browser, url, width, scheme, out / name)
                browser.close()
        finally:
            demo.close()


if __name__ == "__main__":
    main()
