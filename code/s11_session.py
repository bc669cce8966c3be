"""s11_session.py — 会话持久化与多分支管理（第 8.11 节）

把 Agent 的 messages 存成 JSON 文件，用 parent_id 串成一棵会话树：

    修复登录服务内存泄漏 [5d38f60f4c00] 5 条           sessions/
    ├── · 分支 A [4d67e2e6b66c] 7 条 (+2)               ├── 5d38f60f4c00.json   一个节点一个文件
    └── · 分支 B [0994dd416b46] 9 条 (+4) ← 恢复续跑    ├── 4d67e2e6b66c.json
                                                        ├── 0994dd416b46.json
                                                        ├── .lock               写入时的互斥锁
                                                        └── .trash/             delete() 的回收站

关键洞察：一个节点就是一份完整的消息历史——分叉时复制父节点的前 k 条消息，
所以删掉任何节点都不会让别的分支丢失历史，而“存档”只需要一次原子替换。

文件格式（version 2，仍是第 8.11 节打印代码能读的 JSON：它只取自己认识的键）::

    {"version": 2, "session_id": "0994dd416b46", "title": "...", "parent_id": "5d38f60f4c00",
     "messages": [{"role": "user", "content": "..."}], "created_at": "2026-08-25 18:46:40",
     "fork_point": 5, "workspace": null, "revision": 3, "created_ns": 1787654000123456789}

没有 "version" 的文件是章节原版格式（version 1），读入时经 MIGRATIONS 升级，下次保存写成 version 2；
version 比本模块新的文件会被拒绝读写（UnsupportedVersion），绝不覆盖。

保存的保证（durable=True，默认）：
  * 全有或全无：先写同目录临时文件，flush + fsync，再 os.replace 原子替换，最后 fsync 目录（POSIX）。
    任何时刻 kill -9，每个文件要么是上一次完整保存的内容，要么是这一次的；出错时临时文件会被删掉，
    只有进程被杀时才可能留下 ".<id>.json.*.tmp"，check() 会报告它们。
  * 不丢轮次：节点记住读入时的 revision；若别人在此期间保存过同一会话，save() 抛 ConflictError
    而不是覆盖对方。“核对修订号 + 改名”在 .lock 文件锁内完成（fcntl，跨线程也跨进程；无 fcntl 的系统只保证
    线程间）；编码、写临时文件和 fsync 都在锁外，并发保存互不排队。
  * 坏文件是证据：解析失败的文件原样保留，load() 抛 CorruptSession 并给出文件名，list_sessions() 跳过它并记日志，
    check() 列出全部问题；save() 不会覆盖坏文件或更新版本的文件。
  * 删除可恢复：delete() 把文件移进 .trash/，restore() 放回；purge=True 才真正删除。

已知限制（刻意不做）：不做跨机器同步与合并；不压缩、不加密（导出前用 redact 脱敏）；每次保存重写整个文件，
所以单个会话的保存开销随消息数线性增长（Pi / Claude Code 用只追加的 JSONL 避免这一点）；
durable=False 只用于基准测试，断电时可能丢失最近的保存。
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import tempfile
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

import s11_export  # Markdown / HTML 渲染（同目录的伴随模块）
from s11_redact import redact  # 导出前脱敏：redact(text) -> str，也可从本模块导入

__all__ = ["SessionNode", "SessionStore", "demo_tree_branching", "demo_code_drift", "redact", "Problem",
           "FORMAT_VERSION", "SessionError", "InvalidSessionId", "InvalidMessage", "CorruptSession", "UnsupportedVersion",
           "ConflictError", "SessionNotFound"]

try:  # POSIX: advisory lock shared by threads and processes
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

log = logging.getLogger(__name__)

FORMAT_VERSION = 3
ROLE_ICONS = s11_export.ROLE_ICONS   # 角色 → 图标，导出与工作台共用一份
TRASH_DIR = ".trash"
LOCK_FILE = ".lock"
TMP_SUFFIX = ".tmp"
MAX_ID_LENGTH = 64
_ID_PATTERN = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_ID_LENGTH}}}")
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}


# ── 错误：都是 ValueError 的子类，消息里写明会话 ID 或文件名 ─────────────────────────────
class SessionError(ValueError):
    """本模块所有错误的基类。"""


class InvalidSessionId(SessionError):
    """会话 ID 不能安全地变成文件名（如 "../x"）。"""


class InvalidMessage(SessionError):
    """节点内容不合法（messages 不是消息列表、标题不是字符串……）。"""


class CorruptSession(SessionError):
    """文件存在但读不出来：被截断、不是 JSON、字段类型不对。文件保持原样。"""


class UnsupportedVersion(SessionError):
    """文件来自更新版本的程序：拒绝读写，以免丢掉看不懂的字段。"""


class ConflictError(SessionError):
    """别人在你读入之后保存过同一会话；重新 load() 再追加。"""


class SessionNotFound(SessionError):
    """要分叉 / 恢复 / 导出的会话不存在（load() 本身按章节约定返回 None）。"""


def validate_session_id(session_id: Any) -> str:
    """在拼任何路径之前检查 ID：'5d38f60f4c00' 通过，'../x'、'a/b'、''、'CON' 抛 InvalidSessionId。"""
    if not isinstance(session_id, str) or not _ID_PATTERN.fullmatch(session_id):
        shown = repr(session_id)[:80]
        raise InvalidSessionId(f"非法会话 ID {shown}：只允许 1–{MAX_ID_LENGTH} 个字母、数字、- 或 _")
    if session_id.upper() in _WINDOWS_RESERVED:
        raise InvalidSessionId(f"非法会话 ID {session_id!r}：这是 Windows 保留的设备名")
    return session_id


def validate_messages(messages: Any, where: str = "") -> None:
    """messages 必须是 [{"role": 非空字符串, "content": 字符串 | 内容块列表 | None}, ...]。"""
    if not isinstance(messages, list):
        raise InvalidMessage(f"{where}messages 必须是列表，收到 {type(messages).__name__}")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise InvalidMessage(f"{where}第 {i + 1} 条消息必须是字典，收到 {type(msg).__name__}")
        role = msg.get("role")
        if not isinstance(role, str) or not role.strip():
            raise InvalidMessage(f"{where}第 {i + 1} 条消息缺少非空字符串 role")
        if "content" not in msg:
            raise InvalidMessage(f"{where}第 {i + 1} 条消息缺少 content 键")
        content = msg["content"]
        if not (content is None or isinstance(content, str) or
                (isinstance(content, list) and all(isinstance(b, dict) for b in content))):
            raise InvalidMessage(f"{where}第 {i + 1} 条消息的 content 必须是字符串、内容块（字典）列表或 null")


class SessionNode:
    """树状会话节点：一条完整消息历史，可被 fork 分叉出多个子分支"""

    def __init__(self, session_id=None, title="未命名会话", parent_id=None,
                 messages=None, created_at=None, *, fork_point=None, workspace=None, source=None):
        self.session_id = session_id or uuid.uuid4().hex[:12]   # 🆔 全局唯一 ID
        self.title = title
        self.parent_id = parent_id                              # 🌳 父分支 ID，None 为根会话
        self.messages = messages if messages is not None else []
        self.created_at = created_at or time.strftime("%Y-%m-%d %H:%M:%S")
        self.fork_point = fork_point    # 分叉时继承了父节点的前几条消息（根会话为 None）
        self.workspace = workspace      # 保存时的代码状态（见 s11_workspace），可为 None
        self.source = source            # 从哪个 Agent 的记录导入（见 s11_import），手写的会话为 None
        self.revision = 0               # 读入时文件的修订号；0 = 从未保存过
        self.created_ns = _unique_ns()  # 同一秒内创建的会话也能稳定排序

    def to_dict(self) -> Dict[str, Any]:
        """📦 序列化为 JSON 友好字典（存档）"""
        return {"session_id": self.session_id, "title": self.title,
                "parent_id": self.parent_id, "messages": self.messages,
                "created_at": self.created_at, "fork_point": self.fork_point,
                "workspace": self.workspace, "source": self.source}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "SessionNode":
        """♻️ 从字典还原节点（读档）"""
        node = cls(session_id=data.get("session_id"), title=data.get("title", "未命名会话"),
                   parent_id=data.get("parent_id"), messages=data.get("messages", []),
                   created_at=data.get("created_at"), fork_point=data.get("fork_point"),
                   workspace=data.get("workspace"), source=data.get("source"))
        node.revision = data.get("revision", 0)
        node.created_ns = data.get("created_ns", 0)
        return node

    def __repr__(self) -> str:
        return f"SessionNode({self.session_id!r}, {self.title!r}, {len(self.messages)} 条消息)"


_ns_lock = threading.Lock()
_last_ns = 0


def _unique_ns() -> int:
    """严格递增的纳秒时间戳：时钟粗糙或同一纳秒内创建两个节点时也不会重复。"""
    global _last_ns
    with _ns_lock:
        _last_ns = max(time.time_ns(), _last_ns + 1)
        return _last_ns


# ── 版本迁移：旧格式的字典 → 新格式的字典，一步一个函数 ───────────────────────────────
def _v1_to_v2(data: Dict[str, Any]) -> Dict[str, Any]:
    """章节原版文件没有 version / revision / fork_point：补上默认值。"""
    return {**data, "version": 2, "revision": data.get("revision", 0),
            "fork_point": data.get("fork_point"), "created_ns": data.get("created_ns", 0)}


def _v2_to_v3(data: Dict[str, Any]) -> Dict[str, Any]:
    """version 3 记录节点从哪里导入（source）；以前的节点都是手写的。"""
    return {**data, "version": 3, "source": data.get("source")}


MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3}   # 从版本 N 升到 N+1；加字段时在这里加一行


def migrate(data: Dict[str, Any], source: str = "") -> Dict[str, Any]:
    """把任意旧版本的字典升级到 FORMAT_VERSION；更新的版本抛 UnsupportedVersion。"""
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CorruptSession(f"{source}：version 字段无效 {version!r}")
    if version > FORMAT_VERSION:
        raise UnsupportedVersion(f"{source} 是 version {version} 的文件，本程序只认识到 version "
                                 f"{FORMAT_VERSION}；请升级程序，文件保持原样")
    while version < FORMAT_VERSION:
        data = MIGRATIONS[version](data)
        version += 1
    return data


def _check_fields(data: Any, path: str) -> None:
    """文件能解析成 JSON 还不够：字段类型也得对，否则按损坏处理。"""
    if not isinstance(data, dict):
        raise CorruptSession(f"{path}：顶层不是 JSON 对象")
    try:
        validate_session_id(data.get("session_id"))
        if data.get("parent_id") is not None:
            validate_session_id(data["parent_id"])
        validate_messages(data.get("messages", []))
    except SessionError as exc:
        raise CorruptSession(f"{path}：{exc}") from None
    fork_point = data.get("fork_point")
    checks = {"title": isinstance(data.get("title", ""), str),
              "created_at": isinstance(data.get("created_at") or "", str),
              "revision": type(data.get("revision", 0)) is int,
              "created_ns": type(data.get("created_ns", 0)) is int,
              "workspace": data.get("workspace") is None or isinstance(data["workspace"], dict),
              "source": data.get("source") is None or isinstance(data["source"], dict),
              "fork_point": fork_point is None or (type(fork_point) is int and
                                                   0 <= fork_point <= len(data.get("messages", [])))}
    bad = [name for name, ok in checks.items() if not ok]
    if bad:
        raise CorruptSession(f"{path}：字段类型或取值不对：{', '.join(bad)}")


def _stat_key(st: os.stat_result) -> Tuple[int, int, int]:
    """(inode, 大小, 修改时间)：原子替换会换 inode，所以它一变就说明文件被重新保存过。"""
    return st.st_ino, st.st_size, st.st_mtime_ns


def _read_file(path: str) -> Tuple[Dict[str, Any], Tuple[int, int, int]]:
    """读一个会话文件并升级到当前版本，连同读到的那一版的 _stat_key；坏文件抛 CorruptSession（文件不动）。"""
    try:
        with open(path, "rb") as f:
            key = _stat_key(os.fstat(f.fileno()))
            raw = f.read()
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptSession(f"会话文件已损坏（可能写入被中断）：{path}：{exc}") from None
    if isinstance(data, dict):
        data = migrate(data, path)
    _check_fields(data, path)
    return data, key


def _fsync_dir(folder: str) -> None:
    """让 rename 本身也落盘；Windows 等不支持打开目录的系统直接跳过。"""
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


def write_temp(path: str, data: bytes, durable: bool = True) -> str:
    """第一步：把全部内容写进同目录的临时文件并 fsync，返回它的名字。此时 path 还完全没动。"""
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=TMP_SUFFIX,
                               dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())   # 先让数据落盘，再让名字指向它：否则断电后可能得到空文件
    except BaseException:
        _discard(tmp)
        raise
    return tmp


def commit_temp(tmp: str, path: str, durable: bool = True) -> None:
    """第二步：os.replace 是原子的——读者要么看到旧文件，要么看到新文件，不会看到半个。"""
    try:
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise
    if durable:
        _fsync_dir(os.path.dirname(path) or ".")   # 让改名本身也落盘


def _discard(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


class Problem(NamedTuple):
    """check() 报告的一个问题。kind ∈ corrupt / newer_version / missing_parent / temp_file / stray_file"""
    kind: str
    path: str
    detail: str


_dir_locks: Dict[str, threading.Lock] = {}
_dir_locks_guard = threading.Lock()


class SessionStore:
    """🗄️ 会话仓库：以 JSON 文件持久化会话树，支持存档/读档/分叉/导出"""

    def __init__(self, storage_dir: str = "sessions", *, workspace: Optional[str] = None,
                 durable: bool = True):
        self.storage_dir = os.fspath(storage_dir)
        self.workspace = os.fspath(workspace) if workspace is not None else None
        self.durable = durable
        os.makedirs(self.storage_dir, exist_ok=True)  # 📁 自动创建会话目录
        key = os.path.realpath(self.storage_dir)
        with _dir_locks_guard:   # 同一目录的所有 SessionStore 实例共用一把线程锁
            self._thread_lock = _dir_locks.setdefault(key, threading.Lock())
        self._summary_cache: Dict[str, Tuple[Tuple[int, int, int], Dict[str, Any]]] = {}

    # ── 路径与锁 ────────────────────────────────────────────────────────────────
    def _path(self, session_id: str) -> str:
        return os.path.join(self.storage_dir, validate_session_id(session_id) + ".json")

    path_of = _path

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """目录级写锁：线程锁挡住本进程的其他线程，flock 挡住其他进程。"""
        with self._thread_lock:
            if fcntl is None:
                yield
                return
            with open(os.path.join(self.storage_dir, LOCK_FILE), "a+b") as lock_file:
                fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)

    def _current_revision(self, path: str) -> int:
        """磁盘上这份文件的修订号；文件不存在为 0。坏文件/新版本文件在这里就抛错，保证不会被覆盖。"""
        if not os.path.exists(path):
            return 0
        return self._summary(path)["revision"]

    # ── 章节 API ───────────────────────────────────────────────────────────────
    def save(self, session: SessionNode) -> None:
        """💾 存档：把会话节点写回磁盘（原子写入；过期节点抛 ConflictError）"""
        path = self._path(session.session_id)
        payload = self._encode(session)  # 先校验：出错时磁盘上什么都没发生
        payload["revision"] = session.revision + 1
        try:
            raw = json.dumps(payload, ensure_ascii=False, indent=2).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise InvalidMessage(f"会话 {session.session_id} 含有无法存成 JSON 的内容：{exc}") from None
        tmp = write_temp(path, raw, self.durable)   # 慢的部分（写盘 + fsync）在锁外，并发点击互不排队
        with self._locked():                          # 锁内只做：核对修订号 + 原子改名
            try:
                on_disk = self._current_revision(path)
                if on_disk != session.revision:
                    raise ConflictError(
                        f"会话 {session.session_id} 在你读入（修订 {session.revision}）之后已被保存为修订 "
                        f"{on_disk}；请重新 load() 后再追加，否则会抹掉别人的消息")
            except BaseException:
                _discard(tmp)
                raise
            commit_temp(tmp, path, durable=False)
            self._remember(path, payload)   # 下次保存不必重新解析自己刚写的文件
        if self.durable:
            _fsync_dir(self.storage_dir)
        session.revision = payload["revision"]

    def _encode(self, session: SessionNode) -> Dict[str, Any]:
        validate_session_id(session.session_id)
        if session.parent_id is not None:
            validate_session_id(session.parent_id)
        if not isinstance(session.title, str):
            raise InvalidMessage(f"会话 {session.session_id} 的 title 必须是字符串")
        validate_messages(session.messages, f"会话 {session.session_id}：")
        if self.workspace is not None:
            session.workspace = _workspace_snapshot(self.workspace, exclude=[self.storage_dir])
        return {"version": FORMAT_VERSION, **session.to_dict(), "created_ns": session.created_ns}

    def create_session(self, title: str, messages: Optional[List[Dict[str, Any]]] = None) -> str:
        """🆕 新建根会话并立即存档，返回 session_id"""
        session = SessionNode(title=title, messages=messages or [])
        self.save(session)
        return session.session_id

    def load(self, session_id: str) -> Optional[SessionNode]:
        """📂 读档：从磁盘恢复指定会话（断点续跑）；不存在返回 None，损坏抛 CorruptSession"""
        path = self._path(session_id)
        try:
            data, key = _read_file(path)
        except FileNotFoundError:
            return None
        self._remember(path, data, key)   # 随后的 save() 核对修订号时不必再读一遍
        if data["session_id"] != session_id:   # 被复制或改名的文件：存回去会写到另一个文件上
            raise CorruptSession(f"{path}：文件里的 session_id 是 {data['session_id']}，与文件名不一致")
        return SessionNode.from_dict(data)

    def list_sessions(self) -> List[Dict[str, Any]]:
        """📋 返回全部会话摘要（按创建时间倒序；坏文件跳过并记日志，用 check() 查看）"""
        summaries = []
        for fname in sorted(os.listdir(self.storage_dir)):
            if not fname.endswith(".json") or fname.startswith("."):
                continue
            try:
                summaries.append(self._summary(os.path.join(self.storage_dir, fname)))
            except FileNotFoundError:
                continue   # 刚被别的线程删掉
            except SessionError as exc:
                log.warning("跳过无法读取的会话文件：%s", exc)
        summaries.sort(key=lambda s: (s["created_at"], s["created_ns"], s["session_id"]), reverse=True)
        return summaries

    def _summary(self, path: str) -> Dict[str, Any]:
        """一个文件的摘要；按 (inode, 大小, 修改时间) 缓存，目录很大时 list 不必每次重新解析。"""
        cached = self._summary_cache.get(path)
        if cached and cached[0] == _stat_key(os.stat(path)):
            return dict(cached[1])
        return dict(self._remember(path, *_read_file(path)))

    def _remember(self, path: str, data: Dict[str, Any], key=None) -> Dict[str, Any]:
        if key is None:
            key = _stat_key(os.stat(path))
        messages = data.get("messages", [])
        summary = {"session_id": data["session_id"], "title": data.get("title", "未命名会话"),
                   "parent_id": data.get("parent_id"), "message_count": len(messages),
                   "created_at": data.get("created_at") or "", "fork_point": data.get("fork_point"),
                   "revision": data.get("revision", 0), "created_ns": data.get("created_ns", 0),
                   "first_added": _first_added(messages, data.get("fork_point"))}
        self._summary_cache[path] = (key, summary)
        return summary

    def fork(self, parent_id: str, new_messages: Optional[List[Dict[str, Any]]] = None, *,
             at: Optional[int] = None, title: Optional[str] = None) -> SessionNode:
        """🌿 分叉：继承父会话前 at 条（默认全部）历史并追加新消息，生成指向父节点的子分支"""
        parent = self.load(parent_id)
        if parent is None:
            raise SessionNotFound(f"❌ 未找到父会话: {parent_id}，无法分叉！")
        keep = len(parent.messages) if at is None else at
        if isinstance(keep, bool) or not isinstance(keep, int) or not 0 <= keep <= len(parent.messages):
            raise SessionError(f"分叉位置 at={at!r} 无效：会话 {parent_id} 只有 {len(parent.messages)} 条消息")
        child = SessionNode(title=title or f"{parent.title} · 分支", parent_id=parent.session_id,
                            messages=list(parent.messages[:keep]) + list(new_messages or []),
                            fork_point=keep)
        self.save(child)   # 新 ID、修订 0：分叉永远不会冲突
        return child

    def export_markdown(self, session_id: str, *, redact: bool = True) -> str:
        """📤 把该会话 messages 渲染成可读 Markdown 文本（默认先脱敏；存储的会话不变）"""
        session = self.load(session_id)
        if session is None:
            return f"(未找到会话: {session_id})"
        return s11_export.render_markdown(session.to_dict(), self.lineage(session_id), redact=redact)

    def export_html(self, session_id: str, *, redact: bool = True) -> str:
        """📤 导出成单个离线 HTML 页面（内联 CSS、无脚本、无外链）"""
        session = self.load(session_id)
        if session is None:
            raise SessionNotFound(f"未找到会话: {session_id}")
        return s11_export.render_html(session.to_dict(), self.lineage(session_id), redact=redact)

    def delete(self, session_id: str, *, purge: bool = False) -> bool:
        """🗑️ 删除指定会话：默认移进 .trash/（可 restore），purge=True 才真正删除。子分支不受影响。"""
        path = self._path(session_id)
        with self._locked():
            if not os.path.exists(path):
                return False
            if purge:
                os.remove(path)
            else:
                trash = os.path.join(self.storage_dir, TRASH_DIR)
                os.makedirs(trash, exist_ok=True)
                os.replace(path, os.path.join(trash, f"{session_id}.{time.time_ns()}.json"))
            if self.durable:
                _fsync_dir(self.storage_dir)
        self._summary_cache.pop(path, None)
        return True

    def restore(self, session_id: str) -> bool:
        """♻️ 从回收站放回最近一次删除的版本；同名会话还在时拒绝（ConflictError），绝不覆盖。"""
        path = self._path(session_id)
        trash = os.path.join(self.storage_dir, TRASH_DIR)
        with self._locked():
            copies = sorted(f for f in (os.listdir(trash) if os.path.isdir(trash) else [])
                            if f.startswith(session_id + ".") and f.endswith(".json"))
            if not copies:
                return False
            if os.path.exists(path):
                raise ConflictError(f"会话 {session_id} 已存在，不能用回收站里的版本覆盖它")
            os.replace(os.path.join(trash, copies[-1]), path)
        return True

    # ── 会话树（Pi 的 /tree）─────────────────────────────────────────────────────
    def _by_id(self) -> Dict[str, Dict[str, Any]]:
        return {s["session_id"]: s for s in self.list_sessions()}

    def children(self, session_id: str) -> List[Dict[str, Any]]:
        """直接子分支的摘要，按创建先后排序。"""
        validate_session_id(session_id)
        kids = [s for s in self.list_sessions() if s["parent_id"] == session_id]
        return kids[::-1]

    def lineage(self, session_id: str) -> List[Dict[str, Any]]:
        """从根到该节点的摘要链。沿 parent_id 逐个读文件（不扫描整个目录）；
        父节点已删除或损坏时，从能找到的最上层开始。"""
        chain: List[Dict[str, Any]] = []
        current: Optional[str] = validate_session_id(session_id)
        while current and current not in {s["session_id"] for s in chain}:   # 防止人为改坏的环
            try:
                chain.append(self._summary(self._path(current)))
            except FileNotFoundError:
                break
            except SessionError as exc:
                if not chain:
                    raise
                log.warning("会话 %s 的祖先无法读取，路径从这里截断：%s", session_id, exc)
                break
            current = chain[-1]["parent_id"]
        return chain[::-1]

    def render_tree(self, root_id: Optional[str] = None) -> str:
        """整棵会话树（或以 root_id 为根的子树）的文字图：ID、标题、消息数、每个分支新增了什么。"""
        index = self._by_id()
        in_order = sorted(index.values(), key=lambda s: (s["created_at"], s["created_ns"], s["session_id"]))
        kids: Dict[Optional[str], List[Dict[str, Any]]] = {}
        for s in in_order:
            parent = s["parent_id"] if s["parent_id"] in index else None   # 父节点已删除：自成一棵树
            kids.setdefault(parent, []).append(s)
        if root_id is not None:
            if validate_session_id(root_id) not in index:
                raise SessionNotFound(f"未找到会话: {root_id}")
            roots = [index[root_id]]
        else:   # 人为改坏的 parent_id 环里没有根：环上的节点排在最后，各自补作起点
            roots = kids.get(None, []) + in_order
        lines: List[str] = []
        seen: set = set()
        for root in roots:
            if root["session_id"] in seen:
                continue
            stack = [(root, "", "")]   # 显式栈：几千层的分叉链也不会爆递归
            while stack:
                node, first_prefix, prefix = stack.pop()
                if node["session_id"] in seen:
                    continue
                seen.add(node["session_id"])
                lines.append(first_prefix + _describe(node))
                children = kids.get(node["session_id"], [])
                for i, child in reversed(list(enumerate(children))):
                    last = i == len(children) - 1
                    stack.append((child, prefix + ("└── " if last else "├── "), prefix + ("    " if last else "│   ")))
        return "\n".join(lines) if lines else "（还没有会话）"

    # ── 体检 ──────────────────────────────────────────────────────────────────
    def check(self) -> List[Problem]:
        """列出仓库里的全部问题：坏文件、更新版本的文件、父节点不在的分支、残留的临时文件。"""
        problems, parents = [], {}
        for fname in sorted(os.listdir(self.storage_dir)):
            path = os.path.join(self.storage_dir, fname)
            if fname.endswith(TMP_SUFFIX):
                problems.append(Problem("temp_file", path, "写入被中断留下的临时文件，可以删除"))
            elif fname.endswith(".json") and not fname.startswith("."):
                try:
                    summary = self._summary(path)
                except UnsupportedVersion as exc:
                    problems.append(Problem("newer_version", path, str(exc)))
                    continue
                except SessionError as exc:
                    problems.append(Problem("corrupt", path, str(exc)))
                    continue
                if fname != summary["session_id"] + ".json":
                    problems.append(Problem("stray_file", path, f"文件名与其中的 session_id "
                                                                f"{summary['session_id']} 不一致"))
                parents[summary["session_id"]] = summary["parent_id"]
        for sid, parent in sorted(parents.items()):
            if parent and parent not in parents:
                problems.append(Problem("missing_parent", self._path(sid),
                                        f"会话 {sid} 的父会话 {parent} 不在仓库中（可能已删除，历史仍完整保留在本文件）"))
        return problems

    # ── 会话 ≠ 代码：恢复前先对账（见 s11_workspace）────────────────────────────────
    def resume(self, session_id: str) -> Tuple[SessionNode, List[str]]:
        """读档并与当前工作区对账：返回 (节点, 差异说明)。没有快照或一切一致时差异为空列表。"""
        node = self.load(session_id)
        if node is None:
            raise SessionNotFound(f"未找到会话: {session_id}")
        if not node.workspace:
            return node, []
        import s11_workspace
        folder = self.workspace or node.workspace.get("root")
        return node, s11_workspace.drift(node.workspace, folder, exclude=[self.storage_dir])


def _workspace_snapshot(folder: str, exclude: List[str]) -> Optional[Dict[str, Any]]:
    import s11_workspace
    return s11_workspace.snapshot(folder, exclude=exclude)


def _first_added(messages: List[Dict[str, Any]], fork_point: Optional[int]) -> str:
    """分支新增的第一条消息的前 24 个字，用在树状图里说明“这个分支做了什么”。"""
    if not fork_point or fork_point >= len(messages):
        return ""
    content = messages[fork_point].get("content")
    if isinstance(content, list):
        content = " ".join(str(b.get("text") or b.get("name") or b.get("type", "")) for b in content)
    text = " ".join(str(content or "").split())
    return text[:24] + ("…" if len(text) > 24 else "")


def _describe(summary: Dict[str, Any]) -> str:
    """'标题 [id] 7 条（自第 5 条分叉 +2：方案 A…）'"""
    text = f"{summary['title']} [{summary['session_id']}] {summary['message_count']} 条"
    if summary["fork_point"] is not None:
        added = summary["message_count"] - summary["fork_point"]
        text += f"（自第 {summary['fork_point']} 条分叉，+{added}"
        text += f"：{summary['first_added']}）" if summary["first_added"] else "）"
    return text


def demo_tree_branching(store: SessionStore) -> Dict[str, Any]:
    """🎬 演示：创建主会话 → 模拟对话 → 分叉 2 个方案 → 恢复其一 → 导出 Markdown"""
    main_id = store.create_session("修复登录服务内存泄漏", [
        {"role": "system", "content": "你是一名资深 Python 后端工程师，负责诊断并修复 Web 服务内存泄漏。"},
        {"role": "user", "content": "服务连续运行 3 天后，内存占用从 200MB 一路涨到 3GB，帮我定位根因。"},
    ])
    main = store.load(main_id)
    main.messages.append({"role": "assistant", "content": "已初步检查日志：怀疑全局缓存未清理 + 长连接未释放，先深入阅读代码确认。"})
    main.messages.append({"role": "user", "content": "我怀疑是 event_listener 注册表无限增长，帮忙重点排查。"})
    main.messages.append({"role": "assistant", "content": "已 grep 全局注册表，定位到 cache_store 与 ws_pool 两处高度可疑的点。"})
    store.save(main)  # 💾 中途存档，随时可断点续跑

    branch_a = store.fork(main_id, [
        {"role": "assistant", "content": "方案 A：为 cache_store 增加 LRU 容量上限，并注册定时清理任务。"},
        {"role": "user", "content": "可以，按方案 A 继续实施。"},
    ])
    branch_b = store.fork(main_id, [
        {"role": "assistant", "content": "方案 B：改用 WeakValueDictionary 弱引用缓存，让 GC 自动回收。"},
        {"role": "user", "content": "先别改代码，我要先对比 A/B 两套方案的压测数据再拍板。"},
    ])

    resumed = store.load(branch_b.session_id)  # 📂 恢复分支 B（断点续跑）
    resumed.messages.append({"role": "user", "content": "压测完成：方案 B 峰值内存更低、吞吐更稳，决定采用方案 B。"})
    resumed.messages.append({"role": "assistant", "content": "✅ 已按弱引用方案完成重构，内存曲线回归平稳，问题闭环。"})
    store.save(resumed)

    return {"main_id": main_id, "branch_a_id": branch_a.session_id,
            "branch_b_id": branch_b.session_id,
            "export_md": store.export_markdown(resumed.session_id)}


# ── 演示：会话 ≠ 代码，恢复前先对账 ──────────────────────────────────────────────────────────
_DEMO_CACHE_BEFORE = "cache_store = {}   # 全局缓存：只增不删（内存泄漏的元凶）\n"
_DEMO_CACHE_AFTER = ("from weakref import WeakValueDictionary\n\n"
                     "cache_store = WeakValueDictionary()   # 方案 B：弱引用，GC 自动回收\n")


def demo_code_drift(base_dir: str) -> Dict[str, Any]:
    """🎬 主会话对着工作区存档 → 分支 B 重构了 cache_store.py → 恢复分支 A 时先对账。

    Returns {"workspace", "main_id", "branch_a_id", "branch_b_id", "drift", "saved"}: drift lists what
    changed since branch A was saved, e.g. ["文件已修改：cache_store.py", "新增文件：weak_cache_test.py"].
    """
    workspace = os.path.join(base_dir, "workspace")
    os.makedirs(workspace, exist_ok=True)
    _write_text(os.path.join(workspace, "cache_store.py"), _DEMO_CACHE_BEFORE)
    _write_text(os.path.join(workspace, "server.py"), "from cache_store import cache_store\n")
    store = SessionStore(os.path.join(base_dir, "sessions"), workspace=workspace)
    main_id = store.create_session("修复登录服务内存泄漏", [
        {"role": "user", "content": "服务内存一路上涨，帮我定位根因。"},
        {"role": "assistant", "content": "定位到 cache_store.py 里的全局缓存只增不删。"}])
    branch_a = store.fork(main_id, [{"role": "assistant", "content": "方案 A：给 cache_store 加 LRU 上限。"}])
    branch_b = store.fork(main_id, [{"role": "assistant", "content": "方案 B：改用弱引用缓存。"}])
    _write_text(os.path.join(workspace, "cache_store.py"), _DEMO_CACHE_AFTER)      # 分支 B 动手改了代码……
    _write_text(os.path.join(workspace, "weak_cache_test.py"), "def test_gc(): ...\n")
    resumed_b = store.load(branch_b.session_id)
    resumed_b.messages.append({"role": "assistant", "content": "✅ 已按弱引用方案重构 cache_store.py。"})
    store.save(resumed_b)
    node, changes = store.resume(branch_a.session_id)                       # ……再回到分支 A
    return {"workspace": workspace, "main_id": main_id, "branch_a_id": branch_a.session_id,
            "branch_b_id": branch_b.session_id, "drift": changes, "saved": node.workspace}


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# ── 命令行：python code/s11_session.py [demo|tree|show|export|check] [--dir DIR] ─────────────
def _cmd_demo(store: SessionStore, args) -> int:
    result = demo_tree_branching(store)
    print(f"会话文件已写入 {os.path.abspath(store.storage_dir)}/\n")
    print(store.render_tree(result["main_id"]), "\n")
    print(result["export_md"])
    return 0


def _cmd_tree(store: SessionStore, args) -> int:
    print(store.render_tree(args.session_id))
    return 0


def _cmd_show(store: SessionStore, args) -> int:
    node = store.load(args.session_id)
    if node is None:
        raise SessionNotFound(f"未找到会话: {args.session_id}")
    print(" → ".join(f"{s['title']} [{s['session_id']}]" for s in store.lineage(args.session_id)))
    for i, msg in enumerate(node.messages, 1):
        print(f"{i:>4}. {msg['role']}: {str(msg.get('content'))[:100]}")
    return 0


def _cmd_export(store: SessionStore, args) -> int:
    export = store.export_html if args.html else store.export_markdown
    if store.load(args.session_id) is None:
        raise SessionNotFound(f"未找到会话: {args.session_id}")
    print(export(args.session_id, redact=not args.no_redact))
    return 0


def _cmd_check(store: SessionStore, args) -> int:
    problems = store.check()
    for problem in problems:
        print(f"[{problem.kind}] {problem.path}\n    {problem.detail}")
    print(f"共 {len(problems)} 个问题" if problems else "✅ 仓库完好，没有发现问题")
    return 1 if problems else 0


def _cmd_import(store: SessionStore, args) -> int:
    try:
        import s11_import  # 导入器在仓库之上一层，按需加载（仓库本身不依赖它）
    except ModuleNotFoundError as exc:
        if exc.name != "s11_import":
            raise
        raise SessionError("导入功能不可用：找不到 s11_import 模块（code/s11_import.py）") from None
    return s11_import.run_cli(store, args.paths)


COMMANDS = {"demo": _cmd_demo, "tree": _cmd_tree, "show": _cmd_show, "export": _cmd_export, "check": _cmd_check,
            "import": _cmd_import}


def main(argv: Optional[List[str]] = None) -> int:
    import argparse
    parser = argparse.ArgumentParser(description="8.11 会话持久化与多分支：演示与仓库工具")
    parser.add_argument("--dir", default="sessions", help="会话目录（默认 ./sessions）")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("demo", help="运行主会话 → 双分支 → 恢复 → 导出（默认）")
    sub.add_parser("tree", help="打印会话树").add_argument("session_id", nargs="?")
    sub.add_parser("show", help="打印一个会话的消息").add_argument("session_id")
    export = sub.add_parser("export", help="导出一个会话（默认 Markdown，已脱敏）")
    export.add_argument("session_id")
    export.add_argument("--html", action="store_true", help="导出单个离线 HTML 页面")
    export.add_argument("--no-redact", action="store_true", help="不脱敏（仅限自己查看）")
    sub.add_parser("check", help="检查坏文件、新版本文件、父节点缺失、残留临时文件")
    sub.add_parser("import", help="导入 Claude Code / Pi 的会话记录（文件或文件夹）").add_argument(
        "paths", nargs="+", metavar="PATH")
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command or "demo"](SessionStore(args.dir), args)
    except (SessionError, OSError) as exc:
        print(f"错误：{exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
