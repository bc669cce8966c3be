"""pi.py — Pi 的记录：~/.pi/agent/sessions/…/*.jsonl（v1、v2、v3）

    {"type": "session", "id", "version", "cwd", "timestamp"}             文件头（第一个为准）
    {"type": "message", "id", "parentId", "message": {"role", "content"}} 消息；role 决定形状：
        toolResult（工具输出）、bashExecution（用户用 ! 跑的命令）、custom / hookMessage（注入的提示）
    {"type": "compaction" | "branch_summary", "summary"}                 压缩 / 分支摘要：Agent 当时看到的就是它，
                                                                          作为一条 summary 消息保留
    {"type": "model_change" | "label" | "session_info" | "custom" …}      结构条目：只接线；label 和会话名记下来

本格式自己的规则：v1 的条目没有 id —— 按行号编号，并接在文件里的上一个条目后面（与 Pi 自己的迁移一致）；
活动端 = 文件里最后一个有效条目；会话名（session_info）当标题；系统提示词快照（customType 以 system-prompt
结尾）不保存；来源里记文件头的 cwd 和格式版本（Pi 不记录自己的版本）。
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from . import usage
from .convert import TEXT_LIMIT, TOOL_OUTPUT_LIMIT, Converter
from .transcript import Entry, Transcript, is_prompt, text_or_none

__all__ = ["READERS", "sniff", "ids", "active_hints", "origin"]


def sniff(obj: dict) -> bool:
    """Pi 写的对象：文件头 {"type": "session"}，或者 Pi 的条目类型（message 的 message 必须是对象：
    旧版 Codex 的行也叫 {"type": "message"}，但 role 直接写在外面）。"""
    kind = obj.get("type")
    if not isinstance(kind, str):
        return False
    if kind == "session":
        return "payload" not in obj and "uuid" not in obj
    if kind not in READERS or any(key in obj for key in ("payload", "uuid", "parentUuid", "sessionId")):
        return False
    return kind != "message" or isinstance(obj.get("message"), dict)


def ids(t: Transcript, obj: dict, line: int, sub: int) -> Tuple[Optional[str], Optional[str]]:
    """(uid, parent)。v1 的条目没有 id：按行号编号（L12、粘在一行的第二个 L12.1），接在上一个条目后面。"""
    if "id" in obj:
        return text_or_none(obj.get("id")), text_or_none(obj.get("parentId"))
    uid = f"L{line}" if not sub else f"L{line}.{sub}"
    parent, t.previous_uid = t.previous_uid, uid
    return uid, parent


# ── 行 ─────────────────────────────────────────────────────────────────────────────────────
def _header(t: Transcript, obj: dict, line: int, sub: int) -> None:
    if t.header:
        t.drop("session")
        return
    t.header = obj


def _message(t: Transcript, obj: dict, line: int, sub: int) -> None:
    body = obj.get("message")
    if not isinstance(body, dict):
        return t.skip(line, "message 字段不是对象")
    role = text_or_none(body.get("role"))
    if role is None:
        return t.skip(line, "消息缺少 role")
    message = _ROLES.get(role, _plain)(t.convert, body, role)
    if role == "assistant" and isinstance(body.get("model"), str):
        message["model"] = body["model"]
    if role == "assistant":   # 每条助手消息是一次 API 调用，usage 只写一次
        usage.add(message, usage.normalised(body.get("usage"), _USAGE_NAMES))
    _add(t, obj, line, sub, message)


_USAGE_NAMES = {"input": "input", "output": "output", "cache_read": "cacheRead", "cache_write": "cacheWrite"}


def _add(t: Transcript, obj: dict, line: int, sub: int, message: dict) -> None:
    uid, parent = ids(t, obj, line, sub)
    if uid is None:
        return t.skip(line, "条目缺少 id")
    if "id" in obj:
        message["id"] = uid
    if isinstance(obj.get("timestamp"), str):
        message["timestamp"] = obj["timestamp"]
    entry = Entry(uid, parent, line, "message", message, text_or_none(t.header.get("id")))
    entry.prompt = is_prompt(message)
    t.note_tool_calls(message, uid)
    t.add(entry)


def _plain(convert: Converter, body: dict, role: str) -> dict:
    message = {"role": role, "content": convert.content(body.get("content"), TEXT_LIMIT)}
    if isinstance(body.get("errorMessage"), str):
        message["error"] = body["errorMessage"]
    return message


def _tool_result(convert: Converter, body: dict, role: str) -> dict:
    message = {"role": "toolResult", "content": convert.content(body.get("content"), TOOL_OUTPUT_LIMIT),
               "toolCallId": body.get("toolCallId"), "toolName": body.get("toolName")}
    if body.get("isError"):
        message["isError"] = True
    return message


def _bash(convert: Converter, body: dict, role: str) -> dict:
    """用户在 Pi 里用 ! 直接跑的命令：命令和输出合成一段文本。"""
    text = f"$ {body.get('command', '')}\n{body.get('output') or ''}"
    block = convert.text_block("text", "text", text, TOOL_OUTPUT_LIMIT)
    message = {"role": "bashExecution", "content": [block]}
    if body.get("exitCode") not in (0, None):
        message["isError"] = True
    return message


def _custom(convert: Converter, body: dict, role: str) -> dict:
    return {"role": "custom", "content": convert.content(body.get("content"), TEXT_LIMIT), "meta": True}


_ROLES = {"toolResult": _tool_result, "bashExecution": _bash, "custom": _custom, "hookMessage": _custom}


def _summary(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """压缩摘要 / 分支摘要：Agent 当时看到的就是它，所以作为一条可见消息保留，标记 summary。"""
    role = "compactionSummary" if obj["type"] == "compaction" else "branchSummary"
    summary = obj.get("summary")
    message = {"role": role, "content": t.convert.content(summary if isinstance(summary, str) else "", TEXT_LIMIT),
               "summary": True}
    _add(t, obj, line, sub, message)


def _custom_message(t: Transcript, obj: dict, line: int, sub: int) -> None:
    _add(t, obj, line, sub, _custom(t.convert, obj, "custom"))


def _link(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """model_change / label / session_info / custom …：不是消息；名字和标签记下来，条目留作接线。"""
    kind = obj["type"]
    custom = obj.get("customType")
    system_prompt = kind == "custom" and isinstance(custom, str) and custom.endswith("system-prompt")
    t.drop("custom:system-prompt" if system_prompt else kind)   # 系统提示词快照不保存
    if kind == "label" and text_or_none(obj.get("targetId")):
        _set_label(t, obj["targetId"], obj.get("label"))
    elif kind == "session_info" and isinstance(obj.get("name"), str) and obj["name"].strip():
        t.set_title("session_info", obj["name"])
    elif kind == "session_info":   # 空名字表示清除会话名
        t.titles.get(t.home, {}).pop("session_info", None)
    uid, parent = ids(t, obj, line, sub)
    if uid:
        t.add(Entry(uid, parent, line, "link"))


def _set_label(t: Transcript, target: str, label: Any) -> None:
    if isinstance(label, str) and label.strip():
        t.labels[target] = label
    else:
        t.labels.pop(target, None)   # label 为空表示清除


READERS = {"session": _header, "message": _message, "compaction": _summary,
           "branch_summary": _summary, "custom_message": _custom_message,
           **{kind: _link for kind in ("model_change", "thinking_level_change", "label", "session_info",
                                       "custom")}}


# ── 本格式自己的规则 ─────────────────────────────────────────────────────────────────────────
def active_hints(t: Transcript, home: str) -> List[str]:
    """活动端的线索：文件里最后一个有效条目（Pi 回到旧分支时会在文件末尾接着写）。"""
    return [e.uid for e in t.order[-1:]]


def origin(t: Transcript, entry: Entry) -> Tuple[Optional[str], Optional[str], Dict[str, Any]]:
    """(Agent 版本, cwd, 其它来源字段)：Pi 不记录自己的版本；cwd 和格式版本取自文件头。"""
    extra = {"format_version": t.header["version"]} if isinstance(t.header.get("version"), int) else {}
    return None, text_or_none(t.header.get("cwd")), extra
