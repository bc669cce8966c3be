"""The optional orjson fast path in s11_format: every byte it writes and every value it reads is exactly what
the standard library would write or read; everything it cannot do identically falls back to json."""

import datetime
import enum
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s11_format
from s11_format import CorruptSession, InvalidMessage, encode_session, parse_json

pytestmark = pytest.mark.skipif(s11_format._orjson is None, reason="orjson is not installed")

# JSON-like values, including every case where orjson and json differ: floats, ints beyond 64 bits,
# lone surrogates, non-string keys, tuples, control characters and non-BMP text.
scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-2**70, max_value=2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text() | st.sampled_from(["\ud83d", "a\udc00b"]))
keys = st.text() | st.integers() | st.booleans()
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.tuples(inner)
                      | st.dictionaries(keys, inner, max_size=4), max_leaves=25)


def stdlib_encode(payload):
    fast, s11_format._orjson = s11_format._orjson, None
    try:
        return encode_session(payload, "s1")
    finally:
        s11_format._orjson = fast


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), values, max_size=5))
def test_encoding_is_byte_identical_to_the_standard_library(extra):
    payload = {"version": 3, "session_id": "s1", "messages": [{"role": "user", "content": "hi"}], **extra}
    try:
        expected = stdlib_encode(payload)
    except InvalidMessage as exc:
        with pytest.raises(InvalidMessage) as raised:
            encode_session(payload, "s1")
        assert str(raised.value) == str(exc)
        return
    assert encode_session(payload, "s1") == expected


@settings(max_examples=200, deadline=None)
@given(values)
def test_decoding_gives_the_same_values_and_types_as_the_standard_library(value):
    raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        expected = json.loads(raw.decode("utf-8"))
    except ValueError:   # a lone surrogate written raw is not UTF-8: both refuse
        with pytest.raises(CorruptSession):
            parse_json(raw, "f.json")
        return
    got = parse_json(raw, "f.json")
    assert got == expected or (got != got and expected != expected)   # NaN is not equal to itself
    assert repr(got) == repr(expected)                                 # same types: an int stays an int


def test_the_fast_path_is_taken_for_ordinary_sessions():
    payload = {"version": 3, "session_id": "s1", "title": "修复 😀", "revision": 2,
               "messages": [{"role": "user", "content": "a\nb\t\"c\"\\ \x00\x1f\x7f\u2028"},
                            {"role": "assistant", "content": [{"type": "text", "text": "x"}], "n": None}]}
    assert s11_format._orjson_indented(payload) is not None
    assert s11_format._orjson_indented(payload) == json.dumps(payload, ensure_ascii=False, indent=2).encode()


@pytest.mark.parametrize("odd", [1.5, 2**64, "\ud83d", (1, 2), datetime.date(2026, 1, 1), uuid.uuid4(),
                                 enum.Enum("E", "A").A, type("S", (str,), {})("x"), {1: "int key"}])
def test_values_orjson_would_write_differently_are_left_to_json(odd):
    assert s11_format._orjson_indented({"session_id": "s1", "messages": [{"role": "user", "content": odd}]}) is None


@pytest.mark.parametrize("raw", [b"123456789012345678901", b"-9223372036854775809", b"[1e400]", b"NaN",
                                 b'"\\ud83d"', b"[" + b"1" * 19 + b"]"])
def test_numbers_and_escapes_orjson_reads_differently_come_out_as_json_reads_them(raw):
    expected = json.loads(raw.decode())
    got = parse_json(raw, "f.json")
    assert repr(got) == repr(expected)


@pytest.mark.parametrize("raw", [b"\xef\xbb\xbf{}", b'{"a":1,}', b"[1,2] x", b"\xff", b'{"a":"\x01"}'])
def test_bad_files_are_reported_with_the_standard_librarys_position(raw):
    with pytest.raises(CorruptSession) as raised:
        parse_json(raw, "f.json")
    assert "f.json" in str(raised.value)


@pytest.mark.parametrize("depth", [150, 250, 5000, 100_000])
def test_nesting_json_cannot_read_is_still_refused_and_what_it_can_read_is_read(depth):
    raw = b'{"session_id": "odd", "x": ' + b"[" * depth + b"]" * depth + b"}"
    try:
        expected = json.loads(raw.decode())
    except RecursionError:
        with pytest.raises(CorruptSession):
            parse_json(raw, "f.json")
    else:
        assert parse_json(raw, "f.json") == expected


@pytest.mark.parametrize("number", [2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**19, -2**63, -2**63 - 1, -10**19, 10**25])
def test_integers_at_the_64_bit_edges_stay_exact_integers(number):
    raw = json.dumps({"created_ns": number, "n": [number]}).encode()
    got = parse_json(raw, "f.json")
    assert got == {"created_ns": number, "n": [number]} and type(got["created_ns"]) is int


def test_an_ordinary_session_file_is_read_by_the_fast_path(tmp_path, monkeypatch):
    from s11_session import SessionStore
    store = SessionStore(str(tmp_path))
    sid = store.create_session("t", [{"role": "user", "content": "hi"}])
    read = []
    real = s11_format._orjson

    class Spy:
        JSONDecodeError = real.JSONDecodeError
        dumps, OPT_INDENT_2 = real.dumps, real.OPT_INDENT_2

        @staticmethod
        def loads(raw):
            read.append(len(raw))
            return real.loads(raw)
    monkeypatch.setattr(s11_format, "_orjson", Spy)
    assert SessionStore(str(tmp_path)).load(sid).messages == [{"role": "user", "content": "hi"}]
    assert read, "the 19-digit created_ns must not push every file to the slow path"


# Message lines (version 4 chunks and tails): one compact JSON object per line, read by orjson when every
# message holds only scalars. The values must be exactly those parse_json reads from the joined document.
flat_messages = st.lists(st.dictionaries(st.text(max_size=4) | st.sampled_from(["role", "content", "{", "["]),
                                         scalars | st.sampled_from(["{", "[", "a{b", "]"]), max_size=4), max_size=6)
any_messages = st.lists(st.dictionaries(st.text(max_size=4), values, max_size=3), max_size=4)


def message_lines(messages):
    return b"".join(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
                    + b"\n" for message in messages)


def joined_document(lines):
    return b"[" + lines[:-1].replace(b"\n", b",") + b"]" if lines else b"[]"


@settings(max_examples=400, deadline=None)
@given(flat_messages | any_messages)
def test_message_lines_read_exactly_what_the_joined_document_reads(messages):
    lines = message_lines(messages)
    try:
        expected = parse_json(joined_document(lines), "f.json")
    except CorruptSession:
        with pytest.raises(CorruptSession):
            s11_format.parse_json_lines(lines, len(messages), "f.json")
        return
    got = s11_format.parse_json_lines(lines, len(messages), "f.json")
    assert repr(got) == repr(expected)   # same values and types (an int stays an int, NaN stays NaN)


def test_flat_message_lines_take_the_orjson_path_and_nested_or_odd_ones_do_not(monkeypatch):
    fallbacks = []
    real = s11_format.parse_json
    monkeypatch.setattr(s11_format, "parse_json", lambda raw, path, *a: fallbacks.append(raw) or real(raw, path, *a))
    flat = [{"role": "user", "content": f"第 {i} 轮：x = -1.5 {{ }}", "n": i, "ok": True, "x": None,
             "big": 2 ** 64 - 1} for i in range(300)]
    assert s11_format.parse_json_lines(message_lines(flat), 300, "f.json") == flat and fallbacks == []
    # Brackets inside the text (log lines, "[1]" footnotes, a JSON snippet with spaces) keep the orjson path.
    logs = [{"role": "tool", "content": f"[{i:06d}] GET /api 200 [ok] {{'a': [1]}} \": [x]"} for i in range(300)]
    assert s11_format.parse_json_lines(message_lines(logs), 300, "f.json") == logs and fallbacks == []
    # A list, a nested object, a float and an integer past 64 bits (orjson reads it as a float) each go to json.
    for messages in ([{"role": "user", "content": [{"type": "text", "text": "x"}]}] * 300,
                     [{"role": "user", "content": "x", "meta": {"a": 1}}] * 300,
                     [{"role": "user", "content": "x", "t": 0.1}] * 300,
                     [{"role": "user", "content": "x", "n": 2 ** 70}] * 300,
                     [{"role": "user", "content": "x", "n": -2 ** 63 - 1}] * 300):
        fallbacks.clear()
        got = s11_format.parse_json_lines(message_lines(messages), 300, "f.json")
        assert repr(got) == repr(messages) and len(fallbacks) == 1


def test_the_content_block_guard_only_saves_time_and_never_decides_the_values(monkeypatch):
    # The guard looks for '":[' / '":{' in the first _GUARD_BYTES only. Blocks that first appear later still read
    # exactly as json reads them (orjson's values fail the flat check); blocks at the start skip orjson altogether.
    padding = [{"role": "user", "content": "日志 " * 200 + str(i)} for i in range(200)]
    late = padding + [{"role": "assistant", "content": [{"type": "text", "text": "块"}], "meta": {"n": 2 ** 70}}]
    lines = message_lines(late)
    assert lines.find(b'":[') > s11_format._GUARD_BYTES
    got = s11_format.parse_json_lines(lines, len(late), "f.json")
    assert repr(got) == repr(late) and type(got[-1]["meta"]["n"]) is int
    calls = []
    real = s11_format._orjson.loads
    monkeypatch.setattr(s11_format._orjson, "loads", lambda raw: calls.append(len(raw)) or real(raw), raising=False)
    early = list(reversed(late))
    assert repr(s11_format.parse_json_lines(message_lines(early), len(early), "f.json")) == repr(early)
    assert calls == []   # parse_json saw too many brackets for orjson and went straight to json


def test_a_deeply_nested_object_without_brackets_is_refused_as_json_refuses_it():
    deep = b'{"a":' * 5_000 + b"1" + b"}" * 5_000 + b"\n"
    with pytest.raises(CorruptSession):
        s11_format.parse_json_lines(deep * 2, 2, "f.json")


@pytest.mark.parametrize("depth", [1_000, 5_000])   # orjson reads 1,000 levels; json cannot
def test_deep_message_lines_are_refused_as_the_standard_library_refuses_them(depth):
    deep = b'{"a":' + b"[" * depth + b"]" * depth + b"}\n"
    with pytest.raises(CorruptSession):
        s11_format.parse_json_lines(deep * 3, 3, "f.json")
