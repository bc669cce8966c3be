"""agents.py — 本机上各个 Agent 自己的会话文件夹里有哪些会话；导入一个；“跟随”一个（文件长了就再导入）

    AGENT_FOLDERS（一行一种 Agent）           默认位置                        Agent 自己文档里的覆盖变量
        Claude Code   <根>/projects/<项目>/*.jsonl     ~/.claude                 CLAUDE_CONFIG_DIR
        Pi            <根>/sessions/<cwd>/*.jsonl      ~/.pi/agent               PI_CODING_AGENT_DIR
        Codex CLI     <根>/sessions/YYYY/MM/DD/*.jsonl ~/.codex                  CODEX_HOME
                      （也列 .jsonl.zst 和 <根>/archived_sessions/ 里的）
        Gemini CLI    <根>/tmp/<项目>/chats/session-*  ~/.gemini                 GEMINI_CLI_HOME（代替的是家目录）

    list_agent_sessions(home)  ──► [AgentSession(格式, 项目, 标题, 大小, 最后修改, 路径)]，最新的在前
    list_folder_sessions(dir)  ──► 读者自己指定的文件夹，同样的列表（格式看文件开头认）
    import_agent_session(path, store)   导入一个（就是 import_file）
    follow(path, store, state)          文件（或它的子代理文件）变了才再导入：同一组节点更新，
                                        读者在仓库里续写过的节点不覆盖（import_file 的规则）

关键洞察：列会话是“看一眼”，导入才是“读一遍”——列表只 stat 文件、只读每个文件开头的 64 KB 取标题，
几千个会话的文件夹也很快；真正读整个文件只在读者选了它之后。

保证：这些文件夹只读，从不写；不跟符号链接（既不进链接指向的文件夹，也不读链接文件）；最多看 scan_limit 个文件、
列出 limit 个；每个文件最多读开头 HEAD_BYTES 字节。根目录是参数（测试用临时文件夹），环境变量只认 Agent 自己
文档里写明的那几个。本模块不打印：命令行是 s11_cli 的 agents 子命令，页面由工作台去做。
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from s11_session import SessionStore

from . import compressed
from .formats import CLAUDE, CODEX, FORMAT_NAMES, GEMINI, PI, dispatch
from .lines import DEFAULT_MAX_BYTES
from .pipeline import companion_owner, import_file, looks_like_transcript, sniff_format
from .report import ImportReport
from .transcript import Transcript, is_prompt, plain_text, prompt_title

__all__ = ["AgentFolder", "AGENT_FOLDERS", "AgentSession", "AgentListing", "FollowState", "agent_roots",
           "list_agent_sessions", "list_folder_sessions", "import_agent_session", "follow", "follow_state", "describe_row",
           "HEAD_BYTES"]

HEAD_BYTES = 65536        # 取标题最多读每个文件开头这么多字节
_SCAN_LIMIT = 20_000      # 最多看这么多个文件（stat），再多的不看
_DEPTH = 6                # 读者指定的文件夹最多往下走这么多层


@dataclass(frozen=True)
class AgentFolder:
    """表的一行：一种 Agent 把会话放在哪里。"""
    format: str
    default: Tuple[str, ...]             # 家目录下的默认根目录
    env: str                             # Agent 自己文档里的覆盖变量
    env_is_home: bool                    # 变量代替的是家目录（Gemini），不是根目录本身
    sessions: Callable[[str], Iterator[Tuple[str, str]]]   # 根目录 → (会话文件, 项目文件夹名)


def _files(folder: str, accept: Callable[[str], bool]) -> List[str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [os.path.join(folder, name) for name in names if accept(name)]


def _dirs(folder: str) -> List[str]:
    """子文件夹（不含符号链接）。"""
    return [path for path in _files(folder, lambda name: True) if os.path.isdir(path) and not os.path.islink(path)]


def _claude(root: str) -> Iterator[Tuple[str, str]]:
    for project in _dirs(os.path.join(root, "projects")):
        for path in _files(project, lambda name: name.endswith(".jsonl") and not name.startswith("agent-")):
            yield path, os.path.basename(project)


def _pi(root: str) -> Iterator[Tuple[str, str]]:
    for project in _dirs(os.path.join(root, "sessions")):
        for path in _files(project, lambda name: name.endswith(".jsonl")):
            yield path, os.path.basename(project)


def _is_rollout(name: str) -> bool:
    """rollout-*.jsonl，或 Codex 0.137 起闲置 7 天后压缩成的 rollout-*.jsonl.zst。"""
    return name.startswith("rollout-") and name.endswith((".jsonl", ".jsonl.zst"))


def _codex(root: str) -> Iterator[Tuple[str, str]]:
    """sessions/YYYY/MM/DD/ 下的 rollout，和平放在 archived_sessions/ 里的归档会话；同一个会话压缩前后的两份只列没压缩的。"""
    folders = [day for year in _dirs(os.path.join(root, "sessions")) for month in _dirs(year) for day in _dirs(month)]
    for folder in folders + [os.path.join(root, "archived_sessions")]:
        found = _files(folder, _is_rollout)
        present = set(found)
        for path in found:
            if not (path.endswith(compressed.ZST_SUFFIX) and path[:-len(compressed.ZST_SUFFIX)] in present):
                yield path, ""


def _gemini(root: str) -> Iterator[Tuple[str, str]]:
    for project in _dirs(os.path.join(root, "tmp")):
        chats = os.path.join(project, "chats")
        found = _files(chats, lambda name: name.startswith("session-") and name.endswith((".json", ".jsonl")))
        present = set(found)
        for path in found:
            if not (path.endswith(".json") and path + "l" in present):   # 迁移成 .jsonl 之后旧文件还在
                yield path, os.path.basename(project)


AGENT_FOLDERS: Tuple[AgentFolder, ...] = (
    AgentFolder(CLAUDE, (".claude",), "CLAUDE_CONFIG_DIR", False, _claude),
    AgentFolder(PI, (".pi", "agent"), "PI_CODING_AGENT_DIR", False, _pi),
    AgentFolder(CODEX, (".codex",), "CODEX_HOME", False, _codex),
    AgentFolder(GEMINI, (".gemini",), "GEMINI_CLI_HOME", True, _gemini),
)


@dataclass
class AgentSession:
    """列表里的一行。modified 是文件的修改时间（epoch 秒）；project 是 Agent 记下的 cwd，没有时是项目文件夹名。"""
    path: str
    format: str
    project: str
    title: str
    size: int
    modified: float
    session_id: Optional[str] = None

    @property
    def agent(self) -> str:
        return FORMAT_NAMES.get(self.format, self.format)


@dataclass
class AgentListing:
    sessions: List[AgentSession] = field(default_factory=list)
    roots: List[Tuple[str, str]] = field(default_factory=list)   # (格式, 根目录)：找过的地方
    truncated: bool = False   # 文件比 scan_limit / limit 多，只列了最新的那些


def agent_roots(home: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> List[Tuple[AgentFolder, str]]:
    """每种 Agent 的根目录：覆盖变量有值就用它，否则是 home 下的默认位置。"""
    home = home if home is not None else os.path.expanduser("~")
    env = os.environ if env is None else env
    roots = []
    for row in AGENT_FOLDERS:
        override = env.get(row.env) or ""
        if override and row.env_is_home:
            roots.append((row, os.path.join(override, *row.default)))
        else:
            roots.append((row, override or os.path.join(home, *row.default)))
    return roots


def list_agent_sessions(home: Optional[str] = None, *, env: Optional[Mapping[str, str]] = None,
                        limit: int = 200, scan_limit: int = _SCAN_LIMIT) -> AgentListing:
    """本机各个 Agent 文件夹里的会话，最新的在前，最多 limit 个。不存在的文件夹跳过。"""
    listing = AgentListing()
    candidates: List[Tuple[str, str, str, os.stat_result]] = []
    for row, root in agent_roots(home, env):
        listing.roots.append((row.format, root))
        if not os.path.isdir(root):
            continue
        for path, project in row.sessions(root):
            if len(candidates) >= scan_limit:
                listing.truncated = True
                break
            info = _regular(path, root)
            if info is not None:
                candidates.append((path, row.format, project, info))
    return _finish(listing, candidates, limit)


def list_folder_sessions(folder: str, *, limit: int = 200, scan_limit: int = _SCAN_LIMIT) -> AgentListing:
    """读者自己指定的文件夹（任何一种 Agent 的，或混在一起的）：格式看每个文件的开头认，认不出的不列。"""
    listing = AgentListing(roots=[("", folder)])
    candidates = []
    root = os.path.realpath(folder)
    for where, dirs, names in os.walk(folder):   # 不进符号链接指向的文件夹
        depth = os.path.relpath(where, folder).count(os.sep)
        dirs[:] = sorted(d for d in dirs if depth < _DEPTH)
        for name in sorted(names):
            if len(candidates) >= scan_limit:
                listing.truncated = True
                return _finish(listing, candidates, limit)
            path = os.path.join(where, name)
            migrated = name.endswith(".json") and name + "l" in names   # Gemini 迁移成 .jsonl 后旧文件还在
            if migrated or not looks_like_transcript(name) or companion_owner(path):
                continue
            info = _regular(path, root)
            if info is not None:
                candidates.append((path, "", os.path.basename(where), info))
    return _finish(listing, candidates, limit)


def _regular(path: str, root: str) -> Optional[os.stat_result]:
    """普通文件、不是符号链接、真实路径在根目录里面：才列出来。"""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not os.path.isfile(path) or os.path.islink(path):
        return None
    real, base = os.path.realpath(path), os.path.realpath(root)
    return info if os.path.commonpath([real, base]) == base else None


def _finish(listing: AgentListing, candidates: list, limit: int) -> AgentListing:
    candidates.sort(key=lambda item: (-item[3].st_mtime, item[0]))
    if len(candidates) > limit:
        listing.truncated = True
    for path, kind, project, info in candidates[:limit]:
        summary = _summary(path, kind)
        if summary is None:
            continue
        kind, title, cwd, session = summary
        listing.sessions.append(AgentSession(path, kind, cwd or project, title or os.path.basename(path),
                                             info.st_size, info.st_mtime, session))
    return listing


# ── 标题：只读开头 ──────────────────────────────────────────────────────────────────────────
_SUMMARY = re.compile(rb'"summary"\s*:\s*("(?:[^"\\]|\\.){1,600}")')
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*("(?:[^"\\]|\\.){1,200}")')


def _summary(path: str, kind: str) -> Optional[Tuple[str, str, Optional[str], Optional[str]]]:
    """(格式, 标题, cwd, 会话 ID)：把文件开头的完整行交给它的格式去读，标题的取法和导入时一样。"""
    try:
        if path.endswith(compressed.ZST_SUFFIX):   # 只解出开头 HEAD_BYTES 字节
            head = compressed.head(path, HEAD_BYTES)
        else:
            with open(path, "rb") as handle:
                head = handle.read(HEAD_BYTES)
    except OSError:
        return None
    if head.lstrip()[:1] in (b"{", b"[") and head.lstrip().split(b"\n", 1)[0].strip() in (b"{", b"["):
        return _document_summary(head, kind or sniff_format(path))
    t = Transcript(path)
    lines = head.split(b"\n")
    if len(head) == HEAD_BYTES:
        lines = lines[:-1]   # 最后一行可能没读完
    for number, raw in enumerate(lines, 1):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            dispatch(t, value, number, 0)
    if t.format is None:   # 开头一行就超过 HEAD_BYTES：认不出来，但在某个 Agent 的文件夹里，照样列出
        return (kind, "", None, None) if kind else None
    if kind and t.format.name != kind:
        return None
    return t.format.name, _title(t), _cwd(t), _session(t)


def _title(t: Transcript) -> str:
    titles = t.titles.get(t.file, {})
    for key in t.format.title_keys:
        if titles.get(key):
            return " ".join(titles[key].split())[:120]
    summaries = [text for _, _, text in t.summaries]
    if summaries:
        return " ".join(summaries[-1].split())[:120]
    for entry in t.order:
        if entry.kind == "message" and not entry.sidechain and is_prompt(entry.message):
            title = prompt_title(plain_text(entry.message))
            if title:
                return " ".join(title.split())[:120]
    return ""


def _cwd(t: Transcript) -> Optional[str]:
    for meta in t.sessions.values():
        if meta.get("cwd"):
            return meta["cwd"]
    cwd = t.header.get("cwd")
    return cwd if isinstance(cwd, str) else t.state.get("cwd")


def _session(t: Transcript) -> Optional[str]:
    value = t.header.get("id") or next(iter(t.sessions), None)
    return value if isinstance(value, str) else None


def _document_summary(head: bytes, kind: Optional[str]) -> Optional[Tuple[str, str, Optional[str], Optional[str]]]:
    """排版过的 JSON 文档（Gemini 的旧会话）：开头里找 summary 和 sessionId，不解析整个文件。"""
    if kind not in (None, GEMINI):
        return None
    found = _SUMMARY.search(head)
    session = _SESSION_ID.search(head)
    if not (found or session or b'"history"' in head):
        return None
    title = _decoded(found.group(1)) if found else ""
    return GEMINI, title, None, _decoded(session.group(1)) if session else None


def _decoded(raw: bytes) -> str:
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return ""
    return " ".join(value.split())[:120] if isinstance(value, str) else ""


# ── 导入、跟随 ──────────────────────────────────────────────────────────────────────────────
def import_agent_session(path: str, store: SessionStore, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ImportReport:
    """导入列表里的一个会话：就是 import_file（Claude Code 的子代理文件随它一起读）。"""
    return import_file(path, store, max_bytes=max_bytes)


@dataclass(frozen=True)
class FollowState:
    """上次导入时这个会话的文件（和它的子代理文件）的样子：(路径, 大小, 修改时间) 的列表。"""
    files: Tuple[Tuple[str, int, int], ...] = ()


def follow(path: str, store: SessionStore, state: Optional[FollowState] = None, *,
           max_bytes: int = DEFAULT_MAX_BYTES) -> Tuple[Optional[ImportReport], FollowState]:
    """文件变了（长了、被改写了、子代理文件多了或长了）才再导入，返回 (报告或 None, 新的状态)。

    再导入时同一组节点更新，没变的不写；读者在仓库里续写过的导入节点不会被覆盖（只在报告里警告）。"""
    current = follow_state(path)
    if state is not None and current == state:
        return None, state
    return import_file(path, store, max_bytes=max_bytes), current


def follow_state(path: str) -> FollowState:
    """会话文件和它的子代理文件现在的 (路径, 大小, 修改时间)：follow() 拿它和上次的比。"""
    files = [path]
    folder, stem = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
    if path.endswith(".jsonl"):   # Claude Code 的子代理文件：<会话ID>/ 下面，或 2.0 版放在旁边的 agent-*.jsonl
        for where, dirs, names in os.walk(os.path.join(folder, stem)):   # 2.1.x 的子代理、Workflow
            dirs.sort()
            files += [os.path.join(where, name) for name in sorted(names) if name.endswith(".jsonl")][:1000]
        files += [os.path.join(folder, name) for name in _names(folder) if name.startswith("agent-")][:1000]
    signature = []
    for name in files:
        try:
            info = os.stat(name)
        except OSError:
            continue
        signature.append((name, info.st_size, info.st_mtime_ns))
    return FollowState(tuple(signature))


def _names(folder: str) -> List[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def describe_row(session: AgentSession) -> Dict[str, Any]:
    """页面或命令行显示一行时要的字段（都是普通值）。"""
    return {"agent": session.agent, "project": session.project, "title": session.title, "size": session.size,
            "modified": session.modified, "path": session.path}

