"""s11_storage.py — 会话仓库脚下的文件机制：原子写入、目录锁、只读普通文件

s11_session 只说“存档 / 读档 / 分叉”；怎样把字节安全地放上磁盘、再安全地读回来，都在这里：

    save(node)                                            load(id) / list_sessions() / check()
      │ bytes ──► PendingWrite: .x.json.k3j9.tmp            │
      │           写完 + fsync，flock 一直握着（锁外）        ▼
      │ with DirectoryLock(folder):   ← .lock，跨线程跨进程   read_regular_file(x.json)
      │     核对修订号（s11_session）                         lstat 是普通文件才打开（O_NOFOLLOW |
      │     pending.commit()  → os.replace(tmp, x.json)      O_NONBLOCK），fstat 再确认：目录、管道、
      ▼ fsync_dir(folder)     → 改名本身也落盘               套接字、符号链接一律 NotRegularFile，不跟随、不卡住

关键洞察：读者要么看到旧文件、要么看到新文件——只要“写内容”和“换名字”是两步，
而换名字（os.replace）是原子的；出任何错，临时文件都随 PendingWrite 一起消失。

临时文件在写入期间一直被写入者 flock 着：check() 只把“没人锁着、而且 TEMP_GRACE_SECONDS 内没动过”
的临时文件报告为残留（进程被 kill -9 才会留下它们），正在写的那一份不会被当成垃圾删掉。
没有 fcntl 的系统（Windows）只按年龄判断（TEMP_GRACE_SECONDS_WITHOUT_LOCKS）。

本模块只 import s11_text（给人看的中文说明）；报错用 OSError（及其子类 NotRegularFile），由上层翻译成会话错误。
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from s11_text import describe_os_error

try:  # POSIX：线程和进程共用的建议锁
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

TMP_SUFFIX = ".tmp"
HEAD_BYTES = 64 * 1024                         # 只读开头时第一次读多少
LOCK_FILE = ".lock"
TEMP_GRACE_SECONDS = 10.0                      # mkstemp → flock 之间的瞬间，留足余量
TEMP_GRACE_SECONDS_WITHOUT_LOCKS = 3600.0      # 没有 flock 可查时，只有这么旧的才算残留

_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_LOCK_FLAGS = (os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_BINARY", 0))
_KIND_NAMES = {stat.S_IFDIR: "目录", stat.S_IFIFO: "命名管道（FIFO）", stat.S_IFSOCK: "套接字",
               stat.S_IFLNK: "符号链接", stat.S_IFCHR: "字符设备", stat.S_IFBLK: "块设备"}


# ── 只读普通文件 ──────────────────────────────────────────────────────────────────────────────
class NotRegularFile(OSError):
    """名字对了，却不是普通文件（目录、管道、套接字、符号链接……）：不打开、不跟随。"""

    def __init__(self, path: str, kind: str):
        super().__init__(None, f"不是普通文件（{kind}）", path)   # 没有 errno：中文原因就在 strerror 里
        self.kind = kind


def entry_kind(path: str) -> str:
    """'目录'、'符号链接（指向的文件不存在）'……；用在报告里说明一个怪条目是什么。"""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "无法查看"
    kind = _KIND_NAMES.get(stat.S_IFMT(mode), "普通文件" if stat.S_ISREG(mode) else "未知类型")
    if stat.S_ISLNK(mode) and not os.path.exists(path):
        kind += "（指向的文件不存在）"
    return kind


def read_regular_file(path: str, *, info: Optional[os.stat_result] = None,
                      enough: Optional[Callable[[bytes], bool]] = None,
                      regular: bool = False) -> Tuple[bytes, os.stat_result]:
    """读出一个普通文件的全部字节和它的 fstat；文件不存在抛 FileNotFoundError。

    先 lstat：不是普通文件的条目（目录、FIFO、设备、符号链接）根本不打开（info：调用方刚做过的 lstat，省一次）；
    O_NOFOLLOW + O_NONBLOCK：lstat 之后名字被换成链接或 FIFO 时，open 也不跟随、不会永远等一个写入者；
    fstat 再确认打开的是普通文件才读。
    enough(已读的字节) 为真时提前停下，只返回文件的开头（先读 HEAD_BYTES）：大会话的摘要只要第一行。
    regular=True：调用方刚从目录项（os.scandir 的文件类型）知道它是普通文件，省掉 lstat；打开后照样 fstat 确认。
    """
    if not regular and not stat.S_ISREG((info or os.lstat(path)).st_mode):
        raise NotRegularFile(path, entry_kind(path))
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):   # O_NOFOLLOW 遇到链接（BSD 报 EMLINK）
            raise NotRegularFile(path, entry_kind(path)) from None
        if exc.errno == errno.ENXIO:                   # Linux 打开套接字文件
            raise NotRegularFile(path, "套接字") from None
        raise
    try:
        info = os.fstat(fd)   # 以打开的文件为准（lstat 之后名字可能被换过）
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(path, _KIND_NAMES.get(stat.S_IFMT(info.st_mode), "未知类型"))
        chunks, want = [], info.st_size + 1 if enough is None else min(info.st_size + 1, HEAD_BYTES)
        while True:   # 普通文件读不满就是到了结尾；读满了说明文件在长（正被原地改写），接着读
            chunk = os.read(fd, want)
            chunks.append(chunk)
            if len(chunk) < want or (enough is not None and enough(b"".join(chunks))):
                return b"".join(chunks), info
            want = 1 << 20
    finally:
        os.close(fd)


# ── 原子写入：两步，中间随时可以放弃 ───────────────────────────────────────────────────────────
class PendingWrite:
    """同目录临时文件里已经完整落盘的新内容；commit() 之前 path 完全没动。

        with PendingWrite(path, data) as pending:     # 写临时文件 + fsync（慢，放在锁外）
            with DirectoryLock(folder):
                ...核对...                               # 出错 → with 结束时临时文件被删掉
                pending.commit()                        # os.replace：原子地换成新内容

    写入期间临时文件一直被 flock 着，check() 据此认出“有人正在写”，不会劝人删掉它。
    """

    def __init__(self, path: str, data: bytes, durable: bool = True):
        self.path = path
        # 同一目录才能用 os.replace 原子地换名；mkstemp：O_EXCL 新建、不跟随链接、权限 0600、重名就换一个。
        # 绝对路径：之后 chdir，commit() 照样找得到它
        folder, name = os.path.split(os.path.abspath(path))
        fd, self.temp_path = tempfile.mkstemp(prefix=f".{name}.", suffix=TMP_SUFFIX, dir=folder)
        self._fd: Optional[int] = fd
        self.committed = False
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)   # 新建的文件没人锁着，不会等待
            written = os.write(fd, data) if data else 0   # 普通文件一次就写完；写不满才逐段续写
            if written < len(data):
                view = memoryview(data)[written:]
                while view:
                    view = view[os.write(fd, view):]
            if durable:
                os.fsync(fd)   # 先让数据落盘，再让名字指向它：否则断电后可能得到空文件
        except BaseException:
            self.discard()
            raise

    def sync(self) -> None:
        """durable=False 建的临时文件稍后再 fsync（一批文件可以一起 fsync，见 s11_chunks）。"""
        if self._fd is not None:
            os.fsync(self._fd)

    def stat(self) -> os.stat_result:
        """临时文件的 fstat：commit() 之后名字指向的就是它（同一 inode、大小、修改时间），不必再按路径 lstat。"""
        return os.fstat(self._fd)

    def commit(self) -> None:
        """第二步：os.replace 是原子的——读者要么看到旧文件，要么看到新文件，不会看到半个。"""
        os.replace(self.temp_path, self.path)
        self.committed = True
        self._close()

    def discard(self) -> None:
        """放弃：删掉临时文件（已经不在也不要紧）。"""
        if not self.committed:
            try:
                os.unlink(self.temp_path)
            except FileNotFoundError:
                pass
        self._close()

    def _close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)   # 关闭即释放 flock

    def __enter__(self) -> "PendingWrite":
        return self

    def __exit__(self, *exc_info) -> None:
        self.discard()


def fsync_dir(folder: str) -> None:
    """让 rename / unlink 本身也落盘；Windows 等不支持打开目录的系统直接跳过。"""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def is_abandoned_temp(path: str, now: Optional[float] = None) -> bool:
    """一个临时文件是不是真的没人要了：没有写入者锁着它，而且最近 TEMP_GRACE_SECONDS 秒没被改过。
    文件已经消失（写入者刚提交或放弃）返回 False。"""
    now = time.time() if now is None else now
    try:
        age = now - os.lstat(path).st_mtime
    except FileNotFoundError:
        return False
    if fcntl is None:
        return age > TEMP_GRACE_SECONDS_WITHOUT_LOCKS
    try:
        fd = os.open(path, _READ_FLAGS)
    except FileNotFoundError:
        return False
    except OSError:
        return age > TEMP_GRACE_SECONDS   # 打不开（权限）：只能看年龄
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return False                       # 写入者还活着，正握着它
    finally:
        os.close(fd)
    return age > TEMP_GRACE_SECONDS


def temp_file_problem(path: str) -> List[Tuple[str, str]]:
    """check() 看到的一个 *.tmp 条目：[(问题种类, 中文说明)]；只有真正没人要的才算（见 is_abandoned_temp）。"""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [("unreadable", describe_os_error(exc))]
    if not stat.S_ISREG(mode):
        return [("unreadable", f"名字像临时文件，却是{entry_kind(path)}；请手动处理")]
    if is_abandoned_temp(path):
        return [("temp_file", "写入被中断留下的临时文件（没有写入者锁着它，也有一阵没动了），可以删除")]
    return []


def abandoned_temps(folder: str) -> List[str]:
    """folder 里没人要了的临时文件（is_abandoned_temp：没有写入者锁着、也有一阵没动）的路径。

    kill -9 留下的临时会话文件引用着块，它不走，那些块就一直算“有人要”，占着空间删不掉（issue 41 item 10）。
    正在写的那一份被 flock 着，不算。不是普通文件的条目（链接、目录）从不算进来。"""
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    paths = [os.path.join(folder, name) for name in names if name.endswith(TMP_SUFFIX)]
    return [path for path in paths if entry_kind(path) == "普通文件" and is_abandoned_temp(path)]


# ── 目录锁 ─────────────────────────────────────────────────────────────────────────────────────
_thread_locks: Dict[Any, threading.Lock] = {}
_thread_locks_guard = threading.Lock()


class DirectoryLock:
    """目录级写锁：线程锁挡住本进程的其他线程，folder/.lock 上的 flock 挡住其他进程。

    .lock 打不开（比如属于另一个账户）时抛 OSError，什么也没锁上——调用者的 PendingWrite 随之放弃。
    """

    def __init__(self, folder: str):
        self.folder = folder
        self._path = os.path.join(folder, LOCK_FILE)
        self._thread_lock: Optional[threading.Lock] = None   # 第一次加锁时才找（只读的仓库从不加锁）
        self._fd: Optional[int] = None

    def __enter__(self) -> "DirectoryLock":
        if self._thread_lock is None:
            key = os.path.realpath(self.folder)   # 同一个目录，不管经过哪条路径、哪个符号链接
            with _thread_locks_guard:   # 同一目录的所有实例共用一把线程锁
                self._thread_lock = _thread_locks.setdefault(key, threading.Lock())
        self._thread_lock.acquire()
        if fcntl is None:
            return self
        try:
            self._fd = os.open(self._path, _LOCK_FLAGS, 0o666)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self._release()

    def _release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)   # 关闭即释放 flock
        self._thread_lock.release()


def stat_key(info: os.stat_result) -> Tuple[int, int, int]:
    """(inode, 大小, 修改时间)：只用来比较“这个文件变了没有”（摘要缓存、浏览器的缓存都用它）。"""
    return info.st_ino, info.st_size, info.st_mtime_ns
