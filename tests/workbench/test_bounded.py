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


# ── the space quota (spaces.folder_usage): one walk, per-directory entries in a BoundedCache ──────────────────
def _scans_of(folder, monkeypatch) -> list:
    """Every os.scandir of `folder` from now on (the quota's walk of the space's own level)."""
    seen, real = [], os.scandir

    def counting(path=".", *args):
        if os.fspath(path) == os.fspath(folder):
            seen.append(path)
        return real(path, *args)
    monkeypatch.setattr(os, "scandir", counting)
    return seen


def test_the_quota_counts_sessions_and_bytes_in_one_walk_of_a_folder_just_written(tmp_path, monkeypatch):
    from s11_workbench.spaces import Spaces
    spaces = Spaces(tmp_path / "sessions")
    space = spaces.open(spaces.new_token())
    session_id = space.store.create_session("刚写下", [{"role": "user", "content": "你好"}])
    on_disk = sum(os.lstat(os.path.join(root, name)).st_size for root, _, names in os.walk(space.folder)
                  for name in names)
    walks = _scans_of(space.folder, monkeypatch)
    assert space.usage() == (1, on_disk)                # the folder changed a moment ago: nothing cached counts
    assert len(walks) == 1                              # not once for the count and once more for the bytes
    assert os.path.exists(space.store.path_of(session_id))


def test_a_folder_replaced_by_another_with_the_same_modification_time_is_counted_again(tmp_path):
    from s11_workbench.spaces import Spaces
    spaces = Spaces(tmp_path / "sessions")
    space = spaces.open(spaces.new_token())
    trash = os.path.join(space.folder, ".trash")
    os.makedirs(trash)
    (tmp_path / "old").mkdir()
    with open(os.path.join(trash, "a.json"), "w", encoding="utf-8") as handle:
        handle.write("x" * 100)
    os.utime(trash, ns=(OLD, OLD))
    os.utime(space.folder, ns=(OLD, OLD))
    assert space.usage() == (0, 100)                   # an hour old: both levels are cached and trusted
    os.rename(trash, str(tmp_path / "old" / "trash"))   # another .trash in its place (a new inode), same time
    os.makedirs(trash)
    with open(os.path.join(trash, "b.json"), "w", encoding="utf-8") as handle:
        handle.write("y" * 7)
    os.utime(trash, ns=(OLD, OLD))
    os.utime(space.folder, ns=(OLD, OLD))
    assert space.usage() == (0, 7)                      # the directory's own (inode, size, time) is the stamp


def test_the_quota_cache_is_bounded_and_shared_by_the_spaces_of_one_server(tmp_path, monkeypatch):
    import s11_workbench.spaces as spaces_module
    monkeypatch.setattr(spaces_module, "SCAN_CACHE_DIRS", 3)
    spaces = spaces_module.Spaces(tmp_path / "sessions")
    first, second = (spaces.open(spaces.new_token()) for _ in range(2))
    for space in (first, second):
        for name in ("a", "b"):
            os.makedirs(os.path.join(space.folder, ".history", name))
        for root, _, _ in os.walk(space.folder):
            os.utime(root, ns=(OLD, OLD))
    assert first.usage()[1] == 0 and second.usage()[1] == 0
    assert first._scans is second._scans and len(first._scans) == 3   # 8 folders walked, the 3 most recent kept


# ── the explorer's check cache: one stamp per file the check reads, none per kept revision ─────────────────
def test_the_check_cache_keeps_no_stamp_per_kept_revision_and_still_sees_a_broken_file(tmp_path):
    from s11_session import demo_tree_branching
    from s11_workbench.explorer import Explorer, View
    from s11_workbench.spaces import Spaces
    spaces = Spaces(tmp_path / "sessions")
    token = spaces.new_token()
    space = spaces.open(token)
    ids = demo_tree_branching(space.store)
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    for turn in ("一", "二", "三"):                     # every resume keeps the replaced revision in .history/
        view = explorer.resume(token, view, turn).view
    page = explorer.refresh(token, view)
    history = os.path.join(space.folder, ".history")
    assert len(os.listdir(os.path.join(history, ids["branch_a_id"]))) == 3 and page.problems == ""
    stamps, _ = explorer._checks.peek(space.folder)
    assert f"{ids['branch_a_id']}.json" in stamps                  # keyed by the path inside the space folder
    assert not [path for path in stamps if path.startswith((".history" + os.sep, space.folder))]
    with open(space.store.path_of(ids["branch_b_id"]), "w", encoding="utf-8") as handle:
        handle.write("{not json")                       # a hand edit beside them is still found
    assert ids["branch_b_id"] in explorer.refresh(token, view).problems
    assert len(os.listdir(os.path.join(history, ids["branch_a_id"]))) == 3   # nothing kept was touched
