"""Issue 40, the redacted-export budget: prepare() masks only what it must and shares the rest of the session.

- a redacted export reads the caller's messages where nothing was found in them (no copy of the whole tree),
  builds new containers only on the way to a hit, and never changes what it was given;
- mask_value / redact_value with share=True give the same value as the deep copy, and share only unhit parts;
- tuples read as lists everywhere the export reads content, so a shared tuple renders exactly as its JSON would,
  redacted or not (before, redact=False showed a tuple of blocks as one unknown JSON block).
"""

from __future__ import annotations

import copy
import json

import pytest

import s11_export
import s11_redact

PHONE = "13812345678"
SESSION = {
    "session_id": "s1", "title": "分享前", "created_at": "2026-08-25 18:46:40",
    "messages": [
        {"role": "user", "content": "帮我看看缓存为什么一直涨"},
        {"role": "assistant", "content": [{"type": "text", "text": f"已经打电话给 {PHONE}"},
                                          {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"cmd": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py\nb.py"}]},
    ],
}


def test_prepare_shares_the_messages_without_hits_and_never_changes_its_input():
    session = copy.deepcopy(SESSION)
    before = copy.deepcopy(session)
    view = s11_export.prepare(session)
    first, hit, last = view.messages
    assert first is session["messages"][0] and last is session["messages"][2]        # read, not copied
    assert hit is not session["messages"][1] and hit["content"][1] is session["messages"][1]["content"][1]
    assert hit["content"][0]["text"] == "已经打电话给 [已脱敏:手机号]" and view.counts == {"手机号": 1}
    assert session == before                                                           # the input is untouched


VALUES = [
    {"a": [1, {"b": f"tel {PHONE}", "c": ["x", "y"]}], "d": {"e": "nothing here"}},
    [{"ops@example.com": 1, "k": (PHONE, "z")}, ("plain", "words")],
    {"password": "hunter2", "deep": [[[{"n": 13812345678}]]], "kept": {"1": [2, 3]}},
    {"nothing": ["at", "all", 12]},
]


@pytest.mark.parametrize("value", VALUES, ids=["nested", "key-and-tuple", "credential-and-number", "no-hit"])
def test_masking_with_share_gives_the_deep_copy_value_and_shares_only_unhit_parts(value):
    original = copy.deepcopy(value)
    findings = s11_redact.scan_value(value)
    copied, applied = s11_redact.mask_value(value, findings)
    shared, shared_applied = s11_redact.mask_value(value, findings, share=True)
    assert json.dumps(shared) == json.dumps(copied) and shared_applied == applied
    assert s11_redact.redact_value(value, share=True) == (shared, s11_redact.redact_value(value)[1])
    assert value == original
    on_the_way = {finding.path[:depth] for finding in findings for depth in range(len(finding.path) + 1)}
    for path, child in _containers(value):
        twin = _at(shared, path)
        assert (twin is child) == (path not in on_the_way), path      # new only on the way to a hit


def _containers(value, path=()):
    if isinstance(value, (dict, list, tuple)):
        yield path, value
        for key, child in value.items() if isinstance(value, dict) else enumerate(value):
            yield from _containers(child, path + (key,))


def _at(value, path):
    for key in path:
        if isinstance(value, dict) and key not in value:   # a masked key: find the child under its marker
            key = next(k for k in value if k.startswith("[已脱敏:"))
        value = value[key]
    return value


@pytest.mark.parametrize("redact", [True, False], ids=["redacted", "not-redacted"])
def test_tuples_of_blocks_render_exactly_as_their_json_does(redact):
    as_tuples = copy.deepcopy(SESSION)
    for message in as_tuples["messages"]:
        if isinstance(message["content"], list):
            message["content"] = tuple(message["content"])
    as_json = json.loads(json.dumps(as_tuples))
    for render in (s11_export.render_markdown, s11_export.render_html):
        assert render(as_tuples, redact=redact) == render(as_json, redact=redact)
    assert "📦 未知内容块" not in s11_export.render_markdown(as_tuples, redact=redact)
