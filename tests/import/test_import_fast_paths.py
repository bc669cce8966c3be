"""The importer's speed tricks give exactly what the plain code gives.

lines.parse_line is json.loads of one line without the per-call overhead: for every byte string it returns
the same value, or raises the same exception (type, message, position), as json.loads does.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s11_import.lines import parse_line

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
