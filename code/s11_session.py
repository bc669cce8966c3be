"""s11_session.py — 会话持久化与多分支管理（第 8.11 节）

把 Agent 的 messages 存成 JSON 文件，用 parent_id 串成一棵会话树：

    修复登录服务内存泄漏 [5d38f60f4c00] 5 条           sessions/
    ├── · 分支 A [4d67e2e6b66c] 7 条 (+2)               ├── 5d38f60f4c00.json   一个节点一个文件
    └── · 分支 B [0994dd416b46] 9 条 (+4) ← 恢复续跑    ├── 4d67e2e6b66c.json
                                                        ├── 0994dd416b46.json
                                                        ├── .lock               写入时的互斥锁
                                                        └── .trash/             delete() 的回收站
                                                            └── <id>.<纳秒>.json

关键洞察：一个节点就是一份完整的消息历史——分叉时复制父节点的前 k 条消息，
所以删掉任何节点都不会让别的分支丢失历史，而“存档”只需要一次原子替换。

这个文件按章节的顺序读：SessionNode、SessionStore（save / create_session / load / list_sessions / fork /
export_markdown / delete，其后是章节之外的 restore / empty_trash / 会话树 / check / resume），
然后是每条工程建议对应的一个小函数（ID 检查、消息检查、迁移表、修订号核对、编码），最后是演示和命令行。
怎样把字节安全地写上磁盘、读回来（原子写入、目录锁、只读普通文件）在 s11_storage；
脱敏表在 s11_redact；代码快照在 s11_workspace；Markdown / HTML 渲染在 s11_export。

文件格式（version 3，仍是第 8.11 节打印代码能读的 JSON：它只取自己认识的键）::

    {"version": 3, "revision": 3, "session_id": "0994dd416b46", "title": "...", "parent_id": "5d38f60f4c00",
     "messages": [{"role": "user", "content": "..."}], "created_at": "2026-08-25 18:46:40",
     "fork_point": 5, "workspace": null, "source": null, "created_ns": 1787654000123456789}

没有 "version" 的文件是章节原版格式（version 1），读入时经 MIGRATIONS 一步步升级（2 加修订号与分叉点，
3 加 source：从哪个 Agent 的记录导入），下次保存写成 version 3；version 比本模块新的文件拒绝读写
（UnsupportedVersion），绝不覆盖。

保存的保证（durable=True，默认）：
  * 全有或全无：先写同目录临时文件并 fsync，再 os.replace 原子替换，最后 fsync 目录。任何时刻 kill -9，
    每个文件要么是上一次完整保存的内容，要么是这一次的；任何一步出错（包括 .lock 打不开）临时文件都会删掉，
    只有进程被杀时才可能留下 ".<id>.json.*.tmp"，check() 只报告没有写入者锁着、又放了一会儿的那些。
  * 不丢轮次：节点记住读入时的 revision；若别人在此期间保存过同一会话，save() 抛 ConflictError 而不是覆盖。
    核对在 .lock 文件锁内、读磁盘上的文件本身（不信任 inode / 大小 / 修改时间）：字节与本实例上次读到或写下的
    完全相同（sha256）时直接用已知的修订号，否则完整解析一遍。编码、写临时文件和 fsync 都在锁外。
  * 读回来的就是存进去的：半个 emoji（孤立代理项）写成 \\udXXX 转义，读回原样；嵌套超过 MAX_NESTING 层的
    内容在保存时拒绝（InvalidMessage，写明会话和第几条消息），因为它在较深的调用栈里会读不回来。
  * 坏文件是证据：解析失败的文件原样保留，load() 抛 CorruptSession 并给出文件名；目录、FIFO、套接字、
    符号链接、没有权限的文件同样如此（UnreadableSession），从不跟随链接、从不因 FIFO 卡住。
    list_sessions() / 会话树跳过它们并记日志，check() 逐个列出；save() 不会覆盖读不懂的文件。
  * 删除可恢复：delete() 把文件移进 .trash/，restore() 放回；purge=True 连同回收站里的旧副本一起删除，
    empty_trash() 清空回收站。

已知限制（刻意不做）：不做跨机器同步与合并；不压缩、不加密（导出前用 redact 脱敏）；每次保存重写整个文件，
所以单个会话的保存开销随消息数线性增长（Pi / Claude Code 用只追加的 JSONL 避免这一点）；list_sessions() 的
摘要按 (inode, 大小, 修改时间) 缓存，同一时钟刻内被原地改写成同样大小的文件可能短暂显示旧摘要（修订号核对
不受影响）；两个相邻的孤立代理项（高 + 低）读回来会合成一个字符；durable=False 只用于基准测试。
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import stat
import sys
import threading
import time
import uuid
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import s11_export  # Markdown / HTML 渲染（同目录的伴随模块）
import s11_workspace  # 会话 ≠ 代码：保存时记下工作区，恢复前对账
from s11_redact import redact  # 导出前脱敏：redact(text) -> str，也可从本模块导入
from s11_storage import (
    DirectoryLock,
    NotRegularFile,
    PendingWrite,
    describe_os_error,
    entry_kind,
    fsync_dir,
    is_abandoned_temp,
    read_regular_file,
)

__all__ = ["SessionNode", "SessionStore", "demo_tree_branching", "demo_code_drift", "redact", "printable",
           "Problem", "FORMAT_VERSION", "MIGRATIONS", "migrate", "validate_session_id", "validate_messages",
           "SessionError", "InvalidSessionId", "InvalidMessage", "CorruptSession", "UnreadableSession",
           "UnsupportedVersion", "ConflictError", "SessionNotFound"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 3
ROLE_ICONS = s11_export.ROLE_ICONS   # 角色 → 图标，导出与工作台共用一份
TRASH_DIR = ".trash"
MAX_ID_LENGTH = 64
MAX_NESTING = 100          # 一条消息内部最多嵌套几层列表 / 字典（JSON 解析器在深调用栈里会先耗尽递归）
MAX_TREE_INDENT = 16       # 会话树最多缩进几层；更深的节点标出层数，不再加宽
MAX_TITLE_SHOWN = 60       # 树状图里一个标题最多显示几个字
_ID_PATTERN = re.compile(rf"[A-Za-z0-9_-]{{1,{MAX_ID_LENGTH}}}")
_TRASH_NAME = re.compile(rf"([A-Za-z0-9_-]{{1,{MAX_ID_LENGTH}}})\.(\d+)\.json")
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}


# ── 错误：都是 ValueError 的子类，消息里写明会话 ID 或文件名 ─────────────────────────────
class SessionError(ValueError):
    """本模块所有错误的基类。"""


class InvalidSessionId(SessionError):
    """会话 ID 不能安全地变成文件名（如 "../x"）。"""


class InvalidMessage(SessionError):
    """节点内容不合法（messages 不是消息列表、标题不是字符串、嵌套太深……）。"""


class CorruptSession(SessionError):
    """文件存在但读不出来：被截断、不是 JSON、字段类型不对。文件保持原样。"""


class UnreadableSession(CorruptSession):
    """名字像会话文件，却打不开：没有权限，或者是目录、FIFO、套接字、符号链接。原样保留。"""


class UnsupportedVersion(SessionError):
    """文件来自更新版本的程序：拒绝读写，以免丢掉看不懂的字段。"""


class ConflictError(SessionError):
    """别人在你读入之后保存过同一会话；重新 load() 再追加。"""


class SessionNotFound(SessionError):
    """要分叉 / 恢复 / 导出的会话不存在（load() 本身按章节约定返回 None）。"""


# ── 1️⃣ 树节点 SessionNode：一条可被分叉的消息历史 ────────────────────────────────────────
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


class Problem(NamedTuple):
    """check() 报告的一个问题。kind ∈ corrupt / unreadable / newer_version / missing_parent / temp_file / stray_file"""
    kind: str
    path: str
    detail: str


class SessionFile(NamedTuple):
    """读一次会话文件得到的全部：升级后的内容、当时的 lstat、字节的 sha256。"""
    data: Dict[str, Any]
    info: os.stat_result
    digest: bytes


# ── 2️⃣ 会话仓库 SessionStore ─────────────────────────────────────────────────────────────────
class SessionStore:
    """🗄️ 会话仓库：以 JSON 文件持久化会话树，支持存档/读档/分叉/导出"""

    def __init__(self, storage_dir: str = "sessions", *, workspace: Optional[str] = None,
                 durable: bool = True):
        self.storage_dir = _absolute_folder(storage_dir, "会话目录")   # 之后 chdir 也不会换地方
        self.workspace = _absolute_folder(workspace, "工作区目录") if workspace is not None else None
        self.durable = durable
        os.makedirs(self.storage_dir, exist_ok=True)  # 📁 自动创建会话目录
        self._lock = DirectoryLock(self.storage_dir)
        self._summary_cache: Dict[str, Tuple[Tuple[int, int, int], Dict[str, Any]]] = {}
        self._known: Dict[str, Tuple[bytes, int]] = {}   # 路径 → (读到或写下的字节的 sha256, 修订号)

    def _path(self, session_id: str) -> str:
        return self._file_of(validate_session_id(session_id))

    path_of = _path

    def _file_of(self, checked_id: str) -> str:
        """已经检查过的 ID（比如从文件里读出、经 _check_fields 检查过的 parent_id）→ 路径。"""
        return os.path.join(self.storage_dir, checked_id + ".json")

    # ── 章节 API ───────────────────────────────────────────────────────────────
    def save(self, session: SessionNode) -> None:
        """💾 存档：把会话节点写回磁盘（原子写入；过期节点抛 ConflictError）"""
        path = self._path(session.session_id)
        payload = self._encode(session)                 # 先校验：出错时磁盘上什么都没发生
        raw = encode_session(payload, session.session_id)
        with PendingWrite(path, raw, self.durable) as pending:   # 写临时文件 + fsync：慢，放在锁外
            with self._lock:                                     # 锁内只做：核对修订号 + 原子改名
                self._check_revision(path, session)
                pending.commit()
                info = os.lstat(path)
        self._remember(path, payload, info, hashlib.sha256(raw).digest())
        if self.durable:
            fsync_dir(self.storage_dir)   # 让改名本身也落盘
        session.revision = payload["revision"]

    def create_session(self, title: str, messages: Optional[List[Dict[str, Any]]] = None) -> str:
        """🆕 新建根会话并立即存档，返回 session_id"""
        session = SessionNode(title=title, messages=messages or [])
        self.save(session)
        return session.session_id

    def load(self, session_id: str) -> Optional[SessionNode]:
        """📂 读档：从磁盘恢复指定会话（断点续跑）；不存在返回 None，损坏抛 CorruptSession"""
        path = self._path(session_id)
        try:
            found = read_session_file(path)
        except FileNotFoundError:
            return None
        self._remember(path, found.data, found.info, found.digest)   # 随后的 save() 不必再解析一遍
        if found.data["session_id"] != session_id:   # 被复制或改名的文件：存回去会写到另一个文件上
            raise CorruptSession(f"{path}：文件里的 session_id 是 {found.data['session_id']}，与文件名不一致")
        return SessionNode.from_dict(found.data)

    def list_sessions(self) -> List[Dict[str, Any]]:
        """📋 返回全部会话摘要（按创建时间倒序；读不了的条目跳过并记日志，用 check() 查看）"""
        summaries = []
        for fname in sorted(os.listdir(self.storage_dir)):
            if not _is_session_name(fname):
                continue
            try:
                summaries.append(self._summary(os.path.join(self.storage_dir, fname)))
            except FileNotFoundError:
                continue   # 刚被别的线程删掉
            except SessionError as exc:
                log.warning("跳过无法读取的会话文件：%s", printable(exc))   # 文件名可能带控制字符
        summaries.sort(key=lambda s: (s["created_at"], s["created_ns"], s["session_id"]), reverse=True)
        return summaries

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

    def delete(self, session_id: str, *, purge: bool = False) -> bool:
        """🗑️ 删除指定会话：默认移进 .trash/（可 restore）；purge=True 连同回收站里的旧副本一起真正删除。
        子分支不受影响。返回是否删掉了什么。"""
        path = self._path(session_id)
        with self._lock:
            removed = self._remove_live_file(path, session_id, purge)
            if purge:
                removed = self._remove_from_trash(session_id) > 0 or removed
            if removed and self.durable:
                fsync_dir(self.storage_dir)
        self._forget(path)
        return removed

    # ── 章节之外：回收站、会话树、体检、对账 ────────────────────────────────────────────
    def export_html(self, session_id: str, *, redact: bool = True) -> str:
        """📤 导出成单个离线 HTML 页面（内联 CSS、无脚本、无外链）"""
        session = self.load(session_id)
        if session is None:
            raise SessionNotFound(f"未找到会话: {session_id}")
        return s11_export.render_html(session.to_dict(), self.lineage(session_id), redact=redact)

    def restore(self, session_id: str) -> bool:
        """♻️ 从回收站放回最近一次删除的版本；同名会话还在时拒绝（ConflictError），绝不覆盖。"""
        path = self._path(session_id)
        trash = self._trash_dir()
        with self._lock:
            copies = self._trash_copies(session_id)
            if not copies:
                return False
            if os.path.lexists(path):
                raise ConflictError(f"会话 {session_id} 已存在，不能用回收站里的版本覆盖它")
            os.replace(os.path.join(trash, copies[-1]), path)
            if self.durable:
                fsync_dir(self.storage_dir)   # 新名字落盘……
                fsync_dir(trash)              # ……旧名字的消失也落盘
        return True

    def empty_trash(self) -> int:
        """🧹 清空回收站：被删会话的每一份副本都真正删除。返回删掉了几个文件。"""
        with self._lock:
            removed = sum(self._remove_from_trash(session_id) for session_id in self._trashed_ids())
            if removed and self.durable:
                fsync_dir(self._trash_dir())
        return removed

    def children(self, session_id: str) -> List[Dict[str, Any]]:
        """直接子分支的摘要，按创建先后排序。"""
        validate_session_id(session_id)
        kids = [s for s in self.list_sessions() if s["parent_id"] == session_id]
        return kids[::-1]

    def lineage(self, session_id: str) -> List[Dict[str, Any]]:
        """从根到该节点的摘要链。沿 parent_id 逐个读文件（不扫描整个目录，深度多少就读多少个）；
        祖先已删除或读不了时，从能找到的最上层开始。"""
        chain: List[Dict[str, Any]] = []
        seen: set = set()
        current: Optional[str] = validate_session_id(session_id)
        while current and current not in seen:   # seen 挡住人为改坏的环
            seen.add(current)
            try:   # 第一个 ID 上面已经检查过；之后的 parent_id 都来自检查过的文件
                chain.append(self._summary(self._file_of(current)))
            except FileNotFoundError:
                break
            except SessionError as exc:
                if not chain:
                    raise
                log.warning("会话 %s 的祖先无法读取，路径从这里截断：%s", session_id, printable(exc))
                break
            current = chain[-1]["parent_id"]
        return chain[::-1]

    def render_tree(self, root_id: Optional[str] = None) -> str:
        """整棵会话树（或以 root_id 为根的子树）的文字图：ID、标题、消息数、每个分支新增了什么。
        标题经 printable() 处理，缩进最多 MAX_TREE_INDENT 层：每个节点一行，几百个字以内。"""
        index = {s["session_id"]: s for s in self.list_sessions()}
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
            if root["session_id"] not in seen:
                _render_subtree(root, kids, seen, lines)
        return "\n".join(lines) if lines else "（还没有会话）"

    def check(self) -> List[Problem]:
        """列出仓库里的全部问题：坏文件、读不了的条目（含悬空链接）、更新版本的文件、父节点不在的分支、
        真正残留的临时文件。扫描途中消失的文件不算问题；正在写的临时文件不算残留。从不修改任何文件。"""
        problems, parents = [], {}
        for fname in sorted(os.listdir(self.storage_dir)):
            path = os.path.join(self.storage_dir, fname)
            if fname.endswith(".tmp"):
                problems += _check_temp(path)
            elif _is_session_name(fname):
                summary = self._check_entry(path, fname, problems)
                if summary is not None:
                    parents[summary["session_id"]] = summary["parent_id"]
        for sid, parent in sorted(parents.items()):
            if parent and parent not in parents:
                problems.append(Problem("missing_parent", self._path(sid),
                                        f"会话 {sid} 的父会话 {parent} 不在仓库中（可能已删除，历史仍完整保留在本文件）"))
        return problems

    def resume(self, session_id: str, workspace: Optional[str] = None) -> Tuple[SessionNode, List[str]]:
        """读档并与工作区对账：返回 (节点, 差异说明)。只对比调用方选定的目录（参数 workspace，
        或 SessionStore(workspace=...)），从不去快照会话文件里写着的目录——文件可能来自别人。
        会话没有快照时差异为空列表；有快照但没选目录时，差异里写明没有对账。"""
        node = self.load(session_id)
        if node is None:
            raise SessionNotFound(f"未找到会话: {session_id}")
        if not node.workspace:
            return node, []
        folder = workspace if workspace is not None else self.workspace
        if folder is None:
            return node, ["未指定工作区目录，没有与存档时的代码对账（用 SessionStore(workspace=...) "
                          "或 resume(..., workspace=...) 指定）"]
        folder = _absolute_folder(folder, "工作区目录")
        return node, s11_workspace.drift(node.workspace, folder, exclude=[self.storage_dir])

    # ── 内部：编码、修订号核对、摘要缓存、回收站 ───────────────────────────────────────────
    def _encode(self, session: SessionNode) -> Dict[str, Any]:
        """校验节点并拼出要写的字典：version 与 revision 放在最前面，打开文件第一眼就能看到。"""
        validate_session_id(session.session_id)
        if session.parent_id is not None:
            validate_session_id(session.parent_id)
        if not isinstance(session.title, str):
            raise InvalidMessage(f"会话 {session.session_id} 的 title 必须是字符串")
        where = f"会话 {session.session_id}："
        validate_messages(session.messages, where)
        if session.source is not None and not isinstance(session.source, dict):
            raise InvalidMessage(f"{where}source 必须是字典或 None")
        if self.workspace is not None:
            session.workspace = s11_workspace.snapshot(self.workspace, exclude=[self.storage_dir])
        return {"version": FORMAT_VERSION, "revision": session.revision + 1, **session.to_dict(),
                "created_ns": session.created_ns}

    def _check_revision(self, path: str, session: SessionNode) -> None:
        """锁内：磁盘上这份文件现在的修订号必须等于节点读入时的修订号，否则 ConflictError。

        读的是文件本身，不是 (inode, 大小, 修改时间) 缓存——ext4 会复用 inode，粗粒度时钟下两次同样大小的
        保存看起来一模一样。字节与本实例上次读到或写下的完全相同（sha256）时，修订号就是当时那个；
        否则完整解析（坏文件、新版本文件在这里抛错，所以绝不会被覆盖）。"""
        try:
            raw, _ = read_regular_file(path)
        except FileNotFoundError:
            on_disk = 0
        except OSError as exc:
            raise _unreadable(path, exc) from None
        else:
            digest = hashlib.sha256(raw).digest()
            known = self._known.get(path)
            if known is not None and known[0] == digest:
                on_disk = known[1]
            else:
                data = decode_session(raw, path)
                self._known[path] = (digest, data["revision"])
                on_disk = data["revision"]
        if on_disk != session.revision:
            raise ConflictError(
                f"会话 {session.session_id} 在你读入（修订 {session.revision}）之后已被保存为修订 "
                f"{on_disk}；请重新 load() 后再追加，否则会抹掉别人的消息")

    def _summary(self, path: str) -> Dict[str, Any]:
        """一个文件的摘要；按 (inode, 大小, 修改时间) 缓存，目录很大时 list 不必每次重新解析。"""
        try:
            key = _stat_key(os.lstat(path))
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise _unreadable(path, exc) from None
        cached = self._summary_cache.get(path)
        if cached and cached[0] == key:
            return dict(cached[1])
        found = read_session_file(path)
        return dict(self._remember(path, found.data, found.info, found.digest))

    def _remember(self, path: str, data: Dict[str, Any], info: os.stat_result, digest: bytes) -> Dict[str, Any]:
        messages = data.get("messages", [])
        summary = {"session_id": data["session_id"], "title": data.get("title", "未命名会话"),
                   "parent_id": data.get("parent_id"), "message_count": len(messages),
                   "created_at": data.get("created_at") or "", "fork_point": data.get("fork_point"),
                   "revision": data.get("revision", 0), "created_ns": data.get("created_ns", 0),
                   "first_added": _first_added(messages, data.get("fork_point")),
                   # 导入的节点是否是 Agent 当前停住的那一端（会话树浏览器的“◀ 活动端”，不必逐个读文件）
                   "active_end": isinstance(data.get("source"), dict) and data["source"].get("active_end") is True}
        self._summary_cache[path] = (_stat_key(info), summary)
        self._known[path] = (digest, summary["revision"])
        return summary

    def _forget(self, path: str) -> None:
        self._summary_cache.pop(path, None)
        self._known.pop(path, None)

    def _check_entry(self, path: str, fname: str, problems: List[Problem]) -> Optional[Dict[str, Any]]:
        """check() 的一个 *.json 条目：读得了返回摘要，读不了往 problems 里记一条（消失了什么都不记）。"""
        try:
            summary = self._summary(path)
        except FileNotFoundError:
            return None   # 扫描途中被删掉：不是问题
        except UnsupportedVersion as exc:
            problems.append(Problem("newer_version", path, str(exc)))
            return None
        except UnreadableSession as exc:
            problems.append(Problem("unreadable", path, str(exc)))
            return None
        except SessionError as exc:
            problems.append(Problem("corrupt", path, str(exc)))
            return None
        if fname != summary["session_id"] + ".json":
            problems.append(Problem("stray_file", path, f"文件名与其中的 session_id {summary['session_id']} 不一致"))
        return summary

    def _remove_live_file(self, path: str, session_id: str, purge: bool) -> bool:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return False
        if not stat.S_ISREG(mode):
            raise UnreadableSession(f"{path} 不是会话文件（{entry_kind(path)}），仓库不删除它，请手动处理")
        if purge:
            os.remove(path)
        else:
            trash = self._trash_dir()
            os.makedirs(trash, exist_ok=True)
            os.replace(path, os.path.join(trash, f"{session_id}.{time.time_ns()}.json"))
        return True

    def _trash_dir(self) -> str:
        return os.path.join(self.storage_dir, TRASH_DIR)

    def _trash_names(self) -> List[str]:
        try:
            return sorted(os.listdir(self._trash_dir()))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _trash_copies(self, session_id: str) -> List[str]:
        """回收站里这个会话的全部副本，旧的在前：'<id>.<删除时的纳秒>.json'。"""
        found = [(int(m.group(2)), name) for name in self._trash_names()
                 if (m := _TRASH_NAME.fullmatch(name)) and m.group(1) == session_id]
        return [name for _, name in sorted(found)]

    def _trashed_ids(self) -> List[str]:
        return sorted({m.group(1) for name in self._trash_names() if (m := _TRASH_NAME.fullmatch(name))})

    def _remove_from_trash(self, session_id: str) -> int:
        removed = 0
        for name in self._trash_copies(session_id):
            try:
                os.remove(os.path.join(self._trash_dir(), name))
                removed += 1
            except FileNotFoundError:
                pass
        return removed


# ── 3️⃣ 每条工程建议一个小函数 ────────────────────────────────────────────────────────────────
# 📛 ID 检查：ID 会变成文件名，所以在拼任何路径之前先检查
def validate_session_id(session_id: Any) -> str:
    """在拼任何路径之前检查 ID：'5d38f60f4c00' 通过，'../x'、'a/b'、''、'CON' 抛 InvalidSessionId。"""
    if not isinstance(session_id, str) or not _ID_PATTERN.fullmatch(session_id):
        shown = printable(repr(session_id)[:80])
        raise InvalidSessionId(f"非法会话 ID {shown}：只允许 1–{MAX_ID_LENGTH} 个字母、数字、- 或 _")
    if session_id.upper() in _WINDOWS_RESERVED:
        raise InvalidSessionId(f"非法会话 ID {session_id!r}：这是 Windows 保留的设备名")
    return session_id


# ✉️ 消息检查：存进去的必须能原样读回来
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


def check_nesting(raw: bytes, messages: List[Dict[str, Any]], where: str = "") -> None:
    """保存的 JSON 里嵌套超过 MAX_NESTING 层就拒绝：这样的文件今天存得下，明天在更深的调用栈里就读不回来。

    文件用 indent=2 写，字符串里的换行都被转义成 \\n，所以一行的缩进就是它的嵌套层数：消息的键缩进 6 格，
    算第 1 层（{"role": "user", "content": "hi"}）；内容块的键算第 3 层。在字节里找一行缩进超过上限的，
    10 MB 约 1 毫秒；找到了才逐条消息确认是哪一条。"""
    if _TOO_DEEP_LINE not in raw:
        return
    alone = _TOO_DEEP_LINE.decode()[:-4]   # 单独编码一条消息时，它的键缩进 2 格而不是 6 格
    number = next((i for i, message in enumerate(messages, 1) if alone in _dumps_alone(message)), 0)
    what = f"第 {number} 条消息" if number else "工作区快照或 source"
    raise InvalidMessage(f"{where}{what}嵌套超过 {MAX_NESTING} 层，存下来会读不回来")


_TOO_DEEP_LINE = b"\n" + b" " * (2 * (MAX_NESTING + 3))


def _dumps_alone(message: Dict[str, Any]) -> str:
    try:
        return json.dumps(message, indent=2)
    except RecursionError:
        return "\n" + " " * (2 * (MAX_NESTING + 1))   # 深到编码器都放弃了：当然超过上限


# 🔢 版本迁移：旧格式的字典 → 新格式的字典，一步一个函数
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
        raise CorruptSession(f"{source}：version 字段无效 {printable(repr(version)[:40])}")
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


# 📦 编码与解码：字节 ⇄ 字典
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_session(payload: Dict[str, Any], session_id: str) -> bytes:
    """字典 → UTF-8 字节，并确认它能原样读回来：

    * 孤立代理项（半个 emoji，真实记录里见过）写成 \\udXXX 转义：{"t": "cut \\ud83d"} 读回来仍是 "cut \\ud83d"；
    * 嵌套太深（check_nesting）或含有 JSON 存不了的值时抛 InvalidMessage，写明会话和第几条消息。"""
    where = f"会话 {session_id} 的"
    try:
        text = json.dumps(payload, ensure_ascii=False, indent=2)
    except RecursionError:
        raw = b"\n" + b" " * (2 * (MAX_NESTING + 3))     # 编码器都递归不下去了：交给 check_nesting 说明是哪条
    except (TypeError, ValueError):
        number = _first_unencodable(payload.get("messages", []))
        what = f"第 {number} 条消息" if number else "标题、工作区快照或 source"
        raise InvalidMessage(f"{where}{what}含有无法存成 JSON 的值") from None
    else:
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:   # JSON 的结构字符都是 ASCII，代理项只可能在字符串里：原地换成转义
            raw = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")
    check_nesting(raw, payload.get("messages", []), where)
    return raw


def _first_unencodable(messages: List[Any]) -> int:
    for number, message in enumerate(messages, 1):
        try:
            json.dumps(message)
        except (TypeError, ValueError, RecursionError):
            return number
    return 0


def decode_session(raw: bytes, path: str) -> Dict[str, Any]:
    """UTF-8 字节 → 升级到当前版本、字段检查过的字典；读不懂一律 CorruptSession（文件不动）。"""
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorruptSession(f"会话文件已损坏：{path}：第 {exc.start + 1} 个字节起不是 UTF-8 文本") from None
    except json.JSONDecodeError as exc:
        raise CorruptSession(f"会话文件已损坏（可能写入被中断）：{path}：第 {exc.lineno} 行第 {exc.colno} 列"
                             f"无法按 JSON 解析") from None
    except RecursionError:
        raise CorruptSession(f"会话文件已损坏：{path}：嵌套层数太深，无法解析") from None
    except ValueError:   # 比如上万位的整数
        raise CorruptSession(f"会话文件已损坏：{path}：含有无法解析的数值") from None
    if isinstance(data, dict):
        data = migrate(data, path)
    _check_fields(data, path)
    return data


def read_session_file(path: str) -> SessionFile:
    """读一个会话文件（只读普通文件，见 s11_storage.read_regular_file）；不存在抛 FileNotFoundError。"""
    try:
        raw, info = read_regular_file(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _unreadable(path, exc) from None
    return SessionFile(decode_session(raw, path), info, hashlib.sha256(raw).digest())


def _unreadable(path: str, exc: OSError) -> UnreadableSession:
    if isinstance(exc, NotRegularFile):
        return UnreadableSession(f"{path} 不是会话文件：它是{exc.kind}；仓库不打开、不覆盖它，请手动处理")
    return UnreadableSession(f"无法读取会话文件 {describe_os_error(exc)}")


# 🖨️ 给终端看的文字：控制字符、转义序列、换行、双向文字控制符一律显示成可见的转义
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_UNPRINTABLE_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e"
                                     "\u2066-\u2069\ud800-\udfff]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def printable(text: Any, *, keep_newlines: bool = False) -> str:
    """命令行打印会话里的任何文字都先过这里：标题里的换行伪造不了树的行，ESC 序列清不了屏，
    U+202E 翻转不了后面的字。keep_newlines=True 保留换行和制表符（导出的 Markdown 用）。

    'a\\nb\\x1b[31m\\u202e' -> 'a\\\\nb\\\\u001b[31m\\\\u202e'"""
    pattern = _UNPRINTABLE_KEEP_LINES if keep_newlines else _UNPRINTABLE
    return pattern.sub(_visible_escape, str(text))


def _visible_escape(match: "re.Match[str]") -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


# ── 小工具 ─────────────────────────────────────────────────────────────────────────────────
def _absolute_folder(folder: Any, what: str) -> str:
    """'sessions' -> '/当前目录/sessions'：构造时就定下来，之后 chdir 不会让仓库换地方。"""
    if not isinstance(folder, (str, os.PathLike)) or isinstance(os.fspath(folder), bytes) \
            or not os.fspath(folder):
        raise SessionError(f"{what}必须是非空的路径字符串，收到 {printable(repr(folder)[:80])}")
    return os.path.abspath(os.fspath(folder))


def _is_session_name(fname: str) -> bool:
    return fname.endswith(".json") and not fname.startswith(".")


def _stat_key(info: os.stat_result) -> Tuple[int, int, int]:
    """(inode, 大小, 修改时间)：只给列表摘要做缓存键；修订号核对从不依赖它。"""
    return info.st_ino, info.st_size, info.st_mtime_ns


def _check_temp(path: str) -> List[Problem]:
    """check() 的一个 *.tmp 条目：只有真正没人要的才报告（见 s11_storage.is_abandoned_temp）。"""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [Problem("unreadable", path, describe_os_error(exc))]
    if not stat.S_ISREG(mode):
        return [Problem("unreadable", path, f"名字像临时文件，却是{entry_kind(path)}；请手动处理")]
    if is_abandoned_temp(path):
        return [Problem("temp_file", path, "写入被中断留下的临时文件（没有写入者锁着它，也有一阵没动了），可以删除")]
    return []


def _content_text(content: Any) -> str:
    """消息内容的纯文字：字符串原样；内容块取 text / name / type。"""
    if isinstance(content, list):
        content = " ".join(str(b.get("text") or b.get("name") or b.get("type", "")) for b in content)
    return " ".join(str(content or "").split())


def _first_added(messages: List[Dict[str, Any]], fork_point: Optional[int]) -> str:
    """分支新增的第一条消息的前 24 个字，用在树状图里说明“这个分支做了什么”。"""
    if not fork_point or fork_point >= len(messages):
        return ""
    text = _content_text(messages[fork_point].get("content"))
    return text[:24] + ("…" if len(text) > 24 else "")


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _describe(summary: Dict[str, Any]) -> str:
    """'标题 [id] 7 条（自第 5 条分叉，+2：方案 A…）'；标题和新增内容都经过 printable()。"""
    title = _shorten(printable(summary["title"]), MAX_TITLE_SHOWN)
    text = f"{title} [{summary['session_id']}] {summary['message_count']} 条"
    if summary["fork_point"] is not None:
        added = summary["message_count"] - summary["fork_point"]
        text += f"（自第 {summary['fork_point']} 条分叉，+{added}"
        text += f"：{printable(summary['first_added'])}）" if summary["first_added"] else "）"
    return text


def _render_subtree(root: Dict[str, Any], kids: Dict[Optional[str], List[Dict[str, Any]]], seen: set,
                    lines: List[str]) -> None:
    """显式栈的深度优先遍历：几千层的分叉链也不会爆递归。超过 MAX_TREE_INDENT 层后缩进不再变宽，
    改在行首标出层数：'│   │ … …（第 4999 层）└── 标题 [id] 1 条'。"""
    stack = [(root, 0, "", "")]   # (节点, 层数, 本行前缀, 子节点的缩进)
    while stack:
        node, depth, lead, indent = stack.pop()
        if node["session_id"] in seen:
            continue
        seen.add(node["session_id"])
        lines.append(lead + _describe(node))
        children = kids.get(node["session_id"], [])
        deep = depth + 1 > MAX_TREE_INDENT
        marker = f"…（第 {depth + 1} 层）" if deep else ""
        for i, child in reversed(list(enumerate(children))):
            last = i == len(children) - 1
            child_indent = indent if deep else indent + ("    " if last else "│   ")
            stack.append((child, depth + 1, indent + marker + ("└── " if last else "├── "), child_indent))


# ── 演示 ───────────────────────────────────────────────────────────────────────────────────
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


# ── 命令行：python code/s11_session.py [--dir DIR] [demo|tree|show|export|check|import|empty-trash] ─────
# 会话里的文字一律经 printable() 再打印；任何错误都是一句中文，不出 Traceback。
def _cmd_demo(store: SessionStore, args) -> int:
    result = demo_tree_branching(store)
    print(f"会话文件已写入 {printable(store.storage_dir)}/\n")
    print(store.render_tree(result["main_id"]), "\n")
    print(printable(result["export_md"], keep_newlines=True))
    return 0


def _cmd_tree(store: SessionStore, args) -> int:
    print(store.render_tree(args.session_id))   # render_tree 里的标题已经过 printable()
    return 0


def _cmd_show(store: SessionStore, args) -> int:
    node = store.load(args.session_id)
    if node is None:
        raise SessionNotFound(f"未找到会话: {args.session_id}")
    print(" → ".join(f"{printable(s['title'])} [{s['session_id']}]" for s in store.lineage(args.session_id)))
    for i, msg in enumerate(node.messages, 1):
        print(f"{i:>4}. {printable(msg['role'])}: {printable(_content_text(msg.get('content'))[:100])}")
    return 0


def _cmd_export(store: SessionStore, args) -> int:
    export = store.export_html if args.html else store.export_markdown
    if store.load(args.session_id) is None:
        raise SessionNotFound(f"未找到会话: {args.session_id}")
    print(printable(export(args.session_id, redact=not args.no_redact), keep_newlines=True))
    return 0


def _cmd_check(store: SessionStore, args) -> int:
    problems = store.check()
    for problem in problems:
        print(f"[{problem.kind}] {printable(problem.path)}\n    {printable(problem.detail)}")
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


def _cmd_empty_trash(store: SessionStore, args) -> int:
    print(f"🧹 回收站已清空：删除了 {store.empty_trash()} 个文件")
    return 0


COMMANDS = {"demo": _cmd_demo, "tree": _cmd_tree, "show": _cmd_show, "export": _cmd_export, "check": _cmd_check,
            "import": _cmd_import, "empty-trash": _cmd_empty_trash}


def _parser():
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
    sub.add_parser("check", help="检查坏文件、读不了的条目、新版本文件、父节点缺失、残留临时文件")
    sub.add_parser("import", help="导入 Claude Code / Pi 的会话记录（文件或文件夹）").add_argument(
        "paths", nargs="+", metavar="PATH")
    sub.add_parser("empty-trash", help="清空回收站（被删会话的副本全部真正删除）")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command or "demo"](SessionStore(args.dir), args)
    except SessionError as exc:
        message = str(exc)
    except OSError as exc:
        message = describe_os_error(exc)
    except KeyboardInterrupt:
        print("已中断", file=sys.stderr)
        return 130
    except Exception as exc:   # 最后一道防线：读者看到的是一句中文，不是 Traceback
        log.debug("命令行内部错误", exc_info=True)
        print(f"内部错误（{type(exc).__name__}）：这是程序的缺陷，请把命令和这句话报告给维护者", file=sys.stderr)
        return 3
    print(f"错误：{printable(message)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
