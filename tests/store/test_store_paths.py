"""Plain behaviour the store keeps (moved here from the deleted fast-path test files): the temp file of an atomic
write, a write the system cuts short, conflicts, bytes changed behind the store's back (always parsed again and
checked, never trusted), and summaries equal to what a fresh store reads."""

import hashlib
import json
import os
import re
import shutil
import stat
import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s11_storage
from s11_session import ConflictError, CorruptSession, SessionStore
from s11_tree import SUMMARY_KEYS

TEMP_NAME = re.compile(r"\.abc\.json\.[A-Za-z0-9_]+\.tmp")   # tempfile.mkstemp(prefix=".abc.json.", suffix=".tmp")


def big_text():
    return "长" * 30_000   # over 64 KiB: a chunked (version 4) file


def test_the_temp_file_is_a_private_new_file_next_to_the_target(tmp_path):
    target = tmp_path / "abc.json"
    pending = s11_storage.PendingWrite(str(target), b"{}", durable=False)
    try:
        temp = pending.temp_path
        assert os.path.dirname(temp) == str(tmp_path)
        assert TEMP_NAME.fullmatch(os.path.basename(temp))
        assert stat.S_IMODE(os.lstat(temp).st_mode) == 0o600   # what mkstemp gives
        assert open(temp, "rb").read() == b"{}"
        pending.commit()
    finally:
        pending.discard()
    assert target.read_bytes() == b"{}" and os.listdir(tmp_path) == ["abc.json"]


def test_a_relative_target_gets_an_absolute_temp_path_like_mkstemp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pending = s11_storage.PendingWrite("abc.json", b"{}", durable=False)
    try:
        assert os.path.isabs(pending.temp_path) and os.path.dirname(pending.temp_path) == str(tmp_path)
        os.chdir("/")
    finally:
        pending.discard()   # removes the temp file even after a chdir
    assert os.listdir(tmp_path) == []


def test_a_short_write_is_continued_until_every_byte_is_in_the_temp_file(tmp_path, monkeypatch):
    real_write, calls = os.write, []

    def at_most_seven(fd, data):
        calls.append(len(data))
        return real_write(fd, bytes(data[:7]))
    monkeypatch.setattr(os, "write", at_most_seven)
    data = bytes(range(256)) * 3
    pending = s11_storage.PendingWrite(str(tmp_path / "abc.json"), data, durable=False)
    monkeypatch.undo()
    try:
        pending.commit()
    finally:
        pending.discard()
    assert (tmp_path / "abc.json").read_bytes() == data and len(calls) == -(-len(data) // 7)


def test_an_empty_file_is_written_without_calling_write(tmp_path):
    with s11_storage.PendingWrite(str(tmp_path / "abc.json"), b"", durable=False) as pending:
        pending.commit()
    assert (tmp_path / "abc.json").read_bytes() == b""


@pytest.mark.parametrize("text", ["短", big_text()], ids=["small", "big"])
def test_a_save_after_someone_elses_save_conflicts_small_or_big(tmp_path, text):
    ours, theirs = SessionStore(tmp_path, durable=False), SessionStore(tmp_path, durable=False)
    sid = ours.create_session("t", [{"role": "user", "content": text}])
    mine, other = ours.load(sid), theirs.load(sid)
    other.messages.append({"role": "user", "content": "别人的"})
    theirs.save(other)
    mine.messages.append({"role": "user", "content": "我的"})
    with pytest.raises(ConflictError):
        ours.save(mine)


@pytest.mark.parametrize("text", ["短", big_text()], ids=["small", "big"])
def test_bytes_changed_in_place_are_parsed_again_not_trusted(tmp_path, text):
    store = SessionStore(tmp_path, durable=False)
    sid = store.create_session("t", [{"role": "user", "content": text}])
    node = store.load(sid)
    path = store.path_of(sid)
    raw = open(path, "rb").read()
    with open(path, "wb") as f:   # same length, one byte broken: the file no longer parses
        f.write(raw[:-1] + b"!")
    with pytest.raises(CorruptSession):
        store.save(node)
    assert open(path, "rb").read() == raw[:-1] + b"!"   # left as it was
    with open(path, "wb") as f:   # the sha256 of what we wrote, written over it: still not ours
        f.write(hashlib.sha256(raw).digest())
    with pytest.raises(CorruptSession):
        store.save(node)


labelled = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": st.text(max_size=8)},
                                          optional={"label": st.text(max_size=4)}), max_size=4)


def summaries_as_a_fresh_store_reads_them(folder):
    fresh = SessionStore(folder, durable=False)
    return {s["session_id"]: s for s in fresh.list_sessions()}


@settings(max_examples=60, deadline=None)
@given(labelled, labelled, labelled, st.integers(min_value=0, max_value=4))
def test_summaries_after_loads_are_what_a_fresh_store_reads(first, more, branch, at):
    folder = tempfile.mkdtemp(prefix="s11-speed-")
    try:
        store = SessionStore(folder, durable=False)
        root = store.create_session("根", first)
        node = store.load(root)
        node.messages.extend(more)
        store.save(node)
        child = store.fork(root, branch, at=min(at, len(node.messages)))
        store.load(child.session_id).messages.append({"role": "user", "content": "不保存"})
        store.load(root)
        assert {s["session_id"]: s for s in store.list_sessions()} == summaries_as_a_fresh_store_reads_them(folder)
        assert store.lineage(child.session_id) == SessionStore(folder, durable=False).lineage(child.session_id)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_load_after_someone_elses_save_refreshes_the_summary(tmp_path):
    ours, theirs = SessionStore(tmp_path, durable=False), SessionStore(tmp_path, durable=False)
    sid = ours.create_session("t", [{"role": "user", "content": "x"}])
    other = theirs.load(sid)
    other.messages.append({"role": "user", "content": "y", "label": "他们的"})
    theirs.save(other)
    node = ours.load(sid)
    cached = dict(zip(SUMMARY_KEYS, ours._summary_cache[ours.path_of(sid)][1]))   # the cache keeps values only
    assert cached["message_count"] == 2
    assert list(cached["labels"]) == [[2, "他们的"]]
    node.messages.append({"role": "user", "content": "z"})
    ours.save(node)   # the revision check reads the file it just loaded: no conflict
    assert SessionStore(tmp_path).load(sid).messages[-1]["content"] == "z"


chapter_messages = st.lists(st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]),
     "content": st.none() | st.text(max_size=12)
     | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=8)}), max_size=2)},
    optional={"label": st.text(max_size=4), "origin": st.text(max_size=4)}), max_size=5)


@settings(max_examples=80, deadline=None)
@given(chapter_messages, chapter_messages, st.integers(min_value=0, max_value=5))
def test_reading_back_its_own_bytes_gives_what_a_full_check_gives(first, more, at):
    folder = tempfile.mkdtemp(prefix="s11-known-")
    try:
        store = SessionStore(folder, durable=False)
        root = store.create_session("根", first)
        child = store.fork(root, more, at=min(at, len(first)))
        for sid in (root, child.session_id):
            mine, fresh = store.load(sid), SessionStore(folder, durable=False).load(sid)
            assert mine.to_dict() == fresh.to_dict() and mine.revision == fresh.revision
            assert mine.created_ns == fresh.created_ns
            mine.messages.append({"role": "user", "content": "不保存"})   # a load hands out its own objects
            assert store.load(sid).to_dict() == fresh.to_dict()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("broken", [
    {"role": "", "content": "x"}, {"content": "没有 role"}, {"role": "user", "content": 5}, "不是字典"],
    ids=["blank role", "no role", "number content", "not a dict"])
def test_a_file_replaced_after_a_load_is_checked_in_full(tmp_path, broken):
    ours, theirs = SessionStore(tmp_path, durable=False), SessionStore(tmp_path, durable=False)
    sid = ours.create_session("t", [{"role": "user", "content": "好的消息"}])
    ours.load(sid)
    node = theirs.load(sid)
    path = ours.path_of(sid)
    data = json.loads(open(path, encoding="utf-8").read())
    data["messages"].append(broken)
    raw = json.dumps(data, ensure_ascii=False, indent=2).encode()
    with open(path, "wb") as handle:
        handle.write(raw)
    with pytest.raises(CorruptSession, match="第 2 条消息|messages"):
        ours.load(sid)
    assert open(path, "rb").read() == raw   # reported, left as it is
    with pytest.raises(CorruptSession):
        theirs.save(node)   # and never overwritten


