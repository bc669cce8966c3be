"""bench_tree_export.py — sharing whole trees: 1,000-node trees through the share panel, and a 20 MB imported tree.

    python benchmarks/bench_tree_export.py            # 1,000-node trees; 20 MB, 23 branches; median of 3 runs
    python benchmarks/bench_tree_export.py --quick    # 40-node trees; 2 MB, 5 branches; one run (a smoke test)

    Budget (absolute, PASS / MISS at the end): sharing the whole tree of a 1,000-node tree takes ≤ 1 s per click —
    the share panel's "check what will be masked" (Share.review) and "make the downloads" (Share.download: HTML,
    Markdown and JSONL), for a 1,000-deep fork chain and for a bushy tree of 1,000 nodes.

    generated transcript (bench_import's ClaudeWriter, a /rewind every N turns) ──> import_file(store)
    store ──> gather()        load every node once, keep only each node's own messages (prefix compared)
          ──> review_of()     s11_review.scan: every rule hit, with context
          ──> prepare()       apply the review (masked deep copies) + the manifest
          ──> html / md / jsonl chunks streamed into a file
          ──> import the JSONL into a fresh store (the round trip), and again (nothing written)
    Each stage's time (median), the output sizes, and tracemalloc's peak for one whole HTML export
    (gather + review + prepare + write) next to the transcript's size.

Key insight: every branch node stores its whole history, so the tree holds 23 copies of long prefixes; the export
prints each message once, so its cost should follow the distinct content (about the transcript), not the sum of
the node sizes. The "sum of node sizes" row shows what a naive export (every node's full path) would have to print.
Folders live under benchmarks/ (the repository's filesystem) and are removed at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

c.setup_paths()
from bench_import import ClaudeWriter  # noqa: E402

import s11_import  # noqa: E402
import s11_tree_export as te  # noqa: E402
from s11_import import tree_jsonl  # noqa: E402
from s11_session import SessionStore  # noqa: E402
from s11_workbench.explorer import Explorer, View  # noqa: E402
from s11_workbench.share import Share  # noqa: E402
from s11_workbench.spaces import Limits, Spaces  # noqa: E402

SHARE_BUDGET_S = 1.0   # issue 40: whole-tree share of a 1,000-node tree ≤ 1 s
ROOMY = Limits(creates_per_minute=100_000, create_burst=100_000, min_free_bytes=0)


def chain(store: SessionStore, nodes: int) -> str:
    """A fork chain `nodes` deep: each node forks its parent after the parent's last message and adds one."""
    node_id = store.create_session("深链", [{"role": "user", "content": "第 0 层：从这里开始"}])
    for depth in range(1, nodes):
        node_id = store.fork(node_id, [{"role": "assistant" if depth % 2 else "user",
                                        "content": f"第 {depth} 层：换个思路，联系 dev{depth}@corp-mail.example"}]
                            ).session_id
    return node_id


def bushy(store: SessionStore, nodes: int) -> str:
    """`nodes` nodes, each forked from a random earlier node at a random message, two new messages each."""
    rng = random.Random(7)
    ids = [store.create_session("茂密的树", [{"role": "user" if i % 2 == 0 else "assistant",
                                            "content": f"第 {i} 条：排查 cache_store 内存泄漏"} for i in range(6)])]
    lengths = [6]
    while len(ids) < nodes:
        parent = rng.randrange(len(ids))
        at = rng.randint(1, lengths[parent])
        new = [{"role": "user", "content": f"分支 {len(ids)}：试试方案 {rng.randint(1, 99)}"},
               {"role": "assistant", "content": f"好的，卡号 4111 1111 1111 1111 只是测试数据（{len(ids)}）"}]
        ids.append(store.fork(ids[parent], new, at=at).session_id)
        lengths.append(at + 2)
    return ids[-1]


def share_section(work: Path, nodes: int, runs: int) -> list:
    """Both share clicks on the whole tree, for each shape, through the workbench's own logic (no gradio)."""
    spaces = Spaces(work / "spaces", limits=ROOMY)
    explorer = Explorer(spaces, export_root=str(work / "exports"), upload_root=str(work / "uploads"))
    share = Share(spaces, export_root=str(work / "exports"))
    rows, budgets = [], []
    for shape, build in (("fork chain", chain), ("bushy tree", bushy)):
        token = spaces.new_token()
        started = time.perf_counter()
        leaf = build(SessionStore(spaces.open(token).folder, durable=False), nodes)
        built = time.perf_counter() - started
        view = explorer.select(token, View(), leaf).view
        clicks = (("review", lambda token=token, view=view: share.review(token, view, "tree")),
                  ("download", lambda token=token, view=view: share.download(token, view, "tree")))
        for click, call in clicks:
            panel = call()
            if panel.notice.startswith("⚠️"):
                raise SystemExit(f"share refused: {panel.notice}")
            median = c.median(c.time_runs(call, runs))
            rows.append([f"{nodes:,}-node {shape}", click, c.ms(median, 0), f"{built:.1f}"])
            budgets.append(c.Budget(f"whole-tree share of a {nodes:,}-node {shape}, {click} click", median,
                                    SHARE_BUDGET_S))
    c.print_table(f"share panel, whole tree, median of {runs}", ["tree", "click", "median ms", "built in s"], rows,
                  note="review = Share.review (gather + scan every rule hit); download = Share.download "
                       "(gather + review + prepare + HTML, Markdown and JSONL files).")
    return budgets


def transcript(path: Path, megabytes: float, branches: int) -> int:
    """A Claude Code transcript of about `megabytes` MB whose import has exactly `branches` branches (the rewind
    interval is adjusted until a dry-run import says so, at most a few tries). Returns the branch count reached."""
    probe = ClaudeWriter(random.Random(11), 0)
    probe.build(int(0.5 * 1024 * 1024))
    turns_per_mb = probe.count / 0.5 / 10          # put() calls ≈ 10 per turn
    every = max(2, round(turns_per_mb * megabytes / (branches + 0.5)))
    got = -1
    for _ in range(8):
        text = ClaudeWriter(random.Random(11), every).build(int(megabytes * 1024 * 1024))
        # a few things for the review to find: an e-mail in some prompts, a card number in some tool output
        text = text.replace("refactor", "refactor dev@corp-mail.example").replace(
            "timeout=7)", "timeout=7) 4111 1111 1111 1111")
        path.write_text(text, encoding="utf-8")
        dry = s11_import.import_file(str(path), SessionStore(str(path.parent / "dry"), durable=False), dry_run=True)
        got = len(dry.node_ids) - 1
        if got == branches:
            break
        every = max(2, every + (1 if got > branches else -1))
    return got


def write(chunks, path: Path) -> int:
    with open(path, "w", encoding="utf-8") as handle:
        for chunk in chunks:
            handle.write(chunk)
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 MB, 5 branches, one run")
    parser.add_argument("--megabytes", type=float, help="size of the imported transcript (default 20, --quick 2)")
    parser.add_argument("--branches", type=int, help="branches of the imported tree (default 23, --quick 5)")
    parser.add_argument("--nodes", type=int, help="nodes of the shared trees (default 1,000, --quick 40)")
    args = parser.parse_args()
    megabytes = args.megabytes or (2 if args.quick else 20)
    branches = args.branches or (5 if args.quick else 23)
    runs = 1 if args.quick else 3
    nodes = args.nodes or (40 if args.quick else 1000)
    c.print_header("whole-tree export of an imported transcript", {"transcript": f"{megabytes:g} MB Claude Code",
                                                                   "branches asked": branches, "runs": runs})
    work = Path(tempfile.mkdtemp(prefix=".bench-tree-export-", dir=Path(__file__).resolve().parent))
    try:
        budgets = share_section(work, nodes, runs)
        source = work / "session.jsonl"
        started = time.perf_counter()
        transcript(source, megabytes, branches)
        print(f"generated {c.human_bytes(source.stat().st_size)} in {time.perf_counter() - started:.1f} s", flush=True)
        store = SessionStore(str(work / "store"), durable=False)
        started = time.perf_counter()
        report = s11_import.import_file(str(source), store)
        imported = time.perf_counter() - started
        root = report.root_ids[0]
        summaries = store.list_sessions()
        node_bytes = sum(len(json.dumps(store.load(s["session_id"]).messages, ensure_ascii=False).encode())
                         for s in summaries)
        print(f"imported {len(report.node_ids)} nodes ({len(report.node_ids) - 1} branches) in {imported:.1f} s",
              flush=True)

        state: dict = {}
        t_gather = c.median(c.time_runs(lambda: state.update(g=te.gather(store, root)), runs))
        t_review = c.median(c.time_runs(lambda: state.update(r=te.review_of(state["g"])), runs))
        t_prepare = c.median(c.time_runs(lambda: state.update(p=te.prepare(
            store, root, gathered=state["g"], review=state["r"])), runs))
        sizes = {}
        timings = {}
        for kind, writer in (("html", te.html_chunks), ("md", te.markdown_chunks), ("jsonl", tree_jsonl.jsonl_lines)):
            timings[kind] = c.median(c.time_runs(
                lambda kind=kind, writer=writer: sizes.update({kind: write(writer(state["p"]), work / f"t.{kind}")}),
                runs))
        folders = iter(range(10 ** 6))
        t_import = c.median(c.time_runs(lambda: s11_import.import_file(
            str(work / "t.jsonl"), SessionStore(str(work / f"copy-{next(folders)}"), durable=False)), runs))
        again_store = SessionStore(str(work / "copy-0"), durable=False)
        t_again = c.median(c.time_runs(lambda: s11_import.import_file(str(work / "t.jsonl"), again_store), runs))
        messages = sum(len(m) for m in state["p"].messages)
        hits = len(state["r"].hits)
        del state["p"], state["r"], state["g"]

        tracemalloc.start()
        prepared = te.prepare(store, root)
        write(te.html_chunks(prepared), work / "peak.html")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del prepared

        size = source.stat().st_size
        rows = [["gather (load every node, own messages only)", c.ms(t_gather, 0), ""],
                ["review (every rule hit + context)", c.ms(t_review, 0), f"{hits} hits"],
                ["prepare (apply review, manifest)", c.ms(t_prepare, 0), ""],
                ["write HTML", c.ms(timings["html"], 0), c.human_bytes(sizes["html"])],
                ["write Markdown", c.ms(timings["md"], 0), c.human_bytes(sizes["md"])],
                ["write JSONL", c.ms(timings["jsonl"], 0), c.human_bytes(sizes["jsonl"])],
                ["whole HTML export (gather + review + prepare + write)",
                 c.ms(t_gather + t_review + t_prepare + timings["html"], 0), ""],
                ["import the JSONL into a fresh store", c.ms(t_import, 0), ""],
                ["import it again (nothing written)", c.ms(t_again, 0), ""]]
        c.print_table(f"{c.human_bytes(size)} transcript → {len(summaries)} nodes, {messages} distinct messages", [
            "stage", "median ms", "output"], rows,
            note=f"sum of every node's full history (compact JSON): {c.human_bytes(node_bytes)} (what printing every "
                 f"node's whole path would cost);\ntracemalloc peak of one whole HTML export: {c.human_bytes(peak)} "
                 f"({peak / size:.1f}× the transcript)")
        c.report(budgets)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
