"""s11_cli.py — 本节唯一的命令行：会话仓库、导入真实记录、课后管理学生空间

    python code/s11_cli.py [--dir sessions] tree [ID]          会话树（整个仓库，或某个节点的子树）
                                            show ID            一个会话：祖先链 + 每条消息的开头
                                            export ID [--html] [--no-redact]   导出（默认 Markdown，已脱敏）
                                            export --tree ID --html|--md|--jsonl [--subtree|--path] [--mask TEXT…]
                                                   [--unmask HIT…] [--review] [--no-redact] [-o FILE]
                                                               整棵树一页（或子树、路径），JSONL 可再 import
                                            check              体检：坏文件、父节点缺失、残留的临时文件
                                            compare A B        对比同一棵树上的两个节点（共同祖先、各自的后续）
                                            converge CHOSEN OTHER… --decision TEXT [--carry ID:K …]
                                                               收敛：在 CHOSEN 下新建记下决定的节点
                                            label ID K [TEXT]  给第 K 条消息加标签（不给 TEXT = 去掉）
                                            import PATH…       导入 Claude Code / Pi / Codex / Gemini 的记录（文件或文件夹）
                                            import --agent-folders [--limit N]   导入本机 Agent 文件夹里最新的会话
                                            agents [--folder DIR] [--limit N]   列出本机 Agent 文件夹里的会话
                                            keep [--home DIR] [--list]   保留 Agent 快要删掉的会话（打印一行总结）
                                            empty-trash        清空回收站
                                            history [ID] [--limit N]   操作日志（新的在前），或一个会话的每一版
                                            undo / redo        撤销 / 重做最近一个操作（什么都不丢）
                                            revert ID REVISION 回到某一版（存成新的一版）
                                            demo               跑一遍书里的演示（同 python code/s11_session.py）
    python code/s11_cli.py --dir gradio_sessions class list | show SPACE | remove-idle --hours H | empty-trash
                                                   | archive [--keep-days D] | archives | restore-archive NAME

一条规则管所有子命令：
  * 会话里来的每一段文字（标题、ID、文件名、消息、报告）都经 s11_text.printable() 再打印：
    换行伪造不了树的行，终端转义序列清不了屏；
  * 出错时打印一句中文到 stderr，不出 Traceback：输入不对（参数、ID、文件、目录）退出码 2，
    程序自己的缺陷退出码 3，Ctrl+C 130；check 发现问题时退出码 1。

关键洞察：库模块只返回数据、只抛带中文说明的错误；打印和退出码只在这里——所以每个命令说话的方式都一样。
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
import unicodedata
from typing import Callable, Dict, List, Optional

import s11_converge
import s11_history
import s11_import
from s11_export import message_marks
from s11_format import SessionError, SessionNotFound
from s11_session import SessionStore, demo_tree_branching
from s11_text import describe_os_error, human_size, printable
from s11_tree import content_text
from s11_workbench.spaces import SpaceError, Spaces, count_sessions, last_activity

log = logging.getLogger(__name__)

DEFAULT_STORE_DIR = "sessions"
DEFAULT_CLASS_DIR = "gradio_sessions"
EXIT_PROBLEMS, EXIT_BAD_INPUT, EXIT_BUG, EXIT_INTERRUPTED = 1, 2, 3, 130


def say(text: str = "") -> None:
    """标准输出：多行的文字保留换行，其余一律 printable()。"""
    print(printable(text, keep_newlines=True))


def complain(text: str) -> None:
    print(f"错误：{printable(text, keep_newlines=True)}", file=sys.stderr)


# ── 会话仓库 ──────────────────────────────────────────────────────────────────────────────
def store_of(args) -> SessionStore:
    return SessionStore(args.dir or DEFAULT_STORE_DIR)


def cmd_demo(args) -> int:
    store = store_of(args)
    result = demo_tree_branching(store)
    say(f"会话文件已写入 {store.storage_dir}/\n")
    say(store.render_tree(result["main_id"]) + "\n")
    say(result["export_md"])
    return 0


def cmd_tree(args) -> int:
    say(store_of(args).render_tree(args.session_id))
    return 0


def cmd_show(args) -> int:
    store = store_of(args)
    node = store.load(args.session_id)
    if node is None:
        raise SessionNotFound(f"未找到会话: {args.session_id}")
    say(" → ".join(f"{printable(s['title'])} [{s['session_id']}]" for s in store.lineage(args.session_id)))
    for number, message in enumerate(node.messages, 1):
        marks = "".join(f" [{text}]" for kind, text in message_marks(message)
                        if kind in ("label", "converge", "origin"))   # 🏷️ 标签、🔀 收敛、↪️ 带自哪里
        say(f"{number:>4}. {printable(message['role'])}{printable(marks)}: "
            f"{printable(content_text(message.get('content'))[:100])}")
    return 0


def cmd_export(args) -> int:
    if args.tree:
        return cmd_export_tree(args)
    if not args.session_id:
        raise BadArguments("缺少参数：ID（或 --tree ID）（用 -h 查看用法）")
    if args.jsonl or args.md or args.mask or args.unmask or args.review or args.subtree or args.path or args.out:
        raise BadArguments("--md、--jsonl、--mask、--unmask、--review、--subtree、--path、-o 只用于 --tree ID（用 -h 查看用法）")
    store = store_of(args)
    if store.load(args.session_id) is None:
        raise SessionNotFound(f"未找到会话: {args.session_id}")
    export = store.export_html if args.html else store.export_markdown
    say(export(args.session_id, redact=not args.no_redact))
    return 0


def cmd_export_tree(args) -> int:
    """export --tree ID：整棵树（--subtree 子树、--path 路径）写成一页 HTML、一份 Markdown 或可再导入的 JSONL。
    --review 只列出复核表（每处命中的编号、规则、上下文、位置），不导出；--unmask 编号 揭开误报，--mask 加字符串。"""
    import s11_tree_export
    from s11_import import tree_jsonl
    from s11_review import AddedMaskError, manifest_lines, where_text

    if args.session_id:
        raise BadArguments(f"--tree 已经给了节点，多余的参数：{args.session_id}（用 -h 查看用法）")
    kinds = [name for name, on in (("html", args.html), ("md", args.md), ("jsonl", args.jsonl)) if on]
    if len(kinds) > 1 or (not kinds and not args.review):
        raise BadArguments("--tree 要选一种格式：--html、--md 或 --jsonl（或 --review 只看复核表）")
    if args.subtree and args.path:
        raise BadArguments("--subtree 和 --path 只能选一个")
    if args.no_redact and (args.mask or args.unmask or args.review):
        raise BadArguments("--no-redact 不能和 --mask、--unmask、--review 一起用")
    scope = "subtree" if args.subtree else "path" if args.path else "tree"
    store = store_of(args)
    try:
        gathered = s11_tree_export.gather(store, args.tree, scope)
        review = None if args.no_redact else s11_tree_export.review_of(gathered, args.mask or ())
    except AddedMaskError as exc:
        raise BadArguments(str(exc)) from None
    if review is not None:
        unknown = sorted(set(args.unmask or ()) - {hit.hit_id for hit in review.hits})
        if unknown:
            raise BadArguments(f"复核表里没有这些编号：{'、'.join(unknown)}（用 --review 查看）")
    if args.review:
        for hit in review.hits:
            say(f"{hit.hit_id}  [{hit.rule}]  {where_text(hit)}  {printable(hit.context)}")
        counts = "、".join(f"{label} ×{count}" for label, count in review.counts.items())
        say(f"共 {len(review.hits)} 处命中" + (f"：{counts}" if counts else "") +
            "；导出时全部遮住，用 --unmask 编号 揭开误报，--mask 文字 再加")
        return 0
    prepared = s11_tree_export.prepare(store, args.tree, scope, redact=not args.no_redact, added=args.mask or (),
                                       unmask=args.unmask or (), gathered=gathered, review=review)
    writer = {"html": s11_tree_export.html_chunks, "md": s11_tree_export.markdown_chunks,
              "jsonl": tree_jsonl.jsonl_lines}[kinds[0]]
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:   # 原样写：文件里的字节就是导出的字节
            for chunk in writer(prepared):
                handle.write(chunk)
        for line in manifest_lines(prepared.manifest):
            print(printable(line), file=sys.stderr)
        print(f"已写入 {printable(args.out)}（{len(gathered.nodes)} 个节点）", file=sys.stderr)
    else:
        say("".join(writer(prepared)))
    return 0


def cmd_check(args) -> int:
    problems = store_of(args).check()
    for problem in problems:
        say(f"[{problem.kind}] {printable(problem.path)}\n    {printable(problem.detail)}")
    say(f"共 {len(problems)} 个问题" if problems else "✅ 仓库完好，没有发现问题")
    return EXIT_PROBLEMS if problems else 0


COMPARE_SHOWN = 20   # compare 每边最多列出几条消息


def cmd_compare(args) -> int:
    result = store_of(args).compare(args.a, args.b)
    say(f"⚖️ A：{printable(result['title_a'])} [{result['a_id']}]  ·  B：{printable(result['title_b'])} "
        f"[{result['b_id']}]")
    say(result["note"])
    if result["ancestor"]:
        say(f"最近的共同祖先 [{result['ancestor']}]，前 {result['common']} 条相同")
    for side, key in (("A", "only_a"), ("B", "only_b")):
        messages = result[key]
        say(f"\n{side} 之后 {len(messages)} 条（工具调用 {s11_converge.tool_call_count(messages)} 次）：")
        for number, message in enumerate(messages[:COMPARE_SHOWN], result["common"] + 1):
            say(f"{number:>4}. {printable(message.get('role', ''))}: "
                f"{printable(content_text(message.get('content'))[:100])}")
        if len(messages) > COMPARE_SHOWN:
            say(f"   …还有 {len(messages) - COMPARE_SHOWN} 条（用 show 看全部）")
    diff = result["workspace_diff"]
    say("\n工作区：" + ("至少有一边没有记录代码快照，无从比较" if diff is None else "两边的代码快照一致" if not diff
                     else "\n  " + "\n  ".join(printable(line) for line in diff)))
    return 0


def cmd_converge(args) -> int:
    store = store_of(args)
    node = store.converge(args.chosen, args.others, args.decision, carry=args.carry or (), title=args.title)
    carried = sum(1 for message in node.messages if "origin" in message)
    say(f"🔀 已收敛：新节点 [{node.session_id}]（{len(node.messages)} 条）接在 [{node.parent_id}] 之后，"
        f"收敛了 {' '.join(f'[{sid}]' for sid in node.converged_from)}，带过来 {carried} 条消息")
    say(store.render_tree(store.lineage(node.session_id)[0]["session_id"]))
    return 0


def cmd_label(args) -> int:
    node = store_of(args).label(args.session_id, args.number, args.text or "")
    shown = f"「{printable(args.text.strip())}」" if (args.text or "").strip() else "（已去掉）"
    say(f"🏷️ 会话 [{node.session_id}] 第 {args.number} 条的标签：{shown}")
    return 0


def cmd_import(args) -> int:
    """每个文件或文件夹：打印导入后的树和报告；有文件失败时退出码 2，成功导入的照样留在仓库里。

    文件夹用 import_folder：同一个 Claude Code 项目里续接 / 分叉同一段历史的文件合成一棵树。
    --agent-folders：本机各个 Agent 文件夹里最新的 --limit 个会话（见 agents 子命令）。"""
    store = store_of(args)
    paths = list(args.paths)
    if args.agent_folders:
        listing = s11_import.list_agent_sessions(args.home, limit=args.limit)
        paths += [session.path for session in listing.sessions]
        if not listing.sessions:
            say("本机的 Agent 文件夹里没有找到会话（用 agents 子命令看看找过哪些地方）")
    if not paths:
        raise BadArguments("缺少参数：PATH（或 --agent-folders）（用 -h 查看用法）")
    status = 0
    for path in paths:
        try:
            if os.path.isdir(path):
                folder = s11_import.import_folder(path, store)
                reports, problems = folder.reports, folder.problems
            else:
                reports, problems = [s11_import.import_file(path, store)], []
        except SessionError as exc:
            reports, problems = [], [str(exc)]
        except OSError as exc:
            reports, problems = [], [describe_os_error(exc)]
        for report in reports:
            for root in report.root_ids:
                say(store.render_tree(root))
            say(report.describe() + "\n")
        for problem in problems:
            complain(printable(problem))   # 一句一行：文件名里的换行也只显示成 \n
        status = EXIT_BAD_INPUT if problems or (not reports and os.path.isdir(path)) else status
    return status


def cmd_agents(args) -> int:
    """本机各个 Agent 文件夹里的会话（或 --folder 指定的文件夹）：最新的在前，最多 --limit 个；只读，不导入。"""
    listing = (s11_import.list_folder_sessions(args.folder, limit=args.limit) if args.folder
               else s11_import.list_agent_sessions(args.home, limit=args.limit))
    if not args.folder:
        for kind, root in listing.roots:
            state = "有" if os.path.isdir(root) else "没有"
            say(f"{s11_import.FORMAT_NAMES.get(kind, kind)}：{printable(root)}（{state}）")
        say()
    if not listing.sessions:
        say("没有找到会话")
        return 0
    widths = [4, 12, 24, 40, 10, 18]
    say(columns(["#", "Agent", "项目", "标题", "大小", "最后修改"], widths, left=4))
    for number, session in enumerate(listing.sessions, 1):
        say(columns([str(number), session.agent, _clip(session.project, 24), _clip(session.title, 40),
                     human_size(session.size), when(session.modified)], widths, left=4))
        say(f"     {printable(session.path)}")
    more = "（还有更早的，用 --limit 多列一些）" if listing.truncated else ""
    say(f"共 {len(listing.sessions)} 个会话{more}；导入一个：python code/s11_cli.py import 路径")
    return 0


def cmd_keep(args) -> int:
    """Claude Code / Gemini CLI 快到保留期限的会话、Codex 压缩和归档的会话：全部导入仓库（再跑一次什么都不写），
    打印一行总结（给 cron 之类的定时任务）；--list 只列出来，不导入。有会话没能导入时退出码 1。"""
    if args.list:
        listing = s11_import.at_risk(args.home)
        for item in listing.sessions:
            say(f"{item.session.agent}：{printable(item.reason)}  {_clip(item.session.title, 40)}  "
                f"{printable(item.session.path)}")
        say(f"共 {len(listing.sessions)} 个快要被删掉的会话；保留它们：python code/s11_cli.py keep")
        return 0
    summary = s11_import.keep(args.home, store_of(args))
    say(summary.line())
    for path, reason in summary.failed:
        complain(f"{printable(path)}：{printable(reason)}")
    return EXIT_PROBLEMS if summary.failed else 0


def _clip(text: str, width: int) -> str:
    """按显示宽度截短（汉字占两格），放得进表格的一列。"""
    text = printable(text)
    while display_width(text) > width - 1 and text:
        text = text[:-1]
    return text


def cmd_empty_trash(args) -> int:
    say(f"🧹 回收站已清空：删除了 {store_of(args).empty_trash()} 个文件")
    return 0


# ── 📜 操作日志、每一版、撤销 / 重做（逻辑在 s11_journal、s11_history）─────────────────────────
def cmd_history(args) -> int:
    store = store_of(args)
    if args.session_id:
        for entry in store.history(args.session_id):
            count = "读不了" if entry["message_count"] is None else f"{entry['message_count']} 条"
            mark = ("  ← 现在" if entry["live"] else "  （在回收站里）" if entry["in_trash"] else
                    "  （同一 ID 早先的一版）" if entry["older_life"] else "")
            say(f"revision {entry['revision']:>4}  {entry['at']}  {count:>8}  {human_size(entry['bytes']):>9}{mark}")
        return 0
    if args.limit < 1:
        raise BadArguments(f"--limit {args.limit} 无效：应是正整数")
    rows, skipped = s11_history.timeline(store, args.limit)
    for why in skipped:
        complain(why)   # 被 kill -9 截断的最后一行：报告、跳过，其余照常
    for row in rows:
        say(f"#{row['n']:<5} {row['at']}  {row['text']}" + ("  （已撤销，可 redo）" if row["undone"] else ""))
    if not rows:
        say("操作日志是空的")
    return 0


def cmd_undo(args) -> int:
    say("↶ " + store_of(args).undo()["text"])
    return 0


def cmd_redo(args) -> int:
    say("↷ " + store_of(args).redo()["text"])
    return 0


def cmd_revert(args) -> int:
    node = store_of(args).revert(args.session_id, args.revision)
    say(f"📜 会话 [{node.session_id}] 回到了第 {args.revision} 版：存成了第 {node.revision} 版"
        f"（{len(node.messages)} 条消息；之前的每一版都还在，history {node.session_id} 可见）")
    return 0


# ── 课后：学生空间 ─────────────────────────────────────────────────────────────────────────
def spaces_of(args) -> Spaces:
    folder = args.dir or DEFAULT_CLASS_DIR
    if not os.path.isdir(folder):
        raise SpaceError(f"会话目录 {folder} 不存在（用 --dir 指定工作台的 --sessions-dir）")
    return Spaces(folder)


def display_width(text: str) -> int:
    """终端里的宽度：汉字、全角字符占两格。"""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def columns(cells: List[str], widths: List[int], left: int = 1) -> str:
    """按显示宽度对齐：前 left 列左对齐，其余右对齐。"""
    cells = [printable(cell) for cell in cells]
    return "".join(cell + " " * (width - display_width(cell)) if index < left else
                   " " * (width - display_width(cell)) + cell
                   for index, (cell, width) in enumerate(zip(cells, widths)))


def when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch)) if epoch else "—"


def cmd_class_list(args) -> int:
    spaces = spaces_of(args)
    rows = spaces.list_spaces(spaces.teacher_secret)
    if not rows:
        say("还没有任何学生空间")
        return 0
    widths = [18, 8, 12, 20]
    say(columns(["空间", "会话数", "大小", "最后活动"], widths))
    for row in rows:
        say(columns([row["space_id"], str(row["sessions"]), human_size(row["bytes"]), when(row["last_activity"])],
                    widths))
    say(f"共 {len(rows)} 个空间；书架上有 {count_sessions(spaces.shelf_dir)} 个会话")
    return 0


def cmd_class_show(args) -> int:
    spaces = spaces_of(args)
    space = spaces.view(spaces.teacher_secret, args.space_id)
    count, used = space.usage()
    say(f"空间 {space.space_id}：{count} 个会话，{human_size(used)}，最后活动 {when(last_activity(space.folder))}")
    say(space.store.render_tree())
    return 0


def cmd_class_remove_idle(args) -> int:
    if not args.hours >= 0:
        raise SpaceError(f"--hours {args.hours} 无效：应是不小于 0 的小时数")
    spaces = spaces_of(args)
    moved = spaces.remove_idle(args.hours * 3600)
    for space_id in moved:
        say(f"已移入回收站：{space_id}")
    say(f"共移走 {len(moved)} 个闲置超过 {args.hours:g} 小时的空间（在 {spaces.trash_dir}，"
        "确认无误后运行 class empty-trash 彻底删除）" if moved else f"没有闲置超过 {args.hours:g} 小时的空间")
    return 0


def cmd_class_empty_trash(args) -> int:
    removed = spaces_of(args).empty_trash()
    say(f"已彻底删除回收站里的 {removed} 个空间" if removed else "空间回收站是空的")
    return 0


def cmd_class_archive(args) -> int:
    """下课：全班的空间移进 archives/，保留 --keep-days 天（过期的归档在下一次归档或列出时删除）。"""
    if not 0 < args.keep_days <= 365:
        raise SpaceError(f"--keep-days {args.keep_days:g} 无效：应在 1–365 之间")
    info = spaces_of(args).archive_all(args.keep_days * 24 * 3600)
    say(f"🗄️ 已归档 {info['spaces']} 个空间：{info['name']}，保留到 {when(info['expires'])}"
        f"（放回：class restore-archive {info['name']}）")
    return 0


def cmd_class_archives(args) -> int:
    spaces = spaces_of(args)
    expired = spaces.purge_expired_archives()
    rows = spaces.archives()
    for name in expired:
        say(f"已删除过期的归档：{name}")
    if not rows:
        say("没有归档")
        return 0
    widths = [24, 8, 20, 20]
    say(columns(["归档", "空间数", "归档于", "保留到"], widths))
    for row in rows:
        say(columns([row["name"], str(row["spaces"]), when(row["created"]), when(row["expires"])], widths))
    return 0


def cmd_class_restore_archive(args) -> int:
    spaces = spaces_of(args)
    before = {row["name"]: row["spaces"] for row in spaces.archives()}
    restored = spaces.restore_archive(args.name)
    left = before.get(args.name, 0) - len(restored)
    say(f"♻️ 已放回 {len(restored)} 个空间" + (f"；{left} 个同名空间已在使用，留在归档里没动" if left > 0 else ""))
    return 0


COMMANDS: Dict[str, Callable[[argparse.Namespace], int]] = {
    "demo": cmd_demo, "tree": cmd_tree, "show": cmd_show, "export": cmd_export, "check": cmd_check,
    "compare": cmd_compare, "converge": cmd_converge, "label": cmd_label,
    "import": cmd_import, "agents": cmd_agents, "keep": cmd_keep, "empty-trash": cmd_empty_trash,
    "history": cmd_history, "undo": cmd_undo, "redo": cmd_redo, "revert": cmd_revert,   # 📜
    "class list": cmd_class_list, "class show": cmd_class_show, "class remove-idle": cmd_class_remove_idle,
    "class empty-trash": cmd_class_empty_trash, "class archive": cmd_class_archive,
    "class archives": cmd_class_archives, "class restore-archive": cmd_class_restore_archive,
}


# ── 参数：argparse，错误改说中文 ─────────────────────────────────────────────────────────────
class BadArguments(Exception):
    """命令行参数不对（由 ChineseParser.error 抛出，main 把它变成一句中文和退出码 2）。"""


_ARGPARSE_ERRORS = [   # argparse 自己的英文错误 → 中文（其余的原样附在后面）
    (re.compile(r"the following arguments are required: (.+)"), r"缺少参数：\1"),
    (re.compile(r"unrecognized arguments: (.+)"), r"不认识的参数：\1"),
    (re.compile(r"argument (\S+): invalid choice: (.+?) \(choose from (.+)\)"), r"\1 不认识 \2，可选：\3"),
    (re.compile(r"argument (\S+): invalid (\w+) value: (.+)"),
     lambda m: f"{m.group(1)} 的值 {m.group(3)} 不是{_TYPE_NAMES.get(m.group(2), m.group(2))}"),
    (re.compile(r"argument (\S+): expected one argument"), r"\1 后面要跟一个值"),
]


_TYPE_NAMES = {"float": "数字", "int": "整数"}
_HEADINGS = {"usage: ": "用法：", "options:": "选项：", "positional arguments:": "参数："}


class ChineseParser(argparse.ArgumentParser):
    def format_help(self) -> str:
        text = super().format_help()
        for english, chinese in _HEADINGS.items():
            text = text.replace(english, chinese)
        return text

    def format_usage(self) -> str:
        return super().format_usage().replace("usage: ", "用法：")

    def error(self, message: str):
        for pattern, chinese in _ARGPARSE_ERRORS:
            if pattern.fullmatch(message):
                message = pattern.sub(chinese, message)
                break
        raise BadArguments(f"{message}（用 -h 查看用法）")


def _subcommand(sub, name: str, help_text: str, command: str) -> argparse.ArgumentParser:
    parser = sub.add_parser(name, help=help_text, description=help_text, add_help=False)
    parser.add_argument("-h", "--help", action="help", help="显示这条子命令的用法")
    parser.set_defaults(command=command)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = ChineseParser(prog="python code/s11_cli.py", add_help=False,
                           description="8.11 会话持久化与多分支：仓库工具、导入真实记录、课后管理学生空间")
    parser.add_argument("-h", "--help", action="help", help="显示用法")
    parser.add_argument("--dir", help=f"会话目录（仓库命令默认 ./{DEFAULT_STORE_DIR}，class 命令默认 ./{DEFAULT_CLASS_DIR}）")
    sub = parser.add_subparsers(title="子命令", metavar="命令", parser_class=ChineseParser)
    _subcommand(sub, "demo", "运行主会话 → 双分支 → 恢复 → 导出", "demo")
    _subcommand(sub, "tree", "打印会话树", "tree").add_argument("session_id", nargs="?", metavar="ID")
    _subcommand(sub, "show", "打印一个会话的消息", "show").add_argument("session_id", metavar="ID")
    export = _subcommand(sub, "export", "导出一个会话（默认 Markdown，已脱敏），或用 --tree 导出整棵树", "export")
    export.add_argument("session_id", nargs="?", metavar="ID")
    export.add_argument("--tree", metavar="ID", help="导出 ID 所在的整棵树（配 --subtree / --path 缩小范围）")
    export.add_argument("--subtree", action="store_true", help="--tree：只导出以 ID 为根的子树")
    export.add_argument("--path", action="store_true", help="--tree：只导出根到 ID 的这条路径")
    export.add_argument("--html", action="store_true", help="导出单个离线 HTML 页面")
    export.add_argument("--md", action="store_true", help="--tree：导出 Markdown")
    export.add_argument("--jsonl", action="store_true", help="--tree：导出可再 import 的会话树 JSONL")
    export.add_argument("--mask", action="append", metavar="TEXT",
                        help="--tree：另外遮住这段文字（可重复；* 代表一段字母、数字或 _ . -）")
    export.add_argument("--unmask", action="append", metavar="HIT", help="--tree：揭开复核表里这个编号的命中（可重复）")
    export.add_argument("--review", action="store_true", help="--tree：只列出脱敏复核表，不导出")
    export.add_argument("-o", "--out", metavar="FILE", help="--tree：写进这个文件（默认打印）")
    export.add_argument("--no-redact", action="store_true", help="不脱敏（仅限自己查看）")
    _subcommand(sub, "check", "检查坏文件、读不了的条目、新版本文件、父节点缺失、残留临时文件", "check")
    compare = _subcommand(sub, "compare", "对比同一棵树上的两个节点：共同祖先、相同的前缀、各自的后续、工作区差异",
                          "compare")
    compare.add_argument("a", metavar="A")
    compare.add_argument("b", metavar="B")
    converge = _subcommand(sub, "converge", "收敛：在 CHOSEN 下新建一个节点，记下决定、收敛了哪些分支、带过来的消息",
                           "converge")
    converge.add_argument("chosen", metavar="CHOSEN", help="胜出的一支（新节点接在它后面）")
    converge.add_argument("others", nargs="+", metavar="OTHER", help="被收敛的分支（它们的文件不会被改）")
    converge.add_argument("--decision", required=True, metavar="TEXT", help="为什么这样选（作为一条 user 消息保存）")
    converge.add_argument("--carry", action="append", metavar="ID:K", help="把 OTHER 分支 ID 的第 K 条（1 起）带过来，可重复")
    converge.add_argument("--title", help="新节点的标题（默认“<CHOSEN 的标题> · 🔀 收敛”）")
    label = _subcommand(sub, "label", "给一条消息加标签（书签），不给 TEXT 就去掉标签", "label")
    label.add_argument("session_id", metavar="ID")
    label.add_argument("number", type=int, metavar="K", help="第几条消息（1 起，和 show 的编号一样）")
    label.add_argument("text", nargs="?", metavar="TEXT")
    importer = _subcommand(sub, "import", "导入 Claude Code / Pi / Codex CLI / Gemini CLI 的会话记录（文件或文件夹）",
                           "import")
    importer.add_argument("paths", nargs="*", metavar="PATH")
    importer.add_argument("--agent-folders", action="store_true",
                          help="导入本机各个 Agent 文件夹里最新的会话（--limit 个，见 agents）")
    importer.add_argument("--home", help="在这个家目录下找 Agent 文件夹（默认 ~）")
    importer.add_argument("--limit", type=int, default=20, help="--agent-folders 最多导入几个（默认 20）")
    agents = _subcommand(sub, "agents", "列出本机各个 Agent 文件夹里的会话（只读，不导入）", "agents")
    agents.add_argument("--home", help="在这个家目录下找（默认 ~；CLAUDE_CONFIG_DIR、PI_CODING_AGENT_DIR、"
                                       "CODEX_HOME、GEMINI_CLI_HOME 照样生效）")
    agents.add_argument("--folder", help="改为列出这个文件夹里的会话（任何一种 Agent 的）")
    agents.add_argument("--limit", type=int, default=50, help="最多列几个（默认 50，最新的在前）")
    keeper = _subcommand(sub, "keep", "保留 Agent 快要删掉的会话（Claude Code / Gemini CLI 快到保留期限的、"
                                      "Codex 压缩和归档的）：全部导入仓库，打印一行总结", "keep")
    keeper.add_argument("--home", help="在这个家目录下找 Agent 文件夹（默认 ~）")
    keeper.add_argument("--list", action="store_true", help="只列出快要被删掉的会话，不导入")
    _subcommand(sub, "empty-trash", "清空回收站（被删会话的副本全部真正删除）", "empty-trash")
    history = _subcommand(sub, "history", "操作日志（新的在前）；给了 ID 就列出这个会话的每一版", "history")   # 📜
    history.add_argument("session_id", nargs="?", metavar="ID")
    history.add_argument("--limit", type=int, default=20, help="最多列几条操作（默认 20）")
    _subcommand(sub, "undo", "撤销最近一个操作：新建、分叉进回收站，续写存成上一版，删除变恢复（什么都不丢）", "undo")
    _subcommand(sub, "redo", "重做最近一次撤销的操作", "redo")
    revert = _subcommand(sub, "revert", "回到某一版：把它存成新的一版（之前的每一版都还在）", "revert")
    revert.add_argument("session_id", metavar="ID")
    revert.add_argument("revision", type=int, metavar="REVISION", help="第几版（history ID 列出的 revision）")
    classroom = _subcommand(sub, "class", "课后管理学生空间（--dir 是工作台的 --sessions-dir）", "class")
    rooms = classroom.add_subparsers(title="class 的子命令", metavar="命令", parser_class=ChineseParser)
    _subcommand(rooms, "list", "所有空间：会话数、大小、最后活动", "class list")
    _subcommand(rooms, "show", "一个空间的会话树", "class show").add_argument("space_id", metavar="SPACE")
    idle = _subcommand(rooms, "remove-idle", "把闲置超过 N 小时的空间移进 spaces-trash/", "class remove-idle")
    idle.add_argument("--hours", type=float, required=True, help="闲置多少小时")
    _subcommand(rooms, "empty-trash", "彻底删除 spaces-trash/ 里的空间", "class empty-trash")
    archive = _subcommand(rooms, "archive", "下课：全班的空间移进 archives/，保留期内可以放回", "class archive")
    archive.add_argument("--keep-days", type=float, default=14, help="保留几天（默认 14，之后删除）")
    _subcommand(rooms, "archives", "列出归档（顺便删除过期的）", "class archives")
    _subcommand(rooms, "restore-archive", "把一份归档里的空间放回去", "class restore-archive").add_argument(
        "name", metavar="NAME")
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        command = getattr(args, "command", None)
        if command is None or command == "class":
            raise BadArguments("缺少子命令（用 -h 查看用法）")
        return COMMANDS[command](args)
    except BrokenPipeError:   # 读者自己关掉了管道（… | head）：安静地结束，不再往关掉的 stdout 里写
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except BadArguments as exc:
        message = str(exc)
    except SessionError as exc:
        message = str(exc)
    except OSError as exc:
        message = describe_os_error(exc)
    except KeyboardInterrupt:
        print("已中断", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:   # 最后一道防线：读者看到的是一句中文，不是 Traceback
        log.debug("命令行内部错误", exc_info=True)
        print(f"内部错误（{type(exc).__name__}）：这是程序的缺陷，请把命令和这句话报告给维护者", file=sys.stderr)
        return EXIT_BUG
    complain(message)
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
