"""The explorer's history panel, driven directly (no gradio): the journal told with the explorer's branch names, undo /
redo of a fork, a resume and a delete with the explorer redrawn, each node's revisions, a read-only look at an old one
and a revert -- and every refusal (read-only shelf, teacher's view, bad token, stale page, bad revision) in Chinese,
with nothing on disk changed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import s11_history
import s11_trash
from s11_session import demo_tree_branching
from s11_workbench.explorer import ID_COLUMN, Explorer, View
from s11_workbench.history_panel import READ_ONLY, HistoryPanel
from s11_workbench.spaces import Limits, Spaces

ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)
TEACHER = "teacher-secret-for-tests"


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path / "sessions", limits=ROOMY, teacher_secret=TEACHER)


@pytest.fixture
def explorer(spaces, tmp_path) -> Explorer:
    return Explorer(spaces, export_root=str(tmp_path / "exports"))


@pytest.fixture
def panel(explorer) -> HistoryPanel:
    return HistoryPanel(explorer)


@pytest.fixture
def student(spaces):
    """A student who ran the 8.11 demo: (token, ids of main / branch A / branch B)."""
    token = spaces.new_token()
    return token, demo_tree_branching(spaces.open(token).store)


def snapshot(folder) -> dict[str, bytes]:
    """Every file under folder with its bytes ('nothing changed on disk' compares two of these)."""
    folder = Path(folder)
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file() and path.name != ".lock"}


def unescape(markdown: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def listed(page) -> set[str]:
    return {row[ID_COLUMN] for row in page.rows}


def fork_b_a(explorer, token, ids):
    """Fork 分支 B.A from branch B after message 6, as a reader does it in the explorer."""
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    page = explorer.fork(token, view, 6, "换个思路", "")
    assert page.notice.startswith("✅")
    return page


# ── the journal in Chinese, with the explorer's names ─────────────────────────────────────────
def test_the_journal_is_listed_newest_first_with_branch_names(panel, explorer, student):
    token, ids = student
    forked = fork_b_a(explorer, token, ids)
    page = panel.show(token, forked.view)
    lines = [unescape(line) for line in page.timeline.splitlines()]
    assert "分叉了分支 B.A（自第 6 条）" in lines[0] and lines[0].startswith("- 第 6 步")
    assert "续写了分支 B：revision 1 → 2" in lines[1]
    assert "分叉了分支 A（自第 5 条）" in lines[3]
    assert "新建了「修复登录服务内存泄漏」" in lines[-1]
    assert page.writable and page.can_undo and not page.can_redo
    assert "↶ 撤销会倒回第 6 步：分叉了分支 B.A（自第 6 条）" in unescape(page.next_step)


def test_hostile_titles_are_escaped_in_the_timeline(panel, spaces):
    token = spaces.new_token()
    hostile = "<img src=x>**b**[a](j:x)"
    spaces.open(token).store.create_session(hostile, [{"role": "user", "content": "hi"}])
    timeline = panel.show(token, View()).timeline
    assert not re.search(r"(?<!\\)[<>*\[\]()]", timeline)   # every markup character arrives escaped
    assert f"新建了「{hostile}」" in unescape(timeline)


def test_an_empty_space_says_there_is_nothing_to_undo(panel, spaces):
    token = spaces.new_token()
    page = panel.show(token, View())
    assert "还没有操作" in page.timeline and not page.can_undo and not page.can_redo
    before = snapshot(spaces.open(token).folder)
    refused = panel.undo(token, View())
    assert unescape(refused.notice) == "⚠️ 没有可以撤销的操作" and refused.area == "undo"
    assert unescape(panel.redo(token, View()).notice).startswith("⚠️ 没有可以重做的操作")
    assert snapshot(spaces.open(token).folder) == before


# ── undo / redo in the explorer ─────────────────────────────────────────────────────────────
def test_undoing_a_fork_moves_it_to_the_trash_and_selects_its_parent(panel, explorer, spaces, student):
    token, ids = student
    forked = fork_b_a(explorer, token, ids)
    child = forked.view.session_id
    store = spaces.open(token).store
    kept = Path(store.path_of(child)).read_bytes()
    page = panel.undo(token, forked.view)
    assert page.area == "undo" and unescape(page.notice) == "↶ 撤销了第 6 步：分叉了分支 B.A（自第 6 条）"
    assert store.load(child) is None
    shown = page.explorer
    assert child not in listed(shown) and child not in {value for _, value in shown.tree_choices}
    assert child in {value for _, value in shown.trash_choices}   # in the trash, restorable
    assert shown.view.session_id == ids["branch_b_id"] and shown.view.revision == store.load(ids["branch_b_id"]).revision
    assert shown.notice == "" and shown.area == "history"   # the explorer's own result lines are cleared
    trashed = [entry.path for entry in s11_trash.entries(store.storage_dir) if entry.session_id == child]
    assert Path(trashed[0]).read_bytes() == kept   # nothing lost: the same bytes sit in the trash
    assert page.can_redo and "↷ 重做会再做第 6 步" in unescape(page.next_step)
    # the undone fork is no longer in the tree, so the journal names it by title and id again
    assert "- ~~第 6 步" in page.timeline and "撤销了第 6 步（分叉了分支 「" in unescape(page.timeline)
    assert f"[{child}]（自第 6 条））" in unescape(page.timeline)

    again = panel.redo(token, shown.view)
    assert unescape(again.notice) == f"↷ 重做了第 6 步：分叉了分支 「{store.load(child).title}」[{child}]（自第 6 条）"
    assert child in listed(again.explorer) and store.load(child).messages[-1]["content"] == "换个思路"
    assert again.explorer.view.session_id == ids["branch_b_id"]


def test_undoing_a_resume_saves_the_previous_content_as_a_new_revision(panel, explorer, spaces, student):
    token, ids = student
    store = spaces.open(token).store
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    resumed = explorer.resume(token, view, "再加一轮")
    assert store.load(ids["branch_a_id"]).revision == 2
    page = panel.undo(token, resumed.view)
    assert unescape(page.notice) == "↶ 撤销了第 6 步：续写了分支 A：revision 1 → 2"
    node = store.load(ids["branch_a_id"])
    assert node.revision == 3 and len(node.messages) == 7
    assert s11_history.load_revision(store, ids["branch_a_id"], 2).messages[-1]["content"] == "再加一轮"
    # the explorer re-read the revision: the next resume on that page saves instead of raising a conflict
    assert page.explorer.view.revision == 3
    assert explorer.resume(token, page.explorer.view, "接着写").notice.startswith("✅")


def test_undoing_a_delete_restores_the_session(panel, explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    deleted = explorer.delete(token, view)
    assert ids["branch_a_id"] not in listed(deleted)
    page = panel.undo(token, deleted.view)
    assert unescape(page.notice).startswith("↶ 撤销了第 6 步：删除了 「") and unescape(page.notice).endswith("（移进回收站）")
    assert ids["branch_a_id"] in listed(page.explorer)
    assert spaces.open(token).store.load(ids["branch_a_id"]).revision == 1


def test_a_stale_undo_is_refused_and_nothing_changes(panel, explorer, spaces, student):
    token, ids = student
    store = spaces.open(token).store
    node = store.load(ids["branch_b_id"])
    with open(store.path_of(ids["branch_b_id"]), "rb") as handle:
        original = handle.read()
    # someone changes branch B outside the journal (the book's printed store writes in place)
    node.revision = 7
    Path(store.path_of(ids["branch_b_id"])).write_bytes(original.replace(b'"revision":2', b'"revision":7')
                                                        .replace(b'"revision": 2', b'"revision": 7'))
    assert store.load(ids["branch_b_id"]).revision == 7
    before = snapshot(spaces.open(token).folder)
    page = panel.undo(token, View(session_id=ids["branch_b_id"], revision=7))
    assert unescape(page.notice).startswith("⚠️ 不能撤销第 5 步（续写了") and "日志之外改过" in unescape(page.notice)
    assert snapshot(spaces.open(token).folder) == before
    assert page.explorer is not None and page.explorer.view.revision == 7   # the page re-read the file


def test_a_purge_cannot_be_undone_and_the_panel_says_so(panel, explorer, spaces, student):
    token, ids = student
    store = spaces.open(token).store
    store.delete(ids["branch_a_id"], purge=True)
    page = panel.show(token, View())
    assert "有意的彻底删除，撤销不了" in page.next_step
    before = snapshot(spaces.open(token).folder)
    refused = panel.undo(token, View())
    assert "彻底删除" in unescape(refused.notice) and "不能撤销" in unescape(refused.notice)
    assert snapshot(spaces.open(token).folder) == before


# ── who may undo ────────────────────────────────────────────────────────────────────────────
def test_the_shelf_shows_its_history_but_refuses_undo_redo_and_revert(panel, explorer, spaces, student):
    token, ids = student
    asked = explorer.publish(token, explorer.select(token, View(), ids["branch_b_id"]).view, TEACHER)
    explorer.confirm(token, asked.view, TEACHER)
    shelf = explorer.select(token, View(source="shelf"), ids["branch_b_id"]).view
    page = panel.show(token, shelf)
    assert not page.writable and not page.can_undo and "只读" in page.next_step
    assert page.timeline.startswith("- 第")   # the shelf's own journal, read-only
    before = snapshot(spaces.sessions_dir)
    for refused in (panel.undo(token, shelf), panel.redo(token, shelf), panel.revert(token, shelf, 1)):
        assert unescape(refused.notice) == f"⚠️ {READ_ONLY}" and refused.explorer is None
    assert snapshot(spaces.sessions_dir) == before


def test_the_teacher_view_of_a_student_cannot_undo(panel, explorer, spaces, student):
    token, ids = student
    teacher_token = spaces.new_token()
    opened = explorer.open_space(teacher_token, View(), spaces.open(token).space_id, TEACHER)
    view = explorer.select(teacher_token, opened.view, ids["branch_b_id"], TEACHER).view
    page = panel.show(teacher_token, view, TEACHER)
    assert not page.writable and "续写了分支 B" in unescape(page.timeline)   # the teacher reads the student's journal
    before = snapshot(spaces.sessions_dir)
    assert unescape(panel.undo(teacher_token, view, TEACHER).notice) == f"⚠️ {READ_ONLY}"
    assert unescape(panel.revert(teacher_token, view, 1, TEACHER).notice) == f"⚠️ {READ_ONLY}"
    # without the teacher's secret the same view is not even readable
    assert "只有老师" in unescape(panel.undo(teacher_token, view).notice)
    assert snapshot(spaces.sessions_dir) == before
    looked = panel.look(teacher_token, view, 1, TEACHER)   # reading an old revision is fine
    assert looked.looking and looked.looked == (ids["branch_b_id"], 1)


@pytest.mark.parametrize("token", [None, "", "forged.token", "a" * 500])
def test_a_bad_token_is_refused_by_every_action(panel, spaces, student, token):
    _, ids = student
    before = snapshot(spaces.sessions_dir)
    view = View(session_id=ids["branch_b_id"], revision=2)
    for page in (panel.show(token, view), panel.undo(token, view), panel.redo(token, view),
                 panel.look(token, view, 1), panel.revert(token, view, 1)):
        assert page.notice.startswith("⚠️") and not page.writable and page.explorer is None
    assert snapshot(spaces.sessions_dir) == before


def test_another_students_session_is_not_reachable_through_the_panel(panel, spaces, student):
    _, ids = student
    other = spaces.new_token()
    view = View(session_id=ids["branch_b_id"], revision=2)
    assert panel.show(other, view).revision_choices == []
    assert "没有第 1 版" in unescape(panel.look(other, view, 1).notice)
    assert panel.revert(other, view, 1).notice.startswith("⚠️")
    assert spaces.open(other).store.list_sessions() == []


# ── revisions: look and go back ─────────────────────────────────────────────────────────────
def test_each_revision_of_the_selected_node_is_listed_newest_first(panel, explorer, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    page = panel.show(token, view)
    assert [number for _, number in page.revision_choices] == [2, 1]
    assert page.revision_choices[0][0].startswith("第 2 版 · 9 条 · ") and page.revision_choices[0][0].endswith("◀ 现在")
    assert page.revision_choices[1][0].startswith("第 1 版 · 7 条 · ")   # the demo saved B twice: 7, then 9
    assert "分支 B 共 2 版" in unescape(page.revisions_note)


def test_looking_at_an_old_revision_changes_nothing_and_compares_it_with_now(panel, explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    before = snapshot(spaces.open(token).folder)
    page = panel.look(token, view, 1)
    assert page.area == "revisions" and page.notice == "" and page.explorer is None
    assert len(page.looking) == 7 and page.revision == 1
    assert "弱引用缓存" in page.looking[-2]["content"]   # message 6, branch B's first own one
    note = unescape(page.looking_note)
    assert note.startswith("👁️ 只读：分支 B 的第 1 版，7 条消息") and "前 7 条相同" in note and "现在多了 2 条" in note
    assert snapshot(spaces.open(token).folder) == before


def test_going_back_to_a_revision_saves_it_as_a_new_one(panel, explorer, spaces, student):
    token, ids = student
    store = spaces.open(token).store
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    page = panel.revert(token, view, 1)
    assert unescape(page.notice).startswith("⏪ 已把 分支 B 回到第 1 版：它的内容存成了新的第 3 版（7 条消息）")
    node = store.load(ids["branch_b_id"])
    assert node.revision == 3 and len(node.messages) == 7
    assert len(s11_history.load_revision(store, ids["branch_b_id"], 2).messages) == 9   # nothing lost
    assert page.explorer.view.revision == 3 and page.explorer.message_count == 7
    assert [number for _, number in page.revision_choices] == [3, 2, 1]
    undone = panel.undo(token, page.explorer.view)   # and back again
    assert "回到第 1 版" in unescape(undone.notice) and len(store.load(ids["branch_b_id"]).messages) == 9


def test_going_back_from_a_stale_page_is_refused(panel, explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    explorer.resume(token, view, "another tab saved first")   # the page's revision is now stale
    before = snapshot(spaces.open(token).folder)
    page = panel.revert(token, view, 1)
    assert unescape(page.notice).startswith("⚠️ 会话") and "又被保存过，现在是第 3 版" in unescape(page.notice)
    assert snapshot(spaces.open(token).folder) == before
    assert page.explorer.view.revision == 3


@pytest.mark.parametrize("revision", [None, "", "abc", -1, True, 2.5, 99])
def test_a_missing_or_bad_revision_is_refused(panel, explorer, spaces, student, revision):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    before = snapshot(spaces.open(token).folder)
    for page in (panel.look(token, view, revision), panel.revert(token, view, revision)):
        assert page.notice.startswith("⚠️") and page.area == "revisions"
        assert "选一版" in unescape(page.notice) or "没有第 99 版" in unescape(page.notice)
        assert revision in (None, "", 99) or f"收到 {revision!r}" in unescape(page.notice)
    assert snapshot(spaces.open(token).folder) == before


def test_going_back_to_the_current_revision_is_refused(panel, explorer, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    assert "现在就是第 2 版" in unescape(panel.revert(token, view, 2).notice)


def test_without_a_selection_the_revision_buttons_say_what_to_do(panel, student):
    token, _ = student
    for page in (panel.look(token, View(), 1), panel.revert(token, View(), 1)):
        assert unescape(page.notice) == "⚠️ 请先在列表或会话树里选一个会话，再看它的每一版"


def test_a_changed_selection_clears_the_looked_at_revision(panel, explorer, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    looked = panel.look(token, view, 1).looked
    same = panel.show(token, view, None, 1, looked)
    assert same.looking is None and same.looked is None   # kept as it is
    other = explorer.select(token, View(), ids["branch_a_id"]).view
    moved = panel.show(token, other, None, 1, looked)
    assert moved.looking == [] and moved.looking_note == "" and moved.looked == ()


# ── the lesson level that needs undo, done by clicking in the explorer ──────────────────────────
def test_the_undo_level_is_solved_by_clicking_in_the_explorer(panel, explorer, spaces):
    from s11_workbench.lesson import Lesson, LessonView
    lesson = Lesson(spaces, explorer=explorer)
    token = spaces.new_token()
    started = lesson.start(token, LessonView(), "undo")
    assert started.notice.startswith("🚀") and not started.solved
    main = started.view.session_id
    view = explorer.select(token, View(), main).view
    wrong = explorer.fork(token, view, 5, "先试试 LRU 上限", "")
    hint = unescape(lesson.render(token, started.view, None).hint)
    assert "第 5 条之后分叉" in hint and "↶ 撤销" in hint   # the near miss points at the undo button
    undone = panel.undo(token, wrong.view)
    assert "分叉了分支 A（自第 5 条）" in unescape(undone.notice) and undone.explorer.view.session_id == main
    right = explorer.fork(token, undone.explorer.view, 3, "换个方向：先看 ws_pool", "")
    assert right.notice.startswith("✅")
    judged = lesson.render(token, started.view, None, counts=True)
    assert judged.solved, judged.verdict
    assert "↶ 撤销" in judged.goal_text and "✅ 分错的那次分叉是用 ↶ 撤销 撤掉的" in unescape(judged.verdict)


def test_the_undo_level_is_not_solved_by_deleting_the_wrong_fork(panel, explorer, spaces):
    from s11_workbench.lesson import Lesson, LessonView
    lesson = Lesson(spaces, explorer=explorer)
    token = spaces.new_token()
    started = lesson.start(token, LessonView(), "undo")
    view = explorer.select(token, View(), started.view.session_id).view
    wrong = explorer.fork(token, view, 5, "先试试 LRU 上限", "")
    deleted = explorer.delete(token, wrong.view)
    explorer.fork(token, deleted.view, 3, "换个方向：先看 ws_pool", "")
    judged = lesson.render(token, started.view, None)
    assert not judged.solved and "是用 🗑️ 删除的，不是撤销的" in unescape(judged.hint)


def test_a_step_undone_before_a_new_operation_stays_struck_through(panel, explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    resumed = explorer.resume(token, view, "一轮")
    undone = panel.undo(token, resumed.view)
    assert "- ~~第 6 步" in undone.timeline and "可以 ↷ 重做" in undone.timeline
    explorer.resume(token, undone.explorer.view, "新的一轮")   # a new operation: step 6 can no longer be redone
    page = panel.show(token, View())
    line = next(line for line in page.timeline.splitlines() if "第 6 步 ·" in line)
    assert line.startswith("- ~~第 6 步") and line.endswith("（↶ 已撤销）") and not page.can_redo


def test_a_node_saved_many_times_lists_and_reads_only_its_newest_revisions(panel, explorer, spaces, student,
                                                                          monkeypatch):
    from s11_workbench.history_panel import REVISIONS_SHOWN
    token, ids = student
    store = spaces.open(token).store
    for turn in range(REVISIONS_SHOWN + 10):
        node = store.load(ids["branch_a_id"])
        node.messages.append({"role": "user", "content": f"turn {turn}"})
        store.save(node)
    read = []
    describe = s11_history._describe
    monkeypatch.setattr(s11_history, "_describe", lambda *args, **kw: read.append(args[1]) or describe(*args, **kw))
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    page = panel.show(token, view)
    numbers = [number for _, number in page.revision_choices]
    assert numbers == list(range(REVISIONS_SHOWN + 11, 10, -1))[:REVISIONS_SHOWN]   # newest first, live on top
    assert len(read) <= REVISIONS_SHOWN + 1   # the older kept files were not even opened
    assert f"分支 A 的最近 {REVISIONS_SHOWN} 版" in unescape(page.revisions_note)
    assert f"history {ids['branch_a_id']}" in page.revisions_note


def test_hostile_titles_reach_the_result_lines_escaped(panel, explorer, spaces):
    token = spaces.new_token()
    store = spaces.open(token).store
    hostile = "**粗** <b>x</b> [a](j:x)"
    root = store.create_session(hostile, [{"role": "user", "content": "hi"}] * 3)
    forked = explorer.fork(token, explorer.select(token, View(), root).view, 2, "", hostile)
    undone = panel.undo(token, forked.view)
    redone = panel.redo(token, undone.explorer.view)
    reverted = panel.revert(token, explorer.select(token, View(), root).view, 0)   # no such revision: an error line
    for notice in (undone.notice, redone.notice, reverted.notice):
        assert not re.search(r"(?<!\\)[<>*\[\]()]", notice), notice
    assert hostile in unescape(redone.notice) and "没有第 0 版" in reverted.notice   # undone: gone from the tree


def test_a_subagent_is_named_as_the_tree_names_it_not_as_a_branch():
    """The journal's names come from the explorer's tree: a subagent is '🤖 子代理 1', never '分支 🤖 子代理 1'."""
    from s11_tree import Forest
    from s11_workbench.history_panel import names_of
    root = {"session_id": "r" * 12, "parent_id": None, "title": "主会话", "message_count": 5, "fork_point": None,
            "updated_at": 1, "created_at": 1}
    agent = {**root, "session_id": "a" * 12, "parent_id": "r" * 12, "title": "子代理：查找", "fork_point": 0,
             "subagent": True, "spawned_at": 3, "message_count": 4}
    names = names_of(Forest([root, agent]))
    assert names["a" * 12].startswith("🤖 子代理") and not names["a" * 12].startswith("分支"), names
    assert names["r" * 12] == "「主会话」"
