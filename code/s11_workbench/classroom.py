"""classroom.py — 老师的课堂视图（不 import gradio）：全班一张表、一张分叉图、下课归档

    老师密钥 ──> Classroom.table(secret)          每个有动静的空间一行：
                  │                              名字 · 关卡进度 · 当前关卡 · 演示 · 分叉 · 收敛 · 导入 · 最后活动 · 状态
                  │  读的是每个空间自己的 .profile.json / .lesson.json 和会话摘要（只读）
                  ├─> student(secret, space_id)   只读打开一个学生的空间：会话树 + 每关的判定
                  ├─> fork_map(secret, 书架会话)  全班从它分出去的分支：第几条分叉了几个人、各走到哪、谁收敛了
                  └─> archive(secret, 确认, 天数) 下课：整班空间移进 archives/（保留期内可以放回）

Key insight: 课堂视图没有自己的状态——每一格都从学生空间里的文件现算，所以它永远不会与学生看到的不一致，
重启服务器也不丢；学生那边的页面从不调用这里的任何方法（每个方法先验老师密钥）。

Safety: 名字、标题都是学生写的文字：表格单元格是纯文本，分叉图装进代码围栏，路径放进 gr.Code。
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field

import s11_exercises
from s11_export import fenced
from s11_session import SessionError
from s11_text import printable, shorten
from s11_workbench.lesson import Levels, is_stuck, level_state, read_progress
from s11_workbench.markdown import literal_inline
from s11_workbench.spaces import ReadOnlyStore, SpaceError, read_profile

CLASS_HEADERS = ["名字", "关卡进度", "当前关卡", "演示", "分叉", "收敛", "导入", "最后活动", "状态", "空间"]
SPACE_COLUMN = CLASS_HEADERS.index("空间")
MAP_HEADERS = ["名字", "分叉点", "走到", "收敛", "空间", "节点"]
ARCHIVE_HEADERS = ["归档", "空间数", "归档于", "保留到"]
DEMO_TITLE = "修复登录服务内存泄漏"
MAX_ROWS = 500
DAY = 24 * 3600


@dataclass
class ClassTable:
    rows: list = field(default_factory=list)
    note: str = ""


def _when(epoch: float) -> str:
    return time.strftime("%m-%d %H:%M", time.localtime(epoch)) if epoch else "—"


def _ago(epoch: float, now: float) -> str:
    minutes = max(0, int((now - epoch) // 60))
    if minutes < 600:   # 一堂课之内：只写钟点，省出表格的宽度
        return time.strftime("%H:%M", time.localtime(epoch)) + f"（{minutes} 分钟前）"
    return _when(epoch)


class Classroom:
    def __init__(self, spaces, levels: Levels | None = None):
        self.spaces = spaces
        self.levels = levels or Levels(spaces.sessions_dir)
        # 每个空间一个常驻的只读 store：它的摘要按文件的 (inode, 大小, 修改时间) 缓存，老师每刷新一次，
        # 没动过的文件不必重读；“是不是导入的”读一次整个文件才知道，而它在会话创建后不会再变，按 ID 记住
        self._stores: dict = {}
        self._imported_ids: dict = {}
        self._lock = threading.Lock()

    def _store(self, secret, space_id: str):
        """教师只读地看一个空间（spaces.view 先验密钥、验空间名）；同一个目录沿用同一个 store。"""
        folder = self.spaces.view(secret, space_id).folder
        with self._lock:
            store = self._stores.get(space_id)
            if store is None or store.storage_dir != folder:
                store = self._stores[space_id] = ReadOnlyStore(folder)
            return store

    def _forget_except(self, space_ids: set) -> None:
        """缓存有界：只留现在还在的空间。"""
        with self._lock:
            for space_id in [key for key in self._stores if key not in space_ids]:
                del self._stores[space_id]
            for key in [key for key in self._imported_ids if key[0] not in space_ids]:
                del self._imported_ids[key]

    def _require(self, token, secret) -> None:
        """每个动作先验令牌（和别的标签页一样），再验老师密钥。"""
        self.spaces.open(token)
        if not self.spaces.is_teacher(secret):
            raise SpaceError("课堂视图需要教师链接（启动时打印的 ?teacher=… 地址）")

    # ── 全班一张表 ──────────────────────────────────────────────────────────────────────
    def table(self, token, secret, now: float | None = None) -> ClassTable:
        self._require(token, secret)
        now = time.time() if now is None else now
        names = self.spaces.display_names(secret)
        levels = self.levels.all()
        titles = {exercise.id: exercise.title for exercise in levels}
        rows, quiet = [], 0
        listed = self.spaces.list_spaces(secret)[:MAX_ROWS]
        self._forget_except({item["space_id"] for item in listed})
        for item in listed:
            space_id = item["space_id"]
            folder = os.path.join(self.spaces.spaces_dir, space_id)
            progress = read_progress(folder)
            name = names.get(space_id, "")
            if not item["sessions"] and not progress["levels"] and not name:
                quiet += 1   # 打开过页面、什么都没做：不占一行
                continue
            counts = self._counts(secret, space_id, progress)
            done = sum(1 for level in titles if (progress["levels"].get(level) or {}).get("solved_at"))
            current = progress.get("current") if isinstance(progress.get("current"), str) else None
            entry = progress["levels"].get(current) or {} if current else {}
            status = self._status(entry, current, titles, now)
            rows.append([name or "（没有名字）", f"{done}/{len(titles)}", shorten(titles.get(current, "—"), 30),
                         "✅" if counts["demo"] else "", counts["forks"], counts["converges"], counts["imports"],
                         _ago(item["last_activity"], now), status, space_id])
        note = f"{len(rows)} 个同学" + (f"；另有 {quiet} 个空间打开过页面但还没有动作（不列出）" if quiet else "")
        note += f"。“卡住了”= {STUCK_TEXT}。点一行只读打开那位同学的空间；点表头排序。"
        return ClassTable(rows, note)

    def _status(self, entry: dict, current, titles: dict, now: float) -> str:
        if not current or not entry:
            return "还没开始练习"
        if entry.get("solved_at"):
            return f"✅ 做完了「{shorten(titles.get(current, current), 16)}」"
        if is_stuck(entry, now):
            last = entry.get("last_progress") or entry.get("started_at") or now
            return (f"⚠️ 卡住了：{int((now - last) // 60)} 分钟没有进展，"
                    f"连续 {int(entry.get('misses', 0))} 次没对上")
        return "做题中"

    def _counts(self, secret, space_id: str, progress: dict) -> dict:
        """一个空间里：有没有跑过演示、分叉几个、收敛几个、导入几个（练习写进去的起点不算）。"""
        store = self._store(secret, space_id)
        anchored = set()
        for entry in progress["levels"].values():
            anchored.update(level_state(entry if isinstance(entry, dict) else {}).anchors.values())
        counts = {"demo": False, "forks": 0, "converges": 0, "imports": 0}
        for summary in store.list_sessions():
            sid = summary["session_id"]
            if sid in anchored:
                continue
            if summary.get("parent_id"):
                counts["forks"] += 1
            elif summary["title"] == DEMO_TITLE and summary["message_count"] == 5:
                counts["demo"] = True
            elif summary.get("active_end") or self._imported(store, space_id, summary):
                counts["imports"] += 1
            if _converged(store, summary):
                counts["converges"] += 1
        return counts

    def _imported(self, store, space_id: str, summary: dict) -> bool:
        key = (space_id, summary["session_id"], summary.get("created_ns", 0))
        with self._lock:
            known = self._imported_ids.get(key)
        if known is not None:
            return known
        try:
            node = store.load(summary["session_id"])
        except SessionError:
            return False   # 读不了的不记：修好之后再算
        found = node is not None and isinstance(node.source, dict)
        with self._lock:
            self._imported_ids[key] = found
        return found

    # ── 只读打开一个学生 ──────────────────────────────────────────────────────────────────
    def student(self, token, secret, space_id) -> str:
        """一个学生的空间（只读）：名字、每关的判定、整个会话树（代码围栏里的纯文本）。"""
        self._require(token, secret)
        space = self.spaces.view(secret, space_id)
        progress = read_progress(space.folder)
        name = read_profile(space.folder) or "（没有名字）"
        lines = [f"### 👀 {literal_inline(name)} · 空间 `{space.space_id}`（只读）"]
        for exercise in self.levels.all():
            entry = progress["levels"].get(exercise.id)
            if not entry:
                continue
            verdict = s11_exercises.check(exercise, space.store, level_state(entry))
            ticks = "".join("✅" if part.ok else "⬜" for part in verdict.parts)
            lines.append(f"- {literal_inline(exercise.title)}：{ticks}" + ("" if verdict.solved else
                                                                          f" · 下一步：{literal_inline(verdict.hint, 80)}"))
        lines.append(fenced(space.store.render_tree(), "text"))
        return "\n\n".join(lines)

    # ── 全班的分叉图 ──────────────────────────────────────────────────────────────────────
    def shelf_choices(self) -> list:
        store = self.spaces.shelf().store
        return [(f"{shorten(s['title'], 40)} [{s['session_id']}] {s['message_count']} 条", s["session_id"])
                for s in store.list_sessions()]

    def fork_map(self, token, secret, session_id) -> tuple[str, list]:
        """书架上的一个会话 -> (文字分叉图, 每个分叉一行)。学生从书架分叉时祖先链以原 ID 复制进自己的空间，
        所以在每个空间里找 parent_id 是它的节点即可。"""
        self._require(token, secret)
        shelf = self.spaces.shelf().store
        base = next((s for s in shelf.list_sessions() if s["session_id"] == session_id), None)
        if base is None:
            raise SpaceError(f"书架上没有会话 {literal_inline(str(session_id), 40)}")
        names = self.spaces.display_names(secret)
        forks = []
        for item in self.spaces.list_spaces(secret)[:MAX_ROWS]:
            space_id = item["space_id"]
            store = self._store(secret, space_id)
            summaries = store.list_sessions()
            kids: dict = {}
            for summary in summaries:
                kids.setdefault(summary.get("parent_id"), []).append(summary)
            for child in kids.get(session_id, []):
                subtree, stack = [], [child]
                while stack:
                    node = stack.pop()
                    subtree.append(node)
                    stack.extend(kids.get(node["session_id"], []))
                furthest = max(subtree, key=lambda s: s["message_count"])
                converged = any(_converged(store, s) for s in subtree)
                forks.append({"name": names.get(space_id, "") or f"空间 {space_id[:6]}", "space_id": space_id,
                              "fork_point": child.get("fork_point"), "furthest": furthest["message_count"],
                              "node": furthest["session_id"], "converged": converged})
        forks.sort(key=lambda f: (f["fork_point"] if isinstance(f["fork_point"], int) else -1, f["name"]))
        rows = [[f["name"], f"第 {f['fork_point']} 条之后", f"{f['furthest']} 条", "🔀 已收敛" if f["converged"] else "",
                 f["space_id"], f["node"]] for f in forks]
        return _map_text(base, forks), rows

    def path(self, token, secret, space_id, session_id) -> str:
        """某个学生的一条分支（只读、已脱敏）：从根到它的 Markdown 原文，放进 gr.Code。"""
        self._require(token, secret)
        store = self.spaces.view(secret, space_id).store
        return store.export_markdown(str(session_id), redact=True)

    # ── 下课 ─────────────────────────────────────────────────────────────────────────────
    def archive(self, token, secret, confirmed, keep_days) -> str:
        self._require(token, secret)
        if confirmed is not True:
            raise SpaceError("请先勾选“我确认：下课了，归档全班的空间”")
        try:
            days = float(keep_days)
        except (TypeError, ValueError):
            raise SpaceError(f"保留天数 {literal_inline(str(keep_days), 20)} 不是数字") from None
        if not 0 < days <= 365:
            raise SpaceError("保留天数应在 1–365 之间")
        info = self.spaces.archive_all(days * DAY)
        return (f"🗄️ 已归档 {info['spaces']} 个空间到 `{info['name']}`，保留到 {_when(info['expires'])}；"
                "期间可以在下面放回，或在命令行 `python code/s11_cli.py class restore-archive "
                f"{info['name']}`")

    def archive_rows(self, token, secret) -> list:
        self._require(token, secret)
        return [[row["name"], row["spaces"], _when(row["created"]), _when(row["expires"])]
                for row in self.spaces.archives()]

    def restore(self, token, secret, name) -> str:
        self._require(token, secret)
        restored = self.spaces.restore_archive(name)
        return f"♻️ 已放回 {len(restored)} 个空间"


STUCK_TEXT = "开始了一关、超过 8 分钟没有进展，或连续 5 次操作都没对上"


def _converged(store, summary: dict) -> bool:
    found = summary.get("converged_from")
    if found is None:
        try:
            node = store.load(summary["session_id"]) if summary.get("parent_id") else None
        except SessionError:
            node = None
        found = getattr(node, "converged_from", None) if node is not None else None
    return bool(found)


def _map_text(base: dict, forks: list) -> str:
    """文字分叉图（代码围栏：名字和标题都是学生写的）。

    📚 修复登录服务内存泄漏 [5d38…] 5 条
    ├─ 第 3 条之后：2 人
    │  ├─ 小明 → 6 条
    │  └─ 小红 → 4 条 🔀 已收敛
    └─ 第 5 条之后：1 人
       └─ 小刚 → 9 条
    """
    lines = [f"📚 {shorten(printable(base['title']), 40)} [{base['session_id']}] {base['message_count']} 条"]
    points: dict = {}
    for fork in forks:
        points.setdefault(fork["fork_point"], []).append(fork)
    if not points:
        lines.append("（还没有同学从它分叉）")
    for index, (point, group) in enumerate(points.items()):
        last = index == len(points) - 1
        lines.append(f"{'└─' if last else '├─'} 第 {point} 条之后：{len(group)} 人")
        for number, fork in enumerate(group):
            mark = " 🔀 已收敛" if fork["converged"] else ""
            twig = "└─" if number == len(group) - 1 else "├─"
            lines.append(f"{'   ' if last else '│  '}{twig} {shorten(printable(fork['name']), 24)} → "
                         f"{fork['furthest']} 条{mark}")
    return fenced("\n".join(lines), "text")
