"""Fork + converge in Debian's chromium, as a reader: run the 8.11 demo, open the explorer, compare 分支 A with 分支 B,
converge into B carrying one message of A, see the dashed edge and the converged mark, export the converge node and
find the 🔀 card, label a message and see it in the tree -- at 1400 px and 390 px, light and dark, with no page
overflow and no inner scroller hiding a column.

Set S11_CONVERGE_SCREENSHOTS=docs to also write docs/converge-compare-*.png and docs/converge-tree-*.png
(1400 px light and 390 px dark, the two full walks).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from browser_tabs import fits_at, looks, open_explorer, running_app, space_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sessions = tmp_path_factory.mktemp("converge_sessions")
    with running_app(sessions) as url:
        yield url, sessions


def hidden_scrollers(page, selector: str) -> list:
    """Elements inside selector that scroll sideways (content wider than the box) -- a column could hide there."""
    return page.evaluate("""(sel) => [...document.querySelectorAll(sel + ' *')].filter(e => {
        const style = getComputedStyle(e);
        return e.scrollWidth > e.clientWidth + 1 && /(auto|scroll|hidden)/.test(style.overflowX)
               && e.clientWidth > 0 && !e.closest('.hide, [hidden]');
    }).map(e => e.tagName + '.' + e.className)""", selector)


def shoot(locator, name: str) -> None:
    folder = os.environ.get("S11_CONVERGE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        locator.page.mouse.move(0, 0)
        locator.page.wait_for_timeout(600)
        locator.screenshot(path=str(Path(folder) / name), type="png")


@pytest.mark.parametrize("width, scheme", looks((1400, "light"), (390, "dark")))
def test_compare_a_and_b_converge_into_b_and_export_the_card(browser, server, width, scheme):
    url, sessions = server
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme,
                                  accept_downloads=True)
    page = context.new_page()
    try:
        page.goto(f"{url}/?__theme={scheme}")
        page.get_by_role("button", name="运行主会话").click()
        page.locator("#s11-file-3 pre").first.wait_for(timeout=30_000)
        open_explorer(page)
        store = space_store(sessions, page)
        by_count = {s["message_count"]: s["session_id"] for s in store.list_sessions()}
        a, b = by_count[7], by_count[9]

        # the default pair is already branch A against branch B: one click compares them
        picked = []
        for _ in range(80):
            picked = page.evaluate("() => ['#s11c-a', '#s11c-b'].map(s => document.querySelector(s + ' input')?.value)")
            if picked[0] and picked[1] and a in picked[0] and b in picked[1]:
                break
            page.wait_for_timeout(250)
        assert a in (picked[0] or "") and b in (picked[1] or ""), picked
        page.locator("#s11c-compare").click()
        table = page.locator("#s11c-diff table")
        table.wait_for(timeout=15_000)
        assert "前 5 条相同" in page.locator("#s11c-shared").inner_text()
        assert "之后 2 条消息、0 次工具调用" in page.locator("#s11c-summary").inner_text()
        row = table.locator("tbody tr").first
        left, right = row.locator("td").nth(1).bounding_box(), row.locator("td").nth(2).bounding_box()
        assert "方案 A" in row.locator("td").nth(1).inner_text() and "方案 B" in row.locator("td").nth(2).inner_text()
        if width >= 1000:   # two columns side by side
            assert abs(left["y"] - right["y"]) < 2 and left["x"] + left["width"] <= right["x"] + 1
        else:               # stacked on a phone: B under A, both the full width
            assert right["y"] >= left["y"] + left["height"] - 1 and right["width"] > width * 0.6
        for box in (left, right):
            assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1
        assert hidden_scrollers(page, "#s11c-panel") == []
        fits_at(page)
        shoot(page.locator("#s11c-panel"), f"converge-compare-{width}-{scheme}.png")

        # converge into B, carrying A's message 6
        assert page.locator("#s11c-winner input:checked").evaluate("e => e.value") == b or \
            b in page.locator("#s11c-winner label.selected").inner_text()
        page.locator("#s11c-carry label").filter(has_text="A #6").click()
        page.locator("#s11c-decision textarea").fill("压测数据支持方案 B；A 的 LRU 上限也留着")
        page.locator("#s11c-converge-button").click()
        page.locator("#s11c-result").get_by_text("已收敛").wait_for(timeout=15_000)
        new_id = re.search(r"新节点 ([0-9a-f]{12})", page.locator("#s11c-result").inner_text()).group(1)
        node = store.load(new_id)
        assert node.converged_from == [a] and node.parent_id == b
        assert node.messages[9]["origin"] == {"session_id": a, "index": 6}

        # the tree and the map: a dashed edge into the converge node, the other branch marked converged
        page.locator("#s11x-tree").get_by_text(f"已收敛到 [{new_id}]").wait_for(timeout=15_000)
        svg = page.locator("#s11x-map svg[id^='mermaid']")
        # on a phone the diagram is drawn but hidden: the page shows the same tree as text (its marks included)
        svg.filter(has_text="已收敛到").wait_for(state="visible" if width > 720 else "attached", timeout=20_000)
        if width <= 720:
            assert "已收敛到" in page.locator("#s11x-map").inner_text()
        dashed = page.evaluate("""() => [...document.querySelectorAll('#s11x-map svg path')].filter(p =>
            /dotted|dashed/.test(p.getAttribute('class') || '') ||
            (getComputedStyle(p).strokeDasharray || 'none') !== 'none').length""")
        assert dashed >= 1
        fits_at(page)
        shoot(page.locator("#s11x-map-accordion"), f"converge-tree-{width}-{scheme}.png")

        # export the converge node (now selected) and find the card
        page.locator("#s11x-export-tab > button.label-wrap").click()   # the action areas are stacked accordions
        page.locator("#s11x-export").click()
        page.locator("#s11x-export-result").get_by_text("已导出会话").wait_for(timeout=15_000)
        preview = page.locator("#s11x-preview").inner_text()
        assert "🔀 收敛" in preview and "A 的 LRU 上限也留着" in preview and f"带自 {a} 的第 6 条" in preview
        with page.expect_download() as download:
            page.locator("#s11x-download-html").click()
        html = Path(download.value.path()).read_text("utf-8")
        assert '<section class="converge-card"' in html and a in html and b in html

        # label the carried message of the converge node: the tree shows it
        page.locator("#s11c-label-panel").get_by_text("给选中会话的一条消息加标签").click()
        page.locator("#s11c-label-at input").fill("10")
        page.locator("#s11c-label-text textarea").fill("LRU 上限也留着")
        page.locator("#s11c-label-button").click()
        page.locator("#s11x-tree").get_by_text("🏷️ #10 LRU 上限也留着").wait_for(timeout=15_000)
        assert store.load(new_id).messages[9]["label"] == "LRU 上限也留着"
        fits_at(page)
    finally:
        context.close()
