"""demo.py — 8.11 标签页的全部逻辑（不 import gradio，可单独测试）

    python app.py ──> check_sessions_dir(dir)        建不了 / 不是文件夹 / 写不进：启动时就退出（exit 2）
    点击 🌿 ──> run_demo(sessions_dir)
                 │  RecordingStore(sessions_dir) + demo_tree_branching()   每次存档记下 (revision, 消息条数)
                 │  主会话(5) ──fork──> 分支 A(7)
                 │            └─fork──> 分支 B(7) ──📂 读档恢复、追加 2 条、再存档──> 分支 B(9)
                 ├─> tree_markdown      会话树（mermaid + 文字摘要）+ 五步：存档 · 读档 · 分叉 · 恢复 · 导出
                 ├─> preview_markdown   分支 B 的导出，按 继承 1–5 / 分叉新增 6–7 / 恢复后追加 8–9 分组标注
                 ├─> files_markdown     3 个会话文件各一张卡片：存档几次、哪个字段变了、文件原文
                 └─> markdown_download / html_download   downloads.offer()：所有标签页共用的私有下载目录

Key insight: 页面要讲清“哪几条是恢复后追加的”，靠的不是猜，而是记录：RecordingStore 记下每一次 save()，
分支 B 第一次存档时有 7 条、再次存档时有 9 条，于是第 8–9 条就是恢复后追加的，revision 1 → 2 就是变化的字段。
每次点击都新建自己的 store、自己的 run-* 目录，模块里没有按访客区分的全局状态。

Scope: 不调用大模型；不清理 gradio_sessions/ 里的旧演示会话（那是学生要去翻看的“存档”）；
下载副本只保留 EXPORT_KEEP_SECONDS 秒；页面上只显示会话目录的名字，不显示服务器上的完整路径。
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from s11_export import fenced, message_parts
from s11_session import ROLE_ICONS, SessionError, SessionNode, SessionStore, demo_tree_branching
from s11_text import hide_folders, os_error_reason, public_name, shorten
from s11_tree import Forest, walk
from s11_workbench import downloads
from s11_workbench.downloads import DOWNLOADS_FOLDER, EXPORT_KEEP_SECONDS, FolderUnavailable, blame
from s11_workbench.markdown import inline_code, mermaid_text

log = logging.getLogger(__name__)

ADDED_PREVIEW_CHARS = 14
SESSIONS_FOLDER = "会话目录"

# 会话文件里章节原版没有的字段，各用一句话说明它为什么存在（页面在三个文件上方逐行列出）。
FIELD_NOTES = (
    ("version", "文件格式版本。章节原版文件没有这个键（算 version 1），读入时按 MIGRATIONS 逐步升级；"
                "比程序还新的版本拒绝读写，绝不覆盖。"),
    ("revision", "第几次存档。保存前先核对磁盘上的修订号：两处同时续跑同一会话时，后保存的一方得到 "
                 "ConflictError，而不是悄悄抹掉对方的消息。"),
    ("fork_point", "分叉点：从父会话继承了前几条消息（根会话为 null）。导出里的“以上 5 条继承自父分支”就来自它。"),
    ("workspace", "存档时的代码状态（提交、分支或文件摘要），恢复前用来核对“会话 ≠ 代码”；"
                  "本演示没有指定工作区，所以是 null。"),
    ("created_ns", "纳秒级的创建时间：created_at 只精确到秒，同一秒里创建的会话靠它稳定排序。"),
    ("source", "（version 3 起）导入的会话记下它来自哪个 Agent 的哪份记录：格式、文件名、会话 id；"
               "本演示是直接创建的，所以是 null。"),
)

GROUP_BADGES = ("🟦", "🟩", "🟧")   # 继承 / 分叉新增 / 恢复后追加；CSS 按同样的顺序给三个分组标题上色
PREVIEW_NOTE = ("彩色分组标题是页面加的标注，告诉你每条消息从哪来；下载的 .md 与书中 `export_markdown` "
                "的格式一致，不含这些标题。")


class SaveRecord(NamedTuple):
    session_id: str
    revision: int
    message_count: int


class WrittenFile(NamedTuple):
    path: str                # 服务器上的路径（测试和日志用，不上页面）
    shown_path: str          # 页面上显示的：会话目录名/文件名
    size_bytes: int
    pretty_json: str
    name: str = "会话"       # 🌱 主会话 / 🌿 分支 A …
    saves: tuple = ()        # 本次运行里这个文件的每次存档：((revision, 消息条数), ...)


@dataclass(frozen=True)
class DemoRun:
    ids: dict
    tree_markdown: str
    export_markdown: str     # 与 .md 下载逐字相同：章节的导出格式
    preview_markdown: str    # export_markdown + 页面上的分组标题
    files: list              # list[WrittenFile]，恰好是本次运行写下的 3 个会话文件
    markdown_download: str
    html_download: str
    elapsed_ms: int


class RecordingStore(SessionStore):
    """一个普通的 SessionStore，只是把每次成功的 save() 记进 self.saves（每次点击一个新实例）。"""

    def __init__(self, storage_dir: str, **options):
        super().__init__(storage_dir, **options)
        self.saves: list[SaveRecord] = []

    def save(self, session: SessionNode) -> None:
        super().save(session)
        self.saves.append(SaveRecord(session.session_id, session.revision, len(session.messages)))


# ---------------------------------------------------------------- 消息的纯文字

PART_PREFIXES = MappingProxyType({"thinking": "💭 ", "tool_call": "🔧 ", "tool_output": "📤 ", "image": "🖼️ "})


def message_text(message: dict) -> str:
    """一条消息的纯文字（内容块按导出的规则读成文字，不会出现 Python 的 [{'type': ...}]）。

    {"content": [{"type": "text", "text": "hi"}, {"type": "tool_use", "name": "Bash", "input": {}}]} -> 'hi 🔧 Bash'
    """
    pieces = []
    for part in message_parts(message):
        body = part.caption if part.kind == "tool_call" else part.text
        pieces.append(PART_PREFIXES.get(part.kind, "") + body)
    return " ".join(piece for piece in pieces if piece.strip())


# ---------------------------------------------------------------- 会话树

def inherited_count(node: SessionNode, parent: SessionNode | None) -> int:
    """分支从父会话继承的消息条数：优先用 store 记下的 fork_point，旧文件没有时退回公共前缀长度。"""
    if parent is None:
        return 0
    if getattr(node, "fork_point", None) is not None:
        return node.fork_point
    common = 0
    for mine, theirs in zip(node.messages, parent.messages):
        if mine != theirs:
            break
        common += 1
    return common


def first_added_message(node: SessionNode, inherited: int) -> str:
    """分支新增的第一条消息的摘要，例如 '🤖 方案 A：为 cache_store 增加 LRU…'"""
    added = node.messages[inherited:]
    if not added:
        return "（没有新增消息）"
    first = added[0]
    return f"{ROLE_ICONS.get(first.get('role'), '📄')} {shorten(message_text(first), ADDED_PREVIEW_CHARS)}"


def mermaid_tree(nodes: list[SessionNode], names: dict[str, str], resumed_id: str | None = None) -> str:
    """nodes（父在前）-> `graph TD` 源码。mermaid 节点名用 n0/n1…，会话文字只出现在转义后的标签里。

    标签故意又短又窄（一行一件事；标题只写在根上）：两个分支并排也只有 ~330px 宽，手机上不必缩小。
    """
    by_id = {node.session_id: node for node in nodes}
    alias = {node.session_id: f"n{index}" for index, node in enumerate(nodes)}
    lines = ['%%{init: {"flowchart": {"wrappingWidth": 150, "nodeSpacing": 24, "padding": 6}}}%%', "graph TD"]
    for node in nodes:
        name = mermaid_text(names.get(node.session_id, "会话"))
        resumed = "<br/>📂 已恢复" if node.session_id == resumed_id else ""
        title = "" if node.parent_id in by_id else f"<br/>{mermaid_text(node.title, 16)}"
        label = (f"{name}{resumed}{title}<br/>💬 {len(node.messages)} 条消息"
                 f"<br/>🆔 {mermaid_text(node.session_id, 16)}")
        lines.append(f'    {alias[node.session_id]}["{label}"]')
    for node in nodes:
        parent = by_id.get(node.parent_id)
        if parent is not None:
            inherited = inherited_count(node, parent)
            added = len(node.messages) - inherited
            lines.append(f'    {alias[parent.session_id]} -->|"继承 {inherited} · 新增 {added}"| '
                         f"{alias[node.session_id]}")
    # 只改边框不改底色：底色交给 mermaid 主题，浅色、深色模式下文字都看得清
    lines.append("    classDef root stroke:#2563eb,stroke-width:2px")
    lines.append("    classDef branch stroke:#16a34a,stroke-width:2px")
    lines.append("    classDef resumed stroke:#d97706,stroke-width:4px")
    for node in nodes:
        style = "resumed" if node.session_id == resumed_id else ("root" if node.parent_id is None else "branch")
        lines.append(f"    class {alias[node.session_id]} {style}")
    return "\n".join(lines)


def forest_of(nodes: list[SessionNode]) -> Forest:
    """几个节点 -> s11_tree 的 Forest；兄弟按它们在 nodes 里的先后排（下标当作创建顺序）。"""
    return Forest([{"session_id": node.session_id, "parent_id": node.parent_id, "created_ns": index}
                   for index, node in enumerate(nodes)])


def text_summary(nodes: list[SessionNode], names: dict[str, str], resumed_id: str | None = None) -> str:
    """文字版会话树（放进 ```text 代码块，会话文字不会被当成 Markdown/HTML），按 s11_tree.walk 的先序一个个写。
    每行不超过 ~30 列，手机上也不折行：

    🌱 主会话 · 5 条
    │  「修复登录服务内存泄漏」
    │  id=5d38f60f4c00
    ├─ 🌿 分支 A · 7 条
    │    = 继承 5 + 新增 2
    │    id=4d67e2e6b66c
    │    parent_id=5d38f60f4c00
    │    新增：🤖 方案 A：为 cache_s…
    """
    by_id = {node.session_id: node for node in nodes}
    lines = []
    for step in walk(forest_of(nodes)):
        node = by_id[step.node["session_id"]]
        name = names.get(node.session_id, "会话") + (" 📂 已恢复" if node.session_id == resumed_id else "")
        if step.depth == 0:
            lines += [f"{name} · {len(node.messages)} 条", f"│  「{shorten(node.title, 12)}」",
                      f"│  id={node.session_id}"]
            continue
        inherited = inherited_count(node, by_id[node.parent_id])
        stem, indent = ("└─ ", "     ") if step.last else ("├─ ", "│    ")
        lines += [f"{stem}{name} · {len(node.messages)} 条",
                  f"{indent}= 继承 {inherited} + 新增 {len(node.messages) - inherited}",
                  f"{indent}id={node.session_id}",
                  f"{indent}parent_id={node.parent_id}",
                  f"{indent}新增：{first_added_message(node, inherited)}"]
    return "\n".join(lines)


def save_history(saves: list[SaveRecord]) -> dict[str, tuple]:
    """[SaveRecord('b', 1, 7), SaveRecord('b', 2, 9)] -> {'b': ((1, 7), (2, 9))}"""
    history: dict[str, list] = {}
    for record in saves:
        history.setdefault(record.session_id, []).append((record.revision, record.message_count))
    return {session_id: tuple(records) for session_id, records in history.items()}


def resumed_range(saves: tuple) -> tuple[int, int] | None:
    """分支 B 的存档记录 ((1, 7), (2, 9)) -> (8, 9)：最后一次存档比第一次多出来的消息编号（从 1 数）。"""
    if len(saves) < 2 or saves[-1][1] <= saves[0][1]:
        return None
    return saves[0][1] + 1, saves[-1][1]


def steps_markdown(ids: dict, history: dict[str, tuple], fork_point: int) -> str:
    """这次点击按顺序做了什么：五个能力各一行，数字全部来自存档记录。"""
    main, branch_a, branch_b = (history.get(ids[key], ((0, 0),)) for key in ("main_id", "branch_a_id", "branch_b_id"))
    resumed = resumed_range(branch_b)
    resumed_text = (f"追加第 {resumed[0]}–{resumed[1]} 条后再存档：`revision` {branch_b[0][0]} → {branch_b[-1][0]}"
                    if resumed else "没有追加新消息")
    return "\n".join([
        "#### 🧭 这一次点击做了什么",
        f"1. 💾 **存档**：新建主会话（{main[0][1]} 条），写成 `revision` {main[0][0]}",
        f"2. 📂 **读档**：读回主会话，追加到 {main[-1][1]} 条再存档：`revision` {main[-1][0]}",
        f"3. 🌿 **分叉**：分支 A、分支 B 各继承主会话前 {fork_point} 条，各自新增 "
        f"{branch_a[0][1] - fork_point} / {branch_b[0][1] - fork_point} 条（共 {branch_a[0][1]} / {branch_b[0][1]} 条）",
        f"4. ▶️ **恢复**：读档分支 B 接着干，{resumed_text}",
        "5. 📤 **导出**：把分支 B 渲染成 Markdown 与离线 HTML（预览和下载都在这个结果区里）",
    ])


def tree_markdown(nodes: list[SessionNode], names: dict[str, str], resumed_id: str | None = None,
                  steps: str = "") -> str:
    return "\n\n".join(part for part in [
        "#### 🌳 本次运行的会话树",
        fenced(text_summary(nodes, names, resumed_id), "text"),
        fenced(mermaid_tree(nodes, names, resumed_id), "mermaid"),
        steps,
    ] if part)


# ---------------------------------------------------------------- 导出预览：按来历分组

FENCE_LINE = re.compile(r"^(`{3,}|~{3,})")
MESSAGE_HEADING = re.compile(r"^### (\d+)\. ")


def annotate_export(markdown: str, groups: list[tuple[int, str]]) -> str:
    """在导出的消息标题前插入分组标题：groups = [(从第几条开始, '## 🟦 …'), ...]，按消息编号升序。

    只认代码围栏之外的 '### N. ' 行，所以消息正文（导出时可疑文本已装进围栏）伪造不了分组位置。
    """
    pending = sorted(groups)
    out, fence = [], ""
    for line in markdown.split("\n"):
        if fence:
            closer = line.rstrip(" \t")
            fence = "" if len(closer) >= len(fence) and set(closer) == {fence[0]} else fence
        elif opener := FENCE_LINE.match(line):
            fence = opener.group(1)
        elif (heading := MESSAGE_HEADING.match(line)) and pending and int(heading.group(1)) >= pending[0][0]:
            out += [pending.pop(0)[1], ""]
        out.append(line)
    return "\n".join(out)


def message_groups(fork_point: int, saves: tuple, parent_name: str) -> list[tuple[int, str]]:
    """分支 B（fork_point 5，存档 (1, 7) 与 (2, 9)）-> 三组：继承 1–5、分叉新增 6–7、恢复后追加 8–9。"""
    first_count = saves[0][1]
    groups = []
    if fork_point:
        groups.append((1, f"## {GROUP_BADGES[0]} 第 1–{fork_point} 条 · 继承自{parent_name}"
                          f"（`fork_point` = {fork_point}）"))
    if first_count > fork_point:
        groups.append((fork_point + 1, f"## {GROUP_BADGES[1]} 第 {fork_point + 1}–{first_count} 条 · 分叉时新增"
                                       f"（第一次存档，`revision` {saves[0][0]}）"))
    resumed = resumed_range(saves)
    if resumed:
        groups.append((resumed[0], f"## {GROUP_BADGES[2]} 第 {resumed[0]}–{resumed[1]} 条 · 📂 读档恢复后追加"
                                   f"（再次存档，`revision` {saves[0][0]} → {saves[-1][0]}）"))
    return groups


def preview_markdown(export_markdown: str, fork_point: int, saves: tuple, parent_name: str) -> str:
    groups = message_groups(fork_point, saves, parent_name)
    return f"> ℹ️ {PREVIEW_NOTE}\n\n" + annotate_export(export_markdown, groups)


# ---------------------------------------------------------------- 会话文件

def shown_path(path: str, shown_from: str) -> str:
    """页面上的文件路径：从 shown_from 这个目录的名字开始写，例如 'gradio_sessions/spaces/4f…/5d38f60f4c00.json'；
    文件不在它下面时只写 '所在目录名/文件名'。"""
    base = os.path.dirname(os.path.abspath(shown_from))
    relative = os.path.relpath(os.path.abspath(path), base)
    if relative.startswith(os.pardir) or os.path.isabs(relative):
        relative = os.path.join(public_name(os.path.dirname(path)), os.path.basename(path))
    return relative.replace(os.sep, "/")


def written_file(path: str, shown_from: str, name: str = "会话", saves: tuple = ()) -> WrittenFile:
    with open(path, encoding="utf-8") as handle:
        pretty = json.dumps(json.load(handle), ensure_ascii=False, indent=2)
    return WrittenFile(path, shown_path(path, shown_from), os.path.getsize(path), pretty, name, tuple(saves))


def field_notes_markdown() -> str:
    """三个文件上方的字段说明：章节原版没有的每个字段一行。"""
    lines = ["#### 📄 本次写入的 3 个会话文件（一个节点一个文件，`parent_id` 把它们连成树）",
             "章节原版就有的 `session_id`、`title`、`parent_id`、`messages`、`created_at` 之外，还多了：", ""]
    lines += [f"- `{field}`：{note}" for field, note in FIELD_NOTES]
    return "\n".join(lines)


def changed_fields(saves: tuple) -> str:
    """存了不止一次的文件：第一次和最后一次存档之间变了什么，写成一张小表。"""
    (first_revision, first_count), (last_revision, last_count) = saves[0], saves[-1]
    return "\n".join([
        "| 字段 | 第一次存档 | 再次存档 |",
        "| --- | --- | --- |",
        f"| `revision` | {first_revision} | **{last_revision}** |",
        f"| `messages` | {first_count} 条 | **{last_count} 条**（新增第 {first_count + 1}–{last_count} 条） |",
    ])


def file_card(file: WrittenFile, number: int) -> str:
    """一个会话文件的卡片：名字、路径、大小、存档几次、变了什么、文件原文。"""
    circled = "①②③④⑤⑥⑦⑧⑨"[number - 1] if 0 < number < 10 else f"{number}."
    parts = [f"#### {circled} {file.name}",
             inline_code(file.shown_path), f"{file.size_bytes:,} 字节 · 本次存档 {len(file.saves)} 次"]
    if len(file.saves) > 1 and file.saves[-1][1] > file.saves[0][1]:
        parts += ["🔁 **再次存档时变了这两处**（文件里其余字段不变）：", changed_fields(file.saves)]
    parts.append(fenced(file.pretty_json, "json"))
    return "\n\n".join(parts)


def files_markdown(files: list[WrittenFile]) -> list[str]:
    """每个文件一张卡片（页面上三张并排，窄屏时上下排）。"""
    return [file_card(file, number) for number, file in enumerate(files, 1)]


# ---------------------------------------------------------------- 一次完整运行

def run_demo(sessions_dir: str, *, export_root: str | None = None, shown_from: str | None = None,
             keep_seconds: float = EXPORT_KEEP_SECONDS) -> DemoRun:
    """主会话 → 双分支 → 恢复 → 导出，跑一遍并把页面要显示的东西全部算好。

    sessions_dir 是要写入的文件夹（整个站点的会话目录，或某位访客自己的空间目录）；页面上的文件路径从
    shown_from（默认就是 sessions_dir）的目录名写起，不暴露服务器上的完整路径。
    出错时抛 FolderUnavailable（写明是哪个目录）或 store 自己的 SessionError。
    """
    started = time.perf_counter()
    with blame(SESSIONS_FOLDER, sessions_dir):
        store = RecordingStore(sessions_dir)
        ids = demo_tree_branching(store)
        main_id, branch_a_id, branch_b_id = ids["main_id"], ids["branch_a_id"], ids["branch_b_id"]
        nodes = [store.load(session_id) for session_id in (main_id, branch_a_id, branch_b_id)]
        if any(node is None for node in nodes):
            raise SessionError(f"演示会话写入后读不回来：{public_name(sessions_dir)}")
        # demo 已按默认（脱敏）导出过分支 B 的 Markdown；HTML 也在这里渲染，读的是会话目录
        html = store.export_html(branch_b_id)
        names = {main_id: "🌱 主会话", branch_a_id: "🌿 分支 A", branch_b_id: "🌿 分支 B"}
        history = save_history(store.saves)
        files = [written_file(store.path_of(node.session_id), shown_from or sessions_dir,
                              names[node.session_id] + (" · 📂 已恢复" if node.session_id == branch_b_id else ""),
                              history.get(node.session_id, ()))
                 for node in nodes]
    markdown_download, html_download = downloads.offer(branch_b_id, ids["export_md"], html, export_root=export_root,
                                                       keep_seconds=keep_seconds)

    branch_b = nodes[2]
    fork_point = branch_b.fork_point or 0
    return DemoRun(
        ids={"main_id": main_id, "branch_a_id": branch_a_id, "branch_b_id": branch_b_id},
        tree_markdown=tree_markdown(nodes, names, resumed_id=branch_b_id,
                                    steps=steps_markdown(ids, history, fork_point)),
        export_markdown=ids["export_md"],
        preview_markdown=preview_markdown(ids["export_md"], fork_point, history.get(branch_b_id, ((0, 0),)),
                                          "主会话"),
        files=files,
        markdown_download=markdown_download,
        html_download=html_download,
        elapsed_ms=round((time.perf_counter() - started) * 1000),
    )


# ---------------------------------------------------------------- 出错时：一句中文

FOLDER_ADVICE = MappingProxyType({
    SESSIONS_FOLDER: "请换一个可写的目录（启动参数 `--sessions-dir`）。",
    DOWNLOADS_FOLDER: "会话已经存好；只是导出文件没能写进服务器的临时目录，请检查临时目录所在磁盘（环境变量 TMPDIR）。",
})


def explain_error(error: BaseException, sessions_dir: str) -> str:
    """异常 -> 给同学看的一句中文提示（不含堆栈，不含服务器上的完整路径）。"""
    if isinstance(error, FolderUnavailable):
        return (f"⚠️ 无法写入{error.kind} {inline_code(public_name(error.folder))}：{error.reason}。"
                f"{FOLDER_ADVICE.get(error.kind, '')}")
    if isinstance(error, SessionError):
        return f"⚠️ 会话数据异常：{shorten(hide_folders(str(error), [sessions_dir]), 200)}"
    if isinstance(error, OSError):   # run_demo 之外（例如建访客的空间目录时）：算在会话根目录头上
        return explain_error(FolderUnavailable(SESSIONS_FOLDER, sessions_dir, os_error_reason(error)), sessions_dir)
    return f"⚠️ 演示运行失败（{type(error).__name__}），详细信息已写入服务器日志。"


def run_demo_safely(sessions_dir: str, **options) -> tuple[DemoRun | None, str | None]:
    """run_demo 的页面版：成功返回 (run, None)，失败返回 (None, 中文提示)，从不把异常抛给界面。"""
    try:
        return run_demo(sessions_dir, **options), None
    except Exception as error:  # 页面上只给一句话，完整堆栈留在服务器日志里
        log.exception("s11 demo run failed for %s", sessions_dir)
        return None, explain_error(error, sessions_dir)


# ---------------------------------------------------------------- 启动检查

def first_non_folder(folder: str) -> str | None:
    """从 folder 往上找第一个已存在的路径：是文件夹返回 None，否则返回它（普通文件、失效的链接……）。"""
    current = os.path.abspath(folder)
    while not os.path.lexists(current):
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
    return None if os.path.isdir(current) else current


def check_sessions_dir(path: str | os.PathLike) -> str | None:
    """`python app.py` 启动时调用：会话目录能建、是文件夹、真的写得进去，返回 None；否则返回一句中文说明。

    “写得进去”靠真的建一个临时文件来验证：os.access 对 root 和只读挂载都会说谎。
    这句话给运行服务器的人看，所以写完整路径。
    """
    folder = os.path.abspath(os.fspath(path))
    advice = "请用 --sessions-dir 换一个可写的文件夹。"
    blocker = first_non_folder(folder)
    if blocker is not None:
        what = "一个普通文件" if os.path.isfile(blocker) else "一个不是文件夹的东西（例如失效的符号链接）"
        where = "它" if blocker == folder else f"路径上的 {blocker} "
        return f"会话目录 {folder} 不能用：{where}是{what}，不是文件夹。{advice}"
    try:
        os.makedirs(folder, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".write-check-", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        return f"会话目录 {folder} 不能用：{os_error_reason(error)}，写不进文件。{advice}"
    return None
