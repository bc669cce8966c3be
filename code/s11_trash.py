"""s11_trash.py — 回收站的样子：只有这里知道 .trash/ 里的文件叫什么

    sessions/
    ├── 0994dd416b46.json
    └── .trash/
        ├── 4d67e2e6b66c.1787654000123456789.json   delete() 移进来：<会话 ID>.<删除时的纳秒>.json
        └── 4d67e2e6b66c.1787654999000000000.json   同一会话删过两次：两份都在，restore() 放回最新的

关键洞察：删除只是换个名字（os.replace，原子的），所以“删错了”永远来得及——直到 purge / empty_trash。

这里只管名字和文件；加锁、fsync 由调用方（SessionStore）负责。会话树浏览器、命令行和仓库都经由
entries() / copies() 读回收站，不自己解析文件名。本模块只依赖标准库和 s11_format。
"""

from __future__ import annotations

import os
import re
import time
from typing import List, NamedTuple, Optional, Tuple

from s11_format import ID_CHARS, MAX_ID_LENGTH, validate_session_id

__all__ = ["TRASH_DIR", "TrashEntry", "trash_dir", "trash_name", "parse_trash_name", "entries", "copies",
           "trashed_ids", "move_to_trash", "remove_copies"]

TRASH_DIR = ".trash"
_TRASH_NAME = re.compile(rf"([{ID_CHARS}]{{1,{MAX_ID_LENGTH}}})\.(\d+)\.json")


class TrashEntry(NamedTuple):
    """回收站里的一份副本。"""
    session_id: str
    deleted_ns: int      # 删除时的 time.time_ns()
    path: str
    size: int            # 字节数（读不到时为 0）


def trash_dir(storage_dir: str) -> str:
    return os.path.join(storage_dir, TRASH_DIR)


def trash_name(session_id: str, deleted_ns: int) -> str:
    """('4d67e2e6b66c', 17) -> '4d67e2e6b66c.17.json'"""
    return f"{validate_session_id(session_id)}.{deleted_ns}.json"


def parse_trash_name(name: str) -> Optional[Tuple[str, int]]:
    """'4d67e2e6b66c.17.json' -> ('4d67e2e6b66c', 17)；别的名字（'x.json'、'../a.1.json'）-> None。"""
    match = _TRASH_NAME.fullmatch(name)
    return (match.group(1), int(match.group(2))) if match else None


def _names(storage_dir: str) -> List[str]:
    try:
        return sorted(os.listdir(trash_dir(storage_dir)))
    except (FileNotFoundError, NotADirectoryError):
        return []


def entries(storage_dir: str) -> List[TrashEntry]:
    """回收站里的全部副本，最近删除的在前。只看文件名和大小，从不打开文件。"""
    found = []
    for name in _names(storage_dir):
        parsed = parse_trash_name(name)
        if parsed is None:
            continue
        path = os.path.join(trash_dir(storage_dir), name)
        try:
            size = os.lstat(path).st_size
        except OSError:
            size = 0
        found.append(TrashEntry(parsed[0], parsed[1], path, size))
    return sorted(found, key=lambda entry: (-entry.deleted_ns, entry.session_id))


def copies(storage_dir: str, session_id: str) -> List[str]:
    """这个会话在回收站里的全部副本的文件名，旧的在前。"""
    found = [(parsed[1], name) for name in _names(storage_dir)
             if (parsed := parse_trash_name(name)) and parsed[0] == session_id]
    return [name for _, name in sorted(found)]


def trashed_ids(storage_dir: str) -> List[str]:
    return sorted({parsed[0] for name in _names(storage_dir) if (parsed := parse_trash_name(name))})


def move_to_trash(storage_dir: str, path: str, session_id: str) -> str:
    """把会话文件原子地移进回收站，返回新路径。"""
    folder = trash_dir(storage_dir)
    os.makedirs(folder, exist_ok=True)
    target = os.path.join(folder, trash_name(session_id, time.time_ns()))
    os.replace(path, target)
    return target


def remove_copies(storage_dir: str, session_id: str) -> int:
    """真正删除这个会话在回收站里的每一份副本，返回删了几个（别人同时删掉的不算错）。"""
    removed = 0
    for name in copies(storage_dir, session_id):
        try:
            os.remove(os.path.join(trash_dir(storage_dir), name))
            removed += 1
        except FileNotFoundError:
            pass
    return removed
