"""The command line's importer subcommands (`import`, `agents`), run as real subprocesses.

Issue 18 item 14: a transcript whose file name and title carry terminal escapes (OSC `ESC ] 0 ; … BEL`, CSI
`ESC [ 2 J`), a bidi override and newlines must reach the terminal only as visible escapes, on stdout and stderr,
whether the import succeeds or is refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_import import REPO, Claude, text

from s11_session import SessionStore

CLI = REPO / "code" / "s11_cli.py"
EVIL = "\x1b]0;pwn\x07\x1b[2J\u202egnp.exe\nFORGED LINE"


def run_cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CLI), *map(str, args)], capture_output=True, text=True, cwd=REPO,
                          timeout=120, env={**os.environ, **(env or {})})


def assert_clean(done: subprocess.CompletedProcess) -> None:
    for stream in (done.stdout, done.stderr):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream, stream
        assert not any(line.startswith("FORGED") for line in stream.splitlines()), stream
    assert "\\u001b" in done.stdout + done.stderr   # shown, as an escape, not swallowed


def evil_transcript(folder: Path) -> Path:
    log = (Claude().raw({"type": "custom-title", "customTitle": EVIL, "sessionId": "sess-1"})
           .user("u1", None, "问题").assistant("a1", "u1", text("回答")).user("u2", "u1", f"换个问法 {EVIL}")
           .assistant("a2", "u2", text("另一个回答")))
    return log.write(folder / f"evil{EVIL}.jsonl")


@pytest.mark.slow
def test_cli_import_prints_no_raw_escape_from_a_file_name_or_title(tmp_path):
    path = evil_transcript(tmp_path / "in")
    done = run_cli("--dir", tmp_path / "store", "import", path)
    assert done.returncode == 0, done.stderr
    assert_clean(done)
    assert "会话节点 2 个" in done.stdout and len(SessionStore(tmp_path / "store").list_sessions()) == 2


@pytest.mark.slow
def test_cli_refusals_print_no_raw_escape_either(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / f"noise{EVIL}.jsonl").write_bytes(os.urandom(512) + b"\x00")
    (folder / f"empty{EVIL}.jsonl").write_text("\n\n", encoding="utf-8")
    agent = Claude().user("x", None, "孤儿子代理", isSidechain=True, agentId="zz")
    agent.write(folder / "gone" / "subagents" / f"agent-zz{EVIL}.jsonl")
    for target in (folder / f"noise{EVIL}.jsonl", folder, tmp_path / f"missing{EVIL}.jsonl"):
        done = run_cli("--dir", tmp_path / "store", "import", target)
        assert done.returncode == 2 and done.stderr
        assert_clean(done)
    assert SessionStore(tmp_path / "store").list_sessions() == []


@pytest.mark.slow
def test_cli_imports_a_project_folder_as_one_forest(tmp_path):
    folder = tmp_path / "-home-me-shop"
    Claude("A").user("a1", None, "给登录加限流").assistant("a2", "a1", text("加好了")).write(folder / "A.jsonl")
    Claude("B").user("b1", "a2", "再加个测试").assistant("b2", "b1", text("好")).write(folder / "B.jsonl")
    done = run_cli("--dir", tmp_path / "store", "import", folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("导入 A.jsonl") == 1 and "续接 / 分叉会话文件：B.jsonl" in done.stdout
    assert "└── 再加个测试 · 续接会话 B [" in done.stdout   # B has its own title: its first prompt
    again = run_cli("--dir", tmp_path / "store", "import", folder)
    assert "新写入 0，更新 0，未变化 2" in again.stdout


def agent_home(home: Path) -> None:
    """One session per agent in the standard folders under a fake home."""
    Claude().user("u1", None, f"Claude 的会话 {EVIL}").write(home / ".claude" / "projects" / "-work-x" / "s.jsonl")
    pi = home / ".pi" / "agent" / "sessions" / "--work-y--" / "2026-01-01_p.jsonl"
    pi.parent.mkdir(parents=True)
    pi.write_text(json.dumps({"type": "session", "version": 3, "id": "p", "timestamp": "2026-01-01T00:00:00Z",
                              "cwd": "/work/y"}) + "\n" + json.dumps(
        {"type": "message", "id": "m", "parentId": None, "message": {"role": "user", "content": "Pi 的会话"}}) + "\n",
        encoding="utf-8")


@pytest.mark.slow
def test_cli_agents_lists_the_standard_folders_and_import_agent_folders_imports_them(tmp_path):
    home = tmp_path / "home"
    agent_home(home)
    env = {"CLAUDE_CONFIG_DIR": "", "PI_CODING_AGENT_DIR": "", "CODEX_HOME": "", "GEMINI_CLI_HOME": ""}
    listed = run_cli("agents", "--home", home, env=env)
    assert listed.returncode == 0, listed.stderr
    assert_clean(listed)
    assert "Pi 的会话" in listed.stdout and "Claude 的会话" in listed.stdout and "共 2 个会话" in listed.stdout
    assert "/work/y" in listed.stdout   # the project is the recorded cwd
    done = run_cli("--dir", tmp_path / "store", "import", "--agent-folders", "--home", home, "--limit", "5", env=env)
    assert done.returncode == 0, done.stderr
    assert_clean(done)
    assert len(SessionStore(tmp_path / "store").list_sessions()) == 2
    assert run_cli("--dir", tmp_path / "store", "import").returncode == 2   # nothing named, nothing imported
