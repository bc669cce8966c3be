"""explorer.py — 会话树浏览器的全部逻辑（不 import gradio，测试直接驱动）

    浏览器 ──token──> Explorer.<动作>(token, view, *控件的值, teacher=老师密钥)   页面事件的动作都按这个顺序收参数
                        │ spaces.open(token) ── 每次都重新解析：只认自己的空间
                        │ view.source: "mine" 自己的空间 / "shelf" 共享书架 / "space:<id>" 老师只读查看
                        ▼
                 SessionStore 的公开 API：list_sessions · load · save · fork · lineage · export_* · delete · restore · check
                        │
                        ▼
                 Page（页面要显示的一切）          会话列表 · ├─ 树选择 · 对话路径 · mermaid 分支图 · 导出 · 报告
                 + 新的 View（存在服务器端 gr.State：选中节点、修订号、搜索词、窗口位置）

Key insight: 页面上的每个动作都是“令牌 + 服务器端视图 → 新视图 + 整页内容”的纯函数：
空间每次从令牌重新解析，按访客区分的数据只在 View 里，所以两个同学、两个标签页永远互不串门；
续写时把读入时的修订号交给 store.save()，别的标签页先存过就抛 ConflictError，页面重载、输入原样保留。

Safety: 会话文字（标题、消息、工具名、文件名）只以纯文本进入页面——Markdown 里逐字符转义或装进
代码围栏，mermaid 标签用实体转义，树标签与表格单元格本身就是纯文本；从不进 gr.HTML。

Scope: 不调用大模型（续写的一轮由读者输入）；搜索扫当前来源里每个节点新增的每条消息（继承来的前缀只算在
它最早出现的那个节点里），正文按会话摘要和文件的 inode、大小、修改时间缓存，改过的文件才重读，
页面一打开就在后台预读；重启之后从空间的搜索索引（search_index.py，一个文件）读回，不必打开每个会话文件；体检（check）与会话列表也按文件缓存，删除、取回只补算变了的那部分；
5,000 条消息的会话按窗口显示（每页 PAGE_SIZE 条），超长文本折叠，全文请导出。
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import math
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import s11_export
import s11_history
import s11_journal
import s11_redact
import s11_trash
import s11_tree
from s11_check import parent_problems
from s11_export import fenced
from s11_session import (
    ConflictError,
    SessionError,
    SessionNode,
    SessionNotFound,
    validate_session_id,
)
from s11_storage import stat_key
from s11_text import hide_paths, human_size, os_error_reason, shorten
from s11_tree import (
    PAGE_STYLE,
    Forest,
    branch_prefixes,
    converged_into,
    marks_text,
    own_labels,
    root_of,
    walk,
)
from s11_workbench import downloads, fork_control, search_index
from s11_workbench.bounded import BoundedCache, file_stamp, is_racy
from s11_workbench.markdown import (
    command_chip,
    inert_markdown,
    literal_inline,
    literal_markdown,
    mermaid_text,
    unescaped,
)
from s11_workbench.spaces import SpaceError, folder_bytes
from s11_workbench.tool_calls import tool_subject

log = logging.getLogger(__name__)

PAGE_SIZE = 100            # 对话路径一次显示多少条消息
LIST_LIMIT = 200           # 会话列表最多显示多少行（其余用搜索找）
FOLD_CHARS = 3000          # 单段文字超过这个长度就折叠
FOLD_LINES = 60
TITLE_CHARS = 40
MAX_TURN_CHARS = 20_000    # 续写 / 分叉时读者输入的一条消息的上限
MAX_TITLE_CHARS = 200
MAP_MAX_EDGES = 400        # mermaid 自己拒绝 500 条边以上、5 万字符以上的图；留出余量
MAP_MAX_CHARS = 40_000
TEXT_MAP_MAX_LINES = 300
UPLOAD_SUFFIXES = (".jsonl", ".json", ".jsonl.zst", ".zip")   # 能上传的会话记录：各家代理的 .jsonl，Gemini CLI 旧版的 .json，
# Codex 压缩过的旧 rollout（解压后的字节同样受上传上限约束，见 s11_import.compressed），
# 装着一个 Claude Code 会话和它 subagents/ 文件夹的 .zip（解开后同样受上限约束，见 s11_import.archive）
TRASH_SHOWN = 30
PREVIEW_CHARS = 30_000
MINE, SHELF, SPACE_PREFIX = "mine", "shelf", "space:"
LIST_HEADERS = ["会话", "ID"]
ID_COLUMN = LIST_HEADERS.index("ID")
ROLES = {"user": "👤 用户（user）", "assistant": "🤖 助手（assistant）"}   # 续写时读者可以选的角色
# 对话的过滤（像 claude-code-log 那样）：值 -> 单选框上的字。过滤只藏行，每行仍记着它的绝对消息编号，点它照样在那里分叉
CHAT_FILTERS = {"all": "全部", "talk": "隐藏工具与思考", "prompts": "只看我的提问"}
ROLE_NAMES = {"user": "用户", "assistant": "助手", "system": "系统", "tool": "工具", "toolResult": "工具"}
SEARCH_HITS = 50           # 搜索最多列出多少处命中
HIT_CONTEXT = 36           # 命中前后各留多少个字
TEXT_CACHE_CHARS = 2 * 1024 * 1024    # 搜索用的正文缓存最多存多少字（超过就丢掉最早读入的）：约 2 M 字。小写和原文相同
                                      # （中文、本来就是小写）时只存一份，中文为主约 4 MB，最坏（大写的 emoji 文字）约 16 MB。
                                      # 够一个 2,000 个会话的空间或一个班几十个空间常用的正文；更多时没缓存住的会话搜索时现读
                                      # （每个约 60 µs）。缓存随全班的数据变大，上限小，一堂课里服务器的内存才平稳
CHECK_CACHE_SPACES = 256   # 体检结果最多记住多少个空间（每个空间只是一张 {路径: (inode, 大小, 修改时间)} 和问题列表）
WARM_THREADS = 2           # 后台预读搜索正文的线程最多几个（每个空间同时最多一个）
LISTING_CACHE_SPACES = 8   # 会话列表（摘要、树、列表的前 LIST_LIMIT 行）最多记住多少个空间：每个会话约 1 KB，2,000 个会话
                           # 的空间约 2 MB。没记住的空间每次重新分组（200 个会话约 1 ms）；一个班几十个空间都记住，内存就随全班
                           # 的会话数一直长
INDEX_MIN_MISSES = 200     # 缓存里缺这么多个会话的正文时才读搜索索引：读一遍索引（2,000 个会话约 10 ms）约等于 load()
                           # 200 个会话文件；缺得少（刚分叉、刚续写）就直接读那几个文件
WARM_AGAIN_S = 60          # 同一个空间隔多久才再预读一次（其间改过的文件，搜索时再读）
WARM_MIN_SESSIONS = 300    # 会话少于这么多的空间不预读：第一次搜索现读也只要十几毫秒（每个约 60 µs），
                           # 一个班几十个小空间也就不必把每位同学的正文都先读进内存
PARENT_KINDS = ("missing_parent", "missing_converged")   # 只由“哪些会话在仓库里”决定的问题：可以从摘要重算
FIRST_ADDED_SHOWN = 24
FOCUS_OPEN_CHARS = 200     # 被指向的那条消息里，这么短的折叠块才默认展开（手机上也不会把📍那行顶出窗口）
NAME_LEVELS = 4            # 分支名最多写几层（'B.A.C.A'），更深的前面写 '…'
UNNAMED_BRANCH = "（未命名分支）"   # 不是根、却不知道它在树里排第几时的名字（从不写成“分支 ?”）
# 每个动作的结果写在引起它的控件旁边：Page.area 是这几块之一（""：只写在页面顶上）
AREAS = ("list", "path", "fork", "resume", "export", "trash", "confirm", "import", "teacher", "map")
REFUSAL_CHARS = 2000       # 上传被拒时浏览器报来的那段 JSON 最多多长（文件名在 gradio 里最多 255 字节）
MAP_PICK_CHARS = 100       # 分支图点选框里最多收多少字（ID 最多 64 个字符，再加页面脚本附上的“#序号”）


# ── 服务器端视图与整页结果 ────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class View:
    """一个标签页当前看着什么（存在 gr.State，浏览器看不到也改不了）。"""
    source: str = MINE                 # "mine" | "shelf" | "space:<space_id>"（老师只读查看）
    session_id: str | None = None
    revision: int = 0                  # 选中节点读入时的修订号：续写时交给 save() 核对
    query: str = ""
    start: int | None = None           # 对话窗口的起点（0 起）；None = 显示最后 PAGE_SIZE 条
    chat_numbers: tuple = ()           # 对话框第 i 行对应第几条消息（点击消息 → 分叉位置）
    deleted: tuple = ()                # 本页删除过的 (id, 标题)，让回收站列表带上标题
    focus: int | None = None           # 要突出显示的那条消息（1 起：?m=<k> 链接、搜索命中）
    end: int | None = None             # 对话窗口停在第几条（含）：有 focus 时让它落在窗口末尾，Chatbot 滚到底就看见它
    last_fork: str | None = None       # 刚分叉出的节点：再点一次“分叉”不会又分一个
    pending: tuple = ()                # 等读者确认的动作：(动作, 参数, 指纹, 给读者看的说明)；别的动作一律清掉它
    shown: str = "all"                 # 对话里显示什么（CHAT_FILTERS 的键）：全部 / 隐藏工具与思考 / 只看我的提问


@dataclass
class Page:
    """一次动作之后页面上的全部内容。"""
    notice: str
    view: View
    space_label: str = ""
    read_only: bool = False
    teacher: bool = False
    source_choices: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    list_note: str = ""
    tree_choices: list = field(default_factory=list)
    details: str = ""
    chat: list = field(default_factory=list)
    path_note: str = ""
    window_start: int | None = None    # 对话窗口从第几条开始（1 起）
    message_count: int = 0
    map_markdown: str = ""
    problems: str | None = None        # check() 的结果；None：这次没有重新体检，保持原样
    trash_choices: list = field(default_factory=list)
    examples: list = field(default_factory=list)
    teacher_rows: list = field(default_factory=list)
    downloads: tuple = (None, None)
    preview: str = ""
    report: str | None = None          # None：导入报告保持原样
    draft: str | None = None           # 续写输入框：None 保持原样，"" 清空，其余是读者没发出去的话
    area: str = ""                     # 结果写在哪块控件旁边（AREAS 之一）；"" 只写在顶上
    fork_reset: bool = False           # 分叉表单清空（分叉成功、换了会话）
    fork_pick: object = None           # 清空时换上的选择（fork_control.Pick：?session=&m= 链接选好的那条；None = 没选）
    siblings: tuple = ("", None, None)  # 分岔处的 (说明, 上一个兄弟, 下一个兄弟)：“◀ 1/2 ▶”
    hits: list = field(default_factory=list)   # 全文搜索的命中：[会话, 第几条, 上下文, ID]
    hits_note: str = ""
    trash_note: str = ""               # 回收站里有几份副本、占多少字节

    @property
    def confirm(self) -> str:
        """等读者确认的动作的说明（空 = 没有要确认的）。"""
        return self.view.pending[-1] if self.view.pending else ""


class ExplorerError(SessionError):
    """读者的操作不成立（没选会话、空消息、只读来源……），消息是给读者看的中文。"""


@dataclass
class Listing:
    """一个来源的会话列表：摘要、会话树，和没有搜索词时的列表行 rows（(行, 说明)）。rows 第一次用到时才画：
    带搜索词的页面显示的是命中的那几行，用不到它（画它要给每棵树排序、算前缀）。"""
    summaries: list
    forest: Forest

    @functools.cached_property
    def rows(self) -> tuple:
        return _list_rows(self.summaries, "", self.forest)


# ── 文字 → 页面：会话文字一律按纯文本显示（转义在 markdown.py），太长的先折叠 ──────────────────────────
def fold(text: str, limit: int = FOLD_CHARS, max_lines: int = FOLD_LINES) -> str:
    """超长文字只留开头，并说明全文多长：'x' * 5000 -> 'xxx…\\n…（已折叠：全文 5,000 字符…）'"""
    lines = text.split("\n")
    if len(text) <= limit and len(lines) <= max_lines:
        return text
    head = "\n".join(lines[:max_lines])[:limit]
    return f"{head}\n…（已折叠：全文 {len(text):,} 字符、{len(lines):,} 行；导出可看全文）"


# ── 一条消息 → 对话框里的几行 ───────────────────────────────────────────────────────────────
def _block_note(message: dict) -> str:
    """导入时被截断的块，记下原长度。"""
    content = message.get("content")
    notes = [f"原长 {block['truncated_from']:,} 字符" for block in content if isinstance(block, dict)
             and isinstance(block.get("truncated_from"), int)] if isinstance(content, list) else []
    return f"（导入时已截断：{'，'.join(notes)}）" if notes else ""


def _header(number: int, message: dict, focus: bool = False) -> str:
    role = str(message.get("role", ""))
    icon = s11_export.ROLE_ICONS.get(role, s11_export.DEFAULT_ICON)
    tags = [name for key, name in (("summary", "摘要"), ("meta", "注入文本"), ("subagent", "子代理"))
            if message.get(key)]
    # 🏷️ 标签、🔀 收敛的决定、↪️ 收敛时带过来的消息（文字与导出相同，见 s11_export.message_marks）
    tags += [literal_inline(text, 60) for kind, text in s11_export.message_marks(message)
             if kind in ("label", "converge", "origin")]
    extra = f" · {'、'.join(tags)}" if tags else ""
    pin = " · **📍 链接指向这条**" if focus else ""
    return f"{'📍 ' if focus else ''}**#{number}** {icon} {ROLE_NAMES.get(role) or literal_inline(role, 24)}{extra}{pin}"


def _thought(title: str, body: str) -> dict:
    # metadata.title 让 Chatbot 把它画成可折叠的一行；status=done 表示默认收起
    return {"role": "assistant", "content": body, "metadata": {"title": title, "status": "done"}}


_PART_TITLES = {
    "thinking": lambda part: "💭 思考",
    "tool_call": lambda part: f"🔧 调用工具 {literal_inline(part.caption, 40)}",   # 后面再接它动了什么（tool_subject）
    "tool_output": lambda part: f"📤 工具结果 {literal_inline(part.caption, 40)}" + (" ❌" if part.is_error else ""),
    "unknown": lambda part: f"📦 内容块 {literal_inline(part.caption, 40)}",
}


def _result_block(part) -> str:
    """工具结果接在它的调用后面（同一个折叠块里）。"""
    mark = " ❌ 出错" if part.is_error else ""
    return f"**📤 结果{mark}**\n\n{fenced(fold(part.text))}"


def chat_rows(message: dict, number: int, tool_names: dict, clean: Callable[[str], str],
              focus: bool = False) -> list[dict]:
    """第 number 条消息 -> Chatbot 的几行：正文一行，思考 / 工具调用 / 工具结果各一行折叠起来。"""
    return _message_rows(message, number, tool_names, clean, focus)[0]


def _message_rows(message: dict, number: int, tool_names: dict, clean: Callable[[str], str],
                  focus: bool = False) -> tuple[list[dict], list[tuple[int, str]]]:
    """-> (几行, 其中工具调用那几行的 [(行号, 工具名)])：后面只装着工具结果的消息把结果接到这些行里。

    用户的话按原样显示（逐字转义）；助手的 Markdown 照常排版但什么都“动”不了（inert_markdown）；
    代理写进用户消息的命令标签显示成一个命令小条；没有正文的消息不画空气泡，编号写进第一个折叠块的标题。"""
    parts = s11_export.message_parts(message, tool_names)
    role = "user" if message.get("role") == "user" and not message.get("meta") else "assistant"
    header = _header(number, message, focus) + _block_note(message)
    texts = [clean(part.text) for part in parts if part.kind == "text"]
    chip = command_chip("\n".join(texts)) if role == "user" and texts and len(texts) == len(parts) else None
    body: list[str] = []
    rows: list[dict] = []
    calls: list[tuple[int, str]] = []
    content = message.get("content")
    subjects = iter([tool_subject(block) for block in content if isinstance(block, dict)
                     and block.get("type") in ("tool_use", "toolCall")] if isinstance(content, list) else [])
    if chip is not None:
        command, output = chip
        if command:
            body.append("⌨️ 命令 `" + command.replace("`", "ˋ")[:200] + "`")
        if output.strip():
            rows.append(_thought("📟 命令输出", fenced(fold(output))))
    else:
        for part in parts:
            text = fold(clean(part.text))
            if part.kind == "text":
                body.append(literal_markdown(text) if role == "user" else inert_markdown(text))
            elif part.kind == "image":
                body.append("🖼️ " + literal_inline(part.text))
            elif part.kind == "thinking":
                rows.append(_thought(_PART_TITLES["thinking"](part), inert_markdown(text)))
            else:
                title = _PART_TITLES[part.kind](part)
                if part.kind == "tool_call":
                    calls.append((len(rows), part.caption))
                    subject = clean(next(subjects, ""))   # 命令、文件、查询：不点开也看得见这次调用动了什么
                    title += f" · {literal_inline(subject)}" if subject else ""
                rows.append(_thought(title, fenced(text)))
    if isinstance(message.get("expanded"), str):   # 用户打的是 /init 这样的命令：代理展开后的全文点开就能看
        rows.append(_thought("📜 代理展开后的全文", fenced(fold(clean(message["expanded"])))))
    collapse = message.get("role") == "system" or message.get("meta")
    if collapse:
        kind = "🧠 系统提示" if message.get("role") == "system" else "⚙️ 代理注入的文字"
        kind = f"ℹ️ 界面提示（{literal_inline(str(message['notice']), 20)}）" if message.get("notice") else kind
        title = f"#{number} {kind}"
        head = [_thought(("📍 " if focus else "") + title, "\n\n".join(body) or "（空）")]
    elif body or not rows:
        head = [{"role": role, "content": "\n\n".join([header, *body]) if body else f"{header}\n\n（空消息）"}]
    else:   # 只有工具调用 / 思考：不画空气泡，把编号写进第一个折叠块
        head = []
        rows[0] = {**rows[0], "metadata": {**rows[0]["metadata"],
                                           "title": f"{header} · {rows[0]['metadata']['title']}"}}
    if focus:   # 链接 / 搜索指向的这条：短的折叠块默认展开，命中的字就在眼前；长的收着，免得把📍那行顶出窗口
        rows = [{**row, "metadata": {key: value for key, value in row["metadata"].items()
                                     if key != "status" or len(row["content"]) > FOCUS_OPEN_CHARS}} for row in rows]
    offset = len(head)
    return head + rows, [(offset + index, name) for index, name in calls]


def _tool_results_only(message: dict, tool_names: dict) -> list | None:
    """只装着工具结果的消息（Claude 的 user 轮、Pi 的 toolResult）-> 这些结果；别的消息 -> None。"""
    if message.get("meta") or message.get("role") == "assistant":
        return None
    parts = s11_export.message_parts(message, tool_names)
    return parts if parts and all(part.kind == "tool_output" for part in parts) else None


# ── 树：从摘要列表算出整棵树（找孩子、遍历、画前缀都在 s11_tree，这里只挑画法）─────────────────────
# 页面上的树最多缩进 PAGE_MAX_INDENT 层，更深的节点在前缀里写“…（第 N 层）”（与命令行同一条规则）。缩进是不换行空格，
# 不设上限时第 d 层的标签有 3d 个字符：20 多层就把 390 px 的手机页面撑宽，1,000 层的分叉链光是树的标签就有 150 万字
# （随深度平方增长），每次点选都要画、都要传。8 层是 390 px 上 60 层的链也不撑宽页面的缩进
PAGE_MAX_INDENT = 8


def page_tree(forest: Forest, session_id: str) -> list[tuple[dict, str, int]]:
    """session_id 所在的整棵树，先序 -> [(摘要, '│  ├─ ' 这样的前缀, 深度)]；父节点已删除的分支自成一棵树。"""
    steps = walk(forest, root_of(session_id, forest.by_id))
    return [(step.node, prefix, step.depth) for step, prefix in branch_prefixes(steps, PAGE_STYLE, PAGE_MAX_INDENT)]


def active_end(tree: list[tuple[dict, str, int]], mtimes: dict[str, int]) -> str | None:
    """“活动端”：导入的会话以 source.active_end 为准；否则是最近写过的叶子（刚续写的那个分支）。"""
    flagged = {node["session_id"] for node, _, _ in tree if node.get("active_end")}
    # 续写过的节点和装着 Agent 新对话的子节点都记着 active_end：子节点才是 Agent 现在停的地方
    stale = {node["parent_id"] for node, _, _ in tree if node["session_id"] in flagged}
    for node, _, _ in tree:
        if node["session_id"] in flagged - stale:   # 摘要里的 source.active_end（s11_session._remember）
            return node["session_id"]
    parents = {node["parent_id"] for node, _, _ in tree}
    leaves = [node for node, _, _ in tree if node["session_id"] not in parents]
    # 文件时间的精度只有几毫秒：同一刻写下的两个叶子，后创建的那个算数
    newest = max(leaves, key=lambda node: (mtimes.get(node["session_id"], 0), node["created_ns"]), default=None)
    return newest["session_id"] if newest else None


def letters(index: int) -> str:
    """兄弟里的第几个（0 起）-> 'A'、'B' … 'Z'、'AA'、'AB' …（8.11 标签页就叫它们分支 A / 分支 B）"""
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


SUBAGENT = "🤖 子代理"


def branch_names(tree: list) -> dict[str, str]:
    """一棵树（先序，父在子前）-> {节点: 'B'、'B.A' 这样的名字}；根是空串。兄弟按创建先后排字母。
    导入的子代理不是用户造成的分叉：它们不占字母，按先序另外编号 '🤖 子代理 1'、'🤖 子代理 2' …

    主会话 → {A, B → {B.A}}：{根: '', A: 'A', B: 'B', B.A: 'B.A'}"""
    names: dict[str, str] = {}
    counts: dict[str, int] = {}
    agents = 0
    for item in tree:
        node = item[0]
        parent = node.get("parent_id")
        if parent not in names:   # 根（或父节点不在这棵树里）
            names[node["session_id"]] = ""
            continue
        if node.get("subagent"):
            agents += 1
            names[node["session_id"]] = f"{SUBAGENT} {agents}"
            continue
        position = counts.get(parent, 0)
        counts[parent] = position + 1
        parts = (names[parent].lstrip("…").split(".") if names[parent] else []) + [letters(position)]
        # 很深的链只留最后 NAME_LEVELS 层：名字的长度有上限
        names[node["session_id"]] = ("…" if len(parts) > NAME_LEVELS else "") + ".".join(parts[-NAME_LEVELS:])
    return names


def names_in_forest(forest: Forest, session_ids) -> dict[str, str]:
    """每个 ID -> 它在自己那棵树里的名字（与会话树、分支图同一套：branch_names，根是空串）；
    只走这些 ID 所在的树（搜索命中的、对比的两边），不给整个空间的每棵树都排一遍。"""
    names: dict[str, str] = {}
    for session_id in session_ids:
        if session_id in forest.by_id and session_id not in names:
            names.update(branch_names(page_tree(forest, session_id)))
    return names


def branch_label(name: str | None) -> str:
    """branch_names() 给的名字 -> 页面上怎么叫它：'B.A' -> '分支 B.A'；子代理（'🤖 子代理 2'、'🤖 子代理 2.A'）原样；
    没有名字（不知道它在树里排第几）-> '（未命名分支）'，从不写成“分支 ?”。"""
    if not name:
        return UNNAMED_BRANCH
    return name if name.startswith(SUBAGENT) else f"分支 {name}"



def fork_place(node: dict, name: str | None) -> str:
    """树标签里“从哪里长出来”：' · 自第 5 条'；子代理：' · 在第 3 条（启动它的调用）'；根（name 是空串）：''。"""
    if name == "" or node.get("fork_point") is None:
        return ""
    if node.get("subagent") and not node.get("fork_point"):
        return f" · 在第 {node['spawned_at']} 条（启动它的调用）" if node.get("spawned_at") else ""
    return f" · 自第 {node['fork_point']} 条"


def node_caption(node: dict, name: str | None, title_chars: int = TITLE_CHARS) -> str:
    """'分支 B：修复… · ➕ 方案 B：改用 Weak… · 9 条'（纯文本）；根（name 是空串）：'🌱 修复登录服务内存泄漏 · 5 条'；
    子代理：'🤖 子代理 1：查找没有测试的模块 · 全部为新增 · 17 条'（它什么都没继承）；
    name 是 None：不是根、但不知道叫什么 -> '🌿 （未命名分支）：…'"""
    if name == "":
        return f"🌱 {shorten(node['title'], title_chars)} · {node['message_count']} 条"
    added = node.get("first_added") or ""
    if node.get("subagent") and not node.get("fork_point"):
        title = node["title"].removeprefix("子代理：")
        return f"{name}：{shorten(title, 30)} · 全部为新增 · {node['message_count']} 条"
    if node.get("converged_from"):   # 🔀 收敛节点：写它的决定（first_added 取的就是决定，见 s11_tree.first_added）
        return f"🔀 {branch_label(name)} 收敛：{shorten(added or node['title'], 40)} · {node['message_count']} 条"
    plus = f" · ➕ {shorten(added, FIRST_ADDED_SHOWN)}" if added else " · （没有新增消息）"
    return f"🌿 {branch_label(name)}：{shorten(node['title'], 30)}{plus} · {node['message_count']} 条"


def short_caption(node: dict, name: str | None, title_chars: int = 24) -> str:
    """'🌿 分支 B：修复登录服务内存泄漏 · 分支'；根：'🌱 修复登录服务内存泄漏'（全文命中的「会话」一列：
    那条消息已在「上下文」一列里，不再重复分支新增的第一句）"""
    if name == "":
        return f"🌱 {shorten(node['title'], title_chars)}"
    return f"🌿 {branch_label(name)}：{shorten(node['title'], title_chars)}"


def tree_label(node: dict, prefix: str, marker: bool, name: str | None = None, into: dict | None = None) -> str:
    """'├─ 🌿 分支 A：修复… · ➕ 方案 A：为 cache… · 7 条 · 自第 5 条 [4d67e2e6b66c] ◀ 活动端'
    （纯文本：单选框标签不解析 Markdown / HTML）。
    into（s11_tree.converged_into）给出时，收敛节点标“⇠┄ 收敛了 […]”，被收敛的分支标“已收敛到 […]”，另带本段的标签。"""
    if name is None and not prefix:
        name = ""   # 没有前缀的是树根
    fork = fork_place(node, name)
    end = " ◀ 活动端" if marker else ""
    marks = marks_text(node, into) if into is not None else ""
    caption = node_caption(node, name)
    if node.get("converged_from") and caption[:1] == "🌱":
        caption = "🔀" + caption[1:]
    return f"{prefix}{caption}{fork} [{node['session_id']}]{end}{marks}"


# ── mermaid 分支图 ─────────────────────────────────────────────────────────────────────────
def branch_points_only(tree: list[tuple[dict, str, int]], keep: set[str]) -> list[tuple[dict, str | None, int]]:
    """把没有分岔的链压成一条边：只留根、分岔点、叶子和 keep 里的节点。

    根 → a → b → {c, d}  ->  [(根, None, 0), (b, 根, 1), (c, b, 0), (d, b, 0)]（b 的边上省略了 a）
    """
    by_id = {node["session_id"]: node for node, _, _ in tree}
    child_count: dict[str, int] = {}
    for node, _, _ in tree:
        if node["parent_id"] in by_id:
            child_count[node["parent_id"]] = child_count.get(node["parent_id"], 0) + 1
    anchor: dict[str, tuple[str | None, int]] = {}   # 节点 -> (它或它之上最近的保留节点, 其间压掉了几个)
    kept = []
    for node, _, _ in tree:   # 先序：父节点总在子节点之前
        sid, parent = node["session_id"], node["parent_id"]
        above, skipped = anchor[parent] if parent in anchor else (None, 0)
        if parent not in anchor or child_count.get(sid, 0) != 1 or sid in keep:
            kept.append((node, above, skipped))
            anchor[sid] = (sid, 0)
        else:
            anchor[sid] = (above, skipped + 1)
    return kept


def mermaid_map(tree: list[tuple[dict, str, int]], selected: str | None, end: str | None, *,
                links: bool, names: dict[str, str] | None = None) -> str:
    """一棵树 -> mermaid 围栏（Markdown）；太大就只画分岔点，再大就退回文字。"""
    ids = {node["session_id"] for node, _, _ in tree}
    nodes = [(node, node["parent_id"] if node["parent_id"] in ids else None, 0) for node, _, _ in tree]
    note = ""
    if len(nodes) - 1 > MAP_MAX_EDGES:   # 收敛节点和被收敛的分支也留着：虚线要有两端
        converging = {sid for node, _, _ in tree if node.get("converged_from")
                      for sid in [node["session_id"], *node["converged_from"]]}
        nodes = branch_points_only(tree, {sid for sid in (selected, end) if sid} | converging)
        note = f"共 {len(tree):,} 个节点，图里只画根、分岔点和叶子（{len(nodes):,} 个），省略的链写在边上。"
    names = names if names is not None else branch_names(tree)
    source = _mermaid_source(nodes, selected, end, links, names)
    if len(nodes) - 1 > MAP_MAX_EDGES or len(source) > MAP_MAX_CHARS:
        return "\n\n".join([f"共 {len(tree):,} 个节点，超出图能画的范围，下面是文字版（前 "
                            f"{TEXT_MAP_MAX_LINES} 行）。", fenced(_text_map(tree, names or {}), "text")])
    # 图后面跟着同一棵树的文字版：窄屏上图里的字太小，CSS 改显示文字版（宽屏上藏起来）；放不下就只给图。
    # 文字版每行也是一个 ?session= 链接（自己的空间里）：在手机上点一行，和点图里的节点一样（页面的脚本拦下跳转）
    shown = "\n\n".join(filter(None, [note, fenced(source, "mermaid")]))
    text = _text_map_lines(tree, names, links)
    return shown + "\n\n" + text if len(shown) + len(text) <= MAP_MAX_CHARS else shown


def _mermaid_source(nodes: list, selected: str | None, end: str | None, links: bool,
                    names: dict[str, str]) -> str:
    alias = {node["session_id"]: f"n{i}" for i, (node, _, _) in enumerate(nodes)}
    into = converged_into(node for node, _, _ in nodes)
    lines = ['%%{init: {"flowchart": {"wrappingWidth": 260}}}%%', "graph TD"]
    for node, _, _ in nodes:
        mark = " ◀ 活动端" if node["session_id"] == end else ""
        name = names.get(node["session_id"], "")
        head = ("🌿 " + branch_label(name) if not name.startswith(SUBAGENT) else name) if name else "🌱 根"
        if node.get("converged_from"):
            head = "🔀 " + head[2:]
        added = node.get("first_added") or ""
        added_mark = "🔀 决定：" if node.get("converged_from") else "➕ "
        plus = f"<br/>{added_mark}{mermaid_text(added, FIRST_ADDED_SHOWN)}" if name and added else ""
        plus = "<br/>全部为新增" if node.get("subagent") and not node.get("fork_point") else plus
        label = (f"{head}{mark}<br/>{mermaid_text(node['title'])}{plus}<br/>💬 {node['message_count']} 条"
                 f" · 🆔 {mermaid_text(node['session_id'], 16)}")
        label += "".join(f"<br/>🏷️ #{number} {mermaid_text(text, 16)}" for number, text in own_labels(node)[:2])
        if into.get(node["session_id"]):   # 被收敛的分支：文件没改，标记从收敛节点推出来
            label += f"<br/>✅ 已收敛到 {mermaid_text(into[node['session_id']][0], 16)}"
        lines.append(f'    {alias[node["session_id"]]}["{label}"]')
    for node, parent, skipped in nodes:
        if parent in alias:
            via = f" · 省略 {skipped} 个" if skipped else ""
            fork = node.get("fork_point")
            text = f"自第 {fork} 条{via}" if fork is not None else f"分支{via}"
            if node.get("subagent") and not fork:   # 子代理：从启动它的调用那一条引出来
                text = f"第 {node['spawned_at']} 条启动{via}" if node.get("spawned_at") else f"启动{via}"
            lines.append(f'    {alias[parent]} -->|"{text}"| {alias[node["session_id"]]}')
    for node, _, _ in nodes:   # 🔀 收敛：每个 converged_from 一条虚线，指向收敛节点
        for other in node.get("converged_from") or []:
            if other in alias:
                lines.append(f'    {alias[other]} -.->|"🔀 收敛"| {alias[node["session_id"]]}')
    lines += ["    classDef picked stroke:#d97706,stroke-width:4px", "    classDef ends stroke:#16a34a,stroke-width:3px"]
    for sid, style in ((end, "ends"), (selected, "picked")):
        if sid in alias:
            lines.append(f"    class {alias[sid]} {style}")
    if links:   # ID 只含 [A-Za-z0-9_-]（store 校验过），放进链接是安全的；antiscript 下 href 可用、call 不可用
        lines += [f'    click {alias[sid]} href "?session={sid}"' for sid in alias]
    return "\n".join(lines)


def _text_map_lines(tree: list[tuple[dict, str, int]], names: dict[str, str], links: bool) -> str:
    """窄屏上的文字版分支图（Markdown）：每行“树的前缀（行内代码）+ 节点说明”，links 时说明是 ?session= 链接。
    说明是会话文字：逐字符转义（literal_inline），ID 只含 [A-Za-z0-9_-]（store 校验过）。"""
    into = converged_into(node for node, _, _ in tree)
    lines = []
    for node, prefix, _ in tree[:TEXT_MAP_MAX_LINES]:
        sid = node["session_id"]
        caption = literal_inline(f"{node_caption(node, names.get(sid, ''), 30)} [{sid}]")
        marks = literal_inline(marks_text(node, into))
        lead = f"`{prefix}`" if prefix else ""
        lines.append(f"{lead}[{caption}](?session={sid}){marks}" if links else f"{lead}{caption}{marks}")
    if len(tree) > TEXT_MAP_MAX_LINES:
        lines.append(f"…（还有 {len(tree) - TEXT_MAP_MAX_LINES:,} 个节点）")
    return "  \n".join(lines)


def _text_map(tree: list[tuple[dict, str, int]], names: dict[str, str]) -> str:
    into = converged_into(node for node, _, _ in tree)   # 收敛的标记（与会话树里的一样）
    lines = [f"{prefix}{node_caption(node, names.get(node['session_id'], ''), 30)} [{node['session_id']}]"
             f"{marks_text(node, into)}" for node, prefix, _ in tree[:TEXT_MAP_MAX_LINES]]
    if len(tree) > TEXT_MAP_MAX_LINES:
        lines.append(f"…（还有 {len(tree) - TEXT_MAP_MAX_LINES:,} 个节点）")
    return "\n".join(lines)


# ── 错误 → 一句中文 ───────────────────────────────────────────────────────────────────────
def explain(error: BaseException) -> str:
    """异常 -> 页面上的一句话（不含堆栈，也不含服务器路径）。"""
    if isinstance(error, ConflictError):
        return ("⚠️ 这个会话在别的标签页里刚被保存过：页面已重新载入最新内容，你输入的话还在输入框里，"
                "确认后再点一次即可（不会丢任何一轮）。")
    if isinstance(error, SessionError):
        return f"⚠️ {hide_paths(shorten(str(error), 300))}"
    if isinstance(error, OSError):
        return f"⚠️ 读写会话文件失败：{os_error_reason(error)}。"
    return f"⚠️ 操作失败（{type(error).__name__}），详细信息已写入服务器日志。"


# ── 翻页 ───────────────────────────────────────────────────────────────────────────────
def earlier_start(view: View) -> int:
    """“◀ 更早”的新起点（1 起）：当前窗口起点再往前一页；窗口停在末尾（start 为 None）时从最后一页算起。"""
    begin = view.start
    if begin is None:
        total = max(view.chat_numbers, default=0)
        begin = max(0, total - PAGE_SIZE)
    return max(1, begin + 1 - PAGE_SIZE)


# ── 浏览器 ───────────────────────────────────────────────────────────────────────────────
class Explorer:
    """页面的全部动作。只持有 Spaces 和一个私有下载目录；按访客区分的数据都在参数里。"""

    def __init__(self, spaces, *, export_root: str | None = None, upload_root: str | None = None):
        self.spaces = spaces
        # 每空间的缓存都是 bounded.BoundedCache：有界、线程安全、刚改过的文件不算数（见那里的“racy”规则）。
        # 搜索用的正文：{文件的真实路径: [(第几条, 小写正文, 正文)]}，戳 = 文件的 (inode, 大小, 修改时间)
        # （缺得多时先从空间的搜索索引读回，见 search_index.py 与 _all_texts）
        # （手改了文件、修订号和长度都没变，也会重读）；只有验过令牌、能读那个空间的请求才会问到它
        self._texts = BoundedCache(max_size=TEXT_CACHE_CHARS, size=_text_chars)
        self._warming: set = set()            # 正在后台预读正文的空间（仓库目录）
        self._warming_lock = threading.Lock()   # 处理函数在 gradio 的线程池里并发运行（还有后台预读、写索引）
        self._indexing: set = set()           # 正在后台写搜索索引的空间（仓库目录）
        self._warmed = BoundedCache(CHECK_CACHE_SPACES)   # {仓库目录: 上次预读的时刻}
        # 体检结果：{仓库目录: 问题列表}，戳 = 仓库里每个文件的 (inode, 大小, 修改时间)
        self._checks = BoundedCache(CHECK_CACHE_SPACES)
        # 会话列表：{(仓库目录, 是否只读): (摘要, Forest, 列表行)}，戳 = 摘要的指纹
        self._listings = BoundedCache(LISTING_CACHE_SPACES)
        self._local = threading.local()   # 同一个请求里动作已经读过的列表，画页面时接着用（不再读一遍）
        # 与 8.11 标签页共用本进程的私有（0700）下载目录（downloads.py）：同一套检查、同一种清理，进程退出时删掉
        self.export_root = export_root or downloads.private_export_root()
        self.upload_root = os.path.realpath(upload_root) if upload_root else None

    # ── 解析来源 ──────────────────────────────────────────────────────────────
    def _space(self, token, view: View, teacher: str | None):
        """令牌 + 视图 -> (要读的空间, 自己的空间)。每次调用都重新验令牌。"""
        own = self.spaces.open(token)
        if view.source == MINE:
            return own, own
        if view.source == SHELF:
            return self.spaces.shelf(), own
        if view.source.startswith(SPACE_PREFIX) and self._is_teacher(teacher):
            return self.spaces.view(teacher, view.source[len(SPACE_PREFIX):]), own
        raise ExplorerError("只有老师能查看别人的空间")

    def space_for(self, token, view: View, teacher: str | None = None):
        """_space 的公开入口：浏览器里别的面板（history_panel）的每个动作也这样重新验令牌、认来源。"""
        return self._space(token, view, teacher)

    def _is_teacher(self, teacher: str | None) -> bool:
        return bool(teacher) and self.spaces.is_teacher(teacher)

    def _selected(self, view: View) -> str:
        if not view.session_id:
            raise ExplorerError("请先在列表或会话树里选一个会话")
        return view.session_id

    # ── 动作：每个都返回整页 ──────────────────────────────────────────────────────
    def _act(self, token, view: View, teacher, action: Callable, *, draft: str | None = None,
             check: bool = False, asks: bool = False, area: str = "") -> Page:
        """执行 action(space, own) -> (新视图, 提示, 额外字段)，失败时给中文提示并照常画出页面。
        check=True 时顺便体检整个空间（要读遍每个文件，所以只在列表可能变了的动作上做）。
        asks=True 的动作（清空回收站、永久删除、发布）只把要确认的事放进 view.pending；别的动作都清掉它。"""
        extra: dict = {}
        touched = None
        self._local.__dict__.pop("listing", None)   # 只给同一个请求用（见 sibling）
        view = dataclasses.replace(view, pending=()) if view.pending and not asks else view
        try:
            space, own = self._space(token, view, teacher)
            view, notice, extra = action(space, own)
            if "touched" in extra:   # 动作自己知道改了哪几个会话文件：体检只补算这部分（见 _check）
                extra = dict(extra)
                touched = extra.pop("touched")
            if view.pending and not asks:   # 动作从闭包里拿到的还是旧视图
                view = dataclasses.replace(view, pending=())
        except Exception as error:   # 页面只给一句话；意外的错误连同堆栈写进服务器日志
            if not isinstance(error, (SessionError, OSError)):
                log.exception("explorer action failed")
            notice = explain(error)
            view = dataclasses.replace(view, pending=())
            if isinstance(error, ConflictError):
                view = dataclasses.replace(view, revision=-1)   # 重新读入最新修订
            extra = {"draft": draft} if draft is not None else {}
            touched = None
            if area == "import":   # 导入失败也写进导入报告：报告框不会空着（纯文字框：去掉 Markdown 的转义）
                extra["report"] = unescaped(notice)
        return self.render(token, view, teacher, notice, check=check, area=area, touched=touched, **extra)

    def open_page(self, token, teacher: str | None = None, session_id: str | None = None,
                  message=None, remembered: str | None = None) -> Page:
        """页面载入：?session=<id>[&m=<k>] 在自己的空间里选中它（并突出第 k 条）；没有链接时回到
        这个浏览器上次选中的会话（remembered，来自 gr.BrowserState，照样在空间里重新核对）。"""
        def action(space, own):
            wanted = session_id or remembered
            if not wanted:
                return View(), "", {}
            try:
                validate_session_id(wanted)
                node = space.store.load(wanted)
            except SessionError:
                node = None
            if node is None:
                if not session_id:   # 记住的会话已删掉或不在这个空间：安静地什么都不选
                    return View(), "", {"fork_reset": True}
                return View(), (f"⚠️ 链接里的会话 {literal_inline(session_id, 64)} 不在你的空间里："
                                "私人空间属于打开它的浏览器（和地址），别人的链接在这里打不开。"), {"fork_reset": True}
            focus = _message_number(message, len(node.messages)) if session_id else None
            # 链接里的第 k 条就是分叉位置；重新载入（remembered）时什么都没选：分叉按钮会拒绝，不会是 0
            return (View(session_id=wanted, revision=-1, focus=focus, end=focus), "",
                    {"fork_reset": True, "fork_pick": fork_control.link_pick(wanted, focus)})
        return self._act(token, View(), teacher, action, check=True)   # 页面载入：提示写在页面顶上

    def refresh(self, token, view: View, query: str | None = None, teacher: str | None = None) -> Page:
        """重新读一遍（query 不是 None 时换成这个搜索词）。换了搜索词只是搜索：不顺便体检整个空间
        （体检要读遍每个文件，🔄 刷新、搜索词没变时才做），全文搜索才放得进一次点击的时间预算。"""
        check = query is None or str(query)[:200] == view.query
        if query is not None:
            view = dataclasses.replace(view, query=str(query)[:200])
        return self._act(token, view, teacher, lambda space, own: (view, "", {}), check=check, area="list")

    def switch_source(self, token, view: View, source: str, teacher: str | None = None) -> Page:
        """切换来源：自己的空间、共享书架，或（老师）某个学生的空间。"""
        if source not in (MINE, SHELF) and not str(source).startswith(SPACE_PREFIX):
            return self.render(token, view, teacher, "⚠️ 未知的来源")
        return self._act(token, View(source=source), teacher,
                         lambda space, own: (View(source=source), "", {"fork_reset": True}), check=True)

    def select(self, token, view: View, session_id: str, teacher: str | None = None, *, area: str = "list") -> Page:
        def action(space, own):
            if not os.path.isfile(space.store.path_of(session_id)):   # path_of 先校验 ID，不读文件内容
                raise SessionNotFound(f"未找到会话：{session_id}（不在当前空间里）")
            changed = session_id != view.session_id
            return dataclasses.replace(view, session_id=session_id, revision=-1, start=None, focus=None,
                                       end=None), "", {"fork_reset": changed}
        return self._act(token, view, teacher, action, area=area)

    def map_pick(self, token, view: View, value, teacher: str | None = None) -> Page:
        """点分支图里的一个节点：页面的脚本把 '<ID>#<序号>' 写进隐藏的点选框（序号让同一个节点点两次也算两次），
        这里和在会话树里点选一样——令牌重新核对，ID 只认当前空间里的；不对就写一句中文，页面什么都不变。"""
        text = value if isinstance(value, str) else ""
        session_id = text[:MAP_PICK_CHARS].split("#", 1)[0].strip()
        if not session_id or len(text) > MAP_PICK_CHARS:
            return self._act(token, view, teacher, _refuse("分支图传来的会话 ID 是空的或太长，没有选中任何会话"),
                             area="map")
        if not _ID.fullmatch(session_id):   # 先查：store 的报错会把原样的 ID 写进提示，这里转义后再说
            return self._act(token, view, teacher, _refuse(
                f"分支图传来的会话 ID {literal_inline(session_id, 64)} 不合法（只允许字母、数字、- 和 _），"
                "没有选中任何会话"), area="map")
        return self.select(token, view, session_id, teacher, area="map")

    def jump(self, token, view: View, session_id: str, message=None, teacher: str | None = None) -> Page:
        """搜索命中 -> 打开它所在的节点，对话窗口停在那条消息上并突出它。"""
        def action(space, own):
            if not isinstance(session_id, str) or not _ID.fullmatch(session_id):   # 事件数据可以是伪造的：转义后再说
                raise ExplorerError(f"搜索命中里的会话 ID {literal_inline(str(session_id), 64)} 不合法")
            node = space.store.load(session_id)
            if node is None:
                raise SessionNotFound(f"未找到会话：{session_id}（不在当前空间里）")
            focus = _message_number(message, len(node.messages))
            return dataclasses.replace(view, session_id=session_id, revision=node.revision, start=None,
                                       focus=focus, end=focus), "", {"fork_reset": session_id != view.session_id}
        return self._act(token, view, teacher, action, area="list")

    def sibling(self, token, view: View, step: int = 1, teacher: str | None = None) -> Page:
        """分岔处的“◀ ▶”：换到同一个父节点的上一个 / 下一个分支（兄弟按创建先后）。"""
        def action(space, own):
            session_id = self._selected(view)
            listing = self._listing(space.store, space.read_only)
            self._local.listing = (space.store.storage_dir, listing)   # 画页面时接着用，不再读一遍
            forest = listing.forest
            node = forest.by_id.get(session_id)
            parent = node.get("parent_id") if node else None
            brothers = forest.children(parent) if parent in forest.by_id else []
            ids = [brother["session_id"] for brother in brothers]
            if session_id not in ids or len(ids) < 2:
                raise ExplorerError("这个会话没有兄弟分支可以切换")
            target = ids[(ids.index(session_id) + (1 if int(step) > 0 else -1)) % len(ids)]
            return dataclasses.replace(view, session_id=target, revision=-1, start=None, focus=None,
                                       end=None), "", {"fork_reset": True}
        return self._act(token, view, teacher, action, area="path")

    def previous_sibling(self, token, view: View, teacher: str | None = None) -> Page:
        return self.sibling(token, view, -1, teacher)

    def next_sibling(self, token, view: View, teacher: str | None = None) -> Page:
        return self.sibling(token, view, 1, teacher)

    def window(self, token, view: View, start: int | None, teacher: str | None = None) -> Page:
        """对话路径翻页：start 是第几条（1 起）；None 或空回到末尾。"""
        def action(space, own):
            begin = _as_position(start)
            return dataclasses.replace(view, start=begin, end=None), "", {}
        return self._act(token, view, teacher, action, area="path")

    def earlier(self, token, view: View, teacher: str | None = None) -> Page:
        """“◀ 更早”：从当前窗口起点再往前翻一页。"""
        return self.window(token, view, earlier_start(view), teacher)

    def latest(self, token, view: View, teacher: str | None = None) -> Page:
        """“最新 ▶”：回到最后 PAGE_SIZE 条。"""
        return self.window(token, view, None, teacher)

    def show_only(self, token, view: View, shown, teacher: str | None = None) -> Page:
        """对话的过滤（CHAT_FILTERS）：全部 / 隐藏工具与思考 / 只看我的提问。窗口位置不变。"""
        def action(space, own):
            if shown not in CHAT_FILTERS:
                raise ExplorerError(f"对话只能这样显示：{' / '.join(CHAT_FILTERS.values())}")
            return dataclasses.replace(view, shown=shown), "", {}
        return self._act(token, view, teacher, action, area="path")

    def fork(self, token, view: View, at, first_message: str = "", title: str = "",
             teacher: str | None = None) -> Page:
        """在第 at 条之后分叉（保留前 at 条）；只读来源（书架、老师查看）复制进自己的空间。
        at 是分叉控件交回的选择（fork_control.py："<会话>#k"，k=0 是明确选了「从头分叉」）或接口给的整数；
        空着就不猜：先点对话里的一条消息。"""
        def action(space, own):
            parent_id = self._selected(view)
            keep = fork_control.position(at, parent_id)
            if keep is None:
                if view.last_fork and view.last_fork == parent_id:   # 双击、或成功后又点了一次：不再分一个
                    return view, (f"✅ 刚分叉出的新会话 {parent_id} 就是现在显示的这个；要再分叉，"
                                  "先在对话里点一条消息"), {}
                raise fork_control.nothing_picked()
            return self._fork(space, own, parent_id, keep, first_message, title)
        return self._act(token, view, teacher, action, area="fork")

    def edit_fork(self, token, view: View, index, text, teacher: str | None = None) -> Page:
        """改写对话里的一条用户消息 = 在它之前分叉，改写后的话成为新分支的第一条（聊天软件的习惯）。
        index 是对话框里的行号（Chatbot 的 edit 事件），由服务器端的 view.chat_numbers 换成消息编号。"""
        def action(space, own):
            parent_id = self._selected(view)
            numbers = view.chat_numbers
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(numbers):
                raise ExplorerError("找不到你改写的那条消息，请重新选中会话再试")
            number = numbers[index]
            node = space.store.load(parent_id)
            if node is None:
                raise SessionNotFound(f"未找到会话：{parent_id}")
            original = node.messages[number - 1] if 0 < number <= len(node.messages) else None
            if not isinstance(original, dict) or original.get("role") != "user":
                raise ExplorerError(f"第 {number} 条不是用户消息：只有用户的话可以改写成新分支")
            new_text = _edited_text(text)
            if new_text.strip() == s11_tree.content_text(original.get("content")).strip():
                raise ExplorerError("这条消息没有改动：改几个字再提交，才会分出新分支")
            return self._fork(space, own, parent_id, number - 1, new_text, "")
        return self._act(token, view, teacher, action, area="fork")

    def _fork(self, space, own, parent_id: str, keep: int, first_message, title):
        new = [{"role": "user", "content": _turn_text(first_message)}] if str(first_message or "").strip() else []
        name = _title_text(title) or _branch_title(space, parent_id)
        own.writable().throttle()
        if space is own:   # 按确切的字节检查限额、预留，写完记下用量（Space.fork）
            child = own.fork(parent_id, new, at=keep, title=name or None)
        else:   # 书架或老师查看：祖先链以原 ID 复制进自己的空间，再在自己的空间里分叉
            child = own.fork_from(space, parent_id, at=keep, new_messages=new, title=name or None)
        done = fork_control.result_line(keep, child.session_id, len(new), len(child.messages))
        return (View(source=MINE, session_id=child.session_id, revision=child.revision, last_fork=child.session_id),
                done, {"fork_reset": True, "touched": (child.session_id,) if space is own else None})

    def resume(self, token, view: View, text: str, role: str = "user", teacher: str | None = None) -> Page:
        """续写：给选中节点追加读者输入的一轮并保存。页面上的修订号过期时 save() 抛 ConflictError。"""
        def action(space, own):
            session_id = self._selected(view)
            if role not in ROLES:
                raise ExplorerError(f"角色只能是 {' / '.join(ROLES)}")
            turn = {"role": role, "content": _turn_text(text)}
            space.writable().throttle()
            node = space.store.load(session_id)
            if node is None:
                raise SessionNotFound(f"未找到会话：{session_id}")
            node.revision = view.revision   # 用页面读入时的修订号保存：别人先存过就冲突，绝不覆盖
            node.messages.append(turn)
            space.save(node)   # 先按确切的字节（整个新文件）检查限额，写完记下用量
            done = (f"✅ 已恢复并续写保存：会话 {session_id} 现在有 {len(node.messages)} 条消息"
                    f"（修订 {node.revision}）")
            return dataclasses.replace(view, revision=node.revision, start=None, focus=None, end=None), done, \
                {"draft": ""}
        return self._act(token, view, teacher, action, draft=str(text or ""), area="resume")

    def export(self, token, view: View, teacher: str | None = None) -> Page:
        """导出选中节点：脱敏的 .md 与 .html 下载，外加 Markdown 源文的预览。
        读一次、脱敏一次，两种格式都从同一份 s11_export.prepare() 渲染；内容没变时直接复用上次的文件，
        每个访客的空间最多留 downloads.EXPORTS_PER_OWNER 份。"""
        def action(space, own):
            session_id = self._selected(view)
            stamp = _file_stamps(space.store, [session_id])   # 先看文件再读：读完之后被改过的，下次指纹就不同
            node = space.store.load(session_id)
            if node is None:
                raise SessionNotFound(f"未找到会话：{session_id}")
            lineage = space.store.lineage(session_id)
            key = _digest([space.space_id, session_id, node.revision, stamp,
                           [(s["session_id"], s["title"], s["message_count"]) for s in lineage]])
            paths = downloads.reuse(session_id, own.space_id, key, export_root=self.export_root)
            again = "，内容没变，用的是上次导出的文件"
            if paths is None:
                prepared = s11_export.prepare(node.to_dict(), lineage, redact=True)
                # 片段逐个编码、写进文件，不先拼成一整个字符串：一个 emoji 就让那个字符串每个字符占 4 字节
                paths = downloads.offer(session_id, s11_export.markdown_chunks(prepared),
                                        s11_export.html_chunks(prepared), export_root=self.export_root,
                                        owner=own.space_id, key=key)
                again = ""
            with open(paths[0], encoding="utf-8", newline="") as handle:   # 预览就是文件的开头，换行符原样
                markdown = handle.read(PREVIEW_CHARS + 1)
            preview = markdown if len(markdown) <= PREVIEW_CHARS else (
                markdown[:PREVIEW_CHARS] + f"\n\n…（预览只显示前 {PREVIEW_CHARS:,} 字符，完整内容请下载）")
            sizes = [human_size(os.path.getsize(path)) for path in paths]
            done = f"✅ 已导出会话 {session_id}（已脱敏{again}）：Markdown {sizes[0]}，HTML {sizes[1]}"
            return view, done, {"downloads": paths, "preview": preview}
        return self._act(token, view, teacher, action, area="export")

    def delete(self, token, view: View, teacher: str | None = None) -> Page:
        """删除到回收站；子分支不受影响（每个节点都带着完整历史）。"""
        def action(space, own):
            session_id = self._selected(view)
            store = space.writable().store
            node = store.load(session_id)
            if node is None or not space.delete(session_id):   # 经过空间：记下用量，下一次检查不必重数
                raise SessionNotFound(f"未找到会话：{session_id}")
            deleted = ((session_id, node.title),) + tuple(d for d in view.deleted if d[0] != session_id)
            parent = node.parent_id if node.parent_id and store.load(node.parent_id) is not None else None
            done = f"🗑️ 已把会话 {session_id} 移进回收站，可以在下方「回收站」里取回"
            return View(source=view.source, session_id=parent, revision=-1, query=view.query,
                        deleted=deleted[:TRASH_SHOWN]), done, {"touched": (session_id,)}
        return self._act(token, view, teacher, action, check=True, area="trash")

    def restore(self, token, view: View, session_id: str, teacher: str | None = None) -> Page:
        def action(space, own):
            validate_session_id(session_id)
            store = space.writable().store
            if not space.restore(session_id):   # 先看有没有多一个会话的位置
                raise SessionNotFound(f"回收站里没有会话 {session_id}")
            deleted = tuple(d for d in view.deleted if d[0] != session_id)
            done = f"♻️ 已从回收站取回会话 {session_id}"
            # 取回的文件读得出来（load 会核对每一块），它自己就没有文件层面的问题：体检只补算父子关系
            touched = (session_id,) if store.load(session_id) is not None else None
            return dataclasses.replace(view, session_id=session_id, revision=-1, start=None, focus=None, end=None,
                                       deleted=deleted), done, {"fork_reset": True, "touched": touched}
        return self._act(token, view, teacher, action, check=True, area="trash")

    # ── 清空回收站 / 永久删除：先说清楚会删什么、释放多少，确认后才做 ──────────────────────────────
    def ask_empty_trash(self, token, view: View, teacher: str | None = None) -> Page:
        """“🧹 清空回收站”：只把要删的副本和大小放进 view.pending，等读者点「确认」。"""
        def action(space, own):
            store = space.writable().store
            copies = s11_trash.entries(store.storage_dir)
            leftovers = store.leftover_bytes()   # 被 kill -9 留下的临时文件、没人引用的块：清空时一并释放
            if not copies and not leftovers:
                raise ExplorerError("回收站是空的，没有要清空的")
            ids = {entry.session_id for entry in copies}
            size = human_size(sum(entry.size for entry in copies) + leftovers)
            text = (f"🧹 确认清空回收站？将永久删除 {len(ids)} 个会话的 {len(copies)} 份副本和中断留下的残留，"
                    f"至少释放 {size}（大会话独用的块随之删除，另算）。删除后不能恢复。")
            fingerprint = tuple(sorted(entry.path for entry in copies))
            return dataclasses.replace(view, pending=("empty_trash", "", fingerprint, text)), "", {}
        return self._act(token, view, teacher, action, asks=True, area="trash")

    def ask_purge(self, token, view: View, session_id: str | None, teacher: str | None = None) -> Page:
        """“🔥 永久删除”回收站里选中的那个会话（它的每一份副本）：先说大小，确认后才删。"""
        def action(space, own):
            store = space.writable().store
            if not session_id:
                raise ExplorerError("请先在「回收站」里选一个会话")
            validate_session_id(session_id)
            if not _restorable(store, session_id):
                raise ExplorerError(f"会话 {session_id} 还在仓库里，不在回收站：要永久删除，请先把它移进回收站")
            copies = [entry for entry in s11_trash.entries(store.storage_dir) if entry.session_id == session_id]
            if not copies:
                raise SessionNotFound(f"回收站里没有会话 {session_id}")
            size = human_size(sum(entry.size for entry in copies))
            text = (f"🔥 确认永久删除会话 `{session_id}`？回收站里它的 {len(copies)} 份副本都会删除，至少释放 {size}。"
                    "删除后不能恢复。")
            fingerprint = tuple(sorted(entry.path for entry in copies))
            return dataclasses.replace(view, pending=("purge", session_id, fingerprint, text)), "", {}
        return self._act(token, view, teacher, action, asks=True, area="trash")

    def cancel(self, token, view: View, teacher: str | None = None) -> Page:
        """不做等确认的那件事。"""
        done = "已取消，什么都没有删除或发布" if view.pending else ""
        return self._act(token, view, teacher, lambda space, own: (dataclasses.replace(view, pending=()), done, {}),
                         area="confirm")

    def confirm(self, token, view: View, teacher: str | None = None) -> Page:
        """做等确认的那件事；确认之后情况变了（回收站里多了或少了副本、会话又被改过）就重新问一次。"""
        if not view.pending:
            return self.render(token, view, teacher, "⚠️ 没有等待确认的操作", check=False)
        kind, target, fingerprint, _text = view.pending

        def action(space, own):
            if kind == "publish":
                return self._confirm_publish(view, target, fingerprint, teacher)
            store = space.writable().store
            copies = [entry for entry in s11_trash.entries(store.storage_dir)
                      if kind == "empty_trash" or entry.session_id == target]
            if tuple(sorted(entry.path for entry in copies)) != fingerprint:
                raise ExplorerError("回收站在你确认之前变了：什么都没删，请重新点一次，看清新的内容再确认")
            before = folder_bytes(store.storage_dir)
            if kind == "empty_trash":
                removed = store.empty_trash()
                what = f"🧹 已清空回收站：永久删除了 {removed} 份副本"
            else:
                store.delete(target, purge=True)
                what = f"🔥 已永久删除会话 {target}（{len(copies)} 份副本）"
            search_index.discard(store.storage_dir)   # 永久删除的正文也不留在搜索索引里（下一次冷搜索重建）
            freed = max(0, before - folder_bytes(store.storage_dir))
            deleted = tuple(d for d in view.deleted if kind == "purge" and d[0] != target)
            return dataclasses.replace(view, pending=(), deleted=deleted), f"{what}，释放了 {human_size(freed)}", {}
        return self._act(token, view, teacher, action, check=True, area="confirm")   # 写在「确认」按钮下面

    # ── 导入 ───────────────────────────────────────────────────────────────────
    def import_upload(self, token, view: View, path: str | None, teacher: str | None = None) -> Page:
        """导入上传的会话记录（.jsonl；Gemini CLI 旧版是一个 .json 文档）。上传名只当文字显示；真正读的是 Gradio 缓存里的那份。"""
        def action(space, own):
            return self._import(own, self._checked_upload(own, path))
        return self._act(token, view, teacher, action, area="import")

    def import_example(self, token, view: View, name: str, teacher: str | None = None) -> Page:
        """导入 examples/ 里的一个示例：只接受 list_examples() 列出的名字，浏览器给的字符串从不拼成路径。"""
        def action(space, own):
            import s11_import
            paths = {os.path.basename(item): os.path.join(s11_import.EXAMPLES_DIR, os.path.basename(item))
                     for item in s11_import.list_examples()}
            if name not in paths:
                raise ExplorerError(f"没有叫 {literal_inline(str(name), 80)} 的示例")
            return self._import(own, paths[name])
        return self._act(token, view, teacher, action, area="import")

    def check_upload(self, token, path) -> str:
        """文件刚传上来（还没导入）就看一眼：名字不是 .jsonl / .json、或太大 -> 一句中文（写在导入按钮下面，
        不是 gradio 的英文弹窗）；没问题 -> ""。照样先验令牌。"""
        try:
            own = self.spaces.open(token)
            self._checked_upload(own, path)
        except (SessionError, OSError) as error:
            return explain(error)
        return ""

    def refuse_upload(self, token, view: View, value, teacher: str | None = None) -> Page:
        """浏览器里选了 / 拖进来的文件太大或后缀不对：页面的脚本在 gradio 上传（和它的英文弹窗）之前拦下它，
        把 {"kind": "size"|"type", "name": 文件名, "size": 字节数}#序号 写进隐藏框；这里照样先验令牌，
        在导入按钮下面写一句中文，说清限额或接受的后缀。文件名只当文字显示。"""
        def action(space, own):
            text = value if isinstance(value, str) else ""
            try:
                facts = json.loads(text[:REFUSAL_CHARS].rsplit("#", 1)[0]) if len(text) <= REFUSAL_CHARS else None
            except ValueError:
                facts = None
            if not isinstance(facts, dict) or facts.get("kind") not in ("size", "type"):
                raise ExplorerError("没有看懂浏览器报来的上传问题：请重新选择文件")
            name = literal_inline(str(facts.get("name") or "（没有名字）"), 80)
            if facts["kind"] == "type":
                raise ExplorerError(f"只能导入 {'、'.join(UPLOAD_SUFFIXES)} 文件，收到 {name}：没有上传")
            size = facts.get("size")
            has = f"有 {human_size(size)}，" if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else ""
            raise ExplorerError(f"文件 {name} {has}超过每个文件 {human_size(own.limits.max_upload_bytes)} 的上传上限："
                                "没有上传，请换一个小一点的文件")
        return self._act(token, view, teacher, action, area="import")

    def _checked_upload(self, own, path) -> str:
        if not path or not isinstance(path, str):
            raise ExplorerError("请先选择一个会话记录文件（.jsonl，Gemini CLI 的旧版记录是 .json；连子代理文件夹一起是 .zip）")
        real = os.path.realpath(path)
        if self.upload_root and os.path.commonpath([real, self.upload_root]) != self.upload_root:
            raise ExplorerError("上传的文件不在上传目录里，已拒绝")
        if not os.path.isfile(real):
            raise ExplorerError("上传的文件已不存在，请重新上传")
        if not real.lower().endswith(UPLOAD_SUFFIXES):
            raise ExplorerError(f"只能导入 {'、'.join(UPLOAD_SUFFIXES)} 文件，收到 {literal_inline(os.path.basename(real), 80)}")
        own.require_upload(os.path.getsize(real))
        return real

    def _import(self, own, path: str):
        import s11_import
        target = own.writable()
        target.throttle()
        # 限额只在写之前查一次（budget.before，按确切的字节数）：再早查一次要多扫一遍空间目录（2,000 个会话约 5 ms），
        # 只为空间已满时省下读这个文件的工夫
        report = s11_import.import_file(path, target.store, max_bytes=target.limits.max_upload_bytes,
                                        budget=_space_budget(s11_import.WriteBudget, target))
        picked = report.active_id or (report.node_ids[0] if report.node_ids else None)
        done = (f"📥 已导入 {literal_inline(os.path.basename(path), 80)}：{len(report.node_ids)} 个节点，"
                f"跳过 {len(report.skipped)} 行") + _import_outcome(report)
        return View(source=MINE, session_id=picked, revision=-1), done, {"report": report.describe(),
                                                                         "fork_reset": True}

    # ── 老师 ───────────────────────────────────────────────────────────────────
    def open_space(self, token, view: View, space_id: str, teacher: str | None = None) -> Page:
        """老师打开某个学生的空间（只读）。"""
        if not self._is_teacher(teacher):
            return self.render(token, view, None, "⚠️ 只有老师能查看别人的空间")
        return self.switch_source(token, view, SPACE_PREFIX + str(space_id), teacher)

    def publish(self, token, view: View, teacher: str | None = None) -> Page:
        """老师要把选中的会话（连同它的祖先）放上共享书架：先算出脱敏后的那一份——会写几个节点、
        哪些要换新 ID、每种脱敏各遮住几处——放进 view.pending，老师点「确认」（confirm）才真的发布。"""
        def action(space, own):
            if not self._is_teacher(teacher):
                raise ExplorerError("只有老师能发布到共享书架")
            if space.space_id == self.spaces.shelf().space_id:
                raise ExplorerError("这个会话已经在共享书架上了")
            session_id = self._selected(view)
            plan = self.spaces.publish_plan(teacher, space.space_id, session_id)
            text = _publish_text(session_id, plan)
            fingerprint = (space.space_id, _publish_fingerprint(space.store, session_id, plan))
            return (dataclasses.replace(view, pending=("publish", session_id, fingerprint, text)),
                    "👇 确认条就在下面：看清脱敏计数，再点「✅ 确认」", {})
        return self._act(token, view, teacher, action, asks=True, area="teacher")

    def _confirm_publish(self, view: View, session_id: str, fingerprint: tuple, teacher):
        if not self._is_teacher(teacher):
            raise ExplorerError("只有老师能发布到共享书架")
        space_id, expected = fingerprint
        plan = self.spaces.publish_plan(teacher, space_id, session_id)
        if _publish_fingerprint(self.spaces.view(teacher, space_id).store, session_id, plan) != expected:
            raise ExplorerError("会话在你确认之前变了：这次没有发布，请重新点「发布」，看清新的脱敏计数再确认")
        done = self.spaces.publish_plan(teacher, space_id, session_id, write=True)
        renamed = (f"；书架上已有同 ID 而内容不同的会话，没有覆盖它，这一份的 ID 是 {done.leaf_id}"
                   if done.leaf_id != session_id else "")
        masked = _counts_text(done.counts) or "没有发现要脱敏的内容"
        return (dataclasses.replace(view, pending=()),
                f"📚 已脱敏并发布到共享书架：{done.leaf_id}（{masked}；所有同学都能打开和分叉，但不能修改）{renamed}",
                {})

    def unpublish(self, token, view: View, teacher: str | None = None) -> Page:
        def action(space, own):
            if not self._is_teacher(teacher):
                raise ExplorerError("只有老师能从共享书架撤下会话")
            if view.source != SHELF:
                raise ExplorerError("请先切到「共享书架」，再选要撤下的会话")
            session_id = self._selected(view)
            if not self.spaces.unpublish(teacher, session_id):
                raise SessionNotFound(f"书架上没有会话 {session_id}")
            return View(source=SHELF), f"已从共享书架撤下 {session_id}", {}
        return self._act(token, view, teacher, action, check=True, area="teacher")

    # ── 全文搜索 ───────────────────────────────────────────────────────────────
    def _search(self, store, summaries: list[dict], query: str, forest: Forest | None = None) -> tuple[list, str]:
        """当前来源里每条消息的全文搜索（不区分大小写，几个词都要出现在同一条里）。
        -> ([[会话, 第几条, 上下文, ID], …], 说明)。继承来的前缀只在它最早出现的节点里算一次。
        「会话」一列用会话树里的名字（'🌿 分支 B.A：…'），同名的分支也分得清。"""
        words = str(query or "").casefold().split()
        hits, matched = [], 0
        for summary, texts in zip(summaries, self._all_texts(store, summaries)):   # 最近创建的在前
            for number, folded, text in texts:
                # 先只看第一个词：绝大多数消息里没有它，不必为每条消息再走一遍所有的词
                if words[0] in folded and all(word in folded for word in words[1:]):
                    matched += 1
                    if len(hits) < SEARCH_HITS:
                        hits.append([summary, str(number), _context(text, folded, words[0]), summary["session_id"]])
        names = names_in_forest(forest or Forest(summaries), {hit[3] for hit in hits})
        hits = [[short_caption(summary, names.get(sid)), *rest, sid] for summary, *rest, sid in hits]
        more = f"，列出前 {SEARCH_HITS} 处" if matched > len(hits) else ""
        note = (f"🔎 消息正文里找到 {matched:,} 处{more}（点一行跳到那条消息）" if matched
                else "🔎 消息正文里没有找到")
        return hits, note

    def _all_texts(self, store, summaries: list[dict]) -> list:
        """每个摘要自己新增的每条消息 [(第几条, 小写正文, 正文)]，与 summaries 一一对应。
        先查内存里的缓存；没缓存住的很多（INDEX_MIN_MISSES 个以上：重启之后、空间被挤出了缓存）时先查空间的
        搜索索引（search_index：一个文件，不必打开每个会话文件）；还没有的才 load() 会话文件。
        读过的会话文件里有能存进索引的（不是刚改过的），就在后台重写索引。"""
        keys = [self._text_key(store, summary) for summary in summaries]
        found = [self._texts.get(path, key) if path else [] for path, key in keys]
        misses = sum(texts is None for texts in found)
        if not misses:
            return found
        index = search_index.read(store.storage_dir) if misses >= INDEX_MIN_MISSES else {}
        news = 0
        for at, (summary, (path, key)) in enumerate(zip(summaries, keys)):
            if found[at] is None:
                found[at] = self._indexed_texts(index, summary, path, key)
            if found[at] is None:
                found[at] = self._read_texts(store, summary, path, key)
                news += found[at] is not None and key is not None and not is_racy(key[2])
        gone = index.keys() - {summary["session_id"] for summary in summaries}   # 索引里还有已经不在的会话
        if news or gone:
            self._write_index(store.storage_dir, summaries, keys)
        return [texts or [] for texts in found]

    def _text_key(self, store, summary: dict) -> tuple:
        """-> (会话文件的路径, 文件的 (inode, 大小, 修改时间))；ID 不合法时 (None, None)，文件读不到时戳是 None。
        戳就是 store 的摘要缓存的键（store.stamp_of）：这次 list_sessions() 刚 lstat 核对过，不再 lstat 一遍。
        续写、分叉、手工改过（哪怕修订号和长度都没变），下一次列出时戳就变，正文重读；正文总在取戳之后才读，
        所以缓存里一个戳下的正文只会比它新，不会比它旧。不在摘要缓存里（列出之后被删了）才自己 lstat。"""
        try:
            path = store.path_of(summary["session_id"])
        except SessionError:
            return None, None
        return path, store.stamp_of(path) or file_stamp(path)

    def _indexed_texts(self, index: dict, summary: dict, path: str, key: tuple) -> list | None:
        """索引里这个会话的正文（戳对得上才算），放进缓存；没有 -> None。"""
        first = (summary.get("fork_point") or 0) + 1
        texts = search_index.texts_for(index, summary["session_id"], key, first, summary.get("message_count") or 0)
        return None if texts is None else self._texts.put(path, key, texts, mtime_ns=key[2])

    def _read_texts(self, store, summary: dict, path: str, key: tuple) -> list | None:
        """load() 这个会话，取它自己新增的每条消息的正文；读不了（坏文件、刚被删掉）-> None，不缓存。"""
        try:
            node = store.load(summary["session_id"])
        except (OSError, SessionError):
            return None
        if node is None:
            return None
        names = s11_export.tool_call_names(node.messages)
        texts = []
        for index in range(node.fork_point or 0, len(node.messages)):
            message = node.messages[index]
            if not isinstance(message, dict):
                continue
            text = " ".join(" ".join(part.text.split()) for part in s11_export.message_parts(message, names))
            if text:
                texts.append((index + 1, search_index.folded(text), text))
        if key is None:   # 列出之后文件就没了（或读不了戳）：这次照用，不缓存
            return texts
        return self._texts.put(path, key, texts, mtime_ns=key[2])

    def _write_index(self, folder: str, summaries: list[dict], keys: list) -> None:
        """后台把这个空间现在缓存着的正文写成它的搜索索引（每个空间同时只一个线程在写）。
        会话少于 INDEX_MIN_MISSES 个的空间从不读索引：不写，原有的（空间变小之前写的）删掉。"""
        items = []
        for summary, (path, key) in zip(summaries, keys):
            texts = self._texts.get(path, key) if path else None
            if texts is not None:
                items.append((summary["session_id"], key, texts))
        with self._warming_lock:
            if folder in self._indexing:
                return
            self._indexing.add(folder)

        def run():
            try:
                if len(summaries) < INDEX_MIN_MISSES:
                    search_index.discard(folder)
                else:
                    search_index.write(folder, items)
            except Exception:   # 索引只是提速：写不成，下次搜索照常读会话文件
                log.exception("explorer search index write failed")
            finally:
                with self._warming_lock:
                    self._indexing.discard(folder)
        threading.Thread(target=run, name="s11x-index", daemon=True).start()

    def _warm(self, store, summaries: list[dict]) -> None:
        """后台把这个空间里还没缓存的正文读进来（先读搜索索引；一个空间同时只一个线程，全进程最多 WARM_THREADS 个；
        只读有 WARM_MIN_SESSIONS 个以上会话的空间）。
        页面载入、选会话时就开始，读者第一次按回车搜索时正文已经在缓存里。"""
        if len(summaries) < WARM_MIN_SESSIONS:
            return
        folder = store.storage_dir
        now = time.monotonic()
        last = self._warmed.get(folder, None)
        with self._warming_lock:
            if folder in self._warming or len(self._warming) >= WARM_THREADS or \
                    (last is not None and now - last < WARM_AGAIN_S):
                return
            self._warming.add(folder)
        self._warmed.put(folder, None, now)
        items = list(summaries)

        def run():
            try:
                self._all_texts(store, items)
            except Exception:   # 预读只是提速：出了错，搜索时照常再读
                log.exception("explorer warm-up failed")
            finally:
                with self._warming_lock:
                    self._warming.discard(folder)
        threading.Thread(target=run, name="s11x-warm", daemon=True).start()

    def _listing(self, store, read_only: bool) -> Listing:
        """Listing(摘要, Forest)，列表行用到时才画。摘要每次都向 store 要（它按文件缓存）；树和列表行按摘要的指纹
        （每个会话的 ID、修订号、父节点、消息数、创建时刻）缓存：什么都没变时不再重新分组、排序、画前缀。"""
        summaries = store.list_sessions()
        fingerprint = tuple((s["session_id"], s["revision"], s["parent_id"], s["message_count"], s.get("created_ns"),
                             s.get("active_end")) for s in summaries)
        key = (store.storage_dir, bool(read_only))
        cached = self._listings.get(key, fingerprint)
        if cached is not None:
            return cached
        if read_only:   # 书架和老师查看：标题也脱敏（书架上的文件发布时已脱敏，这里再挡一次旧文件）
            summaries = _redacted_summaries(summaries)
        return self._listings.put(key, fingerprint, Listing(summaries, Forest(summaries)))

    def _check(self, store, summaries: list[dict], touched: tuple | None = None, full: bool = True) -> list | None:
        """store.check() 的结果，按仓库里每个文件的 (inode, 大小, 修改时间) 缓存：文件都没变就不再读遍它们。
        touched：动作自己刚移进 / 移出回收站的会话。变化只在这几个会话文件和回收站里时，文件层面的问题沿用上次的
        （去掉已不在的文件），父子关系的问题（PARENT_KINDS）从摘要重算；别的变化一律整个重新体检。
        full=False（分叉刚写了一个新文件）：只在能这样补算时更新缓存，否则不体检、返回 None。"""
        folder = store.storage_dir
        stamps = _folder_stamps(folder)
        hit = self._checks.get(folder, stamps)
        if hit is not None:
            return hit
        cached = self._checks.peek(folder)
        problems = None
        if cached is not None and touched:
            allowed = {f"{sid}.json" for sid in touched}   # 戳表的键是仓库目录里的相对路径（见 _folder_stamps）
            allowed.add(s11_journal.JOURNAL_FILE)   # 这个动作自己记的那一行日志
            aside = [s11_trash.TRASH_DIR, s11_history.HISTORY_DIR]   # 回收站、留下的各版
            changed = {path for path in cached[0].keys() | stamps.keys() if cached[0].get(path) != stamps.get(path)}
            if all(path in allowed or any(path == top or path.startswith(top + os.sep) for top in aside)
                   for path in changed):
                problems = [p for p in cached[1] if p.kind not in PARENT_KINDS and os.path.lexists(p.path)]
                problems += _parent_problems(store, summaries)
        if problems is None:
            if not full:
                return None
            problems = store.check()
        # 不用“太新不算数”的规则：仓库自己的写入都是原子换名（新的 inode，戳必变），体检看的又是文件坏没坏——
        # 同一个时钟刻里被人手改成同样大小的坏文件，下一次任何改动时就会报出来；每次写完都整个重新体检却很贵
        return self._checks.put(folder, stamps, problems)

    # ── 整页 ───────────────────────────────────────────────────────────────────
    def redraw(self, token, view: View, teacher: str | None = None) -> Page:
        """按视图原样重画，不重新体检（Chatbot 自带的“清空”只清掉了页面上的显示，会话并没有删）。"""
        return self.render(token, view, teacher, check=False)

    def render(self, token, view: View, teacher: str | None, notice: str = "", *, check: bool = True,
               touched: tuple | None = None, **extra) -> Page:
        """按视图画出整页；令牌无效时只给提示。"""
        try:
            space, own = self._space(token, view, teacher)
        except Exception as error:
            if not isinstance(error, (SessionError, OSError)):
                log.exception("explorer render failed")
            return Page(notice=notice or explain(error), view=View(), **extra)
        try:
            return self._render(space, own, view, teacher, notice, extra, check, touched)
        except Exception as error:
            if not isinstance(error, (SessionError, OSError)):
                log.exception("explorer render failed")
            fallback = dataclasses.replace(view, session_id=None)
            if view.session_id is None:
                return Page(notice=explain(error), view=fallback, **extra)
            return self._render(space, own, fallback, teacher, explain(error), extra, check)

    def _render(self, space, own, view: View, teacher, notice: str, extra: dict, check: bool,
                touched: tuple | None = None) -> Page:
        store = space.store
        memo = self._local.__dict__.pop("listing", None)
        listing = memo[1] if memo is not None and memo[0] == store.storage_dir else \
            self._listing(store, space.read_only)
        summaries, forest = listing.summaries, listing.forest
        node = store.load(view.session_id) if view.session_id in forest.by_id else None
        if node is None:
            view = dataclasses.replace(view, session_id=None, revision=0, start=None, chat_numbers=())
        elif view.revision == -1:
            view = dataclasses.replace(view, revision=node.revision)
        page = Page(notice=notice, view=view, read_only=bool(space.read_only), teacher=self._is_teacher(teacher),
                    space_label=_space_label(space, own, view), examples=_examples())
        page.source_choices = _source_choices(view, page.teacher)
        page.rows, page.list_note = listing.rows if not str(view.query or "").split() else \
            _list_rows(summaries, view.query, forest)
        if str(view.query or "").split():
            page.hits, page.hits_note = self._search(store, summaries, view.query, forest)
        else:   # 还没搜过：后台先把正文读进缓存，第一次搜索就不必读遍每个文件
            self._warm(store, summaries)
        if check:
            page.problems = _problems_text(self._check(store, summaries, touched)) if not space.read_only else ""
        elif touched and not space.read_only:   # 分叉刚写下的新文件：记进体检缓存，下次体检不必读遍整个空间
            self._check(store, summaries, touched, full=False)
        if not space.read_only:
            page.trash_choices, page.trash_note = _trash_choices(store, view.deleted)
        if page.teacher:
            page.teacher_rows = _teacher_rows(self.spaces.list_spaces(teacher), self.spaces.display_names(teacher),
                                              own=own.space_id)
        if node is not None:
            self._render_node(page, store, node, forest, clean=s11_redact.redact if space.read_only else str)
        for key, value in extra.items():
            setattr(page, key, value)
        return page

    def _render_node(self, page: Page, store, node: SessionNode, forest: Forest, clean) -> None:
        view = page.view
        tree = page_tree(forest, node.session_id)
        mtimes = _mtimes(store, tree)
        end = active_end(tree, mtimes)
        names = branch_names(tree)
        into = converged_into(n for n, _, _ in tree)
        page.tree_choices = [(tree_label(n, prefix, n["session_id"] == end, names.get(n["session_id"], ""), into),
                              n["session_id"]) for n, prefix, _ in tree]
        page.map_markdown = mermaid_map(tree, node.session_id, end, links=view.source == MINE, names=names)
        page.details = _details(store, node, page.read_only, clean, names.get(node.session_id, ""))
        page.siblings = _siblings(forest, node, names)
        page.chat, numbers, page.path_note, page.window_start = _path_chat(
            node, view.start, clean, end=view.end, focus=view.focus, name=names.get(node.session_id, ""),
            shown=view.shown, spawned=_spawned(forest, node.session_id, names, clean))
        page.message_count = len(node.messages)
        page.view = dataclasses.replace(view, chat_numbers=tuple(numbers))


def _import_outcome(report) -> str:
    """结果行上该让读者知道的事：你续写过的节点怎么样了（Agent 的新对话落进了哪个子节点，或者没能导入），
    看不到的子代理记录（怎么连文件夹一起导入写在导入报告里）。"""
    parts = [f"你续写过的 `{kept}` 原样保留，Agent 在那之后写的 {count} 条在它的子节点 `{child}` 里"
             for kept, child, count in report.continued[:3]]
    if report.diverged:
        parts.append(f"⚠️ {len(report.diverged)} 个你续写过的节点保留原样，Agent 那边的历史和它对不上，"
                     "那里的新对话没有导入（见导入报告）")
    if report.missing_subagents:
        parts.append(f"⚠️ 看不到 {len(report.missing_subagents)} 个子代理的记录（导入报告里写着是哪些、怎么连文件夹一起导入）")
    return "；" + "；".join(parts) if parts else ""


# ── 页面各块 ───────────────────────────────────────────────────────────────────────────────
def _space_label(space, own, view: View) -> str:
    names = {MINE: f"📁 我的空间 `{own.space_id}`", SHELF: "📚 共享书架（只读，可分叉到自己的空间）"}
    label = names.get(view.source, f"👩‍🏫 学生空间 `{space.space_id}`（只读）")
    return label


def _source_choices(view: View, teacher: bool) -> list:
    choices = [("📁 我的空间", MINE), ("📚 共享书架", SHELF)]
    if teacher and view.source.startswith(SPACE_PREFIX):
        choices.append((f"👩‍🏫 {view.source[len(SPACE_PREFIX):]}", view.source))
    return choices


def _list_rows(summaries: list[dict], query: str, forest: Forest | None = None) -> tuple[list, str]:
    """会话列表（纯文本单元格）。没有搜索词时按树分组：每棵树的根在前、分支缩进在后，最新的树排最前
    （刚导入的就在第一行）；有搜索词时列出标题、ID、分支新增的第一句或任一条消息里找得到它的会话。"""
    words = str(query or "").casefold().split()
    if words:
        hits = [s for s in summaries if all(
            w in f"{s['title']} {s['session_id']} {s.get('first_added', '')}".casefold() for w in words)]
        names = names_in_forest(forest or Forest(summaries), [s["session_id"] for s in hits[:LIST_LIMIT]])
        rows = [[node_caption(s, names.get(s["session_id"]), 60), s["session_id"]] for s in hits[:LIST_LIMIT]]
        shown = f"，显示前 {LIST_LIMIT} 个" if len(hits) > LIST_LIMIT else ""
        return rows, f"标题或 ID 里找到 {len(hits):,} 个{shown}；消息正文里的命中在下方「🔎 全文搜索」"
    forest = forest or Forest(summaries)
    # 只画要显示的那几棵树（前 LIST_LIMIT 行）：2,000 个会话时不必给每个节点都算一遍前缀。
    # 每棵树的排序键：树里最新创建的节点（created_ns：写入这个仓库的时刻；导入的会话 created_at 是对话当年的时间）
    newest: dict[str, tuple] = {}
    root_cache: dict[str, str] = {}
    for summary in summaries:
        root = _root_id(summary["session_id"], forest.by_id, root_cache)
        key = (summary.get("created_ns", 0), s11_tree.creation_order(summary))
        if root not in newest or key > newest[root]:
            newest[root] = key
    rows: list = []
    for root in sorted(newest, key=newest.__getitem__, reverse=True):
        if len(rows) >= LIST_LIMIT:
            break
        tree = [(step.node, prefix, step.depth) for step, prefix in
                branch_prefixes(walk(forest, root), PAGE_STYLE, PAGE_MAX_INDENT)]
        names = branch_names(tree)
        rows += [[prefix + node_caption(node, names.get(node["session_id"], ""), 60), node["session_id"]]
                 for node, prefix, _ in tree[:LIST_LIMIT - len(rows)]]
    trees = newest
    shown = f"，显示前 {LIST_LIMIT} 行；用搜索缩小范围" if len(summaries) > len(rows) else ""
    return rows, f"共 {len(summaries):,} 个会话、{len(trees):,} 棵树（最新的在前）{shown}"


def _root_id(session_id: str, by_id: dict, memo: dict) -> str:
    """沿 parent_id 往上找到树根（父节点不在的分支自成一棵树，与 s11_tree.root_of 相同）；memo 记住走过的路。"""
    chain, current, seen = [], session_id, set()
    while current not in memo:
        parent = by_id[current].get("parent_id") if current in by_id else None
        if parent not in by_id or parent in seen:
            memo[current] = current
            break
        seen.add(current)
        chain.append(current)
        current = parent
    root = memo[current]
    for sid in chain:
        memo[sid] = root
    return root


def _siblings(forest: Forest, node: SessionNode, names: dict[str, str]) -> tuple:
    """分岔处的切换条：('🌿 第 5 条之后分岔成 2 支：现在是分支 B（2/2）', 上一个, 下一个)；没有兄弟 -> ('', None, None)"""
    parent = node.parent_id
    brothers = forest.children(parent) if parent in forest.by_id else []
    ids = [brother["session_id"] for brother in brothers]
    if node.session_id not in ids or len(ids) < 2:
        return "", None, None
    at = ids.index(node.session_id)
    name = names.get(node.session_id, "")
    added = forest.by_id[node.session_id].get("first_added") or ""
    plus = f"：➕ {literal_inline(added, FIRST_ADDED_SHOWN)}" if added else ""
    text = (f"🌿 父会话在这里分成 {len(ids)} 支：现在是 **{literal_inline(branch_label(name))}**（{at + 1}/{len(ids)}"
            f"{fork_place(forest.by_id[node.session_id], name).replace(' · ', '，')}）{plus}")
    return text, ids[at - 1], ids[(at + 1) % len(ids)]


def _details(store, node: SessionNode, read_only: bool, clean: Callable[[str], str] = str, name: str = "") -> str:
    lineage = store.lineage(node.session_id)
    path = " → ".join(f"{literal_inline(clean(s['title']), 24)}" for s in lineage)
    head = ("🌿 " if not name.startswith(SUBAGENT) else "") + literal_inline(branch_label(name)) + "：" if name else ""
    title = node.title.removeprefix("子代理：") if name.startswith(SUBAGENT) else node.title
    facts = [f"### {head}{literal_inline(clean(title), 80)}",
             f"🆔 `{node.session_id}` · 💬 {len(node.messages):,} 条 · 🕒 {literal_inline(node.created_at)} · "
             f"修订 {node.revision}" + (" · 🔒 只读" if read_only else ""),
             f"🌳 路径：{path}"]
    source = node.source if isinstance(node.source, dict) else {}
    if source.get("subagent") is True and not node.fork_point and node.parent_id:
        where = source.get("spawned_at")
        facts.append(f"🤖 子代理：父会话 `{node.parent_id}`" + (f" 第 {where} 条" if type(where) is int else "")
                     + f" 启动了它；它什么都没继承，{len(node.messages)} 条全部为新增，编号从 1 起")
    elif node.fork_point is not None and node.parent_id:
        facts.append(f"🌿 前 {node.fork_point} 条继承自父会话 `{node.parent_id}`，之后 "
                     f"{len(node.messages) - node.fork_point} 条是本分支新增的")
    from s11_import import usage  # 和导入一样按需加载
    whole = usage.branch_totals(node)
    if whole.recorded:   # 导入的 Agent 会话记着 token 数：这个节点自己花的、从根到它一共花的
        facts.append(f"💰 本节点：{usage.describe(usage.node_totals(node))}\n\n💰 整条分支：{usage.describe(whole)}")
    return "\n\n".join(facts)


def _spawned(forest: Forest, session_id: str, names: dict[str, str], clean) -> dict[int, list[str]]:
    """这个节点启动的子代理：{第几条（启动它的调用）: ['🤖 子代理 1：检查… [f23010c50e67]', …]}（纯文字）。"""
    spawned: dict[int, list[str]] = {}
    for child in forest.children(session_id):
        if child.get("subagent") and child.get("spawned_at"):
            title = shorten(clean(child["title"]).removeprefix("子代理："), 40)
            spawned.setdefault(child["spawned_at"], []).append(
                f"{names.get(child['session_id']) or SUBAGENT}：{title} [{child['session_id']}]")
    return spawned


def _path_chat(node: SessionNode, start: int | None, clean, *, end: int | None = None, focus: int | None = None,
               name: str = "", shown: str = "all",
               spawned: dict[int, list[str]] | None = None) -> tuple[list, list, str, int | None]:
    """对话窗口：[start, start+PAGE_SIZE) 这几条消息 -> (Chatbot 的行, 每行对应的消息编号, 说明, 窗口起点 1 起)。
    end（含）给了就让窗口停在那条上（链接、搜索命中：它落在最后，Chatbot 滚到底就看见它）。
    只装着工具结果的消息不单独成泡：结果接进前面那次调用的折叠块里。
    shown（CHAT_FILTERS）只藏行：留下的每行仍对应它的绝对消息编号，窗口仍按消息条数翻页。
    spawned（_spawned）：在启动子代理的那条消息后面画一条分隔线，写明它启动了哪个子代理（在会话树里选中它就能读）。"""
    rows, numbers, note, first = _all_rows(node, start, clean, end=end, focus=focus, name=name)
    if spawned:
        rows, numbers = _with_spawn_marks(rows, numbers, spawned)
    if shown not in ("talk", "prompts") or not rows:
        return rows, numbers, note, first
    kept = [(row, number) for row, number in zip(rows, numbers) if _shown(row, node.messages, number, shown)]
    what = CHAT_FILTERS[shown]
    note += f"；{what}：这一页显示 {len(kept)} 行" if kept else f"；{what}：这一页没有可显示的，点「◀ 更早」或换成「全部」"
    return [row for row, _ in kept], [number for _, number in kept], note, first


def _with_spawn_marks(rows: list, numbers: list, spawned: dict[int, list[str]]) -> tuple[list, list]:
    """每条启动了子代理的消息的最后一行后面，插一条分隔线：'🤖 这里启动了 子代理 1：… [id]'。"""
    marked_rows, marked_numbers = [], []
    for index, (row, number) in enumerate(zip(rows, numbers)):
        marked_rows.append(row)
        marked_numbers.append(number)
        last = index + 1 == len(rows) or numbers[index + 1] != number
        if last and number in spawned:
            marked_rows.append(_divider("🤖 这里启动了 " + "；".join(literal_inline(text) for text in spawned[number])
                                        + "（在会话树里选中它就能读）"))
            marked_numbers.append(number)
    return marked_rows, marked_numbers


def _shown(row: dict, messages: list, number: int, shown: str) -> bool:
    """过滤时这一行留不留：分叉分隔线总留着；折叠块（思考、工具、注入的文字）都藏；只看提问时只留用户亲手打的话。"""
    if _is_divider(row):
        return True
    if row.get("metadata"):
        return False
    if shown == "talk":
        return True
    message = messages[number - 1] if 0 < number <= len(messages) else None
    return isinstance(message, dict) and message.get("role") == "user" and not message.get("meta") \
        and not message.get("summary")


DIVIDER_RULE = "* * *"   # 分隔线以一条水平线开头：别的行都以 “**#编号**” 开头，页面的样式据此把它画成分隔线，不画成气泡


def _divider(text: str) -> dict:
    return {"role": "assistant", "content": f"{DIVIDER_RULE}\n\n{text}\n\n{DIVIDER_RULE}"}


def _is_divider(row: dict) -> bool:
    return not row.get("metadata") and str(row.get("content", "")).startswith(DIVIDER_RULE)


def _all_rows(node: SessionNode, start: int | None, clean, *, end: int | None, focus: int | None,
              name: str) -> tuple[list, list, str, int | None]:
    total = len(node.messages)
    if end is not None and total:
        stop = min(total, max(1, end))
        begin = max(0, stop - PAGE_SIZE)
    else:
        begin = max(0, total - PAGE_SIZE) if start is None else min(max(0, start), max(0, total - 1))
        stop = min(total, begin + PAGE_SIZE)
    names = s11_export.tool_call_names(node.messages)
    rows, numbers = [], []
    pending: list[tuple[int, str]] = []   # 还没等到结果的工具调用：(行号, 工具名)
    for index in range(begin, stop):
        if node.fork_point and index == node.fork_point and node.parent_id:
            branch = f"{branch_label(name)} " if name else "本分支"
            rows.append(_divider(f"🌿 {branch}从这里开始：前 {node.fork_point} 条继承自父会话"))
            numbers.append(index)
            pending = []
        message = node.messages[index] if isinstance(node.messages[index], dict) else {"content": node.messages[index]}
        results = _tool_results_only(message, names) if pending else None
        if results is not None and index + 1 != focus:
            for part in results:
                at = next((i for i, (_, tool) in enumerate(pending) if tool == part.caption), 0) if pending else None
                if at is None:
                    rows.append(_thought(_PART_TITLES["tool_output"](part), _result_block(part._replace(
                        text=clean(part.text)))))
                    numbers.append(index + 1)
                    continue
                row_index, _ = pending.pop(at)
                row = rows[row_index]
                rows[row_index] = {**row, "content": f"{row['content']}\n\n{_result_block(part._replace(text=clean(part.text)))}",
                                   "metadata": {**row["metadata"], "title": row["metadata"]["title"] + (
                                       " → ❌ 出错" if part.is_error else " → 📤 有结果")}}
            continue
        message_rows, calls = _message_rows(message, index + 1, names, clean, index + 1 == focus)
        pending = [(len(rows) + offset, tool) for offset, tool in calls] or (pending if not message_rows else [])
        rows += message_rows
        numbers += [index + 1] * len(message_rows)
    after = f"；后面还有 {total - stop:,} 条，点「最新 ▶」" if stop < total else ""
    note = (f"第 {begin + 1}–{stop} 条，共 {total:,} 条{after}" if total else "（这个会话还没有消息）")
    return rows, numbers, note, (begin + 1 if total else None)


def _problems_text(problems: list) -> str:
    if not problems:
        return ""
    lines = [f"- **{literal_inline(p.kind)}** {literal_inline(os.path.basename(p.path))}：{literal_inline(hide_paths(p.detail), 200)}"
             for p in problems[:50]]
    more = [f"- …还有 {len(problems) - 50} 个"] if len(problems) > 50 else []
    return "\n".join([f"#### 🩺 体检发现 {len(problems)} 个问题", *lines, *more])


_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _refuse(text: str) -> Callable:
    """一个只报错的动作（交给 Explorer._act：令牌照样核对，页面照样画）。"""
    def action(space, own):
        raise ExplorerError(text)
    return action


def _text_chars(texts: list) -> int:
    return sum(len(text) for _, _, text in texts)


def _folder_stamps(folder: str) -> dict:
    """仓库目录和它下面一层子目录（.trash、块目录）里每个条目的 (inode, 大小, 修改时间)：只 stat，不打开文件。
    （s11_storage.stat_key，与仓库的摘要缓存同一个键）。键是相对仓库目录的路径（'abc.json'、'.trash/abc.json'）：
    每个空间每个文件一格、一直留在缓存里，不必每格再存一遍长长的目录名。
    不进 .history/：留下的旧版只在换掉会话文件（或移进、移出回收站）的同时才多、才少，那个文件的戳已经变了；
    每个会话一格旧版的戳只会让每个空间的这张表随续写过的会话一直长。
    不看 .search/：搜索索引是服务器自己的副本，体检不读它；写一次索引不该让下一次体检读遍整个空间。"""
    stamps: dict = {}
    pending = [folder]
    history = os.path.join(folder, s11_history.HISTORY_DIR)
    start = len(os.path.join(folder, ""))   # 相对路径从这里起
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    if current == folder and entry.name == search_index.INDEX_DIR:
                        continue
                    try:
                        info = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    stamps[entry.path[start:]] = stat_key(info)
                    if current == folder and entry.path != history and entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:
            continue
    return stamps


def _parent_problems(store, summaries: list[dict]) -> list:
    """check() 里只由“哪些会话在仓库里”决定的两种问题，从摘要算出（与 check() 同一个函数）。"""
    return parent_problems(summaries, store.path_of)


def _trash_choices(store, deleted: tuple) -> tuple[list, str]:
    """(回收站下拉框的选项, 一句“回收站里有什么、占多少”)。选项：'标题 · 1.2 KB · 删除于 12-01 21:05 [id]'（最近删除的在前）。
    回收站的样子只有 s11_trash 知道：这里用它的 entries()，标题从那份副本的内容里读（本页删过的直接用记下的）。"""
    titles = dict(deleted)
    seen, choices = set(), []
    copies = s11_trash.entries(store.storage_dir)
    note = (f"回收站里有 {len({entry.session_id for entry in copies})} 个会话的 {len(copies)} 份副本，共 "
            f"{human_size(sum(entry.size for entry in copies))}（也算在空间的限额里）" if copies else "回收站是空的")
    for entry in copies:   # 最近删除的在前
        sid = entry.session_id
        if sid in seen or not _restorable(store, sid):
            continue
        seen.add(sid)
        when = time.strftime("%m-%d %H:%M:%S", time.localtime(entry.deleted_ns / 1e9))
        title = titles.get(sid) or _trashed_title(entry.path)
        choices.append((f"{shorten(title, 30)} · {human_size(entry.size)} · 删除于 {when} [{sid}]", sid))
        if len(choices) >= TRASH_SHOWN:
            break
    return choices, note


_TITLE_FIELD = re.compile(rb'"title":\s*("(?:[^"\\\n]|\\.){0,2000}")')


def _trashed_title(path: str) -> str:
    """回收站里一份副本的标题：会话文件开头（版本 3 的 JSON、版本 4 的头一行）里的 title 字段；读不出就说明。"""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64 * 1024)
        match = _TITLE_FIELD.search(head)
        title = json.loads(match.group(1)) if match else None
    except (OSError, ValueError):
        return "（标题读不出来）"
    return title if isinstance(title, str) and title.strip() else "（没有标题）"


def _restorable(store, session_id: str) -> bool:
    """回收站里的这一份能恢复：ID 合法（手工放进去的 CON.1.json 不算），同名的会话也不在仓库里。"""
    try:
        return not os.path.exists(store.path_of(session_id))
    except SessionError:
        return False


def _teacher_rows(spaces: list[dict], names: dict, own: str | None = None) -> list:
    """老师的「只读打开一位同学」下拉框：(名字 · 会话数 · 最后活动, space_id)，最近活动的在前，不列老师自己的空间。
    名字是同学自己起的（敌意文字）：只进下拉框的文字，截短。"""
    rows = []
    for item in spaces:
        if item["space_id"] == own:
            continue
        last = item.get("last_activity")
        when = time.strftime("%H:%M", time.localtime(last)) if last else "—"
        name = shorten(names.get(item["space_id"], ""), 30) or f"（没起名字）空间 {item['space_id'][:6]}"
        rows.append((f"{name} · {item.get('sessions', 0)} 个会话 · {human_size(item.get('bytes', 0))} · 最后活动 {when}",
                     item["space_id"]))
    return rows


def _mtimes(store, tree) -> dict[str, int]:
    out = {}
    for node, _, _ in tree:
        try:
            out[node["session_id"]] = os.stat(store.path_of(node["session_id"])).st_mtime_ns
        except OSError:
            continue
    return out


def _examples() -> list[str]:
    try:
        import s11_import
        return sorted(os.path.basename(item) for item in s11_import.list_examples())
    except (ImportError, AttributeError, OSError):
        return []


# ── 输入检查与跨空间复制 ─────────────────────────────────────────────────────────────────
def _context(text: str, folded: str, word: str) -> str:
    """命中前后各 HIT_CONTEXT 个字：'…先 grep 全局注册表，定位到…'（纯文本，表格单元格）"""
    at = folded.find(word)
    at = max(at, 0)
    begin, stop = max(0, at - HIT_CONTEXT), min(len(text), at + len(word) + HIT_CONTEXT)
    return ("…" if begin else "") + text[begin:stop] + ("…" if stop < len(text) else "")


def _branch_title(space, parent_id: str) -> str:
    """没填标题时新分支的标题：父会话的标题去掉结尾的“ · 分支”再加一个（不会越分越长：“· 分支 · 分支”）。"""
    parent = space.store.load(parent_id)
    base = re.sub(r"(?:\s·\s分支)+$", "", parent.title) if parent is not None else ""
    return f"{base} · 分支" if base else ""


def _message_number(value, total: int) -> int | None:
    """链接里的 m=<k>、搜索命中的“第几条” -> 1…total 之间的整数；别的一律 None（不突出任何一条）。"""
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if 1 <= number <= total else None


_EDIT_HEADER = re.compile(r"^(?:📍 )?\*\*#\d+\*\*[^\n]*\n+")


def _edited_text(value) -> str:
    """Chatbot 的 edit 事件给回的文字 -> 读者改写后的那句话：去掉我们加的“#3 👤 用户”那一行和转义。
    页面的脚本（explorer_tab.js）在改写框打开时已经换成了纯文字：没有那一行的文字原样就是读者打的话。"""
    if isinstance(value, list):
        value = "\n".join(str(item.get("text", "")) if isinstance(item, dict) else str(item) for item in value)
    text = str(value or "")
    if not _EDIT_HEADER.match(text):
        return _turn_text(text)
    text = _EDIT_HEADER.sub("", text, count=1)
    fence = re.fullmatch(r"(`{3,}|~{3,})[^\n]*\n(.*)\n\1\s*", text, re.DOTALL)
    text = fence.group(2) if fence else re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)
    return _turn_text(text)


def _as_count(value) -> int:
    """分叉位置：3、3.0、"3" 都是 3；3.5、"三"、True 都不是。"""
    if isinstance(value, bool):
        raise ExplorerError(f"分叉位置必须是整数，收到 {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ExplorerError(f"分叉位置必须是整数，收到 {literal_inline(str(value), 40)}") from None
    if not number.is_integer():
        raise ExplorerError(f"分叉位置必须是整数，收到 {literal_inline(str(value), 40)}")
    return int(number)


def _turn_text(text) -> str:
    text = str(text or "")
    if not text.strip():
        raise ExplorerError("消息不能为空")
    if len(text) > MAX_TURN_CHARS:
        raise ExplorerError(f"一条消息最多 {MAX_TURN_CHARS:,} 字符，这条有 {len(text):,} 字符")
    return text


def _title_text(title) -> str:
    title = " ".join(str(title or "").split())
    if len(title) > MAX_TITLE_CHARS:
        raise ExplorerError(f"标题最多 {MAX_TITLE_CHARS} 字符")
    return title


def _as_position(value) -> int | None:
    """“跳到第几条”：空 -> None（回到末尾）；1、1.0、"1" -> 0（0 起）；"abc"、NaN、0、2.5 给出中文提示。"""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    number = _finite_number(value, "跳到第几条")
    if not number.is_integer() or number < 1:
        raise ExplorerError(f"跳到第几条必须是不小于 1 的整数，收到 {literal_inline(str(value), 40)}")
    return int(number) - 1


def _finite_number(value, what: str) -> float:
    if isinstance(value, bool):
        raise ExplorerError(f"{what}必须是数字，收到 {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ExplorerError(f"{what}必须是数字，收到 {literal_inline(str(value)[:40], 40)}") from None
    if not math.isfinite(number):
        raise ExplorerError(f"{what}必须是有限的数字，收到 {literal_inline(str(value)[:40], 40)}")
    return number


# ── 导出指纹、导入限额、发布确认 ─────────────────────────────────────────────────────────────────
def _digest(facts) -> str:
    text = json.dumps(facts, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _file_stamps(store, session_ids) -> list:
    """这些会话文件的 (修改时间, 大小)：内容变了，它就变。"""
    stamps = []
    for session_id in session_ids:
        try:
            info = os.stat(store.path_of(session_id))
            stamps.append((info.st_mtime_ns, info.st_size))
        except OSError:
            stamps.append(None)
    return stamps


def _space_budget(base, space):
    """导入的写入预算（base = s11_import.WriteBudget）：写第一个字节之前，确切的字节数必须放得进空间的限额
    和磁盘余量（否则一个字节都不写，消息说要写多少）；写的途中每个节点之后再看一次磁盘余量。"""
    class SpaceBudget(base):
        planned = written = 0
        reservation = None

        def before(self, nbytes: int, sessions: int) -> None:
            self.planned = nbytes
            try:   # 预留到写完为止：同时进行的另一次导入检查限额时算上这一次
                self.reservation = space.reserve(sessions=sessions, nbytes=nbytes)
            except SpaceError as error:
                raise SpaceError(f"这次导入要新建 {sessions} 个会话、写 {human_size(nbytes)}，什么都没写：{error}") from None

        def during(self, written: int) -> None:
            self.written = written
            space.require_disk(max(0, self.planned - written))

        def after(self, saved: int) -> None:
            if self.reservation is not None:
                space.finish(self.reservation, saved, self.written)
    return SpaceBudget()


def _counts_text(counts: dict) -> str:
    return "、".join(f"{label} ×{count}" for label, count in counts.items())


def _publish_text(session_id: str, plan) -> str:
    ancestors = plan.nodes - 1
    lines = [f"📚 确认把会话 `{session_id}` 发布到共享书架？",
             f"- 要写 {len(plan.written)} 个节点（选中的会话" + (f"和它的 {ancestors} 个祖先" if ancestors else "")
             + "；书架上已有、内容相同的跳过）。"]
    if plan.counts or plan.chain_counts:
        lines.append(f"- 发布的是脱敏后的副本：选中的会话里遮住 {_counts_text(plan.counts) or '0 处'}"
                     + (f"；整条祖先链的每个文件合计 {_counts_text(plan.chain_counts)}" if ancestors else "") + "。")
    else:
        lines.append("- 标题、每条消息的每个字段都查过：没有发现要脱敏的内容。")
    if plan.renamed:
        lines.append(f"- 书架上已有同 ID 而内容不同的 {len(plan.renamed)} 个节点不会被覆盖，这一份用新 ID "
                     f"`{plan.leaf_id}`。")
    return "\n".join(lines)


def _publish_fingerprint(store, session_id: str, plan) -> str:
    chain = [summary["session_id"] for summary in store.lineage(session_id)]
    return _digest([chain, _file_stamps(store, chain), plan.leaf_id, plan.written, sorted(plan.renamed.items()),
                    plan.counts, plan.chain_counts])


def _redacted_summaries(summaries: list[dict]) -> list[dict]:
    """只读来源的会话摘要：标题和分支新增的第一句脱敏（一批完成）。"""
    texts = [[s["title"], s.get("first_added") or ""] for s in summaries]
    redacted, _ = s11_redact.redact_value(texts)
    return [{**s, "title": title, "first_added": first} for s, (title, first) in zip(summaries, redacted)]
