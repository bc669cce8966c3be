"""The plain store (issue 40 items 1-2, issue 41 items 6, 10, 11, 12): what save() refuses, what a save of one
appended message re-does, what check() and the whole-tree export read, deep nesting, abandoned temp files.

Costs are asserted as counts of work (lines encoded, chunks read), never as times: the CPU figures are printed
by benchmarks/bench_curves.py.
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest

import s11_chunks
import s11_format
import s11_tree_export
from s11_session import CorruptSession, InvalidMessage, SessionError, SessionNode, SessionStore
from store_layouts import chunk_files

CODE = Path(__file__).resolve().parents[2] / "code"
STORE_MODULES = ["s11_session", "s11_format", "s11_chunks", "s11_storage", "s11_check", "s11_trash", "s11_tree",
                 "s11_tree_export", "s11_converge"]


def msg(i, pad=200):
    return {"role": "user" if i % 2 else "assistant", "content": f"第 {i} 条：" + "x" * pad}


def history(count, start=0):
    return [msg(i) for i in range(start, start + count)]


@pytest.fixture
def store(tmp_path):
    return SessionStore(tmp_path / "s", durable=False)


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in Path(folder).rglob("*") if p.is_file()}


# ── save() refuses what load() would call corrupt, before anything is written ──────────────────────────
BAD_FIELDS = {
    "fork_point-past-the-messages": ("fork_point", 5),
    "fork_point-bool": ("fork_point", True),
    "fork_point-negative": ("fork_point", -3),
    "fork_point-string": ("fork_point", "2"),
    "created_at-number": ("created_at", 1787654000),
    "workspace-string": ("workspace", "/home/me/project"),
    "created_ns-string": ("created_ns", "1787654000123456789"),
    "source-list": ("source", ["claude"]),
    "title-number": ("title", 42),
    "converged_from-not-ids": ("converged_from", ["../x"]),
    "converged_from-repeated": ("converged_from", ["aaaa", "aaaa"]),
}


@pytest.mark.parametrize("size", ["small", "big"])
@pytest.mark.parametrize("case", list(BAD_FIELDS))
def test_save_refuses_every_field_load_would_refuse_and_writes_nothing(store, case, size):
    count = 2 if size == "small" else 1200   # 1,200 messages of ~220 bytes: a chunked (version 4) file
    field, value = BAD_FIELDS[case]
    if field == "fork_point" and value == 5:
        value = count + 1
    node = SessionNode("victim", "原来的标题", messages=history(count))
    store.save(node)
    before = snapshot(store.storage_dir)
    setattr(node, field, value)
    with pytest.raises(InvalidMessage) as refused:
        store.save(node)
    assert "会话 victim" in str(refused.value) and field in str(refused.value)
    assert snapshot(store.storage_dir) == before   # the saved file is untouched, no chunk, no temp file
    loaded = SessionStore(store.storage_dir).load("victim")
    assert loaded.title == "原来的标题" and len(loaded.messages) == count and loaded.revision == 1


def test_a_new_node_with_a_bad_field_leaves_no_file_behind(store):
    with pytest.raises(InvalidMessage, match="会话 fresh.*fork_point"):
        store.save(SessionNode("fresh", "新的", messages=history(3), fork_point=4))
    assert not Path(store.path_of("fresh")).exists() and store.list_sessions() == []


@pytest.mark.parametrize("at", [-3, -1, 4, True, "1", 1.0, None.__class__])
def test_fork_at_a_bad_position_is_a_chinese_session_error(store, at):
    parent = store.create_session("父", history(3))
    before = snapshot(store.storage_dir)
    with pytest.raises(SessionError, match="分叉位置"):
        store.fork(parent, [msg(9)], at=at)
    assert snapshot(store.storage_dir) == before


# ── one appended message costs what is new ───────────────────────────────────────────────────────────
class EncodeCounter:
    def __init__(self, monkeypatch):
        self.messages = 0
        real = s11_format.encode_line

        def counting(value, where, what, *args):
            self.messages += what.startswith("第 ")
            return real(value, where, what, *args)
        monkeypatch.setattr(s11_format, "encode_line", counting)


def test_saving_one_appended_message_encodes_only_the_part_after_the_last_cut(store, monkeypatch):
    node = SessionNode("long", "长会话", messages=history(3000))
    store.save(node)
    node = store.load("long")
    counter = EncodeCounter(monkeypatch)
    for i in range(3):
        node.messages.append(msg(5000 + i))
        store.save(node)
    # each save encodes the tail after the last chunk (under 64 KiB: < 300 of these messages), not 3,000
    assert 0 < counter.messages < 3 * 300
    loaded = SessionStore(store.storage_dir).load("long")
    assert loaded.messages == history(3000) + [msg(5000), msg(5001), msg(5002)]


@pytest.mark.parametrize("edit", ["in-place", "replaced", "removed", "inserted"])
def test_an_edit_anywhere_in_a_loaded_node_is_saved_even_inside_an_unchanged_looking_chunk(store, edit):
    node = SessionNode("long", "长会话", messages=history(3000))
    store.save(node)
    node = store.load("long")
    expected = history(3000)
    if edit == "in-place":   # the same dict object, changed: an identity check would miss it
        node.messages[7]["content"] = expected[7]["content"] = "原地改过"
    elif edit == "replaced":
        node.messages[7] = expected[7] = msg(-1)
    elif edit == "removed":
        del node.messages[7], expected[7]
    else:
        node.messages.insert(7, msg(-2))
        expected.insert(7, msg(-2))
    store.save(node)
    assert SessionStore(store.storage_dir).load("long").messages == expected
    assert {p.kind for p in store.check()} <= {"orphan_chunk"}   # the chunks the edit replaced


def test_a_fork_reuses_its_parents_chunks_and_encodes_only_what_is_past_them(store, monkeypatch):
    parent = SessionNode("trunk", "主干", messages=history(3000))
    store.save(parent)
    counter = EncodeCounter(monkeypatch)
    child = store.fork("trunk", [msg(9000)])
    assert 0 < counter.messages < 300
    assert SessionStore(store.storage_dir).load(child.session_id).messages == history(3000) + [msg(9000)]


# ── check() and the whole-tree export read each chunk once ───────────────────────────────────────────
def deep_chain(store, depth):
    current = SessionNode("root", "根", messages=history(600))
    store.save(current)
    for k in range(depth):
        current = store.fork(current.session_id, history(3, 10_000 + 3 * k))
    return current


def test_check_of_a_deep_chain_verifies_each_chunk_once(store, monkeypatch):
    leaf = deep_chain(store, 30)
    verdicts = []
    real = s11_chunks.ChunkStore._chunk_verdict
    monkeypatch.setattr(s11_chunks.ChunkStore, "_chunk_verdict",
                        lambda self, name, *rest: verdicts.append(name) or real(self, name, *rest))
    assert store.check() == []
    assert sorted(verdicts) == sorted(set(verdicts)) == sorted(chunk.name[:-6] for chunk in chunk_files(store))
    assert len(store.load(leaf.session_id).messages) == 600 + 90


def test_check_of_a_deep_chain_still_reports_a_damaged_shared_chunk_for_every_session(store):
    deep_chain(store, 5)
    shared = chunk_files(store)[0]
    shared.write_bytes(shared.read_bytes().replace(b"x", b"y", 1))
    damaged = [p for p in store.check() if p.kind == "damaged_chunk"]
    assert len(damaged) == 6   # the root and its five descendants all reference the first chunk


def test_the_whole_tree_export_of_a_deep_chain_reads_each_chunk_once(store, monkeypatch):
    leaf = deep_chain(store, 30)
    reads = []
    real = s11_chunks.ChunkStore._read_chunk
    monkeypatch.setattr(s11_chunks.ChunkStore, "_read_chunk",
                        lambda self, name, *rest: reads.append(name) or real(self, name, *rest))
    gathered = s11_tree_export.gather(store, leaf.session_id, "tree")
    assert sorted(reads) == sorted(set(reads))
    assert [len(node.messages) for node in gathered.nodes] == [600] + [3] * 30
    assert [node.own_from for node in gathered.nodes] == [0] + [600 + 3 * k for k in range(30)]
    every = [m for node in gathered.nodes for m in node.messages]
    assert every == store.load(leaf.session_id).messages


def test_the_tree_export_of_a_fork_at_an_early_message_still_finds_what_it_shares(store):
    store.save(SessionNode("root", "根", messages=history(900)))
    late = store.fork("root", [msg(1)], at=850)
    early = store.fork(late.session_id, [msg(2)], at=10)   # forks inside the grandparent's part
    nodes = {n.session_id: n for n in s11_tree_export.gather(store, "root", "tree").nodes}
    assert nodes[late.session_id].own_from == 850 and nodes[early.session_id].own_from == 10
    assert nodes[early.session_id].messages == [msg(2)]


# ── deep nesting: refused by a bracket count, whatever JSON library is installed ─────────────────────
def test_no_store_module_imports_orjson_or_reads_an_accelerator_switch():
    for name in STORE_MODULES:
        source = (CODE / f"{name}.py").read_text("utf-8")
        imported = {alias.name for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.Import, ast.ImportFrom))
                    for alias in getattr(node, "names", [])} | {
            node.module for node in ast.walk(ast.parse(source)) if isinstance(node, ast.ImportFrom)}
        assert "orjson" not in imported and "S11_NO_ORJSON" not in source, name
    assert not (CODE / "s11_chains.py").exists()


@pytest.mark.parametrize("where", ["tail-line", "chunk", "head-line", "small-file"])
def test_a_file_nested_past_the_limit_is_refused_and_kept_whatever_the_recursion_limit(store, where, monkeypatch):
    node = SessionNode("deep", "深", messages=history(1200 if where != "small-file" else 2))
    store.save(node)
    path = Path(store.path_of("deep"))
    too_deep = "[" * 5000 + "]" * 5000
    if where == "small-file":
        data = json.loads(path.read_text("utf-8"))
        data["x"] = json.loads("[" * 200 + "]" * 200)
        path.write_text(json.dumps(data), "utf-8")
    elif where == "head-line":
        head, rest = path.read_bytes().split(b"\n", 1)
        path.write_bytes(head[:-1] + b',"x":' + too_deep.encode() + b"}\n" + rest)
    elif where == "tail-line":
        head, index, tail = path.read_bytes().split(b"\n", 2)
        line = json.dumps({"role": "user", "content": "a", "x": json.loads("[" * 150 + "]" * 150)}).encode()
        tail = tail.replace(tail.split(b"\n")[0], line, 1)
        header = json.loads(head)
        header["body_bytes"] = len(index) + 1 + len(tail)
        path.write_bytes(json.dumps(header, ensure_ascii=False).encode() + b"\n" + index + b"\n" + tail)
    else:   # a chunk whose bytes and name agree: only the nesting is wrong
        first = chunk_files(store)[0]
        lines = first.read_bytes().split(b"\n")
        lines[0] = b'{"role":"user","content":' + too_deep.encode() + b"}"
        changed = b"\n".join(lines)
        renamed = first.with_name(hashlib.sha256(changed).hexdigest() + ".jsonl")
        renamed.write_bytes(changed)
        path.write_bytes(path.read_bytes().replace(first.name[:-6].encode(), renamed.name[:-6].encode()))
    evidence = path.read_bytes()
    monkeypatch.setattr("sys.getrecursionlimit", lambda: 100_000)   # nothing depends on it
    fresh = SessionStore(store.storage_dir)
    with pytest.raises(CorruptSession, match="嵌套超过"):
        fresh.load("deep")
    reported = [p for p in fresh.check() if p.path == str(path)]
    assert [p.kind for p in reported] == ["corrupt"] and "嵌套超过" in reported[0].detail
    with pytest.raises(SessionError):   # corrupt, or (the chunk case) a conflict with revision 1 on disk
        fresh.save(SessionNode("deep", "覆盖它"))
    assert path.read_bytes() == evidence


def test_a_message_at_the_limit_saves_and_one_level_deeper_is_refused_naming_it(store):
    def nested(levels):
        value = "底"
        for _ in range(levels - 1):
            value = {"k": value}
        return value
    ok = {"role": "user", "content": [nested(s11_format.MAX_NESTING - 1)]}   # message, list, 98 dicts: 100
    store.save(SessionNode("edge", "边界", messages=[ok]))
    assert SessionStore(store.storage_dir).load("edge").messages == [ok]
    deeper = {"role": "user", "content": [nested(s11_format.MAX_NESTING)]}
    with pytest.raises(InvalidMessage, match="第 2 条消息嵌套超过"):
        store.save(SessionNode("edge2", "边界", messages=[ok, deeper]))


# ── abandoned temp files no longer pin chunks; a symlinked .chunks is reported, never followed ───────
def abandoned_copy(store, session_id, age=3600):
    """What kill -9 during a big save leaves: a temp file naming the chunks, no writer holding it."""
    path = Path(store.path_of(session_id))
    temp = path.with_name(f".{path.name}.k9x2.tmp")
    temp.write_bytes(path.read_bytes())
    os.utime(temp, (time.time() - age, time.time() - age))
    return temp


@pytest.mark.parametrize("free", ["empty_trash", "remove_orphan_chunks", "purge"])
def test_an_abandoned_temp_file_is_removed_and_its_chunks_freed(store, free):
    store.save(SessionNode("big", "大", messages=history(1200)))
    temp = abandoned_copy(store, "big")
    if free == "empty_trash":
        store.delete("big")
        assert [p.kind for p in store.check() if p.kind == "temp_file"] == ["temp_file"]
        store.empty_trash()
    elif free == "remove_orphan_chunks":   # the page's repair after check()
        os.remove(store.path_of("big"))
        store.remove_orphan_chunks()
    else:
        store.delete("big", purge=True)
    assert not temp.exists() and chunk_files(store) == []
    assert store.check() == []


def test_a_temp_file_a_live_writer_holds_or_just_wrote_is_kept_with_its_chunks(store):
    store.save(SessionNode("big", "大", messages=history(1200)))
    temp = abandoned_copy(store, "big")
    with open(temp, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)   # a writer still at work
        store.delete("big", purge=True)
        store.empty_trash()
        assert temp.exists() and chunk_files(store) != []
    os.utime(temp, None)   # no lock, but touched just now: within the grace period
    store.remove_orphan_chunks()
    assert temp.exists() and chunk_files(store) != []
    os.utime(temp, (time.time() - 3600, time.time() - 3600))
    store.remove_orphan_chunks()
    assert not temp.exists() and chunk_files(store) == []


def test_a_symlinked_chunks_folder_is_reported_and_never_followed(store, tmp_path):
    store.save(SessionNode("big", "大", messages=history(1200)))
    folder = Path(store.storage_dir, ".chunks")
    elsewhere = tmp_path / "elsewhere"
    shutil.move(folder, elsewhere)
    stray = elsewhere / ("0" * 64 + ".jsonl")
    stray.write_bytes(b"{}\n")   # chunk-named, referenced by no one: a sweep that followed the link would delete it
    folder.symlink_to(elsewhere, target_is_directory=True)
    problems = store.check()
    assert [(p.kind, p.path) for p in problems if p.path == str(folder)] == [("unreadable", str(folder))]
    assert "符号链接" in next(p.detail for p in problems if p.path == str(folder))
    store.remove_orphan_chunks()
    store.empty_trash()
    assert stray.exists() and folder.is_symlink() and len(list(elsewhere.iterdir())) > 1


def test_the_files_a_reader_opens_stay_short_with_the_chapters_class_first():
    lines = {name: (CODE / f"{name}.py").read_text("utf-8").splitlines() for name in ("s11_session", "s11_format")}
    assert len(lines["s11_format"]) <= 500 and len(lines["s11_session"]) <= 600
    assert any(line.startswith("class SessionNode") for line in lines["s11_session"][:80])
