"""encode_message_lines hands runs of plain messages to orjson (issue 19, item 4): the bytes, the errors and
their wording must be exactly what the json-only encoder it replaced produced, whichever path a message takes."""

import dataclasses
import datetime
import enum
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s11_format
from s11_format import InvalidMessage, encode_message_lines

orjson = pytest.importorskip("orjson")
# orjson.Fragment (3.9.15+) writes its bytes as they are; older orjson has no such type.
FRAGMENTS = [orjson.Fragment(b'{"raw":1}')] if hasattr(orjson, "Fragment") else []


def reference_lines(messages, where="", memo=None, first=1):
    """encode_message_lines before the orjson path, kept verbatim."""
    encode = s11_format._line_encoder()
    lines = []
    for number, message in enumerate(messages, first):
        if memo is not None:
            known = memo.get(id(message))
            if known is not None and known[0] is message:
                lines.append(known[1])
                continue
        try:
            text = encode(message)
        except (RecursionError, TypeError, ValueError):
            s11_format.encode_line(message, where, f"第 {number} 条消息")
            raise
        if s11_format._too_deep(text, s11_format.MAX_NESTING):
            raise InvalidMessage(f"{where}第 {number} 条消息嵌套超过 {s11_format.MAX_NESTING} 层，存下来会读不回来")
        try:
            line = text.encode("utf-8")
        except UnicodeEncodeError:
            line = s11_format._utf8(text)
        if memo is not None:
            memo[id(message)] = (message, line)
        lines.append(line)
    return lines


def outcome(encoder, messages, **kwargs):
    try:
        return ("ok", encoder(messages, **kwargs))
    except Exception as error:   # the type and the wording both count
        return (type(error).__name__, str(error))


class Colour(enum.Enum):
    RED = "red"


class IntColour(enum.IntEnum):
    ONE = 1


class Text(str):
    pass


class Mapping(dict):
    pass


@dataclasses.dataclass
class Point:
    x: int


# Every value where orjson and json differ, or where json refuses and orjson would not.
odd = st.sampled_from([
    1.5, 1e16, 1e-05, -0.0, float("nan"), float("inf"), 2 ** 64, -2 ** 63 - 1, 2 ** 200, "\ud83d", "a\udc00b",
    "\u2028\u2029", "\x00\x1f\x7f", "😀", Colour.RED, IntColour.ONE, Text("sub"), Mapping(a=1),
    uuid.UUID(int=5), datetime.datetime(2026, 1, 1), datetime.date(2026, 1, 1), Point(1), (1, 2), b"bytes",
    {1, 2}, object(), *FRAGMENTS,
])
scalars = st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.text() | odd
keys = st.text() | st.integers() | st.sampled_from([1.5, None, True, Text("k")])
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(keys, inner, max_size=4), max_leaves=20)
plain_values = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 63, 2 ** 64 - 1) | st.text(),
                            lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                            max_leaves=20)


def message(content):
    return {"role": "user", "content": content}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.text(), values, max_size=4), max_size=6))
def test_any_messages_give_the_same_bytes_or_the_same_error_as_the_json_encoder(extras):
    messages = [{"role": "user", "content": "hi", **extra} for extra in extras]
    assert outcome(encode_message_lines, messages, where="会话 s1 的") == \
        outcome(reference_lines, messages, where="会话 s1 的")


@settings(max_examples=150, deadline=None)
@given(st.lists(plain_values, min_size=1, max_size=8))
def test_plain_messages_give_the_same_bytes_and_read_back_equal(contents):
    messages = [message(content) for content in contents]
    lines = encode_message_lines(messages)
    assert lines == reference_lines(messages)
    assert [json.loads(line) for line in lines] == messages


@pytest.mark.parametrize("value", [
    1.5, 1e16, 2 ** 64, "\ud83d", Colour.RED, IntColour.ONE, Text("x"), Mapping(a=1), uuid.UUID(int=5),
    datetime.datetime(2026, 1, 1), Point(1), (1, 2), {"k": {1: "non-string key"}}, *FRAGMENTS,
], ids=repr)
def test_each_value_orjson_writes_differently_or_accepts_where_json_refuses(value):
    messages = [message("a"), message(value), message("b")]
    assert outcome(encode_message_lines, messages) == outcome(reference_lines, messages)


@pytest.mark.parametrize("value", [Colour.RED, uuid.UUID(int=5), datetime.date(2026, 1, 1), Point(1),
                                   b"x", *FRAGMENTS], ids=repr)
def test_a_value_json_cannot_store_is_refused_with_its_message_number(value):
    messages = [message("a"), message("b"), message(value)]
    with pytest.raises(InvalidMessage, match="会话 s1 的第 7 条消息含有无法存成 JSON 的值"):
        encode_message_lines(messages, where="会话 s1 的", first=5)


@pytest.mark.parametrize("depth", [s11_format.MAX_NESTING + 1, 300, 2_000])
def test_too_deep_a_message_is_refused_on_either_path_naming_its_number(depth):
    deep = "leaf"
    for _ in range(depth):
        deep = [deep]
    messages = [message("a"), message(deep)]
    with pytest.raises(InvalidMessage, match=f"第 2 条消息嵌套超过 {s11_format.MAX_NESTING} 层"):
        encode_message_lines(messages)
    assert outcome(encode_message_lines, messages) == outcome(reference_lines, messages)


def test_just_deep_enough_is_kept():
    deep = "leaf"
    for _ in range(s11_format.MAX_NESTING - 1):   # the message object itself is level 1
        deep = [deep]
    lines = encode_message_lines([message(deep)])
    assert lines == reference_lines([message(deep)]) and json.loads(lines[0])["content"] == deep


def test_a_cycle_is_refused_like_json_refuses_it():
    looped = message("x")
    looped["self"] = looped
    messages = [message("a"), looped]
    assert outcome(encode_message_lines, messages) == outcome(reference_lines, messages)
    assert outcome(encode_message_lines, messages)[0] == "InvalidMessage"


class Spy:
    def __init__(self, real):
        self.real, self.calls = real, []

    def dumps(self, value):
        self.calls.append(value)
        return self.real.dumps(value)


def test_plain_runs_go_to_orjson_and_only_the_run_with_a_float_goes_to_json(monkeypatch):
    spy = Spy(orjson)
    monkeypatch.setattr(s11_format, "_orjson", spy)
    run = s11_format._ORJSON_RUN
    messages = [message(f"m{index}") for index in range(3 * run)]
    messages[run + 3] = message(0.5)   # the second run holds a float
    lines = encode_message_lines(messages)
    assert lines == reference_lines(messages)
    sent = {id(value) for value in spy.calls}
    assert [id(m) in sent for m in messages] == [True] * run + [False] * run + [True] * run


def test_without_orjson_every_message_goes_through_json_with_the_same_bytes(monkeypatch):
    messages = [message(text) for text in ["a", "é\u2028", "😀", "\ud83d", "\x00"]] + [message([1, {"k": None}])]
    with_orjson = encode_message_lines(messages)
    monkeypatch.setattr(s11_format, "_orjson", None)
    assert encode_message_lines(messages) == with_orjson == reference_lines(messages)


def test_the_memo_gives_an_object_its_earlier_bytes_and_is_filled_for_the_rest(monkeypatch):
    spy = Spy(orjson)
    monkeypatch.setattr(s11_format, "_orjson", spy)
    shared, fresh = message("shared"), message("fresh")
    memo = {id(shared): (shared, b"EARLIER")}
    lines = encode_message_lines([shared, fresh], memo=memo)
    assert lines == [b"EARLIER", b'{"role":"user","content":"fresh"}']
    assert memo[id(fresh)] == (fresh, lines[1]) and [id(v) for v in spy.calls] == [id(fresh)]
    stale = message("stale")
    memo[id(stale)] = (message("another object that once had this id"), b"WRONG")
    assert encode_message_lines([stale], memo=memo) == [b'{"role":"user","content":"stale"}']


def test_a_run_orjson_refuses_as_a_whole_is_encoded_message_by_message_with_the_same_bytes(monkeypatch):
    spy = Spy(orjson)
    monkeypatch.setattr(s11_format, "_orjson", spy)
    messages = [message(f"m{index}") for index in range(10)] + [message(2 ** 64)] + [message("after")]
    lines = encode_message_lines(messages, memo={})
    assert lines == reference_lines(messages)
    # the whole run first (stopping at the integer orjson cannot write), then each message on its own
    assert [id(v) for v in spy.calls[:11]] == [id(m) for m in messages[:11]]
    assert [id(v) for v in spy.calls[11:]] == [id(m) for m in messages]


def test_a_run_holding_a_message_nested_past_the_limit_goes_to_json_and_is_refused():
    deep = "leaf"
    for _ in range(s11_format.MAX_NESTING):   # one level too many once the message itself counts
        deep = [deep]
    messages = [message("a")] * 5 + [message(deep)]
    assert s11_format._plain_tree(messages, s11_format.MAX_NESTING + 1) is False
    with pytest.raises(InvalidMessage, match="第 6 条消息嵌套超过"):
        encode_message_lines(messages)
