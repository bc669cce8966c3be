"""Sharing a whole exploration, in Debian's chromium: exported tree pages (3 branches, 1,000 nodes, hostile text)
at 390 and 1400 px in light and dark, every branch reachable from the sidebar and every anchor resolving; and the
explorer's share panel as a reader uses it (review, tick "unmask" on a false positive, add a string, download).

Set S11_SHARE_SCREENSHOTS=docs to also write docs/share-tree*.png and docs/share-review*.png during the run.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from browser_tabs import looks, open_explorer, running_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from share_trees import big_tree, hostile_tree, three_branches  # noqa: E402

SIZES = [(1400, "light"), (1400, "dark"), (390, "light"), (390, "dark")]


def shots_folder() -> Path | None:
    folder = os.environ.get("S11_SHARE_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        return Path(folder)
    return None


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """Three exported pages on disk: {name: (path, ids of every node)}."""
    import s11_tree_export as te
    from s11_session import SessionStore

    folder = tmp_path_factory.mktemp("share_pages")
    out = {}
    store = SessionStore(str(folder / "three"), durable=False)
    ids = three_branches(store)
    out["three"] = (folder / "three.html", list(ids.values()), ids)
    store_big = SessionStore(str(folder / "big"), durable=False)
    big = big_tree(store_big, 1000)
    out["big"] = (folder / "big.html", big, {"root": big[0], "last": big[-1]})
    store_hostile = SessionStore(str(folder / "hostile"), durable=False)
    hostile = hostile_tree(store_hostile)
    out["hostile"] = (folder / "hostile.html", list(hostile.values()), hostile)
    for name, store_of, focus in (("three", store, ids["b1"]), ("big", store_big, big[0]),
                                  ("hostile", store_hostile, hostile["child"])):
        out[name][0].write_text(te.render_html(te.prepare(store_of, focus, "tree", added=["db01.corp.example"])),
                                encoding="utf-8")
    return out


def open_page(browser, path: Path, width: int, scheme: str, fragment: str = ""):
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    dialogs, requests = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(path.as_uri() + fragment)
    return context, page, dialogs, requests


CHECKS = """() => {
  const links = [...document.querySelectorAll('a[href]')];
  const missing = links.map(a => a.getAttribute('href')).filter(h => !h.startsWith('#') || !document.getElementById(h.slice(1)));
  const handlers = [...document.querySelectorAll('*')].flatMap(e => [...e.attributes].map(a => a.name))
                      .filter(n => n.startsWith('on'));
  const bg = getComputedStyle(document.body).backgroundColor.match(/\\d+/g).map(Number);
  return {links: links.length, missing: missing.slice(0, 5), handlers, scripts: document.scripts.length,
          foreign: document.querySelectorAll('img, svg, iframe, object, embed, script, form, input').length,
          sidebar: [...document.querySelectorAll('nav.tree li > a')].map(a => a.getAttribute('href').slice(1)),
          sections: [...document.querySelectorAll('section.node')].map(s => s.id),
          overflow: document.documentElement.scrollWidth - window.innerWidth,
          dark: (bg[0] + bg[1] + bg[2]) / 3 < 100};
}"""


def click_and_land(page, session_id: str) -> None:
    link = page.locator(f'nav.tree a[href="#{session_id}"]')
    link.scroll_into_view_if_needed()
    link.click()
    page.wait_for_function(f"location.hash === '#{session_id}'")
    landed = page.evaluate("() => { const t = document.querySelector(':target'); const r = t.getBoundingClientRect();"
                           " return [t.id, r.top, window.innerHeight]; }")
    assert landed[0] == session_id and -2 <= landed[1] < landed[2], landed


@pytest.mark.parametrize("name", ["three", "big", "hostile"])
def test_an_exported_tree_page_renders_and_every_branch_is_reachable(browser, pages, name):
    """One page, shown at each width and colour scheme in turn (resized and re-schemed in place, then loaded
    afresh: the page is plain HTML and CSS, so this is what a new window of that size would show)."""
    path, ids, named = pages[name]
    context, page, dialogs, requests = open_page(browser, path, *SIZES[0])
    try:
        for width, scheme in SIZES:
            where = f"{name} at {width} px, {scheme}"
            page.set_viewport_size({"width": width, "height": 900})
            page.emulate_media(color_scheme=scheme)
            page.goto("about:blank")
            page.goto(path.as_uri())
            found = page.evaluate(CHECKS)
            assert found["missing"] == [] and found["links"] >= len(ids), where
            assert found["handlers"] == [] and found["scripts"] == 0 and found["foreign"] == 0, where
            assert set(found["sidebar"]) == set(ids) == set(found["sections"]), where
            assert found["overflow"] <= 1, f"{where}: {found['overflow']} px of horizontal overflow"
            assert found["dark"] == (scheme == "dark"), where
            targets = list(ids) if name != "big" else [named["root"], ids[1], ids[499], ids[998], named["last"]]
            for session_id in targets:
                click_and_land(page, session_id)
            folder = shots_folder()
            if folder and name == "three":
                page.goto(path.as_uri() + f"#{named['b']}")
                page.wait_for_timeout(300)
                suffix = {(1400, "light"): "", (1400, "dark"): "-dark", (390, "light"): "-phone"}.get((width, scheme))
                if suffix is not None:
                    page.evaluate("window.scrollTo(0, 0)")
                    page.screenshot(path=str(folder / f"share-tree{suffix}.png"), full_page=False)
        assert dialogs == [] and all(url.startswith(("file://", "about:")) for url in requests)
    finally:
        context.close()


def test_every_message_anchor_resolves_and_is_highlighted(browser, pages):
    path, ids, named = pages["three"]
    context, page, dialogs, _ = open_page(browser, path, 390, "light")
    try:
        anchors = page.evaluate("() => [...document.querySelectorAll('section.message')].map(s => s.id)")
        assert len(anchors) == 8 and all(re.fullmatch(r"[0-9a-f]{12}-\d+", a) for a in anchors)
        for anchor in (f"{named['b']}-5", f"{named['root']}-1", f"{named['b1']}-6"):
            page.goto(path.as_uri() + f"#{anchor}")
            target = page.evaluate("() => [document.querySelector(':target').id, "
                                   "getComputedStyle(document.querySelector(':target')).outlineStyle]")
            assert target == [anchor, "solid"]
        # the inherited-prefix link of B1 takes the reader to B's own messages
        page.goto(path.as_uri() + f"#{named['b1']}")
        page.locator(f'[id="{named["b1"]}"] .relations a[href="#{named["b"]}-4"]').click()
        page.wait_for_function(f"location.hash === '#{named['b']}-4'")
        assert dialogs == []
    finally:
        context.close()


# ── the share panel in the explorer ───────────────────────────────────────────────────────────
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sessions = tmp_path_factory.mktemp("share_sessions")
    with running_app(sessions) as url:
        yield url, sessions


@pytest.mark.parametrize("width, scheme", looks((1400, "light"), (390, "dark")))
def test_a_reader_reviews_unmasks_one_adds_a_string_and_downloads(browser, server, width, scheme):
    from s11_session import SessionStore

    url, sessions = server
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme,
                                  accept_downloads=True)
    page = context.new_page()
    dialogs, requests = [], []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("request", lambda request: requests.append(request.url))
    try:
        page.goto(url + "/")
        page.get_by_role("tab").first.wait_for()
        open_explorer(page)
        space = re.search(r"[0-9a-f]{16}", page.locator("#s11x-space").inner_text()).group(0)
        ids = three_branches(SessionStore(sessions / "spaces" / space))
        page.locator("#s11x-refresh").click()
        page.locator("#s11x-list").get_by_text(ids["b1"], exact=True).locator("visible=true").first.click()
        page.locator("#s11x-details").get_by_text(ids["b1"]).wait_for(timeout=15_000)
        page.locator("#s11x-share-tab > button.label-wrap").click()   # the action areas are stacked accordions
        page.locator("#s11s-review").click()
        page.locator("#s11s-summary").get_by_text("找到").wait_for(timeout=15_000)
        table = page.locator("#s11s-table")
        table.get_by_text("«4111 1111 1111 1111»", exact=False).locator("visible=true").first.wait_for(timeout=15_000)
        assert "邮箱 ×1" in page.locator("#s11s-summary").inner_text()
        page.locator("#s11s-added textarea").fill("db01.corp.example")
        page.locator("#s11s-review").click()
        table.get_by_text("手动").locator("visible=true").first.wait_for(timeout=15_000)
        unmask = page.locator("#s11s-unmask")
        unmask.get_by_text("银行卡号").wait_for(timeout=15_000)
        assert unmask.locator("input[type=checkbox]").count() == 6
        unmask.get_by_label(re.compile("银行卡号")).check()
        assert [unmask.locator("input[type=checkbox]").nth(i).is_checked() for i in range(6)].count(True) == 1
        folder = shots_folder()
        if folder:
            page.locator("#s11s-table").scroll_into_view_if_needed()
            suffix = "" if width == 1400 else "-phone"
            page.locator("#s11x-actions").screenshot(path=str(folder / f"share-review{suffix}.png"))
        page.locator("#s11s-build").click()
        page.locator("#s11s-notice").get_by_text("已生成").wait_for(timeout=30_000)
        assert "揭开 1 处" in page.locator("#s11s-notice").inner_text()
        texts = {}
        for kind in ("html", "md", "jsonl"):
            page.wait_for_function(f"!document.querySelector('#s11s-{kind}').disabled")
            with page.expect_download(timeout=15_000) as info:
                page.locator(f"#s11s-{kind}").click()
            texts[kind] = Path(info.value.path()).read_text(encoding="utf-8")
        for text in texts.values():
            assert "4111 1111 1111 1111" in text and "alice@example.com" not in text
            assert "db01.corp.example" not in text and "13812345678" not in text
        assert texts["jsonl"].startswith('{"format":"s11-session-tree"')
        assert page.locator("#s11s-manifest").get_by_text("尽力而为").count() == 1
        assert dialogs == []
        assert all(re.match(r"(https?://(127\.0\.0\.1|localhost)[:/]|data:|blob:|about:)", u) for u in requests)
    finally:
        context.close()
