"""bench_startup.py — how long `python app.py` takes until the page answers, and whose time it is.

    python benchmarks/bench_startup.py            # 5 runs of each measurement
    python benchmarks/bench_startup.py --quick    # 1 run of each

    A. python -c pass                      interpreter start
    B. python -c "import gradio"           interpreter + the gradio import (until it returns, not until exit:
                                           shutting down an interpreter with gradio loaded takes ~0.3 s)
    C. python app.py --port <free>         … until GET / answers HTTP 200 (end to end, a subprocess)
    D. the same steps in one process, phase by phase:
         import gradio │ import app │ import the tab modules │ build_app() (each tab's build()) │ launch() │ 200
    E. an empty gr.Blocks (one Markdown) built and launched: what gradio itself costs after its import

Bytecode: a user's Python keeps each module's compiled bytecode (__pycache__), so every start after the first
skips compiling. This script measures such a start: it turns the cache on (PYTHONDONTWRITEBYTECODE may be set
on CI machines and sandboxes), keeps it in its scratch folder (PYTHONPYCACHEPREFIX: nothing is written into
the repo or site-packages), and starts everything once, untimed, before measuring. --no-bytecode-cache measures
the environment as it is (with PYTHONDONTWRITEBYTECODE=1 our ~75 modules are compiled on every start, ~0.2 s CPU).

Key insight: "our own work" is everything app.py does beyond importing gradio. D measures it directly
(total − import gradio, in one process); C − B is the end-to-end cross-check. It subtracts two ~3 s
numbers, so on a busy 2-core machine their run-to-run spread can be as large as the 0.5 s target.
`python -X importtime -c "import gradio"` gives gradio's cumulative import time as a cross-check.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

TARGET_OWN_S = 0.5
ENV = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}

# D: runs in a fresh interpreter and prints the phase times as JSON on its last line
PHASED = r"""
import json, os, sys, time, urllib.request
t0 = time.perf_counter()
import gradio
t1 = time.perf_counter()
sys.path.insert(0, {repo!r})
import app
phases = {{"import gradio": t1 - t0, "import app": time.perf_counter() - t1}}
builds = {{}}
started = time.perf_counter()
tabs = app.tabs()
phases["import the tab modules"] = time.perf_counter() - started
for module in tabs:
    name = module.__name__
    def timed(ctx, _build=module.build, _name=name):
        started = time.perf_counter()
        try:
            return _build(ctx)
        finally:
            builds[_name] = time.perf_counter() - started
    module.build = timed
t2 = time.perf_counter()
demo = app.build_app({sessions!r})
t3 = time.perf_counter()
phases["build_app()"] = t3 - t2
for name, seconds in builds.items():
    phases[f"  of which {{name}}.build()"] = seconds
demo.launch(server_name="127.0.0.1", server_port={port}, prevent_thread_lock=True, quiet=True, **app.launch_options(demo))
t4 = time.perf_counter()
phases["launch() (+ theme/css)"] = t4 - t3
while True:
    try:
        with urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=1) as r:
            if r.status == 200:
                break
    except OSError:
        time.sleep(0.01)
t5 = time.perf_counter()
phases["until first HTTP 200"] = t5 - t4
phases["total"] = t5 - t0
demo.close()
print(json.dumps(phases))
"""

# E: gradio's own fixed cost for any app — an empty gr.Blocks with one Markdown, built and launched the same way
EMPTY = r"""
import json, time, urllib.request
import gradio as gr
t0 = time.perf_counter()
with gr.Blocks(analytics_enabled=False) as demo:
    gr.Markdown("hello")
t1 = time.perf_counter()
demo.launch(server_name="127.0.0.1", server_port={port}, prevent_thread_lock=True, quiet=True, ssr_mode=False)
while True:
    try:
        with urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=1) as r:
            if r.status == 200:
                break
    except OSError:
        time.sleep(0.01)
t2 = time.perf_counter()
demo.close()
print(json.dumps({{"empty Blocks()": t1 - t0, "launch() → 200": t2 - t1, "total": t2 - t0}}))
"""


def wall(command: List[str], timeout: float = 120) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=c.REPO, env=ENV, check=True, timeout=timeout,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def until_import_returns() -> float:
    """Seconds from launching `python -c "import gradio"` until the import has returned (wall clock,
    shared by both processes) — unlike wall(), this leaves out the interpreter's shutdown."""
    started = time.time()
    done = subprocess.run([sys.executable, "-c", "import time, gradio; print(repr(time.time()))"], cwd=c.REPO,
                          env=ENV, check=True, timeout=120, capture_output=True, text=True)
    return float(done.stdout.strip().splitlines()[-1]) - started


def importtime_gradio() -> float:
    """gradio's cumulative import time in seconds, from `-X importtime`."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import gradio"], cwd=c.REPO, env=ENV,
                          capture_output=True, text=True, check=True, timeout=120)
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|\s?(\S+)$", line)
        if match and match.group(3) == "gradio":
            return int(match.group(2)) / 1e6
    raise RuntimeError("no top-level gradio line in -X importtime output")


def bytecode_cache(scratch: Path) -> dict:
    """The environment of a second start: bytecode cached (in the scratch folder, not beside the sources)."""
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(scratch / "pycache")}


def app_until_200(scratch: Path) -> float:
    sessions = tempfile.mkdtemp(prefix="sessions-", dir=scratch)
    app = c.AppProcess(sessions, env={key: ENV[key] for key in bytecode_cache(scratch) if key in ENV})
    try:
        return app.start(timeout=120)
    finally:
        app.stop()


def phased(scratch: Path, template: str = PHASED) -> dict:
    sessions = tempfile.mkdtemp(prefix="sessions-", dir=scratch)
    code = template.format(repo=str(c.REPO), sessions=sessions, port=c.free_port())
    done = subprocess.run([sys.executable, "-c", code], cwd=c.REPO, env=ENV, capture_output=True, text=True,
                          timeout=120)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one run of each measurement")
    parser.add_argument("--runs", type=int, help="runs of each measurement (default 5)")
    parser.add_argument("--no-bytecode-cache", action="store_true",
                        help="leave PYTHONDONTWRITEBYTECODE as the environment has it (a first start every time)")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 5)
    import gradio  # only for its version in the header (this process's own import is not measured)
    scratch = Path(tempfile.mkdtemp(prefix=".bench-startup-", dir=Path(__file__).resolve().parent))
    if not args.no_bytecode_cache:
        ENV.update(bytecode_cache(scratch))
    bytecode = ("off (PYTHONDONTWRITEBYTECODE=1): every start compiles" if ENV.get("PYTHONDONTWRITEBYTECODE")
                else "cached, as on a second start" + ("" if args.no_bytecode_cache else " (filled by an untimed run)"))
    c.print_header("bench_startup: python app.py until HTTP 200",
                   {"gradio": gradio.__version__, "runs": f"{runs} per measurement (median)", "bytecode": bytecode})
    try:
        if not args.no_bytecode_cache:
            phased(scratch)   # untimed: fills the bytecode cache for gradio, app.py and every module it imports
        python = [sys.executable]
        bare, imports, exits, self_reported, apps, phases, empties = [], [], [], [], [], [], []
        for _ in range(runs):   # interleaved, so a busy moment on the machine hits every measurement alike
            bare.append(wall(python + ["-c", "pass"]))
            imports.append(until_import_returns())
            exits.append(wall(python + ["-c", "import gradio"]))
            self_reported.append(importtime_gradio())
            apps.append(app_until_200(scratch))
            phases.append(phased(scratch))
            empties.append(phased(scratch, EMPTY))

        own = c.median(apps) - c.median(imports)
        paired = [a - b for a, b in zip(apps, imports)]
        rows = [["A. python -c pass", f"{c.median(bare):.3f}", f"{min(bare):.3f}", f"{max(bare):.3f}"],
                ["B. python -c 'import gradio' → import returned", f"{c.median(imports):.3f}", f"{min(imports):.3f}",
                 f"{max(imports):.3f}"],
                ["   (the same, until the process has exited)", f"{c.median(exits):.3f}", f"{min(exits):.3f}",
                 f"{max(exits):.3f}"],
                ["   (-X importtime: gradio cumulative)", f"{c.median(self_reported):.3f}",
                 f"{min(self_reported):.3f}", f"{max(self_reported):.3f}"],
                ["C. python app.py → HTTP 200", f"{c.median(apps):.3f}", f"{min(apps):.3f}", f"{max(apps):.3f}"],
                ["C − B per run (paired)", f"{c.median(paired):.3f}", f"{min(paired):.3f}", f"{max(paired):.3f}"]]
        c.print_table("1. end to end (subprocesses, seconds)", ["measurement", "median s", "min s", "max s"], rows,
                      note=f"{runs} runs each, interleaved; C polls GET / every 20 ms; "
                           f"median(C) − median(B) = {own:.3f} s")

        keys = list(phases[0])
        rows = [[key, f"{c.median([p[key] for p in phases]):.3f}", f"{min(p[key] for p in phases):.3f}",
                 f"{max(p[key] for p in phases):.3f}"] for key in keys]
        c.print_table("2. the same start in one process, phase by phase (seconds, after interpreter start)",
                      ["phase", "median s", "min s", "max s"], rows)

        rows = [[key, f"{c.median([p[key] for p in empties]):.3f}", f"{min(p[key] for p in empties):.3f}",
                 f"{max(p[key] for p in empties):.3f}"] for key in empties[0]]
        c.print_table("3. gradio's fixed cost for any app: an empty gr.Blocks with one Markdown, launched "
                      "(after import gradio)", ["phase", "median s", "min s", "max s"], rows,
                      note="gradio builds its FastAPI app (≈ 80 endpoints) three times: in Blocks(), in queue() and in launch()")

        in_process = [p["total"] - p["import gradio"] for p in phases]
        ours = [p["total"] - p["import gradio"] - e["total"] for p, e in zip(phases, empties)]
        print(f"of the in-process own work, {c.median([e['total'] for e in empties]):.3f} s is what an empty "
              f"gradio app costs too; the tabs and modules of this project add {c.median(ours):.3f} s beyond it\n")
        c.report([c.Budget(f"start-up, our own work beyond import gradio ({label})", value, TARGET_OWN_S)
                  for label, value in (("in one process: total − import gradio", c.median(in_process)),
                                       ("cross-check, median(C) − median(B)", own))],
                 note="a project budget (not in issue 40's list): a teacher waits for python app.py")
    finally:
        import shutil
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
