"""lines.py — 宽容地读 JSONL：一行 → 0..n 个 JSON 对象，读不出来的记进 skipped（行号从 1 开始）

    文件 ──► 大小检查（超过 max_bytes → TranscriptTooLarge）──► 开头 8 KB 有 NUL → UnsupportedFormat（二进制）
         ──► 逐行 json.loads ──► 对象：交给 take(t, obj, 行号, 行内序号)
                             ├─ 空行、不是对象、嵌套太深 → skipped
                             ├─ {...}{...} 粘在一行 → 都读出来（警告）
                             └─ 写到一半被打断、后面又接着写了一行 → 残行记进 skipped，接着写的那个完整对象照样读出

保证：源文件只读；读过的每一行要么变成对象，要么在 skipped 里有行号和中文原因。
有界：单个文件最多 DEFAULT_MAX_BYTES；在残行里找完整对象最多试 _MAX_TAIL_ATTEMPTS 个起点（不会二次方地重读）；
读了 _SNIFF_LINES 行还认不出格式就停下（那不是会话记录）。
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterator, List, Optional, Tuple

from s11_text import human_size

from .formats import known_formats
from .report import TranscriptTooLarge, UnsupportedFormat
from .transcript import Transcript

__all__ = ["read_lines", "DEFAULT_MAX_BYTES"]

DEFAULT_MAX_BYTES = 200 * 1024 * 1024   # 真实记录通常 < 20 MB；Claude Code 自己遇到 60 MB 的单行就打不开了
_SNIFF_BYTES = 8192            # 开头这么多字节里有 NUL 就是二进制文件
_SNIFF_LINES = 2000            # 这么多行里还认不出格式，就不是会话记录
_MAX_TAIL_ATTEMPTS = 1000      # 在残行里找“后面接着写的完整一行”时最多试这么多个起点


def read_lines(path: str, t: Transcript, max_bytes: int, take: Callable[[Transcript, dict, int, int], None]) -> int:
    """读一个文件的全部行，每个对象交给 take（格式表的分派函数）；返回读入的字节数。"""
    size = _check_size(path, max_bytes)
    with open(path, "rb") as handle:
        if b"\x00" in handle.read(_SNIFF_BYTES):
            raise UnsupportedFormat(f"{os.path.basename(path)} 是二进制文件，不是 {known_formats()} 的会话记录")
        handle.seek(0)
        for line, raw in enumerate(handle, 1):
            for sub, obj in enumerate(_objects(raw, line, t)):
                take(t, obj, line, sub)
            if t.format is None and line >= _SNIFF_LINES:
                break
    return size


def _check_size(path: str, max_bytes: int) -> int:
    size = os.path.getsize(path)
    if size > max_bytes:
        raise TranscriptTooLarge(f"{os.path.basename(path)} 有 {human_size(size)}，超过导入上限 {human_size(max_bytes)}"
                                 f"；仓库没有任何改动")
    return size


def _objects(raw: bytes, line: int, t: Transcript) -> Iterator[dict]:
    """一行 → 0..n 个 JSON 对象；读不出来的部分记进 skipped。"""
    try:
        value = json.loads(raw)
    except RecursionError:
        t.skip(line, "JSON 嵌套太深")
        return
    except ValueError as exc:
        yield from _recover(raw, line, t, exc)
        return
    if isinstance(value, dict):
        yield value
    else:
        t.skip(line, f"不是 JSON 对象（是 {_json_kind(value)}）")


def _recover(raw: bytes, line: int, t: Transcript, error: ValueError) -> Iterator[dict]:
    """两个对象粘在一行（{...}{...}），或写到一半被打断后又接着写了一行（{"type":"mess{...}）。"""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        t.skip(line, "空行")
        return
    found, position = _leading_objects(text)
    torn = position < len(text)
    if torn:
        tail = _complete_tail(text, position)
        found += [tail] if tail is not None else []
        detail = getattr(error, "msg", None) or getattr(error, "reason", None) or str(error)
        t.skip(line, f"JSON 不完整（写入被中断？）：{detail}" + (f"；其中 {len(found)} 个完整对象已读出" if found else ""))
    if isinstance(error, UnicodeDecodeError) and found:
        t.warnings.append(f"第 {line} 行不是有效的 UTF-8，解不开的字节已换成 �")
    if len(found) > 1:
        t.warnings.append(f"第 {line} 行有 {len(found)} 个 JSON 对象粘在一起，已分别读出")
    yield from (value for value in found if isinstance(value, dict))


def _leading_objects(text: str) -> Tuple[List[Any], int]:
    """从行首起一个接一个地读完整的 JSON 值（粘连的情形）；返回读出的值和读到的位置。"""
    decoder, found, position = json.JSONDecoder(), [], 0
    while position < len(text):
        try:
            value, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            break
        found.append(value)
        while position < len(text) and text[position] in " \t\r\n":
            position += 1
    return found, position


def _complete_tail(text: str, start: int) -> Optional[dict]:
    """残行后面接着写的那一整行：一个恰好结束在行尾的对象。从右往左试 '{"' 的位置，
    先遇到的是它内部的小对象（解析便宜、结束得早），第一个结束在行尾的就是它；试的次数有上限。"""
    decoder, position = json.JSONDecoder(), len(text)
    for _ in range(_MAX_TAIL_ATTEMPTS):
        position = text.rfind('{"', start + 1, position)
        if position < 0:
            return None
        try:
            value, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            continue
        if end == len(text) and isinstance(value, dict):
            return value
    return None


def _json_kind(value: Any) -> str:
    return {str: "字符串", int: "数字", float: "数字", list: "数组", bool: "布尔值"}.get(type(value), "null")
