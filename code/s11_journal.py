"""s11_journal.py — 仓库的操作日志：会话文件原子地整份替换，日志只在末尾追加

    sessions/
    ├── 5d38f60f4c00.json        会话文件：每次保存整份换掉（os.replace）——文件只说“现在是什么样”
    ├── .history/5d38f60f4c00/   换掉之前的那一版（见 s11_history）
    └── .journal.jsonl           操作日志：一行一个操作，只往末尾追加——日志说“是怎么变成这样的”

    {"n":7,"op":"fork","ids":["4d67e2e6b66c"],"before":[0],"after":[1],"titles":["分支 A"],
     "at":"2026-12-07 03:40:12","ns":1796528412000000000,"parent":"5d38f60f4c00","fork_point":5}

每一行的字段：
  n        序号，1 起，一行比一行大
  op       create（新建根会话）、save（续写，或 revert 回到某一版）、fork、converge、label、delete、restore、
           import（一次导入的许多节点）、undo / redo（target = 撤销 / 重做的是第几号）
  ids      涉及的会话；before / after 与它一一对应：操作前后磁盘上的修订号，0 = 不在（还没有，或在回收站里）
  titles   这些会话当时的标题（给人看的一句话用，不必再去读会话文件）
  at / ns  本地时间（给人看）和 time.time_ns()（排序、比较）
  unversioned  before 为 0、其实换掉的是书中代码写的没有修订号的文件的那些会话（撤销时回到 .history/<id>/0.json）
  其余     各操作自己的：fork 的 parent / fork_point，converge 的 chosen / others，label 的 number，
           delete 的 purge，save 的 revert_of，undo / redo 的 target

关键洞察：两种写法各管一件事。会话文件原子替换，读者永远看到完整的一版；日志只追加，写到一半被 kill -9
最多留下最后半行——之前的每一行都不会被改动。所以“现在的样子”和“每一步”都可靠，撤销（s11_history）
只需要把日志从头重放一遍：栈顶就是要撤销的那一步。

保证：
  * 追加在仓库的目录锁里、操作提交之后立即进行（O_APPEND，一次 write；仓库 durable 时 fsync）；
    合成一行的操作（见下）在最后一次保存之后再取一次锁追加。日志写不下（磁盘满、它不是普通文件）时
    操作照样算数，只记一条警告——提交了的操作绝不因为日志而报失败。
  * 最后一行被截断（没有换行符，或不是完整的 JSON）：读的时候报告并跳过，和截断的对话记录一样；
    下一次追加先补一个换行符，新的一行绝不会粘在半行后面。
  * 读是流式的（一行一行），日志再长，内存里也只有调用方要的那几行。
  * 一个操作里的几次保存（分叉、收敛、导入一棵树、撤销）合成一行：operation() 把它们收拢。

限制：操作已提交、日志那一行还没写下时被 kill -9，这个操作不在日志里（会话文件完好，只是不能撤销）；
日志不设上限（每行约 200 字节），清空回收站、彻底删除也不删它（清空回收站本身不记一行：它撤销不了）。
本模块只依赖标准库和 s11_format / s11_storage / s11_text。
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import threading
import time
from typing import Any, Dict, Iterator, List, NamedTuple, Optional

from s11_format import SessionError
from s11_storage import DirectoryLock, NotRegularFile, entry_kind
from s11_text import describe_os_error, printable

__all__ = ["JOURNAL_FILE", "journal_path", "note", "operation", "append", "append_quietly", "planned_bytes", "read",
           "newest", "describe", "Reading", "Record"]

log = logging.getLogger(__name__)

JOURNAL_FILE = ".journal.jsonl"
TAIL_BYTES = 64 * 1024        # 找最后一个序号时从末尾读多少（一行远小于这个）

_groups = threading.local()   # 本线程正在进行的 operation()：{仓库目录: 收拢中的记录}


def journal_path(storage_dir: str) -> str:
    return os.path.join(storage_dir, JOURNAL_FILE)


# ── 写：一个操作一行 ─────────────────────────────────────────────────────────────────────────
@contextlib.contextmanager
def operation(store: Any, op: str, *, always: bool = False, **fields: Any) -> Iterator[Dict[str, Any]]:
    """把这之内对 store 的保存、删除、恢复收拢成一行 op（比如分叉 = 一次保存，导入 = 许多次保存）。

        with operation(store, "fork", parent="5d38…", fork_point=5):
            store.save(child)                 # note() 记进收拢中的这一行
        # 离开时：这一行追加到日志（没有任何保存时不写）

    已经在同一仓库的 operation() 之内时，里面的并入外面的（撤销一次续写 = 一行 undo，不是一行 undo 加一行 save）。
    给出的字典离开时补上 n、at、ns（写下了的话）。always：一次保存都没有也写一行（撤销、重做要移动栈）。"""
    groups = _open_groups()
    if store.storage_dir in groups:
        yield groups[store.storage_dir]
        return
    record = {"op": op, "ids": [], "before": [], "after": [], "titles": [], **fields}
    groups[store.storage_dir] = record
    failed = True
    try:
        yield record
        failed = False
    finally:
        del groups[store.storage_dir]
        # 出错时已经做了的那几步也记下：它们确实发生了，应当能撤销；一步都没做成的撤销不记（栈不动）
        if record["ids"] or (always and not failed):
            with DirectoryLock(store.storage_dir):
                append_quietly(store, record)


def note(store: Any, op: str, session_id: str, before: int, after: int, title: Any = "", *,
         unversioned: bool = False, **fields: Any) -> None:
    """仓库的钩子（在目录锁里、刚提交之后调用）：一个会话从修订 before 变成了 after（0 = 不在）。
    在 operation() 之内就并进那一行；否则立即追加一行 op。unversioned：before 的 0 其实是一个没有修订号的
    文件（书中代码写的），记进 "unversioned" 列表，撤销时回到它。"""
    record = _open_groups().get(store.storage_dir)
    group = record is not None
    if not group:
        record = {"op": op, "ids": [], "before": [], "after": [], "titles": [], **fields}
    _add(record, session_id, before, after, title)
    if unversioned:
        record.setdefault("unversioned", []).append(session_id)
    for key, value in fields.items():
        record.setdefault(key, value)
    if not group:
        append_quietly(store, record)


def append_quietly(store: Any, record: Dict[str, Any]) -> None:
    """操作已经提交了：日志写不下（磁盘满、权限）时不能让调用方以为操作失败了——记一条警告，
    这个操作不在日志里（不能撤销；之后对同一会话的撤销会因为修订号对不上而被拒绝，不会覆盖）。"""
    try:
        record.update(append(store, record))
    except OSError as exc:
        log.warning("操作已完成，但没能记进操作日志 %s：%s", printable(journal_path(store.storage_dir)), exc)


def _add(record: Dict[str, Any], session_id: str, before: int, after: int, title: Any) -> None:
    if session_id in record["ids"]:   # 同一操作里又改了一次：操作前是第一次的 before，操作后是最后一次的 after
        record["after"][record["ids"].index(session_id)] = after
        return
    record["ids"].append(session_id)
    record["before"].append(before)
    record["after"].append(after)
    record["titles"].append(title if isinstance(title, str) else "")


def _open_groups() -> Dict[str, Dict[str, Any]]:
    if not hasattr(_groups, "open"):
        _groups.open = {}
    return _groups.open


def append(store: Any, record: Dict[str, Any]) -> Dict[str, Any]:
    """调用方握着目录锁：补上 n、at、ns，追加一行，返回写下的记录。"""
    path = journal_path(store.storage_dir)
    last, torn = _last_number(path)
    written, line = _line(record, last + 1)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:   # 被 kill -9 截断的半行后面先补一个换行符：新的一行绝不会粘在它后面，读的时候半行单独被跳过
        os.write(fd, (b"\n" if torn else b"") + line)
        if store.durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    return written


def _line(record: Dict[str, Any], number: int) -> tuple:
    """(写下的记录, 那一行的字节)。at 总是 19 个字符、ns 19 位（到 2286 年），所以 planned_bytes 算得准。"""
    now = time.time_ns()
    written = {"n": number, **record, "at": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now / 1e9)),
               "ns": now}
    try:
        line = json.dumps(written, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:   # 标题里有落单的代理字符（仓库存得下）：这一行改用 \u 转义，读回来一样
        line = json.dumps(written, separators=(",", ":")).encode("ascii")
    return written, line + b"\n"


def planned_bytes(store: Any, saves: List[tuple]) -> List[int]:
    """依次保存 saves（[(session_id, 修订号, 标题)]）会让日志增加多少字节，逐个给出——
    store.write_costs() 用它，导入前的限额检查因此把日志也算准。在 operation() 之内（导入的 batch）是同一行
    变长了多少；之外是每次保存一行。"""
    last, torn = _last_number(journal_path(store.storage_dir))
    group = _open_groups().get(store.storage_dir)
    costs = []
    if group is not None:
        record = {**group, **{key: list(group[key]) for key in ("ids", "before", "after", "titles")}}
        size = len(_line(record, last + 1)[1]) if record["ids"] else 0
        for session_id, revision, title in saves:
            _add(record, session_id, revision, revision + 1, title)
            grown = len(_line(record, last + 1)[1])
            costs.append(grown - size)
            size = grown
    else:
        for number, (session_id, revision, title) in enumerate(saves, last + 1):
            record = {"op": "save" if revision else "create", "ids": [], "before": [], "after": [], "titles": []}
            _add(record, session_id, revision, revision + 1, title)
            costs.append(len(_line(record, number)[1]))
    if torn and costs:
        costs[0] += 1   # 半行后面要补的那个换行符
    return costs


def _last_number(path: str) -> tuple:
    """(最后一个完整记录的 n, 文件是否停在半行上)。只读末尾 TAIL_BYTES；末尾一行都读不懂时从头流式找。"""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):   # 管道、目录、链接：不打开（管道会让 open 一直等）
            raise NotRegularFile(path, entry_kind(path))
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            tail = handle.read()
    except FileNotFoundError:
        return 0, False
    torn = bool(tail) and not tail.endswith(b"\n")
    for line in reversed(tail.split(b"\n")):
        record = _parse(line)
        if record is not None:
            return record["n"], torn
    reading = Reading(path)
    last = 0
    for record in reading.records():
        last = record["n"]
    return last, torn


# ── 读：流式，跳过半行 ───────────────────────────────────────────────────────────────────────
class Reading:
    """一次流式读日志。records() 一行一行给出读得懂的记录（旧的在前）；读完后 skipped 是跳过的行号和原因。

        reading = Reading(journal_path(folder))
        for record in reading.records(): ...
        reading.skipped   # [(12, "第 12 行不完整（写到一半被中断），已跳过")]"""

    def __init__(self, path: str):
        self.path = path
        self.skipped: List[tuple] = []

    def records(self) -> Iterator[Dict[str, Any]]:
        try:
            if not stat.S_ISREG(os.lstat(self.path).st_mode):   # 不跟随链接、不打开目录和管道
                raise SessionError(f"操作日志 {printable(self.path)} 不是普通文件（{entry_kind(self.path)}），"
                                   "读不了；请手动处理它")
            handle = open(self.path, "rb")
        except FileNotFoundError:
            return
        except OSError as exc:
            raise SessionError(f"操作日志读不了：{describe_os_error(exc)}") from None
        with handle:
            last = 0
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue   # 补在半行后面的那个换行符
                record = _parse(line)
                if record is None or record["n"] <= last:
                    self._skip(number, line)
                    continue
                last = record["n"]
                yield record

    def _skip(self, number: int, line: bytes) -> None:
        why = "不完整（写到一半被中断）" if not line.endswith(b"\n") else "读不懂（不完整、被改坏或序号倒退）"
        self.skipped.append((number, f"操作日志 {printable(self.path)} 第 {number} 行{why}，已跳过"))
        log.warning("%s", self.skipped[-1][1])


class Record(NamedTuple):
    """给界面的一行：记录本身和一句中文。"""
    record: Dict[str, Any]
    text: str


def read(storage_dir: str) -> Reading:
    return Reading(journal_path(storage_dir))


def newest(storage_dir: str, limit: int = 50) -> tuple:
    """最近的 limit 条记录（新的在前，每条带一句中文）和跳过的行的说明。内存里只留 limit 条。"""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit 应是正整数，收到 {printable(repr(limit))}")
    reading = read(storage_dir)
    kept: List[Dict[str, Any]] = []
    for record in reading.records():
        kept.append(record)
        if len(kept) > limit:
            del kept[0]
    return [Record(record, describe(record)) for record in reversed(kept)], [why for _, why in reading.skipped]


def _parse(line: bytes) -> Optional[Dict[str, Any]]:
    try:   # 没有换行符的最后一行照样试着解析：完整的 JSON 才算数
        record = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    if not _well_formed(record):
        return None
    return record


def _well_formed(record: Any) -> bool:
    """字段齐全、类型对：ids / before / after 等长。读不懂的行（手改坏的、半行）一律跳过，不拿去撤销。"""
    if not isinstance(record, dict) or not isinstance(record.get("op"), str):
        return False
    n, ids, before, after = (record.get(key) for key in ("n", "ids", "before", "after"))
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        return False
    lists = (ids, before, after)
    if not all(isinstance(value, list) for value in lists) or not len(ids) == len(before) == len(after):
        return False
    return all(isinstance(i, str) for i in ids) and all(
        isinstance(r, int) and not isinstance(r, bool) and r >= 0 for r in before + after)


# ── 给人看的一句话 ────────────────────────────────────────────────────────────────────────────
def _title(record: Dict[str, Any], index: int = 0) -> str:
    titles = record.get("titles") or []
    title = titles[index] if index < len(titles) and titles[index] else ""
    ids = record["ids"]
    name = f"「{printable(title)}」" if title else ""
    return f"{name}[{ids[index]}]" if ids else "（无）"


def _who(record: Dict[str, Any], names: Dict[str, str], prefix: str) -> str:
    """第一个会话怎么称呼：界面给了名字（'分支 B.A'）就用它；否则 prefix + '「标题」[ID]'。"""
    ids = record["ids"]
    if ids and ids[0] in names:
        return names[ids[0]]
    return prefix + _title(record)


def _revisions(record: Dict[str, Any]) -> str:
    if not record["ids"]:
        return ""
    return f"：revision {record['before'][0]} → {record['after'][0]}"


_DESCRIPTIONS = {   # op → 一句中文（记录, 名字 → 文字）；新操作 = 这里一行
    "create": lambda r, n: f"新建了{_who(r, n, '会话 ')}",
    "save": lambda r, n: (f"把{_who(r, n, ' ')} 回到第 {r['revert_of']} 版{_revisions(r)}" if "revert_of" in r
                          else f"续写了{_who(r, n, ' ')}{_revisions(r)}"),
    "fork": lambda r, n: f"分叉了{_who(r, n, '分支 ')}（自第 {r.get('fork_point', '?')} 条）",
    "converge": lambda r, n: f"收敛成{_who(r, n, ' ')}（收敛了 {len(r.get('others') or [])} 个分支）",
    "label": lambda r, n: f"给{_who(r, n, ' ')} 第 {r.get('number', '?')} 条改了标签{_revisions(r)}",
    "delete": lambda r, n: (f"彻底删除了{_who(r, n, ' ')}" if r.get("purge")
                            else f"删除了{_who(r, n, ' ')}（移进回收站）"),
    "restore": lambda r, n: f"从回收站恢复了{_who(r, n, ' ')}",
    "import": lambda r, n: f"导入了 {len(r['ids'])} 个会话" + (f"（第一个是{_who(r, n, ' ')}）" if r["ids"] else ""),
    "undo": lambda r, n: f"撤销了第 {r.get('target', '?')} 步（{r.get('what', '')}）",
    "redo": lambda r, n: f"重做了第 {r.get('target', '?')} 步（{r.get('what', '')}）",
}


def describe(record: Dict[str, Any], names: Optional[Dict[str, str]] = None) -> str:
    """一条记录 → 一句中文，比如 '分叉了分支「B.A」[4d67e2e6b66c]（自第 6 条）'。
    names：界面对会话的称呼（{ID: '分支 B.A'}，会话树浏览器的分支名），有就用它代替「标题」[ID]：
    '分叉了分支 B.A（自第 6 条）'、'续写了分支 B：revision 2 → 3'。"""
    how = _DESCRIPTIONS.get(record["op"])
    return how(record, names or {}) if how else f"{printable(record['op'])}（本版本不认识的操作）"
