"""gemini.py — Gemini CLI 的记录：~/.gemini/tmp/<项目>/chats/session-<时间>-<id>.jsonl（或旧的 .json）

    新版 JSONL，四种记录按形状区分（没有统一的 type 字段）：
        {"sessionId", "projectHash", "startTime", …}      文件头（第一个为准）
        {"id", "type": "user" | "gemini" | "info" | …}     一条消息；同一个 id 再写一遍是更新（token、工具结果到了），
                                                             最后一次为准，位置按第一次出现
        {"$set": {…}}                                       改元数据（summary 是 AI 起的标题）；带 messages 时是
                                                             一份完整快照：快照里新出现的消息接在后面，已有的不动
        {"$rewindTo": "<id>"}                               /rewind：这条和它之后的消息撤掉，之后的对话从它前面接着长
    旧版 .json：一整个排版过的文档 {"sessionId", "projectHash", "summary", "messages": [...]}，/rewind 直接截断
    /chat save 的 checkpoint-<tag>.json：{"history": [{"role", "parts"}]} 或直接是这个数组（原始 API 历史）

    gemini 消息 → assistant：thoughts → 思考块，content → 文本，toolCalls → tool_use + tool_result（结果就在同一条里）
    第一条 <session_context> 用户消息是 CLI 注入的环境信息：标成 meta（不是提问，不当标题）；info / warning / error 是界面提示：
    留作 {role: system, notice: 种类} 的消息；displayContent（用户打的字）是显示的提问，展开的全文在 expanded 里

本格式自己的规则：没有父指针，按“现在的对话”串成一条线（id = 消息 id）；$rewindTo 造成用户的真分支；
活动端是重放结束时的最后一条消息；标题是 summary；文件里没有 cwd——取项目文件夹里的 .project_root，
没有的话取 <session_context> 里列出的第一个工作目录。
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, List, Optional, Tuple

from . import usage
from .convert import TEXT_LIMIT, TOOL_OUTPUT_LIMIT
from .transcript import Entry, Transcript, as_list, is_prompt, text_or_none

__all__ = ["READERS", "sniff", "kind", "unknown", "ids", "active_hints", "origin", "document", "sniff_document"]

_TYPES = frozenset(("user", "gemini", "info", "error", "warning"))
_NOTICES = frozenset(("info", "error", "warning"))
_CONTEXT = ("<session_context>", "This is the Gemini CLI. We are setting up the context")
_WORKSPACE = re.compile(r"Workspace Directories:\**\s*\n\s*-\s*(/[^\n]{1,500})")


def sniff(obj: dict) -> bool:
    """Gemini CLI 写的对象：文件头（sessionId + projectHash）、$set、$rewindTo，或者一条消息记录
    （有 id、type 是 user / gemini / info……，没有 Claude 的 uuid、message 和 Codex 的 payload）。"""
    if "$rewindTo" in obj or isinstance(obj.get("$set"), dict):
        return True
    if isinstance(obj.get("sessionId"), str) and "projectHash" in obj:
        return True
    if any(key in obj for key in ("uuid", "parentUuid", "message", "payload", "sessionId")):
        return False
    kind = obj.get("type")
    return isinstance(kind, str) and kind in _TYPES and isinstance(obj.get("id"), str)


def kind(obj: dict) -> Optional[str]:
    if "$rewindTo" in obj:
        return "rewind"
    if "$set" in obj:
        return "set"
    if isinstance(obj.get("sessionId"), str) and "projectHash" in obj:
        return "metadata"
    return "record" if isinstance(obj.get("id"), str) else None


def sniff_document(doc: Any) -> bool:
    """一整个 JSON 文档：旧版会话 {messages: [...], sessionId}，或 /chat save 的检查点。"""
    if isinstance(doc, dict):
        return (isinstance(doc.get("messages"), list) and ("sessionId" in doc or "projectHash" in doc)) or \
            _is_history(doc.get("history"))
    return _is_history(doc)


def _is_history(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(turn, dict) and "role" in turn and isinstance(turn.get("parts"), list) for turn in value[:50])


def ids(t: Transcript, obj: dict, line: int, sub: int) -> Tuple[Optional[str], Optional[str]]:
    return text_or_none(obj.get("id")), _tail(t)


# ── 重放：live 是“现在的对话”（消息 uid 的列表），at 记着每个消息 id 在 live 里的位置 ─────────────
def _live(t: Transcript) -> Tuple[List[str], Dict[str, int]]:
    if "live" not in t.state:
        t.state["live"], t.state["at"], t.state["uid_of"] = [], {}, {}
    return t.state["live"], t.state["at"]


def _tail(t: Transcript) -> Optional[str]:
    live, _ = _live(t)
    return live[-1] if live else None


def _metadata(t: Transcript, obj: dict, line: int, sub: int) -> None:
    if t.header:
        t.drop("metadata")
    else:
        t.header = {key: obj[key] for key in ("sessionId", "projectHash", "startTime", "kind")
                    if isinstance(obj.get(key), str)}
        t.header["id"] = t.header.get("sessionId")
        t.header["timestamp"] = t.header.get("startTime")
    _merge(t, obj, line)


def _set(t: Transcript, obj: dict, line: int, sub: int) -> None:
    t.drop("$set")
    if isinstance(obj.get("$set"), dict):
        _merge(t, obj["$set"], line)


def _merge(t: Transcript, fields: dict, line: int) -> None:
    """元数据：summary 是标题；messages 是一份快照——里面新出现的消息接在现在的对话后面（例如压缩后的摘要），
    已经有的保持原样（快照会把旧的工具输出换成占位，原文更有用）。"""
    if isinstance(fields.get("summary"), str) and fields["summary"].strip():
        t.set_title("summary", fields["summary"])
    messages = fields.get("messages")
    if isinstance(messages, list):
        _, at = _live(t)
        for index, record in enumerate(messages):
            if isinstance(record, dict) and isinstance(record.get("id"), str) and record["id"] not in at:
                _record(t, record, line, index + 1)


def _record(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """一条消息：第一次出现时接在对话末尾；再出现是更新（最后一次为准，位置不变）。"""
    kind_name = obj.get("type") if isinstance(obj.get("type"), str) else None
    if kind_name not in ("user", "gemini") and kind_name not in _NOTICES:
        t.skip(line, f"未知的消息类型 {str(kind_name)[:40]!r}", "未知的消息类型")
        return
    if kind_name in _NOTICES:   # 界面提示（info / warning / error）：留作提示，不是对话
        t.drop(f"gemini:{kind_name}（留作提示）")
        message = {"role": "system", "notice": kind_name, "content": _parts(t, obj.get("content"), TEXT_LIMIT)}
    else:
        message = _user(t, obj) if kind_name == "user" else _gemini(t, obj)
    if isinstance(obj.get("timestamp"), str):
        message["timestamp"] = obj["timestamp"]
    live, at = _live(t)
    record_id = obj["id"]
    if record_id in at:   # 更新：换掉内容，条目和位置不变
        entry = t.entries[live[at[record_id]]]
        message["id"] = entry.uid
        entry.message = message
        entry.prompt = is_prompt(message)
        t.note_tool_calls(message, entry.uid)
        return
    uid_of = t.state["uid_of"]
    uid = record_id if record_id not in t.entries else f"{record_id}~{line}.{sub}"   # 撤掉后又用了同一个 id
    message["id"] = uid
    entry = Entry(uid, _tail(t), line, "message", message, text_or_none(t.header.get("sessionId")))
    entry.prompt = is_prompt(message)
    t.note_tool_calls(message, uid)
    if t.add(entry):
        at[record_id] = len(live)
        uid_of[uid] = record_id
        live.append(uid)


def _rewind(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """撤掉这条消息和它之后的全部：之后写下的消息从它前面接着长。id 不认识时 Gemini 自己会清空全部对话。"""
    t.drop("$rewindTo")
    live, at = _live(t)
    target = obj.get("$rewindTo")
    position = at.get(target) if isinstance(target, str) else None
    if position is None:
        t.warnings.append(f"第 {line} {t.unit} $rewindTo 指向不存在的消息：像 Gemini CLI 一样清空了当时的对话，"
                          f"之后的消息从一个新的起点开始")
        position = 0
    for uid in live[position:]:
        del at[t.state["uid_of"][uid]]
    del live[position:]


def unknown(t: Transcript, obj: dict, line: int, sub: int) -> None:
    t.skip(line, "认不出的 Gemini 记录（没有 id、$set 或 $rewindTo）", "认不出的 Gemini 记录")


READERS = {"metadata": _metadata, "record": _record, "set": _set, "rewind": _rewind}


# ── 内容 ───────────────────────────────────────────────────────────────────────────────────
def _user(t: Transcript, obj: dict) -> dict:
    """用户消息。displayContent 是用户实际打的字（/init、@文件），content 是 CLI 展开后发给模型的全文：
    显示打的字，展开的全文留在 expanded 里（浏览器里点一下就能看）。CLI 自己发的“System: Please continue.”
    不是用户打的字，标成 meta。"""
    blocks = _parts(t, obj.get("content"), TEXT_LIMIT)
    typed = _parts(t, obj.get("displayContent"), TEXT_LIMIT)
    message = {"role": "user", "content": blocks}
    if typed and _text(typed) != _text(blocks):
        message["content"], message["expanded"] = typed, _text(blocks)
    first = next((b.get("text", "") for b in blocks if b.get("type") == "text"), "")
    if first.strip() in _CONTINUE:
        message["meta"] = True
    if first.lstrip().startswith(_CONTEXT):
        message["meta"] = True   # CLI 注入的环境信息：日期、系统、工作目录、目录树
        found = _WORKSPACE.search(first[:20000])
        if found and "cwd" not in t.state:
            t.state["cwd"] = found.group(1).strip()
    return message


def _text(blocks: List[dict]) -> str:
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))


_CONTINUE = frozenset(("System: Please continue.", "Please continue."))
_TOKEN_NAMES = {"input": "input", "output": "output", "cache_read": "cached", "reasoning": "thoughts"}


def _gemini(t: Transcript, obj: dict) -> dict:
    blocks = []
    for thought in as_list(obj.get("thoughts")):
        if isinstance(thought, dict):
            text = ": ".join(str(thought[key]) for key in ("subject", "description") if thought.get(key))
            if text:
                blocks.append(t.convert.text_block("thinking", "thinking", text, TEXT_LIMIT))
    blocks += _parts(t, obj.get("content"), TEXT_LIMIT)
    for call in as_list(obj.get("toolCalls")):
        if isinstance(call, dict):
            blocks += _tool(t, call)
    message = {"role": "assistant", "content": blocks}
    if isinstance(obj.get("model"), str):
        message["model"] = obj["model"]
    usage.add(message, usage.normalised(obj.get("tokens"), _TOKEN_NAMES))   # 同一 id 再写一遍时整条换掉，不会重复
    return message


def _tool(t: Transcript, call: dict) -> List[dict]:
    call_id = text_or_none(call.get("id")) or "?"
    arguments = call.get("args") if isinstance(call.get("args"), dict) else {}
    use = t.convert.block({"type": "tool_use", "id": call_id, "name": text_or_none(call.get("name")) or "?",
                           "input": arguments}, TOOL_OUTPUT_LIMIT)
    if "result" not in call:
        return [use]
    result = {"type": "tool_result", "tool_use_id": call_id,
              "content": _parts(t, call.get("result"), TOOL_OUTPUT_LIMIT)}
    if call.get("status") in ("error", "cancelled"):
        result["is_error"] = True
    return [use, t.convert.block(result, TOOL_OUTPUT_LIMIT)]


def _parts(t: Transcript, content: Any, limit: int) -> List[dict]:
    """Gemini 的 PartListUnion（字符串、一个 Part 或 Part 列表）→ 块；图片、文件只留占位。"""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [t.convert.text_block("text", "text", content, limit)]
    parts = content if isinstance(content, list) else [content]
    blocks = []
    for part in parts[:10_000]:
        if isinstance(part, str):
            blocks.append(t.convert.text_block("text", "text", part, limit))
        elif not isinstance(part, dict):
            continue
        elif isinstance(part.get("text"), str):
            kind_name = "thinking" if part.get("thought") else "text"
            blocks.append(t.convert.text_block(kind_name, kind_name, part["text"], limit))
        elif isinstance(part.get("inlineData"), dict):
            data = part["inlineData"]
            t.convert.images += 1
            blocks.append({"type": "image", "omitted": True, "media_type": str(data.get("mimeType") or "image")[:100],
                           "size": len(data["data"]) if isinstance(data.get("data"), str) else 0})
        elif isinstance(part.get("functionResponse"), dict):
            response = part["functionResponse"].get("response")
            if isinstance(response, dict) and ("output" in response or "error" in response):
                response = response.get("output", response.get("error"))
            text = response if isinstance(response, str) else json.dumps(response, ensure_ascii=False)[:limit + 1]
            blocks.append(t.convert.text_block("text", "text", text, limit))
        else:   # functionCall、fileData 等：有界保留，导出按“未知内容块”显示
            blocks.append(t.convert.block({"type": next(iter(part), "part"), **part}, limit))
    return blocks


# ── JSON 文档：旧版会话、检查点 ───────────────────────────────────────────────────────────────
def document(t: Transcript, doc: Any) -> None:
    """旧版 session-*.json：文件头 + messages；检查点：原始的 API 历史（role user / model + parts）。
    文档里没有行号，跳过的“行”按第几条消息计。"""
    t.unit = "条消息"
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        header = {key: value for key, value in doc.items() if key != "messages"}
        _metadata(t, header, 0, 0)
        for index, record in enumerate(doc["messages"], 1):
            if isinstance(record, dict) and isinstance(record.get("id"), str):
                _record(t, record, index, 0)
            else:
                t.skip(index, "消息不是带 id 的对象", "消息不是带 id 的对象")
        return
    history = doc.get("history") if isinstance(doc, dict) else doc
    stem = os.path.splitext(t.file)[0]
    t.header = {"id": stem[len("checkpoint-"):] if stem.startswith("checkpoint-") else stem}
    for index, turn in enumerate(history, 1):
        if not isinstance(turn, dict) or not isinstance(turn.get("parts"), list):
            t.skip(index, "不是 {role, parts} 对象", "不是 {role, parts} 对象")
            continue
        role = "assistant" if turn.get("role") == "model" else "user"
        _record_turn(t, index, {"role": role, "content": _history_parts(t, turn["parts"])})


def _history_parts(t: Transcript, parts: List[Any]) -> List[dict]:
    blocks = []
    for part in parts:
        call = part.get("functionCall") if isinstance(part, dict) else None
        if isinstance(call, dict):
            blocks.append(t.convert.block({"type": "tool_use", "id": text_or_none(call.get("id")) or "?",
                                           "name": text_or_none(call.get("name")) or "?",
                                           "input": call.get("args") if isinstance(call.get("args"), dict) else {}},
                                          TOOL_OUTPUT_LIMIT))
        elif isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            response = part["functionResponse"]
            blocks.append({"type": "tool_result", "tool_use_id": text_or_none(response.get("id")),
                           "content": _parts(t, part, TOOL_OUTPUT_LIMIT)})
        else:
            blocks += _parts(t, part, TEXT_LIMIT)
    return blocks


def _record_turn(t: Transcript, index: int, message: dict) -> None:
    uid = f"C{index}"
    message["id"] = uid
    first = next((b.get("text", "") for b in message["content"] if b.get("type") == "text"), "")
    if message["role"] == "user" and first.lstrip().startswith(_CONTEXT):
        message["meta"] = True
    live, at = _live(t)
    entry = Entry(uid, _tail(t), index, "message", message, text_or_none(t.header.get("id")))
    entry.prompt = is_prompt(message)
    t.note_tool_calls(message, uid)
    if t.add(entry):
        at[uid] = len(live)
        t.state["uid_of"][uid] = uid
        live.append(uid)


# ── 本格式自己的规则 ─────────────────────────────────────────────────────────────────────────
def active_hints(t: Transcript, home: str) -> List[str]:
    """活动端：重放结束时对话的最后一条消息。"""
    tail = _tail(t)
    return [tail] if tail else []


def origin(t: Transcript, entry: Entry) -> Tuple[Optional[str], Optional[str], Dict[str, Any]]:
    """(版本, cwd, 其它来源字段)：Gemini CLI 不记版本；cwd 取项目文件夹的 .project_root 或注入的工作目录。"""
    extra = {"project_hash": t.header["projectHash"]} if t.header.get("projectHash") else {}
    return None, _project_root(t) or t.state.get("cwd"), extra


def _project_root(t: Transcript) -> Optional[str]:
    """~/.gemini/tmp/<项目>/.project_root（新版写的项目路径）：只读开头 4 KB，不跟符号链接。"""
    if "project_root" not in t.state:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(t.path))), ".project_root")
        found = None
        try:
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as handle:
                    found = handle.read(4096).decode("utf-8", "replace").strip().splitlines()[0][:500] or None
        except (OSError, IndexError):
            found = None
        t.state["project_root"] = found
    return t.state["project_root"]
