"""s11_exercises.py — 练习：一个小 JSON 文件描述起点和目标树的“形状”，检查器对照学生的空间判分

    exercises/rewind.json                    学生的空间（一个 SessionStore 目录）
    ┌ start: 主会话 5 条 ─┬─ A 7 条          seed() ─► 写进空间，记下 anchors {"main": "5d38…"}
    │                    └─ B 9 条
    └ goal:  main ─┬─ (A、B 照旧)           check(exercise, store, state) ─► Verdict
                   └─ c: parent=main          ✅ 主会话 5 条
                         fork_point=3         ⬜ 新分支：自第 3 条分叉  ← 提示：你在第 5 条之后分叉了……
                         messages ≥ 4         ✅ 活动端停在新分支
                         added_roles[0]=user

关键洞察：目标只描述形状——谁是谁的父节点、在第几条分叉、有几条消息、新增的是谁说的、从哪些分支收敛——
从不比较 ID 和原文，所以同一关任何人、任何时候做都能判；找不到时，最接近的那个节点说明差在哪里
（分叉点不对、父节点不对、还差几条、还没收敛），这就是下一条提示。

练习文件（全部键都是必需的，除非写着“可选”；多出来的键一律拒绝）：
    {"format": "s11-exercise", "version": 1, "id": "rewind", "title": "…", "instructions": "…",
     "start": {"nodes": [{"key": "main", "parent": null, "title": "…", "messages": [{"role": "user", "content": "…"}]},
                         {"key": "a", "parent": "main", "fork_point": 5, "messages": [...], "torn": false}]},  可选
     "goal": {"nodes": [{"key": "c", "label": "新分支", "parent": "main", "fork_point": 3,
                         "messages": 4 或 {"min": 4}, "added_roles": ["user"], "converged_from": ["a"],
                         "hint": "…"}],           除 key / label 外都可选；key 与起点同名 = 就是起点的那个节点
              "active_end": "c",                  可选：活动端（最近写过的叶子）应停在哪个节点
              "checks": [{"kind": "check_clean"}]},   可选，kind 见 CHECKS
     "hints": ["…"], "solution": ["第 1 步……"]}      hints 可选；solution 是给人看的步骤，从不执行

Scope: 不执行练习文件里的任何东西（只是数据）；检查只读空间，从不修改；一关最多 MAX_NODES 个节点。
有界：每个目标节点只细看 MAX_CANDIDATES 个候选（按摘要粗分挑最像的，分数相同取新的：细看要读节点）；这一关新建的
会话超过 MAX_JUDGED_SESSIONS 个、或回溯比较超过 MAX_FITS 次，就不判，判定里说“这个空间的会话太多，无法判题”。
所以一次点击的工作量与空间里堆了多少会话无关（老师点开一个学生也是）。限制：同样像的候选超过 MAX_CANDIDATES 个时，
只差在新增消息角色上的那个可能没被细看。
检查 fork_undone 读这一关开始之后的操作日志（s11_journal，流式；超过 MAX_JOURNAL_RECORDS 行就不判）。
本模块只依赖标准库和 s11_session、s11_journal、s11_trash、s11_text。
"""

from __future__ import annotations

import heapq
import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import s11_journal
import s11_trash
from s11_session import SessionError, SessionStore
from s11_text import printable, shorten

__all__ = ["ExerciseError", "Exercise", "GoalNode", "StartNode", "Check", "LevelState", "Part", "Verdict",
           "CHECKS", "ROLES", "parse_exercise", "load_file", "builtin_exercises", "seed", "check", "TooManyToJudge",
           "MAX_CANDIDATES", "MAX_JUDGED_SESSIONS", "MAX_FITS",
           "EXERCISES_DIR", "FORMAT", "VERSION"]

FORMAT, VERSION = "s11-exercise", 1
EXERCISES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "exercises")
MAX_FILE_BYTES = 64 * 1024
MAX_NODES = 16
MAX_MESSAGES = 40          # 起点里一个节点最多带几条消息
MAX_TEXT = 4000            # 说明、消息、步骤的字数上限
MAX_SHORT = 80             # 标题、标签
MAX_LIST = 20              # 提示、步骤的条数
ROLES = ("system", "user", "assistant")
MAX_CANDIDATES = 8            # 每个目标节点最多细看几个候选：按摘要粗分挑出最像的几个
MAX_JUDGED_SESSIONS = 1_000   # 这一关里新建的会话超过这么多就不判（一次上传会话树就能造出几千个）
MAX_FITS = 20_000             # 回溯最多比较这么多次（候选 × 目标的组合），超过就不判
MAX_JOURNAL_RECORDS = 20_000  # 这一关开始之后的操作日志超过这么多行就不判（fork_undone 要逐行看）
_KEY = re.compile(r"[a-z][a-z0-9_]{0,23}")
_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")


class ExerciseError(SessionError):
    """练习文件不对：消息是中文，点名哪个字段（如 goal.nodes[2].parent）错在哪里。"""


# ── 练习的样子 ──────────────────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class StartNode:
    key: str
    parent: Optional[str]
    title: str
    messages: tuple            # 本节点新增的消息（根：全部消息）
    fork_point: Optional[int] = None
    torn: bool = False         # 存好后把文件截掉一半：书中原版“写到一半被杀”留下的样子


@dataclass(frozen=True)
class GoalNode:
    key: str
    label: str
    parent: Optional[str] = None
    fork_point: Optional[int] = None
    messages: Optional[Tuple[str, int]] = None   # ("=", 9) 或 (">=", 10)
    added_roles: Optional[tuple] = None
    converged_from: Optional[tuple] = None
    hint: str = ""


@dataclass(frozen=True)
class Check:
    kind: str
    node: Optional[str] = None
    secret: str = ""


@dataclass(frozen=True)
class Exercise:
    id: str
    title: str
    instructions: str
    start: tuple                # StartNode…
    goal: tuple                 # GoalNode…
    active_end: Optional[str]
    checks: tuple               # Check…
    hints: tuple
    solution: tuple
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    def start_count(self, key: str) -> int:
        """起点节点 key 存下时有几条消息。"""
        by_key = {node.key: node for node in self.start}
        node = by_key[key]
        base = node.fork_point if node.parent is not None else 0
        return (base or 0) + len(node.messages)


# ── 读练习文件：每一处不对都点名字段 ────────────────────────────────────────────────────────
def _refuse_constant(name: str):
    raise ExerciseError(f"练习文件里有 {name}：JSON 只允许有限的数字")


def _no_duplicates(pairs: list) -> dict:
    seen: dict = {}
    for key, value in pairs:
        if key in seen:
            raise ExerciseError(f"练习文件里键 {printable(shorten(key, 40))!r} 出现了两次")
        seen[key] = value
    return seen


def load_file(path: str) -> "Exercise":
    """读一个 .json 练习文件（先看大小，不读巨大的文件）。"""
    try:
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise ExerciseError(f"练习文件 {os.path.basename(path)} 有 {size:,} 字节，上限是 {MAX_FILE_BYTES:,}")
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ExerciseError(f"读不了练习文件 {os.path.basename(path)}：{error.strerror or error}") from None
    return parse_exercise(raw)


def parse_exercise(raw: Any) -> "Exercise":
    """bytes / str / dict -> Exercise；不对就 ExerciseError（中文，点名字段）。"""
    if isinstance(raw, (bytes, bytearray)):
        if len(raw) > MAX_FILE_BYTES:
            raise ExerciseError(f"练习文件有 {len(raw):,} 字节，上限是 {MAX_FILE_BYTES:,}")
        try:
            raw = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as error:
            raise ExerciseError(f"练习文件不是 UTF-8 文本（第 {error.start} 个字节）") from None
    if isinstance(raw, str):
        if len(raw.encode("utf-8")) > MAX_FILE_BYTES:
            raise ExerciseError(f"练习文件超过 {MAX_FILE_BYTES:,} 字节的上限")
        try:
            raw = json.loads(raw, parse_constant=_refuse_constant, object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as error:
            raise ExerciseError(f"练习文件不是合法的 JSON：第 {error.lineno} 行第 {error.colno} 列，{error.msg}") from None
        except RecursionError:
            raise ExerciseError("练习文件嵌套太深") from None
    data = _Fields(raw, "练习文件")
    data.allow("format", "version", "id", "title", "instructions", "start", "goal", "hints", "solution")
    if data.get("format") != FORMAT:
        raise ExerciseError(f"format：应是 {FORMAT!r}，收到 {_shown(data.get('format'))}")
    if data.get("version") != VERSION or isinstance(data.get("version"), bool):
        raise ExerciseError(f"version：本程序只认 {VERSION}，收到 {_shown(data.get('version'))}"
                            "（更新版本的练习请升级工作台）")
    exercise_id = data.text("id", MAX_SHORT)
    if not _ID.fullmatch(exercise_id):
        raise ExerciseError(f"id：只允许小写字母、数字和 -（1–40 个），收到 {_shown(exercise_id)}")
    start = _start_nodes(data.get("start"))
    goal = _Fields(data.need("goal"), "goal")
    goal.allow("nodes", "active_end", "checks")
    start_keys = {node.key for node in start}
    nodes = _goal_nodes(goal.need("nodes"), start, start_keys)
    keys = {node.key for node in nodes}
    active_end = goal.get("active_end")
    if active_end is not None and active_end not in keys:
        raise ExerciseError(f"goal.active_end：{_shown(active_end)} 不是 goal.nodes 里的 key")
    checks = _checks(goal.get("checks", []), keys, start_keys)
    hints = data.texts("hints", required=False)
    solution = data.texts("solution", required=True)
    return Exercise(exercise_id, data.text("title", MAX_SHORT), data.text("instructions", MAX_TEXT), start, nodes,
                    active_end, checks, hints, solution, raw=raw)


def _shown(value: Any) -> str:
    return printable(shorten(repr(value), 60))


class _Fields:
    """一个 JSON 对象 + 它在文件里的位置（报错用）。"""

    def __init__(self, value: Any, where: str):
        if not isinstance(value, dict):
            raise ExerciseError(f"{where}：应是一个对象 {{…}}，收到 {type(value).__name__}")
        self.value, self.where = value, where

    def allow(self, *names: str) -> None:
        extra = [key for key in self.value if key not in names]
        if extra:
            raise ExerciseError(f"{self.where}：不认识的键 {_shown(extra[0])}（可用的键：{'、'.join(names)}）")

    def get(self, name: str, default: Any = None) -> Any:
        return self.value.get(name, default)

    def need(self, name: str) -> Any:
        if name not in self.value:
            raise ExerciseError(f"{self.where}.{name}：缺少这个字段")
        return self.value[name]

    def text(self, name: str, limit: int, *, required: bool = True) -> str:
        value = self.need(name) if required else self.value.get(name, "")
        return _text(value, f"{self.where}.{name}", limit)

    def texts(self, name: str, *, required: bool) -> tuple:
        value = self.need(name) if required else self.value.get(name, [])
        where = f"{self.where}.{name}"
        if not isinstance(value, list) or len(value) > MAX_LIST or (required and not value):
            raise ExerciseError(f"{where}：应是 1–{MAX_LIST} 条文字的列表" if required
                                else f"{where}：应是最多 {MAX_LIST} 条文字的列表")
        return tuple(_text(item, f"{where}[{index}]", MAX_TEXT) for index, item in enumerate(value))


def _text(value: Any, where: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ExerciseError(f"{where}：应是非空的文字，收到 {_shown(value)}")
    if len(value) > limit:
        raise ExerciseError(f"{where}：最多 {limit} 个字，这里有 {len(value):,} 个")
    return value


def _count(value: Any, where: str, *, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 10_000:
        raise ExerciseError(f"{where}：应是 {low}–10000 的整数，收到 {_shown(value)}")
    return value


def _key(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _KEY.fullmatch(value):
        raise ExerciseError(f"{where}：应是小写字母开头、只含小写字母数字和 _ 的名字（最多 24 个），收到 {_shown(value)}")
    return value


def _node_list(value: Any, where: str) -> list:
    if not isinstance(value, list) or not value or len(value) > MAX_NODES:
        raise ExerciseError(f"{where}：应是 1–{MAX_NODES} 个节点的列表")
    return value


def _start_nodes(value: Any) -> tuple:
    if value is None:
        return ()
    start = _Fields(value, "start")
    start.allow("nodes")
    nodes, counts = [], {}
    for index, item in enumerate(_node_list(start.need("nodes"), "start.nodes")):
        where = f"start.nodes[{index}]"
        fields = _Fields(item, where)
        fields.allow("key", "parent", "title", "messages", "fork_point", "torn")
        key = _key(fields.need("key"), f"{where}.key")
        if key in counts:
            raise ExerciseError(f"{where}.key：{key!r} 重复了")
        parent = fields.get("parent")
        if parent is not None and parent not in counts:
            raise ExerciseError(f"{where}.parent：{_shown(parent)} 不是写在它前面的起点节点")
        messages = fields.need("messages")
        if not isinstance(messages, list) or len(messages) > MAX_MESSAGES or (parent is None and not messages):
            raise ExerciseError(f"{where}.messages：应是最多 {MAX_MESSAGES} 条消息的列表（根节点至少 1 条）")
        checked = []
        for number, message in enumerate(messages):
            spot = f"{where}.messages[{number}]"
            entry = _Fields(message, spot)
            entry.allow("role", "content")
            if entry.need("role") not in ROLES:
                raise ExerciseError(f"{spot}.role：只能是 {' / '.join(ROLES)}，收到 {_shown(entry.get('role'))}")
            checked.append({"role": entry.get("role"), "content": entry.text("content", MAX_TEXT)})
        fork_point = None
        if parent is not None:
            fork_point = _count(fields.need("fork_point"), f"{where}.fork_point")
            if fork_point > counts[parent]:
                raise ExerciseError(f"{where}.fork_point：{fork_point} 超过了父节点 {parent!r} 的 {counts[parent]} 条消息")
        elif "fork_point" in item:
            raise ExerciseError(f"{where}.fork_point：根节点没有分叉点")
        torn = fields.get("torn", False)
        if not isinstance(torn, bool):
            raise ExerciseError(f"{where}.torn：应是 true 或 false")
        title = fields.text("title", MAX_SHORT) if "title" in item else "练习会话"
        counts[key] = (fork_point or 0) + len(checked)
        nodes.append(StartNode(key, parent, title, tuple(checked), fork_point, torn))
    return tuple(nodes)


def _goal_nodes(value: Any, start: tuple, start_keys: set) -> tuple:
    nodes: list = []
    seen: set = set()
    start_parent = {node.key: node.parent for node in start}
    for index, item in enumerate(_node_list(value, "goal.nodes")):
        where = f"goal.nodes[{index}]"
        fields = _Fields(item, where)
        fields.allow("key", "label", "parent", "fork_point", "messages", "added_roles", "converged_from", "hint")
        key = _key(fields.need("key"), f"{where}.key")
        if key in seen:
            raise ExerciseError(f"{where}.key：{key!r} 重复了")
        parent = fields.get("parent")
        if parent is not None and parent not in seen:
            raise ExerciseError(f"{where}.parent：{_shown(parent)} 不是写在它前面的目标节点")
        if key in start_keys and parent != start_parent[key]:
            raise ExerciseError(f"{where}.parent：{key!r} 是起点里的节点，父节点应与起点一致（{start_parent[key]!r}）")
        fork_point = fields.get("fork_point")
        if fork_point is not None:
            fork_point = _count(fork_point, f"{where}.fork_point")
            if parent is None:
                raise ExerciseError(f"{where}.fork_point：根节点没有分叉点")
        messages = fields.get("messages")
        if messages is not None:
            if isinstance(messages, dict):
                bound = _Fields(messages, f"{where}.messages")
                bound.allow("min")
                messages = (">=", _count(bound.need("min"), f"{where}.messages.min", low=1))
            else:
                messages = ("=", _count(messages, f"{where}.messages", low=1))
        roles = fields.get("added_roles")
        if roles is not None:
            if not isinstance(roles, list) or len(roles) > MAX_MESSAGES or not all(r in ROLES for r in roles):
                raise ExerciseError(f"{where}.added_roles：应是角色（{' / '.join(ROLES)}）的列表")
            roles = tuple(roles)
        merged = fields.get("converged_from")
        if merged is not None:
            if not isinstance(merged, list) or not merged or len(merged) > MAX_NODES:
                raise ExerciseError(f"{where}.converged_from：应是写在它前面的目标节点 key 的列表")
            for number, other in enumerate(merged):
                if other not in seen or other == parent:
                    raise ExerciseError(f"{where}.converged_from[{number}]：{_shown(other)} 不是写在它前面的"
                                        "另一个目标节点（也不能是它的父节点）")
            merged = tuple(merged)
        hint = fields.text("hint", MAX_TEXT) if "hint" in item else ""
        seen.add(key)
        nodes.append(GoalNode(key, fields.text("label", MAX_SHORT), parent, fork_point, messages, roles, merged, hint))
    return tuple(nodes)


def _checks(value: Any, keys: set, start_keys: set) -> tuple:
    if not isinstance(value, list) or len(value) > MAX_LIST:
        raise ExerciseError(f"goal.checks：应是最多 {MAX_LIST} 项的列表")
    checks = []
    for index, item in enumerate(value):
        where = f"goal.checks[{index}]"
        fields = _Fields(item, where)
        fields.allow("kind", "node", "secret")
        kind = fields.need("kind")
        if kind not in CHECKS:
            raise ExerciseError(f"{where}.kind：不认识 {_shown(kind)}（可用：{'、'.join(CHECKS)}）")
        needs = CHECKS[kind].needs
        node = fields.get("node")
        if "node" in needs:
            pool = start_keys if kind == "torn_in_trash" else keys
            if node not in pool:
                raise ExerciseError(f"{where}.node：{_shown(node)} 不是{'起点' if kind == 'torn_in_trash' else '目标'}"
                                    "里的节点 key")
        elif node is not None:
            raise ExerciseError(f"{where}.node：{kind} 不需要 node")
        secret = fields.text("secret", MAX_SHORT) if "secret" in needs else ""
        if "secret" not in needs and "secret" in item:
            raise ExerciseError(f"{where}.secret：{kind} 不需要 secret")
        checks.append(Check(kind, node, secret))
    return tuple(checks)


def builtin_exercises(folder: str = EXERCISES_DIR) -> List[Exercise]:
    """exercises/*.json，按文件名排序（01-…、02-…）。内置的练习坏了直接抛 ExerciseError：测试会发现。"""
    names = sorted(name for name in os.listdir(folder) if name.endswith(".json"))
    return [load_file(os.path.join(folder, name)) for name in names]


# ── 把起点写进空间 ────────────────────────────────────────────────────────────────────────────
def seed(exercise: Exercise, store: SessionStore) -> Dict[str, str]:
    """起点树写进 store（全用仓库的公开方法：create_session / fork），返回 {key: session_id}。
    torn 的节点存好后截掉一半，就像书中原版的原地写入在中途被 kill。"""
    anchors: Dict[str, str] = {}
    for node in exercise.start:
        messages = [dict(message) for message in node.messages]
        if node.parent is None:
            anchors[node.key] = store.create_session(node.title, messages)
        else:
            child = store.fork(anchors[node.parent], messages, at=node.fork_point, title=node.title)
            anchors[node.key] = child.session_id
        if node.torn:
            path = store.path_of(anchors[node.key])
            os.truncate(path, os.path.getsize(path) // 2)
    return anchors


# ── 检查 ─────────────────────────────────────────────────────────────────────────────────────
@dataclass
class LevelState:
    """一关的进度（lesson.py 存在访客空间里）：起点节点的 ID、开始的时刻、这一关里发生过的事。"""
    anchors: Dict[str, str] = field(default_factory=dict)
    started_ns: int = 0
    events: List[dict] = field(default_factory=list)   # {"kind": "conflict"|"export", "session_id": …, …}


@dataclass(frozen=True)
class Part:
    label: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class Verdict:
    parts: tuple
    hint: str
    hint_kind: str          # solved / wrong_fork_point / wrong_parent / messages_short / converge_missing / …
    mapping: dict           # 目标 key -> 学生空间里对上的 session_id

    @property
    def solved(self) -> bool:
        return all(part.ok for part in self.parts)

    def lines(self) -> List[str]:
        return [f"{'✅' if part.ok else '⬜'} {part.label}" + (f"：{part.detail}" if part.detail else "")
                for part in self.parts]


class TooManyToJudge(Exception):
    """这一关的会话太多（或要比较的组合太多）：check() 把它变成一句说明，不在一次点击上花几秒钟。"""


class _Space:
    """一次检查里读到的学生空间：摘要、按需读入的节点、哪些节点算这一关的；fits 数比较了几次（有上限）。"""

    def __init__(self, store: SessionStore, state: LevelState, goals: tuple = ()):
        self.store, self.state, self.fits = store, state, 0
        self.goals = {goal.key: goal for goal in goals}   # 额外的检查要知道目标节点的父节点、分叉点
        self.by_id = {s["session_id"]: s for s in store.list_sessions()}
        anchored = set(state.anchors.values())
        self.fresh = {sid for sid, s in self.by_id.items()
                      if s.get("created_ns", 0) >= state.started_ns and sid not in anchored}
        self.kids: Dict[Optional[str], List[str]] = {}
        for sid, summary in sorted(self.by_id.items(), key=lambda item: item[1].get("created_ns", 0)):
            self.kids.setdefault(summary.get("parent_id"), []).append(sid)
        self._nodes: dict = {}

    def node(self, session_id: str):
        if session_id not in self._nodes:
            try:
                self._nodes[session_id] = self.store.load(session_id)
            except SessionError:
                self._nodes[session_id] = None
        return self._nodes[session_id]

    def converged_from(self, session_id: str) -> tuple:
        summary = self.by_id.get(session_id, {})
        found = summary.get("converged_from")
        if found is None:
            node = self.node(session_id)
            found = getattr(node, "converged_from", None) if node is not None else None
        return tuple(found) if isinstance(found, (list, tuple)) else ()

    def count(self, session_id: str) -> int:
        return self.by_id[session_id]["message_count"]

    def added_roles(self, session_id: str, base: int) -> tuple:
        node = self.node(session_id)
        if node is None:
            return ()
        return tuple(str(m.get("role")) if isinstance(m, dict) else "?" for m in node.messages[base:])


def _base(exercise: Exercise, goal: GoalNode, space: _Space, session_id: str) -> int:
    """新增消息从第几条算起：起点节点 = 起点时的条数；分叉 = 分叉点；新的根 = 0。"""
    if goal.key in {node.key for node in exercise.start}:
        return exercise.start_count(goal.key)
    fork = space.by_id[session_id].get("fork_point")
    return fork if isinstance(fork, int) else 0


def _fits(exercise, goal: GoalNode, sid: str, space: _Space, mapping: dict) -> Optional[Tuple[str, str]]:
    """sid 能当 goal 吗？能 -> None；不能 -> (哪种差别, 中文说明)。"""
    space.fits += 1
    if space.fits > MAX_FITS:
        raise TooManyToJudge(f"这个空间的会话太多，无法判题（比较了 {MAX_FITS:,} 次还没判完，上限 {MAX_FITS:,} 次）")
    summary = space.by_id[sid]
    fork = summary.get("fork_point")
    if goal.fork_point is not None and fork != goal.fork_point:
        return "wrong_fork_point", (f"它在第 {fork} 条之后分叉，目标是在第 {goal.fork_point} 条之后（保留前 "
                                    f"{goal.fork_point} 条）")
    if goal.converged_from is not None:
        want = {mapping.get(key) for key in goal.converged_from}
        have = set(space.converged_from(sid))
        if not have:
            return "converge_missing", "它不是收敛节点（没有 converged_from）"
        if None in want or have != want:
            return "wrong_converge", "它收敛的分支与目标不同"
    count = summary["message_count"]
    if goal.messages is not None:
        relation, number = goal.messages
        if count < number:
            return "messages_short", f"它有 {count} 条消息，还差 {number - count} 条"
        if relation == "=" and count > number:
            return "messages_extra", f"它有 {count} 条消息，比目标多 {count - number} 条"
    if goal.added_roles is not None:
        roles = space.added_roles(sid, _base(exercise, goal, space, sid))
        want = goal.added_roles
        if roles[:len(want)] != want or (goal.messages is not None and goal.messages[0] == "=" and roles != want):
            return "wrong_roles", f"新增消息的角色是 {'、'.join(roles) or '（无）'}，目标是 {'、'.join(want)}"
    return None


def _candidates(exercise, goal: GoalNode, space: _Space, mapping: dict) -> List[str]:
    if goal.key in space.state.anchors:
        sid = space.state.anchors[goal.key]
        return [sid] if sid in space.by_id else []
    if goal.parent is not None:
        parent = mapping.get(goal.parent)
        if parent is None:
            return []
        pool = space.kids.get(parent, [])
    else:
        pool = space.kids.get(None, [])
    used = set(mapping.values())
    return _likeliest(goal, [sid for sid in pool if sid in space.fresh and sid not in used], space)


def _likeliest(goal: GoalNode, pool: List[str], space: _Space) -> List[str]:
    """最多 MAX_CANDIDATES 个候选，保持原来的顺序（创建先后）：只看摘要给每个打粗分（分叉点、消息条数、
    是不是收敛节点各对上一项得一分），分数相同取新建的。不读任何节点，对候选数是线性的。"""
    if len(pool) <= MAX_CANDIDATES:
        return pool
    position = {sid: index for index, sid in enumerate(pool)}
    best = heapq.nlargest(MAX_CANDIDATES, pool, key=lambda sid: (_rough_score(goal, space.by_id[sid]), position[sid]))
    return sorted(best, key=position.__getitem__)


def _rough_score(goal: GoalNode, summary: dict) -> int:
    count = summary["message_count"]
    count_ok = goal.messages is None or (count == goal.messages[1] if goal.messages[0] == "=" else count >= goal.messages[1])
    fork_ok = goal.fork_point is None or summary.get("fork_point") == goal.fork_point
    merged_ok = goal.converged_from is None or bool(summary.get("converged_from"))
    return fork_ok + count_ok + merged_ok


def _best_mapping(exercise: Exercise, space: _Space) -> dict:
    """目标节点 -> 学生节点的对应，对上的越多越好（回溯；一关的节点很少）。"""
    goals = exercise.goal
    best: dict = {}

    def search(index: int, mapping: dict) -> None:
        nonlocal best
        if len(mapping) + (len(goals) - index) <= len(best):
            return
        if index == len(goals):
            best = dict(mapping)
            return
        goal = goals[index]
        for sid in _candidates(exercise, goal, space, mapping):
            if _fits(exercise, goal, sid, space, mapping) is None:
                mapping[goal.key] = sid
                search(index + 1, mapping)
                del mapping[goal.key]
        search(index + 1, mapping)

    search(0, {})
    return best


def _diagnose(exercise: Exercise, goal: GoalNode, space: _Space, mapping: dict, labels: dict) -> Tuple[str, str]:
    """没对上的目标节点：最接近的那个节点差在哪里 -> (提示的种类, 提示)。"""
    if goal.parent is not None and goal.parent not in mapping:
        return "blocked", f"先完成「{labels[goal.parent]}」，再做「{goal.label}」"
    if goal.key in space.state.anchors:
        pool = _candidates(exercise, goal, space, mapping)
        if not pool:
            return "missing_start", f"这一关起点里的「{goal.label}」不见了（可能被删除了）：点「🚀 开始这一关」"
    else:
        pool = _candidates(exercise, goal, space, mapping)
    misses = [(_fits(exercise, goal, sid, space, mapping), sid) for sid in pool]
    misses = [(miss, sid) for miss, sid in misses if miss is not None]
    order = ["converge_missing", "messages_short", "messages_extra", "wrong_roles", "wrong_converge",
             "wrong_fork_point"]
    if goal.converged_from is not None and not any(space.converged_from(sid) for sid in pool):
        sources = "、".join(f"「{labels[key]}」" for key in goal.converged_from)
        return "converge_missing", (f"还没有收敛：对比之后选中「{labels.get(goal.parent, '')}」，把 {sources} 收敛进来，"
                                    "写下你的决定（🔀 收敛）")
    for kind in order:
        for miss, _sid in misses:
            if miss[0] == kind:
                return kind, f"「{goal.label}」差一点：{miss[1]}。" + (goal.hint or "")
    if goal.parent is not None and goal.key not in space.state.anchors:
        elsewhere = [sid for sid in space.fresh if sid not in mapping.values()
                     and space.by_id[sid].get("parent_id") != mapping[goal.parent]
                     and (goal.fork_point is None or space.by_id[sid].get("fork_point") == goal.fork_point)]
        if elsewhere:
            wrong = space.by_id[space.by_id[elsewhere[0]].get("parent_id") or ""] if space.by_id[
                elsewhere[0]].get("parent_id") in space.by_id else None
            where = f"「{shorten(printable(wrong['title']), 30)}」" if wrong else "别的节点"
            return "wrong_parent", (f"父节点不对：你从 {where} 分叉了，「{goal.label}」应从「{labels[goal.parent]}」"
                                    "分叉（先在树里选中它，再分叉）")
    return "not_started", goal.hint or f"还没有「{goal.label}」"


def _active_end(space: _Space, root_id: str) -> Optional[str]:
    """root 所在那棵树里最近写过的叶子（与会话树浏览器的“◀ 活动端”同一个规则）。"""
    members, stack = [], [root_id]
    while stack:
        sid = stack.pop()
        members.append(sid)
        stack.extend(space.kids.get(sid, []))
    leaves = [sid for sid in members if not space.kids.get(sid)]

    def written(sid: str) -> tuple:
        try:
            stamp = os.stat(space.store.path_of(sid)).st_mtime_ns
        except OSError:
            stamp = 0
        return stamp, space.by_id[sid].get("created_ns", 0)
    return max(leaves, key=written, default=None)


def _root(space: _Space, session_id: str) -> str:
    seen, current = set(), session_id
    while current not in seen and space.by_id.get(current, {}).get("parent_id") in space.by_id:
        seen.add(current)
        current = space.by_id[current]["parent_id"]
    return current


def describe_goal(goal: GoalNode, labels: dict) -> str:
    """'分支 A：自「主会话」第 5 条分叉，共 7 条，新增 assistant、user'"""
    bits = []
    if goal.parent is not None:
        bits.append(f"自「{labels[goal.parent]}」" + (f"第 {goal.fork_point} 条分叉" if goal.fork_point is not None
                                                   else "分叉"))
    if goal.messages is not None:
        bits.append(f"共 {goal.messages[1]} 条" if goal.messages[0] == "=" else f"至少 {goal.messages[1]} 条")
    if goal.added_roles:
        bits.append("新增 " + "、".join(goal.added_roles))
    if goal.converged_from:
        bits.append("收敛自 " + "、".join(f"「{labels[key]}」" for key in goal.converged_from))
    return f"{goal.label}：{'，'.join(bits)}" if bits else goal.label


def check(exercise: Exercise, store: SessionStore, state: LevelState) -> Verdict:
    """学生空间 vs 目标：每个目标部分一行 ✅ / ⬜，外加第一处没对上的地方的提示。只读，不改任何文件。
    会话太多时（见模块文档的“有界”）每个部分都是 ⬜，提示说明为什么没判。"""
    space = _Space(store, state, exercise.goal)
    labels = {goal.key: goal.label for goal in exercise.goal}
    try:
        if len(space.fresh) > MAX_JUDGED_SESSIONS:
            raise TooManyToJudge(f"这个空间的会话太多，无法判题（{len(space.fresh):,} 个，上限 {MAX_JUDGED_SESSIONS:,}）")
        return _judge(exercise, space, labels)
    except TooManyToJudge as too_many:
        parts = [Part(describe_goal(goal, labels), False) for goal in exercise.goal]
        if exercise.active_end is not None:
            parts.append(Part(f"活动端停在「{labels[exercise.active_end]}」", False))
        return Verdict(tuple(parts), f"{too_many}：删掉这一关里多余的会话，或点「🚀 开始这一关」", "too_many", {})


def _judge(exercise: Exercise, space: _Space, labels: dict) -> Verdict:
    mapping = _best_mapping(exercise, space)
    parts, hint, hint_kind = [], "", "solved"
    for goal in exercise.goal:
        ok = goal.key in mapping
        parts.append(Part(describe_goal(goal, labels), ok))
        if not ok and not hint:
            hint_kind, hint = _diagnose(exercise, goal, space, mapping, labels)
    if exercise.active_end is not None:
        target = mapping.get(exercise.active_end)
        end = _active_end(space, _root(space, target)) if target else None
        ok = target is not None and end == target
        parts.append(Part(f"活动端停在「{labels[exercise.active_end]}」", ok))
        if not ok and not hint:
            now = space.by_id.get(end, {}).get("title", "") if end else ""
            hint_kind, hint = "active_end", (f"活动端（最近写过的叶子）现在是「{shorten(printable(now), 30)}」：最后再续写"
                                             f"「{labels[exercise.active_end]}」一轮，它才是对话停下的地方")
    for item in exercise.checks:
        ok, label, advice = CHECKS[item.kind].run(item, space, mapping, labels)
        parts.append(Part(label, ok))
        if not ok and not hint:
            hint_kind, hint = item.kind, advice
    if hint_kind == "solved":
        hint = "🎉 全部对上了！"
    return Verdict(tuple(parts), hint, hint_kind, mapping)


# ── 额外的检查：一行一种，kind -> (需要的参数, 检查函数) ─────────────────────────────────────────
class CheckKind:
    def __init__(self, needs: tuple, run: Callable):
        self.needs, self._run = needs, run

    def run(self, item: Check, space: _Space, mapping: dict, labels: dict) -> Tuple[bool, str, str]:
        return self._run(item, space, mapping, labels)


def _check_clean(item, space, mapping, labels):
    problems = space.store.check()
    label = "体检（check()）没有问题"
    if not problems:
        return True, label, ""
    first = problems[0]
    return False, label, (f"体检还发现 {len(problems)} 个问题，第一个是 {first.kind}（{os.path.basename(first.path)}）："
                          "读不了的文件不能删掉了事，用「🩺 体检」里的按钮把它移进回收站（字节原样保留）")


def _torn_in_trash(item, space, mapping, labels):
    sid = space.state.anchors.get(item.node, "")
    label = "写坏的文件进了回收站（没有直接删掉）"
    kept = bool(sid) and bool(s11_trash.copies(space.store.storage_dir, sid))
    live = bool(sid) and os.path.lexists(space.store.path_of(sid))
    if kept and not live:
        return True, label, ""
    return False, label, "写坏的那个文件还在原处：在「🩺 体检」里把它移进回收站"


def _events(space: _Space, kind: str) -> List[dict]:
    return [event for event in space.state.events if isinstance(event, dict) and event.get("kind") == kind]


def _conflict_met(item, space, mapping, labels):
    target = mapping.get(item.node) or space.state.anchors.get(item.node)
    label = f"两个标签页同时续写「{labels[item.node]}」时遇到了 ConflictError"
    if any(event.get("session_id") == target for event in _events(space, "conflict")):
        return True, label, ""
    return False, label, ("还没有遇到冲突：先在「第二个标签页」里打开这个会话，再在第一个标签页续写并保存，"
                          "然后回到第二个标签页续写——它读入的修订号已经过期")


def _exported_clean(item, space, mapping, labels):
    target = mapping.get(item.node)
    label = f"导出了「{labels[item.node]}」，导出里没有那个密钥"
    exports = _events(space, "export")
    if any(e.get("session_id") == target and not e.get("leaked") for e in exports if target):
        return True, label, ""
    if exports:
        return False, label, f"你导出的不是「{labels[item.node]}」：先在树里选中它，再导出"
    return False, label, f"选中「{labels[item.node]}」，点「📤 导出选中的会话（已脱敏）」"


def _records_since_start(space: _Space) -> List[dict]:
    """这一关开始之后的操作日志（旧的在前）。太多就不判（TooManyToJudge）：一次点击的工作量有上限。"""
    found = []
    for record in s11_journal.read(space.store.storage_dir).records():
        if record.get("ns", 0) >= space.state.started_ns:
            found.append(record)
            if len(found) > MAX_JOURNAL_RECORDS:
                raise TooManyToJudge(f"这一关开始之后的操作太多，无法判题（超过 {MAX_JOURNAL_RECORDS:,} 步）")
    return found


def _fork_undone(item, space, mapping, labels):
    """日志里有一次分错了位置的分叉（父节点或分叉点与目标节点 item.node 不同），它是被 ↶ 撤销 掉的（最后一次
    撤销 / 重做是撤销），而且现在也不在（没有从回收站取回）。只删掉它、或根本没分错过，都给出差在哪里。"""
    goal = space.goals[item.node]
    right = (space.state.anchors.get(goal.parent) or mapping.get(goal.parent), goal.fork_point)
    anchored = set(space.state.anchors.values())
    label = "分错的那次分叉是用 ↶ 撤销 撤掉的（不是删掉的）"
    forks, last_step, deleted = [], {}, set()
    for record in _records_since_start(space):
        op, ids = record["op"], record["ids"]
        if op == "fork" and ids and ids[0] not in anchored and ids[0] != mapping.get(item.node) \
                and (record.get("parent"), record.get("fork_point")) != right:
            forks.append(record)
        elif op in ("undo", "redo"):
            last_step[record.get("target")] = op
        elif op == "delete":
            deleted.update(ids)
    # 撤销在会话树浏览器里，不在练习页上：它的控件用“”引，「」只引练习页上有的东西
    where = "在 “🌳 会话树浏览器” 的 “📜 操作历史 · ↶ 撤销 / ↷ 重做” 里"
    if not forks:
        return False, label, ("还没有分错过：这一关练的是撤销——先照说明在错的位置分叉一次，再" + where +
                              "点 ↶ 撤销 把它撤掉")
    for record in forks:
        if last_step.get(record["n"]) == "undo" and not os.path.lexists(space.store.path_of(record["ids"][0])):
            return True, label, ""
    wrong = forks[-1]
    step = f"第 {wrong['n']} 步那次分错的分叉（自第 {wrong.get('fork_point', '?')} 条）"
    if last_step.get(wrong["n"]) is not None:   # 撤销过，可它又回来了（↷ 重做、或从回收站取回）
        return False, label, f"{step}撤销过，可它又回来了（重做了或从回收站取回了）：{where}再点 ↶ 撤销"
    if wrong["ids"][0] in deleted:
        return False, label, (f"{step}是用 🗑️ 删除的，不是撤销的：删除只把文件挪进回收站，日志里它仍是一次分叉。"
                              f"{where}连点 ↶ 撤销，直到撤掉那次分叉（先撤掉的删除会把它取回），再重新做对的分叉；"
                              "或者在练习页上重新开始这一关")
    return False, label, f"{step}还在：{where}点 ↶ 撤销（之后又续写过它的话，撤销会先撤那几步，多点几次）"


CHECKS: Dict[str, CheckKind] = {
    "check_clean": CheckKind((), _check_clean),
    "torn_in_trash": CheckKind(("node",), _torn_in_trash),
    "conflict_met": CheckKind(("node",), _conflict_met),
    "exported_clean": CheckKind(("node", "secret"), _exported_clean),
    "fork_undone": CheckKind(("node",), _fork_undone),
}


def now_ns() -> int:
    return time.time_ns()
