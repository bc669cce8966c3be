"""Importing the real sample transcripts in ../shared/samples (see SOURCES.md there) and the project's examples/.

The samples are read in place (never copied into the project) and each test states the tree that file
must give, as checked by reading the file itself. They are skipped when the folder is absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import s11_import
from s11_import import import_file
from s11_session import SessionStore

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"
needs_samples = pytest.mark.skipif(not SAMPLES.is_dir(), reason=f"sample transcripts not found at {SAMPLES}")


def sample(name: str) -> Path:
    path = SAMPLES / name
    if not path.is_file():
        pytest.skip(f"sample {name} not found in {SAMPLES}")
    return path


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


def plain(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(str(b.get("text") or b.get("thinking") or b.get("name") or b.get("type")) for b in content or [])


def loaded(store: SessionStore, report) -> list:
    return [store.load(node_id) for node_id in report.node_ids]


def own(node) -> list:
    return node.messages[node.fork_point or 0:]


# ── the real Claude Code transcript with a /rewind ─────────────────────────────────────────
REWIND = "claude_real_rewind_branch_03eb5929.jsonl"


@needs_samples
def test_real_claude_session_has_exactly_one_real_branch_the_rewind(store):
    report = import_file(sample(REWIND), store)
    trunk, branch = loaded(store, report)
    # both user prompts of the /rewind hang (through a stop-hook line) under the assistant line 3220c04b
    branching_message = trunk.messages[branch.fork_point - 1]
    assert branching_message["id"].startswith("3220c04b") and plain(branching_message).startswith("Got it.")
    assert branch.parent_id == trunk.session_id and branch.messages[:branch.fork_point] == trunk.messages[:6]
    assert own(branch)[0]["id"].startswith("5270777a") and trunk.messages[6]["id"].startswith("9edc38e6")
    assert report.active_id == trunk.session_id and plain(trunk.messages[-1]) == (
        "<local-command-stdout>See ya!</local-command-stdout>")


@needs_samples
def test_real_claude_session_has_nine_assistant_messages_on_its_paths(store):
    report = import_file(sample(REWIND), store)
    distinct = [m for node in loaded(store, report) for m in own(node) if m["role"] == "assistant"]
    assert len(distinct) == 9                       # 19 assistant lines, streamed as 9 API messages
    assert len({m["id"] for m in distinct}) == 9
    first = distinct[0]
    assert [b["type"] for b in first["content"]] == ["thinking", "text", "tool_use"]   # four lines, one message
    assert "signature" not in str(first)


@needs_samples
def test_real_claude_session_has_no_branch_at_its_two_hook_artifacts(store):
    report = import_file(sample(REWIND), store)
    trunk, branch = loaded(store, report)
    # the Bash and Read tool calls each have a progress line beside their tool result: no fork there
    roles = [m["role"] for m in trunk.messages[:6]]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert trunk.messages[2]["content"][0]["type"] == "tool_result" and branch.fork_point == 6
    assert report.dropped["progress"] == 11 and len(report.node_ids) == 2 and report.skipped == []
    assert trunk.source["agent_version"] == "2.1.42" and trunk.source["cwd"] == "/home/user/project"


# ── Pi ──────────────────────────────────────────────────────────────────────────────────────
@needs_samples
def test_pi_demo_has_the_labelled_branch_and_skips_the_torn_tail(store):
    report = import_file(sample("pi_v3_demo_branch_label_torn_tail.jsonl"), store)
    trunk, branch = loaded(store, report)
    assert trunk.title == "工具配对演示" and plain(trunk.messages[-1]) == "当前分支回复"
    assert (branch.parent_id, branch.fork_point) == (trunk.session_id, 4)
    assert trunk.messages[3]["id"] == "result" and own(branch)[0]["label"] == "旧尝试"
    assert branch.source["label"] == "旧尝试" and branch.title == "工具配对演示 · 旧尝试"
    assert [line for line, _ in report.skipped] == [12] and "不完整" in report.skipped[0][1]
    stored = Path(store.path_of(trunk.session_id)).read_text(encoding="utf-8")
    assert "You are an expert coding assistant" not in stored   # the captured system prompt is not kept
    assert report.dropped["custom:system-prompt"] == 1


@needs_samples
def test_pi_branch_at_a_model_change_is_compressed_to_its_nearest_message(store):
    report = import_file(sample("pi_v3_branching_compaction_unknown_entry.jsonl"), store)
    trunk, branch = loaded(store, report)
    # e3 and e7 are both children of the model_change e2: the branch point is e1, the message before it
    assert [m["id"] for m in trunk.messages] == ["e1", "e7"] and report.active_id == trunk.session_id
    assert branch.fork_point == 1 and [m["id"] for m in own(branch)] == ["e3", "e4", "e5", "e6"]
    assert own(branch)[2]["summary"] is True and own(branch)[1]["toolCallId"] == "call-1"
    assert report.skipped == [(9, "未知的条目类型 'future_entry'")]
    assert "ignored" not in Path(store.path_of(branch.session_id)).read_text(encoding="utf-8")


@needs_samples
def test_pi_v1_file_is_one_linear_node(store):
    report = import_file(sample("pi_v1_real_large_session_prefix32.jsonl"), store)
    (node,) = loaded(store, report)
    assert node.parent_id is None and len(node.messages) == 30 and report.dropped == {"model_change": 1}
    assert node.source["session_id"] == "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
    cut = [b for m in node.messages for b in m["content"] or [] if "truncated_from" in b]
    assert cut and all(len(b["text"]) == s11_import.TOOL_OUTPUT_LIMIT < b["truncated_from"] for b in cut)


# ── several sessions in one stream; malformed lines ──────────────────────────────────────────
@needs_samples
def test_cross_session_stream_hangs_the_resumed_and_forked_sessions_at_the_right_messages(store):
    report = import_file(sample("claude_dag_cross_session_fork.jsonl"), store)
    by_session = {node.source["session_id"]: node for node in loaded(store, report)}
    s1, s2, s3 = by_session["s1"], by_session["s2"], by_session["s3"]
    assert [m["id"] for m in s1.messages] == ["a", "b", "c", "d", "e"] and s1.parent_id is None
    assert (s2.parent_id, s2.fork_point, [m["id"] for m in own(s2)]) == (s1.session_id, 5, ["f", "g", "h"])
    assert (s3.parent_id, s3.fork_point, [m["id"] for m in own(s3)]) == (s1.session_id, 3, ["i", "j", "k"])
    assert report.active_id == s3.session_id   # k is the newest leaf


@needs_samples
def test_malformed_file_reports_every_bad_line_with_its_number(store):
    report = import_file(sample("claude_edge_cases_malformed_lines.jsonl"), store)
    assert [line for line, _ in report.skipped] == [10, 11, 13, 14, 15, 16]
    reasons = dict(report.skipped)
    assert "content" in reasons[10] and "对象" in reasons[11] and "type" in reasons[14]
    assert any("第 17 行" in w for w in report.warnings)            # assistant_004's parent is not in the file
    main = store.load(report.root_ids[0])
    assert main.title.startswith("Tested various edge cases")       # the trailing summary line is a title
    assert [m["id"] for m in main.messages][-2:] == ["edge_011", "edge_010"]
    assert plain(main.messages[-1]) == "wow error" and "café" in plain(main.messages[-2])


@needs_samples
@pytest.mark.parametrize("name", sorted(p.name for p in SAMPLES.glob("*.jsonl")) if SAMPLES.is_dir() else [])
def test_every_sample_imports_cleanly_and_a_second_import_writes_nothing(store, name):
    first = import_file(sample(name), store)
    assert store.check() == [] and first.written == len(first.node_ids) > 0
    for node_id in first.node_ids:
        assert store.export_markdown(node_id).startswith("# 🗂️ 会话导出")
        assert "<script" not in store.export_html(node_id)
    second = import_file(sample(name), store)
    assert (second.written, second.unchanged, second.node_ids) == (0, len(first.node_ids), first.node_ids)


# ── the project's own examples ──────────────────────────────────────────────────────────────
def example(name: str) -> str:
    return next(path for path in s11_import.list_examples() if path.endswith(name))


def test_claude_example_shows_rewind_compaction_and_subagent(store):
    report = import_file(example("claude-code-rate-limit.jsonl"), store)
    trunk, *children = loaded(store, report)
    by_kind = {("subagent" if n.source["subagent"] else "branch"): n for n in children}
    rewind, agent = by_kind["branch"], by_kind["subagent"]
    assert plain(trunk.messages[rewind.fork_point - 1]).startswith("两点发现")
    assert plain(own(rewind)[0]).startswith("用 Redis") and plain(trunk.messages[rewind.fork_point]).startswith("算了")
    assert (agent.parent_id, agent.fork_point, len(agent.messages)) == (trunk.session_id, 0, 6)
    summaries = [m for m in trunk.messages if m.get("summary")]
    assert len(summaries) == 1 and "continued from a previous conversation" in plain(summaries[0])
    image = next(b for m in trunk.messages if isinstance(m["content"], list) for b in m["content"]
                 if b["type"] == "image")
    source_data = [b["source"]["data"] for line in Path(example("claude-code-rate-limit.jsonl")).read_text("utf-8")
                   .splitlines() if '"image"' in line for b in json.loads(line)["message"]["content"]
                   if b["type"] == "image"]
    assert image == {"type": "image", "omitted": True, "media_type": "image/png", "size": len(source_data[0])}
    assert trunk.title == "给登录接口加限流" and report.active_id == trunk.session_id and report.skipped == []


def test_pi_example_shows_tree_jump_label_model_change_and_compaction(store):
    report = import_file(example("pi-v3-report-cache.jsonl"), store)
    trunk, branch = loaded(store, report)
    assert trunk.title == "报表服务：缓存改成 LRU" and branch.title.endswith("手写 OrderedDict 版")
    assert branch.fork_point == 3 and trunk.messages[3]["role"] == "branchSummary"
    assert [m["role"] for m in trunk.messages if m.get("summary")] == ["branchSummary", "compactionSummary"]
    assert "bashExecution" in [m["role"] for m in trunk.messages]
    assert report.dropped["model_change"] == 2 and report.dropped["custom:system-prompt"] == 1


@pytest.mark.parametrize("name, secrets", [
    ("claude-code-rate-limit.jsonl", ["sk-ant-api03-Xk7p", "ops-alert@shop.example.com", "13812345678"]),
    ("pi-v3-report-cache.jsonl", ["ghp_R8mK2pX7", "ops@report.example.com"]),
    ("codex-cli-orders-pagination.jsonl", ["sk-proj-Qz8vN2xL5pR7", "oncall-orders@shop.example.com", "13812345678"]),
    ("gemini-cli-flaky-due-date.jsonl", ["AIzaSyD-9tSrke72PouQ", "billing-ops@mei.example.com", "13987654321"])])
def test_the_examples_fake_secrets_are_stored_but_masked_in_exports(store, name, secrets):
    report = import_file(example(name), store)
    stored = "".join(Path(store.path_of(i)).read_text(encoding="utf-8") for i in report.node_ids)
    exported = "".join(store.export_markdown(i) + store.export_html(i) for i in report.node_ids)
    for secret in secrets:
        assert secret in stored and secret not in exported


def test_codex_example_shows_injected_context_tool_calls_and_a_rollback(store):
    report = import_file(example("codex-cli-orders-pagination.jsonl"), store)
    trunk, branch = loaded(store, report)
    assert report.format == s11_import.CODEX and report.skipped == [] and report.active_id == trunk.session_id
    assert [m.get("meta", False) for m in trunk.messages[:3]] == [True, True, False]
    assert plain(own(branch)[0]).startswith("先用 offset") and plain(trunk.messages[branch.fork_point]).startswith(
        "那改成游标分页")
    calls = [b["name"] for m in trunk.messages if isinstance(m["content"], list) for b in m["content"]
             if b["type"] == "tool_use"]
    assert calls == ["shell", "shell", "apply_patch", "shell"]
    outputs = [plain(m) for m in trunk.messages if m["role"] == "tool"]
    assert outputs[-1].startswith("....\n4 passed") and trunk.source["git_branch"] == "feature/pagination"
    assert report.dropped["event_msg:thread_rolled_back"] == 1 and report.dropped["event_msg:user_message"] == 4


def test_gemini_example_shows_updates_by_id_a_summary_title_and_a_rewind(store):
    report = import_file(example("gemini-cli-flaky-due-date.jsonl"), store)
    trunk, branch = loaded(store, report)
    assert report.format == s11_import.GEMINI and trunk.title == "修复时好时坏的 test_due_date"
    assert trunk.messages[0]["meta"] is True and trunk.source["cwd"] == "/home/mei/billing"
    assert plain(own(branch)[0]) == "直接在测试里把时区固定成 UTC 吧。" and plain(
        trunk.messages[branch.fork_point]).startswith("算了，别动测试")
    first_call = trunk.messages[3]["content"]   # g-1 was written twice; the second write (with the result) won
    assert [b["type"] for b in first_call] == ["thinking", "tool_use", "tool_result"]
    assert report.skipped == [] and report.active_id == trunk.session_id


@pytest.mark.parametrize("path", s11_import.list_examples(), ids=lambda path: Path(path).name)
def test_every_example_imports_cleanly_and_a_second_import_writes_nothing(store, path):
    first = import_file(path, store)
    assert store.check() == [] and first.written == len(first.node_ids) >= 2 and first.skipped_total == 0
    assert first.active_id is not None and store.load(first.active_id).source["active_end"] is True
    for node_id in first.node_ids:
        assert store.export_markdown(node_id).startswith("# 🗂️ 会话导出")
    second = import_file(path, store)
    assert (second.written, second.unchanged, second.node_ids) == (0, len(first.node_ids), first.node_ids)
