"""lesson.py — 「🎯 练习」标签页的全部逻辑（不 import gradio，测试直接驱动）

    浏览器 ──token──> Lesson.<动作>(token, view, *控件的值, teacher=老师密钥)
                        │ spaces.open(token)：每次重新验签，只认自己的空间
                        │ 分叉 / 续写 / 导出 = 会话树浏览器的同一个 Explorer 方法
                        ▼
                 s11_exercises.check(练习, 自己的 store, 这一关的进度) ──> Verdict（✅ 每个目标部分 + 下一条提示）
                        │
                        ▼
                 LessonPage：关卡列表（✓）· 目标树 | 你的树（同一个 mermaid 画法）· 判定 · 提示 · 答案

    <空间>/.lesson.json   {"levels": {"rewind": {"anchors": {...}, "started_ns": …, "events": [...],
                                                "actions": 5, "misses": 2, "best": 3, "last_progress": …,
                                                "solved_at": …}}, "current": "rewind"}
    <会话目录>/lessons/*.json   老师发布给全班的关卡（与 exercises/ 里的内置关卡同一种文件）
    <会话目录>/class.json       老师定的「全班做第 N 关」（后面的关卡对同学锁着，pick / start / 每个动作都在服务器端查）

Key insight: 判分只读学生自己的空间，进度也只写在它里面：两个同学永远看不到彼此；
老师看全班时读的是同一份 .lesson.json（classroom.py），不需要任何共享的内存状态。
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import s11_exercises
from s11_exercises import Exercise, ExerciseError, LevelState
from s11_session import ConflictError, SessionError, SessionNotFound
from s11_storage import PendingWrite
from s11_text import shorten
from s11_tree import Forest
from s11_workbench import explorer as explorer_logic
from s11_workbench.explorer import Explorer, View, branch_names, explain, mermaid_map, page_tree, tree_label
from s11_workbench.markdown import literal_inline
from s11_workbench.spaces import SpaceError, clean_display_name

log = logging.getLogger(__name__)

PROGRESS_FILE = ".lesson.json"
LESSONS_DIR = "lessons"
MAX_PUBLISHED = 50
STUCK_MINUTES = 8          # 这么久没有新进展算“卡住了”
STUCK_MISSES = 5           # 或者连续这么多次操作都没让判定变好
CLASS_FILE = "class.json"
MAX_TEACHER_SPACES = 8     # 老师换浏览器、换电脑也不过几次：只记最近这么多个
MAX_RETIRED_IDS = 500      # 重新开始过的关卡写过的起点节点：记着它们（课堂视图不算成分叉），最多这么多个
REFRESH_SECONDS = 15.0     # 投在大屏上的课堂表每隔这么久自己刷新一次（学生页面也这么久看一次老师定的关卡）
TOOLS = {"check_clean": "doctor", "torn_in_trash": "doctor", "conflict_met": "second", "exported_clean": "export",
         "fork_undone": "undo"}   # ↶ 撤销在会话树浏览器里（history_tab.py）


# ── 服务器端视图与整页结果 ────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class LessonView:
    """一个标签页看着哪一关、选中了哪个节点（gr.State，浏览器改不了）。"""
    level: str | None = None
    session_id: str | None = None
    revision: int = -1
    second: tuple = ()          # 第二个标签页打开的 (session_id, 当时的修订号)
    show_solution: bool = False
    chat_numbers: tuple = ()    # 对话框第 i 行是第几条消息（点一条消息 = 分叉位置，fork_control.py）


@dataclass
class LessonPage:
    notice: str
    view: LessonView
    level_choices: list = field(default_factory=list)
    title: str = ""
    instructions: str = ""
    goal_map: str = ""
    goal_text: str = ""
    current_map: str = ""
    tree_choices: list = field(default_factory=list)
    verdict: str = ""
    hint: str = ""
    solution: str = ""
    solved: bool = False
    tools: tuple = ()            # 这一关要用到的额外工具：doctor / second / export / converge
    converge_choices: list = field(default_factory=list)
    doctor: str = ""
    second: str = ""
    preview: str = ""
    downloads: tuple = (None, None)
    name: str | None = None      # 名字输入框：只在页面载入和保存名字时更新（None 保持原样，不盖住正在输入的字）
    teacher: bool = False
    static: bool = True          # False：说明、目标树这些这一关不变的部分不必重发（每次操作之后都是 False）
    draft: str | None = None     # 第二个标签页的输入框：None 保持原样，"" 清空
    main_draft: str | None = None  # 本页续写的输入框：同上
    class_note: str = ""         # 老师定了「全班做第 N 关」时页面上方的一句话
    chat: list = field(default_factory=list)   # 选中节点从根开始的对话（和会话树浏览器同一个画法）
    fork_reset: bool = False     # 分叉控件清空（换了节点、换了关卡、分叉成功）
    area: str = ""               # "fork"：提示写在分叉按钮下面（读者正看着那里），不写在页面顶上


class LessonError(SessionError):
    """练习里的操作不成立（没选关卡、没选节点……），消息是给同学看的中文。"""


# ── 进度文件：在访客自己的空间里 ────────────────────────────────────────────────────────────
def read_progress(folder: str) -> dict:
    """<空间>/.lesson.json；没有或坏了都当作还没开始（它只是附加信息，坏了不影响会话）。"""
    path = os.path.join(folder, PROGRESS_FILE)
    try:
        if os.path.islink(path) or os.path.getsize(path) > 512 * 1024:
            return {"levels": {}}
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return {"levels": {}}
    if not isinstance(data, dict) or not isinstance(data.get("levels"), dict):
        return {"levels": {}}
    return data


def write_progress(folder: str, progress: dict) -> None:
    data = json.dumps(progress, ensure_ascii=False).encode("utf-8")
    with PendingWrite(os.path.join(folder, PROGRESS_FILE), data) as pending:
        pending.commit()


def level_state(entry: dict) -> LevelState:
    anchors = entry.get("anchors") if isinstance(entry.get("anchors"), dict) else {}
    events = entry.get("events") if isinstance(entry.get("events"), list) else []
    started = entry.get("started_ns") if isinstance(entry.get("started_ns"), int) else 0
    return LevelState({str(k): str(v) for k, v in anchors.items()}, started, events[-200:])


def is_stuck(entry: dict, now: float | None = None) -> bool:
    """开始了、没做完，而且很久没有进展或连续多次没进展。"""
    if not entry or entry.get("solved_at"):
        return False
    now = time.time() if now is None else now
    last = entry.get("last_progress") or entry.get("started_at") or now
    return now - last > STUCK_MINUTES * 60 or int(entry.get("misses", 0)) >= STUCK_MISSES


# ── 关卡：内置的 + 老师发布的 ─────────────────────────────────────────────────────────────────
class Levels:
    """exercises/ 里的内置关卡（启动时读一次）+ <会话目录>/lessons/ 里老师发布的（每次按修改时间重读）。"""

    def __init__(self, sessions_dir: str, builtin: list[Exercise] | None = None):
        self.builtin = builtin if builtin is not None else s11_exercises.builtin_exercises()
        self.folder = os.path.join(sessions_dir, LESSONS_DIR)
        self._cache: dict = {}

    def published(self) -> list[Exercise]:
        try:
            names = sorted(n for n in os.listdir(self.folder) if n.endswith(".json") and not n.startswith("."))
        except FileNotFoundError:
            return []
        found = []
        for name in names[:MAX_PUBLISHED]:
            path = os.path.join(self.folder, name)
            try:
                stamp = os.stat(path).st_mtime_ns
                if self._cache.get(path, (None,))[0] != stamp:
                    self._cache[path] = (stamp, s11_exercises.load_file(path))
                found.append(self._cache[path][1])
            except (OSError, ExerciseError) as error:
                log.warning("published level %s skipped: %s", name, error)
        return found

    def all(self) -> list[Exercise]:
        return list(self.builtin) + self.published()

    def get(self, level_id) -> Exercise:
        for exercise in self.all():
            if exercise.id == level_id:
                return exercise
        raise LessonError(f"没有关卡 {literal_inline(str(level_id), 40)}")

    def publish(self, exercise: Exercise) -> str:
        if any(item.id == exercise.id for item in self.builtin):
            raise LessonError(f"id {exercise.id} 与内置关卡重名：请换一个 id")
        os.makedirs(self.folder, exist_ok=True)
        if len(self.published()) >= MAX_PUBLISHED and not os.path.exists(self._path(exercise.id)):
            raise LessonError(f"最多发布 {MAX_PUBLISHED} 个关卡")
        data = json.dumps(exercise.raw, ensure_ascii=False, indent=1).encode("utf-8")
        with PendingWrite(self._path(exercise.id), data) as pending:
            pending.commit()
        return exercise.id

    def _path(self, level_id: str) -> str:
        return os.path.join(self.folder, f"{level_id}.json")


# ── 全班：老师定的「全班做第 N 关」（服务器端的一个小文件，不是内存里的全局变量）────────────────────────
class ClassPlan:
    """<会话目录>/class.json：老师让全班做哪一关（它后面的关卡锁着），以及老师自己用过的空间（不算学生）。

        {"format": "s11-class", "level": "rewind", "teacher_spaces": ["3f9a0c1d2e4b5a6c"]}

    只有验过老师密钥的动作才写它（Classroom.set_level / remember_teacher）；学生的每个请求只读它，
    按 (修改时间, 大小) 缓存，所以学生页面的定时检查只是一次 stat。坏了、没有都当作“不限制”。
    """

    def __init__(self, sessions_dir: str):
        self.path = os.path.join(sessions_dir, CLASS_FILE)
        self._cached: tuple = (None, {})
        self._lock = threading.Lock()

    def stamp(self) -> tuple:
        """文件现在的 (修改时间, 大小)；页面用它判断“老师改过没有”。"""
        try:
            info = os.stat(self.path)
        except OSError:
            return (0, 0)
        return (info.st_mtime_ns, info.st_size)

    def read(self) -> dict:
        stamp = self.stamp()
        if self._cached[0] != stamp:
            self._cached = (stamp, self._load())
        return self._cached[1]

    def _load(self) -> dict:
        try:
            if os.path.islink(self.path) or os.path.getsize(self.path) > 64 * 1024:
                return {}
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        level = data.get("level") if isinstance(data.get("level"), str) else None
        spaces = [item for item in data.get("teacher_spaces") or [] if isinstance(item, str)]
        return {"level": level, "teacher_spaces": spaces[-MAX_TEACHER_SPACES:]}

    def level(self) -> str | None:
        return self.read().get("level")

    def teacher_spaces(self) -> set:
        return set(self.read().get("teacher_spaces", []))

    def set_level(self, level_id: str | None) -> None:
        with self._lock:
            self._write({**self._load(), "level": level_id})

    def add_teacher_space(self, space_id: str) -> None:
        """老师的页面用的空间：记下（最多 MAX_TEACHER_SPACES 个，最新的在后），课堂视图不把它当学生。"""
        with self._lock:
            data = self._load()
            known = data.get("teacher_spaces", [])
            if space_id in known:
                return   # 已经记着：不必每次载入都写一次
            self._write({**data, "teacher_spaces": (known + [space_id])[-MAX_TEACHER_SPACES:]})

    def _write(self, data: dict) -> None:
        text = json.dumps({"format": "s11-class", "level": data.get("level"),
                           "teacher_spaces": data.get("teacher_spaces", [])}, ensure_ascii=False)
        with PendingWrite(self.path, text.encode("utf-8")) as pending:
            pending.commit()
        self._cached = (None, {})


def refresh_seconds() -> float:
    """老师的课堂表、学生页面检查「全班做第 N 关」的间隔：环境变量 S11_CLASS_REFRESH_SECONDS（1–600 秒），
    默认 REFRESH_SECONDS；浏览器测试把它调短。"""
    try:
        seconds = float(os.environ.get("S11_CLASS_REFRESH_SECONDS", REFRESH_SECONDS))
    except ValueError:
        return REFRESH_SECONDS
    return min(600.0, max(1.0, seconds)) if seconds == seconds else REFRESH_SECONDS


def locked_levels(levels: list, class_level: str | None) -> list:
    """全班做 class_level 时锁着的关卡（它后面的那些，按关卡列表的顺序）；没定或找不到时一个都不锁。
    [1, 2, 3, 4] 全班做 2 -> [3, 4]"""
    ids = [exercise.id for exercise in levels]
    if class_level not in ids:
        return []
    return ids[ids.index(class_level) + 1:]


# ── 画树：目标树和你的树用会话树浏览器的同一个画法 ─────────────────────────────────────────────
def goal_summaries(exercise: Exercise) -> list[dict]:
    """目标节点 -> 像 list_sessions() 那样的摘要（ID 用目标里的 key），好交给 page_tree / mermaid_map。"""
    rows = []
    for index, goal in enumerate(exercise.goal):
        count = goal.messages[1] if goal.messages else 0
        rows.append({"session_id": goal.key, "title": goal.label, "parent_id": goal.parent, "message_count": count,
                     "fork_point": goal.fork_point, "created_at": "", "created_ns": index})
    return rows


def goal_map(exercise: Exercise) -> str:
    forest = Forest(goal_summaries(exercise))
    parts = []
    for root in forest.kids.get(None, []):
        tree = page_tree(forest, root["session_id"])
        parts.append(mermaid_map(tree, None, exercise.active_end, links=False))
    return "\n\n".join(parts)


def goal_text(exercise: Exercise) -> str:
    labels = {goal.key: goal.label for goal in exercise.goal}
    lines = [f"- {literal_inline(s11_exercises.describe_goal(goal, labels))}" for goal in exercise.goal]
    if exercise.active_end:
        lines.append(f"- 活动端停在「{literal_inline(labels[exercise.active_end])}」")
    lines += [f"- {literal_inline(_check_label(item, labels))}" for item in exercise.checks]
    return "\n".join(lines)


def _check_label(item, labels) -> str:
    return {"check_clean": "体检（check()）没有问题", "torn_in_trash": "写坏的文件进了回收站",
            "conflict_met": f"两个标签页续写「{labels.get(item.node, '')}」时遇到 ConflictError",
            "exported_clean": f"导出「{labels.get(item.node, '')}」且不泄露密钥",
            "fork_undone": "分错的那次分叉用 ↶ 撤销 撤掉（不是删掉）"}[item.kind]


# ── 动作 ─────────────────────────────────────────────────────────────────────────────────────
class Lesson:
    """页面的全部动作。只持有 Spaces、关卡和一个 Explorer；按访客区分的数据都在参数里。"""

    def __init__(self, spaces, *, levels: Levels | None = None, explorer: Explorer | None = None):
        self.spaces = spaces
        self.levels = levels or Levels(spaces.sessions_dir)
        self.explorer = explorer or Explorer(spaces)
        self.plan = ClassPlan(spaces.sessions_dir)

    def _is_teacher(self, teacher) -> bool:
        return bool(teacher) and self.spaces.is_teacher(teacher)

    def _act(self, token, view: LessonView, teacher, action: Callable, *, counts: bool = True,
             draft: str | None = None, main_draft: str | None = None, static: bool = False,
             any_level: bool = False, area: str = "") -> LessonPage:
        """action(space, progress) -> (新视图, 提示, 额外字段)；之后重新判分、记进度、画整页。
        视图里的关卡被老师锁着时（全班还在做前面的关）一律拒绝，什么都不写；any_level：与关卡无关的动作（改名字）。"""
        extra: dict = {}
        try:
            space = self.spaces.open(token)
            if view.level and not any_level:
                self._refuse_locked(view.level, teacher)
            progress = read_progress(space.folder)
            view, notice, extra = action(space, progress)
        except Exception as error:
            if not isinstance(error, (SessionError, OSError)):
                log.exception("lesson action failed")
            notice = explain(error)
            extra = {"draft": draft} if draft is not None else {}
            if main_draft is not None:
                extra["main_draft"] = main_draft
            counts = False
        return self.render(token, view, teacher, notice, counts=counts, static=static, area=area, **extra)

    def open_page(self, token, teacher=None) -> LessonPage:
        """页面载入：回到上次做的那一关，名字框填上存着的名字。还没存过名字就不碰名字框：全班同时载入时
        这个结果要几秒才回来，同学可能已经在框里写了。"""
        def action(space, progress):
            current = progress.get("current") if isinstance(progress.get("current"), str) else None
            if self.lock_reason(current, teacher):   # 上次做到的那一关现在锁着：回到全班在做的那一关
                current = self.plan.level()
            return LessonView(level=current), "", {"name": _own_name(space.folder) or None}
        return self._act(token, LessonView(), teacher, action, counts=False, static=True)

    def class_stamp(self) -> tuple:
        """老师的「全班做第 N 关」现在的版本（一次 stat）：页面的定时检查拿它和上次见到的比。"""
        return self.plan.stamp()

    def follow_class(self, token, view: LessonView, teacher=None) -> LessonPage:
        """老师刚改了「全班做第 N 关」：这一页切到那一关（像学生自己选了它一样）；老师放开了限制时只重画关卡列表。
        老师自己的页面不跟着切。"""
        level = self.plan.level()
        if not level or self._is_teacher(teacher) or level == view.level:
            return self.render(token, view, teacher, "🧑‍🏫 老师更新了全班的进度" if level is None else "")
        page = self.pick(token, view, level, teacher)
        if not page.notice:
            page.notice = f"🧑‍🏫 老师让全班做「{literal_inline(page.title)}」：已切到这一关"
        return page

    def lock_reason(self, level_id, teacher=None) -> str:
        """这一关被老师锁着时的一句话（给同学看）；没锁、老师自己的页面都是空串。"""
        if not level_id or self._is_teacher(teacher):
            return ""
        class_level = self.plan.level()
        levels = self.levels.all()
        if level_id not in locked_levels(levels, class_level):
            return ""
        title = next(exercise.title for exercise in levels if exercise.id == class_level)
        return f"🔒 这一关还没开放：老师让全班先做「{literal_inline(title)}」，后面的关卡等老师开放"

    def _refuse_locked(self, level_id, teacher) -> None:
        reason = self.lock_reason(level_id, teacher)
        if reason:
            raise LessonError(reason)

    def pick(self, token, view: LessonView, level_id, teacher=None) -> LessonPage:
        """选一关：还没开始就只显示说明和目标，点「开始」才写起点。"""
        def action(space, progress):
            exercise = self.levels.get(level_id)
            self._refuse_locked(exercise.id, teacher)
            if progress.get("current") != exercise.id:   # 又选了同一关：不必再写一次（每次写都要 fsync）
                progress["current"] = exercise.id
                write_progress(space.writable().folder, progress)
            entry = progress["levels"].get(exercise.id, {})
            anchors = level_state(entry).anchors
            first = next(iter(anchors.values()), None)
            return LessonView(level=exercise.id, session_id=first), "", {"fork_reset": True}
        return self._act(token, view, teacher, action, counts=False, static=True,
                         any_level=True)   # 选的那一关自己查锁：从一关刚锁上的页面也能选回开放的关

    def start(self, token, view: LessonView, level_id=None, teacher=None) -> LessonPage:
        """开始（或重新开始）这一关：把起点树写进自己的空间，进度从头算。
        level_id：页面上选中的那一关。学生选了第 2 关马上点「开始」时，选关的事件可能还没回来，视图里还是第 1 关；
        按视图开始就会把已经做完的第 1 关从头算起。所以以页面上选中的为准，没有才用视图里的。"""
        def action(space, progress):
            exercise = self.levels.get(level_id or self._level(view))
            self._refuse_locked(exercise.id, teacher)
            space.writable().throttle()
            space.require_room(sessions=len(exercise.start) + 1, nbytes=64 * 1024)
            started = time.time_ns()
            _retire(progress, exercise.id)
            anchors = s11_exercises.seed(exercise, space.store)
            progress["levels"][exercise.id] = {"anchors": anchors, "started_ns": started, "events": [],
                                               "started_at": time.time(), "actions": 0, "misses": 0, "best": -1,
                                               "last_progress": time.time(), "solved_at": None}
            entry = progress["levels"][exercise.id]
            baseline = s11_exercises.check(exercise, space.store, level_state(entry))
            entry["best"] = sum(part.ok for part in baseline.parts)   # 起点本来就对上的部分不算进展
            progress["current"] = exercise.id
            write_progress(space.folder, progress)
            first = next((sid for key, sid in anchors.items() if not self._torn(exercise, key)), None)
            done = f"🚀 已开始「{literal_inline(exercise.title)}」：起点已写进你的空间" if anchors else \
                f"🚀 已开始「{literal_inline(exercise.title)}」"
            return LessonView(level=exercise.id, session_id=first), done, {"fork_reset": True}
        # 同上：查的是要开始的那一关
        return self._act(token, view, teacher, action, counts=False, static=True, any_level=True)

    def select(self, token, view: LessonView, session_id, teacher=None) -> LessonPage:
        def action(space, progress):
            if not session_id or not os.path.isfile(space.store.path_of(session_id)):
                raise SessionNotFound(f"未找到会话：{session_id}（不在你的空间里）")
            return (dataclasses.replace(view, session_id=session_id, revision=-1), "",
                    {"fork_reset": session_id != view.session_id})
        return self._act(token, view, teacher, action, counts=False)

    def fork(self, token, view: LessonView, at, text="", title="", teacher=None) -> LessonPage:
        """会话树浏览器的同一个分叉：at 是分叉控件交回的选择（fork_control.py，点对话里的消息得来），
        空着就拒绝、从不当成 0。成功后分叉控件清空（第一条消息、标题都不会带进下一次分叉）。"""
        def action(space, progress):
            self._started(view, progress)
            page = self.explorer.fork(token, View(session_id=self._selected(view)), at, text or "", title or "")
            after, notice, _ = self._after(view, page)
            return after, notice, {"fork_reset": True}
        return self._act(token, view, teacher, action, area="fork")

    def resume(self, token, view: LessonView, text, role="user", teacher=None) -> LessonPage:
        """会话树浏览器的同一个续写（带着页面读入时的修订号）。"""
        def action(space, progress):
            self._started(view, progress)
            session_id = self._selected(view)
            node = space.store.load(session_id)
            if node is None:
                raise SessionNotFound(f"未找到会话：{session_id}")
            revision = view.revision if view.revision >= 0 else node.revision
            page = self.explorer.resume(token, View(session_id=session_id, revision=revision), text, role)
            if page.notice == explain(ConflictError("")):   # 第二个标签页先存过：这也是一次 ConflictError
                level = self._level(view)
                progress["levels"][level].setdefault("events", []).append(
                    {"kind": "conflict", "session_id": session_id, "at": time.time()})
                write_progress(space.folder, progress)
                return dataclasses.replace(view, revision=-1), page.notice, {"main_draft": str(text or "")}
            after, notice, _ = self._after(view, page)
            return after, notice, {"main_draft": ""}
        return self._act(token, view, teacher, action, main_draft=str(text or ""))

    def converge(self, token, view: LessonView, others, decision, teacher=None) -> LessonPage:
        """选中的节点胜出，把 others 收敛进来（SessionStore.converge，第 21 号 issue）。"""
        def action(space, progress):
            self._started(view, progress)
            chosen = self._selected(view)
            store = space.writable().store
            if not hasattr(store, "converge"):
                raise LessonError("这个版本的仓库还没有收敛（SessionStore.converge）：等它合并后再做这一关")
            picked = [str(item) for item in (others or []) if item]
            if not picked:
                raise LessonError("请勾选至少一个要收敛进来的分支")
            if not str(decision or "").strip():
                raise LessonError("请写下你的决定")
            space.throttle()
            space.require_room(sessions=1)
            node = store.converge(chosen, picked, str(decision)[:explorer_logic.MAX_TURN_CHARS])
            done = f"🔀 已收敛：新节点 {node.session_id}（{len(node.messages)} 条）"
            return dataclasses.replace(view, session_id=node.session_id, revision=-1), done, {}
        return self._act(token, view, teacher, action)

    def doctor(self, token, view: LessonView, teacher=None) -> LessonPage:
        """体检：store.check() 的结果。"""
        def action(space, progress):
            return view, "🩺 已体检", {"doctor": doctor_report(space.store)}
        return self._act(token, view, teacher, action, counts=False)

    def quarantine(self, token, view: LessonView, teacher=None) -> LessonPage:
        """把体检里读不了的会话文件原样移进回收站（store.delete 不解析文件内容；字节一个不少）。"""
        def action(space, progress):
            self._started(view, progress)
            store = space.writable().store
            moved = []
            for problem in store.check():
                name = os.path.basename(problem.path)
                if problem.kind in ("corrupt", "unreadable") and name.endswith(".json"):
                    try:
                        if store.delete(name[:-len(".json")]):
                            moved.append(name)
                    except SessionError as error:
                        log.warning("quarantine skipped %s: %s", name, error)
            done = (f"🧹 已把 {len(moved)} 个读不了的文件移进回收站：{'、'.join(moved)}" if moved
                    else "体检没有发现读不了的会话文件")
            return dataclasses.replace(view, revision=-1), done, {"doctor": doctor_report(store)}
        return self._act(token, view, teacher, action)

    def second_open(self, token, view: LessonView, teacher=None) -> LessonPage:
        """「第二个标签页」打开选中的会话：记下此刻的修订号（就像另一个标签页读入了它）。"""
        def action(space, progress):
            self._started(view, progress)
            session_id = self._selected(view)
            node = space.store.load(session_id)
            if node is None:
                raise SessionNotFound(f"未找到会话：{session_id}")
            done = f"📌 第二个标签页打开了 {session_id}（修订 {node.revision}，{len(node.messages)} 条）"
            return dataclasses.replace(view, second=(session_id, node.revision)), done, {}
        return self._act(token, view, teacher, action, counts=False)

    def second_resume(self, token, view: LessonView, text, teacher=None) -> LessonPage:
        """第二个标签页续写一轮 user：用它读入时的修订号保存。别人先存过 -> ConflictError：记下来，
        重新读入，输入框里的话留着，再点一次就接在后面保存。"""
        def action(space, progress):
            level = self._started(view, progress)
            if not view.second:
                raise LessonError("先点「📌 在第二个标签页打开选中的会话」")
            session_id, revision = view.second
            turn = {"role": "user", "content": explorer_logic._turn_text(text)}
            space.writable().throttle()
            node = space.store.load(session_id)
            if node is None:
                raise SessionNotFound(f"未找到会话：{session_id}")
            fresh = node.revision
            node.revision = revision
            node.messages.append(turn)
            try:
                space.store.save(node)
            except ConflictError:
                entry = progress["levels"][level]
                entry.setdefault("events", []).append({"kind": "conflict", "session_id": session_id,
                                                       "at": time.time()})
                write_progress(space.folder, progress)
                notice = (f"⚠️ ConflictError：会话在你读入（修订 {revision}）之后已被保存为修订 {fresh}。"
                          "第二个标签页已重新读入最新内容，你的话还在输入框里：再点一次就接在后面保存，一轮都不丢。")
                return dataclasses.replace(view, second=(session_id, fresh), revision=-1), notice, {"draft": text}
            done = f"✅ 第二个标签页的一轮已保存：{len(node.messages)} 条（修订 {node.revision}）"
            return dataclasses.replace(view, second=(session_id, node.revision), revision=-1), done, {"draft": ""}
        return self._act(token, view, teacher, action, draft=str(text or ""))

    def export(self, token, view: LessonView, teacher=None) -> LessonPage:
        """会话树浏览器的同一个导出（已脱敏）；记下导出了哪个节点、有没有漏出这一关埋下的密钥。"""
        def action(space, progress):
            level = self._started(view, progress)
            exercise = self.levels.get(level)
            session_id = self._selected(view)
            page = self.explorer.export(token, View(session_id=session_id))
            if not page.downloads[0]:
                raise LessonError(page.notice.lstrip("⚠️ ") or "导出失败")
            secrets = [item.secret for item in exercise.checks if item.secret]
            texts = [open(path, encoding="utf-8").read() for path in page.downloads if path]
            leaked = any(secret in text for secret in secrets for text in texts)
            entry = progress["levels"][level]
            entry.setdefault("events", []).append({"kind": "export", "session_id": session_id, "leaked": leaked,
                                                   "at": time.time()})
            write_progress(space.folder, progress)
            return view, page.notice, {"preview": page.preview, "downloads": page.downloads}
        return self._act(token, view, teacher, action)

    def toggle_solution(self, token, view: LessonView, teacher=None) -> LessonPage:
        """看答案（只显示步骤，从不替你执行）。"""
        return self.render(token, dataclasses.replace(view, show_solution=not view.show_solution), teacher)

    def set_name(self, token, view: LessonView, name, teacher=None) -> LessonPage:
        """给老师看的名字（可选，可以随时改，留空就是不要名字）。"""
        def action(space, progress):
            cleaned = self.spaces.set_display_name(token, name)
            done = f"👋 老师会看到你叫 {literal_inline(cleaned)}" if cleaned else "已清除名字：老师只看到一个空间编号"
            return view, done, {"name": cleaned}
        return self._act(token, view, teacher, action, counts=False, any_level=True)

    # ── 老师：自己出一关 ──────────────────────────────────────────────────────────────────
    def check_level_text(self, text) -> tuple[str, str]:
        """当场检查老师写的关卡 JSON -> (说明, 目标树的 mermaid)。不对时说明里写哪个字段错了。"""
        try:
            exercise = s11_exercises.parse_exercise(text if isinstance(text, (str, bytes)) else str(text or ""))
        except ExerciseError as error:
            return f"❌ {literal_inline(str(error), 300)}", ""
        return (f"✅ 关卡「{literal_inline(exercise.title)}」（id `{exercise.id}`）没有问题：{len(exercise.goal)} 个目标节点、"
                f"{len(exercise.checks)} 项额外检查、{len(exercise.solution)} 步答案", goal_map(exercise))

    def publish_level(self, token, text, teacher=None) -> str:
        """老师把关卡发布给全班（<会话目录>/lessons/）；学生下一次选关就看得到。"""
        try:
            self.spaces.open(token)
            if not self._is_teacher(teacher):
                raise SpaceError("发布关卡需要教师链接")
            exercise = s11_exercises.parse_exercise(text if isinstance(text, (str, bytes)) else str(text or ""))
            self.levels.publish(exercise)
        except (SessionError, OSError) as error:
            return explain(error)
        return f"📣 已把「{literal_inline(exercise.title)}」发布给全班"

    def upload_level(self, path, teacher=None) -> tuple[str | None, str, str]:
        """老师上传的 .json 关卡文件 -> (关卡文字, 检查结果, 目标树的 mermaid)。只认教师链接：学生的（或伪造的）请求
        得到一句拒绝，文件不读，编辑框不变（文字为 None），什么都不写。"""
        if not self._is_teacher(teacher):
            return None, "❌ 上传关卡文件需要教师链接：学生不能上传关卡", ""
        text = self._read_upload(path)
        if not text:
            return None, f"❌ 读不了上传的文件（最大 {s11_exercises.MAX_FILE_BYTES // 1024} KB）", ""
        return (text, *self.check_level_text(text))

    def _read_upload(self, path) -> str:
        """上传的 .json 关卡文件 -> 文字（先看大小）。"""
        if not path or not isinstance(path, str) or not os.path.isfile(path):
            return ""
        if os.path.getsize(path) > s11_exercises.MAX_FILE_BYTES:
            return ""
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")

    # ── 内部 ────────────────────────────────────────────────────────────────────────────
    def _level(self, view: LessonView) -> str:
        if not view.level:
            raise LessonError("请先在「关卡」列表里选一关")
        return view.level

    def _started(self, view: LessonView, progress: dict) -> str:
        level = self._level(view)
        if level not in progress["levels"]:
            raise LessonError("请先点「🚀 开始这一关」")
        return level

    def _selected(self, view: LessonView) -> str:
        if not view.session_id:
            raise LessonError("请先在「你的树」里选一个节点")
        return view.session_id

    @staticmethod
    def _torn(exercise: Exercise, key: str) -> bool:
        return any(node.key == key and node.torn for node in exercise.start)

    @staticmethod
    def _after(view: LessonView, page) -> tuple:
        """Explorer 的一页 -> 本页的视图和提示（Explorer 出错时提示里就是那句中文）。"""
        if page.notice.startswith("⚠️"):
            raise LessonError(page.notice.lstrip("⚠️ "))
        return dataclasses.replace(view, session_id=page.view.session_id or view.session_id,
                                   revision=page.view.revision), page.notice, {}

    # ── 整页 ─────────────────────────────────────────────────────────────────────────────
    def render(self, token, view: LessonView, teacher, notice: str = "", *, counts: bool | str = False,
               **extra) -> LessonPage:
        try:
            space = self.spaces.open(token)
        except SessionError as error:
            return LessonPage(notice=notice or explain(error), view=LessonView())
        try:
            return self._render(space, view, teacher, notice, counts, extra)
        except Exception as error:
            if not isinstance(error, (SessionError, OSError)):
                log.exception("lesson render failed")
            page = LessonPage(notice=explain(error), view=LessonView(level=None))
            page.level_choices = self._choices({"levels": {}})
            return page

    def _render(self, space, view: LessonView, teacher, notice: str, counts, extra: dict) -> LessonPage:
        progress = read_progress(space.folder)
        page = LessonPage(notice=notice, view=view, teacher=self._is_teacher(teacher))
        reason = self.lock_reason(view.level, teacher)
        if reason:   # 这一关刚被老师锁上：换到全班在做的那一关（只换页面，不写进度）
            view = page.view = LessonView(level=self.plan.level())
            page.notice = notice or reason
        page.class_note = self._class_note(page.teacher)
        exercise = None
        if view.level:
            try:
                exercise = self.levels.get(view.level)
            except LessonError:
                view = page.view = LessonView()
        page.level_choices = self._choices(progress)
        if exercise is None:
            page.instructions = "👈 先选一关。每一关都用会话树浏览器的同一组动作完成：分叉、续写、收敛、导出。"
            for key, value in extra.items():
                setattr(page, key, value)
            return page
        page.title = exercise.title
        page.instructions = _instructions(exercise)
        page.goal_map, page.goal_text = goal_map(exercise), goal_text(exercise)
        page.tools = tuple(sorted({TOOLS[item.kind] for item in exercise.checks}
                                  | ({"converge"} if any(g.converged_from for g in exercise.goal) else set())))
        entry = progress["levels"].get(exercise.id)
        if view.show_solution:
            page.solution = "\n".join(f"{n}. {literal_inline(step)}" for n, step in enumerate(exercise.solution, 1))
        if entry is None:
            page.verdict = "还没开始：点「🚀 开始这一关」，起点会写进你自己的空间。"
            for key, value in extra.items():
                setattr(page, key, value)
            return page
        state = level_state(entry)
        verdict = s11_exercises.check(exercise, space.store, state)
        if counts:
            self._record(space.folder, progress, exercise.id, verdict, miss=counts != "progress")
        entry = progress["levels"].get(exercise.id, entry)
        page.solved = verdict.solved
        page.verdict = "\n".join(f"- {literal_inline(line)}" for line in verdict.lines())
        page.hint = _hint(exercise, verdict, entry)
        self._render_tree(page, space.store, state, verdict, view)
        if view.second:
            page.second = f"第二个标签页打开着 `{view.second[0]}`，读入时是修订 {view.second[1]}"
        for key, value in extra.items():
            setattr(page, key, value)
        page.level_choices = self._choices(progress)
        return page

    def _record(self, folder: str, progress: dict, level: str, verdict, *, miss: bool = True) -> None:
        """一次操作之后：进展（对上的部分变多了）就记时间，否则记一次“没进展”；做完记下时刻。
        miss=False（只是切回本页重新判一次）时只记进展，不算没进展。"""
        entry = progress["levels"][level]
        matched = sum(part.ok for part in verdict.parts)
        improved = matched > int(entry.get("best", -1))
        if not improved and not miss and (not verdict.solved or entry.get("solved_at")):
            return
        entry["actions"] = int(entry.get("actions", 0)) + (1 if miss else 0)
        if improved:
            entry["best"], entry["misses"], entry["last_progress"] = matched, 0, time.time()
        elif miss:
            entry["misses"] = int(entry.get("misses", 0)) + 1
        if verdict.solved and not entry.get("solved_at"):
            entry["solved_at"] = time.time()
        write_progress(folder, progress)

    def _render_tree(self, page: LessonPage, store, state: LevelState, verdict, view: LessonView) -> None:
        summaries = store.list_sessions()
        forest = Forest(summaries)
        roots = [sid for sid in state.anchors.values() if sid in forest.by_id][:1]
        if not roots:
            roots = [s["session_id"] for s in forest.kids.get(None, [])
                     if s.get("created_ns", 0) >= state.started_ns][:1]
        if not roots:
            page.current_map = "（你的空间里还没有这一关的会话）"
            return
        tree = page_tree(forest, roots[0])
        mtimes = explorer_logic._mtimes(store, tree)
        end = explorer_logic.active_end(tree, mtimes)
        selected = view.session_id if view.session_id in forest.by_id else None
        page.view = dataclasses.replace(view, session_id=selected, chat_numbers=())
        node = store.load(selected) if selected else None
        if node is not None:   # 和会话树浏览器同一个对话画法：点一条消息 = 选分叉位置
            page.chat, numbers, _, _ = explorer_logic._path_chat(node, None, str)
            page.view = dataclasses.replace(page.view, chat_numbers=tuple(numbers))
        names = {sid: goal for goal, sid in verdict.mapping.items()}
        labels = {goal.key: goal.label for goal in self.levels.get(view.level).goal}
        branches = branch_names(tree)   # 与会话树浏览器同样的名字（分支 A、B.A），不是“分支 ?”
        page.tree_choices = [(tree_label(n, prefix, n["session_id"] == end, branches.get(n["session_id"], ""))
                              + (f" = {labels[names[n['session_id']]]} ✅" if n["session_id"] in names else ""),
                              n["session_id"]) for n, prefix, _ in tree]
        page.converge_choices = [(shorten(label, 60), sid) for label, sid in page.tree_choices if sid != selected]
        page.current_map = mermaid_map(tree, selected, end, links=False)

    def level_choices(self) -> list:
        """还没有进度时的关卡列表。"""
        return self._choices({"levels": {}})

    def _choices(self, progress: dict) -> list:
        """关卡列表：✅ 做完了、▶ 开始了、· 还没开始；老师还没开放的标 🔒（选了也只得到一句说明）。"""
        choices = []
        levels = self.levels.all()
        locked = set(locked_levels(levels, self.plan.level()))
        for exercise in levels:
            entry = progress["levels"].get(exercise.id) or {}
            mark = "✅" if entry.get("solved_at") else ("▶" if entry else "·")
            teacher = " 🧑‍🏫" if exercise not in self.levels.builtin else ""
            if exercise.id in locked:
                mark, teacher = "🔒", teacher + "（老师还没开放）"
            choices.append((f"{mark} {shorten(exercise.title, 40)}{teacher}", exercise.id))
        return choices

    def _class_note(self, teacher: bool) -> str:
        level = self.plan.level()
        titles = {exercise.id: exercise.title for exercise in self.levels.all()}
        if level not in titles:
            return ""
        if teacher:
            return f"🧑‍🏫 你让全班做「{literal_inline(titles[level])}」，后面的关卡对同学锁着（在上方课堂面板里改）"
        return f"🧑‍🏫 老师：全班现在做「{literal_inline(titles[level])}」。🔒 标着的关卡等老师开放后才能做。"


def _retire(progress: dict, level: str) -> None:
    """重新开始一关之前：记下上一次写进空间的起点节点（它们还在空间里，课堂视图不该把它们算成同学的分叉）。"""
    entry = progress["levels"].get(level)
    if not isinstance(entry, dict):
        return
    old = list(level_state(entry).anchors.values())
    retired = [sid for sid in progress.get("retired") or [] if isinstance(sid, str)]
    progress["retired"] = (retired + old)[-MAX_RETIRED_IDS:]


def restart_level(space, progress: dict, level: str) -> int:
    """老师让一位同学重新开始 level：这一关的会话（起点和从它们长出来的每个节点）移进这位同学的回收站（可以恢复），
    这一关的进度挪进 progress["restarted"]（留着看，不再算），同学再点「🚀 开始」就是全新的起点。返回移走了几个会话。"""
    entry = progress["levels"].get(level)
    if not isinstance(entry, dict):
        raise LessonError("这位同学还没开始这一关，不必重新开始")
    store = space.writable().store
    forest = Forest(store.list_sessions())
    stack = [sid for sid in level_state(entry).anchors.values() if sid in forest.by_id]
    doomed = []
    while stack:
        sid = stack.pop()
        doomed.append(sid)
        stack.extend(kid["session_id"] for kid in forest.kids.get(sid, []))
    moved = sum(1 for sid in dict.fromkeys(doomed) if store.delete(sid))   # .trash/：恢复得回来，不是真删
    _retire(progress, level)
    restarted = [item for item in progress.get("restarted") or [] if isinstance(item, dict)]
    progress["restarted"] = (restarted + [{"level": level, "at": time.time(), "entry": entry}])[-20:]
    del progress["levels"][level]
    write_progress(space.folder, progress)
    return moved


def seeded_ids(progress: dict) -> set:
    """练习写进空间的起点节点：每一关现在的起点，加上重新开始之前的那些。"""
    found = {sid for sid in progress.get("retired") or [] if isinstance(sid, str)}
    for entry in progress["levels"].values():
        found.update(level_state(entry if isinstance(entry, dict) else {}).anchors.values())
    return found


def _own_name(folder: str) -> str:
    from s11_workbench.spaces import read_profile
    return read_profile(folder)


def _instructions(exercise: Exercise) -> str:
    """说明是关卡作者写的文字：按纯文字显示（逐段转义），只保留段落。"""
    paragraphs = [literal_inline(part.replace("**", "")) for part in exercise.instructions.split("\n\n") if part.strip()]
    return f"### 🎯 {literal_inline(exercise.title)}\n\n" + "\n\n".join(paragraphs)


def _hint(exercise: Exercise, verdict, entry: dict) -> str:
    """判定的提示；连续几次没进展时再附上关卡作者写的一般提示（一条一条地给）。"""
    if verdict.solved:
        return "🎉 这一关完成了！在「关卡」列表里选下一关。"
    lines = [f"💡 {literal_inline(verdict.hint)}"]
    misses = int(entry.get("misses", 0))
    if exercise.hints and misses:
        lines.append(f"💡 {literal_inline(exercise.hints[min(misses, len(exercise.hints)) - 1])}")
    return "\n\n".join(lines)


def doctor_report(store) -> str:
    problems = store.check()
    if not problems:
        return "🩺 体检：没有问题"
    lines = [f"- **{literal_inline(p.kind)}** {literal_inline(os.path.basename(p.path))}："
             f"{literal_inline(explorer_logic.hide_paths(p.detail), 160)}" for p in problems[:20]]
    return "\n".join([f"🩺 体检发现 {len(problems)} 个问题：", *lines])


def name_for_page(name) -> str:
    return clean_display_name(name)
