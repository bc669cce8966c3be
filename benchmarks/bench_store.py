"""bench_store.py — our SessionStore vs the chapter's printed store, every measurement in a fresh interpreter.

    python benchmarks/bench_store.py              # full run (a few minutes on 2 busy cores)
    python benchmarks/bench_store.py --quick      # tiny sizes, one process per case (a smoke test)
    python benchmarks/bench_store.py --only list,load --runs 5

    parent: builds the folders once ──> for each case × store × run: python bench_store.py --worker '<spec>'
                                           └─ imports the store (untimed), then times the operation:
                                              "cold" = the first call in that process (new SessionStore, empty
                                              caches, lazy imports such as the exporter and the redaction rules),
                                              "warm" = the same call again in the same process
    stores:  chapter       code/s11_book.py: json.dump in place, no fsync
             ours nofsync  SessionStore(durable=False): temp file + os.replace under a lock  ← like for like
             ours fsync    SessionStore() — the default: + fsync of the file and of the folder

Key insight: the fair question "is our code slower than the book's?" is ours nofsync against the chapter;
ours fsync adds what durability costs, which the chapter never pays. Reads cannot differ by fsync, so the
read tables compare two stores. What a fresh process cannot drop is the OS page cache (that needs root):
"cold" here means a new interpreter over files the kernel has already cached.

Folders live under benchmarks/ (the repository's filesystem, so fsync is real) and are removed at the end.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
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

PROFILE_THRESHOLD = 1.15
CHAPTER, OURS_FAST, OURS_DURABLE = "chapter", "ours nofsync", "ours fsync"
STORES: Dict[str, Callable[[str], object]] = {
    CHAPTER: lambda folder: chapter_reference.SessionStore(folder),
    OURS_FAST: lambda folder: s11_session.SessionStore(folder, durable=False),
    OURS_DURABLE: lambda folder: s11_session.SessionStore(folder, durable=True),
}
READERS = (CHAPTER, OURS_FAST)   # reads: fsync cannot matter

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
        return {"md_cold": cold, "md": c.median([timed(store.export_markdown, sid)[0] for _ in range(3)])}
    cold, text = timed(lambda: store.export_markdown(sid, redact=False))
    result = {"md_cold": cold, "md": c.median([timed(lambda: store.export_markdown(sid, redact=False))[0]
                                              for _ in range(3)])}
    if spec.get("raw_only"):   # the profile of the like-for-like case
        return result
    result["md_redact_cold"] = timed(lambda: store.export_markdown(sid))[0]
    result["md_redact"] = c.median([timed(lambda: store.export_markdown(sid))[0] for _ in range(3)])
    result["html_cold"] = timed(lambda: store.export_html(sid))[0]
    result["html"] = c.median([timed(lambda: store.export_html(sid))[0] for _ in range(3)])
    return result


WORKERS = {"save": w_save, "tiny": w_tiny, "load": w_load, "list": w_list, "fork": w_fork, "export": w_export}


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
        samples: List[dict] = []
        for _ in range(self.runs):
            this = dict(spec, folder=self.folder()) if fresh_folder else spec
            samples.append(self.spawn(this))
            if fresh_folder:
                shutil.rmtree(this["folder"], ignore_errors=True)
        return {key: c.median([s[key] for s in samples]) for key in samples[0]}


def fixture(bench: Bench, store_name: str, count: int, pad: int = 0) -> tuple:
    """(folder, session_id): one session of `count` messages written by that store (no fsync for ours)."""
    folder = bench.folder("fixture-")
    writer = STORES[OURS_FAST if store_name != CHAPTER else CHAPTER](folder)
    return folder, writer.create_session("读档", messages(count, pad))


def many(bench: Bench, store_name: str, count: int) -> str:
    folder = bench.folder("fixture-")
    writer = STORES[OURS_FAST if store_name != CHAPTER else CHAPTER](folder)
    for i in range(count):
        writer.create_session(f"会话 {i}", messages(10))
    return folder


def three_way(by_store: Dict[str, dict], metric: str, digits: int = 2) -> list:
    ch, fa, du = (by_store[n].get(metric) for n in (CHAPTER, OURS_FAST, OURS_DURABLE))
    return [c.ms(ch, digits), c.ms(fa, digits), c.ratio(fa, ch), c.ms(du, digits), c.ratio(du, ch)]


THREE = [f"{CHAPTER} ms", f"{OURS_FAST} ms", "nofsync/chapter", f"{OURS_DURABLE} ms", "fsync/chapter"]
WORKLOADS = ("save", "load", "list", "fork", "export")


def run_all(bench: Bench, sizes: dict, only) -> List[tuple]:
    """Print every table; return (workload, size, ours nofsync / chapter, spec to profile) per largest size."""
    worst: List[tuple] = []

    if "save" in only:
        rows, last = [], None
        for count in sizes["save"]:
            by_store = {n: bench.runs_of({"kind": "save", "store": n, "count": count}, fresh_folder=True)
                        for n in STORES}
            rows.append([f"{count} msgs", *three_way(by_store, "last", 3), *three_way(by_store, "total", 0),
                         c.human_bytes(by_store[CHAPTER]["bytes"]), c.human_bytes(by_store[OURS_FAST]["bytes"])])
            last = (count, by_store)
        c.print_table("1. save after every message: per save at the end (median of the last 10) | all saves",
                      ["size", "last " + THREE[0], "last " + THREE[1], "ratio", "last " + THREE[3], "ratio",
                       "total " + THREE[0], "total " + THREE[1], "ratio", "total " + THREE[3], "ratio",
                       "chapter file", "our file"], rows,
                      note=f"median of {bench.runs} fresh process(es) each; 'total' includes the process's first save")
        count, by_store = last
        worst.append(("save after every message (total)", count, by_store, "total",
                      {"kind": "save", "count": count}))
        tiny = {n: bench.runs_of({"kind": "tiny", "store": n, "count": sizes["tiny"]}, fresh_folder=True)
                for n in STORES}
        c.print_table(f"1b. the fixed cost of one save: a 1-message session saved {sizes['tiny']} times",
                      ["save"] + THREE, [["first save of the process", *three_way(tiny, "first", 3)],
                                         ["median of the rest", *three_way(tiny, "save", 3)]],
                      note="ours = validate + temp file + os.replace (+ fsync of file and folder) under a lock; "
                           "the chapter = open('w') + json.dump")

    def read_table(title: str, cases: List[tuple], note: str) -> Dict[object, dict]:
        rows, table = [], {}
        for label, specs in cases:
            by_store = {n: bench.runs_of(specs[n]) for n in READERS}
            table[label] = by_store
            ch, fa = by_store[CHAPTER], by_store[OURS_FAST]
            rows.append([label, c.ms(ch["cold"]), c.ms(fa["cold"]), c.ratio(fa["cold"], ch["cold"]),
                         c.ms(ch["warm"]), c.ms(fa["warm"]), c.ratio(fa["warm"], ch["warm"])])
        c.print_table(title, ["size", "cold chapter ms", "cold ours ms", "ratio", "warm chapter ms",
                              "warm ours ms", "ratio"], rows, note=note)
        return table

    if "load" in only:
        cases = []
        for count, pad in [(n, 0) for n in sizes["load"]] + ([sizes["load_big"]] if sizes["load_big"][0] else []):
            specs = {}
            for n in READERS:
                folder, sid = fixture(bench, n, count, pad)
                specs[n] = {"kind": "load", "store": n, "folder": folder, "session_id": sid, "count": count}
            size = os.path.getsize(os.path.join(specs[CHAPTER]["folder"], f"{specs[CHAPTER]['session_id']}.json"))
            cases.append((f"{count} msgs ({c.human_bytes(size)})", specs))
        table = read_table("2. load one session: new SessionStore + load() in a fresh process | again",
                           cases, note=f"median of {bench.runs} fresh processes; ours checks every message")
        label = cases[-1][0]
        worst.append(("load (cold)", label, table[label], "cold", cases[-1][1][OURS_FAST]))

    if "list" in only:
        cases = []
        for count in sizes["list"]:
            cases.append((f"{count} sessions", {n: {"kind": "list", "store": n, "folder": many(bench, n, count),
                                                     "count": count} for n in READERS}))
        table = read_table("3. list_sessions(): the first call in a fresh process (truly cold: no summary "
                                   "cache, nothing imported lazily yet) | the second call",
                           cases, note="10 messages per session; the OS page cache is warm (dropping it needs root); "
                                       "ours caches summaries by (inode, size, mtime) within a process")
        label = cases[-1][0]
        worst.append(("list_sessions (cold)", label, table[label], "cold", cases[-1][1][OURS_FAST]))

    if "fork" in only:
        depth = sizes["fork"]
        by_store = {n: bench.runs_of({"kind": "fork", "store": n, "depth": depth}, fresh_folder=True)
                    for n in STORES}
        rows = [[f"fork at depth {d}", *three_way(by_store, f"fork@{d}", 3)]
                for d in (1, 10, 100, 300) if d <= depth]
        rows.append([f"whole {depth}-deep chain", *three_way(by_store, "total", 0)])
        c.print_table(f"4a. fork chain, {depth} deep (each fork = previous + 2 messages; root has 10; "
                      "depth 1 is the process's first fork)", ["case"] + THREE, rows,
                      note=f"median of {bench.runs} fresh process(es)")
        rows = [[label, c.ms(by_store[OURS_FAST][key]), c.ms(by_store[OURS_DURABLE][key])]
                for key, label in (("lineage_cold", "lineage(leaf), new instance"),
                                   ("lineage_warm", "lineage(leaf), again"),
                                   ("tree_cold", "render_tree(), new instance"), ("tree_warm", "render_tree(), again"))]
        c.print_table(f"4b. lineage() and render_tree() on the {depth}-deep chain (the chapter has neither)",
                      ["call", f"{OURS_FAST} ms", f"{OURS_DURABLE} ms"], rows)
        worst.append(("fork (whole chain)", depth, by_store, "total", {"kind": "fork", "depth": depth}))

    if "export" in only:
        rows, last = [], None
        for count in sizes["export"]:
            by_store = {}
            for n in READERS:
                folder, sid = fixture(bench, n, count)
                by_store[n] = bench.runs_of({"kind": "export", "store": n, "folder": folder, "session_id": sid})
            ch, fa = by_store[CHAPTER], by_store[OURS_FAST]
            rows.append([f"{count} msgs", c.ms(ch["md_cold"]), c.ms(fa["md_cold"]), c.ratio(fa["md_cold"], ch["md_cold"]),
                         c.ms(ch["md"]), c.ms(fa["md"]), c.ratio(fa["md"], ch["md"]),
                         c.ms(fa["md_redact_cold"]), c.ms(fa["md_redact"]), c.ms(fa["html_cold"]), c.ms(fa["html"])])
            last = (count, by_store, folder, sid)
        c.print_table("5. export one session: first call in a fresh process (cold: imports the exporter / the "
                      "redaction rules) | warm",
                      ["size", "md cold chapter", "md cold ours raw", "ratio", "md warm chapter", "md warm ours raw",
                       "ratio", "md redacted cold", "md redacted warm", "html cold", "html warm"], rows,
                      note="ms; 'raw' = redact=False, the like-for-like one; ours defaults to redact=True")
        count, by_store, folder, sid = last
        worst.append(("export_markdown redact=False (warm)", f"{count} msgs", by_store, "md",
                      {"kind": "export", "store": OURS_FAST, "folder": folder, "session_id": sid, "raw_only": True}))
    return worst


SIZES = {
    "full": {"save": [100, 300, 1000], "tiny": 300, "load": [100, 1000, 10_000], "load_big": (1000, 10_000),
             "list": [100, 500, 2000], "fork": 300, "export": [100, 1000]},
    "quick": {"save": [20], "tiny": 20, "load": [10, 100], "load_big": (0, 0),
              "list": [10, 50], "fork": 10, "export": [10]},
}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one process per case")
    parser.add_argument("--runs", type=int, help="fresh processes per case (default 3, --quick 1)")
    parser.add_argument("--no-profile", action="store_true", help="skip cProfile of the slow cases")
    parser.add_argument("--only", default=",".join(WORKLOADS), help=f"comma-separated subset of {','.join(WORKLOADS)}")
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
    root = Path(tempfile.mkdtemp(prefix=".bench-store-", dir=Path(__file__).resolve().parent))
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
            value = by_store[OURS_FAST][metric] / by_store[CHAPTER][metric]
            rows.append([workload, size, f"{value:.2f}x", "SLOWER" if value > PROFILE_THRESHOLD else "ok"])
            if value > PROFILE_THRESHOLD:
                slow.append((workload, size, spec))
        c.print_table(f"summary: ours (durable=False) / chapter at the largest size (target: ≤ {PROFILE_THRESHOLD:.2f}x, "
                      "i.e. no slower beyond noise; fsync is priced separately above)",
                      ["workload", "size", "nofsync/chapter", "verdict"], rows,
                      note=f"{bench.processes} worker processes, {time.perf_counter() - started:.0f} s")
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
