"""The lab tab in Debian's chromium: every button runs its experiment and both columns show their evidence.

Set S11_LAB_SCREENSHOTS=docs to also write docs/lab.png (desktop: intro + first two experiments) and
docs/lab-phone.png (390 px, dark: the redaction experiment) after the run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from browser_tabs import open_tab

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAB_TAB = "🧪 为什么要这样写"
# What each column must show once its experiment ran: the verdict mark and a piece of concrete evidence.
EXPECTED = {
    "kill": (["❌", "读不出来", "字节"], ["✅", "读出"]),
    "conflict": (["❌", "悄悄丢掉的一轮", "窗口 1"], ["✅", "ConflictError", "窗口 1", "窗口 2"]),
    "ids": (["❌", "文件被删除了", "数据库密码轮换"], ["✅", "InvalidSessionId", "outside.json"]),
    "versions": (["❌", "丢掉的字段", "attachments"], ["✅", "UnsupportedVersion", "完全相同"]),
    "redact": (["❌", "13812345678", "11010519491231002X"], ["✅", "[已脱敏:手机号]", "[已脱敏:身份证号]"]),
    "drift": (["❌", "一声不吭"], ["✅", "文件已修改：cache_store.py"]),
}
# The kill round may tear with JSONDecodeError or (cut inside a character) UnicodeDecodeError.
KILL_ERRORS = ("JSONDecodeError", "UnicodeDecodeError")


def open_lab(browser, url: str, width: int = 1400, scheme: str = "light"):

    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    page.goto(f"{url}/?__theme={scheme}")
    open_tab(page, LAB_TAB)
    page.locator("#lab-intro").wait_for()
    return context, page


def run_in_page(page, key: str) -> tuple[str, str]:
    """Click the experiment's button and wait until both columns replaced their placeholder."""
    page.locator(f"#lab-{key}-run").click()
    book, ours = page.locator(f"#lab-{key}-book"), page.locator(f"#lab-{key}-ours")
    book.get_by_text(EXPECTED[key][0][0], exact=False).first.wait_for(timeout=30_000)
    ours.get_by_text(EXPECTED[key][1][0], exact=False).first.wait_for(timeout=30_000)
    return book.inner_text(), ours.inner_text()


def test_every_lab_button_fills_both_columns_with_their_evidence(browser, app_server):
    context, page = open_lab(browser, app_server)
    try:
        for key, (book_expected, ours_expected) in EXPECTED.items():
            book, ours = run_in_page(page, key)
            assert "书中原版" in book and "本仓库" in ours
            for piece in book_expected:
                assert piece in book, (key, piece)
            for piece in ours_expected:
                assert piece in ours, (key, piece)
            assert "❌" not in ours, key   # ours never fails where the book does
            if key == "kill":
                assert any(error in book for error in KILL_ERRORS)
        shoot(page, "lab.png", "body", "#lab-conflict")   # the intro and the first two experiments
    finally:
        context.close()


def test_each_experiment_shows_the_live_source_of_both_stores(browser, app_server):
    context, page = open_lab(browser, app_server)
    try:
        page.locator("#lab-ids-source").get_by_text("查看源码").click()
        book_code, ours_code = page.locator("#lab-ids-book-code"), page.locator("#lab-ids-ours-code")
        ours_code.get_by_text("def validate_session_id").first.wait_for(timeout=10_000)
        assert "os.path.join(self.storage_dir" in book_code.inner_text()
        assert "s11_book.py" in book_code.inner_text()
    finally:
        context.close()


def test_the_lab_fits_a_phone_screen_after_running(browser, app_server):
    context, page = open_lab(browser, app_server, width=390, scheme="dark")
    try:
        for key in ("redact", "versions"):
            run_in_page(page, key)
        shoot(page, "lab-phone.png", "#lab-redact", "#lab-redact-ours")
        # Gradio keeps the selected tab's label in the tab strip even when the labels together are wider
        # than a phone (not ours to fix); set the strip aside and measure the lab's own content.
        page.add_style_tag(content="[role=tablist] { display: none !important; }")
        page.wait_for_timeout(300)
        overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
    finally:
        context.close()


def shoot(page, name: str, first: str, last: str) -> None:
    """Screenshot from the top of `first` to the bottom of `last` (CSS selectors), full page width."""
    folder = os.environ.get("S11_LAB_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    page.mouse.move(0, 0)
    page.wait_for_timeout(500)
    top = page.evaluate(f"() => document.querySelector('{first}').getBoundingClientRect().top + window.scrollY")
    bottom = page.evaluate(f"() => document.querySelector('{last}').getBoundingClientRect().bottom + window.scrollY")
    width = page.viewport_size["width"]
    page.screenshot(path=str(Path(folder) / name), full_page=True, type="png",
                    clip={"x": 0, "y": max(top - 16, 0), "width": width, "height": bottom - top + 32})
