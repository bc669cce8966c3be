"""codex.py — OpenAI Codex CLI 的记录：~/.codex/sessions/YYYY/MM/DD/rollout-<时间>-<id>.jsonl

    {"timestamp", "type": "session_meta", "payload": {id, cwd, cli_version, git, source, forked_from_id …}}  文件头
    {"timestamp", "type": "response_item", "payload": {"type": …}}   真正的对话：
        message（role user / assistant / developer）        input_text / output_text / input_image 块
        reasoning（summary[].text，content[].text）          思考；encrypted_content 从不保存
        function_call / custom_tool_call / local_shell_call / web_search_call    工具调用（arguments 是 JSON 字符串）
        function_call_output / custom_tool_call_output       工具输出（按 call_id 配对）→ role "tool"
    {"type": "event_msg", "payload": {"type": …}}   界面的镜像（user_message、agent_message、token_count……）：
        不当对话读（否则每句话出现两次），只用 thread_rolled_back（回滚）
    {"type": "turn_context" | "compacted", …}        每轮的设置（模型、cwd）；压缩摘要（作为一条 summary 消息）
    旧版（2025 年年中）：第一行是没有 type 的文件头 {"id", "timestamp", "instructions"}，之后是裸的
        {"type": "message", "role": …} 这样的条目和 {"record_type": "state"}——先换成上面的样子再读

本格式自己的规则：条目没有 id、没有父指针，按文件顺序串成一条线（id = 行号）；连续的推理、工具调用和回答是
同一次回复（stream 相同，建图时合成一条消息）；thread_rolled_back {num_turns: N} 撤掉最后 N 轮用户输入，
之后的对话从撤掉的第一轮之前接着长——这是用户造成的真分支；活动端是最后写下的那条消息（回滚之后是回滚到的位置）；
AGENTS.md、<environment_context> 这类注入的“用户消息”和 developer 消息标成 meta（不是提问，不当标题）；
来源里记 cli_version、cwd、git（仓库地址里的用户名密码去掉）、派生自哪个会话。
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, List, Optional, Tuple

from .convert import TEXT_LIMIT, TOOL_OUTPUT_LIMIT
from .transcript import Entry, Transcript, as_list, is_prompt, text_or_none

__all__ = ["READERS", "sniff", "kind", "unknown", "ids", "active_hints", "origin"]

_ENVELOPES = frozenset(("session_meta", "response_item", "event_msg", "turn_context", "compacted",
                        "inter_agent_communication", "inter_agent_communication_metadata", "token_usage_record",
                        "world_state", "retained_context", "security_risk_score", "realtime_item"))
_ITEMS = frozenset(("message", "reasoning", "function_call", "function_call_output", "local_shell_call",
                    "custom_tool_call", "custom_tool_call_output", "web_search_call"))
_CALLS = ("function_call", "custom_tool_call", "local_shell_call", "web_search_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_CONTEXT_MARKERS = ("# agents.md instructions", "<user_instructions>", "<environment_context>", "<skill",
                    "<user_shell_command>", "<turn_aborted>", "<subagent_notification>", "<collaboration_mode>")
_USERINFO = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/@\s]*@", re.IGNORECASE)


def sniff(obj: dict) -> bool:
    """Codex 写的对象：新的 {type, payload} 信封；旧的无 type 文件头、裸条目（role 写在外面）、record_type 行。"""
    if any(key in obj for key in ("uuid", "parentUuid", "sessionId", "projectHash", "$set", "$rewindTo")):
        return False
    kind = obj.get("type")
    kind = kind if isinstance(kind, str) else None   # 文件里的 type 可能是列表：不能拿去查集合
    if "payload" in obj:
        return kind in _ENVELOPES
    if "record_type" in obj:
        return True
    if kind is None:
        return isinstance(obj.get("id"), str) and "timestamp" in obj and "messages" not in obj
    if kind == "message":
        return isinstance(obj.get("role"), str) and "message" not in obj
    return kind in _ITEMS


def kind(obj: dict) -> Optional[str]:
    """一个对象 → READERS 的键：旧版的裸条目算 response_item，无 type 的文件头算 session_meta。"""
    value = obj.get("type")
    if "payload" in obj:
        return value if isinstance(value, str) else None
    record = obj.get("record_type")
    record = record if isinstance(record, str) or record is None else "?"
    if record is not None:
        return {"session_meta": "session_meta", "prev_session_meta": "session_meta", "response": "response_item",
                "event": "event_msg"}.get(record, "state")
    if value is None and "id" in obj:
        return "session_meta"
    if not isinstance(value, str):
        return None
    return "response_item" if value in _ITEMS else value


def _payload(obj: dict) -> dict:
    payload = obj.get("payload", obj)
    return payload if isinstance(payload, dict) else {}


def ids(t: Transcript, obj: dict, line: int, sub: int) -> Tuple[Optional[str], Optional[str]]:
    """(uid, parent)：没有 id，按行号编号（L12、粘在一行的第二个 L12.1），接在当前位置（tip）后面。"""
    return (f"L{line}" if not sub else f"L{line}.{sub}"), t.state.get("tip")


# ── 行 ─────────────────────────────────────────────────────────────────────────────────────
def _session_meta(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """第一个 session_meta 是这个文件的身份；后面的（分叉、子代理会抄来源的）只计数。"""
    if t.header:
        t.drop("session_meta")
        return
    payload = _payload(obj)
    t.header = {key: payload[key] for key in ("id", "timestamp", "cwd", "cli_version", "originator",
                                              "forked_from_id", "thread_source") if isinstance(payload.get(key), str)}
    if isinstance(payload.get("git"), dict):
        t.header["git"] = {key: value for key, value in payload["git"].items() if isinstance(value, str)}
    spawn = payload.get("source")
    spawn = spawn.get("subagent") if isinstance(spawn, dict) else None
    spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
    parent = (spawn or {}).get("parent_thread_id") or payload.get("parent_thread_id")
    if isinstance(parent, str):
        t.header["parent_thread_id"] = parent


def _response_item(t: Transcript, obj: dict, line: int, sub: int) -> None:
    item = _payload(obj)
    kind_name = item.get("type")
    reader = _ITEM_READERS.get(kind_name) if isinstance(kind_name, str) else None
    if reader is None:   # ghost_snapshot、加密的 compaction、以后的新类型：不是能显示的对话
        t.drop(f"response_item:{kind_name}" if isinstance(kind_name, str) else "response_item")
        return
    message = reader(t, item)
    if message is None:
        return t.skip(line, f"{kind_name} 条目缺少必要的字段", f"{kind_name} 条目不完整")
    if isinstance(obj.get("timestamp"), str):
        message["timestamp"] = obj["timestamp"]
    _add(t, line, sub, message, assistant_side=kind_name in _CALLS or kind_name == "reasoning" or
         (kind_name == "message" and message["role"] == "assistant"))


def _add(t: Transcript, line: int, sub: int, message: dict, assistant_side: bool) -> None:
    uid, parent = (f"L{line}" if not sub else f"L{line}.{sub}"), t.state.get("tip")   # = ids()，少一次调用
    message["id"] = uid
    entry = Entry(uid, parent, line, "message", message, text_or_none(t.header.get("id")))
    if assistant_side:
        entry.stream = f"turn-{t.state.get('turn', 0)}"
        if t.state.get("model"):
            message["model"] = t.state["model"]
    else:
        t.state["turn"] = t.state.get("turn", 0) + 1   # 一次回复到此为止
    entry.prompt = is_prompt(message)
    if entry.prompt:
        t.state.setdefault("turns", []).append((uid, parent))
    t.note_tool_calls(message, uid)
    if t.add(entry):
        t.state["tip"] = uid


def _message(t: Transcript, item: dict) -> Optional[dict]:
    role = text_or_none(item.get("role"))
    if role is None:
        return None
    blocks = _blocks(t, item.get("content"), TEXT_LIMIT)
    message = {"role": role, "content": blocks}
    first = next((b.get("text", "") for b in blocks if b.get("type") == "text"), "")
    if role in ("developer", "system") or (role == "user" and first.lstrip().lower().startswith(_CONTEXT_MARKERS)):
        message["meta"] = True   # AGENTS.md、环境信息、权限说明：Codex 注入的，不是用户打的字
    return message


def _reasoning(t: Transcript, item: dict) -> Optional[dict]:
    texts = [part.get("text") for key in ("summary", "content") for part in as_list(item.get(key))
             if isinstance(part, dict) and isinstance(part.get("text"), str)]
    if not texts:
        return {"role": "assistant", "content": [{"type": "redacted_thinking", "omitted": True}]}
    return {"role": "assistant", "content": [t.convert.text_block("thinking", "thinking", "\n\n".join(texts),
                                                                  TEXT_LIMIT)]}


def _call(t: Transcript, item: dict) -> Optional[dict]:
    """工具调用 → tool_use 块；arguments 是 JSON 字符串（模型可能写坏），读不出来就原样当文本。"""
    kind_name = item["type"]
    call = text_or_none(item.get("call_id")) or text_or_none(item.get("id")) or f"{kind_name}-{len(t.order)}"
    name = text_or_none(item.get("name")) or {"local_shell_call": "local_shell", "web_search_call": "web_search"}.get(
        kind_name, kind_name)
    if kind_name == "function_call":
        arguments = _arguments(item.get("arguments"))
    elif kind_name == "custom_tool_call":
        arguments = {"input": item.get("input")}
    else:
        arguments = item.get("action") if isinstance(item.get("action"), dict) else {}
    t.state.setdefault("names", {})[call] = name
    block = t.convert.block({"type": "tool_use", "id": call, "name": name, "input": arguments}, TOOL_OUTPUT_LIMIT)
    return {"role": "assistant", "content": [block]}


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw if isinstance(raw, dict) else {}
    try:
        value = json.loads(raw) if len(raw) < 2_000_000 else None
    except (ValueError, RecursionError):
        value = None
    return value if isinstance(value, dict) else {"arguments": raw}


def _output(t: Transcript, item: dict) -> Optional[dict]:
    call = text_or_none(item.get("call_id"))
    output, failed = _unwrapped(item.get("output"))
    message = {"role": "tool", "content": _blocks(t, output, TOOL_OUTPUT_LIMIT), "toolCallId": call,
               "toolName": t.state.get("names", {}).get(call or "")}
    if failed:
        message["isError"] = True
    return message


def _unwrapped(output: Any) -> Tuple[Any, bool]:
    """早期的 shell 输出是一段 JSON 文本 {"output": …, "metadata": {"exit_code": …}}；个别分支写成
    {content, success}。取出真正的输出，退出码不是 0 的算出错。"""
    if isinstance(output, str) and output.startswith('{"output"') and len(output) < 5_000_000:
        try:
            parsed = json.loads(output)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
            metadata = parsed.get("metadata") if isinstance(parsed.get("metadata"), dict) else {}
            return parsed["output"], metadata.get("exit_code") not in (0, None)
    if isinstance(output, dict):
        return output.get("content", output), output.get("success") is False
    return output, False


_ITEM_READERS = {"message": _message, "reasoning": _reasoning, **{name: _call for name in _CALLS},
                 **{name: _output for name in _OUTPUTS}}


def _blocks(t: Transcript, content: Any, limit: int) -> List[dict]:
    """Codex 的内容 → 块：input_text / output_text → text，input_image（data: 网址）→ 图片占位，其余有界保留。"""
    if content is None:
        return []
    if isinstance(content, str):
        return [t.convert.text_block("text", "text", content, limit)]
    if not isinstance(content, list):
        return [t.convert.text_block("text", "text", json.dumps(content, ensure_ascii=False)[:limit + 1], limit)]
    blocks = []
    for part in content:
        kind_name = part.get("type") if isinstance(part, dict) else None
        if kind_name in ("input_text", "output_text", "text", "summary_text"):
            blocks.append(t.convert.text_block("text", "text", part.get("text"), limit))
        elif kind_name in ("input_image", "image"):
            blocks.append(_image(t, part.get("image_url")))
        else:
            blocks.append(t.convert.block(part, limit))
    return blocks


def _image(t: Transcript, url: Any) -> dict:
    """图片只留占位：data: 网址里的媒体类型和长度；外部网址不保存（导出也就不会去取它）。"""
    t.convert.images += 1
    url = url if isinstance(url, str) else ""
    media = url[5:url.find(";")] if url.startswith("data:") and ";" in url[:100] else "image"
    return {"type": "image", "omitted": True, "media_type": media or "image", "size": len(url)}


def _event(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """界面的镜像不当对话读；thread_rolled_back 撤掉最后 N 轮：之后的对话从撤掉的第一轮之前接着长。"""
    event = _payload(obj)
    name = event.get("type") if isinstance(event.get("type"), str) else "?"
    t.drop(f"event_msg:{name}")
    if name == "thread_rolled_back":
        _roll_back(t, event.get("num_turns"), line)


def _roll_back(t: Transcript, count: Any, line: int) -> None:
    turns = t.state.setdefault("turns", [])
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        t.warnings.append(f"第 {line} 行 thread_rolled_back 的 num_turns 不是正整数，没有回滚")
        return
    if count > len(turns):
        t.warnings.append(f"第 {line} 行要回滚 {count} 轮，但之前只有 {len(turns)} 轮用户输入，回滚到了开头")
        count = len(turns)
    if count:
        first_dropped = turns[-count]
        del turns[-count:]
        t.state["tip"] = first_dropped[1]
        t.state["turn"] = t.state.get("turn", 0) + 1


def _turn_context(t: Transcript, obj: dict, line: int, sub: int) -> None:
    t.drop("turn_context")
    model = _payload(obj).get("model")
    if isinstance(model, str):
        t.state["model"] = model


def _compacted(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """压缩：Agent 之后看到的是这段摘要，作为一条 summary 消息留在线上（replacement_history 不拼进树）。"""
    summary = _payload(obj).get("message")
    message = {"role": "user", "content": [t.convert.text_block("text", "text", summary if isinstance(summary, str)
                                                                 else "", TEXT_LIMIT)], "summary": True}
    if isinstance(obj.get("timestamp"), str):
        message["timestamp"] = obj["timestamp"]
    _add(t, line, sub, message, assistant_side=False)


def _state(t: Transcript, obj: dict, line: int, sub: int) -> None:
    t.drop("state")


def unknown(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """以后版本的新行（world_state、token_usage_record……）：没有要显示的对话，按类型计数。"""
    t.drop(str(obj.get("type")))


READERS = {"session_meta": _session_meta, "response_item": _response_item, "event_msg": _event,
           "turn_context": _turn_context, "compacted": _compacted, "state": _state}


# ── 本格式自己的规则 ─────────────────────────────────────────────────────────────────────────
def active_hints(t: Transcript, home: str) -> List[str]:
    """活动端：最后写下的位置（回滚之后是回滚到的那条消息）。"""
    tip = t.state.get("tip")
    return [tip] if tip else []


def origin(t: Transcript, entry: Entry) -> Tuple[Optional[str], Optional[str], Dict[str, Any]]:
    """(Codex 版本, cwd, 其它来源字段)：都取自文件头；仓库地址里的用户名和密码去掉。"""
    header, extra = t.header, {}
    git = header.get("git", {})
    for key, name in (("branch", "git_branch"), ("commit_hash", "git_commit"), ("repository_url", "git_repository")):
        if git.get(key):
            extra[name] = _USERINFO.sub(r"\1", git[key]) if key == "repository_url" else git[key]
    for key, name in (("originator", "originator"), ("forked_from_id", "forked_from"),
                      ("parent_thread_id", "parent_thread")):
        if header.get(key):
            extra[name] = header[key]
    return header.get("cli_version"), header.get("cwd"), extra
