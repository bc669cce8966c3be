"""The benchmark scripts still run: tiny sizes, exit status and output checked, no timing asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"
CHROMIUM = "/usr/bin/chromium"


def run_script(name: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / name), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def test_bench_store_quick_prints_its_tables_from_fresh_processes():
    done = run_script("bench_store.py", "--quick", timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "## 1. save after every message" in done.stdout
    assert re.search(r"^20 msgs\s+\d", done.stdout, re.MULTILINE)   # a table row with numbers
    assert re.search(r"^50 sessions\s+\d", done.stdout, re.MULTILINE)   # list_sessions, cold and warm
    assert "ours nofsync" in done.stdout and "chapter" in done.stdout
    assert re.search(r"^file-system floor\s+\d", done.stdout, re.MULTILINE)   # the demo's calls alone
    workers = re.search(r"^(\d+) worker processes", done.stdout, re.MULTILINE)
    assert workers and int(workers.group(1)) >= 19   # one interpreter per store, size and workload


def test_bench_handler_quick_runs_the_demo_without_gradio():
    done = run_script("bench_handler.py", "--quick", timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^whole click \(run_demo \+ files_markdown\)\s+\d", done.stdout, re.MULTILINE)


def test_bench_store_leaves_no_scratch_folder_behind():
    before = set(BENCHMARKS.glob(".bench-store-*"))
    run_script("bench_store.py", "--quick", "--only", "load", timeout=60)
    assert set(BENCHMARKS.glob(".bench-store-*")) == before


@pytest.mark.slow
def test_a_small_class_works_in_private_spaces_without_errors_or_damage():
    """3 students: enter_space, demo, list, row click, fork, 2 resumes, export + downloads, import an example —
    all at once, then a few seconds at a steady pace; plus one chromium page clicking the demo when available."""
    pages = ["--browser-pages", "1"] if Path(CHROMIUM).exists() else []
    done = run_script("load_classroom.py", "--students", "3", "--minutes", "0.25", "--think", "1", *pages,
                      timeout=240)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    result = re.search(r"^RESULT .*$", done.stdout, re.MULTILINE)
    assert result, done.stdout[-3000:]
    figures = dict(item.split("=", 1) for item in result.group(0).split()[1:])
    assert figures["errors"] == "0" and figures["damaged"] == "0" and figures["breaches"] == "0"
    assert int(figures["spaces"]) == 3 + (1 if pages else 0)   # one space per student (and the page)
    assert int(figures["cycles"]) >= 3 and int(figures["sessions"]) >= 3 * 6   # demo 3 + fork + example 2
    if pages:
        assert "page_p95_ms=" in result.group(0)


def test_the_in_process_memory_trace_names_the_lines_that_keep_memory():
    done = run_script("load_classroom.py", "--in-process", "--students", "3", "--rounds", "3", "--trace-memory",
                      timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    header = re.search(r"^## kept by our code after round 1: ([+-][\d.]+) MiB for ([\d,]+) sessions created",
                       done.stdout, re.MULTILINE)
    assert header, done.stdout[-3000:]
    assert int(header.group(2).replace(",", "")) >= 3 * 2 * 6   # two more rounds of ~10 sessions per student
    assert re.search(r"^code/s11_\w+(/\w+)?\.py:\d+\s+[+-][\d,.]+\s+[+-][\d,]+$", done.stdout, re.MULTILINE)
    assert not list(BENCHMARKS.glob(".load-classroom-*"))


def test_bench_tree_export_quick_prints_its_table_and_cleans_up():
    done = run_script("bench_tree_export.py", "--quick", timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"imported 6 nodes \(5 branches\)", done.stdout)      # the branch count asked for
    assert re.search(r"^whole HTML export .*\s\d+$", done.stdout, re.MULTILINE)
    assert re.search(r"tracemalloc peak of one whole HTML export: [\d.]+ \w+", done.stdout)
    assert not list(BENCHMARKS.glob(".bench-tree-export-*"))


def test_bench_instructions_workers_do_each_operation_against_both_stores(tmp_path):
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_instructions as b
    finally:
        sys.path.remove(str(BENCHMARKS))
    for store in b.STORE_NAMES:
        fixtures = b.build(tmp_path, store, b.QUICK_SIZES)
        for workload in b.WORKLOADS:
            scratch = tmp_path / f"{store}-{workload}"
            scratch.mkdir()
            b.worker(workload, store, fixtures, 2, str(scratch))
        made = sorted(p.name for p in (tmp_path / f"{store}-demo").iterdir())
        assert made == ["demo-0", "demo-1", "warm"]   # the demo ran in a fresh folder each time
        assert len(b.make_store(store, fixtures["list"]).list_sessions()) == b.QUICK_SIZES["list"]


@pytest.mark.skipif(not Path("/usr/bin/valgrind").exists(), reason="needs valgrind")
def test_bench_instructions_quick_prints_counts_for_both_stores():
    done = run_script("bench_instructions.py", "--quick", "--only", "demo", timeout=300)   # each row: 4 valgrind runs
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^demo\s+\d+\.\d+\s+\d+\.\d+\s+\d+\.\d+x", done.stdout, re.MULTILINE), done.stdout
    assert not list(BENCHMARKS.glob(".bench-instructions-*"))


def test_the_demo_floor_replays_leave_what_each_store_leaves_after_the_demo(tmp_path):
    # The floor replays each store's file calls without its code: the folder must end as the real demo leaves it
    # (the chapter: three session files; ours: three session files and the lock, no temp file).
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import bench_store
    finally:
        sys.path.remove(str(BENCHMARKS))
    import s11_book
    import s11_session
    for name, store, replay in [("chapter", s11_book.SessionStore, bench_store._chapter_calls),
                                ("ours", lambda folder: s11_session.SessionStore(folder, durable=False),
                                 bench_store._our_calls)]:
        real, replayed = tmp_path / f"{name}-real", tmp_path / f"{name}-replayed"
        (s11_book if name == "chapter" else s11_session).demo_tree_branching(store(str(real)))
        replayed.mkdir()
        replay(str(replayed))
        assert shape(replayed) == shape(real), name


def shape(folder: Path) -> list[str]:
    return sorted("<session>" if path.suffix == ".json" else path.name for path in folder.iterdir())
