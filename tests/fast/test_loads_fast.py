"""s11_fast.loads against its oracle, the plain s11_import.lines.parse_line (itself json.loads): for any line of bytes,
the same value (types too: int vs float, -0.0, dict key order) or the same exception (type and message), so an import
skips the same lines with the same Chinese reasons whether orjson reads, S11_PLAIN=1 is set, or orjson is missing.

The accelerated parser is built directly from the plain one with accelerate(), so a run under S11_PLAIN=1 still
tests fast vs plain. ODD lists the lines where orjson and json differ (lone surrogates, NaN, 1e400, ints past 64 bits,
BOM, deep nesting …): each must come out as json's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from s11_fast import loads as fast
from s11_import import lines

CODE = Path(__file__).resolve().parents[2] / "code"
SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"

PLAIN = getattr(lines.parse_line, "__wrapped__", lines.parse_line)
FAST = fast.accelerate(PLAIN)


def typed(value):
    """A value with every type spelled out: 1 and 1.0 and True differ, -0.0 and 0.0 differ, dict key order counts."""
    kind = type(value)
    if kind is dict:
        return "dict", tuple((type(key).__name__, key, typed(item)) for key, item in value.items())
    if kind is list:
        return "list", tuple(typed(item) for item in value)
    if kind is float:
        return "float", value.hex() if value == value else "nan"
    return kind.__name__, value


def outcome(parse, raw: bytes):
    try:
        return "ok", typed(parse(raw))
    except Exception as exc:   # the exact exception is the contract: read_lines turns its type and text into the reason
        return "refused", type(exc), str(exc)


def same(raw: bytes) -> None:
    expected = outcome(PLAIN, raw)
    assert outcome(FAST, raw) == expected
    assert outcome(json.loads, raw) == expected   # the plain parse_line is json.loads


# ── what orjson and json read differently: each must come out as json's ─────────────────────────────
ODD = [
    b'{"a":1,"b":2,"a":3}', b'{"a":-0}', b'{"a":-0.0}', b'{"a":0.0}', b'{"a":1.5}', b'{"a":1e5}', b'{"a":1E-5}',
    b'{"a":1e400}', b'{"a":-1e400}', b'{"a":1e-400}', b'{"a":NaN}', b'{"a":Infinity}', b'{"a":-Infinity}',
    b'{"a":nan}', b'{"a":9223372036854775807}', b'{"a":9223372036854775808}', b'{"a":-9223372036854775808}',
    b'{"a":-9223372036854775809}', b'{"a":18446744073709551615}', b'{"a":18446744073709551616}',
    b'{"a":[100000000000000000000000000000]}', b'{"a":-0e0}', b'{"a":01}', b'{"a":+1}', b'{"a":1.}', b'{"a":.5}',
    b'{"a":"\\ud800"}', b'{"a":"\\udc00\\ud800"}', b'{"a":"\\ud83d\\ude00"}', b'{"a":"\\ud83dx"}', b'{"\\ud800":1}',
    b'{"a":"\xed\xa0\x80"}', b'{"a":"\xff"}', b'{"a":"\xc0\x80"}', b'{"a":"\xf4\x90\x80\x80"}', b'{"a":"\xe2\x82"}',
    b'{"a":"\xef\xbf\xbf\xef\xbf\xbe"}', b'{"a":"\x7f\xe2\x80\xa8"}', b'\xef\xbb\xbf{"a":1}', b'{\x00"a":1}',
    b'{"a":1}', b'{"a":1}\n', b'{"a":1} \t\r\n', b'{"a":1}\x0c', b'{"a":1}\x0b', b'{"a":1}\x00', b'{"a":1}{"b":2}',
    b'{"a":1} x', b'{"a":1}]', b'{\x0c"a":1}', b'{\r\n\t "a" :\n1 }', b'{"a":1,}', b'{"a":[1,]}', b'{"a"}',
    b"{'a':1}", b'{"a":true,"b":false,"c":null}', b'{"a":True}', b'{"a":nul}', b'{"a":"\\u0000\\/\\b\\f"}',
    b'{"a":"\\x41"}', b'{"a":"\\u12"}', b'{"a":"\\uD83D\\uDE00"}', b'{', b'{"a":', b'{"a":"', b'', b'\n', b' ',
    b'[1,2]', b'"text"', b'123', b'null', b' {"a":1}', b'{"a":{"b":{"c":[[[{}]]]}}}', b'{"":""}',
    "{\"中文\":\"缓存 😀\"}".encode(),
] + [b'{"a":"' + bytes([byte]) + b'"}' for byte in range(32)]


@pytest.mark.parametrize("number", range(len(ODD)), ids=lambda number: f"odd-{number}")
def test_each_line_where_the_two_parsers_differ_comes_out_as_json_reads_it(number):
    same(ODD[number])


@pytest.mark.parametrize("depth", [1, 2, 50, 99, 100, 101, 102, 500, 900, 1023, 1024, 1025, 2000, 5000, 100_000])
def test_nesting_at_any_depth_comes_out_as_the_plain_parser_reads_it(depth):
    """json reads about 1000 levels (its recursion limit less the stack), orjson 1024: past 100 the plain one reads."""
    for raw in (b'{"a":' + b"[" * depth + b"]" * depth + b"}\n", b'{"a":' * depth + b"1" + b"}" * depth):
        plain, quick = outcome_of_depth(PLAIN, raw), outcome_of_depth(FAST, raw)
        assert quick == plain


def test_at_jsons_own_recursion_limit_both_parsers_stop_at_the_same_level():
    """json's limit moves with the stack (each frame above it costs a level). The fast parser hands a deep line back
    with the plain body in its own frame, so at the exact level where the plain parser starts to refuse, called from
    the same place, the fast one refuses too, and one level less is read by both."""
    def line(depth: int) -> bytes:
        return b'{"a":' + b"[" * depth + b"]" * depth + b"}"

    refused = next(depth for depth in range(500, 5000) if outcome_of_depth(PLAIN, line(depth)) == "RecursionError")
    for depth in range(refused - 3, refused + 3):
        assert outcome_of_depth(FAST, line(depth)) == outcome_of_depth(PLAIN, line(depth)), depth


def outcome_of_depth(parse, raw: bytes):
    """Deep values are compared by their shape (typed() would recurse as deep as they are)."""
    try:
        value = parse(raw)
    except RecursionError:
        return "RecursionError"
    depth = 0
    while isinstance(value, (dict, list)) and value:
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
        depth += 1
    return "ok", depth, typed(value)


def test_a_deep_line_is_a_skipped_line_whichever_parser_reads(tmp_path):
    """The import's outcome, not only the parser's: a 5,000-deep line is skipped as too deep, a 500-deep one is read."""
    from s11_import.transcript import Transcript
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b'{"a":' + b"[" * 5000 + b"]" * 5000 + b"}\n" + b'{"a":' + b"[" * 500 + b"]" * 500 + b"}\n")
    taken = {}
    for name, parse in (("plain", PLAIN), ("fast", FAST)):
        t, seen = Transcript(str(path)), []
        before, lines.parse_line = lines.parse_line, parse
        try:
            lines.read_lines(str(path), t, 10 ** 6, lambda t, obj, line, sub, seen=seen: seen.append(line), lambda t, doc: None)
        finally:
            lines.parse_line = before
        taken[name] = (t.skipped, seen)
    assert taken["plain"] == taken["fast"] == ([(1, "JSON 嵌套太深")], [2])


def gemini_document(messages_json: str) -> bytes:
    return ('{\n  "sessionId": "s1",\n  "projectHash": "p",\n  "startTime": "2026-01-01T00:00:00Z",\n'
            f'  "messages": {messages_json}\n}}\n').encode()


GOOD_MESSAGES = json.dumps([{"id": "u1", "type": "user", "content": "你好"},
                            {"id": "g1", "type": "gemini", "content": "好的", "tokens": {"input": 3, "output": 2}}],
                           ensure_ascii=False, indent=2)
DOCUMENTS = {
    "plain": gemini_document(GOOD_MESSAGES),
    "floats": gemini_document(GOOD_MESSAGES.replace('"input": 3', '"input": 3.5')),
    "big int": gemini_document(GOOD_MESSAGES.replace('"input": 3', '"input": 18446744073709551616')),
    "lone surrogate": gemini_document(GOOD_MESSAGES.replace("好的", "\\ud800")),
    "torn": gemini_document(GOOD_MESSAGES)[:-30],
    "5000 deep": gemini_document("[" * 5000 + "]" * 5000),
    "500 deep": gemini_document(GOOD_MESSAGES[:-1] + ", " + "[" * 500 + "]" * 500 + "]"),
}


@pytest.mark.parametrize("name", list(DOCUMENTS))
def test_a_whole_json_document_imports_the_same_whichever_parser_reads(name, tmp_path):
    """Gemini CLI's old session-*.json is one document: it goes through the same seam as a line."""
    import s11_import
    from s11_session import SessionStore
    path = tmp_path / "session-x.json"
    path.write_bytes(DOCUMENTS[name])
    results = []
    for parse in (PLAIN, FAST):
        before, lines.parse_line = lines.parse_line, parse
        try:
            report = s11_import.import_file(path, SessionStore(tmp_path / "store"), dry_run=True)
            results.append(("ok", report.skipped, report.warnings, report.messages, report.node_ids,
                            report.bytes_planned))
        except Exception as exc:
            results.append(("refused", type(exc), str(exc)))
        finally:
            lines.parse_line = before
    assert results[0] == results[1]
    assert results[0][0] == ("refused" if name in ("torn", "5000 deep") else "ok")


# ── any value, written any way, then torn or mutated ────────────────────────────────────────────────
STRINGS = ["\ud800", "a\udc00b", "\ud83d\ude00", "\ud83d", "\u2028\u2029", "".join(map(chr, range(32))), "\x7f\x80",
           "\ufeff\uffff", '"\\/', "😀", "\U0010ffff", "缓存", ""]
NUMBERS = [0, -0, 1, -1, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, -2 ** 63, -2 ** 63 - 1, 2 ** 200,
           0.0, -0.0, 1.5, 1e16, 1e-7, 5e-324, 1.7976931348623157e308, float("nan"), float("inf"), float("-inf")]
scalars = (st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats() | st.text()
           | st.sampled_from(STRINGS) | st.sampled_from(NUMBERS))
keys = st.text(max_size=5) | st.sampled_from(STRINGS)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
                      max_leaves=25)
objects = st.dictionaries(keys, values, max_size=5)


def written(value, style: int) -> bytes:
    """One of several ways a program writes a JSON line (json with and without ASCII escapes, spaced, indented,
    sorted; orjson), as UTF-8 with lone surrogates passed through as their bytes, like a careless writer."""
    if style == 5:
        try:
            return orjson.dumps(value)
        except orjson.JSONEncodeError:
            style = 0
    text = json.dumps(value, ensure_ascii=style in (0, 3), separators=(",", ":") if style < 2 else None,
                      indent=1 if style == 4 else None, sort_keys=style == 3)
    return text.encode("utf-8", "surrogatepass")


EDIT_BYTES = b'{}[]",:\\ \t\r\n0123456789eE.+-tfnu\x00\x0c\x7f\x80\xbf\xc0\xed\xef\xff'
edits = st.lists(st.tuples(st.sampled_from(["cut", "drop", "insert", "replace", "double"]), st.integers(0, 10 ** 6),
                           st.sampled_from(list(EDIT_BYTES))), max_size=3)


def edited(raw: bytes, changes) -> bytes:
    for action, where, byte in changes:
        at = where % (len(raw) + 1)
        if action == "cut":
            raw = raw[:at]
        elif action == "drop":
            raw = raw[:at] + raw[at + 1:]
        elif action == "insert":
            raw = raw[:at] + bytes([byte]) + raw[at:]
        elif action == "replace":
            raw = raw[:at] + bytes([byte]) + raw[at + 1:]
        else:
            raw = raw[:at] + raw[at // 2:at] + raw[at:]   # a repeated stretch: duplicate keys, glued halves
    return raw


@settings(max_examples=250, deadline=None)
@given(objects, st.integers(0, 5), st.sampled_from([b"", b"\n", b"\r\n", b" \t\n", b"\n\n"]))
@example({"role": "user", "content": [{"type": "text", "text": "hi", "n": 1, "ok": True, "x": None}]}, 0, b"\n")
@example({"big": 2 ** 64}, 1, b"\n")
@example({"cost": 0.003}, 1, b"")
@example({"s": "\ud800"}, 1, b"")
def test_any_object_written_any_way_reads_the_same(value, style, end):
    same(written(value, style) + end)


@settings(max_examples=250, deadline=None)
@given(objects, st.integers(0, 5), edits)
@example({"a": 1}, 1, [("insert", 7, ord("{"))])
@example({"a": "x"}, 1, [("cut", 6, 0)])
def test_torn_and_mutated_lines_read_or_fail_the_same(value, style, changes):
    same(edited(written(value, style) + b"\n", changes))


# ── the real transcripts ───────────────────────────────────────────────────────────────────────────
def sample_lines():
    return [raw for path in sorted(SAMPLES.glob("*.jsonl")) for raw in path.read_bytes().splitlines(keepends=True)]


def test_every_line_of_the_real_samples_and_most_take_the_fast_path():
    raws = sample_lines()
    assert len(raws) > 100
    for raw in raws:
        same(raw)
    quick = 0
    for raw in raws:
        try:
            quick += raw[:1] == b"{" and fast._exact(orjson.loads(raw))
        except orjson.JSONDecodeError:
            pass
    assert quick > len(raws) // 2   # the comparison above is not only of lines handed back to the plain parser


def test_the_seam_is_on_by_default_and_off_with_s11_plain():
    expected = "s11_import.lines" if os.environ.get("S11_PLAIN") else "s11_fast.loads"
    assert lines.parse_line.__module__ == expected
    assert PLAIN.__module__ == "s11_import.lines" and FAST.__module__ == "s11_fast.loads"


def test_without_orjson_accelerate_gives_back_the_plain_parser(monkeypatch):
    monkeypatch.setattr(fast, "orjson", None)
    assert fast.accelerate(PLAIN) is PLAIN


# ── a fresh interpreter three ways: with the accelerator, S11_PLAIN=1, orjson hidden ────────────────
READ_SAMPLES = r"""
import glob, hashlib, json, os, sys
if sys.argv[1] == "hidden":
    sys.modules["orjson"] = None   # as on a machine without it: import orjson raises ImportError
from s11_import import lines
import s11_import
from s11_session import SessionStore

def typed(value):
    kind = type(value)
    if kind is dict:
        return ["dict", [[key, typed(item)] for key, item in value.items()]]
    if kind is list:
        return ["list", [typed(item) for item in value]]
    return [kind.__name__, value.hex() if kind is float else value]

digest = hashlib.sha256()
for path in sorted(glob.glob(os.path.join(sys.argv[2], "*.jsonl"))) + sys.argv[4:]:
    for raw in open(path, "rb").read().splitlines(keepends=True):
        try:
            result = typed(lines.parse_line(raw))
        except Exception as exc:
            result = ["refused", type(exc).__name__, str(exc)]
        digest.update(json.dumps(result, ensure_ascii=True).encode())
    try:
        report = s11_import.import_file(path, SessionStore(sys.argv[3]), dry_run=True)
        digest.update(json.dumps([report.skipped, report.skipped_by_reason, report.dropped, report.warnings,
                                  report.messages, report.node_ids, report.bytes_planned], ensure_ascii=True).encode())
    except Exception as exc:
        digest.update(f"{type(exc).__name__} {exc}".encode())
print(lines.parse_line.__module__)
print(digest.hexdigest())
"""


def test_reading_and_importing_the_samples_is_the_same_with_the_accelerator_s11_plain_and_no_orjson(tmp_path):
    odd = tmp_path / "odd.jsonl"   # the odd lines too, inside a transcript the importer recognises
    odd.write_bytes(b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}\n'
                    + b"\n".join(raw.rstrip(b"\n") for raw in ODD if b"\n" not in raw.rstrip(b"\n")) + b"\n")
    results = {}
    for way, env in (("fast", {}), ("plain", {"S11_PLAIN": "1"}), ("hidden", {})):
        environment = {key: value for key, value in os.environ.items() if key != "S11_PLAIN"}
        environment.update(env, PYTHONPATH=str(CODE))
        done = subprocess.run([sys.executable, "-c", READ_SAMPLES, way, str(SAMPLES), str(tmp_path / way), str(odd)],
                              capture_output=True, text=True, env=environment, timeout=120)
        assert done.returncode == 0, done.stderr
        results[way] = done.stdout.split()
    assert [results[way][0] for way in ("fast", "plain", "hidden")] == ["s11_fast.loads", "s11_import.lines",
                                                                         "s11_import.lines"]
    assert results["fast"][1] == results["plain"][1] == results["hidden"][1]
