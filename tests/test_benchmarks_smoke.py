"""The benchmark scripts still run: tiny sizes, exit status and output checked, no timing asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCHMARKS = REPO / "benchmarks"


def run_script(name: str, *args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(BENCHMARKS / name), *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def test_bench_store_quick_prints_its_tables():
    done = run_script("bench_store.py", "--quick", timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "## 1. save after every message" in done.stdout
    assert re.search(r"^20 msgs\s+\d", done.stdout, re.MULTILINE)   # a table row with numbers
    assert "ours nofsync" in done.stdout and "chapter" in done.stdout


def test_bench_store_leaves_no_scratch_folder_behind():
    before = set(BENCHMARKS.glob(".bench-store-*"))
    run_script("bench_store.py", "--quick", "--only", "load", timeout=60)
    assert set(BENCHMARKS.glob(".bench-store-*")) == before


@pytest.mark.slow
def test_ten_simultaneous_clicks_write_thirty_intact_files():
    done = run_script("load_classroom.py", "--clicks", "10", "--deadline", "90", timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = re.search(r"^RESULT .*$", done.stdout, re.MULTILINE)
    assert result, done.stdout[-3000:]
    assert " errors=0 " in result.group(0) and " damaged=0 " in result.group(0)
    assert " files=30 " in result.group(0)
