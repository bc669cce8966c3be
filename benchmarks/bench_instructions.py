"""bench_instructions.py — the store workloads of bench_store.py counted, not timed: CPU instructions (valgrind)
and system calls (strace) per operation, ours (durable=False) against the chapter's printed store.

    python benchmarks/bench_instructions.py                 # every workload (about a minute)
    python benchmarks/bench_instructions.py --only demo,list
    python benchmarks/bench_instructions.py --quick         # tiny sizes (a smoke test)
    workloads: demo, list, export_deep, export_5000, load_10k

    for each workload × store:  python bench_instructions.py --worker <workload> <store> <folder> <n>
                                 └─ builds nothing, imports the store, does the warm-up, then the operation n times
    instructions per operation = (Ir with n = N) − (Ir with n = 0), divided by N — so the interpreter's start,
    the imports and the warm-up cancel out; the same for each system call's count.

Key insight: on a shared 2-core VM the wall-clock ratios of bench_store.py move by ±10–20 % from one run to the
next (the same code measured twice differs as much as ours and the book's). Instruction and syscall counts do
not move. They are not time — a syscall that creates a file costs far more than one that reads a cached one,
and instructions vary in cost — so they complement the wall-clock figures, they do not replace them.
Needs valgrind (cachegrind) and, for the syscall column, strace; without them it says so and exits 0.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

c.setup_paths()

WORKLOADS = {   # name → (what one operation is, N)
    "demo": ("demo_tree_branching in a fresh folder (create, save, 2 forks, resume, redacted export)", 20),
    "list": ("cold list_sessions() of 2,000 sessions of 10 messages (new store, first call)", 1),
    "export_deep": ("export_markdown of a node 10 forks deep (4 messages), warm; ours redact=False", 50),
    "export_5000": ("export_markdown of a 5,000-message session, warm; ours redact=False", 3),
    "load_10k": ("load() of a 10,000-message session (2 MiB), warm", 3),
}
STORE_NAMES = ("chapter", "ours")
SIZES = {"list": 2000, "deep": 10, "big5k": 5000, "big10k": 10000}   # --quick shrinks them (QUICK_SIZES)
QUICK_SIZES = {"list": 20, "deep": 3, "big5k": 50, "big10k": 100}


def make_store(name: str, folder: str):
    if name == "chapter":
        import s11_book
        return s11_book.SessionStore(folder)
    import s11_session
    return s11_session.SessionStore(folder, durable=False)


def demo_module(name: str):
    if name == "chapter":
        import s11_book
        return s11_book
    import s11_session
    return s11_session


def build(root: Path, store: str, sizes: dict = SIZES) -> dict:
    """The fixtures, written by the store under test: {workload: folder} plus the ids the workers need."""
    import bench_store as b
    made = {"list": str(root / f"list-{store}"), "deep": str(root / f"deep-{store}"),
            "big5k": str(root / f"5k-{store}"), "big10k": str(root / f"10k-{store}")}
    lister = make_store(store, made["list"])
    for i in range(sizes["list"]):
        lister.create_session(f"会话 {i}", b.messages(10))
    folder, made["deep_id"] = b.deep_fixture(_Root(root), b.CHAPTER if store == "chapter" else b.OURS_FAST,
                                             sizes["deep"])
    shutil.move(folder, made["deep"])
    make_store(store, made["big5k"]).save(_node(store, "big5k", b.messages(sizes["big5k"])))
    make_store(store, made["big10k"]).save(_node(store, "big10k", b.messages(sizes["big10k"])))
    return made


class _Root:   # what bench_store.deep_fixture needs of its Bench: a folder() under the scratch root
    def __init__(self, root: Path):
        self.root = root

    def folder(self, prefix: str = "case-") -> str:
        return tempfile.mkdtemp(prefix=prefix, dir=self.root)


def _node(store: str, session_id: str, messages: list):
    return demo_module(store).SessionNode(session_id, "读档", messages=messages)


def worker(workload: str, store: str, fixtures: dict, n: int, scratch: str) -> None:
    """One measured process: warm-up, then the operation n times (n = 0 measures everything but the operation)."""
    if workload == "demo":
        module = demo_module(store)
        with contextlib.redirect_stdout(io.StringIO()):
            module.demo_tree_branching(make_store(store, os.path.join(scratch, "warm")))
            for i in range(n):
                module.demo_tree_branching(make_store(store, os.path.join(scratch, f"demo-{i}")))
    elif workload == "list":
        s = make_store(store, fixtures["list"])   # both counts build the store: only the first call differs
        for _ in range(n):
            s.list_sessions()
    elif workload in ("export_deep", "export_5000"):
        folder, sid = (fixtures["deep"], fixtures["deep_id"]) if workload == "export_deep" else (fixtures["big5k"], "big5k")
        s = make_store(store, folder)
        export = s.export_markdown if store == "chapter" else (lambda i: s.export_markdown(i, redact=False))
        export(sid)
        for _ in range(n):
            export(sid)
    elif workload == "load_10k":
        s = make_store(store, fixtures["big10k"])
        s.load("big10k")
        for _ in range(n):
            s.load("big10k")


def count(tool: list, workload: str, store: str, fixtures: dict, n: int, scratch: Path) -> str:
    folder = tempfile.mkdtemp(dir=scratch)
    try:
        done = subprocess.run([*tool, sys.executable, __file__, "--worker", workload, store, repr(fixtures), str(n),
                               folder], capture_output=True, text=True, timeout=900)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if done.returncode != 0:
        raise RuntimeError(f"{workload} {store} n={n} failed:\n{done.stderr[-2000:]}")
    return done.stderr


def instructions(workload: str, store: str, fixtures: dict, n: int, scratch: Path) -> float:
    tool = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    totals = []
    for runs in (0, n):
        found = re.search(r"I\s+refs:\s+([\d,]+)", count(tool, workload, store, fixtures, runs, scratch))
        totals.append(int(found.group(1).replace(",", "")))
    return (totals[1] - totals[0]) / n


def syscalls(workload: str, store: str, fixtures: dict, n: int, scratch: Path) -> dict:
    """{syscall: count per operation}, only those the operation makes."""
    tables = []
    for runs in (0, n):
        report = count(["strace", "-f", "-c", "-o", "/dev/stderr"], workload, store, fixtures, runs, scratch)
        table = {}
        for line in report.splitlines():
            cells = line.split()
            if len(cells) >= 5 and cells[3].isdigit() and cells[-1] != "total":
                table[cells[-1]] = int(cells[3])
        tables.append(table)
    return {name: (tables[1].get(name, 0) - tables[0].get(name, 0)) / n
            for name in tables[1] if tables[1].get(name, 0) != tables[0].get(name, 0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated subset of " + ",".join(WORKLOADS))
    parser.add_argument("--scratch", default=str(Path(__file__).resolve().parent),
                        help="folder to create the scratch folder in (default: benchmarks/)")
    parser.add_argument("--quick", action="store_true", help="tiny fixtures (the workload names stay the same)")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        import ast
        workload, store, fixtures, n, folder = args.worker
        worker(workload, store, ast.literal_eval(fixtures), int(n), folder)
        return
    if shutil.which("valgrind") is None:
        print("bench_instructions: valgrind is not installed (apt-get install valgrind); nothing measured")
        return
    with_strace = shutil.which("strace") is not None
    only = [name for name in args.only.split(",") if name]
    unknown = set(only) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads: {', '.join(sorted(unknown))}")
    c.print_header("bench_instructions: instructions (valgrind) and system calls (strace) per operation, "
                   "ours (durable=False) vs the chapter's")
    scratch = Path(tempfile.mkdtemp(prefix=".bench-instructions-", dir=args.scratch))
    try:
        sizes = QUICK_SIZES if args.quick else SIZES
        fixtures = {store: build(scratch, store, sizes) for store in STORE_NAMES}
        rows, calls = [], []
        for workload in only:
            what, n = WORKLOADS[workload]
            counted = {store: instructions(workload, store, fixtures[store], n, scratch) for store in STORE_NAMES}
            row = [workload, f"{counted['chapter'] / 1e6:.2f}", f"{counted['ours'] / 1e6:.2f}",
                   c.ratio(counted["ours"], counted["chapter"])]
            if with_strace:
                found = {store: syscalls(workload, store, fixtures[store], n, scratch) for store in STORE_NAMES}
                totals = {store: sum(found[store].values()) for store in STORE_NAMES}
                row += [f"{totals['chapter']:.0f}", f"{totals['ours']:.0f}"]
                calls.append([workload] + [", ".join(f"{name} {value:g}" for name, value in
                                                     sorted(found[store].items(), key=lambda kv: -kv[1]) if value >= 0.5)
                                           for store in STORE_NAMES])
            rows.append(row + [what])
        headers = ["workload", "chapter M instr", "ours M instr", "ratio"]
        headers += ["chapter syscalls", "ours syscalls"] if with_strace else []
        c.print_table("instructions per operation (millions) and system calls per operation", headers + ["one operation"],
                      rows, note="instructions: valgrind cachegrind's Ir, user space only; each figure is the "
                                 "difference of two fresh processes (n and 0 operations)")
        if calls:
            c.print_table("system calls per operation, by name", ["workload", "chapter", "ours"], calls)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
