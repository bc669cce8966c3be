"""s11_session.py — 会话持久化与多分支管理（第 8.11 节）：SessionNode + SessionStore

    修复登录服务内存泄漏 [5d38f60f4c00] 5 条            sessions/
    ├── · 分支 A [4d67e2e6b66c] 7 条 (+2)                ├── 5d38f60f4c00.json   一个节点一个文件
    └── · 分支 B [0994dd416b46] 9 条 (+4) ← 恢复续跑     ├── 4d67e2e6b66c.json
                                                         ├── 0994dd416b46.json
                                                         ├── .lock               写入时的互斥锁
                                                         ├── .trash/             delete() 的回收站
                                                         └── .chunks/            大会话共用的历史块

关键洞察：一个节点就是一份完整的消息历史——分叉时继承父节点的前 k 条消息，
所以删掉任何节点都不会让别的分支丢失历史，而“存档”只需要一次原子替换。
大会话（消息超过 64 KiB）的历史存在按内容命名的块里：前缀相同就是同一块，分叉和续写只写新的部分；
书中代码打开这样的文件会直接报错（它不是一个 JSON 文档），绝不会读到一段被截短的历史。

本文件按章节的顺序读：SessionNode，SessionStore 的 save / create_session / load / list_sessions / fork /
export_markdown / delete，然后是章节之外的方法，最后是 demo_tree_branching。书里要求、打印版来不及写的
每一件事，在这里都只是一次调用：

  * 版本与迁移、ID 和消息检查、编码解码、错误家族 ........ s11_format（文件格式写在它的文档里）
  * 写入中断也不坏：临时文件 + fsync + os.replace、目录锁 ... s11_storage
  * 不丢轮次：锁内核对磁盘上的 revision，过期的节点抛 ConflictError ... SessionStore._check_revision
  * 删除可恢复：.trash/ 的样子 ................................ s11_trash
  * 大会话只写新的部分：version 4 的块、续写只编码新的、清理没人引用的块 ... s11_chunks（布局写在它的文档里）
  * 会话树、导出前脱敏、会话 ≠ 代码 ............................ s11_tree、s11_export + s11_redact、s11_workspace
  * 分叉 + 收敛：compare / converge / label（version 5 的 converged_from）... s11_converge
  * 体检：check() 列出的坏文件、残留、缺了或坏了的块 .............. s11_check
  * 每一步都能撤销、什么都不丢：只追加的操作日志、留下的每一版 ...... s11_journal、s11_history

保证：每次 save() 全有或全无，kill -9 之后每个文件要么是上一次的、要么是这一次的；save() 写之前跑 load()
跑的同一个字段检查（s11_format.check_fields），所以写下的每个文件别的进程都读得了；读不懂的文件（截断的、
更新版本的、嵌套太深的、FIFO、符号链接）原样保留并报告，从不覆盖；块缺了或坏了，load() 抛 ChunkError 点名那一块。
已知限制：小会话每次保存重写整个文件（大会话重写头和不到 64 KiB 的尾部）；不做跨机器同步与合并；不加密（导出前脱敏）；
摘要按 (inode, 大小, 修改时间) 缓存，同一时钟刻内被原地改写成同样大小的文件可能短暂显示旧摘要（修订号核对总是读文件）。
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
import uuid
from typing import Any, Dict, Iterator, List, Optional, Tuple

import s11_check  # 体检：check() 列出的问题
import s11_chunks  # 大会话的块
import s11_converge  # 对比、收敛、标签
import s11_export  # Markdown / HTML 渲染
import s11_history  # 留下每一版、撤销 / 重做（日志在 s11_journal）
import s11_journal  # 只追加的操作日志
import s11_trash  # 回收站的样子
import s11_tree  # 从摘要画会话树
import s11_workspace  # 会话 ≠ 代码：保存时记下工作区，恢复前对账
from s11_format import (  # noqa: F401  这些名字也从本模块导出：章节读者只需 import s11_session
    FORMAT_VERSION, MAX_NESTING, MIGRATIONS, ChunkError, ConflictError, CorruptSession, InvalidMessage,
    InvalidSessionId, SessionError, SessionNotFound, UnreadableSession, UnsupportedVersion, encode_session,
    is_session_name, migrate, payload_key, same_payload, unreadable, validate_messages, validate_session_id)
from s11_check import Problem  # noqa: F401  check() 的结果，也从本模块导出
from s11_redact import redact  # noqa: F401  导出前脱敏：redact(text) -> str
from s11_storage import DirectoryLock, PendingWrite, entry_kind, fsync_dir, read_regular_file, stat_key
from s11_text import printable

__all__ = ["SessionNode", "SessionStore", "demo_tree_branching", "Problem", "ROLE_ICONS", "redact", "printable",
           "FORMAT_VERSION", "MIGRATIONS", "migrate", "validate_session_id", "validate_messages",
           "SessionError", "InvalidSessionId", "InvalidMessage", "CorruptSession", "UnreadableSession",
           "ChunkError", "UnsupportedVersion", "ConflictError", "SessionNotFound"]

log = logging.getLogger(__name__)
ROLE_ICONS = s11_export.ROLE_ICONS   # 角色 → 图标，导出与工作台共用一份


# ── 1️⃣ 树节点 SessionNode：一条可被分叉的消息历史 ────────────────────────────────────────
class SessionNode:
    """树状会话节点：一条完整消息历史，可被 fork 分叉出多个子分支"""

    def __init__(self, session_id=None, title="未命名会话", parent_id=None,
                 messages=None, created_at=None, *, fork_point=None, workspace=None, source=None,
                 converged_from=None, created_ns=None):
        self.session_id = session_id or uuid.uuid4().hex[:12]   # 🆔 全局唯一 ID
        self.title = title
        self.parent_id = parent_id                              # 🌳 父分支 ID，None 为根会话
        self.messages = messages if messages is not None else []
        self.created_at = created_at or time.strftime("%Y-%m-%d %H:%M:%S")
        self.fork_point = fork_point    # 分叉时继承了父节点的前几条消息（根会话为 None）
        self.workspace = workspace      # 保存时的代码状态（见 s11_workspace），可为 None
        self.source = source            # 从哪个 Agent 的记录导入（见 s11_import），手写的会话为 None
        self.converged_from = list(converged_from or [])   # 🔀 收敛节点：它收敛了哪些分支（见 s11_converge）
        self.revision = 0               # 读入时文件的修订号；0 = 从未保存过
        self.created_ns = _unique_ns() if created_ns is None else created_ns   # 同一秒内创建的会话也能稳定排序

    def to_dict(self) -> Dict[str, Any]:
        """📦 序列化为 JSON 友好字典（存档）"""
        return {"session_id": self.session_id, "title": self.title,
                "parent_id": self.parent_id, "messages": self.messages,
                "created_at": self.created_at, "fork_point": self.fork_point,
                "workspace": self.workspace, "source": self.source,
                **({"converged_from": self.converged_from} if self.converged_from else {})}   # 只有收敛节点有

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "SessionNode":
        """♻️ 从字典还原节点（读档）"""
        node = cls(session_id=data.get("session_id"), title=data.get("title", "未命名会话"),
                   parent_id=data.get("parent_id"), messages=data.get("messages", []),
                   created_at=data.get("created_at"), fork_point=data.get("fork_point"),
                   workspace=data.get("workspace"), source=data.get("source"),
                   converged_from=data.get("converged_from"), created_ns=data.get("created_ns", 0))
        node.revision = data.get("revision", 0)
        return node

    def __repr__(self) -> str:
        return f"SessionNode({self.session_id!r}, {self.title!r}, {len(self.messages)} 条消息)"


# ── 2️⃣ 会话仓库 SessionStore：存档、读档、分叉、导出 ─────────────────────────────────────────
class SessionStore:
    """🗄️ 会话仓库：以 JSON 文件持久化会话树，支持存档/读档/分叉/导出"""
    Node = SessionNode   # 读出来的节点类型：写在仓库之上的模块（s11_history 的 load_revision）经由它新建节点

    def __init__(self, storage_dir: str = "sessions", *, workspace: Optional[str] = None,
                 durable: bool = True, chunk_threshold: float = s11_chunks.BIG_SESSION_BYTES,
                 chunk_bytes: float = s11_chunks.CHUNK_BYTES):
        self.storage_dir = _absolute_folder(storage_dir, "会话目录")   # 之后 chdir 也不会换地方
        self._prefix = os.path.join(self.storage_dir, "")
        self.workspace = _absolute_folder(workspace, "工作区目录") if workspace is not None else None
        self.durable = durable
        self.chunk_threshold = chunk_threshold   # 消息不到这么多字节的会话写成自带全部消息的 version 3
        self.chunk_bytes = chunk_bytes           # 大会话的块大小（math.inf 阈值 = 一律自带完整前缀）
        os.makedirs(self.storage_dir, exist_ok=True)  # 📁 自动创建会话目录
        self._lock = DirectoryLock(self.storage_dir)
        self._chunks = s11_chunks.ChunkStore(self.storage_dir, durable)
        self._batch = threading.local()           # save_many() 期间本线程的 s11_chunks.Batch
        self._summary_cache: Dict[str, Tuple[tuple, tuple]] = {}   # 唯一的缓存：路径 → (stat_key, 摘要的值)，见 _remember

    def _path(self, session_id: str) -> str:
        return self._file_of(validate_session_id(session_id))   # 📛 拼路径之前先检查 ID

    def save(self, session: SessionNode) -> None:
        """💾 存档：把会话节点写回磁盘（原子写入；过期节点抛 ConflictError；大会话只写新的块）"""
        path = self._path(session.session_id)
        batch = getattr(self._batch, "current", None)
        payload, plan = self._plan(session, batch)   # 先校验、编码：出错时什么都没写
        with PendingWrite(path, plan.raw, self.durable) as pending:   # 写临时文件 + fsync：慢，放在锁外
            if plan.chunks:   # 大会话缺的块（临时文件里已写明要用哪些）；小会话（version 3）没有块
                self._write_new_chunks(path, session, plan.chunks, batch)
            with self._lock:                                     # 锁内只做：核对修订号 + 确认块都在 + 原子改名
                self._check_revision(path, session)
                if plan.chunks:
                    self._chunks.ensure(plan.chunks)
                info = pending.stat()   # 改名之后 path 就是这个文件：缓存键与随后 lstat(path) 得到的相同
                unversioned = s11_history.keep(self.storage_dir, path, session.session_id, session.revision,
                                               self.durable)   # 换掉之前留下旧的一版
                pending.commit()
                s11_history.saved(self, session, session.revision, payload["revision"], unversioned)   # 记进日志
        # version 4：摘要要的消息条数、first_added、标签在头里都已算好，不必再过一遍全部消息
        self._remember(path, payload if plan.head is None else {**payload, "messages": None, **plan.head}, info)
        if self.durable:
            fsync_dir(self.storage_dir)   # 让改名本身也落盘
        session.revision = payload["revision"]
        session._stored = plan.stored   # 磁盘上的块：下一次保存只编码其后的部分（见 s11_chunks）

    def create_session(self, title: str, messages: Optional[List[Dict[str, Any]]] = None) -> str:
        """🆕 新建根会话并立即存档，返回 session_id"""
        session = SessionNode(title=title, messages=messages or [])
        self.save(session)
        return session.session_id

    def load(self, session_id: str) -> Optional[SessionNode]:
        """📂 读档：从磁盘恢复指定会话（断点续跑）；不存在返回 None，损坏抛 CorruptSession"""
        loaded = self._load(session_id)
        return loaded and loaded[0]

    def _load(self, session_id: str) -> Optional[Tuple[SessionNode, Dict[str, Any]]]:
        """load() 本身，另外给出这次读到的摘要：导出拿它当分支路径的最后一段。"""
        path = self._path(session_id)
        try:   # 大会话：逐块核对 sha256 后拼回完整的消息列表
            found = self._chunks.read(path, getattr(self._batch, "current", None))
        except FileNotFoundError:
            return None
        summary = self._remember(path, found.data, found.info)
        if found.data["session_id"] != session_id:   # 被复制或改名的文件：存回去会写到另一个文件上
            raise CorruptSession(f"{path}：文件里的 session_id 是 {found.data['session_id']}，与文件名不一致")
        node = SessionNode.from_dict(found.data)
        node._stored = found.stored   # 磁盘上的块：续写后保存只编码新的部分（见 s11_chunks）
        return node, summary

    def load_after(self, session_id: str, known_chunks: List[str]) -> Optional[Tuple[SessionNode, int, List[str]]]:
        """整棵树导出用的 load()：开头与 known_chunks（父节点的块名，按顺序）逐个相同的块不读——块按内容命名，
        名字相同，消息就相同。返回 (节点, 没读的条数 k, 它自己的块名)：节点的 messages 只有第 k 条之后的那些。
        深的分支链因此每块只读一次，而不是每个节点把整段历史再读一遍。不存在返回 None。"""
        path = self._path(session_id)
        try:
            found = self._chunks.read(path, skip=known_chunks)
        except FileNotFoundError:
            return None
        if found.data["session_id"] != session_id:
            raise CorruptSession(f"{path}：文件里的 session_id 是 {found.data['session_id']}，与文件名不一致")
        names = [name for name, _ in found.data.get("chunks", [])]
        return SessionNode.from_dict(found.data), found.data.get("skipped", 0), names

    def list_sessions(self) -> List[Dict[str, Any]]:
        """📋 返回全部会话摘要（按创建时间倒序；读不了的条目跳过并记日志，用 check() 查看）。
        只检查摘要用到的字段：消息本身坏了的文件照样列出，load() 时抛 CorruptSession（s11_format.decode_listing）"""
        summaries = []
        with os.scandir(self.storage_dir) as entries:   # 最后按创建先后排序（ID 兜底，顺序唯一）
            found = [entry for entry in entries if is_session_name(entry.name)]
        if len(self._summary_cache) > len(found):   # 缓存有界：只留目录里现在还有的文件
            for path in self._summary_cache.keys() - {entry.path for entry in found}:
                self._summary_cache.pop(path, None)
        for entry in found:
            try:
                summaries.append(self._summary(entry.path, entry))
            except FileNotFoundError:
                continue   # 刚被别的线程删掉
            except SessionError as exc:
                log.warning("跳过无法读取的会话文件：%s", printable(exc))   # 文件名可能带控制字符
        summaries.sort(key=s11_tree.creation_order, reverse=True)
        return summaries

    def fork(self, parent_id: str, new_messages: Optional[List[Dict[str, Any]]] = None, *,
             at: Optional[int] = None, title: Optional[str] = None) -> SessionNode:
        """🌿 分叉：继承父会话前 at 条（默认全部）历史并追加新消息，生成指向父节点的子分支"""
        parent = self.load(parent_id)
        if parent is None:
            raise SessionNotFound(f"❌ 未找到父会话: {parent_id}，无法分叉！")
        keep = len(parent.messages) if at is None else at
        if isinstance(keep, bool) or not isinstance(keep, int) or not 0 <= keep <= len(parent.messages):
            raise SessionError(f"分叉位置 at={printable(repr(at)[:40])} 无效：会话 {parent_id} 有 "
                               f"{len(parent.messages)} 条消息，at 必须是 0 到 {len(parent.messages)} 的整数")
        child = SessionNode(title=title or f"{parent.title} · 分支", parent_id=parent.session_id,
                            messages=list(parent.messages[:keep]) + list(new_messages or []), fork_point=keep)
        child._stored = parent._stored   # 继承的前缀就是父节点的块：不再编码、不再算 sha256
        with s11_journal.operation(self, "fork", parent=parent.session_id, fork_point=keep):   # 日志里一行 fork
            self.save(child)   # 新 ID、修订 0：分叉永远不会冲突
        return child

    def export_markdown(self, session_id: str, *, redact: bool = True) -> str:
        """📤 把该会话 messages 渲染成可读 Markdown 文本（默认先脱敏；存储的会话不变）"""
        loaded = self._load(session_id)
        if loaded is None:
            return f"(未找到会话: {session_id})"
        session, summary = loaded   # 路径的最后一段就是刚读到的摘要：不必再 lstat 一次
        return s11_export.render_markdown(session.to_dict(), self._lineage(session_id, summary), redact=redact)

    def delete(self, session_id: str, *, purge: bool = False) -> bool:
        """🗑️ 删除指定会话：默认移进 .trash/（可 restore）；purge=True 连同回收站里的旧副本一起真正删除；子分支不受影响。返回是否删掉了什么。"""
        path = self._path(session_id)
        with self._lock:
            state = s11_history.live_state(self, session_id)   # 删之前是第几版
            removed = self._remove_live_file(path, session_id, purge)
            if purge:
                removed = s11_trash.remove_copies(self.storage_dir, session_id) > 0 or removed
                removed = s11_history.remove(self.storage_dir, session_id) > 0 or removed   # 各版也删
                self._chunks.remove_orphans()   # 只有它用过的块随之删掉；别的分支共用的块都还被引用着
            if removed:
                s11_history.deleted(self, session_id, state, purge)   # 记进日志
            if removed and self.durable:
                fsync_dir(self.storage_dir)
        self._summary_cache.pop(path, None)   # 摘要缓存里不留删掉的文件
        return removed

    # ── 章节之外：对比与收敛、标签（逻辑在 s11_converge）────────────────────────────────────────
    def compare(self, a_id: str, b_id: str) -> Dict[str, Any]:
        """⚖️ 对比同一棵树上的两个节点：最近的共同祖先、开头相同的条数、两边各自的后续、两边的工作区快照。
        不在同一棵树上时 ancestor 为 None，note 写明。"""
        return s11_converge.compare(self, a_id, b_id)

    def converge(self, chosen_id: str, other_ids: List[str], decision: str, *, carry: Any = (),
                 title: Optional[str] = None, revisions: Optional[Dict[str, int]] = None) -> SessionNode:
        """🔀 收敛：在选定的节点下新建一个孩子 = 它的全部历史 + 从其他分支带过来的消息（各带 origin）+ 读者写的决定；
        新节点记下 converged_from。已保存的文件一个都不改；输入不对抛中文错误，什么都不写。
        revisions：对比时看到的各节点修订号，之后有人保存过就 ConflictError（不在过期的对比上做决定）。"""
        return s11_converge.converge(self, chosen_id, other_ids, decision, carry=carry, title=title,
                                     revisions=revisions)

    def label(self, session_id: str, number: int, text: str, *, revision: Optional[int] = None) -> SessionNode:
        """🏷️ 给第 number 条消息（1 起）加标签（text 为空串 = 去掉标签）并保存；revision 过期抛 ConflictError。"""
        return s11_converge.set_label(self, session_id, number, text, revision=revision)

    # ── 章节之外：操作日志、每一版、撤销 / 重做：逻辑都在 s11_history（日志的格式在 s11_journal）──────────
    def journal(self, limit: int = 50) -> List[Any]:
        """最近 limit 个操作，新的在前：每项 (record, text)，text 是一句中文（见 s11_journal）。"""
        return s11_journal.newest(self.storage_dir, limit)[0]

    history = s11_history.revisions            # history(id)：一个会话的每一版（旧的在前，现在这一版 live=True）
    load_revision = s11_history.load_revision  # load_revision(id, revision)：只读的那一版
    undo = s11_history.undo                    # ↶ 撤销最近一个操作，什么都不丢；有人改过它就 ConflictError
    redo = s11_history.redo                    # ↷ 重做最近一次撤销的操作
    revert = s11_history.revert                # revert(id, revision)：把那一版存成新的一版

    # ── 章节之外：路径、HTML、回收站、会话树、体检、对账 ───────────────────────────────────────
    def path_of(self, session_id: str) -> str:
        """会话文件的路径（ID 先经过检查）。"""
        return self._path(session_id)

    def stamp_of(self, path: str) -> Optional[Tuple[int, int, int]]:
        """path_of() 那个文件的 (inode, 大小, 修改时间)，取自摘要缓存、不再 lstat：list_sessions() 每次都 lstat 核对它，
        load()、save() 记下刚读写的那一份；没见过 -> None。按文件缓存别的东西的（工作台的全文搜索）紧跟着 list_sessions() 拿它当键。"""
        cached = self._summary_cache.get(path)
        return cached[0] if cached else None

    def export_html(self, session_id: str, *, redact: bool = True) -> str:
        """📤 导出成单个离线 HTML 页面（内联 CSS、无脚本、无外链）"""
        loaded = self._load(session_id)
        if loaded is None:
            raise SessionNotFound(f"未找到会话: {session_id}")
        return s11_export.render_html(loaded[0].to_dict(), self._lineage(session_id, loaded[1]), redact=redact)

    def restore(self, session_id: str) -> bool:
        """♻️ 从回收站放回最近一次删除的版本；同名会话还在时拒绝（ConflictError），绝不覆盖。"""
        path = self._path(session_id)
        trash = s11_trash.trash_dir(self.storage_dir)
        with self._lock:
            copies = s11_trash.copies(self.storage_dir, session_id)
            if not copies:
                return False
            if os.path.lexists(path):
                raise ConflictError(f"会话 {session_id} 已存在，不能用回收站里的版本覆盖它")
            os.replace(os.path.join(trash, copies[-1]), path)
            s11_history.restored(self, session_id)   # 记进日志
            if self.durable:
                fsync_dir(self.storage_dir)   # 新名字落盘……
                fsync_dir(trash)              # ……旧名字的消失也落盘
        return True

    def empty_trash(self) -> int:
        """🧹 清空回收站：被删会话的每一份副本都真正删除。返回删掉了几个文件。"""
        with self._lock:
            removed = sum(s11_trash.remove_copies(self.storage_dir, session_id)
                          for session_id in s11_trash.trashed_ids(self.storage_dir))
            if removed and self.durable:
                fsync_dir(s11_trash.trash_dir(self.storage_dir))
            s11_history.trash_emptied(self)   # 不在了的会话的各版也删
            self._chunks.remove_orphans()
        return removed

    def remove_orphan_chunks(self) -> int:
        """🧹 删掉没有任何会话（包括回收站里的副本和正在保存的）引用的块，返回删了几块（见 s11_chunks）。"""
        with self._lock:
            return self._chunks.remove_orphans()

    def leftover_bytes(self) -> int:
        """清空回收站 / remove_orphan_chunks() 还会释放多少字节：被中断留下、没人要了的临时文件，和没人引用的块。"""
        with self._lock:
            return self._chunks.leftover_bytes()

    def bytes_to_write(self, nodes: List[SessionNode]) -> int:
        """依次保存这批节点会让仓库目录（普通文件）增加多少字节，什么都不写：会话文件按新文件的大小（换掉的
        旧文件留在 .history/，不腾出空间），加上操作日志的行，新块每块只算一次（共用的也只算一次）。与随后 save_many(nodes) 或逐个 save() 的实际增长相同，
        前提是其间没有别人写这个目录、工作区快照也没变。导入前检查空间限额用它。"""
        return sum(self.write_costs(nodes))

    def write_costs(self, nodes: List[SessionNode]) -> List[int]:
        """bytes_to_write 按节点拆开：第 i 项是依次保存到第 i 个节点时它新增的字节（一块新块算在第一个用它的节点上）。
        在 batch() 之内调用时共用那一批的编码（同一消息对象只编码一次）。"""
        batch, counted, costs = getattr(self._batch, "current", None) or s11_chunks.Batch(), set(), []
        for node in nodes:
            self._path(node.session_id)   # 先检查 ID（_plan 假定调用方检查过）
            payload, plan = self._plan(node, batch)
            batch.prepared[node.session_id] = (payload_key(payload), plan)   # 随后的 save() 照用（见 _plan）
            fresh = [chunk for chunk in plan.chunks if chunk[0] not in counted]
            counted.update(name for name, _ in fresh)
            costs.append(len(plan.raw) + self._chunks.bytes_to_add(fresh))   # 旧文件留在 .history/：不腾出空间
        journal = s11_journal.planned_bytes(self, [(n.session_id, n.revision, n.title) for n in nodes])   # 日志
        return [cost + line for cost, line in zip(costs, journal)]

    @contextlib.contextmanager
    def batch(self) -> Iterator[s11_chunks.Batch]:
        """在这之内依次 save() 的节点共用一个 s11_chunks.Batch（同一消息对象只编码一次，同一块只解析一次），调用方
        可以逐个处理每个节点的错误（导入器就是这样）。这之内 load() 的消息对象可能共用：只读，不要原地改。"""
        with self._batch_scope(), s11_journal.operation(self, "import"):   # 一批（导入一棵树）= 日志里一行
            yield self._batch.current

    def save_many(self, nodes: List[SessionNode]) -> None:
        """依次 save() 一批节点（写下的字节与逐个保存相同，同一消息对象只编码一次）；出错时前面的已保存。"""
        with self._batch_scope():
            for node in nodes:
                self.save(node)

    @contextlib.contextmanager
    def _batch_scope(self) -> Iterator[None]:
        """在这之内，本线程的 load / save 共用一个 s11_chunks.Batch（同一消息对象只编码一次）；里层的什么都不做。"""
        if getattr(self._batch, "current", None) is not None:
            yield
            return
        self._batch.current = s11_chunks.Batch()
        try:
            yield
        finally:
            self._batch.current = None

    def children(self, session_id: str) -> List[Dict[str, Any]]:
        """直接子分支的摘要，按创建先后排序。"""
        validate_session_id(session_id)
        return [s for s in reversed(self.list_sessions()) if s["parent_id"] == session_id]

    def lineage(self, session_id: str) -> List[Dict[str, Any]]:
        """从根到该节点的摘要链：沿 parent_id 逐个读（深度多少读多少个）；祖先删了或读不了时从能找到的最上层开始。"""
        return self._lineage(session_id)

    def _lineage(self, session_id: str, leaf: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
        """lineage() 本身：沿 parent_id 一个一个祖先取摘要（缓存命中时只 lstat，不读文件）。
        leaf：调用方刚读到的本节点摘要（导出），路径的最后一段不必再看一次。"""
        chain: List[Dict[str, Any]] = [leaf] if leaf is not None else []
        current: Optional[str] = validate_session_id(session_id) if leaf is None else leaf["parent_id"]
        seen: set = set() if leaf is None else {session_id}
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
        chain.reverse()
        return chain

    def render_tree(self, root_id: Optional[str] = None) -> str:
        """整棵会话树（或以 root_id 为根的子树）的文字图：ID、标题、消息数、每个分支新增了什么（见 s11_tree）。"""
        forest = s11_tree.Forest(self.list_sessions())
        if root_id is not None and validate_session_id(root_id) not in forest.by_id:
            raise SessionNotFound(f"未找到会话: {root_id}")
        return s11_tree.render_text(forest, root_id)

    def check(self) -> List[Problem]:
        """列出仓库里的全部问题（坏文件、读不了的条目、孤儿分支、残留的临时文件、缺了或坏了的块……见 s11_check），不改文件。"""
        return s11_check.check(self)

    def resume(self, session_id: str, workspace: Optional[str] = None) -> Tuple[SessionNode, List[str]]:
        """读档并与工作区对账：返回 (节点, 差异说明)。只对比调用方选定的目录（参数或 SessionStore(workspace=...)），
        从不去快照里写着的目录（文件可能来自别人）；没有快照时差异为空，有快照没选目录时写明没有对账。"""
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

    # ── 内部：校验、修订号核对、摘要缓存 ─────────────────────────────────────────────────────
    def _file_of(self, checked_id: str) -> str:
        """已经检查过的 ID（比如从文件里读出、经 s11_format 检查过的 parent_id）→ 路径。"""
        return self._prefix + checked_id + ".json"   # = os.path.join(storage_dir, …)，少一次函数调用（路径上每个祖先一次）

    def _plan(self, session: SessionNode, batch: Optional[s11_chunks.Batch] = None) -> Tuple[Dict[str, Any], Any]:
        """拼出要写的字典（version、revision 在最前）交给 s11_chunks.plan：先跑 load() 跑的同一个 check_fields（坏字段
        抛 InvalidMessage，什么都没写），再编码成字节和块。session_id 由调用方先经 _path() 检查过。"""
        if session.parent_id is not None:
            validate_session_id(session.parent_id)   # InvalidSessionId，与拼路径时一样
        if self.workspace is not None:
            session.workspace = s11_workspace.snapshot(self.workspace, exclude=[self.storage_dir])
        if isinstance(session.revision, bool) or not isinstance(session.revision, int):
            raise InvalidMessage(f"会话 {session.session_id}：revision 必须是整数，收到 "
                                 f"{printable(repr(session.revision)[:40])}")
        payload = {"version": FORMAT_VERSION, "revision": session.revision + 1, **session.to_dict(),
                   "created_ns": session.created_ns}
        known = batch.prepared.pop(session.session_id, None) if batch is not None else None   # write_costs 规划过的
        if known is not None and same_payload(known[0], payload):   # 之后没改过：照用，不再检查、编码一遍
            return payload, known[1]
        plan = s11_chunks.plan(payload, threshold=self.chunk_threshold, chunk_bytes=self.chunk_bytes,
                               batch=batch, stored=getattr(session, "_stored", ()))
        s11_converge.check_converged_from(session)   # 字段类型上面已查过；这里查收敛来源不是它自己
        return payload, plan

    def _write_new_chunks(self, path: str, session: SessionNode, chunks: List[Tuple[str, bytes]],
                          batch: Optional[s11_chunks.Batch] = None) -> None:
        """锁外写下磁盘上还没有的块。先在锁里核对一次修订号：过期的节点在这里就被拒绝，不留下没人要的块。
        batch：这一批里已经写下或核对过的块不再逐个查看（锁里的 ensure() 照样确认每一块都在）。"""
        unchecked = chunks if batch is None else [chunk for chunk in chunks if chunk[0] not in batch.present]
        missing = self._chunks.missing(unchecked)
        if missing:
            with self._lock:
                self._check_revision(path, session)
            self._chunks.write(missing)
        if batch is not None:
            batch.present.update(name for name, _ in unchecked)

    def _check_revision(self, path: str, session: SessionNode) -> None:
        """锁内：磁盘上这份文件现在的修订号必须等于节点读入时的修订号，否则 ConflictError。

        读的是文件本身，不是 (inode, 大小, 修改时间) 缓存——ext4 会复用 inode，粗粒度时钟下两次同样大小的
        保存看起来一模一样。大会话只读头、索引和尾部（不到一块），与会话多长无关。"""
        try:
            raw, _ = read_regular_file(path)
        except FileNotFoundError:
            on_disk = 0
        except OSError as exc:
            raise unreadable(path, exc) from None
        else:   # 每次都完整检查（不读块）：坏文件、新版本文件在这里抛错，所以绝不会被覆盖
            on_disk = s11_chunks.decode_node(raw, path)["revision"]
        if on_disk != session.revision:
            raise ConflictError(f"会话 {session.session_id} 在你读入（修订 {session.revision}）之后已被保存为修订 "
                                f"{on_disk}；请重新 load() 后再追加，否则会抹掉别人的消息")

    def _summary(self, path: str, entry: Optional[os.DirEntry] = None,
                 every_message: bool = False) -> Dict[str, Any]:
        """一个文件的摘要（一份新的字典）；按 (inode, 大小, 修改时间) 缓存，目录很大时 list 不必每次重新解析。
        entry：list_sessions() 的目录项，它已说明是普通文件时第一次读就不必先 lstat。
        every_message：check() 用——不看缓存，重读文件并逐条检查消息（列表只检查摘要用到的字段）。"""
        cached = None if every_message else self._summary_cache.get(path)
        info = None
        if cached or entry is None or not entry.is_file(follow_symlinks=False):
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                raise
            except OSError as exc:
                raise unreadable(path, exc) from None
            if cached and cached[0] == stat_key(info):
                return s11_tree.summary_from(cached[1])   # 值配回键，两个列表字段换回新的列表
        data, info = self._chunks.read_summary(path, info, every_message)   # 大会话只读第一行
        return self._remember(path, data, info)

    def _remember(self, path: str, data: Dict[str, Any], info: os.stat_result) -> Dict[str, Any]:
        summary = s11_tree.summary_of(data)   # 每个会话一条、一直留着，所以只存值（键按 SUMMARY_KEYS 的顺序），
        self._summary_cache[path] = (stat_key(info), tuple(tuple(v) if type(v) is list else v for v in summary.values()))
        return summary   # 列表存成元组（空元组不占地方）：一条不到字典的一半。list_sessions() 丢掉已不在的文件的条目

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
            s11_trash.move_to_trash(self.storage_dir, path, session_id)
        return True


_ns_lock = threading.Lock()
_last_ns = 0


def _unique_ns() -> int:
    """严格递增的纳秒时间戳：时钟粗糙或同一纳秒内创建两个节点时也不会重复。"""
    global _last_ns
    with _ns_lock:
        _last_ns = max(time.time_ns(), _last_ns + 1)
        return _last_ns


def _absolute_folder(folder: Any, what: str) -> str:
    """'sessions' -> '/当前目录/sessions'：构造时就定下来，之后 chdir 不会让仓库换地方。"""
    if not isinstance(folder, (str, os.PathLike)) or isinstance(os.fspath(folder), bytes) \
            or not os.fspath(folder):
        raise SessionError(f"{what}必须是非空的路径字符串，收到 {printable(repr(folder)[:80])}")
    return os.path.abspath(os.fspath(folder))


# ── 🎬 实战演示：主会话 → 两个分支 → 恢复 → 导出 ─────────────────────────────────────────────
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


if __name__ == "__main__":   # python code/s11_session.py：像书里一样跑一遍，打印会话树和导出（仓库工具见 s11_cli.py）
    demo_store = SessionStore("sessions")
    result = demo_tree_branching(demo_store)
    print(f"会话文件已写入 {printable(demo_store.storage_dir)}/\n")
    print(demo_store.render_tree(result["main_id"]), "\n")
    print(printable(result["export_md"], keep_newlines=True))
