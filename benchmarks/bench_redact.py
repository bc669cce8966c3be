"""bench_redact.py — redaction (s11_redact.redact / redact_value) against json.loads, and how its cost grows.

    python benchmarks/bench_redact.py            # ~5 MB texts and the same at twice the size, 5 runs each
    python benchmarks/bench_redact.py --quick    # ~0.2 MB texts, 2 runs (a smoke test)

    realistic text ──> as ~400-character messages ──┬─> json.loads(json.dumps(messages))   the yardstick
                                                    └─> s11_redact.redact_value(messages)  what an export runs
    realistic / look-alikes / secret-dense text ──> s11_redact.redact(text) at size MB and at 2 × size MB

    realistic     this repository's own code, tests and docs (what an agent reads) interleaved with
                  log lines, JSON tool output and Chinese prose from tests/store/test_redact_corpus.py;
                  a planted secret about every 200 corpus lines
    look-alikes   the corpus test's own mix: 40 % digits (order numbers, snowflake ids, floats, timestamps)
    secret-dense  a secret on about every second line

Budgets (absolute, PASS / MISS at the end):
  - a redacted export costs ≤ 4× json.loads of the same bytes (issue 40), so its redaction alone must fit in that:
    redact_value of the realistic messages ≤ 4× json.loads of them;
  - redaction is linear in the size of the text, whatever the text: the time per MB at twice the size is at most
    1.5× the time per MB at the size (a quadratic pattern would show 2×).
Runs of the cases alternate, so a busy machine slows each alike; figures are medians. MB are megabytes of UTF-8.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

c.setup_paths()
sys.path.insert(0, str(c.TESTS_DIR / "store"))   # the corpus lives beside the redaction tests
from test_redact_corpus import build_corpus  # noqa: E402

import s11_redact  # noqa: E402

TARGET_RATIO = 4.0   # issue 40: a redacted export ≤ 4× json.loads of the same bytes
LINEAR_GROWTH = 1.5   # time per MB at twice the size / time per MB at the size; 1.0 is linear
REPO_TEXT_GLOBS = ("code/*.py", "tests/*.py", "benchmarks/*.py", "*.md", "examples/*")


def realistic_text(megabytes: float, seed: int = 1) -> str:
    """Chunks of the repository's files (70 %) interleaved with chunks of corpus lines (30 %)."""
    repo_lines: List[str] = []
    for pattern in REPO_TEXT_GLOBS:
        for path in sorted(c.REPO.glob(pattern)):
            if path.is_file():
                repo_lines += path.read_text(encoding="utf-8", errors="replace").split("\n")
    corpus_lines = build_corpus(seed=seed, target_chars=int(megabytes * 400_000), secret_every=200).text.split("\n")
    rng, lines, size, repo_at, corpus_at = random.Random(seed), [], 0, 0, 0
    while size < megabytes * 1e6:
        if rng.random() < 0.7:
            chunk, repo_at = [repo_lines[(repo_at + i) % len(repo_lines)] for i in range(40)], repo_at + 40
        else:
            chunk, corpus_at = [corpus_lines[(corpus_at + i) % len(corpus_lines)] for i in range(15)], corpus_at + 15
        lines += chunk
        size += sum(len(line.encode("utf-8")) + 1 for line in chunk)
    return "\n".join(lines)


def as_messages(text: str, size: int = 400) -> List[dict]:
    lines, messages, current = text.split("\n"), [], []
    for line in lines:
        current.append(line)
        if sum(len(part) for part in current) >= size:
            messages.append({"role": "user" if len(messages) % 2 else "assistant", "content": "\n".join(current)})
            current = []
    if current:
        messages.append({"role": "user", "content": "\n".join(current)})
    return messages


def alternate(first: Callable[[], object], second: Callable[[], object], runs: int) -> tuple:
    """Median seconds of each, measured in turns (first, second, first, …) after one warm-up of each."""
    first(), second()
    times: tuple = ([], [])
    for _ in range(runs):
        for samples, function in zip(times, (first, second)):
            started = time.perf_counter()
            function()
            samples.append(time.perf_counter() - started)
    return statistics.median(times[0]), statistics.median(times[1])


def messages_against_json(messages: List[dict], runs: int) -> tuple[list, c.Budget]:
    data = json.dumps(messages, ensure_ascii=False)
    parse, ours = alternate(lambda: json.loads(data), lambda: s11_redact.redact_value(messages), runs)
    megabytes = len(data.encode("utf-8")) / 1e6
    masks = sum(s11_redact.redact_value(messages)[1].values())
    row = [f"realistic, {len(messages):,} messages", f"{megabytes:.1f}", f"{masks:,}", c.ms(parse, 1), c.ms(ours, 1),
           c.ratio(ours, parse)]
    return row, c.Budget(f"redact_value of {megabytes:.1f} MB of messages (a redacted export's redaction), × json.loads",
                         ours / parse, TARGET_RATIO,
                         "x")


def growth(name: str, make_text: Callable[[float], str], megabytes: float, runs: int) -> tuple[list, c.Budget]:
    small, big = make_text(megabytes), make_text(2 * megabytes)
    small_s, big_s = alternate(lambda: s11_redact.redact(small), lambda: s11_redact.redact(big), runs)
    small_mb, big_mb = len(small.encode("utf-8")) / 1e6, len(big.encode("utf-8")) / 1e6
    per_mb = (big_s / big_mb) / (small_s / small_mb)
    row = [name, f"{small_mb:.1f} / {big_mb:.1f}", c.ms(small_s, 1), c.ms(big_s, 1), f"{small_mb / small_s:.1f}",
           f"{big_mb / big_s:.1f}", f"{per_mb:.2f}x"]
    return row, c.Budget(f"redact() linear in size, {name}: time per MB at {2 * megabytes:g} / at {megabytes:g} MB",
                         per_mb, LINEAR_GROWTH, "x")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="~0.2 MB texts, 2 runs")
    parser.add_argument("--runs", type=int, help="runs per case (default 5, --quick 2)")
    parser.add_argument("--megabytes", type=float, help="size of each text (default 5, --quick 0.2)")
    args = parser.parse_args(argv)
    runs = args.runs or (2 if args.quick else 5)
    megabytes = args.megabytes or (0.2 if args.quick else 5.0)

    c.print_header("redaction vs json.loads, and its growth", {"rules": f"{len(s11_redact.RULES)} rows in s11_redact.RULES"})
    row, budget = messages_against_json(as_messages(realistic_text(megabytes)), runs)
    budgets = [budget]
    c.print_table("redact_value of messages vs json.loads of the same messages (medians of alternating runs)",
                  ["text", "MB", "masks", "json.loads ms", "redact_value ms", "× json.loads"], [row],
                  note="masks = secrets masked (the realistic text also holds the test files' fake secrets).")
    texts = {"realistic": realistic_text,
             "look-alikes": lambda mb: build_corpus(seed=2, target_chars=int(mb * 600_000), secret_every=200).text,
             "secret-dense": lambda mb: build_corpus(seed=3, target_chars=int(mb * 250_000), secret_every=2).text}
    rows = []
    for name, make_text in texts.items():
        row, budget = growth(name, make_text, megabytes, runs)
        rows.append(row)
        budgets.append(budget)
    c.print_table("redact(text) at the size and at twice the size (medians of alternating runs)",
                  ["text", "MB", "ms", "ms (2×)", "MB/s", "MB/s (2×)", "per-MB growth"], rows)
    c.report(budgets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
