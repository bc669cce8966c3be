"""encode_message_lines writes each message as one compact JSON line, exactly json.dumps's bytes (lone surrogates
as \\udXXX escapes so they read back), or refuses the message naming its number. The standard library is the
oracle: s11_fast.encode, swapped in at s11_format's seam, must give the same bytes and the same refusals
(tests/fast/test_encode_fast.py), so the store's behaviour never depends on what else is installed (issue 40)."""

import dataclasses
import datetime
import enum
import json
import re
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s11_format
from s11_format import InvalidMessage, encode_message_lines


def reference_line(message):
    """What the line must be: the standard library's compact JSON, surrogates escaped."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def outcome(messages):
    try:
        return "ok", encode_message_lines(messages, where="会话 s1 的")
    except InvalidMessage as error:
        return "refused", str(error)


class Colour(enum.Enum):
    RED = "red"


class Text(str):
    pass


@dataclasses.dataclass
class Point:
    x: int


odd = st.sampled_from([1.5, 1e16, 1e-05, -0.0, float("nan"), float("inf"), 2 ** 64, -2 ** 63 - 1, 2 ** 200,
                       "\ud83d", "a\udc00b", "\u2028\u2029", "\x00\x1f\x7f", "😀", Colour.RED, Text("sub"),
                       uuid.UUID(int=5), datetime.date(2026, 1, 1), Point(1), (1, 2), b"bytes", {1, 2}])
scalars = st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.text() | odd
keys = st.text() | st.integers() | st.sampled_from([1.5, None, True])
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
                      max_leaves=20)


def message(content):
    return {"role": "user", "content": content}


@settings(max_examples=100, deadline=None)   # catches each of five encoder mutants (surrogates, escapes,
                                              # separators, default=str, allow_nan) on 5 of 5 seeds
@given(st.lists(st.dictionaries(st.text(), values, max_size=4), max_size=6))
def test_any_messages_give_the_standard_librarys_bytes_or_a_refusal_naming_the_first_bad_one(extras):
    messages = [{"role": "user", "content": "hi", **extra} for extra in extras]
    expected = []
    for number, one in enumerate(messages, 1):
        try:
            expected.append(reference_line(one))
        except (TypeError, ValueError):
            assert outcome(messages) == ("refused", f"会话 s1 的第 {number} 条消息含有无法存成 JSON 的值")
            return
    assert outcome(messages) == ("ok", expected)


@pytest.mark.parametrize("value", [Colour.RED, uuid.UUID(int=5), datetime.date(2026, 1, 1), Point(1), b"x",
                                   {1, 2}, float("nan")],
                         ids=["enum", "uuid", "date", "dataclass", "bytes", "set", "nan-is-fine"])
def test_a_value_json_cannot_store_is_refused_with_its_message_number(value):
    messages = [message("a"), message("b"), message(value)]
    if isinstance(value, float):   # json writes NaN (and reads it back): kept, as the standard library does
        assert encode_message_lines(messages)[2] == b'{"role":"user","content":NaN}'
        return
    with pytest.raises(InvalidMessage, match="会话 s1 的第 7 条消息含有无法存成 JSON 的值"):
        encode_message_lines(messages, where="会话 s1 的", first=5)


@pytest.mark.parametrize("depth", [s11_format.MAX_NESTING, 300, 2_000, 100_000])
def test_too_deep_a_message_is_refused_naming_its_number(depth):
    deep = "leaf"
    for _ in range(depth):
        deep = [deep]
    with pytest.raises(InvalidMessage, match=f"第 2 条消息嵌套超过 {s11_format.MAX_NESTING} 层"):
        encode_message_lines([message("a"), message(deep)])


def test_just_deep_enough_is_kept():
    deep = "leaf"
    for _ in range(s11_format.MAX_NESTING - 2):   # the message is level 1, each list one more: 100 in all
        deep = [deep]
    lines = encode_message_lines([message(deep)])
    assert lines == [reference_line(message(deep))] and json.loads(lines[0])["content"] == deep


def test_a_cycle_is_refused_naming_the_message():
    looped = message("x")
    looped["self"] = looped
    with pytest.raises(InvalidMessage, match="第 2 条消息"):
        encode_message_lines([message("a"), looped])


def test_the_memo_gives_an_object_its_earlier_bytes_and_is_filled_for_the_rest():
    first, second = message("一"), message("二")
    memo = {id(first): (first, b"earlier bytes")}
    assert encode_message_lines([first, second], memo=memo) == [b"earlier bytes", reference_line(second)]
    assert memo[id(second)] == (second, reference_line(second))
    stranger = message("三")   # an id in the memo that belongs to another object is not trusted
    memo[id(stranger)] = (object(), b"wrong")
    assert encode_message_lines([stranger], memo=memo) == [reference_line(stranger)]
