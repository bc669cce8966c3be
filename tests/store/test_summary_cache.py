"""The store's one summary cache (SessionStore._summary_cache): what list_sessions() hands out is the caller's own.

The cache keeps one record per session file for the life of the store object (a class run keeps thousands), so it
keeps the summary's values only; every summary handed out is built fresh from them.
"""

from __future__ import annotations

from s11_session import SessionStore, demo_tree_branching


def labelled_store(tmp_path):
    store = SessionStore(tmp_path, durable=False)
    ids = demo_tree_branching(store)
    node = store.load(ids["branch_b_id"])
    node.messages[-1]["label"] = "定案"
    store.save(node)
    return store, ids["branch_b_id"]


def by_id(summaries):
    return {summary["session_id"]: summary for summary in summaries}


def test_changing_a_listed_summary_leaves_the_next_listing_as_the_files_say(tmp_path):
    store, sid = labelled_store(tmp_path)
    first = by_id(store.list_sessions())
    first[sid]["labels"].append([1, "不在文件里"])   # a caller that edits what it was given
    first[sid]["converged_from"].append("abc")
    first[sid]["title"] = "改过"
    again = by_id(store.list_sessions())[sid]
    assert again["labels"] == [[9, "定案"]]
    assert again["converged_from"] == []
    assert again["title"] == "修复登录服务内存泄漏 · 分支"
    assert by_id(store.list_sessions()) == by_id(SessionStore(tmp_path, durable=False).list_sessions())


def test_a_cached_listing_gives_the_same_summaries_and_types_as_a_fresh_read(tmp_path):
    store, _ = labelled_store(tmp_path)
    store.list_sessions()   # fills the cache
    cached, fresh = store.list_sessions(), SessionStore(tmp_path, durable=False).list_sessions()
    assert cached == fresh
    assert [list(summary) for summary in cached] == [list(summary) for summary in fresh]   # same keys, same order
    for summary in cached:
        assert type(summary["labels"]) is list and type(summary["converged_from"]) is list
