"""The explorer's "💻 本机 Agent 文件夹" panel in Debian's chromium: a reader on their own machine lists their agent's
sessions, imports one with a click, follows it while the agent keeps writing, and the agent's folder is only read.

Set S11_AGENT_SCREENSHOTS=<folder> to keep the screenshots (1400 px and 390 px, light and dark)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from browser_tabs import fits_at, looks, open_tab, running_app
from conftest import REPO

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
    from s11_workbench import agent_folders_tab

    # the follow timer looks every second here (every FOLLOW_SECONDS = 5 in the app): the re-import the walk waits
    # for shows sooner (the timer is made while the page is built)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(agent_folders_tab, "FOLLOW_SECONDS", 1)
        with running_app(tmp_path_factory.mktemp("sessions"),
                         agent_folders={"home": str(home), "env": {}, "key": KEY}) as url:
            yield url


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("width, scheme", looks((390, "dark"), (1400, "light")))
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
        fits_at(page)
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


# ── issue 44: what the agents are about to delete, kept in one click; usage side by side ──────
def _line(kind, uid, parent, when, body):
    return {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": "0ld-session", "cwd": "/api",
            "version": "2.1.42", "timestamp": f"2026-01-01T00:{when}.000Z", "message": body}


def _reply(uid, parent, when, words, tokens_in, tokens_out):
    return _line("assistant", uid, parent, when, {"id": f"m-{uid}", "role": "assistant", "model": "claude-sonnet-4-5",
                                                  "content": [{"type": "text", "text": words}],
                                                  "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}})


@pytest.fixture(scope="module")
def risky_home(tmp_path_factory) -> Path:
    """A Claude Code session 27 days old (deleted at 30 by default) with a rewind (two branches, each with usage), and
    a compressed Codex rollout."""
    import time

    import zstandard
    home = tmp_path_factory.mktemp("risky-home")
    project = home / ".claude" / "projects" / "-home-dev-api"
    project.mkdir(parents=True)
    lines = [_line("user", "u1", None, "00:00", {"role": "user", "content": "缓存用哪种方案？"}),
             _reply("a1", "u1", "00:05", "A 或 B", 1200, 40),
             _line("user", "u2", "a1", "01:00", {"role": "user", "content": "用方案 A"}),
             _reply("a2", "u2", "01:05", "A 做好了", 3000, 200),
             _line("user", "u3", "a1", "09:00", {"role": "user", "content": "改用方案 B"}),
             _reply("a3", "u3", "09:05", "B 做好了", 45000, 1800)]
    session = project / "0ld-session.jsonl"
    session.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    stamp = time.time() - 27 * 86400
    os.utime(session, (stamp, stamp))
    rollout = (REPO / "examples" / "codex-cli-orders-pagination.jsonl").read_bytes()
    day = home / ".codex" / "sessions" / "2026" / "05" / "01"
    day.mkdir(parents=True)
    (day / "rollout-2026-05-01T00-00-00-c1.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(rollout))
    return home


@pytest.fixture(scope="module")
def risky_server(tmp_path_factory, risky_home):
    with running_app(tmp_path_factory.mktemp("sessions"), agent_folders={"home": str(risky_home), "env": {}}) as url:
        yield url


def test_the_panel_keeps_what_the_agents_will_delete_and_compare_shows_what_each_branch_cost(browser, risky_server,
                                                                                              risky_home):
    before = digest(risky_home)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    try:
        page.goto(risky_server)
        open_tab(page, TAB)
        page.locator("#s11x-import-tab > button.label-wrap").click()
        page.locator("#s11x-agents").get_by_text("本机 Agent 文件夹").first.click()
        page.locator("#s11x-agents-list").click()
        page.locator("#s11x-agents-risk-note").get_by_text("2 个会话快要被 Agent 删掉").wait_for(timeout=15_000)
        risk = page.locator("#s11x-agents-risk").inner_text()
        assert "缓存用哪种方案？" in risk and "还剩 3.0 天就会被删除" in risk and "已压缩" in risk
        page.locator("#s11x-agents-keep").click()
        page.locator("#s11x-import-result").get_by_text("保留了 2/2 个快要被删掉的会话").wait_for(timeout=20_000)
        first = page.locator("#s11x-import-result").inner_text()
        written = re.search(r"写入 (\d+) 个节点，0 个节点早已保留", first)
        assert written and int(written.group(1)) >= 3, first   # the Claude session's two branches + the Codex one
        shots = os.environ.get("S11_AGENT_SCREENSHOTS")
        if shots:
            page.locator("#s11x-agents-risk").scroll_into_view_if_needed()
            page.screenshot(path=str(Path(shots) / "agents-keep.png"), full_page=False)
        page.locator("#s11x-agents-keep").click()
        page.locator("#s11x-import-result").get_by_text("写入 0 个节点").wait_for(timeout=20_000)
        second = page.locator("#s11x-import-result").inner_text()
        assert f"写入 0 个节点，{written.group(1)} 个节点早已保留" in second, second
        # compare: the two branches of the kept Claude session, usage side by side
        page.locator("#s11x-list").get_by_text("缓存用哪种方案？").first.click()
        page.locator("#s11c-compare").click()
        summary = page.locator("#s11c-summary")
        summary.get_by_text("花费").wait_for(timeout=15_000)
        text = summary.inner_text()
        assert "输入 token" in text and "45,000" in text and "3,000" in text, text
        if shots:
            summary.scroll_into_view_if_needed()
            page.screenshot(path=str(Path(shots) / "compare-usage.png"), full_page=False)
        assert dialogs == [] and digest(risky_home) == before   # the agents' folders were only read
        page.set_viewport_size({"width": 390, "height": 900})   # on a phone the at-risk table wraps in its own box
        page.locator("#s11x-agents-risk").scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    finally:
        context.close()
