"""The space quota (s11_workbench/spaces.py): imports reserve what they will write, and an import's own writes are
counted by the server instead of re-stat'ing every session file — without ever counting a space short.

What happens to saved data in each case: a refused import writes nothing (the folder is byte for byte the same);
an accepted one writes its nodes; nothing already saved is touched.
"""

from __future__ import annotations

import json
import os
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
    # Both imports pass their check before either writes: each waits at its first save until the other one has
    # reached its own first save or has finished (refused).
    gate, arrived = threading.Condition(), [0]
    real_save = s11_session.SessionStore.save

    def arrive():
        with gate:
            arrived[0] += 1
            gate.notify_all()
            gate.wait_for(lambda: arrived[0] >= 2, timeout=10)

    def save(self, node):
        if not getattr(local, "saved", False):
            local.saved = True
            arrive()
        return real_save(self, node)

    local = threading.local()
    monkeypatch.setattr(s11_session.SessionStore, "save", save)
    pages = [None, None]

    def run(index):
        try:
            pages[index] = explorer.import_upload(token, View(), str(files[index]))
        finally:
            if not getattr(local, "saved", False):
                arrive()   # refused before writing: let the other one go on

    threads = [threading.Thread(target=run, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
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
