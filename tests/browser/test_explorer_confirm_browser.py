"""The explorer's confirm bar in Debian's chromium (issue 18 items 8 and 13): a student empties her trash and purges
one trashed session, each only after the bar said what it frees; the teacher publishes only after the bar showed
the redaction counts. Every step is checked on disk, not only on the page.

Set S11_CONFIRM_SCREENSHOTS=<folder> to also write the confirm bar and the trash tab at 1400 px and 390 px,
light and dark.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

import pytest
from test_explorer_browser import TAB, Visitor, space_store

from browser_tabs import running_app, wait_until_quiet

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TEACHER = "confirm-browser-teacher-" + secrets.token_hex(8)
HELLO = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sessions = tmp_path_factory.mktemp("confirm_sessions")
    with running_app(sessions, teacher_secret=TEACHER) as url:
        yield url, sessions


def shoot(page, name: str) -> None:
    folder = os.environ.get("S11_CONFIRM_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)
    page.wait_for_timeout(600)
    page.screenshot(path=str(Path(folder) / name), type="png", full_page=True)


def seeded(browser, url: str, sessions: Path, **options) -> tuple[Visitor, object, list[str]]:
    visitor = Visitor(browser, url, **options)
    visitor.open_explorer()
    store = space_store(sessions, visitor.space_id())
    ids = [store.create_session(f"草稿 {i}", HELLO * 40) for i in range(3)]
    visitor.page.locator("#s11x-refresh").click()
    visitor.page.locator("#s11x-list-note").get_by_text("共 3 个会话").wait_for(timeout=15_000)
    return visitor, store, ids


def action_tab(visitor: Visitor, name: str, label: str) -> None:
    """Open one of the explorer's action areas (stacked accordions, their labels always in sight)."""
    visitor.action_tab(name)


def trashed(store, ids: list[str]) -> None:
    for session_id in ids:
        store.delete(session_id)


def confirm_bar(page):
    return page.locator("#s11x-confirm")


@pytest.mark.parametrize(("width", "scheme"), [(390, "dark")])   # the teacher's test below runs at 1400
def test_a_student_empties_her_trash_and_purges_one_session_only_after_confirming(browser, server, width, scheme):
    url, sessions = server
    student, store, ids = seeded(browser, url, sessions, width=width, scheme=scheme)
    page = student.page
    trash = Path(store.storage_dir) / ".trash"
    trashed(store, ids[:2])
    page.locator("#s11x-refresh").click()
    action_tab(student, "trash", "删除 / 恢复")
    page.locator("#s11x-trash-note").get_by_text("回收站里有 2 个会话的 2 份副本").wait_for(timeout=15_000)

    page.locator("#s11x-empty-trash").click()                 # the first click only asks
    confirm_bar(page).get_by_text("确认清空回收站").wait_for(timeout=15_000)
    assert re.search(r"至少释放 \d+(\.\d)? (KB|字节)", confirm_bar(page).inner_text())
    assert len(list(trash.glob("*.json"))) == 2
    shoot(page, f"confirm-empty-{width}-{scheme}.png")
    page.locator("#s11x-confirm-no").click()                  # cancel: the bar goes, the files stay
    student.result("confirm", "已取消")
    assert not confirm_bar(page).is_visible() and len(list(trash.glob("*.json"))) == 2

    page.locator("#s11x-trash input").click()                 # purge one: pick it in the trash list
    page.get_by_role("option", name=re.compile(ids[0])).click()
    page.locator("#s11x-purge").click()
    confirm_bar(page).get_by_text(f"确认永久删除会话 {ids[0]}").wait_for(timeout=15_000)
    page.locator("#s11x-confirm-yes").click()
    student.result("confirm", f"已永久删除会话 {ids[0]}")
    assert [path.name.split(".")[0] for path in trash.glob("*.json")] == [ids[1]]

    page.locator("#s11x-empty-trash").click()
    confirm_bar(page).get_by_text("确认清空回收站").wait_for(timeout=15_000)
    page.locator("#s11x-confirm-yes").click()
    notice = student.result("confirm", "已清空回收站")
    assert "释放了" in notice and list(trash.glob("*.json")) == [] and store.load(ids[2]) is not None
    page.locator("#s11x-trash-note").get_by_text("回收站是空的").wait_for(timeout=15_000)
    assert not confirm_bar(page).is_visible()
    shoot(page, f"trash-done-{width}-{scheme}.png")
    student.close()


@pytest.mark.parametrize(("width", "scheme"), [(1400, "light")])
def test_the_teacher_sees_the_redaction_counts_before_a_publish(browser, server, width, scheme):
    url, sessions = server
    teacher = Visitor(browser, url, width=width, scheme=scheme, query=f"?teacher={TEACHER}")
    teacher.open_explorer()
    store = space_store(sessions, teacher.space_id())
    session_id = store.create_session("课堂示例", [{"role": "user", "content": "联系 alice@example.com 或 13812345678"}])
    page = teacher.page
    page.locator("#s11x-refresh").click()
    teacher.pick_row(session_id)
    wait_until_quiet(page)   # the select event re-renders the teacher panel; a click during it is lost
    page.locator("#s11x-publish").click()
    bar = confirm_bar(page)
    bar.get_by_text("确认把会话").wait_for(timeout=30_000)
    assert "邮箱 ×1" in bar.inner_text() and "手机号 ×1" in bar.inner_text()
    # the bar is next to the button that asked (issue 42 item 3: it was 1,232 px above it)
    gap = page.evaluate("""() => { const b = document.querySelector('#s11x-publish').getBoundingClientRect();
        const c = document.querySelector('#s11x-confirm').getBoundingClientRect();
        return Math.max(c.top - b.bottom, b.top - c.bottom); }""")
    assert gap < 120, f"the confirm bar is {gap} px away from the publish button"
    shelf = Path(sessions) / "shelf"
    assert not (shelf / f"{session_id}.json").exists()       # nothing published yet
    shoot(page, f"confirm-publish-{width}-{scheme}.png")
    page.locator("#s11x-confirm-yes").click()
    teacher.result("confirm", "已脱敏并发布到共享书架")
    published = (shelf / f"{session_id}.json").read_bytes()
    assert b"alice@example.com" not in published and b"13812345678" not in published
    assert not bar.is_visible()
    teacher.close()


def test_the_explorer_tab_name_is_shared_with_the_walk_through():
    assert TAB == "🌳 会话树浏览器"
