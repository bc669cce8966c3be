"""transcript.py — 读一个记录时攒下的全部东西：条目（Entry）、按 id 的索引和读到的线索（Transcript）

    一行记录 ──► 格式的读取函数 ──► Entry(uid, parent, kind="message" | "link", message …)
                                 └─► Transcript.add()：按 uid 建索引（文件顺序），重复的 uid 留第一次
                                     skip()：跳过的行（行号从 1 开始，子代理文件的行前面写上文件名）

读取阶段（lines、claude、pi）只往 Transcript 里写；建图（graph）和规划（plan）只读它。
这里也放两种格式共用的“消息是什么”：is_prompt()（用户亲手输入的一句）、plain_text()、工具调用的索引。
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

from .convert import Converter

__all__ = ["Entry", "Transcript", "text_or_none", "plain_text", "is_prompt", "line_list"]

_TASK_TOOLS = {"Task", "Agent"}   # 启动子代理的工具（Claude Code）


class Entry:
    """一行记录。kind 为 "message"（会变成消息）或 "link"（结构条目：只用来把消息接到正确的祖先上）。

    seq 是在所有读入文件里的先后（“最新”按它算）；stream 是 Claude 的 message.id（流式分段共用）；
    logical 是 compact_boundary 的 logicalParentUuid；agent 是子代理的 agentId；prompt 表示用户亲手输入。"""
    __slots__ = ("uid", "parent", "line", "seq", "kind", "message", "session", "sidechain",
                 "stream", "logical", "agent", "prompt", "last_seq", "label_file")

    def __init__(self, uid: str, parent: Optional[str], line: int, kind: str, message: Optional[dict] = None,
                 session: Optional[str] = None, sidechain: bool = False):
        self.uid, self.parent, self.line, self.kind = uid, parent, line, kind
        self.message, self.session, self.sidechain = message, session, sidechain
        self.seq = self.last_seq = 0
        self.stream = self.logical = self.agent = None
        self.prompt = False
        self.label_file = ""


class Transcript:
    """一次读取的全部状态：条目索引（文件顺序）、跳过的行、丢弃的条目、标题、活动端线索。"""

    def __init__(self, path: str):
        self.path, self.file = path, os.path.basename(path)
        self.format: Any = None   # 格式表里的那一行（formats.Format）；认出来之前是 None
        self.entries: Dict[str, Entry] = {}
        self.order: List[Entry] = []
        self.skipped: List[Tuple[int, str]] = []
        self.dropped: Counter = Counter()
        self.warnings: List[str] = []
        self.duplicates: List[int] = []
        self.file_label = ""              # 读子代理文件时，跳过原因前面写上它的文件名
        self.file_agent: Optional[str] = None
        self.header: Dict[str, Any] = {}
        self.sessions: Dict[str, Dict[str, str]] = {}
        self.titles: Dict[str, str] = {}
        self.summaries: List[Tuple[str, str]] = []
        self.leaf_hints: List[str] = []
        self.labels: Dict[str, str] = {}
        self.tool_calls: Dict[str, str] = {}          # tool_use id → 持有这次调用的消息
        self.task_prompts: Dict[str, str] = {}        # Task 工具的 prompt → 持有调用的消息
        self.task_titles: Dict[str, str] = {}         # tool_use id → 子代理的描述
        self.spawned: Dict[str, Tuple[str, str]] = {}  # agentId → (工具结果消息, tool_use id)
        self.previous_uid: Optional[str] = None       # Pi v1：没有 id，按文件顺序串起来
        self.passed_over: List[str] = []
        self.pending: List[Tuple[int, int, dict]] = []
        self.objects = 0
        self.convert = Converter()

    def skip(self, line: int, reason: str) -> None:
        self.skipped.append((line, f"{self.file_label}{reason}"))

    def add(self, entry: Entry) -> None:
        if entry.uid in self.entries:   # 续跑 / 分叉会重放旧行：第一次出现的那份为准
            self.duplicates.append(entry.line)
            return
        entry.seq = entry.last_seq = len(self.order)
        entry.label_file = self.file_label
        self.entries[entry.uid] = entry
        self.order.append(entry)

    def note_tool_calls(self, message: dict, uid: str) -> None:
        """记下消息里的每次工具调用（tool_use id → 这条消息），Task 调用另记 prompt 和描述：找子代理的启动者用。"""
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if block.get("type") in ("tool_use", "toolCall") and isinstance(block.get("id"), str):
                self.tool_calls[block["id"]] = uid
                arguments = block.get("input") or block.get("arguments")
                if block.get("name") in _TASK_TOOLS and isinstance(arguments, dict):
                    self._note_task(block["id"], arguments, uid)

    def _note_task(self, call_id: str, arguments: dict, uid: str) -> None:
        if isinstance(arguments.get("prompt"), str):
            self.task_prompts.setdefault(arguments["prompt"].strip(), uid)
        title = arguments.get("description") or arguments.get("subagent_type")
        if isinstance(title, str):
            self.task_titles[call_id] = title


def text_or_none(value: Any) -> Optional[str]:
    """非空字符串原样返回，其余（缺字段、数字、空串）都是 None：记录里的 id 和名字都这样取。"""
    return value if isinstance(value, str) and value else None


def plain_text(message: Optional[dict]) -> str:
    content = (message or {}).get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def is_prompt(message: dict) -> bool:
    """用户亲手输入的一句话（而不是工具结果、注入的提示、摘要或命令输出）：只有它能开出真正的分支。"""
    if message["role"] != "user" or message.get("meta") or message.get("summary"):
        return False
    content = message["content"]
    typed = isinstance(content, str) or any(b.get("type") in ("text", "image") for b in content or [])
    return typed and not plain_text(message).lstrip().startswith("<local-command-")   # 命令的输出不是提问


def line_list(labels: List[str], shown: int = 8) -> str:
    """警告里的行号：['3', '7', '12'] -> '3、7、12'；超过 shown 个时只列前 shown 个，后面写 '……'。"""
    return "、".join(labels[:shown]) + ("……" if len(labels) > shown else "")
