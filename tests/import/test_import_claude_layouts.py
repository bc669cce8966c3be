"""Issue 22 for Claude Code: every layout of subagents, metadata lines, titles, and a project folder as a forest.

Every transcript here is synthetic and built in the test (shapes from the research notes: 2.0.x agent files beside
the session, 2.1.x <session>/subagents/ with meta.json, Workflow runs, teammates named only in the result text,
agent_progress mirrors, --resume / --fork-session files replaying their parent's lines).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_import import Claude, nodes, own_texts, plain, text

import s11_import
from s11_import import CompanionFile, import_file, import_folder
from s11_session import SessionStore


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


def spawning_session(agent_id: str | None = "ab12cd3", tool: str = "Task", result_text: str = "找到了 src/cache.py",
                     extra_result: dict | None = None, description: str = "查找没有测试的模块") -> Claude:
    task = {"description": description, "prompt": "找出 src/ 下没有测试的模块", "subagent_type": "Explore"}
    result_fields = {"toolUseResult": {"agentId": agent_id, "status": "completed"}} if agent_id else {}
    result_fields.update(extra_result or {})
    return (Claude().user("u1", None, "哪些模块没测试？").call("a1", "u1", "toolu_task", name=tool, tool_input=task)
            .result("r1", "a1", "toolu_task", result_text, **result_fields)
            .assistant("a2", "r1", text("src/cache.py 没有测试。")))


def agent_log(agent_id: str, session: str = "sess-1", prompt: str = "找出 src/ 下没有测试的模块") -> Claude:
    agent = Claude(session=session)
    side = {"isSidechain": True, "agentId": agent_id}
    return (agent.user(f"{agent_id}-1", None, prompt, **side).call(f"{agent_id}-2", f"{agent_id}-1", "toolu_grep",
                                                                    name="Grep", **side)
            .result(f"{agent_id}-3", f"{agent_id}-2", "toolu_grep", "src/cache.py", **side)
            .assistant(f"{agent_id}-4", f"{agent_id}-3", text("src/cache.py 没有测试"), **side))


def check_subagent_under_the_call(store, report, agent_messages=4) -> tuple:
    main, agent = nodes(store, report)
    assert own_texts(main)[:2] == ["哪些模块没测试？", "Task"] and main.parent_id is None
    assert (agent.parent_id, agent.fork_point, len(agent.messages)) == (main.session_id, 0, agent_messages)
    assert agent.source["subagent"] is True and report.active_id == main.session_id
    assert report.root_ids == [main.session_id]
    return main, agent


# ── the three layouts ────────────────────────────────────────────────────────────────────────
def test_a_2_1_subagent_linked_only_by_its_meta_json_tool_use_id(tmp_path, store):
    spawning_session(agent_id=None).write(tmp_path / "sess-1.jsonl")
    agent_log("a77").write(tmp_path / "sess-1" / "subagents" / "agent-a77.jsonl")
    (tmp_path / "sess-1" / "subagents" / "agent-a77.meta.json").write_text(json.dumps(
        {"agentType": "Explore", "description": "从 meta 来的描述", "toolUseId": "toolu_task"}), encoding="utf-8")
    report = import_file(tmp_path / "sess-1.jsonl", store)
    main, agent = check_subagent_under_the_call(store, report)
    assert agent.title == "子代理：查找没有测试的模块" and agent.source["agent_id"] == "a77"


def test_a_2_0_agent_file_beside_the_session_is_attached_and_never_a_session_of_its_own(tmp_path, store):
    spawning_session().write(tmp_path / "sess-1.jsonl")
    agent_log("ab12cd3").write(tmp_path / "agent-ab12cd3.jsonl")
    agent_log("ffff000", session="someone-else").write(tmp_path / "agent-ffff000.jsonl")   # another session's
    report = import_file(tmp_path / "sess-1.jsonl", store)
    main, agent = check_subagent_under_the_call(store, report)
    assert agent.source["agent_id"] == "ab12cd3" and "ffff000" not in json.dumps(agent.messages)
    folder = import_folder(tmp_path, SessionStore(tmp_path / "folder-store"))
    assert [r.file for r in folder.reports] == ["sess-1.jsonl"]
    assert len(folder.problems) == 1 and "agent-ffff000.jsonl" in folder.problems[0]   # its session is not here
    assert "someone-else.jsonl" in folder.problems[0]
    assert folder.reports[0].node_ids == report.node_ids   # the same nodes as the single-file import


def test_an_agent_file_imported_alone_names_its_session_file(tmp_path, store):
    spawning_session().write(tmp_path / "sess-1.jsonl")
    for path in (agent_log("ab12cd3").write(tmp_path / "agent-ab12cd3.jsonl"),
                 agent_log("a9").write(tmp_path / "sess-1" / "subagents" / "agent-a9.jsonl")):
        with pytest.raises(CompanionFile, match=f"{path.name} 是会话 sess-1 的子代理记录.*sess-1.jsonl"):
            import_file(path, store)
    assert os.listdir(store.storage_dir) == []


def test_an_orphan_agent_file_imported_alone_has_a_defined_active_end(tmp_path, store):
    path = agent_log("ab12cd3", session="gone").write(tmp_path / "agent-ab12cd3.jsonl")
    report = import_file(path, store)
    (agent,) = nodes(store, report)
    assert report.active_id == agent.session_id and agent.source["active_end"] is True
    assert agent.source["subagent"] is True and own_texts(agent)[-1] == "src/cache.py 没有测试"
    assert "活动端（对话现在停在这里）：无" not in report.describe()


def test_a_workflow_run_is_attached_to_the_call_that_started_it(tmp_path, store):
    session = spawning_session(agent_id=None, tool="Workflow", extra_result={"toolUseResult": {"runId": "wf_1a2b"}})
    session.write(tmp_path / "sess-1.jsonl")
    run = tmp_path / "sess-1" / "subagents" / "workflows" / "wf_1a2b"
    agent_log("w1").write(run / "agent-w1.jsonl")
    agent_log("w2").write(run / "nested" / "agent-w2.jsonl")
    (run / "journal.jsonl").write_text('{"type":"started","agentId":"w1","label":"reconnoiter"}\n', encoding="utf-8")
    (run / "agent-w1.meta.json").write_text('{"label": "侦察", "phase": "explore"}', encoding="utf-8")
    report = import_file(tmp_path / "sess-1.jsonl", store)
    main, *agents = nodes(store, report)
    assert sorted(a.source["agent_id"] for a in agents) == ["w1", "w2"]
    assert all((a.parent_id, a.fork_point) == (main.session_id, 0) for a in agents)
    assert {a.source["agent_id"]: a.title for a in agents}["w1"] == "子代理：侦察"
    assert report.skipped == [] and not s11_import.find_transcripts([str(tmp_path)])[1]   # journal is not a session


def test_a_teammate_named_only_in_the_result_text_hangs_under_its_call(tmp_path, store):
    tail = "队友已启动。\nagentId: tm42 (use SendMessage with to: 'tm42' to continue this agent)\n<usage>1</usage>"
    spawning_session(agent_id=None, result_text=tail).write(tmp_path / "sess-1.jsonl")
    wrapped = '<teammate-message teammate_id="team-lead" color="blue">另一段提示</teammate-message>'
    agent_log("tm42", prompt=wrapped).write(tmp_path / "sess-1" / "subagents" / "agent-tm42.jsonl")
    check_subagent_under_the_call(store, import_file(tmp_path / "sess-1.jsonl", store))


def test_a_teammate_found_by_its_wrapped_spawn_prompt(tmp_path, store):
    spawning_session(agent_id=None).write(tmp_path / "sess-1.jsonl")
    wrapped = '<teammate-message teammate_id="team-lead" summary="a > b">找出 src/ 下没有测试的模块</teammate-message>'
    agent_log("tm7", prompt=wrapped).write(tmp_path / "sess-1" / "subagents" / "agent-tm7.jsonl")
    main, agent = check_subagent_under_the_call(store, import_file(tmp_path / "sess-1.jsonl", store))
    assert agent.title == "子代理：查找没有测试的模块"


def progress(uid, parent, agent, envelope, call="toolu_task", **extra) -> dict:
    return {"type": "progress", "uuid": uid, "parentUuid": parent, "sessionId": "sess-1", "isSidechain": False,
            "timestamp": "2026-01-01T10:00:30.000Z", "parentToolUseID": call, "toolUseID": f"agent_msg_{uid}",
            "data": {"type": "agent_progress", "agentId": agent, "prompt": "找出 src/ 下没有测试的模块",
                     "message": envelope}, **extra}


def mirrored_session() -> Claude:
    task = {"description": "查找没有测试的模块", "prompt": "找出 src/ 下没有测试的模块"}
    log = Claude().user("u1", None, "哪些模块没测试？").call("a1", "u1", "toolu_task", name="Task", tool_input=task)
    log.raw(progress("p1", "a1", "am1", {"type": "assistant", "uuid": "am1-a", "message": {
        "role": "assistant", "id": "msg_sub", "content": [{"type": "tool_use", "id": "toolu_sub", "name": "Read",
                                                           "input": {"file_path": "/p/x.py"}}]}}))
    log.raw(progress("p2", "p1", "am1", {"type": "user", "uuid": "am1-b", "message": {
        "role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_sub", "content": "print(1)"}]}}))
    log.raw(progress("p3", "p2", "am1", {"role": "assistant", "content": [{"type": "text", "text": "x.py 没有测试"}]}))
    return log.result("r1", "p3", "toolu_task", "x.py 没有测试").assistant("a2", "r1", text("x.py 没有测试。"))


def test_subagent_work_found_only_in_agent_progress_lines_is_recovered(tmp_path, store):
    report = import_file(mirrored_session().write(tmp_path / "sess-1.jsonl"), store)
    main, agent = nodes(store, report)
    assert own_texts(main) == ["哪些模块没测试？", "Task", "x.py 没有测试", "x.py 没有测试。"]   # mirrors relinked
    assert (agent.parent_id, agent.fork_point) == (main.session_id, 0)
    assert own_texts(agent) == ["找出 src/ 下没有测试的模块", "Read", "print(1)", "x.py 没有测试"]
    assert agent.title == "子代理：查找没有测试的模块" and report.dropped["progress:agent_progress"] == 3
    assert any("am1" in w and "agent_progress" in w for w in report.warnings)


def test_mirrors_are_not_used_when_the_agent_file_exists(tmp_path, store):
    mirrored_session().write(tmp_path / "sess-1.jsonl")
    agent_log("am1").write(tmp_path / "sess-1" / "subagents" / "agent-am1.jsonl")
    report = import_file(tmp_path / "sess-1.jsonl", store)
    main, agent = nodes(store, report)
    assert own_texts(agent) == ["找出 src/ 下没有测试的模块", "Grep", "src/cache.py", "src/cache.py 没有测试"]
    assert not any("agent_progress" in w for w in report.warnings)


# ── metadata and titles ─────────────────────────────────────────────────────────────────────
NEW_METADATA = ["worktree-state", "tag", "agent-color", "agent-setting", "content-replacement", "file-history-delta",
                "bridge-session", "relocated"]


def test_newer_metadata_lines_are_counted_as_dropped_not_reported_as_bad(tmp_path, store):
    log = Claude().user("u1", None, "你好")
    for kind in NEW_METADATA:
        log.raw({"type": kind, "sessionId": "sess-1", "worktreeSession": {"worktreePath": "/w"}, "tag": "x"})
    log.raw({"type": "agent-setting", "uuid": "meta-with-uuid", "parentUuid": "u1", "sessionId": "sess-1"})
    log.assistant("a1", "meta-with-uuid", text("你好！"))
    log.raw({"type": "some-future-metadata", "sessionId": "sess-1"}).raw('{"type":"user",')
    report = import_file(log.write(tmp_path / "s.jsonl"), store)
    assert [line for line, _ in report.skipped] == [13]            # only the torn line is a bad line
    assert {kind: report.dropped[kind] for kind in NEW_METADATA} == {
        **{kind: 1 for kind in NEW_METADATA}, "agent-setting": 2}
    assert report.dropped["some-future-metadata"] == 1
    assert own_texts(nodes(store, report)[0]) == ["你好", "你好！"]   # linked through the metadata line's uuid


@pytest.mark.parametrize("first, title", [
    ("<command-name>/context</command-name>\n<command-message>context</command-message>\n<command-args></command-args>",
     "/context"),
    ("<command-message>review</command-message>\n<command-name>/review</command-name>\n"
     "<command-args>PR 12</command-args>", "/review PR 12"),
    ("<system-reminder>todo 列表为空</system-reminder>修复登录接口", "修复登录接口"),
    ("<bash-input>git status</bash-input>", "!git status"),
    ('<teammate-message teammate_id="team-lead">检查缓存</teammate-message>', "检查缓存"),
])
def test_titles_read_like_the_agents_own_picker(tmp_path, store, first, title):
    log = Claude().user("u0", None, "<local-command-caveat>Caveat: …</local-command-caveat>", isMeta=True)
    log.user("u1", "u0", first).assistant("a1", "u1", text("好"))
    (node,) = nodes(store, import_file(log.write(tmp_path / "s.jsonl"), store))
    assert node.title == title


def test_custom_title_then_ai_title_then_summary_then_the_prompt(tmp_path, store):
    base = Claude().user("u1", None, "第一句").assistant("a1", "u1", text("好"))
    variants = [([], "第一句"), ([{"type": "summary", "summary": "摘要标题", "leafUuid": "a1"}], "摘要标题"),
                ([{"type": "ai-title", "aiTitle": "AI 标题", "sessionId": "sess-1"},
                  {"type": "summary", "summary": "摘要标题", "leafUuid": "a1"}], "AI 标题"),
                ([{"type": "custom-title", "customTitle": "我的标题", "sessionId": "sess-1"},
                  {"type": "ai-title", "aiTitle": "AI 标题", "sessionId": "sess-1"}], "我的标题")]
    for index, (extra, title) in enumerate(variants):
        log = Claude()
        log.lines = base.lines + extra
        (node,) = nodes(store, import_file(log.write(tmp_path / f"s{index}.jsonl"), store))
        assert node.title == title


# ── a project folder is a forest ────────────────────────────────────────────────────────────
def project(tmp_path: Path) -> Path:
    """A: the original session. B: `--resume` in a new file, its first line continuing A's last message.
    C: `--fork-session` from A's middle, replaying A's first lines (same uuids, forkedFrom on each).
    D: an old-style resume that replays all of A verbatim (new sessionId, no forkedFrom) and goes on.
    E: an unrelated session in the same folder."""
    folder = tmp_path / "-home-me-shop"
    a = (Claude("A").user("a1", None, "给登录加限流").assistant("a2", "a1", text("用令牌桶？"))
         .user("a3", "a2", "好").assistant("a4", "a3", text("加好了")))
    a.raw({"type": "custom-title", "customTitle": "登录限流", "sessionId": "A"}).write(folder / "A.jsonl")
    b = Claude("B").user("b1", "a4", "再加个测试").assistant("b2", "b1", text("测试也加好了"))
    b.write(folder / "B.jsonl")
    c = Claude("C")
    for line in a.lines[:2]:
        c.lines.append({**line, "sessionId": "C", "forkedFrom": {"sessionId": "A", "messageUuid": line["uuid"]}})
    c.user("c1", "a2", "不，用滑动窗口").assistant("c2", "c1", text("改成滑动窗口了")).write(folder / "C.jsonl")
    d = Claude("D")
    d.lines = [{**line, "sessionId": "D"} for line in a.lines[:4]]
    d.user("d1", "a4", "顺便写文档").assistant("d2", "d1", text("文档写好了")).write(folder / "D.jsonl")
    Claude("E").user("e1", None, "无关的会话").assistant("e2", "e1", text("嗯")).write(folder / "E.jsonl")
    return folder


def test_a_project_folder_becomes_one_forest_with_resumes_and_forks_at_their_junctions(tmp_path, store):
    folder = project(tmp_path)
    result = import_folder(folder, store)
    assert result.problems == [] and [r.files[0] for r in result.reports] == ["A.jsonl", "E.jsonl"]
    assert sorted(result.reports[0].files) == ["A.jsonl", "B.jsonl", "C.jsonl", "D.jsonl"]
    assert result.reports[0].files[-1] == "C.jsonl"   # the fork (forkedFrom) is read after what it copied
    forest = {node.session_id: node for node in (store.load(i) for i in result.node_ids)}
    roots = [n for n in forest.values() if n.parent_id is None]
    assert sorted(own_texts(r)[0] for r in roots) == ["无关的会话", "给登录加限流"]
    trunk = next(r for r in roots if own_texts(r)[0] == "给登录加限流")
    assert trunk.title == "登录限流" and trunk.source["file"] == "A.jsonl"
    assert own_texts(trunk) == ["给登录加限流", "用令牌桶？", "好", "加好了"]   # the shared history appears once
    children = {n.source["file"]: n for n in forest.values() if n.parent_id == trunk.session_id}
    assert sorted(children) == ["B.jsonl", "C.jsonl", "D.jsonl"]
    assert (children["B.jsonl"].fork_point, own_texts(children["B.jsonl"])) == (4, ["再加个测试", "测试也加好了"])
    assert (children["C.jsonl"].fork_point, own_texts(children["C.jsonl"])) == (2, ["不，用滑动窗口", "改成滑动窗口了"])
    assert (children["D.jsonl"].fork_point, own_texts(children["D.jsonl"])) == (4, ["顺便写文档", "文档写好了"])
    assert children["C.jsonl"].title.startswith("登录限流 · 分叉会话") or "分叉会话" in children["C.jsonl"].title
    assert sum(len(own_texts(n)) for n in forest.values()) == 4 + 2 + 2 + 2 + 2   # nothing repeated
    again = import_folder(folder, store)
    assert sum(r.written for r in again.reports) == 0 and again.node_ids == result.node_ids


def test_a_single_file_import_and_the_folder_import_agree_on_the_parents_node_ids(tmp_path, store):
    folder = project(tmp_path)
    alone = import_file(folder / "A.jsonl", store)
    result = import_folder(folder, store)
    assert alone.node_ids[0] in result.node_ids and result.reports[0].unchanged >= 1


def test_the_folder_forest_follows_growth_of_a_resumed_file(tmp_path, store):
    folder = project(tmp_path)
    first = import_folder(folder, store)
    Claude("B").user("b1", "a4", "再加个测试").assistant("b2", "b1", text("测试也加好了")).user(
        "b3", "b2", "再跑一遍").assistant("b4", "b3", text("全绿")).write(folder / "B.jsonl")
    second = import_folder(folder, store)
    assert second.node_ids == first.node_ids and sum(r.updated for r in second.reports) == 1
    grown = next(store.load(i) for i in second.node_ids if store.load(i).source["file"] == "B.jsonl")
    assert own_texts(grown)[-2:] == ["再跑一遍", "全绿"]


def test_an_older_codex_rollout_is_not_mistaken_for_pi(tmp_path, store):
    lines = [{"id": "5973b6c0", "timestamp": "2025-06-01T09:12:03.412Z", "instructions": "AGENTS.md"},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "加一个 --dry-run"}]},
             {"record_type": "state"},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "加好了"}]}]
    path = tmp_path / "rollout-2025-06-01T09-12-03-5973b6c0.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    report = import_file(path, store)
    (node,) = nodes(store, report)
    assert report.format == s11_import.CODEX and [plain(m) for m in node.messages] == ["加一个 --dry-run", "加好了"]
    assert node.source["session_id"] == "5973b6c0" and node.title == "加一个 --dry-run"
