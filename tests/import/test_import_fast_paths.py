"""The importer's speed tricks give exactly what the plain code gives.

lines.parse_line is json.loads of one line without the per-call overhead: for every byte string it returns
the same value, or raises the same exception (type, message, position), as json.loads does.
Converter.bounded copies a one-level dict of short scalars directly: the same copy (key order included),
the same longest original length and the same counters as walking it with the explicit stack.
plan.copy_bytes takes the lines the store already encoded for the nodes it writes: the same figure as encoding
every prefix message again (a re-import writes nothing, so there every message is encoded here).
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s11_format import encode_message_lines
from s11_import import import_file
from s11_import.convert import COMPACT, Converter
from s11_import.lines import parse_line
from s11_session import SessionStore

scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
           | st.text() | st.sampled_from(["\ud83d", "a\udc00b", "\u2028", "\x00"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                      max_leaves=20)
objects = st.dictionaries(st.text(), values, max_size=5)


def outcome(parse, raw: bytes):
    """(kind, detail): the value's repr, or the exception's type, text and position."""
    try:
        value = parse(raw)
    except RecursionError:
        return ("RecursionError",)
    except ValueError as exc:
        return (type(exc).__name__, str(exc), getattr(exc, "pos", None), getattr(exc, "lineno", None),
                getattr(exc, "colno", None), getattr(exc, "start", None), getattr(exc, "reason", None))
    return ("value", repr(value), type(value).__name__)


def same_as_loads(raw: bytes) -> None:
    assert outcome(parse_line, raw) == outcome(json.loads, raw), raw


@settings(max_examples=400, deadline=None)
@given(objects, st.sampled_from([b"", b"\n", b"\r\n", b" \n", b" \t\r\n"]), st.booleans())
def test_an_object_line_parses_as_json_loads_parses_it(obj, end, ascii_only):
    text = json.dumps(obj, ensure_ascii=ascii_only)
    same_as_loads(text.encode("utf-8", "surrogatepass") + end)


@settings(max_examples=400, deadline=None)
@given(objects, st.integers(min_value=0, max_value=400), st.binary(max_size=6))
def test_a_cut_or_damaged_line_fails_as_json_loads_fails(obj, cut, noise):
    raw = json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")
    same_as_loads(raw[:cut] + b"\n")
    same_as_loads(raw[:cut] + noise + raw[cut:] + b"\n")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_arbitrary_bytes_after_a_brace_behave_like_json_loads(tail):
    same_as_loads(b"{" + tail)
    same_as_loads(b'{"a":1}' + tail)


@pytest.mark.parametrize("raw", [
    b'{"a":1}{"b":2}\n',                   # glued objects: Extra data at the second one
    b'{"a":1}  {"b":2}\n',                 # ... after whitespace
    b'{"a":1} x\n',
    b'{"type":"mess{"type":"message"}\n',  # torn line
    b'{"a":"\xff"}\n',                      # not UTF-8
    b'{"a":"\xed\xa0\xbd"}\n',              # an encoded lone surrogate: surrogatepass, like json.loads
    b'{\x00"\x00a\x00"\x00:\x001\x00}\x00',  # a UTF-16-LE looking line goes to json.loads untouched
    b'{', b'{}', b'{}\n', b'{ }', b'{"a"', b'{"a":}', b'{"a":1,}', b'{"a":NaN}', b'{"a":-Infinity}\n',
    b'{"a":1e400}', b'{"a":"\\ud83d"}', b'{"a":"\\u00"}', b'{"a":"\t"}', b'{"a":1}\n\n',
    b"[1,2]\n", b'"text"\n', b"garbage\n", b"\xef\xbb\xbf{}\n", b"  {}\n",
    b'{"v":' + b"[" * 5000 + b"]" * 5000 + b"}\n",   # too deep for the parser: RecursionError both ways
    b'{"v":' + b"[" * 900 + b"1" + b"]" * 900 + b"}\n",
])
def test_edge_lines_behave_like_json_loads(raw):
    same_as_loads(raw)


def copied_bytes_one_by_one(store: SessionStore, report) -> int:
    """The prefix every branch node repeats, each message encoded again as the store encodes one line."""
    total = 0
    for node_id in report.node_ids:
        node = store.load(node_id)
        if node.parent_id and node.fork_point:
            total += sum(len(line) for line in encode_message_lines(node.messages[:node.fork_point]))
    return total


pi_texts = st.text(max_size=12) | st.sampled_from(["\ud83d", "a\udc00b", "缓存 😀", ""])


@st.composite
def pi_trees(draw):
    """A Pi v3 session whose entries hang under random earlier entries (so branches appear anywhere)."""
    entries = []
    for number in range(draw(st.integers(min_value=1, max_value=14))):
        parent = draw(st.sampled_from([None] + [entry["id"] for entry in entries])) if entries else None
        role = draw(st.sampled_from(["user", "assistant", "toolResult"]))
        content = draw(pi_texts) if role == "user" else [{"type": "text", "text": draw(pi_texts)}]
        entries.append({"type": "message", "id": f"e{number}", "parentId": parent,
                        "timestamp": f"2026-01-01T00:00:{number:02d}.000Z",
                        "message": {"role": role, "content": content}})
    return entries


@settings(max_examples=120, deadline=None)
@given(pi_trees())
def test_copy_bytes_from_the_stores_lines_match_encoding_every_prefix_again(tmp_path_factory, entries):
    folder = tmp_path_factory.mktemp("copies")
    path = folder / "s.jsonl"
    header = {"type": "session", "version": 3, "id": "pi-sess", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    path.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in [header] + entries))
    store = SessionStore(folder / "store")
    planned = import_file(path, store, dry_run=True)
    first = import_file(path, store)
    again = import_file(path, store)   # nothing to write: every prefix message is encoded by copy_bytes itself
    assert again.written == 0
    assert planned.copy_bytes == first.copy_bytes == again.copy_bytes == copied_bytes_one_by_one(store, first)


def test_a_branch_under_a_lone_surrogate_imports_and_counts_the_escaped_bytes(tmp_path):
    # A lone surrogate escape in the shared prefix used to raise UnicodeEncodeError while counting the copies.
    path = tmp_path / "s.jsonl"
    lines = [{"type": "session", "version": 3, "id": "pi", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"},
             {"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "content": "hi \ud83d"}},
             {"type": "message", "id": "b", "parentId": "a",
              "message": {"role": "assistant", "content": [{"type": "text", "text": "yo"}]}},
             {"type": "message", "id": "c", "parentId": "b", "message": {"role": "user", "content": "q1"}},
             {"type": "message", "id": "d", "parentId": "b", "message": {"role": "user", "content": "q2"}}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    store = SessionStore(tmp_path / "store")
    report = import_file(path, store)
    assert len(report.node_ids) == 2 and report.copy_bytes == copied_bytes_one_by_one(store, report) > 0
    assert store.load(report.node_ids[1]).messages[0]["content"] == "hi \ud83d"


def test_copy_bytes_are_the_compact_json_of_the_prefix_when_every_text_is_utf8(tmp_path):
    path = tmp_path / "s.jsonl"
    entries = [{"type": "message", "id": f"e{i}", "parentId": f"e{i - 1}" if i else None,
                "message": {"role": "user" if i % 2 == 0 else "assistant", "content": f"缓存 {i} 😀"}}
               for i in range(6)]
    entries.append({"type": "message", "id": "x", "parentId": "e3", "message": {"role": "user", "content": "分叉"}})
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in entries), encoding="utf-8")
    store = SessionStore(tmp_path / "store")
    report = import_file(path, store)
    branch = next(store.load(i) for i in report.node_ids if store.load(i).parent_id)
    expected = sum(len(COMPACT(message).encode("utf-8")) for message in branch.messages[:branch.fork_point])
    assert report.copy_bytes == expected > 0 and os.path.exists(store.path_of(branch.session_id))


def shape(value):
    """The value with every dict turned into its item list, so key order takes part in ==."""
    if isinstance(value, dict):
        return ("dict", [(key, shape(child)) for key, child in value.items()])
    if isinstance(value, list):
        return ("list", [shape(child) for child in value])
    return (type(value).__name__, value)


flat_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
arguments = st.dictionaries(st.text(max_size=4), flat_scalars | st.lists(flat_scalars, max_size=4)
                            | st.dictionaries(st.text(max_size=3), flat_scalars, max_size=3)
                            | st.lists(st.lists(flat_scalars, max_size=2), max_size=2), max_size=6)


@settings(max_examples=500, deadline=None)
@given(arguments, st.integers(min_value=0, max_value=10))
def test_bounded_copies_flat_arguments_exactly_as_the_stack_walk_does(value, limit):
    fast, slow = Converter(), Converter()
    got, longest = fast.bounded(value, limit)
    expected, expected_longest = slow._walk(value, limit)
    assert shape(got) == shape(expected) and longest == expected_longest
    assert (fast.truncated, fast.flattened) == (slow.truncated, slow.flattened)
    assert got is not value and all(got[key] is not value[key] for key in value if isinstance(value[key], list))


# ── re-import: the store's nodes are loaded in one batch and compared pair by pair ────────────────────────
def big_pi_tree(path, changed=None):
    """A Pi v3 session of ~200 KB (its nodes are chunked) with three /tree jumps back into the trunk."""
    header = {"type": "session", "version": 3, "id": "pi-big", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    entries, parent = [], None
    for i in range(600):
        role = ("user", "assistant")[i % 2]
        text = f"第 {i} 轮：" + "日志行 GET /api 200 " * 14 + ("（改过）" if i == changed else "")
        content = text if role == "user" else [{"type": "text", "text": text}]
        entries.append({"type": "message", "id": f"t{i}", "parentId": parent,
                        "timestamp": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}.000Z",
                        "message": {"role": role, "content": content}})
        parent = f"t{i}"
    for branch, at in enumerate((150, 420, 598)):
        parent = f"t{at}"
        for j in range(4):
            entries.append({"type": "message", "id": f"b{branch}-{j}", "parentId": parent,
                            "timestamp": f"2026-01-01T01:00:{branch * 4 + j:02d}.000Z",
                            "message": {"role": ("user", "assistant")[j % 2], "content": f"分支 {branch} 第 {j} 条"}})
            parent = f"b{branch}-{j}"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [header] + entries),
                    encoding="utf-8")
    return path


def test_a_big_branchy_reimport_writes_nothing_and_a_changed_trunk_message_is_written(tmp_path):
    store = SessionStore(tmp_path / "store")
    first = import_file(big_pi_tree(tmp_path / "s.jsonl"), store)
    assert len(first.node_ids) == 4 and list((tmp_path / "store" / ".chunks").iterdir())
    again = import_file(tmp_path / "s.jsonl", store)
    assert again.written == 0 and again.unchanged == 4
    changed = import_file(big_pi_tree(tmp_path / "s.jsonl", changed=500), store)
    # trunk message 501 is in every node that goes past it, and in no node that forks off before it
    reader = SessionStore(tmp_path / "store")
    holding = [node_id for node_id in changed.node_ids
               if "（改过）" in json.dumps(reader.load(node_id).messages, ensure_ascii=False)]
    assert changed.updated == len(holding) >= 1 and changed.unchanged == 4 - len(holding) >= 1
    assert import_file(tmp_path / "s.jsonl", store).written == 0


def test_same_compares_each_pair_of_messages_once_and_keeps_them_alive(monkeypatch):
    from s11_import import pipeline
    from s11_session import SessionNode
    old, new = {"role": "user", "content": "一样"}, {"role": "user", "content": "一样"}
    equal = {}
    assert pipeline._same(SessionNode("a", "t", messages=[old]), SessionNode("a", "t", messages=[new]), equal)
    assert equal == {(id(old), id(new)): (old, new)}   # the objects stay referenced: their ids cannot be reused
    other = {"role": "user", "content": "不一样"}
    assert not pipeline._same(SessionNode("a", "t", messages=[old]), SessionNode("a", "t", messages=[other]), equal)
    assert not pipeline._same(SessionNode("a", "t2", messages=[old]), SessionNode("a", "t", messages=[new]), equal)
    # A recorded pair is trusted only for the very same two objects.
    lookalike = {"role": "user", "content": "变了"}
    equal[(id(old), id(lookalike))] = (old, {"role": "user", "content": "变了之前"})
    assert not pipeline._same(SessionNode("a", "t", messages=[old]), SessionNode("a", "t", messages=[lookalike]), equal)


# Codex's reply pairing counts the raw words first and switches a side to whitespace-collapsed words only when a
# mirror's raw words miss: the pairs must be exactly those of always counting whitespace-collapsed words.
spoken = st.sampled_from(["完成。", "完成。\n", " 完成。", "a b", "a  b", "a\tb\n", "b", "\u3000b", "b\u00a0"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["response", "event"]), spoken), max_size=30))
def test_codex_pairs_mirrored_replies_as_counting_collapsed_whitespace_would(steps):
    from collections import Counter

    from s11_import.codex import _Unpaired
    unpaired = {"response": _Unpaired(), "event": _Unpaired()}
    oracle = {"response": Counter(), "event": Counter()}
    for source, said in steps:
        other = "event" if source == "response" else "response"
        words = " ".join(said.split())
        expected = oracle[other][words] > 0
        if expected:
            oracle[other][words] -= 1
        else:
            oracle[source][words] += 1
        paired = unpaired[other].take((("text",), said))
        if not paired:
            unpaired[source].add((("text",), said))
        assert paired == expected


def test_an_import_checks_and_encodes_each_node_once(tmp_path, monkeypatch):
    """write_costs plans every node (checks its fields, encodes it) to count the bytes; save() then takes that plan
    instead of planning the same node a second time, as long as the node was not changed in between
    (tests/store/test_batch_reuse.py changes it in every way and expects the changed node on disk)."""
    import s11_chunks
    planned = []
    real_plan = s11_chunks.plan

    def counting_plan(payload, **options):
        planned.append(payload["session_id"])
        return real_plan(payload, **options)

    monkeypatch.setattr(s11_chunks, "plan", counting_plan)
    report = import_file(big_pi_tree(tmp_path / "s.jsonl"), SessionStore(tmp_path / "store"))
    assert report.written == len(report.node_ids) == 4
    assert sorted(planned) == sorted(report.node_ids)   # each node once (it was twice: write_costs, then save)
    monkeypatch.setattr(s11_chunks, "plan", real_plan)
    reader = SessionStore(tmp_path / "store")
    dry = import_file(tmp_path / "s.jsonl", SessionStore(tmp_path / "dry"), dry_run=True)
    assert dry.bytes_planned == report.bytes_written > 0
    assert all(reader.load(node_id) is not None for node_id in report.node_ids)
    assert reader.check() == []
