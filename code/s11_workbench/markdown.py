"""markdown.py — 会话文字进页面之前：Markdown 与 mermaid 里只当纯文字，一处定义，每个标签页都用

    标题、ID、文件名（一行） ──► literal_inline()    '<b>x</b>' -> '\\<b\\>x\\</b\\>'
    消息正文（多行）          ──► literal_markdown()  普通文字逐个转义 ASCII 标点；代码样的文字装进围栏
    助手写的 Markdown         ──► inert_markdown()    照常排版（粗体、列表、代码），但 HTML、图片、非 http 链接都只是文字
    代理的命令标签            ──► command_chip()      '<command-name>/exit</command-name>' -> '⌨️ `/exit`'
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
_ESCAPED_PUNCTUATION = re.compile(r"\\" + _ASCII_PUNCTUATION.pattern)   # 上面那条转义的反面（unescaped）
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


# ── 助手的 Markdown：排版照常，能“动”的东西一律变成文字 ─────────────────────────────────────────
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LINK_TARGET = re.compile(r"\]\(\s*<?([^)\s>]*)")
_REFERENCE = re.compile(r"^( {0,3})\[([^\]\n]+)\]:[ \t]*<?(\S*)", re.MULTILINE)
_SAFE_URL = re.compile(r"https?://", re.IGNORECASE)


def inert_markdown(text: str) -> str:
    """助手写的 Markdown -> 照常排版、却什么都“动”不了的 Markdown。

    '**粗** <b>x</b>'           -> '**粗** &lt;b>x&lt;/b>'（HTML 与 <自动链接> 只是文字）
    '![图](http://e.com/x.png)' -> '&#33;[图](http://e.com/x.png)'（不加载远程图片：只剩一个 http 链接）
    '[点](javascript:alert(1))' -> '[点]&#40;javascript:alert(1))'（只有 http(s) 链接还是链接）
    代码围栏与行内代码原样保留（它们本来就按文字显示）。页面上的 Chatbot 还开着 sanitize_html，这是第二道。
    """
    out, fence = [], None
    lines = str(text).split("\n")
    prose: list[str] = []
    for line in lines:
        opened = _FENCE_OPEN.match(line)
        if opened and opened.group(1)[0] == "`" and "`" in line[opened.end():]:
            opened = None   # 反引号围栏的信息串里不能有反引号：那是行内代码，不是围栏
        if fence is None and opened:
            out.append(_inert_prose("\n".join(prose))) if prose else None
            prose, fence = [], opened.group(1)
            out.append(line)
        elif fence is not None:
            out.append(line)
            if line.strip().startswith(fence[0] * len(fence)) and not line.strip().strip(fence[0]):
                fence = None
        else:
            prose.append(line)
    if prose:
        out.append(_inert_prose("\n".join(prose)))
    return "\n".join(out)


def _inert_prose(text: str) -> str:
    """围栏之外的一段：行内代码原样，其余的文字拆掉 HTML、图片和不安全的链接。"""
    pieces, last = [], 0
    for start, stop in _code_spans(text):
        pieces += [_inert_words(text[last:start]), text[start:stop]]
        last = stop
    pieces.append(_inert_words(text[last:]))
    return "".join(pieces)


def _code_spans(text: str):
    """CommonMark 的行内代码：反引号串开头（前面的反斜杠是偶数个），同样长的反引号串结尾。"""
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", text)]
    index = 0
    while index < len(runs):
        start, stop = runs[index]
        slashes = len(text[:start]) - len(text[:start].rstrip("\\"))
        if slashes % 2:   # 被转义的反引号：第一个不算，其余的还能开一段代码
            start += 1
            if start == stop:
                index += 1
                continue
        width = stop - start
        close = next((j for j in range(index + 1, len(runs)) if runs[j][1] - runs[j][0] == width), None)
        if close is None:
            index += 1
            continue
        yield start, runs[close][1]
        index = close + 1


def _inert_words(text: str) -> str:
    # 用实体而不是反斜杠：实体解出来的字符只是文字，前面再多一个反斜杠也拼不出标签、图片或链接
    text = text.replace("<", "&lt;").replace("![", "&#33;[")
    text = _REFERENCE.sub(lambda m: m.group(0) if _SAFE_URL.match(m.group(3))
                          else m.group(1) + "&#91;" + m.group(0)[len(m.group(1)) + 1:], text)
    return _LINK_TARGET.sub(lambda m: m.group(0) if _SAFE_URL.match(m.group(1)) else "]&#40;" + m.group(0)[2:], text)


_COMMAND = re.compile(r"<command-name>\s*([^<]{0,200}?)\s*</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>\s*([^<]{0,400}?)\s*</command-args>")
_COMMAND_OUTPUT = re.compile(r"<local-command-(stdout|stderr)>(.*?)</local-command-\1>", re.DOTALL)
_HARNESS_TAGS = re.compile(r"</?(?:command-name|command-message|command-args|command-contents)>")


def command_chip(text: str) -> tuple[str, str] | None:
    """代理（Claude Code）写进用户消息里的命令标签 -> (命令一行, 命令输出)；不是命令就 None。

    '<command-name>/exit</command-name><command-args></command-args>' -> ('/exit', '')
    '<local-command-stdout>See ya!</local-command-stdout>'            -> ('', 'See ya!')
    """
    text = str(text)
    name, output = _COMMAND.search(text), _COMMAND_OUTPUT.search(text)
    if name is None and output is None:
        return None
    if name is not None:
        args = _COMMAND_ARGS.search(text)
        line = " ".join(filter(None, [name.group(1).strip(), args.group(1).strip() if args else ""]))
        rest = _HARNESS_TAGS.sub(" ", _COMMAND.sub("", _COMMAND_ARGS.sub("", text)))
        if _COMMAND_OUTPUT.sub("", rest).strip() and not re.fullmatch(r"[\s\w./-]*", rest):
            return None   # 命令标签外还有别的话：按普通消息显示
        return line, "\n".join(m.group(2) for m in _COMMAND_OUTPUT.finditer(text))
    if _COMMAND_OUTPUT.sub("", text).strip():
        return None
    return "", "\n".join(m.group(2) for m in _COMMAND_OUTPUT.finditer(text))


def literal_inline(text: str, limit: int | None = None) -> str:
    """一行之内的纯文字（标题、ID、文件名）：先压成一行，再转义。"""
    flat = shorten(text, limit) if limit else " ".join(str(text).split())
    return _ASCII_PUNCTUATION.sub(r"\\\1", flat)


def unescaped(line: str) -> str:
    r"""literal_inline 的反面：一行提示要放进纯文字框（gr.Textbox 不渲染 Markdown）时，去掉转义用的反斜杠。

    >>> unescaped(r'收到 笔记\.txt：a\\b')
    '收到 笔记.txt：a\\b'
    """
    return _ESCAPED_PUNCTUATION.sub(r"\1", str(line))


def mermaid_text(text: str, limit: int = LABEL_MAX_CHARS) -> str:
    """'a "b" <c>' -> 'a #quot;b#quot; #lt;c#gt;'：会话文字进入 mermaid 标签前必须经过这里。"""
    return shorten(text, limit).translate(MERMAID_ENTITIES)


def inline_code(text: str) -> str:
    """Markdown 行内代码；text 含反引号时换用更长的分隔符。"""
    return f"`` {text} ``" if "`" in text else f"`{text}`"
