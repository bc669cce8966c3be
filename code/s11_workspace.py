"""s11_workspace — 会话分支与代码分支不是一回事: remember what the code looked like at save time.

    save  ── snapshot(folder) ──►  {"kind": "git", "commit": "3f2a9c1…", "branch": "main",
                                     "files": {"src/app.py": "9b1e…"}}   stored beside the messages
    load  ── drift(saved, folder) ──►  ["分支已切换：main → feature",
                                        "文件已修改：src/app.py"]          shown before resuming

Key insight: a session remembers *why*, the repository remembers *what*; resuming the one without
checking the other lets the agent reason about code that is no longer there. (Claude Code writes
`cwd` and `gitBranch` on every transcript line for the same reason.)

Snapshot format (version 1, a JSON-serialisable dict; keys of "files"/"skipped" are paths relative
to "root" with forward slashes, sorted, so two snapshots of the same tree are equal):

    git mode — folder is inside a git work tree and a `git` binary works:
      {"version": 1, "kind": "git", "root": "/abs/top-level", "commit": "<hex>" | None (no commit yet),
       "branch": "main" | None (detached HEAD), "dirty": bool,
       "files":   {path: fingerprint | None},   # dirty and untracked files only; None = deleted
       "added":   [path, ...],                  # dirty paths HEAD does not have (untracked, staged new)
       "skipped": {path: reason}, "truncated": bool}
      A path absent from "files" is clean, i.e. equal to the commit. The whole work tree is covered,
      even when folder is a subdirectory of it.
    files mode — no git, not a repository, or any git error:
      {"version": 1, "kind": "files", "root": "/abs/folder",
       "files": {path: fingerprint}, "skipped": {path: reason}, "truncated": bool}
    missing — folder does not exist (a snapshot never raises for that):
      {"version": 1, "kind": "missing", "root": "/abs/folder"}

    fingerprint: 64 hex digits     sha256 of the content
                 "link:<target>"   a symbolic link; never followed, so a walk never leaves root
                 "stat:<size>:<mtime_ns>"  content not read, see "skipped" for why:
                     "too-large" (> MAX_FILE_BYTES), "unreadable", "not-a-regular-file"
                 "unreadable"      not even stat() worked
    skipped also lists directories that could not be listed ("unreadable-dir").

Limits: MAX_FILE_BYTES (1 MiB) — bigger files are fingerprinted by size + mtime, so touching one
without changing it reports it as modified. MAX_FILES (5000) — the walk stops there and marks the
snapshot "truncated"; the worst case still reads MAX_FILES × MAX_FILE_BYTES. Each git command has
GIT_TIMEOUT_SECONDS. SKIP_DIRS (caches, virtualenvs, .git) are never entered, in both modes; pass the
session store's own folder in `exclude` or every save would change the snapshot.

Out of scope: git-ignored files (git mode), submodule contents, file modes and timestamps of hashed
files, restoring code, and races where a directory is swapped for a link while the walk runs.
Across two different commits, file lines for a path clean on one side are relative to that side's
own commit; the commit line is the signal there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Iterator

SNAPSHOT_VERSION = 1
MAX_FILE_BYTES = 1 * 1024 * 1024
MAX_FILES = 5000
MAX_REPORTED_FILES = 20
GIT_TIMEOUT_SECONDS = 5
SKIP_DIRS = {".git", "__pycache__", ".venv", "venv", "node_modules", ".mypy_cache", ".pytest_cache",
             ".ruff_cache", ".tox", ".hypothesis"}

# Inherited from a git hook or a wrapper, these would point git at some other repository than folder.
_REPOSITORY_OVERRIDES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
                         "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE")
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_BINARY", 0))
_COMMIT_PATTERN = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_KIND_NAMES = {"git": "git 仓库", "files": "普通文件夹", "missing": "目录不存在"}
_CHANGE_ORDER = ("文件已修改", "新增文件", "文件已删除")


class _GitFailed(Exception):
    """Internal: git is missing, the folder is no work tree, or git misbehaved -> use files mode."""


# ── snapshot ────────────────────────────────────────────────────────────────────────────────────

def snapshot(folder: str | os.PathLike, *, exclude: Iterable[str | os.PathLike] = ()) -> dict:
    """Describe the code in folder (see the module docstring for the format). Never raises for git
    trouble, a missing folder or files vanishing mid-walk. Relative excludes are taken from the cwd."""
    root = os.path.realpath(folder)
    if not os.path.isdir(root):
        return {"version": SNAPSHOT_VERSION, "kind": "missing", "root": _json_safe(root)}
    excluded = [os.path.realpath(path) for path in exclude]
    try:
        return _git_snapshot(root, excluded)
    except _GitFailed:
        return _files_snapshot(root, excluded)


def _git(git: str, cwd: str, *args: str, accept: tuple[int, ...] = (0,)) -> str:
    """Run one read-only git command and return its stdout; any failure becomes _GitFailed."""
    env = {key: value for key, value in os.environ.items() if key not in _REPOSITORY_OVERRIDES}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # status must not take index.lock while the user runs git
    try:
        done = subprocess.run([git, *args], capture_output=True, text=True, encoding="utf-8",
                              errors="surrogateescape", timeout=GIT_TIMEOUT_SECONDS, cwd=cwd, env=env)
    except Exception as error:  # timeout, vanished binary, ...: a git error must never break a save
        raise _GitFailed(str(error)) from error
    if done.returncode not in accept:
        raise _GitFailed(f"git {args[0]} exited {done.returncode}")
    return done.stdout


def _git_snapshot(folder: str, excluded: list[str]) -> dict:
    git = shutil.which("git")
    if git is None:
        raise _GitFailed("no git binary on PATH")
    root = os.path.realpath(_git(git, folder, "rev-parse", "--show-toplevel").strip() or folder)
    if not os.path.isdir(root):
        raise _GitFailed(f"git named {root!r} as the work tree")
    commit = _git(git, root, "rev-parse", "--verify", "-q", "HEAD", accept=(0, 1)).strip() or None
    if commit is not None and not _COMMIT_PATTERN.fullmatch(commit):
        raise _GitFailed(f"unexpected commit id {commit!r}")
    branch = _git(git, root, "symbolic-ref", "--short", "-q", "HEAD", accept=(0, 1)).strip() or None
    status = _git(git, root, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    skip = _relative_excludes(root, excluded)
    files, added, skipped, truncated = {}, [], {}, False
    for path, is_new in sorted(_parse_porcelain(status).items()):
        if _is_excluded(path, skip) or any(part in SKIP_DIRS for part in path.split("/")[:-1]):
            continue
        if len(files) >= MAX_FILES:
            truncated = True
            break
        fingerprint, reason = _fingerprint(os.path.join(root, path))
        key = _json_safe(path)
        files[key] = fingerprint
        if reason:
            skipped[key] = reason
        if is_new:
            added.append(key)
    return {"version": SNAPSHOT_VERSION, "kind": "git", "root": _json_safe(root), "commit": commit,
            "branch": branch, "dirty": bool(files), "files": dict(sorted(files.items())),
            "added": sorted(added), "skipped": dict(sorted(skipped.items())), "truncated": truncated}


def _parse_porcelain(output: str) -> dict[str, bool]:
    """Map each dirty path to "HEAD does not have it"; a rename carries its source in the next field.

    ' M a.py\\0?? b.py\\0R  new.py\\0old.py\\0'
        -> {'a.py': False, 'b.py': True, 'old.py': False, 'new.py': True}
    """
    fields, entries, index = output.split("\0"), {}, 0
    while index < len(fields):
        record = fields[index]
        index += 1
        if len(record) < 4:
            continue  # the empty field after the final NUL
        code, path = record[:2], record[3:].rstrip("/")  # "?? nested-repo/" names a directory
        is_new = code == "??" or "A" in code
        if "R" in code or "C" in code:
            source, index = fields[index], index + 1
            is_new = True
            if "R" in code:  # a copy leaves its source untouched
                entries[source] = False
        # "D  x" plus "?? x" (deleted from the index, still on disk): HEAD has x, so not new
        entries[path] = entries.get(path, True) and is_new
    return entries


def _files_snapshot(root: str, excluded: list[str]) -> dict:
    skip = _relative_excludes(root, excluded)
    files, skipped, truncated = {}, {}, False
    for path in _walk(root, skip, skipped):
        if len(files) >= MAX_FILES:
            truncated = True
            break
        fingerprint, reason = _fingerprint(os.path.join(root, path))
        if fingerprint is None:
            continue  # deleted while we walked
        key = _json_safe(path)
        files[key] = fingerprint
        if reason:
            skipped[key] = reason
    return {"version": SNAPSHOT_VERSION, "kind": "files", "root": _json_safe(root),
            "files": dict(sorted(files.items())), "skipped": dict(sorted(skipped.items())),
            "truncated": truncated}


def _walk(root: str, skip: list[str], skipped: dict[str, str]) -> Iterator[str]:
    """Yield the relative path of every non-directory under root, in sorted order, never following links."""
    pending = [""]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(os.path.join(root, directory)) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except FileNotFoundError:
            continue
        except OSError:
            skipped[_json_safe(directory or ".")] = "unreadable-dir"
            continue
        subdirectories = []
        for entry in entries:
            path = f"{directory}/{entry.name}" if directory else entry.name
            if _is_excluded(path, skip):
                continue
            if _is_real_directory(entry):
                if entry.name not in SKIP_DIRS:
                    subdirectories.append(path)
            else:
                yield path
        pending.extend(reversed(subdirectories))


def _is_real_directory(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)  # a link to a directory is recorded, not entered
    except OSError:
        return False


def _fingerprint(path: str) -> tuple[str | None, str | None]:
    """Return (fingerprint, why the content was not hashed); fingerprint None means the file is gone.

    b'hello\\n' -> ('5891b5b5…be03', None); link to ../x -> ('link:../x', None);
    a 2 MiB file -> ('stat:2097152:1732870000000000000', 'too-large')
    """
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            return "link:" + _json_safe(os.readlink(path)), None
    except FileNotFoundError:
        return None, None
    except OSError:
        return "unreadable", "unreadable"
    if not stat.S_ISREG(info.st_mode):
        return _stat_fingerprint(info), "not-a-regular-file"
    if info.st_size > MAX_FILE_BYTES:
        return _stat_fingerprint(info), "too-large"
    try:
        return _sha256(path), None
    except FileNotFoundError:
        return None, None
    except OSError:  # permission denied, or swapped for a link or a FIFO since lstat
        return _stat_fingerprint(info), "unreadable"


def _sha256(path: str) -> str:
    # O_NOFOLLOW: a file replaced by a link after lstat must not lead us outside root;
    # O_NONBLOCK: a FIFO swapped in must not hang the save.
    with os.fdopen(os.open(path, _OPEN_FLAGS), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{path} is no longer a regular file")
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _stat_fingerprint(info: os.stat_result) -> str:
    return f"stat:{info.st_size}:{info.st_mtime_ns}"


def _relative_excludes(root: str, excluded: list[str]) -> list[str]:
    """'/repo/.sessions' under root '/repo' -> '.sessions'; paths outside root are dropped."""
    relative = []
    for path in excluded:
        try:
            inside = os.path.relpath(path, root)
        except ValueError:  # another drive on Windows
            continue
        if inside != os.pardir and not inside.startswith(os.pardir + os.sep):
            relative.append("" if inside == os.curdir else inside.replace(os.sep, "/"))
    return relative


def _is_excluded(path: str, skip: list[str]) -> bool:
    return any(not prefix or path == prefix or path.startswith(prefix + "/") for prefix in skip)


def _json_safe(text: str) -> str:
    """Undecodable bytes in a file name (kept as surrogates by Python) become \\xNN, so
    json.dump(..., ensure_ascii=False) can write the snapshot: 'caf\\udce9' -> 'caf\\\\xe9'."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# ── compare ─────────────────────────────────────────────────────────────────────────────────────

def compare(saved: dict | None, now: dict | None) -> list[str]:
    """Short Chinese lines naming what changed between two snapshots; [] when they agree or one is None.

    Order: kind, root, commit, branch, files (modified, added, removed; each by path), truncation.
    """
    if saved is None or now is None:
        return []
    if not _is_snapshot(saved) or not _is_snapshot(now):
        return ["工作区快照无法识别（格式版本不符或已损坏），已跳过代码比较"]
    lines = []
    if saved["kind"] != now["kind"]:
        lines.append(f"工作区类型已变化：{_KIND_NAMES[saved['kind']]} → {_KIND_NAMES[now['kind']]}")
    if saved["root"] != now["root"]:
        lines.append(f"工作区目录已变化：{saved['root']} → {now['root']}")
    if saved["kind"] != now["kind"] or saved["kind"] == "missing":
        return lines  # a git dirty list and a full file list do not compare file by file
    if saved["kind"] == "git":
        lines += _git_lines(saved, now)
    lines += _file_lines(saved, now)
    if saved["truncated"] or now["truncated"]:
        lines.append(f"快照超过 {MAX_FILES} 个文件已截断，文件比较可能不完整")
    return lines


def drift(saved: dict | None, folder: str | os.PathLike, *,
          exclude: Iterable[str | os.PathLike] = ()) -> list[str]:
    """compare(saved, snapshot(folder)); [] when the session recorded no snapshot."""
    if saved is None:
        return []
    return compare(saved, snapshot(folder, exclude=exclude))


def _is_snapshot(data: object) -> bool:
    """A snapshot read back from a session file may be old, hand-edited or corrupt: check before use."""
    if not isinstance(data, dict) or data.get("version") != SNAPSHOT_VERSION:
        return False
    if data.get("kind") not in _KIND_NAMES or not isinstance(data.get("root"), str):
        return False
    if data["kind"] == "missing":
        return True
    files, optional_text = data.get("files"), (str, type(None))
    valid = (isinstance(files, dict) and isinstance(data.get("truncated"), bool)
             and all(isinstance(path, str) and isinstance(value, optional_text)
                     for path, value in files.items()))
    if data["kind"] == "git":
        added = data.get("added")
        valid = valid and isinstance(data.get("commit"), optional_text) \
            and isinstance(data.get("branch"), optional_text) \
            and isinstance(added, list) and all(isinstance(path, str) for path in added)
    return valid


def _git_lines(saved: dict, now: dict) -> list[str]:
    lines = []
    if saved["commit"] != now["commit"]:
        lines.append(f"代码提交已变化：{_short(saved['commit'])} → {_short(now['commit'])}")
    if saved["branch"] != now["branch"]:
        lines.append(f"分支已切换：{saved['branch'] or '（分离头指针）'} → {now['branch'] or '（分离头指针）'}")
    return lines


def _short(commit: str | None) -> str:
    return commit[:7] if commit else "（尚无提交）"


def _file_lines(saved: dict, now: dict) -> list[str]:
    changes = []
    for path in saved["files"].keys() | now["files"].keys():
        label = _change_label(_file_state(saved, path, now), _file_state(now, path, saved))
        if label:
            changes.append((_CHANGE_ORDER.index(label), path, label))
    changes.sort()
    lines = [f"{label}：{path}" for _, path, label in changes[:MAX_REPORTED_FILES]]
    if len(changes) > MAX_REPORTED_FILES:
        lines.append(f"…另有 {len(changes) - MAX_REPORTED_FILES} 个文件变化")
    return lines


def _file_state(snap: dict, path: str, other: dict) -> tuple[bool, str | None]:
    """(exists, fingerprint) of path in snap. In git mode a path missing from "files" is clean: it
    equals the commit, which has it unless the other side lists it as new. Across two commits that is
    the likely reading (an untracked file that appeared), not a certainty: the commit line says more."""
    if path in snap["files"]:
        return snap["files"][path] is not None, snap["files"][path]
    if snap["kind"] == "files":
        return False, None
    return path not in other["added"], "HEAD"


def _change_label(before: tuple[bool, str | None], after: tuple[bool, str | None]) -> str | None:
    (existed, old), (exists, new) = before, after
    if existed and not exists:
        return "文件已删除"
    if exists and not existed:
        return "新增文件"
    if exists and old != new:
        return "文件已修改"
    return None


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "."
    print(json.dumps(snapshot(target), ensure_ascii=False, indent=2))
