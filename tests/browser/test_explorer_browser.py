"""The session explorer in Debian's chromium: a reader's walk through it, a second student, the teacher, deep links,
hostile text, and no request leaving 127.0.0.1; forking from a message, branch names, sibling switching, full-text
search and message links at 1400 px and 390 px, light and dark (issue 20).

Set S11_EXPLORER_SCREENSHOTS=docs to also write docs/explorer-light.png, docs/explorer-dark.png (1400 px) and
docs/explorer-phone.png (390 px) during the run.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from browser_tabs import click_message, eventually, fits_at, looks, running_app, wait_until_quiet
from conftest import tls_context

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TAB = "🌳 会话树浏览器"
TEACHER = "explorer-browser-teacher-" + secrets.token_hex(8)
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
LOCAL_SCHEMES = {"data", "blob", "about"}
HOSTILE_TITLE = '"]; click n0 call alert(1) <b>粗</b>'
HOSTILE_TEXT = "<script>alert(1)</script> <img src=x onerror=alert(2)> ${7*7} {{x}}\n```py\nunclosed"
MARKUP = "script, img, b, iframe, object, embed"


# ── the app, the browser, a page ──────────────────────────────────────────────────────────
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The whole workbench on a fresh sessions folder with a known teacher secret: (url, sessions_dir)."""
    sessions = tmp_path_factory.mktemp("explorer_sessions")
    with running_app(sessions, teacher_secret=TEACHER) as url:
        yield url, sessions


class Visitor:
    """One browser context (one student): the page, every request it made, every queued event body it sent."""

    def __init__(self, browser, url: str, *, width: int = 1400, scheme: str = "light", query: str = ""):
        self.context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme,
                                           accept_downloads=True)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.events: list[dict] = []
        self.dialogs: list[str] = []
        self.page.on("request", self._record)
        self.page.on("dialog", lambda dialog: (self.dialogs.append(dialog.message), dialog.dismiss()))
        self.page.goto(f"{url}/{query}")
        self.page.get_by_role("tab").first.wait_for()

    def _record(self, request) -> None:
        self.requests.append(request.url)
        if request.method == "POST" and urlparse(request.url).path.endswith("/gradio_api/queue/join"):
            try:
                self.events.append(request.post_data_json)
            except ValueError:
                pass

    def open_explorer(self) -> None:
        # every tab keeps its label in sight, on a phone too (no icon-only "More tabs" menu)
        self.page.get_by_role("tab", name=TAB).click(timeout=10_000)
        self.page.locator("#s11x-space").get_by_text("空间").wait_for(timeout=15_000)

    def space_id(self) -> str:
        return re.search(r"[0-9a-f]{16}", self.page.locator("#s11x-space").inner_text()).group(0)

    def notice(self, text: str, timeout: float = 15_000) -> str:
        self.page.locator("#s11x-notice").get_by_text(text).wait_for(timeout=timeout)
        return self.page.locator("#s11x-notice").inner_text()

    def press(self, selector: str, *, double: bool = False) -> None:
        """Click a control the way a reader does: brought to the middle of the screen, looked at until the page
        has stopped moving, then clicked where it is. (Playwright's own click re-scrolls the page to the control's
        bottom edge when the page moves under it; in CI that once left the result line below the window.)"""
        button = self.page.locator(selector)
        button.evaluate("element => element.scrollIntoView({block: 'center'})")
        settle(self.page, selector)
        assert button.is_enabled() and in_viewport(self.page, selector), (selector, box(self.page, selector))
        x, y, hit = self.page.evaluate("""(selector) => {
            const r = document.querySelector(selector).getBoundingClientRect();
            const x = r.left + r.width / 2, y = r.top + r.height / 2, e = document.elementFromPoint(x, y);
            return [x, y, e && e.closest(selector) ? '' : (e ? e.outerHTML.slice(0, 200) : 'nothing')]; }""", selector)
        assert hit == "", (selector, "is covered by", hit)
        self.page.mouse.dblclick(x, y) if double else self.page.mouse.click(x, y)

    def result(self, area: str, text: str, timeout: float = 15_000) -> str:
        """The result line under the control that caused it: it says `text` and sits inside the viewport."""
        line = self.page.locator(f"#s11x-{area}-result")
        line.get_by_text(text).wait_for(timeout=timeout)
        settle(self.page, f"#s11x-{area}-result")   # the chat, list and map above re-render after the result
        assert in_viewport(self.page, f"#s11x-{area}-result"), (area, box(self.page, f"#s11x-{area}-result"))
        return line.inner_text()

    def pick_row(self, session_id: str) -> None:
        """Click the session's row and wait until the details show it: its own id line, since a child's details
        name its parent too (a parent picked while its child is shown would otherwise count as picked at once)."""
        self.page.locator("#s11x-list").get_by_text(session_id, exact=True).locator("visible=true").first.click()
        self.page.locator("#s11x-details").get_by_text(f"🆔 {session_id}").wait_for(timeout=15_000)

    def action_tab(self, name: str) -> None:
        """Open one action area (stacked accordions, each with its label in sight); open ones stay open."""
        label = self.page.locator(f"#s11x-{name}-tab > button.label-wrap")
        if "open" not in (label.get_attribute("class") or ""):
            label.click()
        label.scroll_into_view_if_needed()

    def cannot_change(self) -> bool:
        """Resume and delete are greyed out (read-only source); each sits in its own action tab."""
        self.action_tab("resume")
        resume = self.page.locator("#s11x-resume").is_disabled()
        self.action_tab("trash")
        delete = self.page.locator("#s11x-delete").is_disabled()
        self.action_tab("fork")
        return resume and delete

    def listed_ids(self) -> set[str]:
        cells = self.page.locator("#s11x-list .body-cell").all_inner_texts()
        return {cell.strip() for cell in cells if re.fullmatch(r"[0-9a-f]{12}", cell.strip())}

    def token(self) -> str:
        """This visitor's space token, as its own page sent it with an explorer event."""
        return next(body["data"][0] for body in reversed(self.events) if body.get("data")
                    and isinstance(body["data"][0], str) and "." in body["data"][0])

    def wait_for_token(self, timeout: float = 15) -> str:
        """The token, once the page has sent an event that carries it."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.token()
            except StopIteration:
                if time.monotonic() > deadline:
                    raise AssertionError(f"no explorer event with a token in {timeout} s") from None
                self.page.wait_for_timeout(100)

    def close(self) -> None:
        self.context.close()


def box(page, selector: str) -> list[float]:
    return page.evaluate(f"""() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();
        return [r.top, r.bottom, window.innerHeight]; }}""")


def settle(page, selector: str) -> None:
    """Wait until no Gradio event is pending on the page and `selector` has kept its place for 0.4 s (a page under
    load finishes drawing later, and a fixed pause was sometimes too short)."""
    page.wait_for_function(
        """(selector) => {
            const top = Math.round(document.querySelector(selector).getBoundingClientRect().top);
            const busy = document.querySelector('.wrap.full:not(.hide), .wrap.minimal:not(.hide)');
            const seen = window.__s11_settle || (window.__s11_settle = {top: null, since: 0});
            if (busy || top !== seen.top) { seen.top = busy ? null : top; seen.since = performance.now(); return false; }
            return performance.now() - seen.since >= 400;
        }""", arg=selector, polling=100, timeout=15_000)
    page.evaluate("delete window.__s11_settle")


def in_viewport(page, selector: str) -> bool:
    top, bottom, height = box(page, selector)
    return bottom > top and top >= 0 and bottom <= height


def no_raw_markdown(page) -> None:
    """No element shows Markdown's ** (what the reader would see if Markdown were printed, not rendered)."""
    for where in ("#s11x-path", "#s11x-details", "#s11x-tree", "#s11x-list", "#s11x-map", "#s11x-picked",
                  "#s11x-sibling-text", "#s11x-hits"):
        text = page.locator(where).inner_text() if page.locator(where).count() else ""
        assert "**" not in text, (where, text[:300])


def assert_all_requests_local(requests: list[str]) -> None:
    foreign = [url for url in requests
               if urlparse(url).scheme not in LOCAL_SCHEMES and urlparse(url).hostname not in LOCAL_HOSTS]
    assert requests and foreign == []


def space_store(sessions: Path, space_id: str):
    from s11_session import SessionStore
    return SessionStore(sessions / "spaces" / space_id)


def with_demo(browser, url: str, sessions: Path, **options) -> tuple[Visitor, dict]:
    """A visitor who ran the 8.11 demo and opened the explorer: (visitor, {message count: session id})."""
    visitor = Visitor(browser, url, **options)
    page = visitor.page
    page.get_by_role("button", name="运行主会话").click()
    page.locator("#s11-file-3 pre").first.wait_for(timeout=30_000)
    visitor.open_explorer()
    page.locator("#s11x-list-note").get_by_text("共 3 个会话").wait_for(timeout=15_000)
    store = space_store(sessions, visitor.space_id())
    return visitor, {s["message_count"]: s["session_id"] for s in store.list_sessions()}


def digest(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def replay(url: str, body: dict) -> dict:
    """Send one queued event the way the page does and wait for its result (a fresh page session)."""
    import httpx
    body = {**body, "session_hash": secrets.token_hex(8)}
    joined = httpx.post(f"{url}/gradio_api/queue/join", json=body, timeout=30, verify=tls_context())
    assert joined.status_code == 200, joined.text
    event_id = joined.json()["event_id"]
    with httpx.stream("GET", f"{url}/gradio_api/queue/data", params={"session_hash": body["session_hash"]},
                      timeout=30, verify=tls_context()) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("event_id") == event_id and message.get("msg") == "process_completed":
                    return message
    raise AssertionError(f"no result for event {body['fn_index']}")


def shoot(page, name: str) -> None:
    folder = os.environ.get("S11_EXPLORER_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)
    page.wait_for_timeout(800)
    bottom = page.evaluate("() => document.querySelector('#s11x-map-accordion').getBoundingClientRect().bottom"
                           " + window.scrollY")
    width = page.viewport_size["width"]
    page.screenshot(path=str(Path(folder) / name), type="png", full_page=True,
                    clip={"x": 0, "y": 0, "width": width, "height": bottom + 16})


# ── the walk-through ───────────────────────────────────────────────────────────────────────
@pytest.fixture(scope="module")
def walk(browser, server):
    """Student A: demo click → explorer → fork at message 3 → resume → export → delete → restore → import.
    Yields what the later tests need (A stays open: the second student and the teacher replay against it)."""
    url, sessions = server
    a, demo = with_demo(browser, url, sessions)
    page = a.page
    store = space_store(sessions, a.space_id())
    assert a.listed_ids() == set(demo.values())

    a.pick_row(demo[9])                                   # branch B, the resumed one
    page.locator("#s11x-path").get_by_text("#9").wait_for()
    assert "◀ 活动端" in page.locator("#s11x-tree").inner_text()
    page.locator("#s11x-path").get_by_role("button", name="清空").click()   # the chatbot's own "clear" button (named in Chinese by aria_zh.js) redraws
    page.locator("#s11x-path").get_by_text("#9").wait_for()
    assert store.load(demo[9]) is not None and len(store.load(demo[9]).messages) == 9
    click_message(page, 3)   # pick message 3 in the path view
    page.locator("#s11x-fork").get_by_text("第 3 条").wait_for()   # the button says where it forks
    page.locator("#s11x-fork-text textarea").fill("换个思路：先加监控")
    a.press("#s11x-fork")
    fork_id = re.search(r"新会话 ([0-9a-f]{12})", a.result("fork", "已在第 3 条之后分叉")).group(1)
    page.locator("#s11x-path").get_by_text("换个思路：先加监控").wait_for()
    assert fork_id in page.locator("#s11x-tree").inner_text() and fork_id in a.listed_ids()
    assert page.locator("#s11x-fork-text textarea").input_value() == ""   # the form cleared after success
    assert page.locator("#s11x-fork-at textarea, #s11x-fork-at input").first.input_value() == ""   # the pick too

    a.action_tab("resume")
    page.locator("#s11x-resume-text textarea").fill("监控上线后再看内存曲线")
    a.press("#s11x-resume")
    a.result("resume", "已恢复并续写保存")
    page.locator("#s11x-path").get_by_text("监控上线后再看内存曲线").wait_for()
    assert [m["content"] for m in store.load(fork_id).messages[3:]] == ["换个思路：先加监控", "监控上线后再看内存曲线"]

    a.action_tab("export")
    a.press("#s11x-export")
    a.result("export", "已导出会话")
    downloads = {}
    for kind in ("md", "html"):
        button = page.locator(f"#s11x-download-{kind}")
        page.wait_for_function(f"!document.querySelector('#s11x-download-{kind}').disabled")
        with page.expect_download(timeout=15_000) as info:
            button.click()
        downloads[kind] = Path(info.value.path()).read_text(encoding="utf-8")
    assert "监控上线后再看内存曲线" in downloads["md"] and "监控上线后再看内存曲线" in downloads["html"]
    assert "会话导出" in page.locator("#s11x-preview").inner_text()

    a.action_tab("trash")
    a.press("#s11x-delete")
    a.result("trash", "移进回收站")
    page.wait_for_function(f"!document.querySelector('#s11x-list').innerText.includes('{fork_id}')")
    assert store.load(fork_id) is None
    page.locator("#s11x-trash input").click()
    option = page.get_by_role("option", name=re.compile(fork_id))
    assert re.search(r"· \d+(\.\d)? (KB|字节) · 删除于 ", option.inner_text())   # title, size and when
    option.click()
    a.press("#s11x-restore")
    a.result("trash", "已从回收站取回")
    assert fork_id in a.listed_ids() and len(store.load(fork_id).messages) == 5

    a.action_tab("import")
    a.press("#s11x-import-example")
    a.result("import", "已导入")
    report = page.locator("#s11x-report textarea").input_value()
    tree = page.locator("#s11x-tree").inner_text()
    assert "导入" in report and tree.count("条") >= 2
    assert len(store.list_sessions()) > 4

    import s11_import

    # an upload too: gradio keeps it in its upload folder; the name is only ever shown as text
    pi_example = next(path for path in s11_import.list_examples() if "pi" in os.path.basename(path))
    page.locator("#s11x-upload input[type=file]").set_input_files(
        {"name": "报告 ${7*7} {{x}} <i>粗.jsonl", "mimeType": "application/jsonl", "buffer": Path(pi_example).read_bytes()})
    page.locator("#s11x-upload").get_by_text(".jsonl").first.wait_for(timeout=15_000)
    before_upload = len(store.list_sessions())
    a.press("#s11x-import")
    a.result("import", "已导入 报告")   # gradio itself strips markup characters from upload names; what is left is text
    assert page.locator("#s11x-import-result i").count() == 0 and len(store.list_sessions()) > before_upload
    # the fresh import is the first tree of the list, and it is selected
    picked = re.search(r"[0-9a-f]{12}", page.locator("#s11x-details code").first.inner_text()).group(0)
    root = store.lineage(picked)[0]["session_id"]
    assert root in page.locator("#s11x-list .body-cell").nth(1).inner_text()
    yield {"a": a, "url": url, "sessions": sessions, "store": store, "demo": demo, "fork_id": fork_id}
    a.close()


def test_a_reader_walks_demo_fork_resume_export_delete_restore_import(walk):
    a = walk["a"]
    assert "Traceback" not in a.page.locator("body").inner_text()
    assert a.dialogs == []
    assert_all_requests_local(a.requests)


def test_another_student_sees_none_of_it_and_replayed_requests_are_refused(browser, walk):
    a, url, sessions = walk["a"], walk["url"], walk["sessions"]
    b = Visitor(browser, url)
    try:
        b.open_explorer()
        b.page.locator("#s11x-list-note").get_by_text("共 0 个会话").wait_for(timeout=15_000)
        assert b.space_id() != a.space_id() and b.listed_ids() == set()
        b.page.locator("#s11x-refresh").click()            # one event of B's own, to learn its token
        token_b = b.wait_for_token()
        a_folder = sessions / "spaces" / a.space_id()
        before = digest(a_folder)
        a_ids = {s["session_id"] for s in walk["store"].list_sessions()}
        import httpx
        config = httpx.get(f"{url}/config", timeout=10, verify=tls_context()).json()
        names = {dep["id"]: dep.get("api_name") for dep in config["dependencies"]}
        list_id = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "s11x-list")
        list_at = next(dep for dep in config["dependencies"] if dep.get("api_name") == "explorer_refresh")[
            "outputs"].index(list_id)
        # every event A's page sent with A's token, except imports (B importing an example into B's own space is fine)
        replays = [body for body in a.events if body.get("data") and body["data"][0] == a.token()
                   and not str(names.get(body["fn_index"])).startswith("explorer_import")]
        assert {"explorer_fork", "explorer_resume", "explorer_export", "explorer_delete", "explorer_restore"} <= {
            names.get(body["fn_index"]) for body in replays}
        for body in replays:
            answer = replay(url, {**body, "data": [token_b, *body["data"][1:]]})
            output = json.dumps(answer.get("output", {}), ensure_ascii=False)
            # a refusal is either our ⚠️ notice or gradio's own check of a choice the page never offered
            assert answer.get("success") or "not in the list of choices" in output, output[:500]
            sent = set(re.findall(r"[0-9a-f]{12}", json.dumps(body["data"]) + json.dumps(body.get("event_data"))))
            data = answer.get("output", {}).get("data") or []
            table = json.dumps(data[list_at] if len(data) > list_at else None)
            assert not {sid for sid in a_ids if sid in output} - sent, output[:500]   # only what B itself sent
            assert not any(sid in table for sid in a_ids), table[:500]
            assert "Traceback" not in output
        assert digest(a_folder) == before
        b_ids = {s["session_id"] for s in space_store(sessions, b.space_id()).list_sessions()}
        assert b_ids & a_ids == set()
        b.page.goto(f"{url}/?session={walk['fork_id']}")   # A's deep link opened in B's browser
        b.page.locator("#s11x-notice").get_by_text("不在你的空间里").wait_for(timeout=15_000)
        b.page.wait_for_timeout(3_000)   # the warning stays (it used to flash for ~70 ms and vanish)
        assert "不在你的空间里" in b.page.locator("#s11x-notice").inner_text()
        assert b.page.locator("#s11x-notice").is_visible()
        assert_all_requests_local(b.requests)
    finally:
        b.close()


def test_the_teacher_sees_both_spaces_read_only_and_publishes_for_everyone(browser, walk):
    a, url = walk["a"], walk["url"]
    b = Visitor(browser, url)
    b.open_explorer()
    teacher = Visitor(browser, url, query=f"?teacher={TEACHER}")
    try:
        teacher.open_explorer()
        panel = teacher.page.locator("#s11x-teacher")
        panel.wait_for(timeout=15_000)
        # the students by name (none given here: the space's first six characters), picked from a dropdown
        teacher.page.locator("#s11x-student input").click()
        options = teacher.page.locator("#s11x-student").get_by_role("option")
        options.first.wait_for(timeout=15_000)
        listed = options.all_inner_texts()
        assert any(a.space_id()[:6] in o for o in listed) and any(b.space_id()[:6] in o for o in listed), listed
        assert not any(teacher.space_id()[:6] in o for o in listed), listed   # not the teacher's own space
        options.filter(has_text=a.space_id()[:6]).first.click()
        teacher.page.locator("#s11x-space").get_by_text("学生空间").wait_for(timeout=15_000)
        branch_b = walk["demo"][9]
        teacher.pick_row(branch_b)
        assert teacher.cannot_change()
        teacher.press("#s11x-publish")
        teacher.page.locator("#s11x-confirm-text").get_by_text("确认把会话").wait_for(timeout=15_000)
        teacher.press("#s11x-confirm-yes")   # publishing shows the redaction counts first
        teacher.result("confirm", "已脱敏并发布到共享书架")

        for student in (a, b):
            page = student.page
            page.locator("#s11x-source").get_by_text("共享书架").click()
            page.locator("#s11x-space").get_by_text("共享书架").wait_for(timeout=15_000)
            student.pick_row(branch_b)
            assert student.cannot_change()
            click_message(page, 4)   # a click picks the position
            page.locator("#s11x-fork").get_by_text("第 4 条").wait_for()
            student.press("#s11x-fork")
            copy_id = re.search(r"新会话 ([0-9a-f]{12})", student.result("fork", "已在第 4 条之后分叉")).group(1)
            page.locator("#s11x-space").get_by_text("我的空间").wait_for()
            assert copy_id in student.listed_ids()
        from s11_session import SessionStore
        shelf = SessionStore(walk["sessions"] / "shelf")
        assert {s["session_id"] for s in shelf.list_sessions()} >= {branch_b}
        assert all(len(shelf.load(s["session_id"]).messages) in (5, 9) for s in shelf.list_sessions())
        assert "s11x-teacher" not in b.page.content() or not b.page.locator("#s11x-teacher").is_visible()
        wrong = Visitor(browser, url, query="?teacher=guess")
        wrong.open_explorer()
        assert not wrong.page.locator("#s11x-teacher").is_visible()
        wrong.close()
        for visitor in (b, teacher):
            assert_all_requests_local(visitor.requests)
    finally:
        b.close()
        teacher.close()


def test_a_deep_link_opens_the_explorer_on_that_session(browser, walk):
    a = walk["a"]
    state = a.context.storage_state()
    context = browser.new_context(storage_state=state, viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.goto(f"{walk['url']}/?session={walk['fork_id']}")
        page.locator("#s11x-details").get_by_text(walk["fork_id"]).wait_for(timeout=20_000)
        assert page.locator("#s11x-details").is_visible()      # the explorer tab was switched to
        page.locator("#s11x-path").get_by_text("监控上线后再看内存曲线").wait_for()
        # a message link: that message is highlighted and scrolled into the path view
        page.goto(f"{walk['url']}/?session={walk['fork_id']}&m=2")
        pinned = page.locator("#s11x-path").get_by_text("链接指向这条")
        pinned.wait_for(timeout=20_000)
        assert "📍 #2" in page.locator("#s11x-path").inner_text()
        assert scrolled_inside(page, pinned, "#s11x-path")
    finally:
        context.close()


def scrolled_inside(page, locator, container: str) -> bool:
    """inside(), once a smooth scroll has had up to 5 s to bring the element there."""
    return eventually(page, lambda: inside(page, locator, container))


def inside(page, locator, container: str) -> bool:
    """The element is drawn within the visible part of its scrolling container (and of the window)."""
    inner = locator.first.bounding_box()
    outer = page.locator(container).bounding_box()
    return inner is not None and outer["y"] <= inner["y"] and inner["y"] + min(inner["height"], 40) <= outer["y"] + \
        outer["height"] and inner["y"] >= 0


# The phone, dark (S11_ALL_LOOKS=1 adds the wide screen, light): the scheme changes colours, not the flow
# (test_explorer_pick_browser's map click runs at both, and the walk above at 1400 px).
READER_VIEWS = looks(("dark", 390), ("light", 1400))


@pytest.fixture(scope="module", params=READER_VIEWS, ids=[f"{scheme}-{width}" for scheme, width in READER_VIEWS])
def reader(request, browser, server):
    """One reader per screen who ran the 8.11 demo and opened the explorer, shared in file order by the two tests
    below (a page load and a demo run cost seconds each): (visitor, {message count: session id}, scheme, width)."""
    url, sessions = server
    scheme, width = request.param
    visitor, demo = with_demo(browser, url, sessions, width=width, scheme=scheme)
    yield visitor, demo, scheme, width
    visitor.close()


def test_a_reader_forks_from_message_3_switches_branches_and_finds_a_tool_result(server, reader):
    _, sessions = server
    visitor, demo, scheme, width = reader
    page = visitor.page
    store = space_store(sessions, visitor.space_id())
    visitor.pick_row(demo[9])
    page.locator("#s11x-path").get_by_text("#9").wait_for()
    # after the 8.11 demo the tree and the map name A and B with what each adds
    tree = page.locator("#s11x-tree").inner_text()
    assert "分支 A" in tree and "方案 A：为 cache_store" in tree and "分支 B" in tree and "方案 B：改用" in tree
    page.locator("#s11x-map svg[id^='mermaid']").first.wait_for(state="attached", timeout=15_000)
    shown_map = page.locator("#s11x-map").inner_text()   # only what is visible: the diagram, or the phone's text
    assert "分支 A" in shown_map and "方案 A" in shown_map and "分支 B" in shown_map and "方案 B" in shown_map
    assert map_text_px(page) >= 12
    # fork from message 3 by acting on it; a double click makes one fork
    click_message(page, 3)
    page.locator("#s11x-fork").get_by_text("第 3 条").wait_for()
    visitor.press("#s11x-fork", double=True)
    visitor.result("fork", "已在第 3 条之后分叉")
    wait_until_quiet(page)   # a second fork from the double click would be pending or drawing now
    children = [s for s in store.list_sessions() if s["parent_id"] == demo[9]]
    assert len(children) == 1, children
    child, parent = store.load(children[0]["session_id"]), store.load(demo[9])
    assert child.fork_point == 3 and child.messages == parent.messages[:3]
    # sibling switching at the fork point: branch A ⇄ branch B
    visitor.pick_row(demo[7])
    page.locator("#s11x-sibling-text").get_by_text("1/2").wait_for(timeout=15_000)
    page.locator("#s11x-sibling-next").click()
    page.locator("#s11x-sibling-text").get_by_text("2/2").wait_for(timeout=15_000)
    assert demo[9] in page.locator("#s11x-details").inner_text()
    # an imported transcript: a word from a tool result is found and the click lands on that message
    visitor.action_tab("import")
    page.locator("#s11x-examples input").click()
    page.get_by_role("option", name="claude-code-rate-limit.jsonl").click()
    visitor.press("#s11x-import-example")
    visitor.result("import", "已导入")
    no_raw_markdown(page)
    page.locator("#s11x-search input, #s11x-search textarea").first.fill("verify_password")
    page.locator("#s11x-search input, #s11x-search textarea").first.press("Enter")
    page.locator("#s11x-hits-note").get_by_text("消息正文里找到").wait_for(timeout=15_000)
    page.locator("#s11x-hits .body-cell").nth(2).click()   # the context cell of the first hit
    pinned = page.locator("#s11x-path").get_by_text("链接指向这条")
    pinned.wait_for(timeout=15_000)
    page.locator("#s11x-path").scroll_into_view_if_needed()
    assert scrolled_inside(page, pinned, "#s11x-path")
    if "verify_password" not in page.locator("#s11x-path").inner_text():   # a long result stays folded
        pinned.first.click()
    page.locator("#s11x-path").get_by_text("verify_password").first.wait_for(timeout=5_000)
    no_raw_markdown(page)
    fits_at(page)
    # the export preview of this transcript has long lines (issue 42 item 2: it widened a phone's page to 766 px)
    visitor.action_tab("export")
    visitor.press("#s11x-export")
    visitor.result("export", "已导出会话")
    page.locator("#s11x-preview").get_by_text("会话导出").first.wait_for(timeout=15_000)
    fits_at(page)
    if os.environ.get("S11_EXPLORER_SCREENSHOTS"):
        page.locator("#s11x-preview").scroll_into_view_if_needed()
        page.screenshot(path=str(Path(os.environ["S11_EXPLORER_SCREENSHOTS"]) / f"export-{width}-{scheme}.png"))
    assert visitor.dialogs == [] and "Traceback" not in page.locator("body").inner_text()
    assert_all_requests_local(visitor.requests)


def map_text_px(page) -> float:
    """The rendered size of the smallest visible map text (the diagram's labels, or the phone's text map)."""
    return page.evaluate("""() => {
        const sizes = [];
        for (const el of document.querySelectorAll('#s11x-map .nodeLabel, #s11x-map pre, #s11x-map p')) {
            const r = el.getBoundingClientRect();
            // hidden = display: none, or (the phone's diagram, hidden tabs and folded panels: still laid out for
            // mermaid, see app.py's CSS) visibility: hidden
            if (!r.width || getComputedStyle(el).display === 'none' || getComputedStyle(el).visibility === 'hidden'
                || el.closest('[style*="display: none"]')) continue;
            if (el.tagName !== 'SPAN' && !el.closest('svg')) { sizes.push(parseFloat(getComputedStyle(el).fontSize)); continue; }
            const svg = el.closest('svg'), box = svg.viewBox.baseVal, scale = svg.getBoundingClientRect().width / box.width;
            sizes.push(parseFloat(getComputedStyle(el).fontSize) * scale);
        }
        return sizes.length ? Math.min(...sizes) : 0;
    }""")


SHOTS = {"light-1400": "explorer-light.png", "dark-390": "explorer-phone.png"}


def test_hostile_content_renders_literally_and_the_page_fits(server, reader):
    url, sessions = server
    visitor, demo, scheme, width = reader
    shot = SHOTS[f"{scheme}-{width}"]
    page = visitor.page
    store = space_store(sessions, visitor.space_id())
    from s11_session import SessionNode
    hostile = SessionNode(title=HOSTILE_TITLE, messages=[
        {"role": "user", "content": HOSTILE_TEXT},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "想想 <i>斜体</i>"},
                                          {"type": "text", "text": "**不加粗** [链接](javascript:alert(3))"},
                                          {"type": "tool_use", "id": "t1", "name": "<b>Bash</b>",
                                           "input": {"command": "echo ${HOME}"}}]}])
    # the reader's search (the test before, on this page) is cleared first: every tree is listed again
    search = page.locator("#s11x-search input, #s11x-search textarea").first
    search.fill("")
    search.press("Enter")
    page.locator("#s11x-list-note").get_by_text(f"共 {len(store.list_sessions())} 个会话").wait_for(timeout=15_000)
    store.save(hostile)
    page.locator("#s11x-refresh").click()
    every_session = f"共 {len(store.list_sessions())} 个会话"   # the demo's 3, the reader's fork and imports, this one
    page.locator("#s11x-list-note").get_by_text(every_session).wait_for(timeout=15_000)
    visitor.pick_row(hostile.session_id)
    page.locator("#s11x-map svg[id^='mermaid']").first.wait_for(state="attached", timeout=15_000)
    page.locator("#s11x-path strong", has_text="不加粗").wait_for(timeout=15_000)   # the path shows this session
    path_text = page.locator("#s11x-path").inner_text()
    assert "<script>alert(1)</script> <img src=x onerror=alert(2)> ${7*7} {{x}}" in path_text
    # the assistant's Markdown is laid out (bold), but its javascript: link stays text
    assert "不加粗 [链接](javascript:alert(3))" in path_text
    assert page.locator("#s11x-path strong", has_text="不加粗").count() == 1
    # new surfaces: the picked-message note, a full-text hit, the sibling line, a hostile message link
    click_message(page, 1)
    page.locator("#s11x-picked").get_by_text("已选中第 1 条").wait_for(timeout=10_000)
    search.fill("onerror")
    search.press("Enter")
    page.locator("#s11x-hits-note").get_by_text("消息正文里找到").wait_for(timeout=15_000)
    assert "<img src=x onerror=alert(2)>" in page.locator("#s11x-hits").inner_text()
    for where in ("#s11x-path", "#s11x-list", "#s11x-tree", "#s11x-details", "#s11x-map", "#s11x-hits",
                  "#s11x-picked", "#s11x-siblings", "#s11x-notice"):
        assert page.locator(f"{where}").locator(MARKUP).count() == 0, where
        assert page.locator(f"{where} a[href^='javascript']").count() == 0, where
    assert HOSTILE_TITLE in page.locator("#s11x-tree").inner_text()
    assert HOSTILE_TITLE in page.locator("#s11x-details").inner_text()
    assert "Syntax error" not in page.locator("body").inner_text()
    # back to the demo tree for the picture: a branch with its parent, the path and the map
    branch = demo[9]
    search.fill("")
    search.press("Enter")   # back to every tree
    page.locator("#s11x-list-note").get_by_text(every_session).wait_for(timeout=15_000)
    visitor.pick_row(branch)
    page.locator("#s11x-map svg[id^='mermaid']").filter(has_text="活动端").wait_for(state="attached",
                                                                               timeout=15_000)
    fits_at(page)
    shoot(page, shot)
    link = "<img src=x onerror=alert(4)>"
    page.goto(f"{url}/?session={link}&m=<b>1</b>")
    page.locator("#s11x-notice").get_by_text("不在你的空间里").wait_for(timeout=15_000)
    assert link in page.locator("#s11x-notice").inner_text() or "onerror" in page.locator("#s11x-notice").inner_text()
    assert page.locator("#s11x-notice").locator(MARKUP).count() == 0
    assert visitor.dialogs == []
    assert_all_requests_local(visitor.requests)
