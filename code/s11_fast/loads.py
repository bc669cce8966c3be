"""s11_fast.loads — s11_import.lines.parse_line 的加速：orjson 读一行，拿不准的一律交回朴素的 parse_line

    s11_import.lines.parse_line(raw) ──► accelerate(朴素的 parse_line) 给的 parse_line(raw)   （S11_PLAIN=1 时不换）
        1. 以 '{' 开头（第二个字节不是 NUL）的行交给 orjson.loads；别的行、orjson 拒绝的行 → 朴素的
        2. orjson 读出来了：_exact(value) 一趟不递归的逐层遍历，确认里面没有浮点数、嵌套不超过 NESTING_LIMIT 层
        3. 是：就是它；否：扔掉，朴素的再读一遍（结果和异常都是 json.loads 的）

关键洞察：orjson 和 json.loads 只在这几处不同，每一处都落在“拒绝”或“浮点数”或“太深”上——
    json 接受、orjson 拒绝：孤立代理项（"\\ud800" 和 UTF-8 写出的代理项字节）、NaN / Infinity、1e400、BOM
        → orjson 抛错，交回朴素的，结果是 json 的
    两者都接受、值不同：超出 64 位的整数（orjson 读成浮点数，json 读成 int）；浮点数的舍入不去证明
        → 结果里有浮点数就交回朴素的
    json 拒绝、orjson 接受：嵌套太深（json 的 C 扫描器每层用一次调用栈，默认在约 1000 层减去已有的栈帧处
        抛 RecursionError，orjson 3.13 读到 1024 层）→ 超过 NESTING_LIMIT 层就交回朴素的
    其余（重复的键后者为准且位置不变、-0 是 int 0、控制字符和坏的转义都拒绝、"Extra data"、尾部空白）两者相同。
所以对只由 dict、list、str、int、bool、None 组成、不超过 100 层的值，两者的结果逐个相同（类型也相同）；
抛错的永远是朴素的那一个，跳过的原因和中文说明也就不变。

保证：parse_line(raw) 与朴素的 parse_line(raw)（即 json.loads(raw)）给出相同的值（类型也相同），或抛相同的异常。
json 自己的递归上限（约 1000 层减去调用栈上已有的帧）也一样：交回朴素的解析时，那几行朴素的正文就写在这里的同一帧里，
扫描器所在的栈深与朴素的 parse_line 相同，恰好在上限那一层的行两边也是同一个结果（真实记录不到 20 层）。装没装 orjson、装的哪个版本，导入的结果都一样
（tests/fast/test_loads_fast.py 拿朴素的 parse_line 作 oracle：hypothesis 造的各种值、各种写法、撕碎和改坏的字节，
真实的会话样本；S11_PLAIN=1 和没有 orjson 的运行结果相同）。
代价（benchmarks/bench_import.py 的 20 MB 记录，按 json.loads 同一文件的倍数）：朴素的 parse_line 约 0.75–0.85 倍，
这里约 0.6 倍（orjson 约 0.4，遍历约 0.2）；有浮点数的行（Pi 的 usage.cost）多花一次 orjson。
本模块不导入本项目的任何模块：s11_import.lines 把自己的 parse_line 交进来。
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

try:   # 没装 orjson 时 accelerate() 原样交回朴素的 parse_line
    import orjson
except ImportError:
    orjson = None

__all__ = ["accelerate", "NESTING_LIMIT"]

_LOADS = json.loads
_SCAN = json.JSONDecoder().scan_once   # 与 s11_import.lines 用的同一个 C 扫描器、同样的设置
_SPACE = json.decoder.WHITESPACE.match
_REFUSED = object()
NESTING_LIMIT = 100   # 不超过这么多层的值 json.loads 一定读得出（它的上限约是 1000 层减去调用栈上已有的帧）


def accelerate(plain: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    """朴素的 parse_line → 结果相同、更快的 parse_line；没有 orjson 时就是 plain 本身。"""
    if orjson is None:
        return plain

    def parse_line(raw: bytes) -> Any:
        if raw[:1] != b"{" or raw[1:2] == b"\x00":   # 同朴素的：别的行交给 json.loads
            return _LOADS(raw)
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            value = _REFUSED
        if value is not _REFUSED and _exact(value):
            return value
        # 朴素的 parse_line 的正文，写在这一帧里（不调用它）：json 的递归上限随调用栈移动，多一帧就少一层；
        # 这样交回朴素的解析时，扫描器所在的栈深与朴素的 parse_line 里的相同，在上限那一层也是同一个结果
        text = raw.decode("utf-8", "surrogatepass")
        try:
            value, end = _SCAN(text, 0)
        except StopIteration:   # 一个值开了头却没写完：json.loads 说它缺什么
            return _LOADS(raw)
        if end != len(text):
            end = _SPACE(text, end).end()
            if end != len(text):
                raise json.JSONDecodeError("Extra data", text, end)
        return value

    parse_line.__wrapped__ = plain   # tests/fast 拿它作 oracle
    return parse_line


def _exact(value: Any) -> bool:
    """orjson 读出的值里没有浮点数、嵌套不超过 NESTING_LIMIT 层（最外层算第 1 层）：这样的值 json.loads 读出的
    与它相同。逐层遍历、不递归；只看容器里的元素（orjson 读出的键都是 str）。

    >>> _exact({"a": [1, "x", None, {"b": True}]}), _exact({"a": [1.5]}), _exact({"a": 18446744073709551616.0})
    (True, False, False)
    """
    level, depth = [value], 0
    while level:
        depth += 1
        if depth > NESTING_LIMIT:
            return False
        below = []
        for container in level:
            for item in container.values() if type(container) is dict else container:
                kind = type(item)
                if kind is dict or kind is list:
                    below.append(item)
                elif kind is float:
                    return False
        level = below
    return True
