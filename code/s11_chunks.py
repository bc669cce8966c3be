"""s11_chunks.py — 大会话的磁盘布局（version 4）：历史切成不可变、按内容命名的块，写下的只有新的部分

    sessions/
    ├── 5d38f60f4c00.json       小会话：version 3，一个 JSON，自带全部消息（书中代码也读得了，和以前逐字节相同）
    ├── 7f3a9c2e1b04.json       大会话：version 4，几行 JSON：
    │     第 1 行  头    {"version":4,"revision":3,"session_id":…,"title":…,"parent_id":…,"created_at":…,
    │                     "created_ns":…,"fork_point":…,"source":…,"message_count":10000,"first_added":"…",
    │                     "body_bytes":41234}          ← list_sessions() / lineage() 只读这一行
    │     第 2 行  索引  {"workspace":…,"chunks":[["3b9f…",212],["a07c…",198],…],"tail":37}
    │     其后     尾部  最后一块之后的 37 条消息，一行一条紧凑 JSON
    └── .chunks/
        ├── 3b9f….jsonl         块：连续若干条消息，一行一条紧凑 JSON；文件名 = 内容的 sha256
        └── a07c….jsonl         写下后永不修改；分支、续写、回收站里的副本共用同一块

切块：从第 0 条消息起累加每行的字节数，满 chunk_bytes（默认 CHUNK_BYTES = 64 KiB）就在这条之后切一刀。
切点只由它前面的消息决定，所以前缀相同的两个会话切出的块逐字节相同、名字相同：
    主干 [m0 … m9999]        ──► 块 A B C … + 尾部 T
    分叉 [m0 … m9999, n0]    ──► 块 A B C …（已在磁盘上，不写）+ 尾部 T + n0（写下的只有这一行和头、索引）

关键洞察：块按内容命名，“写过没有”只要看名字在不在；分叉、导入的分支、续写写下的字节与新内容成正比，
而 load() 仍然拿到完整的消息列表——书里的 API 一点没变。

保证：
  * 版本规则（也见 s11_format）：消息的紧凑 JSON 不到 big_session_bytes（默认 BIG_SESSION_BYTES = 64 KiB）
    或一刀也切不出的会话写成 version 3；只有切成块的会话写成 version 4。收敛节点（有 converged_from，
    见 s11_converge）同样的两种布局，版本写 5，头里多一个 converged_from；有标签的大会话头里多一个 labels。阈值为 math.inf 时一律写 version 3
    （就是以前“每个节点自带完整前缀”的布局，基准测试拿它对照）。
  * 书中代码读不到被截短的历史：version 4 文件至少有头和索引两行，不是一个 JSON 文档，书里的 json.load
    直接抛错（list_sessions 跳过它，load 抛 JSONDecodeError）——要么读到全部（version 3），要么根本读不了。
  * 每一块读的时候都核对 sha256（与文件名）和行数；缺了、坏了抛 ChunkError（CorruptSession 的子类），
    写明会话、块文件和是第几到第几条消息，从不悄悄用一块坏数据。头里的 body_bytes 让截断、追加一眼可见。
  * 保存的顺序：先写好会话的临时文件（里面就有它要引用的块名），再写缺的块（临时文件 + os.replace，
    durable 时 fsync 块和 .chunks/），最后在目录锁里核对修订号、再确认每一块都在（被清理掉的当场补写）、
    原子改名。所以任何时刻提交了的会话引用的块都在磁盘上。
  * 清理没人引用的块（remove_orphans，empty_trash / delete(purge=True) 之后也跑）只在目录锁里进行：
    先列出块，再收集引用——活的会话、回收站里的副本、正在写的临时会话文件。正在写的保存就靠它的临时文件
    保住要用的块（宽限期 = 临时文件还在的这段时间，不靠时钟），再加上面锁内的确认，清理永远删不掉一块
    已提交的会话引用的块。被 kill -9 留下的临时文件保住它的块，直到清理把它删掉（见下）。
  * 磁盘上某块坏了（内容与名字不符）而保存恰好要用它：用正确的字节原子地换掉它（内容由名字唯一决定），
    引用它的其他会话也就好了；不是普通文件的块（符号链接、FIFO、目录）不打开、不覆盖，保存抛错。
  * 缓存有界：每个仓库对象记住最多 VERIFIED_LIMIT 个“确认过内容”的块（名字 → inode、大小、修改时间），
    只用来在保存时跳过重读；读档永远核对 sha256。
  * 被 kill -9 留下的临时文件（没有写入者锁着、也有一阵没动）在清空回收站、check 后的清理里先被删掉
    （s11_storage.remove_abandoned_temps），它们保住的块随后才算没人引用。

三处让代价随“新的部分”而不是随全部历史增长（其余都是最直接的写法）：
  * 保存一条续写的消息（plan 的 stored）：load() / save() 在节点上记下磁盘上的块（名字、条数、字节）。再次保存时，
    消息列表开头与某几块读出的消息逐条相等（== 在 C 里比，原地改过的消息比得出来），就照用这几块，只编码、
    只算 sha256 从最后一个切点起的部分：切点只由前面的消息决定，所以照用的块不变。块里读出的消息第一次要比的
    时候才解析一次（与节点的 messages 是不同的对象）。别的情形（前面的消息改了、换了列表）整份重新规划。
    值相等就算没变：把 1 原地改成 1.0 或 True 不会被发现（块里仍是 1）。
  * 导入（Batch）：一批保存里同一个消息对象只检查、编码一次，父节点在这一批里规划过时子节点照搬它的切点和块，
    同一块只读、只解析一次——导入一棵共享前缀的树，CPU 随新内容增长，而不是随每个节点的长度之和。
  * 体检（problems）：每块只核对、只解析检查一次，每个会话只解析它自己的头、索引和尾部，深的分支链不再平方增长。

限制：原地改了前面某条消息再保存，这条之后的切点会移动，其后的块都要重写（CPU 和写下的字节都与其后的长度
成正比）；续写与分叉不受影响。块只在同一个仓库目录里共享。不压缩、不加密。
本模块只依赖标准库和 s11_storage / s11_format / s11_tree。
"""

from __future__ import annotations

import bisect
import concurrent.futures
import contextlib
import hashlib
import logging
import operator
import os
import re
import stat
import threading
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple

import s11_tree
from s11_format import (
    CHUNKED_VERSION,
    CHUNKED_VERSIONS,
    CONVERGE_VERSION,
    PLAIN_VERSION,
    ChunkError,
    CorruptSession,
    InvalidMessage,
    SessionError,
    check_fields,
    decode_listing,
    decode_session,
    encode_line,
    encode_message_lines,
    encode_session,
    newer_head,
    parse_json,
    parse_json_lines,
    unreadable,
    validate_messages,
)
from s11_storage import (
    PendingWrite,
    abandoned_temps,
    entry_kind,
    fsync_dir,
    read_regular_file,
    temp_file_problem,
)

__all__ = ["CHUNK_DIR", "CHUNK_BYTES", "BIG_SESSION_BYTES", "VERIFIED_LIMIT", "Plan", "Batch", "StoredChunk",
           "Loaded", "ChunkStore", "plan", "cut_points", "head_of", "decode_node"]

log = logging.getLogger(__name__)

CHUNK_DIR = ".chunks"
CHUNK_SUFFIX = ".jsonl"
CHUNK_BYTES = 64 * 1024          # 块的目标大小：续写时每次重写的尾部不到这么多字节
BIG_SESSION_BYTES = 64 * 1024    # 消息的紧凑 JSON 不到这么多字节的会话写成 version 3
VERIFIED_LIMIT = 4096            # 每个仓库对象最多记住这么多块“确认过内容”（约 0.5 MB）
WRITE_GROUP = 64                 # 一次最多同时打开这么多个块的临时文件
SYNC_THREADS = 16                # 一起 fsync 时最多用这么多线程
_CHUNK_NAME = re.compile(r"[0-9a-f]{64}" + re.escape(CHUNK_SUFFIX))
_REFERENCE = re.compile(rb'\[\s*"([0-9a-f]{64})"\s*,')   # 索引行里的 ["<sha256>", 条数]
_HEAD_FIELDS = ("revision", "session_id", "title", "parent_id", "created_at", "created_ns", "fork_point", "source")


# ── 写：一个会话 → 会话文件的字节 + 它引用的块 ───────────────────────────────────────────────
class StoredChunk:
    """磁盘上的一块：名字（内容的 sha256）、条数、字节；读出的消息第一次要用时才解析（messages()）。
    内容由名字唯一决定，所以同一块的读出值处处相同；它们是新的对象，与任何节点的 messages 不共用。"""

    __slots__ = ("name", "count", "data", "_messages", "_labels")

    def __init__(self, name: str, count: int, data: bytes):
        self.name, self.count, self.data = name, count, data
        self._messages: Optional[List[Any]] = None
        self._labels: Optional[List[list]] = None

    def messages(self) -> List[Any]:
        if self._messages is None:
            self._messages = parse_json_lines(self.data, self.count, self.name)
        return self._messages

    def labels(self) -> List[list]:
        """块里带标签的消息 [[块里的第几条（1 起）, 标签], …]（s11_tree.message_labels），算一次。"""
        if self._labels is None:
            self._labels = s11_tree.message_labels(self.messages())
        return self._labels


class Plan(NamedTuple):
    """save() 要写的全部：会话文件的字节，和它按顺序引用的块 [(名字, 字节)]（version 3 没有块）。
    head：version 4 文件的头（摘要要用的 message_count、first_added、labels 都在里面），version 3 为 None。
    stored：保存之后节点在磁盘上的块（下一次保存照用它们，见模块文档）。"""
    raw: bytes
    chunks: List[Tuple[str, bytes]]
    head: Optional[Dict[str, Any]] = None
    stored: Sequence[StoredChunk] = ()


class Batch:
    """一批保存（导入器的 SessionStore.batch()、save_many、write_costs）共用的记忆，见模块文档：
    lines：id(消息) → (消息, 一行字节)；chunks：这一串消息对象的 id → 块；planned：会话 ID → 这一批里为它
    规划的结果（子节点照搬）；present：这一批里确认过在盘上的块；parsed：块名 → 这一批里读出（检查过）的消息和那一块；
    prepared：会话 ID → (s11_format.payload_key, Plan)，write_costs 规划过、随后的 save() 照用的（节点没改过时）。
    只在一次调用之内可信（调用之间调用方可能原地改了消息），所以单个 save() 从不用它。"""

    def __init__(self) -> None:
        self.lines: Dict[int, Tuple[Any, bytes]] = {}
        self.chunks: Dict[Tuple[int, ...], StoredChunk] = {}
        self.planned: Dict[str, "_Planned"] = {}
        self.present: set = set()
        self.parsed: Dict[str, Tuple[List[Any], StoredChunk]] = {}
        self.prepared: Dict[str, Tuple[Any, Plan]] = {}


class _Planned(NamedTuple):
    messages: List[Any]
    lines: List[bytes]            # 每条消息的一行字节（整个节点）
    ends: List[int]               # 每块的结束位置
    chunks: List[StoredChunk]
    labels: List[list]


class _Base(NamedTuple):
    """规划时可以照用的开头：前 start 条是 chunks 这几块；lines 是第 start 到 checked 条已经编码好的行；
    前 checked 条已经检查过；labels 是前 checked 条里的标签。"""
    chunks: List[StoredChunk]
    start: int
    lines: List[bytes]
    checked: int
    labels: List[list]


_NOTHING = _Base([], 0, [], 0, [])


def cut_points(sizes: Iterable[int], chunk_bytes: float, start: int = 0) -> List[int]:
    """每块的结束位置：从第 0 条（或切点 start）起累加，满 chunk_bytes 就在这条之后切。[40, 40, 40, 10] 按 64 -> [2]

    >>> cut_points([40, 40, 40, 10], 64), cut_points([100, 1, 1], 64), cut_points([1, 1], 64)
    ([2], [1], [])
    """
    ends, run = [], 0
    for position, size in enumerate(sizes, start + 1):
        run += size
        if run >= chunk_bytes:
            ends.append(position)
            run = 0
    return ends


def plan(payload: Dict[str, Any], *, threshold: float = BIG_SESSION_BYTES, chunk_bytes: float = CHUNK_BYTES,
         batch: Optional[Batch] = None, stored: Iterable[StoredChunk] = ()) -> Plan:
    """要保存的字典（SessionStore._plan 拼好的）→ Plan。先检查（与 load() 相同的 check_fields）、编码，
    出错时抛 InvalidMessage，什么都没写。stored：节点上次读到或写下时磁盘上的块（见模块文档）。"""
    sid, messages = payload["session_id"], payload["messages"]
    base = _NOTHING
    if isinstance(messages, list):
        base = _inherited(payload, batch) if batch is not None else _unchanged_chunks(stored, messages)
    try:
        check_fields(payload, f"会话 {sid}", start=base.checked)
    except CorruptSession as exc:
        raise InvalidMessage(str(exc)) from None
    converged = "converged_from" in payload   # 收敛节点写 version 5（布局不变），其余照旧 3 / 4
    where = f"会话 {sid} 的"
    lines = base.lines + encode_message_lines(messages[base.checked:], where,
                                              batch.lines if batch is not None else None, base.checked + 1)
    sizes = [len(line) + 1 for line in lines]   # lines[i] 是第 base.start + i 条
    chunks, start = list(base.chunks), base.start
    for end in cut_points(sizes, chunk_bytes, base.start):
        chunks.append(_chunk(lines[start - base.start:end - base.start], messages, start, end, batch))
        start = end
    labels = base.labels + [[number + base.checked, label]
                            for number, label in s11_tree.message_labels(messages[base.checked:])]
    if batch is not None:
        done = batch.planned.get(payload["parent_id"]) if base.start else None
        batch.planned[sid] = _Planned(messages, (done.lines[:base.start] if done else []) + lines,
                                      _ends(chunks), chunks, labels)
    total = sum(len(chunk.data) for chunk in base.chunks) + sum(sizes)
    if not chunks or total < threshold:   # 小会话：章节的自带全部消息的文件
        return Plan(encode_session({**payload, "version": CONVERGE_VERSION if converged else PLAIN_VERSION}, sid), [])
    head = {"version": CONVERGE_VERSION if converged else CHUNKED_VERSION,
            **{key: payload[key] for key in _HEAD_FIELDS},
            "message_count": len(messages), "first_added": s11_tree.first_added(messages, payload["fork_point"])}
    if converged:
        head["converged_from"] = payload["converged_from"]
    if labels:   # 会话树只读头就能显示标签；旧程序不认识这个键也无妨
        head["labels"] = labels
    index = {"workspace": payload["workspace"], "chunks": [[chunk.name, chunk.count] for chunk in chunks],
             "tail": len(messages) - start}
    body = b"".join([encode_line(index, where, "工作区快照"), b"\n",
                     *(line + b"\n" for line in lines[start - base.start:])])
    head["body_bytes"] = len(body)
    return Plan(encode_line(head, where, "标题或 source") + b"\n" + body,
                [(chunk.name, chunk.data) for chunk in chunks], head, chunks)


def _unchanged_chunks(stored: Iterable[StoredChunk], messages: List[Any]) -> _Base:
    """磁盘上开头的几块，只要它们读出的消息与 messages 的开头逐条相等（==，在 C 里比）就照用。"""
    reused: List[StoredChunk] = []
    labels: List[list] = []
    start = 0
    for chunk in stored:
        end = start + chunk.count
        try:
            if end > len(messages) or messages[start:end] != chunk.messages():
                break
        except Exception:   # 调用方自己的类型比较时出错：不照用，整份重新检查、编码（会说清哪里不对）
            break
        labels += [[number + start, label] for number, label in chunk.labels()]
        reused.append(chunk)
        start = end
    return _Base(reused, start, [], start, labels)


def _inherited(payload: Dict[str, Any], batch: Batch) -> _Base:
    """父节点在这一批里规划过、前 fork_point 条真是它的同一批对象（逐个比 is）时，照搬不超过 fork_point 的块。"""
    parent = batch.planned.get(payload["parent_id"]) if payload["parent_id"] else None
    keep, messages = payload["fork_point"], payload["messages"]
    if parent is None or type(keep) is not int or not 0 < keep <= min(len(parent.messages), len(messages)):
        return _NOTHING
    if not all(map(operator.is_, messages[:keep], parent.messages)):   # 逐个比 is，在 C 里比（每个分支一遍前缀）
        return _NOTHING
    kept = bisect.bisect_right(parent.ends, keep)
    start = parent.ends[kept - 1] if kept else 0
    return _Base(parent.chunks[:kept], start, parent.lines[start:keep], keep,
                 [item for item in parent.labels if item[0] <= keep])


def _ends(chunks: List[StoredChunk]) -> List[int]:
    ends, position = [], 0
    for chunk in chunks:
        position += chunk.count
        ends.append(position)
    return ends


def _chunk(lines: List[bytes], messages: List[Any], start: int, end: int, batch: Optional[Batch]) -> StoredChunk:
    key = tuple(map(id, messages[start:end])) if batch is not None else None
    if key is not None and key in batch.chunks:
        return batch.chunks[key]   # 这一批里前缀相同的节点：同一串消息对象，同一块
    data = b"\n".join(lines) + b"\n"
    found = StoredChunk(hashlib.sha256(data).hexdigest(), end - start, data)
    if key is not None:
        batch.chunks[key] = found   # key 里的 id 在这一批里有效：消息对象被 batch.lines 一直引用着
    return found


# ── 读：会话文件的字节 → 字典 ────────────────────────────────────────────────────────────────
class Loaded(NamedTuple):
    """读一次会话文件得到的全部：升级、检查过的内容，当时的 fstat，它引用的块（version 3 为空）。"""
    data: Dict[str, Any]
    info: os.stat_result
    stored: List[StoredChunk]


def head_of(raw: bytes) -> Optional[Tuple[Any, int]]:
    """多行文件的第一行（JSON 对象）和它后面换行符的位置；version 1–3 的单个 JSON 文档返回 None。

    indent=2 的文件第一行只有 "{"；书中原版的文件也一样。"""
    newline = raw.find(b"\n")
    if newline <= 1 or raw[:1] != b"{" or raw[newline - 1:newline] != b"}":
        return None
    try:
        return parse_json(raw[:newline], "第一行"), newline
    except CorruptSession:
        return None


def decode_node(raw: bytes, path: str, read_chunk: Optional[Callable[[str, int, int, str], bytes]] = None,
                batch: Optional[Batch] = None, stored: Optional[List[StoredChunk]] = None,
                skip: Sequence[str] = ()) -> Dict[str, Any]:
    """会话文件的字节 → 字典。version 1–3 交给 s11_format.decode_session；version 4 核对头、索引、尾部，
    read_chunk 给出时按索引读每一块拼出完整的 messages（检查每一条），否则只给头和索引（保存前核对修订号用）。
    stored：给出时把读到的每一块记进去（节点下次保存照用）。batch：这一批里读过的块不再读、不再解析。
    skip：开头这几块的名字（整棵树导出时父节点的块）；与它们逐个相同的开头几块不读，messages 从其后开始，
    data["skipped"] 是没读的条数（块按内容命名：名字相同，消息就相同）。"""
    found = head_of(raw)
    if found is None or not isinstance(found[0], dict) or found[0].get("version") not in CHUNKED_VERSIONS:
        if found is not None:
            newer_head(found[0], path)
        return decode_session(raw, path)   # 比如多了一行的 version 3 文件：照常报告它坏在哪里
    head, newline = found
    _check_head(head, len(raw) - newline - 1, path)
    second = raw.find(b"\n", newline + 1)
    if second < 0:
        raise CorruptSession(f"会话文件已损坏：{path}：缺少索引行")
    index = parse_json(raw[newline + 1:second], path)
    refs, tail = _check_index(index, head, path)
    tail_bytes = raw[second + 1:]
    if tail_bytes.count(b"\n") != tail or (tail and not tail_bytes.endswith(b"\n")):
        raise CorruptSession(f"会话文件已损坏：{path}：尾部应有 {tail} 条消息，实际行数不符")
    data = {**head, "workspace": index.get("workspace"), "chunks": refs}
    own = parse_json_lines(tail_bytes, tail, path)
    if read_chunk is None:   # 不读块：尾部照样解析、检查，坏了的文件不会被当成好的覆盖
        check_fields({**data, "messages": own}, path, message_count=head["message_count"])
        return data
    skipped = 0
    for (name, _), shared in zip(refs, skip):
        if name != shared:
            break
        skipped += 1
    data["skipped"] = sum(count for _, count in refs[:skipped])
    messages, first = [], data["skipped"] + 1
    for name, count in refs[skipped:]:
        known = batch.parsed.get(name) if batch is not None else None
        if known is None or known[1].count != count:
            part = read_chunk(name, first, first + count - 1, head["session_id"])
            known = (parse_json_lines(part, count, path), StoredChunk(name, count, part))
            if batch is not None:
                _remember_lines(batch, known)
        if stored is not None:   # 节点上记下的块：读出的消息用到时才另外解析一份（不与 messages 共用对象）
            stored.append(known[1])
        messages += known[0]
        first += count
    data["messages"] = messages + own
    check_fields(data, path, message_count=head["message_count"])
    return data


def _remember_lines(batch: Batch, known: Tuple[List[Any], StoredChunk]) -> None:
    """这一批里读出的一块：消息检查过才记下（紧接着的保存原样照用它们的行和块）。"""
    messages, chunk = known
    try:
        validate_messages(messages)
    except InvalidMessage:
        return
    batch.parsed[chunk.name] = known
    for message, line in zip(messages, chunk.data.split(b"\n")):
        batch.lines[id(message)] = (message, line)
    batch.chunks[tuple(map(id, messages))] = chunk


def _check_head(head: Dict[str, Any], body_bytes: int, path: str) -> None:
    """头的字段类型，以及 body_bytes 与文件的实际长度（截断、追加、改动长度一眼可见）。"""
    count = head.get("message_count")
    if type(count) is not int or count < 0 or not isinstance(head.get("first_added"), str):
        raise CorruptSession(f"会话文件已损坏：{path}：头里的 message_count 或 first_added 不对")
    if head.get("body_bytes") != body_bytes:
        raise CorruptSession(f"会话文件已损坏（可能被截断或改动）：{path}：头里记着其后有 {head.get('body_bytes')!r} "
                             f"字节，实际是 {body_bytes} 字节")
    check_fields(head, path, message_count=count)


def _check_index(index: Any, head: Dict[str, Any], path: str) -> Tuple[List[Tuple[str, int]], int]:
    """索引行：{"workspace": 字典或 null, "chunks": [["<sha256>", 条数 > 0], …], "tail": 条数}，条数加起来等于头里的。"""
    if not isinstance(index, dict):
        index = {}
    refs, tail, workspace = index.get("chunks"), index.get("tail"), index.get("workspace")
    ok = (isinstance(refs, list) and all(_is_ref(ref) for ref in refs) and type(tail) is int and tail >= 0
          and (workspace is None or isinstance(workspace, dict)))
    if not ok or sum(ref[1] for ref in refs) + tail != head["message_count"]:
        raise CorruptSession(f"会话文件已损坏：{path}：索引行（workspace、块的列表或尾部条数）不对")
    return [(name, count) for name, count in refs], tail


def _is_ref(ref: Any) -> bool:
    return (isinstance(ref, list) and len(ref) == 2 and isinstance(ref[0], str)
            and _CHUNK_NAME.fullmatch(ref[0] + CHUNK_SUFFIX) is not None and type(ref[1]) is int and ref[1] > 0)


# ── 块所在的文件夹：读、写、确认、清理、体检 ──────────────────────────────────────────────────
class ChunkStore:
    """一个仓库目录下的 .chunks/。加锁由调用方（SessionStore）负责：ensure() 与 remove_orphans() 必须在
    目录锁里调用，其余的不需要。"""

    def __init__(self, storage_dir: str, durable: bool = True):
        self.storage_dir = storage_dir
        self.folder = os.path.join(storage_dir, CHUNK_DIR)
        self.durable = durable
        self._verified: Dict[str, Tuple[int, int, int]] = {}   # 名字 → 确认过内容时的 (inode, 大小, 修改时间)
        self._guard = threading.Lock()

    def path_of(self, name: str) -> str:
        return os.path.join(self.folder, name + CHUNK_SUFFIX)

    # 读 ──────────────────────────────────────────────────────────────────────────────────
    def read(self, path: str, batch: Optional[Batch] = None, skip: Sequence[str] = ()) -> Loaded:
        """读一个会话文件（任何版本）和它的全部块（逐块核对 sha256）。块缺了而会话文件在此期间被换掉（别人刚保存
        或删除），就重读一次；会话文件不存在抛 FileNotFoundError。batch 见 decode_node。"""
        for attempt in range(3):
            raw, info = _read(path)
            stored: List[StoredChunk] = []
            try:
                data = decode_node(raw, path, self._read_chunk, batch, stored, skip)
            except ChunkError as exc:
                if not exc.missing or attempt == 2 or _unchanged(path, info):
                    raise
                continue
            return Loaded(data, info, stored)
        raise AssertionError("unreachable")  # pragma: no cover

    def read_summary(self, path: str, info: Optional[os.stat_result],
                     every_message: bool = False) -> Tuple[Dict[str, Any], os.stat_result]:
        """摘要要用的字段：version 4 只读第一行（与会话大小无关），version 1–3 读整个文件。
        info 为 None：调用方从目录项知道它是普通文件（打开后照样 fstat 确认）。
        every_message：version 1–3 也逐条检查消息（check() 用；列表不必，见 s11_format.decode_listing）。"""
        try:
            raw, info = read_regular_file(path, info=info, enough=_has_head, regular=info is None)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise unreadable(path, exc) from None
        found = head_of(raw)
        if found is None and len(raw) == info.st_size:
            decode = decode_session if every_message else decode_listing
            return decode(raw, path), info   # 单个 JSON 文档，已经整个读完
        if found is None or not isinstance(found[0], dict) or found[0].get("version") not in CHUNKED_VERSIONS:
            if len(raw) < info.st_size:
                raw, info = _read(path)
            return decode_node(raw, path), info
        head, newline = found
        _check_head(head, info.st_size - newline - 1, path)
        return head, info

    def _read_chunk(self, name: str, first: int, last: int, session_id: str) -> bytes:
        path = self.path_of(name)
        where = f"会话 {session_id} 的第 {first}–{last} 条消息所在的块 {path}"
        try:
            raw, info = read_regular_file(path)
        except FileNotFoundError:
            raise ChunkError(f"{where} 不存在（被删掉了？）；会话文件原样保留", name, missing=True) from None
        except OSError as exc:
            raise ChunkError(f"{where} 读不出来：{unreadable(path, exc)}", name) from None
        if hashlib.sha256(raw).hexdigest() != name:
            raise ChunkError(f"{where} 已损坏：内容与名字里的 sha256 对不上；不使用它，文件原样保留", name)
        lines = raw.count(b"\n")
        if lines != last - first + 1:
            raise ChunkError(f"{where} 与会话的索引不符：块里有 {lines} 条，索引说 {last - first + 1} 条", name)
        self._remember(name, info)
        return raw

    # 写 ──────────────────────────────────────────────────────────────────────────────────
    def bytes_to_add(self, chunks: List[Tuple[str, bytes]]) -> int:
        """写下这些块会让文件夹增加多少字节（已在磁盘上且完好的不算，坏了的按新旧大小之差）。"""
        total = 0
        for name, data in self.missing(chunks):
            try:
                total += len(data) - os.lstat(self.path_of(name)).st_size
            except FileNotFoundError:
                total += len(data)
        return total

    def missing(self, chunks: List[Tuple[str, bytes]]) -> List[Tuple[str, bytes]]:
        """磁盘上还没有（或坏了）的块，每块只列一次。内容确认过的跳过；没确认过的读一遍核对 sha256。"""
        out, seen = [], set()
        for name, data in chunks:
            if name not in seen:
                seen.add(name)
                if not self._present(name, data, verify=True):
                    out.append((name, data))
        return out

    def write(self, chunks: List[Tuple[str, bytes]]) -> None:
        """写下这些块：每块先写临时文件，durable 时 fsync（一批一起），再 os.replace 成名字；最后 fsync .chunks/。

        并发的 fsync 被文件系统合成少数几次日志提交：300 块（20 MB 的导入）逐个 fsync 1.7 s，一起 0.25 s。
        名字只在内容落盘之后才出现。"""
        if not chunks:
            return
        if not os.path.lexists(self.folder):
            os.makedirs(self.folder, exist_ok=True)
        self._check_folder()
        for start in range(0, len(chunks), WRITE_GROUP):
            group, pending = chunks[start:start + WRITE_GROUP], []
            try:
                for name, data in group:
                    pending.append(PendingWrite(self.path_of(name), data, durable=False))
                if self.durable:
                    _sync_together(pending)
                for (name, _), item in zip(group, pending):
                    item.commit()
                    self._remember(name, os.lstat(self.path_of(name)))
            finally:
                for item in pending:
                    item.discard()   # 提交过的什么都不做；出错时删掉还没提交的临时文件
        if self.durable:
            fsync_dir(self.folder)

    def ensure(self, chunks: List[Tuple[str, bytes]]) -> None:
        """目录锁里、提交会话之前：每一块都还在（清理刚删掉的当场补写）。只看 lstat，不重读内容。"""
        gone = [(name, data) for name, data in dict(chunks).items() if not self._present(name, data)]
        if gone:
            log.warning("保存前发现 %d 块刚被清理掉，在锁里重新写下", len(gone))
            self.write(gone)

    def _present(self, name: str, data: bytes, verify: bool = False) -> bool:
        path = self.path_of(name)
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise ChunkError(f"块 {path} 查看不了：{unreadable(path, exc)}", name) from None
        if not stat.S_ISREG(info.st_mode):
            raise ChunkError(f"块 {path} 不是普通文件（{entry_kind(path)}）；仓库不打开、不覆盖它，请手动处理", name)
        if info.st_size != len(data):
            log.warning("块 %s 的大小不对（%d 字节，应为 %d），用正确的内容换掉它", path, info.st_size, len(data))
            return False
        if not verify or self._verified.get(name) == _key(info):
            return True
        try:
            raw, info = read_regular_file(path)
        except FileNotFoundError:
            return False
        if hashlib.sha256(raw).hexdigest() != name:
            log.warning("块 %s 已损坏（内容与名字不符），用正确的内容换掉它", path)
            return False
        self._remember(name, info)
        return True

    def _remember(self, name: str, info: os.stat_result) -> None:
        with self._guard:
            self._verified.pop(name, None)
            self._verified[name] = _key(info)
            if len(self._verified) > VERIFIED_LIMIT:
                del self._verified[next(iter(self._verified))]   # 最早记住的先忘

    # 清理 ────────────────────────────────────────────────────────────────────────────────
    def names(self) -> Set[str]:
        """.chunks/ 里名字像块的条目（临时文件和别的名字不算）；.chunks 不是真正的文件夹时为空（从不跟随链接去删）。"""
        try:
            if not stat.S_ISDIR(os.lstat(self.folder).st_mode):
                return set()
            return {entry[:-len(CHUNK_SUFFIX)] for entry in os.listdir(self.folder) if _CHUNK_NAME.fullmatch(entry)}
        except (FileNotFoundError, NotADirectoryError):
            return set()

    def _check_folder(self) -> None:
        """.chunks 必须是真正的文件夹：被换成符号链接时不往链接指向的地方写。"""
        if not stat.S_ISDIR(os.lstat(self.folder).st_mode):
            raise ChunkError(f"{self.folder} 不是文件夹（{entry_kind(self.folder)}）；仓库不往里写块，请手动处理", "")

    def referenced(self, ignore: Iterable[str] = ()) -> Set[str]:
        """所有可能还要用的块：活的会话、回收站里的副本、正在写（或被中断留下）的临时会话文件里引用的。

        只读每个文件的头两行（version 1–3 的文件只读到第一行就知道它不引用块）；读不懂的行也照样认出块名，
        宁可多留。"""
        found: Set[str] = set()
        trash = os.path.join(self.storage_dir, ".trash")
        kept = os.path.join(self.storage_dir, ".history")   # 📜 留下的旧版（s11_history）：.history/<id>/<版本>.json
        for folder in (self.storage_dir, trash, *_subfolders(kept)):
            try:
                entries = os.listdir(folder)
            except (FileNotFoundError, NotADirectoryError):
                continue
            for entry in entries:
                path = os.path.join(folder, entry)
                if entry.endswith((".json", ".tmp")) and path not in ignore:
                    found.update(_references(path))
        return found

    def leftovers(self) -> Tuple[List[str], List[str]]:
        """目录锁里：(被中断留下、没人要了的临时文件, 没有任何会话引用的块名)。块的引用不算那些临时文件的——
        它们一删，只有它们引用的块也就没人要了。.chunks 不是真正的文件夹时没有块可删（从不跟随链接）。"""
        temps = abandoned_temps(self.storage_dir) + abandoned_temps(self.folder)
        candidates = self.names()
        return temps, sorted(candidates - self.referenced(ignore=set(temps))) if candidates else []

    def remove_orphans(self) -> int:
        """目录锁里：先删掉 leftovers() 里的临时文件，再删没人引用的块，返回删了几块。先列块、再收集引用，见模块文档。"""
        temps, orphans = self.leftovers()
        for path in temps:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        removed = 0
        for name in orphans:
            try:
                os.remove(self.path_of(name))
                removed += 1
            except FileNotFoundError:
                pass
            with self._guard:
                self._verified.pop(name, None)
        if removed and self.durable:
            fsync_dir(self.folder)
        return removed

    def leftover_bytes(self) -> int:
        """目录锁里：remove_orphans() 会释放多少字节。"""
        temps, orphans = self.leftovers()
        return sum(_size(path) for path in temps + [self.path_of(name) for name in orphans])

    # 体检 ────────────────────────────────────────────────────────────────────────────────
    def problems(self, session_paths: List[str], lock: Any) -> List[Tuple[str, str, str]]:
        """check() 的块部分：[(种类, 路径, 中文说明)]。

        * .chunks 是符号链接（或别的不是文件夹的东西）：报 unreadable，从不跟随它去读、去删；
        * 每个 version 4 会话：头、索引、尾部各读一遍，引用的每块在这次体检里只核对、只解析检查一次（memo），
          所以深的分支链的体检随存下的东西增长：missing_chunk / damaged_chunk，引用它的每个会话各报一条；
          索引、尾部、块里的消息坏了报 corrupt；
        * .chunks/ 里没人引用的块报 orphan_chunk——在目录锁里再确认一遍，正在保存的不会被误报；
        * .chunks/ 里被中断留下的临时文件报 temp_file，不是块的东西报 stray_file / unreadable。"""
        if os.path.lexists(self.folder) and not stat.S_ISDIR(os.lstat(self.folder).st_mode):
            return [("unreadable", self.folder, f"块目录 {CHUNK_DIR} 是{entry_kind(self.folder)}，不是文件夹；"
                                                "仓库不跟随它读块、也不删除它，请手动处理")]
        problems: List[Tuple[str, str, str]] = []
        memo: Dict[str, Any] = {}
        for path in session_paths:
            problems += self._node_problems(path, memo)
        candidates = self.names()
        if candidates:
            with lock:
                orphans = sorted(candidates - self.referenced())
            problems += [("orphan_chunk", self.path_of(name), "没有任何会话（包括回收站）引用这一块，可以用 "
                          "remove_orphan_chunks() 或清空回收站清理") for name in orphans if os.path.lexists(self.path_of(name))]
        try:
            entries = sorted(os.listdir(self.folder))
        except (FileNotFoundError, NotADirectoryError):
            entries = []
        for entry in entries:
            path = os.path.join(self.folder, entry)
            if entry.endswith(".tmp"):
                problems += [(kind, path, detail) for kind, detail in temp_file_problem(path)]
            elif not _CHUNK_NAME.fullmatch(entry):
                problems.append(("stray_file", path, "块目录里有不属于仓库的文件，仓库不动它"))
            elif entry_kind(path) not in ("普通文件", "无法查看"):
                problems.append(("unreadable", path, f"名字像块，却是{entry_kind(path)}；仓库不打开、不删除它"))
        return problems

    def _node_problems(self, path: str, memo: Dict[str, Any]) -> List[Tuple[str, str, str]]:
        """一个会话文件的块、索引和尾部。memo：块名 → 这次体检里的结论（条数，或 ChunkError / CorruptSession）。"""
        try:
            raw, _ = _read(path)
            found = head_of(raw)
            if found is None or not isinstance(found[0], dict) or found[0].get("version") not in CHUNKED_VERSIONS:
                return []   # version 1–3：check() 的会话部分已经逐条检查过
            _check_head(found[0], len(raw) - found[1] - 1, path)
        except (OSError, SessionError):
            return []   # 会话本身读不了：check() 的会话部分已经报告（它读头）
        try:
            decode_node(raw, path)   # 索引、尾部（尾部的消息逐条检查），不读块
        except SessionError as exc:
            return [("corrupt", path, str(exc))]
        head, newline = found
        second = raw.find(b"\n", newline + 1)
        refs, _ = _check_index(parse_json(raw[newline + 1:second], path), head, path)
        out: List[Tuple[str, str, str]] = []
        first = 1
        for name, count in refs:
            where = f"会话 {head['session_id']} 的第 {first}–{first + count - 1} 条消息所在的块 {self.path_of(name)}"
            if name not in memo:
                memo[name] = self._chunk_verdict(name, count, head["session_id"])
            verdict = memo[name]
            if isinstance(verdict, ChunkError):
                out.append(("missing_chunk" if verdict.missing else "damaged_chunk", path,
                            where + ("不存在" if verdict.missing else "读不出来或已损坏") + "；load() 会拒绝这个会话"))
            elif isinstance(verdict, SessionError):
                out.append(("corrupt", path, f"{where}：{verdict}"))
            elif verdict != count:
                out.append(("damaged_chunk", path, f"{where} 与会话的索引不符：块里有 {verdict} 条，索引说 {count} 条"))
            first += count
        return out

    def _chunk_verdict(self, name: str, count: int, session_id: str) -> Any:
        """一块的结论：它的条数（核对过 sha256、每条消息都检查过），或者说明它哪里不对的错误。"""
        path = self.path_of(name)
        try:
            raw, _ = read_regular_file(path)
        except FileNotFoundError:
            return ChunkError(f"块 {path} 不存在", name, missing=True)
        except OSError as exc:
            return ChunkError(f"块 {path} 读不出来：{unreadable(path, exc)}", name)
        if hashlib.sha256(raw).hexdigest() != name:
            return ChunkError(f"块 {path} 已损坏：内容与名字里的 sha256 对不上", name)
        lines = raw.count(b"\n")
        try:
            validate_messages(parse_json_lines(raw, lines, path))
        except SessionError as exc:
            return exc
        return lines


# ── 小工具 ─────────────────────────────────────────────────────────────────────────────────
def _sync_together(pending: List[PendingWrite]) -> None:
    if len(pending) == 1:
        pending[0].sync()
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(SYNC_THREADS, len(pending))) as pool:
        list(pool.map(PendingWrite.sync, pending))   # list()：任何一个出错都在这里抛出


def _read(path: str) -> Tuple[bytes, os.stat_result]:
    try:
        return read_regular_file(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise unreadable(path, exc) from None


def _has_head(data: bytes) -> bool:
    """只读开头就够了吗：第一行完整，而且不是 indent=2 文件的 "{"。"""
    return data.find(b"\n") > 1


def _has_two_lines(data: bytes) -> bool:
    first = data.find(b"\n")
    return first == 1 or (first > 1 and data.find(b"\n", first + 1) > 0)


def _subfolders(folder: str) -> List[str]:   # 📜 .history 下每个会话一个文件夹
    try:
        return [os.path.join(folder, name) for name in os.listdir(folder)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _references(path: str) -> Set[str]:
    try:
        raw, _ = read_regular_file(path, enough=_has_two_lines)
    except OSError:
        return set()
    if raw.find(b"\n") == 1:
        return set()   # indent=2 的 version 1–3 文件：不引用块
    return {match.decode("ascii") for match in _REFERENCE.findall(raw)}


def _unchanged(path: str, info: os.stat_result) -> bool:
    try:
        return _key(os.lstat(path)) == _key(info)
    except FileNotFoundError:
        raise
    except OSError:
        return True


def _size(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


def _key(info: os.stat_result) -> Tuple[int, int, int]:
    return info.st_ino, info.st_size, info.st_mtime_ns
