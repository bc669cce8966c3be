"""The command line's journal subcommands (issue 43 item 4): `history [ID]`, `undo`, `redo`, `revert ID REVISION`,
run through the command line's main() in this process (undo / redo as a real subprocess). Same rules as every
subcommand: Chinese sentences, no Traceback, exit code 2 for bad input, and what was saved stays as it was."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_converge_cli import run_cli as run  # s11_cli.main in this process
from test_converge_cli import run_process

import s11_journal
from s11_session import SessionStore, demo_tree_branching


def snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file() and p.name != ".lock"}


@pytest.fixture
def demo(tmp_path):
    folder = tmp_path / "sessions"
    return folder, demo_tree_branching(SessionStore(folder))


def test_history_lists_the_journal_newest_first(demo):
    folder, ids = demo
    done = run(folder, "history")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 5 and lines[0].startswith("#5 ") and lines[-1].startswith("#1 ")
    assert "续写了 「修复登录服务内存泄漏 · 分支」" in lines[0] and lines[0].endswith("revision 1 → 2")
    assert "分叉了分支" in lines[1] and "（自第 5 条）" in lines[1]
    assert len(run(folder, "history", "--limit", "2").stdout.splitlines()) == 2


def test_undo_redo_and_the_history_marks_what_redo_can_bring_back(demo):
    folder, ids = demo
    undone = run_process(folder, "undo")
    assert undone.returncode == 0 and undone.stdout.startswith("↶ 撤销了第 5 步：续写了")
    assert "（已撤销，可 redo）" in run_process(folder, "history").stdout.splitlines()[1]
    assert len(SessionStore(folder).load(ids["branch_b_id"]).messages) == 7
    redone = run_process(folder, "redo")
    assert redone.returncode == 0 and redone.stdout.startswith("↷ 重做了第 5 步")
    assert len(SessionStore(folder).load(ids["branch_b_id"]).messages) == 9
    nothing = run_process(folder, "redo")
    assert nothing.returncode == 2 and "错误：没有可以重做的操作" in nothing.stderr and "Traceback" not in nothing.stderr


def test_history_of_one_session_and_revert(demo):
    folder, ids = demo
    main = ids["main_id"]
    listed = run(folder, "history", main).stdout.splitlines()
    assert listed[0].startswith("revision    1") and "2 条" in listed[0]
    assert listed[1].startswith("revision    2") and "5 条" in listed[1] and listed[1].endswith("← 现在")
    done = run(folder, "revert", main, 1)
    assert done.returncode == 0 and f"会话 [{main}] 回到了第 1 版：存成了第 3 版（2 条消息" in done.stdout
    store = SessionStore(folder)
    assert (store.load(main).revision, len(store.load(main).messages)) == (3, 2)
    assert len(store.load_revision(main, 2).messages) == 5


@pytest.mark.parametrize("args, says", [
    (["revert", "nosuch", "1"], "未找到会话 nosuch"),
    (["revert", "MAIN", "9"], "没有第 9 版"),
    (["revert", "MAIN", "0"], "没有第 0 版"),
    (["revert", "MAIN", "-1"], "版本号应是不小于 0 的整数"),
    (["revert", "MAIN", "x"], "REVISION 的值 'x' 不是整数"),
    (["revert", "MAIN"], "缺少参数：REVISION"),
    (["revert", "../etc", "1"], "非法会话 ID"),
    (["history", "nosuch"], "未找到会话 nosuch 的任何一版"),
    (["history", "--limit", "0"], "--limit 0 无效"),
], ids=["unknown-id", "no-such-revision", "revision-zero", "revision-negative", "revision-not-a-number", "revision-missing",
        "bad-id", "history-unknown-id", "limit-zero"])
def test_bad_input_is_one_chinese_sentence_and_changes_nothing(demo, args, says):
    folder, ids = demo
    before = snapshot(folder)
    done = run(folder, *[ids["main_id"] if arg == "MAIN" else arg for arg in args])
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("错误：") and says in done.stderr
    assert snapshot(folder) == before


def test_a_torn_last_line_is_reported_and_the_rest_is_listed(demo):
    folder, _ = demo
    path = folder / s11_journal.JOURNAL_FILE
    path.write_bytes(path.read_bytes()[:-30])
    done = run(folder, "history")
    assert done.returncode == 0
    assert "第 5 行不完整（写到一半被中断），已跳过" in done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["#4", "#3", "#2", "#1"]


def test_a_stale_undo_is_refused_with_exit_code_2(demo):
    folder, ids = demo
    import s11_book
    book = s11_book.SessionStore(str(folder))
    node = book.load(ids["branch_b_id"])
    node.messages.append({"role": "user", "content": "书里的代码写的，没记进日志"})
    book.save(node)
    before = snapshot(folder)
    done = run(folder, "undo")
    assert done.returncode == 2 and "不能撤销第 5 步" in done.stderr and "日志之外改过" in done.stderr
    assert snapshot(folder) == before
