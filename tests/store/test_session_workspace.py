"""会话 ≠ 代码: a store with a workspace records the code state on save and reports drift on resume."""

import json
import os
import subprocess
from pathlib import Path

import pytest

import s11_workspace
from s11_session import SessionNode, SessionNotFound, SessionStore
from s11_workbench.lab import demo_code_drift

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(folder, *args):
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


@pytest.fixture(params=["git", "plain"])
def workspace(request, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "cache.py").write_text("cache = {}\n", "utf-8")
    (folder / "server.py").write_text("print('hi')\n", "utf-8")
    if request.param == "git":
        if not s11_workspace.shutil.which("git"):
            pytest.skip("git is not installed")
        git(folder, "-c", "init.defaultBranch=main", "init", "-q")
        git(folder, "add", ".")
        git(folder, "commit", "-qm", "init")
    return folder


@pytest.fixture
def store(workspace):
    # the store lives inside the workspace on purpose: its own files must not count as drift
    return SessionStore(workspace / "sessions", workspace=workspace)


def test_a_save_records_the_workspace_and_a_fresh_resume_reports_no_drift(store, workspace):
    sid = store.create_session("重构缓存", [{"role": "user", "content": "开始"}])
    node, drift = store.resume(sid)
    assert node.workspace["root"] == os.path.realpath(workspace)
    assert drift == []
    saved = json.loads(Path(store.path_of(sid)).read_text("utf-8"))
    assert saved["workspace"] == node.workspace


def test_edited_added_and_removed_files_show_up_by_name(store, workspace):
    sid = store.create_session("重构缓存")
    (workspace / "cache.py").write_text("from weakref import WeakValueDictionary\n", "utf-8")
    (workspace / "pool.py").write_text("pool = []\n", "utf-8")
    (workspace / "server.py").unlink()
    _, drift = store.resume(sid)
    assert any("cache.py" in line and "修改" in line for line in drift)
    assert any("pool.py" in line and "新增" in line for line in drift)
    assert any("server.py" in line and "删除" in line for line in drift)


def test_a_new_commit_shows_up(tmp_path):
    if not s11_workspace.shutil.which("git"):
        pytest.skip("git is not installed")
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "a.py").write_text("a = 1\n", "utf-8")
    git(folder, "-c", "init.defaultBranch=main", "init", "-q")
    git(folder, "add", ".")
    git(folder, "commit", "-qm", "one")
    store = SessionStore(tmp_path / "sessions", workspace=folder)
    sid = store.create_session("会话")
    git(folder, "checkout", "-qb", "refactor")
    (folder / "a.py").write_text("a = 2\n", "utf-8")
    git(folder, "commit", "-qam", "two")
    (folder / "notes.md").write_text("新笔记", "utf-8")
    _, drift = store.resume(sid)
    assert any(line.startswith("代码提交已变化：") for line in drift)
    assert "分支已切换：main → refactor" in drift
    assert "新增文件：notes.md" in drift


def test_a_fork_records_the_workspace_as_it_is_when_the_fork_is_saved(store, workspace):
    main_id = store.create_session("主会话", [{"role": "user", "content": "a"}])
    (workspace / "cache.py").write_text("cache = LRU(100)\n", "utf-8")
    branch = store.fork(main_id)
    assert store.resume(branch.session_id)[1] == []       # the fork saw the edited file
    assert any("cache.py" in line for line in store.resume(main_id)[1])


def test_sessions_without_a_snapshot_have_no_drift(tmp_path):
    plain = SessionStore(tmp_path / "s")
    sid = plain.create_session("旧会话")
    assert plain.load(sid).workspace is None
    assert plain.resume(sid)[1] == []
    with pytest.raises(SessionNotFound):
        plain.resume("missing")


def test_a_missing_git_binary_still_records_digests(tmp_path, monkeypatch):
    monkeypatch.setattr(s11_workspace.shutil, "which", lambda name: None)
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "f.txt").write_text("1", "utf-8")
    store = SessionStore(tmp_path / "s", workspace=folder)
    sid = store.create_session("x")
    assert store.load(sid).workspace["kind"] == "files"
    (folder / "f.txt").write_text("2", "utf-8")
    assert any("f.txt" in line for line in store.resume(sid)[1])


def test_a_git_failure_never_breaks_a_save(store, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("git exploded")
    monkeypatch.setattr(s11_workspace.subprocess, "run", broken)
    node = SessionNode(title="仍然能存")
    store.save(node)
    assert store.load(node.session_id).workspace["kind"] == "files"


def test_the_drift_demo_warns_before_resuming_branch_a(tmp_path):
    result = demo_code_drift(tmp_path)
    assert "文件已修改：cache_store.py" in result["drift"]
    assert "新增文件：weak_cache_test.py" in result["drift"]
    store = SessionStore(tmp_path / "sessions", workspace=result["workspace"])
    assert store.resume(result["branch_b_id"])[1] == []     # branch B was saved after its own edit
    assert len(store.list_sessions()) == 3
