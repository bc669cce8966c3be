"""tool_calls.py — 一次工具调用“动了什么”，一行：折叠起来的调用标题里就写着命令、文件或查询，不必逐个点开

    {"name": "Bash", "input": {"command": "pytest -q", "description": "跑测试"}}  -> 'pytest -q'
    {"name": "Read", "input": {"file_path": "/repo/app.py"}}                     -> '/repo/app.py'
    {"name": "Grep", "input": {"pattern": "def login", "path": "src/"}}          -> 'def login（src/）'
    {"name": "shell", "input": {"command": ["bash", "-lc", "rg -n x src/"]}}     -> 'rg -n x src/'（Codex）
    {"name": "apply_patch", "input": {"input": "*** Begin Patch\\n*** Update File: a.py …"}} -> 'a.py'（Codex）

Key insight: 各家代理的工具名不同，参数的名字却差不多（command、file_path / path、pattern、query、url）：
按一张“先看哪个参数”的表取第一个有的，一张表认得 Claude Code、Pi、Codex、Gemini CLI 的工具。

只返回纯文字（压成一行、最多 SUBJECT_CHARS 个字）；放进页面之前由调用方转义（markdown.literal_inline）。
本模块只依赖标准库和 s11_text。
"""

from __future__ import annotations

import re
from typing import Any

from s11_text import shorten

SUBJECT_CHARS = 80
# 先看哪个参数：命令 > 文件 > 模式 / 查询 / 网址 > 目录 > 描述。Grep / Glob 的 path 只是范围，写在模式后面的括号里
SUBJECT_KEYS = ("command", "cmd", "file_path", "absolute_path", "notebook_path", "pattern", "query", "url",
                "path", "dir_path", "description", "prompt")
SHELL_WRAPPERS = (("bash", "-lc"), ("bash", "-c"), ("sh", "-c"), ("zsh", "-lc"), ("zsh", "-c"))
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)


def tool_subject(block: Any) -> str:
    """一个工具调用块（Claude 的 tool_use{input}、Pi 的 toolCall{arguments}）-> 它动了什么，一行；说不出来时为空串。"""
    if not isinstance(block, dict):
        return ""
    arguments = block.get("input", block.get("arguments"))
    if isinstance(arguments, str):   # Codex 的 apply_patch（custom_tool_call）：参数就是补丁全文
        arguments = {"input": arguments}
    if not isinstance(arguments, dict):
        return ""
    patched = _patched_files(arguments.get("input") or arguments.get("patch"))
    if patched:
        return _one_line(patched)
    for key in SUBJECT_KEYS:
        value = _as_line(arguments.get(key))
        if value:
            scope = _as_line(arguments.get("path")) if key == "pattern" else ""
            return _one_line(f"{value}（{scope}）" if scope else value)
    return ""


def _as_line(value: Any) -> str:
    """参数值 -> 一行文字：字符串原样，命令数组去掉 bash -lc 这样的外壳再拼起来，其余的不算。"""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        if tuple(value[:2]) in SHELL_WRAPPERS and len(value) == 3:
            return value[2]
        return " ".join(value)
    return value if isinstance(value, str) else ""


def _patched_files(patch: Any) -> str:
    """Codex 的补丁文字 -> 它改的文件，逗号隔开；不是补丁为空串。"""
    if not isinstance(patch, str) or "*** Begin Patch" not in patch[:200]:
        return ""
    return ", ".join(match.strip() for match in _PATCH_FILE.findall(patch))


def _one_line(text: str) -> str:
    return shorten(" ".join(text.split()), SUBJECT_CHARS)
