"""Issue 44 item 4: sessions the agents are about to delete are listed and kept.

A fake home holds each agent's folders (shapes from the other import tests) with modification times set relative to
"now": Claude Code and Gemini CLI sessions within 5 days of their configured deletion age are at risk, Codex's
compressed and archived rollouts are listed, Pi never deletes. `keep` imports them all; a second run writes nothing;
the agents' folders are only read.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import zstandard
from test_import import Claude, text
from test_import_agents import pi_session, snapshot
from test_import_cli import run_cli
from test_import_codex_gemini import GEMINI_HEAD, Codex, g_model, g_user, write_lines

import s11_import
from s11_import import rescue
from s11_session import SessionStore

DAY = 86400
NOW = 1_900_000_000.0
NO_OVERRIDES: dict = {}


def aged(path: Path, days: float, now: float = NOW) -> Path:
    stamp = now - days * DAY
    os.utime(path, (stamp, stamp))
    return path


def claude(home: Path, name: str, words: str) -> Path:
    return (Claude(session=name).user(f"{name}-u", None, words).assistant(f"{name}-a", f"{name}-u", text("好"))
            .write(home / ".claude" / "projects" / "-work-shop" / f"{name}.jsonl"))


def gemini(home: Path, name: str, words: str) -> Path:
    head = {**GEMINI_HEAD, "sessionId": f"{name}-0000"}
    return write_lines(home / ".gemini" / "tmp" / "billing" / "chats" / f"session-{name}.jsonl",
                       [head, g_user(f"{name}-u", words), g_model(f"{name}-g", "好")])


def fake_home(home: Path, now: float = NOW, claude_settings=None, gemini_settings=None) -> dict:
    paths = {"claude-fresh": aged(claude(home, "c-fresh", "新的 Claude 会话"), 2, now),
             "claude-soon": aged(claude(home, "c-soon", "快到期的 Claude 会话"), 6, now),
             "claude-over": aged(claude(home, "c-over", "过期的 Claude 会话"), 12, now),
             "gemini-fresh": aged(gemini(home, "g-fresh", "新的 Gemini 会话"), 3, now),
             "gemini-soon": aged(gemini(home, "g-soon", "快到期的 Gemini 会话"), 10, now),
             "pi-old": aged(pi_session(home / ".pi" / "agent" / "sessions" / "--w--" / "old.jsonl", "很旧的 Pi"), 100,
                            now)}
    day = home / ".codex" / "sessions" / "2026" / "05" / "02"
    paths["codex-live"] = aged(Codex().user("现在的 Codex").assistant("好").write(day / "rollout-live.jsonl"), 1, now)
    plain = Codex(thread="zst-thread").user("压缩了的 Codex").assistant("好").write(home / "tmp.jsonl")
    packed = day / "rollout-old.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    plain.unlink()
    paths["codex-zst"] = aged(packed, 9, now)
    paths["codex-archived"] = aged(Codex(thread="arch").user("归档的 Codex").assistant("好").write(
        home / ".codex" / "archived_sessions" / "rollout-arch.jsonl"), 40, now)
    settings = {"cleanupPeriodDays": 10} if claude_settings is None else claude_settings
    if settings is not False:
        (home / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    settings = {"general": {"sessionRetention": {"enabled": True, "maxAge": "2w"}}} if gemini_settings is None \
        else gemini_settings
    if settings is not False:
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    return paths


def test_the_sessions_at_risk_are_listed_per_agent_with_the_reason(tmp_path):
    paths = fake_home(tmp_path)
    listing = s11_import.at_risk(str(tmp_path), NO_OVERRIDES, NOW)
    found = [(Path(item.session.path).name, item.session.agent, item.days_left) for item in listing.sessions]
    assert found == [("c-over.jsonl", "Claude Code", pytest.approx(-2)),
                     ("c-soon.jsonl", "Claude Code", pytest.approx(4)),
                     ("session-g-soon.jsonl", "Gemini CLI", pytest.approx(4)),
                     ("rollout-arch.jsonl", "Codex CLI", None), ("rollout-old.jsonl.zst", "Codex CLI", None)]
    reasons = {Path(item.session.path).name: item.reason for item in listing.sessions}
    assert reasons["c-soon.jsonl"] == "还剩 4.0 天就会被删除（期限 10 天）"
    assert reasons["c-over.jsonl"].startswith("已过 10 天的期限")
    assert "已压缩" in reasons["rollout-old.jsonl.zst"] and "已归档" in reasons["rollout-arch.jsonl"]
    titles = {Path(item.session.path).name: item.session.title for item in listing.sessions}
    assert titles["rollout-old.jsonl.zst"] == "压缩了的 Codex" and titles["c-soon.jsonl"] == "快到期的 Claude 会话"
    assert str(paths["pi-old"]) not in [item.session.path for item in listing.sessions]


@pytest.mark.parametrize("claude_settings, gemini_settings, claude_days, gemini_days, note", [
    (False, False, 30, 30, "默认 30 天"),
    ({"cleanupPeriodDays": "ten"}, {"general": {"sessionRetention": {"maxAge": "soon"}}}, 30, 30, "不是非负数"),
    ({"cleanupPeriodDays": 60}, {"general": {"sessionRetention": {"enabled": False, "maxAge": "1d"}}}, 60, None,
     "cleanupPeriodDays = 60"),
    ({}, {"sessionRetention": {"maxAge": "48h"}}, 30, 2, "没有 cleanupPeriodDays"),
], ids=["no-settings", "bad-values", "gemini-off", "hours"])
def test_the_deletion_age_comes_from_each_agents_settings_or_its_default(tmp_path, claude_settings, gemini_settings,
                                                                        claude_days, gemini_days, note):
    fake_home(tmp_path, claude_settings=claude_settings, gemini_settings=gemini_settings)
    found = {policy.format: policy for policy in rescue.policies(str(tmp_path), NO_OVERRIDES)}
    assert found[s11_import.CLAUDE].days == claude_days and note in found[s11_import.CLAUDE].where
    assert found[s11_import.GEMINI].days == (pytest.approx(gemini_days) if gemini_days else None)
    (tmp_path / ".claude" / "settings.json").write_text("{not json", encoding="utf-8")
    broken = {p.format: p for p in rescue.policies(str(tmp_path), NO_OVERRIDES)}[s11_import.CLAUDE]
    assert broken.days == 30 and "不是有效的 JSON" in broken.where and "用了默认值" in broken.where


def test_keep_imports_them_all_once_and_only_reads_the_agent_folders(tmp_path):
    fake_home(tmp_path / "home")
    before = snapshot(tmp_path / "home")
    store = SessionStore(tmp_path / "store")
    first = s11_import.keep(str(tmp_path / "home"), store, NO_OVERRIDES, NOW)
    assert (first.found, first.kept, first.nodes_written, first.failed) == (5, 5, 5, [])
    titles = sorted(row["title"] for row in store.list_sessions())
    assert titles == ["压缩了的 Codex", "归档的 Codex", "快到期的 Claude 会话", "快到期的 Gemini 会话", "过期的 Claude 会话"]
    again = s11_import.keep(str(tmp_path / "home"), store, NO_OVERRIDES, NOW)
    assert (again.kept, again.nodes_written, again.unchanged) == (5, 0, 5)
    assert again.line() == "保留了 5/5 个快要被删掉的会话：写入 0 个节点，5 个节点早已保留"
    assert snapshot(tmp_path / "home") == before


def test_one_broken_session_is_named_and_the_rest_are_kept(tmp_path):
    paths = fake_home(tmp_path / "home")
    paths["codex-zst"].write_bytes(b"\x28\xb5\x2f\xfd" + b"broken" * 30)
    aged(paths["codex-zst"], 9)
    summary = s11_import.keep(str(tmp_path / "home"), SessionStore(tmp_path / "store"), NO_OVERRIDES, NOW)
    assert (summary.found, summary.kept, len(summary.failed)) == (5, 4, 1)
    assert "不是有效的 zstd 压缩文件" in summary.failed[0][1] and "1 个没能导入" in summary.line()


@pytest.mark.slow
def test_cli_keep_prints_one_summary_line_and_a_second_run_writes_nothing(tmp_path):
    home = tmp_path / "home"
    fake_home(home, now=time.time())
    env = {"CLAUDE_CONFIG_DIR": "", "PI_CODING_AGENT_DIR": "", "CODEX_HOME": "", "GEMINI_CLI_HOME": ""}
    listed = run_cli("keep", "--home", home, "--list", env=env)
    assert listed.returncode == 0 and "共 5 个快要被删掉的会话" in listed.stdout
    first = run_cli("--dir", tmp_path / "store", "keep", "--home", home, env=env)
    assert first.returncode == 0 and first.stderr == ""
    assert first.stdout.splitlines() == ["保留了 5/5 个快要被删掉的会话：写入 5 个节点，0 个节点早已保留"]
    again = run_cli("--dir", tmp_path / "store", "keep", "--home", home, env=env)
    assert again.stdout.splitlines() == ["保留了 5/5 个快要被删掉的会话：写入 0 个节点，5 个节点早已保留"]
    assert len(SessionStore(tmp_path / "store").list_sessions()) == 5
