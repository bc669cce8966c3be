"""Big sessions keep their history in shared, content-addressed chunks (s11_chunks): what that must guarantee.

Bytes written are asserted by counting what the store passes to os.write (never by timing).
"""

import json
import math
import os
import random
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import s11_book
import s11_chunks
from s11_session import (
    FORMAT_VERSION,
    ChunkError,
    ConflictError,
    CorruptSession,
    SessionNode,
    SessionStore,
    UnsupportedVersion,
)
from store_layouts import chunk_files

CODE_DIR = Path(__file__).resolve().parents[2] / "code"
KIB = 1024


def msg(i, pad=300):
    """A ~pad-byte message; the number keeps every message distinct."""
    return {"role": ("user", "assistant", "tool")[i % 3], "content": f"第 {i} 轮：" + "日志行 GET /api 200 " * (pad // 24)}


def history(count, start=0, pad=300):
    return [msg(i, pad) for i in range(start, start + count)]


@pytest.fixture
def store(tmp_path):
    return SessionStore(tmp_path / "sessions")


class WriteCounter:
    """Bytes the store hands to os.write while active (temp files of sessions and chunks alike)."""

    def __init__(self, monkeypatch):
        self.total = 0
        real = os.write

        def counting(fd, data):
            written = real(fd, data)
            self.total += written
            return written
        monkeypatch.setattr(os, "write", counting)

    def measure(self, call, *args, **kwargs):
        before = self.total
        result = call(*args, **kwargs)
        return result, self.total - before


def folder_bytes(folder):
    """Bytes of every regular file under the folder (links not followed), the way a quota counts them."""
    total = 0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            info = os.lstat(os.path.join(root, name))
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


# ── the layout: small stays version 3, big is version 4 ───────────────────────────────────────
class TestLayout:
    def test_the_demo_and_small_sessions_stay_readable_version_3_files(self, store):
        import s11_session
        result = s11_session.demo_tree_branching(store)
        for key in ("main_id", "branch_a_id", "branch_b_id"):
            raw = Path(store.path_of(result[key])).read_bytes()
            data = json.loads(raw)
            assert data["version"] == 3
            assert raw == json.dumps(data, ensure_ascii=False, indent=2).encode()   # the chapter's own encoding
        assert not Path(store.storage_dir, ".chunks").exists()

    def test_a_big_session_is_a_head_an_index_and_tail_lines(self, store):
        sid = store.create_session("大会话", history(1000))
        head, index, *tail = Path(store.path_of(sid)).read_bytes().split(b"\n")[:-1]
        head, index = json.loads(head), json.loads(index)
        assert head["version"] == 4 and head["message_count"] == 1000 and head["title"] == "大会话"
        assert sum(count for _, count in index["chunks"]) + index["tail"] == 1000
        assert len(chunk_files(store)) == len(index["chunks"])
        assert len(tail) == index["tail"] and sum(len(line) + 1 for line in tail) < s11_chunks.CHUNK_BYTES
        for name, count in index["chunks"]:
            raw = Path(store.storage_dir, ".chunks", name + ".jsonl").read_bytes()
            assert raw.count(b"\n") == count and len(raw) >= s11_chunks.CHUNK_BYTES

    def test_the_threshold_decides_and_infinity_keeps_every_node_self_contained(self, tmp_path):
        small = SessionStore(tmp_path / "a").create_session("小", history(150))          # ~50 KB
        assert json.loads(Path(tmp_path / "a" / f"{small}.json").read_text("utf-8"))["version"] == 3
        today = SessionStore(tmp_path / "b", chunk_threshold=math.inf)
        sid = today.create_session("大", history(3000))
        assert json.loads(Path(today.path_of(sid)).read_text("utf-8"))["version"] == 3
        assert today.load(sid).messages == history(3000)

    def test_load_gives_back_exactly_what_was_saved(self, store):
        odd = [{"role": "user", "content": "半个 \ud83d"}, {"role": "tool", "content": [{"type": "json", "x": 1.5,
                "n": 2 ** 70, "nan": float("inf"), "nested": {"a": [None, True]}}]}, {"role": "user", "content": None}]
        messages = history(500) + odd + history(10, 500)
        sid = store.create_session("往返", messages)
        loaded = SessionStore(store.storage_dir).load(sid).messages
        assert json.dumps(loaded) == json.dumps(messages)

    def test_the_chapters_code_cannot_parse_a_big_file_so_it_never_reads_a_shortened_history(self, store):
        sid = store.create_session("大会话", history(1000))
        small = store.create_session("小会话", history(3))
        book = s11_book.SessionStore(store.storage_dir)
        with pytest.raises(json.JSONDecodeError, match="Extra data"):
            book.load(sid)
        assert [s["session_id"] for s in book.list_sessions()] == [small]   # skipped, not listed short

    def test_the_chapters_code_still_reads_a_small_file_in_full(self, store):
        sid = store.create_session("小会话", history(3))
        assert s11_book.SessionStore(store.storage_dir).load(sid).messages == history(3)


# ── bytes written grow with what is new ───────────────────────────────────────────────────────
class TestBytesWritten:
    def test_a_fork_of_a_big_session_writes_only_its_tail_and_what_it_adds(self, store, monkeypatch):
        root = store.create_session("主干", history(3000))   # ~1 MB
        counter = WriteCounter(monkeypatch)
        sizes = []
        for i in range(10):
            child, written = counter.measure(store.fork, root, [msg(10_000 + i)])
            sizes.append(written)
            assert store.load(child.session_id).messages == history(3000) + [msg(10_000 + i)]
        assert max(sizes) < 2 * s11_chunks.CHUNK_BYTES + 4 * KIB, sizes
        prefix = len(json.dumps(history(3000), ensure_ascii=False).encode())
        assert sum(sizes) < 0.1 * 10 * prefix   # self-contained forks would write 10 × the prefix

    def test_twenty_appends_to_a_big_session_write_a_bounded_tail_each(self, store, monkeypatch):
        sid = store.create_session("续写", history(10_000))   # ~3.5 MB
        node = store.load(sid)
        counter = WriteCounter(monkeypatch)
        per_save = []
        for i in range(20):
            node.messages.append(msg(20_000 + i))
            per_save.append(counter.measure(store.save, node)[1])
        index_bytes = 80 * (len(node.messages) * 360 // s11_chunks.CHUNK_BYTES + 1)
        assert max(per_save) < 2 * s11_chunks.CHUNK_BYTES + index_bytes + 4 * KIB, per_save
        assert store.load(sid).messages == history(10_000) + [msg(20_000 + i) for i in range(20)]

    def test_an_earlier_message_edited_in_place_is_saved(self, store):
        sid = store.create_session("改写", history(2000))
        node = store.load(sid)
        node.messages[10]["content"] = "改过的第 10 条"
        node.messages[1500] = {"role": "user", "content": "换掉的第 1500 条"}
        store.save(node)
        again = SessionStore(store.storage_dir).load(sid)
        assert again.messages[10]["content"] == "改过的第 10 条" and again.messages[1500]["content"] == "换掉的第 1500 条"
        assert again.messages[:10] == history(10) and len(again.messages) == 2000

    def test_an_imported_tree_shares_its_prefix_chunks(self, store, monkeypatch):
        """Branches near the end of a long transcript: each writes its tail, not the prefix."""
        trunk = history(5000)
        nodes = [SessionNode("trunk", "主干", messages=trunk)]
        nodes += [SessionNode(f"b{i}", f"分支 {i}", parent_id="trunk", messages=trunk[:4900 + i * 10] + [msg(50_000 + i)],
                              fork_point=4900 + i * 10) for i in range(8)]
        counter = WriteCounter(monkeypatch)
        _, written = counter.measure(store.save_many, nodes)
        logical = sum(len(json.dumps(n.messages, ensure_ascii=False).encode()) for n in nodes)
        assert written < 1.3 * len(json.dumps(trunk, ensure_ascii=False).encode()) < 0.2 * logical
        for node in nodes:
            assert store.load(node.session_id).messages == node.messages

    def test_save_many_writes_the_same_files_as_saving_one_by_one(self, tmp_path):
        trunk = history(3000)

        def nodes():
            return [SessionNode("t", "主干", messages=trunk, created_at="2026-01-01 00:00:00"),
                    SessionNode("c", "分支", parent_id="t", messages=trunk + [msg(9)], created_at="2026-01-01 00:00:00",
                                fork_point=3000)]
        one, many = SessionStore(tmp_path / "one"), SessionStore(tmp_path / "many")
        for node in nodes():
            node.created_ns = 1
            one.save(node)
        batch = nodes()
        for node in batch:
            node.created_ns = 1
        many.save_many(batch)
        for name in ("t.json", "c.json"):
            assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes()
        assert [p.name for p in chunk_files(one)] == [p.name for p in chunk_files(many)]

    @pytest.mark.parametrize("seed", range(3))
    def test_a_random_imported_tree_saves_byte_for_byte_like_one_by_one(self, tmp_path, seed):
        """Children share their parent's message objects up to fork_point (some get equal copies instead)."""
        rng = random.Random(seed)

        def tree():
            trunk = history(2500, pad=rng.choice([100, 300, 2000]))
            nodes = [SessionNode("n0", "根", messages=trunk, created_at="2026-01-01 00:00:00")]
            for i in range(1, 9):
                parent = rng.choice(nodes)
                keep = rng.randint(0, len(parent.messages))
                prefix = parent.messages[:keep] if rng.random() < 0.8 else [dict(m) for m in parent.messages[:keep]]
                nodes.append(SessionNode(f"n{i}", "分支", parent_id=parent.session_id, fork_point=keep,
                                         messages=prefix + history(rng.randint(0, 400), 10_000 * i),
                                         created_at="2026-01-01 00:00:00"))
            for node in nodes:
                node.created_ns = 1
            return nodes
        state = rng.getstate()
        one = SessionStore(tmp_path / "one")
        for node in tree():
            one.save(node)
        rng.setstate(state)
        many, batch = SessionStore(tmp_path / "many"), tree()
        predicted = many.bytes_to_write(batch)
        many.save_many(batch)
        assert folder_bytes(tmp_path / "many") == predicted
        for i in range(9):
            assert (tmp_path / "one" / f"n{i}.json").read_bytes() == (tmp_path / "many" / f"n{i}.json").read_bytes()
        assert [p.name for p in chunk_files(one)] == [p.name for p in chunk_files(many)]

    def test_save_many_still_sees_an_edit_made_between_two_batches(self, store):
        node = SessionNode("n", "会话", messages=history(2000))
        store.save_many([node])
        node.messages[5]["content"] = "原地改过"
        store.save_many([node])
        assert SessionStore(store.storage_dir).load("n").messages[5]["content"] == "原地改过"


# ── bytes_to_write: the importer's quota check ─────────────────────────────────────────────────
class TestBytesToWrite:
    def test_it_equals_the_real_growth_of_the_folder_counting_shared_new_chunks_once(self, store):
        root = store.create_session("主干", history(2000))
        parent = store.load(root)
        batch = [SessionNode(f"f{i}", "分支", parent_id=root, messages=parent.messages + history(400, 3000) + [msg(9000 + i)],
                             fork_point=len(parent.messages)) for i in range(5)]   # 5 forks sharing 400 new messages
        batch.append(parent)
        parent.messages.append(msg(7777))                                          # and an append to the parent
        before = folder_bytes(store.storage_dir)
        predicted = store.bytes_to_write(batch)
        assert folder_bytes(store.storage_dir) == before                           # it writes nothing
        store.save_many(batch)
        assert folder_bytes(store.storage_dir) - before == predicted

    def test_it_equals_the_growth_of_one_by_one_saves_and_of_small_sessions(self, store):
        nodes = [SessionNode(title="小", messages=history(3)), SessionNode(title="大", messages=history(1500))]
        before = folder_bytes(store.storage_dir)
        predicted = store.bytes_to_write(nodes)
        for node in nodes:
            store.save(node)
        assert folder_bytes(store.storage_dir) - before == predicted > 0
        node = store.load(nodes[0].session_id)
        node.title = ""                              # the file shrinks, but the old revision stays in .history/
        before, predicted = folder_bytes(store.storage_dir), store.bytes_to_write([node])
        store.save(node)
        assert folder_bytes(store.storage_dir) - before == predicted > 0
        assert predicted > os.path.getsize(store.path_of(node.session_id))   # the new file + one journal line

    def test_it_validates_like_save(self, store):
        with pytest.raises(ValueError, match="第 2 条消息"):
            store.bytes_to_write([SessionNode(title="坏", messages=[msg(0), {"role": "user"}])])


# ── deleting never loses another branch's history ──────────────────────────────────────────────
def build_tree(store, rng):
    ids = [store.create_session("根", history(1500))]
    for i in range(12):
        parent = rng.choice(ids)
        size = len(store.load(parent).messages)
        ids.append(store.fork(parent, history(rng.randint(0, 300), 10_000 + 1000 * i), at=rng.randint(0, size)).session_id)
    return ids


class TestDeleting:
    @pytest.mark.parametrize("seed", range(4))
    def test_delete_or_purge_any_node_and_every_other_node_still_loads(self, store, seed):
        rng = random.Random(seed)
        ids = build_tree(store, rng)
        expected = {sid: store.load(sid).messages for sid in ids}
        rng.shuffle(ids)
        for position, sid in enumerate(ids):
            store.delete(sid, purge=rng.random() < 0.7)
            if rng.random() < 0.3:
                store.empty_trash()
            fresh = SessionStore(store.storage_dir)
            for other in ids[position + 1:]:
                assert fresh.load(other).messages == expected[other]
            assert not [p for p in fresh.check() if p.kind in ("missing_chunk", "damaged_chunk", "corrupt")]
        store.empty_trash()
        assert chunk_files(store) == []                 # nothing left once every node is gone

    def test_a_deleted_big_node_restores_whole(self, store):
        sid = store.create_session("大会话", history(2000))
        store.delete(sid)
        assert store.remove_orphan_chunks() == 0        # the trash copy still references them
        assert store.restore(sid) and store.load(sid).messages == history(2000)

    def test_purge_removes_the_chunks_only_it_used(self, store):
        shared = store.create_session("共享", history(2000))
        secret = store.fork(shared, [{"role": "user", "content": "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c" * 2000}])
        store.delete(secret.session_id, purge=True)
        leftovers = [p for p in Path(store.storage_dir).rglob("*") if p.is_file() and b"sk-live-4f9a8b" in p.read_bytes()]
        assert leftovers == [] and store.load(shared).messages == history(2000)


# ── damaged or missing chunks are reported, never used ─────────────────────────────────────────
class TestDamagedChunks:
    @pytest.fixture
    def family(self, store):
        root = store.create_session("根", history(2000))
        kids = [store.fork(root, [msg(9000 + i)]).session_id for i in range(3)]
        first = json.loads(Path(store.path_of(root)).read_bytes().split(b"\n")[1])["chunks"][0][0]
        return store, [root, *kids], Path(store.storage_dir, ".chunks", first + ".jsonl")

    def test_a_tampered_chunk_is_named_by_every_node_that_uses_it(self, family):
        store, ids, chunk = family
        raw = chunk.read_bytes()
        chunk.write_bytes(raw.replace("第 3 轮".encode(), "第 9 轮".encode()))   # same size, other content
        fresh = SessionStore(store.storage_dir)
        for sid in ids:
            with pytest.raises(ChunkError, match=chunk.name[:16]) as caught:
                fresh.load(sid)
            assert sid in str(caught.value) and "sha256" in str(caught.value) and not caught.value.missing
        problems = fresh.check()
        assert sorted((p.kind, Path(p.path).stem) for p in problems) == sorted(("damaged_chunk", sid) for sid in ids)
        assert all(chunk.name in p.detail for p in problems)
        assert chunk.read_bytes() != raw                              # kept as it is: evidence

    def test_a_missing_chunk_is_named_by_every_node_that_uses_it(self, family):
        store, ids, chunk = family
        chunk.unlink()
        fresh = SessionStore(store.storage_dir)
        for sid in ids:
            with pytest.raises(ChunkError, match="不存在") as caught:
                fresh.load(sid)
            assert caught.value.missing and sid in str(caught.value)
        assert sorted(p.kind for p in fresh.check()) == ["missing_chunk"] * len(ids)
        assert {s["session_id"] for s in fresh.list_sessions()} == set(ids)   # the list reads heads only

    def test_a_save_that_needs_a_damaged_chunk_writes_it_again_and_heals_the_others(self, family):
        store, ids, chunk = family
        good = chunk.read_bytes()
        chunk.write_bytes(good[:-10] + b"x" * 10)
        node = SessionNode("again", "同样的历史", messages=history(2000))
        SessionStore(store.storage_dir).save(node)                    # a fresh instance: it verifies before reuse
        assert chunk.read_bytes() == good
        assert all(SessionStore(store.storage_dir).load(sid) for sid in ids)

    def test_a_chunk_that_is_not_a_regular_file_is_never_opened_or_replaced(self, family, tmp_path):
        store, ids, chunk = family
        outside = tmp_path / "outside.jsonl"
        outside.write_bytes(chunk.read_bytes())
        chunk.unlink()
        chunk.symlink_to(outside)
        fresh = SessionStore(store.storage_dir)
        with pytest.raises(ChunkError, match="符号链接"):
            fresh.load(ids[0])
        with pytest.raises(ChunkError, match="符号链接"):
            fresh.save(SessionNode("again", messages=history(2000)))
        assert chunk.is_symlink() and fresh.path_of("again") not in [str(p) for p in Path(store.storage_dir).iterdir()]

    def test_a_chunks_folder_that_is_a_link_is_never_written_through_or_cleaned(self, store, tmp_path):
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        victim = elsewhere / ("0" * 64 + ".jsonl")
        victim.write_text("不是我们的", "utf-8")
        Path(store.storage_dir, ".chunks").symlink_to(elsewhere)
        with pytest.raises(ChunkError, match="不是文件夹"):
            store.create_session("大", history(1000))
        assert store.remove_orphan_chunks() == 0 and victim.exists()
        assert list(elsewhere.iterdir()) == [victim]

    def test_a_head_that_lies_about_the_length_is_a_damaged_file(self, store):
        sid = store.create_session("大", history(1000))
        path = Path(store.path_of(sid))
        path.write_bytes(path.read_bytes() + b'{"role":"user","content":"appended by hand"}\n')
        with pytest.raises(CorruptSession, match="body_bytes|字节"):
            store.load(sid)
        assert SessionStore(store.storage_dir).list_sessions() == []
        assert [p.kind for p in store.check()] == ["corrupt"]

    def test_a_newer_multi_line_file_is_refused_unchanged(self, store):
        sid = store.create_session("大", history(1000))
        path = Path(store.path_of(sid))
        newer = FORMAT_VERSION + 1
        path.write_bytes(path.read_bytes().replace(b'{"version":4,', b'{"version":%d,' % newer, 1))
        evidence = path.read_bytes()
        with pytest.raises(UnsupportedVersion, match=f"version {newer}"):
            SessionStore(store.storage_dir).load(sid)
        with pytest.raises(UnsupportedVersion):
            store.save(SessionNode(sid, "覆盖它"))
        assert path.read_bytes() == evidence and [p.kind for p in store.check()] == ["newer_version"]


# ── migration: files of version 1–3 that are big become version 4 on the next save ─────────────
class TestMigration:
    @pytest.mark.parametrize("version", [1, 2, 3])
    def test_a_big_old_file_loads_and_is_saved_chunked(self, tmp_path, version):
        folder = tmp_path / "s"
        if version == 1:
            sid = s11_book.SessionStore(str(folder)).create_session("书里存的", history(2000))
        else:
            sid = SessionStore(folder, chunk_threshold=math.inf).create_session("以前存的", history(2000))
            if version == 2:
                path = folder / f"{sid}.json"
                data = json.loads(path.read_text("utf-8"))
                data["version"] = 2
                del data["source"]
                path.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        store = SessionStore(folder)
        node = store.load(sid)
        assert node.messages == history(2000)
        node.messages.append(msg(5000))
        store.save(node)
        assert Path(store.path_of(sid)).read_bytes().startswith(b'{"version":4,')
        assert SessionStore(folder).load(sid).messages == history(2000) + [msg(5000)] and store.check() == []


# ── removal of unreferenced chunks racing saves ────────────────────────────────────────────────
class TestRemovalRacingSaves:
    def test_threads_forking_and_appending_while_another_removes_orphans(self, store):
        root = store.create_session("根", history(1200))
        stop, errors, committed = threading.Event(), [], {}

        def writer(number):
            local = SessionStore(store.storage_dir)
            try:
                for i in range(8):
                    child = local.fork(root, history(200, 100_000 * number + 1000 * i))
                    node = local.load(child.session_id)
                    node.messages += history(150, 100_000 * number + 1000 * i + 500)
                    local.save(node)
                    committed[child.session_id] = node.messages
                    if i % 3 == 2:
                        local.delete(child.session_id, purge=True)
                        del committed[child.session_id]
            except Exception as exc:  # reported below
                errors.append(exc)

        def cleaner():
            local = SessionStore(store.storage_dir)
            while not stop.is_set():
                local.remove_orphan_chunks()
                local.empty_trash()

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
        sweeper = threading.Thread(target=cleaner)
        sweeper.start()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        stop.set()
        sweeper.join()
        assert errors == []
        fresh = SessionStore(store.storage_dir)
        assert len(committed) == 3 * 6
        for sid, messages in committed.items():
            assert fresh.load(sid).messages == messages
        assert [p.kind for p in fresh.check()] == []

    def test_processes_saving_while_another_process_removes_orphans(self, store, tmp_path):
        root = store.create_session("根", history(1200))
        writer = (
            "import sys, s11_session as s\n"
            "store = s.SessionStore(sys.argv[1])\n"
            "for i in range(6):\n"
            "    node = store.fork(sys.argv[2], [{'role': 'user', 'content': f'{sys.argv[3]}-{i}-' + 'x' * 300}] * 300)\n"
            "    print(node.session_id, flush=True)\n"
        )
        cleaner = (
            "import os, sys, s11_session as s\n"
            "store = s.SessionStore(sys.argv[1])\n"
            "while not os.path.exists(sys.argv[2]):\n"
            "    store.remove_orphan_chunks()\n"
        )
        env = {**os.environ, "PYTHONPATH": str(CODE_DIR)}
        done = tmp_path / "done"
        sweeper = subprocess.Popen([sys.executable, "-c", cleaner, store.storage_dir, str(done)], env=env)
        procs = [subprocess.Popen([sys.executable, "-c", writer, store.storage_dir, root, f"p{n}"],
                                  stdout=subprocess.PIPE, text=True, env=env) for n in range(2)]
        ids = [line.split()[0] for p in procs for line in p.communicate(timeout=120)[0].splitlines()]
        done.touch()
        sweeper.wait(timeout=60)
        assert len(ids) == 12
        fresh = SessionStore(store.storage_dir)
        for sid in ids:
            node = fresh.load(sid)
            assert len(node.messages) == 1500 and node.messages[:1200] == history(1200)
        assert [p.kind for p in fresh.check()] == []

    def test_a_save_in_flight_protects_the_chunks_it_just_wrote(self, store, monkeypatch):
        """Between writing its chunks and committing, a save's temp file names them: removal keeps them."""
        survived = []
        real_write = s11_chunks.ChunkStore.write

        def write_then_sweep(self, chunks):
            real_write(self, chunks)
            if not survived:   # the first call is the one outside the lock
                SessionStore(store.storage_dir).remove_orphan_chunks()     # another instance, between the steps
                survived.append(all(os.path.exists(self.path_of(name)) for name, _ in chunks))
        monkeypatch.setattr(s11_chunks.ChunkStore, "write", write_then_sweep)
        sid = store.create_session("大", history(1500))
        assert survived == [True] and store.load(sid).messages == history(1500)

    def test_a_reused_chunk_removed_before_the_commit_is_written_again_inside_the_lock(self, store, monkeypatch):
        old = store.create_session("旧", history(1500))
        os.remove(store.path_of(old))                                   # its chunks are orphans now
        real_missing = s11_chunks.ChunkStore.missing

        def missing_then_sweep(self, chunks):
            found = real_missing(self, chunks)                          # "already on disk": nothing to write
            # ...and then they vanish: a removal that gathered its references just before this save's temp file
            # existed deletes them now (it holds the lock, so the save waits for it before committing).
            for name, _ in chunks:
                os.remove(self.path_of(name))
            return found
        monkeypatch.setattr(s11_chunks.ChunkStore, "missing", missing_then_sweep)
        sid = store.create_session("同样的历史", history(1500))
        monkeypatch.undo()
        assert SessionStore(store.storage_dir).load(sid).messages == history(1500)
        assert [p.kind for p in store.check()] == []

    def test_a_save_that_loses_the_race_leaves_no_orphan_chunks(self, store):
        sid = store.create_session("大", history(1500))
        mine, theirs = store.load(sid), SessionStore(store.storage_dir).load(sid)
        theirs.messages += history(400, 5000)
        SessionStore(store.storage_dir).save(theirs)
        mine.messages += history(400, 8000)
        with pytest.raises(ConflictError):
            store.save(mine)
        assert [p.kind for p in store.check()] == []

    def test_a_load_racing_a_purge_returns_none_or_the_whole_history(self, store):
        for _ in range(5):
            sid = store.create_session("大", history(1500))
            results = []
            reader = threading.Thread(target=lambda out=results, sid=sid: out.append(
                SessionStore(store.storage_dir).load(sid)))
            reader.start()
            store.delete(sid, purge=True)
            reader.join()
            assert results[0] is None or results[0].messages == history(1500)


# ── the summary of a big session comes from its first line ──────────────────────────────────────
def test_a_cold_list_reads_only_the_head_of_a_big_session(store, monkeypatch):
    sid = store.create_session("大会话", history(15_000))   # ~5 MB
    assert os.path.getsize(store.path_of(sid)) > 0
    read = []
    real = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(len(chunk := real(fd, n))) or chunk)
    [summary] = SessionStore(store.storage_dir).list_sessions()
    assert summary["message_count"] == 15_000 and summary["title"] == "大会话"
    assert sum(read) <= 64 * KIB
