"""Chinese everywhere a reader looks, and a quiet console (issue 42 items 7 and 8), in Debian's chromium.

One walk per screen — 1400 px light and 390 px dark — over every tab with its folded panels opened and a node selected
(so the conversation, the upload box and the tables are on the page):
- no English word of gradio's own in an aria-label, title, placeholder, alt or role description (aria_zh.js), and
  none of gradio's English texts (upload box, footer, screen-reader notes) on the page; a few brand and format
  names (Claude Code, HTML, JSONL …) are allowed;
- every chat message's aria-label is plain text: 「用户消息：」/「助手消息：」, no Markdown marks, bounded length;
- mermaid draws the 8.11 tree even when the run finishes while another tab is shown, and the branch map when it
  changes while its panel is folded (or, on a phone, while it is hidden behind the text map): no "Syntax error"
  picture, no error in the console;
- no "分支 ?" anywhere, no stray "·" in the footer, and nothing wider than the phone at 390 px.

Set S11_CHINESE_SCREENSHOTS=/tmp/shots-polish to also save each tab's page at both sizes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from browser_tabs import looks, open_tab, wait_until_quiet

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DEMO_TAB = "8.11 会话持久化与多分支"
EXPLORER_TAB = "🌳 会话树浏览器"
ATTRIBUTES = ("aria-label", "title", "placeholder", "alt", "aria-roledescription")
# ASCII words our own Chinese labels use on purpose: product, format and field names, the book's role names
ALLOWED_WORDS = {"ID", "API", "Claude", "Code", "Pi", "Codex", "Gemini", "CLI", "HTML", "Markdown", "JSON", "JSONL",
                 "md", "html", "json", "jsonl", "zst", "examples", "user", "assistant", "system", "corp", "example",
                 "Agent", "Token", "LRU", "check"}
# gradio 6.31's own English texts seen on these pages (the test fails if any is on the page as a whole text)
GRADIO_TEXTS = {"Drop File Here", "- or -", "Click to Upload", "Use via API", "Textbox", "common.complete",
                "Stop Recording", "Loading...", "Uploading...", "Clear", "Copy", "Edit", "Error", "Warning", "Info",
                "Fullscreen", "Download", "Settings"}
MESSAGE_LABEL = re.compile(r"^(用户|助手)消息：")
MESSAGE_CHARS = 200
SESSION_TEXT = ".prose, .md, .message-content, pre, code, textarea, input, .cm-editor, table, svg, label"

COLLECT = """({attributes, skip}) => {
  const out = {attributes: [], texts: []};
  for (const element of document.querySelectorAll(attributes.map((name) => `[${name}]`).join(','))) {
    for (const name of attributes) {
      const value = element.getAttribute(name);
      if (value) out.attributes.push([name, value]);
    }
  }
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.nodeValue.trim();
    if (text && node.parentElement && !node.parentElement.closest(skip)) out.texts.push(text);
  }
  return out;
}"""


@pytest.fixture(scope="module")
def server(app_server):
    """The worker's shared workbench (tests/conftest.py): this file needs no options or folder of its own."""
    return app_server


def english_in(page) -> list[str]:
    """What is still English: attribute values with words outside ALLOWED_WORDS, message labels that are not
    plain, and gradio's texts."""
    found = page.evaluate(COLLECT, {"attributes": list(ATTRIBUTES), "skip": SESSION_TEXT})
    wrong = []
    for name, value in found["attributes"]:
        if name == "aria-label" and MESSAGE_LABEL.match(value):
            if "**" in value or "\\" in value or "`" in value or len(value) > MESSAGE_CHARS or "\n" in value:
                wrong.append(f"{name}: {value[:120]!r} (a message label that is not plain text)")
            continue
        if re.match(r"^(user|bot|assistant)'s message", value):
            wrong.append(f"{name}: {value[:80]!r}")
            continue
        words = set(re.findall(r"[A-Za-z]{2,}", re.sub(r"\w+(\.\w+)+|\w*_\w*", " ", value))) - ALLOWED_WORDS
        if words:
            wrong.append(f"{name}: {value[:80]!r} {sorted(words)}")
    wrong += [f"text: {text!r}" for text in found["texts"] if text in GRADIO_TEXTS]
    return wrong


def open_folded_panels(page) -> None:
    for label in page.locator(".gr-accordion > button.label-wrap").all():
        try:
            if label.is_visible() and "open" not in (label.get_attribute("class") or ""):
                label.click(timeout=3_000)
        except Exception:   # a panel that re-rendered under the click: the next walk opens it
            pass
    wait_until_quiet(page)   # the opened panels are drawn


def shoot(page, name: str) -> None:
    folder = os.environ.get("S11_CHINESE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.mouse.move(0, 0)
        page.screenshot(path=str(Path(folder) / name), full_page=True)


def wider_than_the_screen(page) -> list[int]:
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    return widths if widths[0] > widths[1] else []


def mermaid_errors(page) -> int:
    return page.evaluate("() => document.querySelectorAll('[aria-roledescription=error]').length"
                         " + (document.body.innerText.includes('Syntax error in text') ? 1 : 0)")


@pytest.mark.parametrize("width, scheme", looks((390, "dark"), (1400, "light")))
def test_every_tab_speaks_chinese_and_the_console_stays_quiet(browser, server, width, scheme):
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text[:300]) if message.type == "error" else None)
    page.on("pageerror", lambda error: console.append(f"pageerror: {str(error)[:300]}"))
    problems: dict[str, list] = {}
    try:
        page.goto(f"{server}/?__theme={scheme}")
        page.get_by_role("button", name="运行主会话").wait_for(timeout=60_000)
        page.wait_for_function("() => !document.querySelector('#s11-run button, button#s11-run').disabled",
                               timeout=30_000)
        # the run finishes while the explorer is shown: the tree's mermaid is drawn in a hidden tab
        page.get_by_role("button", name="运行主会话").click()
        open_tab(page, EXPLORER_TAB)
        page.locator("#s11-file-3 pre").first.wait_for(state="attached", timeout=30_000)
        wait_until_quiet(page)   # the tree's mermaid has been drawn (or failed) in the hidden tab
        open_tab(page, DEMO_TAB)
        page.locator("#s11-tree svg").first.wait_for(timeout=15_000)
        assert mermaid_errors(page) == 0
        problems[DEMO_TAB] = english_in(page) + wider_than_the_screen(page)
        shoot(page, f"chinese-demo-{width}-{scheme}.png")

        open_tab(page, EXPLORER_TAB)
        rows = page.locator("#s11x-list").get_by_text(re.compile(r"^[0-9a-f]{12}$")).locator("visible=true")
        rows.first.wait_for(timeout=15_000)
        rows.nth(1).click()
        page.locator("#s11x-path [aria-label]").first.wait_for(timeout=15_000)
        page.locator("#s11x-map-accordion > button.label-wrap").click()          # fold the branch map …
        third = rows.nth(2).inner_text().strip()
        rows.nth(2).click()                                                      # … and redraw it while folded
        page.locator("#s11x-details").get_by_text(third).first.wait_for(timeout=15_000)
        wait_until_quiet(page)   # the folded map has been redrawn
        open_folded_panels(page)
        assert mermaid_errors(page) == 0
        messages = page.evaluate("() => [...document.querySelectorAll('#s11x-path [aria-label]')]"
                                 ".map(e => e.getAttribute('aria-label')).filter(l => /消息：|'s message/.test(l))")
        assert messages and all(MESSAGE_LABEL.match(label) for label in messages), messages[:3]
        problems[EXPLORER_TAB] = english_in(page) + wider_than_the_screen(page)
        shoot(page, f"chinese-explorer-{width}-{scheme}.png")

        for tab in page.get_by_role("tab").all_inner_texts():
            if tab.strip() in (DEMO_TAB, EXPLORER_TAB):
                continue
            open_tab(page, tab.strip())
            wait_until_quiet(page)
            open_folded_panels(page)
            problems[tab.strip()] = english_in(page) + wider_than_the_screen(page)
            shoot(page, f"chinese-{len(problems)}-{width}-{scheme}.png")

        assert "分支 ?" not in page.locator("body").inner_text()
        footer = page.locator("footer").inner_text().strip()
        assert not footer.endswith("·") and "·" != footer, repr(footer)
        left = [f"{tab}: {item}" for tab, found in problems.items() for item in found]
        assert left == [], "\n".join(left)
        assert console == []
    finally:
        context.close()
