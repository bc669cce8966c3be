"""s11_book.py — 📖 书中原版：第 8.11 节印出来的 SessionNode / SessionStore，一字未改

    书中原版 (本文件)                      本仓库 (s11_session.py 等)
    save: open(path, "w") + json.dump      原子写入：临时文件 + os.replace
    load: 不校验版本、不校验 id            版本号 + 迁移表、id 白名单、修订号冲突检测
    export: 原样导出                       导出前脱敏

Key insight: 读者会照抄印在书上的代码，所以实验室（s11_workbench/lab.py）和测试都拿这份原版当对照组——
它的每个缺陷都是真的，不能"顺手修好"。

Copied from chapter 8.11 ("1️⃣ 树节点 SessionNode", "2️⃣ 会话仓库 SessionStore" and "3️⃣ 分叉与导出");
only the missing imports, ROLE_ICONS and `_path` (which the chapter uses but does not print) are added.
Do not "fix" it: the tests and the lab need the chapter's real behaviour, including its non-atomic save,
its unchecked ids and its silent last-writer-wins. This is the one copy in the repository.
"""

import json
import os
import time
import uuid
from typing import Any, Dict, List, Optional

ROLE_ICONS = {"system": "🧠", "user": "👤", "assistant": "🤖"}


class SessionNode:
    """树状会话节点：一条完整消息历史，可被 fork 分叉出多个子分支"""
    def __init__(self, session_id=None, title="未命名会话", parent_id=None,
                 messages=None, created_at=None):
        self.session_id = session_id or uuid.uuid4().hex[:12]   # 🆔 全局唯一 ID
        self.title = title
        self.parent_id = parent_id                              # 🌳 父分支 ID，None 为根会话
        self.messages = messages if messages is not None else []
        self.created_at = created_at or time.strftime("%Y-%m-%d %H:%M:%S")

    def to_dict(self) -> Dict[str, Any]:
        """📦 序列化为 JSON 友好字典（存档）"""
        return {"session_id": self.session_id, "title": self.title,
                "parent_id": self.parent_id, "messages": self.messages,
                "created_at": self.created_at}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "SessionNode":
        """♻️ 从字典还原节点（读档）"""
        return cls(session_id=data.get("session_id"), title=data.get("title", "未命名会话"),
                   parent_id=data.get("parent_id"), messages=data.get("messages", []),
                   created_at=data.get("created_at"))


class SessionStore:
    """🗄️ 会话仓库：以 JSON 文件持久化会话树，支持存档/读档/分叉/导出"""
    def __init__(self, storage_dir: str = "sessions"):
        self.storage_dir = storage_dir
        os.makedirs(storage_dir, exist_ok=True)  # 📁 自动创建会话目录

    def _path(self, session_id: str) -> str:
        return os.path.join(self.storage_dir, f"{session_id}.json")

    def save(self, session: SessionNode) -> None:
        """💾 存档：把会话节点写回磁盘"""
        with open(self._path(session.session_id), "w", encoding="utf-8") as f:
            json.dump(session.to_dict(), f, ensure_ascii=False, indent=2)

    def create_session(self, title: str, messages: Optional[List[Dict[str, Any]]] = None) -> str:
        """🆕 新建根会话并立即存档，返回 session_id"""
        session = SessionNode(title=title, messages=messages or [])
        self.save(session)
        return session.session_id

    def load(self, session_id: str) -> Optional[SessionNode]:
        """📂 读档：从磁盘恢复指定会话（断点续跑）"""
        path = self._path(session_id)
        if not os.path.exists(path):
            return None
        with open(path, "r", encoding="utf-8") as f:
            return SessionNode.from_dict(json.load(f))

    def list_sessions(self) -> List[Dict[str, Any]]:
        """📋 返回全部会话摘要（按创建时间倒序）"""
        summaries = []
        for fname in os.listdir(self.storage_dir):
            if not fname.endswith(".json"):
                continue
            try:
                with open(os.path.join(self.storage_dir, fname), "r", encoding="utf-8") as f:
                    data = json.load(f)
                summaries.append({"session_id": data.get("session_id"),
                                  "title": data.get("title", "未命名会话"),
                                  "parent_id": data.get("parent_id"),
                                  "message_count": len(data.get("messages", [])),
                                  "created_at": data.get("created_at", "")})
            except Exception:
                continue  # 跳过损坏文件
        summaries.sort(key=lambda s: s["created_at"], reverse=True)
        return summaries

    def fork(self, parent_id: str, new_messages: Optional[List[Dict[str, Any]]] = None) -> SessionNode:
        """🌿 分叉：继承父会话历史并追加新消息，生成指向父节点的子分支"""
        parent = self.load(parent_id)
        if parent is None:
            raise ValueError(f"❌ 未找到父会话: {parent_id}，无法分叉！")
        child = SessionNode(title=f"{parent.title} · 分支", parent_id=parent.session_id,
                            messages=list(parent.messages) + (new_messages or []))
        self.save(child)
        return child

    def export_markdown(self, session_id: str) -> str:
        """📤 把该会话 messages 渲染成可读 Markdown 文本"""
        session = self.load(session_id)
        if session is None:
            return f"(未找到会话: {session_id})"
        lines = [f"# 🗂️ 会话导出：{session.title}", "",
                 f"- **会话 ID**：`{session.session_id}`",
                 f"- **父分支**：`{session.parent_id or '无（根会话）'}`",
                 f"- **创建时间**：{session.created_at}",
                 f"- **消息条数**：{len(session.messages)}", "", "---", ""]
        for i, msg in enumerate(session.messages, 1):
            role = msg.get("role", "unknown")
            lines += [f"### {i}. {ROLE_ICONS.get(role, '📄')} `{role}`", "",
                      str(msg.get("content", "")), ""]
        return "\n".join(lines)

    def delete(self, session_id: str) -> bool:
        """🗑️ 删除指定会话文件"""
        path = self._path(session_id)
        if os.path.exists(path):
            os.remove(path)
            return True
        return False
