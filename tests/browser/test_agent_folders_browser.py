"""The explorer's "💻 本机 Agent 文件夹" panel in Debian's chromium: a reader on their own machine lists their agent's
sessions, imports one with a click, follows it while the agent keeps writing, and the agent's folder is only read.

Set S11_AGENT_SCREENSHOTS=<folder> to keep the screenshots (1400 px and 390 px, light and dark)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from browser_tabs import open_tab
from conftest import REPO, free_port

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TAB = "🌳 会话树浏览器"
KEY = "key-" + "5" * 28   # what `python app.py --agent-folders` prints in the terminal as ?agents=<key>
HOSTILE_TITLE = "<img src=x onerror=alert(1)> **粗** ${7*7}"


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("home")
    project = home / ".claude" / "projects" / "-home-dev-api"
    project.mkdir(parents=True)
    shutil.copy(REPO / "examples" / "claude-code-rate-limit.jsonl", project / "3f1c-session.jsonl")
    codex = home / ".codex" / "sessions" / "2026" / "05" / "22"
    codex.mkdir(parents=True)
    text = (REPO / "examples" / "codex-cli-orders-pagination.jsonl").read_text(encoding="utf-8")
    (codex / "rollout-2026-05-22T10-00-00-abc.jsonl").write_text(text, encoding="utf-8")
    return home


@pytest.fixture(scope="module")
def server(tmp_path_factory, home):
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import app

    demo = app.build_app(tmp_path_factory.mktemp("sessions"),
                         agent_folders={"home": str(home), "env": {}, "key": KEY})
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True,
                **app.launch_options(demo))
    try:
        yield demo.local_url.rstrip("/")
    finally:
        demo.close()


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("width, scheme", [(1400, "light"), (390, "dark")])
def test_a_reader_lists_imports_and_follows_their_own_session(browser, server, home, width, scheme):
    before = digest(home)
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    try:
        page.goto(f"{server}/?agents={KEY}")
        open_tab(page, TAB)
        # the key leaves the address bar (history, screenshots) once the page has loaded
        page.wait_for_function("!location.search.includes('agents=')", timeout=30_000)
        page.locator("#s11x-import-tab > button.label-wrap").click()   # the action areas are stacked accordions
        page.locator("#s11x-agents").get_by_text("本机 Agent 文件夹").first.click()
        page.locator("#s11x-agents-list").click()
        page.locator("#s11x-agents-note").get_by_text("找到 2 个会话").wait_for(timeout=15_000)
        table = page.locator("#s11x-agents-table")
        assert "Codex CLI" in table.inner_text() and "Claude Code" in table.inner_text()
        table.get_by_text("Claude Code", exact=True).locator("visible=true").first.click()
        page.locator("#s11x-agents-follow").locator("input").check()
        page.locator("#s11x-agents-import").click()
        page.locator("#s11x-import-result").get_by_text("正在跟随").wait_for(timeout=15_000)
        assert "给登录接口加限流" in page.locator("#s11x-list").inner_text()
        # the agent writes on: one more user turn, and within a few seconds the page shows it was re-imported
        session = next(home.glob(".claude/projects/*/*.jsonl"))
        records = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
        leaf = next(r["leafUuid"] for r in records if r.get("type") == "last-prompt")
        last = next(r for r in records if r.get("uuid") == leaf)
        grown = {**last, "uuid": f"aaaaaaaa-0000-4000-8000-00000000{width:04d}", "parentUuid": leaf,
                 "type": "user", "timestamp": "2099-01-01T00:00:00.000Z",
                 "message": {"role": "user", "content": HOSTILE_TITLE}}
        with session.open("a", encoding="utf-8") as out:
            out.write(json.dumps(grown, ensure_ascii=False) + "\n")
        expected = digest(home)
        page.locator("#s11x-import-result").get_by_text("已重新导入").wait_for(timeout=20_000)
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0
        assert page.locator("#s11x-agents img, #s11x-list img, #s11x-import-result img").count() == 0 and dialogs == []
        assert digest(home) == expected and set(expected) == set(before)   # we never wrote in the agent's folder
        shots = os.environ.get("S11_AGENT_SCREENSHOTS")
        if shots:
            page.locator("#s11x-agents").scroll_into_view_if_needed()
            page.screenshot(path=str(Path(shots) / f"agents-{width}-{scheme}.png"), full_page=False)
    finally:
        context.close()


def test_another_browser_without_the_printed_link_sees_nothing_and_the_key_survives_a_reload(browser, server):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    try:
        page.goto(server)   # another account's browser on this machine: the plain address, no key
        open_tab(page, TAB)
        page.locator("#s11x-import-tab > button.label-wrap").click()
        page.locator("#s11x-agents").get_by_text("本机 Agent 文件夹").first.click()
        page.locator("#s11x-agents-list").click()
        page.locator("#s11x-agents-note").get_by_text("启动时终端里打印的那个链接").wait_for(timeout=15_000)
        assert "Claude Code" not in page.locator("#s11x-agents-table").inner_text()
        page.goto(f"{server}/?agents={KEY}")   # the reader opens the printed link once ...
        page.get_by_role("tab").first.wait_for(timeout=30_000)
        page.wait_for_function("!location.search.includes('agents=')")
        page.reload()                            # ... and a reload (no key in the address any more) keeps it
        open_tab(page, TAB)
        page.locator("#s11x-import-tab > button.label-wrap").click()
        page.locator("#s11x-agents").get_by_text("本机 Agent 文件夹").first.click()
        page.locator("#s11x-agents-list").click()
        page.locator("#s11x-agents-note").get_by_text("找到 2 个会话").wait_for(timeout=15_000)
        kept = page.evaluate("() => Object.keys(window.localStorage)")
        assert "s11-agents" in kept and KEY not in page.evaluate("() => JSON.stringify(window.localStorage)")
    finally:
        context.close()
