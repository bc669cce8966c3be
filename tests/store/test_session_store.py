"""The chapter's claims about SessionStore, one behaviour per test group."""

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import s11_book as chapter_reference
import s11_cli
import s11_session
import s11_tree
from s11_format import PLAIN_VERSION
from s11_session import (
    FORMAT_VERSION,
    ConflictError,
    CorruptSession,
    InvalidMessage,
    InvalidSessionId,
    SessionNode,
    SessionNotFound,
    SessionStore,
    UnsupportedVersion,
)
from store_layouts import LAYOUTS, append_bad_message, make_store, read_fields, rewrite_fields

CODE_DIR = Path(__file__).resolve().parents[2] / "code"


def msg(role, content):
    return {"role": role, "content": content}


@pytest.fixture(params=list(LAYOUTS))
def store(request, tmp_path):
    """Every test that takes `store` runs on both layouts (see store_layouts): small version-3 files and
    version-4 files whose history is in chunks."""
    return make_store(tmp_path / "sessions", request.param)


def same_store(store, **options):
    """Another SessionStore on the same folder with the same layout (another writer, a fresh cache)."""
    return SessionStore(store.storage_dir, chunk_threshold=store.chunk_threshold, chunk_bytes=store.chunk_bytes,
                        **options)


def file_bytes(store, session_id):
    return Path(store.path_of(session_id)).read_bytes()


def leftovers(folder):
    return [p.name for p in Path(folder).rglob("*.tmp")]   # .chunks/ too


# ── the chapter's API, on the book's printed store and on ours ───────────────────────────────
BOOK_MISSES = pytest.mark.xfail(strict=True, reason="a claim only this repository makes; the book's code fails it")


class _OursChunked:
    """s11_session with every session with a message in the version-4 (chunked) layout."""
    SessionNode = s11_session.SessionNode
    demo_tree_branching = staticmethod(s11_session.demo_tree_branching)

    @staticmethod
    def SessionStore(folder):  # noqa: N802 - stands in for the class
        return make_store(folder, "big")


@pytest.fixture(params=["book", "ours", "ours-chunked"])
def chapter(request):
    """The module under test: the chapter's printed code (s11_book) or this repository's (s11_session), the latter
    on both layouts. A test marked with only_ours() must fail on the book's code (strict xfail), so the mark cannot lie."""
    return {"book": chapter_reference, "ours": s11_session, "ours-chunked": _OursChunked}[request.param]


def only_ours(request):
    if request.node.callspec.params["chapter"] == "book":
        request.applymarker(BOOK_MISSES)


class TestChapterApi:
    def test_a_new_node_has_a_12_hex_id_and_a_readable_timestamp(self, chapter):
        node = chapter.SessionNode()
        assert re.fullmatch(r"[0-9a-f]{12}", node.session_id)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", node.created_at)
        assert (node.title, node.parent_id, node.messages) == ("未命名会话", None, [])

    def test_to_dict_and_from_dict_are_inverses(self, chapter):
        node = chapter.SessionNode("abc123", "标题 🌿", "parent1", [msg("user", "你好")], "2026-08-25 18:46:40")
        again = chapter.SessionNode.from_dict(node.to_dict())
        assert again.to_dict() == node.to_dict()

    def test_to_dict_and_from_dict_keep_the_fork_point(self):
        node = SessionNode("abc123", "标题 🌿", "parent1", [msg("user", "你好")], "2026-08-25 18:46:40",
                           fork_point=1)
        assert SessionNode.from_dict(node.to_dict()).to_dict() == node.to_dict()

    def test_create_then_load_gives_back_the_messages(self, chapter, tmp_path):
        store = chapter.SessionStore(str(tmp_path / "sessions"))
        sid = store.create_session("修复内存泄漏", [msg("user", "帮我看看")])
        node = store.load(sid)
        assert node.title == "修复内存泄漏" and node.messages == [msg("user", "帮我看看")]

    def test_load_of_a_missing_session_is_none(self, chapter, tmp_path):
        assert chapter.SessionStore(str(tmp_path / "sessions")).load("doesnotexist") is None

    def test_list_has_the_chapters_summary_fields(self, chapter, tmp_path):
        store = chapter.SessionStore(str(tmp_path / "sessions"))
        store.create_session("会话", [msg("user", "a")])
        first = store.list_sessions()[0]
        assert {"session_id", "title", "parent_id", "message_count", "created_at"} <= first.keys()
        assert (first["title"], first["parent_id"], first["message_count"]) == ("会话", None, 1)

    def test_list_is_newest_first_and_stable_within_one_second(self, chapter, tmp_path, request):
        only_ours(request)   # the book sorts by a timestamp with one-second resolution only
        store = chapter.SessionStore(str(tmp_path / "sessions"))
        ids = [store.create_session(f"会话 {i}") for i in range(12)]   # (almost) all within the same second
        listed = [s["session_id"] for s in store.list_sessions()]
        assert listed == ids[::-1]
        assert [s["session_id"] for s in chapter.SessionStore(str(tmp_path / "sessions")).list_sessions()] == listed

    def test_fork_copies_history_adds_messages_and_names_the_branch(self, chapter, tmp_path):
        store = chapter.SessionStore(str(tmp_path / "sessions"))
        parent_id = store.create_session("主会话", [msg("user", "a"), msg("assistant", "b")])
        child = store.fork(parent_id, [msg("user", "c")])
        assert child.parent_id == parent_id and child.title == "主会话 · 分支"
        assert [m["content"] for m in store.load(child.session_id).messages] == ["a", "b", "c"]

    def test_a_fork_never_touches_its_parent(self, chapter, tmp_path):
        store = chapter.SessionStore(str(tmp_path / "sessions"))
        parent_id = store.create_session("主会话", [msg("user", "a")])
        path = Path(store._path(parent_id))
        before = path.read_bytes()
        store.fork(parent_id, [msg("user", "b")])
        assert path.read_bytes() == before

    def test_fork_of_a_missing_parent_is_a_value_error(self, chapter, tmp_path):
        with pytest.raises(ValueError, match="nosuchparent"):
            chapter.SessionStore(str(tmp_path / "sessions")).fork("nosuchparent")

    def test_fork_of_a_missing_parent_says_not_found(self, store):
        with pytest.raises(SessionNotFound):
            store.fork("nosuchparent")

    def test_delete_returns_whether_something_was_deleted(self, chapter, tmp_path):
        store = chapter.SessionStore(str(tmp_path / "sessions"))
        sid = store.create_session("x")
        assert store.delete(sid) is True
        assert store.load(sid) is None
        assert store.delete(sid) is False

    def test_export_follows_the_chapters_layout(self, chapter, tmp_path):
        store = chapter.SessionStore(str(tmp_path / "sessions"))
        sid = store.create_session("导出", [msg("user", "你好"), msg("assistant", "好的")])
        text = store.export_markdown(sid)
        assert text.startswith("# 🗂️ 会话导出：导出") and f"- **会话 ID**：`{sid}`" in text
        assert "### 1. 👤 `user`" in text and "### 2. 🤖 `assistant`" in text and "- **消息条数**：2" in text
        assert store.export_markdown("nosuch") == "(未找到会话: nosuch)"

    def test_the_demo_builds_main_and_two_forks_with_5_7_9_messages(self, chapter, tmp_path):
        store = chapter.SessionStore(str(tmp_path / "sessions"))
        result = chapter.demo_tree_branching(store)
        counts = {key: len(store.load(result[key]).messages) for key in ("main_id", "branch_a_id", "branch_b_id")}
        assert counts == {"main_id": 5, "branch_a_id": 7, "branch_b_id": 9}
        branch_b = store.load(result["branch_b_id"])
        assert branch_b.parent_id == result["main_id"]
        assert branch_b.messages[-1]["content"].startswith("✅ 已按弱引用方案完成重构")
        assert "# 🗂️ 会话导出：修复登录服务内存泄漏 · 分支" in result["export_md"]
        assert len([name for name in os.listdir(store.storage_dir) if name.endswith(".json")]) == 3

    def test_the_demo_records_the_fork_point_and_locks_the_folder(self, chapter, tmp_path, request):
        only_ours(request)
        store = chapter.SessionStore(str(tmp_path / "sessions"))
        result = chapter.demo_tree_branching(store)
        assert store.load(result["branch_b_id"]).fork_point == 5
        assert ".lock" in os.listdir(store.storage_dir)

    def test_both_demos_tell_the_same_story(self, tmp_path):
        """python code/s11_book.py and python code/s11_session.py: same titles, same messages, same export body."""
        book = chapter_reference.demo_tree_branching(chapter_reference.SessionStore(str(tmp_path / "book")))
        ours_store = SessionStore(tmp_path / "ours")
        ours = s11_session.demo_tree_branching(ours_store)
        book_store = chapter_reference.SessionStore(str(tmp_path / "book"))
        for key in ("main_id", "branch_a_id", "branch_b_id"):
            mine, theirs = ours_store.load(ours[key]), book_store.load(book[key])
            assert (mine.title, mine.messages) == (theirs.title, theirs.messages)
        book_messages = re.split(r"\n(?=### \d+\. )", book["export_md"].split("---", 1)[1].strip())
        assert len(book_messages) == 9
        assert all(section.strip() in ours["export_md"] for section in book_messages)


# ── files the chapter's printed code wrote, and the other way round ─────────────────────────
class TestChapterFileFormat:
    def test_files_written_by_the_chapters_code_load(self, tmp_path):
        old = chapter_reference.SessionStore(str(tmp_path))
        main_id = old.create_session("旧会话", [msg("user", "a")])
        fork = old.fork(main_id, [msg("assistant", "b")])
        store = SessionStore(tmp_path)
        loaded = store.load(fork.session_id)
        assert loaded.messages == [msg("user", "a"), msg("assistant", "b")]
        assert loaded.parent_id == main_id and loaded.revision == 0
        assert {s["session_id"] for s in store.list_sessions()} == {main_id, fork.session_id}
        assert store.check() == []

    def test_a_chapter_file_is_upgraded_on_the_next_save(self, tmp_path):
        sid = chapter_reference.SessionStore(str(tmp_path)).create_session("旧会话", [msg("user", "a")])
        store = SessionStore(tmp_path)
        node = store.load(sid)
        node.messages.append(msg("assistant", "b"))
        store.save(node)
        data = json.loads(Path(store.path_of(sid)).read_text("utf-8"))
        assert data["version"] == PLAIN_VERSION and data["revision"] == 1   # the oldest version that holds it
        assert len(data["messages"]) == 2

    def test_files_written_by_this_store_load_in_the_chapters_code(self, tmp_path):
        store = SessionStore(tmp_path / "sessions")   # the demo's sessions are small: version-3 files
        result = s11_session.demo_tree_branching(store)
        old = chapter_reference.SessionStore(store.storage_dir)
        for key in ("main_id", "branch_a_id", "branch_b_id"):
            assert old.load(result[key]).messages == store.load(result[key]).messages
        assert sorted(s["message_count"] for s in old.list_sessions()) == [5, 7, 9]

    def test_a_version_2_file_loads_and_is_saved_as_the_oldest_version_that_holds_it(self, store):
        v2 = {"version": 2, "session_id": "v2file", "title": "第二版", "parent_id": None,
              "messages": [msg("user", "a")], "created_at": "2026-08-25 18:46:40", "fork_point": None,
              "workspace": None, "revision": 4, "created_ns": 7}
        Path(store.path_of("v2file")).write_text(json.dumps(v2, ensure_ascii=False), "utf-8")
        node = store.load("v2file")
        assert (node.source, node.revision, node.messages) == (None, 4, [msg("user", "a")])
        store.save(node)
        data = read_fields(store.path_of("v2file"))
        chunked = store.chunk_threshold == 0   # the chunked layout holds any session with a message
        assert (data["version"], data["revision"], data["source"]) == (4 if chunked else 3, 5, None)
        assert store.load("v2file").messages == [msg("user", "a")]

    def test_a_node_records_where_it_was_imported_from_and_the_chapters_code_still_reads_it(self, tmp_path):
        store = SessionStore(tmp_path / "sessions")
        source = {"format": "pi", "file": "2026-session.jsonl", "session_id": "abc", "agent_version": "3",
                  "cwd": "/home/u/p", "subagent": False, "active_end": True}
        node = SessionNode(title="导入的会话", messages=[msg("user", "hi")], source=source)
        store.save(node)
        assert store.load(node.session_id).source == source
        assert (FORMAT_VERSION, PLAIN_VERSION) == (5, 3)
        assert json.loads(Path(store.path_of(node.session_id)).read_text("utf-8"))["version"] == 3
        old = chapter_reference.SessionStore(store.storage_dir).load(node.session_id)
        assert (old.title, old.messages) == ("导入的会话", [msg("user", "hi")])

    def test_a_source_that_is_not_an_object_is_a_damaged_file(self, store):
        sid = store.create_session("会话", [msg("user", "a")])
        rewrite_fields(store.path_of(sid), source="claude")
        with pytest.raises(CorruptSession, match="source"):
            store.load(sid)

    def test_the_export_keeps_the_chapters_layout(self, tmp_path):
        store = SessionStore(tmp_path / "sessions")   # small sessions: the book's code reads these files
        result = s11_session.demo_tree_branching(store)
        expected = chapter_reference.SessionStore(store.storage_dir).export_markdown(result["branch_b_id"])
        ours = store.export_markdown(result["branch_b_id"]).split("\n")
        position = 0
        for line in expected.split("\n"):          # every chapter line, in the chapter's order
            if line:
                position = ours.index(line, position) + 1


# ── the tree: fork from any message, children, lineage, rendering ────────────────────────────
class TestTree:
    @pytest.fixture
    def tree(self, store):
        root = store.create_session("根", [msg("user", str(i)) for i in range(5)])
        a = store.fork(root, [msg("assistant", "方案 A")], at=2)
        b = store.fork(root, [msg("assistant", "方案 B")])
        a1 = store.fork(a.session_id, [msg("user", "深入 A")])
        return store, root, a.session_id, b.session_id, a1.session_id

    def test_fork_at_k_keeps_only_the_first_k_messages(self, tree):
        store, root, a, _, _ = tree
        node = store.load(a)
        assert [m["content"] for m in node.messages] == ["0", "1", "方案 A"]
        assert node.fork_point == 2

    @pytest.mark.parametrize("at", [-1, 6, "2", 2.0, True])
    def test_fork_at_an_impossible_position_is_refused(self, store, at):
        root = store.create_session("根", [msg("user", str(i)) for i in range(5)])
        with pytest.raises(ValueError, match="at="):
            store.fork(root, at=at)
        assert len(store.list_sessions()) == 1

    def test_fork_at_zero_starts_from_an_empty_history(self, store):
        root = store.create_session("根", [msg("user", "x")])
        assert store.fork(root, [msg("user", "new")], at=0).messages == [msg("user", "new")]

    def test_children_and_lineage(self, tree):
        store, root, a, b, a1 = tree
        assert [c["session_id"] for c in store.children(root)] == [a, b]
        assert [s["session_id"] for s in store.lineage(a1)] == [root, a, a1]
        assert store.children(a1) == []

    def test_lineage_stops_at_a_damaged_ancestor_and_ignores_unrelated_files(self, tree):
        store, root, a, b, a1 = tree
        Path(store.storage_dir, "unrelated.json").write_text("{", "utf-8")
        assert [s["session_id"] for s in store.lineage(a1)] == [root, a, a1]
        Path(store.path_of(root)).write_text("{", "utf-8")
        assert [s["session_id"] for s in store.lineage(a1)] == [a, a1]
        with pytest.raises(CorruptSession):
            store.lineage(root)

    def test_render_tree_shows_every_node_with_counts_and_what_it_added(self, tree):
        store, root, a, b, a1 = tree
        text = store.render_tree()
        lines = text.splitlines()
        assert len(lines) == 4
        assert lines[0].startswith(f"根 [{root}] 5 条")
        assert "├── " in lines[1] and a in lines[1] and "自第 2 条分叉" in lines[1] and "方案 A" in lines[1]
        assert lines[2].startswith("│   └── ") and a1 in lines[2]
        assert lines[3].startswith("└── ") and b in lines[3] and "+1" in lines[3]
        assert store.render_tree(a).splitlines()[0].startswith(f"根 · 分支 [{a}]")

    def test_deleting_a_node_never_loses_its_childrens_histories(self, tree):
        store, root, a, b, a1 = tree
        before = store.load(a1).messages
        store.delete(a, purge=True)
        assert store.load(a1).messages == before
        assert a1 in store.render_tree()       # shown as a top-level tree of its own
        assert [p.kind for p in store.check()] == ["missing_parent"]

    def test_a_very_deep_fork_chain_renders_and_walks(self, tmp_path):
        store = SessionStore(tmp_path, durable=False)
        ids = [store.create_session("根", [msg("user", "0")])]
        for depth in range(1, 1500):
            ids.append(store.fork(ids[-1], [msg("user", str(depth))], at=0).session_id)
        lines = store.render_tree().splitlines()
        assert len(lines) == 1500 and ids[-1] in lines[-1]
        assert [s["session_id"] for s in store.lineage(ids[-1])] == ids

    def test_a_hand_made_parent_cycle_does_not_hang(self, store):
        one, two = SessionNode("one", parent_id="two"), SessionNode("two", parent_id="one")
        store.save(one)
        store.save(two)
        assert [s["session_id"] for s in store.lineage("one")] == ["two", "one"]
        lines = store.render_tree().splitlines()      # neither is a root, yet both are shown, once
        assert len(lines) == 2 and "[one]" in lines[0] and "[two]" in lines[1]


# ── durability: all-or-nothing saves, damaged files kept as evidence ──────────────────────────
class TestDurability:
    @pytest.mark.parametrize("target", ["os.replace", "os.fsync", "write"])
    def test_a_failing_save_leaves_the_old_file_byte_identical(self, store, monkeypatch, target):
        sid = store.create_session("会话", [msg("user", "旧内容")])
        before = file_bytes(store, sid)
        node = store.load(sid)
        node.messages.append(msg("assistant", "新内容"))

        def boom(*args, **kwargs):
            raise OSError(28, "No space left on device")
        if target == "write":
            real_write = os.write

            def half_then_fail(fd, data):
                real_write(fd, bytes(data[: len(data) // 2]))   # half of it reaches the temp file
                boom()
            monkeypatch.setattr(os, "write", half_then_fail)
        else:
            module, name = target.split(".")
            monkeypatch.setattr(os, name, boom)
        with pytest.raises(OSError, match="No space"):
            store.save(node)
        monkeypatch.undo()
        assert file_bytes(store, sid) == before
        assert leftovers(store.storage_dir) == []
        node.revision = store.load(sid).revision
        store.save(node)            # after the fault is gone the same node saves fine
        assert len(store.load(sid).messages) == 2

    def test_kill_9_during_saves_never_leaves_a_broken_file(self, tmp_path):
        folder = tmp_path / "sessions"
        writer = (
            "import sys, s11_session as s\n"
            "store = s.SessionStore(sys.argv[1])\n"
            "node = s.SessionNode('victim', 'kill test')\n"
            "for i in range(100000):\n"
            "    node.messages.append({'role': 'user', 'content': 'x' * 20000 + str(i)})\n"
            "    store.save(node)\n"
            "    print(len(node.messages), flush=True)\n"
        )
        store = SessionStore(folder)
        # 12 writers killed after 0.05 to 0.27 s of saving (sessions of a few to a few hundred messages); the lab's
        # kill experiment (tests/workbench/test_lab.py) kills 30 more writers at random points of a save
        for round_number in range(12):
            if store.load("victim"):
                store.delete("victim", purge=True)
            proc = subprocess.Popen([sys.executable, "-c", writer, str(folder)], stdout=subprocess.PIPE,
                                    text=True, env={**os.environ, "PYTHONPATH": str(CODE_DIR)})
            acknowledged = 0
            deadline = time.monotonic() + 0.05 + round_number * 0.02
            for line in proc.stdout:
                acknowledged = int(line)
                if time.monotonic() > deadline:
                    break
            time.sleep(random.uniform(0, 0.003))   # land anywhere inside the next save
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            remaining = proc.stdout.read().split()
            acknowledged = int(remaining[-1]) if remaining else acknowledged
            node = store.load("victim")        # parses: never a torn file
            assert acknowledged <= len(node.messages) <= acknowledged + 1
            assert node.messages[-1]["content"].endswith(str(len(node.messages) - 1))
            assert {p.kind for p in store.check()} <= {"temp_file"}

    @pytest.mark.parametrize("damage", [
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),   # the chapter's save, interrupted
        lambda p: p.write_bytes(b""),
        lambda p: p.write_bytes(b"\xff\xfe not utf-8"),
        lambda p: p.write_bytes(b"[1, 2, 3]"),
        lambda p: p.write_bytes(b'{"session_id": "../../etc/passwd", "messages": []}'),
        append_bad_message,
    ], ids=["truncated", "empty", "not-utf8", "not-an-object", "hostile-id-inside", "bad-message"])
    def test_a_damaged_file_is_reported_by_name_and_kept(self, store, damage, request):
        sid = store.create_session("会话", [msg("user", "a")])
        good = store.create_session("好会话")
        path = Path(store.path_of(sid))
        damage(path)
        evidence = path.read_bytes()
        with pytest.raises(CorruptSession, match=sid):
            store.load(sid)
        listed = [s["session_id"] for s in store.list_sessions()]
        if "bad-message" in request.node.callspec.id:
            # The list reads only the fields it shows (a big file: its head line), and those are intact;
            # load() above and check() below still refuse the file.
            assert listed == [good, sid]
        else:
            assert listed == [good]
        problems = store.check()
        assert [(p.kind, p.path) for p in problems if p.kind != "orphan_chunk"] == [("corrupt", str(path))]
        # A damaged big file whose index line is gone no longer references its chunks: they show as orphans.
        assert all(Path(p.path).parent.name == ".chunks" for p in problems if p.kind == "orphan_chunk")
        with pytest.raises(CorruptSession):
            store.save(SessionNode(sid, "覆盖它"))
        assert path.read_bytes() == evidence

    def test_a_file_from_a_newer_version_is_refused_and_never_overwritten(self, store):
        sid = store.create_session("会话", [msg("user", "a")])
        path = Path(store.path_of(sid))
        rewrite_fields(path, version=FORMAT_VERSION + 1, new_field="以后的字段")
        evidence = path.read_bytes()
        with pytest.raises(UnsupportedVersion, match=f"version {FORMAT_VERSION + 1}"):
            store.load(sid)
        with pytest.raises(UnsupportedVersion):
            store.save(SessionNode(sid))
        assert [p.kind for p in store.check()] == ["newer_version"]
        assert store.list_sessions() == []
        assert path.read_bytes() == evidence

    def test_a_copied_file_whose_id_does_not_match_its_name_is_refused(self, store):
        sid = store.create_session("原件")
        copy = Path(store.storage_dir, "copy123.json")
        copy.write_bytes(Path(store.path_of(sid)).read_bytes())
        with pytest.raises(CorruptSession, match="不一致"):
            store.load("copy123")
        assert [p.kind for p in store.check()] == ["stray_file"]

    @pytest.mark.parametrize("field, value", [("created_ns", "soon"), ("workspace", "not a snapshot"),
                                              ("fork_point", 99), ("created_at", 20260825)])
    def test_a_hand_edited_field_of_the_wrong_type_is_a_damaged_file(self, store, field, value):
        sid = store.create_session("会话", [msg("user", "a")])
        path = Path(store.path_of(sid))
        rewrite_fields(path, **{field: value})
        with pytest.raises(CorruptSession, match=field):
            store.load(sid)
        below_the_head = field == "workspace" and store.chunk_threshold == 0   # version 4: in the index line
        assert len(store.list_sessions()) == below_the_head and [p.kind for p in store.check()] == ["corrupt"]

    def test_check_reports_leftover_temp_files(self, store):
        store.create_session("会话")
        leftover = Path(store.storage_dir, ".abc.json.x1y2.tmp")
        leftover.write_text("{", "utf-8")
        long_ago = time.time() - 3600      # nobody holds its lock and nobody touched it for an hour
        os.utime(leftover, (long_ago, long_ago))
        assert [p.kind for p in store.check()] == ["temp_file"]
        assert leftover.exists()           # reported, never deleted

    def test_delete_is_recoverable_unless_purged(self, store):
        sid = store.create_session("会话", [msg("user", "别丢下我")])
        store.delete(sid)
        assert store.load(sid) is None and store.list_sessions() == []
        assert store.restore(sid) is True
        assert store.load(sid).messages == [msg("user", "别丢下我")]
        store.delete(sid, purge=True)
        assert store.restore(sid) is False

    def test_restore_never_overwrites_a_live_session(self, store):
        sid = store.create_session("旧")
        store.delete(sid)
        store.save(SessionNode(sid, "新"))
        with pytest.raises(ConflictError):
            store.restore(sid)
        assert store.load(sid).title == "新"


# ── safety: hostile ids and bad messages ──────────────────────────────────────────────────────
HOSTILE_IDS = {"parent": "../x", "two-parents": "../../etc/passwd", "absolute": "/abs", "slash": "a/b",
               "backslash": "a\\b", "empty": "", "nul-byte": "a\x00b", "too-long": "x" * 65, "con": "CON", "nul": "nul",
               "com1": "com1", "dot-first": ".hidden", "dot": "a.b", "space-first": " spaced", "newline": "id\n",
               "int": 12345, "none": None}


class TestSafety:
    @pytest.mark.parametrize("bad_id", HOSTILE_IDS.values(), ids=HOSTILE_IDS.keys())
    def test_hostile_ids_are_rejected_before_any_path_is_built(self, tmp_path, bad_id):
        store = SessionStore(tmp_path / "inner" / "sessions")
        (tmp_path / "x.json").write_text('{"session_id": "x", "messages": []}', "utf-8")
        before = sorted(p for p in tmp_path.rglob("*"))
        for call in (store.load, store.delete, store.fork, store.lineage, store.children, store.path_of):
            with pytest.raises(InvalidSessionId):
                call(bad_id)
        node = SessionNode("ok")
        node.session_id = bad_id
        with pytest.raises(InvalidSessionId):
            store.save(node)
        if bad_id is not None:
            with pytest.raises(InvalidSessionId):
                store.save(SessionNode("ok", parent_id=bad_id))
        assert sorted(p for p in tmp_path.rglob("*")) == before

    @pytest.mark.parametrize("messages", [
        "not a list", [1], [{"content": "no role"}], [{"role": "", "content": "x"}],
        [{"role": "user"}], [{"role": "user", "content": 42}], [{"role": "user", "content": ["a"]}],
        [{"role": "user", "content": "x", "blob": object()}],
    ], ids=["str", "int-item", "no-role", "empty-role", "no-content", "int-content", "str-blocks",
            "unserialisable"])
    def test_a_bad_save_leaves_the_old_file_byte_identical(self, store, messages):
        sid = store.create_session("会话", [msg("user", "ok")])
        before = file_bytes(store, sid)
        node = store.load(sid)
        node.messages = messages
        with pytest.raises(InvalidMessage, match=sid):
            store.save(node)
        assert file_bytes(store, sid) == before
        assert leftovers(store.storage_dir) == []

    @pytest.mark.parametrize("content", [None, "", "纯文本", [{"type": "text", "text": "块"}]])
    def test_valid_content_shapes_save(self, store, content):
        sid = store.create_session("会话", [msg("user", content)])
        assert store.load(sid).messages[0]["content"] == content


# ── no lost turns ─────────────────────────────────────────────────────────────────────────────
class TestNoLostTurns:
    def test_saving_a_stale_node_raises_instead_of_erasing_the_other_turn(self, store):
        sid = store.create_session("会话", [msg("user", "a")])
        mine, theirs = store.load(sid), store.load(sid)
        theirs.messages.append(msg("assistant", "他们的回答"))
        store.save(theirs)
        mine.messages.append(msg("assistant", "我的回答"))
        with pytest.raises(ConflictError, match=sid):
            store.save(mine)
        assert store.load(sid).messages[-1]["content"] == "他们的回答"

    def test_two_threads_saving_one_session_one_conflict_no_lost_turn(self, store):
        sid = store.create_session("会话", [msg("user", "a")])
        nodes = [store.load(sid), same_store(store).load(sid)]
        barrier, outcomes = threading.Barrier(2), []

        def worker(node, text):
            node.messages.append(msg("assistant", text))
            barrier.wait()
            try:
                (store if text == "t0" else same_store(store)).save(node)
                outcomes.append(("saved", text))
            except ConflictError:
                outcomes.append(("conflict", text))
        threads = [threading.Thread(target=worker, args=(n, f"t{i}")) for i, n in enumerate(nodes)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(kind for kind, _ in outcomes) == ["conflict", "saved"]
        winner = next(text for kind, text in outcomes if kind == "saved")
        assert store.load(sid).messages[-1]["content"] == winner

    def test_two_processes_saving_one_session_one_conflict_no_lost_turn(self, store, tmp_path):
        sid = store.create_session("会话", [msg("user", "a")])
        go = tmp_path / "go"
        writer = (
            "import os, sys, time, s11_session as s\n"
            "store = s.SessionStore(sys.argv[1], chunk_threshold=float(sys.argv[5]), chunk_bytes=float(sys.argv[6]))\n"
            "node = store.load(sys.argv[2])\n"
            "node.messages.append({'role': 'assistant', 'content': sys.argv[4]})\n"
            "open(sys.argv[3] + sys.argv[4], 'w').close()\n"   # ready: revision 1 is loaded
            "while not os.path.exists(sys.argv[3]): time.sleep(0.001)\n"
            "try:\n"
            "    store.save(node); print('saved')\n"
            "except s.ConflictError:\n"
            "    print('conflict')\n"
        )
        procs = [subprocess.Popen([sys.executable, "-c", writer, store.storage_dir, sid, str(go), f"p{i}",
                                   str(store.chunk_threshold), str(store.chunk_bytes)],
                                  stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(CODE_DIR)})
                 for i in range(2)]
        deadline = time.monotonic() + 30
        while not all((tmp_path / f"gop{i}").exists() for i in range(2)) and time.monotonic() < deadline:
            time.sleep(0.005)
        go.touch()               # both hold revision 1: now they race
        outcomes = [p.communicate(timeout=30)[0].strip() for p in procs]
        assert sorted(outcomes) == ["conflict", "saved"]
        winner = f"p{outcomes.index('saved')}"
        assert store.load(sid).messages[-1]["content"] == winner

    def test_many_threads_appending_with_retry_lose_nothing(self, store):
        sid = store.create_session("会话")

        def append(text):
            local = same_store(store)
            while True:
                node = local.load(sid)
                node.messages.append(msg("user", text))
                try:
                    local.save(node)
                    return
                except ConflictError:
                    continue
        threads = [threading.Thread(target=append, args=(f"m{i}",)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(m["content"] for m in store.load(sid).messages) == sorted(f"m{i}" for i in range(8))

    def test_forks_never_conflict(self, store):
        root = store.create_session("根", [msg("user", "a")])
        forks = []
        threads = [threading.Thread(target=lambda: forks.append(store.fork(root))) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({f.session_id for f in forks}) == 6
        assert len(store.children(root)) == 6


# ── runnable like the chapter ─────────────────────────────────────────────────────────────────
class TestCommandLine:
    def run(self, *args, cwd, module="s11_cli.py"):
        return subprocess.run([sys.executable, str(CODE_DIR / module), *args], cwd=cwd,
                              capture_output=True, text=True, timeout=60)

    def test_running_the_module_runs_the_demo_into_sessions(self, tmp_path):
        out = self.run(cwd=tmp_path, module="s11_session.py")
        assert out.returncode == 0, out.stderr
        assert len(list((tmp_path / "sessions").glob("*.json"))) == 3
        assert "修复登录服务内存泄漏 [" in out.stdout and "├── " in out.stdout
        assert "# 🗂️ 会话导出：修复登录服务内存泄漏 · 分支" in out.stdout

    def test_tree_show_export_and_check_on_a_real_folder(self, tmp_path):
        folder = tmp_path / "store"
        result = s11_session.demo_tree_branching(SessionStore(folder))
        b = result["branch_b_id"]
        tree = self.run("--dir", str(folder), "tree", cwd=tmp_path)
        assert tree.returncode == 0 and b in tree.stdout
        show = self.run("--dir", str(folder), "show", b, cwd=tmp_path)
        assert "修复登录服务内存泄漏 · 分支" in show.stdout and "9. assistant" in show.stdout
        html = self.run("--dir", str(folder), "export", b, "--html", cwd=tmp_path)
        assert html.stdout.lstrip().lower().startswith("<!doctype html>")
        check = self.run("--dir", str(folder), "check", cwd=tmp_path)
        assert check.returncode == 0 and "没有发现问题" in check.stdout
        Path(folder, f"{b}.json").write_text("{", "utf-8")
        check = self.run("--dir", str(folder), "check", cwd=tmp_path)
        assert check.returncode == 1 and "[corrupt]" in check.stdout and b in check.stdout

    def test_export_redacts_unless_told_not_to(self, tmp_path):
        store = SessionStore(tmp_path / "store")
        sid = store.create_session("联系人", [msg("user", "我的邮箱是 zhang.san@example.com")])
        masked = self.run("--dir", str(tmp_path / "store"), "export", sid, cwd=tmp_path)
        assert "zhang.san@example.com" not in masked.stdout and "[已脱敏:邮箱]" in masked.stdout
        plain = self.run("--dir", str(tmp_path / "store"), "export", sid, "--no-redact", cwd=tmp_path)
        assert "zhang.san@example.com" in plain.stdout
        html = self.run("--dir", str(tmp_path / "store"), "export", sid, "--html", cwd=tmp_path)
        assert "zhang.san@example.com" not in html.stdout and "已脱敏" in html.stdout
        assert "zhang.san@example.com" in store.load(sid).messages[0]["content"]   # the store is untouched

    def test_bad_input_is_a_clear_error_not_a_traceback(self, tmp_path):
        out = self.run("--dir", str(tmp_path), "show", "../etc", cwd=tmp_path)
        assert out.returncode == 2 and "非法会话 ID" in out.stderr and "Traceback" not in out.stderr
        out = self.run("--dir", str(tmp_path), "export", "nosuch", cwd=tmp_path)
        assert out.returncode == 2 and "未找到会话" in out.stderr

    def test_a_missing_transcript_is_a_clear_error(self, tmp_path, capsys):
        assert s11_cli.main(["--dir", str(tmp_path), "import", str(tmp_path / "x.jsonl")]) == 2
        err = capsys.readouterr().err
        assert "不存在" in err and "x.jsonl" in err and "Traceback" not in err


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_cached_listing_equals_a_fresh_one_field_for_field(tmp_path, layout):
    # the summary cache keeps values only (a tuple per file); the dicts it hands back must be what a fresh
    # store reads from the same files, with the same keys, including converge and label fields
    store = make_store(tmp_path, layout)
    ids = s11_session.demo_tree_branching(store)
    merged = store.converge(ids["branch_b_id"], [ids["branch_a_id"]], "keep B, it is shorter")
    node = store.load(ids["main_id"])
    node.messages[0]["label"] = "start here"
    store.save(node)
    first, again = store.list_sessions(), store.list_sessions()
    fresh = SessionStore(store.storage_dir, chunk_threshold=store.chunk_threshold).list_sessions()
    assert first == again == fresh
    assert {tuple(summary) for summary in again} == {tuple(s11_tree.SUMMARY_KEYS)}
    by_id = {summary["session_id"]: summary for summary in again}
    assert by_id[merged.session_id]["converged_from"] and by_id[ids["main_id"]]["labels"]
    again[0]["title"] = "changed by the caller"
    assert store.list_sessions()[0]["title"] != "changed by the caller"
