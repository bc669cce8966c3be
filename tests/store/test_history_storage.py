"""What keeping every revision costs (issue 43, "done when"): a 10,000-message session (chunked, version 4) forked
and resumed 100 times. Every revision stays readable, and each step adds bytes in proportion to its new messages
plus a bounded amount per file written (head + index + the tail after the last chunk, which is < CHUNK_BYTES) --
never in proportion to the 10,000 messages, because a kept revision is a hard link to a file that shares its chunks.
A behaviour assertion on bytes, not on time."""

from __future__ import annotations

import json
import os
import stat

import s11_chunks
from s11_session import SessionStore

MESSAGES, STEPS = 10_000, 100
HEAD_AND_INDEX = 4096             # generous: the head, the chunk index and one journal line per file


def folder_bytes(folder) -> int:
    """Bytes of every regular file under the folder (links not followed), the way a space's quota counts them."""
    total = 0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            info = os.lstat(os.path.join(root, name))
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def message(number: int, text: str) -> dict:
    return {"role": "user" if number % 2 == 0 else "assistant", "content": f"{text} {number}"}


def test_a_big_session_forked_and_resumed_100_times_costs_what_is_new(tmp_path):
    store = SessionStore(tmp_path / "sessions", durable=False)   # fsync changes no byte count, only the time
    root = store.create_session("一万条", [message(i, "历史") for i in range(MESSAGES)])
    full = os.path.getsize(store.path_of(root)) + folder_bytes(os.path.join(store.storage_dir, ".chunks"))
    assert os.path.getsize(store.path_of(root)) < s11_chunks.CHUNK_BYTES + HEAD_AND_INDEX   # it is chunked
    current, written = root, []
    for step in range(STEPS):
        before = folder_bytes(store.storage_dir)
        forked = [message(step, "分叉")]
        child = store.fork(current, forked)               # file 1: the fork
        resumed = [message(step, "续写"), message(step + 1, "续写")]
        child.messages = child.messages + resumed
        store.save(child)                                 # file 2: the resume; the fork's revision 1 is kept
        new_bytes = len(json.dumps(forked + resumed, ensure_ascii=False).encode("utf-8"))
        growth = folder_bytes(store.storage_dir) - before
        assert growth <= 10 * new_bytes + 2 * (HEAD_AND_INDEX + s11_chunks.CHUNK_BYTES), (step, growth)
        written.append((child.session_id, len(child.messages)))
        current = child.session_id
    total = folder_bytes(store.storage_dir) - full
    assert total < STEPS * full / 4   # a copy of the history per step would be STEPS * 2 * full
    for session_id, count in written:   # every revision is still there: the fork's and the resume's
        assert len(store.load_revision(session_id, 1).messages) == count - 2
        assert len(store.load_revision(session_id, 2).messages) == count
    assert store.check() == []
