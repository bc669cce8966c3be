"""bench_explorer.py — every explorer handler (s11_workbench.explorer.Explorer) on a space with 2,000 sessions, without gradio.

    python benchmarks/bench_explorer.py            # 30 runs per handler, plus a 5,000-message session and a 1,000-node tree
    python benchmarks/bench_explorer.py --quick    # 5 runs per handler, the 2,000-session space only

    one student space (Spaces, fsync on) ── 667 × demo_tree_branching ≈ 2,000 sessions
      list     refresh(token, view)                  list_sessions + check() + the selected tree, path and map
      select   select(token, view, branch B)         + load the node, tree labels, chat rows, mermaid
      search   refresh(token, view, "WeakValueDictionary 弱引用")   full text over every message (cached per file;
               "cold" empties the cache first: the first search after a start-up with no page opened yet, which
               reads the space's search index (.search/index.json, written after an earlier search or warm-up);
               "first after a page load": cache emptied, one page render (which starts the background warm-up),
               the warm-up awaited untimed, then the search — what a reader's first Enter costs;
               "no cache, no index" (printed, no budget): the first search ever in a space, before any warm-up,
               which reads every session file — its floor alone, the reading, is printed under the table)
      map pick map_pick(token, view, "<id>#n")       a click on a branch-map node (the hidden box the page fills)
      jump / sibling ▶   a search hit's click, the "▶" at a fork point
      fork     fork(token, view, 3, "…")             + store.fork (one fsync'd file)
      resume   resume(token, view, "…")              + load, append, save with the page's revision
      export   export(token, view)                   + export_markdown + export_html (redacted) + 2 files
      delete   delete(token, view)                   a fresh fork each run (made untimed)
      restore  restore(token, view, id)              the one just deleted (deleted untimed)
      import   import_upload(token, view, 1 MB .jsonl)   a new Pi v3 transcript each run (new ids)

Key insight: every handler re-renders the whole page (the list, check(), the tree, the path and the map), so the
figure is what one click costs the server, not just the store call. Budget: median ≤ 50 ms per handler,
one PASS / MISS line each at the end.
The machine's load average is printed in the header: other processes share the 2 CPUs, so compare runs with care.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

c.setup_paths()
from s11_session import SessionNode, SessionStore, demo_tree_branching  # noqa: E402
from s11_workbench import search_index  # noqa: E402
from s11_workbench.bounded import RACY_NS  # noqa: E402
from s11_workbench.explorer import Explorer, View  # noqa: E402
from s11_workbench.spaces import Limits, Spaces  # noqa: E402

TARGET_MEDIAN_S = 0.050
SESSIONS = 2000
IMPORT_BYTES = 1024 * 1024
ROOMY = Limits(creates_per_minute=100_000, create_burst=100_000, min_free_bytes=0)


def fill_space(folder: str, sessions: int) -> dict:
    """Demo trees (root + two branches) until the space holds `sessions` nodes; fsync off while filling."""
    store = SessionStore(folder, durable=False)
    ids = {}
    for _ in range((sessions + 2) // 3):
        ids = demo_tree_branching(store)
    # a space in class was not all written in the last 2 s: files younger than that are re-read by every search
    # (bounded.is_racy), which would time the racy rule, not the handlers
    time.sleep(RACY_NS / 1e9)
    return ids


def pi_transcript(path: Path, tag: str, size: int = IMPORT_BYTES) -> Path:
    """A linear Pi v3 session of about `size` bytes; `tag` makes every id new, so each import writes."""
    lines = [{"type": "session", "version": 3, "id": f"bench-{tag}", "timestamp": "2026-03-14T14:10:00.000Z",
              "cwd": "/home/dev/bench"}]
    parent, index, total = None, 0, 0
    while total < size:
        role = "user" if index % 2 == 0 else "assistant"
        text = f"第 {index} 条：" + "报表缓存要改成 LRU，先量一下内存。" * 60
        entry = {"type": "message", "id": f"{tag}{index:06d}", "parentId": parent,
                 "timestamp": "2026-03-14T14:10:20.060Z", "message": {"role": role, "content": text}}
        lines.append(entry)
        total += len(json.dumps(entry, ensure_ascii=False).encode("utf-8"))
        parent, index = entry["id"], index + 1
    path.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    return path


def background_writes() -> None:
    """Wait (untimed) for the explorer's background warm-up and search-index writer threads."""
    for thread in [t for t in threading.enumerate() if t.name in ("s11x-warm", "s11x-index")]:
        thread.join()


class Handlers:
    """The eight handlers, each a zero-argument call for time_runs, with untimed setup where a run consumes state."""

    def __init__(self, new_explorer: Callable[[], Explorer], token: str, ids: dict, uploads: Path):
        self.new_explorer = new_explorer
        self.explorer, self.token, self.ids, self.uploads = new_explorer(), token, ids, uploads
        self.view = self.explorer.select(token, View(), ids["branch_b_id"]).view
        self.resume_view = self.explorer.select(token, View(), ids["branch_a_id"]).view
        self.victim: Optional[View] = None
        self.deleted: Optional[str] = None
        self.upload: Optional[Path] = None
        self.runs = 0

    def check(self, page) -> None:
        if page.notice.startswith("⚠️"):
            raise SystemExit(f"handler refused: {page.notice}")

    def list(self):
        self.check(self.explorer.refresh(self.token, self.view))

    def select(self):
        self.check(self.explorer.select(self.token, self.view, self.ids["branch_b_id"]))

    def search(self):
        """Full text over every message of the 2,000 sessions (the text cache warm after the first run)."""
        page = self.explorer.refresh(self.token, self.view, "WeakValueDictionary 弱引用")
        self.check(page)
        if not page.hits:
            raise SystemExit("search found nothing")

    def empty_cache(self):
        background_writes()   # the index an earlier search writes in the background is on disk, as after a restart
        self.explorer = self.new_explorer()   # as after a start-up: a new Explorer starts with empty caches

    def search_first_ever(self):
        self.empty_cache()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(search_index.index_path(self.explorer.spaces.open(self.token).folder))
        wall, cpu = time.perf_counter(), time.thread_time()
        self.search()
        return time.perf_counter() - wall, time.thread_time() - cpu

    def search_cold(self):
        self.empty_cache()   # what the first search after a start-up costs, with no page rendered before it
        self.search()

    def page_load(self):
        """Untimed: an empty cache, one render (the page opening), and its background warm-up awaited."""
        self.empty_cache()
        self.explorer.select(self.token, self.view, self.ids["branch_b_id"])
        background_writes()

    def map_pick(self):
        self.runs += 1
        page = self.explorer.map_pick(self.token, self.view, f"{self.ids['branch_a_id']}#{self.runs}")
        self.check(page)

    def jump(self):
        self.check(self.explorer.jump(self.token, self.view, self.ids["branch_b_id"], 6))

    def sibling(self):
        self.check(self.explorer.next_sibling(self.token, self.view))

    def fork(self):
        self.check(self.explorer.fork(self.token, self.view, 3, "换个思路：先加监控"))

    def resume(self):
        page = self.explorer.resume(self.token, self.resume_view, "再追加一轮")
        self.check(page)
        self.resume_view = page.view

    def export(self):
        self.check(self.explorer.export(self.token, self.view))

    def make_victim(self):
        self.victim = self.explorer.fork(self.token, self.view, 2).view

    def delete(self):
        self.check(self.explorer.delete(self.token, self.victim))

    def make_deleted(self):
        page = self.explorer.delete(self.token, self.explorer.fork(self.token, self.view, 2).view)
        self.deleted = page.trash_choices[0][1]

    def restore(self):
        self.check(self.explorer.restore(self.token, self.view, self.deleted))

    def make_upload(self):
        self.runs += 1
        self.upload = pi_transcript(self.uploads / f"bench-{self.runs}.jsonl", f"r{self.runs:03d}")

    def import_upload(self):
        self.check(self.explorer.import_upload(self.token, self.view, str(self.upload)))


def timed(call: Callable[[], object], runs: int, setup: Optional[Callable[[], object]] = None,
          warmup: int = 0) -> tuple[List[float], List[float]]:
    """(wall seconds, CPU seconds of this thread) for each run: the CPU figure leaves out waiting for the CPUs
    other processes hold (and for fsync), so a loaded machine shows up as wall >> CPU."""
    for _ in range(warmup):
        call()
    walls, cpus = [], []
    for _ in range(runs):
        if setup is not None:
            setup()
        wall, cpu = time.perf_counter(), time.thread_time()
        call()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.thread_time() - cpu)
    return walls, cpus


def row(name: str, walls: List[float], cpus: List[float]) -> list:
    return [name, c.ms(c.median(walls), 1), c.ms(c.percentile(walls, 0.95), 1), c.ms(c.median(cpus), 1)]


def handler_table(handlers: Handlers, runs: int) -> List[list]:
    plan: List[tuple[str, Callable[[], object], Optional[Callable[[], object]]]] = [
        ("list", handlers.list, None), ("select", handlers.select, None),
        ("search (full text), warm", handlers.search, None), ("search, cold cache", handlers.search_cold, None),
        ("search, first after a page load", handlers.search, handlers.page_load),
        ("map pick (click a node)", handlers.map_pick, None),
        ("jump to a hit", handlers.jump, None), ("sibling ▶", handlers.sibling, None), ("fork", handlers.fork, None),
        ("resume", handlers.resume, None), ("export", handlers.export, None),
        ("delete", handlers.delete, handlers.make_victim), ("restore", handlers.restore, handlers.make_deleted),
        ("import 1 MB", handlers.import_upload, handlers.make_upload)]
    rows = []
    for name, call, setup in plan:
        rows.append(row(name, *timed(call, runs, setup=setup, warmup=0 if setup else 1)))
    return rows


def big_inputs(root: Path, explorer: Explorer, spaces: Spaces, runs: int) -> List[list]:
    """Selecting a 5,000-message session and a node of a 1,000-node tree (in spaces of their own)."""
    rows = []
    token = spaces.new_token()
    store = SessionStore(spaces.open(token).folder, durable=False)
    long_id = store.create_session("5,000 条消息", [{"role": "user" if i % 2 == 0 else "assistant",
                                                  "content": f"第 {i} 条消息"} for i in range(5000)])
    parent = SessionNode(title="根", messages=[{"role": "user", "content": "0"}])
    store.save(parent)
    for i in range(1, 1000):
        child = SessionNode(title=f"第 {i} 层", parent_id=parent.session_id, fork_point=1,
                            messages=[{"role": "user", "content": str(i)}])
        store.save(child)
        parent = child
    for name, sid in (("select a 5,000-message session", long_id), ("select in a 1,000-node tree", parent.session_id)):
        rows.append(row(name, *timed(lambda sid=sid: explorer.select(token, View(), sid), runs, warmup=1)))
    return rows


def cold_search_parts(handlers: Handlers, runs: int) -> str:
    """CPU medians of the two biggest parts of a cold search, each timed alone on the same space right after the
    table: the store's listing (one lstat per session file, summaries from its cache; the search texts are keyed
    on the stamps it has just checked) and reading the space's search index. The rest of the row is putting the
    texts into the cache, the search itself, the page, and the garbage collector."""
    space = handlers.explorer.spaces.open(handlers.token)
    listing = c.median(timed(space.store.list_sessions, runs)[1])
    index = c.median(timed(lambda: search_index.read(space.folder), runs)[1])
    return f"the cold search's biggest parts, CPU medians timed alone: list_sessions {c.ms(listing, 1)} ms, " \
           f"reading the search index {c.ms(index, 1)} ms"


def reading_floor(folder: str) -> float:
    """CPU seconds (median of 3) to open, read and json.loads every session file of the space, nothing else:
    what any search that reads the files itself costs at least (no checks, no text extraction, no page).
    The demo trees are small sessions: each file is one JSON document (version 3)."""
    paths = [entry.path for entry in os.scandir(folder) if entry.name.endswith(".json")]

    def read_all() -> None:
        for path in paths:
            with open(path, "rb") as handle:
                json.loads(handle.read())
    return c.median(timed(read_all, 3)[1])


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 runs per handler, no big-input rows")
    parser.add_argument("--runs", type=int, help="runs per handler (default 30, --quick 5)")
    parser.add_argument("--sessions", type=int, default=SESSIONS, help="sessions in the space (default 2,000)")
    args = parser.parse_args(argv)
    runs = args.runs or (5 if args.quick else 30)
    root = Path(tempfile.mkdtemp(prefix=".bench-explorer-", dir=Path(__file__).resolve().parent))
    c.print_header(f"bench_explorer: s11_workbench.explorer handlers on a space with {args.sessions:,} sessions (no gradio)",
                   {"scratch": f"{root} — {c.filesystem_of(root)}", "fsync": "on for every handler"})
    try:
        spaces = Spaces(root / "sessions", limits=ROOMY)
        uploads = root / "uploads"
        uploads.mkdir()

        def new_explorer() -> Explorer:
            return Explorer(spaces, export_root=str(root / "exports"), upload_root=str(uploads))

        token = spaces.new_token()
        ids = fill_space(spaces.open(token).folder, args.sessions)
        count = len(spaces.open(token).store.list_sessions())
        floor = reading_floor(spaces.open(token).folder)   # before the handlers add chunked (multi-line) files
        handlers = Handlers(new_explorer, token, ids, uploads)
        first_ever = [handlers.search_first_ever() for _ in range(min(runs, 5))]   # on the 2,001 demo sessions
        rows = handler_table(handlers, runs)
        parts = cold_search_parts(handlers, runs)
        if not args.quick:
            rows += big_inputs(root, new_explorer(), spaces, runs)
        c.print_table(f"handlers, {runs} runs each, space of {count:,} sessions (ms)",
                      ["handler", "median", "p95", "CPU median"], rows,
                      note="each figure includes rendering the whole page (list, check(), tree, path, map); "
                           f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
                           f"a search with no cache and no index reads every session file: open + read + json.loads of all {count:,} "
                           f"alone take {c.ms(floor, 1)} ms CPU (no checks, no texts, no page)\n{parts}\n"
                           f"the first search ever in the space (no cache, no search index yet, {len(first_ever)} runs) "
                           f"reads them all: median {c.ms(c.median([w for w, _ in first_ever]), 1)} ms, "
                           f"CPU {c.ms(c.median([u for _, u in first_ever]), 1)} ms (no budget: above the floor "
                           "of reading every file; a page load's warm-up or any search writes the index)")
        c.report([c.Budget(f"explorer handler median on {count:,} sessions: {name}", float(median) / 1000,
                           TARGET_MEDIAN_S) for name, median, *_ in rows])
    finally:
        background_writes()   # an index writer still running would leave files behind in the removed tree
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
