"""rescue.py — 各个 Agent 快要删掉的会话：列出来（at_risk），一次全部保留进仓库（keep）

    Agent         什么时候删                                         在哪里读设置（没有就用默认）
    Claude Code   最后修改超过 cleanupPeriodDays 天（默认 30）的会话     <Claude 根>/settings.json
    Gemini CLI    超过 general.sessionRetention.maxAge（默认 "30d"）     <Gemini 根>/settings.json（enabled: false = 不删）
    Codex CLI     不删，但闲置 7 天压成 .jsonl.zst、归档的挪进 archived_sessions/：这两种都列出来（读者常常找不到它们）
    Pi            不删

    at_risk(home, env, now) ──► RiskListing：离删除不到 MARGIN_DAYS 天（或已经过了期限、Agent 还没来得及删）的会话，
                                 每个写明原因；policies 说明每种 Agent 用的期限和它从哪里来
    keep(home, store, env, now) ──► KeepSummary：逐个 import_file（节点 ID 由来源决定：再保留一次什么都不写）；
                                     summary.line() 是给命令行 / 定时任务的一行中文

关键洞察：我们的仓库从不过期，导入又是幂等的——所以“保留”就是把快到期的那些导入一遍，随便多跑几次都一样。
Agent 按文件的最后修改时间算会话的年龄，这里也一样（只 stat，不读内容）。

保证：Agent 的文件夹只读（列表只 stat，标题只读开头）；设置文件只读开头 1 MB，读不了、不是 JSON、值不对时
用默认值并在 policies 里说明；一个会话导入失败不影响其余的，失败的写进 failed（中文原因）。
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass, field
from typing import Callable, List, Mapping, Optional, Tuple

from s11_format import SessionError
from s11_session import SessionStore
from s11_text import os_error_reason

from . import compressed
from .agents import AgentListing, AgentSession, _finish, _regular, agent_roots
from .formats import CLAUDE, CODEX, FORMAT_NAMES, GEMINI
from .lines import DEFAULT_MAX_BYTES
from .pipeline import import_file
from .report import ImportReport

__all__ = ["MARGIN_DAYS", "DEFAULT_DAYS", "Policy", "AtRisk", "RiskListing", "KeepSummary", "policies", "at_risk",
           "keep"]

MARGIN_DAYS = 5          # 离删除还有这么多天以内就算“快要删了”
DEFAULT_DAYS = 30        # Claude Code 的 cleanupPeriodDays、Gemini CLI 的 sessionRetention 的默认值
_DAY = 86400
_SETTINGS_BYTES = 1 << 20
_MAX_AGE = re.compile(r"^\s*(\d{1,6})\s*([hdwm]?)\s*$", re.IGNORECASE)
_UNIT_DAYS = {"h": 1 / 24, "d": 1, "w": 7, "m": 30, "": 1}


@dataclass(frozen=True)
class Policy:
    """一种 Agent 删会话的规矩：days 为 None 表示不按年龄删；where 说明期限从哪里来（给人看）。"""
    format: str
    days: Optional[float]
    where: str


@dataclass
class AtRisk:
    session: AgentSession
    reason: str                         # “还剩 3 天就会被删除”“已压缩（.jsonl.zst）”……
    days_left: Optional[float] = None   # Claude / Gemini：离删除还有几天（可能是负数：过期了，Agent 还没删）


@dataclass
class RiskListing:
    sessions: List[AtRisk] = field(default_factory=list)
    policies: List[Policy] = field(default_factory=list)
    truncated: bool = False


@dataclass
class KeepSummary:
    found: int = 0          # 快要删的会话有几个
    kept: int = 0           # 导入成功的（包括本来就保留过、这次什么都没写的）
    nodes_written: int = 0  # 这次新写或更新的节点
    unchanged: int = 0      # 早就保留过、没变的节点
    failed: List[Tuple[str, str]] = field(default_factory=list)   # (文件, 中文原因)
    reports: List[ImportReport] = field(default_factory=list)

    def line(self) -> str:
        """一行总结：定时任务的日志里一眼看明白。"""
        if not self.found:
            return "没有快要被删掉的会话，什么都没写"
        text = (f"保留了 {self.kept}/{self.found} 个快要被删掉的会话：写入 {self.nodes_written} 个节点，"
                f"{self.unchanged} 个节点早已保留")
        return text + (f"；{len(self.failed)} 个没能导入（第一个：{self.failed[0][1]}）" if self.failed else "")


# ── 期限：读 Agent 自己的设置文件 ─────────────────────────────────────────────────────────────
def _settings(path: str) -> Tuple[Optional[dict], str]:
    """(设置, 问题)：文件不在是 (None, "")；读不了、不是 JSON 对象时是 (None, 中文原因)。"""
    if not os.path.isfile(path):
        return None, ""
    try:
        with open(path, "rb") as handle:
            value = json.loads(handle.read(_SETTINGS_BYTES))
    except (OSError, ValueError, RecursionError) as exc:
        reason = os_error_reason(exc) if isinstance(exc, OSError) else "不是有效的 JSON"
        return None, f"{path} {reason}"
    return (value, "") if isinstance(value, dict) else (None, f"{path} 不是 JSON 对象")


def _claude_policy(root: str) -> Policy:
    path = os.path.join(root, "settings.json")
    settings, problem = _settings(path)
    if settings is None:
        return Policy(CLAUDE, DEFAULT_DAYS, f"默认 {DEFAULT_DAYS} 天" + (f"（{problem}，用了默认值）" if problem else ""))
    value = settings.get("cleanupPeriodDays")
    if value is None:
        return Policy(CLAUDE, DEFAULT_DAYS, f"默认 {DEFAULT_DAYS} 天（{path} 里没有 cleanupPeriodDays）")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return Policy(CLAUDE, DEFAULT_DAYS, f"默认 {DEFAULT_DAYS} 天（{path} 的 cleanupPeriodDays 不是非负数）")
    return Policy(CLAUDE, float(value), f"{path} 的 cleanupPeriodDays = {value:g}")


def _gemini_policy(root: str) -> Policy:
    path = os.path.join(root, "settings.json")
    settings, problem = _settings(path)
    if settings is None:
        return Policy(GEMINI, DEFAULT_DAYS, f"默认 {DEFAULT_DAYS} 天" + (f"（{problem}，用了默认值）" if problem else ""))
    general = settings.get("general") if isinstance(settings.get("general"), dict) else {}
    retention = general.get("sessionRetention", settings.get("sessionRetention"))
    if not isinstance(retention, dict):
        return Policy(GEMINI, DEFAULT_DAYS, f"默认 {DEFAULT_DAYS} 天（{path} 里没有 general.sessionRetention）")
    if retention.get("enabled") is False:
        return Policy(GEMINI, None, f"{path} 关掉了 sessionRetention：不按年龄删")
    found = _MAX_AGE.match(str(retention.get("maxAge", ""))) if retention.get("maxAge") is not None else None
    if found is None:
        return Policy(GEMINI, DEFAULT_DAYS, f"默认 {DEFAULT_DAYS} 天（{path} 的 sessionRetention.maxAge 不认识）")
    days = int(found.group(1)) * _UNIT_DAYS[found.group(2).lower()]
    return Policy(GEMINI, days, f"{path} 的 sessionRetention.maxAge = {retention['maxAge']}")


def policies(home: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> List[Policy]:
    found = []
    for row, root in agent_roots(home, env):
        if row.format == CLAUDE:
            found.append(_claude_policy(root))
        elif row.format == GEMINI:
            found.append(_gemini_policy(root))
        elif row.format == CODEX:
            found.append(Policy(CODEX, None, "不删；闲置 7 天压缩成 .jsonl.zst、归档的在 archived_sessions/"))
        else:
            found.append(Policy(row.format, None, "不删"))
    return found


# ── 哪些会话快要没了 ──────────────────────────────────────────────────────────────────────────
def _risk(policy: Policy, path: str, modified: float, now: float) -> Optional[Tuple[str, Optional[float]]]:
    if policy.format == CODEX:
        if path.endswith(compressed.ZST_SUFFIX):
            return "已压缩（.jsonl.zst），Codex 的列表和旧工具都看不到它", None
        if os.sep + "archived_sessions" + os.sep in path:
            return "已归档（archived_sessions/）", None
        return None
    if policy.days is None:
        return None
    left = policy.days - (now - modified) / _DAY
    if left > MARGIN_DAYS:
        return None
    if left <= 0:
        return f"已过 {policy.days:g} 天的期限，{FORMAT_NAMES[policy.format]} 下次启动就会删除", left
    return f"还剩 {left:.1f} 天就会被删除（期限 {policy.days:g} 天）", left


def at_risk(home: Optional[str] = None, env: Optional[Mapping[str, str]] = None, now: Optional[float] = None, *,
            limit: int = 2000, scan_limit: int = 20_000) -> RiskListing:
    """快要被删掉的会话，最快要删的在前。只 stat 每个文件；只给快要删的读开头取标题。"""
    now = time.time() if now is None else now
    listing = RiskListing(policies=policies(home, env))
    by_format = {policy.format: policy for policy in listing.policies}
    candidates, reasons, seen = [], {}, 0
    for row, root in agent_roots(home, env):
        policy = by_format[row.format]
        if not os.path.isdir(root) or (policy.days is None and row.format != CODEX):
            continue
        for path, project in row.sessions(root):
            seen += 1
            if seen > scan_limit:
                listing.truncated = True
                break
            info = _regular(path, root)
            risk = _risk(policy, path, info.st_mtime, now) if info is not None else None
            if risk is not None:
                candidates.append((path, row.format, project, info))
                reasons[path] = risk
    rows = _finish(AgentListing(), candidates, limit)
    listing.truncated = listing.truncated or rows.truncated
    listing.sessions = [AtRisk(session, *reasons[session.path]) for session in rows.sessions]
    listing.sessions.sort(key=lambda item: (item.days_left is None, item.days_left or 0, item.session.path))
    return listing


# ── 保留：全部导入 ───────────────────────────────────────────────────────────────────────────
def keep(home: Optional[str], store: SessionStore, env: Optional[Mapping[str, str]] = None,
         now: Optional[float] = None, *, import_one: Optional[Callable[[str], ImportReport]] = None,
         max_bytes: int = DEFAULT_MAX_BYTES) -> KeepSummary:
    """把 at_risk() 列出的会话逐个导入 store。import_one 可以换成带限额的导入（工作台用）。"""
    import_one = import_one or (lambda path: import_file(path, store, max_bytes=max_bytes))
    listing = at_risk(home, env, now)
    summary = KeepSummary(found=len(listing.sessions))
    for item in listing.sessions:
        try:
            report = import_one(item.session.path)
        except SessionError as exc:
            summary.failed.append((item.session.path, str(exc)))
            continue
        except OSError as exc:
            summary.failed.append((item.session.path, f"{os.path.basename(item.session.path)}：{os_error_reason(exc)}"))
            continue
        summary.kept += 1
        summary.nodes_written += report.written
        summary.unchanged += report.unchanged
        summary.reports.append(report)
    return summary
