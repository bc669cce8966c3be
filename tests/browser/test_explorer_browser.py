"""The session explorer in Debian's chromium: a reader's walk through it, a second student, the teacher, deep links,
hostile text, and no request leaving 127.0.0.1.

Set S11_EXPLORER_SCREENSHOTS=docs to also write docs/explorer-light.png, docs/explorer-dark.png (1400 px) and
docs/explorer-phone.png (390 px) during the run.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from conftest import REPO, free_port

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
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import app

    sessions = tmp_path_factory.mktemp("explorer_sessions")
    demo = app.build_app(sessions, teacher_secret=TEACHER)
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                **app.launch_options(demo))
    try:
        yield demo.local_url.rstrip("/"), sessions
    finally:
        demo.close()


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
        from playwright.sync_api import TimeoutError as PlaywrightTimeout
        try:
            self.page.get_by_role("tab", name=TAB).click(timeout=5_000)
        except PlaywrightTimeout:   # on a phone the later tabs sit behind Gradio's "More tabs" menu
            self.page.get_by_role("button", name="More tabs").click()
            self.page.locator(".overflow-dropdown button", has_text=TAB).click()
        self.page.locator("#s11x-space").get_by_text("空间").wait_for(timeout=15_000)

    def space_id(self) -> str:
        return re.search(r"[0-9a-f]{16}", self.page.locator("#s11x-space").inner_text()).group(0)

    def notice(self, text: str, timeout: float = 15_000) -> str:
        self.page.locator("#s11x-notice").get_by_text(text).wait_for(timeout=timeout)
        return self.page.locator("#s11x-notice").inner_text()

    def pick_row(self, text: str) -> None:
        self.page.locator("#s11x-list").get_by_text(text, exact=True).locator("visible=true").first.click()
        self.page.locator("#s11x-details").get_by_text(text).wait_for(timeout=15_000)

    def action_tab(self, name: str) -> None:
        self.page.locator(f"#s11x-{name}-tab-button").click()

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

    def close(self) -> None:
        self.context.close()


def assert_all_requests_local(requests: list[str]) -> None:
    foreign = [url for url in requests
               if urlparse(url).scheme not in LOCAL_SCHEMES and urlparse(url).hostname not in LOCAL_HOSTS]
    assert requests and foreign == []


def space_store(sessions: Path, space_id: str):
    from s11_session import SessionStore
    return SessionStore(sessions / "spaces" / space_id)


def digest(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def replay(url: str, body: dict) -> dict:
    """Send one queued event the way the page does and wait for its result (a fresh page session)."""
    import httpx
    body = {**body, "session_hash": secrets.token_hex(8)}
    joined = httpx.post(f"{url}/gradio_api/queue/join", json=body, timeout=30)
    assert joined.status_code == 200, joined.text
    event_id = joined.json()["event_id"]
    with httpx.stream("GET", f"{url}/gradio_api/queue/data", params={"session_hash": body["session_hash"]},
                      timeout=30) as stream:
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
    a = Visitor(browser, url)
    page = a.page
    page.get_by_role("button", name="运行主会话").click()
    page.locator("#s11-file-3 pre").first.wait_for(timeout=30_000)
    a.open_explorer()
    page.locator("#s11x-list-note").get_by_text("共 3 个会话").wait_for(timeout=15_000)
    store = space_store(sessions, a.space_id())
    demo = {s["message_count"]: s["session_id"] for s in store.list_sessions()}
    assert a.listed_ids() == set(demo.values())

    a.pick_row(demo[9])                                   # branch B, the resumed one
    page.locator("#s11x-path").get_by_text("#9").wait_for()
    assert "◀ 活动端" in page.locator("#s11x-tree").inner_text()
    page.locator("#s11x-path").get_by_role("button", name="Clear").click()   # the chatbot's own "clear" redraws
    page.locator("#s11x-path").get_by_text("#9").wait_for()
    assert store.load(demo[9]) is not None and len(store.load(demo[9]).messages) == 9
    page.locator("#s11x-path").get_by_text("#3", exact=True).click()   # pick message 3 in the path view
    page.wait_for_function("document.querySelector('#s11x-fork-at input').value === '3'")
    page.locator("#s11x-fork-text textarea").fill("换个思路：先加监控")
    page.locator("#s11x-fork").click()
    fork_id = re.search(r"新会话 ([0-9a-f]{12})", a.notice("已在第 3 条之后分叉")).group(1)
    page.locator("#s11x-path").get_by_text("换个思路：先加监控").wait_for()
    assert fork_id in page.locator("#s11x-tree").inner_text() and fork_id in a.listed_ids()

    a.action_tab("resume")
    page.locator("#s11x-resume-text textarea").fill("监控上线后再看内存曲线")
    page.locator("#s11x-resume").click()
    a.notice("已续写并保存")
    page.locator("#s11x-path").get_by_text("监控上线后再看内存曲线").wait_for()
    assert [m["content"] for m in store.load(fork_id).messages[3:]] == ["换个思路：先加监控", "监控上线后再看内存曲线"]

    a.action_tab("export")
    page.locator("#s11x-export").click()
    a.notice("已导出会话")
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
    page.locator("#s11x-delete").click()
    a.notice("移进回收站")
    page.wait_for_function(f"!document.querySelector('#s11x-list').innerText.includes('{fork_id}')")
    assert store.load(fork_id) is None
    page.locator("#s11x-trash input").click()
    page.get_by_role("option", name=re.compile(fork_id)).click()
    page.locator("#s11x-restore").click()
    a.notice("已从回收站恢复")
    assert fork_id in a.listed_ids() and len(store.load(fork_id).messages) == 5

    a.action_tab("import")
    page.locator("#s11x-import-example").click()
    a.notice("已导入")
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
    page.locator("#s11x-import").click()
    a.notice("已导入 报告")   # gradio itself strips markup characters from upload names; what is left is text
    assert page.locator("#s11x-notice i").count() == 0 and len(store.list_sessions()) > before_upload
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
        b.page.wait_for_timeout(1000)
        token_b = b.token()
        a_folder = sessions / "spaces" / a.space_id()
        before = digest(a_folder)
        a_ids = {s["session_id"] for s in walk["store"].list_sessions()}
        import httpx
        names = {dep["id"]: dep.get("api_name") for dep in httpx.get(f"{url}/config", timeout=10).json()["dependencies"]}
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
            table = json.dumps(data[5] if len(data) > 5 else None)   # the compare panel's events have fewer outputs
            assert not {sid for sid in a_ids if sid in output} - sent, output[:500]   # only what B itself sent
            assert not any(sid in table for sid in a_ids), table[:500]
            assert "Traceback" not in output
        assert digest(a_folder) == before
        b_ids = {s["session_id"] for s in space_store(sessions, b.space_id()).list_sessions()}
        assert b_ids & a_ids == set()
        b.page.goto(f"{url}/?session={walk['fork_id']}")   # A's deep link opened in B's browser
        b.page.locator("#s11x-notice").get_by_text("不在你的空间里").wait_for(timeout=15_000)
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
        spaces_text = teacher.page.locator("#s11x-spaces").inner_text()
        assert a.space_id() in spaces_text and b.space_id() in spaces_text
        teacher.page.locator("#s11x-spaces").get_by_text(a.space_id()).locator("visible=true").first.click()
        teacher.page.locator("#s11x-space").get_by_text("学生空间").wait_for(timeout=15_000)
        branch_b = walk["demo"][9]
        teacher.pick_row(branch_b)
        assert teacher.cannot_change()
        teacher.page.wait_for_timeout(1000)   # the select event re-renders the teacher panel
        teacher.page.locator("#s11x-publish").click()
        teacher.page.locator("#s11x-confirm").get_by_text("确认把会话").wait_for(timeout=30_000)   # counts first
        teacher.page.locator("#s11x-confirm-yes").click()
        teacher.notice("已脱敏并发布到共享书架")

        for student in (a, b):
            page = student.page
            page.locator("#s11x-source").get_by_text("共享书架").click()
            page.locator("#s11x-space").get_by_text("共享书架").wait_for(timeout=15_000)
            student.pick_row(branch_b)
            assert student.cannot_change()
            page.locator("#s11x-fork-at input").fill("4")
            page.locator("#s11x-fork").click()
            copy_id = re.search(r"新会话 ([0-9a-f]{12})", student.notice("已在第 4 条之后分叉")).group(1)
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
    finally:
        context.close()


@pytest.mark.parametrize(("scheme", "width", "shot"), [("light", 1400, "explorer-light.png"),
                                                       ("dark", 1400, "explorer-dark.png"),
                                                       ("dark", 390, "explorer-phone.png")])
def test_hostile_content_renders_literally_and_the_page_fits(browser, server, scheme, width, shot):
    url, sessions = server
    visitor = Visitor(browser, url, width=width, scheme=scheme)
    try:
        page = visitor.page
        page.get_by_role("button", name="运行主会话").click()
        page.locator("#s11-file-3 pre").first.wait_for(timeout=30_000)
        visitor.open_explorer()
        store = space_store(sessions, visitor.space_id())
        from s11_session import SessionNode
        hostile = SessionNode(title=HOSTILE_TITLE, messages=[
            {"role": "user", "content": HOSTILE_TEXT},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "想想 <i>斜体</i>"},
                                              {"type": "text", "text": "**不加粗** [链接](javascript:alert(3))"},
                                              {"type": "tool_use", "id": "t1", "name": "<b>Bash</b>",
                                               "input": {"command": "echo ${HOME}"}}]}])
        store.save(hostile)
        page.locator("#s11x-refresh").click()
        page.locator("#s11x-list-note").get_by_text("共 4 个会话").wait_for(timeout=15_000)
        visitor.pick_row(hostile.session_id)
        page.locator("#s11x-map svg[id^='mermaid']").first.wait_for(timeout=15_000)
        path_text = page.locator("#s11x-path").inner_text()
        assert "<script>alert(1)</script> <img src=x onerror=alert(2)> ${7*7} {{x}}" in path_text
        assert "**不加粗** [链接](javascript:alert(3))" in path_text
        for where in ("#s11x-path", "#s11x-list", "#s11x-tree", "#s11x-details", "#s11x-map"):
            assert page.locator(f"{where}").locator(MARKUP).count() == 0, where
            assert page.locator(f"{where} a[href^='javascript']").count() == 0, where
        assert HOSTILE_TITLE in page.locator("#s11x-tree").inner_text()
        assert HOSTILE_TITLE in page.locator("#s11x-details").inner_text()
        assert "Syntax error" not in page.locator("body").inner_text()
        # back to the demo tree for the picture: a branch with its parent, the path and the map
        branch = next(s["session_id"] for s in store.list_sessions() if s["message_count"] == 9)
        visitor.pick_row(branch)
        page.locator("#s11x-map svg[id^='mermaid']").filter(has_text="活动端").wait_for(timeout=15_000)
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], widths
        assert visitor.dialogs == []
        assert_all_requests_local(visitor.requests)
        shoot(page, shot)
    finally:
        visitor.close()
