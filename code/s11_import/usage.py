"""usage.py — 每条消息花了多少：token（输入 / 输出 / 缓存）、工具调用、耗时；按节点、按分支加总

    各家记录里的写法                                        导入后消息上的 "usage"（只有记录里有的键）
        Claude Code  message.usage {input_tokens, output_tokens,     {"input": …, "output": …,
                     cache_read_input_tokens, cache_creation_…}       "cache_read": …, "cache_write": …,
        Codex CLI    event_msg token_count（累计值，取两次之差）       "reasoning": …}
        Gemini CLI   tokens {input, output, cached, thoughts}
        Pi           usage {input, output, cacheRead, cacheWrite}
    耗时："duration_ms"（Claude 的 turn_duration 行、Codex 的 item 完成时间）；工具调用数从内容块数出来。

    totals(messages) ──► Totals(input, output, cache_read, cache_write, reasoning, tool_calls, duration_ms,
                                 recorded = 有 usage 的消息数)
    节点自己的花费 = totals(node.messages[fork_point:])；这条分支（从根到它）= totals(node.messages)

关键洞察：同一次 API 调用在记录里常常出现不止一次（Claude 一条回复分几行写，每行都带同样的 usage；
Codex 的 token_count 是累计值、还会重复写）——读的时候就保证“一次调用只记一次”，之后合并、加总都只是相加。
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterable, Mapping, Optional

__all__ = ["USAGE_KEYS", "normalised", "add", "Totals", "totals", "node_totals", "branch_totals", "describe"]

USAGE_KEYS = ("input", "output", "cache_read", "cache_write", "reasoning")
_TOOL_BLOCKS = ("tool_use", "toolCall")


def _count(value: Any) -> Optional[int]:
    """记录里的 token 数：非负整数才算（布尔、负数、字符串都不算）。"""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def normalised(raw: Any, names: Mapping[str, str]) -> Optional[Dict[str, int]]:
    """一家的 usage 对象 → 统一的键。names：我们的键 → 记录里的键。一个数都没有就是 None。"""
    if not isinstance(raw, dict):
        return None
    usage = {}
    for ours, theirs in names.items():
        value = _count(raw.get(theirs))
        if value is not None:
            usage[ours] = value
    return usage or None


def add(message: dict, usage: Optional[Mapping[str, int]], duration_ms: Any = None) -> None:
    """把一次调用的 usage（和耗时）加到消息上：合并流式分段、Codex 一轮里的几次调用时也用它。"""
    if usage:
        target = message.setdefault("usage", {})
        for key in USAGE_KEYS:
            if key in usage:
                target[key] = target.get(key, 0) + usage[key]
    duration = _count(duration_ms)
    if duration is not None:
        message["duration_ms"] = message.get("duration_ms", 0) + duration


@dataclass
class Totals:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0
    tool_calls: int = 0
    duration_ms: int = 0
    recorded: int = 0      # 带 usage 的消息数（0 = 记录里没有 token 数，不是“花了 0”）
    messages: int = 0

    def as_dict(self) -> Dict[str, int]:
        return asdict(self)


def totals(messages: Iterable[dict]) -> Totals:
    """一串消息的合计。消息里的数字来自别人的文件：不是非负整数的一律不算。"""
    result = Totals()
    for message in messages:
        result.messages += 1
        usage = message.get("usage")
        if isinstance(usage, dict):
            numbers = {key: _count(usage.get(key)) for key in USAGE_KEYS}
            if any(value is not None for value in numbers.values()):
                result.recorded += 1
            for key, value in numbers.items():
                if value is not None:
                    setattr(result, key, getattr(result, key) + value)
        duration = _count(message.get("duration_ms"))
        if duration is not None:
            result.duration_ms += duration
        content = message.get("content")
        if isinstance(content, list):
            result.tool_calls += sum(1 for block in content if isinstance(block, dict)
                                     and block.get("type") in _TOOL_BLOCKS)
    return result


def node_totals(node) -> Totals:
    """这个节点自己的花费：分叉处之后的消息（SessionNode 或有 messages / fork_point 的对象）。"""
    return totals(node.messages[node.fork_point or 0:])


def branch_totals(node) -> Totals:
    """从根到这个节点的整条分支：节点里存着分叉处之前的全部消息，所以就是它的全部消息。"""
    return totals(node.messages)


def describe(total: Totals) -> str:
    """一行中文：'输入 1,234 · 输出 567 · 缓存读 8,900 · 工具调用 3 次 · 耗时 12.3 秒'；没有 token 记录时照实说。"""
    parts = []
    if total.recorded:
        parts += [f"输入 {total.input:,}", f"输出 {total.output:,}"]
        if total.cache_read:
            parts.append(f"缓存读 {total.cache_read:,}")
        if total.cache_write:
            parts.append(f"缓存写 {total.cache_write:,}")
        if total.reasoning:
            parts.append(f"推理 {total.reasoning:,}")
    else:
        parts.append("记录里没有 token 数")
    parts.append(f"工具调用 {total.tool_calls} 次")
    if total.duration_ms:
        parts.append(f"耗时 {total.duration_ms / 1000:.1f} 秒")
    return " · ".join(parts)
