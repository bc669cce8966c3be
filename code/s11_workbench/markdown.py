"""markdown.py — 会话文字进页面之前：Markdown 与 mermaid 里只当纯文字，一处定义，每个标签页都用

    标题、ID、文件名（一行） ──► literal_inline()    '<b>x</b>' -> '\\<b\\>x\\</b\\>'
    消息正文（多行）          ──► literal_markdown()  普通文字逐个转义 ASCII 标点；代码样的文字装进围栏
    mermaid 节点与边的标签    ──► mermaid_text()      '"]; click' -> '#quot;#93;#59; click'（实体写法）
    页面自己的短路径、目录名   ──► inline_code()       `gradio_sessions/…`
    整段不可信的文字          ──► s11_export.fenced()  它在导出里已有家，这里不再写第二份

Key insight: 转义只有一种写法，两个标签页才不会一个挡住了 `"]; click n0 call …`、另一个漏掉它。
"""

from __future__ import annotations

import re
from types import MappingProxyType

from s11_export import fenced
from s11_text import shorten

LABEL_MAX_CHARS = 28

# CommonMark 允许转义任何 ASCII 标点：转义之后 Markdown 与 HTML 都无从发挥，文字按原样显示
_ASCII_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
_CODE_LIKE_LINE = re.compile(r"^(?: {4}|\t)|^\s*(?:`{3,}|~{3,})", re.MULTILINE)

# mermaid 的实体写法：标签里一旦出现这些字符就可能提前结束节点、开出新语句（如 `"]; click A call ...`）。
# 一次 translate 完成替换，`#` 本身也被转义，所以不会出现二次转义。
MERMAID_ENTITIES = MappingProxyType(str.maketrans({
    "#": "#35;", '"': "#quot;", "'": "#39;", "<": "#lt;", ">": "#gt;", "&": "#amp;",
    "[": "#91;", "]": "#93;", "(": "#40;", ")": "#41;", "{": "#123;", "}": "#125;",
    "|": "#124;", "`": "#96;", ";": "#59;", ":": "#58;", "\\": "#92;",
    "\n": " ", "\r": " ", "\t": " ",
}))


def literal_markdown(text: str) -> str:
    """任意文字 -> 在 Markdown 里逐字显示的写法。

    '<b>hi</b>' -> '\\<b\\>hi\\</b\\>'（普通文字：转义每个 ASCII 标点）
    '    x = 1' -> 代码围栏（缩进、围栏这类“代码样”的文字整段装进更长的围栏，空白也保留）
    """
    text = str(text)
    if _CODE_LIKE_LINE.search(text):
        return fenced(text)
    return _ASCII_PUNCTUATION.sub(r"\\\1", text)


def literal_inline(text: str, limit: int | None = None) -> str:
    """一行之内的纯文字（标题、ID、文件名）：先压成一行，再转义。"""
    flat = shorten(text, limit) if limit else " ".join(str(text).split())
    return _ASCII_PUNCTUATION.sub(r"\\\1", flat)


def mermaid_text(text: str, limit: int = LABEL_MAX_CHARS) -> str:
    """'a "b" <c>' -> 'a #quot;b#quot; #lt;c#gt;'：会话文字进入 mermaid 标签前必须经过这里。"""
    return shorten(text, limit).translate(MERMAID_ENTITIES)


def inline_code(text: str) -> str:
    """Markdown 行内代码；text 含反引号时换用更长的分隔符。"""
    return f"`` {text} ``" if "`" in text else f"`{text}`"
