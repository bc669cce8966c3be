"""Issue 42 item 4: reading real agent sessions the way their own viewers do.

Subagents are 🤖 子代理 hanging at the call that started them (not 分支 A… at message 0), tool calls say what they
touched in their folded header, the conversation filters (all · no tools and thinking · only my prompts) still fork
at the right absolute message, the fork divider is a divider, the ✏️ box holds plain text. Driven without gradio.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import s11_tree
from s11_import import import_file
from s11_session import SessionStore
from s11_tree import Forest
from s11_workbench.explorer import branch_names, mermaid_map, page_tree, tree_label

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
