"""convert.py — 内容块的有界副本：保留 Agent 的原生形状，但长文本截断、图片占位、太深的参数压成文本

    content（字符串或块列表）──► Converter.content(value, limit)
        text / thinking      超过 limit 个字符截断，块上记下 truncated_from（原长）；不要思考签名
        image / document     只留占位 {"type": "image", "omitted": true, "media_type": ..., "size": base64 长度}
        tool_use / toolCall  参数的副本：长字符串截断，嵌套超过 MAX_DEPTH 层的部分存成 JSON 文本
        tool_result          里面的块按 TOOL_OUTPUT_LIMIT 截断；结果里再套的结果按未知块保留（不递归）
        不认识的块             原样保留（有界），导出按“未知内容块”显示

保证：输出里没有超过上限的字符串，没有超过 MAX_DEPTH 层的嵌套（仓库拒绝存超过 100 层的消息）；
遍历用显式栈，几千层深的工具参数也不爆递归。Converter 数着截断、压平（导入报告据此写警告）和图片的次数。
"""

from __future__ import annotations

import json
from typing import Any, List, Optional, Tuple

__all__ = ["Converter", "TOOL_OUTPUT_LIMIT", "TEXT_LIMIT", "MAX_DEPTH", "COMPACT"]

TOOL_OUTPUT_LIMIT = 20_000              # 工具输出（和工具调用参数里的长字符串）最多保留这么多字符
TEXT_LIMIT = 100_000                    # 用户 / 助手文本、思考最多保留这么多字符
MAX_DEPTH = 60                 # 工具参数里更深的部分存成 JSON 文本（仓库拒绝嵌套超过 100 层的消息）

COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode   # C 编码器：没有缩进才用得上


class Converter:
    """content（字符串或块列表）→ 有界的副本：长文本截断、图片占位、去掉签名；统计截断和图片数。"""

    def __init__(self):
        self.truncated = 0
        self.flattened = 0
        self.images = 0

    def content(self, value: Any, limit: int) -> Any:
        if value is None or (isinstance(value, str) and len(value) <= limit):
            return value
        if isinstance(value, str):
            return [self.text_block("text", "text", value, limit)]
        if isinstance(value, list):
            return [self.block(item, limit) for item in value]
        return [{"type": "text", "text": self.cut(json.dumps(value, ensure_ascii=False), limit)[0]}]

    def block(self, block: Any, limit: int) -> dict:
        if isinstance(block, dict) and block.get("type") == "text":   # 最常见的块走捷径
            text = block.get("text")
            if isinstance(text, str) and len(text) <= limit:
                return {"type": "text", "text": text}
        if isinstance(block, str):
            return self.text_block("text", "text", block, limit)
        if not isinstance(block, dict):
            return {"type": "text", "text": json.dumps(block, ensure_ascii=False)}
        kind = block.get("type")   # 文件里的 type 可能是列表：不能拿去查字典
        reader = _BLOCKS.get(kind) if isinstance(kind, str) else None
        return (reader or _other_block)(self, block, limit)

    def cut(self, text: str, limit: int) -> Tuple[str, Optional[int]]:
        if len(text) <= limit:
            return text, None
        self.truncated += 1
        return text[:limit], len(text)

    def text_block(self, kind: str, key: str, text: Any, limit: int) -> dict:
        text, original = self.cut(text if isinstance(text, str) else _json_text(text), limit)
        block = {"type": kind, key: text}
        if original is not None:
            block["truncated_from"] = original
        return block

    def image(self, block: dict) -> dict:
        """{"type": "image", "omitted": true, "media_type": ..., "size": base64 的字节数}"""
        self.images += 1
        source = block.get("source") if isinstance(block.get("source"), dict) else {}
        data = source.get("data", block.get("data"))
        media = source.get("media_type") or block.get("mimeType") or block.get("media_type") or "image"
        return {"type": block.get("type") or "image", "omitted": True, "media_type": str(media),
                "size": len(data) if isinstance(data, str) else 0}

    def bounded(self, value: Any, limit: int) -> Tuple[Any, Optional[int]]:
        """工具参数的副本：过长的字符串截断，嵌套超过 MAX_DEPTH 层的部分换成它的 JSON 文本
        （仓库拒绝存太深的消息）。显式栈，不用递归。返回 (副本, 被截断的最长原长)。

        最常见的参数是一层字典（值是短字符串、数字，或这些组成的列表）：没有要截断、压平的，直接复制
        （_flat_copy，结果和下面逐项走一遍完全相同，连键的先后也一样）。"""
        if type(value) is dict:
            copy = _flat_copy(value, limit)
            if copy is not None:
                return copy, None
        return self._walk(value, limit)

    def _walk(self, value: Any, limit: int) -> Tuple[Any, Optional[int]]:
        longest: Optional[int] = None
        root: List[Any] = [None]
        stack: List[Tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
        while stack:
            item, holder, key, depth = stack.pop()
            if isinstance(item, (dict, list)) and depth >= MAX_DEPTH:
                self.flattened += 1
                item = _deep_text(item)
            if isinstance(item, str):
                holder[key], original = self.cut(item, limit)
                longest = max(longest or 0, original) if original is not None else longest
            elif isinstance(item, dict):
                holder[key] = copy = {}
                stack.extend((child, copy, name, depth + 1) for name, child in item.items())
            elif isinstance(item, list):
                holder[key] = copy = [None] * len(item)
                stack.extend((child, copy, index, depth + 1) for index, child in enumerate(item))
            else:
                holder[key] = item
        return root[0], longest


_SCALARS = frozenset((int, float, bool, type(None)))


def _flat_copy(value: dict, limit: int) -> Optional[dict]:
    """一层字典的副本，值只能是不超过 limit 的字符串、数字、布尔、None，或由它们组成的列表；别的形状返回 None
    （交给 _walk）。_walk 用栈，字典的键是倒着放进副本的，这里也倒着放：两条路写出的字节相同。"""
    for child in value.values():
        kind = type(child)
        if kind is str:
            if len(child) > limit:
                return None
        elif kind is list:
            for item in child:
                if type(item) is str:
                    if len(item) > limit:
                        return None
                elif type(item) not in _SCALARS:
                    return None
        elif kind not in _SCALARS:
            return None
    return {name: child[:] if type(child) is list else child for name, child in reversed(value.items())}


def _deep_text(value: Any) -> str:
    try:
        return COMPACT(value)
    except RecursionError:
        return "（嵌套太深，已省略）"


def _json_text(value: Any) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _tool_call_block(convert: Converter, block: dict, key: str) -> dict:
    arguments, original = convert.bounded(block.get(key, {}), TOOL_OUTPUT_LIMIT)
    copy = {"type": block["type"], "id": block.get("id"), "name": block.get("name"), key: arguments}
    if original is not None:
        copy["truncated_from"] = original
    return copy


def _tool_result_block(convert: Converter, block: dict, limit: int) -> dict:
    content = block.get("content")
    if isinstance(content, list):   # 工具结果里再套工具结果不合常理：按未知块（有界、不递归）保留
        content = [_other_block(convert, item, TOOL_OUTPUT_LIMIT) if isinstance(item, dict) and
                   item.get("type") == "tool_result" else convert.block(item, TOOL_OUTPUT_LIMIT) for item in content]
    copy = {"type": "tool_result", "tool_use_id": block.get("tool_use_id"),
            "content": convert.content(content, TOOL_OUTPUT_LIMIT) if not isinstance(content, list) else content}
    if block.get("is_error"):
        copy["is_error"] = True
    if isinstance(copy["content"], list) and any("truncated_from" in b for b in copy["content"]):
        copy["truncated_from"] = max(b.get("truncated_from", 0) for b in copy["content"])
    return copy


def _other_block(convert: Converter, block: dict, limit: int) -> dict:
    copy, original = convert.bounded(block, limit)   # 不认识的块原样保留（有界），导出按“未知内容块”显示
    if original is not None:
        copy["truncated_from"] = original
    if copy.get("type") is not None and not isinstance(copy["type"], str):
        copy["type"] = _json_text(copy["type"])[:100]   # type 是列表或对象：存成它的文本，读它的程序才不会出错
    return copy


_BLOCKS = {
    "text": lambda c, b, limit: c.text_block("text", "text", b.get("text"), limit),
    "thinking": lambda c, b, limit: c.text_block("thinking", "thinking", b.get("thinking"), limit),  # 不要签名
    "redacted_thinking": lambda c, b, limit: {"type": "redacted_thinking", "omitted": True},
    "image": lambda c, b, limit: c.image(b),
    "document": lambda c, b, limit: c.image(b),
    "tool_use": lambda c, b, limit: _tool_call_block(c, b, "input"),
    "toolCall": lambda c, b, limit: _tool_call_block(c, b, "arguments"),
    "tool_result": _tool_result_block,
}
