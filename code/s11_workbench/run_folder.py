"""run_folder.py — 本次启动的临时目录：所有临时文件放在一处，停下时删掉，下次启动时清理上次的残留

    <系统临时目录>/
    ├── s11_run_k3j9x2/          本次启动（mkdtemp：0700、名字随机）
    │   ├── owner.json           {"pid": 4242, "started": <进程启动时刻>, "sessions_dir": "/abs/gradio_sessions"}
    │   ├── gradio/              gradio 的上传与下载缓存（GRADIO_TEMP_DIR）
    │   ├── s11_exports-…/       导出的 .md / .html
    │   └── s11_lab_…/           实验室的临时文件夹
    └── s11_run_a81kq0/          上一次启动留下的（进程被 kill -9 或断电）：
                                 同一个会话目录、主人进程已不在 ──> 下次启动时 remove_leftovers() 删掉

Key insight: 只删“能证明没人在用”的目录：记录的进程不在了（或那个 pid 已被别的进程重用——启动时刻对不上），
而且记录的是同一个会话目录；别的账号的、别的会话目录的、主人还活着的，一律不碰。
停下时的清理由 app.py 负责：Ctrl+C、SIGTERM、SIGHUP 都变成正常退出，退出时 remove(folder)。
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from typing import List, Optional

RUN_ROOT_PREFIX = "s11_run_"
OWNER_FILE = "owner.json"

__all__ = ["create", "remove", "remove_leftovers", "process_started", "RUN_ROOT_PREFIX", "OWNER_FILE"]


def process_started(pid: int) -> Optional[str]:
    """进程的启动时刻（/proc/<pid>/stat 第 22 个字段，开机以来的时钟滴答）；读不到时 None。
    和 pid 一起记下：pid 会被重用，启动时刻不会重复。"""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None


def _alive(pid, started) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # 别的账号的进程：活着，不碰
        return True
    now = process_started(pid)
    return started is None or now is None or now == started


def _same_folder(a: str, b: str) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def create(sessions_dir: str, parent: Optional[str] = None) -> str:
    """新建本次启动的临时目录并写下主人（本进程、会话目录），返回它的路径。"""
    folder = tempfile.mkdtemp(prefix=RUN_ROOT_PREFIX, dir=parent)
    owner = {"pid": os.getpid(), "started": process_started(os.getpid()),
             "sessions_dir": os.path.realpath(sessions_dir)}
    with open(os.path.join(folder, OWNER_FILE), "w", encoding="utf-8") as handle:
        json.dump(owner, handle, ensure_ascii=False)
    return folder


def remove(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def remove_leftovers(sessions_dir: str, parent: Optional[str] = None) -> List[str]:
    """删掉 parent（默认系统临时目录）里属于同一会话目录、主人进程已不在的 s11_run_* 目录，返回删掉的路径。"""
    parent = parent or tempfile.gettempdir()
    removed = []
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return removed
    for name in names:
        if not name.startswith(RUN_ROOT_PREFIX):
            continue
        folder = os.path.join(parent, name)
        try:
            info = os.lstat(folder)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            with open(os.path.join(folder, OWNER_FILE), encoding="utf-8") as handle:
                owner = json.load(handle)
        except (OSError, ValueError):   # 没有主人记录（别人的、写到一半的）：不碰
            continue
        if not isinstance(owner, dict) or not isinstance(owner.get("sessions_dir"), str):
            continue
        if not _same_folder(owner["sessions_dir"], sessions_dir) or _alive(owner.get("pid"), owner.get("started")):
            continue
        remove(folder)
        removed.append(folder)
    return removed
