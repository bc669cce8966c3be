"""体检：SessionStore.check() 列出仓库里的全部问题，从不修改任何文件。

    for problem in store.check():        # Problem(kind, path, detail)
        print(problem.kind, problem.path, problem.detail)

一个 *.json 条目读不了（corrupt / unreadable / newer_version）、文件名与 session_id 不一致（stray_file）、
父节点或收敛来源不在仓库里（missing_parent / missing_converged）、被中断留下的临时文件（temp_file）、
缺了、坏了或没人引用的块（missing_chunk / damaged_chunk / orphan_chunk，见 s11_chunks.ChunkStore.problems）。
.chunks 是符号链接（或别的不是文件夹的东西）报 unreadable，从不跟随它。扫描途中消失的文件不算问题；
正在写的临时文件不算残留。check() 只报告；修复是 remove_orphan_chunks() / empty_trash()：它们先删掉没人要了的
临时文件（s11_storage.abandoned_temps），再删只被它们引用的块。

本模块只依赖标准库和 s11_format / s11_storage；它读仓库用的是 SessionStore 自己的摘要读取（每条消息都检查）。
"""

from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, NamedTuple, Optional

from s11_format import SessionError, UnreadableSession, UnsupportedVersion, is_session_name
from s11_storage import temp_file_problem

__all__ = ["Problem", "check", "parent_problems"]


class Problem(NamedTuple):
    """check() 报告的一个问题。kind ∈ corrupt / unreadable / newer_version / missing_parent / temp_file / stray_file
    / missing_chunk / damaged_chunk / orphan_chunk / missing_converged"""
    kind: str
    path: str
    detail: str


def check(store: Any) -> List[Problem]:
    """store（一个 SessionStore）里的全部问题，按文件名的顺序；块的问题引用它的每个会话各报一条。"""
    problems: List[Problem] = []
    summaries: Dict[str, Dict[str, Any]] = {}
    paths: List[str] = []
    for fname in sorted(os.listdir(store.storage_dir)):
        path = os.path.join(store.storage_dir, fname)
        if fname.endswith(".tmp"):
            problems += [Problem(kind, path, detail) for kind, detail in temp_file_problem(path)]
        elif is_session_name(fname):
            paths.append(path)
            summary = _entry(store, path, fname, problems)
            if summary is not None:
                summaries[summary["session_id"]] = summary
    problems += [Problem(*found) for found in store._chunks.problems(paths, store._lock)]   # 块：缺、坏、没人引用
    return problems + parent_problems(list(summaries.values()), store.path_of)


def parent_problems(summaries: List[Dict[str, Any]], path_of: Callable[[str], str]) -> List[Problem]:
    """只由“哪些会话在仓库里”决定的两种问题，从摘要算出（会话树浏览器也用它，不必重读文件）：
    父会话不在（missing_parent），收敛来源不在（missing_converged）；按会话 ID 排序。"""
    present = {summary["session_id"] for summary in summaries}
    ordered = sorted(summaries, key=lambda summary: summary["session_id"])
    problems = [Problem("missing_parent", path_of(summary["session_id"]),
                        f"会话 {summary['session_id']} 的父会话 {summary['parent_id']} 不在仓库中"
                        f"（可能已删除，历史仍完整保留在本文件）")
                for summary in ordered if summary.get("parent_id") and summary["parent_id"] not in present]
    problems += [Problem("missing_converged", path_of(summary["session_id"]),
                         f"收敛节点 {summary['session_id']} 记着收敛了分支 {other}，它不在仓库中（可能已删除；"
                         f"带过来的消息仍完整保留在本文件）")
                 for summary in ordered for other in summary.get("converged_from") or [] if other not in present]
    return problems


def _entry(store: Any, path: str, fname: str, problems: List[Problem]) -> Optional[Dict[str, Any]]:
    """一个 *.json 条目：读得了返回摘要，读不了往 problems 里记一条（消失了什么都不记）。"""
    try:
        summary = store._summary(path, every_message=True)
    except FileNotFoundError:
        return None   # 扫描途中被删掉：不是问题
    except UnsupportedVersion as exc:
        problems.append(Problem("newer_version", path, str(exc)))
        return None
    except UnreadableSession as exc:
        problems.append(Problem("unreadable", path, str(exc)))
        return None
    except SessionError as exc:
        problems.append(Problem("corrupt", path, str(exc)))
        return None
    if fname != summary["session_id"] + ".json":
        problems.append(Problem("stray_file", path, f"文件名与其中的 session_id {summary['session_id']} 不一致"))
    return summary
