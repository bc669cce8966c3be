"""_common.py — what every benchmark shares: paths, machine notes, timing, tables, the app as a subprocess.

    bench_*.py ──> setup_paths()        code/ and tests/ on sys.path (code/ is not a package)
               ├─> machine_report()     nproc, CPU, Python, filesystem of /tmp and of the repo
               ├─> time_runs(fn, n)     wall-clock seconds of n runs -> median / p95
               ├─> print_table()        aligned columns, CJK counted as two cells
               ├─> Budget / report()    one absolute budget per line: PASS or MISS and the figure
               ├─> AppProcess           `python app.py --port <free>` until it answers HTTP 200
               └─> proc_status(pid)     VmRSS / VmHWM of a process, from /proc/<pid>/status

Key insight: a benchmark number means nothing without the machine and the filesystem under it
(fsync on ext4 vs tmpfs differs by orders of magnitude), so every script prints them first; and a figure
only answers a question when it is held against an absolute budget a user feels, so every script ends with
one `PASS` or `MISS` line per budget (never a ratio to the chapter's printed store).
"""

from __future__ import annotations

import math
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import time
import unicodedata
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

REPO = Path(__file__).resolve().parent.parent
CODE_DIR = REPO / "code"
TESTS_DIR = REPO / "tests"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def setup_paths() -> None:
    """code/ first (the lesson modules), then tests/, then the repo (app.py)."""
    for folder in (REPO, TESTS_DIR, CODE_DIR):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))


# ---------------------------------------------------------------- machine

def rule_search() -> Callable[[list], dict]:
    """The redaction rule search over a batch of strings, as s11_redact runs it, through public names only:
    s11_fast.redact.accelerate(s11_redact) (what s11_redact swaps in at its seam) unless S11_PLAIN=1, else
    s11_redact.find() on each string. Built once (the accelerator compiles its RE2 set), then timed."""
    import s11_redact
    if not os.environ.get("S11_PLAIN"):
        try:
            from s11_fast import redact as fast
        except ImportError:
            pass
        else:
            return fast.accelerate(s11_redact)
    return lambda texts: {index: found for index, text in enumerate(texts) if (found := s11_redact.find(text))}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def filesystem_of(path: os.PathLike | str) -> str:
    """'/work/main' -> 'ext4 on / (/dev/vda)': the longest mount point in /proc/mounts that contains path."""
    target = os.path.realpath(path)
    best = ("", "unknown", "unknown")
    try:
        with open("/proc/mounts", encoding="utf-8") as handle:
            for line in handle:
                device, mount_point, fs_type = line.split()[:3]
                inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
                if inside and len(mount_point) >= len(best[0]):
                    best = (mount_point, fs_type, device)
    except OSError:
        return "unknown"
    return f"{best[1]} on {best[0]} ({best[2]})"


def machine_report(extra: Optional[dict] = None) -> str:
    memory = ""
    try:
        with open("/proc/meminfo", encoding="utf-8") as handle:
            kib = int(handle.readline().split()[1])
        memory = f", {kib / 1024 / 1024:.1f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    lines = [
        f"machine : {os.cpu_count()} CPUs (nproc), {cpu_model()}{memory}",
        f"python  : {platform.python_version()} ({sys.executable})",
        f"/tmp    : {filesystem_of('/tmp')}",
        f"repo    : {filesystem_of(REPO)}  [{REPO}]",
    ]
    try:
        with open("/proc/loadavg", encoding="utf-8") as handle:
            lines.append(f"load    : {' '.join(handle.read().split()[:3])} (1/5/15-min load average at start; "
                         f"other processes share these CPUs)")
    except OSError:
        pass
    for key, value in (extra or {}).items():
        lines.append(f"{key:<8}: {value}")
    return "\n".join(lines)


def print_header(title: str, extra: Optional[dict] = None) -> None:
    print(f"# {title}")
    print(time.strftime("# run at %Y-%m-%d %H:%M:%S"))
    print(machine_report(extra))
    print(flush=True)


# ---------------------------------------------------------------- timing

def time_runs(fn: Callable[[], object], runs: int, setup: Optional[Callable[[], object]] = None,
              warmup: int = 0) -> List[float]:
    """Seconds taken by each of `runs` calls of fn (setup, untimed, before each call; `warmup` untimed calls first)."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        if setup is not None:
            setup()
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples)


def percentile(samples: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile: [1..100], 0.95 -> 95."""
    ordered = sorted(samples)
    rank = min(len(ordered), max(1, math.ceil(fraction * len(ordered))))
    return ordered[rank - 1]


def ms(seconds: Optional[float], digits: int = 2) -> str:
    return "n/a" if seconds is None else f"{seconds * 1000:.{digits}f}"


def ratio(ours: Optional[float], theirs: Optional[float]) -> str:
    if ours is None or not theirs:
        return "n/a"
    return f"{ours / theirs:.2f}x"


def human_bytes(count: Optional[int]) -> str:
    if count is None:
        return "n/a"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return str(count)


# ---------------------------------------------------------------- tables

def display_width(text: str) -> int:
    """Terminal cells: CJK and emoji take two."""
    return sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in text)


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[object]], note: str = "") -> None:
    """Numbers right-aligned, the first column left-aligned, columns separated by two spaces."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(display_width(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        parts = []
        for i, cell in enumerate(row):
            pad = " " * (widths[i] - display_width(cell))
            parts.append(cell + pad if i == 0 else pad + cell)
        return "  ".join(parts).rstrip()

    print(f"## {title}")
    print(line(cells[0]))
    print("  ".join("-" * w for w in widths))
    for row in cells[1:]:
        print(line(row))
    if note:
        print(note)
    print(flush=True)


# ---------------------------------------------------------------- budgets

@dataclass
class Budget:
    """One absolute budget and what was measured against it.

    Budget("8.11 click handler, median", 0.0061, 0.030, "s")  ->  PASS  8.11 click handler, median  6.1 ms ≤ 30 ms
    `figure` None means "not measured in this run" and prints SKIP.
    """
    name: str
    figure: Optional[float]
    limit: float
    unit: str = "s"   # "s" prints milliseconds, "x" a multiple, "MiB" / "KiB" / "B" sizes, "" a plain count

    @property
    def verdict(self) -> str:
        if self.figure is None:
            return "SKIP"
        return "PASS" if self.figure <= self.limit else "MISS"

    def shown(self, value: float) -> str:
        if self.unit == "s":
            return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"
        if self.unit == "x":
            return f"{value:.2f}×"
        if self.unit in ("MiB", "KiB", "B"):
            return f"{value:.1f} {self.unit}"
        return f"{value:g}"

    def line(self) -> str:
        figure = "not measured" if self.figure is None else self.shown(self.figure)
        return f"{self.verdict}  {self.name}: {figure} (budget ≤ {self.shown(self.limit)})"


def report(budgets: Sequence[Budget], note: str = "") -> bool:
    """Print the budgets block every script ends with; True when none is missed."""
    print("## budgets (absolute; PASS / MISS)")
    for budget in budgets:
        print(budget.line())
    if note:
        print(note)
    print(flush=True)
    return all(budget.verdict != "MISS" for budget in budgets)


# ---------------------------------------------------------------- the app as a subprocess

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def http_status(url: str, timeout: float = 2.0) -> Optional[int]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, OSError):
        return None


def proc_status(pid: int) -> Dict[str, int]:
    """{'VmRSS': bytes, 'VmHWM': bytes, ...} of a live process (the kB lines of /proc/<pid>/status); {} if gone."""
    values: Dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
            for line in handle:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
                    values[key] = int(parts[0]) * 1024
    except OSError:
        return {}
    return values


def files_under(folder: os.PathLike | str) -> tuple[int, int]:
    """(number of files, total bytes) below folder; (0, 0) when it does not exist."""
    count = total = 0
    for root, _dirs, names in os.walk(folder):
        for name in names:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
                count += 1
            except OSError:
                pass
    return count, total


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the benchmark that started it dies (Linux prctl), so a benchmark
    killed by a timeout never leaves a server behind."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


class AppProcess:
    """`python app.py --port <free> --sessions-dir <dir>`; start() returns seconds until GET / answers 200.

    env: extra environment for the server (e.g. GRADIO_PROFILING=1, TMPDIR). stop() sends SIGINT first —
    what Ctrl+C does, so the app's own clean-up (atexit) runs — and SIGTERM / SIGKILL only if it hangs."""

    def __init__(self, sessions_dir: os.PathLike | str, port: Optional[int] = None,
                 extra_args: Sequence[str] = (), env: Optional[Dict[str, str]] = None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.command = [sys.executable, str(REPO / "app.py"), "--host", "127.0.0.1",
                        "--port", str(self.port), "--sessions-dir", os.fspath(sessions_dir), *extra_args]
        self.process: Optional[subprocess.Popen] = None
        self.extra_env = dict(env or {})
        self.log_path = Path(os.fspath(sessions_dir)).parent / f"app-{self.port}.log"

    @property
    def pid(self) -> Optional[int]:
        return self.process.pid if self.process is not None else None

    def start(self, timeout: float = 60.0) -> float:
        env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1", **self.extra_env}
        started = time.perf_counter()
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(self.command, cwd=REPO, env=env, stdout=self._log,
                                        stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        deadline = started + timeout
        while time.perf_counter() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"app.py exited with {self.process.returncode}:\n{self.log_tail()}")
            if http_status(self.url + "/", timeout=1.0) == 200:
                return time.perf_counter() - started
            time.sleep(0.02)
        self.stop()
        raise TimeoutError(f"app.py did not answer on {self.url} within {timeout:.0f} s:\n{self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            for send in (lambda: self.process.send_signal(signal.SIGINT), self.process.terminate,
                         self.process.kill):
                send()
                try:
                    self.process.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if getattr(self, "_log", None) is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> "AppProcess":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
