"""Issue 44 items 1-3 for Claude Code: usage kept once per API message, turn durations, Warmup agent files left out
(counted), a subagent with no spawning id listed under the session by the best evidence, missing lines bridged.
Transcripts are built with tests/import/test_import.Claude (shapes from real 2.0.x / 2.1.x files).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_import import Claude, nodes, own_texts, text
from test_import_claude_layouts import agent_log, spawning_session

from s11_import import import_file, import_folder
from s11_import.usage import totals
from s11_session import SessionStore


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


def usage(inp, out, read=0, write=0) -> dict:
    return {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write, "service_tier": "standard"}


def with_usage(log: Claude, figures: dict) -> Claude:
    log.lines[-1]["message"]["usage"] = figures
    return log


def test_usage_of_a_streamed_reply_counts_once_and_calls_are_summed(tmp_path, store):
    log = Claude().user("u1", None, "修复登录")
    with_usage(log.assistant("a1", "u1", [{"type": "thinking", "thinking": "想想"}], mid="msg_1"), usage(10, 1, 900, 50))
    with_usage(log.call("a2", "a1", "toolu_1", mid="msg_1"), usage(10, 40, 900, 50))   # same API message
    log.result("r1", "a2", "toolu_1", "ok")
    with_usage(log.assistant("a3", "r1", text("修好了"), mid="msg_2"), usage(5, 20, 1000, 0))
    log.raw({"type": "system", "subtype": "turn_duration", "uuid": "d1", "parentUuid": "a3", "durationMs": 12500,
             "sessionId": "sess-1", "timestamp": "2026-01-01T10:00:30.000Z", "isSidechain": False})
    (node,) = nodes(store, import_file(log.write(tmp_path / "s.jsonl"), store))
    replies = [m for m in node.messages if m["role"] == "assistant"]
    assert [m.get("usage") for m in replies] == [{"input": 10, "output": 40, "cache_read": 900, "cache_write": 50},
                                                 {"input": 5, "output": 20, "cache_read": 1000, "cache_write": 0}]
    assert replies[1]["duration_ms"] == 12500
    total = totals(node.messages)
    assert (total.input, total.output, total.cache_read, total.cache_write) == (15, 60, 1900, 50)
    assert (total.tool_calls, total.duration_ms, total.recorded) == (1, 12500, 2)


def test_a_warmup_agent_file_beside_a_2_0_session_is_left_out_and_counted(tmp_path, store):
    spawning_session().write(tmp_path / "sess-1.jsonl")
    agent_log("ab12cd3").write(tmp_path / "agent-ab12cd3.jsonl")
    warm = Claude().user("w-1", None, "Warmup", isSidechain=True, agentId="0f0f0f0")
    warm.assistant("w-2", "w-1", text("I'm ready to help."), isSidechain=True, agentId="0f0f0f0")
    warm.write(tmp_path / "agent-0f0f0f0.jsonl")
    report = import_file(tmp_path / "sess-1.jsonl", store)
    main, agent = nodes(store, report)
    assert report.root_ids == [main.session_id] and agent.source["agent_id"] == "ab12cd3"
    assert report.dropped["subagent:warmup（2.0 版预热用的代理文件，不导入）"] == 1
    folder = import_folder(tmp_path, SessionStore(tmp_path / "folder"))
    assert folder.problems == [] and [len(r.root_ids) for r in folder.reports] == [1]


def test_a_subagent_with_no_spawning_id_hangs_under_the_last_task_call_before_it(tmp_path, store):
    log = spawning_session(agent_id=None, result_text="done")
    log.user("u2", "a2", "再查一遍 tests/").call("a3", "u2", "toolu_task2", name="Task",
                                              tool_input={"description": "第二次查找", "prompt": "看 tests/"})
    log.result("r2", "a3", "toolu_task2", "done").assistant("a4", "r2", text("查完了"))
    log.write(tmp_path / "sess-1.jsonl")
    agent = agent_log("a99", prompt="（提示词和 Task 调用里的不一样）")
    agent.lines[0]["timestamp"] = "2026-01-01T10:00:03.500Z"   # between the first Task call (:02) and the second (:06)
    agent.write(tmp_path / "agent-a99.jsonl")
    report = import_file(tmp_path / "sess-1.jsonl", store)
    main, sub = nodes(store, report)
    assert report.root_ids == [main.session_id] and sub.parent_id == main.session_id and sub.source["subagent"]
    assert sub.title == "子代理：查找没有测试的模块"   # the Task call before it, not the later one
    assert any("按时间挂在 最近的一次 Task 调用 下" in w for w in report.warnings)


def test_missing_lines_in_the_middle_leave_one_tree_with_each_gap_marked(tmp_path, store):
    log = Claude().user("u1", None, "一").assistant("a1", "u1", text("二"))
    log.user("u2", "gone-1", "三").assistant("a2", "u2", text("四"))
    log.user("u3", "gone-2", "五").assistant("a3", "u3", text("六"))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert [m.get("notice") for m in node.messages] == [None, None, "gap", None, None, "gap", None, None]
    assert [t for t, m in zip(own_texts(node), node.messages) if not m.get("notice")] == ["一", "二", "三", "四",
                                                                                        "五", "六"]
    again = import_file(tmp_path / "s.jsonl", store)
    assert (again.written, again.unchanged) == (0, 1)   # the gap markers are stable: a re-import writes nothing


def test_pi_usage_is_kept_per_reply(tmp_path, store):
    from test_import import pi_file, pi_msg
    figures = {"input": 1200, "output": 80, "cacheRead": 300, "cacheWrite": 40, "totalTokens": 1620,
               "cost": {"input": 0.1, "output": 0.2, "total": 0.3}}
    path = pi_file(tmp_path / "pi.jsonl", [pi_msg("u1", None, "user", "你好"),
                                           pi_msg("a1", "u1", "assistant", text("你好！"), usage=figures)])
    (node,) = nodes(store, import_file(path, store))
    assert node.messages[1]["usage"] == {"input": 1200, "output": 80, "cache_read": 300, "cache_write": 40}


def parent_and_pointer_fork(folder: Path, first_parent=None) -> Path:
    Claude(session="parent-sess").user("u1", None, "缓存用哪种方案？").assistant("a1", "u1", text("A 或 B")) \
        .user("u2", "a1", "用 A").assistant("a2", "u2", text("A 做好了")).write(folder / "parent-sess.jsonl")
    fork = Claude(session="fork-sess").raw({"type": "fork-context-ref", "sessionId": "fork-sess",
                                            "forkedFrom": {"sessionId": "parent-sess", "messageUuid": "a1"}})
    fork.user("u3", first_parent, "改用 B").assistant("a3", "u3", text("B 做好了"))
    return fork.write(folder / "fork-sess.jsonl")


@pytest.mark.parametrize("first_parent", [None, "a1"], ids=["pointer-only", "parent-uuid-in-the-other-file"])
def test_a_fork_pointer_is_hydrated_from_the_session_it_names(tmp_path, store, first_parent):
    fork = parent_and_pointer_fork(tmp_path, first_parent)
    report = import_file(fork, store)
    original, forked = nodes(store, report)   # one tree: the fork hangs where it left the session it names
    assert own_texts(original) == ["缓存用哪种方案？", "A 或 B", "用 A", "A 做好了"]
    assert (forked.parent_id, forked.fork_point, own_texts(forked)) == (original.session_id, 2, ["改用 B", "B 做好了"])
    assert forked.source["active_end"] and report.active_id == forked.session_id and "分叉会话" in forked.title
    assert any("已把那个会话一起读进来" in w for w in report.warnings) and report.root_ids == [original.session_id]


def test_a_fork_pointer_whose_session_is_gone_is_named(tmp_path, store):
    fork = parent_and_pointer_fork(tmp_path)
    (tmp_path / "parent-sess.jsonl").unlink()
    report = import_file(fork, store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["改用 B", "B 做好了"]
    assert any("parent-sess.jsonl 不在这里" in w for w in report.warnings)


def test_the_fork_worktree_briefing_is_not_a_typed_prompt_in_either_shape(tmp_path, store):
    log = Claude(session="fork-sess")
    log.raw({"type": "attachment", "uuid": "env", "parentUuid": None, "sessionId": "fork-sess", "isSidechain": False,
             "timestamp": "2026-09-10T10:00:00.000Z",
             "attachment": {"type": "environment", "snapshot": {"isWorktree": True, "cwd": "/repo/.wt/fork-1"}}})
    log.user("b1", "env", "<system-reminder>\nYou are working in a new git worktree at /repo/.wt/fork-1 on branch "
                          "fork-1, forked from the original session.\n</system-reminder>")
    log.user("u1", "b1", "在这个分支里试方案 B").assistant("a1", "u1", text("好"))
    (node,) = nodes(store, import_file(log.write(tmp_path / "fork-sess.jsonl"), store))
    assert node.title == "在这个分支里试方案 B" and node.messages[0]["meta"] is True
    assert own_texts(node)[1:] == ["在这个分支里试方案 B", "好"]


def test_a_gap_across_a_session_id_change_in_one_file_is_bridged_too(tmp_path, store):
    log = Claude(session="s-1").user("u1", None, "一").assistant("a1", "u1", text("二"))
    log.session = "s-2"   # resumed in the same stream, and the line it continued from is missing
    log.user("u2", "gone", "三").assistant("a2", "u2", text("四"))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    assert len(report.root_ids) == 1
    texts = [text for node in nodes(store, report) for text in own_texts(node)]
    assert texts[:2] == ["一", "二"] and texts[-2:] == ["三", "四"]
