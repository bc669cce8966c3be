"""claude.py — Claude Code 的记录：~/.claude/projects/<项目>/<会话ID>.jsonl（以及它的子代理文件）

    {"type": "user" | "assistant", "uuid", "parentUuid", "sessionId", "message": {"role", "content", "id"}, …}
        → 消息；同一个 message.id 分几行流式写出的 assistant 记下 stream，建图时合回一条
    {"type": "system" | "progress" | "attachment", "uuid", "parentUuid", …}
        → 结构条目：不是消息，但后面的消息常挂在它们下面；compact_boundary 记下 logicalParentUuid；
          progress 里的 agent_progress 是子代理消息的镜像（没有子代理文件时用它还原子代理）
    {"type": "summary" | "last-prompt" | "ai-title" | "custom-title" | "worktree-state" | "tag" | …}
        → 元数据：标题和活动端线索，不进树，按类型计进 dropped（不算坏行）；没有 uuid 的未知类型也一样

    子代理文件（三种布局，随主文件一起读；agent-acompact-* 是内部压缩用的，不导入）：
        <会话ID>/subagents/agent-<id>.jsonl（+ agent-<id>.meta.json：toolUseId、description、agentType）   2.1.x
        <会话ID>/subagents/workflows/<runId>/agent-<id>.jsonl                    Workflow 的一次运行
        agent-<id>.jsonl，就在会话文件旁边，行里的 sessionId 是主会话                              2.0.x

本格式自己的规则：活动端 = 最新且存在的 last-prompt.leafUuid（否则最新的叶子，见 graph.active_ends）；
来源里记 Claude Code 的版本、cwd 和 gitBranch；toolUseResult 不保存（其中 originalFile 是整份文件的拷贝），
只从里面取 agentId / runId，用来找到启动子代理的那次调用（找法的先后见 graph.spawner）。
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

from . import usage
from .convert import TEXT_LIMIT
from .transcript import Entry, Transcript, as_list, is_prompt, plain_text, text_or_none

__all__ = ["READERS", "sniff", "unknown", "ids", "active_hints", "origin", "subagent_files", "owner_of", "finish",
           "Companion", "METADATA"]

METADATA = frozenset((   # 没有位置的行：标题、设置、快照、重复写入的会话信息
    "summary", "last-prompt", "ai-title", "custom-title", "agent-name", "file-history-snapshot", "queue-operation",
    "permission-mode", "pr-link", "mode", "worktree-state", "tag", "agent-color", "agent-setting",
    "content-replacement", "file-history-delta", "bridge-session", "relocated", "frame-link", "atis-latch",
    "fork-context-ref", "attribution-snapshot", "marble-origami-commit", "marble-origami-snapshot", "task-summary"))
_CHAIN = ("system", "progress", "attachment")
_SUBTYPE = re.compile(r"[a-z_]{1,40}")
_AGENT_TAIL = re.compile(r"agentId:\s*([A-Za-z0-9_-]{3,64})")
_HEAD_SESSION = re.compile(rb'"sessionId"\s*:\s*"([^"\\]{1,200})"')
_HEAD_SIDECHAIN = re.compile(rb'"isSidechain"\s*:\s*true')
_META_KEYS = ("toolUseId", "agentType", "description", "label", "phase", "model")


def sniff(obj: dict) -> bool:
    """Claude Code 写的对象：有 uuid / parentUuid，或者是它的消息行、结构行、元数据行。"""
    if "payload" in obj or "projectHash" in obj:
        return False
    kind = obj.get("type")
    kind = kind if isinstance(kind, str) else None   # 文件里的 type 可能是列表：不能拿去查集合
    if isinstance(obj.get("uuid"), str) or "parentUuid" in obj:
        return True
    if kind in ("user", "assistant"):
        return isinstance(obj.get("message"), dict)
    return kind in METADATA or kind in _CHAIN


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
    if t.add(entry) and role == "assistant":
        _note_usage(t, entry, body)


_USAGE_NAMES = {"input": "input_tokens", "output": "output_tokens", "cache_read": "cache_read_input_tokens",
                "cache_write": "cache_creation_input_tokens"}


def _note_usage(t: Transcript, entry: Entry, body: dict) -> None:
    """message.usage：一次 API 调用分几行写出时每行都带着它（后面的是最终数字）——只记在第一行上，
    后来的行更新那一份；这样合并流式分段时相加不会重复。"""
    spent = usage.normalised(body.get("usage"), _USAGE_NAMES)
    if not spent:
        return
    holders = t.state.setdefault("usage_of", {})
    key = entry.stream or entry.uid
    holder = t.entries.get(holders.get(key, ""))
    if holder is None or holder.message is None:
        holders[key] = entry.uid
        entry.message["usage"] = spent
    else:
        holder.message["usage"] = spent


def _fields(t: Transcript, obj: dict, body: dict, role: str, uid: str) -> dict:
    message = {"role": role, "content": t.convert.content(body["content"], TEXT_LIMIT), "id": uid}
    if isinstance(obj.get("timestamp"), str):
        message["timestamp"] = obj["timestamp"]
    if role == "assistant" and isinstance(body.get("model"), str):
        message["model"] = body["model"]
    for flag, key in (("isMeta", "meta"), ("isCompactSummary", "summary"), ("isSidechain", "subagent")):
        if obj.get(flag):
            message[key] = True
    if role == "user" and _injected(message):
        message["meta"] = True
    return message


def _injected(message: dict) -> bool:
    """整条都包在 <system-reminder> 里的用户消息是 Claude Code 自己写的（2.1.267 起 /fork 的工作区说明
    也可能这样到来），不是用户打的字：不开分支、不当标题。"""
    text = plain_text(message).strip()
    return text.startswith("<system-reminder>") and text.endswith("</system-reminder>") and \
        text.count("<system-reminder>") == 1


def _note_spawn(t: Transcript, obj: dict, entry: Entry) -> None:
    """工具结果说明它启动了哪个子代理：toolUseResult.agentId、Workflow 的 toolUseResult.runId、
    或者结果文字末尾的 “agentId: …”（teammate、后台代理）。整份 toolUseResult 不保存。"""
    content = entry.message["content"] if isinstance(entry.message["content"], list) else []
    results = [b for b in content if b.get("type") == "tool_result"]
    if not results:
        return
    call = results[0].get("tool_use_id")
    result = obj.get("toolUseResult")
    if isinstance(result, dict):
        if text_or_none(result.get("agentId")):
            t.spawned.setdefault(result["agentId"], (entry.uid, call))
        if text_or_none(result.get("runId")):
            t.runs.setdefault(result["runId"], (entry.uid, call))
    tails = t.state.setdefault("tails", {})
    for block in results:
        text = block.get("content")
        text = text if isinstance(text, str) else " ".join(
            b.get("text", "") for b in as_list(text) if isinstance(b, dict) and isinstance(b.get("text"), str))
        for agent in _AGENT_TAIL.findall(text[-2000:]):
            tails.setdefault(agent, (entry.uid, block.get("tool_use_id")))


def _note_fork(t: Transcript, obj: dict) -> None:
    """/fork 和 --fork-session 的文件写着它从哪个会话分出来：forkedFrom {sessionId, messageUuid}（2.1.118 起 /fork
    只写一个指针行 fork-context-ref，读的时候再去原会话里取历史）。记下第一个，subagent_files 据此读原会话。"""
    source = obj.get("forkedFrom") if isinstance(obj.get("forkedFrom"), dict) else None
    if source is None and obj.get("type") == "fork-context-ref":
        source = obj
    if source is None or t.home in t.state.setdefault("forked_from", {}):
        return
    session = text_or_none(source.get("sessionId")) or text_or_none(source.get("parentSessionId"))
    point = (text_or_none(source.get("messageUuid")) or text_or_none(source.get("leafUuid"))
             or text_or_none(source.get("parentUuid")))
    if session:
        t.state["forked_from"][t.home] = (session, point)


def _note_session(t: Transcript, obj: dict) -> None:
    if "forkedFrom" in obj:
        _note_fork(t, obj)
    session = text_or_none(obj.get("sessionId"))
    if session and session not in t.sessions:
        t.sessions[session] = {"cwd": text_or_none(obj.get("cwd")), "version": text_or_none(obj.get("version")),
                               "git_branch": text_or_none(obj.get("gitBranch"))}


def _link(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """progress / attachment / system：不是消息，但后面的消息常常挂在它们下面，所以先留着接线。"""
    kind = obj["type"]
    subtype = obj.get("subtype")
    data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
    if kind == "progress" and data.get("type") == "agent_progress":
        _mirror(t, obj, data, line, sub)
        subtype = "agent_progress"
    t.drop(f"{kind}:{subtype}" if isinstance(subtype, str) and _SUBTYPE.fullmatch(subtype) else kind)
    uid, parent = ids(t, obj, line, sub)
    if uid is None:
        return
    entry = Entry(uid, parent, line, "link", None, text_or_none(obj.get("sessionId")), bool(obj.get("isSidechain")))
    if subtype == "compact_boundary":
        entry.logical = text_or_none(obj.get("logicalParentUuid"))
    _note_session(t, obj)
    if t.add(entry) and subtype == "turn_duration":
        _note_duration(t, parent, obj.get("durationMs"))


def _note_duration(t: Transcript, parent: Optional[str], duration: Any) -> None:
    """system turn_duration：这一轮花了多久，记在它挂着的那条消息上（往上找最近的消息，最多 20 步）。"""
    for _ in range(20):
        entry = t.entries.get(parent or "")
        if entry is None:
            return
        if entry.message is not None:
            usage.add(entry.message, None, duration)
            return
        parent = entry.parent


def _mirror(t: Transcript, obj: dict, data: dict, line: int, sub: int) -> None:
    """agent_progress：子代理的一条消息抄进了主文件。先记下，读完所有文件后没有这个子代理的文件才用它（finish）。"""
    agent = text_or_none(data.get("agentId"))
    if agent and isinstance(data.get("message"), dict):
        t.mirrors.append((agent, line, sub, {"data": data, "timestamp": obj.get("timestamp"),
                                             "session": obj.get("sessionId"), "label": t.file_label,
                                             "home": t.home}, text_or_none(obj.get("parentToolUseID"))))


def _meta(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """标题、活动端线索和纯元数据行：不进树；带 uuid 的（有些版本会这样写）仍留作接线。"""
    kind = obj["type"]
    t.drop(kind)
    if kind == "fork-context-ref" or "forkedFrom" in obj:
        _note_fork(t, obj)
    if kind == "summary" and isinstance(obj.get("summary"), str):
        t.summaries.append((t.home, text_or_none(obj.get("leafUuid")) or "", obj["summary"]))
    elif kind == "last-prompt" and text_or_none(obj.get("leafUuid")):
        t.hint(obj["leafUuid"])
    elif kind in ("ai-title", "custom-title"):
        title = obj.get("customTitle") or obj.get("aiTitle") or obj.get("title")
        if isinstance(title, str) and title.strip():
            t.set_title(kind, title)
    uid, parent = ids(t, obj, line, sub)
    if uid:
        t.add(Entry(uid, parent, line, "link", None, text_or_none(obj.get("sessionId"))))


def unknown(t: Transcript, obj: dict, line: int, sub: int) -> None:
    """不认识的类型：没有 uuid 的是以后版本的元数据（按类型计进 dropped）；带 uuid 的在对话链上，
    内容又读不懂——记进 skipped，条目仍留作接线，免得它的子条目变成孤儿。"""
    kind = str(obj.get("type"))
    uid, parent = ids(t, obj, line, sub)
    if uid is None:
        t.drop(kind)
        return
    t.skip(line, f"未知的条目类型 {kind[:40]!r}", "未知的条目类型")
    t.add(Entry(uid, parent, line, "link", None, text_or_none(obj.get("sessionId"))))


READERS = {"user": _message, "assistant": _message, **{kind: _link for kind in _CHAIN},
           **{kind: _meta for kind in METADATA}}


# ── 读完以后：只在 agent_progress 里的子代理 ──────────────────────────────────────────────────
def finish(t: Transcript) -> None:
    """读完所有文件以后：分叉指针的第一条消息接到原会话里的分叉点上；只在镜像里的子代理还原出来。"""
    _link_fork_points(t)
    _recover_mirrors(t)
    _note_missing_agents(t)


MISSING_SHOWN = 5   # 报告里最多点名几个看不到的子代理文件


def _note_missing_agents(t: Transcript) -> None:
    """工具结果说启动了子代理（toolUseResult.agentId、结果末尾的 agentId: …），它的记录却没读到（单独上传了会话文件，
    旁边的 <会话ID>/subagents/ 文件夹没跟来）：点名这些文件，说清楚怎么连文件夹一起导入。"""
    seen = {entry.agent for entry in t.order if entry.sidechain and entry.agent}
    spawned = list(t.spawned) + [agent for agent in t.state.get("tails", {}) if agent not in t.spawned]
    missing = [agent for agent in spawned if agent not in seen]
    if not missing:
        return
    t.missing_agents = [f"agent-{agent}.jsonl" for agent in missing]
    stem = os.path.splitext(os.path.basename(t.file))[0]
    names = "、".join(t.missing_agents[:MISSING_SHOWN]) + (f" 等 {len(missing)} 个" if len(missing) > MISSING_SHOWN else "")
    t.warnings.append(f"看不到 {len(missing)} 个子代理的记录：{names}（Claude Code 把它们放在会话文件旁边的 "
                      f"{stem}/subagents/ 文件夹里，这次只读到了会话文件，启动它们的调用照常导入）。要连子代理一起导入："
                      f"把 {stem}.jsonl 和 {stem}/ 文件夹一起打成 .zip 上传；或在本机用 python app.py --agent-folders "
                      f"打开「💻 本机 Agent 文件夹」；或 python code/s11_cli.py import <项目文件夹>")


def _link_fork_points(t: Transcript) -> None:
    """指针式分叉的文件：第一条消息没有 parentUuid，分叉点写在 forkedFrom.messageUuid 里——原会话读进来了，就接上。"""
    for home, (_, point) in t.state.get("forked_from", {}).items():
        if not point or point not in t.entries:
            continue
        first = next((e for e in t.order if e.home == home and e.parent is None and not e.sidechain
                      and e.uid != point and e.label_file == ""), None)
        if first is not None:
            first.parent = point


def _recover_mirrors(t: Transcript) -> None:
    """子代理的消息只出现在主文件的 agent_progress 行里（没有它的子代理文件）：按文件顺序串成这个子代理的链，
    挂在 parentToolUseID 那次调用下。有子代理文件的，镜像不用（否则内容和 token 都算两遍）。"""
    if not t.mirrors:
        return
    have_files = {entry.agent for entry in t.order if entry.sidechain and entry.agent}
    previous: Dict[str, str] = {}
    recovered: Dict[str, int] = {}
    label, home = t.file_label, t.home
    for agent, line, sub, mirror, call in t.mirrors:
        if agent in have_files:
            continue
        t.file_label, t.home = mirror["label"], mirror["home"]
        if call:
            t.agents.setdefault(agent, {}).setdefault("tool_use", call)
        if agent not in previous and isinstance(mirror["data"].get("prompt"), str):
            previous[agent] = _mirrored(t, agent, line, sub, {"role": "user", "content": mirror["data"]["prompt"]},
                                        None, mirror, f"agent-prompt-{agent}")
        envelope = mirror["data"]["message"]
        body = envelope.get("message") if isinstance(envelope.get("message"), dict) else envelope
        uid = _mirrored(t, agent, line, sub, body, previous.get(agent), mirror, text_or_none(envelope.get("uuid")))
        if uid:
            previous[agent] = uid
            recovered[agent] = recovered.get(agent, 0) + 1
    t.file_label, t.home = label, home
    for agent, count in recovered.items():
        t.warnings.append(f"子代理 {agent} 没有自己的记录文件：从主文件的 agent_progress 行还原了它的 {count} 条消息")


def _mirrored(t: Transcript, agent: str, line: int, sub: int, body: dict, parent: Optional[str], mirror: dict,
              uid: Optional[str]) -> Optional[str]:
    role = text_or_none(body.get("role"))
    if role is None or "content" not in body:
        return None
    uid = uid if uid and uid not in t.entries else f"agent-progress-{mirror['label'].strip()}{line}.{sub}"
    if uid in t.entries:
        return None
    obj = {"timestamp": mirror["timestamp"], "isSidechain": True}
    message = _fields(t, obj, body, role, uid)
    entry = Entry(uid, parent, line, "message", message, text_or_none(mirror["session"]), True)
    entry.stream = text_or_none(body.get("id")) if role == "assistant" else None
    entry.agent, entry.prompt = agent, is_prompt(message)
    t.note_tool_calls(message, uid)
    t.add(entry)
    return uid


# ── 本格式自己的规则 ─────────────────────────────────────────────────────────────────────────
def active_hints(t: Transcript, home: str) -> List[str]:
    """活动端的线索，先试的在前：这个会话文件里最新的 last-prompt.leafUuid 在最前（summary.leafUuid 只当标题用）。"""
    return list(reversed(t.leaf_hints.get(home, [])))


def origin(t: Transcript, entry: Entry) -> Tuple[Optional[str], Optional[str], Dict[str, Any]]:
    """(Agent 版本, cwd, 其它来源字段)：都取自这个 sessionId 第一次出现的那行。"""
    meta = t.sessions.get(entry.session or "", {})
    extra = {"git_branch": meta["git_branch"]} if meta.get("git_branch") else {}
    return meta.get("version"), meta.get("cwd"), extra


# ── 子代理文件 ──────────────────────────────────────────────────────────────────────────────
class Companion(NamedTuple):
    """随主文件一起读的一个子代理文件：路径、agentId 和关于它的线索（meta.json、Workflow 的 runId）。"""
    path: str
    agent: str
    info: Dict[str, Any]


def subagent_files(path: str, t: Transcript) -> Iterator[Companion]:
    """主文件 <会话ID>.jsonl 的子代理文件，三种布局，按路径排好；agent-acompact-* 只在 dropped 里计数。"""
    folder, stem = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
    subagents = os.path.join(folder, stem, "subagents")
    for name in _names(subagents):
        if _is_agent_name(name, t, subagents):
            yield Companion(os.path.join(subagents, name), name[6:-6], _meta_info(subagents, name))
    workflows = os.path.join(subagents, "workflows")
    for run in _names(workflows):
        for where, name in _walk(os.path.join(workflows, run)):
            if _is_agent_name(name, t, where):
                info = {**_meta_info(where, name), "run": run}
                yield Companion(os.path.join(where, name), name[6:-6], info)
    yield from _fork_source(path, t)
    sessions = set(t.sessions) | {stem}
    for name in _names(folder):   # 2.0.x：子代理文件就在会话文件旁边，行里的 sessionId 是主会话
        if not (name.startswith("agent-") and name.endswith(".jsonl")):
            continue
        beside = os.path.join(folder, name)
        if agent_session(beside) in sessions or name[6:-6] in t.spawned:
            if _is_agent_name(name, t, folder):
                yield Companion(beside, name[6:-6], _meta_info(folder, name))


def _fork_source(path: str, t: Transcript) -> Iterator[Companion]:
    """分叉出来的会话只写了指针（它的第一条消息接在原会话的消息上，那条消息不在这个文件里）：原会话的文件
    <sessionId>.jsonl 就在同一个文件夹里时，随它一起读进来（像 Claude Code 自己那样“读的时候补上历史”）。
    原会话不在时，报告里写明缺的是哪个会话。"""
    source = t.state.get("forked_from", {}).get(t.home)
    if source is None:
        return
    session, point = source
    name = f"{session}.jsonl"
    needs = (point and point not in t.entries) or any(
        e.parent and e.parent not in t.entries for e in t.order if e.home == t.home and not e.sidechain)
    if not needs or name in t.files or "/" in session or "\\" in session:
        return
    target = os.path.join(os.path.dirname(path), name)
    if not os.path.isfile(target) or os.path.islink(target):
        t.warnings.append(f"这个会话是从会话 {session[:60]} 分叉出来的，但那个会话的文件 {name[:80]} 不在这里："
                          f"分叉之前的历史没有导入")
        return
    t.warnings.append(f"这个会话是从 {name[:80]} 分叉出来的：已把那个会话一起读进来，分叉处接在它的消息上")
    if not t.leaf_hints.get(t.home):   # 没有 last-prompt：活动端仍是这个文件最后写下的消息，不是原会话里更晚的那条
        last = next((e.uid for e in reversed(t.order) if e.home == t.home and e.kind == "message"
                     and not e.sidechain and e.label_file == t.file_label), None)
        if last:
            t.hint(last)
    yield Companion(target, "", {})


def _names(folder: str) -> List[str]:
    """文件夹里的名字，排好序；不是真文件夹（不存在、符号链接）就是空的。"""
    if not os.path.isdir(folder) or os.path.islink(folder):
        return []
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _walk(folder: str, depth: int = 4) -> Iterator[Tuple[str, str]]:
    """Workflow 运行的文件夹（见过更深的嵌套）：最多 depth 层，不跟符号链接。"""
    stack = [(folder, 0)]
    while stack:
        where, level = stack.pop()
        names = _names(where)
        for name in names:
            inside = os.path.join(where, name)
            if os.path.isdir(inside) and not os.path.islink(inside):
                if level < depth:
                    stack.append((inside, level + 1))
            else:
                yield where, name


def _is_agent_name(name: str, t: Transcript, folder: str = "") -> bool:
    if not (name.startswith("agent-") and name.endswith(".jsonl")):
        return False
    if name.startswith("agent-acompact"):
        t.drop("subagent:acompact")
        return False
    if folder and is_warmup(os.path.join(folder, name)):
        t.drop("subagent:warmup（2.0 版预热用的代理文件，不导入）")
        return False
    return True


_WARMUP = re.compile(rb'"content"\s*:\s*(?:"Warmup"|\[\s*\{\s*"type"\s*:\s*"text"\s*,\s*"text"\s*:\s*"Warmup"\s*\}\s*\])')


def is_warmup(path: str) -> bool:
    """Claude Code 2.0.x 在会话旁边写的“预热”代理文件：第一条用户消息就是一个词 Warmup，没有哪次 Task 调用启动它。
    只看第一行（开头 16 KB）。"""
    try:
        with open(path, "rb") as handle:
            first = handle.read(16384).split(b"\n", 1)[0]
    except OSError:
        return False
    return b'"isSidechain"' in first and bool(_WARMUP.search(first))


def _meta_info(folder: str, name: str) -> Dict[str, Any]:
    """agent-<id>.meta.json（没有公开的格式）：只取几个认识的字符串字段；读不了、太大、不是对象都当没有。"""
    path = os.path.join(folder, name[:-len(".jsonl")] + ".meta.json")
    try:
        if os.path.islink(path) or not os.path.isfile(path) or os.path.getsize(path) > 65536:
            return {}
        with open(path, "rb") as handle:
            meta = json.loads(handle.read())
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(meta, dict):
        return {}
    info = {key: meta[key] for key in _META_KEYS if isinstance(meta.get(key), str) and meta[key]}
    title = info.get("description") or info.get("label") or info.get("agentType")
    return {"tool_use": info.get("toolUseId"), "title": title, "meta": info}


_SESSION_CACHE: Dict[Tuple[str, int, int], Optional[str]] = {}


def agent_session(path: str) -> Optional[str]:
    """2.0.x 子代理文件属于哪个会话：开头 16 KB 里第一个 isSidechain 行的 sessionId（不用整行解析）。
    导入一个文件夹时每个会话文件都要问一遍，所以按 (路径, 大小, 修改时间) 记住答案。"""
    try:
        info = os.stat(path)
    except OSError:
        return None
    key = (path, info.st_size, info.st_mtime_ns)
    if key not in _SESSION_CACHE:
        if len(_SESSION_CACHE) > 20_000:
            _SESSION_CACHE.clear()
        try:
            with open(path, "rb") as handle:
                head = handle.read(16384)
        except OSError:
            head = b""
        first = head.split(b"\n", 1)[0]
        session = _HEAD_SESSION.search(first) if _HEAD_SIDECHAIN.search(first) else None
        _SESSION_CACHE[key] = session.group(1).decode("utf-8", "replace") if session else None
    return _SESSION_CACHE[key]


def owner_of(path: str) -> Optional[Tuple[str, Optional[str]]]:
    """这个文件若是某个会话的子代理记录：(它所属的会话文件的路径, 会话 ID)；会话文件不一定还在。否则 None。

    <dir>/<会话ID>/subagents/…/agent-x.jsonl → <dir>/<会话ID>.jsonl（看路径就知道）；
    <dir>/agent-x.jsonl（2.0.x）→ 第一行的 sessionId 说明它属于 <dir>/<sessionId>.jsonl。"""
    name = os.path.basename(path)
    if not (name.startswith("agent-") and name.endswith(".jsonl")):
        return None
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    if "subagents" in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index("subagents")
        session_dir = os.sep.join(parts[:at])
        return session_dir + ".jsonl", os.path.basename(session_dir)
    session = agent_session(path)
    if session is None:
        return None
    return os.path.join(os.path.dirname(path), session + ".jsonl"), session
