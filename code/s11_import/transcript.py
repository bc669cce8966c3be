"""transcript.py — 读一个记录时攒下的全部东西：条目（Entry）、按 id 的索引和读到的线索（Transcript）

    一行记录 ──► 格式的读取函数 ──► Entry(uid, parent, kind="message" | "link", message …)
                                 └─► Transcript.add()：按 uid 建索引（文件顺序），重复的 uid 留第一次
                                     skip()：跳过的行（行号从 1 开始，子代理文件的行前面写上文件名）

读取阶段（lines、各格式的文件）只往 Transcript 里写；建图（graph）和规划（plan）只读它。
一次可以读好几个会话文件（导入文件夹时，续接 / 分叉同一段历史的文件读进同一个 Transcript）：
每个条目记着它属于哪个会话文件（home），标题和活动端线索也按会话文件分开记。
这里也放各种格式共用的“消息是什么”：is_prompt()（用户亲手输入的一句）、plain_text()、prompt_title()、
工具调用的索引。

有界：跳过的行只留前 SKIPPED_KEPT 行的行号和原因，其余按原因计数（600 万个空行不会变成 600 万条记录）；
重复 uuid、粘连、坏 UTF-8 的行号同样只留前几个加总数。
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

from .convert import Converter

__all__ = ["Entry", "Transcript", "LineSample", "as_list", "text_or_none", "plain_text", "is_prompt", "prompt_title",
           "line_list", "SKIPPED_KEPT", "bounded_key"]

SKIPPED_KEPT = 200        # 报告里逐行列出的跳过行最多这么多条，其余只按原因计数
_SAMPLE = 8               # 警告里列出的行号个数
_KINDS_KEPT = 64          # dropped 里最多这么多种类型，其余并入“其它类型”（类型名来自文件，不可信）
_TASK_TOOLS = {"Task", "Agent"}   # 启动子代理的工具（Claude Code）


class Entry:
    """一行记录。kind 为 "message"（会变成消息）或 "link"（结构条目：只用来把消息接到正确的祖先上）。

    seq 是在所有读入文件里的先后（“最新”按它算）；stream 是流式分段共用的 id（Claude 的 message.id）；
    logical 是 compact_boundary 的 logicalParentUuid；agent 是子代理的 agentId；prompt 表示用户亲手输入；
    home 是它所属的会话文件（子代理文件的条目属于带它进来的主文件）。"""
    __slots__ = ("uid", "parent", "line", "seq", "kind", "message", "session", "sidechain",
                 "stream", "logical", "agent", "prompt", "last_seq", "label_file", "home")

    def __init__(self, uid: str, parent: Optional[str], line: int, kind: str, message: Optional[dict] = None,
                 session: Optional[str] = None, sidechain: bool = False):
        self.uid, self.parent, self.line, self.kind = uid, parent, line, kind
        self.message, self.session, self.sidechain = message, session, sidechain
        self.seq = self.last_seq = 0
        self.stream = self.logical = self.agent = None
        self.prompt = False
        self.label_file = self.home = ""


class LineSample:
    """前几个行号 + 总数。报告只列前几行，逐行都记下来会让内存随坏行数增长。

    >>> sample = LineSample(2)
    >>> for line in (3, 7, 9): sample.add(str(line))
    >>> sample.lines, sample.count
    (['3', '7'], 3)
    """
    __slots__ = ("keep", "lines", "count")

    def __init__(self, keep: int = _SAMPLE):
        self.keep, self.lines, self.count = keep, [], 0

    def add(self, label: str) -> None:
        self.count += 1
        if len(self.lines) < self.keep:
            self.lines.append(label)

    def text(self) -> str:
        """'3、7、12' 或 '3、7、12……'（不止这几行时）。"""
        return "、".join(self.lines) + ("……" if self.count > len(self.lines) else "")


def bounded_key(counter: Counter, key: str) -> str:
    """dropped 的键：太长的截短，种类太多时新来的并入“其它类型”——类型名来自文件，一百万种也只占 64 格。"""
    key = key[:60]
    return key if key in counter or len(counter) < _KINDS_KEPT else "其它类型"


class Transcript:
    """一次读取的全部状态：条目索引（文件顺序）、跳过的行、丢弃的条目、标题、活动端线索。"""

    def __init__(self, path: str):
        self.path, self.file = path, os.path.basename(path)
        self.files: List[str] = []        # 读进来的会话文件（不含子代理文件），先读的在前
        self.home = self.file             # 正在读的会话文件（子代理文件算在带它进来的主文件名下）
        self.unit = "行"                  # 跳过的“行”：JSON 文档（Gemini 的 .json）里是“条消息”
        self.format: Any = None   # 格式表里的那一行（formats.Format）；认出来之前是 None
        self.entries: Dict[str, Entry] = {}
        self.order: List[Entry] = []
        self.skipped: List[Tuple[int, str]] = []    # 前 SKIPPED_KEPT 行
        self.skipped_total = 0
        self.skipped_by_reason: Counter = Counter()
        self.dropped: Counter = Counter()
        self.warnings: List[str] = []
        self.duplicates = LineSample()
        self.glued = LineSample()
        self.bad_utf8 = LineSample()
        self.file_label = ""              # 读子代理文件（或文件夹里的第二个会话文件）时，行号前面写上文件名
        self.file_agent: Optional[str] = None
        self.header: Dict[str, Any] = {}
        self.sessions: Dict[str, Dict[str, Any]] = {}
        self.titles: Dict[str, Dict[str, str]] = {}          # 会话文件 → {标题种类: 标题}
        self.summaries: List[Tuple[str, str, str]] = []      # (会话文件, leafUuid, 摘要)
        self.leaf_hints: Dict[str, List[str]] = {}           # 会话文件 → 活动端线索（文件顺序）
        self.labels: Dict[str, str] = {}
        self.tool_calls: Dict[str, str] = {}          # tool_use id → 持有这次调用的消息
        self.task_prompts: Dict[str, Tuple[str, str]] = {}   # Task 工具的 prompt → (持有调用的消息, tool_use id)
        self.task_titles: Dict[str, str] = {}         # tool_use id → 子代理的描述
        self.spawned: Dict[str, Tuple[Optional[str], Optional[str]]] = {}  # agentId → (工具结果消息, tool_use id)
        self.runs: Dict[str, Tuple[Optional[str], Optional[str]]] = {}     # Workflow 的 runId → 同上
        self.missing_agents: List[str] = []   # 启动了、记录却没读到的子代理文件（agent-<id>.jsonl）
        self.agents: Dict[str, Dict[str, Any]] = {}   # agentId → 子代理文件的线索（meta.json、runId）
        self.mirrors: List[Tuple[str, int, int, dict, Optional[str]]] = []   # Claude 的 agent_progress 行
        self.previous_uid: Optional[str] = None       # 没有 id 的格式：按文件顺序串起来
        self.passed_over: List[str] = []
        self.pending: List[Tuple[int, int, dict]] = []
        self.objects = 0
        self.state: Dict[str, Any] = {}               # 格式自己读取时要记的东西（Codex 的回滚、Gemini 的重放）
        self.convert = Converter()

    def skip(self, line: int, reason: str, kind: Optional[str] = None) -> None:
        """跳过一行：前 SKIPPED_KEPT 行记下行号和原因，之后只按原因（kind，默认是 reason 本身）计数。"""
        self.skipped_total += 1
        self.skipped_by_reason[kind or reason] += 1
        if len(self.skipped) < SKIPPED_KEPT:
            self.skipped.append((line, f"{self.file_label}{reason}"))

    def drop(self, kind: str) -> None:
        """没有位置的行（元数据、镜像）按类型计数；类型名来自文件，种类数有上限。"""
        self.dropped[bounded_key(self.dropped, kind)] += 1

    def add(self, entry: Entry) -> bool:
        """加一个条目；uid 已经有了就不加（续跑 / 分叉会重放旧行：第一次出现的那份为准），返回是否加了。"""
        if entry.uid in self.entries:
            self.duplicates.add(f"{self.file_label}{entry.line}")
            return False
        entry.seq = entry.last_seq = len(self.order)
        entry.label_file, entry.home = self.file_label, self.home
        self.entries[entry.uid] = entry
        self.order.append(entry)
        return True

    def set_title(self, kind: str, title: str) -> None:
        self.titles.setdefault(self.home, {})[kind] = title   # 同一种标题最后一次为准

    def hint(self, uid: str) -> None:
        self.leaf_hints.setdefault(self.home, []).append(uid)

    def note_tool_calls(self, message: dict, uid: str) -> None:
        """记下消息里的每次工具调用（tool_use id → 这条消息），Task 调用另记 prompt 和描述：找子代理的启动者用。"""
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if block.get("type") in ("tool_use", "toolCall") and isinstance(block.get("id"), str):
                self.tool_calls.setdefault(block["id"], uid)
                arguments = block.get("input") or block.get("arguments")
                if isinstance(block.get("name"), str) and block["name"] in _TASK_TOOLS and isinstance(arguments, dict):
                    self._note_task(block["id"], arguments, uid)

    def _note_task(self, call_id: str, arguments: dict, uid: str) -> None:
        if isinstance(arguments.get("prompt"), str):
            self.task_prompts.setdefault(arguments["prompt"].strip()[:4000], (uid, call_id))
        title = arguments.get("description") or arguments.get("name") or arguments.get("subagent_type")
        if isinstance(title, str):
            self.task_titles[call_id] = title


def as_list(value: Any) -> list:
    """记录里说是列表的字段：真是列表才用，否则当空列表（文件里可能写成数字、字符串或对象）。"""
    return value if isinstance(value, list) else []


def text_or_none(value: Any) -> Optional[str]:
    """非空字符串原样返回，其余（缺字段、数字、空串）都是 None：记录里的 id 和名字都这样取。"""
    return value if isinstance(value, str) and value else None


def plain_text(message: Optional[dict]) -> str:
    content = (message or {}).get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in as_list(content) if isinstance(b, dict) and b.get("type") == "text"
                     and isinstance(b.get("text"), str))


def is_prompt(message: dict) -> bool:
    """用户亲手输入的一句话（而不是工具结果、注入的提示、摘要或命令输出）：只有它能开出真正的分支。"""
    if message["role"] != "user" or message.get("meta") or message.get("summary"):
        return False
    content = message["content"]
    typed = isinstance(content, str) or any(b.get("type") in ("text", "image") for b in as_list(content)
                                            if isinstance(b, dict))
    return typed and not plain_text(message).lstrip().startswith("<local-command-")   # 命令的输出不是提问


# ── 标题：去掉 Agent 包在用户输入外面的标签 ────────────────────────────────────────────────────
_TITLE_HEAD = 4000   # 只看开头这么多字：标题只要一行，正则也就不会在几 MB 的粘贴上跑
_COMMAND = re.compile(r"<command-name>\s*/?([^<]{1,200}?)\s*</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>([^<]{0,400})</command-args>")
_WRAPPERS = re.compile(r'<(teammate-message|cross-session-message|user-memory-input)(\s+[\w-]{1,40}="[^"]{0,600}")*\s*>'
                       r"|</(teammate-message|cross-session-message|user-memory-input)>")
_HIDDEN = re.compile(r"<(system-reminder|local-command-caveat|local-command-stdout|local-command-stderr|"
                     r"ide_opened_file|ide_selection|command-message|command-contents|session_context|"
                     r"environment_context|user_instructions)\b[^>]{0,200}>.*?(</\1>|\Z)", re.DOTALL)
_IDE_PREAMBLE = "# Context from my IDE setup"
_IDE_REQUEST = "## My request for Codex:"
_BASH_INPUT = re.compile(r"<bash-input>(.{0,400}?)</bash-input>", re.DOTALL)


def prompt_title(text: str) -> str:
    """用户输入 → 适合当标题的一行：Agent 的包装标签去掉，斜杠命令写成命令本身。

    >>> prompt_title('<command-name>/context</command-name> <command-message>context</command-message>')
    '/context'
    >>> prompt_title('<teammate-message teammate_id="team-lead">查一下缓存</teammate-message>')
    '查一下缓存'
    >>> prompt_title('<system-reminder>别管我</system-reminder>修复登录')
    '修复登录'
    >>> prompt_title('# Context from my IDE setup: ## Active file: a.py ## My request for Codex: 修复登录')
    '修复登录'
    """
    head = text[:_TITLE_HEAD]
    if head.lstrip().startswith(_IDE_PREAMBLE):   # VS Code 里的 Codex：真正的请求在这段说明的最后
        request = head.rfind(_IDE_REQUEST)
        head = head[request + len(_IDE_REQUEST):] if request >= 0 else ""
    command = _COMMAND.search(head)
    if command:
        arguments = _COMMAND_ARGS.search(head)
        name = command.group(1).strip()
        return " ".join(["/" + name] + ([arguments.group(1).strip()] if arguments and arguments.group(1).strip()
                                        else []))
    head = _BASH_INPUT.sub(lambda m: "!" + m.group(1), head)
    head = _HIDDEN.sub(" ", head)
    return _WRAPPERS.sub(" ", head).strip()


def line_list(labels: List[str], shown: int = _SAMPLE) -> str:
    """警告里的行号：['3', '7', '12'] -> '3、7、12'；超过 shown 个时只列前 shown 个，后面写 '……'。"""
    return "、".join(labels[:shown]) + ("……" if len(labels) > shown else "")
