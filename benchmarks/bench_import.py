"""bench_import.py — importing a 20 MB Claude Code transcript and a 20 MB Pi one, against json.loads of its lines.

    python benchmarks/bench_import.py            # four 20 MB transcripts, median of 3 runs (~3 min on 2 cores)
    python benchmarks/bench_import.py --quick    # four 2 MB transcripts, one run each (a smoke test)

    generated transcript ──> json.loads of every line          (the floor: any importer must parse the lines)
                         ├─> import_file(dry_run=True)          read + repair + relink + merge + plan, no writes
                         ├─> import_file(store)                 the same + every node saved (fsync on)
                         └─> import_file(store) again           re-import: load + compare, nothing written

Key insight: parsing the lines is the unavoidable cost, so the importer is judged as a multiple of it
(the issue's target: "a few times"); what it writes is judged per byte read, because every branch
node copies its prefix (the chapter's design) and that copy is the price of self-contained nodes.

The transcripts imitate real ones: streamed assistant messages over several lines sharing message.id,
hook progress lines beside tool results, stop-hook summaries, file-history snapshots, toolUseResult copies
of tool output, a compaction, model changes (Pi); each format once linear and once with a rewind (Claude) /
a /tree jump with a label (Pi) every 150 turns, so the cost of fork copies shows separately.
Folders live under benchmarks/ (the repository's filesystem) and are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

c.setup_paths()
import s11_import  # noqa: E402
from s11_session import SessionStore  # noqa: E402

WORDS = ("缓存 内存 连接池 回调 注册表 超时 重试 日志 配置 测试 接口 限流 索引 事务 锁 队列 "
         "cache_store event_listener ws_pool pytest refactor handler session config").split()


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def tool_output(rng: random.Random) -> str:
    """Mostly a few KB, sometimes a whole file (40 KB): real tool output is heavy-tailed."""
    size = 40_000 if rng.random() < 0.05 else int(rng.lognormvariate(7.3, 0.9))
    line = f"{rng.randrange(1000):>6}→    result = handler(request, timeout={rng.randrange(30)})  # {sentence(rng, 4)}\n"
    return (line * (size // len(line) + 1))[:size]


class ClaudeWriter:
    def __init__(self, rng: random.Random, branch_every: int = 150):
        self.rng, self.lines, self.count, self.branch_every = rng, [], 0, branch_every
        self.assistants: List[str] = []

    def uid(self) -> str:
        self.count += 1
        return f"{self.count:08x}-4b1c-4d2e-8f3a-{self.rng.getrandbits(48):012x}"

    def put(self, kind: str, parent, **fields) -> str:
        uid = self.uid()
        self.lines.append(json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external",
                                      "cwd": "/home/dev/shop-api", "sessionId": "bench-session", "version": "2.1.42",
                                      "gitBranch": "main", "type": kind, "uuid": uid,
                                      "timestamp": f"2026-03-12T10:{self.count // 600 % 60:02d}:{self.count % 60:02d}.000Z",
                                      **fields}, ensure_ascii=False))
        return uid

    def turn(self, parent) -> str:
        rng = self.rng
        prompt = self.put("user", parent, message={"role": "user", "content": sentence(rng, 30)})
        mid = f"msg_{self.count:020x}"
        body = {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5"}
        think = self.put("assistant", prompt, message={**body, "content": [{"type": "thinking", "thinking": sentence(
            rng, 60), "signature": "Eq" + "x" * 300}]})
        tool_id = f"toolu_{self.count:020x}"
        call = self.put("assistant", think, message={**body, "content": [{"type": "tool_use", "id": tool_id,
                                                                          "name": "Bash", "input": {"command": "pytest -q"}}]})
        self.put("progress", call, data={"type": "hook_progress", "hookEvent": "PreToolUse"}, toolUseID=tool_id)
        output = tool_output(rng)
        result = self.put("user", call, message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_id, "content": output}]},
            toolUseResult={"stdout": output, "stderr": "", "interrupted": False})
        reply = self.put("assistant", result, message={**body, "id": mid + "r", "content": [
            {"type": "text", "text": sentence(rng, 80)}]})
        self.assistants.append(reply)
        stop = self.put("system", reply, subtype="stop_hook_summary", hookCount=1, hookInfos=[], level="suggestion")
        self.lines.append(json.dumps({"type": "file-history-snapshot", "messageId": prompt, "snapshot": {
            "messageId": prompt, "trackedFileBackups": {}}, "isSnapshotUpdate": False}))
        return stop

    def build(self, target_bytes: int) -> str:
        size, parent, turns = 0, None, 0
        while size < target_bytes:
            if self.branch_every and turns and turns % self.branch_every == 0:   # a /rewind to an earlier answer
                self.turn(self.rng.choice(self.assistants[-40:]))
            if turns == 300:                 # a /compact
                parent = self.put("system", None, subtype="compact_boundary", logicalParentUuid=parent,
                                  compactMetadata={"trigger": "auto", "preTokens": 155000})
                parent = self.put("user", parent, isCompactSummary=True, message={
                    "role": "user", "content": "This session is being continued… " + sentence(self.rng, 300)})
            start = len(self.lines)
            parent = self.turn(parent)
            size += sum(len(line) + 1 for line in self.lines[start:])
            turns += 1
        return "\n".join(self.lines) + "\n"


class PiWriter:
    def __init__(self, rng: random.Random, branch_every: int = 150):
        self.rng, self.lines, self.count, self.branch_every = rng, [], 0, branch_every
        self.lines.append(json.dumps({"type": "session", "version": 3, "id": "bench-pi",
                                      "timestamp": "2026-03-14T14:00:00.000Z", "cwd": "/home/dev/report-service"}))
        self.assistants: List[str] = []

    def put(self, kind: str, parent, **fields) -> str:
        self.count += 1
        eid = f"{self.count:08x}"
        self.lines.append(json.dumps({"type": kind, "id": eid, "parentId": parent,
                                      "timestamp": f"2026-03-14T14:{self.count // 600 % 60:02d}:{self.count % 60:02d}.000Z",
                                      **fields}, ensure_ascii=False))
        return eid

    def turn(self, parent) -> str:
        rng = self.rng
        prompt = self.put("message", parent, message={"role": "user", "content": sentence(rng, 30)})
        call_id = f"toolu_{self.count:020x}"
        call = self.put("message", prompt, message={"role": "assistant", "model": "claude-sonnet-4-5", "content": [
            {"type": "thinking", "thinking": sentence(rng, 60), "thinkingSignature": "Er" + "y" * 300},
            {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": "pytest -q"}}],
            "usage": {"input": 1000, "output": 200}, "stopReason": "toolUse"})
        result = self.put("message", call, message={"role": "toolResult", "toolCallId": call_id, "toolName": "bash",
                                                    "content": [{"type": "text", "text": tool_output(rng)}],
                                                    "isError": False})
        reply = self.put("message", result, message={"role": "assistant", "model": "claude-sonnet-4-5", "content": [
            {"type": "text", "text": sentence(rng, 80)}], "stopReason": "stop"})
        self.assistants.append(reply)
        return reply

    def build(self, target_bytes: int) -> str:
        size, parent, turns = 0, None, 0
        while size < target_bytes:
            start = len(self.lines)
            if self.branch_every and turns and turns % self.branch_every == 0:   # /tree back, with a branch summary
                target = self.rng.choice(self.assistants[-40:])
                parent = self.put("branch_summary", target, fromId=parent, summary=sentence(self.rng, 100))
                self.put("label", parent, targetId=target, label=f"检查点 {turns}")
            if turns % 97 == 0:
                parent = self.put("model_change", parent, provider="anthropic", modelId="claude-sonnet-4-5")
            if turns == 300:
                parent = self.put("compaction", parent, summary=sentence(self.rng, 300), firstKeptEntryId=parent,
                                  tokensBefore=150000)
            parent = self.turn(parent)
            size += sum(len(line) + 1 for line in self.lines[start:])
            turns += 1
        return "\n".join(self.lines) + "\n"


def json_floor(path: Path) -> None:
    with open(path, "rb") as handle:
        for line in handle:
            json.loads(line)


def best_of(fn: Callable[[], object], runs: int, setup: Callable[[], object] | None = None) -> float:
    return c.median(c.time_runs(fn, runs, setup=setup))


def measure(name: str, path: Path, work: Path, runs: int) -> list:
    size = path.stat().st_size
    floor = best_of(lambda: json_floor(path), runs)
    plan = best_of(lambda: s11_import.import_file(path, SessionStore(work / "dry"), dry_run=True), runs)
    folders = iter(range(10 ** 6))
    reports: list = []
    state: dict = {}

    def fresh_store() -> None:
        state["store"] = SessionStore(work / f"store-{next(folders)}")

    full = best_of(lambda: reports.append(s11_import.import_file(path, state["store"])), runs, setup=fresh_store)
    again = best_of(lambda: s11_import.import_file(path, state["store"]), runs)
    report = reports[-1]
    megabytes = size / 1024 / 1024
    return [name, f"{megabytes:.1f}", c.ms(floor, 0), f"{c.ms(plan, 0)} ({plan / floor:.1f}×)",
            f"{c.ms(full, 0)} ({full / floor:.1f}×)", f"{megabytes / full:.1f}", f"{c.ms(again, 0)}",
            f"{report.bytes_written / size:.2f}", c.human_bytes(report.copy_bytes), str(len(report.node_ids)),
            str(report.messages)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 MB transcripts, one run each")
    args = parser.parse_args()
    target = (2 if args.quick else 20) * 1024 * 1024
    runs = 1 if args.quick else 3
    c.print_header("bench_import — Claude Code / Pi transcripts → session tree",
                   {"sizes": f"{target // 1024 // 1024} MB each, median of {runs} run(s), fsync on"})
    work = Path(tempfile.mkdtemp(prefix="bench-import-", dir=Path(__file__).resolve().parent))
    try:
        rows = []
        for name, writer, branch_every in (("Claude Code, linear", ClaudeWriter, 0),
                                           ("Claude Code, rewinds", ClaudeWriter, 150),
                                           ("Pi v3, linear", PiWriter, 0), ("Pi v3, /tree jumps", PiWriter, 150)):
            path = work / f"{len(rows)}.jsonl"
            started = time.perf_counter()
            path.write_text(writer(random.Random(11), branch_every).build(target), encoding="utf-8")
            print(f"generated {name}: {c.human_bytes(path.stat().st_size)} in {time.perf_counter() - started:.1f} s",
                  flush=True)
            rows.append(measure(name, path, work, runs))
        c.print_table("import vs json.loads of the same lines", [
            "transcript", "MB", "json.loads ms", "plan ms (×)", "import ms (×)", "import MB/s", "re-import ms",
            "written/read", "fork copies", "nodes", "messages"], rows,
            note="plan = import_file(dry_run=True): read, repair, relink, merge, linearise, plan; no writes.\n"
                 "import = plan + saving every node (atomic write + fsync). × = multiple of json.loads.\n"
                 "written/read < 1 when there are no branches: thinking signatures, toolUseResult copies and hook\n"
                 "lines are not kept; fork copies = the prefixes branch nodes repeat from their parent (compact JSON),\n"
                 "the price of the chapter's self-contained nodes: a rewind near the end of a 20 MB session copies ~20 MB.")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
