"""classroom.py — 老师的课堂视图（不 import gradio）：全班一张表、一张分叉图、全班的关卡、下课归档

    老师密钥 ──> Classroom.table(secret)          每个有动静的学生空间一行（老师自己的空间不算）：
                  │                              名字 · 关卡进度 · 当前关卡 · 演示 · 分叉 · 续写 · 收敛 · 导入 · 最后活动 · 状态
                  │  读的是每个空间自己的 .profile.json / .lesson.json 和会话摘要（只读）；面板每 15 秒自己再读一次
                  ├─> csv_file(secret)            同一张表的 .csv（单元格防公式注入）
                  ├─> student(secret, space_id)   只读打开一个学生的空间：会话树 + 每关的判定
                  ├─> restart(secret, 空间, 关卡)  让一位同学重新开始一关：那一关的会话移进他的回收站（可以恢复）
                  ├─> set_level(secret, 关卡)      「全班做第 N 关」：写进 <会话目录>/class.json，后面的关卡对同学锁着
                  ├─> fork_map(secret, 书架会话)  全班从它分出去的分支：第几条分叉了几个人、各走到哪、谁收敛了
                  └─> archive(secret, 确认, 天数) 下课：整班空间移进 archives/（保留期内可以放回）

各列怎么数（按节点的来历，不读操作日志：书架分叉在日志里记成一次 import，练习的起点记成 fork，日志分不清）：
  分叉 = 有父节点的节点，除去练习写的起点、演示自己的两个分支、从书架复制来的祖先链、导入的子节点和收敛节点
  续写 = 每个节点保存过的次数减去它诞生时那一次（演示自己存的那两次不算）
  收敛 = 收敛节点；导入 = 导入的一棵树算一个（节点带 source：从 Agent 记录导入）；演示 = 跑过没有
限制：书架上的节点与学生空间里的同 ID 节点算作“从书架复制来的”——老师把某位同学自己的分支发布上书架之后，
那几个节点在他的表里不再算分叉。

Key insight: 课堂视图没有自己的状态——每一格都从学生空间里的文件现算，所以它永远不会与学生看到的不一致，
重启服务器也不丢；学生那边的页面从不调用这里的任何方法（每个方法先验老师密钥）。唯一写下的是 class.json
（全班做哪一关、哪些空间是老师自己的），也只有验过老师密钥的动作写它。

Safety: 名字、标题都是学生写的文字：表格单元格是纯文本，分叉图装进代码围栏，路径放进 gr.Code。
"""

from __future__ import annotations

import csv
import io
import os
import threading
import time
from dataclasses import dataclass, field

import s11_exercises
from s11_export import fenced
from s11_session import SessionError
from s11_text import printable, shorten
from s11_workbench import downloads
from s11_workbench import lesson as lesson_logic
from s11_workbench.lesson import ClassPlan, Levels, is_stuck, level_state, read_progress
from s11_workbench.markdown import literal_inline
from s11_workbench.spaces import ReadOnlyStore, SpaceError, read_profile

CLASS_HEADERS = ["名字", "关卡进度", "当前关卡", "演示", "分叉", "续写", "收敛", "导入", "最后活动", "状态", "空间"]
SPACE_COLUMN = CLASS_HEADERS.index("空间")
MAP_HEADERS = ["名字", "分叉点", "走到", "收敛", "空间", "节点"]
ARCHIVE_HEADERS = ["归档", "空间数", "归档于", "保留到"]
DEMO_TITLE = "修复登录服务内存泄漏"
MAX_ROWS = 500
DAY = 24 * 3600
DEMO_SECONDS = 30          # 演示的两个分支在主会话之后这么久之内写下（一次演示不到 1 秒）
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")   # 表格软件把这样开头的单元格当公式


@dataclass
class ClassTable:
    rows: list = field(default_factory=list)
    note: str = ""


def _when(epoch: float) -> str:
    return time.strftime("%m-%d %H:%M", time.localtime(epoch)) if epoch else "—"


def _ago(epoch: float, now: float) -> str:
    minutes = max(0, int((now - epoch) // 60))
    if minutes < 600:   # 一堂课之内：只写钟点，省出表格的宽度
        return time.strftime("%H:%M", time.localtime(epoch)) + ("（刚刚）" if minutes < 1 else f"（{minutes} 分钟前）")
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
        self.plan = ClassPlan(spaces.sessions_dir)

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

    def remember_teacher(self, token, secret) -> None:
        """老师的页面载入时：记下这个浏览器的空间是老师的（写进 class.json），表格和分叉图都不把它当学生。"""
        self._require(token, secret)
        self.plan.add_teacher_space(self.spaces.verify(token))

    def _students(self, token, secret) -> list:
        """学生的空间（list_spaces 的行），老师用过的空间除外。"""
        teachers = self.plan.teacher_spaces() | {self.spaces.verify(token)}
        return [item for item in self.spaces.list_spaces(secret) if item["space_id"] not in teachers][:MAX_ROWS]

    # ── 全班一张表 ──────────────────────────────────────────────────────────────────────
    def table(self, token, secret, now: float | None = None) -> ClassTable:
        self._require(token, secret)
        now = time.time() if now is None else now
        names = self.spaces.display_names(secret)
        levels = self.levels.all()
        titles = {exercise.id: exercise.title for exercise in levels}
        rows, quiet = [], 0
        listed = self._students(token, secret)
        self._forget_except({item["space_id"] for item in listed})
        shelf_ids = {summary["session_id"] for summary in self.spaces.shelf().store.list_sessions()}
        for item in listed:
            space_id = item["space_id"]
            folder = os.path.join(self.spaces.spaces_dir, space_id)
            progress = read_progress(folder)
            name = names.get(space_id, "")
            if not item["sessions"] and not progress["levels"] and not name:
                quiet += 1   # 打开过页面、什么都没做：不占一行
                continue
            counts = self._counts(secret, space_id, progress, shelf_ids)
            done = sum(1 for level in titles if (progress["levels"].get(level) or {}).get("solved_at"))
            current = progress.get("current") if isinstance(progress.get("current"), str) else None
            entry = progress["levels"].get(current) or {} if current else {}
            status = self._status(entry, current, titles, now)
            rows.append([name or "（没有名字）", f"{done}/{len(titles)}", shorten(titles.get(current, "—"), 30),
                         "✅" if counts["demo"] else "", counts["forks"], counts["resumes"], counts["converges"],
                         counts["imports"],
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
            return "⚠️ 卡住了：" + stuck_reason(entry, now)
        return "做题中"

    def _counts(self, secret, space_id: str, progress: dict, shelf_ids: set) -> dict:
        """一个空间里：有没有跑过演示，分叉、续写、收敛、导入各几个（怎么数见模块说明）。"""
        store = self._store(secret, space_id)
        summaries = store.list_sessions()
        by_id = {summary["session_id"]: summary for summary in summaries}
        seeded = lesson_logic.seeded_ids(progress)
        demo = demo_nodes([summary for summary in summaries if summary["session_id"] not in seeded])
        counts = {"demo": bool(demo), "forks": 0, "resumes": 0, "converges": 0, "imports": 0}
        for summary in summaries:
            sid = summary["session_id"]
            revision = summary.get("revision") if isinstance(summary.get("revision"), int) else 1
            counts["resumes"] += max(0, revision - demo.get(sid, 1))
            if sid in seeded or sid in demo or _from_shelf(sid, shelf_ids):
                continue
            if _converged(store, summary):
                counts["converges"] += 1
            elif self._imported(store, space_id, summary):
                parent = by_id.get(summary.get("parent_id"))
                if parent is None or not self._imported(store, space_id, parent):   # 一棵导入的树算一个
                    counts["imports"] += 1
            elif summary.get("parent_id"):
                counts["forks"] += 1
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
        for item in self._students(token, secret):
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

    # ── 全班的关卡、一位同学重新开始、导出表格 ────────────────────────────────────────────────────
    def level_choices(self) -> list:
        """「全班做第 N 关」的选项：不限制 + 每一关。"""
        return [("不限制：全部关卡都开放", "")] + [(shorten(e.title, 40), e.id) for e in self.levels.all()]

    def class_level(self) -> str:
        return self.plan.level() or ""

    def set_level(self, token, secret, level_id) -> str:
        """全班做 level_id（空 = 不限制）：同学的页面下一次定时检查时切过去，后面的关卡对他们锁着。"""
        self._require(token, secret)
        if level_id in (None, ""):
            self.plan.set_level(None)
            return "🔓 已开放全部关卡：同学可以自己选任何一关"
        exercise = self.levels.get(level_id)   # 没有这一关：LessonError，class.json 不变
        self.plan.set_level(exercise.id)
        locked = lesson_logic.locked_levels(self.levels.all(), exercise.id)
        return (f"📣 全班做「{literal_inline(exercise.title)}」：同学的页面几秒内切过去；"
                + (f"后面 {len(locked)} 关对同学锁着，选更后面的一关或「不限制」就开放它们" if locked else "这是最后一关"))

    def started_levels(self, token, secret, space_id) -> list:
        """一位同学开始过的关卡：[(标题, id)]，给「重新开始这一关」选。"""
        self._require(token, secret)
        progress = read_progress(self.spaces.view(secret, space_id).folder)
        return [(shorten(e.title, 40), e.id) for e in self.levels.all() if e.id in progress["levels"]]

    def restart(self, token, secret, space_id, level_id) -> str:
        """让一位同学重新开始一关：那一关的会话移进他的回收站（可以恢复），这一关的进度另存一边、不再算。"""
        self._require(token, secret)
        exercise = self.levels.get(level_id)
        space = self.spaces.manage(secret, space_id)
        progress = read_progress(space.folder)
        moved = lesson_logic.restart_level(space, progress, exercise.id)
        name = read_profile(space.folder) or f"空间 {space.space_id[:6]}"
        return (f"🔁 已让 {literal_inline(name)} 重新开始「{literal_inline(exercise.title)}」：这一关的 {moved} 个会话"
                "移进了他的回收站（可以恢复，没有删除）；他点「🚀 开始这一关」就是新的起点")

    def csv_file(self, token, secret, now: float | None = None) -> str:
        """全班一张表的 .csv（和页面上的表同样的行），放进老师这个空间的下载目录，返回文件路径。"""
        table = self.table(token, secret, now)
        text = progress_csv(CLASS_HEADERS, table.rows)
        stamp = time.strftime("%Y%m%d-%H%M", time.localtime(now))
        owner = self.spaces.verify(token)
        return downloads.offer_run(owner, downloads.content_key(text), [(f"class-progress-{stamp}.csv", text)])[0]

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


def stuck_reason(entry: dict, now: float) -> str:
    """卡住的原因，写给老师看：从不写「0 分钟没有进展」——不到一分钟就是「刚有进展」。"""
    last = entry.get("last_progress") or entry.get("started_at") or now
    minutes = int((now - last) // 60)
    misses = int(entry.get("misses", 0))
    quiet = now - last > lesson_logic.STUCK_MINUTES * 60
    parts = [f"{minutes} 分钟没有进展"] if quiet else []
    if misses:
        parts.append(f"连续 {misses} 次没对上")
    if not quiet:
        parts.append("刚有进展" if minutes < 1 else f"上次进展在 {minutes} 分钟前")
    return "，".join(parts)


def demo_nodes(summaries: list) -> dict:
    """演示（demo_tree_branching）写下的节点 -> 演示自己把它存到了第几版（主会话 2、分支 A 1、分支 B 2）：
    主会话是标题为 DEMO_TITLE 的根，两个分支是它在 DEMO_SECONDS 之内长出来的头两个孩子。
    （第 1 关的起点也叫这个标题：调用方先把练习写的起点去掉。）"""
    found = {}
    for root in summaries:
        if root.get("parent_id") or root.get("title") != DEMO_TITLE:
            continue
        born = root.get("created_ns") or 0
        kids = sorted((s for s in summaries if s.get("parent_id") == root["session_id"]
                       and 0 <= (s.get("created_ns") or 0) - born < DEMO_SECONDS * 1_000_000_000),
                      key=lambda s: s.get("created_ns") or 0)[:2]
        if len(kids) == 2:
            found.update({root["session_id"]: 2, kids[0]["session_id"]: 1, kids[1]["session_id"]: 2})
    return found


def _from_shelf(session_id: str, shelf_ids: set) -> bool:
    """从书架复制进来的祖先链：ID 与书架上的相同，或是书架 ID + “-内容摘要”（内容不同时另存的那一份）。"""
    return session_id in shelf_ids or session_id.rpartition("-")[0] in shelf_ids


def spreadsheet_safe(cell):
    """CSV 的一格：数字原样；以 = + - @ 开头的文字前面加一个 '，表格软件就当它是文字而不是公式。
    "=HYPERLINK(…)" -> "'=HYPERLINK(…)"，"小明" -> "小明"，3 -> 3"""
    if isinstance(cell, (int, float)) and not isinstance(cell, bool):
        return cell
    text = str(cell)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def progress_csv(headers: list, rows: list) -> str:
    """课堂表 -> CSV 文字（开头带 BOM：表格软件按 UTF-8 读中文）。"""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(headers)
    writer.writerows([[spreadsheet_safe(cell) for cell in row] for row in rows])
    return "\ufeff" + buffer.getvalue()


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
