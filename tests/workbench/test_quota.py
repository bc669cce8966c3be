"""The space quota (s11_workbench/spaces.py): imports, and the explorer's fork / resume / delete / restore, reserve
what they will write, and the server counts its own writes instead of re-stat'ing every session file — without ever
counting a space short. Walks are counted (spaces.folder_usage): after the first check in a process none of these
walks the space; a foreign write, a failed or stale save, or a file the book's code wrote makes the next check walk.

What happens to saved data in each case: a refused import, fork, resume or restore writes nothing (the folder is
byte for byte the same; a refused restore leaves the copy in the trash); an accepted one writes its nodes; a delete
only moves the file into the trash (still counted in the bytes); nothing already saved is touched.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path

import pytest

import s11_import
import s11_session
import s11_workbench.spaces as spaces_module
from s11_session import SessionNode, SessionStore
from s11_workbench.explorer import Explorer, View, _space_budget
from s11_workbench.spaces import Limits, SpaceError, Spaces


def pi_transcript(path: Path, tag: str, turns: int = 40) -> Path:
    """A linear Pi v3 session; `tag` makes every id (and so every node id) new."""
    lines = [{"type": "session", "version": 3, "id": f"quota-{tag}", "timestamp": "2026-03-14T14:10:00.000Z"}]
    parent = None
    for index in range(turns):
        entry = {"type": "message", "id": f"{tag}{index:04d}", "parentId": parent,
                 "timestamp": "2026-03-14T14:10:20.060Z",
                 "message": {"role": "user" if index % 2 == 0 else "assistant", "content": f"第 {index} 条 " * 40}}
        lines.append(entry)
        parent = entry["id"]
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def on_disk(folder: str) -> tuple:
    """(session files at the top, bytes of every regular file below): what the quota must never count short."""
    total = sum(os.lstat(os.path.join(root, name)).st_size for root, _, names in os.walk(folder) for name in names)
    sessions = sum(name.endswith(".json") and not name.startswith(".") for name in os.listdir(folder))
    return sessions, total


def snapshot(folder: str) -> dict:
    return {os.path.relpath(os.path.join(root, name), folder): Path(root, name).read_bytes()
            for root, _, names in os.walk(folder) for name in names if name != ".lock"}


def race(monkeypatch, action) -> list:
    """action(0) and action(1) at once, each held at its first save until the other has reached its own first save
    or has finished without one (refused): both pass their checks before either writes. Returns both results."""
    gate, arrived, local = threading.Condition(), [0], threading.local()
    real_save = s11_session.SessionStore.save

    def arrive():
        with gate:
            arrived[0] += 1
            gate.notify_all()
            gate.wait_for(lambda: arrived[0] >= 2, timeout=10)

    def save(self, node):
        if not getattr(local, "arrived", False):
            local.arrived = True
            arrive()
        return real_save(self, node)

    results = [None, None]

    def run(index):
        try:
            results[index] = action(index)
        finally:
            if not getattr(local, "arrived", False):
                arrive()   # refused before writing: let the other one go on

    monkeypatch.setattr(s11_session.SessionStore, "save", save)
    threads = [threading.Thread(target=run, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    monkeypatch.setattr(s11_session.SessionStore, "save", real_save)
    return results


@pytest.fixture
def planned_bytes(tmp_path):
    """What importing one of these transcripts writes into an empty space (dry run)."""
    probe = pi_transcript(tmp_path / "probe.jsonl", "probe")
    return s11_import.import_file(probe, SessionStore(tmp_path / "probe-store"), dry_run=True).bytes_planned


# ── two imports at once: the second one's check counts what the first is writing ───────────────────────────
def test_while_one_import_writes_a_second_ones_check_counts_its_bytes(tmp_path, planned_bytes):
    spaces = Spaces(tmp_path / "sessions", limits=Limits(max_bytes=int(planned_bytes * 1.5), min_free_bytes=0))
    space = spaces.open(spaces.new_token())
    first, second = (_space_budget(s11_import.WriteBudget, space) for _ in range(2))
    first.before(planned_bytes, 1)                        # room for one: reserved until it has written
    with pytest.raises(SpaceError, match="正在进行的导入"):
        second.before(planned_bytes, 1)                   # the disk is still empty, the reservation is not
    first.after(0)                                        # gave up without writing: the room is free again
    second.before(planned_bytes, 1)
    second.after(0)
    assert space.usage() == on_disk(space.folder)


def test_two_uploads_racing_for_the_last_room_never_both_write(tmp_path, planned_bytes, monkeypatch):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    files = [pi_transcript(uploads / f"{tag}.jsonl", tag) for tag in ("a", "b")]
    quota = int(planned_bytes * 1.5)                      # one import fits, two do not
    spaces = Spaces(tmp_path / "sessions", limits=Limits(max_bytes=quota, min_free_bytes=0, create_burst=100))
    token = spaces.new_token()
    space = spaces.open(token)
    explorer = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads))
    # Both imports pass their check before either writes.
    pages = race(monkeypatch, lambda index: explorer.import_upload(token, View(), str(files[index])))
    notices = sorted(page.notice for page in pages)
    assert sum(notice.startswith("📥 已导入") for notice in notices) == 1
    assert sum("什么都没写" in notice for notice in notices) == 1     # the other one: a Chinese refusal
    assert on_disk(space.folder)[1] <= quota and len(space.store.list_sessions()) == 1


# ── after an import, the next check uses what the server itself wrote ────────────────────────────────────────
def filled_space(tmp_path, sessions: int = 120):
    spaces = Spaces(tmp_path / "sessions", limits=Limits(min_free_bytes=0, create_burst=1000))
    token = spaces.new_token()
    space = spaces.open(token)
    filler = SessionStore(space.folder, durable=False)   # another writer: the space has to count these itself
    for number in range(sessions):
        filler.save(SessionNode(title=f"会话 {number}", messages=[{"role": "user", "content": "你好" * number}]))
    return spaces, token, space


def test_the_check_after_an_import_walks_nothing_and_counts_exactly(tmp_path, monkeypatch):
    spaces, token, space = filled_space(tmp_path)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    explorer = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads))
    assert explorer.import_upload(token, View(), str(pi_transcript(uploads / "a.jsonl", "a"))).notice.startswith("📥")
    walks = []
    real = spaces_module.folder_usage
    monkeypatch.setattr(spaces_module, "folder_usage", lambda *args: walks.append(args) or real(*args))
    assert space.usage() == on_disk(space.folder)         # exact: what it was plus what the import wrote
    page = explorer.import_upload(token, View(), str(pi_transcript(uploads / "b.jsonl", "b")))
    assert page.notice.startswith("📥")
    assert space.usage() == on_disk(space.folder)
    assert walks == []                                    # neither the checks nor usage() walked the space


def test_writes_the_import_did_not_make_are_still_counted(tmp_path):
    spaces, token, space = filled_space(tmp_path, sessions=20)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    explorer = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads))
    budget = _space_budget(s11_import.WriteBudget, space)
    other = SessionNode(title="另一个标签页", messages=[{"role": "user", "content": "长" * 5000}])

    class Busy(type(budget)):
        def during(self, written):   # while the import writes, another tab of the same student saves too
            super().during(written)
            if not other.revision:
                space.store.save(other)

    s11_import.import_file(str(pi_transcript(uploads / "a.jsonl", "a")), space.store, budget=Busy())
    assert space.usage() == on_disk(space.folder)         # the other save is counted: nothing was recorded
    assert explorer.import_upload(token, View(), str(pi_transcript(uploads / "b.jsonl", "b"))).notice.startswith("📥")
    stray = os.path.join(space.folder, "手放进来的.json")   # a file no store wrote, right after the import
    with open(stray, "w", encoding="utf-8") as handle:
        handle.write("x" * 70_000)
    assert space.usage() == on_disk(space.folder)
    os.remove(space.store.path_of(other.session_id))      # and one taken away
    assert space.usage() == on_disk(space.folder)


def test_a_save_in_the_same_clock_tick_as_the_imports_last_write_is_counted(tmp_path):
    spaces, token, space = filled_space(tmp_path, sessions=20)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    explorer = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads))
    assert explorer.import_upload(token, View(), str(pi_transcript(uploads / "a.jsonl", "a"))).notice.startswith("📥")
    recorded = os.stat(space.folder)
    other = SessionNode(title="同一个时钟刻里", messages=[{"role": "user", "content": "长" * 5000}])
    space.store.save(other)
    os.utime(space.folder, ns=(recorded.st_atime_ns, recorded.st_mtime_ns))   # the folder looks untouched
    assert os.stat(space.folder).st_mtime_ns == recorded.st_mtime_ns
    assert space.usage() == on_disk(space.folder)         # the store's write count moved: counted again


def test_a_refused_import_reserves_nothing_and_writes_nothing(tmp_path, planned_bytes):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    spaces = Spaces(tmp_path / "sessions", limits=Limits(max_bytes=planned_bytes // 2, min_free_bytes=0))
    token = spaces.new_token()
    space = spaces.open(token)
    before = snapshot(space.folder)
    page = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads)).import_upload(
        token, View(), str(pi_transcript(uploads / "a.jsonl", "a")))
    assert "什么都没写" in page.notice and "正在进行的导入" not in page.notice
    assert snapshot(space.folder) == before and space._held[:2] == (0, 0)


def test_an_import_that_updates_its_earlier_nodes_is_counted_exactly(tmp_path, monkeypatch):
    spaces, token, space = filled_space(tmp_path, sessions=10)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    explorer = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads))
    walks = []
    real = spaces_module.folder_usage
    monkeypatch.setattr(spaces_module, "folder_usage", lambda *args: walks.append(args) or real(*args))
    for turns in (30, 60, 400):   # the agent went on: the same nodes, longer (the old versions stay in .history/)
        page = explorer.import_upload(token, View(), str(pi_transcript(uploads / "a.jsonl", "a", turns=turns)))
        assert page.notice.startswith("📥")
        walks.clear()
        assert space.usage() == on_disk(space.folder) and walks == []
    assert os.listdir(os.path.join(space.folder, ".history"))


def test_a_save_that_failed_after_writing_something_is_counted(tmp_path, monkeypatch):
    spaces, token, space = filled_space(tmp_path, sessions=10)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    real_save = s11_session.SessionStore.save

    def save_then_fail(self, node):   # e.g. the disk filled up after the node's chunks were written
        real_save(self, node)
        raise s11_session.ConflictError("模拟：保存到一半出错")

    monkeypatch.setattr(s11_session.SessionStore, "save", save_then_fail)
    page = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads)).import_upload(
        token, View(), str(pi_transcript(uploads / "a.jsonl", "a", turns=400)))
    assert "没有保存" in page.report                     # the import says which node it could not save
    assert space.usage() == on_disk(space.folder)         # what the failed save left on disk is counted


def test_a_session_tree_file_import_is_counted_exactly_with_its_journal_line(tmp_path, monkeypatch):
    import s11_tree_export
    from s11_import import tree_jsonl
    source = SessionStore(tmp_path / "source", durable=False)
    root = source.create_session("树", [{"role": "user", "content": "根 " * 200}])
    for number in range(6):
        source.fork(root, [{"role": "assistant", "content": f"分支 {number} " * 300}], title=f"分支 {number}")
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    upload = uploads / "tree.jsonl"
    upload.write_text(tree_jsonl.render_jsonl(s11_tree_export.prepare(source, root, "tree")), encoding="utf-8")
    spaces, token, space = filled_space(tmp_path, sessions=10)
    page = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads)).import_upload(
        token, View(), str(upload))
    assert page.notice.startswith("📥") and len(space.store.list_sessions()) == 17
    walks = []
    real = spaces_module.folder_usage
    monkeypatch.setattr(spaces_module, "folder_usage", lambda *args: walks.append(args) or real(*args))
    assert space.usage() == on_disk(space.folder) and walks == []   # the batch's journal line is counted too


# ── the explorer's own writes: fork, resume, delete (to the trash), restore (from it) ──────────────────────────
# Each reserves what it writes (exact bytes) and records the usage afterwards, as an import does: after the first
# check in a process, none of them walks the space, and the recorded usage is what a walk would count.
BIG_TEXT = "这一轮很长：" + "报表缓存要改成 LRU，先量一下内存。" * 120   # ~3 KB a message: 40 of them make a chunked session


@pytest.fixture
def walks(monkeypatch) -> list:
    """Every walk of a space folder (spaces.folder_usage) from now on."""
    found = []
    real = spaces_module.folder_usage
    monkeypatch.setattr(spaces_module, "folder_usage", lambda *args: found.append(args) or real(*args))
    return found


def new_session(space, text: str = BIG_TEXT) -> str:
    """40 messages, written by another writer. With BIG_TEXT the session is over the 64 KiB chunk threshold
    (version 4: chunk files in .chunks/ beside the head file); with a short text it is one small file (version 3)."""
    node = SessionNode(title="长会话", messages=[{"role": "user" if i % 2 == 0 else "assistant",
                                                 "content": f"第 {i} 条 {text}"} for i in range(40)])
    SessionStore(space.folder, durable=False).save(node)
    return node.session_id


def explorer_of(spaces, tmp_path) -> Explorer:
    return Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(tmp_path))


@pytest.mark.parametrize("which", ["small", "big"])
def test_after_the_first_check_fork_resume_delete_and_restore_walk_nothing_and_count_exactly(tmp_path, walks,
                                                                                               which):
    spaces, token, space = filled_space(tmp_path)
    session_id = new_session(space, BIG_TEXT if which == "big" else "短")
    explorer = explorer_of(spaces, tmp_path)
    view = explorer.select(token, View(), session_id).view
    first = explorer.fork(token, view, 3, "第一次分叉")
    assert first.notice.startswith("✅") and len(walks) == 1       # the first check in this process counts the space
    steps = [
        ("fork", lambda: explorer.fork(token, view, 21, "从中间分叉（大会话：块的中间）"), "✅"),
        ("fork from the start", lambda: explorer.fork(token, view, 0, "从头来"), "✅"),
        ("resume", lambda: explorer.resume(token, view, "再追加一轮 " * 50), "✅"),
        ("delete", lambda: explorer.delete(token, first.view), "🗑️"),
        ("restore", lambda: explorer.restore(token, View(), first.view.session_id), "♻️"),
    ]
    for name, step, success in steps:
        walks.clear()
        page = step()
        assert page.notice.startswith(success), (name, page.notice)
        assert space.usage() == on_disk(space.folder), name        # exact: what a walk counts now
        assert walks == [], name                                   # neither the check nor usage() walked
    assert os.listdir(os.path.join(space.folder, ".history"))       # the resumed node's old version is counted


def test_the_first_check_after_a_restart_walks_once_and_a_foreign_write_makes_the_next_one_walk(tmp_path, walks):
    spaces, token, space = filled_space(tmp_path, sessions=30)
    first, victim = [summary["session_id"] for summary in space.store.list_sessions()[:2]]
    restarted = Spaces(spaces.sessions_dir, limits=spaces.limits)   # a new process: nothing recorded yet
    explorer = explorer_of(restarted, tmp_path)
    own = restarted.open(token)
    view = explorer.select(token, View(), first).view
    assert explorer.delete(token, explorer.select(token, View(), victim).view).notice.startswith("🗑️")
    assert walks == []                                  # a delete never walks (nothing recorded yet: it records nothing)
    assert explorer.fork(token, view, 0, "一").notice.startswith("✅") and len(walks) == 1   # the first check
    assert explorer.fork(token, view, 0, "二").notice.startswith("✅") and len(walks) == 1
    cli = SessionStore(own.folder, durable=False)       # another process (the CLI) writes into the space
    cli.save(SessionNode(title="命令行写的", messages=[{"role": "user", "content": "长" * 9000}]))
    walks.clear()
    assert explorer.fork(token, view, 0, "三").notice.startswith("✅") and len(walks) == 1
    assert own.usage() == on_disk(own.folder) and len(walks) == 1
    with open(os.path.join(own.folder, ".trash", "手放进回收站的.json"), "w", encoding="utf-8") as handle:
        handle.write("x" * 5000)                        # a hand edit in the trash: counted too
    assert own.usage() == on_disk(own.folder) and len(walks) == 2


def numbers_out(notice: str) -> str:
    """A refusal with its figures taken out: the sentence itself, whatever the sizes were."""
    return re.sub(r"\d+(\.\d+)?", "N", notice)


@pytest.mark.parametrize("limit", ["sessions", "bytes"])
def test_two_forks_racing_for_the_last_room_never_both_write(tmp_path, monkeypatch, limit):
    spaces, token, space = filled_space(tmp_path, sessions=10)
    parent = space.store.load(new_session(space))
    count, used = on_disk(space.folder)
    child = SessionNode(parent_id=parent.session_id, messages=parent.messages[:30] + [{"role": "user", "content": "同时"}],
                        fork_point=30)
    child._stored = parent._stored
    one = sum(space.store.write_costs([child]))            # what one of these forks writes (new chunks, head, journal)
    room = {"sessions": dict(max_sessions=count + 1),       # room for one more session
            "bytes": dict(max_bytes=used + one * 3 // 2)}[limit]   # room for one fork's bytes, not two
    spaces = Spaces(spaces.sessions_dir, limits=Limits(min_free_bytes=0, create_burst=1000, **room))
    space = spaces.open(token)
    explorer = explorer_of(spaces, tmp_path)
    view = explorer.select(token, View(), parent.session_id).view
    # Both forks pass their check before either writes.
    pages = race(monkeypatch, lambda index: explorer.fork(token, view, 30, "同时"))
    notices = [page.notice for page in pages]
    assert sum(notice.startswith("✅") for notice in notices) == 1, notices
    refused = next(notice for notice in notices if not notice.startswith("✅"))
    count_after, used_after = on_disk(space.folder)
    assert count_after <= spaces.limits.max_sessions and used_after <= spaces.limits.max_bytes
    assert space.usage() == (count_after, used_after)
    plain = explorer.fork(token, view, 30, "同时").notice      # the same fork again, with nobody racing it
    assert plain.startswith("⚠️ 空间") and numbers_out(refused) == numbers_out(plain)   # the same sentence


def test_a_fork_or_resume_whose_exact_bytes_do_not_fit_is_refused_and_writes_nothing(tmp_path):
    spaces, token, space = filled_space(tmp_path, sessions=10)
    session_id = new_session(space)                          # ~100 KB of messages: a resume rewrites its head file
    count, used = on_disk(space.folder)
    spaces = Spaces(spaces.sessions_dir, limits=Limits(max_bytes=used + 2000, min_free_bytes=0, create_burst=1000))
    explorer = explorer_of(spaces, tmp_path)
    view = explorer.select(token, View(), session_id).view
    before = snapshot(spaces.open(token).folder)
    for name, act in (("fork", lambda: explorer.fork(token, view, 30, "短")),     # the new branch's head: ~36 KB
                      ("resume", lambda: explorer.resume(token, view, "短"))):    # a short turn, a whole new head file
        notice = act().notice
        assert notice.startswith(f"⚠️ 空间 {spaces.open(token).space_id} 已用") and "会超过上限" in notice, (name, notice)
        assert snapshot(spaces.open(token).folder) == before, name   # not a byte written; nothing saved is touched
    assert explorer.fork(token, view, 0, "短").notice.startswith("✅")   # a small fork still fits


def test_a_restore_needs_room_for_one_more_session_and_a_refused_one_leaves_the_copy_in_the_trash(tmp_path, walks):
    spaces, token, space = filled_space(tmp_path, sessions=10)
    explorer = explorer_of(spaces, tmp_path)
    victim = space.store.list_sessions()[0]["session_id"]
    view = explorer.select(token, View(), victim).view
    assert explorer.fork(token, view, 0, "先数一遍").notice.startswith("✅")   # the first check: one walk
    count, used = on_disk(space.folder)
    journal = os.path.join(space.folder, ".journal.jsonl")
    line = os.path.getsize(journal)
    walks.clear()
    assert explorer.delete(token, view).notice.startswith("🗑️")
    line = os.path.getsize(journal) - line
    # the trash counts: one session less, and the bytes grow by the journal's new line (the file only moved)
    assert space.usage() == on_disk(space.folder) == (count - 1, used + line) and 0 < line < 1000
    space.limits = Limits(max_sessions=count - 1, min_free_bytes=0)          # the space is now full
    before = snapshot(space.folder)
    page = explorer.restore(token, View(), victim)
    assert page.notice == f"⚠️ 空间 {space.space_id} 已有 {count - 1} 个会话，上限是 {count - 1} 个：请先删除一些不要的会话"
    assert snapshot(space.folder) == before and space.store.load(victim) is None   # still in the trash, unchanged
    space.limits = Limits(min_free_bytes=0)
    assert explorer.restore(token, View(), victim).notice.startswith("♻️")
    assert space.store.load(victim) is not None and space.usage() == on_disk(space.folder) and walks == []


def test_a_failed_or_stale_resume_is_counted_again(tmp_path, walks):
    spaces, token, space = filled_space(tmp_path, sessions=10)
    explorer = explorer_of(spaces, tmp_path)
    view = explorer.select(token, View(), new_session(space, "短")).view
    assert explorer.resume(token, view, "第一轮").notice.startswith("✅")
    walks.clear()
    stale = explorer.resume(token, view, "用旧的修订号再存一次")           # the page still holds the old revision
    assert "别的标签页里刚被保存过" in stale.notice
    assert space.usage() == on_disk(space.folder) and len(walks) == 1     # a write that failed: counted again


def test_a_resume_over_a_file_the_books_code_wrote_is_counted_exactly(tmp_path):
    import s11_book
    spaces, token, space = filled_space(tmp_path, sessions=10)
    book = s11_book.SessionStore(space.folder)                # no revision, no journal: the book's printed store
    session_id = book.create_session("书里的代码写的", [{"role": "user", "content": "你好"}])
    explorer = explorer_of(spaces, tmp_path)
    view = explorer.select(token, View(), session_id).view
    assert view.revision == 0
    assert explorer.fork(token, view, 1, "先记下用量").notice.startswith("✅")
    page = explorer.resume(token, view, "续写书里的会话")         # its journal line names it as "unversioned"
    assert page.notice.startswith("✅")
    assert space.usage() == on_disk(space.folder)


def test_a_fork_from_the_shelf_is_counted_without_walking(tmp_path, walks):
    spaces = Spaces(tmp_path / "sessions", teacher_secret="老师", limits=Limits(min_free_bytes=0, create_burst=1000))
    teacher = spaces.open(spaces.new_token())
    root_id = teacher.store.create_session("老师的示例", [{"role": "user", "content": f"第 {i} 条 {BIG_TEXT}"}
                                                          for i in range(40)])
    spaces.publish("老师", teacher.space_id, root_id)
    token = spaces.new_token()
    explorer = explorer_of(spaces, tmp_path)
    space = spaces.open(token)
    shelf = View(source="shelf", session_id=root_id)
    assert explorer.fork(token, shelf, 20, "从书架分叉").notice.startswith("✅")   # the first check: one walk
    walks.clear()
    assert explorer.fork(token, shelf, 30, "又一次").notice.startswith("✅")
    assert space.usage() == on_disk(space.folder) and walks == []


def test_the_explorers_fork_writes_the_same_node_and_journal_line_as_store_fork(tmp_path):
    spaces, token, space = filled_space(tmp_path, sessions=3)
    parent_id = new_session(space)
    explorer = explorer_of(spaces, tmp_path)
    page = explorer.fork(token, explorer.select(token, View(), parent_id).view, 21, "新的一轮", "分支甲")
    ours = space.store.load(page.view.session_id)
    theirs = space.store.fork(parent_id, [{"role": "user", "content": "新的一轮"}], at=21, title="分支甲")
    assert (ours.parent_id, ours.fork_point, ours.messages, ours.title, ours.revision) == \
        (theirs.parent_id, theirs.fork_point, theirs.messages, theirs.title, theirs.revision)
    lines = [json.loads(line) for line in Path(space.folder, ".journal.jsonl").read_text(encoding="utf-8").splitlines()]
    ours_line, theirs_line = lines[-2], lines[-1]      # undo (s11_history) reads these: the same shape
    for line in (ours_line, theirs_line):
        del line["n"], line["at"], line["ns"], line["ids"]
    assert ours_line == theirs_line and ours_line["op"] == "fork" and ours_line["parent"] == parent_id
    assert space.usage() == on_disk(space.folder)
