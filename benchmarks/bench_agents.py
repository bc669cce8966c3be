"""bench_agents.py — issue 44: Codex .jsonl.zst against its plain copy, and listing / keeping what the agents will delete.

    python benchmarks/bench_agents.py            # a 20 MB Codex rollout; a home with 2,000 Claude Code sessions
    python benchmarks/bench_agents.py --quick    # 2 MB, 200 sessions, one run (a smoke test)

    rollout.jsonl / rollout.jsonl.zst ──> import_file(dry_run=True)    read + plan; the .zst is decompressed in
                                                                        512-byte steps into a temporary file first
    fake home (sessions of every age) ──> s11_import.at_risk()          stat every file, read the heads of the few at risk
                                      ──> s11_import.keep() twice       first run writes, the second writes nothing

Targets (absolute, this machine): the .zst import ≤ 1.5 × the plain import; at_risk over 2,000 sessions ≤ 1 s;
a second keep (nothing to write) ≤ 2 s. Prints PASS / MISS per target; timings are medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import _common
from _common import median, ms, print_header, print_table, setup_paths, time_runs

setup_paths()

import zstandard  # noqa: E402

import s11_import  # noqa: E402
from s11_import import compressed  # noqa: E402
from s11_session import SessionStore  # noqa: E402

DAY = 86400


def codex_rollout(path: Path, megabytes: float) -> Path:
    """A Codex rollout of about `megabytes`: prompts, reasoning, shell calls with outputs, replies, token counts."""
    lines = [{"timestamp": "2026-05-01T00:00:00Z", "type": "session_meta",
              "payload": {"id": "bench", "cwd": "/work", "cli_version": "0.140.0"}}]
    size, turn = 0, 0
    while size < megabytes * 1_000_000:
        turn += 1
        items = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"第 {turn} 个问题 " * 8}]},
                 {"type": "reasoning", "summary": [{"type": "summary_text", "text": "想一想 " * 40}]},
                 {"type": "function_call", "name": "shell", "call_id": f"c{turn}",
                  "arguments": json.dumps({"command": ["bash", "-lc", "rg todo"]})},
                 {"type": "function_call_output", "call_id": f"c{turn}", "output": "src/a.py:1: todo\n" * 60},
                 {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "改好了。" * 30}]}]
        for item in items:
            line = json.dumps({"timestamp": "2026-05-01T00:00:01Z", "type": "response_item", "payload": item},
                              ensure_ascii=False)
            lines.append(line)
            size += len(line.encode())
        usage = {"input_tokens": 1000 * turn, "cached_input_tokens": 500 * turn, "output_tokens": 80 * turn}
        lines.append(json.dumps({"timestamp": "2026-05-01T00:00:02Z", "type": "event_msg",
                                 "payload": {"type": "token_count", "info": {"total_token_usage": usage}}}))
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n",
                    encoding="utf-8")
    return path


def fake_home(home: Path, sessions: int, now: float) -> int:
    """`sessions` Claude Code sessions spread over 40 days (one in eight within the last 5 days before deletion)."""
    project = home / ".claude" / "projects" / "-work"
    project.mkdir(parents=True)
    at_risk = 0
    for number in range(sessions):
        age = 26 if number % 8 == 0 else number % 25   # 26 days: 4 left before the default 30
        at_risk += age >= 25
        lines = [{"type": "user", "uuid": f"u{number}", "parentUuid": None, "sessionId": f"s{number}",
                  "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": f"会话 {number}"}},
                 {"type": "assistant", "uuid": f"a{number}", "parentUuid": f"u{number}", "sessionId": f"s{number}",
                  "timestamp": "2026-01-01T00:00:01.000Z",
                  "message": {"id": f"m{number}", "role": "assistant", "content": [{"type": "text", "text": "好"}]}}]
        path = project / f"s{number}.jsonl"
        path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
        stamp = now - age * DAY
        os.utime(path, (stamp, stamp))
    return at_risk


def verdict(value: float, budget: float) -> str:
    return "PASS" if value <= budget else "MISS"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 MB, 200 sessions, one run")
    args = parser.parse_args()
    megabytes, sessions, runs = (2, 200, 1) if args.quick else (20, 2000, 3)
    print_header("bench_agents: Codex .jsonl.zst, sessions at risk, keep",
                 {"zstd": compressed.backend(), "rollout MB": megabytes, "sessions": sessions})
    scratch = Path(tempfile.mkdtemp(prefix="bench-agents-", dir=Path(__file__).resolve().parent))
    try:
        plain = codex_rollout(scratch / "rollout-bench.jsonl", megabytes)
        packed = scratch / "zst" / "rollout-bench.jsonl.zst"
        packed.parent.mkdir()
        packed.write_bytes(zstandard.ZstdCompressor(level=3).compress(plain.read_bytes()))
        store = SessionStore(scratch / "store")
        lines = plain.read_bytes().splitlines()
        floor = median(time_runs(lambda: [json.loads(line) for line in lines], runs))
        plain_runs, zst_runs = [], []
        for _ in range(runs + 2):   # interleaved: the load of a shared machine moves between runs
            plain_runs += time_runs(lambda: s11_import.import_file(plain, store, dry_run=True), 1)
            zst_runs += time_runs(lambda: s11_import.import_file(packed, store, dry_run=True), 1)
        plain_s, zst_s = median(plain_runs), median(zst_runs)
        def unpack():
            with compressed.unpacked(str(packed), 10**10):
                pass

        unpack_s = median(time_runs(unpack, runs))
        print_table(f"1. import plan of a {plain.stat().st_size / 1e6:.1f} MB Codex rollout "
                    f"({packed.stat().st_size / 1e6:.2f} MB compressed)", ["what", "ms", "× json.loads"],
                    [["json.loads of every line", ms(floor, 0), "1.00"],
                     ["import_file(plain, dry_run)", ms(plain_s, 0), f"{plain_s / floor:.2f}"],
                     ["import_file(.zst, dry_run)", ms(zst_s, 0), f"{zst_s / floor:.2f}"],
                     ["of which: decompress to a temp file", ms(unpack_s, 0), f"{unpack_s / floor:.2f}"]],
                    f"target .zst ≤ 1.5 × plain: {zst_s / plain_s:.2f} × → {verdict(zst_s / plain_s, 1.5)}")
        home, now = scratch / "home", time.time()
        expected = fake_home(home, sessions, now)
        env = {"CLAUDE_CONFIG_DIR": "", "PI_CODING_AGENT_DIR": "", "CODEX_HOME": "", "GEMINI_CLI_HOME": ""}
        found = s11_import.at_risk(str(home), env, now)
        list_s = median(time_runs(lambda: s11_import.at_risk(str(home), env, now), runs))
        kept_store = SessionStore(scratch / "kept")
        started = time.perf_counter()
        first = s11_import.keep(str(home), kept_store, env, now)
        first_s = time.perf_counter() - started
        again_s = median(time_runs(lambda: s11_import.keep(str(home), kept_store, env, now), runs))
        again = s11_import.keep(str(home), kept_store, env, now)
        print_table(f"2. {sessions} Claude Code sessions, {len(found.sessions)} at risk (expected {expected})",
                    ["what", "ms", "target", "verdict"],
                    [["at_risk()", ms(list_s, 0), "≤ 1000", verdict(list_s, 1.0)],
                     [f"keep() first run ({first.nodes_written} nodes written)", ms(first_s, 0), "—", "—"],
                     [f"keep() again ({again.nodes_written} written)", ms(again_s, 0), "≤ 2000",
                      verdict(again_s, 2.0)]])
        _common.report([_common.Budget(".jsonl.zst import plan, × the plain rollout's", zst_s / plain_s, 1.5, "x"),
                _common.Budget(f"at_risk() over {sessions:,} sessions", list_s, 1.0, "s"),
                _common.Budget("a second keep() (nothing to write)", again_s, 2.0, "s")])
        return 0 if len(found.sessions) == expected and again.nodes_written == 0 else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
