"""load_classroom.py — a class of students clicking 🌿 at the same moment, then an audit of the folder.

    python benchmarks/load_classroom.py              # 50 simultaneous clicks
    python benchmarks/load_classroom.py --clicks 10  # the smoke test's size
    python benchmarks/load_classroom.py --via http   # same clicks through plain httpx (no gradio_client)

    python app.py --port <free> --sessions-dir <scratch>      (a subprocess, loopback only)
        ▲   N threads, one gradio_client.Client each ("a student"); a barrier releases every
        │   submit(api_name="/run_demo") at once; each waits at most --timeout seconds
        └── afterwards: every id in list_sessions() loads, check() == [], and there are 3 × N files

Key insight: the page never raises — run_demo_safely turns failures into a "⚠️" status — so a click
counts as an error when its status does not start with "✅", not only when the request fails.
The simulated students run on the same CPUs as the server (real students each have their own
machine), so --via http repeats the clicks without gradio_client's threads to show whose time it is.
Exit status 1 on any error, damaged file or wrong file count. Target: 50 clicks, 0 errors,
0 damaged files, p95 ≤ 3 s. The whole run is bounded (--deadline, default 180 s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

c.setup_paths()
from s11_session import SessionStore  # noqa: E402

API_NAME = "/run_demo"
FILES_PER_CLICK = 3
TARGET_P95_S = 3.0
SERVER_TIME = re.compile(r"用时 (\d+) ms")   # s11_tab's status line: "✅ 已写入 3 个会话文件，用时 37 ms。…"


class Student(threading.Thread):
    """One Client, one click. Records latency (submit → result) or the error."""

    def __init__(self, url: str, barrier: threading.Barrier, timeout: float):
        super().__init__(daemon=True)   # a stuck request must not keep the process alive past the deadline
        self.url, self.barrier, self.timeout = url, barrier, timeout
        self.connect_s: Optional[float] = None
        self.latency_s: Optional[float] = None
        self.error: Optional[str] = None
        self.server_ms: Optional[int] = None   # run_demo's own time, as the status line reports it

    def run(self) -> None:
        try:
            started = time.perf_counter()
            click = self.connect()
            self.connect_s = time.perf_counter() - started
        except Exception as exc:  # noqa: BLE001 - every failure is a result here
            self.error = f"connect: {type(exc).__name__}: {exc}"
            self._arrive()
            return
        self._arrive()
        try:
            started = time.perf_counter()
            status = click()
            self.latency_s = time.perf_counter() - started
            reported = SERVER_TIME.search(str(status))
            self.server_ms = int(reported.group(1)) if reported else None
            if not str(status).startswith("✅"):
                self.error = f"status: {str(status)[:200]}"
        except Exception as exc:  # noqa: BLE001
            self.error = f"click: {type(exc).__name__}: {str(exc)[:200]}"
        finally:
            self.close()

    def connect(self):
        """Open a gradio_client.Client; return a function that clicks once and returns the status line."""
        from gradio_client import Client
        client = Client(self.url, verbose=False, download_files=False, analytics_enabled=False,
                        httpx_kwargs={"timeout": self.timeout})
        self.close = getattr(client, "close", lambda: None)
        return lambda: client.submit(api_name=API_NAME).result(timeout=self.timeout)[0]

    def close(self) -> None:
        pass

    def _arrive(self) -> None:
        try:
            self.barrier.wait(timeout=self.timeout)
        except threading.BrokenBarrierError:
            pass


class HttpStudent(Student):
    """The same click through Gradio's plain REST API (POST /gradio_api/call/run_demo, then read the
    server-sent events): no gradio_client threads, so it shows how much of the latency is the client's."""

    def connect(self):
        import httpx
        http = httpx.Client(base_url=self.url, timeout=self.timeout)
        self.close = http.close

        def click() -> str:
            event_id = http.post(f"/gradio_api/call{API_NAME}", json={"data": []}).json()["event_id"]
            event, data = "", ""
            with http.stream("GET", f"/gradio_api/call{API_NAME}/{event_id}") as response:
                for line in response.iter_lines():
                    if line.startswith("event:"):
                        event = line.split(":", 1)[1].strip()
                    elif line.startswith("data:") and event in ("complete", "error"):
                        data = line.split(":", 1)[1].strip()
                        break
            if event != "complete":
                raise RuntimeError(f"event {event!r}: {data[:200]}")
            return json.loads(data)[0]
        return click


def audit(sessions_dir: str) -> dict:
    """Every listed session loads; check() finds nothing; count the session files."""
    store = SessionStore(sessions_dir)
    damaged: List[str] = []
    summaries = store.list_sessions()
    for summary in summaries:
        try:
            if store.load(summary["session_id"]) is None:
                damaged.append(f"{summary['session_id']}: listed but load() returned None")
        except Exception as exc:  # noqa: BLE001
            damaged.append(f"{summary['session_id']}: {type(exc).__name__}: {exc}")
    problems = store.check()
    damaged += [f"check(): [{p.kind}] {p.path}: {p.detail}" for p in problems]
    files = [name for name in os.listdir(sessions_dir) if name.endswith(".json") and not name.startswith(".")]
    return {"files": len(files), "listed": len(summaries), "damaged": damaged, "problems": len(problems)}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=50, help="simultaneous students (default 50)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    parser.add_argument("--via", choices=("client", "http"), default="client",
                        help="client: one gradio_client.Client per student (default); "
                             "http: plain httpx on /gradio_api/call/run_demo, to separate the client's own cost")
    parser.add_argument("--deadline", type=float, default=180.0, help="seconds for the whole run (default 180)")
    args = parser.parse_args(argv)
    run_started = time.perf_counter()
    scratch = Path(tempfile.mkdtemp(prefix=".load-classroom-", dir=Path(__file__).resolve().parent))
    sessions_dir = scratch / "gradio_sessions"
    sessions_dir.mkdir()
    c.print_header(f"load_classroom: {args.clicks} simultaneous clicks on {API_NAME} via {args.via}",
                   {"sessions": f"{sessions_dir} — {c.filesystem_of(sessions_dir)}",
                    "limits": f"{args.timeout:.0f} s per request, {args.deadline:.0f} s for the whole run"})
    try:
        return click_and_audit(args, sessions_dir, run_started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def click_and_audit(args: argparse.Namespace, sessions_dir: Path, run_started: float) -> int:
    app = c.AppProcess(sessions_dir)
    try:
        startup = app.start(timeout=min(90.0, args.deadline))
        print(f"app.py answered HTTP 200 on {app.url} after {startup:.2f} s", flush=True)
        released: List[float] = []   # the moment the last student connected and every click went out
        barrier = threading.Barrier(args.clicks, action=lambda: released.append(time.perf_counter()))
        kind = HttpStudent if args.via == "http" else Student
        students = [kind(app.url, barrier, args.timeout) for _ in range(args.clicks)]
        for student in students:
            student.start()
        for student in students:
            remaining = args.deadline - (time.perf_counter() - run_started)
            student.join(timeout=max(0.0, remaining))
        wall = time.perf_counter() - released[0] if released else float("nan")
        for student in students:
            if student.is_alive():
                student.error = student.error or f"still running at the {args.deadline:.0f} s deadline"
            elif student.error is None and student.latency_s is None:
                student.error = "the thread ended without a result"   # crashed: see its traceback above
    finally:
        app.stop()
    latencies = [s.latency_s for s in students if s.latency_s is not None and s.error is None]
    connects = [s.connect_s for s in students if s.connect_s is not None]
    errors = [s.error for s in students if s.error]
    result = audit(str(sessions_dir))
    expected = FILES_PER_CLICK * args.clicks
    rows = []
    if connects:
        rows.append(["connect (before the barrier)", c.ms(c.median(connects), 0),
                     c.ms(c.percentile(connects, 0.95), 0), c.ms(max(connects), 0)])
    if latencies:
        rows.append(["click: submit → result", c.ms(c.median(latencies), 0),
                     c.ms(c.percentile(latencies, 0.95), 0), c.ms(max(latencies), 0)])
    server = [s.server_ms / 1000 for s in students if s.server_ms is not None]
    if server:
        rows.append(["  of which run_demo on the server", c.ms(c.median(server), 0),
                     c.ms(c.percentile(server, 0.95), 0), c.ms(max(server), 0)])
    c.print_table(f"1. latency of {len(latencies)} successful clicks (all released at once; "
                  f"from release to the last answer: {wall:.2f} s)", ["", "p50 ms", "p95 ms", "max ms"], rows,
                  note="the endpoint runs ≤ 16 clicks at a time (concurrency_limit=16); the rest queue")
    c.print_table("2. audit of the sessions folder after the run",
                  ["check", "value", "expected"],
                  [["clicks", args.clicks, args.clicks], ["errors", len(errors), 0],
                   ["session files", result["files"], expected], ["listed by list_sessions()", result["listed"], expected],
                   ["damaged (load fails or check() reports)", len(result["damaged"]), 0]])
    for line in errors[:10] + result["damaged"][:10]:
        print("  !", line)
    p95 = c.percentile(latencies, 0.95) if latencies else None
    ok = not errors and not result["damaged"] and result["files"] == expected
    verdict = [["errors", len(errors), "0", "met" if not errors else "MISSED"],
               ["damaged files", len(result["damaged"]), "0", "met" if not result["damaged"] else "MISSED"],
               ["files", result["files"], str(expected), "met" if result["files"] == expected else "MISSED"],
               ["p95 s", f"{p95:.2f}" if p95 is not None else "n/a", f"≤ {TARGET_P95_S:.0f}",
                "met" if p95 is not None and p95 <= TARGET_P95_S else "MISSED"]]
    c.print_table("target", ["measure", "value", "target", "verdict"], verdict)
    print(f"RESULT clicks={args.clicks} errors={len(errors)} damaged={len(result['damaged'])} "
          f"files={result['files']} expected_files={expected} "
          f"p50_ms={c.ms(c.median(latencies), 0) if latencies else 'n/a'} "
          f"p95_ms={c.ms(p95, 0)} max_ms={c.ms(max(latencies), 0) if latencies else 'n/a'}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
