"""list_sessions() reads a small (one-document) file with s11_format.decode_listing: the fields the list shows
are checked as strictly as load() checks them, the messages are not checked one by one (issue 19, item 4: a cold
list at the book's speed). These tests pin both halves: every summary equals the one load() gives, every bad
header is refused the same way, and a file whose only fault is a message is listed, refused by load() and
reported by check()."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s11_format
import s11_tree
from s11_format import CorruptSession, UnsupportedVersion
from s11_session import SessionStore

ID = "abc123"


def fresh_list(folder):
    return SessionStore(folder).list_sessions()


def strict_summary(raw):
    return s11_tree.summary_of(s11_format.decode_session(raw, "p"))


def listing_summary(raw):
    return s11_tree.summary_of(s11_format.decode_listing(raw, "p"))


def outcome(decode, raw):
    try:
        return "ok", decode(raw)
    except UnsupportedVersion as exc:
        return "newer", str(exc)
    except CorruptSession as exc:
        return "corrupt", str(exc)


header_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 8), st.integers(2 ** 63, 2 ** 70),
                          st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6),
                          st.lists(st.text("ab", max_size=3), max_size=3), st.just({}))
messages = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                           "content": st.text(max_size=8)},
                                          optional={"label": st.one_of(st.text(max_size=4), st.integers())}),
                    max_size=4)


@settings(max_examples=300, deadline=None)
@given(fields=st.dictionaries(st.sampled_from(["version", "revision", "title", "parent_id", "created_at",
                                               "fork_point", "created_ns", "source", "workspace", "converged_from",
                                               "labels"]), header_values, max_size=6),
       history=messages, drop_messages=st.booleans())
def test_for_well_formed_messages_the_listing_and_the_full_decode_agree(fields, history, drop_messages):
    doc = {"session_id": ID, **fields} | ({} if drop_messages else {"messages": history})
    raw = json.dumps(doc, ensure_ascii=False).encode()
    strict, listing = outcome(strict_summary, raw), outcome(listing_summary, raw)
    assert strict[0] == listing[0]
    if strict[0] == "ok":
        assert listing[1] == strict[1]


@pytest.mark.parametrize("raw", [
    b'{"session_id": "abc123", "revision": 123456789012345678901234567890, "messages": []}',
    b'{"session_id": "abc123", "created_ns": -12345678901234567890, "messages": []}',
    b'{"session_id": "abc123", "revision": 1, "messages": [], "title": "\\ud800"}',
    b'{"session_id": "abc123", "revision": NaN, "messages": []}',
    b'{"session_id": "abc123", "messages": [], "x": ' + b"[" * 5000 + b"]" * 5000 + b"}",
    b'{"session_id": "abc123", "messages": [], "x": 1e400}',
    b'\xef\xbb\xbf{"session_id": "abc123", "messages": []}',
    b'{"session_id": "abc123", "messages": "not a list"}',
    b'{"session_id": "abc123", "messages": null}',
    b'{"session_id": "../../etc", "messages": []}',
    b'{"session_id": "abc123", "version": 99, "messages": []}',
    b'{"session_id": "abc123", "version": true, "messages": []}',
    b'{"session_id": "abc123", "fork_point": 3, "messages": [{"role": "user", "content": "x"}]}',
    b'[1, 2]',
    b'null',
], ids=["big-int", "big-negative", "lone-surrogate", "nan", "deep", "inf", "bom", "messages-string",
        "messages-null", "hostile-id", "newer", "version-bool", "fork-point-past-end", "array", "null"])
def test_odd_values_are_read_by_the_listing_exactly_as_load_reads_them(raw):
    if raw.count(b"[") > 1000:   # nested past the limit: both refuse it before any parser sees it
        for decode in (listing_summary, strict_summary):
            with pytest.raises(CorruptSession, match="嵌套超过"):
                decode(raw)
        return
    strict, listing = outcome(strict_summary, raw), outcome(listing_summary, raw)
    assert strict[0] == listing[0]
    if strict[0] == "ok":
        assert listing[1] == strict[1]


@pytest.mark.parametrize("bad", [
    "just a string",
    {"content": "no role"},
    {"role": "", "content": "blank role"},
    {"role": "user", "content": 42},
    {"role": "user", "content": ["not a block"]},
])
def test_a_file_whose_only_fault_is_a_message_is_listed_refused_on_load_and_reported(tmp_path, bad):
    store = SessionStore(tmp_path)
    sid = store.create_session("有一条坏消息", [{"role": "user", "content": "好的"}])
    path = store.path_of(sid)
    data = json.loads(open(path, encoding="utf-8").read())
    data["messages"].append(bad)
    data["fork_point"] = 1   # the bad message is the first one the branch added
    evidence = json.dumps(data, ensure_ascii=False, indent=2).encode()
    open(path, "wb").write(evidence)
    [listed] = fresh_list(tmp_path)
    assert (listed["session_id"], listed["message_count"]) == (sid, 2)
    shown = s11_tree.content_text(bad.get("content")) if isinstance(bad, dict) else ""
    assert listed["first_added"] == shown   # shown as text; a message that is not an object shows nothing
    with pytest.raises(CorruptSession, match=sid):
        SessionStore(tmp_path).load(sid)
    assert [(p.kind, p.path) for p in SessionStore(tmp_path).check()] == [("corrupt", path)]
    assert [(p.kind, p.path) for p in store.check()] == [("corrupt", path)]   # the list's cache is not trusted
    assert open(path, "rb").read() == evidence


@pytest.mark.parametrize("levels", [90, 150])
def test_a_deeply_nested_content_at_the_fork_point_is_listed_as_text_or_skipped_past_the_limit(tmp_path, levels):
    store = SessionStore(tmp_path)
    sid = store.create_session("深", [{"role": "user", "content": "a"}])
    path = store.path_of(sid)
    deep = {"role": "user", "content": {"a": 1}}
    for _ in range(levels):
        deep["content"] = {"a": deep["content"]}
    data = json.loads(open(path, encoding="utf-8").read())
    data["messages"].append(deep)
    data["fork_point"] = 1
    open(path, "w", encoding="utf-8").write(json.dumps(data, ensure_ascii=False, indent=2))
    past_the_limit = levels + 4 > s11_format.MAX_FILE_NESTING   # file, messages, message, content's own dicts
    listed = fresh_list(tmp_path)
    if past_the_limit:   # refused before any parser reads it, the same in the list, load() and check()
        assert listed == []
        assert [p.kind for p in SessionStore(tmp_path).check()] == ["corrupt"]
    else:
        assert listed[0]["message_count"] == 2
        assert listed[0]["first_added"].startswith("{'a': {'a':") and listed[0]["first_added"].endswith("…")
    with pytest.raises(CorruptSession, match=sid) as refused:
        SessionStore(tmp_path).load(sid)
    assert ("嵌套超过" in str(refused.value)) == past_the_limit


def test_a_hand_written_file_without_messages_lists_and_loads_as_empty(tmp_path):
    (tmp_path / f"{ID}.json").write_text(json.dumps({"session_id": ID, "title": "手写的"}), "utf-8")
    store = SessionStore(tmp_path)
    [listed] = store.list_sessions()
    assert (listed["title"], listed["message_count"]) == ("手写的", 0)
    assert store.load(ID).messages == [] and store.check() == []
    assert fresh_list(tmp_path) == [listed]


def test_a_wrong_header_field_still_keeps_the_file_out_of_the_list(tmp_path):
    store = SessionStore(tmp_path)
    good = store.create_session("好的")
    bad = store.create_session("坏的")
    path = store.path_of(bad)
    text = open(path, encoding="utf-8").read().replace('"created_ns": ', '"created_ns": "soon", "x": ')
    open(path, "w", encoding="utf-8").write(text)
    assert [s["session_id"] for s in fresh_list(tmp_path)] == [good]
    assert [p.kind for p in SessionStore(tmp_path).check()] == ["corrupt"]


def test_the_chapters_own_files_list_exactly_as_they_load(tmp_path):
    import s11_book
    book = s11_book.SessionStore(str(tmp_path))
    s11_book.demo_tree_branching(book)
    listed = fresh_list(tmp_path)
    assert len(listed) == len(book.list_sessions()) == 3
    for summary in listed:
        raw = (tmp_path / f"{summary['session_id']}.json").read_bytes()
        assert summary == strict_summary(raw)
        assert SessionStore(tmp_path).load(summary["session_id"]).title == summary["title"]
