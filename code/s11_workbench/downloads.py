"""downloads.py — 所有标签页共用的一个下载目录：本进程私有（0700），旧的导出过一会儿就删

    8.11 的 run_demo ─┐
    浏览器的 export ──┴─> offer(session_id, markdown, html, owner=空间, key=内容指纹)   内容：字符串，或一串片段
                           │ downloads_root()        第一次用到时 mkdtemp（0700、名字随机），进程退出时整个删掉
                           │ ensure_private_folder() 已存在的目录必须是本账号的、别人进不去的真实目录
                           │ prune_old_exports()     先删掉比 EXPORT_KEEP_SECONDS 更旧的 run-* 目录
                           └─> <下载目录>/run-xxxx/session-<id>.md + session-<id>.html   每次一个新目录，两次导出互不覆盖
                               <下载目录>/owner-<空间>/run-<指纹>/…   给了 owner 时（offer_run()）：同样的内容只写一份
                                                                    （reuse_run() 在渲染之前就能找到它），每个空间
                                                                    最多 EXPORTS_PER_OWNER 份，多了删最旧的
    「🔗 分享」的 HTML + Markdown + JSONL ──> offer_run(owner=访客的空间, key=内容指纹, 三个文件)：同一个目录、同一个上限

Key insight: gradio 在事件返回时就把下载文件复制进自己的缓存，所以我们的副本只需活过这一次点击；
只有一个目录、一套检查、一种清理，哪个标签页的下载都一样安全、一样不会越积越多。

出错时抛 FolderUnavailable（一种 SessionError）：消息只写目录的名字和中文原因，不写服务器上的完整路径。
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from contextlib import contextmanager
from typing import Iterator

from s11_session import SessionError
from s11_text import os_error_reason, public_name

# Gradio 在事件返回时就把下载文件复制进自己的缓存，所以我们的副本只需活过这一次点击；留 15 分钟足够宽裕。
EXPORT_KEEP_SECONDS = 15 * 60
EXPORTS_PER_OWNER = 4      # 一个空间最多留几份导出（每份 = .md + .html）；连点导出不会越积越多
EXPORT_ROOT_PREFIX = "s11_exports-"
OWNER_PREFIX = "owner-"
_SAFE_NAME = re.compile(r"[0-9A-Za-z_-]{1,64}")
DOWNLOADS_FOLDER = "下载目录"


class FolderUnavailable(SessionError):
    """会话目录或下载目录用不了。消息只写目录的名字（页面不显示服务器上的完整路径）和中文原因。"""

    def __init__(self, kind: str, folder: str, reason: str):
        self.kind, self.folder, self.reason = kind, folder, reason
        super().__init__(f"无法写入{kind} {public_name(folder)}：{reason}")


@contextmanager
def blame(kind: str, folder: str) -> Iterator[None]:
    """这一段里的 OSError 都算在 kind（会话目录 / 下载目录）头上，换成带中文原因的 FolderUnavailable。"""
    try:
        yield
    except OSError as error:
        raise FolderUnavailable(kind, folder, os_error_reason(error)) from error


@functools.cache
def private_export_root() -> str:
    """本进程的下载目录：第一次用到时 mkdtemp 新建（0700、名字随机），进程退出时删掉。

    不用固定的 /tmp/s11_exports：那个名字别的账号可以抢先建好（之后每次点击都失败），也能偷看导出。
    """
    folder = tempfile.mkdtemp(prefix=EXPORT_ROOT_PREFIX)
    atexit.register(shutil.rmtree, folder, True)
    return folder


def downloads_root() -> str:
    """默认的下载根目录；连临时目录都建不了时，算在下载目录（系统临时目录）头上。"""
    with blame(DOWNLOADS_FOLDER, tempfile.gettempdir()):
        return private_export_root()


def ensure_private_folder(folder: str) -> None:
    """folder 不存在就以 0700 新建；已存在则必须是本账号的、别人进不去的真实目录，否则拒绝往里写导出。"""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise FolderUnavailable(DOWNLOADS_FOLDER, folder, "它不是一个真实的文件夹（可能是符号链接）")
    if os.name == "posix" and info.st_uid != os.getuid():
        raise FolderUnavailable(DOWNLOADS_FOLDER, folder, "它属于别的账号")
    if os.name == "posix" and info.st_mode & 0o077:
        raise FolderUnavailable(DOWNLOADS_FOLDER, folder, "别的账号也能读写它（权限应为 0700）")


def prune_old_exports(export_root: str, keep_seconds: float) -> None:
    """删掉 export_root 下（和各个 owner-* 目录里）比 keep_seconds 更旧的 run-* 目录；并发的两次清理互不报错。"""
    now = time.time()
    for entry in _runs(export_root):
        try:
            too_old = now - entry.stat().st_mtime > keep_seconds
        except FileNotFoundError:  # 另一个线程刚删掉它
            continue
        if too_old:
            shutil.rmtree(entry.path, ignore_errors=True)


def _scan(folder: str) -> list:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _runs(export_root: str) -> list:
    runs = []
    for entry in _scan(export_root):
        if entry.name.startswith("run-"):
            runs.append(entry)
        elif entry.name.startswith(OWNER_PREFIX) and entry.is_dir(follow_symlinks=False):
            runs += [inner for inner in _scan(entry.path) if inner.name.startswith("run-")]
    return runs


def _owner_folder(export_root: str, owner: str) -> str:
    if not _SAFE_NAME.fullmatch(owner):
        raise ValueError(f"owner {owner!r} 只能是字母、数字、- 和 _")
    return os.path.join(export_root, OWNER_PREFIX + owner)


def content_key(facts) -> str:
    """内容指纹（offer 的 key）：facts 能写成 JSON 的部分一样，指纹就一样。[1, "a"] -> 24 位十六进制。"""
    text = json.dumps(facts, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def export_files(session_id: str, markdown, html) -> list:
    """一次会话导出的两个文件：[(文件名, 内容)]；内容是字符串，或依次写出的一串字符串（见 write_text）。"""
    return [(f"session-{session_id}.md", markdown), (f"session-{session_id}.html", html)]


def reuse(session_id: str, owner: str, key: str, *, export_root: str | None = None) -> tuple[str, str] | None:
    """这个空间已经导出过同样内容（同一个 key）时，返回那两个文件（并把它记成刚用过）；否则 None。"""
    names = [name for name, _ in export_files(session_id, "", "")]
    return reuse_run(owner, key, names, export_root=export_root)


def reuse_run(owner: str, key: str, names, *, export_root: str | None = None) -> tuple[str, ...] | None:
    """owner-<owner>/run-<key>/ 里这些文件都在时返回它们的路径（并把这份记成刚用过）；否则 None。"""
    export_root = export_root or downloads_root()
    run_dir = os.path.join(_owner_folder(export_root, owner), f"run-{key}")
    paths = tuple(os.path.join(run_dir, name) for name in names)
    try:
        os.utime(run_dir)
    except OSError:
        return None
    return paths if all(os.path.isfile(path) for path in paths) else None


def cap_owner_exports(export_root: str, owner: str, cap: int, keep: str | None = None) -> int:
    """一个空间的导出超过 cap 份时删掉最旧的（keep 这份除外），返回删了几份。"""
    runs = []
    for entry in _scan(_owner_folder(export_root, owner)):
        if entry.name.startswith("run-") and entry.path != keep:
            try:
                runs.append((entry.stat().st_mtime_ns, entry.path))
            except FileNotFoundError:
                continue
    removed = 0
    for _, path in sorted(runs)[:max(0, len(runs) - (cap - (keep is not None)))]:
        shutil.rmtree(path, ignore_errors=True)
        removed += 1
    return removed


def write_text(path: str, text) -> None:
    """text：一个字符串，或依次写出的一串字符串（大文件不必先在内存里拼成一整个：每个片段各自编码成 UTF-8，
    纯 ASCII 的片段编码只是复制；拼起来的字符串里只要有一个 emoji，每个字符就都占 4 字节）。"""
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines([text] if isinstance(text, str) else text)


def write_run(folder: str, files) -> tuple[str, ...]:
    """把 files（[(文件名, 内容)]）写进 folder 下一个全新的 run-* 目录，按顺序返回各文件的路径。"""
    ensure_private_folder(folder)
    run_dir = tempfile.mkdtemp(prefix="run-", dir=folder)
    try:
        paths = []
        for name, text in files:
            path = os.path.join(run_dir, name)
            write_text(path, text)
            paths.append(path)
        return tuple(paths)
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)  # 失败时不留下半个导出目录
        raise


def write_exports(session_id: str, markdown, html, export_root: str) -> tuple[str, str]:
    """把两份导出写进 export_root 下一个全新的 run-* 目录，返回 (.md 路径, .html 路径)。"""
    return write_run(export_root, export_files(session_id, markdown, html))


def offer(session_id: str, markdown, html, *, export_root: str | None = None,
          keep_seconds: float = EXPORT_KEEP_SECONDS, owner: str | None = None, key: str | None = None,
          cap: int = EXPORTS_PER_OWNER) -> tuple[str, str]:
    """一次导出的两个下载文件 (.md 路径, .html 路径)：先清掉旧的，再写进检查过的私有目录。
    markdown、html：字符串，或一串片段（s11_export.markdown_chunks / html_chunks，边渲染边写）。

    给了 owner（空间）和 key（内容指纹，字母数字）时交给 offer_run()：同一个 key 只写一份，
    这个空间的导出超过 cap 份时删掉最旧的。
    export_root 默认是本进程的 downloads_root()；写不进去时抛 FolderUnavailable（算在下载目录头上）。
    """
    files = export_files(session_id, markdown, html)
    if owner is not None and key is not None:
        return offer_run(owner, key, files, export_root=export_root, keep_seconds=keep_seconds, cap=cap)
    export_root = export_root or downloads_root()
    with blame(DOWNLOADS_FOLDER, export_root):
        prune_old_exports(export_root, keep_seconds)
        return write_exports(session_id, markdown, html, export_root)


def offer_run(owner: str, key: str, files, *, export_root: str | None = None,
              keep_seconds: float = EXPORT_KEEP_SECONDS, cap: int = EXPORTS_PER_OWNER) -> tuple[str, ...]:
    """一个空间的一份下载（任意几个文件）：files = [(文件名, 内容)]，内容是字符串或依次写出的一串字符串。

    写进 owner-<owner>/run-<key>/：这个 key 已经有一份时直接用它，内容一个字也不读（可以是还没开始的生成器，
    没变的内容就不必渲染）；这个空间的下载超过 cap 份时删掉最旧的。📤 导出和 🔗 分享都走这里。
    """
    export_root = export_root or downloads_root()
    if not _SAFE_NAME.fullmatch(key):
        raise ValueError(f"key {key!r} 只能是字母、数字、- 和 _")
    with blame(DOWNLOADS_FOLDER, export_root):
        prune_old_exports(export_root, keep_seconds)
        ensure_private_folder(export_root)
        folder = _owner_folder(export_root, owner)
        ensure_private_folder(folder)
        run_dir = os.path.join(folder, f"run-{key}")
        names = [name for name, _ in files]
        found = reuse_run(owner, key, names, export_root=export_root)
        if found is None:
            fresh = os.path.dirname(write_run(folder, files)[0])
            try:
                os.rename(fresh, run_dir)   # 原子地就位
            except OSError:
                shutil.rmtree(fresh, ignore_errors=True)
                if not os.path.isdir(run_dir):   # 不是“同时导出的另一次先到了”：真的写不进去
                    raise
            found = tuple(os.path.join(run_dir, name) for name in names)
        cap_owner_exports(export_root, owner, cap, keep=run_dir)
        return found
