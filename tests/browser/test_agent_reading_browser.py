"""Reading a real agent session in Debian's chromium (issue 42 item 4): a reader uploads a Claude Code session together
with its subagents/ folder as one .zip, sees 🤖 子代理 hanging at the Task call, reads the command of a collapsed tool
call without opening it, hides tools and thinking, sees the fork divider as a line, and edits a prompt in plain text;
on a 390 px phone in the dark the page stays 390 px wide.

Set S11_AGENT_READING_SCREENSHOTS=<folder> to keep the screenshots (1400 px and 390 px, light and dark)."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from browser_tabs import eventually, wait_until_quiet
from conftest import REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TAB = "🌳 会话树浏览器"
EXAMPLE = REPO / "examples" / "claude-code-rate-limit.jsonl"
AGENT = REPO / "examples" / "claude-code-rate-limit" / "subagents" / "agent-a7e3c91.jsonl"
WIDTH = "() => document.documentElement.scrollWidth - window.innerWidth"


@pytest.fixture(scope="module")
def server(app_server):
    """The worker's shared workbench (tests/conftest.py): this file needs no options or folder of its own."""
    return app_server


def session_zip() -> bytes:
    """What a reader makes on their machine: the session file and the folder beside it, in one .zip."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.write(EXAMPLE, "3f1c.jsonl")
        archive.write(AGENT, "3f1c/subagents/agent-a7e3c91.jsonl")
    return buffer.getvalue()


def shoot(page, name: str) -> None:
    folder = os.environ.get("S11_AGENT_READING_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def open_explorer(page, url: str) -> None:
    page.goto(url)
    page.get_by_role("tab", name=TAB).click(timeout=30_000)
    page.locator("#s11x-space").get_by_text("空间").wait_for(timeout=30_000)


def upload_session(page) -> None:
    label = page.locator("#s11x-import-tab > button.label-wrap")
    if "open" not in (label.get_attribute("class") or ""):
        label.click()
    page.locator("#s11x-upload input[type=file]").set_input_files(
        {"name": "3f1c.zip", "mimeType": "application/zip", "buffer": session_zip()})
    # the finished upload's row (gradio splits the name into stem and suffix spans; only the progress view shows it
    # whole, and that view can be gone before the first look on a busy machine)
    page.locator('#s11x-upload td.filename[aria-label="3f1c.zip"]').wait_for(timeout=30_000)
    page.locator("#s11x-import").click()
    page.locator("#s11x-import-result").get_by_text("已导入").wait_for(timeout=30_000)


def test_reading_a_claude_code_session_with_its_subagent(server, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, color_scheme="light")
    page = context.new_page()
    open_explorer(page, server)
    upload_session(page)
    assert "看不到" not in page.locator("#s11x-import-result").inner_text()   # the zip brought the subagent
    tree = page.locator("#s11x-tree")
    agent = tree.get_by_text("🤖 子代理 1：检查其它公开接口的限流")
    agent.wait_for(timeout=30_000)
    assert "在第 4 条（启动它的调用）" in agent.inner_text() and "全部为新增" in agent.inner_text()
    assert "分支 A" in tree.inner_text() and "自第 0 条" not in tree.inner_text()
    # the collapsed tool call names its command and file, without opening it
    chat = page.locator("#s11x-path")
    chat.get_by_text("Bash · pytest tests/test_auth.py -q").first.wait_for(timeout=30_000)
    assert chat.get_by_text("Read · /home/dev/shop-api/app/config.py").count() >= 1
    assert chat.locator(".thought-group").count() > 0
    shoot(page, "agent-reading-1400-light")
    # hide tools and thinking: no folded block left, the talk stays
    page.locator("#s11x-chat-filter").get_by_text("隐藏工具与思考").click()
    page.locator("#s11x-path-note").get_by_text("隐藏工具与思考").wait_for(timeout=30_000)
    assert chat.locator(".thought-group").count() == 0 and chat.get_by_text("#1").count() >= 1
    # only my prompts: a click on the second prompt still names its absolute message number
    page.locator("#s11x-chat-filter").get_by_text("只看我的提问").click()
    page.locator("#s11x-path-note").get_by_text("只看我的提问").wait_for(timeout=30_000)
    chat.get_by_text("算了，不要引入 Redis").first.click()
    page.wait_for_function("""() => {   // the fork control (box or its caption) now says message 9
        const area = document.querySelector('#s11x-fork-tab');
        const box = document.querySelector('#s11x-fork-at input');
        return (box && box.value === '9') || (area && /第 9 条/.test(area.innerText)); }""", timeout=30_000)
    # the fork divider of branch A is a line, not a bubble
    page.locator("#s11x-chat-filter").get_by_text("全部").click()
    tree.get_by_text("分支 A").first.click()
    divider = chat.locator(".message-row:has(.prose > hr:first-child)")
    divider.get_by_text("分支 A 从这里开始").wait_for(timeout=30_000)
    background = divider.locator(".message").first.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background in ("rgba(0, 0, 0, 0)", "transparent"), background
    # the ✏️ box holds the words the reader typed, not the bubble's Markdown
    prompt = chat.locator(".message-row", has_text="用 Redis 做计数器吧").first
    prompt.hover()
    chat.locator("button[aria-label='编辑'], button[title='编辑']").last.click()   # gradio's Edit, named in Chinese by aria_zh.js
    box = chat.locator("textarea")
    box.wait_for(timeout=10_000)
    eventually(page, lambda: box.input_value() != "")   # gradio fills the box just after showing it
    assert box.input_value() == "用 Redis 做计数器吧，线上本来就有 Redis。", box.input_value()
    shoot(page, "agent-reading-1400-edit")
    context.close()
    # the same reading on a phone, dark, then the other screens: one page whose window and colour scheme change
    # (gradio follows the system scheme live), rather than a page load and an upload per screen
    context = browser.new_context(viewport={"width": 390, "height": 900}, color_scheme="dark")
    page = context.new_page()
    open_explorer(page, server)
    upload_session(page)
    page.locator("#s11x-tree").get_by_text("🤖 子代理 1").wait_for(timeout=30_000)
    page.locator("#s11x-chat-filter").get_by_text("隐藏工具与思考").click()
    page.locator("#s11x-path-note").get_by_text("隐藏工具与思考").wait_for(timeout=30_000)
    for width, scheme in ((390, "dark"), (390, "light"), (1400, "dark")):
        page.set_viewport_size({"width": width, "height": 900})
        page.emulate_media(color_scheme=scheme)
        page.wait_for_function("(dark) => document.body.classList.contains('dark') === dark", arg=scheme == "dark")
        wait_until_quiet(page)   # the layout after the resize
        assert page.evaluate(WIDTH) <= 0, (width, scheme)
        shoot(page, f"agent-reading-{width}-{scheme}")
    context.close()
