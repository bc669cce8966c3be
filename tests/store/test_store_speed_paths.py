"""The store's shortcuts for the chapter's demo (issue 19, item 4): each one must do exactly what the longer
path it replaces did, so every test here compares the two or pins the behaviour the shortcut must keep."""

import hashlib
import json
import os
import random
import re
import shutil
import stat
import sys
import tempfile
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s11_chunks
import s11_format
import s11_storage
import s11_tree
from s11_session import ConflictError, CorruptSession, SessionStore

# -- PendingWrite names its temp file itself instead of calling tempfile.mkstemp --------------------------

TEMP_NAME = re.compile(r"\.abc\.json\.[0-9a-f]{12}\.tmp")


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


@pytest.mark.parametrize("squatter", ["file", "symlink", "directory"])
def test_a_name_already_taken_is_skipped_and_never_opened(tmp_path, monkeypatch, squatter):
    monkeypatch.setattr(s11_storage, "_temp_names", random.Random(7))
    first = tmp_path / f".abc.json.{random.Random(7).getrandbits(48):012x}.tmp"
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    if squatter == "file":
        first.write_bytes(b"someone else's")
    elif squatter == "symlink":
        first.symlink_to(victim)
    else:
        first.mkdir()
    pending = s11_storage.PendingWrite(str(tmp_path / "abc.json"), b"new", durable=False)
    try:
        assert pending.temp_path != str(first) and TEMP_NAME.fullmatch(os.path.basename(pending.temp_path))
    finally:
        pending.discard()
    assert victim.read_bytes() == b"keep"
    if squatter == "file":
        assert first.read_bytes() == b"someone else's"


def test_when_every_name_is_taken_it_gives_up_with_file_exists(tmp_path, monkeypatch):
    class Stuck(random.Random):
        def getrandbits(self, k):
            return 42
    monkeypatch.setattr(s11_storage, "_temp_names", Stuck())
    (tmp_path / f".abc.json.{42:012x}.tmp").write_bytes(b"")
    with pytest.raises(FileExistsError):
        s11_storage.PendingWrite(str(tmp_path / "abc.json"), b"x", durable=False)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_repeat_the_parents_names(tmp_path):
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:   # child: report the next name it would use, then leave without cleanup handlers
        try:
            os.write(write_end, f"{s11_storage._temp_names.getrandbits(48):012x}".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    child = os.read(read_end, 64).decode()
    os.close(read_end)
    os.waitpid(pid, 0)
    assert child != f"{s11_storage._temp_names.getrandbits(48):012x}"


# -- the revision check recognises its own bytes by length and SipHash (small files) or sha256 ---------------

@pytest.mark.parametrize("size", [0, 1, s11_format.FINGERPRINT_BYTES, s11_format.FINGERPRINT_BYTES + 1, 100_000])
def test_a_fingerprint_is_equal_exactly_when_the_bytes_are(size):
    raw = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert len(raw) == size
    assert s11_format.fingerprint(raw) == s11_format.fingerprint(bytes(raw))
    if size:
        changed = raw[:-1] + bytes([raw[-1] ^ 1])
        assert s11_format.fingerprint(changed) != s11_format.fingerprint(raw)
    # a small file never matches a big file's fingerprint, not even when it holds that file's sha256
    assert s11_format.fingerprint(hashlib.sha256(raw).digest()) != s11_format.fingerprint(raw) or size <= 32


def big_text():
    return "长" * (s11_format.FINGERPRINT_BYTES // 2)   # 3 bytes a character: the file is over the limit


@pytest.mark.parametrize("text", ["短", big_text()], ids=["bytes", "sha256"])
def test_a_save_after_someone_elses_save_conflicts_for_either_fingerprint(tmp_path, text):
    ours, theirs = SessionStore(tmp_path, durable=False), SessionStore(tmp_path, durable=False)
    sid = ours.create_session("t", [{"role": "user", "content": text}])
    mine, other = ours.load(sid), theirs.load(sid)
    other.messages.append({"role": "user", "content": "别人的"})
    theirs.save(other)
    mine.messages.append({"role": "user", "content": "我的"})
    with pytest.raises(ConflictError):
        ours.save(mine)


@pytest.mark.parametrize("text", ["短", big_text()], ids=["bytes", "sha256"])
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


# -- reference versions of the checks the shortcuts replaced, kept verbatim to compare against -------------

def reference_plain_tree(payload):
    """The type walk _orjson_indented used before (one Python loop step per value)."""
    stack = [payload]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            if not all(type(key) is str for key in value):
                return False
            values = value.values()
        elif kind is list:
            values = value
        else:
            return False
        for item in values:
            if type(item) not in s11_format._ORJSON_SCALARS:
                stack.append(item)
    return True


def reference_check_fields(data, path, message_count=None):
    """check_fields before its all-good shortcut: every field listed, the bad ones named."""
    if not isinstance(data, dict):
        raise CorruptSession(f"{path}：顶层不是 JSON 对象")
    try:
        s11_format.validate_session_id(data.get("session_id"))
        if data.get("parent_id") is not None:
            s11_format.validate_session_id(data["parent_id"])
        s11_format.validate_messages(data.get("messages", []))
    except s11_format.SessionError as exc:
        raise CorruptSession(f"{path}：{exc}") from None
    fork_point = data.get("fork_point")
    count = len(data.get("messages", [])) if message_count is None else message_count
    checks = {"title": isinstance(data.get("title", ""), str),
              "created_at": isinstance(data.get("created_at") or "", str),
              "revision": type(data.get("revision", 0)) is int,
              "created_ns": type(data.get("created_ns", 0)) is int,
              "workspace": data.get("workspace") is None or isinstance(data["workspace"], dict),
              "source": data.get("source") is None or isinstance(data["source"], dict),
              "fork_point": fork_point is None or (type(fork_point) is int and 0 <= fork_point <= count),
              "converged_from": s11_format._is_id_list(data.get("converged_from")),
              "labels": s11_format._is_label_list(data.get("labels"))}
    bad = [name for name, ok in checks.items() if not ok]
    if bad:
        raise CorruptSession(f"{path}：字段类型或取值不对：{', '.join(bad)}")


def outcome(call, *args):
    try:
        return ("ok", call(*args))
    except Exception as exc:   # the same exception type and message, or the same value
        return (type(exc).__name__, str(exc))


class Text(str):
    pass


class Mapping(dict):
    pass


odd_scalars = (st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70) | st.floats()
               | st.text(max_size=5) | st.builds(Text, st.text(max_size=3)) | st.just(b"bytes") | st.just((1, 2)))
odd_keys = st.text(max_size=3) | st.integers() | st.builds(Text, st.text(max_size=3))
trees = st.recursive(odd_scalars, lambda inner: st.lists(inner, max_size=4)
                     | st.lists(st.dictionaries(st.sampled_from(["role", "content", "x"]), inner, max_size=3),
                                min_size=2, max_size=4)   # lists of dicts: the shape the shortcut takes at once
                     | st.dictionaries(odd_keys, inner, max_size=3)
                     | st.builds(Mapping, st.dictionaries(st.text(max_size=2), inner, max_size=2)), max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(trees)
def test_the_type_walks_agree_with_the_one_value_at_a_time_walk(tree):
    for walk in (s11_format._plain_tree, s11_format._plain_document):   # message runs; small session documents
        assert walk(tree) == reference_plain_tree(tree)
        assert walk({"messages": [tree, tree]}) == reference_plain_tree({"messages": [tree, tree]})


@pytest.mark.parametrize("walk", ["_plain_tree", "_plain_document"])
def test_the_type_walk_gives_up_on_a_cycle_and_json_reports_it(monkeypatch, walk):
    monkeypatch.setattr(s11_format, "_ORJSON_VISITS", 1000)
    loop = [{"role": "user", "content": "hi"}]
    loop.append(loop)
    assert getattr(s11_format, walk)({"messages": loop}) is False
    with pytest.raises(s11_format.InvalidMessage):
        s11_format.encode_session({"session_id": "s1", "messages": loop}, "s1")


field_values = (st.none() | st.booleans() | st.integers(min_value=-3, max_value=12) | st.text(max_size=3)
                | st.just({}) | st.just([]) | st.just(["abc", "abc"]) | st.just(["a1", "b2"]) | st.just([[1, "x"]])
                | st.just([[0, "x"]]) | st.just(1.5))
fields = st.dictionaries(st.sampled_from(["title", "created_at", "revision", "created_ns", "workspace", "source",
                                          "fork_point", "converged_from", "labels", "parent_id"]), field_values)


@settings(max_examples=600, deadline=None)
@given(fields, st.integers(min_value=0, max_value=3), st.none() | st.integers(min_value=0, max_value=12))
def test_check_fields_rejects_and_names_exactly_what_the_full_list_did(extra, count, message_count):
    data = {"session_id": "s1", "messages": [{"role": "user", "content": "x"}] * count, **extra}
    assert outcome(s11_format.check_fields, data, "f.json", message_count) == \
        outcome(reference_check_fields, data, "f.json", message_count)


roles = st.text(alphabet=st.sampled_from(["a", " ", "\t", "\u3000", "\x1c", "\x85", "\xa0", "\u200b", "用"]),
                max_size=3) | st.builds(Text, st.text(max_size=2)) | st.none() | st.integers()


@settings(max_examples=400, deadline=None)
@given(st.lists(roles, max_size=4))
def test_the_role_check_accepts_exactly_the_non_blank_strings(found):
    messages = [{"role": role, "content": "x"} for role in found]
    try:   # the check it replaced ran over the set of roles (equal str subclasses collapse into one)
        roles = set(found)
    except TypeError:
        roles = None
    expected = roles is not None and all(type(role) is str and role and not role.isspace() for role in roles)
    assert s11_format._all_plainly_valid(messages) == expected


@pytest.mark.parametrize("brackets", [s11_format._FAST_BRACKETS - 1, s11_format._FAST_BRACKETS])
@pytest.mark.parametrize("opener", ["[", "{\"k\":"])
def test_documents_near_the_bracket_limit_read_as_json_reads_them(brackets, opener):
    closer = "]" if opener == "[" else "}"
    raw = (opener * brackets + "1" + closer * brackets).encode()
    assert s11_format.parse_json(raw, "f.json") == json.loads(raw)
    with_number = b'{"n": ' + b"1" * 20 + b', "m": -' + b"9" * 19 + b"}"
    assert repr(s11_format.parse_json(with_number, "f.json")) == repr(json.loads(with_number))


# -- PendingWrite writes everything even when the system writes only part of it ---------------------------

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


def test_the_cache_key_taken_before_the_rename_is_the_files_key_after_it(tmp_path):
    store = SessionStore(tmp_path, durable=False)
    sid = store.create_session("t", [{"role": "user", "content": "x"}])
    path = store.path_of(sid)
    info = os.lstat(path)
    assert store._summary_cache[path][0] == s11_storage.stat_key(info)
    assert s11_storage.stat_key(info) == info.st_ino << 128 | info.st_size << 64 | info.st_mtime_ns


# -- load() keeps the summary the store already holds for exactly these bytes ------------------------------

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
    cached = dict(zip(s11_tree.SUMMARY_KEYS, ours._summary_cache[ours.path_of(sid)][1]))
    assert cached["message_count"] == 2
    assert cached["labels"] == [[2, "他们的"]]
    node.messages.append({"role": "user", "content": "z"})
    ours.save(node)   # the revision check knows the bytes it just read: no conflict
    assert theirs.load(sid).revision == 3


# -- the batch scope (now a small class instead of a generator) -------------------------------------------

def test_the_outermost_batch_scope_owns_the_batch_and_clears_it_even_on_errors(tmp_path):
    store = SessionStore(tmp_path, durable=False)
    assert getattr(store._batch, "current", None) is None
    with store._batch_scope():
        outer = store._batch.current
        assert outer is not None
        with store.batch():
            assert store._batch.current is outer   # an inner scope shares it
        assert store._batch.current is outer
    assert store._batch.current is None
    with pytest.raises(KeyError):
        with store._batch_scope():
            raise KeyError("x")
    assert store._batch.current is None


def test_the_store_remembers_a_file_in_a_few_dozen_bytes_not_its_contents(tmp_path):
    # the revision check's fingerprint of a small file must not be the file itself: a class holds ~10,000 files
    store = SessionStore(tmp_path, durable=False)
    sid = store.create_session("t", [{"role": "user", "content": "长" * 2000}])
    store.load(sid)
    path = store.path_of(sid)
    assert os.path.getsize(path) > 5000
    seen, _revision = store._known[path]
    assert isinstance(seen, int) and sys.getsizeof(seen) < 64


def test_a_branch_path_reuses_an_ancestors_summary_only_while_the_cached_values_are_the_same(tmp_path):
    # Exports read each ancestor's summary through a small cache of ready-made dicts. A change the stat key cannot
    # see (same inode, size and mtime) but a load does see (another revision) must reach the next path as well.
    store = SessionStore(tmp_path, durable=False)
    root = store.create_session("根", [{"role": "user", "content": "x"}])
    middle = store.fork(root, [{"role": "user", "content": "y"}]).session_id
    leaf = store.fork(middle, [{"role": "user", "content": "z"}]).session_id
    first, again = store._lineage(leaf), store._lineage(leaf)
    assert [s["title"] for s in first] == ["根", "根 · 分支", "根 · 分支 · 分支"] and first[1] is again[1]
    path = store.path_of(middle)
    before = os.stat(path)
    data = json.loads(open(path, encoding="utf-8").read())
    raw = open(path, encoding="utf-8").read()
    changed = raw.replace('"revision": 1', '"revision": 2').replace("根 · 分支", "根 × 分支", 1)
    assert len(changed.encode()) == before.st_size and changed != raw and data["revision"] == 1
    with open(path, "r+", encoding="utf-8") as handle:   # in place: same inode, same size
        handle.write(changed)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert s11_storage.stat_key(os.stat(path)) == s11_storage.stat_key(before)
    assert store.load(middle).title == "根 × 分支"   # the load sees the new revision and re-reads the summary
    assert [s["title"] for s in store._lineage(leaf)] == ["根", "根 × 分支", "根 · 分支 · 分支"]
    assert "根 × 分支（" in store.export_markdown(leaf, redact=False)
    store.lineage(leaf)[1]["title"] = "调用方改了自己的副本"   # lineage() hands out copies
    assert store._lineage(leaf)[1]["title"] == "根 × 分支"


def test_the_ready_made_summaries_are_bounded(tmp_path, monkeypatch):
    import s11_session
    monkeypatch.setattr(s11_session, "_RECENT", 4)
    store = SessionStore(tmp_path, durable=False)
    current = root = store.create_session("根", [{"role": "user", "content": "x"}])
    for _ in range(9):
        current = store.fork(current, [{"role": "user", "content": "y"}]).session_id
    assert len(store.lineage(current)) == 10 and 0 < len(store._recent) <= 4
    assert store.path_of(root) in store._recent   # the path is walked upwards: the root came in last
    for _ in range(3):
        assert [s["title"] for s in store.lineage(current)][0] == "根" and len(store._recent) <= 4
    store.delete(root)
    assert store.path_of(root) not in store._recent and len(store.lineage(current)) == 9


def test_a_cached_lineage_follows_what_other_stores_did_to_each_ancestor(tmp_path, caplog):
    # lineage() and every export's branch path read each ancestor from the summary cache after one lstat.
    # Whatever another store (or a person) did to an ancestor since is what the path shows.
    ours, theirs = SessionStore(tmp_path, durable=False), SessionStore(tmp_path, durable=False)
    root = ours.create_session("根", [{"role": "user", "content": "x"}])
    middle = ours.fork(root, [{"role": "user", "content": "y"}]).session_id
    leaf = ours.fork(middle, [{"role": "user", "content": "z"}]).session_id
    assert [s["title"] for s in ours.lineage(leaf)] == ["根", "根 · 分支", "根 · 分支 · 分支"]
    renamed = theirs.load(middle)
    renamed.title = "改过的名字"
    theirs.save(renamed)
    assert [s["title"] for s in ours.lineage(leaf)] == ["根", "改过的名字", "根 · 分支 · 分支"]
    assert "改过的名字" in ours.export_markdown(leaf, redact=False)
    # The ancestor's file becomes a link to another session: never followed, the path starts below it.
    os.replace(theirs.path_of(middle), tmp_path / "moved.json")
    os.symlink(tmp_path / "moved.json", theirs.path_of(middle))
    assert [s["session_id"] for s in ours.lineage(leaf)] == [leaf]
    assert any("祖先无法读取" in record.getMessage() for record in caplog.records)
    os.remove(theirs.path_of(middle))   # deleted: the path starts at the leaf, no warning needed
    caplog.clear()
    assert [s["session_id"] for s in ours.lineage(leaf)] == [leaf] and not caplog.records


# -- An export's branch path reuses the ancestors it has just checked while the folder is unchanged ---------

def _chain_of(store, depth):
    """[root, child, …]: each node a fork of the previous one."""
    ids = [store.create_session("根", [{"role": "user", "content": "x"}])]
    for _ in range(depth):
        ids.append(store.fork(ids[-1], [{"role": "user", "content": "y"}]).session_id)
    return ids


def _settle(folder, seconds=10):
    """The folder was last changed `seconds` ago (a folder nobody has saved into for a while)."""
    past = time.time_ns() - seconds * 1_000_000_000 + 123_457   # with a sub-millisecond part, as ext4 writes them
    os.utime(folder, ns=(past, past))


@pytest.fixture
def lstat_calls(monkeypatch):
    calls = []
    real = os.lstat

    def counting(path, *args, **kwargs):
        calls.append(os.fspath(path))
        return real(path, *args, **kwargs)
    monkeypatch.setattr(os, "lstat", counting)
    return calls


def _ancestor_checks(calls, store, ids):
    ancestors = {store.path_of(sid) for sid in ids[:-1]}
    return sum(path in ancestors for path in calls)


def test_a_second_export_of_a_deep_node_checks_no_ancestor_again_while_the_folder_is_unchanged(tmp_path,
                                                                                               lstat_calls):
    store = SessionStore(tmp_path, durable=False)
    ids = _chain_of(store, 10)
    _settle(tmp_path)
    lstat_calls.clear()
    first = store.export_markdown(ids[-1], redact=False)
    assert _ancestor_checks(lstat_calls, store, ids) == 10   # walked: one lstat per ancestor
    lstat_calls.clear()
    again = store.export_markdown(ids[-1], redact=False)
    assert again == first and _ancestor_checks(lstat_calls, store, ids) == 0
    assert "根 · 分支 · 分支（" in again and again.count(" → ") == 10


def test_a_folder_changed_moments_ago_is_checked_ancestor_by_ancestor(tmp_path, lstat_calls):
    # Within a clock tick of the last change a later rename may leave the folder's time as it was: never trusted.
    store = SessionStore(tmp_path, durable=False)
    ids = _chain_of(store, 3)
    for _ in range(3):
        lstat_calls.clear()
        store.export_markdown(ids[-1], redact=False)
        assert _ancestor_checks(lstat_calls, store, ids) == 3
    assert not store._chains


def test_what_any_store_saves_deletes_or_links_in_the_folder_shows_in_the_next_export(tmp_path, caplog):
    ours, theirs = SessionStore(tmp_path, durable=False), SessionStore(tmp_path, durable=False)
    root, middle, leaf = _chain_of(ours, 2)
    _settle(tmp_path)
    assert "根 · 分支（" in ours.export_markdown(leaf, redact=False) and ours._chains
    renamed = theirs.load(middle)
    renamed.title = "别人改的名字"
    theirs.save(renamed)   # a temp file and a rename: the folder's time moves
    assert "别人改的名字（" in ours.export_markdown(leaf, redact=False)
    _settle(tmp_path)
    ours.export_markdown(leaf, redact=False)
    os.replace(theirs.path_of(root), tmp_path / "moved.json")   # the root becomes a link: never followed
    os.symlink(tmp_path / "moved.json", theirs.path_of(root))
    _settle(tmp_path)
    for _ in range(2):   # a path cut short is walked every time: every export says why
        caplog.clear()
        text = ours.export_markdown(leaf, redact=False)
        assert f"别人改的名字（{middle}） → " in text and f"（{root}）" not in text
        assert any("祖先无法读取" in record.getMessage() for record in caplog.records)
    theirs.delete(middle)
    assert "分支路径" not in ours.export_markdown(leaf, redact=False)


def test_an_ancestor_rewritten_in_place_shows_at_once_after_a_load_and_within_a_second_otherwise(tmp_path):
    # A program that rewrites a file in place (no rename) leaves the folder's time alone: the trusted path
    # follows it once this store reads the file, or once the path is older than a second.
    store = SessionStore(tmp_path, durable=False)
    root, middle, leaf = _chain_of(store, 2)
    _settle(tmp_path)
    store.export_markdown(leaf, redact=False)
    path = store.path_of(middle)

    def rewrite(title):
        data = json.loads(open(path, encoding="utf-8").read())
        data["title"] = title
        folder_time = os.stat(tmp_path).st_mtime_ns
        with open(path, "w", encoding="utf-8") as handle:   # truncate and write: same inode, no rename
            json.dump(data, handle, ensure_ascii=False)
        assert os.stat(tmp_path).st_mtime_ns == folder_time

    rewrite("原地改的名字")
    assert any(s["title"] == "原地改的名字" for s in store.list_sessions())   # the listing re-reads it at once
    assert "原地改的名字（" in store.export_markdown(leaf, redact=False)     # and that refreshed the cache
    rewrite("又改了一次")
    time.sleep(1.05)
    assert "又改了一次（" in store.export_markdown(leaf, redact=False)


def test_the_trusted_paths_are_bounded_in_number_and_depth(tmp_path, monkeypatch):
    import s11_chains
    monkeypatch.setattr(s11_chains, "CHAINS", 3)
    monkeypatch.setattr(s11_chains, "CHAIN_DEPTH", 4)
    store = SessionStore(tmp_path, durable=False)
    ids = _chain_of(store, 6)
    leaves = [store.fork(ids[1], [{"role": "user", "content": str(n)}]).session_id for n in range(5)]
    _settle(tmp_path)
    for leaf in leaves:
        store.export_markdown(leaf, redact=False)
        assert 0 < len(store._chains) <= 3
    store._chains.clear()
    store.export_markdown(ids[4], redact=False)   # 4 ancestors: kept
    store.export_markdown(ids[5], redact=False)   # 5 ancestors: walked every time
    assert list(store._chains) == [(ids[4], ids[3])]


# -- load() does not check again the bytes this store wrote or checked itself ------------------------------

@pytest.fixture
def field_checks(monkeypatch):
    """How many times a file's fields and messages are checked (s11_format.check_fields)."""
    calls = []
    real = s11_format.check_fields

    def counting(data, path, *args, **kwargs):
        calls.append(path)
        return real(data, path, *args, **kwargs)
    monkeypatch.setattr(s11_format, "check_fields", counting)
    monkeypatch.setattr(s11_chunks, "check_fields", counting)   # version 4's own checks, imported by name
    return calls


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


def test_its_own_bytes_are_checked_once_and_anyone_elses_every_time(tmp_path, field_checks):
    store = SessionStore(tmp_path, durable=False)
    sid = store.create_session("t", [{"role": "user", "content": "你好"}])
    path = store.path_of(sid)
    store.load(sid)
    store.load(sid)
    assert path not in field_checks   # written by this store: already checked before it was encoded
    data = json.loads(open(path, encoding="utf-8").read())
    data["messages"].append({"role": "user", "content": "别人加的"})
    with open(path, "w", encoding="utf-8") as handle:   # another program, in place
        json.dump(data, handle, ensure_ascii=False)
    assert store.load(sid).messages[-1]["content"] == "别人加的"
    assert field_checks.count(path) == 1
    store.load(sid)
    assert field_checks.count(path) == 1   # those bytes are now checked: not again


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


def test_a_version_1_file_is_migrated_on_every_read_and_checked_once(tmp_path, field_checks):
    # the book's own file: no version, no revision. What a load gives the second time is what it gave the first.
    import s11_book
    book = s11_book.SessionStore(str(tmp_path))
    sid = book.create_session("书里的会话", [{"role": "user", "content": "你好"}])
    store = SessionStore(tmp_path, durable=False)
    first = store.load(sid)
    second = store.load(sid)
    assert field_checks.count(store.path_of(sid)) == 1
    assert first.to_dict() == second.to_dict() and second.title == "书里的会话" and second.revision == 0


def test_a_big_sessions_chunks_are_checked_on_every_load(tmp_path, field_checks):
    # version 4 keeps its messages in chunks outside the session file: the shortcut never applies to it
    store = SessionStore(tmp_path, durable=False)
    sid = store.create_session("大", [{"role": "user", "content": "长" * 40_000} for _ in range(3)])
    path = store.path_of(sid)
    assert open(path, "rb").read(12) == b'{"version":4'
    field_checks.clear()
    SessionStore(tmp_path, durable=False).load(sid)   # a store that has never seen these bytes
    by_a_stranger = field_checks.count(path)
    for _ in range(2):
        field_checks.clear()
        store.load(sid)
        assert field_checks.count(path) == by_a_stranger > 0   # the store that wrote them checks as much


def test_the_chain_module_examples_hold():
    import doctest

    import s11_chains
    assert doctest.testmod(s11_chains).failed == 0
