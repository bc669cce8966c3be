"""Undo in Debian's chromium, as a reader: run the 8.11 demo, open the explorer, then in its 📜 history panel undo a
fork (the node leaves the list and goes to the trash), undo a resume and redo it, undo a delete, look at an old
revision of branch B read-only and go back to it -- each result under the button that was clicked, the disk agreeing;
on the read-only shelf the buttons are gone. No horizontal overflow at 1400 px or 390 px at
each step (the walk runs light at 1400 px; S11_ALL_LOOKS=1 also walks it dark at 390 px).

Set S11_UNDO_SCREENSHOTS=/some/folder to also write the panel's screenshots there (both widths and schemes with
S11_ALL_LOOKS=1).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from browser_tabs import click_message, fits_at, looks, open_explorer, running_app, space_store

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    sessions = tmp_path_factory.mktemp("undo_sessions")
    with running_app(sessions) as url:
        yield url, sessions


def click(page, selector: str) -> None:
    button = page.locator(selector)
    button.scroll_into_view_if_needed()
    page.wait_for_function(f"!document.querySelector('{selector}').disabled", timeout=15_000)
    button.click()


def result(page, selector: str, text: str) -> str:
    """The result line under the buttons that were clicked says `text` (and sits right under them)."""
    line = page.locator(selector)
    line.get_by_text(text).wait_for(timeout=20_000)
    return line.inner_text()


def open_action(page, name: str) -> None:
    label = page.locator(f"#s11x-{name}-tab > button.label-wrap")
    if "open" not in (label.get_attribute("class") or ""):
        label.click()


def select(page, session_id: str) -> None:
    page.locator("#s11x-list").get_by_text(session_id, exact=True).locator("visible=true").first.click()
    page.locator("#s11x-details").get_by_text(session_id).wait_for(timeout=15_000)


def listed(page) -> set[str]:
    cells = page.locator("#s11x-list .body-cell").all_inner_texts()
    return {cell.strip() for cell in cells if re.fullmatch(r"[0-9a-f]{12}", cell.strip())}


def shoot(page, name: str) -> None:
    folder = os.environ.get("S11_UNDO_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.mouse.move(0, 0)
        page.wait_for_timeout(600)
        page.locator("#s11h-panel").screenshot(path=str(Path(folder) / name), type="png")


@pytest.mark.parametrize("width, scheme", looks((1400, "light"), (390, "dark")))
def test_undo_a_fork_a_resume_and_a_delete_redo_one_and_go_back_to_a_revision(browser, server, width, scheme):
    url, sessions = server
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    try:
        page.goto(f"{url}/?__theme={scheme}")
        page.get_by_role("button", name="运行主会话").click()
        page.locator("#s11-file-3 pre").first.wait_for(timeout=30_000)
        open_explorer(page)
        store = space_store(sessions, page)
        b = {s["message_count"]: s["session_id"] for s in store.list_sessions()}[9]
        timeline = page.locator("#s11h-timeline")
        timeline.get_by_text("续写了分支 B：revision 1 → 2").wait_for(timeout=15_000)   # the demo, in the journal

        # a fork from branch B, undone: it leaves the list and the tree, and sits in the trash
        select(page, b)
        click_message(page, 6)   # a click on message 6 picks the position
        page.locator("#s11x-fork").get_by_text("第 6 条").wait_for()
        page.locator("#s11x-fork-text textarea").fill("换个思路：先加监控")
        click(page, "#s11x-fork")
        child = re.search(r"新会话 ([0-9a-f]{12})", result(page, "#s11x-fork-result", "已在第 6 条之后分叉")).group(1)
        page.locator("#s11h-next").get_by_text("分叉了分支 B.A（自第 6 条）").wait_for(timeout=15_000)
        click(page, "#s11h-undo")
        result(page, "#s11h-undo-result", "撤销了第 6 步：分叉了分支 B.A（自第 6 条）")
        page.wait_for_function(f"!document.querySelector('#s11x-list').innerText.includes('{child}')")
        assert store.load(child) is None and child not in page.locator("#s11x-tree").inner_text()
        page.locator("#s11x-details").get_by_text(b).wait_for(timeout=15_000)   # the parent is selected now
        open_action(page, "trash")
        page.locator("#s11x-trash input").click()
        assert page.get_by_role("option", name=re.compile(child)).count() == 1
        page.keyboard.press("Escape")
        timeline.get_by_text("↶ 已撤销").first.wait_for(timeout=15_000)
        fits_at(page)

        # a resume of B, undone (the previous content saved as a new revision), then redone
        open_action(page, "resume")
        page.locator("#s11x-resume-text textarea").fill("监控上线后再看内存曲线")
        click(page, "#s11x-resume")
        result(page, "#s11x-resume-result", "已恢复并续写保存")
        click(page, "#s11h-undo")
        result(page, "#s11h-undo-result", "撤销了第 8 步：续写了分支 B：revision 2 → 3")
        assert len(store.load(b).messages) == 9 and store.load(b).revision == 4
        click(page, "#s11h-redo")
        result(page, "#s11h-undo-result", "重做了第 8 步：续写了分支 B：revision 2 → 3")
        assert store.load(b).messages[-1]["content"] == "监控上线后再看内存曲线"
        page.locator("#s11x-path").get_by_text("监控上线后再看内存曲线").wait_for(timeout=15_000)

        # a delete of B, undone: B is back in the list
        click(page, "#s11x-delete")
        result(page, "#s11x-trash-result", "移进回收站")
        page.wait_for_function(f"!document.querySelector('#s11x-list').innerText.includes('{b}')")
        click(page, "#s11h-undo")
        result(page, "#s11h-undo-result", "撤销了第 11 步：删除了")
        page.wait_for_function(f"document.querySelector('#s11x-list').innerText.includes('{b}')")
        assert store.load(b) is not None
        fits_at(page)

        # B's revisions: look at the first one read-only, then go back to it (a new revision, nothing lost)
        select(page, b)
        revisions = page.locator("#s11h-revisions")
        revisions.get_by_text("◀ 现在").wait_for(timeout=15_000)
        revisions.locator("label").filter(has_text="第 1 版 · 7 条").click()
        click(page, "#s11h-look")
        note = page.locator("#s11h-looking-note")
        note.get_by_text("只读：分支 B 的第 1 版，7 条消息").wait_for(timeout=15_000)
        assert "现在多了 3 条" in note.inner_text()
        page.locator("#s11h-looking").get_by_text("弱引用缓存").first.wait_for(timeout=15_000)
        fits_at(page)
        shoot(page, f"undo-{width}-{scheme}.png")
        revision = store.load(b).revision
        click(page, "#s11h-back")
        result(page, "#s11h-revision-result", "已把 分支 B 回到第 1 版")
        node = store.load(b)
        assert node.revision == revision + 1 and len(node.messages) == 7
        page.wait_for_function("!document.querySelector('#s11x-path').innerText.includes('监控上线后再看内存曲线')")
        fits_at(page)

        # the read-only shelf: the panel reads, but offers no undo, redo or revert
        page.locator("#s11x-source").get_by_text("📚 共享书架").click()
        page.locator("#s11h-next").get_by_text("只读").wait_for(timeout=15_000)
        for button in ("#s11h-undo", "#s11h-redo", "#s11h-back"):
            page.locator(button).wait_for(state="hidden", timeout=15_000)
        page.locator("#s11x-source").get_by_text("📁 我的空间").click()
        page.locator("#s11h-undo").wait_for(state="visible", timeout=15_000)

        # the other colour scheme, same panel (the space and the selection survive a reload)
        other = "dark" if scheme == "light" else "light"
        page.goto(f"{url}/?__theme={other}")
        open_explorer(page)
        timeline.get_by_text("回到第 1 版").first.wait_for(timeout=15_000)
        fits_at(page)
        shoot(page, f"undo-{width}-{other}.png")
    finally:
        context.close()
