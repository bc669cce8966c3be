"""The one fork control (issue 42 item 1), driven without gradio: a position only comes from a clicked message or an
explicit 「从头分叉」, never from an empty box read as 0; a ?session=&m= link picks message m, a reload picks nothing
and the fork is refused in Chinese with nothing written; a pick made in another session never lands on this one;
the lesson has the explorer's clickable conversation, so levels 1–3 are solved by clicks alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from s11_session import demo_tree_branching
from s11_workbench import fork_control
from s11_workbench.explorer import Explorer, View
from s11_workbench.fork_control import ForkPickError, click_pick, link_pick, position, start_pick
from s11_workbench.lesson import Lesson, LessonView
from s11_workbench.spaces import Limits, Spaces

ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)
SID = "a1b2c3d4e5f6"


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path / "sessions", limits=ROOMY)


@pytest.fixture
def explorer(spaces, tmp_path) -> Explorer:
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    return Explorer(spaces, export_root=str(tmp_path / "exports"), upload_root=str(uploads))


@pytest.fixture
def student(spaces):
    token = spaces.new_token()
    return token, demo_tree_branching(spaces.open(token).store)


def files(folder: Path) -> dict[str, bytes]:
    """Every file under folder with its bytes ('nothing was written' compares two of these)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def chinese(text: str) -> bool:
    return any("\u4e00" <= char <= "\u9fff" for char in text)


# ── the pick itself ──────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize(("value", "expected"), [
    (f"{SID}#6", 6), (f"{SID}#0", 0), (f" {SID}#12 ", 12),   # a click, an explicit 「从头分叉」
    (3, 3), ("3", 3), (3.0, 3), ("4.0", 4),                      # a script's own position through the API
], ids=["clicked-6", "from-start-0", "padded", "int", "digit-text", "whole-float", "whole-float-text"])
def test_a_pick_or_an_explicit_position_is_the_number_kept(value, expected):
    assert position(value, SID) == expected


@pytest.mark.parametrize("value", [None, "", "   "], ids=["none", "empty", "blank"])
def test_nothing_picked_is_none_never_zero(value):
    assert position(value, SID) is None


@pytest.mark.parametrize("value", [
    "ffffffffffff#6", f"{SID}#-1", "-1", -1, "2.5", 2.5, True, "abc", "<img src=x onerror=alert(1)>#3",
    f"{SID}#6#7", "三", float("nan"),
], ids=["other-session", "negative-pick", "negative-text", "negative-int", "fraction-text", "fraction",
        "boolean", "word", "markup", "two-marks", "cjk-digit", "nan"])
def test_a_bad_position_is_refused_in_chinese_naming_it(value):
    with pytest.raises(ForkPickError) as caught:
        position(value, SID)
    message = str(caught.value)
    assert chinese(message) and "没有分叉" in message
    assert "<img" not in message.replace("\\<img", "")   # markup is shown escaped, never as a tag


def test_a_pick_made_in_another_session_is_refused_by_name():
    with pytest.raises(ForkPickError, match="另一个会话"):
        position("ffffffffffff#6", SID)


@pytest.mark.parametrize(("index", "number"), [(0, 1), (1, 2), (2, 2), (3, 3), ([3, 0], 3)],
                         ids=["row-0", "row-1", "second-row-of-message-2", "row-3", "row-as-list"])
def test_a_clicked_row_picks_the_message_it_draws(index, number):
    pick = click_pick(SID, (1, 2, 2, 3), index)
    assert pick.value == f"{SID}#{number}"
    assert f"第 {number} 条" in pick.note and f"第 {number} 条" in pick.label
    assert f"?session={SID}&m={number}" in pick.note   # the message's own link


@pytest.mark.parametrize("index", [-1, 4, None, "1", True, [], 1.0],
                         ids=["negative", "past-the-end", "none", "text", "boolean", "empty-list", "float"])
def test_a_forged_row_changes_nothing(index):
    assert click_pick(SID, (1, 2, 2, 3), index) is None


def test_no_session_no_pick():
    assert click_pick(None, (1, 2), 0) is None
    assert start_pick(None).value == fork_control.NO_PICK and chinese(start_pick(None).note)


def test_a_link_with_m_picks_that_message_and_without_m_picks_nothing():
    assert link_pick(SID, 4).value == f"{SID}#4"
    assert link_pick(SID, None) == fork_control.CLEARED
    assert link_pick(None, 4) == fork_control.CLEARED


def test_only_the_explicit_start_button_picks_zero():
    pick = start_pick(SID)
    assert pick.value == f"{SID}#0" and "0 条" in pick.label and position(pick.value, SID) == 0


# ── the explorer: deep link, reload, explicit zero ──────────────────────────────────────────
def test_a_deep_link_with_m_forks_after_message_m_not_at_a_silent_0(explorer, student):
    token, ids = student
    page = explorer.open_page(token, None, ids["branch_b_id"], "4")
    assert page.fork_reset and page.fork_pick.value == f"{ids['branch_b_id']}#4"
    assert "第 4 条" in page.fork_pick.note and "第 4 条" in page.fork_pick.label
    forked = explorer.fork(token, page.view, page.fork_pick.value, "换个方向")
    assert forked.notice.startswith("✅ 已在第 4 条之后分叉"), forked.notice
    child = explorer.spaces.open(token).store.load(forked.view.session_id)
    assert len(child.messages) == 5 and child.parent_id == ids["branch_b_id"] and child.fork_point == 4


def test_after_a_reload_nothing_is_picked_and_the_fork_is_refused_with_nothing_written(explorer, spaces, student):
    token, ids = student
    page = explorer.open_page(token, None, None, None, remembered=ids["branch_a_id"])
    assert page.view.session_id == ids["branch_a_id"]           # the selection is back …
    assert page.fork_reset and page.fork_pick in (None, fork_control.CLEARED)   # … the position is not
    before = files(Path(spaces.sessions_dir))
    refused = explorer.fork(token, page.view, "", "新消息")
    assert refused.notice.startswith("⚠️") and "分叉位置还没选" in refused.notice and refused.area == "fork"
    assert not refused.fork_reset                              # the reader's first message stays in its box
    assert files(Path(spaces.sessions_dir)) == before          # nothing written, nothing lost


def test_a_stale_pick_from_another_session_is_refused_with_nothing_written(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    before = files(Path(spaces.sessions_dir))
    refused = explorer.fork(token, view, f"{ids['branch_b_id']}#6", "x")
    assert refused.notice.startswith("⚠️") and "另一个会话" in refused.notice
    assert files(Path(spaces.sessions_dir)) == before


def test_an_explicit_start_pick_forks_an_empty_branch(explorer, student):
    token, ids = student
    view = explorer.select(token, View(), ids["main_id"]).view
    page = explorer.fork(token, view, start_pick(ids["main_id"]).value, "从头来")
    assert page.notice.startswith("✅ 已在第 0 条之后分叉") and "什么都不继承" in page.notice
    child = explorer.spaces.open(token).store.load(page.view.session_id)
    assert [m["content"] for m in child.messages] == ["从头来"]


def test_switching_the_source_clears_the_pick(explorer, student):
    token, _ = student
    assert explorer.switch_source(token, View(), "shelf").fork_reset


# ── the lesson: the same conversation and control, levels 1–3 by clicks ──────────────────────
def click(page, number: int) -> str:
    """What the page sends after a click on message `number` of the lesson's conversation."""
    numbers = page.view.chat_numbers
    assert page.chat and number in numbers, (number, numbers)
    return click_pick(page.view.session_id, numbers, numbers.index(number)).value


def node_of(page, key: str) -> str:
    """The session id of the lesson tree's node whose label names `key` (主会话, 分支 A, …)."""
    return next(sid for label, sid in page.tree_choices if key in label)


@pytest.fixture
def lesson(spaces, explorer):
    return Lesson(spaces, explorer=explorer)


def test_the_lesson_shows_the_selected_nodes_conversation_with_message_numbers(lesson, spaces):
    token = spaces.new_token()
    page = lesson.start(token, lesson.pick(token, LessonView(), "rewind").view)
    assert len(page.chat) >= 5 and page.view.chat_numbers[:1] == (1,) and max(page.view.chat_numbers) == 5
    assert page.fork_reset   # a new level: the control starts empty


def test_level_1_by_clicks(lesson, spaces):
    token = spaces.new_token()
    page = lesson.start(token, lesson.pick(token, LessonView(), "rebuild").view)
    main = page.view.session_id
    for turns in ([("assistant", "方案 A"), ("user", "按方案 A 继续")],
                  [("assistant", "方案 B"), ("user", "先压测"), ("user", "选 B"), ("assistant", "已完成")]):
        page = lesson.select(token, page.view, main)
        page = lesson.fork(token, page.view, click(page, 5))
        assert page.notice.startswith("✅") and page.area == "fork" and page.fork_reset, page.notice
        for role, text in turns:
            page = lesson.resume(token, page.view, text, role)
    assert page.solved, page.verdict


def test_level_2_by_clicks(lesson, spaces):
    token = spaces.new_token()
    page = lesson.start(token, lesson.pick(token, LessonView(), "rewind").view)
    page = lesson.select(token, page.view, node_of(page, "主会话"))
    page = lesson.fork(token, page.view, click(page, 3), "换个方向：先看 ws_pool", "新思路")
    assert page.solved, page.verdict
    assert page.fork_reset   # the first message and the title do not carry into the next fork


def test_level_3_by_clicks(lesson, spaces):
    token = spaces.new_token()
    page = lesson.start(token, lesson.pick(token, LessonView(), "resume").view)
    page = lesson.select(token, page.view, node_of(page, "方案 B"))   # branch B (7 messages)
    page = lesson.resume(token, page.view, "压测完成：选 B", "user")
    page = lesson.resume(token, page.view, "已完成重构", "assistant")
    assert page.solved, page.verdict


def test_a_lesson_fork_with_nothing_picked_is_refused_under_the_button_and_keeps_the_text(lesson, spaces):
    token = spaces.new_token()
    page = lesson.start(token, lesson.pick(token, LessonView(), "rewind").view)
    before = files(Path(spaces.sessions_dir))
    refused = lesson.fork(token, page.view, "", "我写的第一条")
    assert refused.area == "fork" and "分叉位置还没选" in refused.notice and not refused.fork_reset
    sessions = {k: v for k, v in files(Path(spaces.sessions_dir)).items() if not k.endswith(".lesson.json")}
    assert sessions == {k: v for k, v in before.items() if not k.endswith(".lesson.json")}   # no session written
