"""Issue 44 item 3: usage summed per node (its own messages) and per branch (root to it), and described in Chinese;
numbers from someone else's file that are not non-negative integers are never counted."""

from __future__ import annotations

from s11_import import usage
from s11_session import SessionNode


def reply(inp, out, **extra) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": "好"}, {"type": "tool_use", "id": "t", "name": "x",
                                                                            "input": {}}],
            "usage": {"input": inp, "output": out, **extra}}


def test_a_node_counts_its_own_messages_and_its_branch_counts_from_the_root():
    prefix = [{"role": "user", "content": "问"}, reply(100, 10)]
    node = SessionNode(session_id="b", title="分支", parent_id="a", fork_point=2,
                       messages=[*prefix, {"role": "user", "content": "再问"}, reply(500, 50, cache_read=400),
                                 {**reply(7, 1), "duration_ms": 1500}])
    own, whole = usage.node_totals(node), usage.branch_totals(node)
    assert (own.input, own.output, own.cache_read, own.tool_calls, own.duration_ms, own.recorded) == (
        507, 51, 400, 2, 1500, 2)
    assert (whole.input, whole.output, whole.tool_calls, whole.recorded, whole.messages) == (607, 61, 3, 3, 5)
    assert usage.describe(own) == "输入 507 · 输出 51 · 缓存读 400 · 工具调用 2 次 · 耗时 1.5 秒"


def test_hostile_numbers_are_not_counted_and_no_record_is_said_plainly():
    messages = [{"role": "assistant", "content": "x", "usage": {"input": -5, "output": True, "cache_read": "9"},
                 "duration_ms": -1},
                {"role": "assistant", "content": "y", "usage": "lots"}]
    total = usage.totals(messages)
    assert (total.input, total.output, total.cache_read, total.duration_ms, total.recorded) == (0, 0, 0, 0, 0)
    assert usage.describe(total) == "记录里没有 token 数 · 工具调用 0 次"
    message: dict = {"role": "assistant", "content": []}
    usage.add(message, usage.normalised({"input_tokens": 3, "output_tokens": -2}, {"input": "input_tokens",
                                                                                 "output": "output_tokens"}))
    assert message["usage"] == {"input": 3}
