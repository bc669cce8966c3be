"""s11_fast.encode — s11_format._compact 的加速：只由 JSON 基本类型组成的值交给 orjson 编码，其余照旧

    s11_format._compact(value) ──► accelerate(朴素的 _compact) 给的 compact(value)   （S11_PLAIN=1 时不换）
        1. _plain_shape(value)：一趟不递归的遍历，确认每个对象（字典的键也算）的类型恰好是 dict、list、str、
           int、bool 或 None，而且没有一个容器出现两次（循环引用、共用的子对象）
        2. 是：orjson.dumps(value)；orjson 拒绝（孤立代理项、超过 64 位的整数、不是 str 的键、嵌套超过它的上限）
           时退回朴素的
        3. 否（浮点数、元组、子类、UUID、Enum、日期、dataclass、bytes……）：朴素的 _compact，结果和错误都是它的

关键洞察：对这六种类型，两个编码器写出的字节相同（键的顺序、分隔符、\\b \\f \\n \\r \\t 与小写的 \\u001f、
原样写出的 0x7f 和 U+2028/2029、整数的十进制写法）；两者不同的地方都在别的类型上——浮点数（orjson 写 1e-7、
NaN 写成 null，json 写 1e-07、NaN）、UUID 和 Enum（orjson 会编码，json 拒绝）、非字符串的键、子类。
所以先确认类型、再交给 orjson，不必逐字节比较输出；拿不准的一律交给朴素的编码器。

保证：compact(value) 与朴素的 _compact(value) 逐字节相同，抛的异常也相同（拿不准时抛错的就是朴素的那个）；
装没装 orjson、装的哪个版本，仓库的行为都一样（tests/fast/test_encode_fast.py 拿 s11_format 作 oracle：
hypothesis 在各种类型嵌套成的值上，还有真实的会话样本；S11_PLAIN=1 和没有 orjson 的运行结果相同）。
代价（benchmarks/bench_import.py 的九种 20 MB 记录，导入要编码的每条消息一次，按 json.loads 同一文件的倍数）：
这里 0.17–0.36 倍（遍历和 orjson 约各占一半），朴素的编码器 0.44–0.94 倍。
本模块不导入本项目的任何模块：s11_format 把自己的 _compact 交进来。
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:   # 没装 orjson 时 accelerate() 原样交回朴素的编码器
    import orjson
except ImportError:
    orjson = None

__all__ = ["accelerate"]


def accelerate(plain: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """朴素的 _compact → 结果逐字节相同、更快的 compact；没有 orjson 时就是 plain 本身。"""
    if orjson is None:
        return plain

    def compact(value: Any) -> bytes:
        if _plain_shape(value):
            try:
                return orjson.dumps(value)
            except orjson.JSONEncodeError:   # 孤立代理项、超过 64 位的整数、太深：朴素的编码器知道怎么写或怎么拒绝
                pass
        return plain(value)

    return compact


def _plain_shape(value: Any) -> bool:
    """value 是否只由类型恰好是 dict、list、str、int、bool、None 的对象（字典的键也算）组成，每个容器只出现一次。
    不递归（深的值也不会用完调用栈）；一个容器出现第二次（循环引用或共用的子对象）就答“否”，交给朴素的编码器。"""
    pending, seen = [value], set()
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is not dict and kind is not list:
            return False   # 浮点数、元组、子类、其余一切
        if id(item) in seen:
            return False
        seen.add(id(item))
        pending.extend(item)   # 列表的元素；字典的键（键是 int 等非 str 时 orjson 拒绝，退回朴素的编码器）
        if kind is dict:
            pending.extend(item.values())
    return True
