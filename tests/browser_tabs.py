"""Opening one of the workbench's tabs in a browser test, on a wide screen or a phone.

On a phone Gradio moves the later tabs behind its "More tabs" menu (named 更多页签 once aria_zh.js has run), and it
decides which ones after the first render; under load that can take seconds. So the helper waits for the tab bar, then looks again every 200 ms
for the tab itself or for the menu, until `timeout` seconds have passed."""

import re
import time


def open_tab(page, name: str, timeout: float = 60) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    deadline = time.monotonic() + timeout
    page.get_by_role("tab").first.wait_for(timeout=timeout * 1000)
    while True:
        tab = page.get_by_role("tab", name=name).locator("visible=true")
        more = page.get_by_role("button", name=re.compile("^(More tabs|更多页签)$")).locator("visible=true")
        try:
            if tab.count():
                tab.first.click(timeout=5_000)
                return
            if more.count():
                more.first.click(timeout=5_000)
                page.locator(".overflow-dropdown button", has_text=name).first.click(timeout=5_000)
                return
        except PlaywrightTimeout:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"no tab {name!r} and no 'More tabs' menu after {timeout} s")
        page.wait_for_timeout(200)
