"""The store's journal and kept revisions (issue 43 item 1): every operation is one appended line, every revision
stays readable, undo / redo go back and forth without losing anything, a stale undo is refused, a torn last line
(kill -9) is reported and skipped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import s11_book
import s11_history
import s11_journal
import s11_trash
from s11_format import ConflictError, SessionError, SessionNotFound
from s11_session import SessionNode, SessionStore, demo_tree_branching


def msg(i: int, role: str = "user") -> dict:
    return {"role": role, "content": f"第 {i} 条消息：" + "内容" * 10}


def msgs(count: int, start: int = 0) -> list:
    return [msg(i, "user" if i % 2 == 0 else "assistant") for i in range(start, start + count)]


def records(store) -> list:
    return list(s11_journal.read(store.storage_dir).records())


def snapshot(folder) -> dict:
    """Every file under the folder (the lock aside) -> its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in Path(folder).rglob("*")
            if p.is_file() and p.name != ".lock"}


def visible(store) -> dict:
    return {s["session_id"]: (s["title"], store.load(s["session_id"]).messages) for s in store.list_sessions()}


@pytest.fixture
def store(tmp_path):
    return SessionStore(tmp_path / "sessions")


# ── the journal: one line per operation ─────────────────────────────────────────────────────────
class TestEveryOperationIsOneLine:
    def test_the_chapters_demo_is_five_lines_in_chinese(self, store):
        ids = demo_tree_branching(store)
        lines = records(store)
        assert [r["op"] for r in lines] == ["create", "save", "fork", "fork", "save"]
        assert [r["n"] for r in lines] == [1, 2, 3, 4, 5]
        assert lines[2]["ids"] == [ids["branch_a_id"]] and lines[2]["parent"] == ids["main_id"]
        assert (lines[2]["before"], lines[2]["after"], lines[2]["fork_point"]) == ([0], [1], 5)
        assert (lines[4]["ids"], lines[4]["before"], lines[4]["after"]) == ([ids["branch_b_id"]], [1], [2])
        texts = [item.text for item in s11_journal.newest(store.storage_dir)[0]]   # newest first
        assert texts[0].startswith("续写了 「修复登录服务内存泄漏 · 分支」") and texts[0].endswith("revision 1 → 2")
        assert texts[1].startswith("分叉了分支 ") and texts[1].endswith("（自第 5 条）")
        assert texts[-1].startswith("新建了会话 「修复登录服务内存泄漏」")
        assert [rec["n"] for rec, _ in store.journal(limit=2)] == [5, 4]

    def test_converge_label_delete_restore_and_import(self, store):
        ids = demo_tree_branching(store)
        a, b = ids["branch_a_id"], ids["branch_b_id"]
        node = store.converge(b, [a], "选 B")
        store.label(b, 2, "关键")
        store.delete(a)
        store.restore(a)
        with store.batch():   # what the importers do: one batch = one "import" line
            root = SessionNode(title="导入的根", messages=msgs(3))
            store.save(root)
            store.save(SessionNode(title="导入的分支", parent_id=root.session_id, messages=msgs(5), fork_point=3))
        store.delete(node.session_id)
        store.empty_trash()
        lines = records(store)[5:]
        assert [r["op"] for r in lines] == ["converge", "label", "delete", "restore", "import", "delete"]
        converge, label, delete, restore, imported = lines[:5]
        assert converge["chosen"] == b and converge["others"] == [a] and converge["ids"] == [node.session_id]
        assert (label["ids"], label["before"], label["after"], label["number"]) == ([b], [2], [3], 2)
        assert (delete["before"], delete["after"], restore["before"], restore["after"]) == ([1], [0], [0], [1])
        assert imported["before"] == [0, 0] and imported["after"] == [1, 1] and len(imported["ids"]) == 2

    def test_the_journal_only_grows(self, store):
        demo_tree_branching(store)
        path = Path(store.storage_dir) / s11_journal.JOURNAL_FILE
        before = path.read_bytes()
        store.undo()
        after = path.read_bytes()
        assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1

    def test_a_refused_save_writes_no_line(self, store):
        sid = store.create_session("主干", msgs(2))
        stale = store.load(sid)
        store.save(store.load(sid))
        with pytest.raises(ConflictError):
            store.save(stale)
        assert [r["op"] for r in records(store)] == ["create", "save"]


    def test_a_title_with_a_lone_surrogate_is_journaled_as_an_escape(self, store):
        sid = store.create_session("半个\ud83d表情", msgs(1))
        line = (Path(store.storage_dir) / s11_journal.JOURNAL_FILE).read_bytes()
        assert b"\\ud83d" in line and records(store)[0]["titles"] == ["半个\ud83d表情"]
        assert store.load(sid).title == "半个\ud83d表情"

    def test_a_journal_that_cannot_be_written_does_not_fail_a_committed_save(self, store, caplog):
        (Path(store.storage_dir) / s11_journal.JOURNAL_FILE).mkdir()   # not a file: every append fails
        sid = store.create_session("主干", msgs(2))
        assert store.load(sid).messages == msgs(2)
        assert "没能记进操作日志" in caplog.text
        with pytest.raises(SessionError, match="操作日志 .* 不是普通文件（目录），读不了"):
            store.undo()


class TestATornLastLine:
    def test_is_reported_skipped_and_never_glued_to_the_next_line(self, store):
        sid = store.create_session("主干", msgs(2))
        node = store.load(sid)
        node.messages.append(msg(2))
        store.save(node)
        path = Path(store.storage_dir) / s11_journal.JOURNAL_FILE
        raw = path.read_bytes()
        path.write_bytes(raw[:-25])                     # kill -9 in the middle of writing line 2
        shown, skipped = s11_journal.newest(store.storage_dir)
        assert [item.record["n"] for item in shown] == [1]
        assert len(skipped) == 1 and "第 2 行不完整" in skipped[0] and "已跳过" in skipped[0]
        store.create_session("之后", msgs(1))          # the next line starts on a line of its own
        lines = path.read_bytes().split(b"\n")
        assert lines[1] == raw[:-25].split(b"\n")[1]    # the torn half is kept as it was, not overwritten
        assert json.loads(lines[2])["n"] == 2 and json.loads(lines[2])["op"] == "create"
        assert [r["op"] for r in records(SessionStore(store.storage_dir))] == ["create", "create"]

    def test_a_line_that_is_not_a_record_is_skipped_too(self, store):
        store.create_session("主干", msgs(2))
        path = Path(store.storage_dir) / s11_journal.JOURNAL_FILE
        with open(path, "ab") as handle:
            handle.write(b'{"n": "x", "op": "save"}\n[1, 2]\n')
        store.create_session("二", msgs(1))
        reading = s11_journal.read(store.storage_dir)
        assert [r["n"] for r in reading.records()] == [1, 2]
        assert [number for number, _ in reading.skipped] == [2, 3]


# ── kept revisions ─────────────────────────────────────────────────────────────────────────────
class TestKeptRevisions:
    def test_every_saved_revision_stays_readable(self, store):
        sid = store.create_session("主干", msgs(2))
        contents = {1: msgs(2)}
        for revision in (2, 3, 4):
            node = store.load(sid)
            node.messages.append(msg(revision * 10))
            store.save(node)
            contents[revision] = node.messages
        listed = store.history(sid)
        assert [(e["revision"], e["message_count"], e["live"]) for e in listed] == \
            [(1, 2, False), (2, 3, False), (3, 4, False), (4, 5, True)]
        for revision, messages in contents.items():
            old = store.load_revision(sid, revision)
            assert (old.revision, old.messages) == (revision, messages)

    def test_a_kept_revision_is_a_hard_link_not_a_copy(self, store):
        sid = store.create_session("主干", msgs(2))
        inode = os.stat(store.path_of(sid)).st_ino
        store.save(store.load(sid))
        kept = Path(store.storage_dir) / ".history" / sid / "1.json"
        assert kept.stat().st_ino == inode

    def test_a_missing_or_bad_revision_is_a_chinese_error(self, store):
        sid = store.create_session("主干", msgs(2))
        with pytest.raises(SessionNotFound, match=f"会话 {sid} 没有第 7 版"):
            store.load_revision(sid, 7)
        with pytest.raises(SessionNotFound, match=f"会话 {sid} 没有第 0 版"):
            store.load_revision(sid, 0)
        for bad in (-1, "1", True, 1.5):
            with pytest.raises(SessionError, match="版本号应是不小于 0 的整数"):
                store.load_revision(sid, bad)
        with pytest.raises(SessionNotFound, match="未找到会话 abc 的任何一版"):
            store.history("abc")
        with pytest.raises(SessionError, match="非法会话 ID"):
            store.history("../x")

    def test_orphan_chunk_cleanup_keeps_the_chunks_an_old_revision_uses(self, tmp_path):
        store = SessionStore(tmp_path / "s", chunk_threshold=1024, chunk_bytes=512)
        sid = store.create_session("大会话", msgs(120))
        node = store.load(sid)
        node.messages[0] = msg(999)                 # an edit at the front: every chunk after it is new
        store.save(node)
        assert store.remove_orphan_chunks() == 0    # the old chunks are used by .history/<id>/1.json
        store.empty_trash()
        assert store.load_revision(sid, 1).messages == msgs(120)
        assert store.check() == []

    def test_purge_and_empty_trash_remove_revisions_on_purpose_only(self, store):
        keep = store.create_session("留着", msgs(2))
        store.save(store.load(keep))
        gone = store.create_session("删掉", msgs(2))
        store.save(store.load(gone))
        purged = store.create_session("彻底删", msgs(2))
        store.save(store.load(purged))
        store.delete(gone)
        assert store.load_revision(gone, 1).messages == msgs(2)   # in the trash: still readable
        store.delete(purged, purge=True)
        assert not (Path(store.storage_dir) / ".history" / purged).exists()
        store.empty_trash()
        assert not (Path(store.storage_dir) / ".history" / gone).exists()
        assert store.load_revision(keep, 1).messages == msgs(2)

    def test_a_reused_id_keeps_both_lives(self, store):
        node = SessionNode("reused", "第一次", messages=msgs(2))
        store.save(node)
        store.save(node)                            # revision 1 kept
        store.delete("reused")
        again = SessionNode("reused", "第二次", messages=msgs(4))
        store.save(again)
        store.save(again)                           # revision 1 of the second life kept too
        listed = store.history("reused")
        assert sorted((e["revision"], e["title"], e["older_life"], e["in_trash"]) for e in listed) == [
            (1, "第一次", True, False), (1, "第二次", False, False),
            (2, "第一次", False, True), (2, "第二次", False, False)]   # the first life's last revision: in the trash
        assert store.load_revision("reused", 1).title == "第二次"


# ── undo / redo ────────────────────────────────────────────────────────────────────────────────
class TestUndo:
    def test_an_undone_save_is_a_new_revision_holding_the_previous_content(self, store):
        sid = store.create_session("主干", msgs(2))
        node = store.load(sid)
        node.messages.append(msg(2))
        store.save(node)
        done = store.undo()
        assert done["op"] == "undo" and done["target"] == 2 and done["text"].startswith("撤销了第 2 步：续写了")
        now = store.load(sid)
        assert (now.revision, now.messages) == (3, msgs(2))     # never rewinds the revision number
        assert store.load_revision(sid, 2).messages == msgs(3)  # the undone one is still there
        store.redo()
        assert (store.load(sid).revision, store.load(sid).messages) == (4, msgs(3))

    def test_an_undone_fork_goes_to_the_trash_and_redo_brings_it_back(self, store):
        sid = store.create_session("主干", msgs(4))
        child = store.fork(sid, [msg(9)], at=2)
        store.undo()
        assert store.load(child.session_id) is None
        assert [e.session_id for e in s11_trash.entries(store.storage_dir)] == [child.session_id]
        store.redo()
        assert store.load(child.session_id).messages == msgs(2) + [msg(9)]

    def test_undo_of_delete_restores_and_undo_of_restore_deletes(self, store):
        sid = store.create_session("主干", msgs(2))
        store.delete(sid)
        store.undo()
        assert store.load(sid).messages == msgs(2)
        store.delete(sid)
        store.restore(sid)
        store.undo()
        assert store.load(sid) is None

    def test_undo_everything_returns_to_the_start_and_redo_everything_to_the_end(self, store):
        demo_tree_branching(store)
        b = store.list_sessions()[0]["session_id"]
        store.label(b, 1, "起点")
        end = visible(store)
        for _ in range(6):
            store.undo()
        assert visible(store) == {}
        with pytest.raises(SessionError, match="没有可以撤销的操作"):
            store.undo()
        for _ in range(6):
            store.redo()
        assert visible(store) == end
        with pytest.raises(SessionError, match="没有可以重做的操作"):
            store.redo()

    def test_a_new_operation_clears_the_redo_stack(self, store):
        sid = store.create_session("主干", msgs(2))
        store.fork(sid, [msg(5)])
        store.undo()
        store.fork(sid, [msg(6)])
        with pytest.raises(SessionError, match="没有可以重做的操作"):
            store.redo()
        rows, _ = s11_history.timeline(store)
        assert [row["undone"] for row in rows] == [False, False, False, False]

    def test_the_redo_stack_is_marked_in_the_timeline(self, store):
        sid = store.create_session("主干", msgs(2))
        store.fork(sid, [msg(5)])
        store.undo()
        rows, _ = s11_history.timeline(store)
        assert [(row["op"], row["undone"]) for row in rows] == [("undo", False), ("fork", True), ("create", False)]

    def test_a_stale_undo_is_a_conflict_and_changes_nothing(self, store):
        sid = store.create_session("主干", msgs(2))
        node = store.load(sid)
        node.messages.append(msg(2))
        store.save(node)
        book = s11_book.SessionStore(store.storage_dir)   # the book's code saves without a journal
        outside = book.load(sid)
        outside.messages.append(msg(3))
        book.save(outside)
        before = snapshot(store.storage_dir)
        with pytest.raises(ConflictError, match=r"不能撤销第 2 步（续写了 「主干」\[\w+\]：revision 1 → 2）：.*日志之外改过"):
            store.undo()
        assert snapshot(store.storage_dir) == before

    def test_undoing_the_first_save_over_a_file_the_books_code_wrote_brings_that_file_back(self, store):
        book = s11_book.SessionStore(store.storage_dir)
        sid = book.create_session("书里的", msgs(2))       # no revision, no journal line
        node = store.load(sid)
        node.messages.append(msg(2))
        store.save(node)
        assert records(store)[-1]["op"] == "save" and records(store)[-1]["unversioned"] == [sid]
        assert store.load_revision(sid, 0).messages == msgs(2)   # the book's file, kept as .history/<id>/0.json
        store.undo()
        assert (store.load(sid).messages, store.load(sid).revision) == (msgs(2), 2)
        store.redo()
        assert store.load(sid).messages == msgs(3)

    def test_a_read_only_store_cannot_undo_or_redo_and_the_journal_does_not_move(self, store):
        from s11_workbench.spaces import ReadOnlyStore, SpaceError
        sid = store.create_session("主干", msgs(2))
        store.save(store.load(sid))
        store.fork(sid, [msg(3)])
        store.fork(sid, [msg(4)])
        store.undo()
        before = snapshot(store.storage_dir)
        shelf = ReadOnlyStore(store.storage_dir)
        for action in (shelf.undo, shelf.redo, lambda: shelf.revert(sid, 1)):
            with pytest.raises(SpaceError, match="只读空间"):
                action()
        assert snapshot(store.storage_dir) == before
        assert [row["text"] for row in s11_history.timeline(shelf)[0]] == \
            [row["text"] for row in s11_history.timeline(store)[0]]

    def test_after_emptying_the_trash_the_undo_of_a_delete_says_so_and_others_still_undo(self, store):
        kept = store.create_session("留着", msgs(2))
        gone = store.create_session("删掉", msgs(2))
        store.delete(gone)
        node = store.load(kept)
        node.messages.append(msg(2))
        store.save(node)
        store.empty_trash()
        store.undo()                                        # the save on another session: still fine
        assert store.load(kept).messages == msgs(2)
        before = snapshot(store.storage_dir)
        with pytest.raises(ConflictError, match=f"回收站里没有会话 {gone} 的第 1 版（回收站已清空？）"):
            store.undo()
        assert snapshot(store.storage_dir) == before

    def test_undo_stops_at_a_purge(self, store):
        sid = store.create_session("主干", msgs(2))
        store.delete(sid, purge=True)
        before = snapshot(store.storage_dir)
        with pytest.raises(SessionError, match="彻底删除，不能撤销"):
            store.undo()
        assert snapshot(store.storage_dir) == before

    def test_revert_saves_an_old_revision_as_a_new_one(self, store):
        sid = store.create_session("主干", msgs(2))
        node = store.load(sid)
        node.messages += msgs(2, 2)
        store.save(node)
        back = store.revert(sid, 1)
        assert (back.revision, store.load(sid).messages) == (3, msgs(2))
        assert records(store)[-1]["op"] == "save" and records(store)[-1]["revert_of"] == 1
        store.undo()
        assert store.load(sid).messages == msgs(4)
        with pytest.raises(SessionError, match="现在就是第 4 版"):
            store.revert(sid, 4)
        with pytest.raises(SessionNotFound, match="没有第 9 版"):
            store.revert(sid, 9)


class TestTwoUndosAtOnce:
    """Two windows press undo at the same moment: both read the journal, both pick the same step. The one that comes
    second must be refused -- never undo the step twice, never mark an older step undone that it did not undo."""

    @pytest.mark.parametrize("op", ["fork", "delete", "save"])
    def test_the_second_undo_of_the_same_step_is_a_conflict(self, store, op, monkeypatch):
        sid = store.create_session("主干", msgs(2))
        if op == "fork":
            store.fork(sid, [msg(5)])
        elif op == "delete":
            store.delete(sid)
        else:
            node = store.load(sid)
            node.messages.append(msg(5))
            store.save(node)
        stale = s11_history.replay(store.storage_dir)        # what the second window read before the first undid
        SessionStore(store.storage_dir).undo()               # the first window
        monkeypatch.setattr(s11_history, "replay", lambda folder: stale)
        monkeypatch.setattr(s11_history, "_check", lambda *args: None)   # it checked before the first undo, too
        lines = len(records(store))
        with pytest.raises(ConflictError):
            store.undo()
        assert len(records(store)) == lines                  # nothing journaled: step 1 is still undoable once
        monkeypatch.undo()
        assert [r["op"] for r in records(store)][-1] == "undo"
        store.undo()                                         # the create itself
        assert store.list_sessions() == []


SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"


class TestImport:
    def test_importing_a_branchy_transcript_is_one_line_and_one_undo_removes_the_whole_tree(self, store):
        import s11_import
        before = visible(store)
        store.create_session("之前就有的", msgs(2))
        start = visible(store)
        report = s11_import.import_file(str(SAMPLES / "claude_real_rewind_branch_03eb5929.jsonl"), store)
        assert report.written >= 2
        last = records(store)[-1]
        assert last["op"] == "import" and sorted(last["ids"]) == sorted(report.node_ids)
        assert s11_journal.describe(last).startswith(f"导入了 {report.written} 个会话")
        store.undo()
        assert visible(store) == start != before
        store.redo()
        assert len(visible(store)) == len(start) + report.written
