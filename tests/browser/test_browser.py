"""What a student sees: the 8.11 tab in Debian's chromium, offline, on a desktop, a laptop and a phone, light and dark."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest

from browser_tabs import looks, open_explorer, open_tab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOCAL_HOSTS = {"127.0.0.1", "localhost"}
LOCAL_SCHEMES = {"data", "blob", "about"}
DIAGRAM = "#s11-tree svg[id^='mermaid']"
FILE_CARDS = ("#s11-file-1", "#s11-file-2", "#s11-file-3")


def open_page(browser, url: str, scheme: str, width: int = 1400):
    """A fresh context that records every request the page makes."""
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme,
                                  accept_downloads=True)
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url)
    page.get_by_role("button", name="运行主会话").wait_for()
    page.wait_for_function("() => !document.querySelector('#s11-run').disabled")   # the space token has arrived
    return context, page, requests


def run_demo_in_page(page):
    """Click the one button and wait until mermaid has drawn the tree and the file cards are filled in."""
    page.get_by_role("button", name="运行主会话").click()
    diagram = page.locator(DIAGRAM).filter(has_text="已恢复")
    diagram.wait_for(timeout=20_000)
    page.locator("#s11-file-3 pre").first.wait_for(timeout=20_000)
    page.wait_for_function("document.fonts.status === 'loaded'")
    return diagram


PAGE_WIDTH = "() => [document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]"

# every element of the result area (and every ancestor of it) that scrolls on its own
INNER_SCROLLERS = """() => {
    const scrolls = (element) => {
        const style = getComputedStyle(element);
        const y = ['auto', 'scroll'].includes(style.overflowY) && element.scrollHeight > element.clientHeight + 1;
        const x = ['auto', 'scroll'].includes(style.overflowX) && element.scrollWidth > element.clientWidth + 1;
        return x || y;
    };
    const result = document.querySelector('#s11-result');
    const inside = [...result.querySelectorAll('*')];
    const above = [];
    for (let node = result; node && node !== document.documentElement; node = node.parentElement) above.push(node);
    return [...inside, ...above].filter(scrolls)
        .map((element) => `${element.tagName}#${element.id}.${String(element.className).slice(0, 40)}`);
}"""

# scroll the page alone (never the element's own ancestors) until the element's top, then its bottom, is in view
# and not cut off by an ancestor that clips its content
REACHABLE_BY_PAGE_SCROLL = """(element) => {
    const page = document.scrollingElement;
    const clipper = (y) => {
        for (let node = element.parentElement; node; node = node.parentElement) {
            const style = getComputedStyle(node);
            if (style.overflowX === 'visible' && style.overflowY === 'visible') continue;
            const clip = node.getBoundingClientRect(), box = element.getBoundingClientRect();
            if (y < clip.top - 0.5 || y > clip.bottom + 0.5 || box.left < clip.left - 0.5 || box.right > clip.right + 0.5)
                return `${node.tagName}.${String(node.className).slice(0, 40)}`;
        }
        return null;
    };
    let box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) return 'not rendered';
    page.scrollTop += box.top - 8;
    box = element.getBoundingClientRect();
    if (box.left < 0 || box.right > innerWidth + 0.5) return `sticks out sideways: ${JSON.stringify(box)}`;
    if (box.top < 0 || box.top >= innerHeight) return `top not in view: ${JSON.stringify(box)}`;
    if (clipper(box.top + 1)) return `top clipped by ${clipper(box.top + 1)}`;
    page.scrollTop += box.bottom - innerHeight + 8;
    box = element.getBoundingClientRect();
    if (box.bottom > innerHeight || box.bottom <= 0) return `bottom not in view: ${JSON.stringify(box)}`;
    if (clipper(box.bottom - 1)) return `bottom clipped by ${clipper(box.bottom - 1)}`;
    return 'ok';
}"""

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

READ_GROUP_HEADING_COLOURS = """() => [...document.querySelectorAll('#s11-export h2')].map((heading) => {
    const rgb = (css) => css.match(/[0-9.]+/g).slice(0, 3).map(Number);
    return [heading.innerText, rgb(getComputedStyle(heading).color), rgb(getComputedStyle(heading).backgroundColor)];
})"""

# the node label's font size as it appears on screen, after the SVG is scaled to fit its column
LABEL_SCREEN_PX = """() => {
    const svg = [...document.querySelectorAll('#s11-tree svg[id^="mermaid"]')].pop();
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    const label = svg.querySelector('g.node .nodeLabel');
    return parseFloat(getComputedStyle(label).fontSize) * Math.min(scale, 1);
}"""


def contrast(first: list[float], second: list[float]) -> float:
    """WCAG contrast ratio of two sRGB colours given as 0-255 triples."""
    def luminance(rgb):
        linear = [c / 255 / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    lighter, darker = sorted((luminance(first), luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def assert_no_horizontal_overflow(page, when: str) -> None:
    document_width, body_width, viewport = page.evaluate(PAGE_WIDTH)
    assert document_width <= viewport and body_width <= viewport, f"{when}: {document_width}/{body_width} > {viewport}"


def assert_all_requests_local(requests: list[str]) -> None:
    foreign = [url for url in requests
               if urlparse(url).scheme not in LOCAL_SCHEMES and urlparse(url).hostname not in LOCAL_HOSTS]
    assert requests and foreign == []


def message_heading(page, number: int):
    return page.locator("#s11-export h3").filter(has_text=f"{number}. ").first


def assert_colours_readable(page, scheme: str) -> None:
    assert page.evaluate("document.body.classList.contains('dark')") == (scheme == "dark")
    assert "Syntax error" not in page.locator("body").inner_text()
    # node labels must stay readable: text colour vs. node fill, WCAG contrast >= 3
    text_rgb, fill_rgb = page.evaluate(READ_NODE_COLOURS)
    assert contrast(text_rgb, fill_rgb) >= 3, (text_rgb, fill_rgb)
    headings = page.evaluate(READ_GROUP_HEADING_COLOURS)
    assert len({tuple(background) for _text, _colour, background in headings}) == 3   # three groups, three colours
    for text, colour, background in headings:
        assert contrast(colour, background) >= 4.5, (text, colour, background)


def assert_tree_readable_on_a_phone(page, diagram) -> None:
    summary = page.locator("#s11-tree pre").first
    assert "分支 B 📂 已恢复" in summary.inner_text()
    assert summary.bounding_box()["y"] < diagram.bounding_box()["y"]   # the text tree comes first
    assert page.evaluate(LABEL_SCREEN_PX) >= 12                        # the diagram is not shrunk to a smudge
    lines = summary.inner_text().strip().count("\n") + 1                # and no line of the text tree wraps
    line_height, padding = page.evaluate("""() => {
        const pre = document.querySelector('#s11-tree pre'), style = getComputedStyle(pre);
        const code = pre.querySelector('code') || pre;
        return [parseFloat(getComputedStyle(code).lineHeight), parseFloat(style.paddingTop) + parseFloat(style.paddingBottom)];
    }""")
    assert summary.bounding_box()["height"] - padding <= (lines + 0.5) * line_height


# the wide screen light and the phone dark; S11_ALL_LOOKS=1 adds a laptop dark and the phone light
@pytest.mark.parametrize(("width", "scheme"), looks((1400, "light"), (390, "dark"), (1024, "dark"), (390, "light"), keep=2))
def test_after_one_click_the_whole_story_is_on_screen_by_scrolling_the_page_alone(browser, app_server, width,
                                                                                  scheme):
    context, page, requests = open_page(browser, app_server, scheme, width)
    try:
        assert_no_horizontal_overflow(page, "before the click")
        diagram = run_demo_in_page(page)
        assert_no_horizontal_overflow(page, "after the click")
        # nothing to open: no accordion or collapsed panel in the result area, downloads already there
        assert page.locator("#s11-result .label-wrap, #s11-result details").count() == 0
        assert page.evaluate(INNER_SCROLLERS) == []

        groups = page.locator("#s11-export h2")
        assert groups.count() == 3
        targets = {f"group {index + 1}": groups.nth(index) for index in range(3)}
        targets |= {f"message {number}": message_heading(page, number) for number in (6, 7, 8, 9)}
        targets |= {selector: page.locator(selector) for selector in FILE_CARDS}
        targets |= {"download .md": page.locator("#s11-download-md"),
                    "download .html": page.locator("#s11-download-html")}
        for name, locator in targets.items():
            assert locator.evaluate(REACHABLE_BY_PAGE_SCROLL) == "ok", name
        assert "读档恢复后追加" in groups.nth(2).inner_text() and "8–9" in groups.nth(2).inner_text()
        changes = page.locator("#s11-file-3 table").inner_text()   # branch B's card points at what changed
        assert "revision" in changes and "messages" in changes and "9 条" in changes
        assert page.locator("#s11-download-md").is_enabled()
        assert page.locator("#s11-download-html").is_enabled()
        assert_no_horizontal_overflow(page, "after scrolling through the result")
        assert_colours_readable(page, scheme)
        if width < 500:
            assert_tree_readable_on_a_phone(page, diagram)
        assert_all_requests_local(requests)
    finally:
        context.close()


def test_both_downloads_arrive_and_the_markdown_is_the_chapters_format(browser, app_server, tmp_path):
    context, page, requests = open_page(browser, app_server, "light")
    try:
        assert "点击上方按钮" in page.locator("#s11-tree").inner_text()  # placeholder before the first click
        assert not page.locator("#s11-download-md").is_enabled()
        diagram = run_demo_in_page(page)
        diagram_text = diagram.text_content()
        for label in ("主会话", "分支 A", "分支 B", "已恢复", "9 条消息"):
            assert label in diagram_text
        saved = {}
        for selector, suffix in (("#s11-download-md", ".md"), ("#s11-download-html", ".html")):
            with page.expect_download(timeout=15_000) as download_info:
                page.locator(selector).click()
            saved[suffix] = tmp_path / download_info.value.suggested_filename
            download_info.value.save_as(saved[suffix])
            assert saved[suffix].suffix == suffix
        markdown = saved[".md"].read_text(encoding="utf-8")
        assert markdown.startswith("# 🗂️ 会话导出") and "🟧" not in markdown
        assert "<!doctype html>" in saved[".html"].read_text(encoding="utf-8").lower()
        assert_all_requests_local(requests)
    finally:
        context.close()


def test_errors_show_a_chinese_message_naming_the_folder_not_a_stack_trace(browser, app_server, sessions_dir):
    spaces = Path(sessions_dir) / "spaces"
    before = set(spaces.iterdir())
    context, page, _ = open_page(browser, app_server, "light")
    moved = None
    try:
        open_explorer(page)   # opening the explorer gives this browser its own space folder (a page load does not)
        open_tab(page, "8.11 会话持久化与多分支")
        for _ in range(100):
            fresh = set(spaces.iterdir()) - before
            if fresh:
                break
            page.wait_for_timeout(100)
        [own] = fresh
        moved = own.with_name(own.name + "-moved")
        own.rename(moved)
        own.write_text("占位的普通文件", encoding="utf-8")   # this visitor's space folder is now a regular file
        page.get_by_role("button", name="运行主会话").click()
        status = page.locator("#s11-status")
        status.get_by_text("无法写入会话目录").wait_for(timeout=15_000)
        body = page.locator("body").inner_text()
        assert "Traceback" not in body and "Error" not in status.inner_text()
        assert Path(sessions_dir).name in status.inner_text() and "同名的普通文件" in status.inner_text()
        assert str(Path(sessions_dir).parent) not in body
    finally:
        context.close()
        if moved is not None:
            own.unlink()
            moved.rename(own)
