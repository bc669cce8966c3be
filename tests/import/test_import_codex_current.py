"""Issue 44 items 1-3 for Codex CLI: what rollouts carry today.

Shapes follow Codex's own serialisation (RolloutLine {timestamp, ordinal, type, payload}; ItemCompletedEvent
{thread_id, turn_id, item: TurnItem tagged by "type"}; RolloutReferenceItem {rollout_id, rollout_path, thread_id,
segment_id}); the rollouts are synthetic, built with tests/import/test_import_codex_gemini.Codex.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_import import nodes, own_texts, plain
from test_import_codex_gemini import Codex

from s11_import import import_file
from s11_import.usage import totals
from s11_session import SessionStore


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


def completed(log: Codex, kind: str, content: list, **extra) -> Codex:
    return log.put("event_msg", {"type": "item_completed", "thread_id": "t-1", "turn_id": f"turn-{len(log.lines)}",
                                 "item": {"type": kind, "id": f"item-{len(log.lines)}", "content": content, **extra},
                                 "completed_at_ms": 0, **({"started_at_ms": 1000, "completed_at_ms": 4500}
                                                         if kind == "AgentMessage" else {})})


def asked(log: Codex, words: str) -> Codex:
    return completed(log, "UserMessage", [{"type": "text", "text": words, "text_elements": []}])


def answered(log: Codex, words: str) -> Codex:
    return completed(log, "AgentMessage", [{"type": "Text", "text": words}])


def paginated(**meta) -> Codex:
    return Codex(history_mode="paginated", cli_version="0.151.0", **meta)


def test_a_paginated_rollout_reads_prompts_and_replies_from_item_completed(tmp_path, store):
    log = asked(paginated(), "给 /login 加限流")
    completed(log, "Reasoning", [], summary_text=["先看路由"], raw_content=[])
    answered(log, "加好了")
    completed(log, "WebSearch", [], query="rate limit")
    asked(log, "再加测试")
    answered(log, "测试也加了")
    report = import_file(log.write(tmp_path / "rollout-p.jsonl"), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["给 /login 加限流", "先看路由 加好了", "再加测试", "测试也加了"]
    assert node.title == "给 /login 加限流" and node.messages[1]["duration_ms"] == 3500
    assert report.dropped["item_completed:WebSearch"] == 1


def test_the_same_words_from_a_response_item_and_item_completed_appear_once(tmp_path, store):
    log = paginated()
    log.item(type="message", role="user", content=[{"type": "input_text", "text": "修复登录"}])
    asked(log, "修复登录")
    answered(log, "修好了")
    log.item(type="message", role="assistant", content=[{"type": "output_text", "text": "修好了"}])
    (node,) = nodes(store, import_file(log.write(tmp_path / "rollout-d.jsonl"), store))
    assert own_texts(node) == ["修复登录", "修好了"]


def test_a_trimmed_rollout_keeps_prompts_that_survive_only_as_event_msg(tmp_path, store):
    log = Codex()
    log.put("event_msg", {"type": "user_message", "message": "只剩事件里的提问"})
    log.item(type="message", role="assistant", content=[{"type": "output_text", "text": "回答一"}])
    log.put("turn_context", {"model": "gpt-5-codex"})
    log.user("正常的提问").assistant("回答二")   # response item + its event mirror: still once
    report = import_file(log.write(tmp_path / "rollout-t.jsonl"), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["只剩事件里的提问", "回答一", "正常的提问", "回答二"]
    assert node.title == "只剩事件里的提问"
    assert report.dropped["event_msg:user_message"] == 2 and report.dropped["event_msg:agent_message"] == 1


def test_the_same_prompt_typed_again_after_an_interruption_is_kept(tmp_path, store):
    log = Codex().user("跑测试")
    log.put("event_msg", {"type": "turn_aborted", "reason": "interrupted"})
    log.user("跑测试").assistant("跑完了")
    (node,) = nodes(store, import_file(log.write(tmp_path / "rollout-i.jsonl"), store))
    assert own_texts(node) == ["跑测试", "跑测试", "跑完了"]
    assert node.messages[0]["interrupted"] == "interrupted" and "interrupted" not in node.messages[1]


def test_an_interrupted_reply_is_marked(tmp_path, store):
    log = Codex().user("重构").think("先看看")
    log.put("event_msg", {"type": "turn_aborted", "reason": "interrupted"})
    log.user("算了").assistant("好")
    (node,) = nodes(store, import_file(log.write(tmp_path / "rollout-a.jsonl"), store))
    assert [m.get("interrupted") for m in node.messages] == [None, "interrupted", None, None]


def test_token_counts_become_per_reply_usage_without_double_counting(tmp_path, store):
    log = Codex().user("一").assistant("二")

    def count(inp, cached, out):
        usage = {"input_tokens": inp, "cached_input_tokens": cached, "output_tokens": out,
                 "reasoning_output_tokens": 0, "total_tokens": inp + out}
        log.put("event_msg", {"type": "token_count", "info": {"total_token_usage": usage, "last_token_usage": usage}})

    count(1000, 200, 50)
    count(1000, 200, 50)   # Codex writes the same figure twice
    log.user("三").assistant("四")
    count(2500, 1200, 130)
    (node,) = nodes(store, import_file(log.write(tmp_path / "rollout-u.jsonl"), store))
    assert node.messages[1]["usage"] == {"input": 1000, "output": 50, "cache_read": 200}
    assert node.messages[3]["usage"] == {"input": 1500, "output": 80, "cache_read": 1000}
    total = totals(node.messages)
    assert (total.input, total.output, total.cache_read, total.recorded) == (2500, 130, 1200, 2)


def test_mcp_results_are_text_not_escaped_json(tmp_path, store):
    log = Codex().user("查 issue")
    log.item(type="function_call", name="mcp__github__get_issue", call_id="m1", arguments='{"number": 7}')
    result = {"content": [{"type": "text", "text": "Issue #7: 登录超时"}, {"type": "text", "text": "状态：open"}],
              "isError": False}
    log.item(type="function_call_output", call_id="m1", output=json.dumps(result, ensure_ascii=False))
    log.item(type="function_call", name="mcp__github__get_pr", call_id="m2", arguments="{}")
    log.item(type="function_call_output", call_id="m2",
             output=json.dumps({"Err": "PR 不存在"}, ensure_ascii=False))
    log.assistant("好")
    (node,) = nodes(store, import_file(log.write(tmp_path / "rollout-m.jsonl"), store))
    tools = [m for m in node.messages if m["role"] == "tool"]
    assert plain(tools[0]) == "Issue #7: 登录超时\n状态：open" and not tools[0].get("isError")
    assert plain(tools[1]) == "PR 不存在" and tools[1]["isError"] is True


def test_a_vs_code_session_is_titled_by_the_request_not_the_ide_preamble(tmp_path, store):
    log = Codex().user("# Context from my IDE setup:\n\n## Active file: src/app.py\n\n## Open tabs:\n- app.py\n\n"
                       "## My request for Codex:\n把超时改成 30 秒\n").assistant("改好了")
    (node,) = nodes(store, import_file(log.write(tmp_path / "rollout-v.jsonl"), store))
    assert node.title == "把超时改成 30 秒"


def segments(folder: Path) -> tuple:
    """An earlier segment and the current one, which starts with a rollout_reference to it."""
    earlier = Codex(thread="t-seg").user("第一段的提问").assistant("第一段的回答")
    earlier_path = earlier.write(folder / "rollout-2026-05-01T09-00-00-t-seg_seg-0001.jsonl")
    current = Codex(thread="t-seg", history_mode="paginated")
    current.put("rollout_reference", {"rollout_id": "t-seg", "thread_id": "t-seg", "segment_id": "seg-0001",
                                      "rollout_path": f"/home/someone/.codex/sessions/2026/05/01/{earlier_path.name}"})
    current.user("第二段的提问").assistant("第二段的回答")
    return earlier_path, current.write(folder / "rollout-2026-05-02T09-00-00-t-seg_seg-0002.jsonl")


def test_a_rollout_reference_is_followed_to_the_file_it_names(tmp_path, store):
    _, current = segments(tmp_path / ".codex" / "sessions" / "2026" / "05" / "02")
    report = import_file(current, store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["第一段的提问", "第一段的回答", "第二段的提问", "第二段的回答"]
    assert node.source["active_end"] and any("已随主文件读进来" in w for w in report.warnings)
    assert report.dropped["rollout_reference"] == 1


def test_a_reference_is_found_in_the_codex_folder_of_the_file_even_compressed_or_archived(tmp_path, store):
    import zstandard
    home = tmp_path / ".codex"
    earlier, current = segments(home / "sessions" / "2026" / "05" / "02")
    archived = home / "archived_sessions" / (earlier.name + ".zst")
    archived.parent.mkdir(parents=True)
    archived.write_bytes(zstandard.ZstdCompressor().compress(earlier.read_bytes()))
    earlier.unlink()
    (node,) = nodes(store, import_file(current, store))
    assert own_texts(node)[:2] == ["第一段的提问", "第一段的回答"]


def test_a_missing_reference_is_named_and_the_rest_imports(tmp_path, store):
    earlier, current = segments(tmp_path / "upload")
    earlier.unlink()
    report = import_file(current, store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["第二段的提问", "第二段的回答"]
    (warning,) = [w for w in report.warnings if "rollout_reference" in w]
    assert "rollout-2026-05-01T09-00-00-t-seg_seg-0001.jsonl" in warning and "没有导入" in warning


def test_a_reference_never_reads_a_file_outside_the_codex_folder(tmp_path, store):
    outside = Codex(thread="x").user("别人的秘密").assistant("不该读到").write(tmp_path / "secret" / "rollout-s.jsonl")
    log = Codex()
    log.put("fork_reference", {"thread_id": "x", "rollout_path": str(outside)})
    log.user("我的提问").assistant("我的回答")
    report = import_file(log.write(tmp_path / "upload" / "rollout-f.jsonl"), store)
    assert own_texts(nodes(store, report)[0]) == ["我的提问", "我的回答"]
    assert "别人的秘密" not in json.dumps([store.load(i).messages for i in report.node_ids], ensure_ascii=False)
    assert any("fork_reference" in w and "没有导入" in w for w in report.warnings)


def test_event_mirrors_of_injected_context_are_never_taken_for_prompts(tmp_path, store):
    log = Codex()
    log.item(type="message", role="user", content=[{"type": "input_text", "text": "<environment_context>\n"
                                                    "<cwd>/x</cwd>\n</environment_context>"}])
    log.put("event_msg", {"type": "user_message", "message": "<environment_context>\n<cwd>/x</cwd>\n"
                                                             "</environment_context>", "kind": "environment_context"})
    log.put("event_msg", {"type": "user_message", "message": "# AGENTS.md instructions for /x", "kind": "plain"})
    log.user("真正的提问").assistant("好")
    (node,) = nodes(store, import_file(log.write(tmp_path / "rollout-e.jsonl"), store))
    assert [m.get("meta", False) for m in node.messages] == [True, False, False]
    assert own_texts(node)[1:] == ["真正的提问", "好"] and node.title == "真正的提问"


def test_thousands_of_reference_lines_are_bounded_and_reported(tmp_path, store):
    log = Codex()
    for number in range(2000):
        log.put("rollout_reference", {"thread_id": f"t-{number:08d}", "rollout_path": f"/nowhere/rollout-{number}.jsonl"})
    log.user("提问").assistant("回答")
    report = import_file(log.write(tmp_path / "rollout-many.jsonl"), store)
    assert own_texts(nodes(store, report)[0]) == ["提问", "回答"] and report.dropped["rollout_reference"] == 2000
    assert sum("不再去找" in w for w in report.warnings) == 1
    assert sum("rollout_reference 指向" in w for w in report.warnings) == 64


def test_an_interruption_written_as_a_turn_aborted_message_marks_the_reply_too(tmp_path, store):
    log = Codex().user("重构").think("先看看")
    log.item(type="message", role="user", content=[{"type": "input_text", "text": "<turn_aborted>\nThe user interrupted"
                                                                                 " the previous turn.\n</turn_aborted>"}])
    log.user("重构").assistant("好")   # the same words again after the interruption are a new prompt
    (node,) = nodes(store, import_file(log.write(tmp_path / "rollout-ta.jsonl"), store))
    assert [m.get("interrupted") for m in node.messages] == [None, "interrupted", None, None, None]
    assert node.messages[2]["meta"] is True and own_texts(node)[3:] == ["重构", "好"]


def test_the_same_reply_said_twice_from_one_source_is_kept_twice_and_mirrors_pair_one_to_one(tmp_path, store):
    log = Codex().user("跑两次测试")
    log.item(type="message", role="assistant", content=[{"type": "output_text", "text": "完成。"}])
    log.put("event_msg", {"type": "agent_message", "message": "完成。"})
    log.call("c1", "pytest", "ok")
    log.item(type="message", role="assistant", content=[{"type": "output_text", "text": "完成。"}])
    log.put("event_msg", {"type": "agent_message", "message": "完成。"})
    log.think("再想想")
    completed(log, "Reasoning", [], summary_text=["再想想"], raw_content=[])   # the paginated copy of that thought
    (node,) = nodes(store, import_file(log.write(tmp_path / "rollout-twice.jsonl"), store))
    said = " ".join(own_texts(node))   # a turn's reasoning, calls and replies merge into one message per stream
    assert said.count("完成。") == 2 and said.count("再想想") == 1
