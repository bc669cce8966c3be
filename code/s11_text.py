"""s11_text.py — 给人看的文字：终端里安全的字符串、中文的系统错误、大小、截短、隐藏服务器路径

    会话里的文字（标题、消息、文件名）  ──►  printable()      终端、日志：控制字符显示成 \\u001b 这样的转义
    OSError                           ──►  describe_os_error / os_error_reason   一句中文，不夹英文 strerror
    字节数                              ──►  human_size()     1536 -> '1.5 KB'
    长标题                              ──►  shorten()        压掉换行，超长处写 …
    错误消息里的完整路径                  ──►  hide_paths() / hide_folders()   只留最后一段（目录名）

关键洞察：同一件事只写一次——命令行、页面和日志说同样的话，修一处就修了所有地方。

本模块只依赖标准库，不 import 任何 s11_* 模块（仓库、导入器、工作台都在它之上）。
"""

from __future__ import annotations

import errno
import os
import re
from typing import Any, Iterable

__all__ = ["printable", "describe_os_error", "os_error_reason", "ERRNO_TEXT", "human_size", "shorten",
           "hide_paths", "hide_folders", "public_name"]

# ── 终端里安全的字符串 ───────────────────────────────────────────────────────────────────────
# C0/C1 控制字符（含 ESC：终端转义序列的开头）、双向文字控制符（能把后面的字倒过来显示）、行/段分隔符、
# 不可见的格式字符（零宽空格、BOM、软连字符）、Unicode “标签”字符（能藏一整句看不见的英文）、孤立代理项。
# 零宽连接符 U+200D 保留：它只把 emoji 连成一个（👨‍👩‍👧），藏不了也翻不了任何文字。
_INVISIBLE = ("\u00ad\u061c\u180e\u200b\u200c\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
              "\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f")
_UNPRINTABLE = re.compile(f"[\x00-\x1f\x7f-\x9f{_INVISIBLE}]")
_UNPRINTABLE_KEEP_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def printable(text: Any, *, keep_newlines: bool = False) -> str:
    """打印会话里的任何文字之前先过这里：标题里的换行伪造不了树的行，ESC 序列清不了屏，U+202E 翻转不了后面的字。

    keep_newlines=True 保留换行和制表符（多行的导出、报告用）。

    >>> printable('a\\nb\\x1b[31m\\u202e')
    'a\\\\nb\\\\u001b[31m\\\\u202e'
    >>> printable('第一行\\n第二行', keep_newlines=True)
    '第一行\\n第二行'
    """
    pattern = _UNPRINTABLE_KEEP_LINES if keep_newlines else _UNPRINTABLE
    return pattern.sub(_visible_escape, str(text))


def _visible_escape(match: "re.Match[str]") -> str:
    char = match.group()
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


# ── 中文的系统错误 ───────────────────────────────────────────────────────────────────────────
# errno → 中文原因。系统自带的 strerror 是英文的，不混进给读者看的句子里。
ERRNO_TEXT = {code: text for code, text in (
    (errno.ENOENT, "不存在（可能刚被删掉）"),
    (errno.EACCES, "权限不足"),
    (errno.EPERM, "操作不被允许（权限不足，或被设为不可修改）"),
    (errno.ENOSPC, "磁盘空间不足"),
    (getattr(errno, "EDQUOT", None), "超出磁盘配额"),
    (errno.EROFS, "这是一个只读文件系统"),
    (errno.EISDIR, "是一个目录，不是文件"),
    (errno.ENOTDIR, "路径上有一段是普通文件，不是文件夹"),
    (errno.EEXIST, "路径上已有一个同名的普通文件，不是文件夹"),
    (errno.ELOOP, "是符号链接，或链接层数太多"),
    (errno.ENAMETOOLONG, "名字或路径太长"),
    (errno.EIO, "磁盘读写出错"),
    (errno.EMFILE, "同时打开的文件太多"),
    (errno.ENFILE, "系统打开的文件太多"),
    (errno.EBUSY, "正被占用"),
    (errno.ENXIO, "设备或套接字不可读"),
    (errno.EINVAL, "参数无效"),
    (errno.ENOTEMPTY, "文件夹不是空的"),
    (errno.EXDEV, "不能跨文件系统移动"),
    (errno.EFBIG, "文件太大"),
    (errno.ETXTBSY, "文件正被执行"),
) if code is not None}


def os_error_reason(exc: BaseException) -> str:
    """OSError → 只有原因的一句中文：'权限不足'、'磁盘空间不足'。

    本项目自己抛的 OSError（比如 s11_storage.NotRegularFile）不带 errno，把中文原因放在 strerror 里。
    不认识的 errno 只报编号。
    """
    number = getattr(exc, "errno", None)
    if number in ERRNO_TEXT:
        return ERRNO_TEXT[number]
    strerror = getattr(exc, "strerror", None)
    if not number and strerror:
        return str(strerror)
    return f"系统错误（errno {number}）" if number else f"系统错误（{type(exc).__name__}）"


def describe_os_error(exc: OSError) -> str:
    """OSError → 中文说明并写明文件：'/srv/s/.lock：权限不足（errno 13）'。"""
    where = "、".join(os.fsdecode(name) for name in (exc.filename, exc.filename2) if name is not None)
    code = f"（errno {exc.errno}）" if exc.errno and exc.errno in ERRNO_TEXT else ""
    reason = os_error_reason(exc) + code
    return f"{where}：{reason}" if where else reason


# ── 大小与长度 ──────────────────────────────────────────────────────────────────────────────
def human_size(count: int) -> str:
    """字节数 → 读得懂的大小，小于 1 KB 写字节数，其余保留一位小数（不会把 300 KB 写成 "0 MB"）。

    >>> [human_size(n) for n in (0, 1023, 1536, 3 * 1024 ** 2, 300 * 1024, 5 * 1024 ** 3)]
    ['0 字节', '1023 字节', '1.5 KB', '3.0 MB', '300.0 KB', '5.0 GB']
    """
    if count < 1024:
        return f"{count} 字节"
    value = float(count)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            return f"{value:.1f} {unit}"
    return f"{value:.1f} GB"


def shorten(text: Any, limit: int) -> str:
    """压掉换行和多余空格，超过 limit 个字时截断并写 …（按字符算）。

    >>> shorten('修复登录服务\\n内存泄漏 · 分支', 8)
    '修复登录服务 …'
    """
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + "…"


# ── 不把服务器上的路径给别人看 ─────────────────────────────────────────────────────────────────
# 一段绝对路径：可选的盘符，再是至少一个“/段/”。段里可以有单个空格（'/home/me/My Sessions/x.json'），
# 但不以空格开头或结尾，也不跨过中文标点和引号——错误消息里路径后面紧跟的就是它们。
# 反斜杠后面紧跟 ASCII 标点的是 Markdown 转义（'no\-such\-level'），不是 Windows 路径的分隔符。
_SEPARATOR = r"(?:/|\\(?![!-/:-@\[-`{-~]))"
_SEGMENT = r"[^\s/\\：，:'\"]+(?: [^\s/\\：，:'\"]+)*"
_ABSOLUTE_PATH = re.compile(rf"(?:[A-Za-z]:)?{_SEPARATOR}(?:{_SEGMENT}{_SEPARATOR})+")


def hide_paths(text: str) -> str:
    """把文字里的绝对路径只留最后一段（文件名）：'/srv/app/My Sessions/x.json：坏了' -> 'x.json：坏了'。

    >>> hide_paths('会话文件已损坏：/srv/app/My Sessions/spaces/ab/x.json：第 1 行')
    '会话文件已损坏：x.json：第 1 行'
    >>> print(hide_paths('没有关卡 no\\\\-such\\\\-level'))
    没有关卡 no\\-such\\-level
    """
    return _ABSOLUTE_PATH.sub("", str(text))


def public_name(folder: str | os.PathLike) -> str:
    """'/srv/app/gradio_sessions' -> 'gradio_sessions'：只说目录叫什么，不暴露服务器的目录结构。"""
    return os.path.basename(os.path.normpath(os.path.abspath(os.fspath(folder)))) or os.sep


def hide_folders(text: str, folders: Iterable[str | os.PathLike]) -> str:
    """把文字里出现的这些目录的完整路径换成目录名（仓库的错误消息会带上文件的完整路径）。"""
    for folder in folders:
        for spelling in {os.path.abspath(folder), os.path.realpath(folder)}:
            text = text.replace(spelling, public_name(folder))
    return text
