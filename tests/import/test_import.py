"""Importing Claude Code / Pi transcripts: behaviour on synthetic transcripts built here.

Each test builds the smallest transcript that shows one claim of issue 10 ("a hook line beside a tool
result is not a branch", "re-importing writes nothing new", ...), imports it into a fresh store and
reads the result back through the store's public API. The real sample files are in test_import_samples.py.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import s11_import
import s11_journal
from s11_import import NoConversation, TranscriptTooLarge, UnsupportedFormat, import_file
from s11_import.formats import FORMATS, detect
from s11_session import SessionError, SessionStore

REPO = Path(__file__).resolve().parents[2]
CODE_DIR = REPO / "code"


# ── builders ────────────────────────────────────────────────────────────────────────────────
def text(value: str) -> list:
    return [{"type": "text", "text": value}]


class Claude:
    """A Claude Code transcript, line by line; uuids are short readable names."""

    def __init__(self, session: str = "sess-1"):
        self.lines: list = []
        self.session = session
        self.clock = 0

    def _base(self, kind: str, uid, parent, extra: dict) -> dict:
        self.clock += 1
        minute, second = divmod(self.clock, 60)
        line = {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": self.session, "isSidechain": False,
                "timestamp": f"2026-01-01T1{minute // 60}:{minute % 60:02d}:{second:02d}.000Z", "cwd": "/repo",
                "version": "2.1.42", "gitBranch": "main", "userType": "external"}
        line.update(extra)
        return line

    def user(self, uid, parent, content, **extra) -> "Claude":
        self.lines.append({**self._base("user", uid, parent, extra), "message": {"role": "user", "content": content}})
        return self

    def assistant(self, uid, parent, content, mid=None, **extra) -> "Claude":
        body = {"id": mid or f"msg_{uid}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": content}
        self.lines.append({**self._base("assistant", uid, parent, extra), "message": body})
        return self

    def call(self, uid, parent, tool_id, name="Bash", tool_input=None, mid=None, **extra) -> "Claude":
        block = {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input or {"command": "ls"}}
        return self.assistant(uid, parent, [block], mid=mid, **extra)

    def result(self, uid, parent, tool_id, output, **extra) -> "Claude":
        return self.user(uid, parent, [{"type": "tool_result", "tool_use_id": tool_id, "content": output}], **extra)

    def link(self, uid, parent, kind="progress", **extra) -> "Claude":
        self.lines.append({**self._base(kind, uid, parent, extra), "data": {"type": "hook_progress"}})
        return self

    def raw(self, value) -> "Claude":
        self.lines.append(value)
        return self

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            for line in self.lines:
                handle.write((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n")
        return path


def pi_file(path: Path, entries: list, header: dict | None = None) -> Path:
    header = header if header is not None else {"type": "session", "version": 3, "id": "pi-sess",
                                                "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work"}
    with open(path, "w", encoding="utf-8") as handle:
        for entry in ([header] if header else []) + entries:
            handle.write((entry if isinstance(entry, str) else json.dumps(entry, ensure_ascii=False)) + "\n")
    return path


def pi_msg(eid, parent, role, content, **extra) -> dict:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": f"2026-01-01T00:00:{len(eid):02d}.000Z",
            "message": {"role": role, "content": content, **extra}}


def nodes(store: SessionStore, report) -> list:
    return [store.load(node_id) for node_id in report.node_ids]


def plain(message: dict) -> str:
    """A message as one line of text: text, thinking, the tool name of a call, the output of a result."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(plain(b) if b.get("type") == "tool_result" else
                    str(b.get("text") or b.get("thinking") or b.get("name") or b.get("type")) for b in content or [])


def own_texts(node) -> list:
    return [plain(m) for m in node.messages[node.fork_point or 0:]]


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


def snapshot_dir(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# ── reading: every line accounted for ───────────────────────────────────────────────────────
def test_bad_lines_are_skipped_with_their_one_based_numbers_and_reasons(tmp_path, store):
    log = (Claude().user("u1", None, "你好").raw("").raw('{"type":"user",').raw("42").raw('{"silly": 1}')
           .raw({"type": "brand-new-kind", "uuid": "x1", "parentUuid": "u1"}).raw('"just a string"')
           .assistant("a1", "x1", text("收到")))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    assert [line for line, _ in report.skipped] == [2, 3, 4, 5, 6, 7]
    reasons = dict(report.skipped)
    assert "空行" in reasons[2] and "不完整" in reasons[3] and "数字" in reasons[4]
    assert "type" in reasons[5] and "brand-new-kind" in reasons[6] and "字符串" in reasons[7]
    (node,) = nodes(store, report)
    assert own_texts(node) == ["你好", "收到"]   # the unknown line still linked a1 to u1


def test_two_objects_glued_on_one_line_are_both_recovered(tmp_path, store):
    first = json.dumps({"type": "message", "timestamp": "2025-01-01T00:00:01Z",
                        "message": {"role": "user", "content": "第一条"}})
    second = json.dumps({"type": "message", "timestamp": "2025-01-01T00:00:02Z",
                         "message": {"role": "assistant", "content": text("第二条")}})
    path = pi_file(tmp_path / "v1.jsonl", [first + second], header={"type": "session", "id": "old", "cwd": "/x",
                                                                    "timestamp": "2025-01-01T00:00:00Z"})
    report = import_file(path, store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["第一条", "第二条"]
    assert report.skipped == []
    assert any("第 2 行" in warning and "粘" in warning for warning in report.warnings)


def test_a_torn_line_followed_by_a_complete_object_on_the_same_line_keeps_the_complete_one(tmp_path, store):
    torn = '{"type":"message","id":"m2","parentId":"m1","message":{"role":"assis'
    whole = json.dumps(pi_msg("m2b", "m1", "assistant", text("完整的那条")))
    path = pi_file(tmp_path / "p.jsonl", [pi_msg("m1", None, "user", "问"), torn + whole])
    report = import_file(path, store)
    assert [line for line, _ in report.skipped] == [3]
    assert own_texts(nodes(store, report)[0]) == ["问", "完整的那条"]


def test_the_source_file_is_never_modified(tmp_path, store):
    path = Claude().user("u1", None, "hi").assistant("a1", "u1", text("ok")).write(tmp_path / "s.jsonl")
    before, stat = path.read_bytes(), path.stat()
    import_file(path, store)
    import_file(path, store)
    assert path.read_bytes() == before and path.stat().st_mtime_ns == stat.st_mtime_ns


# ── refusals leave the store untouched ──────────────────────────────────────────────────────
def test_random_bytes_are_unsupported_and_the_store_is_untouched(tmp_path, store):
    store.create_session("已有的会话", [{"role": "user", "content": "别动我"}])
    before = snapshot_dir(Path(store.storage_dir))
    path = tmp_path / "noise.jsonl"
    path.write_bytes(os.urandom(64 * 1024))
    with pytest.raises(UnsupportedFormat, match="noise.jsonl"):
        import_file(path, store)
    assert snapshot_dir(Path(store.storage_dir)) == before
    assert store.check() == []


@pytest.mark.parametrize("content", ['[{"role": "user", "content": "hi"}]\n', "# README\n\n普通文本，不是记录。\n",
                                     '{"messages": [{"role": "user"}]}\n'])
def test_json_and_text_that_are_not_transcripts_are_unsupported(tmp_path, store, content):
    path = tmp_path / "other.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UnsupportedFormat, match="other.jsonl"):
        import_file(path, store)
    assert os.listdir(store.storage_dir) == []


FORMAT_SAMPLES = {   # one object of each shape every format writes (the first lines a sniffer may see)
    s11_import.CLAUDE: [{"type": "user", "uuid": "u", "parentUuid": None, "sessionId": "s", "message": {"role": "user"}},
                        {"type": "assistant", "message": {"role": "assistant", "content": []}},
                        {"type": "summary", "summary": "t", "leafUuid": "u"}, {"type": "worktree-state"},
                        {"type": "progress", "uuid": "p", "parentUuid": "u"}, {"type": "brand-new", "uuid": "x"}],
    s11_import.PI: [{"type": "session", "version": 3, "id": "p", "timestamp": "t", "cwd": "/w"},
                    {"type": "message", "id": "a", "parentId": None, "message": {"role": "user", "content": "hi"}},
                    {"type": "message", "timestamp": "t", "message": {"role": "user", "content": "v1"}},
                    {"type": "model_change", "id": "m", "parentId": "a"}, {"type": "label", "id": "l"}],
    s11_import.CODEX: [{"timestamp": "t", "type": "session_meta", "payload": {"id": "c"}},
                       {"timestamp": "t", "type": "response_item", "payload": {"type": "message"}},
                       {"timestamp": "t", "type": "event_msg", "payload": {"type": "user_message"}},
                       {"id": "c", "timestamp": "t", "instructions": "agents"},
                       {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
                       {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"},
                       {"record_type": "state"}],
    s11_import.GEMINI: [{"sessionId": "g", "projectHash": "h", "startTime": "t"},
                        {"id": "m1", "timestamp": "t", "type": "user", "content": [{"text": "hi"}]},
                        {"id": "m2", "type": "gemini", "content": "", "toolCalls": []},
                        {"$set": {"summary": "t"}}, {"$rewindTo": "m1"}],
}


def test_each_format_recognises_its_own_objects_and_no_other_format_claims_them():
    assert list(s11_import.FORMAT_NAMES) == [row.name for row in FORMATS] == [
        s11_import.CLAUDE, s11_import.PI, s11_import.CODEX, s11_import.GEMINI]
    for name, objects in FORMAT_SAMPLES.items():
        for obj in objects:
            claimed = [row.name for row in FORMATS if row.sniff(obj)]
            assert claimed == [name], (obj, claimed)   # exclusive, so the table's order cannot matter
            assert detect(obj).name == name
    for stranger in ({"silly": 1}, {"messages": [{"role": "user"}]}, {"type": 3}, {}):
        assert detect(stranger) is None


def test_a_refusal_names_every_supported_format(tmp_path, store):
    path = tmp_path / "other.jsonl"
    path.write_text('{"kind": "note", "text": "hello"}\n{"kind": "note"}\n', encoding="utf-8")
    with pytest.raises(UnsupportedFormat, match="other.jsonl 不是 Claude Code、Pi、Codex CLI 或 Gemini CLI 的会话记录"):
        import_file(path, store)
    assert os.listdir(store.storage_dir) == []


@pytest.mark.parametrize("content", [
    "",
    "\n\n",
    '{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}\n',
    '{"type":"file-history-snapshot","messageId":"m","snapshot":{},"isSnapshotUpdate":false}\n'
    '{"type":"summary","summary":"旧会话","leafUuid":"elsewhere"}\n',
    '{"type":"session","version":3,"id":"x","cwd":"/w"}\n'
    '{"type":"model_change","id":"m","parentId":null,"provider":"a","modelId":"b"}\n',
], ids=["empty", "blank-lines", "pi-header-only", "claude-snapshots-only", "pi-no-messages"])
def test_a_file_without_conversation_says_so_and_writes_nothing(tmp_path, store, content):
    path = tmp_path / "empty.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(NoConversation, match="empty.jsonl.*(没有|空)"):
        import_file(path, store)
    assert os.listdir(store.storage_dir) == []


def test_a_file_over_the_size_limit_is_refused_before_anything_is_written(tmp_path, store):
    path = Claude().user("u1", None, "x" * 5000).write(tmp_path / "big.jsonl")
    with pytest.raises(TranscriptTooLarge, match="big.jsonl"):
        import_file(path, store, max_bytes=1000)
    assert os.listdir(store.storage_dir) == []
    assert s11_import.DEFAULT_MAX_BYTES >= 100 * 1024 * 1024   # well above real transcripts (usually < 20 MB)


def test_errors_are_session_errors_so_callers_can_catch_one_type():
    assert issubclass(UnsupportedFormat, SessionError) and issubclass(NoConversation, SessionError)
    assert issubclass(TranscriptTooLarge, ValueError)


# ── the tree: structural lines never cut or fork the conversation ───────────────────────────
def test_progress_and_attachment_parents_are_relinked_not_turned_into_roots(tmp_path, store):
    log = (Claude().link("p0", None).user("u1", "p0", "列出文件").call("a1", "u1", "t1")
           .link("att", "a1", kind="attachment").result("r1", "att", "t1", "a.txt")
           .link("p1", "r1").raw({"type": "system", "subtype": "stop_hook_summary", "uuid": "s1", "parentUuid": "p1",
                                  "sessionId": "sess-1"})
           .assistant("a2", "s1", text("只有 a.txt")))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["列出文件", "Bash", "a.txt", "只有 a.txt"]
    assert report.dropped == {"progress": 2, "attachment": 1, "system:stop_hook_summary": 1}


def test_a_hook_line_beside_a_tool_result_is_not_a_branch(tmp_path, store):
    # the tool call has two children (a hook progress line and the tool result); the reply hangs on the hook line
    log = (Claude().user("u1", None, "跑测试").call("a1", "u1", "t1").link("hook", "a1")
           .result("r1", "a1", "t1", "3 passed").assistant("a2", "hook", text("测试通过")))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["跑测试", "Bash", "3 passed", "测试通过"]


def test_an_assistant_message_streamed_over_several_lines_becomes_one_message(tmp_path, store):
    log = (Claude().user("u1", None, "看看目录")
           .assistant("a1", "u1", [{"type": "text", "text": "\n\n"}], mid="msg_X")
           .assistant("a2", "a1", [{"type": "thinking", "thinking": "先 ls", "signature": "SIG-SHOULD-GO"}], mid="msg_X")
           .assistant("a3", "a2", text("我看一下。"), mid="msg_X")
           .call("a4", "a3", "t1", mid="msg_X").result("r1", "a4", "t1", "README.md")
           .assistant("a5", "r1", text("只有 README。")))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert [m["role"] for m in node.messages] == ["user", "assistant", "user", "assistant"]
    assert [b["type"] for b in node.messages[1]["content"]] == ["thinking", "text", "tool_use"]
    assert node.messages[1]["id"] == "a1"
    assert "SIG-SHOULD-GO" not in Path(store.path_of(node.session_id)).read_text(encoding="utf-8")


def test_tool_results_hanging_on_different_lines_of_one_streamed_message_stay_in_one_line(tmp_path, store):
    log = (Claude().user("u1", None, "读两个文件").call("a1", "u1", "t1", mid="msg_P").call("a2", "a1", "t2", mid="msg_P")
           .result("r1", "a1", "t1", "one").result("r2", "a2", "t2", "two").assistant("a3", "r2", text("都读完了")))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["读两个文件", "Bash Bash", "one", "two", "都读完了"]


def test_tool_call_ids_survive_on_the_call_and_on_its_result(tmp_path, store):
    log = Claude().user("u1", None, "ls").call("a1", "u1", "toolu_42").result("r1", "a1", "toolu_42", "ok")
    (node,) = nodes(store, import_file(log.write(tmp_path / "s.jsonl"), store))
    assert node.messages[1]["content"][0]["id"] == "toolu_42"
    assert node.messages[2]["content"][0]["tool_use_id"] == "toolu_42"


def rewind_log(extra_lines=None) -> Claude:
    """u1 a1 u2 a2, then the user rewinds to a1 and types u2' (a /rewind: two prompts under one point)."""
    log = (Claude().user("u1", None, "方案？").assistant("a1", "u1", text("A 或 B"))
           .user("u2", "a1", "用 A").assistant("a2", "u2", text("A 做好了"))
           .user("u2b", "a1", "还是用 B").assistant("a2b", "u2b", text("B 做好了")))
    return log


def test_a_rewind_is_a_real_branch_and_the_trunk_ends_at_the_newest_leaf(tmp_path, store):
    report = import_file(rewind_log().write(tmp_path / "s.jsonl"), store)
    trunk, branch = nodes(store, report)
    assert own_texts(trunk) == ["方案？", "A 或 B", "还是用 B", "B 做好了"]
    assert (branch.parent_id, branch.fork_point, own_texts(branch)) == (trunk.session_id, 2, ["用 A", "A 做好了"])
    assert report.active_id == trunk.session_id and trunk.source["active_end"] and not branch.source["active_end"]
    assert report.root_ids == [trunk.session_id]
    assert store.lineage(branch.session_id)[0]["session_id"] == trunk.session_id


def test_last_prompt_chooses_the_active_end_even_on_an_older_branch(tmp_path, store):
    log = rewind_log().raw({"type": "last-prompt", "lastPrompt": "用 A", "leafUuid": "a2", "sessionId": "sess-1"})
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    trunk, branch = nodes(store, report)
    assert own_texts(trunk)[-1] == "A 做好了" and own_texts(branch) == ["还是用 B", "B 做好了"]


def test_the_newest_existing_last_prompt_wins_and_a_dropped_leaf_maps_to_its_message(tmp_path, store):
    log = (rewind_log().link("hook", "a2")
           .raw({"type": "last-prompt", "leafUuid": "a2b", "sessionId": "sess-1"})
           .raw({"type": "last-prompt", "leafUuid": "hook", "sessionId": "sess-1"})      # newest: a hook line under a2
           .raw({"type": "last-prompt", "leafUuid": "not-in-this-file", "sessionId": "sess-1"}))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    trunk = nodes(store, report)[0]
    assert own_texts(trunk)[-1] == "A 做好了" and trunk.source["active_end"]


def test_a_summary_leaf_is_a_title_not_a_position(tmp_path, store):
    log = rewind_log().raw({"type": "summary", "summary": "选方案的讨论", "leafUuid": "a2"})
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    trunk, branch = nodes(store, report)
    assert own_texts(trunk)[-1] == "B 做好了"           # still the newest leaf
    assert trunk.title == "选方案的讨论" and branch.title.startswith("选方案的讨论 · ")


def test_titles_prefer_custom_title_then_ai_title(tmp_path, store):
    log = (Claude().user("u1", None, "第一句").raw({"type": "ai-title", "aiTitle": "AI 起的名字", "sessionId": "sess-1"})
           .raw({"type": "custom-title", "customTitle": "我起的名字", "sessionId": "sess-1"})
           .raw({"type": "ai-title", "aiTitle": "更晚的 AI 名字", "sessionId": "sess-1"}))
    (node,) = nodes(store, import_file(log.write(tmp_path / "s.jsonl"), store))
    assert node.title == "我起的名字"


def test_a_compaction_continues_the_same_tree_through_logicalParentUuid(tmp_path, store):
    log = (Claude().user("u1", None, "开始").assistant("a1", "u1", text("做了很多事"))
           .link("stop", "a1", kind="system", subtype="stop_hook_summary")
           .raw({"type": "system", "subtype": "compact_boundary", "uuid": "cb", "parentUuid": None,
                 "logicalParentUuid": "stop", "sessionId": "sess-1", "content": "Conversation compacted",
                 "compactMetadata": {"trigger": "manual", "preTokens": 1000}})
           .user("cs", "cb", "This session is being continued… 摘要：做了很多事", isCompactSummary=True)
           .user("u2", "cs", "继续").assistant("a2", "u2", text("好")))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["开始", "做了很多事", "This session is being continued… 摘要：做了很多事", "继续", "好"]
    assert node.messages[2].get("summary") is True and node.messages[3].get("summary") is None
    assert report.dropped["system:compact_boundary"] == 1


def test_a_logical_parent_that_would_close_a_cycle_is_not_followed(tmp_path, store):
    # the boundary's logicalParentUuid names its own descendant: following it would make a loop
    log = (Claude().user("u1", None, "开始").assistant("a1", "u1", text("一"))
           .raw({"type": "system", "subtype": "compact_boundary", "uuid": "cb", "parentUuid": None,
                 "logicalParentUuid": "a2", "sessionId": "sess-1"})
           .user("u2", "cb", "继续").assistant("a2", "u2", text("二")))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["开始", "一", "继续", "二"]   # linked to the previous message in file order
    assert any("第 3 行" in w and "环" in w for w in report.warnings)
    assert store.check() == []


def test_a_hand_made_parent_cycle_is_broken_with_a_warning(tmp_path, store):
    log = Claude().user("u1", "a1", "甲").assistant("a1", "u1", text("乙"))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert sorted(own_texts(node)) == ["乙", "甲"]
    assert any("环" in w for w in report.warnings)


def test_the_first_copy_of_a_duplicate_uuid_wins(tmp_path, store):
    log = (Claude().user("u1", None, "原来的话").assistant("a1", "u1", text("回复"))
           .user("u1", None, "重放时被改过的话"))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["原来的话", "回复"]
    assert any("重复" in w and "3" in w for w in report.warnings)


def test_an_orphan_after_earlier_lines_is_bridged_with_the_gap_marked(tmp_path, store):
    """Issue 44: missing lines no longer split a session into several trees when the chain is recoverable."""
    log = (Claude().user("u1", None, "主线").assistant("a1", "u1", text("好"))
           .user("u9", "lost-parent", "孤儿").assistant("a9", "u9", text("嗯")))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    texts = own_texts(node)
    assert texts[:2] == ["主线", "好"] and texts[3:] == ["孤儿", "嗯"]
    assert node.messages[2]["notice"] == "gap" and "lost-parent" in texts[2]
    assert node.source["active_end"] and any("第 3 行" in w for w in report.warnings)


def test_an_orphan_at_the_start_of_a_file_stays_a_root(tmp_path, store):
    log = Claude().user("u9", "deleted-file-line", "续接的开头").assistant("a9", "u9", text("嗯"))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["续接的开头", "嗯"] and any("第 1 行" in w for w in report.warnings)


def test_several_session_ids_become_linked_nodes(tmp_path, store):
    log = Claude()
    log.user("a", None, "s1 开始").assistant("b", "a", text("s1 回复")).user("c", "b", "s1 中间")
    log.assistant("d", "c", text("s1 结尾"))
    log.session = "sess-2"
    log.user("e", "d", "s2 接着 s1 的结尾").assistant("f", "e", text("s2 回复"))
    log.session = "sess-3"
    log.user("g", "b", "s3 从 s1 中间分叉").assistant("h", "g", text("s3 回复"))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    s1, s2, s3 = sorted(nodes(store, report), key=lambda n: n.source["session_id"])
    assert s1.parent_id is None and own_texts(s1) == ["s1 开始", "s1 回复", "s1 中间", "s1 结尾"]
    assert (s2.parent_id, s2.fork_point, own_texts(s2)) == (s1.session_id, 4, ["s2 接着 s1 的结尾", "s2 回复"])
    assert (s3.parent_id, s3.fork_point, own_texts(s3)) == (s1.session_id, 2, ["s3 从 s1 中间分叉", "s3 回复"])
    assert report.active_id == s3.session_id


# ── subagents ───────────────────────────────────────────────────────────────────────────────
def subagent_session(tmp_path: Path, inline: bool = False) -> Path:
    task = {"description": "查找没有测试的模块", "prompt": "找出 src/ 下没有测试的模块", "subagent_type": "Explore"}
    log = (Claude().user("u1", None, "哪些模块没测试？").call("a1", "u1", "toolu_task", name="Task", tool_input=task)
           .result("r1", "a1", "toolu_task", "src/cache.py 没有测试", toolUseResult={"agentId": "ab12cd3", "status": "ok"})
           .assistant("a2", "r1", text("src/cache.py 没有测试。")))
    agent = (Claude().user("s1", None, "找出 src/ 下没有测试的模块", isSidechain=True, agentId="ab12cd3")
             .call("s2", "s1", "toolu_grep", name="Grep", isSidechain=True, agentId="ab12cd3")
             .result("s3", "s2", "toolu_grep", "src/cache.py", isSidechain=True, agentId="ab12cd3")
             .assistant("s4", "s3", text("src/cache.py 没有测试"), isSidechain=True, agentId="ab12cd3"))
    main = tmp_path / "sess-1.jsonl"
    if inline:
        log.lines[2:2] = agent.lines   # older Claude Code: sidechain lines inside the main file
    else:
        agent.write(tmp_path / "sess-1" / "subagents" / "agent-ab12cd3.jsonl")
        Claude().user("c1", None, "internal").write(tmp_path / "sess-1" / "subagents" / "agent-acompact-1.jsonl")
    return log.write(main)


@pytest.mark.parametrize("inline", [False, True], ids=["file-beside", "inline-sidechain"])
def test_a_subagent_becomes_a_child_node_of_the_node_holding_the_spawning_call(tmp_path, store, inline):
    report = import_file(subagent_session(tmp_path, inline), store)
    main, agent = nodes(store, report)
    assert own_texts(main) == ["哪些模块没测试？", "Task", "src/cache.py 没有测试", "src/cache.py 没有测试。"]
    assert (agent.parent_id, agent.fork_point) == (main.session_id, 0)
    assert agent.source["subagent"] is True and main.source["subagent"] is False
    assert own_texts(agent)[0] == "找出 src/ 下没有测试的模块" and len(agent.messages) == 4
    assert all(m.get("subagent") for m in agent.messages) and not any(m.get("subagent") for m in main.messages)
    assert agent.title == "子代理：查找没有测试的模块" and report.active_id == main.session_id
    assert not inline or report.dropped.get("subagent:acompact") is None


def test_inline_sidechain_lines_without_a_spawner_are_listed_under_the_session(tmp_path, store):
    log = (Claude().user("u1", None, "主线").assistant("a1", "u1", text("好"))
           .user("s1", None, "谁启动了我？", isSidechain=True).assistant("s2", "s1", text("不知道"), isSidechain=True))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    main, agent = nodes(store, report)
    assert own_texts(main) == ["主线", "好"]
    # issue 44: listed under the session (no Task call to attach it to), not a separate root
    assert agent.parent_id == main.session_id and agent.source["subagent"] and own_texts(agent) == ["谁启动了我？", "不知道"]
    assert any("没有 id 连到启动它的调用" in w for w in report.warnings)


# ── Pi ──────────────────────────────────────────────────────────────────────────────────────
def test_pi_tree_jump_label_and_summaries(tmp_path, store):
    entries = [pi_msg("u1", None, "user", "问题"), pi_msg("a1", "u1", "assistant", text("回答一")),
               pi_msg("u2", "a1", "user", "再试"), pi_msg("a2", "u2", "assistant", text("旧的回答")),
               {"type": "label", "id": "l1", "parentId": "a2", "targetId": "a2", "label": "不满意"},
               {"type": "branch_summary", "id": "bs", "parentId": "a1", "fromId": "l1", "summary": "旧分支：不满意"},
               pi_msg("u3", "bs", "user", "换个问法"), pi_msg("a3", "u3", "assistant", text("新的回答")),
               {"type": "compaction", "id": "cp", "parentId": "a3", "summary": "压缩摘要", "firstKeptEntryId": "u3",
                "tokensBefore": 900},
               pi_msg("u4", "cp", "user", "继续")]
    report = import_file(pi_file(tmp_path / "p.jsonl", entries), store)
    trunk, branch = nodes(store, report)
    assert own_texts(trunk) == ["问题", "回答一", "旧分支：不满意", "换个问法", "新的回答", "压缩摘要", "继续"]
    assert [m.get("summary") for m in trunk.messages] == [None, None, True, None, None, True, None]
    assert (branch.fork_point, own_texts(branch), branch.messages[-1]["label"]) == (2, ["再试", "旧的回答"], "不满意")
    assert branch.title.endswith("不满意") and branch.source["label"] == "不满意"


def test_pi_active_end_is_the_last_entry_even_when_it_moved_back(tmp_path, store):
    # after /tree the user labelled an earlier entry: the last valid entry is the current position
    entries = [pi_msg("u1", None, "user", "一"), pi_msg("a1", "u1", "assistant", text("二")),
               pi_msg("u2", "a1", "user", "三"), pi_msg("a2", "u2", "assistant", text("四")),
               {"type": "label", "id": "l1", "parentId": "a1", "targetId": "a1", "label": "回到这里"}]
    report = import_file(pi_file(tmp_path / "p.jsonl", entries), store)
    trunk, branch = nodes(store, report)
    assert own_texts(trunk) == ["一", "二"] and trunk.source["active_end"]
    assert (branch.fork_point, own_texts(branch)) == (2, ["三", "四"])


def test_pi_v1_entries_without_ids_are_chained_in_file_order(tmp_path, store):
    entries = [{"type": "message", "timestamp": "2025-01-01T00:00:01Z", "message": {"role": "user", "content": "a"}},
               {"type": "model_change", "timestamp": "2025-01-01T00:00:02Z", "provider": "x", "modelId": "y"},
               {"type": "message", "timestamp": "2025-01-01T00:00:03Z",
                "message": {"role": "assistant", "content": text("b")}}]
    header = {"type": "session", "id": "legacy", "timestamp": "2025-01-01T00:00:00Z", "cwd": "/x"}
    report = import_file(pi_file(tmp_path / "v1.jsonl", entries, header), store)
    (node,) = nodes(store, report)
    assert own_texts(node) == ["a", "b"] and node.source["session_id"] == "legacy"


# ── bounded content ─────────────────────────────────────────────────────────────────────────
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 300).decode()


def test_images_become_placeholders_and_their_data_is_not_stored(tmp_path, store):
    claude = Claude().user("u1", None, [{"type": "text", "text": "看图"}, {"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": PNG}}])
    (node,) = nodes(store, import_file(claude.write(tmp_path / "c.jsonl"), store))
    assert node.messages[0]["content"][1] == {"type": "image", "omitted": True, "media_type": "image/png",
                                              "size": len(PNG)}
    pi = pi_file(tmp_path / "p.jsonl", [pi_msg("u1", None, "user", [{"type": "image", "data": PNG,
                                                                       "mimeType": "image/jpeg"}])])
    (pi_node,) = nodes(store, import_file(pi, store))
    assert pi_node.messages[0]["content"][0]["media_type"] == "image/jpeg"
    for node_id in (node.session_id, pi_node.session_id):
        assert PNG[:40] not in Path(store.path_of(node_id)).read_text(encoding="utf-8")


def test_long_tool_output_is_cut_and_the_original_length_noted(tmp_path, store):
    long = "日志行\n" * 10_000
    log = (Claude().user("u1", None, "看日志").call("a1", "u1", "t1")
           .result("r1", "a1", "t1", long, toolUseResult={"stdout": long, "originalFile": "ORIGINAL-FILE-COPY"}))
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    block = node.messages[2]["content"][0]
    assert block["truncated_from"] == len(long)
    assert len(block["content"][0]["text"]) == s11_import.TOOL_OUTPUT_LIMIT
    assert block["content"][0]["truncated_from"] == len(long)
    assert any("截断" in w for w in report.warnings)
    assert "ORIGINAL-FILE-COPY" not in Path(store.path_of(node.session_id)).read_text(encoding="utf-8")


def test_pi_system_prompt_captures_and_thinking_signatures_are_not_stored(tmp_path, store):
    entries = [pi_msg("u1", None, "user", "hi"),
               {"type": "custom", "customType": "viewer.system-prompt", "id": "sp", "parentId": "u1",
                "data": {"prompt": "SYSTEM-PROMPT-TEXT"}},
               pi_msg("a1", "sp", "assistant", [{"type": "thinking", "thinking": "想", "thinkingSignature": "PI-SIG"},
                                                 {"type": "text", "text": "hello"}])]
    report = import_file(pi_file(tmp_path / "p.jsonl", entries), store)
    (node,) = nodes(store, report)
    stored = Path(store.path_of(node.session_id)).read_text(encoding="utf-8")
    assert "SYSTEM-PROMPT-TEXT" not in stored and "PI-SIG" not in stored
    assert own_texts(node) == ["hi", "想 hello"] and report.dropped == {"custom:system-prompt": 1}


def test_a_5000_deep_chain_imports_without_recursion(tmp_path, store):
    log = Claude().user("m0", None, "第 0 条")
    for i in range(1, 5000):
        if i % 2:
            log.assistant(f"m{i}", f"m{i - 1}", text(f"第 {i} 条"))
        else:
            log.user(f"m{i}", f"m{i - 1}", f"第 {i} 条")
    report = import_file(log.write(tmp_path / "deep.jsonl"), store)
    (node,) = nodes(store, report)
    assert len(node.messages) == 5000 and plain(node.messages[-1]) == "第 4999 条"
    pi_entries = [pi_msg(f"e{i}", f"e{i - 1}" if i else None, "user", f"{i}") for i in range(5000)]
    (pi_node,) = nodes(store, import_file(pi_file(tmp_path / "deep-pi.jsonl", pi_entries), store))
    assert len(pi_node.messages) == 5000
    assert store.check() == []


# ── hostile content ─────────────────────────────────────────────────────────────────────────
HOSTILE = ["<script>alert(1)</script>", "${7*7} {{x}}", "```python\nprint('未闭合的围栏')",
           "### 伪造的标题\n<img src=x onerror=alert(1)>"]


def fence_aware_headings(markdown: str) -> list:
    """Message headings that a CommonMark reader sees outside code fences."""
    headings, fence = [], ""
    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence:
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence) and not line.startswith("    "):
                fence = ""
        elif stripped.startswith(("```", "~~~")) and not line.startswith("    "):
            char = stripped[0]
            fence = stripped[:len(stripped) - len(stripped.lstrip(char))]
        elif line.startswith("### "):
            headings.append(line)
    return headings


def test_hostile_text_stays_inert_in_both_exports(tmp_path, store):
    log = Claude().raw({"type": "custom-title", "customTitle": "<b>标题</b> ${1+1}", "sessionId": "sess-1"})
    parent = None
    for i, payload in enumerate(HOSTILE):
        log.user(f"u{i}", parent, payload).assistant(f"a{i}", f"u{i}", text(payload))
        parent = f"a{i}"
    report = import_file(log.write(tmp_path / "evil.jsonl"), store)
    (node_id,) = report.node_ids
    page = store.export_html(node_id)
    assert "<script>alert" not in page and "<img src=x" not in page and "<b>标题" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "${7*7}" in page
    markdown = store.export_markdown(node_id)
    assert len(fence_aware_headings(markdown)) == 2 * len(HOSTILE)   # no message swallowed, no fake heading


# ── re-import ───────────────────────────────────────────────────────────────────────────────
def revisions(store: SessionStore) -> dict:
    return {s["session_id"]: s["revision"] for s in store.list_sessions()}


def test_importing_the_same_file_twice_writes_nothing_new(tmp_path, store):
    path = rewind_log().write(tmp_path / "s.jsonl")
    first = import_file(path, store)
    before = revisions(store)
    second = import_file(path, store)
    assert (second.written, second.unchanged, second.bytes_written) == (0, len(first.node_ids), 0)
    assert second.node_ids == first.node_ids and revisions(store) == before
    assert store.check() == []


def test_reimporting_after_the_agent_added_turns_updates_those_nodes(tmp_path, store):
    log = rewind_log()
    path = log.write(tmp_path / "s.jsonl")
    first = import_file(path, store)
    log.user("u3", "a2b", "再加个测试").assistant("a3", "u3", text("加好了")).write(path)   # the active branch grows
    second = import_file(path, store)
    assert second.node_ids == first.node_ids and (second.updated, second.written, second.unchanged) == (1, 1, 1)
    assert own_texts(store.load(first.node_ids[0]))[-2:] == ["再加个测试", "加好了"]
    assert store.load(first.node_ids[0]).revision == 2
    log.user("u2c", "a1", "第三种方案？").assistant("a2c", "u2c", text("C")).write(path)  # a new rewind, now newest
    third = import_file(path, store)
    assert third.node_ids[:2] == first.node_ids and (third.updated, third.written, len(third.node_ids)) == (1, 2, 3)
    trunk, *branches = nodes(store, third)
    assert own_texts(trunk) == ["方案？", "A 或 B", "第三种方案？", "C"]
    assert sorted(own_texts(b)[-1] for b in branches) == ["A 做好了", "加好了"]
    assert len(store.list_sessions()) == 3 and store.check() == []
    assert import_file(path, store).written == 0


def test_a_node_resumed_in_the_store_is_never_overwritten_by_a_reimport(tmp_path, store):
    log = Claude().user("u1", None, "开始").assistant("a1", "u1", text("好"))
    path = log.write(tmp_path / "s.jsonl")
    (node_id,) = import_file(path, store).node_ids
    node = store.load(node_id)
    node.messages.append({"role": "user", "content": "我在仓库里续写的一句"})
    store.save(node)
    log.user("u2", "a1", "Agent 又聊了一句").write(path)
    report = import_file(path, store)
    assert report.kept == 1 and report.written == 1   # the one node written holds the agent's turn (issue 42 item 5)
    assert plain(store.load(node_id).messages[-1]) == "我在仓库里续写的一句"
    ((kept, child_id, count),) = report.continued
    child = store.load(child_id)
    assert (kept, count, child.parent_id, child.fork_point) == (node_id, 1, node_id, 2)
    assert plain(child.messages[-1]) == "Agent 又聊了一句" and report.active_id == child_id
    assert f"子节点 {child_id}" in report.describe()
    assert import_file(path, store).written == 0   # nothing new: nothing written


def test_agent_turns_that_no_longer_match_a_resumed_node_are_reported_not_guessed(tmp_path, store):
    log = Claude().user("u1", None, "开始").assistant("a1", "u1", text("好"))
    path = log.write(tmp_path / "s.jsonl")
    (node_id,) = import_file(path, store).node_ids
    node = store.load(node_id)
    node.messages.append({"role": "user", "content": "我在仓库里续写的一句"})
    store.save(node)
    saved = store.load(node_id).messages
    log.lines[1]["message"]["content"] = text("Agent 改写了这一句")   # the agent's history changed under us
    log.user("u2", "a1", "Agent 又聊了一句").write(path)
    report = import_file(path, store)
    assert report.continued == [] and report.diverged == [node_id] and report.written == 0
    assert any(node_id in w and "续写" in w for w in report.warnings)
    assert store.load(node_id).messages == saved


def test_when_the_active_end_moves_to_an_old_branch_the_old_node_is_kept_and_named(tmp_path, store):
    log = rewind_log()
    path = log.write(tmp_path / "s.jsonl")
    first = import_file(path, store)
    log.user("u3", "a2", "回到 A 继续").write(path)        # the user resumed the older branch
    second = import_file(path, store)
    old_branch = first.node_ids[1]
    assert old_branch not in second.node_ids and store.load(old_branch) is not None
    assert any(old_branch in w for w in second.warnings)
    assert own_texts(store.load(second.node_ids[0]))[-1] == "回到 A 继续"
    assert store.check() == []


def test_a_dry_run_plans_without_writing(tmp_path, store):
    report = import_file(rewind_log().write(tmp_path / "s.jsonl"), store, dry_run=True)
    assert report.written == 2 and len(report.node_ids) == 2 and os.listdir(store.storage_dir) == []


# ── a killed importer ───────────────────────────────────────────────────────────────────────
def branchy_log(branches: int = 40, depth: int = 30) -> Claude:
    log = Claude()
    parent = None
    for i in range(depth):
        log.user(f"u{i}", parent, f"第 {i} 问 " + "内容 " * 200).assistant(f"a{i}", f"u{i}", text(f"第 {i} 答"))
        parent = f"a{i}"
    for b in range(branches):
        log.user(f"b{b}", f"a{b % depth}", f"改问法 {b}").assistant(f"ba{b}", f"b{b}", text(f"分支 {b}"))
    return log


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_killed_importer_leaves_only_complete_files(tmp_path):
    path = branchy_log().write(tmp_path / "branchy.jsonl")
    folder = tmp_path / "store"
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import s11_import, s11_session; "
              "s11_import.import_file(sys.argv[2], s11_session.SessionStore(sys.argv[3]))")
    for delay in (0.0, 0.01, 0.03):
        process = subprocess.Popen([sys.executable, "-c", script, str(CODE_DIR), str(path), str(folder)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and process.poll() is None:
            if folder.is_dir() and any(name.endswith(".json") for name in os.listdir(folder)):
                break
            time.sleep(0.002)
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        store = SessionStore(folder)
        assert {problem.kind for problem in store.check()} <= {"temp_file"}   # torn temp files only, never a node
        for summary in store.list_sessions():
            assert store.load(summary["session_id"]) is not None
    expected = len(import_file(path, SessionStore(tmp_path / "planned"), dry_run=True).node_ids)
    report = import_file(path, SessionStore(folder))
    assert expected > 30 and len(report.node_ids) == expected == report.written + report.unchanged
    assert {problem.kind for problem in SessionStore(folder).check()} <= {"temp_file"}


# ── report and command line ─────────────────────────────────────────────────────────────────
def test_the_report_describes_everything_in_chinese(tmp_path, store):
    log = rewind_log().raw("{torn").link("p", "a2b")
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    text_report = report.describe()
    assert "s.jsonl" in text_report and "Claude Code" in text_report and "第 7 行" in text_report
    assert "progress ×1" in text_report and report.active_id in text_report and "会话节点 2 个" in text_report
    assert report.bytes_read == (tmp_path / "s.jsonl").stat().st_size
    journal = os.path.join(store.storage_dir, s11_journal.JOURNAL_FILE)   # the import's one line in the journal
    assert report.bytes_written == sum(os.path.getsize(store.path_of(i)) for i in report.node_ids) + \
        os.path.getsize(journal)
    assert report.copy_bytes > 0 and report.messages == 6


def test_copy_bytes_is_zero_for_a_linear_session(tmp_path, store):
    log = Claude().user("u1", None, "a").assistant("a1", "u1", text("b"))
    assert import_file(log.write(tmp_path / "s.jsonl"), store).copy_bytes == 0


def run_session_cli(*args, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CODE_DIR / "s11_cli.py"), *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


@pytest.mark.slow
def test_cli_import_prints_the_tree_and_report_then_tree_and_export_work(tmp_path):
    folder = tmp_path / "sessions"
    example = s11_import.list_examples()[0]
    done = run_session_cli("--dir", folder, "import", example)
    assert done.returncode == 0, done.stderr
    assert "导入 claude-code-rate-limit.jsonl" in done.stdout and "└── " in done.stdout and "子代理" in done.stdout
    store = SessionStore(folder)
    trunk = next(s for s in store.list_sessions() if s["parent_id"] is None)
    assert run_session_cli("--dir", folder, "tree").returncode == 0
    exported = run_session_cli("--dir", folder, "export", trunk["session_id"])
    assert exported.returncode == 0 and "sk-ant-api03" not in exported.stdout and "[已脱敏:API密钥]" in exported.stdout


@pytest.mark.slow
def test_cli_folder_import_takes_subagents_through_their_parent_and_reports_bad_files(tmp_path):
    subagent_session(tmp_path / "project")
    (tmp_path / "project" / "broken.jsonl").write_bytes(os.urandom(2048))
    done = run_session_cli("--dir", tmp_path / "sessions", "import", tmp_path / "project", tmp_path / "missing")
    assert done.returncode == 2
    assert "broken.jsonl" in done.stderr and "missing" in done.stderr
    assert done.stdout.count("导入 ") == 1 and "子代理：查找没有测试的模块" in done.stdout
    assert len(SessionStore(tmp_path / "sessions").list_sessions()) == 2


def test_find_transcripts_never_lists_a_subagent_file_and_names_one_whose_session_is_missing(tmp_path):
    subagent_session(tmp_path)
    lone = Claude().user("x", None, "单独的子代理").write(tmp_path / "other" / "subagents" / "agent-zz.jsonl")
    files, problems = s11_import.find_transcripts([str(tmp_path)])
    assert [os.path.basename(f) for f in files] == ["sess-1.jsonl"] and str(lone) not in files
    assert len(problems) == 1 and "agent-zz.jsonl" in problems[0] and "other.jsonl" in problems[0]


def test_list_examples_names_the_project_examples():
    names = [os.path.basename(path) for path in s11_import.list_examples()]
    assert names == ["claude-code-rate-limit.jsonl", "codex-cli-orders-pagination.jsonl",
                     "gemini-cli-flaky-due-date.jsonl", "pi-v3-report-cache.jsonl"]   # no subagent file among them
    assert all(os.path.dirname(path) == s11_import.EXAMPLES_DIR for path in s11_import.list_examples())


def test_a_missing_file_or_a_folder_is_a_clear_error_naming_it(tmp_path, store):
    with pytest.raises(SessionError, match="nothing-here.jsonl.*不存在"):
        import_file(tmp_path / "nothing-here.jsonl", store)
    with pytest.raises(SessionError, match="文件夹"):
        import_file(tmp_path, store)
    assert os.listdir(store.storage_dir) == []


def test_a_line_with_invalid_utf8_is_recovered_with_a_warning(tmp_path, store):
    path = Claude().user("u1", None, "前").write(tmp_path / "s.jsonl")
    with open(path, "ab") as handle:
        handle.write(b'{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"sess-1","message":'
                     b'{"role":"assistant","content":"\xff\xfe ok"}}\n')
    report = import_file(path, store)
    (node,) = nodes(store, report)
    assert own_texts(node)[-1].endswith(" ok") and any("第 2 行" in w and "UTF-8" in w for w in report.warnings)


def test_recovering_a_huge_torn_line_parses_it_at_most_twice(tmp_path, store, monkeypatch):
    # a torn line full of small objects used to be re-parsed from every '{"' (one parse per object): count parses
    attempts = []
    real = s11_import.lines._DECODER

    class CountingDecoder:
        def raw_decode(self, text, index=0):
            attempts.append(index)
            return real.raw_decode(text, index)

    monkeypatch.setattr(s11_import.lines, "_DECODER", CountingDecoder())
    torn = '{"type":"message","id":"t","parentId":"m1","message":{"role":"user","content":[' + '{"a":1},' * 50_000
    tail = json.dumps(pi_msg("m3", "m2", "user", [{"type": "text", "text": f"块 {i}"} for i in range(2000)]))
    path = pi_file(tmp_path / "p.jsonl", [pi_msg("m1", None, "user", "问"), torn,
                                          pi_msg("m2", "m1", "assistant", "答"), torn + tail])
    report = import_file(path, store)
    assert [line for line, _ in report.skipped] == [3, 5]
    assert own_texts(nodes(store, report)[0])[:2] == ["问", "答"] and len(nodes(store, report)[0].messages) == 3
    assert len(attempts) <= 4   # per torn line: one parse from its start, one of the complete tail


def test_deeply_nested_tool_input_is_kept_as_text_so_the_node_can_be_saved(tmp_path, store):
    nested = {"v": json.loads("[" * 500 + "]" * 500)}
    log = Claude().user("u1", None, "深").call("a1", "u1", "t1", name="Weird", tool_input=nested)
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    stored_input = node.messages[1]["content"][0]["input"]
    depth, value = 0, stored_input
    while isinstance(value, (dict, list)):
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
        depth += 1
    assert isinstance(value, str) and value.startswith("[[") and depth < 100
    assert any("嵌套" in w for w in report.warnings) and store.check() == []


def test_a_node_the_store_refuses_is_skipped_with_its_branches_and_named(tmp_path, store, monkeypatch):
    path = rewind_log().write(tmp_path / "s.jsonl")
    planned = import_file(path, SessionStore(tmp_path / "plan"), dry_run=True).node_ids
    real_save = store.save

    def refuse_the_trunk(node):
        if node.session_id == planned[0]:
            raise SessionError("模拟：别人正在保存")
        real_save(node)

    monkeypatch.setattr(store, "save", refuse_the_trunk)
    report = import_file(path, store)
    assert report.node_ids == [] and report.written == 0
    assert any(planned[0] in w and "模拟" in w for w in report.warnings)
    assert store.list_sessions() == [] and store.check() == []   # the branch was not written without its parent


def test_tool_results_nested_inside_tool_results_do_not_recurse(tmp_path, store):
    inner: dict = {"type": "text", "text": "最里面"}
    for _ in range(400):
        inner = {"type": "tool_result", "tool_use_id": "t", "content": [inner]}
    log = Claude().user("u1", None, "x").call("a1", "u1", "t").user("r1", "a1", [inner])
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    (node,) = nodes(store, report)
    assert len(node.messages) == 3 and store.check() == []
