"""s11_workspace — 会话分支与代码分支不是一回事：记下保存时代码是什么样子。

    save  ── snapshot(folder) ──►  {"kind": "git", "commit": "3f2a9c1…", "branch": "main",
                                     "files": {"src/app.py": "9b1e…"}}   和消息存在一起
    load  ── drift(saved, folder) ──►  ["分支已切换：main → feature",
                                        "文件已修改：src/app.py"]          恢复之前先显示

关键洞察：会话记住的是*为什么*，仓库记住的是*是什么*；只恢复前者而不核对后者，Agent 就会对着
已经不在的代码推理。（Claude Code 在会话记录的每一行都写上 `cwd` 和 `gitBranch`，也是这个原因。）

快照格式（version 1，一个能 JSON 序列化的字典；"files" / "skipped" 的键是相对 "root" 的路径，
用正斜杠、排好序，所以同一棵目录树的两份快照相等）：

    git 模式——folder 在某个 git 工作树里，而且 `git` 命令能用：
      {"version": 1, "kind": "git", "root": "/abs/top-level", "commit": "<hex>" | None（还没有提交）,
       "branch": "main" | None（分离头指针）, "dirty": bool,
       "files":   {path: fingerprint | None},   # 只有改动过的和未跟踪的文件；None = 已删除
       "added":   [path, ...],                  # HEAD 里没有的改动路径（未跟踪的、已暂存的新文件）
       "skipped": {path: reason}, "truncated": bool}
      不在 "files" 里的路径是干净的，即与提交中的一致。覆盖的是整个工作树，
      即使 folder 只是其中的一个子目录。
    files 模式——没有 git、不是仓库，或者 git 出了任何错：
      {"version": 1, "kind": "files", "root": "/abs/folder",
       "files": {path: fingerprint}, "skipped": {path: reason}, "truncated": bool}
    missing——folder 不存在（取快照从不因此抛异常）：
      {"version": 1, "kind": "missing", "root": "/abs/folder"}

    fingerprint: 64 位十六进制     内容的 sha256
                 "link:<target>"   符号链接；从不跟随，所以遍历永远走不出 root
                 "stat:<size>:<mtime_ns>"  没有读内容，原因见 "skipped"：
                     "too-large"（> MAX_FILE_BYTES）、"unreadable"、"not-a-regular-file"
                 "unreadable"      连 stat() 都失败了
    skipped 里还列出列不出内容的目录（"unreadable-dir"）。

限制：MAX_FILE_BYTES（1 MiB）——更大的文件按大小 + mtime 取指纹，所以只是 touch 一下、内容没变，
也会报告为已修改。MAX_FILES（5000）——遍历到这个数就停下，并把快照标记为 "truncated"；最坏情况下
仍要读 MAX_FILES × MAX_FILE_BYTES。每条 git 命令限时 GIT_TIMEOUT_SECONDS。两种模式都从不进入
SKIP_DIRS（缓存、虚拟环境、.git）；要把会话仓库自己的目录传进 `exclude`，否则每次保存都会改变快照。

不做：被 git 忽略的文件（git 模式）、子模块的内容、已算哈希的文件的权限位和时间戳、恢复代码，
以及遍历进行中某个目录被换成链接这类竞争。跨两个不同的提交比较时，对某一侧干净的路径，
文件行是相对那一侧自己的提交而言的；这时要看的信号是提交那一行。
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

# 这些变量若是从 git 钩子或包装脚本继承来的，会让 git 指向 folder 以外的另一个仓库。
_REPOSITORY_OVERRIDES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR",
                         "GIT_OBJECT_DIRECTORY", "GIT_NAMESPACE")
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_BINARY", 0))
_COMMIT_PATTERN = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_KIND_NAMES = {"git": "git 仓库", "files": "普通文件夹", "missing": "目录不存在"}
_CHANGE_ORDER = ("文件已修改", "新增文件", "文件已删除")


class _GitFailed(Exception):
    """内部用：没有 git、folder 不是工作树，或者 git 行为异常 -> 改用 files 模式。"""


# ── 快照 ────────────────────────────────────────────────────────────────────────────────────────

def snapshot(folder: str | os.PathLike, *, exclude: Iterable[str | os.PathLike] = ()) -> dict:
    """描述 folder 里的代码（格式见模块的文档字符串）。git 出问题、folder 不存在、遍历途中文件消失，
    都不会抛异常。exclude 里的相对路径以当前工作目录为准。"""
    root = os.path.realpath(folder)
    if not os.path.isdir(root):
        return {"version": SNAPSHOT_VERSION, "kind": "missing", "root": _json_safe(root)}
    excluded = [os.path.realpath(path) for path in exclude]
    try:
        return _git_snapshot(root, excluded)
    except _GitFailed:
        return _files_snapshot(root, excluded)


def _git(git: str, cwd: str, *args: str, accept: tuple[int, ...] = (0,)) -> str:
    """运行一条只读的 git 命令，返回它的 stdout；任何失败都变成 _GitFailed。"""
    env = {key: value for key, value in os.environ.items() if key not in _REPOSITORY_OVERRIDES}
    env["GIT_OPTIONAL_LOCKS"] = "0"  # 用户同时在跑 git 时，status 不能去拿 index.lock
    try:
        done = subprocess.run([git, *args], capture_output=True, text=True, encoding="utf-8",
                              errors="surrogateescape", timeout=GIT_TIMEOUT_SECONDS, cwd=cwd, env=env)
    except Exception as error:  # 超时、git 程序不见了……：git 出错绝不能让保存失败
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
    """把每个改动过的路径映射到“HEAD 里没有它”；重命名的源路径在下一个字段里。

    ' M a.py\\0?? b.py\\0R  new.py\\0old.py\\0'
        -> {'a.py': False, 'b.py': True, 'old.py': False, 'new.py': True}
    """
    fields, entries, index = output.split("\0"), {}, 0
    while index < len(fields):
        record = fields[index]
        index += 1
        if len(record) < 4:
            continue  # 最后一个 NUL 后面的空字段
        code, path = record[:2], record[3:].rstrip("/")  # "?? nested-repo/" 指的是一个目录
        is_new = code == "??" or "A" in code
        if "R" in code or "C" in code:
            source, index = fields[index], index + 1
            is_new = True
            if "R" in code:  # 复制不会动它的源文件
                entries[source] = False
        # "D  x" 加上 "?? x"（从索引里删了，磁盘上还在）：HEAD 里有 x，所以不算新增
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
            continue  # 遍历途中被删掉了
        key = _json_safe(path)
        files[key] = fingerprint
        if reason:
            skipped[key] = reason
    return {"version": SNAPSHOT_VERSION, "kind": "files", "root": _json_safe(root),
            "files": dict(sorted(files.items())), "skipped": dict(sorted(skipped.items())),
            "truncated": truncated}


def _walk(root: str, skip: list[str], skipped: dict[str, str]) -> Iterator[str]:
    """按排好的顺序逐个给出 root 下每个非目录条目的相对路径，从不跟随链接。"""
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
        return entry.is_dir(follow_symlinks=False)  # 指向目录的链接只记录，不进入
    except OSError:
        return False


def _fingerprint(path: str) -> tuple[str | None, str | None]:
    """返回 (指纹, 内容为什么没有算哈希)；指纹为 None 表示文件已经不在了。

    b'hello\\n' -> ('5891b5b5…be03', None)；指向 ../x 的链接 -> ('link:../x', None)；
    一个 2 MiB 的文件 -> ('stat:2097152:1732870000000000000', 'too-large')
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
    except OSError:  # 权限不足，或者 lstat 之后被换成了链接或 FIFO
        return _stat_fingerprint(info), "unreadable"


def _sha256(path: str) -> str:
    # O_NOFOLLOW：lstat 之后被换成链接的文件，不能把我们带出 root；
    # O_NONBLOCK：被换进来的 FIFO 不能让保存卡住。
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
    """root 为 '/repo' 时 '/repo/.sessions' -> '.sessions'；root 以外的路径丢掉。"""
    relative = []
    for path in excluded:
        try:
            inside = os.path.relpath(path, root)
        except ValueError:  # Windows 上的另一个盘符
            continue
        if inside != os.pardir and not inside.startswith(os.pardir + os.sep):
            relative.append("" if inside == os.curdir else inside.replace(os.sep, "/"))
    return relative


def _is_excluded(path: str, skip: list[str]) -> bool:
    return any(not prefix or path == prefix or path.startswith(prefix + "/") for prefix in skip)


def _json_safe(text: str) -> str:
    """文件名里解不了码的字节（Python 把它们存成代理项）变成 \\xNN，这样
    json.dump(..., ensure_ascii=False) 才写得出快照：'caf\\udce9' -> 'caf\\\\xe9'。"""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


# ── 比较 ────────────────────────────────────────────────────────────────────────────────────────

def compare(saved: dict | None, now: dict | None) -> list[str]:
    """两份快照之间变了什么，每项一行简短的中文；两者一致或其中一份是 None 时返回 []。

    顺序：kind、root、commit、branch、文件（已修改、新增、已删除；每类按路径排）、截断。
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
        return lines  # git 的改动列表和完整的文件列表没法逐个文件比较
    if saved["kind"] == "git":
        lines += _git_lines(saved, now)
    lines += _file_lines(saved, now)
    if saved["truncated"] or now["truncated"]:
        lines.append(f"快照超过 {MAX_FILES} 个文件已截断，文件比较可能不完整")
    return lines


def drift(saved: dict | None, folder: str | os.PathLike, *,
          exclude: Iterable[str | os.PathLike] = ()) -> list[str]:
    """compare(saved, snapshot(folder))；会话没有记录快照时返回 []。"""
    if saved is None:
        return []
    return compare(saved, snapshot(folder, exclude=exclude))


def _is_snapshot(data: object) -> bool:
    """从会话文件里读回的快照可能是旧版的、手改过的或已损坏的：用之前先检查。"""
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
    """path 在 snap 里的 (是否存在, 指纹)。git 模式下不在 "files" 里的路径是干净的：它与提交中的一致，
    而提交里有它——除非另一侧把它列为新增。跨两个提交时，这只是最可能的解读（冒出了一个未跟踪的文件），
    并不确定：提交那一行能说明更多。"""
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
