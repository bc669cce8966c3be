"""Issue 44 items 1-3 for Gemini CLI: JSONL sessions with rewinds, what the user typed (displayContent) as the
visible prompt with the expansion kept, notices kept as notices, "Please continue." not taken for a typed prompt,
token usage kept per reply. Records are built from the shapes in tests/import/test_import_codex_gemini.
"""

from __future__ import annotations

import pytest
from test_import import nodes, own_texts
from test_import_codex_gemini import GEMINI_HEAD, g_model, g_user, write_lines

from s11_import import import_file
from s11_import.usage import totals
from s11_session import SessionStore
from s11_workbench.explorer import chat_rows

INIT_EXPANSION = "Please analyze this project and create a tailored GEMINI.md file. " + "Explore the tree. " * 150


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


def typed(mid: str, shown: str, expansion: str, minute: int = 0) -> dict:
    return {**g_user(mid, expansion, minute), "displayContent": [{"text": shown}]}


def test_the_typed_command_is_the_prompt_and_its_expansion_is_one_click_away(tmp_path, store):
    lines = [GEMINI_HEAD, typed("u-1", "/init", INIT_EXPANSION), g_model("g-1", "写好了 GEMINI.md")]
    report = import_file(write_lines(tmp_path / "session-a.jsonl", lines), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["/init", "写好了 GEMINI.md"] and node.title == "/init"
    assert node.messages[0]["expanded"] == INIT_EXPANSION
    rows = chat_rows(node.messages[0], 1, {}, lambda text: text)
    assert "/init" in rows[0]["content"] and "Explore the tree" not in rows[0]["content"]
    assert rows[1]["metadata"]["title"] == "📜 代理展开后的全文" and "Explore the tree" in rows[1]["content"]


def test_a_display_content_equal_to_the_content_keeps_one_copy(tmp_path, store):
    lines = [GEMINI_HEAD, typed("u-1", "修复测试", "修复测试"), g_model("g-1", "好")]
    (node,) = nodes(store, import_file(write_lines(tmp_path / "session-b.jsonl", lines), store))
    assert own_texts(node)[0] == "修复测试" and "expanded" not in node.messages[0]


def test_please_continue_is_not_a_typed_prompt(tmp_path, store):
    lines = [GEMINI_HEAD, g_user("u-1", "重构解析器"), g_model("g-1", "先拆函数"),
             g_user("u-2", "System: Please continue."), g_model("g-2", "拆完了")]
    (node,) = nodes(store, import_file(write_lines(tmp_path / "session-c.jsonl", lines), store))
    assert node.messages[2]["meta"] is True and len(node.messages) == 4 and node.title == "重构解析器"


def test_info_and_warning_notices_are_kept_as_notices(tmp_path, store):
    lines = [GEMINI_HEAD, g_user("u-1", "跑测试"),
             {"id": "i-1", "timestamp": "2026-05-22T15:00:10.000Z", "type": "info", "content": "Switched to flash."},
             {"id": "w-1", "timestamp": "2026-05-22T15:00:11.000Z", "type": "warning", "content": "配额快用完了"},
             g_model("g-1", "测试过了")]
    report = import_file(write_lines(tmp_path / "session-d.jsonl", lines), store)
    (node,) = nodes(store, report)
    notices = [(m["role"], m.get("notice"), m["content"][0]["text"]) for m in node.messages if m.get("notice")]
    assert notices == [("system", "info", "Switched to flash."), ("system", "warning", "配额快用完了")]
    assert own_texts(node)[-1] == "测试过了" and report.skipped == []
    rows = chat_rows(node.messages[2], 3, {}, lambda text: text)
    assert rows[0]["metadata"]["title"] == "#3 ℹ️ 界面提示（warning）"


def test_tokens_are_kept_per_reply_and_a_rewritten_record_is_not_counted_twice(tmp_path, store):
    tokens = {"input": 1200, "output": 80, "cached": 400, "thoughts": 30, "tool": 0, "total": 1310}
    lines = [GEMINI_HEAD, g_user("u-1", "一"), g_model("g-1", "二", tokens={"input": 1200, "output": 10}),
             g_model("g-1", "二", tokens=tokens), g_user("u-2", "三"),
             g_model("g-2", "四", tokens={"input": 1500, "output": 20, "cached": 1100})]
    (node,) = nodes(store, import_file(write_lines(tmp_path / "session-e.jsonl", lines), store))
    assert node.messages[1]["usage"] == {"input": 1200, "output": 80, "cache_read": 400, "reasoning": 30}
    total = totals(node.messages)
    assert (total.input, total.output, total.cache_read, total.recorded) == (2700, 100, 1500, 2)


def test_a_rewind_in_jsonl_keeps_usage_on_both_branches(tmp_path, store):
    lines = [GEMINI_HEAD, g_user("u-1", "方案？"), g_model("g-1", "A", tokens={"input": 100, "output": 5}),
             {"$rewindTo": "u-1"}, typed("u-2", "/plan", "Make a plan. " * 20),
             g_model("g-2", "B", tokens={"input": 300, "output": 9})]
    report = import_file(write_lines(tmp_path / "session-f.jsonl", lines), store)
    trunk, branch = nodes(store, report)
    assert own_texts(trunk) == ["/plan", "B"] and own_texts(branch) == ["方案？", "A"]
    assert totals(trunk.messages).input == 300 and totals(branch.messages).input == 100
