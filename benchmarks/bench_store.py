"""bench_store.py — our SessionStore vs the chapter's printed store, at growing sizes.

    python benchmarks/bench_store.py            # full run (~1-2 min on 2 cores)
    python benchmarks/bench_store.py --quick    # tiny sizes, one run each (a smoke test)

    workload ──> chapter store          (code/s11_book.py: json.dump in place, no fsync)
             ├─> ours durable=False     (atomic temp file + os.replace, no fsync)   ← compare with chapter
             └─> ours durable=True      (the default: + fsync of the file and of the folder)

Key insight: the fair comparison for "is our code slower?" is ours with durable=False against the
chapter; ours with durable=True adds the price of fsync, which the chapter's code never pays.

Every folder lives under benchmarks/ (the repository's filesystem, not tmpfs) and is removed at the end.
If ours (durable=False) is more than PROFILE_THRESHOLD times the chapter's time on a workload's largest
size, that case is run once more under cProfile and the top functions are printed.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import shutil
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


class Bench:
    """A scratch folder per case under `root`; every case is wiped after it is measured."""

    def __init__(self, root: Path, runs: int):
        self.root, self.runs = root, runs

    def folder(self) -> str:
        return tempfile.mkdtemp(prefix="case-", dir=self.root)

    @staticmethod
    def wipe(folder: str) -> None:
        shutil.rmtree(folder, ignore_errors=True)


def once(fn: Callable, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


# ---------------------------------------------------------------- workloads
# Each returns {store name: {metric: seconds or bytes}}, medians over bench.runs.

def save_every_message(bench: Bench, store_name: str, count: int) -> dict:
    totals, last_saves, sizes = [], [], []
    for _ in range(bench.runs):
        folder = bench.folder()
        store = STORES[store_name](folder)
        session_id = store.create_session("保存每一条消息", [{"role": "system", "content": "你是编程助手。"}])
        node = store.load(session_id)
        per_save = []
        for i in range(count):
            node.messages.append(message(i))
            started = time.perf_counter()
            store.save(node)
            per_save.append(time.perf_counter() - started)
        totals.append(sum(per_save))
        last_saves.append(c.median(per_save[-10:]))
        sizes.append(os.path.getsize(os.path.join(folder, f"{session_id}.json")))
        bench.wipe(folder)
    return {"last_save": c.median(last_saves), "total": c.median(totals), "bytes": sizes[-1]}


def tiny_saves(bench: Bench, store_name: str, count: int) -> dict:
    """The fixed cost of one save: the same 1-message session saved `count` times (median per save)."""
    medians = []
    for _ in range(bench.runs):
        folder = bench.folder()
        store = STORES[store_name](folder)
        node = store.load(store.create_session("小会话", [{"role": "user", "content": "你好"}]))
        medians.append(c.median([once(store.save, node) for _ in range(count)]))
        bench.wipe(folder)
    return {"save": c.median(medians)}


def load_session(bench: Bench, store_name: str, count: int, pad: int = 0) -> dict:
    folder = bench.folder()
    store = STORES[store_name](folder)
    session_id = store.create_session("读档", messages(count, pad))
    size = os.path.getsize(os.path.join(folder, f"{session_id}.json"))
    samples = c.time_runs(lambda: store.load(session_id), bench.runs, warmup=1)
    loaded = store.load(session_id)
    assert len(loaded.messages) == count, (store_name, len(loaded.messages), count)
    bench.wipe(folder)
    return {"load": c.median(samples), "bytes": size}


def list_sessions(bench: Bench, store_name: str, count: int) -> dict:
    folder = bench.folder()
    writer = STORES[OURS_FAST if store_name != CHAPTER else CHAPTER](folder)  # setup without fsync
    for i in range(count):
        writer.create_session(f"会话 {i}", messages(10))
    colds, warms = [], []
    for _ in range(bench.runs):
        store = STORES[store_name](folder)   # a new instance: our summary cache starts empty
        started = time.perf_counter()
        first = store.list_sessions()
        colds.append(time.perf_counter() - started)
        started = time.perf_counter()
        second = store.list_sessions()
        warms.append(time.perf_counter() - started)
        assert len(first) == len(second) == count, (store_name, len(first), count)
    bench.wipe(folder)
    return {"cold": c.median(colds), "warm": c.median(warms)}


FORK_DEPTHS = (10, 100, 300)


def fork_chain(bench: Bench, store_name: str, depth: int) -> dict:
    """Root of 10 messages, then `depth` forks, each of the previous one plus 2 new messages."""
    per_depth: Dict[int, List[float]] = {d: [] for d in FORK_DEPTHS if d <= depth}
    totals, lineages_cold, lineages_warm, trees_cold, trees_warm = [], [], [], [], []
    for _ in range(bench.runs):
        folder = bench.folder()
        store = STORES[store_name](folder)
        current = store.create_session("分叉链", messages(10))
        started_chain = time.perf_counter()
        for d in range(1, depth + 1):
            started = time.perf_counter()
            child = store.fork(current, [message(1000 + 2 * d), message(1001 + 2 * d)])
            elapsed = time.perf_counter() - started
            if d in per_depth:
                per_depth[d].append(elapsed)
            current = child.session_id
        totals.append(time.perf_counter() - started_chain)
        if store_name != CHAPTER:   # the chapter has no lineage() / render_tree()
            reader = STORES[store_name](folder)
            lineages_cold.append(once(reader.lineage, current))
            lineages_warm.append(once(reader.lineage, current))
            assert len(reader.lineage(current)) == depth + 1
            reader = STORES[store_name](folder)
            trees_cold.append(once(reader.render_tree))
            trees_warm.append(once(reader.render_tree))
        bench.wipe(folder)
    result = {f"fork@{d}": c.median(v) for d, v in per_depth.items()}
    result["total"] = c.median(totals)
    if lineages_cold:
        result.update(lineage_cold=c.median(lineages_cold), lineage_warm=c.median(lineages_warm),
                      tree_cold=c.median(trees_cold), tree_warm=c.median(trees_warm))
    return result


def export(bench: Bench, store_name: str, count: int) -> dict:
    folder = bench.folder()
    store = STORES[store_name](folder)
    session_id = store.create_session("导出", messages(count))
    result: Dict[str, Optional[float]] = {}
    if store_name == CHAPTER:
        result["md"] = c.median(c.time_runs(lambda: store.export_markdown(session_id), bench.runs, warmup=1))
    else:
        result["md"] = c.median(c.time_runs(lambda: store.export_markdown(session_id, redact=False), bench.runs, warmup=1))
        result["md_redact"] = c.median(c.time_runs(lambda: store.export_markdown(session_id), bench.runs, warmup=1))
        try:
            result["html"] = c.median(c.time_runs(lambda: store.export_html(session_id), bench.runs, warmup=1))
        except (AttributeError, ImportError):
            result["html"] = None
    bench.wipe(folder)
    return result


# ---------------------------------------------------------------- profiling
# Each prepare_* does the setup (outside the profiler) and returns the call to profile: ours, durable=False.

def _fast_store(root: Path):
    return STORES[OURS_FAST](tempfile.mkdtemp(prefix="profile-", dir=root))


def prepare_saves(root: Path, count: int) -> Callable[[], object]:
    store = _fast_store(root)
    node = store.load(store.create_session("保存每一条消息", [{"role": "system", "content": "你是编程助手。"}]))

    def saves() -> None:
        for i in range(count):
            node.messages.append(message(i))
            store.save(node)
    return saves


def prepare_loads(root: Path, count: int, pad: int) -> Callable[[], object]:
    store = _fast_store(root)
    session_id = store.create_session("读档", messages(count, pad))
    return lambda: [store.load(session_id) for _ in range(5)]


def prepare_lists(root: Path, count: int) -> Callable[[], object]:
    folder = _fast_store(root).storage_dir
    writer = STORES[OURS_FAST](folder)
    for i in range(count):
        writer.create_session(f"会话 {i}", messages(10))
    return lambda: [STORES[OURS_FAST](folder).list_sessions() for _ in range(3)]


def prepare_forks(root: Path, depth: int) -> Callable[[], object]:
    store = _fast_store(root)
    root_id = store.create_session("分叉链", messages(10))

    def chain() -> None:
        current = root_id
        for d in range(1, depth + 1):
            current = store.fork(current, [message(1000 + 2 * d), message(1001 + 2 * d)]).session_id
    return chain


def prepare_exports(root: Path, count: int) -> Callable[[], object]:
    store = _fast_store(root)
    session_id = store.create_session("导出", messages(count))
    store.export_markdown(session_id, redact=False)   # imports s11_export outside the profile
    return lambda: [store.export_markdown(session_id, redact=False) for _ in range(5)]


def export_in_big_folder(bench: Bench, others: int) -> dict:
    """export_markdown of one 100-message session next to `others` sessions (ours builds lineage from them)."""
    folder = bench.folder()
    writer = STORES[OURS_FAST](folder)
    for i in range(others):
        writer.create_session(f"别人的会话 {i}", messages(10))
    session_id = writer.create_session("导出", messages(100))
    chapter = STORES[CHAPTER](folder)
    result = {"chapter": c.median(c.time_runs(lambda: chapter.export_markdown(session_id), bench.runs, warmup=1))}
    STORES[OURS_FAST](folder).export_markdown(session_id)   # warm-up: imports s11_export / s11_redact
    colds = []
    for _ in range(bench.runs):
        fresh = STORES[OURS_FAST](folder)
        colds.append(once(fresh.export_markdown, session_id))
    result["ours_cold"] = c.median(colds)
    result["ours_warm"] = c.median([once(fresh.export_markdown, session_id) for _ in range(bench.runs)])
    bench.wipe(folder)
    return result


# ---------------------------------------------------------------- tables

def three_way(rows_by_size: Dict[object, Dict[str, dict]], metric: str, digits: int = 2) -> List[list]:
    rows = []
    for size, by_store in rows_by_size.items():
        chapter = by_store[CHAPTER].get(metric)
        fast = by_store[OURS_FAST].get(metric)
        durable = by_store[OURS_DURABLE].get(metric)
        rows.append([size, c.ms(chapter, digits), c.ms(fast, digits), c.ratio(fast, chapter),
                     c.ms(durable, digits), c.ratio(durable, chapter)])
    return rows


THREE_HEADERS = ["size", f"{CHAPTER} ms", f"{OURS_FAST} ms", "nofsync/chapter", f"{OURS_DURABLE} ms",
                 "fsync/chapter"]


WORKLOADS = ("save", "load", "list", "fork", "export")


def run_all(bench: Bench, sizes: dict, only=WORKLOADS) -> List[tuple]:
    """Print every table; return (workload, size, ratio nofsync/chapter, profile thunk) for the largest sizes."""
    worst: List[tuple] = []

    def track(workload: str, size, by_store: dict, metric: str, prepare: Callable) -> None:
        chapter, fast = by_store[CHAPTER].get(metric), by_store[OURS_FAST].get(metric)
        if chapter and fast:
            worst.append((workload, size, fast / chapter, prepare))

    # 1. a session saved after every message
    if "save" in only:
        table = {}
        for count in sizes["save"]:
            table[f"{count} msgs"] = {name: save_every_message(bench, name, count) for name in STORES}
        rows = []
        for size, by_store in table.items():
            ch, fa, du = by_store[CHAPTER], by_store[OURS_FAST], by_store[OURS_DURABLE]
            rows.append([size, c.ms(ch["last_save"], 3), c.ms(fa["last_save"], 3), c.ratio(fa["last_save"], ch["last_save"]),
                         c.ms(du["last_save"], 3), c.ratio(du["last_save"], ch["last_save"]),
                         c.ms(ch["total"], 0), c.ms(fa["total"], 0), c.ratio(fa["total"], ch["total"]),
                         c.ms(du["total"], 0), c.ratio(du["total"], ch["total"]),
                         c.human_bytes(ch["bytes"]), c.human_bytes(fa["bytes"])])
        c.print_table(
            "1. save after every message (time per save at the end = median of the last 10 saves)",
            ["size", "last chapter ms", "last nofsync ms", "ratio", "last fsync ms", "ratio",
             "total chapter ms", "total nofsync ms", "ratio", "total fsync ms", "ratio", "chapter file", "our file"],
            rows, note=f"median of {bench.runs} run(s); 'ratio' = ours / chapter")
        count = sizes["tiny_saves"]
        by_store = {name: tiny_saves(bench, name, count) for name in STORES}
        c.print_table(f"1b. the fixed cost of one save: a 1-message session saved {count} times",
                      THREE_HEADERS, three_way({"1 msg": by_store}, "save", 3),
                      note="ours = validate + temp file + os.replace (+ fsync of file and folder) under a lock; "
                           "the chapter = open('w') + json.dump")
        biggest = sizes["save"][-1]
        track("save after every message (total)", biggest, table[f"{biggest} msgs"], "total",
              lambda: prepare_saves(bench.root, biggest))

    # 2. load
    if "load" in only:
        table = {}
        for count in sizes["load"]:
            table[f"{count} msgs"] = {name: load_session(bench, name, count) for name in STORES}
        big_count, pad = sizes["load_big"]
        big_label = None
        if big_count:
            by_store = {name: load_session(bench, name, big_count, pad) for name in STORES}
            big_label = f"~{by_store[CHAPTER]['bytes'] / 1e6:.0f} MB ({big_count} msgs)"
            table[big_label] = by_store
        rows = three_way(table, "load")
        for row, by_store in zip(rows, table.values()):
            row.append(c.human_bytes(by_store[CHAPTER]["bytes"]))
            row.append(c.human_bytes(by_store[OURS_FAST]["bytes"]))
        c.print_table("2. load one session", THREE_HEADERS + ["chapter file", "our file"], rows,
                      note=f"median of {bench.runs} loads (read-only: fsync cannot matter here)")
        last_label = list(table)[-1]
        last_count, last_pad = (big_count, pad) if big_label else (sizes["load"][-1], 0)
        track("load", last_label, table[last_label], "load",
              lambda: prepare_loads(bench.root, last_count, last_pad))

    # 3. list_sessions
    if "list" in only:
        table = {}
        for count in sizes["list"]:
            table[f"{count} sessions"] = {name: list_sessions(bench, name, count) for name in STORES}
        c.print_table("3a. list_sessions, first call on a new SessionStore (cold summary cache; OS page cache warm)",
                      THREE_HEADERS, three_way(table, "cold"), note=f"10 messages per session; median of {bench.runs}")
        c.print_table("3b. list_sessions, second call on the same instance (ours: summaries cached by stat)",
                      THREE_HEADERS, three_way(table, "warm"))
        biggest = sizes["list"][-1]
        track("list_sessions (cold)", biggest, table[f"{biggest} sessions"], "cold",
              lambda: prepare_lists(bench.root, biggest))

    # 4. fork chain
    if "fork" in only:
        depth = sizes["fork"]
        by_store = {name: fork_chain(bench, name, depth) for name in STORES}
        table = {f"fork at depth {d}": by_store for d in FORK_DEPTHS if d <= depth}
        rows = [three_way({label: by_store}, f"fork@{d}", 3)[0]
                for label, d in zip(table, [d for d in FORK_DEPTHS if d <= depth])]
        rows.append(three_way({f"whole {depth}-deep chain": by_store}, "total", 0)[0])
        c.print_table(f"4a. fork chain, {depth} deep (each fork = previous + 2 messages; root has 10)",
                      THREE_HEADERS, rows, note=f"median of {bench.runs} chain(s)")
        rows = []
        for key, label in (("lineage_cold", "lineage(leaf), new instance"), ("lineage_warm", "lineage(leaf), again"),
                           ("tree_cold", "render_tree(), new instance"), ("tree_warm", "render_tree(), again")):
            rows.append([label, c.ms(by_store[OURS_FAST][key]), c.ms(by_store[OURS_DURABLE][key])])
        c.print_table(f"4b. lineage() and render_tree() on the {depth}-deep chain (the chapter has neither)",
                      ["call", f"{OURS_FAST} ms", f"{OURS_DURABLE} ms"], rows)
        track("fork (whole chain)", depth, by_store, "total",
              lambda: prepare_forks(bench.root, depth))

    # 5. export
    if "export" in only:
        rows = []
        last = None
        for count in sizes["export"]:
            by_store = {name: export(bench, name, count) for name in STORES}
            ch, fa, du = by_store[CHAPTER], by_store[OURS_FAST], by_store[OURS_DURABLE]
            html = c.ms(fa["html"]) if fa["html"] is not None else "not available yet"
            rows.append([f"{count} msgs", c.ms(ch["md"]), c.ms(fa["md"]), c.ratio(fa["md"], ch["md"]),
                         c.ms(fa["md_redact"]), c.ratio(fa["md_redact"], ch["md"]), html,
                         c.ms(du["md"]), c.ms(du["md_redact"])])
            last = (count, by_store)
        c.print_table("5a. export one session (ours defaults to redact=True; redact=False is the like-for-like one)",
                      ["size", "chapter md ms", "ours md raw ms", "ratio", "ours md redacted ms", "ratio",
                       "ours html ms", "fsync-store md raw ms", "fsync-store md redacted ms"], rows,
                      note=f"median of {bench.runs}; a session alone in its folder")
        count, by_store = last
        track("export_markdown redact=False", f"{count} msgs", by_store, "md",
              lambda: prepare_exports(bench.root, count))

        rows = []
        for others in sizes["export_others"]:
            result = export_in_big_folder(bench, others)
            rows.append([f"{others} other sessions", c.ms(result["chapter"]), c.ms(result["ours_cold"]),
                         c.ratio(result["ours_cold"], result["chapter"]), c.ms(result["ours_warm"]),
                         c.ratio(result["ours_warm"], result["chapter"])])
        c.print_table("5b. export_markdown of a 100-message session next to other sessions "
                      "(does it grow with the folder? ours builds lineage() for the header)",
                      ["folder", "chapter ms", "ours new-instance ms", "ratio", "ours warm ms", "ratio"], rows,
                      note="ours = durable=False, redact=True (the default); run_demo uses a new SessionStore per click")
    return worst


def profile(label: str, prepare: Callable[[], Callable[[], object]], top: int = 18) -> None:
    work = prepare()
    profiler = cProfile.Profile()
    profiler.enable()
    work()
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    print(f"## profile: {label} (ours, durable=False), top {top} by own time")
    text = out.getvalue()
    print(text[text.find("   ncalls"):].rstrip() if "   ncalls" in text else text)
    print(flush=True)


SIZES = {
    "full": {"save": [100, 300, 1000], "tiny_saves": 300, "load": [100, 1000, 10_000], "load_big": (1000, 10_000),
             "list": [100, 500, 2000], "fork": 300, "export": [100, 1000], "export_others": [0, 500, 2000]},
    "quick": {"save": [20, 50], "tiny_saves": 20, "load": [10, 100], "load_big": (0, 0),
              "list": [10, 50], "fork": 10, "export": [10], "export_others": [0, 20]},
}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, one run each")
    parser.add_argument("--runs", type=int, help="runs per case (default 3, --quick 1)")
    parser.add_argument("--no-profile", action="store_true", help="skip cProfile of slow cases")
    parser.add_argument("--only", default=",".join(WORKLOADS),
                        help=f"comma-separated subset of {','.join(WORKLOADS)}")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    root = Path(tempfile.mkdtemp(prefix=".bench-store-", dir=Path(__file__).resolve().parent))
    c.print_header("bench_store: SessionStore (code/s11_session.py) vs the chapter's (code/s11_book.py)",
                   {"scratch": f"{root} — {c.filesystem_of(root)}", "runs": f"{runs} per case"})
    try:
        only = [name.strip() for name in args.only.split(",") if name.strip()]
        unknown = set(only) - set(WORKLOADS)
        if unknown:
            parser.error(f"unknown workload(s): {', '.join(sorted(unknown))}")
        worst = run_all(Bench(root, runs), SIZES["quick" if args.quick else "full"], only)
        slow = [w for w in worst if w[2] > PROFILE_THRESHOLD]
        rows = [[w[0], w[1], f"{w[2]:.2f}x", "SLOWER" if w[2] > PROFILE_THRESHOLD else "ok"] for w in worst]
        c.print_table(f"summary: ours (durable=False) / chapter at the largest size "
                      f"(target: ≤ {PROFILE_THRESHOLD:.2f}x, i.e. no slower beyond noise)",
                      ["workload", "size", "nofsync/chapter", "verdict"], rows)
        if slow and not args.no_profile and not args.quick:
            for workload, size, _, prepare in slow:
                profile(f"{workload} @ {size}", prepare)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
