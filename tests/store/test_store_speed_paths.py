"""The store's shortcuts for the chapter's demo (issue 19, item 4): each one must do exactly what the longer
path it replaces did, so every test here compares the two or pins the behaviour the shortcut must keep."""

import hashlib
import os
import random
import re
import stat

import pytest

import s11_format
import s11_storage
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


# -- the revision check recognises its own bytes by the bytes themselves (small files) or their sha256 -----

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
