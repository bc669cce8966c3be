"""spaces.py — 课堂版：每个浏览器一个私有空间，教师一个只读视图和一个共享书架

    <sessions_dir>/
    ├── .secret                  服务器密钥（0600，第一次启动时原子创建；重启后不变，学生的空间也就还在）
    ├── spaces/
    │   ├── 3f9a0c1d2e4b5a6c/    一个空间 = 一个普通的 SessionStore 目录（.json、.lock、.trash/）
    │   └── 81d07be2c44f0a19/
    ├── shelf/                   教师发布的会话（所有空间只读；分叉时复制进自己的空间）
    ├── spaces-trash/            课后 `python code/s11_cli.py class remove-idle` 移走的空间，`class empty-trash` 才真正删除
    └── archives/20261201-1530-3f9a/   下课时整班归档（页面上或 `class archive`），保留期过后才删除

    令牌  = "<space_id>.<HMAC-SHA256(服务器密钥, space_id) 的前 32 个十六进制字符>"
    浏览器 ──令牌──> open(token) ──验签──> Space(space_id, store, read_only)
                                 └─ 伪造 / 改动 / 别的服务器签的 ──> SpaceError

Key insight: 空间名本身是公开的文件夹名，能进门的只有服务器签过名的令牌——所以猜到、看到别人的
space_id 都没用；每个请求都重新验签，服务器不需要记住任何会话。

书架上的会话保留原来的 ID（连同整条祖先链一起复制）：父子关系原样成立，重复发布或重复分叉同一节点
不会产生副本。复制从不覆盖内容不同的节点：目标里同一 ID 的节点已经变了（学生续写了自己的副本、
老师续写后重新发布），这一份就以新 ID（原 ID + 内容摘要）另存，两份都在。
发布时脱敏（标题、每条消息的每个字段、来源信息），书架上的文件里没有原文；学生从书架或老师查看的空间
分叉时，复制进自己空间的也只是脱敏后的内容。学生从书架分叉时，祖先链先复制进自己的空间，再在自己的空间里 fork。

限额（Limits）：每个空间的会话数、字节数（含回收站）、单个上传的大小，以及“新建”的速度（令牌桶：
可以连点一阵，不能持续地刷）；磁盘剩余空间低于 min_free_bytes 时一律拒绝写入。
同一个访客地址领取新空间的速度也有上限，脚本不能靠不停换新空间绕过限额。
导入先按确切的字节预留（Space.reserve），写完才释放：同时进行的两次导入不会都以为放得下；写完后空间的用量
= 预留时的用量 + 它写的字节，只要期间仓库没有别的写（CountingStore.writes 记着本服务器对这个空间的每一次写），
下一次检查就不必再走一遍几千个文件。浏览器里的分叉、续写、删除、恢复也这样（Space.fork / save / delete / restore）：
分叉、续写按 store.write_costs 的确切字节预留；删除只是把文件换名进回收站（回收站照样算字节），所以少一个会话、
多日志的一行，恢复反过来（日志只往末尾追加：量它变长了多少）。所以进程里第一次检查走一遍空间，之后这几种写都不再走。
不经过本服务器的写（别的进程直接改空间目录）：在那之后目录的戳变了就照常重数；恰好在本服务器一次写的同时发生的，
要到目录下一次变动才数到（学生只能经过服务器写，这只关乎老师自己的工具）。

Scope: 不做账号和登录（空间跟着浏览器走，清掉浏览器数据就换了一个空间）；教师密钥每次启动重新生成；
限速只在本进程内有效（多进程部署需要共享的计数器）。
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import sys
import threading
import time
import unicodedata
from dataclasses import dataclass
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import s11_journal
import s11_redact
from s11_format import MAX_ID_LENGTH
from s11_session import ConflictError, SessionError, SessionNode, SessionNotFound, SessionStore
from s11_storage import PendingWrite, stat_key
from s11_text import human_size, os_error_reason, printable, public_name
from s11_workbench.bounded import BoundedCache
from s11_workbench.search_index import INDEX_DIR

__all__ = ["SpaceError", "Limits", "Space", "Spaces", "TokenBucket", "ReadOnlyStore", "copy_lineage", "CopyResult",
           "redacted_copy",
           "local_addresses", "classroom_links"]

MB = 1024 * 1024
SECRET_FILE = ".secret"
SPACES_DIR = "spaces"
SHELF_DIR = "shelf"
SPACES_TRASH_DIR = "spaces-trash"
SPACE_ID_HEX = 16          # 64 位随机数：只是文件夹名，不是凭据
SIGNATURE_HEX = 32         # 128 位 HMAC：这才是凭据
MAX_TOKEN_CHARS = 200      # 比真令牌长得多的输入直接拒绝，不做任何计算
_SPACE_ID = re.compile(rf"[0-9a-f]{{{SPACE_ID_HEX}}}")
_TOKEN = re.compile(rf"([0-9a-f]{{{SPACE_ID_HEX}}})\.([0-9a-f]{{{SIGNATURE_HEX}}})")
_SIGN_PREFIX = b"s11-space:"
UPLOAD_OVERHEAD_BYTES = 64 * 1024   # multipart 的边界和表头：上传请求体可以比文件本身大这么多
PROFILE_FILE = ".profile.json"      # 空间里学生给老师看的名字（点开头：仓库的 check() 和计数都不管它）
MAX_NAME_CHARS = 40
ARCHIVES_DIR = "archives"
ARCHIVE_INFO = "archive.json"
ARCHIVE_KEEP_SECONDS = 14 * 24 * 3600   # 下课归档默认保留两周，之后才真正删除
_ARCHIVE_NAME = re.compile(r"\d{8}-\d{6}-[0-9a-f]{4}")


class SpaceError(SessionError):
    """空间层面的拒绝：令牌无效、超出限额、操作太快、只读空间、不是教师。消息是给同学看的中文。"""


@dataclass(frozen=True)
class Limits:
    """每个空间的限额。默认值按一堂课估算：演示一次 3 个会话，导入一个真实记录几 MB 到 20 MB。"""
    max_sessions: int = 3000              # 会话（节点）个数
    max_bytes: int = 256 * MB             # 空间目录的总字节数，回收站也算
    max_upload_bytes: int = 32 * MB       # 单个上传文件（也传给 launch(max_file_size=...)）
    creates_per_minute: int = 30          # “新建”类操作的持续速度（令牌桶每分钟补充的数量）
    create_burst: int = 30                # 令牌桶容量：连续点 30 次都不会被拦
    new_spaces_per_minute: int = 30       # 同一访客地址每分钟最多领取的新空间
    uploads_per_minute: int = 20          # 同一访客地址每分钟最多上传几次（字节另有预算，见 admit_upload）
    min_free_bytes: int = 256 * MB        # 磁盘剩余低于这个值时拒绝一切写入，保护整台机器
    # 排队（queue_guard.py）：一位访客（空间令牌、访客地址各算一次）同时排队或运行中的事件
    queued_per_event: int = 2             # 同一个事件最多几个（“同一时刻只跑一个”的事件每人只能排 1 个）
    queued_per_visitor: int = 6           # 所有事件加起来最多几个
    queued_bytes_per_visitor: int = 16 * MB   # 这些事件的请求体加起来最多多少字节
    # 按地址的限额（领取新空间、新建、上传、排队）都假定一个地址后面是一位同学；整班在同一个 NAT 后面
    # （学生电脑在服务器看来是同一个地址）时设成班级人数，见 app.py --students-per-address
    students_per_address: int = 1

    def per_address(self, amount: float) -> float:
        """按地址的限额 = 一位同学的限额 × students_per_address。"""
        return amount * max(1, self.students_per_address)


class TokenBucket:
    """令牌桶：容量 capacity，每秒补充 per_second。take() 成功返回 0，否则返回还要等几秒。线程安全。

    capacity=30, per_second=0.5：连点 30 次都通过，之后每 2 秒放行一次——正常点击不会碰到，
    每秒 70 次的脚本第 31 次起被拦下。
    """

    def __init__(self, capacity: float, per_second: float, clock: Callable[[], float] = time.monotonic):
        self.capacity, self.per_second, self._clock = float(capacity), float(per_second), clock
        self._tokens, self._stamp = float(capacity), clock()
        self._lock = threading.Lock()

    def take(self, cost: float = 1.0) -> float:
        with self._lock:
            now = self._clock()
            self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self.per_second)
            self._stamp = now
            if self._tokens >= cost:
                self._tokens -= cost
                return 0.0
            return (cost - self._tokens) / self.per_second if self.per_second > 0 else float("inf")

    def refund(self, cost: float = 1.0) -> None:
        """退回一次 take() 拿走的令牌（两只桶要一起通过时，后一只拒绝就把前一只的退回去）。"""
        with self._lock:
            self._tokens = min(self.capacity, self._tokens + cost)


class ReadOnlyStore(SessionStore):
    """只读的 SessionStore：读的方法照常，写的方法一律 SpaceError。书架和教师视图都用它，
    即使某个处理函数忘了先调 writable()，也写不进去。"""

    def _refuse(self, *args, **kwargs):
        raise SpaceError(f"这是只读空间（{os.path.basename(self.storage_dir)}）：不能保存、删除或恢复；"
                         "想改动请先分叉到自己的空间")

    save = delete = restore = _refuse
    empty_trash = purge = remove_orphan_chunks = save_many = _refuse   # 仓库以后加的写方法也先挡住


def _counted(name: str) -> Callable:
    """仓库的写方法 name → 调 SessionStore 的那个方法，做完（成功与否）都让 writes 加一。"""
    def counted(self, *args, **kwargs):
        try:
            return getattr(super(CountingStore, self), name)(*args, **kwargs)
        finally:
            with self._writes_lock:
                self.writes += 1
    counted.__name__, counted.__doc__ = name, getattr(SessionStore, name).__doc__
    return counted


class CountingStore(SessionStore):
    """学生空间的 SessionStore：每做完一次写（保存、删除、恢复、撤销……成功与否都算）writes 就加一。
    限额据此知道上次数过之后有没有别人写过这个空间（见 Space.finish）。fork、converge、label、save_many
    都经过 save()，所以也都算上。"""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.writes = 0
        self._writes_lock = threading.Lock()

    save = _counted("save")
    delete = _counted("delete")
    restore = _counted("restore")
    empty_trash = _counted("empty_trash")
    remove_orphan_chunks = _counted("remove_orphan_chunks")
    undo = _counted("undo")
    redo = _counted("redo")
    revert = _counted("revert")


class Space:
    """一个空间：space_id（公开的文件夹名）+ 它的 SessionStore + 是否只读。"""

    def __init__(self, space_id: str, folder: str, *, limits: Limits, read_only: bool = False,
                 bucket: Optional[TokenBucket] = None,
                 address_bucket: Optional[Callable[[], Optional[TokenBucket]]] = None,
                 scans: Optional[BoundedCache] = None):
        self.space_id = space_id
        self.folder = folder
        self.read_only = read_only
        self.limits = limits
        self.store: SessionStore = (ReadOnlyStore if read_only else CountingStore)(folder)
        self._bucket = bucket
        self._address_bucket = address_bucket   # 当前请求的访客地址的令牌桶（没有请求时 None）
        self._scans = scans   # 限额统计的每层目录缓存（Spaces 所有空间共用一个，见 folder_usage）
        self._quota_lock = threading.Lock()     # 限额的检查、预留、记下自己写完的样子，一次一个
        self._held = Reservation(0, 0)          # 正在写的预留的 (会话数, 字节)：别的写入检查限额时算上它们
        self._importing = 0                     # 其中导入预留的字节（拒绝的消息据此说“和正在进行的导入”）
        self._known: Optional[_Known] = None      # 本服务器自己一次写完时的用量：之后没人再写就照用（见 finish）

    def __repr__(self) -> str:
        return f"Space({self.space_id!r}{', 只读' if self.read_only else ''})"

    # ── 限额 ────────────────────────────────────────────────────────────────
    def usage(self) -> Tuple[int, int]:
        """(会话个数, 目录总字节数)。字节数包括回收站：删掉的会话仍然占着磁盘。"""
        with self._quota_lock:
            return self._usage()

    def require_room(self, *, sessions: int = 1, nbytes: int = 0) -> None:
        """再新建 sessions 个会话、写入 nbytes 字节之后仍在限额内，否则 SpaceError（什么都没写）。
        正在写的导入预留的会话数和字节（reserve）也算进去。"""
        self.writable()
        with self._quota_lock:
            self._check_room(self._usage(), sessions, nbytes)

    def reserve(self, *, sessions: int, nbytes: int) -> "Reservation":
        """导入写第一个字节之前：像 require_room 一样检查，再把这些会话数和字节记作“正在写”，直到 finish()。
        两个同时进行的导入因此不会都以为空间还放得下（先检查的那个预留了，后一个检查时算上它）。"""
        return self._reserve(sessions=sessions, nbytes=nbytes, importing=True)

    def _reserve(self, *, sessions: int, nbytes: int, check: bool = True, importing: bool = False) -> "Reservation":
        """reserve() 本身，也给本空间自己的分叉、续写、删除、恢复用。check=False（删除：满了也要删得了，才腾得出位置）：
        不检查、不预留，也不为了记用量去走一遍空间——记下的用量已经不成立时，这次就不记（usage 为 None）。"""
        self.writable()
        with self._quota_lock:
            if not check:
                return Reservation(0, 0, self._recorded(), getattr(self.store, "writes", None))
            usage = self._usage()
            self._check_room(usage, sessions, nbytes)
            self._held = Reservation(self._held.sessions + sessions, self._held.nbytes + nbytes)
            self._importing += nbytes if importing else 0
            return Reservation(sessions, nbytes, usage, getattr(self.store, "writes", None), importing)

    def finish(self, reservation: "Reservation", saved: int, written: int, *,
               sessions: Optional[int] = None) -> None:
        """写完（或中途停下）：释放预留。这次写让仓库的 writes 加了 saved 次（导入：成功保存的次数）、让空间确切地多了
        written 字节（store.write_costs 算的，日志行也在内；删除、恢复量的是日志文件变长了多少）、会话数变了 sessions
        （不给时按导入算：新建的会话不多于预留的，也不多于保存的次数——宁多不少）。期间仓库再没有别的写、
        它自己也没有失败的写（失败的保存可能留下了块，writes 照样加一，所以 writes 正好多了 saved 次才算数）时，
        空间的用量就是预留时的用量加上这些：下一次检查不必再走一遍空间的每个文件和每层目录。"""
        with self._quota_lock:
            self._held = Reservation(self._held.sessions - reservation.sessions,
                                     self._held.nbytes - reservation.nbytes)
            self._importing -= reservation.nbytes if reservation.importing else 0
            writes = getattr(self.store, "writes", None)
            self._known = None
            if reservation.usage is not None and reservation.writes is not None and writes == reservation.writes + saved:
                count, used = reservation.usage
                new = min(reservation.sessions, saved) if sessions is None else sessions
                self._known = _Known(writes, _folder_stamps(self.folder), (count + new, used + written))

    def _usage(self) -> Tuple[int, int]:
        """调用方握着 _quota_lock。finish() 记下的用量仍然成立就照用；否则照常走一遍（每层目录按戳缓存，见 folder_usage）。"""
        recorded = self._recorded()
        return recorded if recorded is not None else folder_usage(self.folder, self._scans)

    def _recorded(self) -> Optional[Tuple[int, int]]:
        """调用方握着 _quota_lock。finish() 记下的用量，只要它仍然成立：仓库的 writes 没变，空间目录和它的回收站、块、
        旧版目录的戳都没变。否则 None（并忘掉它）。"""
        known = self._known
        if known is not None and known.writes == getattr(self.store, "writes", None) \
                and known.stamps == _folder_stamps(self.folder):
            return known.usage
        self._known = None
        return None

    def _check_room(self, usage: Tuple[int, int], sessions: int, nbytes: int) -> None:
        count, used = usage
        count, used = count + self._held.sessions, used + self._held.nbytes
        limits = self.limits
        if count + sessions > limits.max_sessions:
            raise SpaceError(f"空间 {self.space_id} 已有 {count} 个会话，上限是 {limits.max_sessions} 个："
                             "请先删除一些不要的会话")
        if used + nbytes > limits.max_bytes:
            writing = "和正在进行的导入" if self._importing else ""
            raise SpaceError(f"空间 {self.space_id} 已用 {human_size(used)}（含回收站{writing}），再写 {human_size(nbytes)} "
                             f"会超过上限 {human_size(limits.max_bytes)}：请先在「🗑️ 删除 / 恢复」里删除不要的会话"
                             "并清空回收站")
        self.require_disk(nbytes)

    def require_disk(self, nbytes: int = 0) -> None:
        """再写 nbytes 字节之后，磁盘剩余仍不低于 min_free_bytes，否则 SpaceError。写的途中也可以再调。"""
        free = shutil.disk_usage(self.folder).free
        if free - nbytes < self.limits.min_free_bytes:
            raise SpaceError(f"服务器磁盘只剩 {human_size(free)}，暂停写入：请告诉老师清理磁盘")

    def require_upload(self, nbytes: int) -> None:
        """一个上传文件的大小是否在限额内。"""
        if nbytes > self.limits.max_upload_bytes:
            raise SpaceError(f"上传的文件有 {nbytes / MB:.1f} MB，超过每个文件 "
                             f"{self.limits.max_upload_bytes / MB:.0f} MB 的上限")

    def throttle(self) -> None:
        """每个“新建”类操作（运行演示、分叉、续写、导入……）先调一次；太快时 SpaceError。
        预算按空间算一次，也按访客地址算一次：同一地址不停领新空间，也只有一位同学的预算。"""
        self.writable()
        wait = self._bucket.take() if self._bucket is not None else 0.0
        if wait > 0:
            raise SpaceError(f"操作太快了：每个空间每分钟最多新建 {self.limits.creates_per_minute} 次，"
                             f"请 {max(1, round(wait))} 秒后再试")
        address = self._address_bucket() if self._address_bucket is not None else None
        wait = address.take() if address is not None else 0.0
        if wait > 0:
            if self._bucket is not None:
                self._bucket.refund()
            per_minute = self.limits.per_address(self.limits.creates_per_minute)
            raise SpaceError(f"操作太快了：同一地址每分钟最多新建 {per_minute:.0f} 次（换新空间也算在同一地址上），"
                             f"请 {max(1, round(wait))} 秒后再试")

    def writable(self) -> "Space":
        if self.read_only:
            raise SpaceError(f"空间 {self.space_id} 是只读的（共享书架或教师查看）：想改动请先分叉到自己的空间")
        return self

    # ── 本空间自己的写：分叉、续写、删除、恢复 ─────────────────────────────────────────────
    # 每个都像导入一样先预留（按确切的字节检查限额：两个同时的写不会都以为放得下），写完用 finish() 记下用量，
    # 下一次检查就不必走一遍空间。不限速——调用方按一次操作先调 throttle()。
    def fork(self, parent_id: str, new_messages: Optional[list] = None, *, at: Optional[int] = None,
             title: Optional[str] = None) -> SessionNode:
        """在本空间里分叉：写下的节点和日志里的那一行都和 store.fork() 的一样。先按这次确切要写的字节
        （新文件、新块、日志的一行）检查限额，放不下就一个字节都不写。"""
        store = self.writable().store
        parent = store.load(parent_id)
        if parent is None:
            raise SessionNotFound(f"❌ 未找到父会话: {parent_id}，无法分叉！")
        child = _planned_child(parent, at, new_messages, title)
        child._stored = parent._stored   # 继承的前缀就是父节点的块：不再编码（同 store.fork）
        reservation, saved, nbytes = None, 0, 0
        try:   # 字节在 fork 的那一行日志之内算：日志行的长短（带 parent、fork_point）也就算准了
            with s11_journal.operation(store, "fork", parent=parent.session_id, fork_point=child.fork_point):
                nbytes = sum(store.write_costs([child]))
                reservation = self._reserve(sessions=1, nbytes=nbytes)
                store.save(child)   # 新 ID、修订 0：分叉永远不会冲突
                saved = 1
        finally:   # 离开 operation 时那一行才写下：之后才记用量
            if reservation is not None:
                self.finish(reservation, saved, nbytes, sessions=saved)
        return child

    def save(self, node: SessionNode) -> None:
        """保存本空间的一个节点（续写）：先按确切的字节（整个新文件、新块、日志的一行；换下的旧文件留在 .history/，
        不腾出空间）检查限额，放不下就一个字节都不写。修订号过期照样 ConflictError（store.save）。"""
        store = self.writable().store
        nbytes = sum(store.write_costs([node]))
        exists = os.path.lexists(store.path_of(node.session_id))
        # 修订 0 而文件已在 = 要换掉的是书中代码写的、没有修订号的文件：日志那一行多记一项，write_costs 没算它——
        # 这次不记用量（当作没写成：writes 对不上，下一次检查照常走一遍）
        exact = not (exists and node.revision == 0)
        reservation = self._reserve(sessions=0 if exists else 1, nbytes=nbytes)
        saved = 0
        try:
            store.save(node)
            saved = 1 if exact else 0
        finally:
            self.finish(reservation, saved, nbytes, sessions=0 if exists else saved)

    def delete(self, session_id: str) -> bool:
        """移进回收站（store.delete），返回删掉了没有。回收站算在字节里，所以会话只少了一个，从不因为限额拒绝。"""
        return self._renamed(lambda store: store.delete(session_id), sessions=-1, check=False)

    def restore(self, session_id: str) -> bool:
        """从回收站放回（store.restore），返回放回了没有。要多一个会话的位置（字节不变：回收站本来就算着）。"""
        return self._renamed(lambda store: store.restore(session_id), sessions=1)

    def _renamed(self, action, *, sessions: int, check: bool = True) -> bool:
        """action(store) 只给会话文件换个名字（进出回收站），再往日志末尾追加一行：字节只多了日志变长的那一段，
        量出来的，确切；做成了（action 返回 True）会话数变 sessions 个。"""
        store = self.writable().store
        reservation = self._reserve(sessions=max(sessions, 0), nbytes=0, check=check)
        journal = s11_journal.journal_path(self.folder)
        before, done, saved = _size(journal), False, 0
        try:
            done = action(store)
            saved = 1
        finally:
            self.finish(reservation, saved, _size(journal) - before, sessions=sessions if done else 0)
        return done

    # ── 跨空间分叉（从书架开始）──────────────────────────────────────────────────
    def fork_from(self, source: "Space", session_id: str, *, at: Optional[int] = None,
                  new_messages: Optional[list] = None, title: Optional[str] = None) -> SessionNode:
        """把 source 里 session_id 的祖先链脱敏后复制进本空间（同样的 ID），再在本空间里 fork。
        本空间里同一 ID 的节点已经变了（自己续写过）时不覆盖它：这一份以新 ID 另存，从新 ID 分叉。
        先检查限额和磁盘余量并预留：用的是这次真正要写的字节（复制的节点 + 新分支，含分块存放的大消息的新块），
        放不下就一个字节都不写。不限速——调用方按一次操作先调 throttle()。"""
        self.writable()
        reservation, saved, nbytes = None, 0, 0
        try:
            with self.store.batch():   # 算字节时编好的每条消息，随后保存这些节点时直接用（大会话不脱敏、不编码两遍）
                plan = copy_lineage(source.store, session_id, self.store, redact=True, dry_run=True)
                child = _planned_child(plan.leaf, at, new_messages, title)
                nbytes = sum(self.store.write_costs(plan.to_write + [child]))
                reservation = self._reserve(sessions=len(plan.to_write) + 1, nbytes=nbytes)
                try:
                    for node in plan.to_write:
                        self.store.save(node)   # 修订 0：算过之后正好有人建了同一个 ID 时 ConflictError，绝不覆盖
                        saved += 1
                except ConflictError:           # 那就按 copy_lineage 的规矩重来一遍：同样内容的跳过，不同的换新 ID
                    copied = copy_lineage(source.store, session_id, self.store, redact=True)
                    return self.store.fork(copied.leaf_id, new_messages, at=at, title=title)   # 用量下次重数
                self.store.save(child)          # 就是 store.fork() 会建的那个节点（新 ID、修订 0）
                saved += 1
                return child
        finally:   # 这一批的日志行在离开 batch() 时才写下：之后才记用量
            if reservation is not None:
                self.finish(reservation, saved, nbytes, sessions=saved)


def _planned_child(parent: SessionNode, at: Optional[int], new_messages: Optional[list],
                   title: Optional[str]) -> SessionNode:
    """store.fork(parent, …) 会建的那个新分支（新 ID、修订 0），还没写；at 不对时 SessionError（与 store.fork 同一句话）。"""
    keep = len(parent.messages) if at is None else at
    if isinstance(keep, bool) or not isinstance(keep, int) or not 0 <= keep <= len(parent.messages):
        raise SessionError(f"分叉位置 at={printable(repr(at)[:40])} 无效：会话 {parent.session_id} 有 "
                           f"{len(parent.messages)} 条消息，at 必须是 0 到 {len(parent.messages)} 的整数")
    return SessionNode(title=title or f"{parent.title} · 分支", parent_id=parent.session_id,
                       messages=list(parent.messages[:keep]) + list(new_messages or []), fork_point=keep)


class Spaces:
    """全部空间的入口：签发和验证令牌、书架、教师视图、清理。"""

    def __init__(self, sessions_dir, *, limits: Limits = Limits(), teacher_secret: Optional[str] = None,
                 clock: Callable[[], float] = time.monotonic,
                 client_address: Callable[[], Optional[str]] = lambda: None):
        self.sessions_dir = os.fspath(sessions_dir)
        self.limits = limits
        self.teacher_secret = teacher_secret or secrets.token_urlsafe(24)
        self._clock = clock
        self.spaces_dir = os.path.join(self.sessions_dir, SPACES_DIR)
        self.shelf_dir = os.path.join(self.sessions_dir, SHELF_DIR)
        self.trash_dir = os.path.join(self.sessions_dir, SPACES_TRASH_DIR)
        self.archives_dir = os.path.join(self.sessions_dir, ARCHIVES_DIR)
        for folder in (self.spaces_dir, self.shelf_dir):
            os.makedirs(folder, exist_ok=True)
        self._key = load_or_create_secret(os.path.join(self.sessions_dir, SECRET_FILE))
        self._lock = threading.Lock()
        self._open: Dict[str, Space] = {}          # space_id → Space（令牌桶和摘要缓存跟着它）
        self._mints: Dict[str, TokenBucket] = {}   # 访客地址 → 领取新空间的令牌桶
        self._uploads: Dict[str, Tuple[TokenBucket, TokenBucket]] = {}   # 访客地址 → (次数, 字节)
        self._shelf: Optional[Space] = None
        # 当前请求的访客地址（app.py 从 gradio 的请求上下文里取；没有请求时 None，只按空间限额）
        self.client_address = client_address
        self._creates: Dict[str, TokenBucket] = {}   # 访客地址 → “新建”的令牌桶（所有空间共用）
        self._scans = BoundedCache(SCAN_CACHE_DIRS)   # 限额统计：{目录: 这一层的统计}，戳 = 目录的 (inode, 大小, 修改时间)
        self._rows = _RowCache(clock=clock, scans=self._scans)   # 教师视图每个空间一行的缓存

    # ── 令牌 ────────────────────────────────────────────────────────────────
    def _sign(self, space_id: str) -> str:
        return hmac.new(self._key, _SIGN_PREFIX + space_id.encode("ascii"), hashlib.sha256).hexdigest()[:SIGNATURE_HEX]

    def new_token(self) -> str:
        space_id = secrets.token_hex(SPACE_ID_HEX // 2)
        return f"{space_id}.{self._sign(space_id)}"

    def browser_secret(self) -> str:
        """给 gr.BrowserState 加密用的密钥：它会出现在页面配置里，所以只能是服务器密钥的单向派生，
        且只为“重启后浏览器里存的令牌还能解开”。"""
        return hmac.new(self._key, b"s11-browser-state", hashlib.sha256).hexdigest()[:32]

    def open(self, token) -> Space:
        """令牌 → 可写的 Space。None、空、太长、格式不对、签名不符（伪造或别的服务器签的）都抛 SpaceError。"""
        return self._space(self.verify(token))

    def verify(self, token) -> str:
        """只验签，返回 space_id。"""
        if token is None or token == "":
            raise SpaceError("缺少空间令牌：页面可能还在载入，稍等几秒再点；一直这样就刷新页面，浏览器会自动领取一个私有空间")
        if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
            raise SpaceError("无效的空间令牌：不是本服务器签发的令牌，请刷新页面")
        match = _TOKEN.fullmatch(token)
        if match is None:
            raise SpaceError("无效的空间令牌：格式不对，请刷新页面")
        space_id, signature = match.groups()
        if not hmac.compare_digest(signature, self._sign(space_id)):
            raise SpaceError("无效的空间令牌：签名不符（伪造的，或来自另一台服务器），请刷新页面")
        return space_id

    def ensure(self, token, *, client: Optional[str] = None) -> Tuple[str, Space]:
        """有效令牌原样返回；没有或无效就领一个新的（同一访客地址领得太快时 SpaceError）。连同打开的空间。"""
        token = self.ensure_token(token, client=client)
        return token, self.open(token)

    def ensure_token(self, token, *, client: Optional[str] = None) -> str:
        """页面加载用的 ensure：只验签或签发，不碰磁盘——目录出了问题时页面照样打开，由第一个要写的操作报告。"""
        try:
            self.verify(token)
            return token
        except SpaceError:
            pass
        self._mint_allowed(client or "?")
        return self.new_token()

    def _per_client(self, table: dict, client: str, make: Callable[[], object]):
        with self._lock:
            entry = table.get(client)
            if entry is None:
                if len(table) > 10_000:   # 地址表只增不减会变成内存泄漏：满了就从头再来
                    table.clear()
                entry = table[client] = make()
            return entry

    def _mint_allowed(self, client: str) -> None:
        rate = self.limits.per_address(self.limits.new_spaces_per_minute)
        bucket = self._per_client(self._mints, client, lambda: TokenBucket(rate, rate / 60, self._clock))
        wait = bucket.take()
        if wait > 0:
            raise SpaceError(f"领取新空间太频繁：同一地址每分钟最多 {rate:.0f} 个，请 {max(1, round(wait))} 秒后刷新页面")

    def _address_creates(self) -> Optional[TokenBucket]:
        """当前请求的访客地址的“新建”令牌桶：容量和速度都是一个空间的 students_per_address 倍。"""
        client = self.client_address()
        if not client:
            return None
        limits = self.limits
        return self._per_client(self._creates, client, lambda: TokenBucket(
            limits.per_address(limits.create_burst), limits.per_address(limits.creates_per_minute) / 60,
            self._clock))

    def admit_upload(self, client: Optional[str], nbytes: Optional[int], folder: Optional[str] = None) -> None:
        """上传请求进门之前（gradio 收下文件之前）：必须声明大小，不超过单个上限，同一访客地址的次数和字节
        都按令牌桶限速（字节：可以连传两个最大的文件，之后每 5 分钟补一个），folder 所在磁盘留足余量。"""
        limits = self.limits
        if nbytes is None:
            raise SpaceError("上传请求没有声明大小（Content-Length），已拒绝")
        if nbytes > limits.max_upload_bytes + UPLOAD_OVERHEAD_BYTES:
            raise SpaceError(f"上传的内容有 {nbytes / MB:.1f} MB，超过每个文件 {limits.max_upload_bytes / MB:.0f} MB 的上限")
        per_minute, volume_cap = limits.per_address(limits.uploads_per_minute), limits.per_address(limits.max_upload_bytes)
        count, volume = self._per_client(self._uploads, client or "?", lambda: (
            TokenBucket(per_minute, per_minute / 60, self._clock),
            TokenBucket(2 * volume_cap, volume_cap / 300, self._clock)))
        wait = max(count.take(), volume.take(nbytes))
        if wait > 0:
            raise SpaceError(f"上传太频繁了：请 {max(1, round(wait))} 秒后再试")
        if folder is not None and shutil.disk_usage(folder).free - nbytes < limits.min_free_bytes:
            raise SpaceError("服务器磁盘空间不足，暂停接收上传：请告诉老师清理磁盘")

    def _space(self, space_id: str) -> Space:
        """同一 space_id 共用一个 Space（令牌桶才有记忆）；目录被 remove-idle 移走后重建一个空的。"""
        folder = os.path.join(self.spaces_dir, space_id)
        with self._lock:
            space = self._open.get(space_id)
            if space is None or not os.path.isdir(folder):
                rate = self.limits.creates_per_minute
                bucket = space._bucket if space is not None else TokenBucket(
                    self.limits.create_burst, rate / 60, self._clock)
                try:
                    space = Space(space_id, folder, limits=self.limits, bucket=bucket,
                                  address_bucket=self._address_creates, scans=self._scans)
                except OSError as error:
                    raise SpaceError(self._folder_problem(error)) from None
                self._open[space_id] = space
            return space

    def _folder_problem(self, error: OSError) -> str:
        """打不开空间目录时给同学看的一句话：只写会话目录的名字，不暴露服务器上的完整路径。"""
        return f"无法写入会话目录 {public_name(self.sessions_dir)}（{os_error_reason(error)}）：请告诉老师检查 --sessions-dir"

    # ── 教师 ────────────────────────────────────────────────────────────────
    def is_teacher(self, secret) -> bool:
        """恒定时间比较；非字符串（None、数字、列表）一律 False。"""
        if not isinstance(secret, str) or not secret:
            return False
        return hmac.compare_digest(secret.encode("utf-8"), self.teacher_secret.encode("utf-8"))

    def _require_teacher(self, secret, action: str) -> None:
        if not self.is_teacher(secret):
            raise SpaceError(f"{action}需要教师链接（启动时打印的 ?teacher=… 地址）")

    def shelf(self) -> Space:
        """共享书架：所有人只读。"""
        with self._lock:
            if self._shelf is None or not os.path.isdir(self.shelf_dir):
                os.makedirs(self.shelf_dir, exist_ok=True)
                self._shelf = Space(SHELF_DIR, self.shelf_dir, limits=self.limits, read_only=True)
            return self._shelf

    def publish(self, secret, space_id: str, session_id: str) -> str:
        """把 space_id 空间里的一个会话（连同祖先链，ID 不变）脱敏后放上书架，返回它在书架上的 ID：
        书架上已有同 ID 而内容不同的节点时不覆盖，这一份以新 ID 另存（见 copy_lineage）。"""
        return self.publish_plan(secret, space_id, session_id, write=True).leaf_id

    def publish_plan(self, secret, space_id: str, session_id: str, *, write: bool = False) -> "CopyResult":
        """发布之前给老师看的那一份：会写哪些节点、哪些要换新 ID、每种脱敏各遮住几处；write=True 才真的写。"""
        self._require_teacher(secret, "发布到书架")
        source = self._existing(space_id)
        return copy_lineage(source.store, session_id, SessionStore(self.shelf_dir), redact=True, dry_run=not write)

    def unpublish(self, secret, session_id: str) -> bool:
        """从书架撤下一个会话（进书架的回收站）；已经分叉到学生空间里的副本不受影响。"""
        self._require_teacher(secret, "从书架撤下")
        return SessionStore(self.shelf_dir).delete(session_id)

    def list_spaces(self, secret) -> List[dict]:
        """每个空间一行：space_id、sessions、bytes、last_activity（epoch 秒），最近活跃的在前。"""
        self._require_teacher(secret, "查看所有空间")
        return self._list()

    def _list(self) -> List[dict]:
        """每个空间一行。每行缓存在 _RowCache 里：目录（及其子目录）的修改时间没变、且不到 ROW_CACHE_SECONDS
        就直接用，否则重新走一遍这个空间的文件——老师每点一次，不必把全班的每个文件都 stat 一遍。"""
        rows = []
        ids = self._space_ids()
        for space_id in ids:
            folder = os.path.join(self.spaces_dir, space_id)
            try:
                rows.append(self._rows.row(space_id, folder))
            except FileNotFoundError:   # 列举途中被清理掉
                continue
        self._rows.keep_only(ids)
        rows.sort(key=lambda row: (-row["last_activity"], row["space_id"]))
        return rows

    def view(self, secret, space_id: str) -> Space:
        """教师只读地打开任意一个学生的空间。"""
        self._require_teacher(secret, "查看别人的空间")
        return self._existing(space_id)

    def manage(self, secret, space_id: str) -> Space:
        """教师替一位同学改动他已有的空间（课堂面板的“重新开始这一关”：只把会话移进他的回收站）。"""
        self._require_teacher(secret, "改动学生的空间")
        return self._space(self._existing(space_id).space_id)

    def _existing(self, space_id) -> Space:
        """已存在的空间的只读视图；不会创建目录。"""
        if not isinstance(space_id, str) or not _SPACE_ID.fullmatch(space_id):
            raise SpaceError(f"空间名 {str(space_id)[:40]!r} 不对：应是 {SPACE_ID_HEX} 个十六进制字符")
        folder = os.path.join(self.spaces_dir, space_id)
        if not os.path.isdir(folder) or os.path.islink(folder):
            raise SpaceError(f"没有空间 {space_id}（可能已被清理）")
        return Space(space_id, folder, limits=self.limits, read_only=True)

    def _space_ids(self) -> List[str]:
        try:
            names = os.listdir(self.spaces_dir)
        except FileNotFoundError:
            return []
        return sorted(n for n in names if _SPACE_ID.fullmatch(n)
                      and os.path.isdir(os.path.join(self.spaces_dir, n))
                      and not os.path.islink(os.path.join(self.spaces_dir, n)))

    # ── 课后清理（命令行 s11_cli 的 class remove-idle / empty-trash）──────────────────────────
    def remove_idle(self, older_than_seconds: float) -> List[str]:
        """把最后活动早于 older_than_seconds 秒之前的空间移进 spaces-trash/（可手动移回），返回它们的 ID。"""
        if isinstance(older_than_seconds, bool) or not isinstance(older_than_seconds, (int, float)) \
                or not older_than_seconds >= 0:
            raise SpaceError(f"闲置时间 {older_than_seconds!r} 无效：应是不小于 0 的秒数")
        cutoff = time.time() - older_than_seconds
        os.makedirs(self.trash_dir, exist_ok=True)
        moved = []
        for row in self._list():
            if row["last_activity"] >= cutoff:
                continue
            space_id = row["space_id"]
            with self._lock:
                os.replace(os.path.join(self.spaces_dir, space_id),
                           os.path.join(self.trash_dir, f"{space_id}.{time.time_ns()}"))
                self._open.pop(space_id, None)
            moved.append(space_id)
        return moved

    def trash_entries(self) -> List[str]:
        try:
            return sorted(os.listdir(self.trash_dir))
        except FileNotFoundError:
            return []

    def empty_trash(self) -> int:
        """真正删除 spaces-trash/ 里的全部内容，返回删掉的条目数。"""
        removed = 0
        for name in self.trash_entries():
            path = os.path.join(self.trash_dir, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
            removed += 1
        return removed

    # ── 课堂：学生给老师看的名字 ─────────────────────────────────────────────────────────────
    def set_display_name(self, token, name) -> str:
        """学生给自己起的名字（可选，只出现在老师的视图里）。存在自己空间的 .profile.json；空串 = 不要名字。
        返回整理后的名字（见 checked_display_name）：去掉看不见的字符，空白压成一个，最多 MAX_NAME_CHARS 个字；
        太长或看不见的名字 SpaceError，原来的名字不变。"""
        space = self.open(token).writable()
        cleaned = checked_display_name(name)
        _write_json(os.path.join(space.folder, PROFILE_FILE), {"name": cleaned})
        return cleaned

    def display_name(self, token) -> str:
        """自己的名字（学生自己的页面用：只认自己的令牌）。"""
        return read_profile(self.open(token).folder)

    def display_names(self, secret) -> Dict[str, str]:
        """老师：space_id -> 名字（没起名字的不在里面）。"""
        self._require_teacher(secret, "查看学生的名字")
        names = {}
        for space_id in self._space_ids():
            name = read_profile(os.path.join(self.spaces_dir, space_id))
            if name:
                names[space_id] = name
        return names

    # ── 下课：整班归档，保留一段时间可以放回，过期才真正删除 ─────────────────────────────────────
    def archive_all(self, keep_seconds: float = ARCHIVE_KEEP_SECONDS) -> dict:
        """把 spaces/ 里的全部学生空间移进 archives/<时间>/（os.replace，原子、不复制），返回这份归档的说明。
        学生的令牌照样有效，只是再打开时是一个空的新空间；keep_seconds 之后 purge_expired_archives() 删掉它。"""
        if isinstance(keep_seconds, bool) or not isinstance(keep_seconds, (int, float)) or not keep_seconds > 0:
            raise SpaceError(f"归档保留时间 {keep_seconds!r} 无效：应是大于 0 的秒数")
        self.purge_expired_archives()
        now = time.time()
        name = time.strftime("%Y%m%d-%H%M%S", time.localtime(now)) + f"-{secrets.token_hex(2)}"
        folder = os.path.join(self.archives_dir, name)
        os.makedirs(folder)
        moved = 0
        for space_id in self._space_ids():
            with self._lock:
                os.replace(os.path.join(self.spaces_dir, space_id), os.path.join(folder, space_id))
                self._open.pop(space_id, None)
            moved += 1
        info = {"name": name, "created": now, "expires": now + keep_seconds, "spaces": moved}
        _write_json(os.path.join(folder, ARCHIVE_INFO), info)
        return info

    def archives(self) -> List[dict]:
        """全部归档，最新的在前：name、created、expires（epoch 秒）、spaces。"""
        rows = []
        try:
            names = sorted(os.listdir(self.archives_dir), reverse=True)
        except FileNotFoundError:
            return []
        for name in names:
            folder = os.path.join(self.archives_dir, name)
            if not _ARCHIVE_NAME.fullmatch(name) or not os.path.isdir(folder) or os.path.islink(folder):
                continue
            info = _read_json(os.path.join(folder, ARCHIVE_INFO))
            expires = info.get("expires")
            rows.append({"name": name, "created": info.get("created", 0.0),
                         "expires": expires if isinstance(expires, (int, float)) else 0.0,
                         "spaces": sum(1 for n in os.listdir(folder) if _SPACE_ID.fullmatch(n))})
        return rows

    def restore_archive(self, name: str) -> List[str]:
        """把一份归档里的空间放回 spaces/，返回放回的 space_id。同名的空间已经在用（下课后又有人写过）时，
        那一个留在归档里不动（绝不覆盖），其余照放；只是被重新打开过、什么都没写的空目录换回原来的。
        全部放回后归档目录随之删除。"""
        if not isinstance(name, str) or not _ARCHIVE_NAME.fullmatch(name):
            raise SpaceError(f"归档名 {str(name)[:60]!r} 不对：用 class archives 看有哪些")
        folder = os.path.join(self.archives_dir, name)
        if not os.path.isdir(folder) or os.path.islink(folder):
            raise SpaceError(f"没有归档 {name}（可能已过期删除）")
        restored, kept = [], []
        for space_id in sorted(n for n in os.listdir(folder) if _SPACE_ID.fullmatch(n)):
            target = os.path.join(self.spaces_dir, space_id)
            with self._lock:
                if os.path.lexists(target) and not _blank(target):
                    kept.append(space_id)
                    continue
                if os.path.lexists(target):   # 归档后学生的页面又打开过它：一个什么都没写的空目录，换回原来的
                    shutil.rmtree(target)
                os.replace(os.path.join(folder, space_id), target)
                self._open.pop(space_id, None)
            restored.append(space_id)
        if not kept:
            shutil.rmtree(folder)
        return restored

    def purge_expired_archives(self, now: Optional[float] = None) -> List[str]:
        """删掉已过保留期的归档，返回它们的名字。"""
        now = time.time() if now is None else now
        removed = []
        for row in self.archives():
            if row["expires"] and row["expires"] <= now:
                shutil.rmtree(os.path.join(self.archives_dir, row["name"]))
                removed.append(row["name"])
        return removed


# ── 复制祖先链（发布到书架、从书架分叉都用它）──────────────────────────────────────
def _lineage_or_raise(store: SessionStore, session_id: str) -> List[dict]:
    chain = store.lineage(session_id)
    if not chain or chain[-1]["session_id"] != session_id:
        raise SessionNotFound(f"未找到会话: {session_id}")
    return chain


class CopyResult(NamedTuple):
    """copy_lineage 做了（dry_run 时：会做）什么。"""
    leaf_id: str                  # session_id 在目标里的 ID（换了新 ID 时是新的）
    written: List[str]            # 写入（或会写入）的目标 ID，根在前
    renamed: Dict[str, str]       # 原 ID → 新 ID：目标里同一 ID 的节点内容不同，这一份另存
    counts: Dict[str, int]        # 脱敏：session_id 这个节点里各遮住几处（它带着从根开始的全部消息）
    chain_counts: Dict[str, int]  # 脱敏：整条祖先链的每个文件合计（继承的消息在每个节点里各算一次）
    nodes: int                    # 祖先链上有几个节点
    to_write: List[SessionNode]   # 写入（或会写入）的节点本身，与 written 一一对应
    leaf: SessionNode             # session_id 在目标里的那个节点（已有的，或会写入的这一份）


def redacted_copy(node: SessionNode) -> Tuple[Dict, Dict[str, int]]:
    """节点的字典，标题、每条消息的每个字段、来源信息和工作区快照都已脱敏；ID、父节点、分叉点、时间不变。"""
    data = node.to_dict()
    (data["title"], data["messages"], data["source"], data["workspace"]), counts = s11_redact.redact_value(
        [data["title"], data["messages"], data["source"], data["workspace"]])
    return data, counts


def _content_key(data: Dict) -> str:
    body = {key: value for key, value in data.items() if key != "session_id"}
    return hashlib.sha256(json.dumps(body, ensure_ascii=False, sort_keys=True, default=str).encode("utf-8",
                                                                                                 "surrogatepass")
                          ).hexdigest()[:10]


def _renamed_id(session_id: str, data: Dict, attempt: int) -> str:
    """内容不同的另一份用的 ID：原 ID + 内容摘要（第 2 次起再加序号）。同样的内容总得到同一个 ID，
    所以重复复制也只有一份。"""
    suffix = f"-{_content_key(data)}" + (f"{attempt}" if attempt > 1 else "")
    return session_id[:MAX_ID_LENGTH - len(suffix)] + suffix


_CANDIDATES = 5   # 原 ID + 4 个新 ID 都被占了（都被续写过）就拒绝


def _place(target: SessionStore, node: SessionNode, data: Dict,
           dry_run: bool) -> Tuple[Optional[SessionNode], bool]:
    """(data 在 target 里落成的节点, 是否（会）新写)：已有同样内容的 → 那个节点；空着的 ID → 在那里保存
    （dry_run 不存）；内容不同的从不覆盖，换下一个候选 ID。候选都被占了返回 (None, False)。"""
    candidates = [node.session_id] + [_renamed_id(node.session_id, data, n) for n in range(1, _CANDIDATES)]
    for wanted in candidates:
        for _attempt in range(2):   # 同一个人两个标签页同时复制：输的一方重读一次再比较
            existing = target.load(wanted)
            if existing is not None:
                if existing.to_dict() == {**data, "session_id": wanted}:
                    return existing, False
                break   # 内容不同：保留它，试下一个 ID
            copy = SessionNode.from_dict({**data, "session_id": wanted, "created_ns": node.created_ns})
            if dry_run:
                return copy, True
            try:
                target.save(copy)   # 修订 0：正好有人同时建了这个 ID 时 ConflictError，绝不覆盖
                return copy, True
            except ConflictError:
                continue
    return None, False


def copy_lineage(source: SessionStore, session_id: str, target: SessionStore, *, redact: bool = False,
                 dry_run: bool = False) -> CopyResult:
    """把 session_id 及其祖先（根在前）复制进 target，尽量用相同的 ID。
    target 里已有同样内容的节点跳过；同一 ID 的节点内容不同时从不覆盖它：这一份以新 ID 另存（原 ID + 内容摘要），
    它在链上的孩子随之指向新 ID。redact=True 时复制的是脱敏后的内容；dry_run=True 只算出会做什么。

        source: 根 ─ A ─ B        copy_lineage(source, "B", target)  →  target: 根 ─ A ─ B
        target 里的 A 被续写过      →  target: 根 ─ A（原样）   根 ─ A-<摘要> ─ B
    """
    written: List[str] = []
    to_write: List[SessionNode] = []
    placed: Optional[SessionNode] = None
    renamed: Dict[str, str] = {}
    counts: Dict[str, int] = {}
    chain_counts: Dict[str, int] = {}
    chain = _lineage_or_raise(source, session_id)
    for summary in chain:
        node = source.load(summary["session_id"])
        if node is None:   # 列出祖先之后被删掉了
            raise SessionNotFound(f"未找到会话: {summary['session_id']}")
        data, counts = redacted_copy(node) if redact else (node.to_dict(), {})
        for label, count in counts.items():
            chain_counts[label] = chain_counts.get(label, 0) + count
        if data["parent_id"] in renamed:
            data["parent_id"] = renamed[data["parent_id"]]
        placed, wrote = _place(target, node, data, dry_run)
        if placed is None:
            raise SpaceError(f"无法复制会话 {node.session_id}：目标里同名的几份都与它内容不同，已全部保留原样；"
                             "请稍后再试，或先删除不要的副本")
        if wrote:
            written.append(placed.session_id)
            to_write.append(placed)
        if placed.session_id != node.session_id:
            renamed[node.session_id] = placed.session_id
    return CopyResult(renamed.get(session_id, session_id), written, renamed, counts, chain_counts, len(chain),
                      to_write, placed)


# ── 文件夹统计 ──────────────────────────────────────────────────────────────────
ROW_CACHE_SECONDS = 10.0     # 一行缓存最多用这么久：就地追加（目录修改时间不变）的写入最晚这么久之后可见
ROW_CACHE_ENTRIES = 4096     # 最多缓存这么多个空间的行（再多就丢掉最久没用的）
SCAN_CACHE_DIRS = 8192       # 限额统计最多记住多少层目录（每个空间：自己、回收站、块目录、每个留下过旧版的会话各一层；
                             # 每层约 0.4 KB）。没记住的目录下次现扫：一层 250 个文件约 1 ms


class _RowCache:
    """教师视图的行缓存：space_id → (目录及子目录的修改时间, 算出的时刻, 行)。有界、线程安全。

    新建、覆盖（os.replace）、删除、移进回收站都会改动所在目录的修改时间，所以学生写完之后，
    下一次列表一定是新的；只改文件内容、不动目录的写入，最多 ROW_CACHE_SECONDS 秒后也会重算。"""

    def __init__(self, clock: Callable[[], float] = time.monotonic, seconds: float = ROW_CACHE_SECONDS,
                 entries: int = ROW_CACHE_ENTRIES, scans: Optional[BoundedCache] = None):
        from collections import OrderedDict
        self._clock, self.seconds, self.entries, self._scans = clock, seconds, entries, scans
        self._rows: "OrderedDict[str, tuple]" = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def _stamp(folder: str, subfolders: Tuple[str, ...]) -> tuple:
        stamp = [os.stat(folder).st_mtime_ns]
        for sub in subfolders:
            try:
                stamp.append(os.stat(sub).st_mtime_ns)
            except FileNotFoundError:
                stamp.append(None)
        return tuple(stamp)

    def row(self, space_id: str, folder: str) -> dict:
        with self._lock:
            cached = self._rows.get(space_id)
        if cached is not None:
            stamp, subfolders, at, row = cached
            if self._clock() - at < self.seconds and self._stamp(folder, subfolders) == stamp:
                with self._lock:
                    if space_id in self._rows:
                        self._rows.move_to_end(space_id)
                return dict(row)
        subfolders = _subfolders(folder)
        stamp = self._stamp(folder, subfolders)   # 先记时间再统计：统计途中的写入会让下一次重算
        at = self._clock()
        sessions, used = folder_usage(folder, self._scans)
        row = {"space_id": space_id, "sessions": sessions, "bytes": used, "last_activity": last_activity(folder)}
        with self._lock:
            self._rows[space_id] = (stamp, subfolders, at, row)
            self._rows.move_to_end(space_id)
            while len(self._rows) > self.entries:
                self._rows.popitem(last=False)
        return dict(row)

    def keep_only(self, space_ids) -> None:
        """已经不在的空间（remove-idle 移走的）不再占缓存。"""
        wanted = set(space_ids)
        with self._lock:
            for gone in [key for key in self._rows if key not in wanted]:
                del self._rows[gone]


def _subfolders(folder: str) -> Tuple[str, ...]:
    """folder 下所有子目录（回收站、块目录……），不跟随符号链接。"""
    found, stack = [], [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False) and entry.name != INDEX_DIR:
                        found.append(entry.path)
                        stack.append(entry.path)
        except FileNotFoundError:
            continue
    return tuple(sorted(found))


def _size(path: str) -> int:
    """一个文件的字节数，和走一遍空间时数的一样（不跟随符号链接）；不在时 0。"""
    try:
        return os.stat(path, follow_symlinks=False).st_size
    except OSError:
        return 0


def count_sessions(folder: str) -> int:
    """folder 这一层的会话文件个数（不数回收站和留下的旧版）。"""
    return _scan(folder).sessions


def folder_bytes(folder: str, scans: Optional[BoundedCache] = None) -> int:
    """folder 及其子目录（回收站、块、留下的旧版）里普通文件的总字节数；不跟随符号链接。"""
    return folder_usage(folder, scans)[1]


def folder_usage(folder: str, scans: Optional[BoundedCache] = None) -> Tuple[int, int]:
    """(这一层的会话文件个数, 连同子目录的总字节数)：限额检查要的两个数，目录树只走一趟。

    scans：每层目录的统计按目录自己的 (inode, 大小, 修改时间) 存在这里（Spaces 的一个 bounded.BoundedCache）。
    仓库写会话、块、回收站和旧版都是新建、改名或删除，目录的修改时间随之变，所以戳没变，这一层就没变；
    刚改过的目录按 bounded 的 racy 规则先不算数。唯一就地追加的文件是操作日志（.journal.jsonl，目录的修改时间
    不变）：每个记日志的操作都先改名一个会话文件、紧接着追加那一行，这时目录还“刚改过”，所以新的一行照样数得到；
    最坏少数一行（约 200 字节），到下一次改名为止。"""
    top = _scan(folder, scans)
    total, stack = top.file_bytes, list(top.subdirs)
    while stack:
        scan = _scan(stack.pop(), scans)
        total += scan.file_bytes
        stack += scan.subdirs
    return top.sessions, total


class _DirScan(NamedTuple):
    file_bytes: int      # 这一层普通文件的字节数
    sessions: int        # 这一层的会话文件个数
    subdirs: tuple       # 这一层的子目录（完整路径）


_NO_DIR = _DirScan(0, 0, ())


def _scan(folder: str, scans: Optional[BoundedCache] = None) -> _DirScan:
    """一层目录：每个条目 stat 一次（目录没变时从 scans 里拿）。目录不在时全是 0。"""
    try:
        info = os.stat(folder, follow_symlinks=False)
    except FileNotFoundError:
        return _NO_DIR
    stamp = stat_key(info)
    cached = scans.get(folder, stamp) if scans is not None else None
    if cached is not None:
        return cached
    file_bytes = sessions = 0
    subdirs: List[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.name == INDEX_DIR:   # 服务器自己的搜索索引（search_index.py）：有上限，不算进同学的限额
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        file_bytes += entry.stat(follow_symlinks=False).st_size
                        sessions += entry.name.endswith(".json") and not entry.name.startswith(".")
                except FileNotFoundError:
                    continue
    except FileNotFoundError:
        return _NO_DIR
    scan = _DirScan(file_bytes, sessions, tuple(subdirs))
    if scans is not None:
        scans.put(folder, stamp, scan, mtime_ns=info.st_mtime_ns)
    return scan


class Reservation(NamedTuple):
    """Space.reserve() 预留的会话数和字节；usage、writes 是预留时空间的用量和仓库的写入次数（finish 用）；
    importing：这是一次导入的预留。"""
    sessions: int
    nbytes: int
    usage: Optional[Tuple[int, int]] = None
    writes: Optional[int] = None
    importing: bool = False


class _Known(NamedTuple):
    """本服务器自己的一次写（导入、分叉、续写、删除、恢复）写完时空间的用量（见 Space.finish）：writes 是那时仓库的
    写入次数，stamps 是空间目录和它的回收站、块、旧版目录的戳。"""
    writes: int
    stamps: tuple
    usage: Tuple[int, int]


_STORE_FOLDERS = (".trash", ".chunks", ".history")   # 仓库在空间目录下建的几层（见 s11_session 的文档）


def _folder_stamps(folder: str) -> tuple:
    """空间目录和它下面仓库那几层目录的 (inode, 大小, 修改时间)；不在的是 None。别的进程在这里建、删、改名
    文件，戳就变；更深一层（.history/<会话>/）只有仓库自己写，它的写都记在 CountingStore.writes 里。"""
    stamps = []
    for path in (folder, *(os.path.join(folder, name) for name in _STORE_FOLDERS)):
        try:
            stamps.append(stat_key(os.stat(path, follow_symlinks=False)))
        except FileNotFoundError:
            stamps.append(None)
    return tuple(stamps)


def last_activity(folder: str) -> float:
    """目录和其中文件（含回收站）最晚的修改时间（epoch 秒）。"""
    latest = os.stat(folder).st_mtime
    for sub in (folder, os.path.join(folder, ".trash")):
        try:
            with os.scandir(sub) as entries:
                for entry in entries:
                    if entry.name == INDEX_DIR:   # 写搜索索引（老师只读查看时也会写）不算同学的活动
                        continue
                    try:
                        latest = max(latest, entry.stat(follow_symlinks=False).st_mtime)
                    except FileNotFoundError:
                        continue
        except FileNotFoundError:
            continue
    return latest


# ── 小 JSON 文件：名字、归档说明 ──────────────────────────────────────────────────────────
# ── 名字：先截短，再整理；看不见的名字不收 ──────────────────────────────────────────────────────
MAX_NAME_INPUT = 400   # 名字框收到的字符最多看这么多：更长的直接拒绝，整理（规范化、逐字检查）只花在这么多字上
# 看不见的字符（Unicode 的 Default_Ignorable_Code_Point 加盲文空白 U+2800）：零宽字符、方向控制、变体选择符，
# 还有韩文填充符 U+115F U+1160 U+3164 U+FFA0——它们是“字母”（Lo），按类别挡不住，只能列出来
_IGNORABLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        "\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
                        "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]")
_EMOJI_JOINERS = "\u200d\ufe0e\ufe0f"   # 把 emoji 连成一个（👨‍👩‍👧、❤️）：留在名字里，但不算看得见的字
_HIDDEN_CATEGORIES = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}   # 控制、格式、代理、私用、未分配、行/段分隔


def _name_text(name) -> str:
    return name if isinstance(name, str) else "" if name is None else str(name)


def _tidy_name(text: str) -> str:
    """截到 MAX_NAME_INPUT 个字符，NFC 规范化，空白压成一个空格，去掉看不见的字符，最多 MAX_NAME_CHARS 个字。"""
    text = unicodedata.normalize("NFC", text[:MAX_NAME_INPUT])
    kept = []
    for char in text:
        if char.isspace():
            kept.append(" ")
        elif char in _EMOJI_JOINERS or not (unicodedata.category(char) in _HIDDEN_CATEGORIES or _IGNORABLE.match(char)):
            kept.append(char)
    return " ".join("".join(kept).split())[:MAX_NAME_CHARS].strip()


def _visible(name: str) -> bool:
    """至少有一个看得见的字：字母、数字、标点或符号（单独的附加符号、空白、emoji 连接符不算）。"""
    return any(unicodedata.category(char)[0] in "LNPS" for char in name if char not in _EMOJI_JOINERS)


def checked_display_name(name) -> str:
    """同学要用的名字 -> 整理后的名字；'' = 不要名字。太长的、只有看不见的字符的，SpaceError（中文，什么都没存）。

        '  小明\n<b>  ' -> '小明 <b>'      '\u3164\u3164' -> SpaceError      '   ' -> ''
    """
    text = _name_text(name)
    if len(text) > MAX_NAME_INPUT:   # 先看长度（不碰内容）：200 万个字的名字也只花这一步
        raise SpaceError(f"名字太长了（{len(text):,} 个字符）：最多 {MAX_NAME_CHARS} 个字，请换一个短一点的名字；"
                         "原来的名字没有改")
    cleaned = _tidy_name(text)
    if text.strip() and not _visible(cleaned):
        raise SpaceError("名字里没有看得见的字（只有零宽字符、韩文填充符 U+3164 之类的隐形字符或空白）："
                         "请换一个名字，不想要名字就把框清空；原来的名字没有改")
    return cleaned


def clean_display_name(name) -> str:
    """显示一个名字（存着的、页面回显的）：和 checked_display_name 一样整理，但不抛异常——
    太长的先截短再整理，看不见的当作没有名字（''）。"""
    cleaned = _tidy_name(_name_text(name))
    return cleaned if _visible(cleaned) else ""


def _read_json(path: str) -> dict:
    """读一个小 JSON 对象；没有、读不了、太大或不是对象都当作空的（这些文件只是附加信息）。"""
    try:
        info = os.lstat(path)
        if not os.path.isfile(path) or os.path.islink(path) or info.st_size > 64 * 1024:
            return {}
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _blank(folder: str) -> bool:
    """空间目录里除了锁文件和空的子目录什么都没有（归档之后被重新打开、但没写过东西）。"""
    if os.path.islink(folder) or not os.path.isdir(folder):
        return False
    for _root, _dirs, files in os.walk(folder):
        if any(name != ".lock" for name in files):
            return False
    return True


def read_profile(folder: str) -> str:
    name = _read_json(os.path.join(folder, PROFILE_FILE)).get("name")
    return clean_display_name(name) if isinstance(name, str) else ""


def _write_json(path: str, data: dict) -> None:
    """原子地写一个小 JSON 文件（临时文件 + os.replace）：写到一半被杀也不会留下半个。"""
    with PendingWrite(path, json.dumps(data, ensure_ascii=False).encode("utf-8")) as pending:
        pending.commit()


# ── 服务器密钥 ──────────────────────────────────────────────────────────────────
def load_or_create_secret(path: str) -> bytes:
    """读出服务器密钥；没有就原子地创建（先写临时文件，再 os.link 到正式名字——两个进程同时启动时
    只有一个能成功，另一个读到的是完整的那份）。权限 0600：只有启动服务器的账号能读。"""
    try:
        return _read_secret(path)
    except FileNotFoundError:
        pass
    tmp = f"{path}.{secrets.token_hex(4)}.partial"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(32) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass   # 另一个进程先建好了：用它的
    finally:
        os.unlink(tmp)
    return _read_secret(path)


def _read_secret(path: str) -> bytes:
    with open(path, encoding="ascii", errors="replace") as handle:
        text = handle.read().strip()
    if not re.fullmatch(r"[0-9a-f]{64}", text):
        raise SpaceError(f"服务器密钥文件 {path} 已损坏。删除它会生成新密钥，但所有学生的空间令牌随之失效"
                         "（空间文件夹还在，老师可用 show 查看）")
    return bytes.fromhex(text)


# ── 课堂地址：学生该打开哪个网址 ─────────────────────────────────────────────────
def local_addresses() -> List[Tuple[str, str]]:
    """本机各网卡的 IPv4 地址 [(网卡名, 地址)]，不含回环。只读本机配置，不向网络发送任何数据包：
    Linux 上逐个网卡 ioctl(SIOCGIFADDR)，其他系统退回 getaddrinfo(主机名)。"""
    found: List[Tuple[str, str]] = []
    try:
        found = _interface_addresses()
    except (OSError, ImportError, AttributeError):
        found = []
    if not found:
        import socket
        try:
            infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
        except OSError:
            infos = []
        found = [("", info[4][0]) for info in infos]
    seen, result = set(), []
    for name, address in found:
        if address.startswith(("127.", "169.254.", "0.")) or address in seen:
            continue
        seen.add(address)
        result.append((name, address))
    return result


_ANY_HOST = {"0.0.0.0", "::", ""}
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def own_address(host: str, port: int) -> str:
    """本机打开工作台用的那一个地址：启动提示和教师链接都用它。私人空间的令牌存在浏览器里、按地址分开
    （localhost 与 127.0.0.1 是两个地址、两个空间），所以只打印一种写法。

    own_address("0.0.0.0", 7860) -> 'http://127.0.0.1:7860/'；own_address("10.1.2.3", 80) -> 'http://10.1.2.3:80/'
    """
    if host in _ANY_HOST or host in ("127.0.0.1", "localhost"):
        return f"http://127.0.0.1:{port}/"
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def classroom_links(host: str, port: int, teacher_secret: str) -> List[str]:
    """启动时打印的几行：学生该打开的地址（监听 0.0.0.0 时是本机的局域网地址）和教师链接。

    classroom_links("0.0.0.0", 7860, "s3cret") ->
      ["🧑‍🎓 学生打开（同一局域网）：http://192.168.1.23:7860/  [wlan0]",
       "🧑‍🏫 教师链接（只给自己用，别发给学生、别投到大屏上）：http://127.0.0.1:7860/?teacher=s3cret"]
    """
    lines = []
    if host in _ANY_HOST:
        found = local_addresses()
        for name, address in found:
            lines.append(f"🧑‍🎓 学生打开（同一局域网）：http://{address}:{port}/" + (f"  [{name}]" if name else ""))
        if not found:
            lines.append("🧑‍🎓 没有找到本机的局域网地址：请用 ip addr（Windows 上 ipconfig）查看，学生打开 http://<该地址>:"
                         f"{port}/")
    elif host not in _LOOPBACK:
        lines.append(f"🧑‍🎓 学生打开：http://{host}:{port}/")
    else:
        lines.append("🔒 只对本机开放；上课时用 --host 0.0.0.0 启动，学生才能从自己的电脑打开")
    lines.append(f"🧑‍🏫 教师链接（只给自己用，别发给学生、别投到大屏上）：{own_address(host, port)}?teacher={teacher_secret}")
    return lines


def _interface_addresses() -> List[Tuple[str, str]]:
    import fcntl
    import socket
    import struct
    siocgifaddr = 0x8915   # Linux
    if not sys.platform.startswith("linux"):
        return []
    result = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _index, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(probe.fileno(), siocgifaddr, struct.pack("256s", name[:15].encode()))
            except OSError:   # 网卡没有 IPv4 地址
                continue
            result.append((name, socket.inet_ntoa(packed[20:24])))
    return result
