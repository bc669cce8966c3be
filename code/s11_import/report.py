"""report.py — 一次导入的结果（ImportReport）和它的中文报告；导入拒绝一个文件时抛的三种错误

    ImportReport.describe() ──►  导入 s.jsonl（Claude Code 格式，读入 35.6 KB）
                                   会话节点 3 个：新写入 3，更新 0，未变化 0
                                   消息 29 条；活动端（对话现在停在这里）：98391292e585
                                   跳过的行：无 | 跳过 2 行：第 7 行：……（最多列 20 行）
                                   没有变成消息的条目：progress ×3、……
                                   ⚠️ 每条警告一行
                                   写入 23.2 KB，是读入的 0.65 倍；分叉复制的前缀约 4.1 KB

错误都是 SessionError（ValueError）的子类，消息里写明文件名；抛出时仓库一个字节都没有变。
本模块不打印：命令行（s11_cli）和工作台各自决定把报告放在哪里。
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from s11_format import SessionError
from s11_text import human_size

from .formats import FORMAT_NAMES

__all__ = ["ImportReport", "UnsupportedFormat", "NoConversation", "TranscriptTooLarge"]


# ── 错误：都是 SessionError（ValueError）的子类，消息里写明文件名 ───────────────────────────
class UnsupportedFormat(SessionError):
    """不是 Claude Code / Pi 的会话记录（二进制、别的 JSON、普通文本）。仓库不变。"""


class NoConversation(SessionError):
    """认得格式，但里面一条对话都没有（空文件、只有文件头、只有快照）。仓库不变。"""


class TranscriptTooLarge(SessionError):
    """文件超过大小上限。仓库不变。"""


# ── 导入报告 ───────────────────────────────────────────────────────────────────────────────
@dataclass
class ImportReport:
    """一次导入的结果。node_ids 按树的层次排列（根在前，父在子前）。"""
    file: str
    format: str
    node_ids: List[str] = field(default_factory=list)
    root_ids: List[str] = field(default_factory=list)
    active_id: Optional[str] = None
    skipped: List[Tuple[int, str]] = field(default_factory=list)
    dropped: Dict[str, int] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)
    messages: int = 0           # 导入的不同消息条数（分叉复制的前缀不重复计）
    bytes_read: int = 0
    bytes_written: int = 0
    copy_bytes: int = 0         # 分叉节点复制父节点前缀所占的字节（按紧凑 JSON 计）
    written: int = 0            # 本次写入的节点（新建 + 更新）
    updated: int = 0
    unchanged: int = 0
    kept: int = 0               # 仓库里被续写过、因此没有覆盖的节点

    def describe(self) -> str:
        """多行中文报告，命令行和工作台都用它。"""
        lines = [f"导入 {self.file}（{FORMAT_NAMES.get(self.format, self.format)} 格式，读入 {human_size(self.bytes_read)}）",
                 f"  会话节点 {len(self.node_ids)} 个：新写入 {self.written - self.updated}，更新 {self.updated}，"
                 f"未变化 {self.unchanged}" + (f"，保留仓库里续写过的 {self.kept}" if self.kept else ""),
                 f"  消息 {self.messages} 条；活动端（对话现在停在这里）：{self.active_id or '无'}"]
        lines += _describe_skipped(self.skipped)
        if self.dropped:
            shown = "、".join(f"{kind} ×{count}" for kind, count in sorted(self.dropped.items()))
            lines.append(f"  没有变成消息的条目：{shown}")
        lines += [f"  ⚠️ {warning}" for warning in self.warnings]
        ratio = f"，是读入的 {self.bytes_written / self.bytes_read:.2f} 倍" if self.bytes_read and self.bytes_written else ""
        lines.append(f"  写入 {human_size(self.bytes_written)}{ratio}；分叉复制的前缀约 {human_size(self.copy_bytes)}")
        return "\n".join(lines)


def _describe_skipped(skipped: List[Tuple[int, str]], shown: int = 20) -> List[str]:
    if not skipped:
        return ["  跳过的行：无"]
    lines = [f"  跳过 {len(skipped)} 行："] + [f"    第 {line} 行：{reason}" for line, reason in skipped[:shown]]
    if len(skipped) > shown:
        lines.append(f"    ……另有 {len(skipped) - shown} 行")
    return lines
