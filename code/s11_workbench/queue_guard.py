"""queue_guard.py — 排队也有份额：一位访客同时排队或运行中的事件有上限（不 import gradio）

    POST /gradio_api/queue/join（页面的每次点击、脚本的每次 /call/…）
       └─> QueueGuard.push(body, request)          包在 gradio 的 Queue.push 外面
             访客 = 空间令牌（事件数据里本服务器签过的令牌）+ 访客地址，两者各算一份
             数一数这位访客还活着的事件（排队中 + 运行中）：
               同一个事件   ≤ Limits.queued_per_event（“同一时刻只跑一个”的事件：每人 1 个）
               所有事件     ≤ Limits.queued_per_visitor
               请求体字节   ≤ Limits.queued_bytes_per_visitor
             地址那一份再乘 Limits.students_per_address（整班在一个 NAT 后面时设成人数）
             超了 ──> (False, 一句中文, "error")：gradio 回 400，页面把这句话当错误提示弹出来，事件不进队列
             没超 ──> 原来的 push；给事件记上访客（ticket），以后数得到它

Key insight: gradio 的队列先来先服务，却不管“谁来的”：一个脚本连点 25 次，同学的点击就排在 25 次之后，
25 个 7 MB 的请求体也都压在内存里。每位访客在每个事件上最多占 1～2 个位置，先来先服务就变成了轮流——
“写到一半被杀”一次只跑一个，每位同学最多等“前面每人一次”。

Scope: 只管经过队列的事件（queue=False 的小事件不排队）；只在本进程内计数。
"""

from __future__ import annotations

import asyncio
import re
from typing import Any, Iterator, NamedTuple, Optional

from s11_workbench.spaces import MB, SpaceError
from s11_workbench.upload_guard import BODY_BYTES_KEY

_TOKEN_SHAPE = re.compile(r"[0-9a-f]{16}\.[0-9a-f]{32}")


class Ticket(NamedTuple):
    """一个已进队列的事件属于谁：空间（令牌验签得到的 space_id，没有就 None）、地址、哪个事件、多少字节。"""
    space_id: Optional[str]
    address: str
    fn_index: Any
    nbytes: int


class QueueGuard:
    """包住 gradio 的 Queue.push：按访客限制排队中和运行中的事件个数与字节数。"""

    def __init__(self, spaces):
        self.spaces = spaces
        self.limits = spaces.limits
        self._lock: Optional[asyncio.Lock] = None

    def install(self, queue) -> None:
        """把 queue.push 换成先检查份额、再调原来的 push 的版本（同一个队列只装一次）。"""
        if getattr(queue, "s11_queue_guard", None) is not None:
            return
        original = queue.push

        async def push(body, request, username):
            return await self.push(queue, original, body, request, username)

        queue.push = push
        queue.s11_queue_guard = self

    async def push(self, queue, original, body, request, username):
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:   # 检查和登记之间不让同一访客的另一个请求插进来
            ticket = self.ticket(body, request)
            fn = _fn(queue, body)
            if ticket is not None and fn is not None:
                refusal = self.refusal(queue, ticket, fn)
                if refusal is not None:
                    return False, refusal, "error"
            success, event_id, state = await original(body=body, request=request, username=username)
            if success and ticket is not None:
                event = getattr(queue, "event_ids_to_events", {}).get(event_id)
                if event is not None:
                    event.s11_ticket = ticket
            return success, event_id, state

    def ticket(self, body, request) -> Optional[Ticket]:
        client = getattr(request, "client", None)
        address = getattr(client, "host", None) or "?"
        space_id = None
        for value in (getattr(body, "data", None) or [])[:64]:
            if isinstance(value, str) and _TOKEN_SHAPE.fullmatch(value):
                try:
                    space_id = self.spaces.verify(value)
                    break
                except SpaceError:
                    continue
        return Ticket(space_id, address, getattr(body, "fn_index", None), _body_bytes(request))

    def refusal(self, queue, new: Ticket, fn) -> Optional[str]:
        """这位访客再排一个 fn 会不会超出份额；超出时返回给同学看的一句话。"""
        limits = self.limits
        one_at_a_time = _concurrency_limit(queue, fn) == 1
        per_event = 1 if one_at_a_time else limits.queued_per_event
        name = f"「{fn.api_name}」" if getattr(fn, "api_name", None) else "这个操作"
        who = [("你的空间", lambda t: new.space_id is not None and t.space_id == new.space_id, 1)]
        who.append((f"同一地址（{new.address}）", lambda t: t.address == new.address, limits.students_per_address))
        live = list(_live_tickets(queue))
        for label, mine, share in who:
            if label == "你的空间" and new.space_id is None:
                continue
            share = max(1, share)
            ours = [t for t in live if mine(t)]
            same = sum(1 for t in ours if t.fn_index == new.fn_index)
            if same >= per_event * share:
                how = "一次只跑一个，每人只能排一个" if one_at_a_time else f"每位同学最多 {per_event} 个"
                return (f"{label}已有 {same} 个{name}在排队或运行中（{how}）：请等它完成再点。"
                        + _nat_hint(label, share))
            if len(ours) >= limits.queued_per_visitor * share:
                return (f"{label}已有 {len(ours)} 个操作在排队或运行中（每位同学最多 {limits.queued_per_visitor} 个）："
                        "请等前面的完成再试。" + _nat_hint(label, share))
            held = sum(t.nbytes for t in ours)
            cap = limits.queued_bytes_per_visitor * share
            if ours and held + new.nbytes > cap:
                return (f"{label}排队中的请求已占 {held / MB:.1f} MB，再加这个 {new.nbytes / MB:.1f} MB 会超过 "
                        f"{cap / MB:.0f} MB 的上限：请等前面的完成再试。" + _nat_hint(label, share))
        return None


def _nat_hint(label: str, share: int) -> str:
    if not label.startswith("同一地址"):
        return ""
    return "（全班共用一个地址时，请老师用 --students-per-address 设成班级人数）" if share == 1 else ""


def _fn(queue, body):
    fns = getattr(getattr(queue, "blocks", None), "fns", None) or {}
    return fns.get(getattr(body, "fn_index", None))


def _concurrency_limit(queue, fn):
    event_queue = getattr(queue, "event_queue_per_concurrency_id", {}).get(getattr(fn, "concurrency_id", None))
    if event_queue is not None:
        return event_queue.concurrency_limit
    limit = getattr(fn, "concurrency_limit", None)
    if limit == "default":   # 这个事件第一次进队列、gradio 还没替它建好队列：按队列的默认值
        limit = getattr(queue, "default_concurrency_limit", 1)
    return limit


def _live_tickets(queue) -> Iterator[Ticket]:
    """排队中的和运行中的事件的 ticket（没记 ticket 的不算）。"""
    for event_queue in list(getattr(queue, "event_queue_per_concurrency_id", {}).values()):
        for event in list(event_queue.queue):
            ticket = getattr(event, "s11_ticket", None)
            if ticket is not None and getattr(event, "alive", True):
                yield ticket
    for job in list(getattr(queue, "active_jobs", []) or []):
        for event in job or []:
            ticket = getattr(event, "s11_ticket", None)
            if ticket is not None:
                yield ticket


def _body_bytes(request) -> int:
    scope = getattr(request, "scope", None) or {}
    counted = scope.get(BODY_BYTES_KEY)
    if isinstance(counted, int):
        return counted
    length = (getattr(request, "headers", None) or {}).get("content-length", "")
    return int(length) if str(length).isdigit() else 0
