"""Issue 42 item 4: reading real agent sessions the way their own viewers do.

Subagents are 🤖 子代理 hanging at the call that started them (not 分支 A… at message 0), tool calls say what they
touched in their folded header, the conversation filters (all · no tools and thinking · only my prompts) still fork
at the right absolute message, the fork divider is a divider, the ✏️ box holds plain text. Driven without gradio.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

import s11_converge
import s11_tree
from s11_import import import_file
from s11_session import SessionStore, demo_tree_branching
from s11_tree import Forest
from s11_workbench.explorer import (
    Explorer,
    View,
    _path_chat,
    branch_names,
    chat_rows,
    mermaid_map,
    page_tree,
    tree_label,
)
from s11_workbench.markdown import unescaped
from s11_workbench.spaces import Limits, Spaces
from s11_workbench.tool_calls import SUBJECT_CHARS, tool_subject

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CLAUDE = EXAMPLES / "claude-code-rate-limit.jsonl"   # a session whose subagent lives in subagents/ beside it


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


def imported_tree(store, path=CLAUDE):
    report = import_file(path, store)
    forest = Forest(store.list_sessions())
    tree = page_tree(forest, report.root_ids[0])
    return report, tree, branch_names(tree)


def labels(tree, names) -> dict:
    return {node["session_id"]: tree_label(node, prefix, False, names.get(node["session_id"], ""))
            for node, prefix, _ in tree}


# ── subagents: named, drawn and placed as subagents ─────────────────────────────────────────
def test_a_subagent_is_a_robot_at_its_task_call_not_a_lettered_fork_at_message_0(store):
    _, tree, names = imported_tree(store)
    agent = next(node for node, _, _ in tree if node["subagent"])
    fork = next(node for node, _, _ in tree if node["parent_id"] and not node["subagent"])
    shown = labels(tree, names)
    assert names[agent["session_id"]] == "🤖 子代理 1" and names[fork["session_id"]] == "A"   # forks keep A, B…
    assert "🤖 子代理 1：检查其它公开接口的限流" in shown[agent["session_id"]]
    assert "分支" not in shown[agent["session_id"]] and "自第 0 条" not in shown[agent["session_id"]]
    assert "全部为新增" in shown[agent["session_id"]] and "没有新增消息" not in shown[agent["session_id"]]
    # it hangs at the message that called Task, and that message really is the Task call
    at = agent["spawned_at"]
    assert f"在第 {at} 条（启动它的调用）" in shown[agent["session_id"]]
    parent = store.load(agent["parent_id"])
    calls = [block.get("name") for block in parent.messages[at - 1]["content"] if isinstance(block, dict)]
    assert "Task" in calls
    # its own numbering: it inherits nothing, so its messages are numbered from 1
    assert store.load(agent["session_id"]).fork_point == 0


def test_the_text_tree_and_the_map_say_subagent_and_where_it_started(store):
    _, tree, names = imported_tree(store)
    agent = next(node for node, _, _ in tree if node["subagent"])
    text = s11_tree.render_text(Forest(store.list_sessions()))
    line = next(line for line in text.splitlines() if agent["session_id"] in line)
    assert f"🤖 子代理，在父会话第 {agent['spawned_at']} 条启动，全部为新增" in line and "自第 0 条" not in line
    graph = mermaid_map(tree, None, None, links=False, names=names)
    assert "🤖 子代理 1" in graph and f"第 {agent['spawned_at']} 条启动" in graph and "自第 0 条" not in graph


def test_several_subagents_get_their_own_numbers_and_forks_their_own_letters(store):
    summaries = [{"session_id": "root", "parent_id": None, "created_at": "1", "title": "t", "message_count": 9},
                 {"session_id": "s1", "parent_id": "root", "created_at": "2", "title": "子代理：a", "message_count": 3,
                  "fork_point": 0, "subagent": True, "spawned_at": 2},
                 {"session_id": "f1", "parent_id": "root", "created_at": "3", "title": "t", "message_count": 9,
                  "fork_point": 5},
                 {"session_id": "s2", "parent_id": "root", "created_at": "4", "title": "子代理：b", "message_count": 3,
                  "fork_point": 0, "subagent": True, "spawned_at": 6},
                 {"session_id": "f2", "parent_id": "root", "created_at": "5", "title": "t", "message_count": 9,
                  "fork_point": 5}]
    tree = page_tree(Forest(summaries), "root")
    assert branch_names(tree) == {"root": "", "s1": "🤖 子代理 1", "f1": "A", "s2": "🤖 子代理 2", "f2": "B"}


def test_a_subagent_summary_survives_a_hand_broken_spawned_at(store):
    data = {"session_id": "x", "messages": [], "source": {"subagent": True, "spawned_at": "3; drop"}}
    summary = s11_tree.summary_of(data)
    assert summary["subagent"] is True and summary["spawned_at"] is None


# ── tool headers say what the call touched ──────────────────────────────────────────────────
@pytest.mark.parametrize("block, subject", [
    ({"type": "tool_use", "name": "Bash", "input": {"command": "pytest -q", "description": "跑测试"}}, "pytest -q"),
    ({"type": "tool_use", "name": "Read", "input": {"file_path": "/repo/app.py"}}, "/repo/app.py"),
    ({"type": "tool_use", "name": "Edit", "input": {"file_path": "a.py", "old_string": "x", "new_string": "y"}}, "a.py"),
    ({"type": "tool_use", "name": "Grep", "input": {"pattern": "def login", "path": "src/"}}, "def login（src/）"),
    ({"type": "tool_use", "name": "Glob", "input": {"pattern": "**/*.py"}}, "**/*.py"),
    ({"type": "tool_use", "name": "WebFetch", "input": {"url": "https://e.com/a", "prompt": "读"}}, "https://e.com/a"),
    ({"type": "tool_use", "name": "Task", "input": {"description": "查接口", "prompt": "很长的提示"}}, "查接口"),
    ({"type": "toolCall", "name": "read", "arguments": {"path": "src/x.py"}}, "src/x.py"),   # Pi
    ({"type": "tool_use", "name": "shell", "input": {"command": ["bash", "-lc", "rg -n x src/"]}}, "rg -n x src/"),
    ({"type": "tool_use", "name": "apply_patch",
      "input": {"input": "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: b.py\n+z\n"}},
     "src/a.py, b.py"),   # Codex
    ({"type": "tool_use", "name": "run_shell_command", "input": {"command": "ls -la"}}, "ls -la"),   # Gemini CLI
    ({"type": "tool_use", "name": "mystery", "input": {"x": 1}}, ""),
    ({"type": "tool_use", "name": "Bash", "input": "not a dict"}, ""),
    ({"type": "tool_use", "name": "Bash", "input": {"command": 42}}, ""),
], ids=["bash", "read", "edit", "grep", "glob", "webfetch", "task", "pi-read", "codex-shell", "codex-patch",
        "gemini-shell", "unknown", "bad-input", "bad-command"])
def test_a_tool_call_names_its_command_file_or_query(block, subject):
    assert tool_subject(block) == subject


def test_the_subject_is_one_bounded_line_of_text():
    block = {"type": "tool_use", "name": "Bash", "input": {"command": "echo **hi** <b>x</b>\n" + "y" * 500}}
    shown = tool_subject(block)
    assert "\n" not in shown and len(shown) <= SUBJECT_CHARS and shown.endswith("…")
    rows = chat_rows({"role": "assistant", "content": [block]}, 3, {}, str)
    title = rows[0]["metadata"]["title"]
    assert r"\*\*hi\*\* \<b\>x\<\/b\>" in title   # escaped: the header shows the characters, not bold or a tag
    assert "echo **hi** <b>x</b>" in unescaped(title)


def test_collapsed_calls_of_the_imported_session_show_their_command_and_path(store):
    report, _, _ = imported_tree(store)
    node = store.load(report.root_ids[0])
    chat, _, _, _ = _path_chat(node, 0, str)
    titles = [unescaped(row["metadata"]["title"]) for row in chat if row.get("metadata")]
    assert any("Bash · pytest tests/test_auth.py -q" in title for title in titles), titles
    assert any("Read · /home/dev/shop-api/app/config.py" in title for title in titles), titles
    assert any("Task · 检查其它公开接口的限流" in title for title in titles), titles


# ── an uploaded session whose subagents stayed behind ──────────────────────────────────────
def test_a_session_uploaded_without_its_subagents_folder_names_what_is_missing(tmp_path, store):
    alone = tmp_path / "upload" / "3f1c-session.jsonl"   # what a browser upload gives: the file, no folder beside it
    alone.parent.mkdir()
    alone.write_bytes(CLAUDE.read_bytes())
    report = import_file(alone, store)
    assert report.missing_subagents == ["agent-a7e3c91.jsonl"]
    text = report.describe()
    assert "看不到 1 个子代理的记录：agent-a7e3c91.jsonl" in text and "3f1c-session/subagents/" in text
    assert ".zip" in text and "--agent-folders" in text
    # with the folder beside it nothing is missing and nothing is said
    report = import_file(CLAUDE, SessionStore(tmp_path / "other"))
    assert report.missing_subagents == [] and "看不到" not in report.describe()


@pytest.fixture
def explorer(tmp_path) -> Explorer:
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    spaces = Spaces(tmp_path / "sessions", limits=Limits(creates_per_minute=10_000, create_burst=10_000,
                                                         min_free_bytes=0))
    return Explorer(spaces, export_root=str(tmp_path / "exports"), upload_root=str(uploads))


def test_the_upload_result_line_points_at_the_missing_subagents_and_a_zip_brings_them(explorer, tmp_path):
    token = explorer.spaces.new_token()
    alone = tmp_path / "uploads" / "3f1c.jsonl"
    alone.write_bytes(CLAUDE.read_bytes())
    page = explorer.import_upload(token, View(), str(alone))
    assert "看不到 1 个子代理的记录" in page.notice and "agent-a7e3c91.jsonl" in page.report, page.notice
    assert not any(row[0].lstrip("│├└─ \u00a0").startswith("🤖") for row in page.rows)
    bundle = tmp_path / "uploads" / "3f1c.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.write(CLAUDE, "3f1c.jsonl")
        archive.write(CLAUDE.parent / "claude-code-rate-limit" / "subagents" / "agent-a7e3c91.jsonl",
                      "3f1c/subagents/agent-a7e3c91.jsonl")
    assert explorer.check_upload(token, str(bundle)) == ""
    page = explorer.import_upload(token, View(), str(bundle))
    assert page.notice.startswith("📥") and "看不到" not in page.notice, page.notice
    assert any("🤖 子代理 1：检查其它公开接口的限流" in label for label, _ in page.tree_choices), page.tree_choices


# ── filters: all · hide tools and thinking · only my prompts ────────────────────────────────
def typed_by_user(message: dict) -> bool:
    """A prompt the user typed: a user message with text, not injected, not a compaction summary, not tool results."""
    content = message["content"]
    has_text = isinstance(content, str) or any(block.get("type") == "text" for block in content)
    return message["role"] == "user" and has_text and not message.get("meta") and not message.get("summary")


def opened(explorer):
    token = explorer.spaces.new_token()
    page = explorer.import_example(token, View(), "claude-code-rate-limit.jsonl")
    return token, page


def test_hiding_tools_and_thinking_keeps_only_the_talk_and_each_row_keeps_its_message_number(explorer):
    token, page = opened(explorer)
    node = explorer.spaces.open(token).store.load(page.view.session_id)
    everything = page.chat
    assert any(row.get("metadata") for row in everything)   # the session has thinking and tool calls
    talk = explorer.show_only(token, page.view, "talk")
    assert talk.chat and not any(row.get("metadata") for row in talk.chat)
    assert len(talk.chat) < len(everything) and "隐藏工具与思考" in talk.path_note
    for row, number in zip(talk.chat, talk.view.chat_numbers):
        if not row["content"].startswith("* * *"):   # divider lines (fork, subagent started) stay too
            assert row["content"].startswith(f"**#{number}**")   # the row still names its absolute message
    back = explorer.show_only(token, talk.view, "all")
    assert back.chat == everything and back.view.chat_numbers == page.view.chat_numbers
    assert len(node.messages) == talk.message_count


def test_only_my_prompts_shows_the_typed_prompts_and_a_pick_forks_at_the_absolute_message(explorer):
    token, page = opened(explorer)
    store = explorer.spaces.open(token).store
    node = store.load(page.view.session_id)
    prompts = explorer.show_only(token, page.view, "prompts")
    numbers = [number for row, number in zip(prompts.chat, prompts.view.chat_numbers)
               if not row["content"].startswith("* * *")]   # the subagent's divider line stays, at message 4
    typed = [n for n, message in enumerate(node.messages, 1) if typed_by_user(message)]
    assert list(numbers) == typed and len(typed) >= 2
    # the reader clicks the second row shown: the page maps it through chat_numbers, as explorer_tab.on_message does
    at = numbers[1]
    assert at > 2   # far from the row index: a filter that forgot the numbers would fork at 1 or 2
    child = explorer.fork(token, prompts.view, at, "在第二个提问之后另问一句")
    made = store.load(child.view.session_id)
    assert made.parent_id == node.session_id and made.fork_point == at
    assert made.messages[:at] == node.messages[:at] and made.messages[at]["content"] == "在第二个提问之后另问一句"


def test_an_unknown_filter_is_refused_in_chinese_and_the_view_is_kept(explorer):
    token, page = opened(explorer)
    refused = explorer.show_only(token, page.view, "<script>")
    assert refused.notice.startswith("⚠️ 对话只能这样显示：全部 / 隐藏工具与思考 / 只看我的提问")
    assert refused.view.shown == "all" and refused.chat == page.chat


def test_the_fork_divider_is_a_divider_row_not_a_folded_bubble_and_survives_the_filters(explorer):
    token, page = opened(explorer)
    store = explorer.spaces.open(token).store
    child = explorer.fork(token, page.view, 3, "另一种做法")
    for shown in ("all", "talk", "prompts"):
        rows = explorer.show_only(token, child.view, shown).chat
        dividers = [row for row in rows if "从这里开始" in row["content"]]
        assert len(dividers) == 1 and "metadata" not in dividers[0], shown
        assert dividers[0]["content"].startswith("* * *") and "前 3 条继承自父会话" in dividers[0]["content"]
    # only the divider starts with a rule: every other bubble starts with its **#N** header
    others = [row for row in explorer.show_only(token, child.view, "all").chat if "metadata" not in row
              and "从这里开始" not in row["content"]]
    assert others and all(row["content"].startswith("**#") for row in others)
    assert store.load(child.view.session_id).fork_point == 3


# ── the converge node is titled by its decision ────────────────────────────────────────────
def test_a_converge_node_reads_as_its_decision_not_as_a_carried_message(tmp_path):
    store = SessionStore(tmp_path / "store")
    ids = demo_tree_branching(store)
    a, b = ids["branch_a_id"], ids["branch_b_id"]
    carried_text = s11_tree.content_text(store.load(a).messages[5]["content"])
    node = s11_converge.converge(store, b, [a], "采用方案 B，LRU 上限也留着", carry=[(a, 6)])
    assert node.title == "🔀 收敛：采用方案 B，LRU 上限也留着"
    forest = Forest(store.list_sessions())
    summary = forest.by_id[node.session_id]
    assert summary["first_added"].startswith("采用方案 B")   # not the carried message that comes first
    tree = page_tree(forest, node.session_id)
    names = branch_names(tree)
    label = tree_label(summary, "", False, names[node.session_id])
    assert "收敛：采用方案 B，LRU 上限也留着" in label and carried_text[:10] not in label
    graph = mermaid_map(tree, None, None, links=False, names=names)
    assert "🔀 决定：采用方案 B" in graph
    titled = s11_converge.converge(store, b, [a], "再定一次", title="最终方案")   # a title the reader gave wins
    assert titled.title == "最终方案"


# ── the ✏️ edit box holds plain text ────────────────────────────────────────────────────────
def test_an_edit_sent_as_plain_text_is_kept_verbatim_and_the_raw_bubble_still_works(explorer):
    token = explorer.spaces.new_token()
    store = explorer.spaces.open(token).store
    ids = demo_tree_branching(store)
    page = explorer.select(token, View(), ids["branch_b_id"])
    row = page.view.chat_numbers.index(4)
    # the page's script turns the edit box into what the reader typed; markdown-looking text stays as it is
    plain = r"改查 C:\tmp\*.log 里的 **粗** `x` <b>"
    child = store.load(explorer.edit_fork(token, page.view, row, plain).view.session_id)
    assert child.messages[3] == {"role": "user", "content": plain} and child.fork_point == 3
    # without the script the box holds the bubble's Markdown: the header line and escapes are still taken off
    raw = page.chat[row]["content"].replace("event\\_listener", "ws\\_pool")
    again = store.load(explorer.edit_fork(token, page.view, row, raw).view.session_id)
    assert again.messages[3]["content"] == "我怀疑是 ws_pool 注册表无限增长，帮忙重点排查。"


def test_the_parent_conversation_marks_the_task_call_that_started_the_subagent(explorer):
    token, page = opened(explorer)
    store = explorer.spaces.open(token).store
    agent = next(s for s in store.list_sessions() if s["subagent"])
    marks = [(index, row) for index, row in enumerate(page.chat) if "这里启动了" in row["content"]]
    assert len(marks) == 1, marks
    index, row = marks[0]
    assert row["content"].startswith("* * *") and "metadata" not in row   # a divider line, not a bubble
    assert "🤖 子代理 1：检查其它公开接口的限流" in unescaped(row["content"]) and agent["session_id"] in row["content"]
    numbers = page.view.chat_numbers
    assert numbers[index] == agent["spawned_at"] == numbers[index - 1]   # right after the Task call's own rows
    assert index + 1 == len(numbers) or numbers[index + 1] > agent["spawned_at"]
    opened_agent = explorer.select(token, page.view, agent["session_id"])
    assert "### 🤖 子代理 1：检查其它公开接口的限流" in unescaped(opened_agent.details)
    assert "子代理：检查" not in unescaped(opened_agent.details.split("\n")[0])
