"""Issue 22 item 6: the sessions in the agents' own folders, on a fake home built in a temporary folder.

The folders are only ever read (checked byte for byte and by mtime), symlinks are never followed, only the head of
each file is read for its title, the list is bounded, and following a session re-imports it only when it changed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_import import Claude, own_texts, text
from test_import_codex_gemini import GEMINI_HEAD, Codex, g_user, write_lines

import s11_import
from s11_import import agents
from s11_session import SessionStore

NO_OVERRIDES = {"CLAUDE_CONFIG_DIR": "", "PI_CODING_AGENT_DIR": "", "CODEX_HOME": "", "GEMINI_CLI_HOME": ""}


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


def pi_session(path: Path, words: str, cwd: str = "/work/pi-proj") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    entries = [{"type": "session", "version": 3, "id": "pi-1", "timestamp": "2026-01-01T00:00:00Z", "cwd": cwd},
               {"type": "session_info", "id": "i", "parentId": None, "name": "Pi 会话名"},
               {"type": "message", "id": "m1", "parentId": "i", "message": {"role": "user", "content": words}}]
    path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8")
    return path


def fake_home(home: Path) -> dict:
    """One or two sessions per agent in the standard places, with distinct modification times."""
    paths = {}
    claude = home / ".claude" / "projects" / "-work-shop"
    paths["claude"] = (Claude().user("u0", None, "<command-name>/init</command-name>")
                       .user("u1", "u0", "给登录加限流").assistant("a1", "u1", text("好"))
                       .write(claude / "sess-1.jsonl"))
    Claude().user("s1", None, "子代理", isSidechain=True, agentId="x").write(
        claude / "sess-1" / "subagents" / "agent-x.jsonl")
    Claude("sess-1").user("s2", None, "旧版子代理", isSidechain=True, agentId="y").write(claude / "agent-y.jsonl")
    paths["pi"] = pi_session(home / ".pi" / "agent" / "sessions" / "--work-pi-proj--" / "2026_pi-1.jsonl", "你好 Pi")
    paths["codex"] = Codex().user("加分页").assistant("好").write(
        home / ".codex" / "sessions" / "2026" / "04" / "18" / "rollout-2026-04-18T09-00-00-abc.jsonl")
    chats = home / ".gemini" / "tmp" / "billing" / "chats"
    paths["gemini"] = write_lines(chats / "session-2026-05-22T14-59-d98cf9e7.jsonl",
                                  [GEMINI_HEAD, g_user("u-1", "修测试"), {"$set": {"summary": "修复 test_parse"}}])
    (chats / "session-2026-05-22T14-59-d98cf9e7.json").write_text(json.dumps({**GEMINI_HEAD, "messages": []}),
                                                                 encoding="utf-8")
    paths["gemini-json"] = chats / "session-2025-01-01T00-00-old.json"
    paths["gemini-json"].write_text(json.dumps({**GEMINI_HEAD, "sessionId": "old", "summary": "旧版 JSON 会话",
                                                "messages": [g_user("u-1", "旧的")]}, indent=2), encoding="utf-8")
    for age, key in enumerate(["gemini", "codex", "pi", "claude", "gemini-json"]):
        stamp = 1_800_000_000 - age * 3600
        os.utime(paths[key], (stamp, stamp))
    return paths


def snapshot(folder: Path) -> dict:
    return {str(p): (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_sessions_of_every_agent_are_listed_newest_first(tmp_path):
    home = tmp_path / "home"
    paths = fake_home(home)
    listing = s11_import.list_agent_sessions(str(home), env=NO_OVERRIDES)
    rows = [(s.format, s.title) for s in listing.sessions]
    assert rows == [(s11_import.GEMINI, "修复 test_parse"), (s11_import.CODEX, "加分页"),
                    (s11_import.PI, "Pi 会话名"), (s11_import.CLAUDE, "/init"),
                    (s11_import.GEMINI, "旧版 JSON 会话")]
    by_format = {s.format: s for s in listing.sessions}
    assert by_format[s11_import.CLAUDE].project == "/repo" and by_format[s11_import.PI].project == "/work/pi-proj"
    assert by_format[s11_import.CODEX].project == "/home/dev/api"
    assert by_format[s11_import.CLAUDE].size == paths["claude"].stat().st_size
    assert by_format[s11_import.CODEX].agent == "Codex CLI" and not listing.truncated
    assert [root for _, root in listing.roots] == [str(home / ".claude"), str(home / ".pi" / "agent"),
                                                  str(home / ".codex"), str(home / ".gemini")]


def test_the_agents_documented_overrides_move_the_roots(tmp_path):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "c"), "PI_CODING_AGENT_DIR": str(tmp_path / "p"),
           "CODEX_HOME": str(tmp_path / "x"), "GEMINI_CLI_HOME": str(tmp_path / "g")}
    roots = [root for _, root in s11_import.agent_roots(str(tmp_path / "home"), env)]
    assert roots == [str(tmp_path / "c"), str(tmp_path / "p"), str(tmp_path / "x"), str(tmp_path / "g" / ".gemini")]
    Claude().user("u1", None, "在别处").write(tmp_path / "c" / "projects" / "-p" / "s.jsonl")
    listing = s11_import.list_agent_sessions(str(tmp_path / "home"), env=env)
    assert [s.title for s in listing.sessions] == ["在别处"]


def test_listing_is_bounded_and_reads_only_the_head_of_each_file(tmp_path, monkeypatch):
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "-big"
    for i in range(30):
        log = Claude(f"s{i}").user("u1", None, f"会话 {i}")
        for j in range(300):   # ~100 KB more than the head
            log.assistant(f"a{j}", "u1" if j == 0 else f"a{j - 1}", text("x" * 300))
        log.write(project / f"s{i}.jsonl")
        os.utime(project / f"s{i}.jsonl", (1_800_000_000 + i, 1_800_000_000 + i))
    reads = []
    real_open = open

    class Counting:
        def __init__(self, *args, **kwargs):
            self.handle = real_open(*args, **kwargs)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

        def read(self, size=-1):
            data = self.handle.read(size)
            reads.append(len(data))
            return data

    monkeypatch.setattr(agents, "open", Counting, raising=False)
    listing = s11_import.list_agent_sessions(str(home), env=NO_OVERRIDES, limit=5)
    assert [s.title for s in listing.sessions] == [f"会话 {i}" for i in (29, 28, 27, 26, 25)]
    assert listing.truncated and len(reads) == 5 and max(reads) <= agents.HEAD_BYTES
    assert all((project / f"s{i}.jsonl").stat().st_size > 2 * agents.HEAD_BYTES for i in range(30))
    assert len(s11_import.list_agent_sessions(str(home), env=NO_OVERRIDES, scan_limit=7).sessions) == 7


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_symlinks_are_never_followed_out_of_the_root(tmp_path):
    home = tmp_path / "home"
    fake_home(home)
    outside = tmp_path / "outside"
    Claude().user("u1", None, "外面的秘密会话").write(outside / "secret.jsonl")
    os.symlink(outside, home / ".claude" / "projects" / "linked-project")
    os.symlink(outside / "secret.jsonl", home / ".claude" / "projects" / "-work-shop" / "linked.jsonl")
    titles = [s.title for s in s11_import.list_agent_sessions(str(home), env=NO_OVERRIDES).sessions]
    assert "外面的秘密会话" not in titles and len(titles) == 5
    folder_titles = [s.title for s in s11_import.list_folder_sessions(str(home)).sessions]
    assert "外面的秘密会话" not in folder_titles


def test_a_folder_the_reader_names_lists_every_format_and_nothing_else(tmp_path):
    home = tmp_path / "home"
    fake_home(home)
    (home / "notes.jsonl").write_text('{"kind": "note"}\n', encoding="utf-8")
    listing = s11_import.list_folder_sessions(str(home))
    formats = sorted(s.format for s in listing.sessions)
    assert formats == sorted([s11_import.CLAUDE, s11_import.PI, s11_import.CODEX, s11_import.GEMINI,
                              s11_import.GEMINI])   # subagent files, notes.jsonl and the migrated .json are out


def test_the_folders_are_only_read_by_listing_importing_and_following(tmp_path, store):
    home = tmp_path / "home"
    paths = fake_home(home)
    before = snapshot(home)
    listing = s11_import.list_agent_sessions(str(home), env=NO_OVERRIDES)
    for session in listing.sessions:
        s11_import.import_agent_session(session.path, store)
    s11_import.follow(str(paths["claude"]), store)
    assert snapshot(home) == before
    assert len(store.list_sessions()) == 5 + 2   # the Claude session brings its two subagents


def test_following_a_session_reimports_it_only_when_it_changed(tmp_path, store):
    path = tmp_path / "projects" / "-p" / "s.jsonl"
    log = Claude().user("u1", None, "开始").assistant("a1", "u1", text("好"))
    log.write(path)
    first, state = s11_import.follow(str(path), store)
    assert first.written == 1
    assert s11_import.follow(str(path), store, state) == (None, state)          # nothing changed: nothing read
    log.user("u2", "a1", "Agent 继续聊").assistant("a2", "u2", text("嗯")).write(path)
    second, state = s11_import.follow(str(path), store, state)
    assert second.node_ids == first.node_ids and second.updated == 1
    assert own_texts(store.load(first.node_ids[0]))[-1] == "嗯"
    node = store.load(first.node_ids[0])   # the reader continues the node in the store ...
    node.messages.append({"role": "user", "content": "我在仓库里续写的"})
    store.save(node)
    log.user("u3", "a2", "Agent 又聊了一句").write(path)
    third, state = s11_import.follow(str(path), store, state)
    assert third.kept == 1 and store.load(node.session_id).messages[-1]["content"] == "我在仓库里续写的"
    Claude().user("s1", None, "新的子代理", isSidechain=True, agentId="n").write(
        path.parent / "s" / "subagents" / "agent-n.jsonl")
    fourth, state = s11_import.follow(str(path), store, state)   # a new subagent file is a change too
    assert fourth is not None and fourth.written == 1
