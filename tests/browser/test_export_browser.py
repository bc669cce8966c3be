"""The exported pages in Debian's chromium: readable at 390 px and 1400 px, light and dark, and offline.

A page is opened from a file (as a reader opens a download); every request other than that file is
recorded and refused. Screenshots go to $EXPORT_SCREENSHOTS (default: pytest's tmp folder).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from browser_tabs import fits_at, looks
from conftest import launch
from s11_export import render_html, render_markdown

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))   # the export cases live with the export tests
from test_export import BRANCH_B, BRANCH_B_LINEAGE, TRACKER, remote_image_session  # noqa: E402

pytestmark = [pytest.mark.browser]

WIDTHS = (390, 1400)
SCHEMES = ("light", "dark")
LONG = "x" * 400   # an unbroken word far wider than a phone


def hostile_page_session():
    """A fork whose every name is one long unbroken word, with long URLs and code lines inside."""
    long_url = f"https://{TRACKER}/" + "a" * 300 + ".png"
    return {"session_id": "s" + "0" * 200, "title": "标题" + LONG, "parent_id": "p" + "1" * 200, "fork_point": 1,
            "created_at": "2026-08-25 18:46:40",
            "source": {"format": "claude-code", "file": "f" * 300 + ".jsonl", "session_id": "i" * 200,
                       "label": "l" * 200, "git_branch": "b" * 200},
            "messages": [
                {"role": "r" * 200, "label": "标签" + LONG, "model": "m" * 200, "content": f"看 ![x]({long_url})"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "tool" + LONG, "input": {"command": "echo " + LONG}},
                    {"type": "text", "text": "```\n" + "code_line_" * 100 + "\n```"}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": long_url,
                                              "truncated_from": 10 ** 9}]},
                {"role": "user", "content": f"<img src={long_url}> {long_url}"},
            ]}


PAGES = {
    "branch-b": lambda: render_html(BRANCH_B, BRANCH_B_LINEAGE),
    "hostile": lambda: render_html(hostile_page_session(), redact=False),
    "images": lambda: render_html(remote_image_session(), redact=False),
}

WIDTH_OF_PAGE = "() => [document.documentElement.scrollWidth, window.innerWidth]"
# The divider's text as the browser laid it out: one rectangle per piece of text on each line.
DIVIDER_BOXES = """() => {
    const range = document.createRange();
    range.selectNodeContents(document.querySelector('.fork span'));
    return [...range.getClientRects()].map((box) => ({left: box.left, right: box.right, top: box.top,
                                                       bottom: box.bottom}));
}"""


def printed_over_each_other(boxes):
    """Pairs of text boxes that share more than a pixel both across and down: text printed on text."""
    return [(one, other) for index, one in enumerate(boxes) for other in boxes[index + 1:]
            if min(one["right"], other["right"]) - max(one["left"], other["left"]) > 1
            and min(one["bottom"], other["bottom"]) - max(one["top"], other["top"]) > 1]


URL_ATTRIBUTES = "[src], [href], [srcset], [action], [formaction], [poster], [data], [background], [ping], [srcdoc]"


@pytest.fixture(scope="module")
def page_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("exported_pages")
    files = {}
    for name, render in PAGES.items():
        files[name] = folder / f"{name}.html"
        files[name].write_text(render(), encoding="utf-8")
    return files


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory):
    folder = os.environ.get("EXPORT_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return Path(folder)
    return tmp_path_factory.mktemp("export_screenshots")


class OfflinePage:
    """A page in a fresh context that refuses (and remembers) every request except its own file."""

    def __init__(self, browser, url: str, width: int, scheme: str):
        self.context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.console: list[str] = []
        self.page.route("**/*", self._refuse_other_requests(url))
        self.page.on("console", lambda message: self.console.append(message.text))
        self.page.goto(url)
        self.page.wait_for_function("document.fonts.status === 'loaded'")

    def _refuse_other_requests(self, own_url: str):
        def handle(route):
            if route.request.url == own_url:
                route.continue_()
            else:
                self.requests.append(route.request.url)
                route.abort()
        return handle

    def show(self, width: int, scheme: str) -> None:
        """Resize and re-scheme this window, then load the page again from its file."""
        self.page.set_viewport_size({"width": width, "height": 900})
        self.page.emulate_media(color_scheme=scheme)
        self.page.reload()
        self.page.wait_for_function("document.fonts.status === 'loaded'")

    def close(self):
        self.context.close()


@pytest.mark.parametrize("name", list(PAGES))
def test_exported_page_fits_the_screen_and_stays_offline(browser, page_files, screenshots, name):
    """Each width and colour scheme in turn, in one window resized and re-schemed in place and then loaded afresh
    (the page is plain HTML and CSS: what a new window of that size would show)."""
    opened = OfflinePage(browser, page_files[name].as_uri(), WIDTHS[0], SCHEMES[0])
    try:
        page = opened.page
        for width in WIDTHS:
            for scheme in SCHEMES:
                where = f"{name} at {width} px, {scheme}"
                opened.show(width, scheme)
                page.screenshot(path=str(screenshots / f"export-{name}-{width}-{scheme}.png"), full_page=True)
                scroll_width, inner_width = page.evaluate(WIDTH_OF_PAGE)
                assert scroll_width <= inner_width, f"{where}: {scroll_width}px wide in a {inner_width}px window"
                assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (scheme == "dark")
                assert page.locator(URL_ATTRIBUTES).count() == 0, where
                assert page.locator("section.message").count() == len(page.locator("section").all()) >= 4, where
                text_size = page.evaluate(
                    "() => parseFloat(getComputedStyle(document.querySelector('.message')).fontSize)")
                assert text_size >= 14, where   # readable without zooming: the viewport meta keeps phones at 1:1
                assert opened.requests == [] and not [line for line in opened.console if "Refused" in line], where
    finally:
        opened.close()


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("name", ["branch-b", "hostile"])
def test_the_fork_divider_wraps_without_its_lines_overlapping(browser, page_files, name, scheme):
    opened = OfflinePage(browser, page_files[name].as_uri(), 390, scheme)
    try:
        boxes = opened.page.evaluate(DIVIDER_BOXES)
        assert printed_over_each_other(boxes) == []
        lines = sorted({round(box["top"]) for box in boxes})
        assert len(lines) >= 2, "at 390 px the divider should need two lines, or this test proves nothing"
        divider = opened.page.locator(".fork").bounding_box()
        assert divider["y"] - 1 <= min(box["top"] for box in boxes)
        assert max(box["bottom"] for box in boxes) <= divider["y"] + divider["height"] + 1   # nothing spills out
    finally:
        opened.close()


def test_the_overlap_check_can_fail(browser, page_files, tmp_path):
    # The old stylesheet drew the divider with line-height: 0: its wrapped lines sat on one another.
    old = page_files["branch-b"].read_text(encoding="utf-8").replace("</style>", ".fork { line-height: 0; }</style>")
    path = tmp_path / "old-divider.html"
    path.write_text(old, encoding="utf-8")
    opened = OfflinePage(browser, path.as_uri(), 390, "light")
    try:
        assert printed_over_each_other(opened.page.evaluate(DIVIDER_BOXES)) != []
    finally:
        opened.close()


def test_a_page_without_the_wrapping_rules_would_overflow(browser, page_files, tmp_path):
    # Proof that the hostile page really is wider than a phone when nothing may break its words.
    unbreakable = page_files["hostile"].read_text(encoding="utf-8").replace(
        "</style>", "* { overflow-wrap: normal !important; }</style>")
    path = tmp_path / "unbreakable.html"
    path.write_text(unbreakable, encoding="utf-8")
    opened = OfflinePage(browser, path.as_uri(), 390, "light")
    try:
        scroll_width, inner_width = opened.page.evaluate(WIDTH_OF_PAGE)
        assert scroll_width > inner_width
    finally:
        opened.close()


def test_the_other_width_check_can_fail(browser):
    # fits_at() is what the walks use to check the other screen width without walking again: it must see a page
    # that fits 1400 px but not a phone, and put the viewport back either way.
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    try:
        page.set_content('<div style="width: 800px">宽</div>')
        fits_at(page, (1400,))
        with pytest.raises(AssertionError, match=r"^8\d\d px of page in a 390 px wide window"):
            fits_at(page, (1400, 390))
        assert page.viewport_size == {"width": 1400, "height": 900}
    finally:
        page.close()


def test_a_walk_runs_at_its_first_look_unless_all_are_asked_for(monkeypatch):
    import browser_tabs

    assert looks((1400, "light"), (390, "dark")) == ([(1400, "light"), (390, "dark")] if browser_tabs.ALL_LOOKS
                                                     else [(1400, "light")])
    monkeypatch.setattr(browser_tabs, "ALL_LOOKS", True)
    assert looks(390, 1400, 1024, keep=2) == [390, 1400, 1024]
    monkeypatch.setattr(browser_tabs, "ALL_LOOKS", False)
    assert looks(390, 1400, 1024, keep=2) == [390, 1400]


def markdown_viewer_page(markdown: str) -> str:
    """The Markdown export as a careless viewer shows it: CommonMark with raw HTML on, and no CSP at all."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").render(markdown)
    return f'<!doctype html><html><head><meta charset="utf-8"></head><body>{body}</body></html>'


def test_the_markdown_export_fetches_nothing_in_a_viewer_without_a_csp(browser, tmp_path):
    pytest.importorskip("markdown_it")
    path = tmp_path / "viewer.html"
    path.write_text(markdown_viewer_page(render_markdown(remote_image_session(), redact=False)), encoding="utf-8")
    opened = OfflinePage(browser, path.as_uri(), 1400, "light")
    try:
        assert opened.page.locator("img").count() == 0
        assert opened.requests == []
        assert opened.page.get_by_text(f"http://{TRACKER}/a.png").count() >= 1   # the link is shown as text
    finally:
        opened.close()


def test_the_viewer_check_can_fail(browser, tmp_path):
    pytest.importorskip("markdown_it")
    path = tmp_path / "raw.html"
    path.write_text(markdown_viewer_page(f"![x](http://{TRACKER}/a.png)"), encoding="utf-8")
    opened = OfflinePage(browser, path.as_uri(), 1400, "light")
    try:
        opened.page.wait_for_timeout(200)
        assert any(TRACKER in url for url in opened.requests)
    finally:
        opened.close()


@pytest.mark.slow
def test_the_gradio_preview_of_the_export_fetches_nothing_and_draws_no_diagram(browser):
    gr = pytest.importorskip("gradio")
    from test_export import hostile_import_session

    preview = (render_markdown(remote_image_session(), redact=False) + "\n\n"
               + render_markdown(hostile_import_session(), redact=False))
    with gr.Blocks() as demo:
        gr.Markdown(preview, elem_id="export-preview", container=True, padding=True)
    launch(demo)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        tracked: list[str] = []
        page.on("request", lambda request: tracked.append(request.url) if TRACKER in request.url else None)
        page.goto(demo.local_url)
        page.locator("#export-preview h3").first.wait_for(timeout=30_000)
        page.wait_for_timeout(500)   # give images and mermaid time to start, if anything would
        preview_box = page.locator("#export-preview")
        assert preview_box.locator("img").count() == 0
        assert preview_box.locator("svg[id^='mermaid']").count() == 0
        assert preview_box.get_by_text(f"![截图](http://{TRACKER}/a.png)").count() >= 1
        assert tracked == []
    finally:
        context.close()
        demo.close()
