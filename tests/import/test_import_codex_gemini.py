"""Issue 22 item 5: OpenAI Codex CLI rollouts and Gemini CLI sessions import as session trees.

The rollouts and sessions are synthetic, built here from the shapes in the research notes (Codex: the
{timestamp, type, payload} envelope, the mid-2025 bare shape, thread_rolled_back; Gemini: the JSONL log with
records re-appended by id, $set and $rewindTo, the legacy pretty-printed JSON document, /chat save checkpoints).
The same rules as for the other formats are checked: one node for a linear session, user-made branches only,
bounded content, re-import after growth, detection that never mistakes one agent for another, inert exports.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from test_import import fence_aware_headings, nodes, own_texts, plain

import s11_export
import s11_import
from s11_import import NoConversation, UnsupportedFormat, import_file, import_folder
from s11_session import SessionStore

CLOCK = "2026-05-02T10:{:02d}:{:02d}.000Z"


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


# ── builders ────────────────────────────────────────────────────────────────────────────────
class Codex:
    """A Codex CLI rollout (the {timestamp, type, payload} envelope), line by line."""

    def __init__(self, thread="019a9f6e-0000-7000-8000-00000000c0de", **meta):
        self.lines, self.clock = [], 0
        self.put("session_meta", {"id": thread, "timestamp": CLOCK.format(0, 0), "cwd": "/home/dev/api",
                                  "originator": "codex_cli_rs", "cli_version": "0.63.0", "source": "cli",
                                  "instructions": "AGENTS-INSTRUCTIONS-TEXT",
                                  "git": {"commit_hash": "3f2c9e1", "branch": "main",
                                          "repository_url": "https://dev:s3cr3t-token@git.example.com/api.git"},
                                  **meta})

    def put(self, kind, payload) -> "Codex":
        self.clock += 1
        self.lines.append({"timestamp": CLOCK.format(*divmod(self.clock, 60)), "type": kind, "payload": payload})
        return self

    def item(self, **payload) -> "Codex":
        return self.put("response_item", payload)

    def user(self, words: str) -> "Codex":
        self.item(type="message", role="user", content=[{"type": "input_text", "text": words}])
        return self.put("event_msg", {"type": "user_message", "message": words})   # the UI mirror

    def assistant(self, words: str) -> "Codex":
        self.item(type="message", role="assistant", content=[{"type": "output_text", "text": words}])
        return self.put("event_msg", {"type": "agent_message", "message": words})

    def think(self, words: str) -> "Codex":
        return self.item(type="reasoning", summary=[{"type": "summary_text", "text": words}],
                         encrypted_content="gAAAA-ENCRYPTED-REASONING")

    def call(self, call_id: str, command: str, output: str) -> "Codex":
        self.item(type="function_call", name="shell", call_id=call_id,
                  arguments=json.dumps({"command": ["bash", "-lc", command]}))
        return self.item(type="function_call_output", call_id=call_id, output=output)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n"
                                for line in self.lines), encoding="utf-8")
        return path


def codex_session() -> Codex:
    log = Codex()
    log.item(type="message", role="user", content=[{"type": "input_text", "text": "# AGENTS.md instructions for "
                                                    "/home/dev/api\n<INSTRUCTIONS>用中文</INSTRUCTIONS>"}])
    log.item(type="message", role="user", content=[{"type": "input_text", "text": "<environment_context>\n"
                                                    "<cwd>/home/dev/api</cwd>\n</environment_context>"}])
    log.put("turn_context", {"cwd": "/home/dev/api", "model": "gpt-5-codex", "approval_policy": "on-request"})
    log.user("给 /login 加限流").think("**先看路由**").call("call_1", "rg login", "src/routes.py:12")
    log.assistant("在 src/routes.py 里加好了。")
    log.put("event_msg", {"type": "token_count", "info": None})
    return log


# ── Codex ───────────────────────────────────────────────────────────────────────────────────
def test_a_linear_codex_rollout_is_one_node_without_mirrors_or_injected_prompts(tmp_path, store):
    report = import_file(codex_session().write(tmp_path / "rollout-1.jsonl"), store)
    (node,) = nodes(store, report)
    assert report.format == s11_import.CODEX and node.title == "给 /login 加限流"
    assert [m["role"] for m in node.messages] == ["user", "user", "user", "assistant", "tool", "assistant"]
    assert [m.get("meta", False) for m in node.messages[:3]] == [True, True, False]
    thinking, call = node.messages[3]["content"]
    assert thinking == {"type": "thinking", "thinking": "**先看路由**"}
    assert (call["type"], call["id"], call["name"], call["input"]) == (
        "tool_use", "call_1", "shell", {"command": ["bash", "-lc", "rg login"]})
    assert node.messages[4]["toolName"] == "shell" and plain(node.messages[4]) == "src/routes.py:12"
    assert node.messages[3]["model"] == "gpt-5-codex" and report.skipped == []
    assert report.dropped["event_msg:user_message"] == 1 and report.dropped["event_msg:agent_message"] == 1
    stored = Path(store.path_of(node.session_id)).read_text(encoding="utf-8")
    assert "ENCRYPTED-REASONING" not in stored and "AGENTS-INSTRUCTIONS-TEXT" not in stored
    assert node.source["cwd"] == "/home/dev/api" and node.source["agent_version"] == "0.63.0"
    assert (node.source["git_branch"], node.source["git_commit"]) == ("main", "3f2c9e1")
    assert node.source["git_repository"] == "https://git.example.com/api.git"   # no credentials kept
    assert node.source["session_id"] == "019a9f6e-0000-7000-8000-00000000c0de" and report.active_id == node.session_id


def test_a_codex_rollback_is_a_real_branch(tmp_path, store):
    log = Codex().user("方案？").assistant("A 或 B").user("用 A").assistant("A 做好了").user("再优化").assistant("优化了")
    log.put("event_msg", {"type": "thread_rolled_back", "num_turns": 2})
    log.user("还是用 B").assistant("B 做好了")
    report = import_file(log.write(tmp_path / "rollout.jsonl"), store)
    trunk, branch = nodes(store, report)
    assert own_texts(trunk) == ["方案？", "A 或 B", "还是用 B", "B 做好了"] and trunk.source["active_end"]
    assert (branch.parent_id, branch.fork_point) == (trunk.session_id, 2)
    assert own_texts(branch) == ["用 A", "A 做好了", "再优化", "优化了"]


def test_a_rollback_past_the_start_and_a_bad_count_are_warnings(tmp_path, store):
    log = Codex().user("一").assistant("二").put("event_msg", {"type": "thread_rolled_back", "num_turns": 5})
    log.put("event_msg", {"type": "thread_rolled_back", "num_turns": "x"}).user("重来").assistant("好")
    report = import_file(log.write(tmp_path / "rollout.jsonl"), store)
    assert len(report.root_ids) == 2 and any("回滚到了开头" in w for w in report.warnings)
    assert any("不是正整数" in w for w in report.warnings)


def test_a_codex_compaction_stays_on_the_line_as_a_summary(tmp_path, store):
    log = Codex().user("开始").assistant("做了很多")
    log.put("compacted", {"message": "摘要：做了很多", "replacement_history": [{"type": "message", "role": "user",
                                                                          "content": []}]})
    log.user("继续").assistant("好")
    (node,) = nodes(store, import_file(log.write(tmp_path / "rollout.jsonl"), store))
    assert own_texts(node) == ["开始", "做了很多", "摘要：做了很多", "继续", "好"]
    assert node.messages[2]["summary"] is True


def test_the_mid_2025_codex_shape_with_tool_calls(tmp_path, store):
    lines = [{"id": "old-thread", "timestamp": "2025-06-01T09:12:03.412Z", "instructions": "x",
              "git": {"branch": "dev"}},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "列文件"}]},
             {"type": "function_call", "name": "shell", "arguments": "not json{", "call_id": "c1"},
             {"type": "function_call_output", "call_id": "c1",
              "output": [{"type": "input_text", "text": "a.py"}, {"type": "input_image",
                                                                  "image_url": "data:image/png;base64,AAAA"}]},
             {"record_type": "state", "previous_response_id": "r1"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "只有 a.py"}]}]
    path = tmp_path / "rollout-old.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    report = import_file(path, store)
    (node,) = nodes(store, report)
    assert [m["role"] for m in node.messages] == ["user", "assistant", "tool", "assistant"]
    assert node.messages[1]["content"][0]["input"] == {"arguments": "not json{"}
    assert node.messages[2]["content"][1] == {"type": "image", "omitted": True, "media_type": "image/png", "size": 26}
    assert node.source["git_branch"] == "dev" and report.dropped == {"state": 1}


def test_codex_reimport_after_growth_updates_the_same_node(tmp_path, store):
    log = codex_session()
    path = log.write(tmp_path / "rollout.jsonl")
    first = import_file(path, store)
    assert import_file(path, store).written == 0
    log.user("再加个测试").assistant("加好了").write(path)
    second = import_file(path, store)
    assert second.node_ids == first.node_ids and (second.updated, second.written) == (1, 1)
    assert own_texts(store.load(first.node_ids[0]))[-2:] == ["再加个测试", "加好了"]


def test_a_codex_file_without_conversation_names_the_format(tmp_path, store):
    path = Codex().put("turn_context", {"model": "m"}).write(tmp_path / "rollout.jsonl")
    with pytest.raises(NoConversation, match="rollout.jsonl 是 Codex CLI 的记录，但里面没有任何对话消息"):
        import_file(path, store)
    assert os.listdir(store.storage_dir) == []


# ── Gemini ──────────────────────────────────────────────────────────────────────────────────
GEMINI_HEAD = {"sessionId": "d98cf9e7-1111-4c2a-9c3b-5a1e2f3a4b5c", "projectHash": "5eb97e" + "0" * 58,
               "startTime": "2026-05-22T14:59:03.120Z", "lastUpdated": "2026-05-22T14:59:03.120Z", "kind": "main"}


def g_user(mid: str, words: str, minute: int = 0) -> dict:
    return {"id": mid, "timestamp": f"2026-05-22T15:{minute:02d}:00.000Z", "type": "user", "content": [{"text": words}]}


def g_model(mid: str, words: str, minute: int = 0, **extra) -> dict:
    return {"id": mid, "timestamp": f"2026-05-22T15:{minute:02d}:30.000Z", "type": "gemini", "content": words,
            "thoughts": [], "model": "gemini-2.5-pro", **extra}


def gemini_lines() -> list:
    call = {"id": "read_file-1", "name": "read_file", "args": {"absolute_path": "/home/demo/proj/t.py"},
            "status": "executing"}
    done = {**call, "status": "success", "result": [{"functionResponse": {
        "id": "read_file-1", "name": "read_file", "response": {"output": "def test_parse(): ..."}}}]}
    context = "<session_context>\nThis is the Gemini CLI.\n- **Workspace Directories:**\n  - /home/demo/proj\n" \
              "</session_context>"
    return [GEMINI_HEAD, g_user("u-0", context), {"$set": {"lastUpdated": "x"}}, g_user("u-1", "为什么 test_parse 失败？", 1),
            g_model("g-1", "", 1, toolCalls=[call], thoughts=[{"subject": "找测试", "description": "先读文件"}]),
            g_model("g-1", "", 1, toolCalls=[done], thoughts=[{"subject": "找测试", "description": "先读文件"}],
                    tokens={"input": 7, "output": 4}),
            g_model("g-2", "夹具用了不带时区的 datetime。", 2), {"$set": {"summary": "修复 test_parse"}}]


def write_lines(path: Path, lines: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_gemini_jsonl_session_replays_updates_into_one_node(tmp_path, store):
    report = import_file(write_lines(tmp_path / "chats" / "session-2026-05-22T14-59-d98cf9e7.jsonl", gemini_lines()),
                         store)
    (node,) = nodes(store, report)
    assert report.format == s11_import.GEMINI and node.title == "修复 test_parse"
    assert [m["role"] for m in node.messages] == ["user", "user", "assistant", "assistant"]
    assert node.messages[0]["meta"] is True and "meta" not in node.messages[1]
    blocks = node.messages[2]["content"]   # the second write of g-1 wins: the tool result is there, once
    assert [b["type"] for b in blocks] == ["thinking", "tool_use", "tool_result"]
    assert blocks[0]["thinking"] == "找测试: 先读文件" and blocks[2]["content"][0]["text"] == "def test_parse(): ..."
    assert node.source["cwd"] == "/home/demo/proj" and node.source["project_hash"].startswith("5eb97e")
    assert node.source["session_id"] == GEMINI_HEAD["sessionId"] and report.active_id == node.session_id
    assert report.skipped == [] and report.dropped["$set"] == 2


def test_a_gemini_rewind_is_a_real_branch(tmp_path, store):
    lines = gemini_lines() + [{"$rewindTo": "u-1"}, g_user("u-2", "先解释一下解析器", 5), g_model("g-3", "好的", 5)]
    report = import_file(write_lines(tmp_path / "session-x.jsonl", lines), store)
    trunk, branch = nodes(store, report)
    assert own_texts(trunk)[1:] == ["先解释一下解析器", "好的"] and trunk.source["active_end"]
    assert (branch.parent_id, branch.fork_point) == (trunk.session_id, 1)
    assert [m["id"] for m in branch.messages[1:]] == ["u-1", "g-1", "g-2"]


def test_a_rewind_to_an_unknown_id_starts_over_with_a_warning(tmp_path, store):
    lines = [GEMINI_HEAD, g_user("u-1", "一"), g_model("g-1", "二"), {"$rewindTo": "nope"}, g_user("u-2", "重来")]
    report = import_file(write_lines(tmp_path / "session-x.jsonl", lines), store)
    assert len(report.root_ids) == 2 and any("$rewindTo" in w for w in report.warnings)


def test_a_gemini_snapshot_adds_its_new_messages_and_keeps_the_old_ones(tmp_path, store):
    lines = gemini_lines() + [{"$set": {"messages": [g_user("s-1", "压缩摘要：夹具问题"), g_model("g-2", "改过的")]}},
                              g_user("u-9", "继续", 9)]
    (node,) = nodes(store, import_file(write_lines(tmp_path / "session-x.jsonl", lines), store))
    assert own_texts(node)[-3:] == ["夹具用了不带时区的 datetime。", "压缩摘要：夹具问题", "继续"]


def test_the_legacy_pretty_printed_gemini_json_document(tmp_path, store):
    doc = {**GEMINI_HEAD, "summary": "旧版会话", "messages": [g_user("u-1", "你好"), g_model("g-1", "你好！"),
                                                          {"id": "i-1", "type": "info", "content": "Memory refreshed."},
                                                          "not a message"]}
    path = tmp_path / "session-2025-10-01T09-00-3bacc8a0.json"
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    report = import_file(path, store)
    (node,) = nodes(store, report)
    assert node.title == "旧版会话" and own_texts(node) == ["你好", "你好！", "Memory refreshed."]
    assert report.skipped == [(4, "消息不是带 id 的对象")] and report.unit == "条消息" and "第 4 条消息" in report.describe()
    assert node.messages[2]["notice"] == "info"   # issue 44: info notices are kept as notices
    doc["messages"].insert(2, g_user("u-2", "再见"))   # the CLI rewrites the whole document as it grows
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    again = import_file(path, store)
    assert again.node_ids == report.node_ids and again.updated == 1 and own_texts(store.load(node.session_id))[2] == "再见"


def test_a_gemini_chat_save_checkpoint_is_a_linear_session(tmp_path, store):
    history = [{"role": "user", "parts": [{"text": "<session_context>…</session_context>"}]},
               {"role": "model", "parts": [{"text": "Got it."}]}, {"role": "user", "parts": [{"text": "为什么失败？"}]},
               {"role": "model", "parts": [{"thought": True, "text": "想一想"}, {"functionCall": {
                   "id": "r1", "name": "read_file", "args": {"path": "t.py"}}}]},
               {"role": "user", "parts": [{"functionResponse": {"id": "r1", "name": "read_file",
                                                                "response": {"output": "def t(): ..."}}}]},
               {"role": "model", "parts": [{"text": "时区问题。"}]}]
    path = tmp_path / "checkpoint-before-fix.json"
    path.write_text(json.dumps({"history": history, "authType": "oauth-personal"}, indent=2), encoding="utf-8")
    (node,) = nodes(store, import_file(path, store))
    assert node.title == "为什么失败？" and node.source["session_id"] == "before-fix" and len(node.messages) == 6
    assert node.messages[4]["content"][0]["type"] == "tool_result" and plain(node.messages[5]) == "时区问题。"


def test_gemini_reimport_after_growth_updates_the_same_node(tmp_path, store):
    path = write_lines(tmp_path / "session-x.jsonl", gemini_lines())
    first = import_file(path, store)
    assert import_file(path, store).written == 0
    write_lines(path, gemini_lines() + [g_user("u-3", "谢谢", 7), g_model("g-3", "不客气", 7)])
    second = import_file(path, store)
    assert second.node_ids == first.node_ids and second.updated == 1
    assert own_texts(store.load(first.node_ids[0]))[-2:] == ["谢谢", "不客气"]


def test_a_folder_with_a_migrated_gemini_session_imports_the_jsonl_only(tmp_path, store):
    chats = tmp_path / "gemini" / "tmp" / "proj" / "chats"
    write_lines(chats / "session-a.jsonl", gemini_lines())
    (chats / "session-a.json").write_text(json.dumps({**GEMINI_HEAD, "messages": [g_user("u-1", "旧")]}, indent=2),
                                          encoding="utf-8")
    (chats.parent / ".project_root").write_text("/home/demo/real-project\n", encoding="utf-8")
    result = import_folder(tmp_path / "gemini", store)
    assert [r.file for r in result.reports] == ["session-a.jsonl"] and result.problems == []
    assert store.load(result.node_ids[0]).source["cwd"] == "/home/demo/real-project"


# ── detection and refusals ──────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("name, content, what", [
    ("logs.json", json.dumps([{"sessionId": "s", "messageId": 0, "type": "user", "message": "hi",
                               "timestamp": "t"}], indent=2), "Gemini CLI 的 logs.json"),
    ("history.jsonl", json.dumps({"session_id": "s", "ts": 1, "text": "hi"}) + "\n", "Codex CLI 的 history.jsonl"),
    ("history.jsonl", json.dumps({"display": "hi", "pastedContents": {}, "timestamp": 1, "project": "/p"}) + "\n",
     "Claude Code 的 history.jsonl"),
    ("session_index.jsonl", json.dumps({"id": "x", "thread_name": "n", "updated_at": "t"}) + "\n",
     "Codex CLI 的 session_index.jsonl"),
])
def test_other_files_of_these_agents_are_refused_by_name(tmp_path, store, name, content, what):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(UnsupportedFormat, match=re.escape(what)):
        import_file(path, store)
    assert os.listdir(store.storage_dir) == []


BROKEN_ZSTD = {   # fixed bytes (random ones after the magic number can happen to decode into a few bytes)
    "reserved-bit": b"\x28\xb5\x2f\xfd\x08" + b"\xff" * 100,        # a frame header with its reserved bit set
    "corrupt-block": b"\x28\xb5\x2f\xfd\x00\x00\x07\x00\x00" + b"x" * 100,   # a block of the reserved type
    "magic-only": b"\x28\xb5\x2f\xfd",                                # cut right after the magic number
}


@pytest.mark.parametrize("kind", list(BROKEN_ZSTD))
def test_a_broken_compressed_rollout_is_refused_and_names_the_file(tmp_path, store, kind):
    """Issue 44: valid .jsonl.zst files import now (tests/import/test_import_codex_zst.py); a broken one is refused
    (a file cut after its magic number is not an "empty file" either); nothing is written."""
    path = tmp_path / "rollout.jsonl.zst"
    path.write_bytes(BROKEN_ZSTD[kind])
    with pytest.raises(UnsupportedFormat, match="rollout.jsonl.zst 不是有效的 zstd 压缩文件"):
        import_file(path, store)
    assert store.list_sessions() == []


def test_a_broken_pretty_printed_document_names_the_line(tmp_path, store):
    path = tmp_path / "session-x.json"
    path.write_text('{\n  "sessionId": "s",\n  "messages": [\n', encoding="utf-8")
    with pytest.raises(UnsupportedFormat, match="session-x.json 像是一个 JSON 文档，但第 4 行不完整"):
        import_file(path, store)


# ── hostile content stays inert in both exports, in every format ─────────────────────────────
HOSTILE = ["<script>alert(1)</script>", "[点我](javascript:alert(1))", "![x](https://evil.example/t.png)",
           "```python\nprint('未闭合的围栏')", "### 伪造的标题\n<img src=x onerror=alert(1)>", "${7*7} {{x}}"]


def outside_code(markdown: str) -> str:
    """The Markdown a CommonMark reader interprets: fenced blocks, code spans and backslash escapes removed."""
    kept, fence = [], ""
    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence:
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = ""
        elif stripped.startswith(("```", "~~~")):
            fence = stripped[:len(stripped) - len(stripped.lstrip(stripped[0]))]
        else:
            kept.append(line)
    assert not fence, "a fence was left open"
    text = "\n".join(kept)
    text = re.sub(r"(`+)(?:(?!\1).)*?\1", "", text)
    return re.sub(r"\\.", "", text)


def assert_inert(store: SessionStore, node_id: str, messages: int) -> None:
    node = store.load(node_id).to_dict()
    for markdown in (s11_export.render_markdown(node), store.export_markdown(node_id)):
        interpreted = outside_code(markdown)
        assert not re.search(r"<[A-Za-z/!?]", interpreted) and "javascript:" not in interpreted.lower()
        assert "![" not in interpreted and "](http" not in interpreted
        assert len(fence_aware_headings(markdown)) == messages   # no message swallowed, no fake heading
    for page in (s11_export.render_html(node), store.export_html(node_id)):
        assert "<script" not in page and "<img" not in page
        assert not re.search(r"<[^>]*\b(href|src|on\w+)\s*=", page)   # no link, image or handler in any tag
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "javascript:alert(1)" in page   # shown as text


def test_hostile_text_in_a_codex_rollout_stays_inert(tmp_path, store):
    log = Codex(title="x")
    for payload in HOSTILE:
        log.user(payload).call(f"c{len(log.lines)}", payload, payload).assistant(payload)
    report = import_file(log.write(tmp_path / "rollout.jsonl"), store)
    (node_id,) = report.node_ids
    assert_inert(store, node_id, 4 * len(HOSTILE))


def test_hostile_text_in_a_gemini_session_stays_inert(tmp_path, store):
    lines = [GEMINI_HEAD, {"$set": {"summary": "<b>标题</b> ![t](https://evil.example/x.png)"}}]
    for index, payload in enumerate(HOSTILE):
        lines += [g_user(f"u{index}", payload, index), g_model(f"g{index}", payload, index, toolCalls=[
            {"id": f"t{index}", "name": payload, "args": {"q": payload}, "status": "error",
             "result": [{"functionResponse": {"id": f"t{index}", "response": {"error": payload}}}]}])]
    report = import_file(write_lines(tmp_path / "session-evil.jsonl", lines), store)
    (node_id,) = report.node_ids
    assert_inert(store, node_id, 2 * len(HOSTILE))
    assert "<b>标题" not in store.export_html(node_id)


def test_an_export_names_the_agent_that_wrote_the_transcript(tmp_path, store):
    report = import_file(codex_session().write(tmp_path / "rollout-1.jsonl"), store)
    (node,) = nodes(store, report)
    page = s11_export.render_markdown(node.to_dict())
    assert "Codex CLI 会话记录 rollout-1.jsonl" in page and "codex 会话记录" not in page


def test_every_importer_format_has_a_name_in_exports():
    assert {name: s11_import.FORMAT_NAMES[name] for name in s11_import.FORMAT_NAMES} == {
        name: s11_export.FORMAT_NAMES.get(name) for name in s11_import.FORMAT_NAMES}
