"""report.py — 一次导入的结果（ImportReport）和它的中文报告；导入拒绝一个文件时抛的几种错误

    ImportReport.describe() ──►  导入 s.jsonl（Claude Code 格式，读入 35.6 KB）
                                   会话节点 3 个：新写入 3，更新 0，未变化 0
                                   消息 29 条；活动端（对话现在停在这里）：98391292e585
                                   跳过的行：无 | 跳过 2 行：第 7 行：……（最多列 20 行，其余写“另有 N 行”和原因）
                                   没有变成消息的条目：progress ×3、……
                                   ⚠️ 每条警告一行
                                   写入 23.2 KB，是读入的 0.65 倍；分叉复制的前缀约 4.1 KB

错误都是 SessionError（ValueError）的子类，消息里写明文件名；抛出时仓库一个字节都没有变。
报告里来自记录的每一段文字（文件名、原因、警告、类型名）都经 s11_text.printable()：多行的报告照样是
多行，但一个文件名里的换行、终端转义序列、双向文字控制符只会显示成 \\n、\\u001b 这样的转义。
本模块不打印：命令行（s11_cli）和工作台各自决定把报告放在哪里。
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from s11_format import SessionError
from s11_text import human_size, printable

from .formats import FORMAT_NAMES

__all__ = ["ImportReport", "FolderReport", "UnsupportedFormat", "NoConversation", "TranscriptTooLarge", "CompanionFile",
           "TooManyBranches"]


# ── 错误：都是 SessionError（ValueError）的子类，消息里写明文件名 ───────────────────────────
class UnsupportedFormat(SessionError):
    """不是支持的会话记录（二进制、压缩文件、别的 JSON、普通文本、Agent 的其它文件）。仓库不变。"""


class NoConversation(SessionError):
    """认得格式，但里面一条对话都没有（空文件、只有文件头、只有快照）。仓库不变。"""


class TranscriptTooLarge(SessionError):
    """文件超过大小上限。仓库不变。"""


class CompanionFile(SessionError):
    """这个文件是别的会话的一部分（Claude Code 的子代理记录）：请导入它所属的会话文件。仓库不变。"""


class TooManyBranches(TranscriptTooLarge):
    """分支太多：每个分支节点都复制分叉处之前的全部消息，复制的总量超过上限。仓库不变。"""


# ── 导入报告 ───────────────────────────────────────────────────────────────────────────────
@dataclass
class ImportReport:
    """一次导入的结果。node_ids 按树的层次排列（根在前，父在子前）。

    skipped 只有前 SKIPPED_KEPT 行（行号, 原因）；skipped_total 是跳过的总行数，skipped_by_reason 按原因计数。
    files 是读进来的会话文件（导入文件夹时，续接 / 分叉同一段历史的几个文件是一次导入）。"""
    file: str
    format: str
    node_ids: List[str] = field(default_factory=list)
    root_ids: List[str] = field(default_factory=list)
    active_id: Optional[str] = None
    skipped: List[Tuple[int, str]] = field(default_factory=list)
    skipped_total: int = 0
    skipped_by_reason: Dict[str, int] = field(default_factory=dict)
    dropped: Dict[str, int] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)
    messages: int = 0           # 导入的不同消息条数（分叉复制的前缀不重复计）
    bytes_read: int = 0
    bytes_written: int = 0
    bytes_planned: int = 0      # 写之前算出的确切字节数（dry_run 时就是“会写多少”）
    copy_bytes: int = 0         # 分叉节点复制父节点前缀所占的字节（按紧凑 JSON 计）
    written: int = 0            # 本次写入的节点（新建 + 更新）
    updated: int = 0
    unchanged: int = 0
    kept: int = 0               # 仓库里被续写过、因此没有覆盖的节点
    # 续写过的节点之后 Agent 又写的对话落到了哪里：[(续写过的节点, 装新对话的子节点, Agent 的新消息条数)]
    continued: List[Tuple[str, str, int]] = field(default_factory=list)
    missing_subagents: List[str] = field(default_factory=list)   # 启动了、记录却没读到的子代理文件（agent-<id>.jsonl）
    diverged: List[str] = field(default_factory=list)   # 续写过、Agent 那边也有新对话、两边的历史却对不上的节点
    files: List[str] = field(default_factory=list)
    active_ids: List[str] = field(default_factory=list)   # 每个会话文件的活动端（导入一个文件时只有一个）
    unit: str = "行"            # 跳过的是“行”；JSON 文档里是“条消息”

    def describe(self) -> str:
        """多行中文报告，命令行和工作台都用它。"""
        name = FORMAT_NAMES.get(self.format, printable(self.format))
        lines = [f"导入 {printable(self.file)}（{name} 格式，读入 {human_size(self.bytes_read)}）"]
        if len(self.files) > 1:
            lines.append(f"  同一段历史的续接 / 分叉会话文件：{'、'.join(printable(f) for f in self.files[1:])}")
        lines += [f"  会话节点 {len(self.node_ids)} 个：新写入 {self.written - self.updated}，更新 {self.updated}，"
                  f"未变化 {self.unchanged}" + (f"，保留仓库里续写过的 {self.kept}" if self.kept else ""),
                  f"  消息 {self.messages} 条；活动端（对话现在停在这里）：{self.active_id or '无'}"]
        lines += [f"  ↪️ 节点 {kept} 在仓库里续写过（原样保留）：Agent 之后写的 {count} 条在它的子节点 {child} 里"
                  for kept, child, count in self.continued]
        lines += _describe_skipped(self)
        if self.dropped:
            shown = "、".join(f"{printable(kind)} ×{count}" for kind, count in sorted(self.dropped.items()))
            lines.append(f"  没有变成消息的条目：{shown}")
        lines += [f"  ⚠️ {printable(warning)}" for warning in self.warnings]
        ratio = f"，是读入的 {self.bytes_written / self.bytes_read:.2f} 倍" if self.bytes_read and self.bytes_written else ""
        lines.append(f"  写入 {human_size(self.bytes_written)}{ratio}；分叉复制的前缀约 {human_size(self.copy_bytes)}")
        return "\n".join(lines)


def _describe_skipped(report: ImportReport, shown: int = 20) -> List[str]:
    total = max(report.skipped_total, len(report.skipped))
    if not total:
        return ["  跳过的行：无"]
    unit = report.unit
    lines = [f"  跳过 {total} {'行' if unit == '行' else unit}："]
    lines += [f"    第 {line} {unit}：{printable(reason)}" for line, reason in report.skipped[:shown]]
    if total > shown:
        reasons = "、".join(f"{printable(reason)} ×{count}" for reason, count in
                            sorted(report.skipped_by_reason.items(), key=lambda item: -item[1])[:8])
        lines.append(f"    ……另有 {total - min(shown, len(report.skipped))} {unit}" +
                     (f"（全部按原因：{reasons}）" if reasons else ""))
    return lines


@dataclass
class FolderReport:
    """导入一个文件夹的结果：每组会话文件一份 ImportReport（续接 / 分叉同一段历史的文件是一组），
    导入不了的文件各一句中文（problems），成功导入的照样留在仓库里。"""
    folder: str
    reports: List[ImportReport] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)

    @property
    def node_ids(self) -> List[str]:
        return [node_id for report in self.reports for node_id in report.node_ids]

    def describe(self) -> str:
        lines = [report.describe() for report in self.reports]
        lines += [f"⚠️ {printable(problem)}" for problem in self.problems]
        files = sum(len(report.files) or 1 for report in self.reports)
        lines.append(f"文件夹 {printable(self.folder)}：导入 {files} 个会话文件（{len(self.reports)} 棵树），"
                     f"{len(self.problems)} 个没有导入")
        return "\n".join(lines)
