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
remove() 先调 before_remove() 登记的停止函数（实验室用它结束还在往这里写的子进程），再删里面的东西，
主人记录 owner.json 最后删：删到一半失败时它还在，下次启动的 remove_leftovers() 认得出这个目录、删得掉。
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import threading
from typing import Callable, List, Optional

RUN_ROOT_PREFIX = "s11_run_"
OWNER_FILE = "owner.json"

__all__ = ["create", "remove", "before_remove", "remove_leftovers", "process_started", "RUN_ROOT_PREFIX",
           "OWNER_FILE"]

# 删目录之前要先停下的东西（还在往里写的子进程）：进程级的资源，和 atexit 的登记表一样，不是访客数据
_STOPPERS: List[Callable[[], object]] = []
_STOPPERS_LOCK = threading.Lock()


def before_remove(stop: Callable[[], object]) -> None:
    """登记一个停止函数：remove() 删任何东西之前先调它（登记过的不重复登记）。"""
    with _STOPPERS_LOCK:
        if stop not in _STOPPERS:
            _STOPPERS.append(stop)


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


def remove(folder: str) -> bool:
    """停下登记过的写入者，删掉 folder 里的一切，最后才删 owner.json 和目录本身。返回删干净了没有。

    一个停止函数出错也照样删（退出时不能卡在这里）；删不干净时留着 owner.json，下次启动再删。"""
    with _STOPPERS_LOCK:
        stoppers = list(_STOPPERS)
    for stop in stoppers:
        try:
            stop()
        except Exception:   # 停不下来的也不妨碍删目录：删不干净的下次启动再删
            pass
    for _attempt in range(2):   # 第二遍：第一遍时正好有东西被写进来
        for name in _names(folder):
            if name != OWNER_FILE:
                _remove_path(os.path.join(folder, name))
    if _names(folder) not in ([], [OWNER_FILE]):
        return False            # 还有东西：留着主人记录
    try:
        if os.path.lexists(os.path.join(folder, OWNER_FILE)):
            os.unlink(os.path.join(folder, OWNER_FILE))
        os.rmdir(folder)
    except FileNotFoundError:
        pass
    except OSError:
        return False
    return True


def _names(folder: str) -> List[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _remove_path(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except OSError:
        pass


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
