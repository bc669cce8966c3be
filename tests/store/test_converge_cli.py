"""`compare`, `converge` and `label` on the command line: output, Chinese errors, exit codes (0 done, 2 bad input),
hostile text printed as escapes, and nothing written when the input is refused. The command line's main() runs in
this process (a Python start-up per call is most of a subprocess's cost); the hostile-label test runs every call as a
real subprocess, with the terminal's encoding."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

import s11_cli
from s11_session import SessionStore, demo_tree_branching

REPO = Path(__file__).resolve().parents[2]
CLI = REPO / "code" / "s11_cli.py"


def run_cli(folder: Path, *args) -> subprocess.CompletedProcess:
    """s11_cli.main(["--dir", folder, *args]) here, with what it prints and its exit code."""
    argv = ["--dir", str(folder), *map(str, args)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = s11_cli.main(argv)
        except SystemExit as stop:   # argparse's own exits (-h)
            code = stop.code
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def run_process(folder: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CLI), "--dir", str(folder), *map(str, args)], capture_output=True,
                          text=True, cwd=REPO, timeout=120, env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def folder_bytes(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()
            and p.name not in (".lock", ".journal.jsonl")}   # the journal only grows (tests/store/test_journal.py)


@pytest.fixture
def demo(tmp_path):
    folder = tmp_path / "sessions"
    ids = demo_tree_branching(SessionStore(folder))
    return folder, ids["main_id"], ids["branch_a_id"], ids["branch_b_id"]


def test_compare_prints_the_shared_prefix_and_both_deltas(demo):
    folder, main, a, b = demo
    done = run_cli(folder, "compare", a, b)
    assert done.returncode == 0, done.stderr
    assert "兄弟分支" in done.stdout and f"最近的共同祖先 [{main}]，前 5 条相同" in done.stdout
    assert "A 之后 2 条（工具调用 0 次）" in done.stdout and "B 之后 4 条" in done.stdout
    assert "   6. assistant: 方案 A" in done.stdout and "   9. assistant: ✅" in done.stdout


def test_converge_writes_one_node_and_the_tree_shows_the_dashed_link(demo):
    folder, main, a, b = demo
    before = folder_bytes(folder)
    done = run_cli(folder, "converge", b, a, "--decision", "选 B，留 A 的 LRU", "--carry", f"{a}:6")
    assert done.returncode == 0, done.stderr
    assert "🔀 已收敛" in done.stdout and "带过来 1 条消息" in done.stdout
    assert f"⇠┄ 收敛了 [{a}]" in done.stdout and "已收敛到 [" in done.stdout
    after = folder_bytes(folder)
    assert {name: after[name] for name in before} == before and len(after) == len(before) + 1
    store = SessionStore(folder)
    node = next(s for s in store.list_sessions() if s["converged_from"])
    shown = run_cli(folder, "show", node["session_id"])
    assert f"10. assistant [↪️ 带自 {a} 的第 6 条]" in shown.stdout and "11. user [🔀 收敛]: 选 B" in shown.stdout


@pytest.mark.parametrize("args, message", [
    (["converge", "{b}", "{a}", "--decision", ""], "决定不能为空"),
    (["converge", "{b}", "{a}", "--decision", "x", "--carry", "{a}:99"], "没有第 99 条"),
    (["converge", "{b}", "{a}", "--decision", "x", "--carry", "{a}"], "ID:K"),
    (["converge", "{b}", "{b}", "--decision", "x"], "不能收敛进自己"),
    (["converge", "{b}", "feedbeef0000", "--decision", "x"], "未找到被收敛的会话"),
    (["converge", "{b}", "{a}"], "缺少参数：--decision"),
    (["converge", "{b}", "--decision", "x"], "缺少参数：OTHER"),
    (["compare", "{a}"], "缺少参数：B"),
    (["compare", "{a}", "../x"], "会话 ID 不对"),
    (["label", "{b}", "0", "x"], "没有第 0 条"),
    (["label", "{b}", "二", "x"], "不是整数"),
])
def test_bad_input_is_one_chinese_line_exit_2_and_nothing_written(demo, args, message):
    folder, _, a, b = demo
    before = folder_bytes(folder)
    done = run_cli(folder, *[arg.format(a=a, b=b) for arg in args])
    assert done.returncode == 2, done
    assert done.stderr.startswith("错误：") and message in done.stderr and "Traceback" not in done.stderr
    assert folder_bytes(folder) == before


def test_label_then_tree_and_hostile_label_text_is_escaped(demo):
    folder, main, _, b = demo
    done = run_process(folder, "label", b, "8", "最终方案")
    assert done.returncode == 0 and "「最终方案」" in done.stdout
    assert "🏷️ #8 最终方案" in run_process(folder, "tree").stdout
    evil = "坏\x1b[2J标签\u202e"
    run_process(folder, "label", b, "9", evil)
    tree = run_process(folder, "tree").stdout + run_process(folder, "show", b).stdout
    assert "\x1b" not in tree and "\u202e" not in tree and "\\u001b" in tree
    assert run_process(folder, "label", b, "8").returncode == 0
    assert "最终方案" not in run_process(folder, "tree").stdout
