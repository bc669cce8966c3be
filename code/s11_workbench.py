"""s11_workbench.py — 8.11 工作台的全部逻辑（不 import gradio，可单独测试）

    点击 🌿 ──> run_demo(sessions_dir)
                 │  SessionStore(sessions_dir) + demo_tree_branching()
                 │  主会话(5) ──fork──> 分支 A(7)
                 │            └─fork──> 分支 B(9, 📂 已恢复)
                 ├─> tree_markdown    mermaid 会话树 + 文字摘要
                 ├─> export_markdown  分支 B 的 Markdown 导出预览
                 ├─> files            本次写入的 3 个 JSON（路径、字节数、格式化内容）
                 └─> markdown_download / html_download   每次运行一个新的临时目录

Key insight: 每次点击都新建自己的 SessionStore 和自己的临时目录，模块里没有任何可变的全局状态，
所以一个班 50 个同学同时点击，各自只看到自己这次运行的会话树。

Scope: 不调用大模型；不清理 gradio_sessions/ 里的旧演示会话（那是学生要去翻看的“存档”）；
下载用的临时目录只保留 EXPORT_KEEP_SECONDS 秒。
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from s11_session import (
    ROLE_ICONS,
    SessionError,
    SessionNode,
    SessionStore,
    demo_code_drift,
    demo_tree_branching,
)

log = logging.getLogger(__name__)

# Gradio 在事件返回时就把下载文件复制进自己的缓存，所以我们的副本只需活过这一次点击；留 15 分钟足够宽裕。
EXPORT_KEEP_SECONDS = 15 * 60
EXPORT_ROOT_NAME = "s11_exports"
LABEL_MAX_CHARS = 28
ADDED_PREVIEW_CHARS = 24

# mermaid 的实体写法：标签里一旦出现这些字符就可能提前结束节点、开出新语句（如 `"]; click A call ...`）。
# 一次 translate 完成替换，`#` 本身也被转义，所以不会出现二次转义。
MERMAID_ENTITIES = MappingProxyType(str.maketrans({
    "#": "#35;", '"': "#quot;", "'": "#39;", "<": "#lt;", ">": "#gt;", "&": "#amp;",
    "[": "#91;", "]": "#93;", "(": "#40;", ")": "#41;", "{": "#123;", "}": "#125;",
    "|": "#124;", "`": "#96;", ";": "#59;", ":": "#58;", "\\": "#92;",
    "\n": " ", "\r": " ", "\t": " ",
}))


class WrittenFile(NamedTuple):
    path: str
    size_bytes: int
    pretty_json: str


@dataclass(frozen=True)
class DemoRun:
    ids: dict
    tree_markdown: str
    export_markdown: str
    files: list          # list[WrittenFile]，恰好是本次运行写下的 3 个会话文件
    markdown_download: str
    html_download: str | None  # store 还没有 export_html 时为 None
    elapsed_ms: int


# ---------------------------------------------------------------- 文本小工具

def shorten(text: str, limit: int) -> str:
    """'修复登录服务内存泄漏·分支', 6 -> '修复登录服…'（按字符截断，先把换行压成空格）"""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def mermaid_text(text: str, limit: int = LABEL_MAX_CHARS) -> str:
    """'a "b" <c>' -> 'a #quot;b#quot; #lt;c#gt;'：会话文字进入 mermaid 标签前必须经过这里。"""
    return shorten(text, limit).translate(MERMAID_ENTITIES)


def fenced(text: str, language: str = "") -> str:
    """用比正文里最长的反引号串还长的围栏包住 text，正文里的 ``` 不会提前结束代码块。"""
    longest, run = 0, 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def inline_code(text: str) -> str:
    """Markdown 行内代码；text 含反引号时换用更长的分隔符。"""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


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
    return f"{ROLE_ICONS.get(first.get('role'), '📄')} {shorten(first.get('content', ''), ADDED_PREVIEW_CHARS)}"


def mermaid_tree(nodes: list[SessionNode], names: dict[str, str], resumed_id: str | None = None) -> str:
    """nodes（父在前）-> `graph TD` 源码。mermaid 节点名用 n0/n1…，会话文字只出现在转义后的标签里。"""
    by_id = {node.session_id: node for node in nodes}
    alias = {node.session_id: f"n{index}" for index, node in enumerate(nodes)}
    # 默认 200px 就换行，会把“修复登录服务内存泄漏 · 分支”的最后一个字挤到下一行
    lines = ['%%{init: {"flowchart": {"wrappingWidth": 320}}}%%', "graph TD"]
    for node in nodes:
        name = names.get(node.session_id, "会话")
        resumed = " · 📂 已恢复" if node.session_id == resumed_id else ""
        label = (f"{mermaid_text(name)}{resumed}<br/>{mermaid_text(node.title)}"
                 f"<br/>💬 {len(node.messages)} 条消息<br/>🆔 {mermaid_text(node.session_id, 16)}")
        lines.append(f'    {alias[node.session_id]}["{label}"]')
    for node in nodes:
        parent = by_id.get(node.parent_id)
        if parent is not None:
            inherited = inherited_count(node, parent)
            added = len(node.messages) - inherited
            lines.append(f'    {alias[parent.session_id]} -->|"继承前 {inherited} 条 · 新增 {added} 条"| '
                         f"{alias[node.session_id]}")
    # 只改边框不改底色：底色交给 mermaid 主题，浅色、深色模式下文字都看得清
    lines.append("    classDef root stroke:#2563eb,stroke-width:2px")
    lines.append("    classDef branch stroke:#16a34a,stroke-width:2px")
    lines.append("    classDef resumed stroke:#d97706,stroke-width:4px")
    for node in nodes:
        style = "resumed" if node.session_id == resumed_id else ("root" if node.parent_id is None else "branch")
        lines.append(f"    class {alias[node.session_id]} {style}")
    return "\n".join(lines)


def text_summary(nodes: list[SessionNode], names: dict[str, str], resumed_id: str | None = None) -> str:
    """文字版会话树（放进 ```text 代码块，会话文字不会被当成 Markdown/HTML）。每行都很短，窄屏也不用横向滚动：

    🌱 主会话  id=5d38f60f4c00
    │     「修复登录服务内存泄漏」 · 5 条
    ├── 🌿 分支 A  id=4d67e2e6b66c
    │     「修复登录服务内存泄漏 · 分支」
    │     7 条 = 继承 5 + 新增 2（父 5d38f60f4c00）
    │     新增：🤖 方案 A：为 cache_store 增加…
    """
    by_id = {node.session_id: node for node in nodes}
    branches = [node for node in nodes if node.parent_id in by_id]
    lines = []
    for node in nodes:
        parent = by_id.get(node.parent_id)
        name = names.get(node.session_id, "会话") + (" 📂 已恢复" if node.session_id == resumed_id else "")
        title = f"「{shorten(node.title, 24)}」"
        if parent is None:
            lines += [f"{name}  id={node.session_id}", f"│     {title} · {len(node.messages)} 条"]
            continue
        inherited = inherited_count(node, parent)
        stem, indent = ("└── ", "      ") if node is branches[-1] else ("├── ", "│     ")
        lines += [f"{stem}{name}  id={node.session_id}",
                  f"{indent}{title}",
                  f"{indent}{len(node.messages)} 条 = 继承 {inherited} + 新增 {len(node.messages) - inherited}"
                  f"（父 {node.parent_id}）",
                  f"{indent}新增：{first_added_message(node, inherited)}"]
    return "\n".join(lines)


def tree_markdown(nodes: list[SessionNode], names: dict[str, str], resumed_id: str | None = None) -> str:
    return "\n\n".join([
        "#### 🌳 本次运行的会话树",
        fenced(mermaid_tree(nodes, names, resumed_id), "mermaid"),
        "**文字摘要**",
        fenced(text_summary(nodes, names, resumed_id), "text"),
    ])


# ---------------------------------------------------------------- 文件与导出

def written_file(path: str) -> WrittenFile:
    with open(path, encoding="utf-8") as handle:
        pretty = json.dumps(json.load(handle), ensure_ascii=False, indent=2)
    return WrittenFile(path, os.path.getsize(path), pretty)


def display_path(path: str) -> str:
    """在当前目录之下就显示相对路径（gradio_sessions/xxx.json），否则显示绝对路径。"""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # Windows：不在同一个盘符
        return path
    return path if relative.startswith("..") else relative


def files_markdown(files: list[WrittenFile]) -> str:
    """“本次写入的文件”折叠区的内容：每个文件一个小标题 + JSON 代码块。"""
    parts = [f"共 {len(files)} 个文件，每个文件是一个会话节点（`parent_id` 把它们连成树）。"]
    for file in files:
        parts.append(f"📄 **{inline_code(display_path(file.path))}** · {file.size_bytes:,} 字节")
        parts.append(fenced(file.pretty_json, "json"))
    return "\n\n".join(parts)


def prune_old_exports(export_root: str, keep_seconds: float) -> None:
    """删掉 export_root 下比 keep_seconds 更旧的 run-* 目录；并发的两次清理互不报错。"""
    now = time.time()
    try:
        entries = list(os.scandir(export_root))
    except FileNotFoundError:
        return
    for entry in entries:
        if not entry.name.startswith("run-"):
            continue
        try:
            too_old = now - entry.stat().st_mtime > keep_seconds
        except FileNotFoundError:  # 另一个线程刚删掉它
            continue
        if too_old:
            shutil.rmtree(entry.path, ignore_errors=True)


def write_exports(store: SessionStore, session_id: str, markdown: str,
                  export_root: str) -> tuple[str, str | None]:
    """把导出写进一个全新的 run-* 目录，返回 (.md 路径, .html 路径或 None)。"""
    os.makedirs(export_root, exist_ok=True)
    run_dir = tempfile.mkdtemp(prefix="run-", dir=export_root)
    try:
        markdown_path = os.path.join(run_dir, f"session-{session_id}.md")
        with open(markdown_path, "w", encoding="utf-8") as handle:
            handle.write(markdown)
        export_html = getattr(store, "export_html", None)  # 较新的 store 才有
        if export_html is None:
            return markdown_path, None
        html_path = os.path.join(run_dir, f"session-{session_id}.html")
        with open(html_path, "w", encoding="utf-8") as handle:
            handle.write(export_html(session_id, redact=True))
        return markdown_path, html_path
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)  # 失败时不留下半个导出目录
        raise


def default_export_root() -> str:
    return os.path.join(tempfile.gettempdir(), EXPORT_ROOT_NAME)


# ---------------------------------------------------------------- 一次完整运行

def run_demo(sessions_dir: str, *, export_root: str | None = None,
             keep_seconds: float = EXPORT_KEEP_SECONDS) -> DemoRun:
    """主会话 → 双分支 → 恢复 → 导出，跑一遍并把页面要显示的东西全部算好。失败时抛出原始异常。"""
    started = time.perf_counter()
    export_root = export_root or default_export_root()
    prune_old_exports(export_root, keep_seconds)

    store = SessionStore(sessions_dir)
    ids = demo_tree_branching(store)
    main_id, branch_a_id, branch_b_id = ids["main_id"], ids["branch_a_id"], ids["branch_b_id"]
    nodes = [store.load(session_id) for session_id in (main_id, branch_a_id, branch_b_id)]
    if any(node is None for node in nodes):
        raise SessionError(f"演示会话写入后读不回来：{sessions_dir}")
    names = {main_id: "🌱 主会话", branch_a_id: "🌿 分支 A", branch_b_id: "🌿 分支 B"}

    # demo 已按默认（脱敏）导出过分支 B；预览与 .md 下载复用这一份，不再重复扫描整个目录
    export_markdown = ids["export_md"]
    markdown_download, html_download = write_exports(store, branch_b_id, export_markdown, export_root)
    return DemoRun(
        ids={key: ids[key] for key in ("main_id", "branch_a_id", "branch_b_id")},
        tree_markdown=tree_markdown(nodes, names, resumed_id=branch_b_id),
        export_markdown=export_markdown,
        files=[written_file(store.path_of(node.session_id)) for node in nodes],
        markdown_download=markdown_download,
        html_download=html_download,
        elapsed_ms=round((time.perf_counter() - started) * 1000),
    )


def explain_error(error: BaseException, sessions_dir: str) -> str:
    """异常 -> 给同学看的一句中文提示（不含堆栈）。"""
    where = f"无法写入会话目录 {inline_code(str(sessions_dir))}"
    if isinstance(error, PermissionError):
        return f"⚠️ {where}：权限不足。请换一个可写的目录（`--sessions-dir`）。"
    if isinstance(error, (NotADirectoryError, FileExistsError)):
        return f"⚠️ {where}：路径上有一个同名的普通文件，不是文件夹。"
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return f"⚠️ {where}：磁盘空间不足。"
    if isinstance(error, OSError) and error.errno == errno.EROFS:
        return f"⚠️ {where}：这是一个只读文件系统。"
    if isinstance(error, OSError):
        return f"⚠️ {where}：{error.strerror or type(error).__name__}。"
    if isinstance(error, SessionError):
        return f"⚠️ 会话数据异常：{shorten(str(error), 200)}"
    return f"⚠️ 演示运行失败（{type(error).__name__}），详细信息已写入服务器日志。"


def run_demo_safely(sessions_dir: str, **options) -> tuple[DemoRun | None, str | None]:
    """run_demo 的页面版：成功返回 (run, None)，失败返回 (None, 中文提示)，从不把异常抛给界面。"""
    try:
        return run_demo(sessions_dir, **options), None
    except Exception as error:  # 页面上只给一句话，完整堆栈留在服务器日志里
        log.exception("s11 demo run failed for %s", sessions_dir)
        return None, explain_error(error, sessions_dir)


# ---------------------------------------------------------------- 第二个演示：会话 ≠ 代码

DRIFT_PLACEHOLDER = "👆 点击按钮：主会话对着一个临时工作区存档 → 分支 B 重构了代码 → 恢复分支 A 之前先对账。"


def drift_markdown(result: dict) -> str:
    """demo_code_drift 的结果 -> 页面上的说明：存档时记录了什么、恢复时发现了什么。"""
    saved = result["saved"] or {}
    recorded = ", ".join(sorted(saved.get("files", {}))) or "（无）"
    lines = [
        "#### 🔍 恢复分支 A 之前先对账",
        f"- 分支 A 存档时记录的代码状态：{saved.get('kind', '无')} 快照，文件摘要 {inline_code(recorded)}",
        "- 之后分支 B 按“弱引用方案”改写了 `cache_store.py`，还新增了一个测试文件。",
        "- 现在恢复分支 A，`SessionStore.resume()` 先把快照与工作区对比：",
        "",
    ]
    if result["drift"]:
        lines += ["⚠️ **代码已经变了**：分支 A 的推理基于旧代码，继续之前先核对这些变化——", "",
                  fenced("\n".join(result["drift"]), "text")]
    else:
        lines.append("✅ 代码与存档时一致，可以放心续跑。")
    return "\n".join(lines)


def run_drift_demo_safely() -> str:
    """在一次性的临时目录里跑完“会话 ≠ 代码”演示并删掉它；失败时返回一句中文提示。"""
    base = tempfile.mkdtemp(prefix="s11_drift_")
    try:
        return drift_markdown(demo_code_drift(base))
    except Exception as error:
        log.exception("s11 drift demo failed")
        return f"⚠️ 对账演示运行失败（{type(error).__name__}），详细信息已写入服务器日志。"
    finally:
        shutil.rmtree(base, ignore_errors=True)
