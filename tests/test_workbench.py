"""The 8.11 workbench logic, without gradio: what one click writes, draws and offers for download."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import s11_workbench as workbench
from s11_session import SessionNode, SessionStore

CODE_DIR = Path(__file__).resolve().parent.parent / "code"
HOSTILE_TITLES = [
    '"]; click A call alert(1) <script>',
    "x\nclick n0 call alert(1)\n%%{init: {}}%%",
    "`` ` ``` ]] [[ (( )) {{ }} | ; : # & \\ '",
    "<img src=x onerror=alert(1)>",
]
# Every line the generator may emit; anything else means a session title escaped its label.
ALLOWED_LINE = re.compile(
    r'^(%%\{init: \{"flowchart": \{"wrappingWidth": \d+\}\}\}%%'
    r'|graph TD'
    r'|    n\d+\["[^"\n]*"\]'
    r'|    n\d+ -->\|"[^"\n]*"\| n\d+'
    r'|    classDef \w+ [\w:#,-]+'
    r'|    class n\d+ \w+)$'
)


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


# ── 不依赖 gradio ──────────────────────────────────────────────────────────────────────────
def test_workbench_imports_without_gradio():
    probe = "import sys, s11_workbench; print('gradio' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(CODE_DIR)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


# ── 一次点击写下什么 ────────────────────────────────────────────────────────────────────────
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


def test_files_show_size_and_the_json_that_is_on_disk(demo_run):
    for file in demo_run.files:
        assert file.size_bytes == os.path.getsize(file.path) > 0
        with open(file.path, encoding="utf-8") as handle:
            assert json.loads(file.pretty_json) == json.load(handle)
    listing = workbench.files_markdown(demo_run.files)
    assert listing.count("```json") == 3
    assert "修复登录服务内存泄漏" in listing  # ensure_ascii=False: 中文原样可读


def test_preview_is_the_export_of_resumed_branch_b(demo_run):
    assert "会话导出" in demo_run.export_markdown
    assert "方案 B" in demo_run.export_markdown
    assert demo_run.ids["branch_b_id"] in demo_run.export_markdown


def test_markdown_download_matches_preview_and_html_is_a_page(demo_run):
    assert Path(demo_run.markdown_download).read_text(encoding="utf-8") == demo_run.export_markdown
    if demo_run.html_download is None:
        pytest.skip("store has no export_html yet")
    page = Path(demo_run.html_download).read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html") and "方案 B" in page
    assert Path(demo_run.html_download).parent == Path(demo_run.markdown_download).parent


# ── 会话树图 ────────────────────────────────────────────────────────────────────────────
def test_tree_diagram_has_three_nodes_two_edges_and_the_resumed_marker(demo_run):
    source = re.search(r"```mermaid\n(.*?)\n```", demo_run.tree_markdown, re.S).group(1)
    node_lines = [line for line in source.splitlines() if re.match(r"    n\d+\[", line)]
    assert len(node_lines) == 3
    assert "主会话" in node_lines[0] and "5 条消息" in node_lines[0]
    assert "分支 A" in node_lines[1] and "7 条消息" in node_lines[1] and "已恢复" not in node_lines[1]
    assert "分支 B" in node_lines[2] and "9 条消息" in node_lines[2] and "📂 已恢复" in node_lines[2]
    assert '    n0 -->|"继承前 5 条 · 新增 2 条"| n1' in source
    assert '    n0 -->|"继承前 5 条 · 新增 4 条"| n2' in source
    for short_id in demo_run.ids.values():
        assert short_id in source


def test_text_summary_lists_ids_parent_counts_and_what_each_branch_added(demo_run):
    summary = re.search(r"```text\n(.*?)\n```", demo_run.tree_markdown, re.S).group(1)
    assert f"id={demo_run.ids['main_id']}" in summary
    assert "7 条 = 继承 5 + 新增 2" in summary and "9 条 = 继承 5 + 新增 4" in summary
    assert summary.count(f"父 {demo_run.ids['main_id']}") == 2
    assert "方案 A" in summary and "方案 B" in summary and "📂 已恢复" in summary


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
    ("#quot;", "#35;quot#59;"),          # 已经像实体的文字也被转义，不会被 mermaid 还原成引号
    ("line1\nline2", "line1 line2"),
    ("`code`", "#96;code#96;"),
    ("会话 🌿", "会话 🌿"),
])
def test_mermaid_text_uses_entity_codes(raw, escaped):
    assert workbench.mermaid_text(raw) == escaped


def test_long_labels_are_shortened():
    assert workbench.mermaid_text("长" * 100) == "长" * (workbench.LABEL_MAX_CHARS - 1) + "…"


@pytest.mark.parametrize("body", ["plain", "has ``` inside", "````four````", ""])
def test_fence_is_longer_than_any_backtick_run_inside(body):
    block = workbench.fenced(body, "text")
    fence = block.split("\n", 1)[0].removesuffix("text")
    assert block.endswith("\n" + fence)
    assert fence not in body


# ── 出错时：一句中文，不写文件 ─────────────────────────────────────────────────────────────
def test_sessions_dir_under_a_regular_file_gives_chinese_message_and_writes_nothing(tmp_path, export_root):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("我是文件", encoding="utf-8")
    run, message = workbench.run_demo_safely(str(blocker / "sessions"), export_root=str(export_root))
    assert run is None
    assert message.startswith("⚠️ 无法写入会话目录") and "不是文件夹" in message
    assert "Traceback" not in message
    assert blocker.read_text(encoding="utf-8") == "我是文件"
    assert not export_root.exists() or not any(export_root.iterdir())


def test_permission_denied_is_reported_in_chinese(tmp_path, export_root, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(workbench, "SessionStore", refuse)
    run, message = workbench.run_demo_safely(str(tmp_path / "sessions"), export_root=str(export_root))
    assert run is None
    assert "无法写入会话目录" in message and "权限不足" in message
    assert not (tmp_path / "sessions").exists()


def test_a_failing_export_leaves_no_half_written_download_folder(tmp_path, export_root, monkeypatch):
    def broken_html(self, session_id, *, redact=True):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(SessionStore, "export_html", broken_html, raising=False)
    run, message = workbench.run_demo_safely(str(tmp_path / "sessions"), export_root=str(export_root))
    assert run is None and "磁盘空间不足" in message
    assert list(export_root.iterdir()) == []


def test_unexpected_errors_name_the_type_not_the_stack(tmp_path, monkeypatch):
    def explode(store):
        raise KeyError("boom")

    monkeypatch.setattr(workbench, "demo_tree_branching", explode)
    run, message = workbench.run_demo_safely(str(tmp_path / "sessions"), export_root=str(tmp_path / "x"))
    assert run is None and "KeyError" in message and "boom" not in message


# ── 一个班同时点击 ──────────────────────────────────────────────────────────────────────
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
    for run in results:  # 每次运行只看到自己的树
        others = {r.ids["main_id"] for r in results} - {run.ids["main_id"]}
        assert not any(other in run.tree_markdown for other in others)
    store = SessionStore(str(sessions))
    files = json_files(sessions)
    assert len(files) == 12
    assert all(store.load(path.stem) is not None for path in files)


# ── 下载目录不无限增长 ──────────────────────────────────────────────────────────────────
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
    workbench.prune_old_exports(str(export_root), keep_seconds=600)
    assert sorted(entry.name for entry in export_root.iterdir()) == ["keep-me", "run-fresh"]


def test_no_module_level_mutable_state():
    import s11_session

    mutable = (list, dict, set)
    offenders = [name for name, value in vars(workbench).items()
                 if not name.startswith("__") and isinstance(value, mutable)
                 and value is not getattr(s11_session, name, None)]  # the store's own constants are its business
    assert offenders == []


def test_the_drift_demo_names_each_change_and_leaves_no_workspace_behind(monkeypatch, tmp_path):
    monkeypatch.setattr(workbench.tempfile, "tempdir", str(tmp_path))
    text = workbench.run_drift_demo_safely()
    assert "文件已修改：cache_store.py" in text and "新增文件：weak_cache_test.py" in text
    assert "代码已经变了" in text
    assert list(tmp_path.iterdir()) == []


def test_the_drift_text_says_when_nothing_changed():
    text = workbench.drift_markdown({"saved": {"kind": "files", "files": {"a.py": "x"}}, "drift": []})
    assert "一致" in text and "代码已经变了" not in text
