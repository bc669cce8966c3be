"""Hostile inputs for the importer (issue 18, items 2 and 3): bounded memory for bad lines, linear work.

Work is never timed here. Each shape is imported at n and 2n lines while sys.settrace counts the Python lines
executed inside code/s11_import (json.loads and the store run in C or elsewhere and are not counted): a stage that
is linear does about twice the work at twice the size; the quadratic stages this issue found (re-filtering a
growing streamed message, walking the whole chain per compact boundary, sorting siblings per insertion) did four
times the work. Speed figures live in benchmarks/bench_import.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from test_import import Claude, nodes, own_texts, pi_file, pi_msg, plain, text

import s11_import
from s11_import import import_file
from s11_import.plan import MAX_COPIED_MESSAGES
from s11_session import SessionStore

PACKAGE = os.path.dirname(s11_import.__file__)


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


def lines_of_work(path: Path, tmp_path: Path) -> int:
    """Python lines executed inside code/s11_import while importing path (a dry run: nothing is written)."""
    count = [0]

    def local(frame, event, arg):
        if event == "line":
            count[0] += 1
        return local

    def calls(frame, event, arg):
        return local if frame.f_code.co_filename.startswith(PACKAGE) else None

    sys.settrace(calls)
    try:
        import_file(path, SessionStore(tmp_path / f"dry-{path.stem}"), dry_run=True)
    finally:
        sys.settrace(None)
    return count[0]


def head(log: Claude) -> Claude:
    return log.user("u0", None, "开始")


def streamed(n: int) -> Claude:
    """One assistant API message streamed over n lines that share message.id, each the child of the previous."""
    log = head(Claude())
    for i in range(n):
        log.assistant(f"a{i}", "u0" if i == 0 else f"a{i - 1}", text(f"第 {i} 段"), mid="msg_ONE")
    return log


def compact_boundaries(n: int) -> Claude:
    """n compact_boundary lines, each continuing from the previous one through logicalParentUuid."""
    log = head(Claude())
    for i in range(n):
        log.raw({"type": "system", "subtype": "compact_boundary", "uuid": f"b{i}", "parentUuid": None,
                 "logicalParentUuid": "u0" if i == 0 else f"b{i - 1}", "sessionId": "sess-1"})
    return log.user("u1", f"b{n - 1}", "压缩之后").assistant("a1", "u1", text("好"))


def long_chain(n: int) -> Claude:
    log = head(Claude())
    for i in range(1, n):
        (log.assistant if i % 2 else log.user)(f"m{i}", "u0" if i == 1 else f"m{i - 1}", text(f"{i}"))
    return log


def wide_fan(n: int) -> Claude:
    """One tool call with n tool results as children, each result with a later reply of its own: the shape that
    made the old linearise walk ever longer chains (four times the work at twice the size)."""
    log = head(Claude()).call("a0", "u0", "t0")
    for i in range(n):
        log.result(f"r{i}", "a0", "t0", f"结果 {i}")
    for i in range(n):
        log.assistant(f"x{i}", f"r{i}", text(f"回复 {i}"))
    return log


def hook_fans(n: int) -> Claude:
    """n turns, each a tool call with a hook progress line beside its result (the everyday fake fork)."""
    log = head(Claude())
    parent = "u0"
    for i in range(n):
        log.call(f"c{i}", parent, f"t{i}").link(f"h{i}", f"c{i}").result(f"r{i}", f"c{i}", f"t{i}", "ok")
        log.assistant(f"a{i}", f"h{i}", text(f"第 {i} 轮"))
        parent = f"a{i}"
    return log


def torn_lines(n: int) -> Claude:
    """n torn lines, each followed on the same line by a complete message with a few dozen content blocks."""
    log = head(Claude())
    for i in range(n):
        whole = {"type": "assistant", "uuid": f"t{i}", "parentUuid": "u0" if i == 0 else f"t{i - 1}",
                 "sessionId": "sess-1", "message": {"role": "assistant", "content": [
                     {"type": "text", "text": f"块 {j}"} for j in range(30)]}}
        log.raw('{"type":"assistant","uuid":"torn' + str(i) + '","message":{"content":[{"type":"te'
                + json.dumps(whole))
    return log


SHAPES = {"streamed fragments": streamed, "compact boundaries": compact_boundaries, "long parent chain": long_chain,
          "wide sibling fan": wide_fan, "hook fans": hook_fans, "torn lines": torn_lines}


@pytest.mark.parametrize("shape", SHAPES)
def test_every_stage_does_linear_work_on_hostile_shapes(tmp_path, shape):
    # 500 and 1,000: the sizes at which the test below shows a quadratic stage tripling the work
    small = lines_of_work(SHAPES[shape](500).write(tmp_path / "small.jsonl"), tmp_path)
    large = lines_of_work(SHAPES[shape](1000).write(tmp_path / "large.jsonl"), tmp_path)
    assert small > 1000
    assert large <= 2.3 * small, f"{shape}: {small} lines of work at n, {large} at 2n (quadratic is ~4x)"


def test_the_work_counter_sees_a_quadratic_loop(tmp_path, monkeypatch):
    # the measure must be able to fail: put back the old per-part re-filtering of a growing streamed message
    # (compiled under the package's file name, so the counter sees it as the importer's own code)
    from s11_import import graph
    source = ("def quadratic_absorb(group, part, first_blocks):\n"
              "    content = group.message['content'] = _blocks(group.message['content'])\n"
              "    content.extend(_blocks(part.message['content']))\n"
              "    content[:] = [b for b in content if b.get('type') != 'text' or str(b.get('text', '')).strip()]\n")
    namespace = {"_blocks": graph._blocks}
    exec(compile(source, graph.__file__, "exec"), namespace)
    monkeypatch.setattr(graph, "_absorb", namespace["quadratic_absorb"])
    small = lines_of_work(streamed(500).write(tmp_path / "small.jsonl"), tmp_path)
    large = lines_of_work(streamed(1000).write(tmp_path / "large.jsonl"), tmp_path)
    assert large > 3 * small


# ── the results on those shapes are right ───────────────────────────────────────────────────
def test_thousands_of_streamed_parts_become_one_message_in_order(tmp_path, store):
    report = import_file(streamed(3000).write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert [m["role"] for m in node.messages] == ["user", "assistant"]
    assert [b["text"] for b in node.messages[1]["content"]] == [f"第 {i} 段" for i in range(3000)]


def test_a_chain_of_compact_boundaries_stays_one_conversation(tmp_path, store):
    report = import_file(compact_boundaries(3000).write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["开始", "压缩之后", "好"] and report.warnings == []
    assert report.dropped["system:compact_boundary"] == 3000


def test_a_wide_fan_of_tool_results_is_one_line_in_file_order(tmp_path, store):
    report = import_file(wide_fan(1500).write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    texts = own_texts(node)
    assert texts[:2] == ["开始", "Bash"] and len(texts) == 2 + 3000
    assert texts[2:1502] == [f"结果 {i}" for i in range(1500)] and texts[1502:] == [f"回复 {i}" for i in range(1500)]


def test_hook_lines_beside_results_stay_one_line(tmp_path, store):
    report = import_file(hook_fans(500).write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert len(node.messages) == 1 + 3 * 500 and own_texts(node)[-3:] == ["Bash", "ok", "第 499 轮"]


def test_a_20000_deep_chain_is_one_node(tmp_path, store):
    report = import_file(long_chain(20_000).write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert len(node.messages) == 20_000 and plain(node.messages[-1]) == "19999"


def test_many_torn_lines_keep_their_complete_tails(tmp_path, store):
    report = import_file(torn_lines(300).write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert len(node.messages) == 301 and all(len(m["content"]) == 30 for m in node.messages[1:])
    assert [m["id"] for m in node.messages[1:]] == [f"t{i}" for i in range(300)]
    assert report.skipped_total == 300 and all("不完整" in reason for _, reason in report.skipped)


def test_nesting_deeper_than_the_parser_is_a_skipped_line_not_a_crash(tmp_path, store):
    deep = '{"type":"user","uuid":"d","parentUuid":"u0","message":{"role":"user","content":' + "[" * 100_000
    log = head(Claude()).raw(deep + "]" * 100_000 + "}}").assistant("a1", "u0", text("还在"))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    assert report.skipped == [(2, "JSON 嵌套太深")] and own_texts(nodes(store, report)[0]) == ["开始", "还在"]


# ── bad lines: the first SKIPPED_KEPT are listed, the rest counted ───────────────────────────
def bad_lines(blank: int, garbage: int) -> Claude:
    log = head(Claude())
    for _ in range(blank):
        log.raw("")
    for i in range(garbage):
        log.raw(f"garbage line {i}")
    return log.assistant("a1", "u0", text("最后一句"))


def test_skipped_lines_keep_a_bounded_record_and_count_the_rest(tmp_path, store):
    reports = [import_file(bad_lines(n, n).write(tmp_path / f"bad-{n}.jsonl"), store) for n in (3000, 6000)]
    for report, n in zip(reports, (3000, 6000)):
        assert len(report.skipped) == s11_import.SKIPPED_KEPT == 200           # the same record at n and 2n
        assert report.skipped_total == 2 * n
        assert report.skipped_by_reason == {"空行": n, "不是 JSON": n}
        assert [line for line, _ in report.skipped] == list(range(2, 202))
        described = report.describe()
        assert f"跳过 {2 * n} 行" in described and f"另有 {2 * n - 20} 行" in described and f"空行 ×{n}" in described
        assert own_texts(nodes(store, report)[0]) == ["开始", "最后一句"]


def test_glued_duplicate_and_unknown_lines_are_counted_not_listed(tmp_path, store):
    log = head(Claude())
    for i in range(600):
        glued = {"type": "assistant", "uuid": f"g{i}", "parentUuid": "u0" if i == 0 else f"g{i - 1}",
                 "sessionId": "sess-1", "message": {"role": "assistant", "content": "x"}}
        log.raw(json.dumps(glued) + json.dumps({"type": "user", "uuid": "u0", "parentUuid": None,
                                                "sessionId": "sess-1", "message": {"role": "user", "content": "重放"}}))
    for i in range(500):
        log.raw({"type": f"future-kind-{i}", "sessionId": "sess-1"})   # metadata of a later version, no uuid
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    glued = [w for w in report.warnings if "粘在一起" in w]
    duplicated = [w for w in report.warnings if "重复" in w]
    assert len(glued) == 1 and glued[0].startswith("600 行") and glued[0].endswith("…… 行）")
    assert len(duplicated) == 1 and duplicated[0].startswith("600 行")
    assert report.skipped == [] and len(report.dropped) <= 65 and sum(report.dropped.values()) == 500
    assert "其它类型" in report.dropped


def test_too_many_branches_are_refused_before_anything_is_written(tmp_path, store, monkeypatch):
    monkeypatch.setattr(s11_import.plan, "MAX_COPIED_MESSAGES", 500)
    log = long_chain(100)
    for b in range(20):   # 20 user rewinds near the end of a 100-message chain: 20 × ~98 copied messages
        log.user(f"b{b}", "m98" if b % 2 else "m97", f"改问法 {b}")
    with pytest.raises(s11_import.TooManyBranches, match="s.jsonl.*分支太多"):
        import_file(log.write(tmp_path / "s.jsonl"), store)
    assert os.listdir(store.storage_dir) == [] and MAX_COPIED_MESSAGES >= 1_000_000


def test_the_complete_tail_finder_handles_escapes_and_strings_full_of_braces():
    find = s11_import.lines.complete_tail
    tail = {"type": "user", "text": 'a "quoted" \\ back}{slash } ]["{', "n": [1, {"k": "}"}]}
    for torn in ('{"type":"us', '{"a":"unterminated string', "garbage", '{"x":[1,2'):
        assert find(torn + json.dumps(tail)) == tail
    assert find('{"type":"user","text":"only a torn line') is None
    assert find('{"a": 1} trailing') is None
    assert find('{"deep": ' + "[" * 5000 + "]" * 5000 + "}") is None   # deeper than the parser: no crash


def test_pi_torn_tails_and_blank_lines_count_too(tmp_path, store):
    entries = [pi_msg("m1", None, "user", "问")] + [""] * 400 + [pi_msg("m2", "m1", "assistant", text("答"))]
    report = import_file(pi_file(tmp_path / "p.jsonl", entries), store)
    assert report.skipped_total == 400 and len(report.skipped) == 200 and own_texts(nodes(store, report)[0]) == [
        "问", "答"]


def test_the_docstring_examples_of_the_importer_hold():
    import doctest

    from s11_import import lines, transcript
    for module in (lines, transcript):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


WRONG_TYPES = {   # fields a reader indexes, iterates or looks up, written with the wrong JSON type
    "claude": [{"type": ["user"], "uuid": "x1", "message": {"role": "user", "content": "列表类型"}},
               {"type": "user", "uuid": "x2", "parentUuid": "u0", "message": {"role": "user", "content": [
                   {"type": ["text"], "text": 1}, {"type": {"a": 1}}, 7, None]}},
               {"type": "assistant", "uuid": "x3", "parentUuid": "x2", "message": {"role": "assistant", "content": [
                   {"type": "tool_use", "id": "t", "name": ["Task"], "input": {"prompt": 5}}]}},
               {"type": "user", "uuid": "x4", "parentUuid": "x3", "toolUseResult": {"agentId": ["a"]},
                "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": 42}]}},
               {"type": "progress", "uuid": "x5", "parentUuid": "x4", "data": {"type": "agent_progress",
                                                                              "agentId": "ag", "message": {"x": 1}}}],
    "codex": [{"type": "session_meta", "payload": {"id": ["x"], "git": "main"}},
              {"type": "response_item", "payload": {"type": ["message"]}},
              {"type": "response_item", "payload": {"type": "message", "role": "user", "content": 3}},
              {"type": "response_item", "payload": {"type": "reasoning", "summary": 1.5, "content": {"a": 1}}},
              {"type": "response_item", "payload": {"type": "function_call", "arguments": ["x"], "name": 3}},
              {"type": "event_msg", "payload": {"type": "thread_rolled_back", "num_turns": [1]}},
              {"type": "response_item", "payload": {"type": "message", "role": "assistant",
                                                    "content": [{"type": "output_text", "text": "还在"}]}}],
    "gemini": [{"sessionId": "g", "projectHash": "h"}, {"id": "m1", "type": ["user"], "content": "x"},
               {"id": "m2", "type": "gemini", "thoughts": 5, "toolCalls": 1.5, "content": {"text": 3}},
               {"id": "m3", "type": "gemini", "toolCalls": [{"args": [1], "result": 7, "status": ["error"]}]},
               {"$rewindTo": ["m1"]}, {"$set": {"messages": 3, "summary": ["t"]}},
               {"id": "m4", "type": "user", "content": [{"inlineData": 5}, {"functionResponse": "x"}, "还在"]}],
}


@pytest.mark.parametrize("shape", WRONG_TYPES)
def test_fields_of_the_wrong_json_type_are_kept_inert_not_a_crash(tmp_path, store, shape):
    lines = WRONG_TYPES[shape]
    log = head(Claude()) if shape == "claude" else Claude()
    for line in lines:
        log.raw(line)
    report = import_file(log.write(tmp_path / f"{shape}.jsonl"), store)
    assert report.node_ids and store.check() == []
    for node_id in report.node_ids:   # both exports still work on what was stored
        assert store.export_markdown(node_id) and "<!doctype html>" in store.export_html(node_id).lower()


# ── tree JSONL fan-out (issue 41 item 2): bounded by the expanded histories before any history is built ──────────
def fan_out(path: Path, root_messages: int, children: int) -> Path:
    """The hostile tree file: one root with many messages and thousands of tiny children that each inherit all of
    them (a few bytes per child in the file, root_messages messages each once expanded)."""
    head = {"format": "s11-session-tree", "version": 1, "scope": "tree", "nodes": children + 1}
    root = {"session_id": "root0001", "parent_id": None, "title": "根", "created_ns": 1, "fork_point": None,
            "messages": [{"role": "user", "content": f"m{i}"} for i in range(root_messages)]}
    kids = ({"session_id": f"kid{n:05d}", "parent_id": "root0001", "title": "子", "created_ns": 2,
             "fork_point": root_messages, "inherit": root_messages, "messages": [{"role": "user", "content": "x"}]}
            for n in range(children))
    with open(path, "w", encoding="utf-8") as handle:
        for line in (head, root, *kids):
            handle.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path


def test_a_tree_file_past_the_expansion_bounds_is_refused_and_one_within_them_imports(tmp_path, store):
    tree_jsonl = s11_import.tree_jsonl
    path = fan_out(tmp_path / "fan.jsonl", 50, 100)   # expanded: 50 + 100 × 51 = 5,150 messages
    with pytest.raises(s11_import.TooManyBranches) as caught:
        tree_jsonl.import_tree(str(path), store, max_messages=5_149)
    assert "fan.jsonl：这份文件展开后共有 5,150 条消息" in str(caught.value) and "超过上限 5,149" in str(caught.value)
    one_message = len('{"role":"user","content":"m0"}')   # each message counts its compact JSON bytes
    with pytest.raises(s11_import.TooManyBranches, match="展开后共有 .*超过上限 1.0 KB"):
        tree_jsonl.import_tree(str(path), store, max_history_bytes=1024)
    assert os.listdir(store.storage_dir) == [] and one_message * 5_150 > 1024
    report = tree_jsonl.import_tree(str(path), store, max_messages=5_150)
    assert report.written == 101 and len(store.load("kid00099").messages) == 51


def test_the_issue_s_fan_out_is_refused_at_the_default_bound_with_memory_that_follows_the_file(tmp_path, store):
    """5,000 root messages under 1,000 children expand to 5 million messages, 2.5 times MAX_COPIED_MESSAGES:
    refused by import_file (the page's and the command line's path) before any history is built."""
    import tracemalloc
    path = fan_out(tmp_path / "fan.jsonl", 5_000, 1_000)
    tracemalloc.start()
    try:
        with pytest.raises(s11_import.TooManyBranches, match=r"展开后共有 5,006,000 条消息.*超过上限 2,000,000"):
            import_file(str(path), store)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert os.listdir(store.storage_dir) == []
    assert peak < 30 * path.stat().st_size   # the parsed file, not 5 million list slots (40 MB of pointers alone)
