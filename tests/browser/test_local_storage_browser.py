"""Issue 41 item 13: nothing of a session stays in the browser's storage (a classroom PC, the teacher's projector
laptop). gradio 6.31 keeps the last 100 runs' inputs and outputs of public endpoints in localStorage unless
launch(run_history=False); after a share review and a class view, the only keys left are our encrypted
BrowserState tokens, and no value holds a title, a message, a secret, a student's name or a space id."""

from __future__ import annotations

import re
import secrets
import sys
from pathlib import Path

import pytest

from browser_tabs import open_tab, serving, wait_until_quiet

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from share_trees import SECRETS, three_branches  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TAB = "🌳 会话树浏览器"
TEACHER = "t-" + secrets.token_hex(8)
STUDENT_NAME = "王小明同学"
# BrowserState writes its own storage key; gradio may keep a few settings of its own (theme, language): none of
# them may hold anything of a session, which the value check below makes sure of
OUR_KEYS = {"s11-space"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sessions = tmp_path_factory.mktemp("storage_sessions")
    with serving(sessions, teacher_secret=TEACHER) as (url, demo):
        yield demo, url, sessions


def storage(page) -> dict:
    return page.evaluate("""() => {
      const dump = (store) => Object.fromEntries(Array.from({ length: store.length }, (_, i) => store.key(i))
                                                  .map((key) => [key, store.getItem(key)]));
      return { local: dump(window.localStorage), session: dump(window.sessionStorage) };
    }""")


def assert_nothing_of_the_session_is_kept(kept: dict, texts: list[str]) -> None:
    assert kept["session"] == {} or not any(text in value for value in kept["session"].values() for text in texts)
    for key, value in kept["local"].items():
        assert not re.search(r"(?i)run|history|gradio-runs", key) or key in OUR_KEYS, key
        for text in texts:
            assert text not in key and text not in (value or ""), (key, text)
    assert OUR_KEYS <= set(kept["local"])   # the space token is there (encrypted), so the check did see storage


def test_a_share_review_leaves_nothing_in_the_browser(browser, server):
    from s11_session import SessionStore

    _, url, sessions = server
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(url + "/")
        open_tab(page, TAB)
        page.locator("#s11x-space").get_by_text("空间").wait_for(timeout=15_000)
        space = re.search(r"[0-9a-f]{16}", page.locator("#s11x-space").inner_text()).group(0)
        ids = three_branches(SessionStore(sessions / "spaces" / space))
        page.locator("#s11x-refresh").click()
        page.locator("#s11x-list").get_by_text(ids["b1"], exact=True).locator("visible=true").first.click()
        page.locator("#s11x-details").get_by_text(ids["b1"]).wait_for(timeout=15_000)
        page.locator("#s11x-share-tab > button.label-wrap").click()
        page.locator("#s11s-review").click()
        page.locator("#s11s-summary").get_by_text("找到").wait_for(timeout=15_000)
        page.locator("#s11s-table").get_by_text("4111 1111 1111 1111", exact=False).locator("visible=true").first \
            .wait_for(timeout=15_000)
        page.reload()   # what the next person at this PC finds
        page.get_by_role("tab").first.wait_for(timeout=30_000)
        texts = [*SECRETS.values(), "修复登录服务内存泄漏", "方案 B", "db01.corp.example", space, *ids.values()]
        assert_nothing_of_the_session_is_kept(storage(page), texts)
    finally:
        context.close()


def test_a_class_view_leaves_nothing_in_the_teachers_browser(browser, server):
    demo, url, _ = server
    spaces = demo.s11_spaces
    token = spaces.new_token()
    spaces.set_display_name(token, STUDENT_NAME)
    student = spaces.open(token)
    title = "学生的会话-" + secrets.token_hex(4)
    student.store.create_session(title, [{"role": "user", "content": "我的邮箱 bob@example.com"}])
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{url}/?teacher={TEACHER}")
        table = page.locator("#s11c-class")
        table.get_by_text(STUDENT_NAME).locator("visible=true").first.wait_for(timeout=30_000)
        page.locator("#s11c-refresh").click()   # the public /class_refresh endpoint: what run history recorded
        wait_until_quiet(page, timeout=5)   # that run has finished (not an assertion: storage has had time to fill)
        table.get_by_text(STUDENT_NAME).locator("visible=true").first.wait_for(timeout=30_000)
        table.get_by_text(STUDENT_NAME).locator("visible=true").first.click()
        page.locator("#s11c-student").get_by_text(title[:6]).first.wait_for(timeout=15_000)
        page.wait_for_function("!location.search.includes('teacher=')", timeout=30_000)   # it left the address bar
        kept = storage(page)
        assert_nothing_of_the_session_is_kept(kept, [STUDENT_NAME, title, "bob@example.com", student.space_id,
                                                     TEACHER])
    finally:
        context.close()
