"""codex.py — OpenAI Codex CLI 的记录：~/.codex/sessions/YYYY/MM/DD/rollout-<时间>-<id>.jsonl

    {"timestamp", "type": "session_meta", "payload": {id, cwd, cli_version, git, source, forked_from_id …}}  文件头
    {"timestamp", "type": "response_item", "payload": {"type": …}}   真正的对话：
        message（role user / assistant / developer）        input_text / output_text / input_image 块
        reasoning（summary[].text，content[].text）          思考；encrypted_content 从不保存
        function_call / custom_tool_call / local_shell_call / web_search_call    工具调用（arguments 是 JSON 字符串）
        function_call_output / custom_tool_call_output       工具输出（按 call_id 配对）→ role "tool"
    {"type": "event_msg", "payload": {"type": …}}   界面的镜像（user_message、agent_message……）：按类型计数，但
        user_message / agent_message 在没读到过同一句时当消息（剪裁过的 rollout 只剩这一份，见 _add 的去重）；
        item_completed（0.151 起的“分页”会话：UserMessage / AgentMessage / Reasoning 只写在这里）当消息；
        thread_rolled_back 回滚；turn_aborted 在最后一条消息上记 interrupted；token_count（累计值）的差记成回复的 usage
    {"type": "rollout_reference" | "fork_reference", "payload": {rollout_path, thread_id, segment_id …}}
        之前的历史在另一个 rollout 文件里：只在这个文件的 Codex 文件夹里找（referenced_files），找不到就在报告里点名
    {"type": "turn_context" | "compacted", …}        每轮的设置（模型、cwd）；压缩摘要（作为一条 summary 消息）
    旧版（2025 年年中）：第一行是没有 type 的文件头 {"id", "timestamp", "instructions"}，之后是裸的
        {"type": "message", "role": …} 这样的条目和 {"record_type": "state"}——先换成上面的样子再读

本格式自己的规则：条目没有 id、没有父指针，按文件顺序串成一条线（id = 行号）；连续的推理、工具调用和回答是
同一次回复（stream 相同，建图时合成一条消息）；thread_rolled_back {num_turns: N} 撤掉最后 N 轮用户输入，
之后的对话从撤掉的第一轮之前接着长——这是用户造成的真分支；活动端是最后写下的那条消息（回滚之后是回滚到的位置）；
AGENTS.md、<environment_context> 这类注入的“用户消息”和 developer 消息标成 meta（不是提问，不当标题）；
MCP 工具的结果（{"content": [{"type": "text"…}], "isError"} 的 JSON 文本）取出文字；
来源里记 cli_version、cwd、git（仓库地址里的用户名密码去掉）、派生自哪个会话。
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

from . import usage
from .convert import TEXT_LIMIT, TOOL_OUTPUT_LIMIT
from .transcript import Entry, Transcript, as_list, is_prompt, plain_text, text_or_none

__all__ = ["READERS", "sniff", "kind", "unknown", "ids", "active_hints", "origin", "referenced_files"]

_ENVELOPES = frozenset(("session_meta", "response_item", "event_msg", "turn_context", "compacted",
                        "inter_agent_communication", "inter_agent_communication_metadata", "token_usage_record",
                        "world_state", "retained_context", "security_risk_score", "realtime_item",
                        "rollout_reference", "fork_reference"))
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
    """(uid, parent)：没有 id，按行号编号（L12、粘在一行的第二个 L12.1），接在当前位置（tip）后面。
    引用的另一个 rollout 文件里的行，编号前面加上它的文件名（t.file_label）。"""
    return _uid(t, line, sub), t.state.get("tip")


def _uid(t: Transcript, line: int, sub: int) -> str:
    return f"{t.file_label}L{line}" if not sub else f"{t.file_label}L{line}.{sub}"


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
    if message.get("meta") and plain_text(message).lstrip().startswith("<turn_aborted>"):
        _turn_aborted(t, {"reason": "interrupted"}, obj, line, sub)   # 新版把“被打断”写成一条注入的用户消息
    _add(t, line, sub, message, assistant_side=kind_name in _CALLS or kind_name == "reasoning" or
         (kind_name == "message" and message["role"] == "assistant"))


def _add(t: Transcript, line: int, sub: int, message: dict, assistant_side: bool,
         source: str = "response") -> Optional[str]:
    """把一条消息接在当前位置后面。同一句话两处都写了（旧版的 event_msg 镜像、新版的 item_completed 和
    response_item；source 说是哪一处）只留先读到的：用户输入比“上一句还没被回答的输入”，回答和思考在这一轮里
    和另一处一对一地配对——同一处把同一句话说两遍，两遍都留着。"""
    prompt, key = is_prompt(message), _reply_key(message) if assistant_side else None
    asked = _normal(_said(message)) if prompt else None   # 提问压过空白的文字：比较和记下都用它，只算一次
    if _repeated(t, key, asked, source):
        return None
    uid, parent = _uid(t, line, sub), t.state.get("tip")   # = ids()，少一次调用
    message["id"] = uid
    entry = Entry(uid, parent, line, "message", message, text_or_none(t.header.get("id")))
    if assistant_side:
        entry.stream = f"turn-{t.state.get('turn', 0)}"
        if t.state.get("model"):
            message["model"] = t.state["model"]
    else:
        t.state["turn"] = t.state.get("turn", 0) + 1   # 一次回复到此为止
    entry.prompt = prompt
    if entry.prompt:
        t.state.setdefault("turns", []).append((uid, parent))
    t.note_tool_calls(message, uid)
    if not t.add(entry):
        return None
    t.state["tip"] = uid
    _remember(t, key, assistant_side, asked, source)
    for reference in t.state.get("references", []):
        if reference.get("after") is None and reference.get("waiting"):
            reference["after"], reference["waiting"] = uid, False   # 引用之后的第一条消息：接在引用的历史后面
    return uid


def _said(message: dict) -> str:
    """消息里的文字和思考，原样（各块之间一个空格）。"""
    return " ".join(str(block.get("text") or block.get("thinking") or "") for block in as_list(message["content"])
                    if isinstance(block, dict) and block.get("type") in ("text", "thinking"))


def _normal(said: str) -> str:
    """空白压成一个空格：两处写的“同一句话”可能只差在空白上。"""
    return " ".join(said.split())


def _reply_key(message: dict) -> Optional[tuple]:
    """回答和思考的配对键 (块的类型, 原文)；没有文字的（只有工具调用）不配对。"""
    said = _said(message) if message["role"] == "assistant" else ""
    if not said or said.isspace():
        return None
    return tuple(sorted({str(block.get("type")) for block in as_list(message["content"]) if isinstance(block, dict)})), said


class _Unpaired:
    """一轮里一处（"response" 或 "event"）读到、还没和另一处配上对的回答和思考：配对键 → 条数。
    先按原文数（两处写的多半一字不差，压空白要把整段文字拆成词，是导入里最贵的一步）；另一处来的一句
    第一次按原文对不上时，这一处整个改按压过空白的文字数。每段文字最多压一次，配对的结果和一直按压过空白的
    文字数完全一样（原文相同，压过空白也相同）。"""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.normal = False

    def _key(self, key: tuple) -> tuple:
        return (key[0], _normal(key[1])) if self.normal else key

    def add(self, key: tuple) -> None:
        self.counts[self._key(key)] += 1

    def take(self, key: tuple) -> bool:
        """这一处有同样的一句就用掉它（配对），返回 True。"""
        if not self.normal and self.counts and key not in self.counts:
            normal: Counter = Counter()
            for (kinds, said), count in self.counts.items():
                normal[kinds, _normal(said)] += count
            self.counts, self.normal = normal, True
        key = self._key(key)
        if key not in self.counts:
            return False
        self.counts[key] -= 1
        if not self.counts[key]:
            del self.counts[key]   # 用完的键不留：上面的“这一处还有没配上的”才是 O(1)
        return True


def _repeated(t: Transcript, key: Optional[tuple], said: Optional[str], source: str) -> bool:
    """said：这是一句提问（压过空白的文字）时不是 None。"""
    if said is not None:
        asked = t.state.get("asked")
        return bool(said) and bool(asked) and (asked == said or asked.endswith(said) or said.endswith(asked))
    if key is None:
        return False
    return _unpaired(t, "event" if source == "response" else "response").take(key)


def _remember(t: Transcript, key: Optional[tuple], assistant_side: bool, asked: Optional[str], source: str) -> None:
    if asked is not None:
        t.state["asked"], t.state["replies"] = asked, {}
    elif assistant_side:
        t.state["asked"] = None
        if key is not None:
            _unpaired(t, source).add(key)


def _unpaired(t: Transcript, source: str) -> "_Unpaired":
    """这一轮里 source 那一处还没配上对的回答：第一次用到时才新建（每条消息都新建一个再丢掉，是白费的）。"""
    replies = t.state.setdefault("replies", {})
    if source not in replies:
        replies[source] = _Unpaired()
    return replies[source]


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
    """工具输出的几种包装，取出真正的输出（退出码不是 0、isError、Err 都算出错）：
    早期的 shell 输出 {"output": …, "metadata": {"exit_code": …}}；个别分支的 {content, success}；
    MCP 工具的结果 {"content": [{"type": "text", "text": …}], "isError": …}（或外面再包一层 Ok / Err）
    ——都可能写成一段 JSON 文本，MCP 的结果就不再显示成转义过的 JSON。"""
    if isinstance(output, str) and output[:1] in ("{", "[") and len(output) < 5_000_000:
        try:
            parsed = json.loads(output)
        except (ValueError, RecursionError):
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
            metadata = parsed.get("metadata") if isinstance(parsed.get("metadata"), dict) else {}
            return parsed["output"], metadata.get("exit_code") not in (0, None)
        mcp = _mcp_text(parsed)
        if mcp is not None:
            return mcp
    mcp = _mcp_text(output) if isinstance(output, dict) else None   # 列表是 Codex 自己的内容块，交给 _blocks
    if mcp is not None:
        return mcp
    if isinstance(output, dict):
        return output.get("content", output), output.get("success") is False
    return output, False


def _mcp_text(value: Any) -> Optional[Tuple[str, bool]]:
    """MCP 的 CallToolResult（content 是文本块的列表）→ (文本, 是否出错)；不是这个形状就是 None。"""
    failed = False
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in ("Ok", "Err"):
        failed, value = "Err" in value, next(iter(value.values()))
        if isinstance(value, str):
            return value, failed
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        failed = failed or value.get("isError") is True or value.get("is_error") is True
        value = value["content"]
    if not (isinstance(value, list) and value and all(isinstance(b, dict) and "type" in b for b in value)):
        return None
    texts = [b["text"] if isinstance(b.get("text"), str) else f"[{str(b.get('type'))[:40]}]" for b in value]
    return "\n".join(texts), failed


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
    """界面事件。多数是对话的镜像（按类型计数）；有几种带着别处没有的东西：
    user_message / agent_message   剪裁过的 rollout 里提问（回答）只剩这一份：没读到过同一句时才当消息
    item_completed                 0.151 起“分页”的会话：提问、回答、推理只写在这里（UserMessage、AgentMessage……）
    thread_rolled_back             撤掉最后 N 轮：之后的对话从撤掉的第一轮之前接着长
    turn_aborted                   这一轮被打断了：在最后一条消息上记下 interrupted
    token_count                    累计用量：和上一次的差就是这次调用的用量，记在这一轮的回复上"""
    event = _payload(obj)
    name = event.get("type") if isinstance(event.get("type"), str) else "?"
    t.drop(f"event_msg:{name}")
    handler = _EVENTS.get(name)
    if handler is not None:
        handler(t, event, obj, line, sub)


def _user_message(t: Transcript, event: dict, obj: dict, line: int, sub: int) -> None:
    words = event.get("message")
    if not isinstance(words, str) or not words.strip() or event.get("kind") not in (None, "plain"):
        return   # kind user_instructions / environment_context：注入内容的镜像，不是用户打的字
    if words.lstrip().lower().startswith(_CONTEXT_MARKERS):
        return
    message = {"role": "user", "content": [t.convert.text_block("text", "text", words, TEXT_LIMIT)]}
    _stamp(message, obj)
    if _add(t, line, sub, message, assistant_side=False, source="event"):
        t.drop("event_msg:user_message（只有这一份，当提问读）")


def _agent_message(t: Transcript, event: dict, obj: dict, line: int, sub: int) -> None:
    words = event.get("message")
    if not isinstance(words, str) or not words.strip():
        return
    message = {"role": "assistant", "content": [t.convert.text_block("text", "text", words, TEXT_LIMIT)]}
    _stamp(message, obj)
    if _add(t, line, sub, message, assistant_side=True, source="event"):
        t.drop("event_msg:agent_message（只有这一份，当回答读）")


def _item_completed(t: Transcript, event: dict, obj: dict, line: int, sub: int) -> None:
    """分页会话的一项：UserMessage → 提问，AgentMessage → 回答，Reasoning → 思考；别的（网页搜索、
    生成图片、压缩标记……）按类型计数。"""
    item = event.get("item") if isinstance(event.get("item"), dict) else {}
    kind_name = item.get("type") if isinstance(item.get("type"), str) else "?"
    if kind_name == "UserMessage":
        message, side = {"role": "user", "content": _item_parts(t, item.get("content"))}, False
    elif kind_name == "AgentMessage":
        message, side = {"role": "assistant", "content": _item_parts(t, item.get("content"))}, True
    elif kind_name == "Reasoning":
        texts = [text for key in ("summary_text", "raw_content") for text in as_list(item.get(key))
                 if isinstance(text, str)]
        if not texts:
            return
        message, side = {"role": "assistant", "content": [
            t.convert.text_block("thinking", "thinking", "\n\n".join(texts), TEXT_LIMIT)]}, True
    else:
        t.drop(f"item_completed:{kind_name[:40]}")
        return
    if not message["content"]:
        return
    _stamp(message, obj)
    started, finished = event.get("started_at_ms"), event.get("completed_at_ms")
    if side and isinstance(started, int) and isinstance(finished, int) and finished >= started > 0:
        usage.add(message, None, finished - started)
    _add(t, line, sub, message, assistant_side=side, source="event")


def _item_parts(t: Transcript, content: Any) -> List[dict]:
    """UserInput / AgentMessageContent 的列表：{type: text | Text, text}；图片只留占位。"""
    blocks = []
    for part in as_list(content):
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            blocks.append(t.convert.text_block("text", "text", part["text"], TEXT_LIMIT))
        elif part.get("type") in ("image", "local_image"):
            blocks.append(_image(t, part.get("image_url") or part.get("url")))
    return blocks


def _stamp(message: dict, obj: dict) -> None:
    if isinstance(obj.get("timestamp"), str):
        message["timestamp"] = obj["timestamp"]


def _turn_aborted(t: Transcript, event: dict, obj: dict, line: int, sub: int) -> None:
    """被打断的一轮：最后写下的那条消息记下原因（interrupted / replaced……），同一句话可以再问一次。"""
    t.state["asked"] = None
    tip = t.entries.get(t.state.get("tip") or "")
    if tip is not None and tip.message is not None:
        reason = event.get("reason")
        tip.message["interrupted"] = reason if isinstance(reason, str) and reason else True


_USAGE_NAMES = {"input": "input_tokens", "output": "output_tokens", "cache_read": "cached_input_tokens",
                "reasoning": "reasoning_output_tokens"}


def _token_count(t: Transcript, event: dict, obj: dict, line: int, sub: int) -> None:
    """token_count 的 total_token_usage 是累计值（同一个值常写两遍）：和上次的差才是这次调用花的。
    没有累计值时用 last_token_usage。记在最近的一条助手消息上。"""
    info = event.get("info") if isinstance(event.get("info"), dict) else {}
    total = usage.normalised(info.get("total_token_usage"), _USAGE_NAMES)
    if total is not None:
        before = t.state.get("usage_total") or {}
        t.state["usage_total"] = total
        spent = {key: value - before.get(key, 0) for key, value in total.items() if value > before.get(key, 0)}
    else:
        spent = usage.normalised(info.get("last_token_usage"), _USAGE_NAMES) or {}
    holder = _last_reply(t)
    if spent and holder is not None:
        usage.add(holder.message, spent)


def _last_reply(t: Transcript) -> Optional[Entry]:
    """从当前位置往回找最近的助手消息（工具输出可能已经写在它后面），最多往回看 50 条。"""
    uid = t.state.get("tip")
    for _ in range(50):
        entry = t.entries.get(uid or "")
        if entry is None or entry.message is None:
            return None
        if entry.message["role"] == "assistant":
            return entry
        if entry.prompt:
            return None
        uid = entry.parent
    return None


def _rolled_back(t: Transcript, event: dict, obj: dict, line: int, sub: int) -> None:
    _roll_back(t, event.get("num_turns"), line)


_EVENTS = {"user_message": _user_message, "agent_message": _agent_message, "item_completed": _item_completed,
           "thread_rolled_back": _rolled_back, "turn_aborted": _turn_aborted, "token_count": _token_count}


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
    t.state["asked"] = None   # 新的一轮：同一句话再问一次是新的提问
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


def _reference(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """rollout_reference / fork_reference：这之前的历史在另一个 rollout 文件里（分段后的前一段、分叉的来源）。
    找到这个文件就随主文件读进来，接在这里（referenced_files）；找不到就在报告里写明它是哪个文件。"""
    kind_name = obj.get("type")
    t.drop(str(kind_name))
    payload = _payload(obj)
    named = _named(payload)
    looked = t.state["reference_lookups"] = t.state.get("reference_lookups", 0) + 1
    if looked > _MAX_REFERENCES:   # 每个引用都要找一遍文件夹：引用多得不合常理时只计数
        if looked == _MAX_REFERENCES + 1:
            t.warnings.append(f"引用其它 rollout 的行超过 {_MAX_REFERENCES} 个：从第 {line} 行起不再去找它们指向的文件")
        return
    path = _locate(t, payload)
    if path is None:
        t.warnings.append(f"第 {line} 行的 {kind_name} 指向 {named}，这个文件不在导入的文件夹里（或它的 Codex 文件夹里）："
                          f"它之前的历史没有导入")
        return
    t.state.setdefault("references", []).append(
        {"path": path, "anchor": t.state.get("tip"), "after": None, "waiting": True, "line": line,
         "kind": kind_name, "label": t.file_label})


def _named(payload: dict) -> str:
    for key in ("rollout_path", "path", "segment_id", "rollout_id", "thread_id"):
        if text_or_none(payload.get(key)):
            return f"{key} {payload[key][:300]!r}"
    return "（没有写明文件）"


_REFERENCE_SCAN = 20_000   # 按 id 找被引用的文件时最多看这么多个文件名


def _locate(t: Transcript, payload: dict) -> Optional[str]:
    """被引用的 rollout 文件：只在正在导入的文件所在的文件夹和它的 Codex 文件夹（sessions/、archived_sessions/）
    里找——文件里写的路径来自别人的机器，不能让它把任意文件读进仓库。先按写明的文件名（也认 .zst），再按 id。"""
    roots = _codex_roots(t.path)
    names, ids = [], []
    raw = text_or_none(payload.get("rollout_path")) or text_or_none(payload.get("path"))
    if raw:
        base = os.path.basename(raw.replace("\\", "/"))
        names += [base, base + ".zst"] if base.startswith("rollout-") else []
    ids += [value for value in (text_or_none(payload.get(key)) for key in ("segment_id", "rollout_id", "thread_id"))
            if value and len(value) >= 8]
    seen = 0
    for root in roots:
        for where, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(where, d)))
            for name in sorted(files):
                seen += 1
                if seen > _REFERENCE_SCAN:
                    return None
                path = os.path.join(where, name)
                if os.path.abspath(path) == os.path.abspath(t.path) or os.path.islink(path):
                    continue
                if name in names or (name.startswith("rollout-") and any(value in name for value in ids)):
                    return path
            if root == os.path.dirname(os.path.abspath(t.path)):
                dirs[:] = []   # 文件所在的文件夹只看这一层
    return None


def _codex_roots(path: str) -> List[str]:
    """文件所在的文件夹；它若在某个 Codex 文件夹的 sessions/ 或 archived_sessions/ 下面，再加上这两个文件夹。"""
    here = os.path.dirname(os.path.abspath(path))
    roots = [here]
    parts = here.split(os.sep)
    for marker in ("sessions", "archived_sessions"):
        if marker in parts:
            home = os.sep.join(parts[:len(parts) - 1 - parts[::-1].index(marker)])
            roots += [os.path.join(home, "sessions"), os.path.join(home, "archived_sessions")]
            break
    return [root for index, root in enumerate(roots) if os.path.isdir(root) and root not in roots[:index]]


class Reference(NamedTuple):
    """随主文件读的被引用文件（pipeline 用 path、agent、info 这三个字段）。"""
    path: str
    agent: str
    info: Dict[str, Any]


_MAX_REFERENCES = 64


def referenced_files(path: str, t: Transcript) -> Iterator[Reference]:
    """把找到的被引用文件一个个交给 pipeline 读：读之前把当前位置移到引用处（它的历史从那里接着长），
    读完以后把引用之后的第一条消息接到它的最后一条上。被引用的文件里又有引用（更早的一段）也照样跟下去；
    同一个文件只读一次。"""
    references = t.state.setdefault("references", [])
    main_tip = t.state.get("tip")   # 读完被引用的文件后，活动端仍是主文件最后写下的位置
    done = {os.path.abspath(path)}
    index = 0
    while index < len(references) and index < _MAX_REFERENCES:
        reference = references[index]
        index += 1
        target = os.path.abspath(reference["path"])
        if target in done:
            t.warnings.append(f"第 {reference['line']} 行的 {reference['kind']} 又指向已经读过的 "
                              f"{os.path.basename(target)}，没有再读")
            continue
        done.add(target)
        reference["waiting"] = False
        t.state["tip"], t.state["asked"], t.state["answers"] = reference["anchor"], None, set()
        yield Reference(reference["path"], "", {})
        last = t.state.get("tip")
        after = t.entries.get(reference["after"] or "")
        if after is not None and last and last != reference["anchor"]:
            after.parent = last   # 引用之后的对话接在被引用的历史的最后一条后面
        t.warnings.append(f"第 {reference['line']} 行的 {reference['kind']} 指向 {os.path.basename(target)}："
                          f"已随主文件读进来，接在引用处")
    t.state["tip"] = main_tip


def unknown(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """以后版本的新行（world_state、token_usage_record……）：没有要显示的对话，按类型计数。"""
    t.drop(str(obj.get("type")))


READERS = {"session_meta": _session_meta, "response_item": _response_item, "event_msg": _event,
           "turn_context": _turn_context, "compacted": _compacted, "state": _state,
           "rollout_reference": _reference, "fork_reference": _reference}


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
