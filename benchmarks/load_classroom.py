"""load_classroom.py — a class of students, each in a private space, working through the 8.11 tab and the explorer.

    python benchmarks/load_classroom.py                     # 50 students: all at once, then 30 minutes steady
    python benchmarks/load_classroom.py --quick             # 50 students, 30 s steady (a smoke run)
    python benchmarks/load_classroom.py --students 5 --minutes 0    # one burst only
    python benchmarks/load_classroom.py --browser-pages 3   # + chromium pages clicking the demo meanwhile
    python benchmarks/load_classroom.py --server-env MALLOC_ARENA_MAX=2   # an experiment on the server's environment
    python benchmarks/load_classroom.py --minutes 5         # a shorter lesson (the budgets are for 30 minutes)
    python benchmarks/load_classroom.py --in-process --rounds 4   # no server: each action's handler logic, timed
    python benchmarks/load_classroom.py --in-process --rounds 8 --trace-memory   # what the rounds after the first keep
    python benchmarks/load_classroom.py --postprocess             # no server: handler vs gradio's postprocess per event

    python app.py --port <free> --sessions-dir <scratch>   GRADIO_PROFILING=1, TMPDIR in scratch (gradio's cache goes there)
        ▲  one asyncio "page" per student: its own loopback address (127.0.0.10, .11, …), its own session_hash
        │  (so its gr.State lives on the server, as a browser tab's does), speaking the page's own protocol:
        │  POST /gradio_api/queue/join {fn_index, data, session_hash} + the SSE stream /gradio_api/queue/data
        │
        │  enter_space ─ once: the page's load event, the token a browser keeps in localStorage
        │  one cycle ─┬ run_demo                      (8.11 tab: 3 new sessions)
        │             ├ explorer_refresh               (the list)
        │             ├ select one of the demo's three (a table row click: private, so fn_index + event_data)
        │             ├ explorer_fork at message 3     (+ a first message)
        │             ├ explorer_resume × 2
        │             ├ explorer_export + GET the .md and the .html
        │             ├ explorer_import_example        (the two examples/ files in turn)
        │             └ 🎯 练习: lesson_pick level 2, lesson_start, lesson_fork at message 3 (solves it)
        │  burst: every student's first cycle released at once; steady: cycles with think time until --minutes
        └─ afterwards: each student's list == the ids in its own folder (and another student's id is refused);
           every space's files load and check() is clean; the server's RSS; temp files left, running and stopped

Key insight: the server measures itself. With GRADIO_PROFILING=1 gradio keeps a trace per request (queue wait,
preprocess, handler, postprocess); "server-side" below is its total_ms = preprocess + handler + postprocess,
queue wait shown apart. The traces are fetched from /gradio_api/profiling/traces and cleared every 15 s, so they
do not count as memory. The students run on the same 2 CPUs as the server; real students bring their own.
Budgets (absolute, PASS / MISS at the end; issue 40): 50 students for 30 minutes, 0 errors, server p95 ≤ 1 s per
action, RSS drift after the warm-up ≤ 20 MiB; plus 0 damaged spaces and 0 isolation breaches.
Exit status 1 on any error, damaged file, isolation breach or (with --browser-pages) no page figure; timing
and memory budgets are printed with PASS / MISS but do not change the exit status.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

c.setup_paths()
from s11_session import SessionStore  # noqa: E402
from s11_workbench.explorer import LIST_LIMIT  # noqa: E402

TARGET_SERVER_P95_S = 1.0
TARGET_PAGE_P95_S = 3.0
TARGET_RSS_GROWTH = 100 * 1024 * 1024
TARGET_RSS_DRIFT = 20 * 1024 * 1024      # issue 19 item 6: after warm-up, a class's server memory stays flat
EXAMPLES = ("claude-code-rate-limit.jsonl", "pi-v3-report-cache.jsonl")
ROW_CLICK = "on_row"            # the list's select event: private (no api_name), found by its inputs
ACTIONS = ["enter_space", "run_demo", "explorer_refresh", "select (row click)", "explorer_fork", "explorer_resume",
           "explorer_export", "download .md", "download .html", "explorer_import_example", "lesson_pick",
           "lesson_start", "lesson_fork"]
# what a successful action's first output (status / notice) starts with; "" = anything but a ⚠️ refusal
EXPECTED = {"run_demo": "✅", "explorer_fork": "✅", "explorer_resume": "✅", "explorer_export": "✅",
            "explorer_import_example": "📥", "lesson_start": "🚀", "lesson_fork": "✅"}


RESULT_MARKS = ("✅", "⚠️", "📥", "🚀", "🔀", "📂", "♻️", "🗑️")


def result_line(outputs: list, elem_ids: Optional[List[Optional[str]]] = None) -> str:
    """The action's result: the explorer writes it in its notice or under the control that caused it (one of
    several result lines), other tabs in their first output; so take the first output that reads like a result,
    looking only at the explorer's notice and result lines when the event has them (a button's value is its
    label, and "📂 恢复并保存这一轮" reads like a result too)."""
    ids = list(elem_ids or [])
    slots = [i for i, elem in enumerate(ids) if elem and (elem == "s11x-notice" or
                                                          (elem.startswith("s11x-") and elem.endswith("-result")))]
    for value in [outputs[i] for i in slots if i < len(outputs)] if slots else outputs or []:
        if isinstance(value, str) and value.startswith(RESULT_MARKS):
            return value
    return str(outputs[0]) if outputs else ""


# ---------------------------------------------------------------- the page's protocol

class App:
    """What a page learns from /config: fn_index per api_name, and which output is which (by elem_id)."""

    def __init__(self, config: dict):
        self.fns: Dict[str, int] = {}
        self.outputs: Dict[str, List[Optional[str]]] = {}
        elem = {comp["id"]: (comp.get("props") or {}).get("elem_id") for comp in config["components"]}
        kinds = {comp["id"]: comp.get("type") for comp in config["components"]}
        for dep in config["dependencies"]:
            name = dep.get("api_name")
            targets = [elem.get(t[0]) for t in dep.get("targets", []) if t]
            if [kinds.get(i) for i in dep["inputs"]] == ["browserstate"] + ["state"] * 3 and "s11x-list" in targets:
                name = ROW_CLICK
            elif name == ROW_CLICK:   # another table's select handler of the same name (the teacher's class view)
                continue
            if name and name not in self.fns:
                self.fns[name] = dep["id"]
                self.outputs[name] = [elem.get(i) for i in dep["outputs"]]

    def pick(self, name: str, data: list, elem_id: str):
        outputs = self.outputs[name]
        return data[outputs.index(elem_id)] if elem_id in outputs else None


@dataclass
class Call:
    action: str
    phase: str
    student: int
    event_id: Optional[str] = None
    rtt: Optional[float] = None      # client: join POST → process_completed (or the GET, for downloads)
    error: Optional[str] = None


class ActionError(Exception):
    """An action that failed; `recorded` when it is already in the run's list of calls."""

    def __init__(self, message: str, recorded: bool = False):
        super().__init__(message)
        self.recorded = recorded


@functools.cache
def tls_context():
    """One SSL context for every student's client: httpx reads the whole CA bundle for each transport it builds
    (~30 ms here), even for plain http; 50 students would spend ~1.5 s of the burst's CPU on it."""
    import httpx
    return httpx.create_ssl_context()


class Page:
    """One student's browser tab: a session_hash, a token, the ids it created."""

    def __init__(self, number: int, url: str, app: App, calls: List[Call], timeout: float):
        import httpx
        self.number, self.app, self.calls, self.timeout = number, app, calls, timeout
        address = f"127.0.0.{10 + number}"   # each student its own address, as in a real room
        # keep idle connections 2 s at most: uvicorn closes them after 5 s, and a request sent on a connection the
        # server is closing at that moment fails with ReadError (a browser retries it; httpx does not)
        self.http = httpx.AsyncClient(base_url=url, timeout=timeout,
                                      transport=httpx.AsyncHTTPTransport(
                                          local_address=address, limits=httpx.Limits(keepalive_expiry=2.0),
                                          verify=tls_context()))
        self.session_hash = secrets.token_hex(6)
        self.token: Optional[str] = None
        self.known: set = set()
        self.fork_ids: List[str] = []
        self.cycles = self.rounds = 0   # rounds completed / started
        self.phase = "burst"
        self.entered = False

    async def close(self) -> None:
        await self.http.aclose()

    async def call(self, action: str, name: str, data: list, event_data: Optional[dict] = None,
                   expect_refusal: bool = False) -> list:
        """Run one event as the page does; ActionError on failure — or, with expect_refusal, on success."""
        record = Call(action, self.phase, self.number)
        self.calls.append(record)
        started = time.perf_counter()
        try:
            body = {"data": data, "fn_index": self.app.fns[name], "session_hash": self.session_hash,
                    "event_data": event_data, "trigger_id": None}
            joined = await self.http.post("/gradio_api/queue/join", json=body)
            if joined.status_code != 200:
                raise ActionError(f"join HTTP {joined.status_code}: {joined.text[:200]}")
            record.event_id = joined.json()["event_id"]
            try:   # the stream sends heartbeats, so a lost result would otherwise wait forever
                output = await asyncio.wait_for(self._completed(record.event_id), timeout=self.timeout)
            except asyncio.TimeoutError:
                raise ActionError(f"no result within {self.timeout:.0f} s") from None
            record.rtt = time.perf_counter() - started
            if "error" in output or "data" not in output:
                raise ActionError(f"gradio error: {str(output.get('error'))[:200]}")
            data_out = output["data"]
            first = result_line(data_out, self.app.outputs.get(name))
            expected = EXPECTED.get(name)
            refused = first.startswith("⚠️") or bool(expected and not first.startswith(expected))
            if refused != expect_refusal:
                raise ActionError(f"refused: {first[:200]}" if refused else f"not refused: {first[:200]}")
            return data_out
        except ActionError as error:
            record.error = str(error)
            raise ActionError(record.error, recorded=True) from None
        except Exception as error:  # noqa: BLE001 - every failure is a result here
            record.error = f"{type(error).__name__}: {str(error)[:200]}"
            raise ActionError(record.error, recorded=True) from None

    async def _completed(self, event_id: str) -> dict:
        async with self.http.stream("GET", "/gradio_api/queue/data",
                                    params={"session_hash": self.session_hash}) as response:
            if response.status_code != 200:
                raise ActionError(f"queue/data HTTP {response.status_code}")
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("msg") == "unexpected_error":
                    raise ActionError(f"unexpected_error: {message.get('message', '')[:200]}")
                if message.get("event_id") == event_id and message.get("msg") == "process_completed":
                    return message.get("output") or {}
        raise ActionError("the event stream closed before the result")

    async def download(self, action: str, file_value) -> int:
        record = Call(action, self.phase, self.number)
        self.calls.append(record)
        started = time.perf_counter()
        try:
            value = file_value.get("value") if isinstance(file_value, dict) and "__type__" in file_value \
                else file_value
            if not isinstance(value, dict) or not value.get("url"):
                raise ActionError(f"no file to download: {str(file_value)[:200]}")
            response = await self.http.get(value["url"])
            record.rtt = time.perf_counter() - started
            if response.status_code != 200 or not response.content:
                raise ActionError(f"HTTP {response.status_code}, {len(response.content)} bytes")
            return len(response.content)
        except ActionError as error:
            record.error = str(error)
            raise ActionError(record.error, recorded=True) from None
        except Exception as error:  # noqa: BLE001
            record.error = f"{type(error).__name__}: {str(error)[:200]}"
            raise ActionError(record.error, recorded=True) from None

    # -------------------------------------------------------------- what a student does

    async def enter(self) -> None:
        data = await self.call("enter_space", "enter_space", [None])
        self.token = data[0]

    def rows(self, data: list, name: str) -> List[list]:
        table = self.app.pick(name, data, "s11x-list")
        return (table.get("data") or []) if isinstance(table, dict) else []

    def ids(self, data: list, name: str) -> List[str]:
        """The list's session ids, in row order (the column headed "ID")."""
        table = self.app.pick(name, data, "s11x-list")
        headers = table.get("headers") or [] if isinstance(table, dict) else []
        column = headers.index("ID") if "ID" in headers else -1
        return [row[column] for row in self.rows(data, name)]

    async def cycle(self, pause) -> None:
        """One lesson round; `pause()` is awaited between actions (think time, or nothing in the burst)."""
        token = self.token
        self.rounds += 1
        await self.call("run_demo", "run_demo", [token])
        await pause()
        data = await self.call("explorer_refresh", "explorer_refresh", [token, None, None, "", None])
        rows, ids = self.rows(data, "explorer_refresh"), self.ids(data, "explorer_refresh")
        fresh = [(i, row) for i, (row, sid) in enumerate(zip(rows, ids)) if sid not in self.known]
        self.known.update(ids)
        if len(fresh) != 3:
            raise ActionError(f"student {self.number}: the list shows {len(fresh)} new sessions after the demo, not 3")
        index, row = fresh[0]   # one of the demo's three (each has ≥ 5 messages): fork it after message 3
        await pause()
        await self.call("select (row click)", ROW_CLICK, [token, None, None, None],
                        {"index": [index, 0], "value": row[0], "row_value": row, "col_value": None})
        await pause()
        data = await self.call("explorer_fork", "explorer_fork",
                               [token, None, None, 3, f"第 {self.rounds} 轮：在第 3 条之后试试方案 C",
                                f"同学 {self.number} 的分支", None])
        tree = self.app.pick("explorer_fork", data, "s11x-tree") or {}
        fork_id = tree.get("value") if isinstance(tree, dict) else tree if isinstance(tree, str) else None
        if fork_id:
            self.fork_ids.append(fork_id)
            self.known.add(fork_id)
        for turn in ("先复现：把监听器数量打印出来", "复现了：关闭后监听器仍在，改用 WeakSet"):
            await pause()
            await self.call("explorer_resume", "explorer_resume", [token, None, None, turn, "user", None])
        await pause()
        data = await self.call("explorer_export", "explorer_export", [token, None, None, None])
        await self.download("download .md", self.app.pick("explorer_export", data, "s11x-download-md"))
        await self.download("download .html", self.app.pick("explorer_export", data, "s11x-download-html"))
        await pause()
        example = EXAMPLES[(self.rounds - 1) % len(EXAMPLES)]
        data = await self.call("explorer_import_example", "explorer_import_example", [token, None, None, example, None])
        self.known.update(self.ids(data, "explorer_import_example"))
        # the exercise tab: level 2 (rewind) started and solved with one fork after message 3
        await pause()
        await self.call("lesson_pick", "lesson_pick", [token, None, None, "rewind", None])
        await pause()
        await self.call("lesson_start", "lesson_start", [token, None, None, "rewind", None])
        await pause()
        data = await self.call("lesson_fork", "lesson_fork", [token, None, None, 3, f"第 {self.rounds} 轮：换个方向", "",
                                                               None])
        tree = self.app.pick("lesson_fork", data, "s11l-tree")   # the level's nodes: not new in the next list
        choices = tree.get("choices") or [] if isinstance(tree, dict) else []
        self.known.update(choice[1] for choice in choices if isinstance(choice, (list, tuple)) and len(choice) == 2)
        self.cycles += 1


# ---------------------------------------------------------------- the run

@dataclass
class Run:
    students: int
    minutes: float
    think: float
    timeout: float
    warmup: float = 0.0                                # minutes of the steady phase before the drift is measured
    calls: List[Call] = field(default_factory=list)
    traces: Dict[str, dict] = field(default_factory=dict)
    rss: List[tuple] = field(default_factory=list)      # (seconds since start, label, VmRSS bytes)
    cpu: Dict[str, float] = field(default_factory=dict)  # the server's CPU seconds (user + system) at each mark
    sessions: List[tuple] = field(default_factory=list)  # (seconds since start, session files in all spaces)
    marks: Dict[str, float] = field(default_factory=dict)
    crashed: List[str] = field(default_factory=list)


async def collect_traces(http, run: Run) -> None:
    """Server-side traces so far (then cleared: the server keeps up to 100,000 in memory otherwise)."""
    try:
        response = await http.get("/gradio_api/profiling/traces")
        if response.status_code == 200:
            for trace in response.json():
                if trace.get("event_id"):
                    run.traces[trace["event_id"]] = trace
            await http.post("/gradio_api/profiling/clear")
    except Exception as error:  # noqa: BLE001 - a missed fetch only loses figures, reported as missing
        print(f"  ! could not fetch profiling traces: {error}", flush=True)


def count_session_files(folder: Path) -> int:
    """Session files (*.json, not hidden) in every space under folder; trash and chunk folders are hidden."""
    total = 0
    for _current, dirs, files in os.walk(folder):
        dirs[:] = [name for name in dirs if not name.startswith(".")]
        total += sum(name.endswith(".json") and not name.startswith(".") for name in files)
    return total


async def watch(run: Run, pid: int, http, started: float, stop: asyncio.Event, sessions_dir: Path) -> None:
    while not stop.is_set():
        status = c.proc_status(pid)
        if status:
            run.rss.append((time.perf_counter() - started, "sample", status.get("VmRSS", 0)))
            run.sessions.append((time.perf_counter() - started, count_session_files(sessions_dir)))
        await collect_traces(http, run)
        failed = sum(call.error is not None for call in run.calls)
        print(f"  {time.perf_counter() - started:5.0f} s: {len(run.calls)} actions, {failed} failed, "
              f"{len(run.crashed)} other failures, server RSS {c.human_bytes(status.get('VmRSS'))}", flush=True)
        try:
            await asyncio.wait_for(stop.wait(), timeout=15.0)
        except asyncio.TimeoutError:
            pass


async def student_life(page: Page, run: Run, gate: asyncio.Event, steady_until: List[float]) -> None:
    """enter → (gate) → one round at once → rounds with think time; any exception is a recorded failure."""
    try:
        await _life(page, run, gate, steady_until)
    except Exception as error:  # noqa: BLE001 - a bug in this script or a malformed page must not hang the run
        run.crashed.append(f"student {page.number}: {type(error).__name__}: {str(error)[:200]}")
    finally:
        page.entered = True
        page.phase = "done"


async def _life(page: Page, run: Run, gate: asyncio.Event, steady_until: List[float]) -> None:
    try:
        await page.enter()
    except ActionError:
        return   # recorded as an error of enter_space
    finally:
        page.entered = True
    await gate.wait()

    async def no_pause() -> None:
        return None

    try:
        await page.cycle(no_pause)
    except ActionError as error:
        if not error.recorded:
            run.crashed.append(f"student {page.number}, burst: {error}")
    page.phase = "steady"
    if not steady_until:
        return
    rng = random.Random(page.number)

    async def think() -> None:
        await asyncio.sleep(rng.uniform(0.5 * run.think, 1.5 * run.think))

    await asyncio.sleep(rng.uniform(0, run.think))   # students do not all start the next round together
    while time.perf_counter() < steady_until[0]:
        try:
            await page.cycle(think)
        except ActionError as error:
            if not error.recorded:
                run.crashed.append(f"student {page.number}, round {page.rounds}: {error}")
            await think()


async def isolation(pages: List[Page], sessions_dir: Path) -> List[str]:
    """Each list shows only ids in that student's own folder (all of them, up to the list's LIST_LIMIT rows);
    another student's fork is refused."""
    breaches: List[str] = []
    for page in pages:
        if page.token is None:
            continue
        folder = sessions_dir / "spaces" / page.token.split(".")[0]
        own = {s["session_id"] for s in SessionStore(str(folder)).list_sessions()}
        page.phase = "audit"
        try:
            data = await page.call("explorer_refresh", "explorer_refresh", [page.token, None, None, "", None])
        except ActionError as error:
            breaches.append(f"student {page.number}: refresh failed: {error}")
            continue
        listed = set(page.ids(data, "explorer_refresh"))
        # the list shows at most LIST_LIMIT rows (the rest are found by search): every listed id must be the
        # student's own, and the list must be complete whenever the folder fits in it
        if not listed <= own or (len(own) <= LIST_LIMIT and listed != own) or len(listed) < min(len(own), LIST_LIMIT):
            breaches.append(f"student {page.number}: list {len(listed)} ids, own folder {len(own)}; "
                            f"not own: {sorted(listed - own)[:5]}")
    for page, other in zip(pages, pages[1:] + pages[:1]):
        if page is other or page.token is None or not other.fork_ids:
            continue
        stolen = other.fork_ids[0]
        row = [f"同学 {other.number} 的分支", stolen]
        try:
            await page.call("select another student's id", ROW_CLICK, [page.token, None, None, None],
                            {"index": [0, 0], "value": row[0], "row_value": row, "col_value": None},
                            expect_refusal=True)
        except ActionError as error:
            breaches.append(f"student {page.number} selecting student {other.number}'s {stolen}: {error}")
    return breaches


async def drive(run: Run, url: str, pid: int, sessions_dir: Path, browser: Optional[dict]) -> dict:
    import httpx
    started = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        app = App((await http.get("/config")).json())
        missing = [n for n in ("enter_space", "run_demo", ROW_CLICK, "explorer_fork", "explorer_resume",
                               "explorer_export", "explorer_import_example") if n not in app.fns]
        if missing:
            raise SystemExit(f"the page has no endpoint for {missing}: is the explorer tab in app.py?")
        await collect_traces(http, run)   # drop the traces of start-up, if any
        run.rss.append((0.0, "start (after HTTP 200)", c.proc_status(pid).get("VmRSS", 0)))
        run.cpu["start"] = cpu_seconds(pid)
        stop = asyncio.Event()
        watcher = asyncio.create_task(watch(run, pid, http, started, stop, sessions_dir))
        pages = [Page(i, url, app, run.calls, run.timeout) for i in range(run.students)]
        gate = asyncio.Event()
        steady_until: List[float] = []
        lives = [asyncio.create_task(student_life(p, run, gate, steady_until)) for p in pages]
        while not all(p.entered for p in pages):
            await asyncio.sleep(0.05)
        run.marks["burst start"] = time.perf_counter() - started
        run.cpu["burst start"] = cpu_seconds(pid)
        if run.minutes > 0:
            steady_until.append(time.perf_counter() + 60 * run.minutes)
        gate.set()
        while any(p.phase == "burst" for p in pages):
            await asyncio.sleep(0.05)
        run.marks["burst end"] = time.perf_counter() - started
        run.cpu["burst end"] = cpu_seconds(pid)
        run.rss.append((run.marks["burst end"], "after the burst", c.proc_status(pid).get("VmRSS", 0)))
        if browser is not None and run.minutes > 0:
            browser["process"] = start_browsers(url, browser, 60 * run.minutes - 10)
        hard = 60 * run.minutes + 2 * run.timeout + 30
        done, pending = await asyncio.wait(lives, timeout=hard)
        for task in pending:
            task.cancel()
            run.crashed.append("a student was still busy at the hard deadline")
        run.marks["steady end"] = time.perf_counter() - started
        run.cpu["steady end"] = cpu_seconds(pid)
        run.rss.append((run.marks["steady end"], "end of the run", c.proc_status(pid).get("VmRSS", 0)))
        if browser is not None and browser.get("process") is not None:
            browser["result"] = finish_browsers(browser)
        breaches = await isolation(pages, sessions_dir)
        for page in pages:
            await page.close()
        stop.set()
        await watcher
        await collect_traces(http, run)
        await asyncio.sleep(10)
        run.rss.append((time.perf_counter() - started, "10 s later, idle", c.proc_status(pid).get("VmRSS", 0)))
        run.marks["peak"] = c.proc_status(pid).get("VmHWM", 0)
    return {"breaches": breaches, "cycles": sum(p.cycles for p in pages)}


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far, user + system, all threads (/proc/<pid>/stat): the work the server did,
    whatever else ran on the machine meanwhile (its wall-clock figures are not)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_browsers(url: str, browser: dict, seconds: float) -> subprocess.Popen:
    command = [sys.executable, str(Path(__file__).resolve().parent / "bench_browser.py"), "--url", url,
               "--pages", str(browser["pages"]), "--seconds", f"{max(10.0, seconds):.0f}",
               "--json", str(browser["json"])]
    browser["log"] = open(browser["json"].with_suffix(".log"), "wb")
    return subprocess.Popen(command, cwd=c.REPO, stdout=browser["log"], stderr=subprocess.STDOUT)


def finish_browsers(browser: dict) -> Optional[dict]:
    process: subprocess.Popen = browser["process"]
    try:
        process.wait(timeout=180)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    browser["log"].close()
    try:
        return json.loads(browser["json"].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tail = browser["json"].with_suffix(".log").read_text(encoding="utf-8", errors="replace")[-2000:]
        print(f"  ! bench_browser.py gave no figures (exit {process.returncode}):\n{tail}", flush=True)
        return None


def leftovers(server_tmp: Path, gradio_tmp: Path) -> List[str]:
    """What is left, per folder of the server's TMPDIR, and gradio's cache as one line."""
    lines = []
    for entry in sorted(server_tmp.iterdir()) if server_tmp.is_dir() else []:
        count, size = c.files_under(entry) if entry.is_dir() else (1, entry.stat().st_size)
        if count:
            lines.append(f"TMPDIR/{entry.name}: {count} files, {c.human_bytes(size)}")
    if gradio_tmp.is_dir():
        count, size = c.files_under(gradio_tmp)
        folders = sum(1 for entry in gradio_tmp.iterdir() if entry.is_dir())
        if count:
            lines.append(f"GRADIO_TEMP_DIR: {count} files in {folders} folders, {c.human_bytes(size)}")
    return lines


def audit(sessions_dir: Path) -> dict:
    """Every space (and the shelf): each listed session loads, check() finds nothing."""
    damaged: List[str] = []
    spaces = sorted((sessions_dir / "spaces").iterdir()) if (sessions_dir / "spaces").is_dir() else []
    sessions = 0
    for folder in spaces + [p for p in [sessions_dir / "shelf"] if p.is_dir()]:
        store = SessionStore(str(folder))
        for summary in store.list_sessions():
            sessions += 1
            try:
                if store.load(summary["session_id"]) is None:
                    damaged.append(f"{folder.name}/{summary['session_id']}: listed but load() returned None")
            except Exception as exc:  # noqa: BLE001
                damaged.append(f"{folder.name}/{summary['session_id']}: {type(exc).__name__}: {exc}")
        damaged += [f"{folder.name}: check(): [{p.kind}] {p.path}: {p.detail}" for p in store.check()]
    temp = sum(1 for root, _, names in os.walk(sessions_dir) for n in names if n.endswith(".tmp"))
    return {"spaces": len(spaces), "sessions": sessions, "damaged": damaged, "store_temp_files": temp}


# ---------------------------------------------------------------- report

def server_ms(run: Run, call: Call, key: str = "total_ms") -> Optional[float]:
    trace = run.traces.get(call.event_id or "")
    return trace[key] / 1000 if trace and key in trace else None


def print_server_cpu(run: Run, ok_calls: list) -> None:
    """CPU seconds the server spent in each phase, per queued action (what a busy machine does not blur)."""
    marks = [("pages opened (enter_space)", "start", "burst start", "enter_space", None),
             ("burst", "burst start", "burst end", None, "burst"),
             ("steady", "burst end", "steady end", None, "steady")]
    rows = []
    for label, begin, end, action, phase in marks:
        if begin not in run.cpu or end not in run.cpu:
            continue
        calls = [call for call in ok_calls if (call.action == action if action else
                                               call.phase == phase and call.action != "enter_space")
                 and not call.action.startswith("download")]
        if not calls:
            continue
        spent = run.cpu[end] - run.cpu[begin]
        rows.append([label, f"{spent:.2f} s", len(calls), c.ms(spent / len(calls), 1)])
    c.print_table("1b. the server's CPU time (user + system, all threads) per phase",
                  ["phase", "server CPU", "queued actions", "CPU per action (ms)"], rows,
                  note="downloads (plain GETs) are not counted as actions but their CPU is in the phase's total")


def report(run: Run, result: dict, checks: dict, temp: dict, browser: Optional[dict]) -> bool:
    ok_calls = [call for call in run.calls if call.error is None]
    errors = [call for call in run.calls if call.error is not None]
    browser_errors = ((browser or {}).get("result") or {}).get("errors", [])
    error_count = len(errors) + len(run.crashed) + len(browser_errors)
    rows, worst_p95, untraced = [], 0.0, 0
    for phase in ("burst", "steady"):
        for action in ACTIONS:
            picked = [call for call in ok_calls if call.action == action and call.phase == phase]
            if not picked:
                continue
            rtts = [call.rtt for call in picked if call.rtt is not None]
            # a trace added between fetching and clearing the server's buffer is lost: such a call counts with
            # its client round trip, an upper bound of its server-side time
            download = action.startswith("download")
            server = [] if download else [s if s is not None else call.rtt for s, call in
                                          ((server_ms(run, call), call) for call in picked)
                                          if s is not None or call.rtt is not None]
            waits = [s for s in (server_ms(run, call, "queue_wait_ms") for call in picked) if s is not None]
            pre = [s for s in (server_ms(run, call, "preprocess_ms") for call in picked) if s is not None]
            handler = [s for s in (server_ms(run, call, "fn_call_ms") for call in picked) if s is not None]
            post = [s for s in (server_ms(run, call, "postprocess_ms") for call in picked) if s is not None]
            if not download:
                untraced += sum(server_ms(run, call) is None for call in picked)
            if server:
                worst_p95 = max(worst_p95, c.percentile(server, 0.95))

            def p95(values: List[float]) -> str:
                return c.ms(c.percentile(values, 0.95), 0) if values else "-"
            rows.append([f"{phase}: {action}", len(picked), c.ms(c.median(server), 0) if server else "-",
                         p95(server), p95(pre), p95(handler), p95(post), c.ms(max(server), 0) if server else "-", p95(waits),
                         c.ms(c.median(rtts), 0), p95(rtts)])
    c.print_table("1. per action: server-side time (gradio's own trace: preprocess + handler + postprocess), "
                  "queue wait, and the client's round trip (ms)",
                  ["action", "n", "server p50", "server p95", "preprocess p95", "handler p95", "postprocess p95",
                   "server max",
                   "queue wait p95",
                   "round trip p50", "round trip p95"], rows,
                  note=f"burst = every student's first round released at once ({run.students} students, "
                       f"{run.marks.get('burst end', 0) - run.marks.get('burst start', 0):.1f} s); steady = rounds "
                       f"with {run.think:.0f} s ± 50 % think time between actions for {run.minutes:g} min; "
                       "downloads are plain GETs (no queue, no trace): round trip only; postprocess = gradio turning "
                       "the handler's return values into the page's (a component update costs far more than a value;\n"
                       "events wired with gradio_fixes.listen postprocess their values inside the handler, so that "
                       "part counts as handler); preprocess = the inputs, one worker-thread hop each")

    print_server_cpu(run, ok_calls)
    rss = run.rss
    start_rss = rss[0][2] if rss else 0
    peak = max((value for _, _, value in rss), default=0)
    rows = [[f"{label} @ {at:.0f} s", c.human_bytes(value), f"{(value - start_rss) / 2**20:+.1f} MiB"]
            for at, label, value in rss if label != "sample"]
    rows.append(["highest sample (every 15 s)", c.human_bytes(peak), f"{(peak - start_rss) / 2**20:+.1f} MiB"])
    rows.append(["VmHWM (kernel's peak)", c.human_bytes(run.marks.get("peak")), ""])
    c.print_table("2. the server's memory (VmRSS of the app.py process)", ["when", "RSS", "vs start"], rows)
    end_rss = next((value for _, label, value in rss if label == "end of the run"), None)
    idle_rss = next((value for _, label, value in rss if label.startswith("10 s later")), end_rss)
    drift = rss_drift(run)
    if drift is not None:
        c.print_table(f"2b. RSS drift after warm-up (burst + {run.warmup:g} min of the steady phase)",
                      ["measure", "value"],
                      [["RSS after warm-up", c.human_bytes(drift["warm"])],
                       ["RSS at the end of the run", c.human_bytes(drift["end"])],
                       ["drift, end − after warm-up", f"{drift['drift'] / 2**20:+.1f} MiB"],
                       ["slope of the samples after warm-up (least squares)",
                        f"{drift['slope'] * 60 / 2**20:+.2f} MiB/min over {drift['samples']} samples"],
                       ["session files in all spaces, after warm-up → last sample",
                        f"{drift['sessions'][0]:,} → {drift['sessions'][1]:,}"],
                       ["drift per 1,000 sessions created after warm-up",
                        f"{drift['per_thousand'] / 2**20:+.2f} MiB" if drift["per_thousand"] is not None else "n/a"]],
                      note="the samples are taken every 15 s; the drift is what a longer lesson adds; the caches "
                           "grow with the sessions the class creates, so the per-1,000 figure carries to other paces")

    c.print_table("3. temp files (the server's TMPDIR in the scratch folder, gradio's cache included)",
                  ["when", "files", "bytes"],
                  [["end of the run, server up", temp["running"][0], c.human_bytes(temp["running"][1])],
                   ["after the server stopped (SIGINT, like Ctrl+C)", temp["stopped"][0],
                    c.human_bytes(temp["stopped"][1])],
                   ["store temp files (*.tmp) in the sessions folder", checks["store_temp_files"], ""]],
                  note="exports are kept 15 min (pruned on the next export), gradio's download cache 1 h "
                       "(delete_cache=(600, 3600))")
    for line in temp.get("left", [])[:8]:
        print("  left:", line)

    page_p95 = None
    if browser is not None:
        figures = browser.get("result")
        if figures and figures.get("clicks"):
            clicks = figures["clicks"]
            page_p95 = c.percentile(clicks, 0.95)
            c.print_table(f"4. chromium pages clicking the 8.11 demo during the steady phase "
                          f"({figures['pages']} pages, bench_browser.py --url)",
                          ["measure", "n", "p50 ms", "p95 ms", "max ms", "errors"],
                          [["click → SVG tree + preview", len(clicks), c.ms(c.median(clicks), 0),
                            c.ms(page_p95, 0), c.ms(max(clicks), 0), len(figures.get("errors", []))]])
            for line in browser_errors[:5]:
                print("  ! browser:", line)
        else:
            print("  ! no browser figures", flush=True)

    total = len(run.calls)
    print(f"{total} actions (+ page clicks) in {run.minutes:g} min steady after the burst\n")
    lesson = f" ({run.students} students, {run.minutes:g} min)"   # the budgets are for 50 students, 30 minutes
    budgets = [
        c.Budget("errors" + lesson, float(error_count), 0, ""),
        c.Budget("damaged spaces (a load fails or check() reports)", float(len(checks["damaged"])), 0, ""),
        c.Budget("isolation breaches", float(len(result["breaches"])), 0, ""),
        c.Budget("server-side p95, worst action" + lesson, worst_p95, TARGET_SERVER_P95_S),
        c.Budget(f"server RSS drift after a {run.warmup:g}-min warm-up" + lesson,
                 drift["drift"] / 2**20 if drift else None, TARGET_RSS_DRIFT / 2**20, "MiB"),
        c.Budget("server RSS growth, start → end of the run (a project budget)",
                 (end_rss - start_rss) / 2**20 if end_rss else None, TARGET_RSS_GROWTH / 2**20, "MiB"),
    ]
    if browser is not None:
        budgets.append(c.Budget("page click → rendered p95 (a project budget)", page_p95, TARGET_PAGE_P95_S))
    c.report(budgets, note=f"{untraced} queued action(s) had no server trace (lost between fetching and clearing the "
                           "buffer): counted with their client round trip" if untraced else
                           "issue 40's budgets are for 50 students over 30 minutes; a shorter run is a preview")
    for call in errors[:10]:
        print(f"  ! student {call.student} {call.phase} {call.action}: {call.error}")
    for line in run.crashed[:10] + result["breaches"][:10] + checks["damaged"][:10]:
        print("  !", line)
    ok = not error_count and not result["breaches"] and not checks["damaged"]
    if browser is not None and not page_p95:
        ok = False
    print(f"RESULT students={run.students} cycles={result['cycles']} actions={total} errors={error_count} "
          f"damaged={len(checks['damaged'])} breaches={len(result['breaches'])} spaces={checks['spaces']} "
          f"sessions={checks['sessions']} server_p95_ms={worst_p95 * 1000:.0f} "
          f"rss_start_mib={start_rss / 2**20:.0f} rss_end_mib={(end_rss or 0) / 2**20:.0f} "
          f"rss_idle_mib={(idle_rss or 0) / 2**20:.0f} temp_files_running={temp['running'][0]} "
          f"temp_files_stopped={temp['stopped'][0]}"
          + (f" rss_drift_mib={drift['drift'] / 2**20:.1f}" if drift else "")
          + (f" page_p95_ms={page_p95 * 1000:.0f}" if page_p95 else ""), flush=True)
    return ok


def rss_drift(run: Run) -> Optional[dict]:
    """RSS after warm-up (the first sample at least `warmup` minutes after the burst), at the end, and the
    least-squares slope of the samples in between; None when the run is too short to have such samples."""
    burst_end, steady_end = run.marks.get("burst end"), run.marks.get("steady end")
    if burst_end is None or steady_end is None:
        return None
    after = [(at, value) for at, label, value in run.rss
             if label == "sample" and burst_end + 60 * run.warmup <= at <= steady_end]
    end = next((value for _, label, value in run.rss if label == "end of the run"), None)
    if not after or end is None:
        return None
    points = after + [(steady_end, end)]
    mean_t = sum(t for t, _ in points) / len(points)
    mean_v = sum(v for _, v in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    slope = sum((t - mean_t) * (v - mean_v) for t, v in points) / spread if spread else 0.0
    counts = [count for at, count in run.sessions if after[0][0] <= at]
    sessions = (counts[0], counts[-1]) if counts else (0, 0)
    created = sessions[1] - sessions[0]
    return {"warm": after[0][1], "end": end, "drift": end - after[0][1], "slope": slope, "samples": len(points),
            "sessions": sessions, "per_thousand": (end - after[0][1]) * 1000 / created if created > 0 else None}


# ---------------------------------------------------------------- in-process: the handlers' own cost

def in_process(students: int, rounds: int, threads: int, scratch: Path, trace_memory: bool = False) -> None:
    """The same round, called straight on the logic objects the tabs wire (no gradio, no HTTP, one thread):
    what each handler costs by itself, in spaces that grow round by round, and what the teacher's class
    panel costs with every student's space in it. A burst's server time is this cost times the handlers
    that share the two CPUs at that moment, so the cheapest fix is here."""
    from s11_workbench.classroom import Classroom
    from s11_workbench.demo import run_demo_safely
    from s11_workbench.explorer import Explorer, View
    from s11_workbench.lesson import Lesson, LessonView
    from s11_workbench.spaces import Limits, Spaces

    roomy = Limits(creates_per_minute=100_000, create_burst=100_000, new_spaces_per_minute=100_000,
                   min_free_bytes=0)
    sessions_dir = scratch / "gradio_sessions"
    spaces = Spaces(str(sessions_dir), limits=roomy, teacher_secret="bench-teacher")
    explorer, lesson, classroom = Explorer(spaces), Lesson(spaces), Classroom(spaces)
    times: Dict[str, List[float]] = {}

    def timed(action: str, work, *args):
        started = time.perf_counter()
        result = work(*args)
        times.setdefault(action, []).append(time.perf_counter() - started)
        return result

    def demo(token):
        space = spaces.open(token).writable()
        space.throttle()
        space.require_room(sessions=3, nbytes=64 * 1024)
        run, error = run_demo_safely(space.folder, shown_from=str(sessions_dir))
        if run is None:
            raise SystemExit(f"demo failed: {error}")
        return run

    tokens = [timed("enter_space", spaces.new_token) for _ in range(students)]
    teacher = spaces.new_token()
    own = spaces.open(teacher)
    shelf_root = own.store.create_session("shelf", [{"role": "user", "content": f"m{n}"} for n in range(6)])
    spaces.publish("bench-teacher", own.space_id, shelf_root)
    for token in tokens:
        spaces.open(token).fork_from(spaces.shelf(), shelf_root, at=3, new_messages=[{"role": "user",
                                                                                       "content": "x"}])

    def student_round(index: int, token: str, number: int) -> None:
        run = timed("run_demo", lambda: demo(token))
        timed("explorer_refresh", lambda: explorer.refresh(token, View(), ""))
        page = timed("select (row click)", lambda: explorer.select(token, View(), run.ids["main_id"]))
        page = timed("explorer_fork", lambda: explorer.fork(token, page.view, 3, f"round {number}", ""))
        for turn in ("one", "two"):
            page = timed("explorer_resume", explorer.resume, token, page.view, turn, "user")
        timed("explorer_export", lambda: explorer.export(token, page.view))
        example = EXAMPLES[number % len(EXAMPLES)]
        timed("explorer_import_example", lambda: explorer.import_example(token, View(), example))
        page = timed("lesson_pick", lambda: lesson.pick(token, LessonView(), "rewind"))
        page = timed("lesson_start", lambda: lesson.start(token, page.view))
        page = timed("lesson_fork", lambda: lesson.fork(token, page.view, 3, "another plan"))
        if not page.solved:
            raise SystemExit(f"student {index}, round {number}: level 2 not solved: {page.notice}")

    from concurrent.futures import ThreadPoolExecutor
    if trace_memory:
        tracemalloc.start()
    after_first = None
    for number in range(rounds):
        if threads > 1:   # every student's round at once, as in the burst: the cost under contention
            with ThreadPoolExecutor(max_workers=threads) as pool:
                for future in [pool.submit(student_round, i, t, number) for i, t in enumerate(tokens)]:
                    future.result()
        else:
            for index, token in enumerate(tokens):
                student_round(index, token, number)
        timed("class_refresh", lambda: classroom.table(teacher, "bench-teacher"))
        timed("class_refresh (again)", lambda: classroom.table(teacher, "bench-teacher"))
        timed("class row (one student)", lambda: classroom.student(teacher, "bench-teacher",
                                                                     tokens[0].split(".")[0]))
        timed("class fork map", lambda: classroom.fork_map(teacher, "bench-teacher", shelf_root))
        if trace_memory and number == 0:   # the first round is the warm-up: imports, compiled rules, new spaces
            gc.collect()
            after_first = (tracemalloc.take_snapshot(), count_session_files(sessions_dir))
    rows = [[action, len(values), c.ms(c.median(values), 1), c.ms(c.percentile(values, 0.95), 1),
             c.ms(max(values), 1), c.ms(sum(values), 0)] for action, values in times.items()]
    c.print_table(f"in-process: {students} students × {rounds} rounds, "
                  f"{threads} thread(s) (ms per call)",
                  ["action", "n", "p50", "p95", "max", "total"], rows,
                  note="class_refresh = the teacher's whole class table, measured once after each round "
                       "(the spaces grow by ~10 sessions a round); the burst is round 1"
                       + ("; times are inflated by tracemalloc" if trace_memory else ""))
    if trace_memory and after_first is not None:
        gc.collect()
        print_memory_growth(after_first, (tracemalloc.take_snapshot(), count_session_files(sessions_dir)))
        tracemalloc.stop()


def print_memory_growth(first: tuple, last: tuple, top: int = 12) -> None:
    """What the rounds after the first kept (tracemalloc, Python objects only: no allocator overhead), per line of
    our code that allocated it. A cache that grows with every session created shows here before a 30-minute
    server run shows it as RSS drift."""
    (before, sessions_before), (after, sessions_after) = first, last
    ours = (tracemalloc.Filter(True, str(c.REPO / "code") + "/*"),)
    stats = after.filter_traces(ours).compare_to(before.filter_traces(ours), "lineno")
    growth = sum(stat.size_diff for stat in stats)
    created = sessions_after - sessions_before
    rows = [[f"{Path(stat.traceback[0].filename).relative_to(c.REPO)}:{stat.traceback[0].lineno}",
             f"{stat.size_diff / 1024:+,.1f}", f"{stat.count_diff:+,}"] for stat in stats[:top]]
    c.print_table(f"kept by our code after round 1: {growth / 2**20:+.2f} MiB for {created:,} sessions created "
                  f"({growth / 2**20 / max(created, 1) * 1000:+.2f} MiB per 1,000)",
                  ["allocated at", "KiB", "objects"], rows,
                  note="tracemalloc, Python objects allocated by code/ only; the server's RSS adds the allocator's "
                       "overhead and gradio's page state (the 30-minute run measured 1.64 MiB per 1,000 sessions),\n"
                       "and this mode refreshes the teacher's class table every round, which keeps a second "
                       "summary cache per space (the server run has no teacher)")


def postprocess_costs(pages: int, scratch: Path) -> None:
    """In one process, no HTTP: each event's handler as gradio calls it (State inputs read from the page's
    session state), then gradio's own postprocess_data on its return values, one page at a time. The second
    figure is what the burst multiplies: gradio turns every returned component update into a new component on
    its event loop, so while it does, every other page waits."""
    from gradio import utils as gradio_utils
    from gradio.blocks import Block
    from gradio.state_holder import SessionState

    sys.path.insert(0, str(c.REPO))
    import app as workbench
    demo = workbench.build_app(scratch / "gradio_sessions", teacher_secret="bench-teacher")
    fns = {fn.api_name: fn for fn in demo.fns.values() if fn.api_name}
    figures: Dict[str, list] = {}

    async def call(state, name: str, values: list):
        fn, supplied, args = fns[name], iter(values), []
        for component in fn.inputs:
            args.append((state[component._id] if component._id in state else component.value)
                        if component.stateful else next(supplied))
        started = time.perf_counter()
        result = fn.fn(*args)
        handled = time.perf_counter()
        result = list(result) if isinstance(result, (list, tuple)) else [result]
        updates = sum(isinstance(v, Block) or gradio_utils.is_prop_update(v) for v in result)
        loop_started = time.thread_time()   # this thread's CPU only: the event loop's share, not the worker threads'
        await demo.postprocess_data(fn, result, state)
        figures.setdefault(name, []).append((handled - started, time.perf_counter() - handled, len(fn.outputs),
                                             updates, time.thread_time() - loop_started))

    async def rounds() -> None:
        for _ in range(pages):
            state, token = SessionState(demo), demo.s11_spaces.new_token()
            await call(state, "run_demo", [token])
            await call(state, "explorer_refresh", [token, ""])
            await call(state, "explorer_fork", [token, 3, "x", ""])
            await call(state, "explorer_resume", [token, "t", "user"])
            await call(state, "explorer_export", [token])
            await call(state, "explorer_import_example", [token, EXAMPLES[0]])
            await call(state, "lesson_pick", [token, "rewind"])
            await call(state, "lesson_start", [token, "rewind"])
            await call(state, "lesson_fork", [token, 3, "x", ""])

    asyncio.run(rounds())
    rows = [[name, values[-1][2], values[-1][3], c.ms(c.median([v[0] for v in values]), 1),
             c.ms(c.median([v[1] for v in values]), 1), c.ms(max(v[1] for v in values), 1),
             c.ms(c.median([v[4] for v in values]), 1)]
            for name, values in figures.items()]
    c.print_table(f"handler vs gradio's postprocess, one page at a time ({pages} pages, ms)",
                  ["event", "outputs", "component updates", "handler p50", "postprocess p50", "postprocess max",
                   "event-loop CPU p50"],
                  rows, note="component updates = returned gr.X(...) / gr.update / gr.skip() values; each costs "
                             "gradio a new component on its event loop; event-loop CPU = the CPU time of the thread "
                             "running postprocess (values are postprocessed in worker threads);\n"
                             "events wired with gradio_fixes.listen pre- and postprocess inside the handler: their "
                             "'handler' includes that work and gradio's postprocess only moves files to its cache")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=50, help="simulated students (default 50, at most 200)")
    parser.add_argument("--minutes", type=float, help="steady phase after the burst (default 30; --quick 0.5)")
    parser.add_argument("--think", type=float, default=6.0,
                        help="mean seconds between one student's actions in the steady phase (default 6)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    parser.add_argument("--browser-pages", type=int, default=0,
                        help="chromium pages clicking the demo during the steady phase (bench_browser.py)")
    parser.add_argument("--quick", action="store_true", help="a 30 s steady phase")
    parser.add_argument("--warmup", type=float, default=None,
                        help="minutes of the steady phase before the RSS drift is measured (default: a fifth of "
                             "--minutes, at most 5)")
    parser.add_argument("--in-process", action="store_true",
                        help="no server: time each action's handler logic in one thread (see in_process)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per student with --in-process (default 3)")
    parser.add_argument("--threads", type=int, default=1,
                        help="with --in-process: run the students' rounds in this many threads at once (default 1)")
    parser.add_argument("--trace-memory", action="store_true",
                        help="with --in-process: what the rounds after the first keep, by line of our code")
    parser.add_argument("--postprocess", action="store_true",
                        help="no server: each event's handler and gradio's postprocess of its outputs, in-process")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (its path is printed)")
    parser.add_argument("--server-env", action="append", default=[], metavar="KEY=VALUE",
                        help="extra environment for the server, for experiments (e.g. MALLOC_ARENA_MAX=2)")
    args = parser.parse_args(argv)
    if not 1 <= args.students <= 200:
        parser.error("--students must be 1–200 (each gets its own address 127.0.0.10 …)")
    minutes = args.minutes if args.minutes is not None else (0.5 if args.quick else 30.0)
    scratch = Path(tempfile.mkdtemp(prefix=".load-classroom-", dir=Path(__file__).resolve().parent))
    sessions_dir = scratch / "gradio_sessions"
    sessions_dir.mkdir()
    if args.postprocess:
        try:
            postprocess_costs(args.rounds * 5, scratch)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return 0
    if args.in_process:
        try:
            in_process(args.students, args.rounds, args.threads, scratch, args.trace_memory)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return 0
    c.print_header(f"load_classroom: {args.students} students in private spaces, burst then {minutes:g} min steady",
                   {"sessions": f"{sessions_dir} — {c.filesystem_of(sessions_dir)}",
                    "limits": f"{args.timeout:.0f} s per request; think time {args.think:g} s ± 50 %",
                    "browsers": f"{args.browser_pages} chromium page(s)" if args.browser_pages else "none",
                    "server  ": " ".join(args.server_env) or "default environment"})
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # killed: still stop the server, remove scratch
    # started from a script or in the background, SIGINT may be ignored here, and an ignored signal stays ignored
    # in the server child: its SIGINT (Ctrl+C, which makes it clean up) would then do nothing and the temp files
    # would be reported as leftovers. A handler (unlike "ignore") is reset to the default in the child at exec.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        ok = measure(args, minutes, scratch, sessions_dir)
    finally:
        if args.keep:
            print(f"scratch kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return 0 if ok else 1


def measure(args: argparse.Namespace, minutes: float, scratch: Path, sessions_dir: Path) -> bool:
    server_tmp, gradio_tmp = scratch / "server-tmp", scratch / "gradio-cache"
    server_tmp.mkdir()
    warmup = args.warmup if args.warmup is not None else min(5.0, minutes / 5)
    run = Run(args.students, minutes, args.think, args.timeout, warmup)
    extra = dict(item.split("=", 1) for item in args.server_env if "=" in item)
    # no GRADIO_TEMP_DIR: app.py then keeps gradio's cache in a private folder of its own under TMPDIR (as in class)
    # the chromium pages all come from 127.0.0.1: per-address budgets (creates, queue) are one student's each,
    # so the server is told how many students share that address, as a classroom behind one NAT would be
    share = ["--students-per-address", str(args.browser_pages)] if args.browser_pages > 1 else []
    app = c.AppProcess(sessions_dir, extra_args=share,
                       env={**extra, "GRADIO_PROFILING": "1", "TMPDIR": str(server_tmp)})
    browser = {"pages": args.browser_pages, "json": scratch / "browser.json"} if args.browser_pages else None
    try:
        startup = app.start(timeout=120)
        print(f"app.py answered HTTP 200 on {app.url} after {startup:.2f} s (pid {app.pid})\n", flush=True)
        result = asyncio.run(drive(run, app.url, app.pid, sessions_dir, browser))
        temp = {"running": tuple(map(sum, zip(c.files_under(server_tmp), c.files_under(gradio_tmp))))}
    finally:
        app.stop()
        if browser is not None and browser.get("process") is not None and browser["process"].poll() is None:
            browser["process"].kill()
    log = app.log_tail(200_000).splitlines()
    problems = [line for line in log if "Traceback" in line or "Error" in line or "Exception" in line]
    if problems:
        print(f"server log: {len(problems)} line(s) naming an error or traceback; the last ones:")
        for line in problems[-8:]:
            print("  |", line[:200])
        starts = [index for index, line in enumerate(log) if line.startswith("Traceback")]
        for start in starts[-2:]:   # the whole of the last two tracebacks: where it happened, not just what
            print("server log, a traceback in full:")
            for line in log[start:start + 40]:
                print("  |", line[:200])
                if line and not line[0].isspace() and not line.startswith("Traceback"):
                    break
    temp["stopped"] = tuple(map(sum, zip(c.files_under(server_tmp), c.files_under(gradio_tmp))))
    temp["left"] = leftovers(server_tmp, gradio_tmp)
    return report(run, result, audit(sessions_dir), temp, browser)


if __name__ == "__main__":
    sys.exit(main())
