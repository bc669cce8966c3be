"""lines.py — 宽容地读 JSONL：一行 → 0..n 个 JSON 对象，读不出来的记进 skipped（行号从 1 开始）

    文件 ──► 大小检查（超过 max_bytes → TranscriptTooLarge）──► 开头 8 KB 有 NUL → UnsupportedFormat（二进制）
         ├─ 第一行只有 "{" 或 "["：一整个排版过的 JSON 文档（Gemini CLI 的 session-*.json）→ take_document
         └─ 逐行 json.loads ──► 对象：交给 take(t, obj, 行号, 行内序号)
                             ├─ 空行、不是 JSON、不是对象、嵌套太深 → skipped
                             ├─ {...}{...} 粘在一行 → 都读出来（警告）
                             └─ 写到一半被打断、后面又接着写了一行 → 残行记进 skipped，接着写的那个完整对象照样读出

保证：源文件只读；读过的每一行要么变成对象，要么在 skipped 里（前 SKIPPED_KEPT 行有行号和中文原因，其余按原因计数）。
有界、线性：正常的行只有一次 json.loads；残行从行尾往回找“结束在行尾的那个对象”只扫一遍、只试一次解析
（以前从右往左一个个 '{"' 试，一行里有几十个对象就要解析几十次）；读了 _SNIFF_LINES 行还认不出格式就停下
（那不是会话记录），认出格式之前最多攒 _PENDING_LIMIT 个对象。
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Callable, Iterator, List, Optional, Tuple

from s11_text import human_size, printable

from .formats import known_formats
from .report import TranscriptTooLarge, UnsupportedFormat
from .transcript import Transcript

__all__ = ["read_lines", "read_head", "parse_line", "DEFAULT_MAX_BYTES", "complete_tail"]

DEFAULT_MAX_BYTES = 200 * 1024 * 1024   # 真实记录通常 < 20 MB；Claude Code 自己遇到 60 MB 的单行就打不开了
_SNIFF_BYTES = 8192            # 开头这么多字节里有 NUL 就是二进制文件
_SNIFF_LINES = 2000            # 这么多行里还认不出格式，就不是会话记录
_PENDING_LIMIT = 10_000        # 认出格式之前最多攒这么多个对象（粘在一行的小对象也算）
_DECODER = json.JSONDecoder()  # 一个就够：raw_decode 不保留状态，每行新建一个要好几微秒
_LOADS = json.loads
_SCAN = _DECODER.scan_once     # json.loads 用的同一个 C 扫描器（同样的设置）
_SPACE = json.decoder.WHITESPACE.match
_STRUCTURE = re.compile(r'["{}\[\]]')
_BACKSLASHES = re.compile(r"\\*")
_BLANK = frozenset((b"\n", b"\r\n", b"", b" \n", b"\t\n"))
_COMPRESSED = {b"\x28\xb5\x2f\xfd": "zstd", b"\x1f\x8b": "gzip"}


def read_lines(path: str, t: Transcript, max_bytes: int, take: Callable[[Transcript, dict, int, int], None],
               take_document: Callable[[Transcript, Any], None]) -> int:
    """读一个文件的全部行，每个对象交给 take（格式表的分派函数）；JSON 文档整个交给 take_document。返回字节数。"""
    size = _check_size(path, max_bytes)
    with open(path, "rb") as handle:
        head = handle.read(_SNIFF_BYTES)
        _refuse_binary(path, head)
        if _is_document(head):
            handle.seek(0)
            take_document(t, _document(path, handle.read(max_bytes + 1)))
            return size
        handle.seek(0)
        for line, raw in enumerate(handle, 1):
            if t.format is None and (line > _SNIFF_LINES or len(t.pending) >= _PENDING_LIMIT):
                break   # 读了这么多还认不出格式：不是会话记录
            if len(raw) < 3 and raw in _BLANK:   # 空行不必让 json.loads 抛一次异常（600 万个空行就是 600 万次）
                t.skip(line, "空行")
                continue
            try:
                value = parse_line(raw)
            except RecursionError:
                t.skip(line, "JSON 嵌套太深")
                continue
            except ValueError as exc:
                for sub, obj in enumerate(_recover(raw, line, t, exc)):
                    take(t, obj, line, sub)
            else:
                if type(value) is dict:
                    take(t, value, line, 0)
                else:
                    t.skip(line, f"不是 JSON 对象（是 {_json_kind(value)}）", "不是 JSON 对象")
    return size


def parse_line(raw: bytes) -> Any:
    """json.loads(raw) 的捷径，结果和抛出的异常都与它相同。

    以 '{' 开头、第二个字节不是 NUL 的行，json.loads 一定按 UTF-8（surrogatepass）解码、从第 0 个字符扫描：
    这里直接做这两步，省掉它每行的编码探测、两层 Python 调用和一次正则（2.5 万行、24 MB 的 Codex 记录：
    逐行 json.loads 137 ms，这里 76 ms）。后面多出内容时抛的 "Extra data" 与 json.loads 逐字相同；
    别的行照旧交给 json.loads。"""
    if raw[:1] != b"{" or raw[1:2] == b"\x00":
        return _LOADS(raw)
    text = raw.decode("utf-8", "surrogatepass")
    try:
        value, end = _SCAN(text, 0)
    except StopIteration:   # pragma: no cover - 以 '{' 开头时扫描器自己抛 JSONDecodeError
        return _LOADS(raw)
    if end != len(text):
        end = _SPACE(text, end).end()
        if end != len(text):
            raise json.JSONDecodeError("Extra data", text, end)
    return value


def read_head(path: str, limit: int = 65536, objects: int = 40) -> List[dict]:
    """文件开头的几个 JSON 对象（最多读 limit 字节）：认格式、列会话、找子代理的会话 ID 都只看开头。

    读不了、是二进制、不是 JSON 都返回 []；排版过的 JSON 文档开头读不成对象，也返回 []。"""
    try:
        with open(path, "rb") as handle:
            head = handle.read(limit)
    except OSError:
        return []
    if b"\x00" in head[:_SNIFF_BYTES] or _is_document(head):
        return []
    found = []
    for raw in head.split(b"\n")[:objects]:
        try:
            value = _LOADS(raw)
        except (ValueError, RecursionError):
            continue
        if type(value) is dict:
            found.append(value)
    return found


def _check_size(path: str, max_bytes: int) -> int:
    size = os.path.getsize(path)
    if size > max_bytes:
        raise TranscriptTooLarge(f"{printable(os.path.basename(path))} 有 {human_size(size)}，超过导入上限 {human_size(max_bytes)}"
                                 f"；仓库没有任何改动")
    return size


def _refuse_binary(path: str, head: bytes) -> None:
    name = printable(os.path.basename(path))   # 文件名来自别人的机器：换行、终端转义一律显示成转义
    for magic, kind in _COMPRESSED.items():
        if head.startswith(magic):   # 新版 Codex 会把旧的记录压成 .jsonl.zst
            raise UnsupportedFormat(f"{name} 是 {kind} 压缩文件：先解压（例如 zstd -d）再导入；仓库没有任何改动")
    if b"\x00" in head:
        raise UnsupportedFormat(f"{name} 是二进制文件，不是 {known_formats()} 的会话记录；仓库没有任何改动")


def _is_document(head: bytes) -> bool:
    """第一行只有 '{' 或 '['：排版过的 JSON 文档（JSON.stringify(x, null, 2) 的样子），不是 JSONL。"""
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0].strip()
    return first in (b"{", b"[")


def _document(path: str, raw: bytes) -> Any:
    try:
        return parse_line(raw)   # 与 json.loads 相同（见 parse_line），整个文档也走同一个接缝
    except RecursionError:
        raise UnsupportedFormat(f"{printable(os.path.basename(path))} 是 JSON 文档，但嵌套太深，读不出来；仓库没有任何改动") from None
    except ValueError as exc:
        where = f"第 {exc.lineno} 行" if isinstance(exc, json.JSONDecodeError) else "某处"
        raise UnsupportedFormat(f"{printable(os.path.basename(path))} 像是一个 JSON 文档，但{where}不完整或不是 JSON"
                                f"（写入被中断？）；仓库没有任何改动") from None


def _recover(raw: bytes, line: int, t: Transcript, error: ValueError) -> Iterator[dict]:
    """两个对象粘在一行（{...}{...}），或写到一半被打断后又接着写了一行（{"type":"mess{...}）。"""
    text = raw.decode("utf-8", errors="replace").strip()
    if not text:
        t.skip(line, "空行")
        return
    if "{" not in text:   # 不可能有对象：不必再解析（乱码行最常见的情形）
        t.skip(line, f"不是 JSON：{_detail(error)}", "不是 JSON")
        return
    found, position, failed_at = _leading_objects(text)
    if position < len(text):
        tail = complete_tail(text, position, failed_at)
        found += [tail] if tail is not None else []
        kind = "JSON 不完整" if text[0] in "{[" or found else "不是 JSON"
        t.skip(line, f"{'JSON 不完整（写入被中断？）' if kind == 'JSON 不完整' else '不是 JSON'}：{_detail(error)}"
               + (f"；其中 {len(found)} 个完整对象已读出" if found else ""), kind)
    if isinstance(error, UnicodeDecodeError) and found:
        t.bad_utf8.add(f"{t.file_label}{line}")
    if len(found) > 1:
        t.glued.add(f"{t.file_label}{line}")
    for value in found:
        if isinstance(value, dict):
            yield value


# json / UTF-8 解码器的英文说明 -> 读者看得懂的中文（导入报告里每一行跳过的原因都是中文）
_PARSER_WORDS = {
    "Expecting value": "这里缺一个值", "Expecting ',' delimiter": "这里缺一个逗号",
    "Expecting ':' delimiter": "这里缺一个冒号", "Extra data": "一个值后面还有多余的内容",
    "Expecting property name enclosed in double quotes": "键名要用双引号括起来",
    "Unterminated string starting at": "字符串没有结束", "Invalid control character at": "字符串里有控制字符",
    "Invalid \\escape": "反斜杠转义写错了", "Invalid \\uXXXX escape": "\\u 转义写错了",
    "invalid start byte": "不是 UTF-8 编码（起始字节无效）", "invalid continuation byte": "不是 UTF-8 编码（后续字节无效）",
    "unexpected end of data": "UTF-8 字符被截断了",
}


def _detail(error: ValueError) -> str:
    """解析失败的原因（中文），带上出错的列：'这里缺一个逗号（第 17 列）'。没见过的英文说明原样附在后面。"""
    words = str(getattr(error, "msg", None) or getattr(error, "reason", None) or "无法解析")
    column = getattr(error, "colno", None) or (getattr(error, "start", -1) + 1 if hasattr(error, "start") else None)
    where = f"（第 {column} 列）" if isinstance(column, int) and column > 0 else ""
    chinese = _PARSER_WORDS.get(words)
    return (f"{chinese}{where}" if chinese else f"无法解析{where}：{words}")[:80]


def _leading_objects(text: str) -> Tuple[List[Any], int, int]:
    """从行首起一个接一个地读完整的 JSON 值（粘连的情形）；返回读出的值、读到的位置和解析出错的位置。"""
    found, position = [], 0
    while position < len(text):
        try:
            value, position = _DECODER.raw_decode(text, position)
        except RecursionError:
            return found, position, position
        except ValueError as exc:
            return found, position, getattr(exc, "pos", position) or position
        found.append(value)
        while position < len(text) and text[position] in " \t\r\n":
            position += 1
    return found, position, position


def complete_tail(text: str, floor: int = 0, failed_at: Optional[int] = None) -> Optional[dict]:
    """残行后面接着写的那一整行：一个恰好结束在行尾的对象。

    先试两个几乎总是对的起点，各只解析一次：从行首解析出错的地方往回最近的 '{'（残行在字符串、数字或逗号处
    断开时，解析器正是读到接着写的那一行的开头才出错），以及残行自己的开头在后面再出现的地方（Agent 的每一行
    都以同样的键开头）；都不中就从行尾往回扫一遍：字符串整段跳过（从收尾的引号直接找到开头的引号，数一数前面的反斜杠判断是否转义），
    只数字符串外面的括号；括号配平的那个 '{' 就是它的开头，然后只解析一次。在合法的 JSON 里这样找到的开头
    是唯一的，所以不用一个个起点去试；扫描只走过尾巴那个对象，不碰前面的残行。

    >>> complete_tail('{"type":"mess{"type":"message","text":"a}\\\\"b"}')
    {'type': 'message', 'text': 'a}"b'}
    >>> complete_tail('{"type":"message","text":"被打断') is None
    True
    """
    if not text.endswith("}"):
        return None
    near = [text.rfind("{", floor, failed_at + 1)] if failed_at is not None else []
    for start in near + _same_start(text, floor):   # 通常一次就中，见上
        value = _object_to_end(text, start) if start >= max(floor, 1) else None
        if value is not None:
            return value
    start = _tail_start(text, floor)
    return _object_to_end(text, start) if start is not None else None


def _same_start(text: str, floor: int, tries: int = 3) -> List[int]:
    """残行开头的 '{"键":值,' 在行里后面再出现的位置（从右往左，最多 tries 个）：Agent 每一行的开头都一样，
    所以接着写的那一行多半就从这里开始。找位置是 str.rfind（C），每个候选只解析一次。"""
    comma = text.find(",", 0, 48)
    prefix = text[:comma + 1] if comma > 2 else text[:10]
    found, position = [], len(text)
    while len(found) < tries:
        position = text.rfind(prefix, max(floor, 1), position)
        if position < 0:
            break
        found.append(position)
    return found


def _object_to_end(text: str, start: int) -> Optional[dict]:
    try:
        value, end = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return value if end == len(text) and isinstance(value, dict) else None


def _tail_start(text: str, floor: int) -> Optional[int]:
    mirrored = text[::-1]            # 倒过来的文本：往回扫就变成往前找，都在 C 里完成
    limit, depth, at = len(text) - floor, 0, 0
    while True:
        match = _STRUCTURE.search(mirrored, at, limit)
        if match is None:
            return None
        at = match.start()
        char = mirrored[at]
        if char == '"':              # 一个字符串的收尾：找它的开头，中间的括号都不算
            at = _string_start(mirrored, at + 1, limit)
            if at < 0:
                return None
        elif char in "}]":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return len(text) - 1 - at if char == "{" else None
            if depth < 0:
                return None
        at += 1


def _string_start(mirrored: str, at: int, limit: int) -> int:
    """倒过来的文本里，从 at 起下一个没有被转义的引号（原文里它前面的反斜杠是偶数个）。"""
    while True:
        at = mirrored.find('"', at, limit)
        if at < 0:
            return -1
        run = _BACKSLASHES.match(mirrored, at + 1, limit).end() - at - 1
        if run % 2 == 0:
            return at
        at += 1


def _json_kind(value: Any) -> str:
    return {str: "字符串", int: "数字", float: "数字", list: "数组", bool: "布尔值"}.get(type(value), "null")


# 加速（像 heapq 换上 _heapq）：s11_fast.loads 先让 orjson 读以 '{' 开头的行，值里有浮点数、嵌套超过 100 层或
# orjson 拒绝时仍由上面的 parse_line 读，所以结果和异常都与 json.loads 相同（tests/fast 拿这里作 oracle）。
# S11_PLAIN=1 关掉它；没有 s11_fast 或没装 orjson 时就用上面的。
if not os.environ.get("S11_PLAIN"):
    try:
        from s11_fast.loads import accelerate
    except ImportError:
        pass
    else:
        parse_line = accelerate(parse_line)
