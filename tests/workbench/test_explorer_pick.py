"""Issue 20, the last parts, driven without gradio: picking a node from the branch map (the hidden box the page's
script fills), the browser-side upload refusal's Chinese text, the cached check() and the search texts staying
right after fork / delete / restore / import, and the bounds of those caches."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest

import s11_import
from s11_session import SessionNode, demo_tree_branching
from s11_storage import stat_key
from s11_workbench import explorer as explorer_module
from s11_workbench.explorer import Explorer, View
from s11_workbench.spaces import Limits, Spaces

ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0, max_upload_bytes=2 * 1024 * 1024)
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path / "sessions", limits=ROOMY)


@pytest.fixture
def explorer(spaces, tmp_path) -> Explorer:
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    return Explorer(spaces, export_root=str(tmp_path / "exports"), upload_root=str(uploads))


@pytest.fixture
def student(spaces):
    token = spaces.new_token()
    return token, demo_tree_branching(spaces.open(token).store)


def hit_ids(page) -> set[str]:
    return {row[3] for row in page.hits}


# ── picking a node from the map ─────────────────────────────────────────────────────────────
def test_a_map_pick_selects_the_node_like_the_tree_does(explorer, student):
    token, ids = student
    view = explorer.select(token, View(), ids["main_id"]).view
    picked = explorer.map_pick(token, view, f"{ids['branch_b_id']}#7")
    by_tree = explorer.select(token, view, ids["branch_b_id"])
    assert picked.view.session_id == ids["branch_b_id"] and not picked.notice
    assert picked.details == by_tree.details and picked.chat == by_tree.chat
    assert picked.map_markdown == by_tree.map_markdown and "click n" in picked.map_markdown
    assert picked.area == "map"   # any result is written under the map, where the click was


@pytest.mark.parametrize("value", ["zzzzzzzzzzzz#1", "../../etc/passwd#2", "#3", "", None, 42, "a" * 500,
                                   "<img src=x onerror=alert(1)>#4", "javascript:alert(1)#5"])
def test_a_hostile_or_foreign_map_pick_says_so_in_chinese_and_changes_nothing(explorer, student, value):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    page = explorer.map_pick(token, view, value)
    assert page.notice.startswith("⚠️") and CJK.search(page.notice), page.notice
    assert page.view.session_id == ids["branch_a_id"] and page.area == "map"
    assert "<img" not in page.notice.replace("\\<img", "")   # shown as text, escaped


def test_a_map_pick_of_another_students_node_is_refused(explorer, spaces, student):
    token, ids = student
    other = spaces.new_token()
    page = explorer.map_pick(other, View(), f"{ids['branch_b_id']}#1")
    assert page.notice.startswith("⚠️") and "不在当前空间里" in page.notice
    assert page.view.session_id is None and ids["branch_b_id"] not in json.dumps(page.rows)


def test_a_map_pick_with_a_forged_token_is_refused(explorer, student):
    token, ids = student
    page = explorer.map_pick(token[:-2] + "xx", View(), f"{ids['branch_b_id']}#1")
    assert page.notice.startswith("⚠️") and page.view.session_id is None and page.rows == []


def test_hostile_titles_stay_inside_their_map_labels_and_every_link_is_a_plain_session_link(explorer, spaces):
    token = spaces.new_token()
    store = spaces.open(token).store
    root = SessionNode(title='"]; click n0 href "javascript:alert(1)"', messages=[{"role": "user", "content": "x"}])
    store.save(root)
    child = store.fork(root.session_id, [{"role": "user", "content": 'javascript:alert(2)"] --> n9'}], at=1,
                       title="<a href='javascript:alert(3)'>x</a>")
    page = explorer.map_pick(token, View(), f"{child.session_id}#1")
    source = re.search(r"```mermaid\n(.*?)\n```", page.map_markdown, re.DOTALL).group(1)
    links = [line for line in source.splitlines() if line.strip().startswith("click ")]
    assert links == [f'    click n{i} href "?session={sid}"' for i, sid in enumerate([root.session_id, child.session_id])]
    assert "javascript:" not in "\n".join(line for line in source.splitlines()
                                          if not re.match(r'    n\d+\["', line))


# ── the browser-side upload refusal ─────────────────────────────────────────────────────────
def test_a_too_large_upload_is_refused_in_chinese_naming_the_limit(explorer, student):
    token, ids = student
    view = explorer.select(token, View(), ids["main_id"]).view
    facts = json.dumps({"kind": "size", "name": "大文件 <b>x</b>.jsonl", "size": 5 * 1024 * 1024})
    page = explorer.refuse_upload(token, view, facts + "#1")
    assert page.area == "import" and page.notice.startswith("⚠️")
    assert "2.0 MB" in page.notice and "5.0 MB" in page.notice and "上限" in page.notice, page.notice
    assert "<b>" not in page.notice and "大文件" in page.notice   # the name is inert text
    # the import report says it too, in a plain-text box: the name as it is, with no Markdown escapes
    assert "大文件 <b>x</b>.jsonl" in page.report and "\\" not in page.report
    assert page.report == re.sub(r"\\(.)", r"\1", page.notice)
    assert page.view.session_id == ids["main_id"]


def test_a_wrong_type_upload_is_refused_in_chinese_naming_the_suffixes(explorer, student):
    token, _ = student
    page = explorer.refuse_upload(token, View(), json.dumps({"kind": "type", "name": "notes.txt", "size": 3}) + "#2")
    text = re.sub(r"\\(.)", r"\1", page.notice)
    assert ".jsonl" in text and ".json" in text and "notes.txt" in text
    assert "只能导入" in page.notice
    assert "收到 notes.txt" in page.report   # the report box shows no Markdown escapes (it showed notes\.txt)


@pytest.mark.parametrize("value", ["", None, "not json#1", json.dumps({"kind": "other"}) + "#1", "x" * 5000])
def test_a_garbled_refusal_report_gets_a_chinese_message(explorer, student, value):
    token, _ = student
    page = explorer.refuse_upload(token, View(), value)
    assert page.notice.startswith("⚠️") and CJK.search(page.notice)


def test_a_refusal_report_with_a_forged_token_is_refused(explorer):
    page = explorer.refuse_upload("forged.token", View(), json.dumps({"kind": "type", "name": "a.txt"}) + "#1")
    assert page.notice.startswith("⚠️") and "a.txt" not in page.notice


# ── the cached check() ──────────────────────────────────────────────────────────────────────
class CountingChecks:
    """Counts full store.check() runs (the explorer is expected to avoid them when the files did not change)."""

    def __init__(self, monkeypatch):
        import s11_session
        self.count = 0
        original = s11_session.SessionStore.check

        def check(store):
            self.count += 1
            return original(store)
        monkeypatch.setattr(s11_session.SessionStore, "check", check)


def test_refresh_reuses_the_check_until_a_file_changes(explorer, spaces, student, monkeypatch):
    token, _ = student
    checks = CountingChecks(monkeypatch)
    first = explorer.refresh(token, View())
    again = explorer.refresh(token, View())
    assert checks.count == 1 and first.problems == again.problems == ""
    Path(spaces.open(token).folder, "broken.json").write_text("{not json", encoding="utf-8")
    broken = explorer.refresh(token, View())
    assert checks.count == 2 and "broken.json" in broken.problems.replace("\\", "")


def test_delete_and_restore_patch_the_check_and_match_a_full_one(explorer, spaces, student, monkeypatch):
    token, ids = student
    store = spaces.open(token).store
    explorer.refresh(token, View())
    checks = CountingChecks(monkeypatch)
    deleted = explorer.delete(token, explorer.select(token, View(), ids["main_id"]).view)
    assert checks.count == 0   # patched from the cached one, not a re-read of the whole space
    monkeypatch.undo()
    full = explorer_module._problems_text(store.check())
    assert deleted.problems == full and "missing\\_parent" in deleted.problems
    checks = CountingChecks(monkeypatch)
    restored = explorer.restore(token, deleted.view, ids["main_id"])
    assert checks.count == 0 and restored.problems == ""
    monkeypatch.undo()
    assert explorer_module._problems_text(store.check()) == ""


def test_a_change_beside_the_deleted_file_forces_a_full_check(explorer, spaces, student, monkeypatch):
    token, ids = student
    explorer.refresh(token, View())
    Path(spaces.open(token).folder, "broken.json").write_text("{not json", encoding="utf-8")
    checks = CountingChecks(monkeypatch)
    page = explorer.delete(token, explorer.select(token, View(), ids["branch_a_id"]).view)
    assert checks.count == 1 and "broken.json" in page.problems.replace("\\", "")


def test_the_check_cache_is_bounded(spaces, monkeypatch, tmp_path):
    monkeypatch.setattr(explorer_module, "CHECK_CACHE_SPACES", 3)
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    for _ in range(5):
        explorer.refresh(spaces.new_token(), View())
    assert len(explorer._checks) == 3


# ── search stays right after every write ────────────────────────────────────────────────────
def test_search_finds_what_fork_delete_restore_and_import_changed(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    assert explorer.refresh(token, view, "先加监控").hits == []   # the texts are cached now
    forked = explorer.fork(token, view, 3, "换个思路：先加监控")
    child = forked.view.session_id
    assert hit_ids(explorer.refresh(token, forked.view, "先加监控")) == {child}
    resumed = explorer.resume(token, forked.view, "监控上线后再看告警阈值")
    assert hit_ids(explorer.refresh(token, resumed.view, "告警阈值")) == {child}
    deleted = explorer.delete(token, resumed.view)
    assert explorer.refresh(token, deleted.view, "先加监控").hits == []
    restored = explorer.restore(token, deleted.view, child)
    assert hit_ids(explorer.refresh(token, restored.view, "先加监控")) == {child}
    example = next(path for path in s11_import.list_examples() if "claude" in os.path.basename(path))
    imported = explorer.import_example(token, restored.view, os.path.basename(example))
    assert imported.notice.startswith("📥")
    found = explorer.refresh(token, imported.view, "verify_password")
    new_ids = {s["session_id"] for s in spaces.open(token).store.list_sessions()} - set(ids.values()) - {child}
    assert found.hits and hit_ids(found) <= new_ids


def test_search_ignores_a_file_changed_behind_its_back_only_until_the_file_changes(explorer, spaces, student):
    token, ids = student
    store = spaces.open(token).store
    assert explorer.refresh(token, View(), "独一无二的词").hits == []
    node = store.load(ids["branch_a_id"])
    node.messages.append({"role": "user", "content": "独一无二的词"})
    store.save(node)   # another tab (or the 8.11 tab) wrote the file
    assert hit_ids(explorer.refresh(token, View(), "独一无二的词")) == {ids["branch_a_id"]}


def test_search_sees_a_hand_edit_that_keeps_the_revision_and_the_length(explorer, spaces, student):
    """Issue 40 item 2: the search text was cached on the summary alone (revision, length, title...), so an edit by
    hand that kept all of them left search returning the old words. The cache is keyed on the file's stat too."""
    token, ids = student
    path = Path(spaces.open(token).store.path_of(ids["branch_a_id"]))
    an_hour_ago = time.time_ns() - 3600 * 10**9            # an old file: its cache entry is trusted
    os.utime(path, ns=(an_hour_ago, an_hour_ago))
    assert hit_ids(explorer.refresh(token, View(), "LRU")) == {ids["branch_a_id"]}
    raw = path.read_text(encoding="utf-8")
    assert "LRU" in raw
    path.write_text(raw.replace("LRU", "FIF"), encoding="utf-8")    # same length, same revision, same title
    os.utime(path, ns=(an_hour_ago, an_hour_ago + 1))          # the only trace: the modification time
    assert explorer.refresh(token, View(), "LRU").hits == []
    assert hit_ids(explorer.refresh(token, View(), "FIF")) == {ids["branch_a_id"]}


def test_search_sees_an_edit_in_the_same_clock_tick_as_the_save_it_replaced(explorer, spaces, student):
    """The racy rule (bounded.py): a file cached less than RACY_NS after it was written is not trusted, so an edit
    that keeps its size and even its modification time (a coarse clock) is still read on the next search."""
    token, ids = student
    path = Path(spaces.open(token).store.path_of(ids["branch_a_id"]))
    stamp = path.stat()
    assert hit_ids(explorer.refresh(token, View(), "LRU")) == {ids["branch_a_id"]}
    path.write_text(path.read_text(encoding="utf-8").replace("LRU", "FIF"), encoding="utf-8")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))   # same inode, size and time: only the bytes differ
    assert explorer.refresh(token, View(), "LRU").hits == []


class SessionFileStats:
    """Counts os.lstat / os.stat calls on the space's session files (the store's listing and anyone else)."""

    def __init__(self, monkeypatch, folder: str):
        self.calls: dict[str, int] = {}
        for name in ("lstat", "stat"):
            original = getattr(os, name)

            def counting(path, *args, original=original, **kwargs):
                text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else ""
                if os.path.dirname(text) == folder and text.endswith(".json"):
                    self.calls[os.path.basename(text)] = self.calls.get(os.path.basename(text), 0) + 1
                return original(path, *args, **kwargs)
            monkeypatch.setattr(os, name, counting)


def aged(folder: str) -> None:
    """Every session file an hour old: past the racy window, so the search cache trusts what it read."""
    then = time.time_ns() - 3600 * 10**9
    for path in Path(folder).glob("*.json"):
        os.utime(path, ns=(then, then))


def test_a_search_stats_each_session_file_once_the_listing_does_it(explorer, spaces, student, monkeypatch):
    """Issue 40 budget: the search texts are keyed on the stamp the store's listing has just checked
    (store.stamp_of), not on a second lstat of every file."""
    token, ids = student
    folder = spaces.open(token).store.storage_dir
    aged(folder)
    assert hit_ids(explorer.refresh(token, View(), "LRU")) == {ids["branch_a_id"]}   # the texts are cached now
    stats = SessionFileStats(monkeypatch, folder)
    assert hit_ids(explorer.refresh(token, View(), "LRU")) == {ids["branch_a_id"]}
    assert stats.calls == {f"{ids[key]}.json": 1 for key in ("main_id", "branch_a_id", "branch_b_id")}


def test_the_store_hands_out_the_stamp_its_listing_just_checked(spaces, student):
    """store.stamp_of(path): the summary cache's key, which list_sessions() checks against the file every time —
    after a hand edit that keeps the revision, the length and even the title, it is the file's new stat."""
    token, ids = student
    store = spaces.open(token).store
    path = store.path_of(ids["branch_a_id"])
    store.list_sessions()
    before = store.stamp_of(path)
    assert before == stat_key(os.lstat(path))
    raw = Path(path).read_text(encoding="utf-8")
    Path(path).write_text(raw.replace("LRU", "FIF"), encoding="utf-8")   # same length, same revision
    os.utime(path, ns=(before[2] - 10**9, before[2] - 10**9))            # even an older modification time
    store.list_sessions()
    assert store.stamp_of(path) == stat_key(os.lstat(path)) != before
    node = store.load(ids["branch_b_id"])
    node.messages.append({"role": "user", "content": "再来一轮"})
    store.save(node)                                                     # a save: a new file, a new stamp
    assert store.stamp_of(store.path_of(ids["branch_b_id"])) == stat_key(os.lstat(store.path_of(ids["branch_b_id"])))
    store.delete(ids["branch_b_id"])
    assert store.stamp_of(store.path_of(ids["branch_b_id"])) is None     # deleted: no stamp to hand out
    assert store.stamp_of(store.path_of("000000000000")) is None         # never seen


def test_text_read_after_its_stamp_never_comes_back_as_old_text(explorer, spaces, student, monkeypatch):
    """The stamp is taken (by the listing) before the file is read, so a file changed while it is read is cached
    under the older stamp: the next search sees a new stamp and reads the new words. Taking the stamp after the
    read would pair the new stamp with the old words for good."""
    token, ids = student
    store = spaces.open(token).store
    aged(store.storage_dir)
    path = Path(store.path_of(ids["branch_a_id"]))
    original = type(store).load

    def load_then_edit(self, session_id):
        node = original(self, session_id)
        if session_id == ids["branch_a_id"] and "LRU" in path.read_text(encoding="utf-8"):
            stamp = path.stat()   # a hand edit just after the read: same length, one nanosecond later
            path.write_text(path.read_text(encoding="utf-8").replace("LRU", "FIF"), encoding="utf-8")
            os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1))
        return node
    monkeypatch.setattr(type(store), "load", load_then_edit)
    assert hit_ids(explorer.refresh(token, View(), "LRU")) == {ids["branch_a_id"]}   # read just before the edit
    assert explorer.refresh(token, View(), "LRU").hits == []
    assert hit_ids(explorer.refresh(token, View(), "FIF")) == {ids["branch_a_id"]}


def test_a_search_page_draws_only_the_rows_it_shows_and_the_plain_list_once(spaces, tmp_path, student, monkeypatch):
    """The unfiltered list (every tree, with prefixes) is drawn the first time a page without a search shows it,
    then reused while nothing changes; a page with a search shows its hits' rows and never draws it."""
    token, ids = student
    expected = Explorer(spaces, export_root=str(tmp_path / "other")).refresh(token, View())
    drawn = []
    original = explorer_module._list_rows

    def counting(summaries, query, forest=None):
        drawn.append(query)
        return original(summaries, query, forest)
    monkeypatch.setattr(explorer_module, "_list_rows", counting)
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    searched = explorer.refresh(token, View(), "cache_store")   # in branch A's first added message
    assert drawn == ["cache_store"] and [row[1] for row in searched.rows] == [ids["branch_a_id"]]
    plain = explorer.refresh(token, View())
    again = explorer.refresh(token, View())
    assert drawn == ["cache_store", ""]                      # drawn once, then reused
    assert plain.rows == again.rows == expected.rows and plain.list_note == expected.list_note


def test_the_background_warm_up_fills_the_search_cache(explorer, spaces, student, monkeypatch):
    monkeypatch.setattr(explorer_module, "WARM_MIN_SESSIONS", 3)
    token, ids = student
    explorer.select(token, View(), ids["main_id"])   # a render without a query starts the warm-up
    for thread in [t for t in threading.enumerate() if t.name == "s11x-warm"]:
        thread.join(timeout=10)
    folder = spaces.open(token).store.storage_dir
    cached = {os.path.basename(path) for path in explorer._texts if path.startswith(folder)}
    assert cached == {f"{ids[key]}.json" for key in ("main_id", "branch_a_id", "branch_b_id")}
    assert explorer._warming == set()


def test_small_spaces_are_not_read_ahead_and_their_search_still_finds_everything(explorer, spaces, student):
    token, ids = student                                # three sessions: far below WARM_MIN_SESSIONS
    assert explorer_module.WARM_MIN_SESSIONS > 3
    explorer.select(token, View(), ids["main_id"])
    folder = spaces.open(token).store.storage_dir
    assert folder not in explorer._warmed and folder not in explorer._warming
    assert not [path for path in explorer._texts if path.startswith(folder)]
    branch_b = spaces.open(token).store.load(ids["branch_b_id"])
    word = branch_b.messages[-1]["content"].split()[0]
    assert ids["branch_b_id"] in {hit[3] for hit in explorer.refresh(token, View(), word).hits}


def test_the_search_cache_stays_within_its_bound(spaces, monkeypatch, tmp_path):
    monkeypatch.setattr(explorer_module, "TEXT_CACHE_CHARS", 2_000)
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    token = spaces.new_token()
    store = spaces.open(token).store
    for i in range(20):
        store.create_session(f"s{i}", [{"role": "user", "content": f"词{i} " + "字" * 300}])
    page = explorer.refresh(token, View(), "词1")
    assert page.hits and 0 < explorer._texts.total_size <= 2_000
    assert explorer._texts.total_size == sum(len(text) for _, texts in explorer._texts.items() for _, _, text in texts)


def test_full_text_search_ignores_case_and_keeps_one_copy_of_lowercase_text(explorer, spaces):
    token = spaces.new_token()
    store = spaces.open(token).store
    sid = store.create_session("case", [{"role": "user", "content": "Call WeakValueDictionary Here"},
                                        {"role": "assistant", "content": "只有中文的回答"}])
    page = explorer.refresh(token, View(), "weakvaluedictionary")
    assert [hit[3] for hit in page.hits] == [sid]
    assert "WeakValueDictionary" in page.hits[0][2]          # the context keeps the original case
    assert [hit[3] for hit in explorer.refresh(token, View(), "中文").hits] == [sid]
    [texts] = [texts for path, texts in explorer._texts.items() if path.endswith(f"{sid}.json")]
    (_, mixed_folded, mixed), (_, plain_folded, plain) = texts
    assert mixed_folded == mixed.casefold() and mixed_folded is not mixed
    assert plain_folded is plain                               # nothing to fold: one object, not two


def test_an_import_into_a_full_space_is_refused_in_chinese_and_writes_nothing(tmp_path):
    full = Spaces(tmp_path / "full", limits=Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0,
                                                   max_sessions=3))
    uploads = tmp_path / "up"
    uploads.mkdir()
    explorer = Explorer(full, export_root=str(tmp_path / "exports"), upload_root=str(uploads))
    token = full.new_token()
    demo_tree_branching(full.open(token).store)              # three sessions: the space is full
    folder = full.open(token).folder
    before = sorted(os.listdir(folder))
    page = explorer.import_example(token, View(), "claude-code-rate-limit.jsonl")
    assert page.notice.startswith("⚠️") and "上限" in page.notice and page.area == "import", page.notice
    assert sorted(os.listdir(folder)) == before
