"""s11_fast.export and s11_fast.redact's scan_value against their oracles, the plain modules loaded with S11_PLAIN=1:
for any message, message_parts gives the same Parts (and raises the same error); for any JSON-like value, scan_value
gives the same Findings; the whole Markdown and HTML exports are byte-identical on generated sessions, the real
samples in shared/samples and hostile texts; S11_PLAIN=1 switches both off.

Fake secrets are glued together at runtime; none of them is a real credential.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import s11_export
import s11_redact
from plain_copy import plain_copy
from s11_fast import export as fast_export
from s11_fast import redact as fast_redact

CODE = Path(__file__).resolve().parents[2] / "code"
SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"
SAMPLE_FILES = sorted(path.name for path in SAMPLES.glob("*.jsonl")) if SAMPLES.is_dir() else []


PLAIN_REDACT = plain_copy("s11_redact")
PLAIN_EXPORT = plain_copy("s11_export")
# Built directly (not through the seams), so these tests compare fast with plain even when S11_PLAIN=1 is set.
FAST_PARTS = fast_export.accelerate(PLAIN_EXPORT)
FAST_SCAN = fast_redact.accelerate_scan(PLAIN_REDACT, PLAIN_REDACT._find_all)
KEY = "sk-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv"
HOSTILE = ["```", "````x\n```\n", "~~~\n", "# 标题", "a\n===", "<script>alert(1)</script>", "![](http://t.example/p)",
           "[x](javascript:alert(1))", "&amp; <b> \"q\" 'a'", "\x00\x1f\x7f", "\ud800 lone", "\u2028\u2029", "\r\n\r",
           "x" * 200_000, "`" * 40, "a" + "`" * 3000 + "b\n```", "```mermaid\ngraph TD\n```", "a@example.com 13812345678 " + KEY, "> - 1. # h",
           "🤖 汉字 ｆｕｌｌ １３８１２３４５６７８"]


def _same_outcome(fast, plain, *args):
    """fast(*args) gives what plain(*args) gives, or raises the same kind of error."""
    try:
        expected = plain(*args)
    except Exception as error:   # noqa: BLE001 - whatever the plain one raises, the fast one must raise too
        with pytest.raises(type(error)):
            fast(*args)
        return None
    assert fast(*args) == expected
    return expected


# ── message_parts ───────────────────────────────────────────────────────────────────────────

_text = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=30))
_json = st.recursive(st.none() | st.booleans() | st.integers(min_value=-2 ** 70, max_value=2 ** 70)
                     | st.floats(allow_nan=True) | _text,
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
                     | st.tuples(inner), max_leaves=8)
_odd = st.one_of(st.none(), st.integers(), st.lists(st.integers(), max_size=2), _text)
_block = st.one_of(
    _text, st.none(), st.integers(),
    st.builds(lambda kind, text: {"type": kind, kind: text}, st.sampled_from(["text", "thinking"]), _text | _odd),
    st.builds(lambda name, value, key: {"type": "tool_use", "id": "toolu_1", "name": name, key: value},
              _text | _odd, _json, st.sampled_from(["input", "arguments"])),
    st.builds(lambda name, value: {"type": "toolCall", "id": "call_1", "name": name, "arguments": value}, _text | _odd, _json),
    st.builds(lambda content, call_id, error: {"type": "tool_result", "tool_use_id": call_id, "content": content,
                                               "is_error": error},
              _text | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": _text}), max_size=2) | _odd,
              st.sampled_from(["toolu_1", "call_1", "unknown"]) | _odd, st.booleans() | _odd),
    st.builds(lambda block, length: {**block, "truncated_from": length},
              st.fixed_dictionaries({"type": st.just("text"), "text": _text}), st.integers(-1, 10 ** 6) | _odd),
    st.fixed_dictionaries({"type": st.sampled_from(["image", "redacted_thinking", "mystery", ["list"]])}),
)
_message = st.builds(
    lambda role, content, extra: {"role": role, "content": content, **extra},
    st.sampled_from(["user", "assistant", "system", "tool", "toolResult", "other"]) | _odd,
    st.one_of(_text, st.none(), st.lists(_block, max_size=5), st.tuples(_block), _json),
    st.fixed_dictionaries({}, optional={"toolName": _text, "name": _text, "isError": st.booleans()}))
NAMES = {"toolu_1": "Bash", "call_1": "read"}


@settings(max_examples=600, deadline=None)
@given(_message, st.sampled_from([None, {}, NAMES]))
@example({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                            "input": {"n": 2 ** 70, "s": "\ud800", "f": 1e-7, "t": (1,)}}]}, NAMES)
@example({"role": "assistant", "content": [{"type": "tool_use", "name": "x", "input": {"a": [[[[]]]], "b": {}}}]}, None)
@example({"role": ["unhashable"], "content": "x"}, None)
@example({"role": "user", "content": [{"type": ["unhashable"]}]}, None)
def test_fast_message_parts_give_what_the_plain_ones_give(message, names):
    _same_outcome(FAST_PARTS, PLAIN_EXPORT.message_parts, message, names)


def test_the_fast_parts_cover_the_common_blocks_themselves_and_hand_the_rest_to_the_plain_ones(monkeypatch):
    # Not a speed test: which messages the fast reader answers itself, and that the plain one sees only the others.
    seen = []
    monkeypatch.setattr(PLAIN_EXPORT, "message_parts", lambda message, names=None: seen.append(message) or [])
    parts = fast_export.accelerate(PLAIN_EXPORT)
    common = {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "t"}, {"type": "text", "text": "x"}, "plain string", None,
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls", "n": [1, True, None]}}]}
    assert [part.kind for part in parts(common, NAMES)] == ["thinking", "text", "text", "tool_call"]
    assert parts(common)[-1].text == '{\n  "command": "ls",\n  "n": [\n    1,\n    true,\n    null\n  ]\n}'
    odd = [{"role": "toolResult", "content": [{"type": "text", "text": "ok"}]},
           {"role": "user", "content": [{"type": "image", "source": {}}]},
           {"role": "user", "content": [{"type": "text", "text": "x", "truncated_from": 9}]}]
    for message in odd:
        parts(message)
    assert seen == odd


def test_tool_arguments_the_fast_layout_cannot_write_go_to_the_plain_one():
    for value in ({"n": 2 ** 70}, {"s": "\ud800"}, {"f": 0.1}, {"t": (1, 2)}, {1: "int key"}, {"deep": json.loads("[" * 300 + "]" * 300)}):
        message = {"role": "assistant", "content": [{"type": "tool_use", "name": "x", "input": value}]}
        assert FAST_PARTS(message) == PLAIN_EXPORT.message_parts(message)


# ── scan_value ─────────────────────────────────────────────────────────────────────────────

_secretish = st.sampled_from(["a@example.com", "13812345678", KEY, "${API_KEY}", " ", "", "[已脱敏:邮箱]", "hunter2"])
_value = st.recursive(st.none() | st.booleans() | st.integers(min_value=-10 ** 20, max_value=10 ** 20) | st.floats()
                      | _secretish | st.text(max_size=12),
                      lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner)
                      | st.dictionaries(st.sampled_from(["password", "api_key", "token_type", "text", "a@example.com",
                                                         "13812345678", "x"]) | st.text(max_size=4), inner, max_size=4)
                      | st.dictionaries(st.integers(0, 3) | st.none(), inner, max_size=2),
                      max_leaves=14)


@settings(max_examples=600, deadline=None)
@given(_value)
@example({"password": "hunter2", "api_key": "${API_KEY}", "n": 13812345678, "a@example.com": {None: "13812345678"}})
@example("a@example.com")
@example([{"password": 13812345678}, ("a@example.com", {"token": " "})])
def test_fast_scan_value_gives_what_the_plain_one_gives(value):
    assert FAST_SCAN(value) == PLAIN_REDACT.scan_value(value)


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_fast_scan_value_on_the_real_samples_with_planted_secrets(name):
    records = [json.loads(line) for line in (SAMPLES / name).read_text(encoding="utf-8").splitlines()
               if line.strip().startswith("{") and _parses(line)]
    for number, record in enumerate(records[::3]):   # plant a secret or a credential-named key in every third record
        record["planted"] = {"password": "hunter2"} if number % 2 else f"mail a@example.com {KEY}"
    expected = PLAIN_REDACT.scan_value(records)
    assert len(expected) >= len(records[::3])
    assert FAST_SCAN(records) == expected


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


# ── whole exports ──────────────────────────────────────────────────────────────────────────


def _sample_messages(name: str) -> list:
    messages = []
    for line in (SAMPLES / name).read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue   # torn lines on purpose in some samples
        if isinstance(entry, dict) and isinstance(entry.get("message"), dict):
            messages.append(entry["message"])
    return messages


def _session(messages: list) -> dict:
    return {"session_id": "s1", "title": "样例 a@example.com", "parent_id": "p0", "fork_point": 1,
            "created_at": "2026-08-25", "messages": messages, "source": {"format": "claude-code", "file": "x.jsonl"}}


def _both_exports_match(session: dict) -> None:
    # The accelerated module as the product uses it (message_parts and scan_value swapped in at their seams,
    # unless this run has S11_PLAIN=1) against the plain copies.
    for redact in (True, False):
        assert s11_export.render_markdown(session, redact=redact) == PLAIN_EXPORT.render_markdown(session, redact=redact)
        assert s11_export.render_html(session, redact=redact) == PLAIN_EXPORT.render_html(session, redact=redact)


@pytest.mark.parametrize("name", SAMPLE_FILES)
def test_the_real_samples_export_byte_identical(name):
    messages = _sample_messages(name)
    assert messages
    _both_exports_match(_session(messages))


def test_hostile_texts_export_byte_identical_in_every_block_kind():
    messages = []
    for text in HOSTILE:
        messages += [{"role": "user", "content": text},
                     {"role": "assistant", "content": [{"type": "thinking", "thinking": text}, {"type": "text", "text": text},
                                                       {"type": "tool_use", "id": "toolu_1", "name": text,
                                                        "input": {"command": text, text: [text]}}]},
                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": text}]},
                     {"role": "toolResult", "toolName": text, "content": [{"type": "text", "text": text}]}]
    _both_exports_match(_session(messages))


@settings(max_examples=150, deadline=None)
@given(st.lists(_message, max_size=5))
def test_generated_sessions_export_byte_identical(messages):
    try:
        PLAIN_EXPORT.render_markdown(_session(messages))
    except (TypeError, ValueError):   # an unhashable role: the plain export refuses it, and so must the fast one
        with pytest.raises((TypeError, ValueError)):
            s11_export.render_markdown(_session(messages))
        return
    _both_exports_match(_session(messages))


def test_the_benchmarks_transcript_exports_byte_identical():
    sys.path.insert(0, str(CODE.parent / "benchmarks"))
    from bench_export import transcript_messages
    _both_exports_match(_session(transcript_messages(60)))


# ── the seams ──────────────────────────────────────────────────────────────────────────────


def test_the_seams_took_the_accelerators_unless_s11_plain_is_set():
    plain = bool(os.environ.get("S11_PLAIN"))
    assert s11_export.message_parts.__module__ == ("s11_export" if plain else "s11_fast.export")
    assert s11_redact.scan_value.__module__ == ("s11_redact" if plain else "s11_fast.redact")


@pytest.mark.parametrize(("environment", "hide_orjson", "used"), [
    ({"S11_PLAIN": "1"}, False, "s11_export s11_redact"),
    ({}, False, "s11_fast.export s11_fast.redact"),
    ({}, True, "s11_fast.export s11_fast.redact")], ids=["plain", "accelerated", "accelerated-without-orjson"])
def test_s11_plain_switches_both_off_and_every_way_exports_the_same_bytes(environment, hide_orjson, used):
    program = (("import sys; sys.modules['orjson'] = None; " if hide_orjson else "") +
               "import hashlib, s11_export, s11_redact; "
               "messages = [{'role': 'assistant', 'content': [{'type': 'tool_use', 'name': 'Bash', "
               "'input': {'command': 'echo a@example.com', 'n': [1, None, True]}}, {'type': 'text', 'text': '```x'}]}]; "
               "session = {'session_id': 's', 'title': 't', 'messages': messages}; "
               "print(s11_export.message_parts.__module__, s11_redact.scan_value.__module__); "
               "print(hashlib.sha256((s11_export.render_markdown(session) + s11_export.render_html(session))"
               ".encode()).hexdigest())")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(CODE), **environment}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    way, digest = done.stdout.splitlines()
    assert way == used
    session = {"session_id": "s", "title": "t", "messages": [{"role": "assistant", "content": [
        {"type": "tool_use", "name": "Bash", "input": {"command": "echo a@example.com", "n": [1, None, True]}},
        {"type": "text", "text": "```x"}]}]}
    import hashlib
    expected = PLAIN_EXPORT.render_markdown(session) + PLAIN_EXPORT.render_html(session)
    assert digest == hashlib.sha256(expected.encode()).hexdigest()
