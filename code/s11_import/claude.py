"""claude.py — Claude Code 的记录：~/.claude/projects/<项目>/<会话ID>.jsonl（以及旁边的子代理文件）

    {"type": "user" | "assistant", "uuid", "parentUuid", "sessionId", "message": {"role", "content", "id"}, …}
        → 消息；同一个 message.id 分几行流式写出的 assistant 记下 stream，建图时合回一条
    {"type": "system" | "progress" | "attachment", "uuid", "parentUuid", …}
        → 结构条目：不是消息，但后面的消息常挂在它们下面；compact_boundary 记下 logicalParentUuid
    {"type": "summary" | "last-prompt" | "ai-title" | "custom-title" | …}
        → 标题和活动端线索，不进树
    <会话ID>/subagents/agent-<agentId>.jsonl
        → 子代理（isSidechain），随主文件一起读；agent-acompact-* 是内部压缩用的，不导入

本格式自己的规则：活动端 = 最新且存在的 last-prompt.leafUuid（否则最新的叶子，见 graph.active_end）；
来源里记 Claude Code 的版本、cwd 和 gitBranch；toolUseResult 不保存（其中 originalFile 是整份文件的拷贝），
只从里面取 agentId，用来找到启动子代理的那次调用。
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .convert import TEXT_LIMIT
from .transcript import Entry, Transcript, is_prompt, text_or_none

__all__ = ["READERS", "ids", "active_hints", "origin", "subagent_files", "is_subagent_file"]


def ids(t: Transcript, obj: dict, line: int, sub: int) -> Tuple[Optional[str], Optional[str]]:
    """(uid, parent)：uuid 和 parentUuid。"""
    return text_or_none(obj.get("uuid")), text_or_none(obj.get("parentUuid"))


# ── 行 ─────────────────────────────────────────────────────────────────────────────────────
def _message(t: Transcript, obj: dict, line: int, sub: int) -> None:
    body = obj.get("message")
    if not isinstance(body, dict):
        return t.skip(line, "message 字段不是对象")
    if "content" not in body:
        return t.skip(line, "message 缺少 content")
    uid, parent = ids(t, obj, line, sub)
    uid = uid or f"line-{t.file_label.strip()}{line}.{sub}"   # 没有 uuid 的行：按位置编号，仍然可以当父节点
    role = text_or_none(body.get("role")) or obj["type"]
    message = _fields(t, obj, body, role, uid)
    entry = Entry(uid, parent, line, "message", message, text_or_none(obj.get("sessionId")),
                  bool(obj.get("isSidechain")))
    entry.stream = text_or_none(body.get("id")) if role == "assistant" else None
    entry.agent = text_or_none(obj.get("agentId")) or (t.file_agent if entry.sidechain else None)
    entry.prompt = is_prompt(message)
    _note_spawn(t, obj, entry)
    t.note_tool_calls(message, entry.uid)
    _note_session(t, obj)
    t.add(entry)


def _fields(t: Transcript, obj: dict, body: dict, role: str, uid: str) -> dict:
    message = {"role": role, "content": t.convert.content(body["content"], TEXT_LIMIT), "id": uid}
    if isinstance(obj.get("timestamp"), str):
        message["timestamp"] = obj["timestamp"]
    if role == "assistant" and isinstance(body.get("model"), str):
        message["model"] = body["model"]
    for flag, key in (("isMeta", "meta"), ("isCompactSummary", "summary"), ("isSidechain", "subagent")):
        if obj.get(flag):
            message[key] = True
    return message


def _note_spawn(t: Transcript, obj: dict, entry: Entry) -> None:
    """工具结果的 toolUseResult.agentId 说明它启动了哪个子代理（整份 toolUseResult 不保存）。"""
    result = obj.get("toolUseResult")
    agent = text_or_none(result.get("agentId")) if isinstance(result, dict) else None
    if agent is None:
        return
    content = entry.message["content"] if isinstance(entry.message["content"], list) else []
    call = next((b.get("tool_use_id") for b in content if b.get("type") == "tool_result"), None)
    t.spawned.setdefault(agent, (entry.uid, call))


def _note_session(t: Transcript, obj: dict) -> None:
    session = text_or_none(obj.get("sessionId"))
    if session and session not in t.sessions:
        t.sessions[session] = {"cwd": text_or_none(obj.get("cwd")), "version": text_or_none(obj.get("version")),
                               "git_branch": text_or_none(obj.get("gitBranch"))}


def _link(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """progress / attachment / system：不是消息，但后面的消息常常挂在它们下面，所以先留着接线。"""
    kind = obj["type"]
    subtype = obj.get("subtype")
    t.dropped[f"{kind}:{subtype}" if isinstance(subtype, str) else kind] += 1
    uid, parent = ids(t, obj, line, sub)
    if uid is None:
        return
    entry = Entry(uid, parent, line, "link", None, text_or_none(obj.get("sessionId")), bool(obj.get("isSidechain")))
    if subtype == "compact_boundary":
        entry.logical = text_or_none(obj.get("logicalParentUuid"))
    _note_session(t, obj)
    t.add(entry)


def _meta(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """标题、活动端线索和纯元数据行：不进树。"""
    kind = obj["type"]
    t.dropped[kind] += 1
    if kind == "summary" and isinstance(obj.get("summary"), str):
        t.summaries.append((text_or_none(obj.get("leafUuid")) or "", obj["summary"]))
    elif kind == "last-prompt" and text_or_none(obj.get("leafUuid")):
        t.leaf_hints.append(obj["leafUuid"])
    elif kind in ("ai-title", "custom-title"):
        title = obj.get("customTitle") or obj.get("aiTitle") or obj.get("title")
        if isinstance(title, str) and title.strip():
            t.titles[kind] = title   # 最后一次为准


READERS = {"user": _message, "assistant": _message,
           **{kind: _link for kind in ("system", "progress", "attachment")},
           **{kind: _meta for kind in ("summary", "last-prompt", "ai-title", "custom-title", "agent-name",
                                       "file-history-snapshot", "queue-operation", "permission-mode",
                                       "pr-link", "mode")}}


# ── 本格式自己的规则 ─────────────────────────────────────────────────────────────────────────
def active_hints(t: Transcript) -> List[str]:
    """活动端的线索，先试的在前：最新的 last-prompt.leafUuid 在最前（summary.leafUuid 只当标题用）。"""
    return list(reversed(t.leaf_hints))


def origin(t: Transcript, entry: Entry) -> Tuple[Optional[str], Optional[str], Dict[str, Any]]:
    """(Agent 版本, cwd, 其它来源字段)：都取自这个 sessionId 第一次出现的那行。"""
    meta = t.sessions.get(entry.session or "", {})
    extra = {"git_branch": meta["git_branch"]} if meta.get("git_branch") else {}
    return meta.get("version"), meta.get("cwd"), extra


def subagent_files(path: str, t: Transcript) -> Iterator[Tuple[str, str]]:
    """<会话ID>.jsonl 旁边的 <会话ID>/subagents/agent-*.jsonl → (路径, agentId)，按文件名排序。

    agent-acompact-* 是内部压缩用的，不导入，只在 dropped 里计数（边列边计，和读文件的先后一致）。"""
    folder = os.path.join(os.path.dirname(path), os.path.splitext(t.file)[0], "subagents")
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    for name in names:
        if not (name.startswith("agent-") and name.endswith(".jsonl")):
            continue
        if name.startswith("agent-acompact"):
            t.dropped["subagent:acompact"] += 1
            continue
        yield os.path.join(folder, name), name[len("agent-"):-len(".jsonl")]


def is_subagent_file(path: str) -> bool:
    """<dir>/<会话ID>/subagents/agent-x.jsonl，且 <dir>/<会话ID>.jsonl 存在：由主文件带入，不单独导入。"""
    subagents = os.path.dirname(path)
    session_dir = os.path.dirname(subagents)
    return os.path.basename(subagents) == "subagents" and os.path.isfile(session_dir + ".jsonl")
