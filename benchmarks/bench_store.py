"""bench_store.py — bytes the store writes, held against what is new.

    python benchmarks/bench_store.py             # sessions of 1,000 and 10,000 messages
    python benchmarks/bench_store.py --quick     # sessions of 200 and 2,000 messages (a smoke test)

    a session of N messages (saved untimed) ──┬─> 100 forks, each adding one message     store.fork(root, [msg])
                                              ├─> 20 appends of one message + save()     store.load → append → save
                                              └─> save after every message, the last 100 of the N
    bytes written = this process's `wchar` in /proc/self/io around the measured calls (every write() the store
    makes: temp files, chunks, heads, indexes); new = the compact JSON of the messages the operation added.

Budget (absolute, PASS / MISS at the end; issue 40: "bytes written proportional to what is new"): one operation
writes at most FIXED_BYTES + NEW_FACTOR × the new bytes, whatever the session's length. A store that rewrote the
whole history would write the session's size every time (hundreds of KiB to MiB here) and miss at 10,000 messages.

CPU-time curves (save after one appended message, check() of deep fork chains) belong to bench_curves.py.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, List, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

c.setup_paths()
from s11_session import SessionStore  # noqa: E402

FIXED_BYTES = 192 * 1024   # a head, an index and the open tail chunk (64 KiB) written through a temp file
NEW_FACTOR = 4             # the new messages themselves, pretty-printed and escaped, may take a few times their size

# one turn of a coding-agent conversation: Chinese prose, English identifiers, a little code (~300 bytes)
TURNS = [
    ("user", "服务连续运行 3 天后内存从 200MB 涨到 3GB，请帮我定位 event_listener 注册表的问题（第 {i} 轮）。"),
    ("assistant", "已检查 cache_store.py 第 {i} 行：`_listeners.append(cb)` 从不移除回调，"
                  "建议改用 weakref.WeakSet 并在 close() 里 clear()。下一步运行 pytest -k leak 验证。"),
    ("user", "$ pytest -k leak -q\n....F.\nFAILED tests/test_leak.py::test_listener_{i} - "
             "AssertionError: 4096 listeners still alive\n1 failed, 5 passed in 0.{i}s"),
]


def message(i: int) -> dict:
    role, text = TURNS[i % len(TURNS)]
    return {"role": role, "content": text.format(i=i)}


def messages(count: int) -> List[dict]:
    return [message(i) for i in range(count)]


def size_of(items: List[dict]) -> int:
    return len(json.dumps(items, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def written() -> int:
    """Bytes this process has passed to write() so far (/proc/self/io wchar; 0 where there is no /proc)."""
    try:
        with open("/proc/self/io", encoding="ascii") as handle:
            return next(int(line.split()[1]) for line in handle if line.startswith("wchar:"))
    except (OSError, StopIteration):
        return 0


def per_operation(operations: List[Callable[[], List[dict]]]) -> tuple[float, float]:
    """(mean bytes written, mean new bytes) over the operations; each returns the messages it added."""
    total_written, total_new = 0, 0
    for operation in operations:
        before = written()
        added = operation()
        total_written += written() - before
        total_new += size_of(added)
    return total_written / len(operations), total_new / len(operations)


def forks(store: SessionStore, count: int) -> tuple[float, float]:
    root = store.create_session("主干", messages(count))

    def one(i: int) -> Callable[[], List[dict]]:
        new = [message(100_000 + i)]
        return lambda: (store.fork(root, new), new)[1]
    return per_operation([one(i) for i in range(100)])


def appends(store: SessionStore, count: int) -> tuple[float, float]:
    node = store.load(store.create_session("续写", messages(count)))

    def one(i: int) -> Callable[[], List[dict]]:
        def append() -> List[dict]:
            node.messages.append(message(200_000 + i))
            store.save(node)
            return node.messages[-1:]
        return append
    return per_operation([one(i) for i in range(20)])


def save_every_message(store: SessionStore, count: int) -> tuple[float, float]:
    """An agent that saves after each message: the first count-100 untimed, then the last 100 measured."""
    node = store.load(store.create_session("逐条存档", messages(max(1, count - 100))))

    def one(i: int) -> Callable[[], List[dict]]:
        def append() -> List[dict]:
            node.messages.append(message(300_000 + i))
            store.save(node)
            return node.messages[-1:]
        return append
    return per_operation([one(i) for i in range(100)])


WORKLOADS = {"100 forks, one new message each": forks, "20 appends, one message + save()": appends,
             "save after every message (the last 100)": save_every_message}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sessions of 200 and 2,000 messages")
    parser.add_argument("--scratch", help="folder for the stores (default: benchmarks/)")
    parser.add_argument("--messages", help="comma-separated session lengths (default 1000,10000; --quick 200,2000)")
    args = parser.parse_args(argv)
    sizes = (200, 2000) if args.quick else (1000, 10_000)
    if args.messages:
        sizes = tuple(int(size) for size in args.messages.split(","))
    c.print_header("bench_store — bytes written per operation against the bytes that are new",
                   {"budget": f"≤ {FIXED_BYTES // 1024} KiB + {NEW_FACTOR} × new bytes per operation"})
    root = Path(tempfile.mkdtemp(prefix=".bench-store-", dir=args.scratch or Path(__file__).resolve().parent))
    rows, budgets = [], []
    try:
        for count in sizes:
            for name, workload in WORKLOADS.items():
                folder = root / f"{count}-{len(rows)}"
                store = SessionStore(str(folder), durable=False)   # fsync changes the time, not the bytes
                mean_written, mean_new = workload(store, count)
                session = size_of(messages(count))
                limit = FIXED_BYTES + NEW_FACTOR * mean_new
                rows.append([name, f"{count:,}", c.human_bytes(session), c.human_bytes(int(mean_new)),
                             c.human_bytes(int(mean_written)), c.human_bytes(int(limit))])
                budgets.append(c.Budget(f"bytes written per operation, {name}, {count:,} messages "
                                        f"(budget {FIXED_BYTES // 1024} KiB + {NEW_FACTOR} × new)",
                                        mean_written / 1024, limit / 1024, "KiB"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    c.print_table("bytes written per operation (mean)", ["workload", "messages", "session (compact JSON)", "new",
                                                         "written", "budget"], rows,
                  note="a store that rewrote every node's whole history would write about the session's size each "
                       "time; the budget does not grow with the session.")
    c.report(budgets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
