"""The step-through of the chapter's story (issue 43 item 2), without gradio: after every operation of the book's
demo_tree_branching the sessions folder is photographed, and each step's page says what appeared or changed.

The numbers below (2, 5, 7, 9 messages; fork_point 5; revision 1 -> 2) are the chapter's own: its demo and sample
output are the contract. Session ids are random, so they are always read from the snapshots, never written here."""

from __future__ import annotations

import os
import re
import tempfile

import pytest

import s11_journal
from s11_session import SessionStore, demo_tree_branching
from s11_workbench import story


@pytest.fixture(scope="module")
def shots():
    return story.run_story()


@pytest.fixture(scope="module")
def pages(shots):
    return story.story_pages(shots)


def session_files(shot) -> dict[str, story.DiskFile]:
    """The live session files of a snapshot (not the kept revisions under .history/), by session id."""
    return {file.fields["session_id"]: file for file in shot.files if file.fields and "/" not in file.path}


def by_path(shot) -> dict[str, story.DiskFile]:
    return {file.path: file for file in shot.files}


def changed_paths(shots, number: int) -> dict[str, str]:
    return {(change.after or change.before).path: change.kind
            for change in story.changes(shots[number - 1], shots[number])}


def ids(shots) -> tuple[str, str, str]:
    """(main, branch A, branch B) in the order they were created."""
    main, branch_a, branch_b = (node.session_id for node in shots[-1].nodes)
    return main, branch_a, branch_b


# ── the seven snapshots follow the chapter's demo, one per operation ───────────────────────
def test_there_is_one_snapshot_per_step_of_the_chapter_and_they_are_in_its_order(shots):
    assert [shot.step.key for shot in shots] == ["start", "create", "save", "fork_a", "fork_b", "resume", "export"]
    assert [shot.step for shot in shots] == list(story.STEPS)


def test_the_folder_starts_empty_and_the_main_session_appears_as_one_file(shots):
    assert shots[0].files == () and shots[0].nodes == ()
    main = shots[1].nodes[0]
    assert changed_paths(shots, 1) == {f"{main.session_id}.json": "appeared", ".journal.jsonl": "appeared",
                                       ".lock": "appeared"}
    fields = session_files(shots[1])[main.session_id].fields
    assert (fields["revision"], fields["parent_id"], fields["fork_point"], fields["messages"]) == (1, None, None, 2)


def test_append_and_save_replaces_the_main_file_and_keeps_the_old_revision_byte_for_byte(shots):
    main, _, _ = ids(shots)
    kept = f".history/{main}/1.json"
    assert changed_paths(shots, 2) == {f"{main}.json": "changed", kept: "appeared", ".journal.jsonl": "changed"}
    before, after = by_path(shots[1])[f"{main}.json"], by_path(shots[2])[f"{main}.json"]
    assert story.field_changes(before.fields, after.fields) == [("revision", 1, 2), ("messages", 2, 5)]
    assert by_path(shots[2])[kept].digest == before.digest and by_path(shots[2])[kept].size == before.size


@pytest.mark.parametrize("number, branch", [(3, 1), (4, 2)], ids=["fork-A", "fork-B"])
def test_a_fork_is_one_new_file_and_no_other_session_file_changes(shots, number, branch):
    child = ids(shots)[branch]
    assert changed_paths(shots, number) == {f"{child}.json": "appeared", ".journal.jsonl": "changed"}
    fields = session_files(shots[number])[child].fields
    assert (fields["revision"], fields["parent_id"], fields["fork_point"], fields["messages"]) \
        == (1, ids(shots)[0], 5, 7)
    for session_id, file in session_files(shots[number - 1]).items():
        assert session_files(shots[number])[session_id].digest == file.digest   # the parent is not touched


def test_resume_saves_a_new_revision_of_branch_b_only(shots):
    main, branch_a, branch_b = ids(shots)
    kept = f".history/{branch_b}/1.json"
    assert changed_paths(shots, 5) == {f"{branch_b}.json": "changed", kept: "appeared", ".journal.jsonl": "changed"}
    before, after = by_path(shots[4])[f"{branch_b}.json"], by_path(shots[5])[f"{branch_b}.json"]
    assert story.field_changes(before.fields, after.fields) == [("revision", 1, 2), ("messages", 7, 9)]
    assert after.fields["fork_point"] == 5
    assert by_path(shots[5])[kept].digest == before.digest


def test_export_reads_only_and_writes_nothing(shots):
    assert story.changes(shots[5], shots[6]) == []
    assert [(file.path, file.digest) for file in shots[6].files] == [(file.path, file.digest) for file in shots[5].files]
    _, _, branch_b = ids(shots)
    assert shots[6].export.startswith("# 🗂️ 会话导出") and branch_b in shots[6].export
    assert all(shot.export == "" for shot in shots[:6])


def test_the_journal_grows_by_one_line_per_operation_and_names_it(shots):
    journals = [by_path(shot).get(s11_journal.JOURNAL_FILE) for shot in shots]
    assert [len(journal.lines) if journal else 0 for journal in journals] == [0, 1, 2, 3, 4, 5, 5]
    assert [journal.lines[-1]["op"] for journal in journals[1:6]] == ["create", "save", "fork", "fork", "save"]


def test_the_byte_counts_shown_are_the_files_sizes_on_disk(tmp_path):
    """The snapshot's sizes and digests are what a plain store run writes: an oracle run of the same demo."""
    shots = story.run_story()
    store = SessionStore(tmp_path / "sessions")
    demo_tree_branching(store)
    on_disk = sorted(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(store.storage_dir)
                     for name in names)
    assert sorted(file.size for file in shots[-1].files) == on_disk


def test_two_runs_are_the_same_story_with_new_ids():
    first, second = story.run_story(), story.run_story()
    assert ids(first) != ids(second)

    def shape(shots):
        names = {session_id: f"<{number}>" for number, session_id in enumerate(ids(shots))}

        def plain(path):
            for session_id, name in names.items():
                path = path.replace(session_id, name)
            return path
        return [sorted((plain(file.path), file.size) for file in shot.files) for shot in shots]
    assert shape(first) == shape(second)


# ── the pages: what changed is marked, the rest is not ──────────────────────────────────────
def marked_rows(page: story.Page) -> list[str]:
    return [line for line in page.files.splitlines() if line.startswith("| ") and "**" in line]


@pytest.mark.parametrize("number", range(1, 7))
def test_each_page_marks_exactly_the_files_that_appeared_or_changed(shots, pages, number):
    expected = changed_paths(shots, number)
    rows = marked_rows(pages[number])
    assert len(rows) == len(expected)
    for path, kind in expected.items():
        row = next(row for row in rows if f"`{path}`" in row)
        assert story.MARKERS[kind] in row
    unmarked = [line for line in pages[number].files.splitlines()[4:] if line not in rows]
    assert not any(marker in line for line in unmarked for marker in story.MARKERS.values())


def test_each_page_quotes_the_chapter_shows_its_code_and_counts_the_steps(pages):
    assert len(pages) == len(story.STEPS)
    for number, (page, step) in enumerate(zip(pages, story.STEPS)):
        assert f"第 {number + 1} / 7 步" in page.head
        assert step.chapter in page.head and step.code in page.head


def test_the_pages_say_the_changed_fields_and_message_counts(shots, pages):
    assert "`revision` 1 → **2**，`messages` 2 → **5**" in pages[2].head
    assert "`revision` 1 → **2**，`messages` 7 → **9**" in pages[5].head
    assert "`fork_point` 5（继承 5 条 + 新增 2 条）" in pages[3].head
    assert "逐字节相同" in pages[2].head and "逐字节相同" in pages[5].head
    assert "末尾多了 1 行" in pages[4].head
    assert "没有任何文件出现、改变或消失" in pages[6].head


def test_the_tree_grows_and_points_at_the_session_written_in_this_step(shots, pages):
    main, branch_a, branch_b = ids(shots)
    assert "还没有会话" in pages[0].tree
    assert f"id={main}" in pages[1].tree and branch_a not in pages[1].tree
    assert f"id={branch_a}" in pages[3].tree and branch_b not in pages[3].tree
    assert "🌿 分支 B 👈 📂 已恢复 · 9 条" in pages[5].tree
    assert "👈" not in pages[6].tree and "📂 已恢复" in pages[6].tree


def test_the_waiting_pages_say_what_the_first_click_does():
    waiting = story.waiting_pages()
    assert len(waiting) == len(story.STEPS)
    assert "下一步 ▶" in waiting[0].head and "临时文件夹" in waiting[0].head


# ── two snapshots, in general ───────────────────────────────────────────────────────────────
def disk(path: str, digest: str, fields=None) -> story.DiskFile:
    return story.DiskFile(path, len(digest), digest, fields)


def test_changes_finds_appeared_changed_and_removed_files_and_ignores_the_unchanged():
    step = story.STEPS[1]
    before = story.Snapshot(step, (disk("a.json", "1"), disk("b.json", "2"), disk("gone.json", "3")), ())
    after = story.Snapshot(step, (disk("a.json", "1"), disk("b.json", "22"), disk("new.json", "4")), ())
    assert [(change.kind, (change.after or change.before).path) for change in story.changes(before, after)] \
        == [("changed", "b.json"), ("appeared", "new.json"), ("removed", "gone.json")]
    assert [change.kind for change in story.changes(None, after)] == ["appeared"] * 3


def test_field_changes_lists_added_removed_and_changed_fields_only():
    assert story.field_changes({"revision": 1, "title": "t", "old": 1}, {"revision": 2, "title": "t", "new": 0}) \
        == [("revision", 1, 2), ("new", None, 0), ("old", 1, None)]
    assert story.field_changes({"a": 1}, {"a": 1}) == []


def test_a_hostile_title_in_the_journal_stays_literal_on_the_page():
    names = {"abc123abc123": "🌱 主会话"}
    file = disk(".journal.jsonl", "x")
    shot = story.Snapshot(story.STEPS[1], (file,), ())
    assert "操作日志 · 0 行" in story.files_table(shot, [], names)
    hostile = story.describe_change(
        story.Change("changed", file._replace(lines=()),
                     file._replace(digest="y", lines=({"n": 1, "op": "create", "ids": ["abc123abc123"],
                                                      "before": [0], "after": [1],
                                                      "titles": ["<img src=x onerror=alert(1)> **b**"]},))),
        None, shot, names)
    assert re.search(r"(?<!\\)<img", hostile) is None and "\\<img" in hostile and "\\*\\*b\\*\\*" in hostile


# ── failures: one Chinese sentence, and nothing of the visitor's is touched ─────────────────
def test_an_unusable_temporary_folder_is_one_chinese_sentence(monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setattr(tempfile, "tempdir", str(blocker))
    with pytest.raises(story.StoryError, match="临时文件夹用不了") as caught:
        story.run_story()
    assert str(blocker) not in str(caught.value)   # no server path on the page
    assert blocker.read_text() == "x"


def test_the_temporary_folder_is_removed_after_the_run(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    story.run_story()
    assert list(tmp_path.iterdir()) == []


def test_a_demo_that_does_not_match_the_steps_is_refused_in_chinese(monkeypatch):
    def forks_first(store):
        main_id = store.create_session("t", [{"role": "user", "content": "x"}])
        store.fork(main_id)
    monkeypatch.setattr(story, "demo_tree_branching", forks_first)
    with pytest.raises(story.StoryError, match="书中的演示与步骤表对不上：第 2 步是 fork"):
        story.run_story()

    def stops_early(store):
        store.create_session("t")
    monkeypatch.setattr(story, "demo_tree_branching", stops_early)
    with pytest.raises(story.StoryError, match="书中的演示只走了 1 步"):
        story.run_story()



def test_an_error_of_the_store_is_one_chinese_sentence_without_the_temporary_path(monkeypatch):
    from s11_session import CorruptSession

    def breaks(store):
        raise CorruptSession(f"{store.storage_dir}/abc.json：文件坏了")
    monkeypatch.setattr(story, "demo_tree_branching", breaks)
    with pytest.raises(story.StoryError, match="书中的演示没能跑完") as caught:
        story.run_story()
    assert "s11-story-" not in str(caught.value) and "文件坏了" in str(caught.value)


def test_the_files_the_book_does_not_write_are_explained_under_the_table(pages):
    assert story.EXTRA_FILES_NOTE not in pages[0].files   # the empty folder: nothing to explain
    assert all(story.EXTRA_FILES_NOTE in page.files for page in pages[1:])


def test_a_folder_of_session_files_only_needs_no_note():
    only = story.Snapshot(story.STEPS[1], (disk("abc123abc123.json", "1", {"session_id": "abc123abc123",
                                                                          "revision": 1, "messages": 2}),), ())
    table = story.files_table(only, [], {"abc123abc123": "🌱 主会话"})
    assert "`abc123abc123.json`" in table and story.EXTRA_FILES_NOTE not in table
