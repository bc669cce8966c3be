"""Opening one of the workbench's tabs in a browser test, on a wide screen or a phone.

On a phone Gradio moves the later tabs behind its "More tabs" menu (named 更多页签 once aria_zh.js has run), and it
decides which ones after the first render; under load that can take seconds. So the helper waits for the tab bar, then looks again every 200 ms
for the tab itself or for the menu, until `timeout` seconds have passed."""

import contextlib
import os
import re
import sys
import time
from pathlib import Path

from conftest import REPO, launch

EXPLORER_TAB = "🌳 会话树浏览器"
# S11_ALL_LOOKS=1: every parametrized walk at every look it lists (for screenshot runs); see looks()
ALL_LOOKS = os.environ.get("S11_ALL_LOOKS") == "1"


def looks(*pairs: tuple, keep: int = 1) -> list:
    """The (width, scheme) pairs a walk runs at: the first `keep`, or all of them with S11_ALL_LOOKS=1.
    A walk costs 10-40 CPU-seconds of chromium, and running every walk at every look took a fifth of the suite;
    the files put different looks first, so the wide and the phone screen, light and dark, each keep walks of
    their own, and fits_at() checks the other width's layout at a walk's checkpoints without walking again."""
    return list(pairs if ALL_LOOKS else pairs[:keep])


# Two frames, or 2 s if the page draws no frames: page.evaluate() has no timeout of its own, and a full run once hung
# for minutes inside a test that calls fits_at() (the widths are read either way; reading scrollWidth lays out).
TWO_FRAMES_THEN_WIDTHS = """() => new Promise(done => {
    const widths = () => done([document.documentElement.scrollWidth, window.innerWidth]);
    requestAnimationFrame(() => requestAnimationFrame(widths));
    setTimeout(widths, 2000);
})"""


def fits_at(page, widths=(1400, 390)) -> None:
    """The page has no horizontal overflow at each of `widths` (the viewport is resized, then put back)."""
    size = page.viewport_size
    try:
        for width in widths:
            page.set_viewport_size({"width": width, "height": size["height"]})
            # two frames: what the page lays out in script after a resize (the tab bar's menu) has run by then
            scroll, inner = page.evaluate(TWO_FRAMES_THEN_WIDTHS)
            assert scroll <= inner, f"{scroll} px of page in a {inner} px wide window"
    finally:
        page.set_viewport_size(size)


@contextlib.contextmanager
def serving(sessions: Path, **build_options):
    """app.build_app(sessions, **build_options) served on 127.0.0.1:<free port> for one test module;
    yields (base URL, the gradio app)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import app

    demo = app.build_app(sessions, **build_options)
    url = launch(demo, **app.launch_options(demo))
    try:
        yield url, demo
    finally:
        demo.close()


@contextlib.contextmanager
def running_app(sessions: Path, **build_options):
    """serving(), for the tests that need only the base URL."""
    with serving(sessions, **build_options) as (url, _):
        yield url


def open_explorer(page) -> None:
    """Open the explorer tab and wait until the page has its space (the token came back)."""
    open_tab(page, EXPLORER_TAB)
    page.locator("#s11x-space").get_by_text("空间").wait_for(timeout=15_000)


def space_store(sessions: Path, page):
    """The store of the space this page shows (its id is printed in the space line)."""
    from s11_session import SessionStore
    space_id = re.search(r"[0-9a-f]{16}", page.locator("#s11x-space").inner_text()).group(0)
    return SessionStore(sessions / "spaces" / space_id)


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


# The page's own record of its last change: a MutationObserver set up on the first call, and any Gradio event still
# pending (its status tracker shown) counts as a change.
QUIET = """(quiet) => {
  let seen = window.__s11_quiet;
  if (!seen) {
    seen = window.__s11_quiet = {last: performance.now()};
    new MutationObserver(() => { seen.last = performance.now(); }).observe(document.body,
      {subtree: true, childList: true, characterData: true, attributes: true});
    return false;
  }
  if (document.querySelector('.wrap.full:not(.hide), .wrap.minimal:not(.hide)')) seen.last = performance.now();
  return performance.now() - seen.last >= quiet;
}"""


def wait_until_quiet(page, quiet_ms: int = 500, timeout: float = 15) -> None:
    """Wait until no Gradio event is pending and nothing on the page has changed for `quiet_ms`, counted from now
    (what a fixed pause used to wait for: a re-render, a diagram drawn, a panel filled). On an idle machine that is
    about `quiet_ms`; under load it waits as long as drawing takes. A page that never stops changing is looked at
    after `timeout` seconds, as the fixed pause did (nothing is asserted here)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    # counted from now: what the caller just did may not have reached the page yet
    page.evaluate("() => { if (window.__s11_quiet) window.__s11_quiet.last = performance.now(); }")
    try:
        page.wait_for_function(QUIET, arg=quiet_ms, polling=100, timeout=timeout * 1000)
    except PlaywrightTimeout:
        pass


def eventually(page, check, timeout: float = 5) -> bool:
    """check() looked at every 100 ms until it holds (True) or `timeout` seconds have passed (False): for a state
    the page reaches without an event to wait on, such as the end of a smooth scroll."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        page.wait_for_timeout(100)
    return True


LABEL_STILL = """([where, text, quiet]) => {
  const walk = document.createTreeWalker(document.querySelector(where), NodeFilter.SHOW_TEXT);
  let node = walk.nextNode();
  while (node && node.data.trim() !== text) node = walk.nextNode();
  const seen = window.__s11_still || (window.__s11_still = {key: null, since: 0});
  const box = node && node.parentElement.getBoundingClientRect();
  const key = box && box.height > 0 ? `${box.left},${box.top},${box.width}` : null, now = performance.now();
  if (key === null || seen.key !== key) { seen.key = key; seen.since = now; return false; }
  return now - seen.since >= quiet;
}"""


def click_message(page, number: int, where: str = "#s11x-path") -> None:
    """Click message `number` ("#6") in a conversation once its label has kept its place for 0.3 s. Right after a
    select the chatbot is still drawing and scrolling its messages: a click then (seen once under load) can land on
    the message that has just moved under the pointer, which picks another position or none."""
    label = page.locator(where).get_by_text(f"#{number}", exact=True).first
    label.scroll_into_view_if_needed()
    page.wait_for_function(LABEL_STILL, arg=[where, f"#{number}", 300], polling=100, timeout=15_000)
    page.evaluate("delete window.__s11_still")
    label.click()
