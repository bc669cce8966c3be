"""The 8.11 workbench logic, without gradio: what one click writes, draws, annotates and offers for download,
what a failure says, and the start-up check of the sessions folder."""

from __future__ import annotations

import ast
import errno
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from s11_session import SessionError, SessionNode, SessionStore
from s11_text import os_error_reason
from s11_workbench import demo as workbench
from s11_workbench import downloads, markdown

CODE_DIR = Path(__file__).resolve().parents[2] / "code"
HOSTILE_TITLES = [
    '"]; click A call alert(1) <script>',
    "x\nclick n0 call alert(1)\n%%{init: {}}%%",
    "`` ` ``` ]] [[ (( )) {{ }} | ; : # & \\ '",
    "<img src=x onerror=alert(1)>",
]
# Every line the generator may emit; anything else means a session title escaped its label.
ALLOWED_LINE = re.compile(
    r'^(%%\{init: \{"flowchart": \{("\w+": \d+(, )?)+\}\}\}%%'
    r'|graph TD'
    r'|    n\d+\["[^"\n]*"\]'
    r'|    n\d+ -->\|"[^"\n]*"\| n\d+'
    r'|    classDef \w+ [\w:#,-]+'
    r'|    class n\d+ \w+)$'
)
FIVE_ABILITIES = ("存档", "读档", "分叉", "恢复", "导出")


@pytest.fixture
def export_root(tmp_path) -> Path:
    return tmp_path / "exports"


@pytest.fixture
def demo_run(tmp_path, export_root):
    return workbench.run_demo(str(tmp_path / "sessions"), export_root=str(export_root))


def json_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def hostile_nodes(title: str) -> tuple[list[SessionNode], dict[str, str]]:
    root = SessionNode(session_id="root", title=title, messages=[{"role": "user", "content": title}])
    child = SessionNode(session_id="child", title=title, parent_id="root", fork_point=1,
                        messages=root.messages + [{"role": "assistant", "content": title}])
    return [root, child], {"root": title, "child": title}


def fenced_block(markdown: str, language: str) -> str:
    return re.search(rf"```{language}\n(.*?)\n```", markdown, re.S).group(1)


def everything_the_page_shows(run) -> str:
    return "\n".join([run.tree_markdown, run.preview_markdown, *workbench.files_markdown(run.files)])


# ── no gradio ─────────────────────────────────────────────────────────────────────────────────────
LOGIC_MODULES = ["demo", "downloads", "markdown", "explorer", "lab", "spaces", "upload_guard", "host_guard", "shown",
                 "gradio_fixes"]


def test_workbench_imports_without_gradio():
    probe = (f"import sys; import {', '.join('s11_workbench.' + name for name in LOGIC_MODULES)}; "
             "print('gradio' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(CODE_DIR)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_only_the_tab_modules_import_gradio():
    """The layout rule of code/: gradio (~5 s to import) is imported by *_tab modules and app.py, nowhere else
    (and, inside its functions, by gradio_fixes.py: the one module about gradio's own internals)."""
    importers = set()
    for path in sorted(CODE_DIR.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] == "gradio" for name in names):
                importers.add(path.relative_to(CODE_DIR).as_posix())
    assert "s11_workbench/demo_tab.py" in importers   # the scan does see an import of gradio
    assert [path for path in sorted(importers) if not path.endswith("_tab.py")] == ["s11_workbench/gradio_fixes.py"]


# ── what one click writes ─────────────────────────────────────────────────────────────────────────
def test_one_run_writes_exactly_three_session_files(demo_run, tmp_path):
    on_disk = json_files(tmp_path / "sessions")
    assert len(on_disk) == 3
    assert sorted(Path(file.path).resolve() for file in demo_run.files) == [p.resolve() for p in on_disk]


def test_main_and_branches_hold_5_7_9_messages(demo_run, tmp_path):
    store = SessionStore(str(tmp_path / "sessions"))
    counts = {key: len(store.load(demo_run.ids[key]).messages) for key in ("main_id", "branch_a_id", "branch_b_id")}
    assert counts == {"main_id": 5, "branch_a_id": 7, "branch_b_id": 9}
    for key in ("branch_a_id", "branch_b_id"):
        assert store.load(demo_run.ids[key]).parent_id == demo_run.ids["main_id"]


def test_every_save_is_recorded_so_the_page_knows_what_the_resume_added(tmp_path):
    store = workbench.RecordingStore(str(tmp_path / "sessions"))
    ids = workbench.demo_tree_branching(store)
    history = workbench.save_history(store.saves)
    assert history[ids["main_id"]] == ((1, 2), (2, 5))       # created, then saved again mid-way
    assert history[ids["branch_a_id"]] == ((1, 7),)           # the fork's only save
    assert history[ids["branch_b_id"]] == ((1, 7), (2, 9))   # forked, then resumed and saved again
    assert workbench.resumed_range(history[ids["branch_b_id"]]) == (8, 9)
    assert workbench.resumed_range(history[ids["branch_a_id"]]) is None


# ── the three session files ───────────────────────────────────────────────────────────────────────
def test_each_file_card_shows_the_json_that_is_on_disk(demo_run):
    cards = workbench.files_markdown(demo_run.files)
    assert len(cards) == 3
    for file, card in zip(demo_run.files, cards):
        assert file.size_bytes == os.path.getsize(file.path) > 0
        with open(file.path, encoding="utf-8") as handle:
            on_disk = json.load(handle)
        assert json.loads(fenced_block(card, "json")) == on_disk
        assert f"{file.size_bytes:,} 字节" in card
        assert "修复登录服务内存泄漏" in card  # ensure_ascii=False: the Chinese stays readable
    assert [card.splitlines()[0] for card in cards] == [
        "#### ① 🌱 主会话", "#### ② 🌿 分支 A", "#### ③ 🌿 分支 B · 📂 已恢复"]


def test_branch_b_card_points_at_the_fields_that_changed_when_it_was_saved_again(demo_run):
    branch_b = workbench.files_markdown(demo_run.files)[2]
    assert "本次存档 2 次" in branch_b
    assert "| `revision` | 1 | **2** |" in branch_b
    assert "| `messages` | 7 条 | **9 条**（新增第 8–9 条） |" in branch_b
    on_disk = json.loads(fenced_block(branch_b, "json"))
    assert on_disk["revision"] == 2 and len(on_disk["messages"]) == 9


def test_a_file_saved_once_has_no_change_table(demo_run):
    branch_a = workbench.files_markdown(demo_run.files)[1]
    assert "本次存档 1 次" in branch_a and "再次存档" not in branch_a


def test_field_notes_explain_every_field_the_chapter_does_not_have(demo_run):
    notes = workbench.field_notes_markdown()
    for field in ("version", "revision", "fork_point", "workspace", "created_ns", "source"):
        assert re.search(rf"^- `{field}`：\S", notes, re.M), field
    # every top-level key in the files is either the chapter's own or explained
    chapter_keys = {"session_id", "title", "parent_id", "messages", "created_at"}
    explained = {field for field, _ in workbench.FIELD_NOTES}
    for file in demo_run.files:
        assert set(json.loads(file.pretty_json)) <= chapter_keys | explained


def test_the_page_shows_file_names_relative_to_the_sessions_folder_never_server_paths(demo_run, tmp_path):
    for file in demo_run.files:
        assert file.shown_path == f"sessions/{Path(file.path).name}"
    shown = everything_the_page_shows(demo_run)
    assert str(tmp_path) not in shown and os.path.realpath(tmp_path) not in shown


def test_a_run_inside_a_visitors_space_shows_paths_from_the_root_sessions_folder(tmp_path, export_root):
    root = tmp_path / "gradio_sessions"
    space = root / "spaces" / "4f00aa"
    run = workbench.run_demo(str(space), export_root=str(export_root), shown_from=str(root))
    for file in run.files:
        assert file.shown_path == f"gradio_sessions/spaces/4f00aa/{Path(file.path).name}"
    assert str(tmp_path) not in everything_the_page_shows(run)


def test_an_os_error_outside_the_run_is_put_on_the_sessions_folder_in_chinese(tmp_path):
    error = FileExistsError(errno.EEXIST, "File exists", str(tmp_path / "gradio_sessions" / "spaces" / "4f"))
    message = workbench.explain_error(error, str(tmp_path / "gradio_sessions"))
    assert message.startswith("⚠️ 无法写入会话目录 `gradio_sessions`：路径上已有一个同名的普通文件")
    assert "File exists" not in message and str(tmp_path) not in message


# ── the export preview, grouped by where each message came from ───────────────────────────────────
def test_preview_is_the_export_of_resumed_branch_b(demo_run):
    assert "会话导出" in demo_run.export_markdown
    assert "方案 B" in demo_run.export_markdown
    assert demo_run.ids["branch_b_id"] in demo_run.export_markdown


def test_preview_groups_branch_b_into_inherited_fork_and_resumed_parts(demo_run):
    lines = demo_run.preview_markdown.splitlines()
    group_lines = [index for index, line in enumerate(lines) if line.startswith("## ")]
    assert len(group_lines) == 3
    inherited, forked, resumed = (lines[index] for index in group_lines)
    assert "第 1–5 条" in inherited and "继承" in inherited and "fork_point" in inherited
    assert "第 6–7 条" in forked and "分叉" in forked
    assert "第 8–9 条" in resumed and "恢复" in resumed and "1 → 2" in resumed
    # each group heading sits right before the first message of its group
    for index, first_message in zip(group_lines, (1, 6, 8)):
        following = next(line for line in lines[index + 1:] if line.strip())
        assert following.startswith(f"### {first_message}. ")


def test_the_download_stays_in_the_chapters_format_only_the_preview_is_annotated(demo_run):
    download = Path(demo_run.markdown_download).read_text(encoding="utf-8")
    assert download == demo_run.export_markdown
    assert not re.search(r"^## ", download, re.M)
    # removing the page's own lines (the note and the three group headings) gives back the download exactly
    page_only = re.compile(r"^(> ℹ️ |## [🟦🟩🟧] )")
    lines, kept = demo_run.preview_markdown.split("\n"), []
    for index, line in enumerate(lines):
        added_blank = line == "" and index > 0 and page_only.match(lines[index - 1])
        if not page_only.match(line) and not added_blank:
            kept.append(line)
    assert "\n".join(kept) == download


def test_a_fake_heading_inside_a_fence_does_not_move_a_group():
    export = "\n".join(["### 1. 👤 `user`", "", "````", "### 2. fake", "````", "", "### 2. 🤖 `assistant`", "", "ok"])
    annotated = workbench.annotate_export(export, [(2, "## 🟩 group")])
    lines = annotated.split("\n")
    assert lines.index("## 🟩 group") == lines.index("### 2. 🤖 `assistant`") - 2


def test_html_download_is_a_page_beside_the_markdown(demo_run):
    page = Path(demo_run.html_download).read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html") and "方案 B" in page
    assert Path(demo_run.html_download).parent == Path(demo_run.markdown_download).parent


# ── the session tree and the five steps ───────────────────────────────────────────────────────────
def test_tree_diagram_has_three_nodes_two_edges_and_the_resumed_marker(demo_run):
    source = fenced_block(demo_run.tree_markdown, "mermaid")
    node_lines = [line for line in source.splitlines() if re.match(r"    n\d+\[", line)]
    assert len(node_lines) == 3
    assert "主会话" in node_lines[0] and "5 条消息" in node_lines[0]
    assert "分支 A" in node_lines[1] and "7 条消息" in node_lines[1] and "已恢复" not in node_lines[1]
    assert "分支 B" in node_lines[2] and "9 条消息" in node_lines[2] and "📂 已恢复" in node_lines[2]
    assert '    n0 -->|"继承 5 · 新增 2"| n1' in source
    assert '    n0 -->|"继承 5 · 新增 4"| n2' in source
    for short_id in demo_run.ids.values():
        assert short_id in source


def test_text_summary_comes_first_and_lists_ids_parents_counts_and_what_each_branch_added(demo_run):
    assert demo_run.tree_markdown.index("```text") < demo_run.tree_markdown.index("```mermaid")
    summary = fenced_block(demo_run.tree_markdown, "text")
    assert f"id={demo_run.ids['main_id']}" in summary
    assert "= 继承 5 + 新增 2" in summary and "= 继承 5 + 新增 4" in summary
    assert summary.count(f"parent_id={demo_run.ids['main_id']}") == 2
    assert "方案 A" in summary and "方案 B" in summary and "📂 已恢复" in summary


def test_text_summary_lines_are_short_enough_for_a_phone(demo_run):
    def columns(line: str) -> int:   # CJK and emoji take two columns in a monospace font
        return sum(2 if ord(char) > 0x2E7F else 1 for char in line)
    # at 390 px the summary's box holds about 37 columns of the page's 12 px monospace font
    summary = fenced_block(demo_run.tree_markdown, "text")
    assert max(columns(line) for line in summary.splitlines()) <= 34


def test_the_steps_name_all_five_abilities_with_the_recorded_numbers(demo_run):
    steps = demo_run.tree_markdown.split("#### 🧭", 1)[1]
    for number, ability in enumerate(FIVE_ABILITIES, 1):
        assert re.search(rf"^{number}\. \S+ \*\*{ability}\*\*：", steps, re.M), ability
    assert "追加第 8–9 条后再存档：`revision` 1 → 2" in steps


def test_block_content_is_shown_as_text_not_as_a_python_repr():
    blocks = [{"type": "text", "text": "先看日志"}, {"type": "tool_use", "id": "t1", "name": "Bash",
                                                    "input": {"command": "ls"}}]
    root = SessionNode(session_id="root", title="t", messages=[{"role": "user", "content": "hi"}])
    child = SessionNode(session_id="kid", title="t", parent_id="root", fork_point=1,
                        messages=root.messages + [{"role": "assistant", "content": blocks}])
    summary = workbench.text_summary([root, child], {})
    assert "先看日志 🔧 Bash" in summary
    assert "{'type'" not in summary and "[{" not in summary
    assert workbench.message_text({"content": [{"type": "thinking", "thinking": "想一想"}]}) == "💭 想一想"


@pytest.mark.parametrize("title", HOSTILE_TITLES)
def test_hostile_session_text_stays_inside_its_mermaid_label(title):
    nodes, names = hostile_nodes(title)
    source = workbench.mermaid_tree(nodes, names, resumed_id="child")
    for line in source.splitlines():
        assert ALLOWED_LINE.match(line), f"unexpected mermaid line: {line!r}"
    assert "<script" not in source and "<img" not in source
    assert not any(line.lstrip().startswith("click") for line in source.splitlines())


@pytest.mark.parametrize("raw, escaped", [
    ('say "hi"', "say #quot;hi#quot;"),
    ("a<b>&c", "a#lt;b#gt;#amp;c"),
    ("x]; y", "x#93;#59; y"),
    ("#quot;", "#35;quot#59;"),          # text that already looks like an entity is escaped too, never turned back into a quote
    ("line1\nline2", "line1 line2"),
    ("`code`", "#96;code#96;"),
    ("会话 🌿", "会话 🌿"),
])
def test_mermaid_text_uses_entity_codes(raw, escaped):
    assert markdown.mermaid_text(raw) == escaped


def test_long_labels_are_shortened():
    assert markdown.mermaid_text("长" * 100) == "长" * (markdown.LABEL_MAX_CHARS - 1) + "…"


@pytest.mark.parametrize("body", ["plain", "has ``` inside", "````four````", ""])
def test_fence_is_longer_than_any_backtick_run_inside(body):
    block = workbench.fenced(body, "text")
    fence = block.split("\n", 1)[0].removesuffix("text")
    assert block.endswith("\n" + fence)
    assert fence not in body


# ── on failure: one Chinese sentence naming the folder, nothing written ───────────────────────────
def test_sessions_dir_under_a_regular_file_gives_chinese_message_and_writes_nothing(tmp_path, export_root):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("我是文件", encoding="utf-8")
    run, message = workbench.run_demo_safely(str(blocker / "sessions"), export_root=str(export_root))
    assert run is None
    assert message.startswith("⚠️ 无法写入会话目录 `sessions`") and "不是文件夹" in message
    assert "Traceback" not in message and str(tmp_path) not in message
    assert blocker.read_text(encoding="utf-8") == "我是文件"
    assert not export_root.exists() or not any(export_root.iterdir())


def test_permission_denied_on_the_sessions_folder_is_reported_in_chinese(tmp_path, export_root, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(workbench, "RecordingStore", refuse)
    run, message = workbench.run_demo_safely(str(tmp_path / "sessions"), export_root=str(export_root))
    assert run is None
    assert "无法写入会话目录" in message and "权限不足" in message
    assert "Permission denied" not in message
    assert not (tmp_path / "sessions").exists()


def test_a_full_download_disk_blames_the_download_folder_and_leaves_no_half_written_run(
        tmp_path, export_root, monkeypatch):
    real_write = downloads.write_text

    def full_disk(path, text):
        if path.endswith(".html"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(path, text)

    monkeypatch.setattr(downloads, "write_text", full_disk)
    run, message = workbench.run_demo_safely(str(tmp_path / "sessions"), export_root=str(export_root))
    assert run is None
    assert message.startswith("⚠️ 无法写入下载目录 `exports`") and "磁盘空间不足" in message
    assert "会话已经存好" in message and "No space" not in message
    assert list(export_root.iterdir()) == []
    assert len(json_files(tmp_path / "sessions")) == 3   # the sessions folder was fine


def test_a_download_folder_owned_by_someone_else_or_open_to_all_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    os.chmod(shared, 0o777)
    with pytest.raises(downloads.FolderUnavailable, match="下载目录 shared：别的账号也能读写它"):
        downloads.ensure_private_folder(str(shared))
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    with pytest.raises(downloads.FolderUnavailable, match="不是一个真实的文件夹"):
        downloads.ensure_private_folder(str(link))


def test_the_default_download_folder_is_private_and_made_fresh_for_this_process(tmp_path):
    root = downloads.private_export_root()
    assert root == downloads.private_export_root()              # one per start, not one per click
    assert Path(root).parent == Path(tempfile.gettempdir())
    assert Path(root).name.startswith(downloads.EXPORT_ROOT_PREFIX) and Path(root).name != "s11_exports"
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    run = workbench.run_demo(str(tmp_path / "sessions"))       # the logic's own default, no export_root given
    assert Path(run.markdown_download).parent.parent == Path(root)
    probe = "from s11_workbench import downloads; print(downloads.private_export_root())"
    other = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(CODE_DIR)})
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() != root                         # another start gets another folder
    assert not os.path.exists(other.stdout.strip())             # and removes it when it exits


@pytest.mark.parametrize("code, chinese", [
    (errno.EACCES, "权限不足"), (errno.ENOSPC, "磁盘空间不足"), (errno.EROFS, "只读文件系统"),
    (errno.ENOTDIR, "不是文件夹"), (errno.ENAMETOOLONG, "路径太长"), (errno.EXDEV, "跨文件系统"),
    (errno.EDOM, f"errno {errno.EDOM}"),   # an errno the table does not know: its number, never the English text
])
def test_os_errors_read_in_chinese_without_the_english_strerror(code, chinese):
    error = OSError(code, os.strerror(code))
    text = workbench.explain_error(downloads.FolderUnavailable(workbench.SESSIONS_FOLDER, "/srv/x/sessions",
                                                               os_error_reason(error)), "/srv/x/sessions")
    assert chinese in text
    assert os.strerror(code) not in text and "/srv/x" not in text
    assert not re.search(r"[A-Za-z]{4,}", text.replace("sessions", "").replace("sessions-dir", "")
                         .replace("errno", ""))


def test_store_errors_are_shown_without_the_servers_folder(tmp_path, monkeypatch):
    sessions = tmp_path / "sessions"

    def corrupt(store):
        raise SessionError(f"{os.path.join(str(sessions), 'abc.json')}：顶层不是 JSON 对象")

    monkeypatch.setattr(workbench, "demo_tree_branching", corrupt)
    run, message = workbench.run_demo_safely(str(sessions), export_root=str(tmp_path / "x"))
    assert run is None and "会话数据异常" in message and "sessions/abc.json" in message
    assert str(tmp_path) not in message


def test_unexpected_errors_name_the_type_not_the_stack(tmp_path, monkeypatch):
    def explode(store):
        raise KeyError("boom")

    monkeypatch.setattr(workbench, "demo_tree_branching", explode)
    run, message = workbench.run_demo_safely(str(tmp_path / "sessions"), export_root=str(tmp_path / "x"))
    assert run is None and "KeyError" in message and "boom" not in message


# ── start-up check: is the sessions folder usable before python app.py serves ─────────────────────
def test_startup_check_accepts_a_new_folder_and_creates_it_without_leaving_a_probe(tmp_path):
    folder = tmp_path / "a" / "b" / "gradio_sessions"
    assert workbench.check_sessions_dir(folder) is None
    assert folder.is_dir() and list(folder.iterdir()) == []
    assert workbench.check_sessions_dir(folder) is None        # an existing folder is fine too


def test_startup_check_refuses_a_regular_file(tmp_path):
    blocker = tmp_path / "gradio_sessions"
    blocker.write_text("x", encoding="utf-8")
    problem = workbench.check_sessions_dir(blocker)
    assert problem is not None and str(blocker) in problem
    assert "是一个普通文件，不是文件夹" in problem and "--sessions-dir" in problem
    assert blocker.read_text(encoding="utf-8") == "x"


def test_startup_check_refuses_a_folder_under_a_file_and_names_that_file(tmp_path):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("x", encoding="utf-8")
    problem = workbench.check_sessions_dir(blocker / "deeper" / "sessions")
    assert problem is not None and f"路径上的 {blocker} 是一个普通文件" in problem


def test_startup_check_refuses_a_dangling_symlink(tmp_path):
    link = tmp_path / "sessions"
    link.symlink_to(tmp_path / "gone")
    problem = workbench.check_sessions_dir(link)
    assert problem is not None and "不是文件夹" in problem


@pytest.fixture
def unwritable_folder(tmp_path):
    """A folder this process really cannot write into. root ignores permission bits, so as root the folder
    is made immutable (chattr +i); without chattr, or on a filesystem that refuses it, the test is skipped."""
    folder = tmp_path / "locked"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("running as root, which can write into read-only folders, and chattr is absent")
    made = subprocess.run([chattr, "+i", str(folder)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"running as root and chattr +i is refused here: {made.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run([chattr, "-i", str(folder)], check=True)


def test_startup_check_refuses_a_folder_it_cannot_write_into(unwritable_folder):
    problem = workbench.check_sessions_dir(unwritable_folder)
    assert problem is not None and str(unwritable_folder) in problem
    assert "写不进文件" in problem and ("权限不足" in problem or "不被允许" in problem)
    assert not re.search(r"Permission|denied|not permitted", problem)


# ── a whole class clicking at once ────────────────────────────────────────────────────────────────
def test_concurrent_runs_into_one_folder_all_succeed_and_every_file_loads(tmp_path, export_root):
    sessions = tmp_path / "sessions"
    results, errors = [], []

    def click():
        run, error = workbench.run_demo_safely(str(sessions), export_root=str(export_root))
        (results if run else errors).append(run or error)

    threads = [threading.Thread(target=click) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == [] and len(results) == 4
    assert len({run.ids["main_id"] for run in results}) == 4
    for run in results:  # each run shows only its own tree and its own files
        others = {r.ids["main_id"] for r in results} - {run.ids["main_id"]}
        assert not any(other in everything_the_page_shows(run) for other in others)
        assert workbench.resumed_range(run.files[2].saves) == (8, 9)
    store = SessionStore(str(sessions))
    files = json_files(sessions)
    assert len(files) == 12
    assert all(store.load(path.stem) is not None for path in files)


# ── the downloads folder does not grow without bound ──────────────────────────────────────────────
def test_download_folders_do_not_accumulate(tmp_path, export_root):
    for _ in range(3):
        run = workbench.run_demo(str(tmp_path / "sessions"), export_root=str(export_root), keep_seconds=0)
    remaining = [entry.name for entry in export_root.iterdir()]
    assert remaining == [Path(run.markdown_download).parent.name]


def test_recent_download_folders_survive_pruning(export_root):
    export_root.mkdir()
    old, fresh, unrelated = export_root / "run-old", export_root / "run-fresh", export_root / "keep-me"
    for folder in (old, fresh, unrelated):
        folder.mkdir()
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    os.utime(unrelated, (an_hour_ago, an_hour_ago))
    downloads.prune_old_exports(str(export_root), keep_seconds=600)
    assert sorted(entry.name for entry in export_root.iterdir()) == ["keep-me", "run-fresh"]


@pytest.mark.parametrize("module", [workbench, downloads, markdown], ids=lambda module: module.__name__)
def test_no_module_level_mutable_state(module):
    import s11_session

    mutable = (list, dict, set)
    offenders = [name for name, value in vars(module).items()
                 if not name.startswith("__") and isinstance(value, mutable)
                 and value is not getattr(s11_session, name, None)]  # the store's own constants are its business
    assert offenders == []


def test_the_drift_demo_has_left_this_tab():
    for name in ("run_drift_demo_safely", "drift_markdown", "DRIFT_PLACEHOLDER"):
        assert not hasattr(workbench, name)


# ── issue 40 item 6: the workbench's repeated shapes live once ───────────────────────────────────────
def test_shown_props_send_a_whole_component_only_when_its_properties_change():
    from s11_workbench.shown import Shown

    shown = Shown({"tree": ("a", "b"), "teacher": False, "untouched": 1})
    assert shown.prop("tree", ("a", "b"), lambda: "component", "value") == "value"        # same: value only
    assert shown.prop("teacher", True, lambda: "component", "value") == "component"       # changed: component
    assert shown.prop("new", (), lambda: "component", lambda: "skip") == "component"      # never shown: component
    assert shown.merged() == {"tree": ("a", "b"), "teacher": True, "new": (), "untouched": 1}
    again = Shown(shown.merged())
    assert again.prop("new", (), lambda: "component", lambda: "skip") == "skip"           # a callable plain is called
    for unknown in (None, "x", [("tree", ("a", "b"))]):   # a page that lost its state: every property is sent
        assert Shown(unknown).prop("tree", ("a", "b"), lambda: "component", "value") == "component"


def test_the_explorer_and_the_lesson_use_the_one_shown_props_helper():
    for name in ("explorer_tab", "lesson_tab"):
        tree = ast.parse((CODE_DIR / "s11_workbench" / f"{name}.py").read_text(encoding="utf-8"))
        defined = {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        assert "_prop" not in defined, name
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    and node.module == "s11_workbench.shown" for alias in node.names}
        assert imported == {"Shown", "ShownEvent"}, name


def test_no_javascript_program_lives_in_a_python_string():
    """Page scripts are .js files read at start-up; a one-line expression handed to an event may stay inline."""
    offenders = []
    for path in [*sorted(CODE_DIR.rglob("*.py")), CODE_DIR.parent / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and "=>" in node.value \
                    and "\n" in node.value.strip():
                offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []
    scripts = sorted(path.name for path in (CODE_DIR / "s11_workbench").glob("*.js"))
    assert scripts == ["aria_zh.js", "demo_tab.js", "explorer_tab.js", "forget_link_secrets.js", "fork_control_tab.js",
                       "story_tab.js"]
