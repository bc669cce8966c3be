"""会话分支与代码分支不是一回事 — the workspace snapshot notices what changed in the code.

Every repository here lives under tmp_path; git runs with the global and system config switched off,
so neither the developer's config nor a hook's GIT_DIR can leak in, and nothing global is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import s11_workspace as workspace
from s11_workspace import compare, drift, snapshot

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
posix_only = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file system behaviour")

GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
           "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid"}


@pytest.fixture(autouse=True)
def isolated_git(monkeypatch):
    """The snapshot's own git calls see the same clean configuration as the helpers below."""
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT_ENV})
    return done.stdout.strip()


def write(folder: Path, relative: str, text: str) -> Path:
    path = folder / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def plain(tmp_path) -> Path:
    folder = tmp_path / "plain"
    write(folder, "src/app.py", "print('hi')\n")
    write(folder, "README.md", "# demo\n")
    return folder


@pytest.fixture
def repo(tmp_path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    git(folder, "-c", "init.defaultBranch=main", "init", "-q")
    write(folder, "src/app.py", "print('hi')\n")
    write(folder, "README.md", "# demo\n")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "first")
    return folder


@pytest.fixture(params=["git", "files"])
def any_workspace(request, tmp_path) -> Path:
    """The same claims hold for a git repository and for a plain folder."""
    if request.param == "git":
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        return request.getfixturevalue("repo")
    return request.getfixturevalue("plain")


# ── a snapshot taken and compared at once agrees with itself ────────────────────────────────────

def test_no_drift_right_after_a_snapshot(any_workspace):
    saved = snapshot(any_workspace)
    assert drift(saved, any_workspace) == []


@needs_git
def test_no_drift_with_uncommitted_edits_that_stay_put(repo):
    write(repo, "src/app.py", "print('edited')\n")
    write(repo, "notes.txt", "todo\n")
    saved = snapshot(repo)
    assert saved["dirty"] is True
    assert drift(saved, repo) == []


def test_nothing_to_compare_gives_no_lines(plain):
    current = snapshot(plain)
    assert compare(None, current) == []
    assert compare(current, None) == []
    assert drift(None, plain) == []


# ── each changed, added and removed file is named ───────────────────────────────────────────────

def test_edited_added_and_removed_files_show_up_by_name(any_workspace):
    saved = snapshot(any_workspace)
    write(any_workspace, "src/app.py", "print('changed')\n")
    write(any_workspace, "src/new_module.py", "x = 1\n")
    (any_workspace / "README.md").unlink()

    lines = drift(saved, any_workspace)

    assert lines == ["文件已修改：src/app.py", "新增文件：src/new_module.py", "文件已删除：README.md"]


@needs_git
def test_a_file_dirty_at_save_and_reverted_since_counts_as_modified(repo):
    write(repo, "src/app.py", "print('work in progress')\n")
    write(repo, "scratch.txt", "temp\n")
    saved = snapshot(repo)
    git(repo, "checkout", "--", "src/app.py")
    (repo / "scratch.txt").unlink()

    assert drift(saved, repo) == ["文件已修改：src/app.py", "文件已删除：scratch.txt"]


@needs_git
def test_a_file_deleted_at_save_and_restored_since_counts_as_added(repo):
    (repo / "README.md").unlink()
    saved = snapshot(repo)
    assert saved["files"] == {"README.md": None}
    git(repo, "checkout", "--", "README.md")

    assert drift(saved, repo) == ["新增文件：README.md"]


@needs_git
def test_a_staged_rename_names_both_paths(repo):
    saved = snapshot(repo)
    git(repo, "mv", "README.md", "GUIDE.md")
    assert drift(saved, repo) == ["新增文件：GUIDE.md", "文件已删除：README.md"]


def test_file_lines_are_capped(plain):
    saved = snapshot(plain)
    extra = 7
    for number in range(workspace.MAX_REPORTED_FILES + extra):
        write(plain, f"gen/file_{number:03}.txt", str(number))

    lines = drift(saved, plain)

    assert len(lines) == workspace.MAX_REPORTED_FILES + 1
    assert lines[0] == "新增文件：gen/file_000.txt"
    assert lines[-1] == f"…另有 {extra} 个文件变化"


# ── the code branch: commits and branches ───────────────────────────────────────────────────────

@needs_git
def test_a_new_commit_shows_up_with_short_ids(repo):
    before = git(repo, "rev-parse", "HEAD")
    saved = snapshot(repo)
    write(repo, "src/app.py", "print('v2')\n")
    git(repo, "commit", "-q", "-am", "second")
    after = git(repo, "rev-parse", "HEAD")

    assert saved["commit"] == before
    assert drift(saved, repo) == [f"代码提交已变化：{before[:7]} → {after[:7]}"]


@needs_git
def test_a_branch_switch_shows_up(repo):
    saved = snapshot(repo)
    git(repo, "checkout", "-q", "-b", "feature")
    assert drift(saved, repo) == ["分支已切换：main → feature"]


@needs_git
def test_a_detached_head_has_no_branch(repo):
    saved = snapshot(repo)
    git(repo, "checkout", "-q", "--detach")
    now = snapshot(repo)
    assert now["branch"] is None
    assert compare(saved, now) == ["分支已切换：main → （分离头指针）"]


@needs_git
def test_a_repository_without_commits_works(tmp_path):
    folder = tmp_path / "fresh"
    folder.mkdir()
    git(folder, "-c", "init.defaultBranch=main", "init", "-q")
    write(folder, "a.txt", "a\n")
    saved = snapshot(folder)
    assert (saved["kind"], saved["commit"], saved["branch"]) == ("git", None, "main")
    assert saved["added"] == ["a.txt"]

    git(folder, "add", "a.txt")
    git(folder, "commit", "-q", "-m", "first")
    first = git(folder, "rev-parse", "HEAD")
    # a.txt was new at save time and is committed now: the commit line is the signal
    assert drift(saved, folder)[0] == f"代码提交已变化：（尚无提交） → {first[:7]}"


@needs_git
def test_git_mode_covers_the_whole_work_tree_from_a_subdirectory(repo):
    saved = snapshot(repo / "src")
    assert saved["root"] == str(repo.resolve())
    write(repo, "README.md", "changed outside src\n")
    assert drift(saved, repo / "src") == ["文件已修改：README.md"]


@needs_git
def test_git_snapshot_hashes_only_dirty_files(repo):
    content = b"print('edited')\n"
    (repo / "src/app.py").write_bytes(content)
    saved = snapshot(repo)
    assert saved["files"] == {"src/app.py": hashlib.sha256(content).hexdigest()}
    assert saved["added"] == []


# ── git trouble never breaks a save ─────────────────────────────────────────────────────────────

def test_without_a_git_binary_a_repository_is_snapshotted_as_files(repo, monkeypatch):
    monkeypatch.setattr(workspace.shutil, "which", lambda name, *args, **kwargs: None)
    saved = snapshot(repo)
    assert saved["kind"] == "files"
    assert ".git" not in {path.split("/")[0] for path in saved["files"]}
    write(repo, "src/app.py", "print('changed')\n")
    assert drift(saved, repo) == ["文件已修改：src/app.py"]


def test_an_empty_path_means_files_mode(repo, tmp_path, monkeypatch):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert snapshot(repo)["kind"] == "files"


def fail_with_timeout(*args, **kwargs):
    raise subprocess.TimeoutExpired(cmd=args[0], timeout=workspace.GIT_TIMEOUT_SECONDS)


def fail_with_oserror(*args, **kwargs):
    raise PermissionError("git is not executable")


def fail_with_bug(*args, **kwargs):
    raise RuntimeError("something unexpected inside subprocess")


def fail_with_exit_code(*args, **kwargs):
    return subprocess.CompletedProcess(args[0], 128, stdout="", stderr="fatal: bad object HEAD")


def fail_with_garbage(*args, **kwargs):
    return subprocess.CompletedProcess(args[0], 0, stdout="not a commit id\n", stderr="")


@needs_git
@pytest.mark.parametrize("failing_run", [fail_with_timeout, fail_with_oserror, fail_with_bug,
                                         fail_with_exit_code, fail_with_garbage])
def test_a_failing_git_falls_back_to_files_mode(repo, monkeypatch, failing_run):
    monkeypatch.setattr(workspace.subprocess, "run", failing_run)
    saved = snapshot(repo)
    assert saved["kind"] == "files"
    write(repo, "src/app.py", "print('changed')\n")
    assert drift(saved, repo) == ["文件已修改：src/app.py"]


@needs_git
def test_git_runs_without_optional_locks_and_with_a_timeout(repo, monkeypatch):
    calls = []
    real_run = subprocess.run

    def recording_run(command, **kwargs):
        calls.append((command, kwargs))
        return real_run(command, **kwargs)

    monkeypatch.setenv("GIT_DIR", str(repo.parent / "elsewhere"))  # as inside a git hook
    monkeypatch.setattr(workspace.subprocess, "run", recording_run)
    assert snapshot(repo)["kind"] == "git"
    assert calls
    for _command, kwargs in calls:
        assert kwargs["env"]["GIT_OPTIONAL_LOCKS"] == "0"
        assert "GIT_DIR" not in kwargs["env"]
        assert kwargs["timeout"] == workspace.GIT_TIMEOUT_SECONDS
    assert not (repo / ".git" / "index.lock").exists()


@needs_git
def test_switching_between_git_and_plain_folder_is_reported(repo, monkeypatch):
    saved = snapshot(repo)
    monkeypatch.setattr(workspace.shutil, "which", lambda name, *args, **kwargs: None)
    assert drift(saved, repo) == ["工作区类型已变化：git 仓库 → 普通文件夹"]


def test_another_folder_is_reported(plain, tmp_path):
    other = tmp_path / "copy"
    shutil.copytree(plain, other)
    assert drift(snapshot(plain), other) == [f"工作区目录已变化：{plain.resolve()} → {other.resolve()}"]


def test_a_folder_that_disappeared_is_reported(plain):
    saved = snapshot(plain)
    shutil.rmtree(plain)
    now = snapshot(plain)
    assert now["kind"] == "missing"
    assert compare(saved, now) == ["工作区类型已变化：普通文件夹 → 目录不存在"]


# ── the session store's own folder is left out ──────────────────────────────────────────────────

def test_changes_in_an_excluded_folder_are_ignored(any_workspace):
    store = any_workspace / ".sessions"
    write(store, "a.json", "{}")
    saved = snapshot(any_workspace, exclude=[store])
    assert not any(path.startswith(".sessions") for path in saved["files"])

    write(store, "a.json", '{"messages": [1]}')
    write(store, "b.json", "{}")
    assert drift(saved, any_workspace, exclude=[store]) == []
    # the same change is visible when nothing is excluded
    assert "新增文件：.sessions/b.json" in drift(saved, any_workspace)


def test_an_exclude_outside_the_folder_changes_nothing(plain, tmp_path):
    assert snapshot(plain, exclude=[tmp_path / "elsewhere"]) == snapshot(plain)


def test_skip_dirs_are_not_entered(plain):
    write(plain, "node_modules/pkg/index.js", "x")
    write(plain, "src/__pycache__/app.cpython-311.pyc", "x")
    assert sorted(snapshot(plain)["files"]) == ["README.md", "src/app.py"]


# ── limits ──────────────────────────────────────────────────────────────────────────────────────

@pytest.mark.parametrize("size", [0, 1, workspace.MAX_FILE_BYTES])
def test_files_up_to_the_limit_are_hashed(plain, size):
    content = b"x" * size
    (plain / "blob.bin").write_bytes(content)
    saved = snapshot(plain)
    assert saved["files"]["blob.bin"] == hashlib.sha256(content).hexdigest()
    assert "blob.bin" not in saved["skipped"]


def test_a_file_over_the_limit_is_fingerprinted_by_size_and_mtime(plain):
    big = plain / "data.bin"
    big.write_bytes(b"\0" * (workspace.MAX_FILE_BYTES + 1))
    saved = snapshot(plain)
    info = big.stat()
    assert saved["files"]["data.bin"] == f"stat:{info.st_size}:{info.st_mtime_ns}"
    assert saved["skipped"]["data.bin"] == "too-large"
    assert drift(saved, plain) == []

    with big.open("ab") as handle:
        handle.write(b"more")
    assert drift(saved, plain) == ["文件已修改：data.bin"]


def test_too_many_files_truncate_the_snapshot(plain, monkeypatch):
    monkeypatch.setattr(workspace, "MAX_FILES", 3)
    for number in range(5):
        write(plain, f"many/{number}.txt", str(number))
    saved = snapshot(plain)
    assert saved["truncated"] is True
    assert len(saved["files"]) == 3
    assert compare(saved, saved) == ["快照超过 3 个文件已截断，文件比较可能不完整"]


@needs_git
def test_too_many_dirty_files_truncate_a_git_snapshot(repo, monkeypatch):
    monkeypatch.setattr(workspace, "MAX_FILES", 2)
    for number in range(4):
        write(repo, f"new/{number}.txt", str(number))
    saved = snapshot(repo)
    assert (saved["kind"], saved["truncated"], len(saved["files"])) == ("git", True, 2)


# ── the snapshot is plain, stable JSON ──────────────────────────────────────────────────────────

def test_the_snapshot_is_json_and_deterministic(any_workspace):
    write(any_workspace, "z/last.txt", "z")
    write(any_workspace, "a/first.txt", "a")
    first, second = snapshot(any_workspace), snapshot(any_workspace)
    assert json.dumps(first, ensure_ascii=False, sort_keys=False) == json.dumps(second, ensure_ascii=False)
    assert json.loads(json.dumps(first)) == first
    paths = list(first["files"])
    assert paths == sorted(paths)
    assert all("\\" not in path for path in paths)


def test_plain_snapshot_digests_match_hashlib(plain):
    expected = {path.relative_to(plain).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
                for path in plain.rglob("*") if path.is_file()}
    assert snapshot(plain)["files"] == expected


def test_a_chinese_file_name_round_trips(plain):
    write(plain, "文档/说明.md", "你好")
    saved = json.loads(json.dumps(snapshot(plain), ensure_ascii=False))
    assert "文档/说明.md" in saved["files"]
    write(plain, "文档/说明.md", "再见")
    assert drift(saved, plain) == ["文件已修改：文档/说明.md"]


@posix_only
def test_an_undecodable_file_name_still_serialises(plain):
    try:  # Latin-1 bytes, invalid UTF-8
        os.close(os.open(os.path.join(os.fsencode(plain), b"caf\xe9.txt"), os.O_CREAT | os.O_WRONLY))
    except OSError:
        pytest.skip("file system refuses non-UTF-8 names")
    saved = snapshot(plain)
    assert "caf\\xe9.txt" in saved["files"]
    json.dumps(saved, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("broken", [
    {}, {"version": 99, "kind": "files", "root": "/", "files": {}, "truncated": False},
    {"version": 1, "kind": "files", "root": "/", "files": ["a"], "truncated": False},
    {"version": 1, "kind": "git", "root": "/", "files": {}, "truncated": False},
    {"version": 1, "kind": "files", "root": "/", "files": {"a": 1}, "truncated": False},
    {"version": 1, "kind": "rm -rf", "root": "/"}, "not a dict", [1, 2],
])
def test_a_corrupt_saved_snapshot_gives_one_line_not_an_exception(plain, broken):
    assert drift(broken, plain) == ["工作区快照无法识别（格式版本不符或已损坏），已跳过代码比较"]


# ── links, unreadable files and files vanishing mid-walk ────────────────────────────────────────

@posix_only
def test_links_are_recorded_not_followed(plain, tmp_path):
    outside = tmp_path / "outside"
    write(outside, "secret.txt", "do not read")
    (plain / "escape").symlink_to(outside)
    (plain / "readme-link").symlink_to("README.md")
    saved = snapshot(plain)
    assert saved["files"]["escape"] == f"link:{outside}"
    assert saved["files"]["readme-link"] == "link:README.md"
    assert not any("secret" in path for path in saved["files"])

    (plain / "readme-link").unlink()
    (plain / "readme-link").symlink_to("src/app.py")
    assert drift(saved, plain) == ["文件已修改：readme-link"]


@posix_only
def test_a_fifo_is_listed_without_being_opened(plain):
    os.mkfifo(plain / "pipe")
    saved = snapshot(plain)  # opening a FIFO for reading would block forever
    assert saved["skipped"]["pipe"] == "not-a-regular-file"


def test_an_unreadable_file_is_kept_by_size_and_mtime(plain, monkeypatch):
    real_sha256 = workspace._sha256

    def deny_secret(path):
        if path.endswith("secret.txt"):
            raise PermissionError(13, "Permission denied", path)
        return real_sha256(path)

    secret = write(plain, "secret.txt", "s")
    monkeypatch.setattr(workspace, "_sha256", deny_secret)
    saved = snapshot(plain)
    assert saved["skipped"]["secret.txt"] == "unreadable"
    assert saved["files"]["secret.txt"].startswith("stat:")
    assert saved["files"]["src/app.py"] == hashlib.sha256(b"print('hi')\n").hexdigest()
    secret.write_text("longer now", encoding="utf-8")
    assert drift(saved, plain) == ["文件已修改：secret.txt"]


def test_a_file_deleted_during_the_walk_is_left_out(plain, monkeypatch):
    real_sha256 = workspace._sha256

    def delete_first(path):
        if path.endswith("README.md"):
            os.remove(path)  # another process wins the race
        return real_sha256(path)

    monkeypatch.setattr(workspace, "_sha256", delete_first)
    assert sorted(snapshot(plain)["files"]) == ["src/app.py"]


def test_an_unreadable_directory_is_listed_as_skipped(plain, monkeypatch):
    real_scandir = os.scandir

    def deny_src(path):
        if str(path).endswith("src"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(workspace.os, "scandir", deny_src)
    saved = snapshot(plain)
    assert saved["skipped"] == {"src": "unreadable-dir"}
    assert list(saved["files"]) == ["README.md"]
