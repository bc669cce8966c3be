"""The benchmark scripts still run at tiny sizes and end with their budgets: one PASS or MISS line each.

No timing is asserted (a tiny run on a busy machine may well print MISS); what is checked is that every script
runs to the end, prints a budgets block whose lines name an absolute budget, and removes its scratch folders.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
BUDGET_LINE = re.compile(r"^(PASS|MISS|SKIP)  (.+): (.+) \(budget ≤ (.+)\)$", re.MULTILINE)

# script, tiny arguments, a word every one of its budget lines must contain (which budget it is)
TINY_RUNS = [
    ("bench_handler.py", ["--quick", "--clicks", "3"], "8.11 click handler median"),
    ("bench_explorer.py", ["--quick", "--sessions", "30", "--runs", "1"], "explorer handler median"),
    ("bench_export.py", ["--messages", "40", "--memory-mb", "0.3"], "× json.loads"),
    ("bench_import.py", ["--only", "formats", "--formats", "claude", "--megabytes", "0.2"], "× json.loads"),
    ("bench_redact.py", ["--quick", "--runs", "1"], "redacted export"),
    ("bench_store.py", ["--messages", "50,400"], "bytes written per operation"),
    ("bench_tree_export.py", ["--quick", "--nodes", "10", "--megabytes", "0.3", "--branches", "2"],
     "whole-tree share"),
    ("bench_curves.py", ["--quick"], " vs "),
]


def run_script(name: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / name), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


@functools.cache
def tiny_run(script: str) -> tuple[subprocess.CompletedProcess, bool]:
    """Each tiny run once per test run (two tests read bench_tree_export's output); also whether the script left
    the benchmarks folder's scratch folders as it found them."""
    args = next(args for name, args, _ in TINY_RUNS if name == script)
    before = scratch_folders()
    done = run_script(script, *args, timeout=120)
    return done, scratch_folders() == before


def scratch_folders() -> set[Path]:
    return {path for path in BENCHMARKS.iterdir() if path.is_dir() and path.name.startswith((".", "bench-"))
            and path.name not in ("__pycache__",)}


@pytest.mark.parametrize("script, args, word", TINY_RUNS, ids=[run[0] for run in TINY_RUNS])
def test_each_script_ends_with_one_pass_or_miss_line_per_budget(script, args, word):
    done, tidy = tiny_run(script)
    assert done.returncode == 0, done.stderr[-3000:]
    block = done.stdout[done.stdout.index("## budgets (absolute; PASS / MISS)"):]
    lines = BUDGET_LINE.findall(block)
    assert lines, block[-2000:]
    assert all(word in name for _, name, _, _ in lines), lines
    assert all(verdict in ("PASS", "MISS") for verdict, *_ in lines), lines   # every budget measured
    assert tidy, "the script left scratch folders in benchmarks/"


def test_bench_tree_export_counts_the_branches_it_asked_for():
    done, _ = tiny_run("bench_tree_export.py")   # the same tiny run as above: 10 nodes, 2 branches
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"imported 3 nodes \(2 branches\)", done.stdout), done.stdout[-2000:]
    assert re.search(r"^10-node fork chain\s+download\s+\d+", done.stdout, re.MULTILINE)
    assert re.search(r"^10-node bushy tree\s+review\s+\d+", done.stdout, re.MULTILINE)


@pytest.mark.slow
def test_a_small_class_works_in_private_spaces_and_prints_the_class_budgets():
    """2 students: enter_space, demo, list, row click, fork, 2 resumes, export + downloads, import an example,
    the lesson's three steps — all at once, no steady phase (the 30-minute budgets need the real run)."""
    done = run_script("load_classroom.py", "--students", "2", "--minutes", "0", timeout=240)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    result = re.search(r"^RESULT .*$", done.stdout, re.MULTILINE)
    assert result, done.stdout[-3000:]
    figures = dict(item.split("=", 1) for item in result.group(0).split()[1:])
    assert figures["errors"] == "0" and figures["damaged"] == "0" and figures["breaches"] == "0"
    assert int(figures["spaces"]) == 2
    names = [name for _, name, _, _ in BUDGET_LINE.findall(done.stdout)]
    for budget in ("errors (2 students, 0 min)", "isolation breaches", "server-side p95, worst action (2 students",
                   "server RSS drift"):
        assert any(name.startswith(budget) for name in names), (budget, names)
    assert not list(BENCHMARKS.glob(".load-classroom-*"))
