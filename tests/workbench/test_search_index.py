"""Issue 40 item 3: a cold full-text search reads one file, the space's search index (search_index.py), instead of
every session file — and finds exactly what reading every file finds. The index is untrusted on read: a truncated,
reshaped, huge, stale, linked or copied-in index is ignored (search falls back to the session files and gives the same
results), and the next search writes a good one again. It is not counted in the space's quota or last activity,
check() never reports it, and it leaves with the space."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_explorer_pick import SessionFileStats  # counts lstat / stat of the session files

import s11_check
from s11_session import SessionNode, demo_tree_branching
from s11_workbench import explorer as explorer_module
from s11_workbench import search_index
from s11_workbench.explorer import Explorer, View
from s11_workbench.spaces import Limits, Spaces, folder_usage, last_activity

ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)
AN_HOUR = 3600 * 10**9

# Messages chosen to stress what message_parts and casefold do: tool calls (their captions and JSON input),
# thinking, images, whitespace runs, case that folds to more letters (ß, İ), CJK, emoji, escapes in the file.
ODD_MESSAGES = [
    {"role": "user", "content": "Straße   und\tSTRASSE\n\n überall — İstanbul"},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "先 grep 全局注册表，定位到 WeakValueDictionary"},
        {"type": "text", "text": "好的：\"引号\" 与 \\反斜杠\\ 和 \u2028 行分隔"},
        {"type": "tool_use", "id": "call_1", "name": "Bash", "input": {"command": "grep -rn LRU src/"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "src/cache.py:3: LRU",
                                  "is_error": True}]},
    {"role": "assistant", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                   "data": "iVBORw0KGgo="}}]},
    {"role": "assistant", "content": "😀 ΣΊΣΥΦΟΣ ǅemal ﬁle Ǉ \x01控制字符"},
    {"role": "system", "content": "系统提示：你是一个 helpful assistant"},
    {"role": "user", "content": ""},
    {"role": "assistant", "content": None},
]


def age(folder: str) -> None:
    """Every file of the space an hour old: past the racy window, so the caches and the index trust them."""
    then = time.time_ns() - AN_HOUR
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            os.utime(path, ns=(then, then))


def background_writes() -> None:
    for thread in [t for t in threading.enumerate() if t.name in ("s11x-warm", "s11x-index")]:
        thread.join(timeout=30)


def build_space(spaces: Spaces) -> tuple[str, str, dict]:
    """A realistic space with odd nodes: demo trees, forks, a long session (chunked on disk), odd messages, a node
    whose messages load() refuses (listed, never searched), and a session with a hostile title."""
    token = spaces.new_token()
    store = spaces.open(token).store
    ids = {}
    for _ in range(3):
        ids = demo_tree_branching(store)
    odd = store.create_session("Odd · 大小写 ß", ODD_MESSAGES)
    store.fork(odd, [{"role": "user", "content": "分支里 STRASSE 再问一次"}], at=2)
    store.fork(odd, [{"role": "user", "content": "从头分叉 weakvaluedictionary"}], at=0)
    store.create_session("长会话", [{"role": "user" if i % 2 == 0 else "assistant",
                                   "content": f"第 {i} 条 LRU 缓存 " + "报表缓存要改成 LRU。" * 200} for i in range(120)])
    store.create_session("<script>alert(1)</script> `x`", [{"role": "user", "content": "标题有敌意 LRU"}])
    broken = store.create_session("坏文件", [{"role": "user", "content": "LRU 坏"}, {"role": "assistant", "content": "x"}])
    path = store.path_of(broken)
    document = json.loads(open(path, encoding="utf-8").read())
    document["messages"][1]["content"] = 5            # the listing still shows it; load() refuses it
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle)
    ids.update(odd=odd, broken=broken)
    folder = spaces.open(token).folder
    age(folder)
    return token, folder, ids


def new_explorer(spaces, tmp_path) -> Explorer:
    return Explorer(spaces, export_root=str(tmp_path / "exports"))


def index_written(spaces, token, tmp_path) -> str:
    """Search once with empty caches (reads every file, writes the index in the background) -> the index's path."""
    page = new_explorer(spaces, tmp_path).refresh(token, View(), "LRU")
    assert page.hits
    background_writes()
    path = search_index.index_path(spaces.open(token).folder)
    assert os.path.isfile(path)
    return path


def searched(explorer: Explorer, token: str, query: str) -> tuple:
    page = explorer.refresh(token, View(), query)
    return page.hits, page.hits_note, page.rows, page.list_note


def from_files(spaces, token, tmp_path, query, monkeypatch) -> tuple:
    """Today's search: empty caches and no index, every session file loaded (the oracle)."""
    with monkeypatch.context() as patch:
        patch.setattr(search_index, "read", lambda folder: {})
        patch.setattr(search_index, "write", lambda folder, items: False)
        return searched(new_explorer(spaces, tmp_path), token, query)


class Reads:
    """Counts the session files a search loads (Explorer._read_texts)."""

    def __init__(self, monkeypatch):
        self.count = 0
        original = Explorer._read_texts

        def counting(explorer, *args):
            self.count += 1
            return original(explorer, *args)
        monkeypatch.setattr(Explorer, "_read_texts", counting)


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path / "sessions", limits=ROOMY)


@pytest.fixture
def space(spaces, tmp_path, monkeypatch):
    monkeypatch.setattr(explorer_module, "INDEX_MIN_MISSES", 1)   # a test space is small: read the index anyway
    token, folder, ids = build_space(spaces)
    return token, folder, ids


# ── the index answers a cold search, with today's results ───────────────────────────────────────────
def test_a_cold_search_reads_the_index_not_the_session_files(spaces, space, tmp_path, monkeypatch):
    token, folder, ids = space
    index_written(spaces, token, tmp_path)
    reads = Reads(monkeypatch)
    hits, note, _, _ = searched(new_explorer(spaces, tmp_path), token, "LRU")
    assert reads.count == 1          # only the node load() refuses: it is never in the index, so it is tried again
    assert ids["broken"] not in {hit[3] for hit in hits}
    assert "找到" in note and hits


def test_a_cold_search_through_the_index_stats_each_session_file_once(spaces, space, tmp_path, monkeypatch):
    """The index entries are checked against the stamps the store's listing has just taken (store.stamp_of), not
    against a second lstat of every file; only the node load() refuses is opened again (it is never in the index)."""
    token, folder, ids = space
    index_written(spaces, token, tmp_path)
    listed = {f"{summary['session_id']}.json" for summary in spaces.open(token).store.list_sessions()}
    stats = SessionFileStats(monkeypatch, folder)
    reads = Reads(monkeypatch)
    assert searched(new_explorer(spaces, tmp_path), token, "LRU")[0]
    assert reads.count == 1 and stats.calls == {name: 2 if name == f"{ids['broken']}.json" else 1 for name in listed}


def test_the_index_holds_no_racy_file_and_is_not_written_when_only_racy_files_were_read(spaces, tmp_path,
                                                                                        monkeypatch):
    monkeypatch.setattr(explorer_module, "INDEX_MIN_MISSES", 1)
    token = spaces.new_token()
    demo_tree_branching(spaces.open(token).store)      # files written just now: inside the racy window
    assert new_explorer(spaces, tmp_path).refresh(token, View(), "LRU").hits
    background_writes()
    folder = spaces.open(token).folder
    assert not os.path.exists(search_index.index_path(folder))
    old, just_now = time.time_ns() - AN_HOUR, time.time_ns()
    assert search_index.write(folder, [("old", (1, 2, old), [(1, "旧", "旧")]),
                                       ("new", (1, 2, just_now), [(1, "新", "新")])])
    assert list(search_index.read(folder)) == ["old"]   # a file changed this clock tick may change again unseen


QUERIES = ["LRU", "lru", "strasse", "STRASSE", "straße", "ss", "weakvaluedictionary", "grep", "bash", "lru src",
           "引号", "反斜杠", "\\反斜杠\\", "\"引号\"", "😀", "σίσυφοσ", "ǆemal", "file", "控制字符", "istanbul", "i̇stanbul",
           "缓存 报表", "第 7 条", "helpful", "系统提示", "image", "🖼️", "call_1", "❌", "调用", "alert(1)", "分支",
           "从头分叉", "x", "坏", "条", "没有这个词"]


@pytest.fixture(scope="module")
def oracle_space(tmp_path_factory):
    root = tmp_path_factory.mktemp("oracle")
    spaces = Spaces(root / "sessions", limits=ROOMY)
    token, folder, ids = build_space(spaces)
    explorer = Explorer(spaces, export_root=str(root / "exports"))
    original = explorer_module.INDEX_MIN_MISSES
    explorer_module.INDEX_MIN_MISSES = 1
    try:
        explorer.refresh(token, View(), "LRU")
        background_writes()
    finally:
        explorer_module.INDEX_MIN_MISSES = original
    assert os.path.isfile(search_index.index_path(folder))
    return spaces, token, root


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.one_of(st.sampled_from(QUERIES), st.text(min_size=1, max_size=4)), min_size=1, max_size=3))
def test_search_through_the_index_finds_exactly_what_reading_every_file_finds(oracle_space, words, monkeypatch):
    """The oracle: today's search (every session file loaded and flattened) against a cold search answered by the
    index, over many queries on a space with odd and broken nodes: same hits, same order, same counts, same context."""
    spaces, token, root = oracle_space
    query = " ".join(words)
    monkeypatch.setattr(explorer_module, "INDEX_MIN_MISSES", 1)
    reads = Reads(monkeypatch)
    through_index = searched(Explorer(spaces, export_root=str(root / "exports")), token, query)
    assert reads.count <= 1          # the broken node only: everything else came from the index
    assert through_index == from_files(spaces, token, root, query, monkeypatch)


def test_a_big_space_reads_the_index_only_when_many_texts_are_missing(spaces, space, tmp_path, monkeypatch):
    token, folder, ids = space
    index_written(spaces, token, tmp_path)
    monkeypatch.setattr(explorer_module, "INDEX_MIN_MISSES", 10_000)
    reads = Reads(monkeypatch)
    searched(new_explorer(spaces, tmp_path), token, "LRU")
    assert reads.count == len(spaces.open(token).store.list_sessions())   # a few misses: the files are read directly


# ── the index is untrusted ──────────────────────────────────────────────────────────────────────────
def damage_truncated(path):
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])


def damage_not_json(path):
    open(path, "wb").write(b"\xff\xfe not json at all")


def damage_shape(change):
    def damage(path):
        document = json.loads(open(path, encoding="utf-8").read())
        change(document)
        open(path, "w", encoding="utf-8").write(json.dumps(document))
    return damage


def first_entry(document):
    return next(iter(document["entries"].values()))


def damage_huge(path):
    with open(path, "ab") as handle:                   # still a good index, padded with spaces past the bound
        handle.write(b" " * (search_index.MAX_BYTES + 1 - os.path.getsize(path)))


def damage_symlink(path):
    target = path + ".elsewhere"
    os.replace(path, target)
    os.symlink(target, path)


def damage_linked_folder(path):
    folder = os.path.dirname(path)
    os.replace(folder, folder + ".elsewhere")
    os.symlink(folder + ".elsewhere", folder)


def damage_deep(path):
    open(path, "w").write("[" * 100_000 + "]" * 100_000)


DAMAGES = {
    "truncated": damage_truncated,
    "not-json": damage_not_json,
    "a-list": damage_shape(lambda d: d.clear() or d.update({"entries": []})),
    "wrong-format": damage_shape(lambda d: d.update(format="something-else")),
    "newer-version": damage_shape(lambda d: d.update(version=2)),
    "entries-not-a-dict": damage_shape(lambda d: d.update(entries=[["x", 1]])),
    "entry-not-a-pair": damage_shape(lambda d: first_entry(d).append("extra")),
    "odd-flat-texts": damage_shape(lambda d: first_entry(d)[1].append(99)),
    "number-a-string": damage_shape(lambda d: first_entry(d)[1].__setitem__(0, "1")),
    "number-a-bool": damage_shape(lambda d: first_entry(d)[1].__setitem__(0, True)),
    "numbers-not-increasing": damage_shape(lambda d: first_entry(d)[1].extend([1, "again"])),
    "empty-text": damage_shape(lambda d: first_entry(d)[1].__setitem__(1, "")),
    "text-a-dict": damage_shape(lambda d: first_entry(d)[1].__setitem__(1, {"a": 1})),
    "huge": damage_huge,
    "symlink": damage_symlink,
    "linked-folder": damage_linked_folder,
    "deeply-nested": damage_deep,
}


@pytest.mark.parametrize("damage", list(DAMAGES), ids=list(DAMAGES))
def test_a_damaged_index_is_ignored_search_stays_right_and_a_good_index_comes_back(spaces, space, tmp_path,
                                                                                  monkeypatch, damage):
    token, folder, ids = space
    path = index_written(spaces, token, tmp_path)
    expected = from_files(spaces, token, tmp_path, "LRU", monkeypatch)
    DAMAGES[damage](path)
    assert search_index.read(folder) == {}
    reads = Reads(monkeypatch)
    assert searched(new_explorer(spaces, tmp_path), token, "LRU") == expected   # no crash, today's results
    assert reads.count == len(spaces.open(token).store.list_sessions())         # every file read instead
    background_writes()
    assert os.path.isfile(path) and not os.path.islink(path) and search_index.read(folder)   # rewritten, good again


def test_a_stale_entry_is_not_used_a_changed_session_is_read_from_its_file(spaces, space, tmp_path, monkeypatch):
    token, folder, ids = space
    index_written(spaces, token, tmp_path)
    store = spaces.open(token).store
    node = store.load(ids["main_id"])
    node.messages.append({"role": "user", "content": "新加的词 ZEBRA"})
    store.save(node)
    assert [hit[3] for hit in searched(new_explorer(spaces, tmp_path), token, "zebra")[0]] == [ids["main_id"]]


def test_an_entry_whose_file_was_edited_by_hand_keeping_revision_and_length_is_not_used(spaces, space, tmp_path):
    token, folder, ids = space
    index_written(spaces, token, tmp_path)
    path = spaces.open(token).store.path_of(ids["branch_a_id"])
    raw = open(path, encoding="utf-8").read()
    assert "LRU" in raw
    then = os.stat(path).st_mtime_ns
    open(path, "w", encoding="utf-8").write(raw.replace("LRU", "FIF"))
    os.utime(path, ns=(then, then + 1))               # same size, revision and title: only the stat differs
    explorer = new_explorer(spaces, tmp_path)
    assert ids["branch_a_id"] not in {hit[3] for hit in searched(explorer, token, "LRU")[0]}
    assert ids["branch_a_id"] in {hit[3] for hit in searched(explorer, token, "FIF")[0]}


def test_an_entry_with_messages_outside_the_nodes_own_range_is_not_used(spaces, space, tmp_path, monkeypatch):
    token, folder, ids = space
    path = index_written(spaces, token, tmp_path)
    document = json.loads(open(path, encoding="utf-8").read())
    entry = document["entries"][ids["branch_a_id"]]
    entry[1] = [1, "伪造的 INHERITED 前缀"]              # branch A's own messages start after its fork point
    open(path, "w", encoding="utf-8").write(json.dumps(document))
    assert searched(new_explorer(spaces, tmp_path), token, "inherited")[0] == []


def test_another_spaces_index_copied_in_is_ignored(spaces, space, tmp_path, monkeypatch):
    token, folder, ids = space
    other_token = spaces.new_token()
    other = spaces.open(other_token).folder
    for name in os.listdir(folder):                    # the same sessions, byte for byte, times kept
        if name.endswith(".json"):
            shutil.copy2(os.path.join(folder, name), os.path.join(other, name))
    path = index_written(spaces, token, tmp_path)
    os.makedirs(os.path.join(other, search_index.INDEX_DIR))
    shutil.copy2(path, search_index.index_path(other))
    assert search_index.read(other) == {}
    reads = Reads(monkeypatch)
    searched(new_explorer(spaces, tmp_path), other_token, "LRU")
    assert reads.count == len(spaces.open(other_token).store.list_sessions())


# ── where the index lives: not the student's quota, activity or problems; gone with the space ──────────
def test_the_index_is_not_counted_in_quota_check_or_the_listing(spaces, space, tmp_path):
    token, folder, ids = space
    store = spaces.open(token).store
    before = (folder_usage(folder), store.list_sessions(), s11_check.check(store))
    explorer = new_explorer(spaces, tmp_path)
    explorer.refresh(token, View())                    # the check cache is filled
    path = index_written(spaces, token, tmp_path)
    assert os.path.getsize(path) > 1000
    assert (folder_usage(folder), store.list_sessions(), s11_check.check(store)) == before
    assert not any(search_index.INDEX_DIR in key for key in explorer_module._folder_stamps(folder))


def test_rewriting_the_index_is_not_the_students_activity(spaces, space, tmp_path):
    """Only creating .search/ the first time touches the space folder itself; every later write stays inside it."""
    token, folder, ids = space
    path = index_written(spaces, token, tmp_path)
    then = time.time_ns() - AN_HOUR
    os.utime(folder, ns=(then, then))
    before = last_activity(folder)
    assert search_index.write(folder, [("abc", (1, 2, then), [(1, "正文", "正文")])])
    later = time.time_ns() + AN_HOUR
    os.utime(path, ns=(later, later))
    assert search_index.read(folder) and last_activity(folder) == before


def test_a_search_in_another_space_never_shows_this_space_s_indexed_texts(spaces, space, tmp_path):
    token, folder, ids = space
    index_written(spaces, token, tmp_path)
    stranger = spaces.new_token()
    store = spaces.open(stranger).store
    store.save(SessionNode(title="别人", messages=[{"role": "user", "content": "陌生人的 LRU"}]))
    hits = searched(new_explorer(spaces, tmp_path), stranger, "LRU")[0]
    assert [hit[2] for hit in hits] == ["陌生人的 LRU"]


def test_the_index_leaves_with_the_space(spaces, space, tmp_path):
    token, folder, ids = space
    index_written(spaces, token, tmp_path)
    then = time.time() - 7200
    for entry in [*os.scandir(folder), folder]:        # nothing written for two hours
        os.utime(entry, (then, then), follow_symlinks=False)
    space_id = spaces.open(token).space_id
    assert spaces.remove_idle(older_than_seconds=60) == [space_id]   # idle spaces move to spaces-trash/
    assert not os.path.exists(folder)
    assert not any(search_index.INDEX_DIR in dirs for _, dirs, _ in os.walk(spaces.spaces_dir))


def test_a_purged_session_s_text_leaves_the_index_at_once(spaces, space, tmp_path):
    """Permanent delete (🔥 / 🧹) through the explorer: the index may hold that session's words; it goes too."""
    token, folder, ids = space
    path = index_written(spaces, token, tmp_path)
    explorer = new_explorer(spaces, tmp_path)
    view = explorer.delete(token, explorer.select(token, View(), ids["odd"]).view).view
    leftover = os.path.join(os.path.dirname(path), ".index-killed.part")   # a writer killed with the server
    open(leftover, "w", encoding="utf-8").write("Straße")
    assert ids["odd"] in json.loads(open(path, encoding="utf-8").read())["entries"]
    asked = explorer.ask_purge(token, view, ids["odd"])
    done = explorer.confirm(token, asked.view)
    assert "永久删除" in done.notice, done.notice
    assert not os.path.exists(os.path.dirname(path))   # no index, no unfinished temporary copy either


def test_an_index_with_sessions_no_longer_listed_is_rewritten_without_them(spaces, space, tmp_path):
    token, folder, ids = space
    path = index_written(spaces, token, tmp_path)
    store = spaces.open(token).store
    store.delete(ids["odd"])                            # to the trash (by any path, not only the explorer)
    new_explorer(spaces, tmp_path).refresh(token, View(), "LRU")
    background_writes()
    entries = json.loads(open(path, encoding="utf-8").read())["entries"]
    assert ids["odd"] not in entries and entries.keys() == {s["session_id"] for s in store.list_sessions()} - {ids["broken"]}


def test_a_nearly_full_disk_writes_no_index_and_search_still_answers(spaces, space, tmp_path, monkeypatch):
    token, folder, ids = space
    real = shutil.disk_usage
    monkeypatch.setattr(search_index.shutil, "disk_usage",
                        lambda path: real(path)._replace(free=search_index.MIN_FREE_BYTES))   # less than it needs
    page = new_explorer(spaces, tmp_path).refresh(token, View(), "LRU")
    background_writes()
    assert page.hits and not page.notice.startswith("⚠️")
    assert not os.path.exists(os.path.join(folder, search_index.INDEX_DIR))
