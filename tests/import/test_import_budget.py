"""An import knows the exact bytes it will write before it writes any, and a budget can refuse or stop it.

Issue 18 item 1: a 570 KB transcript with a user branch at every step once wrote 166 MB past the space's quota,
because the quota was checked against the upload's size. Now the plan computes the bytes (store.write_costs),
the budget sees them before the first write, and it looks at the disk again after every node.
"""

from __future__ import annotations

import hashlib
import math
import os
import stat
from pathlib import Path

import pytest
from test_import import Claude, text

import s11_chunks
import s11_import
from s11_format import SessionError
from s11_session import SessionStore
from s11_text import human_size


def folder_bytes(folder) -> int:
    total = 0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            info = os.lstat(os.path.join(root, name))
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def folder_digest(folder) -> str:
    digest = hashlib.sha256()
    for root, dirs, names in sorted(os.walk(folder)):
        dirs.sort()
        for name in sorted(names):
            path = os.path.join(root, name)
            digest.update(path.encode() + b"\0" + Path(path).read_bytes())
    return digest.hexdigest()


def branch_at_every_step(path: Path, steps: int = 120, pad: int = 600) -> Path:
    """The hostile shape: after every answer the user rewinds once and asks something else (a branch per step)."""
    log, parent = Claude(), None
    body = "排查记录：cache_store 命中率、ws_pool 连接数、GC 暂停。" * (pad // 30)
    for step in range(steps):
        log.user(f"u{step}", parent, f"第 {step} 问 {body}")
        log.user(f"v{step}", parent, f"换个问法：第 {step} 问")           # the branch: a second prompt, same parent
        log.assistant(f"a{step}", f"u{step}", text(f"第 {step} 答 {body}"))
        parent = f"a{step}"
    return log.write(path)


class Recorder(s11_import.WriteBudget):
    def __init__(self, limit: float = math.inf, stop_after: float = math.inf):
        self.limit, self.stop_after, self.asked, self.seen = limit, stop_after, None, []

    def before(self, nbytes, sessions):
        self.asked = (nbytes, sessions)
        if nbytes > self.limit:
            raise SessionError(f"这次导入要写 {human_size(nbytes)}，超过剩余的 {human_size(self.limit)}")

    def during(self, written):
        self.seen.append(written)
        if written > self.stop_after:
            raise SessionError("磁盘只剩很少的空间了")


@pytest.fixture(params=["version 3 only", "chunked"])
def store(request, tmp_path):
    threshold = math.inf if request.param == "version 3 only" else None
    options = {} if threshold is None else {"chunk_threshold": threshold}
    return SessionStore(tmp_path / "sessions", **options)


def test_the_planned_bytes_are_the_bytes_written_and_the_folders_growth(tmp_path, store):
    path = branch_at_every_step(tmp_path / "branchy.jsonl", steps=40)
    before = folder_bytes(store.storage_dir)
    budget = Recorder()
    report = s11_import.import_file(path, store, budget=budget)
    growth = folder_bytes(store.storage_dir) - before
    assert report.written == len(report.node_ids) > 40
    assert report.bytes_planned == report.bytes_written == growth == budget.asked[0]
    assert budget.asked[1] == report.written          # every node is new
    assert budget.seen[-1] == growth


def test_a_dry_run_says_what_it_would_write_and_writes_nothing(tmp_path, store):
    path = branch_at_every_step(tmp_path / "branchy.jsonl", steps=20)
    before = folder_digest(store.storage_dir)
    planned = s11_import.import_file(path, store, dry_run=True).bytes_planned
    assert folder_digest(store.storage_dir) == before
    assert planned == s11_import.import_file(path, store).bytes_written > 0


def test_a_refused_import_writes_nothing_and_says_how_much_it_needed(tmp_path, store):
    store.create_session("已有的会话", [{"role": "user", "content": "别动我"}])
    path = branch_at_every_step(tmp_path / "branchy.jsonl", steps=40)
    before = folder_digest(store.storage_dir)
    with pytest.raises(SessionError, match=r"这次导入要写 [\d.]+ (KB|MB)，超过剩余的 1.0 KB"):
        s11_import.import_file(path, store, budget=Recorder(limit=1024))
    assert folder_digest(store.storage_dir) == before


def test_a_budget_that_runs_out_while_writing_stops_with_complete_nodes(tmp_path, store):
    path = branch_at_every_step(tmp_path / "branchy.jsonl", steps=40)
    total = len(s11_import.import_file(path, SessionStore(tmp_path / "dry"), dry_run=True).node_ids)
    report = s11_import.import_file(path, store, budget=Recorder(stop_after=1))
    assert report.written == 1 and len(store.list_sessions()) == 1
    assert any("后停下" in warning and "磁盘只剩很少的空间了" in warning for warning in report.warnings)
    assert store.check() == []
    again = s11_import.import_file(path, store)          # after making room, a re-import fills in the rest
    assert (again.written, again.unchanged) == (total - 1, 1)
    assert len(store.list_sessions()) == total and store.check() == []


def test_a_branch_at_every_step_costs_a_bounded_tail_per_branch_in_the_chunked_layout(tmp_path):
    """The hostile upload of the issue: the version-3 layout copies every prefix (quadratic); with shared chunks
    each branch writes at most one chunk's worth of its prefix (the part after the last cut) plus what is new."""
    path = branch_at_every_step(tmp_path / "branchy.jsonl", steps=120)
    size = path.stat().st_size
    chunked = s11_import.import_file(path, SessionStore(tmp_path / "chunked"))
    copied = s11_import.import_file(path, SessionStore(tmp_path / "copied", chunk_threshold=math.inf))
    assert chunked.bytes_written <= 2 * size + chunked.written * s11_chunks.CHUNK_BYTES
    assert copied.bytes_written > 5 * chunked.bytes_written, (chunked.bytes_written, size, copied.bytes_written)
