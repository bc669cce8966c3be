"""s11_chains.py — 导出页头的分支路径：刚核对过、目录也没变的祖先链，不再逐个 lstat

    export_markdown(叶子)
      │ TrustedChains.get((叶子, 父))    下面三样都没变 → 原样沿用上次的祖先链
      │   · 目录的修改时间 == 走之前记下的   任何保存（临时文件 + 改名）、删除、恢复、换成链接都会改它
      │   · 每个祖先的摘要缓存值 is 记下的   本仓库读到的任何变化（load、list_sessions）都换掉它
      │   · 走那一遍不到 1 秒               别的程序不换名、原地改写的祖先，最多 1 秒后出现在路径上
      ▼ 否则 SessionStore._walk：每个祖先一次 lstat，走完 TrustedChains.keep(...)

关键洞察：只要所有写入都是“临时文件 + 改名”，一次 stat 目录就能代替 N 次 lstat 祖先——前提是目录的时间
离现在足够远，同一个时钟刻里的下一次改名才一定会改变它（git 的 "racy clean" 同一个道理）。

    chains = TrustedChains(folder)
    trusted = chains.get(key, summary_cache)          # None：重走一遍
    folder_ns = chains.folder_time()                  # 走之前看
    ... 逐个祖先 lstat ...
    chains.keep(key, folder_ns, ancestors, summary_cache, file_of)

本模块只 import 标准库；摘要缓存（路径 → (stat_key, 值的元组)）归 SessionStore 所有，这里只读。
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple

# 最多记几条祖先链、每条最多几层（更深的每次都逐个核对），以及核对过的链沿用多久。
# 课堂的服务器上每个空间一个仓库：8 条 × 32 层，引用的多半就是仓库里已有的摘要字典
CHAINS = 8
CHAIN_DEPTH = 32
TRUST_NS = 1_000_000_000

Key = Tuple[str, str]   # (节点 ID, 父 ID)


class _Chain(NamedTuple):
    folder_ns: int                          # 走之前目录的修改时间
    walked_at: int                          # 走完的时刻（time.monotonic_ns）
    values: Tuple[Tuple[str, tuple], ...]   # 每个祖先：(路径, 摘要缓存里那个值的元组)
    summaries: List[Dict[str, Any]]         # 从根到父节点的摘要（只读）


class TrustedChains:
    """一个仓库目录最近核对过的祖先链，最多 CHAINS 条。"""

    def __init__(self, folder: str):
        self.folder = folder
        self._chains: Dict[Key, _Chain] = {}

    def __len__(self) -> int:
        return len(self._chains)

    def __iter__(self) -> Iterator[Key]:
        return iter(list(self._chains))

    def clear(self) -> None:
        self._chains.clear()

    def folder_time(self) -> Optional[int]:
        """目录现在的修改时间（纳秒）；看不了返回 None（这时什么都不记）。"""
        try:
            return os.stat(self.folder).st_mtime_ns
        except OSError:
            return None

    def get(self, key: Key, summary_cache: Dict[str, Tuple[int, tuple]]) -> Optional[List[Dict[str, Any]]]:
        """上一次为同一个节点走过的祖先链（从根到父节点），三样都没变时原样给出，否则 None。"""
        chain = self._chains.get(key)
        if chain is None or time.monotonic_ns() - chain.walked_at > TRUST_NS:
            return None
        if self.folder_time() != chain.folder_ns:
            return None
        for path, values in chain.values:
            entry = summary_cache.get(path)
            if entry is None or entry[1] is not values:
                return None
        return chain.summaries

    def keep(self, key: Key, folder_ns: Optional[int], summaries: List[Dict[str, Any]],
             summary_cache: Dict[str, Tuple[int, tuple]], file_of: Callable[[str], str]) -> None:
        """记下刚走过的祖先链。不记：目录在走之前的 racy_margin_ns 之内改过、链被截断了（祖先删了、读不了、
        成环：每次都重走，读不了的那个每次导出都记一条警告）、太深，或某个祖先不在摘要缓存里。"""
        if folder_ns is None or not summaries or len(summaries) > CHAIN_DEPTH or summaries[0]["parent_id"]:
            return
        if time.time_ns() - folder_ns <= racy_margin_ns(folder_ns):
            return
        values = []
        for summary in summaries:
            path = file_of(summary["session_id"])
            entry = summary_cache.get(path)
            if entry is None:
                return
            values.append((path, entry[1]))
        if len(self._chains) >= CHAINS:
            self._chains.clear()   # 满了就整个清掉：一步完成，别的线程同时在用也不会出错
        self._chains[key] = _Chain(folder_ns, time.monotonic_ns(), tuple(values), summaries)


def racy_margin_ns(mtime_ns: int) -> int:
    """目录时间离现在至少这么远，才能断定之后的改名一定会改变它。
    纳秒里带着零头的文件系统（ext4、xfs、btrfs、tmpfs：时间戳按内核时钟刻走，一刻不超过 10 ms）留 50 ms；
    整毫秒、整秒的（FAT 2 秒、HFS+ 1 秒、exFAT 10 ms）留 3 秒。

    >>> racy_margin_ns(1_733_000_000_123_456_789), racy_margin_ns(1_733_000_000_000_000_000)
    (50000000, 3000000000)
    """
    return 50_000_000 if mtime_ns % 1_000_000 else 3_000_000_000
