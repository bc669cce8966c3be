"""bench_store.py — our SessionStore vs the chapter's printed store, every measurement in a fresh interpreter.

    python benchmarks/bench_store.py              # full run (a few minutes on 2 busy cores)
    python benchmarks/bench_store.py --quick      # tiny sizes, one process per case (a smoke test)
    python benchmarks/bench_store.py --only list,load --runs 5
    workloads: demo, save, load, list, fork (a 300-deep chain), export, forks (1/10/100 forks of 1k/10k
               messages), append (20 appends to a 10k-message session)

    parent: builds the folders once ──> for each case × run × store (interleaved, the order rotating):
                                           python bench_store.py --worker '<spec>'
                                           └─ imports the store (untimed), then times the operation:
                                              "cold" = the first call in that process (new SessionStore, empty
                                              caches, lazy imports such as the exporter and the redaction rules),
                                              "warm" = the same call again in the same process
    stores:  chapter       code/s11_book.py: json.dump in place, no fsync
             today         SessionStore(durable=False, chunk_threshold=inf): every node a self-contained
                           version-3 file, i.e. the layout before chunks (kept as a switch for this comparison)
             ours nofsync  SessionStore(durable=False): temp file + os.replace under a lock; sessions of
                           ≥ 64 KiB of messages keep their history in shared chunks  ← like for like
             ours fsync    SessionStore() — the default: + fsync of the files and of the folders
    bytes written = the process's `wchar` in /proc/self/io around the measured calls (every write syscall:
    session files, chunks, temp files), so the book's in-place writes and our atomic ones count alike.

    floor (table 0b) = the demo's file-system calls alone, replayed in the order each store makes them with no
    Python work in between: what each design costs the file system, and what is left is the code's own.

Key insight: the fair question "is our code slower than the book's?" is ours nofsync against the chapter;
ours fsync adds what durability costs, which the chapter never pays. Reads cannot differ by fsync, so the
read tables compare two stores. What a fresh process cannot drop is the OS page cache (that needs root):
"cold" here means a new interpreter over files the kernel has already cached.

Folders live under benchmarks/ (the repository's filesystem, so fsync is real) and are removed at the end.
"""

from __future__ import annotations

import argparse
import cProfile
import fcntl
import io
import json
import math
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

c.setup_paths()
import s11_book as chapter_reference  # noqa: E402
import s11_session  # noqa: E402

TARGET = 1.2   # every workload's target unless TARGETS says otherwise
WARM_REPEATS = 9   # warm figures: the median of this many calls in the same process
TARGETS = {"demo": 1.5, "list_sessions (cold)": 1.0, "export deep small node (warm)": 2.5}
CHAPTER, TODAY, OURS_FAST, OURS_DURABLE = "chapter", "today", "ours nofsync", "ours fsync"
STORES: Dict[str, Callable[[str], object]] = {
    CHAPTER: lambda folder: chapter_reference.SessionStore(folder),
    TODAY: lambda folder: s11_session.SessionStore(folder, durable=False, chunk_threshold=math.inf),
    OURS_FAST: lambda folder: s11_session.SessionStore(folder, durable=False),
    OURS_DURABLE: lambda folder: s11_session.SessionStore(folder, durable=True),
}
READERS = (CHAPTER, TODAY, OURS_FAST)   # reads: fsync cannot matter
MODULES = {CHAPTER: chapter_reference}   # whose demo_tree_branching a store runs (ours: s11_session)

# one turn of a coding-agent conversation: Chinese prose, English identifiers, a little code (~300 bytes)
TURNS = [
    ("user", "服务连续运行 3 天后内存从 200MB 涨到 3GB，请帮我定位 event_listener 注册表的问题（第 {i} 轮）。"),
    ("assistant", "已检查 cache_store.py 第 {i} 行：`_listeners.append(cb)` 从不移除回调，"
                  "建议改用 weakref.WeakSet 并在 close() 里 clear()。下一步运行 pytest -k leak 验证。"),
    ("tool", "$ pytest -k leak -q\n....F.\nFAILED tests/test_leak.py::test_listener_{i} - "
             "AssertionError: 4096 listeners still alive\n1 failed, 5 passed in 0.{i}s"),
]


def message(i: int, pad: int = 0) -> dict:
    role, text = TURNS[i % len(TURNS)]
    content = text.format(i=i)
    if pad:  # a large tool output: log lines until the message is about `pad` bytes
        line = f"[{i:06d}] GET /api/login 200 12ms user=alice session=5d38f60f4c00 缓存命中率 93%\n"
        content += "\n" + line * max(1, pad // len(line.encode("utf-8")))
    return {"role": role, "content": content}


def messages(count: int, pad: int = 0) -> List[dict]:
    return [message(i, pad) for i in range(count)]


def timed(fn: Callable, *args) -> tuple:
    started = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - started, value


def written() -> int:
    """Bytes this process has passed to write() so far (/proc/self/io wchar; 0 where there is no /proc)."""
    try:
        with open("/proc/self/io", encoding="ascii") as handle:
            return next(int(line.split()[1]) for line in handle if line.startswith("wchar:"))
    except (OSError, StopIteration):
        return 0


def measured(fn: Callable, *args) -> tuple:
    """(seconds, bytes written, value) of one call."""
    before = written()
    seconds, value = timed(fn, *args)
    return seconds, written() - before, value


def folder_size(folder: str) -> int:
    return c.files_under(folder)[1]


# ---------------------------------------------------------------- worker: one measurement, in its own process
# Each returns a dict of seconds (or bytes); the parent prints it.

def w_save(spec: dict) -> dict:
    """A new session saved after every message (count saves); the first save of the process included."""
    store = STORES[spec["store"]](spec["folder"])
    node = store.load(store.create_session("保存每一条消息", [{"role": "system", "content": "你是编程助手。"}]))
    per_save = []
    for i in range(spec["count"]):
        node.messages.append(message(i))
        per_save.append(timed(store.save, node)[0])
    return {"first": per_save[0], "last": c.median(per_save[-10:]), "total": sum(per_save),
            "bytes": os.path.getsize(os.path.join(spec["folder"], f"{node.session_id}.json"))}


def w_tiny(spec: dict) -> dict:
    """The fixed cost of one save: a 1-message session saved count times (median per save)."""
    store = STORES[spec["store"]](spec["folder"])
    node = store.load(store.create_session("小会话", [{"role": "user", "content": "你好"}]))
    samples = [timed(store.save, node)[0] for _ in range(spec["count"])]
    return {"first": samples[0], "save": c.median(samples[1:] or samples)}


def w_load(spec: dict) -> dict:
    cold, node = timed(lambda: STORES[spec["store"]](spec["folder"]).load(spec["session_id"]))
    assert node is not None and len(node.messages) == spec["count"], spec
    store = STORES[spec["store"]](spec["folder"])
    return {"cold": cold, "warm": c.median([timed(store.load, spec["session_id"])[0] for _ in range(3)])}


def w_list(spec: dict) -> dict:
    started = time.perf_counter()
    store = STORES[spec["store"]](spec["folder"])
    first = store.list_sessions()
    cold = time.perf_counter() - started
    warm, second = timed(store.list_sessions)
    assert len(first) == len(second) == spec["count"], (spec, len(first))
    return {"cold": cold, "warm": warm}


def w_fork(spec: dict) -> dict:
    """Root of 10 messages, then `depth` forks, each of the previous node plus 2 new messages."""
    store = STORES[spec["store"]](spec["folder"])
    current = store.create_session("分叉链", messages(10))
    result, total = {}, 0.0
    for d in range(1, spec["depth"] + 1):
        elapsed, child = timed(store.fork, current, [message(1000 + 2 * d), message(1001 + 2 * d)])
        total += elapsed
        if d in (1, 10, 100, 300):
            result[f"fork@{d}"] = elapsed
        current = child.session_id
    result["total"] = total
    if spec["store"] != CHAPTER:   # the chapter has no lineage() / render_tree()
        reader = STORES[spec["store"]](spec["folder"])
        result["lineage_cold"], chain = timed(reader.lineage, current)
        assert len(chain) == spec["depth"] + 1
        result["lineage_warm"] = timed(reader.lineage, current)[0]
        reader = STORES[spec["store"]](spec["folder"])
        result["tree_cold"] = timed(reader.render_tree)[0]
        result["tree_warm"] = timed(reader.render_tree)[0]
    return result


def w_export(spec: dict) -> dict:
    """First export in the process (imports the exporter, compiles the rules) and a warm repeat."""
    store = STORES[spec["store"]](spec["folder"])
    sid = spec["session_id"]
    if spec["store"] == CHAPTER:
        cold, text = timed(store.export_markdown, sid)
        return {"md_cold": cold, "md": c.median([timed(store.export_markdown, sid)[0] for _ in range(WARM_REPEATS)])}
    cold, text = timed(lambda: store.export_markdown(sid, redact=False))
    result = {"md_cold": cold, "md": c.median([timed(lambda: store.export_markdown(sid, redact=False))[0]
                                              for _ in range(WARM_REPEATS)])}
    if spec.get("raw_only"):   # the profile of the like-for-like case
        return result
    result["md_redact_cold"] = timed(lambda: store.export_markdown(sid))[0]
    result["md_redact"] = c.median([timed(lambda: store.export_markdown(sid))[0] for _ in range(3)])
    result["html_cold"] = timed(lambda: store.export_html(sid))[0]
    result["html"] = c.median([timed(lambda: store.export_html(sid))[0] for _ in range(3)])
    return result


def w_demo(spec: dict) -> dict:
    """The chapter's demo (main → two forks → resume → export) in `count` fresh folders; the first is cold."""
    module = MODULES.get(spec["store"], s11_session)
    samples = []
    for i in range(spec["count"]):
        store = STORES[spec["store"]](os.path.join(spec["folder"], f"demo-{i}"))
        samples.append(timed(module.demo_tree_branching, store)[0])
    return {"cold": samples[0], "warm": c.median(samples[1:] or samples)}


# The demo's file-system calls alone, in the order each store makes them (counted with strace -f on one demo:
# the chapter 10 openat, 20 newfstatat, 20 lseek, 10 ioctl, 10 read, 5 write, 10 close; ours 17 openat,
# 25 newfstatat, 10 flock, 7 read, 5 write, 5 rename, 17 close). Replaying them with no Python work in between
# gives the floor each store's design puts under the demo on this file system: every save of ours creates a new
# file and renames it over the old one (atomic), where the chapter truncates the old file in place.
DEMO_CALLS = [("save", "main"), ("load", "main"), ("save", "main"), ("load", "main"), ("save", "a"), ("load", "main"),
              ("save", "b"), ("load", "b"), ("save", "b"), ("load", "b")]   # create, save, fork A/B, resume, export
FLOOR_BYTES = b"x" * 1200   # about the size of the demo's files


def _chapter_calls(folder: str) -> None:
    for op, name in DEMO_CALLS:   # open(path, "w") + json.dump / open(path) + read(), as CPython's io does them
        path = os.path.join(folder, name + ".json")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC if op == "save" else os.O_RDONLY
        fd = os.open(path, flags | os.O_CLOEXEC, 0o666)
        for call in (os.fstat, os.fstat, os.isatty):   # io.open: two fstat, one ioctl(TCGETS), two lseek
            call(fd)
        for _ in range(2):
            os.lseek(fd, 0, os.SEEK_CUR)
        if op == "save":
            os.write(fd, FLOOR_BYTES)
        else:
            for _ in range(2):   # read() until a short read
                os.read(fd, 1 << 16)
        os.close(fd)


def _read_regular(path: str) -> bool:
    try:
        os.lstat(path)
    except FileNotFoundError:
        return False
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    os.fstat(fd)
    os.read(fd, 1 << 16)
    os.close(fd)
    return True


def _our_calls(folder: str) -> None:
    os.stat(folder)   # the directory lock's first use finds the folder's (device, inode)
    for number, (op, name) in enumerate(DEMO_CALLS):
        path = os.path.join(folder, name + ".json")
        if op == "load":
            _read_regular(path)
            continue
        temp = os.path.join(folder, f".{name}.json.{number:012x}.tmp")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, FLOOR_BYTES)
        lock = os.open(os.path.join(folder, ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        fcntl.flock(lock, fcntl.LOCK_EX)
        _read_regular(path)   # the revision check reads the file it replaces
        os.fstat(fd)
        os.replace(temp, path)
        os.close(fd)
        os.close(lock)
    os.stat(folder)   # the export's branch path: the folder's time, then the parent's file
    os.lstat(os.path.join(folder, "main.json"))


FLOOR_CALLS = {CHAPTER: _chapter_calls}   # every other store: ours


def w_demo_floor(spec: dict) -> dict:
    """The demo's file-system calls (see DEMO_CALLS) in `count` fresh folders; median after the first."""
    calls = FLOOR_CALLS.get(spec["store"], _our_calls)
    samples = []
    for i in range(spec["count"]):
        folder = os.path.join(spec["folder"], f"floor-{i}")
        os.mkdir(folder)
        samples.append(timed(calls, folder)[0])
    return {"warm": c.median(samples[1:] or samples)}


def w_forks(spec: dict) -> dict:
    """A root of `count` messages (untimed), then `forks` forks of it, each adding one message."""
    store = STORES[spec["store"]](spec["folder"])
    root = store.create_session("主干", messages(spec["count"]))
    before = folder_size(spec["folder"])
    seconds, nbytes, _ = measured(lambda: [store.fork(root, [message(100_000 + i)]) for i in range(spec["forks"])])
    return {"seconds": seconds, "bytes": nbytes, "growth": folder_size(spec["folder"]) - before}


def w_append(spec: dict) -> dict:
    """A session of `count` messages (untimed), loaded, then `appends` times: append one message + save()."""
    store = STORES[spec["store"]](spec["folder"])
    node = store.load(store.create_session("续写", messages(spec["count"])))
    per_save, total_bytes = [], 0
    for i in range(spec["appends"]):
        node.messages.append(message(200_000 + i))
        seconds, nbytes, _ = measured(store.save, node)
        per_save.append(seconds)
        total_bytes += nbytes
    return {"total": sum(per_save), "save": c.median(per_save), "bytes": total_bytes}


WORKERS = {"save": w_save, "tiny": w_tiny, "load": w_load, "list": w_list, "fork": w_fork, "export": w_export,
           "demo": w_demo, "demo_floor": w_demo_floor, "forks": w_forks, "append": w_append}


def worker(spec: dict) -> None:
    fn = WORKERS[spec["kind"]]
    if spec.get("profile"):
        profiler = cProfile.Profile()
        profiler.enable()
        fn(spec)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).strip_dirs().sort_stats("tottime").print_stats(15)
        text = out.getvalue()
        print(text[text.find("   ncalls"):].rstrip() if "   ncalls" in text else text)
        return
    print(json.dumps(fn(spec)))


# ---------------------------------------------------------------- parent

class Bench:
    def __init__(self, root: Path, runs: int):
        self.root, self.runs = root, runs
        self.processes = 0

    def folder(self, prefix: str = "case-") -> str:
        return tempfile.mkdtemp(prefix=prefix, dir=self.root)

    def spawn(self, spec: dict, profile: bool = False) -> dict | str:
        self.processes += 1
        done = subprocess.run([sys.executable, __file__, "--worker", json.dumps({**spec, "profile": profile})],
                              cwd=c.REPO, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"worker {spec} failed:\n{done.stderr[-3000:]}")
        return done.stdout if profile else json.loads(done.stdout.strip().splitlines()[-1])

    def runs_of(self, spec: dict, fresh_folder: bool = False) -> dict:
        """Median of each figure over `runs` fresh processes (a new empty folder each, for write workloads)."""
        return self.compare({spec["store"]: spec}, fresh_folder)[spec["store"]]

    def compare(self, specs: Dict[str, dict], fresh_folder: bool = False) -> Dict[str, dict]:
        """The stores' runs interleaved (run 1 of every store, then run 2, …, the order rotating), so a machine
        whose load drifts during the benchmark shifts every store alike; the median of each figure per store."""
        samples: Dict[str, List[dict]] = {name: [] for name in specs}
        names = list(specs)
        for run in range(self.runs):
            for name in names[run % len(names):] + names[:run % len(names)]:
                this = dict(specs[name], folder=self.folder()) if fresh_folder else specs[name]
                samples[name].append(self.spawn(this))
                if fresh_folder:
                    shutil.rmtree(this["folder"], ignore_errors=True)
        return {name: {key: c.median([s[key] for s in found]) for key in found[0]} for name, found in samples.items()}


def writer_of(store_name: str) -> str:
    """Fixtures are written by the store under test, without fsync (the layout is what matters)."""
    return OURS_FAST if store_name == OURS_DURABLE else store_name


def fixture(bench: Bench, store_name: str, count: int, pad: int = 0) -> tuple:
    """(folder, session_id): one session of `count` messages written by that store (no fsync for ours)."""
    folder = bench.folder("fixture-")
    return folder, STORES[writer_of(store_name)](folder).create_session("读档", messages(count, pad))


def deep_fixture(bench: Bench, store_name: str, depth: int) -> tuple:
    """(folder, leaf id): a chain of `depth` forks from a 4-message root, each keeping its parent's first 2
    messages and adding 2 (every node has 4). The chapter cannot fork at a position: the same nodes are saved."""
    folder = bench.folder("fixture-")
    store = STORES[writer_of(store_name)](folder)
    current = store.create_session("根", messages(4))
    for d in range(depth):
        added = [message(1000 + 2 * d), message(1001 + 2 * d)]
        if store_name == CHAPTER:
            parent = store.load(current)
            node = chapter_reference.SessionNode(title=f"{parent.title} · 分支", parent_id=current,
                                                 messages=parent.messages[:2] + added)
            store.save(node)
            current = node.session_id
        else:
            current = store.fork(current, added, at=2).session_id
    return folder, current


def many(bench: Bench, store_name: str, count: int, size: int = 10) -> str:
    folder = bench.folder("fixture-")
    writer = STORES[writer_of(store_name)](folder)
    for i in range(count):
        writer.create_session(f"会话 {i}", messages(size))
    return folder


def versus(by_store: Dict[str, dict], metric: str, names, digits: int = 2) -> list:
    """[chapter ms, then ms and ratio to the chapter for each other store]."""
    base = by_store[CHAPTER].get(metric)
    cells = [c.ms(base, digits)]
    for name in names:
        if name != CHAPTER:
            cells += [c.ms(by_store[name].get(metric), digits), c.ratio(by_store[name].get(metric), base)]
    return cells


def versus_headers(names, prefix: str = "") -> list:
    cells = [f"{prefix}{CHAPTER} ms"]
    for name in names:
        if name != CHAPTER:
            cells += [f"{prefix}{name} ms", "ratio"]
    return cells


WRITERS = tuple(STORES)
WORKLOADS = ("demo", "save", "load", "list", "fork", "export", "forks", "append")


def run_all(bench: Bench, sizes: dict, only) -> List[tuple]:
    """Print every table; return (workload, size, by_store, metric, spec to profile) for the summary."""
    worst: List[tuple] = []

    if "demo" in only:
        by_store = bench.compare({n: {"kind": "demo", "store": n, "count": sizes["demo"]} for n in WRITERS}, True)
        c.print_table(f"0. the chapter's demo_tree_branching (create, save, 2 forks, resume, export), {sizes['demo']} "
                      "times in fresh folders per process", ["run"] + versus_headers(WRITERS),
                      [["first in the process (cold)", *versus(by_store, "cold", WRITERS, 3)],
                       ["median of the rest (warm)", *versus(by_store, "warm", WRITERS, 3)]],
                      note="ours exports with redaction (its default); every session of the demo is small: a "
                           "version-3 file in both of our layouts")
        floor = bench.compare({n: {"kind": "demo_floor", "store": n, "count": sizes["demo"]}
                               for n in (CHAPTER, OURS_FAST)}, True)
        c.print_table("0b. the demo's file-system calls alone (same calls, same order, no Python work), median, "
                      "fresh folders", ["", *versus_headers((CHAPTER, OURS_FAST))],
                      [["file-system floor", *versus(floor, "warm", (CHAPTER, OURS_FAST), 3)],
                       ["the rest (demo − floor)", *versus({n: {"warm": by_store[n]["warm"] - floor[n]["warm"]}
                                                            for n in floor}, "warm", (CHAPTER, OURS_FAST), 3)]],
                      note="ours creates a new file for every save and renames it over the old one (atomic); the "
                           "chapter truncates and rewrites in place. Creating a file costs little on tmpfs and "
                           "much more on ext4, so the demo's ratio there leans toward the floor's")
        worst.append(("demo", "warm", by_store, "warm", {"kind": "demo", "count": sizes["demo"]}))

    if "save" in only:
        rows, last = [], None
        for count in sizes["save"]:
            by_store = bench.compare({n: {"kind": "save", "store": n, "count": count} for n in WRITERS}, True)
            rows.append([f"{count} msgs", *versus(by_store, "last", WRITERS, 3), *versus(by_store, "total", WRITERS, 0),
                         c.human_bytes(by_store[CHAPTER]["bytes"]), c.human_bytes(by_store[OURS_FAST]["bytes"])])
            last = (count, by_store)
        c.print_table("1. save after every message: per save at the end (median of the last 10) | all saves",
                      ["size", *versus_headers(WRITERS, "last "), *versus_headers(WRITERS, "total "),
                       "chapter file", "our session file"], rows,
                      note=f"median of {bench.runs} fresh process(es) each; 'total' includes the process's first save; "
                           "ours switches to chunks at 64 KiB of messages (~300 of these)")
        count, by_store = last
        worst.append(("save after every message (total)", count, by_store, "total", {"kind": "save", "count": count}))
        tiny = bench.compare({n: {"kind": "tiny", "store": n, "count": sizes["tiny"]} for n in WRITERS}, True)
        c.print_table(f"1b. the fixed cost of one save: a 1-message session saved {sizes['tiny']} times",
                      ["save"] + versus_headers(WRITERS), [["first save of the process", *versus(tiny, "first", WRITERS, 3)],
                                                           ["median of the rest", *versus(tiny, "save", WRITERS, 3)]],
                      note="ours = validate + temp file + os.replace (+ fsync of file and folder) under a lock; "
                           "the chapter = open('w') + json.dump")

    def read_table(title: str, cases: List[tuple], note: str) -> Dict[object, dict]:
        rows, table = [], {}
        for label, specs in cases:
            by_store = bench.compare({n: specs[n] for n in READERS})
            table[label] = by_store
            rows.append([label, *versus(by_store, "cold", READERS), *versus(by_store, "warm", READERS)])
        c.print_table(title, ["size", *versus_headers(READERS, "cold "), *versus_headers(READERS, "warm ")], rows,
                      note=note)
        return table

    if "load" in only:
        cases = []
        for count, pad in [(n, 0) for n in sizes["load"]] + ([sizes["load_big"]] if sizes["load_big"][0] else []):
            specs = {}
            for n in READERS:
                folder, sid = fixture(bench, n, count, pad)
                specs[n] = {"kind": "load", "store": n, "folder": folder, "session_id": sid, "count": count}
            size = folder_size(specs[CHAPTER]["folder"])
            cases.append((f"{count} msgs ({c.human_bytes(size)})", specs))
        table = read_table("2. load one session: new SessionStore + load() in a fresh process | again",
                           cases, note=f"median of {bench.runs} fresh processes; each store reads its own layout; "
                                       "ours checks every message (and every chunk's sha256)")
        for label, specs in cases[-2:]:
            worst.append(("load (cold)", label, table[label], "cold", specs[OURS_FAST]))

    if "list" in only:
        cases = []
        for count, size in [(n, 10) for n in sizes["list"]] + [sizes["list_big"]]:
            if not count:
                continue
            label = f"{count} sessions" + (f" × {size} msgs" if size != 10 else "")
            cases.append((label, {n: {"kind": "list", "store": n, "folder": many(bench, n, count, size),
                                      "count": count} for n in READERS}))
        table = read_table("3. list_sessions(): the first call in a fresh process (truly cold: no summary "
                           "cache, nothing imported lazily yet) | the second call",
                           cases, note="10 messages per session unless said; the OS page cache is warm (dropping it "
                                       "needs root); ours caches summaries by (inode, size, mtime) within a process, "
                                       "and reads only the first line of a big (version-4) file")
        for label, specs in cases:
            if label.startswith(f"{sizes['list'][-1]} sessions") or "×" in label:
                worst.append(("list_sessions (cold)", label, table[label], "cold", specs[OURS_FAST]))

    if "fork" in only:
        depth = sizes["fork"]
        by_store = bench.compare({n: {"kind": "fork", "store": n, "depth": depth} for n in WRITERS}, True)
        rows = [[f"fork at depth {d}", *versus(by_store, f"fork@{d}", WRITERS, 3)]
                for d in (1, 10, 100, 300) if d <= depth]
        rows.append([f"whole {depth}-deep chain", *versus(by_store, "total", WRITERS, 0)])
        c.print_table(f"4a. fork chain, {depth} deep (each fork = previous + 2 messages; root has 10; "
                      "depth 1 is the process's first fork)", ["case"] + versus_headers(WRITERS), rows,
                      note=f"median of {bench.runs} fresh process(es)")
        rows = [[label, *(c.ms(by_store[n][key]) for n in (TODAY, OURS_FAST, OURS_DURABLE))]
                for key, label in (("lineage_cold", "lineage(leaf), new instance"),
                                   ("lineage_warm", "lineage(leaf), again"),
                                   ("tree_cold", "render_tree(), new instance"), ("tree_warm", "render_tree(), again"))]
        c.print_table(f"4b. lineage() and render_tree() on the {depth}-deep chain (the chapter has neither)",
                      ["call", f"{TODAY} ms", f"{OURS_FAST} ms", f"{OURS_DURABLE} ms"], rows)
        worst.append(("fork (whole chain)", depth, by_store, "total", {"kind": "fork", "depth": depth}))

    if "export" in only:
        rows, cases = [], [("deep", sizes["export_deep"])] + [("flat", n) for n in sizes["export"]]
        for kind, count in cases:
            specs = {}
            for n in READERS:
                folder, sid = deep_fixture(bench, n, count) if kind == "deep" else fixture(bench, n, count)
                specs[n] = {"kind": "export", "store": n, "folder": folder, "session_id": sid}
            by_store = bench.compare(specs)
            label = f"node {count} forks deep (4 msgs)" if kind == "deep" else f"{count} msgs"
            fa = by_store[OURS_FAST]
            rows.append([label, *versus(by_store, "md_cold", READERS), *versus(by_store, "md", READERS),
                         c.ms(fa["md_redact_cold"]), c.ms(fa["md_redact"]), c.ms(fa["html_cold"]), c.ms(fa["html"])])
            name = "export deep small node (warm)" if kind == "deep" else "export_markdown redact=False (warm)"
            if kind == "deep" or count == sizes["export"][-1]:
                worst.append((name, label, by_store, "md", {**specs[OURS_FAST], "raw_only": True}))
        c.print_table("5. export one session: first call in a fresh process (cold: imports the exporter / the "
                      "redaction rules) | warm", ["size", *versus_headers(READERS, "md cold "),
                                                   *versus_headers(READERS, "md warm "), "ours md redacted cold",
                                                   "redacted warm", "html cold", "html warm"], rows,
                      note="ms; ours 'md' = redact=False, the like-for-like one (ours defaults to redact=True); "
                           "ours also reads the lineage for the branch path")

    if "forks" in only:
        rows = []
        for count in sizes["forks_of"]:
            for forks in sizes["forks"]:
                by_store = bench.compare({n: {"kind": "forks", "store": n, "count": count, "forks": forks}
                                          for n in WRITERS}, True)
                rows.append([f"{forks} × fork of {count} msgs", *versus(by_store, "seconds", WRITERS, 0),
                             *(c.human_bytes(by_store[n]["bytes"]) for n in WRITERS)])
                if forks == sizes["forks"][-1]:
                    worst.append((f"{forks} forks of {count} msgs", "time", by_store, "seconds",
                                  {"kind": "forks", "count": count, "forks": forks}))
        c.print_table("6. forks of a big session: time and bytes written (wchar) for all the forks, each adding "
                      "one message", ["case", *versus_headers(WRITERS), *(f"{n} written" for n in WRITERS)], rows,
                      note="the root is written before the measurement; 'today' = every node a self-contained file")

    if "append" in only:
        count, appends = sizes["append"]
        by_store = bench.compare({n: {"kind": "append", "store": n, "count": count, "appends": appends}
                                  for n in WRITERS}, True)
        c.print_table(f"7. {appends} appends to a {count}-message session (append one message, save())",
                      ["metric", *versus_headers(WRITERS)],
                      [[f"all {appends} saves", *versus(by_store, "total", WRITERS, 0)],
                       ["median save", *versus(by_store, "save", WRITERS, 2)],
                       ["bytes written", *sum(([c.human_bytes(by_store[n]["bytes"])] + ([""] if n != CHAPTER else [])
                                               for n in WRITERS), [])]],
                      note="ours re-encodes every message with the C encoder to find changed chunks (CPU linear), "
                           "but writes only the head, the index and the tail (< 64 KiB) plus new chunks")
        worst.append((f"{appends} appends to {count} msgs", "total", by_store, "total",
                      {"kind": "append", "count": count, "appends": appends}))
    return worst


SIZES = {
    "full": {"demo": 50, "save": [100, 300, 1000], "tiny": 300, "load": [100, 1000, 10_000], "load_big": (1000, 10_000),
             "list": [100, 500, 2000], "list_big": (20, 10_000), "fork": 300, "export": [100, 1000, 5000],
             "export_deep": 10, "forks_of": [1000, 10_000], "forks": [1, 10, 100], "append": (10_000, 20)},
    "quick": {"demo": 3, "save": [20], "tiny": 20, "load": [10, 100], "load_big": (0, 0),
              "list": [10, 50], "list_big": (0, 0), "fork": 10, "export": [10], "export_deep": 3,
              "forks_of": [400], "forks": [2], "append": (400, 3)},
}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one process per case")
    parser.add_argument("--runs", type=int, help="fresh processes per case (default 3, --quick 1)")
    parser.add_argument("--no-profile", action="store_true", help="skip cProfile of the slow cases")
    parser.add_argument("--only", default=",".join(WORKLOADS), help=f"comma-separated subset of {','.join(WORKLOADS)}")
    parser.add_argument("--scratch", help="folder to create the scratch folder in (default: benchmarks/); on a "
                        "machine where creating files in the repository is slow, compare with a folder elsewhere "
                        "on a real disk")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = set(only) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workload(s): {', '.join(sorted(unknown))}")
    runs = args.runs or (1 if args.quick else 3)
    root = Path(tempfile.mkdtemp(prefix=".bench-store-", dir=args.scratch or Path(__file__).resolve().parent))
    c.print_header("bench_store: SessionStore (code/s11_session.py) vs the chapter's (code/s11_book.py), "
                   "one fresh interpreter per measurement",
                   {"scratch": f"{root} — {c.filesystem_of(root)}", "runs": f"{runs} fresh process(es) per case",
                    "cache": "OS page cache warm (a fresh process cannot drop it; that needs root)"})
    started = time.perf_counter()
    try:
        bench = Bench(root, runs)
        worst = run_all(bench, SIZES["quick" if args.quick else "full"], only)
        rows, slow = [], []
        for workload, size, by_store, metric, spec in worst:
            target = TARGETS.get(workload, TARGET)
            value = by_store[OURS_FAST][metric] / by_store[CHAPTER][metric]
            today = by_store[TODAY][metric] / by_store[CHAPTER][metric] if TODAY in by_store else None
            rows.append([workload, size, f"{today:.2f}x" if today else "n/a", f"{value:.2f}x", f"≤ {target:.1f}x",
                         "MISSED" if value > target else "met"])
            if value > target:
                slow.append((workload, size, spec))
        c.print_table("summary: ours (durable=False) / chapter, and today's layout (every node self-contained) / chapter",
                      ["workload", "size", "today/chapter", "ours/chapter", "target", "verdict"], rows,
                      note=f"{bench.processes} worker processes, {time.perf_counter() - started:.0f} s; fsync is priced "
                           "separately in the tables above")
        if slow and not args.no_profile and not args.quick:
            for workload, size, spec in slow:
                spec = dict(spec, store=OURS_FAST)
                spec.setdefault("folder", bench.folder())
                print(f"## profile: {workload} @ {size} (ours, durable=False, one fresh process), top 15 by own time")
                print(bench.spawn(spec, profile=True), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
