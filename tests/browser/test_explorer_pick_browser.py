"""Issue 20, the last parts, in Debian's chromium: a click (or Enter) on a branch-map node selects it in place with
no navigation, at 1400 px (the diagram) and 390 px (the phone's text map), light and dark; the hidden box behind it
re-checks the space; hostile titles stay inert along the click path; too-large and wrong-type uploads are refused
in Chinese before gradio's English toast; a reload keeps the selected session.

Set S11_PICK_SCREENSHOTS=<folder> to also write the explorer after a map click at 1400 px and 390 px, light and dark.
"""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest
from test_explorer_browser import (
    HOSTILE_TITLE,
    MARKUP,
    Visitor,
    assert_all_requests_local,
    settle,
    space_store,
    with_demo,
)

from browser_tabs import click_message, eventually, fits_at, running_app
from conftest import REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow]

UPLOAD_LIMIT = 1024 * 1024   # a small per-file limit, so a too-large file is cheap to hand to the browser
LINK = re.compile(r"^\?session=[A-Za-z0-9_-]{1,64}$")
PICK_KEY = "s11-explorer-pick"   # the explorer's gr.BrowserState storage key (explorer_tab.py)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from s11_workbench.spaces import Limits

    sessions = tmp_path_factory.mktemp("pick_sessions")
    with running_app(sessions, limits=Limits(max_upload_bytes=UPLOAD_LIMIT)) as url:
        yield url, sessions


VIEWS = [("light", 1400), ("dark", 390)]   # both map layouts, both schemes


@pytest.fixture(scope="module", params=VIEWS, ids=[f"{scheme}-{width}" for scheme, width in VIEWS])
def view(request, browser, server):
    """One reader per screen, shared in file order by the tests that take `view` (a page load and a demo run cost
    seconds each): the 8.11 demo run and the explorer open. Each test adds to that space only what it checks, so
    counts are read from the store: (visitor, {message count: session id}, scheme, width)."""
    url, sessions = server
    scheme, width = request.param
    visitor, demo = with_demo(browser, url, sessions, width=width, scheme=scheme)
    yield visitor, demo, scheme, width
    visitor.close()


def map_links(page, width: int):
    """The map's node links a reader can see: the diagram's on a wide screen, the text map's on a phone."""
    if width >= 720:
        page.locator("#s11x-map svg[id^='mermaid']").first.wait_for(state="attached", timeout=15_000)
        return page.locator("#s11x-map svg a")
    return page.locator("#s11x-map p a")


def selected(page, session_id: str, timeout: float = 15_000) -> None:
    # the node's own id line: a child's details also name its parent ("inherited from <parent id>")
    page.locator("#s11x-details").get_by_text(f"🆔 {session_id}").wait_for(timeout=timeout)


def type_into_hidden_box(page, elem_id: str, value: str) -> None:
    """What a hostile page script (or a forged request) can do: write anything into the hidden box and fire it."""
    page.evaluate("""([id, value]) => {
        const box = document.querySelector(`#${id} textarea, #${id} input`);
        box.value = value;
        box.dispatchEvent(new Event("input", {bubbles: true}));
    }""", [elem_id, value])


def shoot(page, name: str) -> None:
    folder = os.environ.get("S11_PICK_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)
    page.wait_for_timeout(800)
    page.screenshot(path=str(Path(folder) / name), type="png", full_page=True)


def test_a_map_click_selects_the_node_in_place_and_the_box_behind_it_rechecks_the_space(view):
    visitor, demo, scheme, width = view
    page = visitor.page
    before, navigations = page.url, []

    def navigated(frame) -> None:
        if frame == page.main_frame:
            navigations.append(frame.url)

    def loaded(_) -> None:
        navigations.append("load")

    try:
        visitor.pick_row(demo[5])                            # the root: its map shows both branches
        links = map_links(page, width)
        links.filter(has_text="分支 B").first.wait_for(state="attached", timeout=15_000)
        hrefs = [links.nth(i).evaluate("a => a.getAttribute('href') || a.getAttribute('xlink:href')")
                 for i in range(links.count())]
        assert len(hrefs) == 3 and all(LINK.match(href) for href in hrefs), hrefs   # a copied link still works
        page.on("framenavigated", navigated)
        page.on("load", loaded)

        links.filter(has_text="分支 B").first.click()           # a click on branch B
        selected(page, demo[9])
        page.locator("#s11x-path").get_by_text("#9").wait_for(timeout=15_000)   # the path view shows it
        assert "分支 B" in page.locator("#s11x-details").inner_text()
        assert page.url == before and navigations == []

        link = map_links(page, width).filter(has_text="分支 A").first     # the keyboard: Enter on a focused link
        link.focus()
        page.keyboard.press("Enter")
        selected(page, demo[7])
        page.locator("#s11x-path").get_by_text("#7").wait_for(timeout=15_000)
        assert page.url == before and navigations == []
        shoot(page, f"explorer-map-pick-{width}-{scheme}.png")

        type_into_hidden_box(page, "s11x-map-pick", "0123456789ab#1")   # not in this visitor's space
        page.locator("#s11x-map-result").get_by_text("不在当前空间里").wait_for(timeout=15_000)
        type_into_hidden_box(page, "s11x-map-pick", "<img src=x onerror=alert(1)>#2")
        page.locator("#s11x-map-result").get_by_text("不合法").wait_for(timeout=15_000)
        assert page.locator("#s11x-map-result").locator(MARKUP).count() == 0
        assert demo[7] in page.locator("#s11x-details").inner_text()       # nothing changed
        assert page.url == before and navigations == []
        fits_at(page, [page.viewport_size["width"]])
        assert visitor.dialogs == [] and "Traceback" not in page.locator("body").inner_text()
        assert_all_requests_local(visitor.requests)
    finally:
        page.remove_listener("framenavigated", navigated)   # the page goes on to the next test
        page.remove_listener("load", loaded)


def test_hostile_titles_stay_inert_in_the_map_and_along_the_click(server, view):
    _, sessions = server
    visitor, _, scheme, width = view
    page = visitor.page
    visitor.open_explorer()
    from s11_session import SessionNode
    store = space_store(sessions, visitor.space_id())
    root = SessionNode(title=HOSTILE_TITLE, messages=[{"role": "user", "content": "<b>x</b>"}])
    store.save(root)
    child = store.fork(root.session_id, [{"role": "user", "content": "javascript:alert(2)"}], at=1,
                       title='javascript:alert(3) <a href="javascript:alert(4)">点我</a> ?session=x')
    page.locator("#s11x-refresh").click()
    count = len(store.list_sessions())   # the demo's 3 and these 2
    page.locator("#s11x-list-note").get_by_text(f"共 {count} 个会话").wait_for(timeout=15_000)
    visitor.pick_row(child.session_id)
    links = map_links(page, width)
    links.first.wait_for(state="attached", timeout=15_000)
    hrefs = [links.nth(i).evaluate("a => a.getAttribute('href') || a.getAttribute('xlink:href')")
             for i in range(links.count())]
    assert sorted(hrefs) == sorted(f"?session={sid}" for sid in (root.session_id, child.session_id)), hrefs
    assert page.locator("#s11x-map").locator(MARKUP + ", iframe").count() == 0
    assert page.locator("#s11x-map a[href^='javascript'], #s11x-map [onclick], #s11x-map [onerror]").count() == 0
    hostile_root = links.filter(has_text="根").first if width >= 720 else links.first
    hostile_root.click()
    selected(page, root.session_id)
    assert HOSTILE_TITLE in page.locator("#s11x-details").inner_text()
    assert page.locator("#s11x-map").locator(MARKUP).count() == 0
    assert page.locator("#s11x-map a[href^='javascript']").count() == 0
    assert visitor.dialogs == [] and "Syntax error" not in page.locator("body").inner_text()


def test_too_large_and_wrong_type_uploads_are_refused_in_chinese(view):
    visitor, _, scheme, width = view
    page = visitor.page
    visitor.open_explorer()
    visitor.action_tab("import")
    upload = page.locator("#s11x-upload input[type=file]")
    uploads_before = [u for u in visitor.requests if "/upload" in u]
    upload.set_input_files({"name": "太大了.jsonl", "mimeType": "application/jsonl",
                            "buffer": b"{}\n" * (UPLOAD_LIMIT // 3 + 1000)})
    result = page.locator("#s11x-import-result")
    result.get_by_text("上传上限").wait_for(timeout=15_000)
    text = result.inner_text()
    assert "1.0 MB" in text and "太大了.jsonl" in text and "超过" in text, text   # names the limit
    upload.set_input_files({"name": "笔记.txt", "mimeType": "text/plain", "buffer": b"hello"})
    result.get_by_text("只能导入").wait_for(timeout=15_000)
    text = result.inner_text()
    assert ".jsonl" in text and ".json" in text and "笔记.txt" in text, text      # names the suffixes
    page.wait_for_timeout(500)
    toasts = " ".join(page.locator(".toast-wrap, .toast-body").all_inner_texts())
    assert not re.search(r"[A-Za-z]{4,}", toasts.replace("gradio", "")), toasts   # no English toast
    body = page.locator("body").inner_text()
    assert "exceed" not in body and "Invalid file" not in body
    assert [u for u in visitor.requests if "/upload" in u] == uploads_before      # nothing was sent
    report = page.locator("#s11x-report textarea").input_value()
    assert report.startswith("⚠️") and "收到 笔记.txt" in report, report   # plain text: no Markdown escapes
    fits_at(page, [page.viewport_size["width"]])


def test_a_late_upload_check_never_wipes_the_import_result(browser, server, monkeypatch):
    """The server checks an uploaded file as soon as it arrives. A reader can click import before that check returns
    (a loaded test run did). The check's late answer must not wipe the import's result line, and an old problem line must go
    as soon as a new file is picked, not when the check comes back."""
    from s11_workbench.explorer import Explorer

    url, sessions = server
    entered, gate = threading.Event(), threading.Event()
    original = Explorer.check_upload

    def held_check(self, token, path):
        entered.set()
        gate.wait(30)              # the test lets it go once the import has answered
        return original(self, token, path)

    monkeypatch.setattr(Explorer, "check_upload", held_check)
    visitor = Visitor(browser, url)
    try:
        page = visitor.page
        visitor.open_explorer()
        visitor.action_tab("import")
        upload = page.locator("#s11x-upload input[type=file]")
        result = page.locator("#s11x-import-result")
        upload.set_input_files({"name": "笔记.txt", "mimeType": "text/plain", "buffer": b"hello"})
        result.get_by_text("只能导入").wait_for(timeout=15_000)

        good = (REPO / "examples" / "pi-v3-report-cache.jsonl").read_bytes()
        upload.set_input_files({"name": "报告.jsonl", "mimeType": "application/jsonl", "buffer": good})
        assert entered.wait(15), "the server never started checking the upload"
        # the old problem is gone, from the line and the report, while the check is still running
        line = "#s11x-import-result [data-testid=markdown]"
        page.wait_for_function(f"!document.querySelector('{line}').innerText.trim()", timeout=5_000)
        assert page.locator("#s11x-report textarea").input_value() == ""
        # no English "processing" overlay shows on the line while it checks (gradio keeps it, at opacity 0)
        assert page.evaluate("""() => { const tracker = document.querySelector(
            '#s11x-import-result [data-testid=status-tracker]');
            const style = tracker ? getComputedStyle(tracker) : null;
            return !style || style.display === 'none' || style.opacity === '0'; }""")
        visitor.press("#s11x-import")
        result.get_by_text("已导入 报告").wait_for(timeout=15_000)
        gate.set()                 # now the check answers, after the import
        page.wait_for_timeout(300)
        settle(page, "#s11x-import-result")
        assert "已导入 报告" in result.inner_text()
        assert visitor.dialogs == []
        assert space_store(sessions, visitor.space_id()).list_sessions() != []   # a fresh space: only the import
    finally:
        gate.set()
        visitor.close()


SHOWN_TRACKERS = """() => Array.from(document.querySelectorAll('[data-testid=status-tracker]'))
    .filter(tracker => !tracker.classList.contains('hide') && tracker.getBoundingClientRect().height > 0)
    .map(tracker => (tracker.closest('[id]') || {}).id || '?')"""


def test_an_import_on_its_way_shows_its_progress_on_the_import_report_alone(browser, server):
    """An event's "处理中" is drawn on the one component the reader waits on (gradio_fixes.progress_on_few): while the
    import's request is held back, the import report shows it and no other block of the page does."""
    url, sessions = server
    visitor = Visitor(browser, url)
    held, holding = [], [False]
    visitor.context.route(re.compile(r".*/gradio_api/queue/join.*"),
                          lambda route: held.append(route) if holding[0] else route.continue_())
    try:
        page = visitor.page
        visitor.open_explorer()
        visitor.action_tab("import")
        page.locator("#s11x-examples input").click()
        page.get_by_role("option").first.click()
        holding[0] = True
        visitor.press("#s11x-import-example")
        assert eventually(page, lambda: bool(held), timeout=15)
        page.wait_for_function(f"({SHOWN_TRACKERS})().length > 0", timeout=15_000)
        assert page.evaluate(SHOWN_TRACKERS) == ["s11x-report"]
        holding[0] = False
        for route in held:
            route.continue_()
        held.clear()
        page.locator("#s11x-import-result").get_by_text("已导入").wait_for(timeout=15_000)
        page.wait_for_function(f"({SHOWN_TRACKERS})().length === 0", timeout=15_000)
        assert space_store(sessions, visitor.space_id()).list_sessions() != []
    finally:
        for route in held:
            route.continue_()
        visitor.close()


def test_a_reload_keeps_the_selected_session(browser, server):
    url, sessions = server
    visitor, demo = with_demo(browser, url, sessions, width=1400)
    try:
        page = visitor.page
        changed = "([key, old]) => window.localStorage.getItem(key) !== old"
        visitor.pick_row(demo[5])
        page.wait_for_function(changed, arg=[PICK_KEY, None], timeout=15_000)
        first = page.evaluate("key => window.localStorage.getItem(key)", PICK_KEY)
        visitor.pick_row(demo[7])                    # branch A: not what a fresh page would show
        page.locator("#s11x-path").get_by_text("#7").wait_for(timeout=15_000)
        # the browser has written the new pick (encrypted, so only "it changed" can be seen)
        page.wait_for_function(changed, arg=[PICK_KEY, first], timeout=15_000)
        page.reload()
        page.get_by_role("tab").first.wait_for()
        visitor.open_explorer()
        selected(page, demo[7], timeout=20_000)
        page.locator("#s11x-path").get_by_text("#7").wait_for(timeout=15_000)
        assert "分支 A" in page.locator("#s11x-details").inner_text()
        assert visitor.dialogs == []
    finally:
        visitor.close()


def in_view(page, selector: str) -> bool:
    return page.evaluate("""(selector) => { const r = document.querySelector(selector).getBoundingClientRect();
        return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; }""", selector)


def fork_pick(page) -> str:
    return page.locator("#s11x-fork-at textarea, #s11x-fork-at input").first.input_value()


def shoot_all(page, name: str) -> None:
    """The explorer at 1400 and 390 px, light and dark, into S11_FORK_SCREENSHOTS (if set); the viewport is kept."""
    folder = os.environ.get("S11_FORK_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    size = page.viewport_size
    for width in (1400, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.locator("#s11x-fork-buttons").evaluate("e => e.scrollIntoView({block: 'nearest'})")
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.wait_for_timeout(300)
            page.screenshot(path=str(Path(folder) / f"{name}-{width}-{scheme}.png"))
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(size)


def test_a_deep_link_keeps_its_message_as_the_fork_position_and_a_reload_refuses_instead_of_0(server, view):
    """Issue 42 items 1 and 3: ?session=&m=4 opens on the explorer with message 4 picked (the old number box read 0
    and the fork button made an empty branch); a click on a message keeps the fork button in view; a map click
    brings the conversation into view; after a reload nothing is picked and the fork is refused in Chinese.
    The page is never wider than the window after any of these."""
    url, sessions = server
    visitor, demo, scheme, width = view
    page = visitor.page
    store = space_store(sessions, visitor.space_id())
    page.goto(f"{url}/?session={demo[9]}&m=4")
    selected(page, demo[9], timeout=30_000)
    page.locator("#s11x-fork").get_by_text("第 4 条").wait_for(timeout=15_000)
    assert fork_pick(page) == f"{demo[9]}#4" and "已选中第 4 条" in page.locator("#s11x-picked").inner_text()
    visitor.press("#s11x-fork")
    child = re.search(r"新会话 ([0-9a-f]{12})", visitor.result("fork", "已在第 4 条之后分叉")).group(1)
    assert store.load(child).messages == store.load(demo[9]).messages[:4]
    assert fork_pick(page) == "" and "在选中的消息之后分叉" in page.locator("#s11x-fork").inner_text()
    fits_at(page, [page.viewport_size["width"]])

    visitor.pick_row(demo[9])
    click_message(page, 6)   # message 6 of branch B
    page.locator("#s11x-fork").get_by_text("第 6 条").wait_for(timeout=15_000)
    # the control is moved into view once its note has grown
    assert eventually(page, lambda: in_view(page, "#s11x-fork") and in_view(page, "#s11x-picked")), \
        "the fork button is out of view"
    fits_at(page, [page.viewport_size["width"]])
    if width == 1400:
        shoot_all(page, "explorer-fork-picked")

    links = map_links(page, width)
    links.filter(has_text="分支 A").first.scroll_into_view_if_needed()
    assert not in_view(page, "#s11x-path")
    kept = page.evaluate("key => window.localStorage.getItem(key)", PICK_KEY)
    links.filter(has_text="分支 A").first.click()
    selected(page, demo[7])
    page.wait_for_function("([key, old]) => window.localStorage.getItem(key) !== old", arg=[PICK_KEY, kept],
                           timeout=15_000)   # the browser has stored the new selection before the reload
    def path_top() -> float:
        return page.evaluate("document.querySelector('#s11x-path').getBoundingClientRect().top")

    eventually(page, lambda: -2 <= path_top() < 900)   # a smooth scroll
    top = path_top()
    assert -2 <= top < 900, f"after a map click the conversation is at {top} px"   # (sub-pixel rounding)
    fits_at(page, [page.viewport_size["width"]])

    page.goto(f"{url}/")   # a reload of the page without the link (reloading the link picks message 4 again)
    page.get_by_role("tab").first.wait_for()
    visitor.open_explorer()
    selected(page, demo[7], timeout=20_000)                 # the selection is restored …
    assert fork_pick(page) == ""                            # … the position is not, and it is not 0
    before = sorted(s["session_id"] for s in store.list_sessions())
    visitor.press("#s11x-fork")
    visitor.result("fork", "分叉位置还没选")
    assert sorted(s["session_id"] for s in store.list_sessions()) == before   # nothing forked
    fits_at(page, [page.viewport_size["width"]])
    assert visitor.dialogs == []


def test_a_deep_link_is_on_the_explorer_tab_before_the_server_has_answered_anything(browser, server):
    """Issue 42 item 3: a ?session= link used to switch tabs only when the page-load event came back, so the 8.11 tab
    showed for 1.5-10 s on a busy server. With every event request held back, the explorer tab is already selected
    and the 8.11 tab's panel is not shown (which session the link names does not matter for that)."""
    url, _ = server
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    held = []
    context.route(re.compile(r".*/gradio_api/(queue/join|run/).*"), lambda route: held.append(route))
    try:
        page = context.new_page()
        page.goto(f"{url}/?session=0123456789ab")
        page.wait_for_function("""() => [...document.querySelectorAll('button[role=tab]')].some(
            tab => tab.textContent.includes('会话树浏览器') && tab.getAttribute('aria-selected') === 'true')""",
                               timeout=15_000)
        for _ in range(150):   # the page-load event is on its way (held): the server has answered nothing yet
            if held:
                break
            page.wait_for_timeout(100)
        assert held, "the page sent no event, so nothing was held back and the check proves nothing"
        assert page.get_by_role("tab", name="🌳 会话树浏览器").get_attribute("aria-selected") == "true"
        assert not page.get_by_role("button", name="运行主会话").is_visible()   # the 8.11 tab is not on screen
    finally:
        for route in held:
            route.continue_()
        context.close()


def test_the_explorer_opened_before_the_page_has_its_space_is_drawn_once_the_space_arrives(browser, server):
    """The explorer is drawn when its tab opens, not at page load. A reader who opens it before the page has been
    given its space (a first visit, the server busy) sends a tab event without a token, which can draw nothing;
    when the space arrives, the page sees that the explorer is the open tab and draws it, with no further click."""
    url, _ = server
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    held, holding = [], [True]
    context.route(re.compile(r".*/gradio_api/(queue/join|run/).*"),
                  lambda route: held.append(route) if holding[0] else route.continue_())
    try:
        page = context.new_page()
        page.goto(url)
        explorer_tab = page.get_by_role("tab", name="🌳 会话树浏览器")
        explorer_tab.click(timeout=15_000)
        for _ in range(150):   # the page's first event (the one that hands out the space) is held back
            if len(held) >= 2:
                break
            page.wait_for_timeout(100)
        assert held and explorer_tab.get_attribute("aria-selected") == "true"
        assert "空间" not in page.locator("#s11x-space").inner_text()   # nothing drawn yet
        holding[0] = False
        for route in held:
            route.continue_()
        held.clear()
        page.locator("#s11x-space").get_by_text("空间").wait_for(timeout=20_000)
        assert "8.11" not in page.locator("#s11x-notice").inner_text()
    finally:
        for route in held:
            route.continue_()
        context.close()
