"""The workbench's one bounded cache (s11_workbench/bounded.py): its bounds, its order and its racy-mtime rule."""

from __future__ import annotations

import os
import time

from s11_workbench.bounded import RACY_NS, BoundedCache, file_stamp, is_racy

OLD = time.time_ns() - 3600 * 10**9   # a modification time an hour ago: trusted


def test_a_hit_needs_the_same_stamp():
    cache = BoundedCache(4)
    assert cache.put("a", (1, 2, OLD), "value", mtime_ns=OLD) == "value"
    assert cache.get("a", (1, 2, OLD)) == "value"
    assert cache.get("a", (1, 3, OLD)) is None          # the file grew
    assert cache.get("b", (1, 2, OLD)) is None


def test_the_least_recently_used_entry_goes_first():
    cache = BoundedCache(2)
    cache.put("a", 1, "A")
    cache.put("b", 1, "B")
    assert cache.get("a", 1) == "A"                     # a is now the most recently used
    cache.put("c", 1, "C")
    assert list(cache) == ["a", "c"] and cache.get("b", 1) is None


def test_the_size_bound_holds_and_a_value_larger_than_it_is_not_kept():
    cache = BoundedCache(max_size=10, size=len)
    for key in "abcdef":
        cache.put(key, 0, key * 3)
    assert cache.total_size <= 10 and cache.total_size == sum(len(value) for _, value in cache.items())
    assert [key for key, _ in cache.items()] == ["d", "e", "f"]
    cache.put("huge", 0, "x" * 11)
    assert cache.get("huge", 0) is None and cache.total_size == 9
    cache.put("d", 0, "")                               # replacing a value gives its size back
    assert cache.total_size == 6


def test_a_stamp_taken_right_after_a_write_is_not_trusted_until_it_is_stored_again_later():
    now = time.time_ns()
    assert is_racy(now) and is_racy(now - RACY_NS + 10**6) and not is_racy(now - RACY_NS - 10**6)
    assert is_racy(now + 10**9)                         # a clock set back: not trusted either
    assert not is_racy(None)                            # a fingerprint that is not a file time
    cache = BoundedCache(4)
    cache.put("fresh", (1, 2, now), "v", mtime_ns=now)
    assert cache.get("fresh", (1, 2, now)) is None and cache.peek("fresh") is None
    cache.put("fresh", (1, 2, now), "v", mtime_ns=now - 2 * RACY_NS)   # stored again once the file is old
    assert cache.get("fresh", (1, 2, now)) == "v" and cache.peek("fresh") == ((1, 2, now), "v")


def test_file_stamp_is_inode_size_and_time_and_none_for_a_missing_file(tmp_path):
    path = tmp_path / "a.json"
    path.write_text("{}", encoding="utf-8")
    info = os.lstat(path)
    assert file_stamp(str(path)) == (info.st_ino, 2, info.st_mtime_ns)
    assert file_stamp(str(tmp_path / "missing.json")) is None
