"""bench_curves.py — the three cost curves of issue 40 item 2, in CPU time, each against an absolute budget.

    python benchmarks/bench_curves.py            # about a minute on 2 idle cores
    python benchmarks/bench_curves.py --quick    # small sizes (a smoke test; budgets still printed)

    a. save one appended message: a session of 1,000 and of 20,000 messages (~230 bytes each), loaded once,
       then 20 × (append one message, save); CPU per save.           budget: 20k ≤ 4 × 1k
    b. check() of a fork chain 100 and 400 deep (each fork adds 5 messages to a 400-message root).
                                                                      budget: 400 ≤ 6 × 100
    c. the whole-tree export (s11_tree_export.prepare + render_html) of the same chains.
                                                                      budget: 400 ≤ 6 × 100

CPU time (time.process_time: user + system of this process) so other load on a shared machine counts less
than in wall-clock time; folders are durable=False (no fsync) under the system temp folder and removed at the end.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import _common
from _common import print_header, print_table, setup_paths

setup_paths()

import s11_tree_export  # noqa: E402
from s11_session import SessionNode, SessionStore  # noqa: E402

SAVE_BUDGET = 4.0
DEEP_BUDGET = 6.0


def message(i: int) -> dict:
    return {"role": "user" if i % 2 else "assistant", "content": f"第 {i} 条消息：" + "x" * 200}


def cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def save_cost(folder: Path, count: int, saves: int) -> float:
    store = SessionStore(folder / f"save-{count}", durable=False)
    store.save(SessionNode("long", "长会话", messages=[message(i) for i in range(count)]))
    node = store.load("long")
    node.messages.append(message(count))
    store.save(node)   # the first save after a load reads the chunks' messages once (to compare with)

    def appends():
        for i in range(saves):
            node.messages.append(message(count + 1 + i))
            store.save(node)
    return cpu(appends) / saves


def chain(folder: Path, depth: int):
    store = SessionStore(folder / f"chain-{depth}", durable=False)
    current = SessionNode("root", "根", messages=[message(i) for i in range(400)])
    store.save(current)
    for k in range(depth):
        current = store.fork(current.session_id, [message(10_000 + 5 * k + j) for j in range(5)])
    return store, current.session_id


def export_tree(store, leaf: str) -> None:
    s11_tree_export.render_html(s11_tree_export.prepare(store, leaf, scope="tree"))


def verdict(big: float, small: float, budget: float) -> str:
    return "PASS" if big <= budget * small else "MISS"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    args = parser.parse_args()
    sizes = (200, 2_000) if args.quick else (1_000, 20_000)
    depths = (20, 80) if args.quick else (100, 400)
    print_header("bench_curves: CPU time of the three curves (issue 40 item 2)")
    folder = Path(tempfile.mkdtemp(prefix="s11-curves-"))
    try:
        small, big = (save_cost(folder, count, 20) for count in sizes)
        rows = [[f"a. save one appended message ({sizes[0]:,} → {sizes[1]:,} messages)",
                 f"{small * 1000:.2f} ms", f"{big * 1000:.2f} ms", f"{big / small:.1f}×",
                 f"≤ {SAVE_BUDGET:g}×", verdict(big, small, SAVE_BUDGET)]]
        chains = [chain(folder, depth) for depth in depths]
        checks = [cpu(store.check) for store, _ in chains]
        exports = [cpu(lambda s=store, leaf=leaf: export_tree(s, leaf)) for store, leaf in chains]
        for name, (low, high) in (("b. check()", checks), ("c. whole-tree export", exports)):
            rows.append([f"{name} of a fork chain ({depths[0]} → {depths[1]} deep)", f"{low * 1000:.0f} ms",
                         f"{high * 1000:.0f} ms", f"{high / low:.1f}×", f"≤ {DEEP_BUDGET:g}×",
                         verdict(high, low, DEEP_BUDGET)])
        print_table("CPU time (time.process_time)", ["curve", "small", "big", "ratio", "budget", ""], rows)
        _common.report([_common.Budget(f"a. save one appended message, {sizes[1]:,} vs {sizes[0]:,} messages", big / small,
                       SAVE_BUDGET, "x"),
                _common.Budget(f"b. check() of a fork chain, {depths[1]} vs {depths[0]} deep", checks[1] / checks[0],
                       DEEP_BUDGET, "x"),
                _common.Budget(f"c. whole-tree export of a fork chain, {depths[1]} vs {depths[0]} deep",
                       exports[1] / exports[0], DEEP_BUDGET, "x")])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
