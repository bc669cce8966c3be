"""What an adversarial review of the store found (issue 9), one behaviour per test group.

Hostile folders and files, a store in use by several writers, secrets that must really go away,
content that would not read back, and output that must not be able to forge or hide anything.
"""

import builtins
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import s11_book
import s11_cli
import s11_session
import s11_storage
import s11_text
import s11_workspace
from s11_session import (
    ConflictError,
    CorruptSession,
    InvalidMessage,
    SessionError,
    SessionNode,
    SessionStore,
)
from store_layouts import LAYOUTS, make_store, read_fields

CODE_DIR = Path(__file__).resolve().parents[2] / "code"


def msg(role, content):
    return {"role": role, "content": content}


@pytest.fixture(params=list(LAYOUTS))
def store(request, tmp_path):
    """Both layouts (see store_layouts): version-3 files, and version-4 files with their history in chunks."""
    return make_store(tmp_path / "sessions", request.param)


def same_store(store):
    return SessionStore(store.storage_dir, chunk_threshold=store.chunk_threshold, chunk_bytes=store.chunk_bytes)


def leftovers(folder):
    return sorted(p.name for p in Path(folder).rglob("*.tmp"))   # .chunks/ too


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, str(CODE_DIR / "s11_cli.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(CODE_DIR)})


def finishes(call, seconds=10.0):
    """Run call in a thread; a store call that hangs (a FIFO opened for reading) fails the test, not the run."""
    box = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised in the test's own thread
            box["error"] = exc
    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"{call} did not return within {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


# ── item 2: the revision check reads the file, never a cache ──────────────────────────────────
class TestRevisionCheckReadsTheDisk:
    def test_a_stale_save_is_refused_even_when_inode_size_and_mtime_look_unchanged(self, store):
        sid = store.create_session("会话", [msg("user", "a")])
        path = Path(store.path_of(sid))
        stale = store.load(sid)                       # this instance now remembers (inode, size, mtime)
        before = os.stat(path)
        newer = path.read_text("utf-8").replace('"revision": 1', '"revision": 2').replace(
            '"revision":1,', '"revision":2,').replace('"content": "a"', '"content": "b"')   # another turn, same length
        with open(path, "r+b") as f:                  # same inode: written in place, like the chapter's save
            f.write(newer.encode("utf-8"))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))   # within one timestamp tick
        assert os.stat(path)[1:] == before[1:] or os.stat(path).st_mtime_ns == before.st_mtime_ns
        stale.messages.append(msg("assistant", "stale turn"))
        with pytest.raises(ConflictError, match=sid):
            store.save(stale)
        assert path.read_text("utf-8") == newer      # the other writer's turn survives

    def test_our_own_last_save_needs_no_reload(self, store):
        node = SessionNode(title="连续保存")
        for i in range(5):
            node.messages.append(msg("user", str(i)))
            store.save(node)
        assert store.load(node.session_id).revision == 5

    def test_a_file_damaged_after_it_was_read_is_still_never_overwritten(self, store):
        sid = store.create_session("会话", [msg("user", "a")])
        node = store.load(sid)
        path = Path(store.path_of(sid))
        damaged = path.read_bytes()[:-3]             # same head, torn tail
        path.write_bytes(damaged)
        with pytest.raises(CorruptSession, match=sid):
            store.save(node)
        assert path.read_bytes() == damaged

    def test_version_and_revision_come_first_in_the_file(self, store):
        sid = store.create_session("会话")
        assert list(read_fields(store.path_of(sid)))[:2] == ["version", "revision"]


# ── item 3: one odd entry never breaks the whole store ────────────────────────────────────────
def _directory(path, monkeypatch):
    path.mkdir()


def _unreadable(path, monkeypatch):
    path.write_text(json.dumps({"session_id": "odd", "messages": []}), "utf-8")
    path.chmod(0)
    if os.geteuid() == 0:   # root reads anything: make the open fail the way it does for other accounts
        real_open, real_os_open = builtins.open, os.open

        def refuse(target):
            if os.fspath(target) == str(path):
                raise PermissionError(13, "Permission denied", str(path))
        monkeypatch.setattr(builtins, "open", lambda f, *a, **k: refuse(f) or real_open(f, *a, **k))
        monkeypatch.setattr(os, "open", lambda f, *a, **k: refuse(f) or real_os_open(f, *a, **k))


def _deeply_nested(path, monkeypatch):
    path.write_text('{"session_id": "odd", "messages": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}")


def _huge_number(path, monkeypatch):
    path.write_text('{"session_id": "odd", "messages": [], "x": ' + "9" * 5000 + "}")


def _dangling_link(path, monkeypatch):
    path.symlink_to(path.parent / "nowhere.json")


def _link_outside(path, monkeypatch):
    outside = path.parent.parent / "outside.json"
    outside.write_text(json.dumps({"session_id": "odd", "title": "外面的文件", "messages": []}), "utf-8")
    path.symlink_to(outside)


def _fifo(path, monkeypatch):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    os.mkfifo(path)


def _socket(path, monkeypatch):
    if not hasattr(socket, "AF_UNIX"):
        pytest.skip("no Unix sockets on this system")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    monkeypatch.setattr(sys.modules[__name__], "_keep_socket_open", server, raising=False)


ODD_ENTRIES = {"directory": _directory, "unreadable": _unreadable, "deeply-nested": _deeply_nested,
               "huge-number": _huge_number, "dangling-link": _dangling_link, "link-outside": _link_outside,
               "fifo": _fifo, "socket": _socket}


class TestOddEntries:
    @pytest.fixture(params=list(ODD_ENTRIES))
    def odd(self, request, store, monkeypatch):
        good = store.create_session("好会话", [msg("user", "a")])
        child = store.fork(good, [msg("user", "b")]).session_id
        orphan = SessionNode("orphan", "挂在怪条目下", parent_id="odd", messages=[msg("user", "c")])
        store.save(orphan)
        path = Path(store.storage_dir, "odd.json")
        ODD_ENTRIES[request.param](path, monkeypatch)
        return store, good, child, path

    def test_listing_the_tree_and_walking_it_skip_the_entry(self, odd, request):
        store, good, child, path = odd
        fresh = same_store(store)   # nothing cached
        listed = finishes(fresh.list_sessions)
        # A file nested deeper than s11_format.MAX_FILE_NESTING is refused before any JSON library reads it
        # (a bracket count), so the list skips it whichever parser is installed; check() reports it (below).
        assert {s["session_id"] for s in listed} == {good, child, "orphan"}
        assert [c["session_id"] for c in finishes(lambda: fresh.children(good))] == [child]
        tree = finishes(fresh.render_tree)
        assert good in tree and child in tree and "[orphan]" in tree and "[odd]" not in tree
        assert [s["session_id"] for s in finishes(lambda: fresh.lineage("orphan"))] == ["orphan"]

    def test_check_reports_the_entry_by_name_and_load_refuses_it(self, odd, request):
        store, good, child, path = odd
        fresh = same_store(store)
        problems = finishes(fresh.check)
        assert [p.path for p in problems if p.kind in ("corrupt", "unreadable")] == [str(path)]
        with pytest.raises(CorruptSession, match="odd") as refused:
            finishes(lambda: fresh.load("odd"))
        if "deeply-nested" in request.node.callspec.id:   # the same sentence whatever JSON library is installed
            assert "嵌套超过" in str(refused.value)
            assert [p.detail for p in problems if p.path == str(path)] == [str(refused.value)]

    def test_saving_over_the_entry_is_refused_and_leaves_it_alone(self, odd):
        store, good, child, path = odd
        kind = os.lstat(path).st_mode
        with pytest.raises(CorruptSession, match="odd"):
            finishes(lambda: store.save(SessionNode("odd", "覆盖它")))
        assert os.lstat(path).st_mode == kind and leftovers(store.storage_dir) == []


def test_a_fifo_is_never_even_opened(store):
    """A writer blocked opening the FIFO would be released by any reader's open(): it must stay blocked."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    fifo = Path(store.storage_dir, "pipe.json")
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)
    writer.start()
    for call in (store.list_sessions, store.check, store.render_tree, lambda: store.load("pipe")):
        try:
            finishes(call)
        except CorruptSession:
            pass
    writer.join(0.2)
    still_waiting = writer.is_alive()
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))   # release the writer before asserting
    writer.join(5)
    assert still_waiting


# ── item 4: check() on a store in use ─────────────────────────────────────────────────────────
class TestCheckWhileInUse:
    def test_check_during_saves_and_deletes_never_crashes_and_reports_nothing(self, tmp_path):
        folder = tmp_path / "busy"
        SessionStore(folder)
        stop, errors, reports = threading.Event(), [], []

        def writer(number):
            local = SessionStore(folder)
            try:
                for i in range(25):
                    sid = local.create_session(f"w{number}", [msg("user", "x" * 200_000)])
                    node = local.load(sid)
                    node.messages.append(msg("assistant", "y" * 200_000))
                    local.save(node)
                    local.delete(sid, purge=bool(i % 2))
            except Exception as exc:
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        checker = SessionStore(folder)
        while any(t.is_alive() for t in threads):
            try:
                reports.extend(checker.check())
            except Exception as exc:
                errors.append(exc)
                break
        stop.set()
        for t in threads:
            t.join()
        assert errors == [] and reports == []

    def test_a_live_writers_temp_file_is_not_reported_however_old(self, store):
        pending = s11_storage.PendingWrite(os.path.join(store.storage_dir, "abc.json"), b"{}")
        old = time.time() - 3600
        os.utime(pending.temp_path, (old, old))
        try:
            assert store.check() == []
        finally:
            pending.discard()
        assert leftovers(store.storage_dir) == []

    def test_a_temp_file_left_by_a_killed_writer_is_reported_once_it_is_old(self, store):
        script = ("import os, signal, sys, s11_storage\n"
                  "s11_storage.PendingWrite(os.path.join(sys.argv[1], 'abc.json'), b'{}' * 1000)\n"
                  "os.kill(os.getpid(), signal.SIGKILL)\n")
        proc = subprocess.run([sys.executable, "-c", script, store.storage_dir], capture_output=True,
                              env={**os.environ, "PYTHONPATH": str(CODE_DIR)}, timeout=60)
        assert proc.returncode == -signal.SIGKILL
        [temp] = leftovers(store.storage_dir)
        assert store.check() == []                  # within the grace period it may still be in flight
        old = time.time() - 3600
        os.utime(Path(store.storage_dir, temp), (old, old))
        assert [(p.kind, Path(p.path).name) for p in store.check()] == [("temp_file", temp)]

    def test_a_file_that_vanishes_mid_scan_is_not_reported(self, store, monkeypatch):
        store.create_session("会话")
        real_listdir = os.listdir
        monkeypatch.setattr(os, "listdir", lambda folder: real_listdir(folder) + ["gone.json", ".gone.json.x.tmp"])
        assert store.check() == []
        assert len(store.list_sessions()) == 1

    def test_a_dangling_link_is_reported(self, store):
        Path(store.storage_dir, "ghost.json").symlink_to("nowhere.json")
        [problem] = store.check()
        assert problem.kind == "unreadable" and problem.path.endswith("ghost.json")
        assert "符号链接" in problem.detail and "不存在" in problem.detail


# ── item 5: purging really removes every copy ─────────────────────────────────────────────────
SECRET = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


def copies_of_secret(folder):
    return [p for p in Path(folder).rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


class TestPurge:
    def test_purge_after_a_soft_delete_removes_the_trash_copies_too(self, store):
        sid = store.create_session("有密钥", [msg("user", f"我的密钥是 {SECRET}")])
        assert store.delete(sid) is True
        store.save(SessionNode(sid, "同名新会话", messages=[msg("user", SECRET)]))
        assert store.delete(sid) is True                  # two copies in .trash now
        assert len(copies_of_secret(store.storage_dir)) == 2
        assert store.delete(sid, purge=True) is True
        assert copies_of_secret(store.storage_dir) == []
        assert store.restore(sid) is False and store.delete(sid, purge=True) is False

    def test_purge_of_a_live_session_removes_its_earlier_deleted_versions(self, store):
        sid = store.create_session("v1", [msg("user", SECRET)])
        store.delete(sid)
        store.save(SessionNode(sid, "v2", messages=[msg("user", SECRET)]))
        assert store.delete(sid, purge=True) is True
        assert copies_of_secret(store.storage_dir) == []

    def test_empty_trash_removes_every_deleted_session_and_nothing_else(self, store):
        keep = store.create_session("留着", [msg("user", "keep")])
        for i in range(3):
            store.delete(store.create_session(f"删 {i}", [msg("user", SECRET)]))
        assert store.empty_trash() == 3
        assert copies_of_secret(store.storage_dir) == []
        assert [s["session_id"] for s in store.list_sessions()] == [keep]
        assert store.empty_trash() == 0

    def test_the_command_line_empties_the_trash(self, tmp_path):
        store = SessionStore(tmp_path / "s")
        store.delete(store.create_session("删", [msg("user", SECRET)]))
        out = run_cli("--dir", str(tmp_path / "s"), "empty-trash", cwd=tmp_path)
        assert out.returncode == 0 and "1" in out.stdout, out.stderr
        assert copies_of_secret(tmp_path / "s") == []


# ── item 6: no temp file leaks when any step fails ────────────────────────────────────────────
class TestNoLeaks:
    def test_a_lock_file_that_cannot_be_opened_leaks_no_temp_file(self, store):
        sid = store.create_session("会话", [msg("user", "旧")])
        path = Path(store.path_of(sid))
        before = path.read_bytes()
        lock = Path(store.storage_dir, ".lock")
        lock.unlink()
        lock.mkdir()                                   # opening it for writing fails, for root too
        node = store.load(sid)
        node.messages.append(msg("user", "新"))
        with pytest.raises(OSError):
            store.save(node)
        assert leftovers(store.storage_dir) == [] and path.read_bytes() == before

    def test_the_command_line_names_the_lock_file_in_chinese(self, tmp_path):
        folder = tmp_path / "s"
        folder.mkdir()
        (folder / ".lock").mkdir()
        out = run_cli("--dir", str(folder), "demo", cwd=tmp_path)
        assert out.returncode == 2 and ".lock" in out.stderr and "是一个目录" in out.stderr
        assert "Is a directory" not in out.stderr and "Traceback" not in out.stderr
        assert leftovers(folder) == []


# ── item 9: content that would not read back ──────────────────────────────────────────────────
def nested(depth):
    value = "底"
    for _ in range(depth):
        value = [value]
    return value


def call_from_deep_stack(frames, call):
    return call() if frames == 0 else call_from_deep_stack(frames - 1, call)


class TestContentThatMustReadBack:
    @pytest.mark.parametrize("depth", [s11_session.MAX_NESTING, 960, 100_000])
    def test_nesting_deeper_than_the_limit_is_refused_naming_session_and_message(self, store, depth):
        sid = store.create_session("会话", [msg("user", "ok")])
        before = Path(store.path_of(sid)).read_bytes()
        node = store.load(sid)
        node.messages.append({"role": "tool", "content": [{"type": "json", "data": nested(depth)}]})
        with pytest.raises(InvalidMessage, match=f"{sid}.*第 2 条.*{s11_session.MAX_NESTING}"):
            store.save(node)
        assert Path(store.path_of(sid)).read_bytes() == before and leftovers(store.storage_dir) == []

    def test_content_at_the_limit_saves_and_loads_from_a_deep_call_stack(self, store):
        limit = s11_session.MAX_NESTING
        node = SessionNode(messages=[{"role": "tool", "content": [{"type": "json", "data": nested(limit - 3)}]}])
        store.save(node)
        headroom = sys.getrecursionlimit() - limit - 250
        loaded = call_from_deep_stack(headroom, lambda: same_store(store).load(node.session_id))
        assert loaded.messages == node.messages

    @pytest.mark.parametrize("text", ["半个表情 \ud83d", "\udc00 反过来", "a\ud800b\udfffc"])
    def test_a_lone_surrogate_is_stored_so_that_it_reads_back(self, store, text):
        node = SessionNode(title=text, messages=[msg("user", text)])
        store.save(node)
        raw = Path(store.path_of(node.session_id)).read_bytes()
        raw.decode("utf-8")                               # still a valid UTF-8 file
        loaded = same_store(store).load(node.session_id)
        assert (loaded.title, loaded.messages) == (text, [msg("user", text)])
        if store.chunk_threshold:   # a version-3 file: the book's code reads it too
            assert s11_book.SessionStore(store.storage_dir).load(node.session_id).messages == [msg("user", text)]

    def test_a_file_holding_a_lone_surrogate_loads_and_saves_again(self, store):
        path = Path(store.storage_dir, "half.json")
        path.write_text('{"session_id": "half", "title": "t", "messages": '
                        '[{"role": "user", "content": "cut \\ud83d"}]}', "utf-8")
        node = store.load("half")
        node.messages.append(msg("assistant", "ok"))
        store.save(node)
        assert store.load("half").messages[0]["content"] == "cut \ud83d"

    def test_the_command_line_shows_such_a_file_without_a_traceback(self, tmp_path):
        folder = tmp_path / "s"
        folder.mkdir()
        (folder / "half.json").write_text('{"session_id": "half", "title": "半个 \\ud83d", "messages": '
                                          '[{"role": "user", "content": "cut \\ud83d"}]}', "utf-8")
        for args in (["show", "half"], ["tree"], ["export", "half"], ["export", "half", "--html"]):
            out = run_cli("--dir", str(folder), *args, cwd=tmp_path)
            assert out.returncode == 0 and "Traceback" not in out.stderr, (args, out.stderr)

    def test_an_unexpected_failure_is_a_chinese_message_not_a_traceback(self, tmp_path, monkeypatch, capsys):
        def broken(args):
            raise RuntimeError("boom")
        monkeypatch.setitem(s11_cli.COMMANDS, "tree", broken)
        assert s11_cli.main(["--dir", str(tmp_path), "tree"]) == 3
        err = capsys.readouterr().err
        assert "内部错误" in err and "Traceback" not in err


# ── item 10: resume() compares only against a folder the caller chose ─────────────────────────
class TestResumeTrustsOnlyTheCaller:
    @pytest.fixture
    def session_naming_proc(self, tmp_path):
        project = tmp_path / "project"
        project.mkdir()
        (project / "a.py").write_text("a = 1\n", "utf-8")
        sid = SessionStore(tmp_path / "s", workspace=project).create_session("会话")
        path = tmp_path / "s" / f"{sid}.json"
        data = json.loads(path.read_text("utf-8"))
        data["workspace"]["root"] = "/proc"             # a shared or imported file can name any folder
        path.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        return tmp_path / "s", sid, project

    def test_without_a_chosen_folder_nothing_is_snapshotted_and_the_drift_says_so(self, session_naming_proc,
                                                                                  monkeypatch):
        folder, sid, project = session_naming_proc
        monkeypatch.setattr(s11_workspace, "snapshot", lambda *a, **k: pytest.fail("snapshotted a folder"))
        node, drift = SessionStore(folder).resume(sid)
        assert node.session_id == sid and len(drift) == 1 and "未指定工作区" in drift[0]

    def test_an_explicit_folder_is_the_one_compared(self, session_naming_proc):
        folder, sid, project = session_naming_proc
        (project / "a.py").write_text("a = 2\n", "utf-8")
        seen = []
        real = s11_workspace.snapshot

        def spy(path, **kwargs):
            seen.append(os.path.realpath(path))
            return real(path, **kwargs)
        s11_workspace.snapshot, restore = spy, s11_workspace.snapshot
        try:
            _, drift = SessionStore(folder).resume(sid, workspace=project)
        finally:
            s11_workspace.snapshot = restore
        assert seen == [os.path.realpath(project)] and "/proc" not in seen
        assert any("a.py" in line for line in drift)


# ── item 11: deep chains walk in linear time and print a bounded tree ─────────────────────────
@pytest.fixture(scope="module")
def deep_chain(tmp_path_factory):
    store = SessionStore(tmp_path_factory.mktemp("deep") / "s", durable=False)
    ids, parent = [], None
    for depth in range(5000):
        node = SessionNode(f"n{depth}", f"第 {depth} 层", parent_id=parent, messages=[msg("user", str(depth))])
        store.save(node)
        ids.append(parent := node.session_id)
    return store, ids


class TestDeepChains:
    def test_lineage_of_a_5000_deep_chain_is_every_ancestor_in_order(self, deep_chain):
        store, ids = deep_chain
        assert [s["session_id"] for s in store.lineage(ids[-1])] == ids

    def test_render_tree_of_a_5000_deep_chain_stays_within_a_few_hundred_characters_per_node(self, deep_chain):
        store, ids = deep_chain
        text = store.render_tree()
        lines = text.splitlines()
        assert len(lines) == 5000 and all(f"[{sid}]" in line for sid, line in zip(ids, lines))
        assert max(len(line) for line in lines) <= 300
        assert "第 4999 层" in lines[-1] and "4999" in lines[-1]

    def test_a_huge_title_is_cut_in_the_tree(self, store):
        store.save(SessionNode("big", "长" * 100_000))
        assert len(store.render_tree()) < 300


# ── item 13: what the command line prints, and small store fixes ──────────────────────────────
HOSTILE_TITLE = "正常标题\n└── 伪造的节点 [000000000000] 99 条\x1b[2J\x1b]0;pwned\x07\u202eevil\u2066"


class TestSmallThings:
    def test_titles_cannot_forge_tree_lines_or_send_terminal_codes(self, tmp_path):
        store = SessionStore(tmp_path / "s")
        sid = store.create_session(HOSTILE_TITLE, [msg("user", "正文\x1b[31m红\u202e")])
        store.fork(sid, [msg("user", "分支\r覆盖")])
        for args in (["tree"], ["show", sid], ["export", sid]):
            out = run_cli("--dir", str(tmp_path / "s"), *args, cwd=tmp_path)
            assert out.returncode == 0, out.stderr
            for bad in ("\x1b", "\x07", "\u202e", "\u2066", "\r"):
                assert bad not in out.stdout, (args, repr(bad))
        tree = run_cli("--dir", str(tmp_path / "s"), "tree", cwd=tmp_path).stdout
        assert len(tree.strip().splitlines()) == 2 and "伪造的节点" in tree

    def test_a_hostile_file_name_is_shown_inert_by_check_and_in_the_log(self, tmp_path):
        folder = tmp_path / "s"
        SessionStore(folder).create_session("会话")
        (folder / "evil\x1b[2J\nfake.json").write_text("{", "utf-8")
        for args in (["check"], ["tree"]):
            out = run_cli("--dir", str(folder), *args, cwd=tmp_path)
            assert "\x1b" not in out.stdout + out.stderr and "evil\\u001b[2J\\nfake.json" in out.stdout + out.stderr

    def test_printable_keeps_text_and_shows_what_it_neutralised(self):
        assert s11_text.printable("会话 🌿 ok") == "会话 🌿 ok"
        assert s11_text.printable("a\nb\x1b[31m\u202e") == "a\\nb\\u001b[31m\\u202e"
        assert s11_text.printable("a\nb\tc\x1b", keep_newlines=True) == "a\nb\tc\\u001b"
        assert s11_text.printable("\ud83d") == "\\ud83d"

    def test_hide_paths_hides_folders_but_keeps_markdown_escapes(self):
        # an error names what was wrong: an escaped level id or title stays whole (it was cut to "no-level")
        assert s11_text.hide_paths(r"⚠️ 没有关卡 no\-such\-level") == r"⚠️ 没有关卡 no\-such\-level"
        assert s11_text.hide_paths(r"标题 v1\.2\_final\! 不对") == r"标题 v1\.2\_final\! 不对"
        # folders are still hidden: POSIX, with spaces, and Windows
        assert s11_text.hide_paths("坏了：/srv/app/My Sessions/ab/x.json：第 1 行") == "坏了：x.json：第 1 行"
        assert s11_text.hide_paths(r"坏了：C:\Users\老师\sessions\x.json") == "坏了：x.json"
        assert s11_text.hide_paths("坏了：/srv/.hidden/x.json") == "坏了：x.json"

    def test_restore_fsyncs_the_folder(self, store, monkeypatch):
        sid = store.create_session("会话")
        store.delete(sid)
        synced = []
        monkeypatch.setattr(s11_session, "fsync_dir", lambda folder: synced.append(os.path.realpath(folder)))
        assert store.restore(sid) is True
        assert os.path.realpath(store.storage_dir) in synced

    @pytest.mark.parametrize("folder", ["", None, b"bytes"])
    def test_a_store_without_a_usable_folder_name_is_a_clear_error(self, folder):
        with pytest.raises(SessionError, match="会话目录"):
            SessionStore(folder)

    def test_a_relative_folder_is_fixed_when_the_store_is_made(self, tmp_path, monkeypatch):
        (tmp_path / "a").mkdir()
        (tmp_path / "b").mkdir()
        monkeypatch.chdir(tmp_path / "a")
        store = SessionStore("rel")
        monkeypatch.chdir(tmp_path / "b")
        sid = store.create_session("会话")
        assert (tmp_path / "a" / "rel" / f"{sid}.json").exists() and not (tmp_path / "b" / "rel").exists()
        assert os.path.isabs(store.storage_dir)

    def test_command_line_errors_are_chinese_without_english_strerror(self, tmp_path):
        (tmp_path / "file").write_text("not a folder", "utf-8")
        out = run_cli("--dir", str(tmp_path / "file" / "s"), "tree", cwd=tmp_path)
        assert out.returncode == 2 and "不是文件夹" in out.stderr, out.stderr
        assert "Not a directory" not in out.stderr and "Errno" not in out.stderr

    def test_every_errno_the_store_can_meet_has_a_chinese_text(self):
        text = s11_text.describe_os_error(PermissionError(13, "Permission denied", "/srv/s/.lock"))
        assert text == "/srv/s/.lock：权限不足（errno 13）"
        assert "No space" not in s11_text.describe_os_error(OSError(28, "No space left on device"))
