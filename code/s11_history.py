"""s11_history.py — 留下每一版，撤销 / 重做 / 回到某一版：往回走，但什么都不丢

    sessions/
    ├── 0994dd416b46.json              现在这一版（revision 3）
    ├── .history/0994dd416b46/
    │   ├── 1.json                     save() 换掉文件之前，把旧文件硬链接到这里（os.link；不支持链接时复制）
    │   └── 2.json                     大会话（version 4）的旧版只是头 + 索引 + 尾部：块与新版共用
    └── .journal.jsonl                 每个操作一行（s11_journal）

    撤销前                                  撤销后（undo 的是“续写 B：revision 2 → 3”）
    B revision 3 [m1 … m9]          ──►    B revision 4 [m1 … m7]      第 2 版的内容存成新的一版
    .history/B/1.json 2.json               .history/B/1.json 2.json 3.json      第 3 版留着，重做用得上

关键洞察：撤销也是向前走的一步。撤销续写 = 把上一版的内容存成新的一版（修订号从不倒退，别的窗口的修订号
核对照常生效）；撤销新建、分叉、收敛、导入 = 把新节点移进回收站；撤销删除 = 恢复；撤销恢复 = 删除。
所以撤销本身也能撤销（重做），而每一版都还在 .history/ 里。

规则：
  * 把日志从头读一遍（replay）：得到可撤销栈、可重做栈，以及每个会话按日志现在应是第几版（0 = 不在）。
  * undo 把栈顶操作涉及的每个会话变回那个操作之前那一版的内容，redo 变回之后那一版的内容：
    在 → 不在 = delete；不在 → 在 = restore（回收站里最新的那份必须是日志说的那一版）；
    在 → 在 = 把那一版的内容存成新的一版。撤销、重做各记一行（undo / redo，target = 第几步）。
  * 动手之前逐个核对：磁盘上的样子不是日志说的（日志之外有人改过：书中代码、没记进日志的操作）就
    ConflictError，一步都不做。
  * 新的操作清空重做栈（和任何编辑器一样）；彻底删除（purge）撤销不了，撤销停在它这里；清空回收站不记日志，
    之后撤销那些删除时回收站里没有了，就 ConflictError 说明，别的会话上的操作照样能撤销。

保证：每一版在彻底删除（delete(purge=True)）、清空回收站（被删会话的各版）或归档过期之前都读得到
（load_revision，包括回收站里的那份）；版本文件算进空间的限额（它们就是会话目录里的字节）；
块的清理把它们算作引用（s11_chunks.referenced）。
限制：两处同时撤销同一步，后到的那一处在保存（修订号核对）、删除或恢复（发现已被做了）时 ConflictError；
多步的撤销（一次导入）中途失败时，已经做了的几步照样记进日志，可以再撤销。撤销续写存下的是一个新文件，
大会话也只多头、索引和尾部。
本模块只依赖标准库和 s11_journal / s11_chunks / s11_format / s11_trash / s11_tree。
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import s11_chunks
import s11_journal
import s11_trash
import s11_tree
from s11_format import ConflictError, SessionError, SessionNotFound, is_session_name, validate_session_id
from s11_storage import fsync_dir, read_regular_file

__all__ = ["HISTORY_DIR", "keep", "remove", "revisions", "load_revision", "undo", "redo", "revert", "replay",
           "timeline", "Replay"]


HISTORY_DIR = ".history"
_UNVERSIONED = -1   # 撤销的目标是书中代码写的、没有修订号的那一版（.history/<id>/0.json）
_KEPT_NAME = re.compile(r"(\d+)\.json")            # 1.json：这一版
_OLDER_LIFE = re.compile(r"(\d+)\.(\d+)\.json")    # 1.1796528412000000000.json：同一 ID 早先的一版，被挪开的


def is_session_id(name: str) -> bool:
    return is_session_name(name + ".json")


def history_dir(storage_dir: str, session_id: str) -> str:
    return os.path.join(storage_dir, HISTORY_DIR, validate_session_id(session_id))


# ── 留下旧版：save() 的钩子 ─────────────────────────────────────────────────────────────────
def keep(storage_dir: str, path: str, session_id: str, revision: int, durable: bool) -> bool:
    """目录锁里、新文件换上来之前：把磁盘上的第 revision 版（刚核对过）链接到 .history/<id>/<revision>.json。
    返回 True = 换掉的是一个没有修订号的文件（书中代码写的，revision 0），它留成了 0.json。

    硬链接不复制字节：换名之后旧的 inode 只剩这一个名字，占的空间和没有历史时被删掉的一样多。
    同名的一版已经在（同一个 ID 删掉后又被导入、新建过）：早先那份挪成 <revision>.<纳秒>.json，两份都留着。"""
    if not os.path.lexists(path):
        return False
    folder = history_dir(storage_dir, session_id)
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, f"{revision}.json")
    if os.path.lexists(target):
        if os.path.samefile(target, path):
            return revision == 0
        os.replace(target, os.path.join(folder, f"{revision}.{time.time_ns()}.json"))
    try:
        os.link(path, target)
    except OSError:   # 文件系统不支持硬链接：复制（先写临时名再改名，中途被打断也不会留下半份）
        temporary = target + ".tmp"
        shutil.copyfile(path, temporary)
        os.replace(temporary, target)
    if durable:
        fsync_dir(folder)
    return revision == 0


def remove(storage_dir: str, session_id: str) -> int:
    """彻底删除一个会话的全部旧版（delete(purge=True)、清空回收站调用），返回删了几个文件。"""
    folder = history_dir(storage_dir, session_id)
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    removed = 0
    for name in names:
        with contextlib.suppress(FileNotFoundError):   # 别人同时删掉了：不算错
            os.remove(os.path.join(folder, name))
            removed += 1
    with contextlib.suppress(OSError):   # 正好又有人保存、留下了一版：目录留着
        os.rmdir(folder)
    return removed


def trash_emptied(store: Any) -> None:
    """empty_trash() 的钩子（目录锁里）：已经不在仓库里的会话（不在、回收站里也没有了）的各版一起删掉。
    不记日志：清空回收站不是能撤销的操作；之后撤销那些删除时，回收站里没有了就 ConflictError 说明，
    别的会话上的操作照样能撤销。"""
    folder = os.path.join(store.storage_dir, HISTORY_DIR)
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        names = []
    trashed = set(s11_trash.trashed_ids(store.storage_dir))
    for session_id in names:
        if is_session_id(session_id) and session_id not in trashed \
                and not os.path.lexists(store.path_of(session_id)):
            remove(store.storage_dir, session_id)


def live_state(store: Any, session_id: str) -> Tuple[int, str]:
    """delete() 的钩子（目录锁里、删之前）：(现在这一版的修订号或 0, 标题)。"""
    path = store.path_of(session_id)
    return _revision_at_quietly(path), title_at(path)


def deleted(store: Any, session_id: str, state: Tuple[int, str], purge: bool) -> None:
    """delete() 的钩子（目录锁里、删了之后）：记一行 delete（purge 的各版由 delete 在清理块之前删掉）。"""
    s11_journal.note(store, "delete", session_id, state[0], 0, state[1], **({"purge": True} if purge else {}))


def restored(store: Any, session_id: str) -> None:
    """restore() 的钩子（目录锁里、放回之后）：记一行 restore。"""
    path = store.path_of(session_id)
    s11_journal.note(store, "restore", session_id, 0, _revision_at_quietly(path), title_at(path))


def saved(store: Any, session: Any, before: int, after: int, unversioned: bool = False) -> None:
    """save() 的钩子（目录锁里、换名之后）：记一行 create（修订 0 → 1）或 save；在分叉、收敛、导入之内并进那一行。
    unversioned（keep() 的返回值）：换掉的是书中代码写的、没有修订号的文件——撤销时回到它（0.json），而不是删掉。"""
    op = "save" if before or unversioned else "create"
    s11_journal.note(store, op, session.session_id, before, after, session.title, unversioned=unversioned)


# ── 读旧版 ──────────────────────────────────────────────────────────────────────────────────
def revisions(store: Any, session_id: str, newest: Optional[int] = None) -> List[Dict[str, Any]]:
    """一个会话的每一版（按修订号）：revision、at（那一版写下的时间）、message_count、bytes、path；
    现在这一版 live=True，回收站里的（删除时的那一版）in_trash=True。一版都没有时 SessionNotFound。
    newest：旧版只细看修订号最大的这么多个（每一版都要读它的头；续写了上千次的会话，界面只列最近几版）。"""
    found = []
    folder = history_dir(store.storage_dir, session_id)
    try:
        names = os.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        names = []
    kept = []
    for name in names:
        match = _KEPT_NAME.fullmatch(name) or _OLDER_LIFE.fullmatch(name)
        if match:
            kept.append((int(match.group(1)), match.re is _OLDER_LIFE, name))
    if newest is not None:
        kept = sorted(kept, reverse=True)[:max(0, newest)]
    for revision, older, name in kept:
        found.append(_describe(store.storage_dir, os.path.join(folder, name), revision, older=older))
    live = store.path_of(session_id)
    if os.path.lexists(live):
        entry = _describe(store.storage_dir, live, None, older=False)
        entry["live"] = True
        found.append(entry)
    for path in _trash_paths(store, session_id):   # 删除时的那一版在回收站里（没有另留一份）
        entry = _describe(store.storage_dir, path, None, older=False)
        entry["in_trash"] = True
        found.append(entry)
    if not found:
        raise SessionNotFound(f"未找到会话 {session_id} 的任何一版")
    return sorted(found, key=lambda entry: (entry["revision"], entry["live"], entry["in_trash"], entry["ns"]))


def _describe(storage_dir: str, path: str, revision: Optional[int], older: bool) -> Dict[str, Any]:
    reader = s11_chunks.ChunkStore(storage_dir, durable=False)   # 只用它读头：不写
    try:
        data, info = reader.read_summary(path, None)
        summary = s11_tree.summary_of(data)
        count, title, problem = summary["message_count"], summary["title"], ""
        revision = summary["revision"] if revision is None else revision
    except (SessionError, OSError) as exc:   # 坏了的旧版照样列出来，说明读不了
        info, count, title, problem = os.lstat(path), None, "", str(exc)
    return {"revision": revision or 0, "live": False, "in_trash": False, "older_life": older, "title": title,
            "message_count": count, "bytes": info.st_size, "ns": info.st_mtime_ns,
            "at": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.st_mtime)), "path": path,
            "problem": problem}


def load_revision(store: Any, session_id: str, revision: Any) -> Any:
    """第 revision 版的只读 SessionNode（现在这一版也行）；块逐个核对 sha256。没有这一版时 SessionNotFound。
    给出的节点 revision 是那一版的号：拿它去 save() 会因为修订号对不上而 ConflictError——要回到它请用 revert。"""
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 0:
        raise SessionError(f"版本号应是不小于 0 的整数（0 = 书中代码写的、没有修订号的那一版），收到 {revision!r}")
    candidates = [os.path.join(history_dir(store.storage_dir, session_id), f"{revision}.json"),
                  store.path_of(session_id), *reversed(_trash_paths(store, session_id))]   # 回收站里的：删除时那一版
    reader = s11_chunks.ChunkStore(store.storage_dir, durable=False)
    for path in candidates:
        try:
            data = reader.read(path).data
        except FileNotFoundError:
            continue
        if data.get("revision", 0) == revision and data.get("session_id") == session_id:
            return store.Node.from_dict(data)
    raise SessionNotFound(f"会话 {session_id} 没有第 {revision} 版（用 history {session_id} 看有哪些版）")


def _trash_paths(store: Any, session_id: str) -> List[str]:
    """这个会话在回收站里的各份，旧的在前。"""
    folder = s11_trash.trash_dir(store.storage_dir)
    return [os.path.join(folder, name) for name in s11_trash.copies(store.storage_dir, session_id)]


def _on_disk(store: Any, session_id: str) -> Tuple[int, int]:
    """(现在这一版的修订号或 0, 回收站里最新那份的修订号或 0)。"""
    return _revision_at(store.path_of(session_id)), _trash_revision(store, session_id)


def _trash_revision(store: Any, session_id: str) -> int:
    copies = s11_trash.copies(store.storage_dir, session_id)
    if not copies:
        return 0
    return _revision_at(os.path.join(s11_trash.trash_dir(store.storage_dir), copies[-1]))


def _revision_at_quietly(path: str) -> int:
    try:
        return _revision_at(path)
    except SessionError:   # 读不懂的文件照样能删（delete 不解析内容）：日志里记 0
        return 0


def _revision_at(path: str) -> int:
    try:
        raw, _ = read_regular_file(path)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        raise SessionError(f"读不了 {path}：{exc}") from None
    return s11_chunks.decode_node(raw, path).get("revision", 0)   # 不读块：只要修订号


def title_at(path: str) -> str:
    try:
        raw, _ = read_regular_file(path)
        return s11_chunks.decode_node(raw, path).get("title", "")
    except (OSError, SessionError):
        return ""


# ── 撤销 / 重做 ──────────────────────────────────────────────────────────────────────────────
class Replay(NamedTuple):
    """把日志从头读一遍得到的：可撤销栈、可重做栈（栈顶在最后，都是原操作的记录），以及每个会话按日志
    现在应当是什么样：ID → (修订号，0 = 不在；最后在时的修订号——不在时回收站里最新的那份应当是它)。"""
    done: List[Dict[str, Any]]
    undone: List[Dict[str, Any]]
    expected: Dict[str, Tuple[int, int]]


def replay(storage_dir: str) -> Replay:
    done: List[Dict[str, Any]] = []
    undone: List[Dict[str, Any]] = []
    expected: Dict[str, Tuple[int, int]] = {}
    for record in s11_journal.read(storage_dir).records():
        for session_id, before, after in zip(record["ids"], record["before"], record["after"]):
            expected[session_id] = (after, after or before or expected.get(session_id, (0, 0))[1])
        op = record["op"]
        if op == "undo" and done and done[-1]["n"] == record.get("target"):
            undone.append(done.pop())
        elif op == "redo" and undone and undone[-1]["n"] == record.get("target"):
            done.append(undone.pop())
        elif op not in ("undo", "redo"):   # 对不上的 undo / redo（手改过的日志）不移动任何栈
            done.append(record)
            undone.clear()   # 新的操作清空重做栈
    return Replay(done, undone, expected)


def timeline(store: Any, limit: int = 50, state: Optional[Replay] = None) -> Tuple[List[Dict[str, Any]], List[str]]:
    """给界面和命令行的日志：最近 limit 条（新的在前），每条 {n, at, op, text, undone（现在处于撤销状态）,
    record}，以及跳过的坏行的说明。undone 的那些正是 redo() 能重做的。
    state：调用方刚 replay() 过就交进来，日志不必再从头读一遍。"""
    shown, skipped = s11_journal.newest(store.storage_dir, limit)
    undone = {record["n"] for record in (state or replay(store.storage_dir)).undone}
    return [{"n": item.record["n"], "at": item.record.get("at", ""), "op": item.record["op"], "text": item.text,
             "undone": item.record["n"] in undone, "record": item.record} for item in shown], skipped


def undo(store: Any) -> Dict[str, Any]:
    """撤销最近一个还没撤销的操作，返回写下的 undo 记录（另带 text：一句中文）。没有可撤销的抛 SessionError。"""
    state = replay(store.storage_dir)
    if not state.done:
        raise SessionError("没有可以撤销的操作")
    return _apply(store, "undo", state.done[-1], state.expected)


def redo(store: Any) -> Dict[str, Any]:
    """重做最近一次撤销的操作（撤销之后又有新操作时就没有了）。"""
    state = replay(store.storage_dir)
    if not state.undone:
        raise SessionError("没有可以重做的操作（撤销之后做了新的操作，重做栈就清空了）")
    return _apply(store, "redo", state.undone[-1], state.expected)


def _apply(store: Any, op: str, target: Dict[str, Any], expected: Dict[str, Tuple[int, int]]) -> Dict[str, Any]:
    what = s11_journal.describe(target)
    if target.get("purge"):
        raise SessionError(f"第 {target['n']} 步（{what}）是有意的彻底删除，不能撤销；更早的操作也就不能再撤销了")
    wanted = target["before"] if op == "undo" else target["after"]
    unversioned = set(target.get("unversioned") or []) if op == "undo" else set()
    steps = [(session_id, *expected[session_id], _UNVERSIONED if session_id in unversioned else want)
             for session_id, want in zip(target["ids"], wanted)]
    for session_id, now, last_live, want in steps:   # 先全部核对，再动手：过期的撤销一步都不做
        _check(store, op, session_id, now, last_live, want, f"第 {target['n']} 步（{what}）")
    with s11_journal.operation(store, op, always=True, target=target["n"], what=what) as record:
        for session_id, now, last_live, want in reversed(steps) if op == "undo" else steps:   # 撤销导入：先子后父
            _move(store, session_id, now, last_live, want)
    verb = "撤销" if op == "undo" else "重做"
    return {**record, "text": f"{verb}了第 {target['n']} 步：{what}"}


def _check(store: Any, op: str, session_id: str, now: int, last_live: int, want: int, step: str) -> None:
    """磁盘上的样子必须正是日志留下的：现在这一版是 now（0 = 不在），不在时回收站里最新的那份是 last_live。"""
    live, trashed = _on_disk(store, session_id)
    stale = None
    if live != now:
        stale = (f"会话 {session_id} 现在" + (f"是第 {live} 版" if live else "不在（已删除）") + "，日志里它" +
                 (f"应是第 {now} 版" if now else "应不在"))
    elif now == 0 and want > 0 and trashed != last_live:
        stale = (f"回收站里没有会话 {session_id} 的第 {last_live} 版" +
                 (f"（最新的一份是第 {trashed} 版）" if trashed else "（回收站已清空？）"))
    if stale:
        raise ConflictError(f"不能{'撤销' if op == 'undo' else '重做'}{step}：{stale}——有人在日志之外改过它；"
                            "什么都没有改动，请先看 history")


def _move(store: Any, session_id: str, now: int, last_live: int, want: int) -> None:
    """把一个会话从 now 变成 want 那一版的内容（0 = 不在；_UNVERSIONED = 书中代码写的那一版，0.json）：
    删除、恢复，或把那一版存成新的一版。"""
    if want == _UNVERSIONED:
        want = 0
    elif want == 0:
        if now and not store.delete(session_id):
            raise ConflictError(f"会话 {session_id} 刚刚被别人删掉了（同时有两处在撤销？）：请先看 history")
        return
    if now == 0:
        if not store.restore(session_id):   # 回收站里最新的那份（刚核对过是 last_live）
            raise ConflictError(f"回收站里会话 {session_id} 的副本刚刚不见了（同时有两处在撤销？）：请先看 history")
        now = last_live
    if now != want or want == 0:
        node = load_revision(store, session_id, want)
        node.revision = now   # 以现在这一版为底保存：中途别人保存过就 ConflictError
        store.save(node)


def revert(store: Any, session_id: str, revision: Any) -> Any:
    """回到第 revision 版：把它的内容存成新的一版（记进日志的是一次 save，带 revert_of），返回保存后的节点。"""
    live = store.load(session_id)
    if live is None:
        in_trash = s11_trash.copies(store.storage_dir, validate_session_id(session_id))
        raise SessionNotFound(f"会话 {session_id} 在回收站里：先恢复它，再回到某一版" if in_trash
                              else f"未找到会话 {session_id}")
    node = load_revision(store, session_id, revision)
    if live.revision == revision:
        raise SessionError(f"会话 {session_id} 现在就是第 {revision} 版，不必回到它")
    node.revision = live.revision
    with s11_journal.operation(store, "save", revert_of=revision):
        store.save(node)
    return node
