"""s11_fast.export — s11_export.message_parts 的加速：常见的内容块就地读成 Part，工具参数的 JSON 交给 orjson 排版

    s11_export.message_parts(message, tool_names) ──► accelerate(s11_export) 给的版本（S11_PLAIN=1 时不换）
        内容是一个字符串，或一串内容块，每块都是下面这几种之一：
            字符串 · None（跳过）· text / thinking（文字是字符串）· tool_use / toolCall（名字是字符串）
            · tool_result（content 和 tool_use_id 都是字符串）；没有一块带 truncated_from
        → 就地建出各个 Part：不经过分派表、不逐块 _replace；工具参数按 indent=2 排版：
          只由 dict、list、str、int、bool、None 组成的值交给 orjson（OPT_INDENT_2），其余的交给 s11_export._pretty_json
        其余的一切（工具角色的消息、图片、未知块、截断记录、列表形式的 tool_result、不是字符串的字段……）
        → 原样交给 s11_export.message_parts

关键洞察：导出时每条消息都要读一遍；一条消息摊平成几个 Part 本身不费事，费事的是每块都走一遍分派表、
_as_text、_replace，以及标准库 json 在 indent 不为 None 时退回纯 Python 的编码器（每个工具调用几微秒）。
对只由这六种类型组成的值，orjson 的 OPT_INDENT_2 与 json.dumps(indent=2, ensure_ascii=False) 写出的文字相同
（s11_fast.encode 的文档说明了为什么只认这六种类型；orjson 拒绝的——孤立代理项、超过 64 位的整数、太深——也交回朴素的）。

保证：返回的 Part 列表与 s11_export.message_parts 的逐项相同，抛的异常也相同（拿不准的都交给它）；
装没装 orjson、装的哪个版本，导出的字节都一样（tests/fast/test_export_fast.py 拿 s11_export 作 oracle：
hypothesis 生成的消息、真实的会话样本、敌意的文字）。本模块不导入本项目的任何模块：s11_export 把自己交进来。
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from s11_fast.encode import _plain_shape

try:   # 没装 orjson 时工具参数照旧由 s11_export._pretty_json 排版
    import orjson
except ImportError:
    orjson = None

__all__ = ["accelerate"]


def accelerate(plain: ModuleType) -> Callable[..., list]:
    """plain 是 s11_export 模块本身（它在自己的最后几行调用这里）。返回 message_parts 的加速版。"""
    plain_parts, part, tool_roles = plain.message_parts, plain.Part, plain.TOOL_ROLES
    pretty = _pretty(plain._pretty_json)

    def message_parts(message: dict, tool_names: dict[str, str] | None = None) -> list:
        content = message.get("content")
        parts = [part("text", content)] if type(content) is str else _common_blocks(content, tool_names or {})
        # 工具角色的消息要把 text 改成工具输出：交给朴素的（角色的判断放在读块之后，出错的先后与朴素的一样）
        if parts is None or message.get("role") in tool_roles:
            return plain_parts(message, tool_names)
        return parts

    def _common_blocks(content: Any, names: dict[str, str]) -> list | None:
        """内容块都是常见的几种时，它们的 Part；否则 None。"""
        if type(content) is not list:
            return None
        parts = []
        for block in content:
            if block is None:
                continue
            if type(block) is str:
                parts.append(part("text", block))
                continue
            if type(block) is not dict or "truncated_from" in block:
                return None
            kind = block.get("type")
            if kind == "text" or kind == "thinking":
                text = block.get(kind)
                if type(text) is not str:
                    return None
                parts.append(part(kind, text))
            elif kind == "tool_use" or kind == "toolCall":
                name = block.get("name")
                if type(name) is not str:
                    return None
                parts.append(part("tool_call", pretty(block.get("input" if kind == "tool_use" else "arguments", {})),
                                  name))
            elif kind == "tool_result":
                text, call_id = block.get("content"), block.get("tool_use_id")
                if type(text) is not str or type(call_id) is not str:
                    return None
                parts.append(part("tool_output", text, names.get(call_id, call_id), bool(block.get("is_error"))))
            else:
                return None
        return parts

    return message_parts


def _pretty(plain: Callable[[Any], str]) -> Callable[[Any], str]:
    """json.dumps(value, ensure_ascii=False, indent=2, default=str) 的加速版（plain 就是它）。"""
    if orjson is None:
        return plain

    def pretty(value: Any) -> str:
        if _plain_shape(value):
            try:
                return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
            except orjson.JSONEncodeError:   # 孤立代理项、超过 64 位的整数、太深：朴素的知道怎么写或怎么拒绝
                pass
        return plain(value)

    return pretty
