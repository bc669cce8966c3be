"""story.py — 👣 一步一步看磁盘：书中的演示每走一步，会话目录里有什么（逻辑，不 import gradio）

    run_story() ──> 一个只属于这次运行的临时文件夹里跑书中的 demo_tree_branching(StepStore(...))
                    StepStore 在每个公开操作结束时给目录拍一张快照（Snapshot：每个文件的路径、字节、内容摘要）
      1 空目录 → 2 新建主会话 → 3 追加并存档 → 4 分叉 A → 5 分叉 B → 6 恢复 B → 7 导出
    changes(前一张, 这一张) ──> 出现 / 改变 / 消失的文件；会话文件的字段差别、消息条数；日志多出的行
    story_pages(story)      ──> 每一步一页：书里的那句话 + 和上一步相比 | 会话树 | 目录里的文件（高亮变了的）

    sessions/                     第 2 步之后        第 3 步之后                   第 4 步之后
    ├── 5d38f60f4c00.json         🆕 revision 1     ✏️ revision 1 → 2              （不变）
    ├── 4d67e2e6b66c.json                                                        🆕 fork_point 5
    ├── .history/5d38f60f4c00/1.json                🆕 换掉之前的第 1 版
    └── .journal.jsonl            🆕 1 行           ✏️ 2 行                        ✏️ 3 行

Key insight: 章节的教训都在磁盘上——一个节点一个文件，分叉是新文件、父文件一个字节都不动，续跑存成新的
一版、旧的一版留着，导出只读不写。所以这里不讲道理，只给目录拍照、逐张比较：每一句“变了什么”都是算出来的。
快照在第一次点“下一步”时一次算好（约几十毫秒），之后的每次点击只是翻页；临时文件夹随即删掉。

Scope: 只讲书中这一个演示（步骤表 STEPS 对着 demo_tree_branching 的五次写入和一次导出，对不上就报错）；
不写进访客的空间、不占限额；不调用大模型。
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from typing import NamedTuple

import s11_journal
from s11_export import fenced
from s11_format import SessionError, is_session_name
from s11_history import HISTORY_DIR
from s11_session import SessionStore, demo_tree_branching
from s11_text import hide_paths, os_error_reason
from s11_workbench.demo import inherited_count, text_summary
from s11_workbench.markdown import inline_code, literal_inline

SHOWN_FOLDER = "sessions/"     # 页面上的目录名：书里的写法（真正的文件夹是临时的，名字没有意义）
EXPORT_LINES = 12              # 导出那一步：页面上显示导出文字的前几行
MARKERS = {"appeared": "🆕 新出现", "changed": "✏️ 变了", "removed": "🗑️ 消失"}
EXTRA_FILES_NOTE = ("书里的版本只写会话文件；`.journal.jsonl`（操作日志：每个操作一行，撤销靠它）、"
                    "`.history/`（换掉之前的那一版）、`.lock`（写入时的目录锁）是本仓库加的。")


class Step(NamedTuple):
    key: str
    title: str
    call: str | None   # 拍这张快照的那个 store 方法（None：建好仓库之后、任何操作之前）
    code: str          # 书中演示的那一行
    chapter: str       # 书里的一句话（引用或转述），这一步在磁盘上验证它


# 书中 demo_tree_branching 的六步；call 依次是它调用的公开方法（最外层的那次），run_story() 逐个核对
STEPS = (
    Step("start", "空目录", None, 'store = SessionStore("sessions")',
         "书里：`os.makedirs(storage_dir, exist_ok=True)  # 📁 自动创建会话目录`——仓库一建好，目录就在，"
         "里面还没有会话。"),
    Step("create", "新建主会话", "create_session", 'main_id = store.create_session("修复登录服务内存泄漏", [2 条])',
         "书里：「🆕 新建根会话并立即存档，返回 session_id」；`parent_id` 为 None 表示它是“根会话”——"
         "一个节点就是一个 JSON 文件。"),
    Step("save", "追加并存档", "save", "main.messages.append(…) × 3；store.save(main)",
         "书里：`store.save(main)  # 💾 中途存档，随时可断点续跑`——同一个文件整份换成新的一版，"
         "不在原处改写。"),
    Step("fork_a", "分叉出分支 A", "fork", "branch_a = store.fork(main_id, [方案 A 的 2 条])",
         "书里：「fork 的精髓是“继承父会话全部历史 + 追加新消息”」，`parent_id` 指向父节点形成树形关系——"
         "分支是一个新文件，父会话的文件一个字节都不变。"),
    Step("fork_b", "分叉出分支 B", "fork", "branch_b = store.fork(main_id, [方案 B 的 2 条])",
         "书里：「同一个“岔路口”可以长出一左一右两条分支，互不干扰」——分支 B 又是一个新文件，"
         "分支 A 原样不动。"),
    Step("resume", "恢复分支 B", "save",
         "resumed = store.load(branch_b.session_id)；append × 2；store.save(resumed)",
         "书里：`store.load(branch_b.session_id)  # 📂 恢复分支 B（断点续跑）`，定稿后是“主干 5 条 + 新增 4 条 = "
         "9 条”——只有分支 B 的文件换成新的一版。"),
    Step("export", "导出", "export_markdown", "store.export_markdown(resumed.session_id)",
         "书里：「export_markdown 把每条消息按角色渲染成 ### 序号 · 角色 emoji 的章节结构」——"
         "导出只读会话，磁盘上什么都不写。"),
)


class DiskFile(NamedTuple):
    path: str             # 相对会话目录，'/' 分隔：'5d38f60f4c00.json'、'.history/5d38f60f4c00/1.json'
    size: int
    digest: str           # 内容的 sha256：两张快照里同名文件的摘要不同 = 这一步改了它
    fields: dict | None   # 会话文件（也包括 .history/ 里的旧版）的 JSON 顶层字段，messages 换成条数
    lines: tuple = ()     # 操作日志：读得懂的各行（s11_journal 的记录），旧的在前


class Snapshot(NamedTuple):
    step: Step
    files: tuple          # tuple[DiskFile, ...]，按路径排序
    nodes: tuple          # tuple[SessionNode, ...]：目录里的会话（画树用），按创建先后
    export: str = ""      # 导出那一步：导出的 Markdown


class Change(NamedTuple):
    kind: str                  # appeared / changed / removed（MARKERS 的键）
    before: DiskFile | None
    after: DiskFile | None


class StoryError(SessionError):
    """故事没能跑完：临时文件夹建不了、写不进，或书中的演示与 STEPS 对不上。消息是一句中文。"""


# ---------------------------------------------------------------- 拍快照

def disk_file(folder: str, path: str) -> DiskFile:
    """目录里的一个文件 -> DiskFile；会话文件记下顶层字段，日志记下各行。"""
    with open(path, "rb") as handle:
        raw = handle.read()
    relative = os.path.relpath(path, folder).replace(os.sep, "/")
    name = os.path.basename(path)
    fields, lines = None, ()
    if is_session_name(name):
        data = json.loads(raw)
        fields = {**data, "messages": len(data.get("messages", []))}
    elif relative == s11_journal.JOURNAL_FILE:
        lines = tuple(s11_journal.read(folder).records())
    return DiskFile(relative, len(raw), hashlib.sha256(raw).hexdigest(), fields, lines)


def snapshot(store: SessionStore, step: Step, export: str = "") -> Snapshot:
    """此刻目录里的每个文件（含隐藏的 .journal.jsonl、.history/、.lock），和画树要的会话节点。"""
    folder = store.storage_dir
    paths = [os.path.join(root, name) for root, _, names in os.walk(folder) for name in names]
    nodes = sorted((store.load(summary["session_id"]) for summary in store.list_sessions()),
                   key=lambda node: node.created_ns)
    files = sorted((disk_file(folder, path) for path in paths), key=shown_order([node.session_id for node in nodes]))
    return Snapshot(step, tuple(files), tuple(nodes), export)


def shown_order(session_ids: list[str]):
    """表格里的顺序：会话文件按创建先后在前，然后是 .history/ 里的旧版，最后是日志、锁这些隐藏文件。"""
    def key(file: DiskFile) -> tuple:
        owner = session_id_of(file)
        rank = session_ids.index(owner) if owner in session_ids else len(session_ids)
        group = 0 if file.fields and "/" not in file.path else (1 if file.fields else 2)
        return group, rank, file.path
    return key


class StepStore(SessionStore):
    """一个普通的 SessionStore，只是每个公开操作（最外层的那次）结束后给目录拍一张快照。

    分叉里面还会调 save()：depth 记着嵌套了几层，只在回到最外层时拍，所以一次分叉是一张，不是两张。"""

    CALLS = ("create_session", "save", "fork", "export_markdown")

    def __init__(self, storage_dir: str):
        super().__init__(storage_dir, durable=False)   # 临时文件夹，用完就删：不必为断电 fsync
        self.depth = 0
        self.shots: list[tuple[str, object]] = []      # (方法名, 返回值)，拍完快照后由 run_story 配上步骤
        self.snapshots: list[Snapshot] = [snapshot(self, STEPS[0])]

    def _recorded(self, call: str, *args, **kwargs):
        self.depth += 1
        try:
            result = getattr(super(), call)(*args, **kwargs)
        finally:
            self.depth -= 1
        if self.depth == 0:
            number = len(self.snapshots)
            if number >= len(STEPS) or STEPS[number].call != call:
                raise StoryError(f"书中的演示与步骤表对不上：第 {number} 步是 {call}，步骤表里是 "
                                 f"{STEPS[number].call if number < len(STEPS) else '（没有这一步）'}")
            self.snapshots.append(snapshot(self, STEPS[number], result if call == "export_markdown" else ""))
        return result

    def create_session(self, *args, **kwargs):
        return self._recorded("create_session", *args, **kwargs)

    def save(self, *args, **kwargs):
        return self._recorded("save", *args, **kwargs)

    def fork(self, *args, **kwargs):
        return self._recorded("fork", *args, **kwargs)

    def export_markdown(self, *args, **kwargs):
        return self._recorded("export_markdown", *args, **kwargs)


def run_story() -> tuple[Snapshot, ...]:
    """在一个新的临时文件夹里跑一遍书中的演示，返回七张快照（STEPS 的每一步一张）；文件夹随即删掉。
    出错时抛 StoryError（一句中文）。"""
    try:
        with tempfile.TemporaryDirectory(prefix="s11-story-") as folder:
            try:
                store = StepStore(os.path.join(folder, "sessions"))
                demo_tree_branching(store)
            except StoryError:
                raise
            except SessionError as error:   # 仓库自己的错误：消息里的临时文件夹路径只留 sessions/ 之后的部分
                said = hide_paths(str(error).replace(os.path.join(folder, ""), ""))
                raise StoryError(f"书中的演示没能跑完：{said}") from None
            snapshots = tuple(store.snapshots)
    except OSError as error:
        raise StoryError(f"临时文件夹用不了：{os_error_reason(error)}，这一遍没能跑完（什么都没保存）") from None
    if len(snapshots) != len(STEPS):
        raise StoryError(f"书中的演示只走了 {len(snapshots) - 1} 步，步骤表里有 {len(STEPS) - 1} 步")
    return snapshots


# ---------------------------------------------------------------- 两张快照之间

def changes(before: Snapshot | None, after: Snapshot) -> list[Change]:
    """出现、改变、消失的文件（按表格的顺序）。before 为 None（第一张）时目录里已有的都算出现。

    {'a.json': d1} -> {'a.json': d2, 'b.json': d3} → [changed a.json, appeared b.json]
    """
    old = {file.path: file for file in (before.files if before else ())}
    new = {file.path: file for file in after.files}
    found = []
    for path in list(new) + [path for path in old if path not in new]:   # 按这一张的顺序，消失的排在最后
        was, now = old.get(path), new.get(path)
        if was is None:
            found.append(Change("appeared", None, now))
        elif now is None:
            found.append(Change("removed", was, None))
        elif was.digest != now.digest:
            found.append(Change("changed", was, now))
    return found


def field_changes(before: dict, after: dict) -> list[tuple[str, object, object]]:
    """会话文件两版之间变了的顶层字段（messages 已是条数），按后一版里的顺序。

    {'revision': 1, 'messages': 2, 'title': 't'} -> {'revision': 2, 'messages': 5, 'title': 't'}
     → [('revision', 1, 2), ('messages', 2, 5)]
    """
    keys = list(after) + [key for key in before if key not in after]
    return [(key, before.get(key), after.get(key)) for key in keys if before.get(key) != after.get(key)]


def session_id_of(file: DiskFile) -> str | None:
    """会话文件或它的旧版属于哪个会话；别的文件 None。"""
    return file.fields.get("session_id") if file.fields else None


# ---------------------------------------------------------------- 页面文字

def node_names(nodes: tuple) -> dict[str, str]:
    """按创建先后起名：根是 🌱 主会话，分支依次是 🌿 分支 A、B、C……（和书里的叫法一样）。"""
    names, letters = {}, iter("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    for node in nodes:
        names[node.session_id] = "🌱 主会话" if node.parent_id is None else f"🌿 分支 {next(letters, '?')}"
    return names


def file_kind(file: DiskFile) -> str:
    """'session'（会话文件）、'kept'（.history/ 里换掉之前的一版）、'journal'（操作日志）、'lock'、'other'。"""
    if file.fields:
        return "kept" if file.path.startswith(HISTORY_DIR + "/") else "session"
    return {s11_journal.JOURNAL_FILE: "journal", ".lock": "lock"}.get(file.path, "other")


def file_label(file: DiskFile, names: dict[str, str]) -> str:
    """表格里文件名下面那一行：'🌿 分支 A'、'🌱 主会话 换掉之前的第 1 版'、'操作日志 · 3 行'、'目录锁（空文件）'。"""
    owner = names.get(session_id_of(file) or "", "会话")
    return {"session": owner,
            "kept": f"{owner} 换掉之前的第 {(file.fields or {}).get('revision')} 版",
            "journal": f"操作日志 · {len(file.lines)} 行",
            "lock": "目录锁（空文件）"}.get(file_kind(file), "其他")


def cell(value) -> str:
    return "—" if value is None else str(value)


def files_table(shot: Snapshot, changed: list[Change], names: dict[str, str]) -> str:
    """目录里的每个文件一行；这一步出现或变了的那几行打上记号、加粗。"""
    marked = {change.after.path: change.kind for change in changed if change.after is not None}
    lines = [f"#### 📁 {SHOWN_FOLDER} 里的文件（{len(shot.files)} 个）", "",
             "| 文件 | 字节 | revision | fork_point | 消息 |", "| --- | ---: | ---: | ---: | ---: |"]
    for file in shot.files:
        fields = file.fields or {}
        kind = marked.get(file.path)
        # 这一步出现或变了的行整行加粗（页面的 CSS 再给有粗体的行换个底色），记号写在文件名前
        strong, mark = ("**", f"{MARKERS[kind]}<br>") if kind else ("", "")
        name = f"{mark}{strong}{inline_code(file.path)}<br>{literal_inline(file_label(file, names))}{strong}"
        lines.append(f"| {name} | {strong}{file.size:,}{strong} | {cell(fields.get('revision'))} "
                     f"| {cell(fields.get('fork_point'))} | {cell(fields.get('messages'))} |")
    if not shot.files:
        lines.append("| （空的） | 0 | — | — | — |")
    if any(file_kind(file) != "session" for file in shot.files):
        lines += ["", EXTRA_FILES_NOTE]
    return "\n".join(lines)


# ---------------------------------------------------------------- 一行“变了什么”：按文件的种类各写各的

def session_detail(change: Change, previous: Snapshot | None, shot: Snapshot, names: dict[str, str]) -> str:
    """新的会话文件：revision、消息条数、parent_id、fork_point；变了的：变了的字段和字节数。"""
    fields = change.after.fields
    if change.before is not None:
        diffs = [f"`{key}` {cell(old)} → **{cell(new)}**"
                 for key, old, new in field_changes(change.before.fields, fields)]
        return f"{'，'.join(diffs)}；{change.before.size:,} → {change.after.size:,} 字节"
    parts = [f"`revision` {fields.get('revision')}", f"{fields.get('messages')} 条消息"]
    parent = fields.get("parent_id")
    if parent is None:
        return "，".join(parts + ["`parent_id` null（根会话）"])
    nodes = {node.session_id: node for node in shot.nodes}
    node = nodes.get(fields.get("session_id"))
    inherited = inherited_count(node, nodes.get(parent)) if node is not None else fields.get("fork_point") or 0
    return "，".join(parts + [f"`parent_id` → {literal_inline(names.get(parent, parent))}",
                              f"`fork_point` {fields.get('fork_point')}（继承 {inherited} 条 + 新增 "
                              f"{fields.get('messages') - inherited} 条）"])


def kept_detail(change: Change, previous: Snapshot | None, shot: Snapshot, names: dict[str, str]) -> str:
    """.history/ 里的旧版：和上一步的哪个文件逐字节相同（就是被换掉的那一版）。"""
    same = [old.path for old in (previous.files if previous else ()) if old.digest == change.after.digest]
    if not same:
        return "换掉之前的那一版"
    return f"与上一步的 {inline_code(same[0])} 逐字节相同——旧的一版原样留下，没有被改写"


def journal_detail(change: Change, previous: Snapshot | None, shot: Snapshot, names: dict[str, str]) -> str:
    """操作日志：末尾多出来的行，各用 s11_journal 的一句中文说。"""
    before = change.before.lines if change.before is not None else ()
    added = change.after.lines[len(before):]
    said = "；".join(literal_inline(s11_journal.describe(record)) for record in added)
    return f"末尾多了 {len(added)} 行（{len(before)} → {len(change.after.lines)} 行）：{said}"


def size_detail(change: Change, previous: Snapshot | None, shot: Snapshot, names: dict[str, str]) -> str:
    return f"{change.after.size:,} 字节"


DETAILS = {"session": session_detail, "kept": kept_detail, "journal": journal_detail, "lock": size_detail,
           "other": size_detail}


def describe_change(change: Change, previous: Snapshot | None, shot: Snapshot, names: dict[str, str]) -> str:
    """一行“变了什么”：'- ✏️ 变了 `5d38….json`（🌱 主会话）：`revision` 1 → **2**，…'。"""
    file = change.after or change.before
    where = f"{MARKERS[change.kind]} {inline_code(file.path)}（{literal_inline(file_label(file, names))}）"
    if change.after is None:
        return f"- {where}"
    return f"- {where}：{DETAILS[file_kind(file)](change, previous, shot, names)}"


def changes_markdown(previous: Snapshot | None, shot: Snapshot, names: dict[str, str]) -> str:
    changed = changes(previous, shot)
    if previous is None:
        return "**目录里现在有**：" + ("、".join(inline_code(file.path) for file in shot.files) or "（什么都没有）")
    if not changed:
        return "**和上一步相比**：没有任何文件出现、改变或消失（一个字节都没变）。"
    return "\n".join(["**和上一步相比**：", ""] + [describe_change(change, previous, shot, names)
                                                 for change in changed])


def step_heading(number: int) -> str:
    """'### 第 4 / 7 步 · 分叉出分支 A'（gradio 的分步条从 1 数，这里也从 1 数）。"""
    return f"### 第 {number + 1} / {len(STEPS)} 步 · {STEPS[number].title}"


def touched_session(previous: Snapshot | None, shot: Snapshot) -> str | None:
    """这一步写下的那个会话（出现或变了的会话文件）；没有时 None。"""
    for change in changes(previous, shot):
        if change.after is not None and change.after.fields and "/" not in change.after.path:
            return session_id_of(change.after)
    return None


def tree_markdown(previous: Snapshot | None, shot: Snapshot, names: dict[str, str], resumed_id: str | None) -> str:
    if not shot.nodes:
        return "#### 🌳 会话树\n\n（还没有会话）"
    touched = touched_session(previous, shot)
    marked = {key: name + (" 👈" if key == touched else "") for key, name in names.items()}
    resumed = resumed_id if resumed_id in marked else None
    note = "\n\n👈 = 这一步写下的会话" if touched else ""
    return f"#### 🌳 会话树\n\n{fenced(text_summary(list(shot.nodes), marked, resumed), 'text')}{note}"


class Page(NamedTuple):
    """一步的页面：三段 Markdown（gr.Markdown 显示；会话文字只在围栏里或经过转义）。"""
    head: str    # 标题、书中那一行代码、书里的一句话、和上一步相比
    tree: str    # 会话树（文字）
    files: str   # 目录里的文件表


def story_pages(snapshots: tuple[Snapshot, ...]) -> list[Page]:
    """七张快照 -> 七页。"""
    pages = []
    resumed_id = None
    last_nodes = snapshots[-1].nodes
    names = node_names(last_nodes)
    for number, shot in enumerate(snapshots):
        previous = snapshots[number - 1] if number else None
        if shot.step.key == "resume":
            resumed_id = touched_session(previous, shot)
        head = [step_heading(number), fenced(shot.step.code, "python"), f"> 📖 {shot.step.chapter}",
                changes_markdown(previous, shot, names)]
        if shot.export:
            head.append(f"**导出的 Markdown**（前 {EXPORT_LINES} 行，只在内存里，没有写进目录）：\n\n"
                        + fenced("\n".join(shot.export.splitlines()[:EXPORT_LINES]), "markdown"))
        marked_changes = changes(previous, shot) if previous else []
        pages.append(Page("\n\n".join(head), tree_markdown(previous, shot, names, resumed_id),
                          files_table(shot, marked_changes, names)))
    return pages


def waiting_pages() -> list[Page]:
    """还没跑的时候：第 1 步说清楚点“下一步”会发生什么；其余几步只是占位（走到它们之前就会算好）。"""
    first = STEPS[0]
    start = "\n\n".join([step_heading(0), fenced(first.code, "python"), f"> 📖 {first.chapter}",
                          "👉 点 **下一步 ▶**：在一个只属于你的临时文件夹里真的跑一遍书中的 `demo_tree_branching`，"
                          "每走一步给目录拍一张照；之后每一步都显示会话树、目录里的每个文件（这一步出现或变了的那个"
                          "打上记号）、它的字节数与 `revision` / `fork_point`，以及和上一步相比变了什么。"])
    pages = [Page(start, "#### 🌳 会话树\n\n（还没有会话）", f"#### 📁 {SHOWN_FOLDER} 里的文件\n\n（还没有文件）")]
    for number in range(1, len(STEPS)):
        pages.append(Page(f"{step_heading(number)}\n\n（从第 1 步点 **下一步 ▶** 开始）", "", ""))
    return pages
