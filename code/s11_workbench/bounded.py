"""bounded.py — 工作台的每空间缓存：一个有界、线程安全的小字典，和唯一一条“刚改过的文件不可信”的规则

    texts = BoundedCache(max_size=2_000_000, size=len)   # 或 BoundedCache(max_entries=8)
    found = texts.get(path, stamp)                       # 戳对得上、也不“太新”才算命中，否则 None
    if found is None:
        found = texts.put(path, stamp, read(path), mtime_ns=stamp[2])

戳（stamp）是调用方说“内容没变”的凭据：文件的 file_stamp() = (inode, 大小, 修改时间)，或摘要的指纹。

关键洞察：文件系统的修改时间有粒度（ext4 在有的内核上是一个时钟刻，FAT 是 2 秒）。存下时文件刚改过不到
RACY_NS，同一个刻里再改成同样大小，戳就一模一样——所以这样的条目先不算数（下一次照样重算，那时它已经不新了，
再存下的就可信）。这就是 git 处理 "racy" 索引的办法；工作台的每个缓存都用这一条，不各写一套。

保证：条目数 ≤ max_entries；给了 size 时各值的 size 之和 ≤ max_size（比 max_size 还大的值不存）；满了先丢最久
没用到的。所有方法可以在 gradio 的线程池里并发调用。不做：跨进程共享（每个进程自己读文件）。
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Hashable, Optional

from s11_storage import stat_key

RACY_NS = 2_000_000_000   # 修改时间离存下的时刻不到 2 秒：同一个时钟刻里的下一次改动可能看不出来


def file_stamp(path: str) -> Optional[tuple]:
    """文件的 (inode, 大小, 修改时间纳秒)；读不到（不存在、没有权限）时 None。只 lstat，不跟随符号链接。"""
    try:
        return stat_key(os.lstat(path))
    except OSError:
        return None


def is_racy(mtime_ns: Optional[int], now_ns: Optional[int] = None) -> bool:
    """修改时间离 now 不到 RACY_NS（或在 now 之后：时钟被调回）：这样的戳还不能证明内容没变。"""
    if mtime_ns is None:
        return False
    return (time.time_ns() if now_ns is None else now_ns) - mtime_ns < RACY_NS


class BoundedCache:
    """键 → (戳, 值) 的有界字典，按最近用到的先后淘汰。"""

    def __init__(self, max_entries: int = 1_000_000, *, max_size: Optional[int] = None,
                 size: Optional[Callable[[Any], int]] = None):
        self.max_entries, self.max_size, self._size = max_entries, max_size, size
        self._items: OrderedDict = OrderedDict()   # 键 -> (戳, 值, 值的 size, 可信吗)
        self._total = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, stamp: Any) -> Any:
        """戳相同且可信时给出值，否则 None。"""
        with self._lock:
            item = self._items.get(key)
            if item is None or item[0] != stamp or not item[3]:
                return None
            self._items.move_to_end(key)
            return item[1]

    def peek(self, key: Hashable) -> Optional[tuple]:
        """可信的 (戳, 值)，不管戳现在对不对得上：调用方拿旧的戳比出哪里变了、只补算那一部分。"""
        with self._lock:
            item = self._items.get(key)
            return None if item is None or not item[3] else (item[0], item[1])

    def put(self, key: Hashable, stamp: Any, value: Any, *, mtime_ns: Optional[int] = None) -> Any:
        """存下并返回 value。mtime_ns：戳里最新的修改时间；太新（is_racy）就先存成不可信的。"""
        weight = self._size(value) if self._size is not None else 0
        with self._lock:
            self._drop(key)
            if self.max_size is not None and weight > self.max_size:
                return value
            self._items[key] = (stamp, value, weight, not is_racy(mtime_ns))
            self._total += weight
            while len(self._items) > self.max_entries or \
                    (self.max_size is not None and self._total > self.max_size):
                self._drop(next(iter(self._items)))
        return value

    def discard(self, key: Hashable) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: Hashable) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self._total -= item[2]

    def __len__(self) -> int:
        return len(self._items)

    @property
    def total_size(self) -> int:
        """各值的 size 之和（没给 size 时为 0）。"""
        return self._total

    def items(self) -> list:
        """[(键, 值)]，可信的与不可信的都在内：测试和调试看缓存里有什么。"""
        with self._lock:
            return [(key, item[1]) for key, item in self._items.items()]

    def __iter__(self):
        with self._lock:
            return iter(list(self._items))
