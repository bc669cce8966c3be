"""What a student sees: the page in Debian's chromium, offline, in light and dark mode."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import pytest

from conftest import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOCAL_HOSTS = {"127.0.0.1", "localhost"}
LOCAL_SCHEMES = {"data", "blob", "about"}


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium); playwright cannot download browsers here")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def open_page(browser, url: str, scheme: str):
    """A fresh context that records every request the page makes."""
    context = browser.new_context(viewport={"width": 1400, "height": 900}, color_scheme=scheme,
                                  accept_downloads=True)
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url)
    return context, page, requests


DIAGRAM = "#s11-tree svg[id^='mermaid']"


def run_demo_in_page(page):
    """Click the one button and wait until mermaid has drawn the tree (its SVG holds the node labels)."""
    page.get_by_role("button", name="运行主会话").click()
    diagram = page.locator(DIAGRAM).filter(has_text="已恢复")
    diagram.wait_for(timeout=20_000)
    return diagram


READ_NODE_COLOURS = """() => {
    const svg = [...document.querySelectorAll('#s11-tree svg[id^="mermaid"]')]
        .find((candidate) => candidate.textContent.includes('已恢复'));
    const node = svg.querySelector('g.node');
    const shape = node.querySelector('rect, path, polygon');
    // the visible text sits in the innermost element (Gradio's prose CSS colours <p> itself)
    const label = node.querySelector('.nodeLabel p') || node.querySelector('.nodeLabel, text');
    const rgb = (css) => css.match(/[0-9.]+/g).slice(0, 3).map(Number);
    return [rgb(getComputedStyle(label).color), rgb(getComputedStyle(shape).fill)];
}"""


def contrast(first: list[float], second: list[float]) -> float:
    """WCAG contrast ratio of two sRGB colours given as 0-255 triples."""
    def luminance(rgb):
        linear = [c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    lighter, darker = sorted((luminance(first), luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def assert_all_requests_local(requests: list[str]) -> None:
    foreign = [url for url in requests
               if urlparse(url).scheme not in LOCAL_SCHEMES and urlparse(url).hostname not in LOCAL_HOSTS]
    assert requests and foreign == []


def test_one_click_draws_the_tree_previews_the_export_and_downloads_it(browser, app_server, tmp_path):
    context, page, requests = open_page(browser, app_server, "light")
    try:
        tree = page.locator("#s11-tree")
        assert "点击上方按钮" in tree.inner_text()  # placeholder before the first click

        diagram = run_demo_in_page(page)
        assert "Syntax error" not in page.locator("body").inner_text()
        diagram_text = diagram.text_content()
        for label in ("主会话", "分支 A", "分支 B", "已恢复", "9 条消息"):
            assert label in diagram_text

        preview = page.locator("#s11-export").inner_text()
        assert "会话导出" in preview and "方案 B" in preview

        page.get_by_role("button", name="本次写入的文件").click()
        files = page.locator("#s11-files")
        files.locator("pre").first.wait_for()
        assert files.locator("pre").count() == 3
        assert '"session_id"' in files.inner_text() and '"parent_id"' in files.inner_text()

        download_button = page.locator("#s11-download-md")
        with page.expect_download(timeout=15_000) as download_info:
            download_button.click()
        saved = tmp_path / download_info.value.suggested_filename
        download_info.value.save_as(saved)
        assert saved.suffix == ".md"
        assert "会话导出" in saved.read_text(encoding="utf-8")

        assert_all_requests_local(requests)
    finally:
        context.close()


def test_dark_mode_still_renders_the_diagram(browser, app_server):
    context, page, requests = open_page(browser, app_server, "dark")
    try:
        diagram = run_demo_in_page(page)
        assert page.evaluate("document.body.classList.contains('dark')")
        assert "Syntax error" not in page.locator("body").inner_text()
        assert "分支 B" in diagram.text_content()
        # node labels must stay readable: text colour vs. node fill, WCAG contrast >= 3
        text_rgb, fill_rgb = page.evaluate(READ_NODE_COLOURS)
        assert contrast(text_rgb, fill_rgb) >= 3, (text_rgb, fill_rgb)
        assert_all_requests_local(requests)
    finally:
        context.close()


def test_the_drift_demo_warns_before_resuming_branch_a(browser, app_server):
    context, page, requests = open_page(browser, app_server, "light")
    try:
        page.get_by_role("button", name="会话 ≠ 代码").click()
        drift = page.locator("#s11-drift")
        drift.get_by_text("文件已修改：cache_store.py").wait_for(timeout=15_000)
        assert "新增文件：weak_cache_test.py" in drift.inner_text()
        assert_all_requests_local(requests)
    finally:
        context.close()


def test_errors_show_a_chinese_message_not_a_stack_trace(browser, app_server, sessions_dir):
    blocked = Path(sessions_dir)
    backup = blocked.with_name(blocked.name + "-moved")
    blocked.rename(backup)
    blocked.write_text("占位的普通文件", encoding="utf-8")  # 会话目录变成了一个文件
    context, page, _ = open_page(browser, app_server, "light")
    try:
        page.get_by_role("button", name="运行主会话").click()
        status = page.locator("#s11-status")
        status.get_by_text("无法写入会话目录").wait_for(timeout=15_000)
        body = page.locator("body").inner_text()
        assert "Traceback" not in body and "Error" not in status.inner_text()
    finally:
        context.close()
        blocked.unlink()
        backup.rename(blocked)
