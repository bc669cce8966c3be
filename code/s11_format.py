"""s11_format.py — 会话文件的格式：版本与迁移、ID 与消息检查、字节 ⇄ 字典、错误家族

一个小会话节点 = 一个 JSON 文件（version 3，第 8.11 节的打印代码也能读：它只取自己认识的键）::

    {"version": 3, "revision": 3, "session_id": "0994dd416b46", "title": "...", "parent_id": "5d38f60f4c00",
     "messages": [{"role": "user", "content": "..."}], "created_at": "2026-08-25 18:46:40",
     "fork_point": 5, "workspace": null, "source": null, "created_ns": 1787654000123456789}

    字典 ──► encode_session() ──► UTF-8 字节（indent=2，version 与 revision 在最前）──► s11_storage 原子写入
    字节 ──► decode_session() ──► migrate()：1 → 2 → 3 → 4 → 5，一步一个函数 ──► check_fields() ──► 字典

大会话是 version 4：历史切成共享的块，文件是几行 JSON（布局写在 s11_chunks 的文档里）；这里只提供它逐行用的
encode_line() / encode_message_lines()，以及“第一行写着更新版本”的拒绝（newer_head）。

版本规则：每个文件写成能装下它的最老版本。小会话（消息的紧凑 JSON 不到阈值，见 s11_chunks.BIG_SESSION_BYTES）
没有可共享的块，version 3 就装得下，所以照旧写 version 3——旧版程序和书中代码都读得了；切成块的历史只有
version 4 能表达。version 5 = 收敛节点：多一个顶层字段 "converged_from"（它收敛了哪些分支的 ID，见
s11_converge），布局不变（小的是一个 JSON 文档，大的是块）；只有收敛节点写 5，旧程序读到它会拒绝，
而不是读进来、存回去时悄悄丢掉这个字段。书中代码读 version 5 的小文件照常（它只取自己认识的键）。
消息上的标签是消息自己的键 "label"（Pi 的书签导入后也是它），任何版本都装得下，不需要新版本；大会话的头里
另记一份 "labels"（[[第几条, 标签], …]），会话树不必读块就能显示，旧程序不认识这个键也无妨。
FORMAT_VERSION 是本模块读得懂的最新版本，不是每个文件都写它。

关键洞察：文件格式是和“明天的自己”签的合同——先写明版本，读的时候一步步升级，
看不懂的（更新的版本、坏掉的字节）一律拒绝并保持原样，绝不猜。

保证：
  * 没有 "version" 的文件是章节原版格式（version 1），经 MIGRATIONS 升级；version 比 FORMAT_VERSION 新的
    文件（一个 JSON 文档，或第一行是 JSON 对象的多行文件）抛 UnsupportedVersion，文件保持原样。
  * 读回来的就是存进去的：孤立代理项（半个 emoji）写成 \\udXXX 转义；嵌套超过 MAX_NESTING 层的消息在保存时
    拒绝（InvalidMessage，写明会话和第几条消息），因为它在较深的调用栈里会读不回来。
  * ID 在拼任何路径之前检查（validate_session_id）：'../x'、'a/b'、''、'CON' 一律 InvalidSessionId。
  * 所有错误都是 ValueError 的子类，消息里写明会话 ID 或文件名。

本模块只依赖标准库和 s11_storage / s11_text（都在它之下）。装了 orjson（gradio 自带）时，encode_session、
encode_message_lines 和 parse_json 先试它：只在结果与标准库逐字节（写）、逐值（读）相同的情形下采用，其余
情形（浮点数、超过 64 位的整数、孤立代理项、非字符串的键、JSON 以外的类型……）照旧用标准库；没装 orjson 时
行为完全一样，只是慢一些。
"""

from __future__ import annotations

import hashlib
import itertools
import json
import operator
import os
import re
from typing import Any, Callable, Dict, List, NamedTuple, Optional

try:   # 可选的加速，见模块文档；S11_NO_ORJSON=1 可以关掉它（测试用它对照两条路径）
    import orjson as _orjson
except ImportError:  # pragma: no cover - 没装 orjson
    _orjson = None
if os.environ.get("S11_NO_ORJSON"):
    _orjson = None
if _orjson is not None:   # orjson 第一次调用要先初始化自己（这里实测 ~0.25 ms）：导入时付掉，进程里第一次读档不必等
    _orjson.loads(_orjson.dumps({"预热": ["中文", 1, True, None]}))

from s11_storage import NotRegularFile, read_regular_file
from s11_text import describe_os_error, printable

__all__ = ["FORMAT_VERSION", "PLAIN_VERSION", "CHUNKED_VERSION", "CONVERGE_VERSION", "CHUNKED_VERSIONS",
           "MAX_CONVERGED", "MIGRATIONS", "migrate", "validate_session_id",
           "validate_messages", "check_nesting", "encode_session", "decode_session", "decode_listing",
           "checked_version", "read_session_file", "SessionFile",
           "fingerprint", "FINGERPRINT_BYTES",
           "is_session_name", "encode_line", "encode_message_lines", "newer_head", "check_fields",
           "MAX_ID_LENGTH", "MAX_NESTING", "ID_CHARS",
           "parse_json", "SessionError", "InvalidSessionId", "InvalidMessage", "CorruptSession", "UnreadableSession",
           "ChunkError", "UnsupportedVersion", "ConflictError", "SessionNotFound"]

FORMAT_VERSION = 5         # 本模块读得懂的最新版本
PLAIN_VERSION = 3          # 自带全部消息的单个 JSON（小会话写这个版本）
CHUNKED_VERSION = 4        # 头 + 索引 + 尾部消息，历史在共享的块里（s11_chunks）
CONVERGE_VERSION = 5       # 收敛节点（有 converged_from）：布局同 3 或 4，多一个字段
CHUNKED_VERSIONS = (CHUNKED_VERSION, CONVERGE_VERSION)   # 第一行是头的多行文件可能写的版本
MAX_CONVERGED = 64         # 一个收敛节点最多收敛几个分支
MAX_ID_LENGTH = 64
MAX_NESTING = 100          # 一条消息内部最多嵌套几层列表 / 字典（JSON 解析器在深调用栈里会先耗尽递归）
ID_CHARS = "A-Za-z0-9_-"   # 会话 ID 只用这些字符：放进文件名、链接、mermaid 都安全
_ID_PATTERN = re.compile(rf"[{ID_CHARS}]{{1,{MAX_ID_LENGTH}}}")
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}


# ── 错误：都是 ValueError 的子类，消息里写明会话 ID 或文件名 ─────────────────────────────
class SessionError(ValueError):
    """仓库所有错误的基类。"""


class InvalidSessionId(SessionError):
    """会话 ID 不能安全地变成文件名（如 "../x"）。什么都没有读写。"""


class InvalidMessage(SessionError):
    """节点内容不合法（messages 不是消息列表、标题不是字符串、嵌套太深……）。旧文件一个字节都不变。"""


class CorruptSession(SessionError):
    """文件存在但读不出来：被截断、不是 JSON、字段类型不对。文件保持原样。"""


class UnreadableSession(CorruptSession):
    """名字像会话文件，却打不开：没有权限，或者是目录、FIFO、套接字、符号链接。原样保留。"""


class UnsupportedVersion(SessionError):
    """文件来自更新版本的程序：拒绝读写，以免丢掉看不懂的字段。文件保持原样。"""


class ChunkError(CorruptSession):
    """大会话引用的块缺了（missing=True）、坏了或打不开：不使用它，会话文件和块都原样保留（见 s11_chunks）。"""

    def __init__(self, message: str, chunk: str, *, missing: bool = False):
        super().__init__(message)
        self.chunk = chunk        # 块名（内容的 sha256）
        self.missing = missing


class ConflictError(SessionError):
    """别人在你读入之后保存过同一会话；重新 load() 再追加。磁盘上是别人那一版，一个字节都不变。"""


class SessionNotFound(SessionError):
    """要分叉 / 恢复 / 导出的会话不存在（load() 本身按章节约定返回 None）。"""


# ── 📛 ID 检查：ID 会变成文件名，所以在拼任何路径之前先检查 ──────────────────────────────────
def validate_session_id(session_id: Any) -> str:
    """'5d38f60f4c00' 通过，'../x'、'a/b'、''、'CON' 抛 InvalidSessionId。"""
    if not isinstance(session_id, str) or not _ID_PATTERN.fullmatch(session_id):
        shown = printable(repr(session_id)[:80])
        raise InvalidSessionId(f"非法会话 ID {shown}：只允许 1–{MAX_ID_LENGTH} 个字母、数字、- 或 _")
    if session_id.upper() in _WINDOWS_RESERVED:
        raise InvalidSessionId(f"非法会话 ID {session_id!r}：这是 Windows 保留的设备名")
    return session_id


def is_session_name(fname: str) -> bool:
    """目录里哪些名字是会话文件：'<id>.json'，不以点开头（.lock、.x.json.tmp 是仓库自己的）。"""
    return fname.endswith(".json") and not fname.startswith(".")


# ── ✉️ 消息检查：存进去的必须能原样读回来 ───────────────────────────────────────────────────
_NO_CONTENT = object()
_ROLE, _CONTENT = operator.itemgetter("role"), operator.itemgetter("content")


def _all_plainly_valid(messages: List[Any]) -> bool:
    """整批消息的快速检查，循环都在 C 里（10,000 条约 1 ms）：全是 dict，role 是非空字符串，content 是字符串、
    None 或字典列表。说“否”不代表有错——子类、缺键等交给 validate_messages 逐条检查并说清是哪一条。"""
    try:
        if set(map(type, messages)) - {dict}:
            return False
        roles, contents = set(map(_ROLE, messages)), list(map(_CONTENT, messages))
    except (KeyError, TypeError):   # 缺 role / content，或 role 不能放进集合
        return False
    kinds = set(map(type, contents))
    return (set(map(type, roles)) <= {str} and all(map(str.strip, roles))   # strip() 为空 = 空串或全是空白
            and kinds <= {str, type(None), list}
            and (list not in kinds or all(all(map(isinstance, content, itertools.repeat(dict)))
                                          for content in contents if type(content) is list)))


def validate_messages(messages: Any, where: str = "", known: Any = None, start: int = 0) -> None:
    """messages 必须是 [{"role": 非空字符串, "content": 字符串 | 内容块列表 | None}, ...]。

    known：一批保存共用的 {id(消息): (消息, 一行字节)}（见 encode_message_lines）；里面的对象已经检查过，跳过。
    start：前 start 条已经检查过（继承自这一批里的父节点）。"""
    if not isinstance(messages, list):
        raise InvalidMessage(f"{where}messages 必须是列表，收到 {type(messages).__name__}")
    if _all_plainly_valid(messages[start:] if start else messages):
        return
    for i, msg in enumerate(itertools.islice(messages, start, None), start):
        if known is not None:
            seen = known.get(id(msg))
            if seen is not None and seen[0] is msg:
                continue
        if type(msg) is dict:   # 最常见的形状先用最快的判断放行；其余的走下面逐项检查（同样接受子类）
            role, content = msg.get("role"), msg.get("content", _NO_CONTENT)
            if type(role) is str and role and not role.isspace() and (
                    content is None or type(content) is str
                    or (type(content) is list and all(map(isinstance, content, itertools.repeat(dict))))):
                continue
        if not isinstance(msg, dict):
            raise InvalidMessage(f"{where}第 {i + 1} 条消息必须是字典，收到 {type(msg).__name__}")
        role = msg.get("role")
        if not isinstance(role, str) or not role or role.isspace():
            raise InvalidMessage(f"{where}第 {i + 1} 条消息缺少非空字符串 role")
        if "content" not in msg:
            raise InvalidMessage(f"{where}第 {i + 1} 条消息缺少 content 键")
        content = msg["content"]
        if not (content is None or isinstance(content, str) or
                (isinstance(content, list) and all(isinstance(b, dict) for b in content))):
            raise InvalidMessage(f"{where}第 {i + 1} 条消息的 content 必须是字符串、内容块（字典）列表或 null")


_TOO_DEEP_LINE = b"\n" + b" " * (2 * (MAX_NESTING + 3))


def check_nesting(raw: bytes, messages: List[Dict[str, Any]], where: str = "") -> None:
    """保存的 JSON 里嵌套超过 MAX_NESTING 层就拒绝：这样的文件今天存得下，明天在更深的调用栈里就读不回来。

    文件用 indent=2 写，字符串里的换行都被转义成 \\n，所以一行的缩进就是它的嵌套层数：消息的键缩进 6 格，
    算第 1 层（{"role": "user", "content": "hi"}）；内容块的键算第 3 层。在字节里找一行缩进超过上限的，
    10 MB 约 1 毫秒；找到了才逐条消息确认是哪一条。"""
    if _TOO_DEEP_LINE not in raw:
        return
    alone = _TOO_DEEP_LINE.decode()[:-4]   # 单独编码一条消息时，它的键缩进 2 格而不是 6 格
    number = next((i for i, message in enumerate(messages, 1) if alone in _dumps_alone(message)), 0)
    what = f"第 {number} 条消息" if number else "工作区快照或 source"
    raise InvalidMessage(f"{where}{what}嵌套超过 {MAX_NESTING} 层，存下来会读不回来")


def _dumps_alone(message: Dict[str, Any]) -> str:
    try:
        return json.dumps(message, indent=2)
    except RecursionError:
        return "\n" + " " * (2 * (MAX_NESTING + 1))   # 深到编码器都放弃了：当然超过上限


# ── 🔢 版本迁移：旧格式的字典 → 新格式的字典，一步一个函数 ──────────────────────────────────────
def _v1_to_v2(data: Dict[str, Any]) -> Dict[str, Any]:
    """章节原版文件没有 version / revision / fork_point：补上默认值。"""
    return {**data, "version": 2, "revision": data.get("revision", 0),
            "fork_point": data.get("fork_point"), "created_ns": data.get("created_ns", 0)}


def _v2_to_v3(data: Dict[str, Any]) -> Dict[str, Any]:
    """version 3 记录节点从哪里导入（source）；以前的节点都是手写的。"""
    return {**data, "version": 3, "source": data.get("source")}


def _v3_to_v4(data: Dict[str, Any]) -> Dict[str, Any]:
    """version 4 只换了大会话在磁盘上的样子（块），字段一个没变：升级只改版本号。"""
    return {**data, "version": 4}


def _v4_to_v5(data: Dict[str, Any]) -> Dict[str, Any]:
    """version 5 记录收敛节点收敛了哪些分支（converged_from）；以前的节点都不是收敛节点。"""
    return {**data, "version": 5, "converged_from": data.get("converged_from") or []}


MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4, 4: _v4_to_v5}   # 从版本 N 升到 N+1；加字段时在这里加一行


def migrate(data: Dict[str, Any], source: str = "") -> Dict[str, Any]:
    """把任意旧版本的字典升级到 FORMAT_VERSION；更新的版本抛 UnsupportedVersion。"""
    version = checked_version(data, source)
    while version < FORMAT_VERSION:
        data = MIGRATIONS[version](data)
        version += 1
    return data


def checked_version(data: Dict[str, Any], source: str = "") -> int:
    """字典写着的版本（没写 = 1，章节原版）；无效的抛 CorruptSession，比本程序新的抛 UnsupportedVersion。"""
    version = data.get("version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CorruptSession(f"{source}：version 字段无效 {printable(repr(version)[:40])}")
    if version > FORMAT_VERSION:
        raise UnsupportedVersion(f"{source} 是 version {version} 的文件，本程序只认识到 version "
                                 f"{FORMAT_VERSION}；请升级程序，文件保持原样")
    return version


def check_fields(data: Any, path: str, message_count: Any = None, every_message: bool = True) -> None:
    """文件能解析成 JSON 还不够：字段类型也得对，否则按损坏处理。

    message_count：只读了 version 4 文件的头（没有 messages）时，fork_point 按头里的消息条数检查。
    every_message=False：只要 messages 是列表，不逐条检查（列表用，见 decode_listing）。"""
    if not isinstance(data, dict):
        raise CorruptSession(f"{path}：顶层不是 JSON 对象")
    try:
        validate_session_id(data.get("session_id"))
        if data.get("parent_id") is not None:
            validate_session_id(data["parent_id"])
        messages = data.get("messages", [])
        if every_message or type(messages) is not list:
            validate_messages(messages)
    except SessionError as exc:
        raise CorruptSession(f"{path}：{exc}") from None
    get = data.get
    fork_point, workspace, source = get("fork_point"), get("workspace"), get("source")
    count = len(get("messages", [])) if message_count is None else message_count
    if (isinstance(get("title", ""), str) and isinstance(get("created_at") or "", str)   # 全对（几乎总是）：
            and type(get("revision", 0)) is int and type(get("created_ns", 0)) is int   # 不必拼出下面的清单
            and (workspace is None or isinstance(workspace, dict)) and (source is None or isinstance(source, dict))
            and (fork_point is None or (type(fork_point) is int and 0 <= fork_point <= count))
            and _is_id_list(get("converged_from")) and _is_label_list(get("labels"))):
        return
    checks = {"title": isinstance(data.get("title", ""), str),
              "created_at": isinstance(data.get("created_at") or "", str),
              "revision": type(data.get("revision", 0)) is int,
              "created_ns": type(data.get("created_ns", 0)) is int,
              "workspace": data.get("workspace") is None or isinstance(data["workspace"], dict),
              "source": data.get("source") is None or isinstance(data["source"], dict),
              "fork_point": fork_point is None or (type(fork_point) is int and 0 <= fork_point <= count),
              "converged_from": _is_id_list(data.get("converged_from")),
              "labels": _is_label_list(data.get("labels"))}
    bad = [name for name, ok in checks.items() if not ok]
    if bad:
        raise CorruptSession(f"{path}：字段类型或取值不对：{', '.join(bad)}")


def _is_id_list(value: Any) -> bool:
    """converged_from：None，或不超过 MAX_CONVERGED 个互不相同的合法会话 ID。"""
    if value is None:
        return True
    if not isinstance(value, list) or len(value) > MAX_CONVERGED or len(set(map(str, value))) != len(value):
        return False
    try:
        for item in value:
            validate_session_id(item)
    except SessionError:
        return False
    return True


def _is_label_list(value: Any) -> bool:
    """大会话头里的 labels：None，或 [[第几条（1 起）, 标签文字], …]。"""
    return value is None or (isinstance(value, list) and all(
        isinstance(item, list) and len(item) == 2 and type(item[0]) is int and item[0] >= 1
        and isinstance(item[1], str) for item in value))


# ── 📦 编码与解码：字节 ⇄ 字典 ────────────────────────────────────────────────────────────────
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_session(payload: Dict[str, Any], session_id: str) -> bytes:
    """字典 → UTF-8 字节，并确认它能原样读回来：

    * 孤立代理项（半个 emoji，真实记录里见过）写成 \\udXXX 转义：{"t": "cut \\ud83d"} 读回来仍是 "cut \\ud83d"；
    * 嵌套太深（check_nesting）或含有 JSON 存不了的值时抛 InvalidMessage，写明会话和第几条消息。"""
    where = f"会话 {session_id} 的"
    raw = _orjson_indented(payload)
    if raw is not None:
        check_nesting(raw, payload.get("messages", []), where)
        return raw
    try:
        text = json.dumps(payload, ensure_ascii=False, indent=2)
    except RecursionError:
        raw = _TOO_DEEP_LINE     # 编码器都递归不下去了：交给 check_nesting 说明是哪条
    except (TypeError, ValueError):
        number = _first_unencodable(payload.get("messages", []))
        what = f"第 {number} 条消息" if number else "标题、工作区快照或 source"
        raise InvalidMessage(f"{where}{what}含有无法存成 JSON 的值") from None
    else:
        try:
            raw = text.encode("utf-8")
        except UnicodeEncodeError:   # JSON 的结构字符都是 ASCII，代理项只可能在字符串里：原地换成转义
            raw = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")
    check_nesting(raw, payload.get("messages", []), where)
    return raw


_ORJSON_SCALARS = frozenset({str, int, bool, type(None)})
_STR_ONLY, _DICT_ONLY, _LIST_ONLY = frozenset({str}), {dict}, {list}
_CONTAINERS = frozenset({dict, list})
_PLAIN_TYPES = _ORJSON_SCALARS | _CONTAINERS
_ORJSON_VISITS = 1_000_000   # 看了这么多个容器还没看完（比如有环）就交给 json：它写出同样的字节，或报告循环引用


def _orjson_indented(payload: Dict[str, Any]) -> bytes | None:
    """orjson 写出的 indent=2 字节——只在它与 json.dumps(ensure_ascii=False, indent=2) 逐字节相同时，否则 None。

    两者只在这些地方不同，都退回标准库：浮点数的写法（1e-07 / 1e-7），orjson 自己会写而 json 拒绝的类型
    （datetime、UUID、枚举、数据类……）和子类——所以先确认里面只有 dict（键是 str）、list、str、int、bool、None
    这几种类型本身（_plain_document）；超过 64 位的整数、孤立代理项、太深的嵌套由 orjson 报错。"""
    if _orjson is None or not _plain_document(payload):
        return None
    try:
        return _orjson.dumps(payload, option=_orjson.OPT_INDENT_2)
    except (TypeError, ValueError, RecursionError):   # orjson.JSONEncodeError 是 TypeError
        return None


def _plain_document(root: Any) -> bool:
    """与 _plain_tree 同样的判断，一次看一个容器：一份会话文档（小会话的 indent=2 文件）只有几层、十几个值，
    这样比逐层收齐的 _plain_tree 少一半开销（章节演示的每次保存都走这里）；一长串消息交给 _plain_tree。

    root 里是否只有 dict（键都是 str）、list、str、int、bool、None 这几种类型本身（不含子类）。

    {"a": [1, {"b": None}]} -> True；{"a": 1.5}、{1: "x"}、{"a": (1,)} -> False。
    每个容器的键和值的类型在 C 里一次收齐（map + issuperset）；一串字典（消息列表）的键和值合在一起查，
    不必逐条消息各走一遍 Python 循环。"""
    stack = [root]
    scalars, pop, push, chain = _ORJSON_SCALARS, stack.pop, stack.append, itertools.chain.from_iterable
    for _ in range(_ORJSON_VISITS):
        if not stack:
            return True
        value = pop()
        kind = type(value)
        if kind is dict:
            if not _STR_ONLY.issuperset(map(type, value)):
                return False
            values = value.values()
        elif kind is list:
            values = value
            if len(value) > 1 and set(map(type, value)) == _DICT_ONLY:   # 消息列表：所有键、所有值一起查
                if not _STR_ONLY.issuperset(map(type, chain(value))):
                    return False
                values = list(chain(map(dict.values, value)))
        else:
            return False
        if not scalars.issuperset(map(type, values)):
            for item in values:
                if type(item) not in scalars:
                    push(item)
    return False


def _plain_tree(root: Any, max_depth: int = MAX_NESTING + 2) -> bool:
    """root 里是否只有 dict（键都是 str）、list、str、int、bool、None 这几种类型本身（不含子类），
    且容器最多 max_depth 层（root 算第 1 层；更深的说“否”，交给 json 判断）。

    {"a": [1, {"b": None}]} -> True；{"a": 1.5}、{1: "x"}、{"a": (1,)} -> False。
    一层一层地看：同一层的所有容器的键、值的类型在 C 里一次收齐（map + issuperset），下一层的容器也在 C 里挑出来
    （compress），所以一串消息不论多少条，Python 的循环只走嵌套的层数那么多次。"""
    level, visited, depth = [root], 0, 0
    containers, plain, chain = _CONTAINERS, _PLAIN_TYPES, itertools.chain.from_iterable
    while level:
        visited, depth = visited + len(level), depth + 1
        if visited > _ORJSON_VISITS or depth > max_depth:   # 有环、太深或大得出奇：交给 json，
            return False                                          # 它写出同样的字节，或报告准确的错误
        kinds = set(map(type, level))
        if kinds == _DICT_ONLY:
            dicts, lists = level, []
        elif kinds == _LIST_ONLY:
            dicts, lists = [], level
        elif kinds == containers:
            dicts, lists = list(filter(dict.__instancecheck__, level)), list(filter(list.__instancecheck__, level))
        else:   # 这一层有子类、元组、浮点数……（根本身是标量也算）
            return False
        if dicts and not _STR_ONLY.issuperset(map(type, chain(dicts))):
            return False
        values = list(itertools.chain(chain(map(dict.values, dicts)), chain(lists)))
        types = list(map(type, values))
        if not plain.issuperset(types):
            return False
        level = list(itertools.compress(values, map(containers.__contains__, types)))
    return True


def _first_unencodable(messages: List[Any]) -> int:
    for number, message in enumerate(messages, 1):
        try:
            json.dumps(message)
        except (TypeError, ValueError, RecursionError):
            return number
    return 0


_FAST_BRACKETS = 2 * MAX_NESTING   # 括号不到这么多的文档不可能比 json 的递归上限（约 1,000 层）还深


# orjson 读得对的整数：正的到 2**64 - 1（20 位），负的到 -2**63（19 位）。created_ns 是 19 位的正数，处处都有。
# 一次 translate 得到文档的“骨架”：数字 → 0，负号留着，[ 和 { → [，其余 → 空格；括号和长数字都在骨架里数
_SKELETON = bytes(ord("0") if byte in b"0123456789" else ord("-") if byte == ord("-")
                  else ord("[") if byte in b"[{" else ord(" ") for byte in range(256))
_LONG_RUN, _LONG_NEGATIVE = b"0" * 20, b"-" + b"0" * 19


def parse_json(raw: bytes, path: str, what: str = "会话文件") -> Any:
    """UTF-8 字节 → JSON 值；读不懂一律 CorruptSession，写明文件和位置（文件不动）。"""
    if _orjson is not None and (skeleton := raw.translate(_SKELETON)).count(b"[") < _FAST_BRACKETS \
            and _LONG_RUN not in skeleton and _LONG_NEGATIVE not in skeleton:
        # 只用在括号少的文档上（列表要读的小会话文件、大会话的头和索引）：orjson 读得下 json 读不下的深嵌套
        # （json 会 RecursionError，这里按损坏报告），括号少就不可能那么深。orjson 把超过 64 位的整数读成浮点数：
        # 有 20 位以上连着的数字、或负号后面 19 位数字（哪怕在字符串里）也交给 json；它拒绝的（NaN、1e400、孤立代理项、坏字节……）
        # 同样交给 json，由 json 判断并报告位置
        try:
            return _orjson.loads(raw)
        except (ValueError, RecursionError):   # orjson.JSONDecodeError 是 ValueError
            pass
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorruptSession(f"{what}已损坏：{path}：第 {exc.start + 1} 个字节起不是 UTF-8 文本") from None
    except json.JSONDecodeError as exc:
        raise CorruptSession(f"{what}已损坏（可能写入被中断）：{path}：第 {exc.lineno} 行第 {exc.colno} 列"
                             f"无法按 JSON 解析") from None
    except RecursionError:
        raise CorruptSession(f"{what}已损坏：{path}：嵌套层数太深，无法解析") from None
    except ValueError:   # 比如上万位的整数
        raise CorruptSession(f"{what}已损坏：{path}：含有无法解析的数值") from None


_GUARD_BYTES = 64 * 1024   # parse_json_lines 只在这么多字节里找内容块的迹象（只省时间，不影响读出的值）
_FLAT_SCALARS = {str, int, bool, type(None)}   # orjson 与 json 读出完全相同的值的那些类型


def parse_json_lines(lines: bytes, count: int, path: str) -> List[Any]:
    """每行一个 JSON 对象、每行以换行结尾的字节（version 4 的块和尾部）→ 列表；值与
    parse_json(b"[" + 用逗号连起来的各行 + b"]") 完全相同，条数由调用方核对。

    消息都只含标量（章节自己的消息就是这样）时交给 orjson：读出来的是 count 个字典，每个值都是字符串、整数、布尔
    或 null——所以只有两层，json 一定读得下；没有浮点数，所以也没有被 orjson 读成浮点数的超过 64 位的整数（json 读成
    整数）。字符串 orjson 与 json 读得一样（孤立代理项 orjson 拒绝）。其余情形（内容块、嵌套、浮点数、orjson 拒绝的）
    原样走 parse_json。对不对只由读出来的值决定；先看一眼有没有 '":[' 和 '":{'（紧凑 JSON 里键后面跟着列表或对象
    就是这样写的）只为省下注定白读的一遍：带内容块的消息不必先给 orjson 读一遍。只看开头 _GUARD_BYTES 字节：
    整段找一遍要 ~1 ms / MB（每个键后面都是 '":'，子串查找跳不快），而带内容块的会话开头几条就有。字符串里的 "["
    （日志行 "[000001] GET …"）不再让整段走 json。"""
    # 一次 replace、一次 join（memoryview 去掉末尾的逗号不复制）：10 MB 少复制两遍
    doc = b"".join((b"[", memoryview(lines.replace(b"\n", b","))[:-1], b"]")) if lines else b"[]"
    if _orjson is not None and lines and lines.find(b'":[', 0, _GUARD_BYTES) < 0 \
            and lines.find(b'":{', 0, _GUARD_BYTES) < 0:
        try:
            values = _orjson.loads(doc)
        except (ValueError, RecursionError):   # orjson.JSONDecodeError 是 ValueError
            values = None
        if type(values) is list and len(values) == count and set(map(type, values)) <= {dict} \
                and set(map(type, itertools.chain.from_iterable(map(dict.values, values)))) <= _FLAT_SCALARS:
            return values
    return parse_json(doc, path)


def decode_session(raw: bytes, path: str, *, checked: bool = False) -> Dict[str, Any]:
    """一个 JSON 文档的会话文件（version 1–3）→ 升级到当前版本、字段检查过的字典；读不懂一律 CorruptSession。
    没有 "messages" 键的文件（手写的）读成空的消息列表。
    checked=True：调用方知道这几个字节它自己刚写下或完整检查过（指纹相同，见 SessionStore._load）：同样的字节
    解析、升级出同样的值，所以只解析、升级，不再逐个字段、逐条消息检查一遍。"""
    if checked:
        data = migrate(parse_json(raw, path), path)
        data.setdefault("messages", [])
        return data
    return _upgraded_and_checked(parse_json(raw, path), path, every_message=True)


def _upgraded_and_checked(data: Any, path: str, every_message: bool) -> Dict[str, Any]:
    if isinstance(data, dict):
        data = migrate(data, path)
    check_fields(data, path, every_message=every_message)
    data.setdefault("messages", [])
    return data


_HEADER_INTS = ("version", "revision", "created_ns", "fork_point")   # 列表用到的整数字段


def decode_listing(raw: bytes, path: str) -> Dict[str, Any]:
    """list_sessions() 读一个 JSON 文档的会话文件（version 1–3）：只为摘要解析。

    与 decode_session 只差一处：消息不逐条检查（只要 messages 是列表）。消息坏了（缺 role、嵌套太深……）的文件
    照样列出，load() 打开它时抛 CorruptSession、check() 报 corrupt——与 version 4 的大会话一样（列表只读它的
    第一行）；摘要用不到的键同样不看（json 读不下的深嵌套也照样列出）。摘要用到的每个字段照旧升级、检查类型
    与取值（更新的版本抛 UnsupportedVersion）。
    有 orjson 就用它（任何深度都读得下，不会爆栈；摘要只取头里的字段，不递归）：超过 64 位的整数它读成浮点数——
    这几个整数字段有浮点数时交给 parse_json 重读（消息里的数字不进摘要）；它拒绝的（坏字节、NaN、孤立代理项……）
    同样交给 parse_json 报告。"""
    data = None
    if _orjson is not None:
        try:
            data = _orjson.loads(raw)
        except (ValueError, RecursionError):   # orjson.JSONDecodeError 是 ValueError
            data = None
        if type(data) is dict and float in set(map(type, map(data.get, _HEADER_INTS))):
            data = None
    return _upgraded_and_checked(parse_json(raw, path) if data is None else data, path, every_message=False)


def newer_head(head: Any, path: str) -> None:
    """多行文件第一行的 JSON 对象写着比 FORMAT_VERSION 新的版本：UnsupportedVersion，文件保持原样。"""
    version = head.get("version") if isinstance(head, dict) else None
    if type(version) is int and version > FORMAT_VERSION:
        migrate(head, path)   # 抛 UnsupportedVersion（同一句话）


# ── 📦 一行一条：version 4 的紧凑 JSON 行（C 编码器；读回来同样原样）────────────────────────────
try:
    from json.encoder import c_make_encoder as _c_make_encoder
except ImportError:  # pragma: no cover - 没有 C 加速的 Python
    _c_make_encoder = None


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} 不能存成 JSON")


def _line_encoder() -> Callable[[Any], str]:
    """紧凑 JSON（separators=(",", ":")，ensure_ascii=False）的编码函数，与 json.dumps 逐字相同。

    直接用 C 编码器对象：每条消息单独编码也没有 json.dumps 每次新建编码器的开销（5,000 条：24 → 6 ms）。
    每次调用新建一个：出错后它记录循环引用的表可能不干净，也不跨线程共用。"""
    if _c_make_encoder is None:  # pragma: no cover
        return lambda value: json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    encoder = _c_make_encoder({}, _refuse, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    return lambda value: "".join(encoder(value, 0))


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _too_deep(text: str, limit: int) -> bool:
    """紧凑 JSON 里有没有元素嵌套在 limit 层以上（最外层的对象算第 1 层，空容器里没有元素）。

    和 check_nesting 对 indent=2 文件的判断相同。括号总数不超过 limit 就不可能更深（几乎所有消息到此为止）；
    否则去掉字符串、把标量和分隔符压成 0，只数括号：'{"a":[1,[]]}' -> '{0[0[]]}' -> 2 层。"""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = deepest = 0
    for char in _NOT_BRACKET.sub("0", _STRING.sub("0", text)):
        if char in "[{":
            deepest, depth = max(deepest, depth), depth + 1
        elif char in "]}":
            depth -= 1
        else:
            deepest = max(deepest, depth)
    return deepest > limit


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:   # 孤立代理项只可能在字符串里：原地换成 \\udXXX 转义
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def encode_line(value: Any, where: str, what: str) -> bytes:
    """一个字典 → 一行紧凑 JSON 字节（不含换行），读回来原样；version 4 的头和索引行用它。"""
    try:
        text = _line_encoder()(value)
    except RecursionError:
        raise InvalidMessage(f"{where}{what}嵌套超过 {MAX_NESTING} 层，存下来会读不回来") from None
    except (TypeError, ValueError):
        raise InvalidMessage(f"{where}{what}含有无法存成 JSON 的值") from None
    if _too_deep(text, MAX_NESTING + 2):   # 和整份 indent=2 文件一样：文件的字典算第 1 层
        raise InvalidMessage(f"{where}{what}嵌套超过 {MAX_NESTING} 层，存下来会读不回来")
    return _utf8(text)


def encode_message_lines(messages: List[Any], where: str = "", memo: Any = None, first: int = 1) -> List[bytes]:
    """检查过的消息列表（validate_messages）→ 每条一行紧凑 JSON 字节（不含换行）。

    [{"role": "user", "content": "hi"}] -> [b'{"role":"user","content":"hi"}']
    memo 是一批保存共用的字典 {id(消息): (消息, 字节)}：同一个对象在一批里只编码一次（导入一棵共享前缀的
    树时很要紧）。只在一次调用之内可信——调用之间调用方可能原地改了消息——所以单个 save() 从不传它。
    first：messages[0] 在会话里是第几条（报错用）。
    装了 orjson 时，只含 dict / list / str / int / bool / None 本身的那几段消息（_plain_tree，每段 _ORJSON_RUN 条）
    交给它编码：这些类型它与 json 写出完全相同的字节（浮点数、子类、json 拒绝的类型都走 json）。
    这样的一段里容器最多 MAX_NESTING + 1 层（这一段的列表算第 1 层，消息第 2 层），所以没有一条消息会嵌套过深，
    不必逐行再数括号；整段一次 map 给 orjson，它拒绝了（超过 64 位的整数、孤立代理项）才逐条来。"""
    lines: List[bytes] = []
    if memo is not None:
        for message in messages:
            known = memo.get(id(message))
            lines.append(known[1] if known is not None and known[0] is message else None)
    else:
        lines = [None] * len(messages)
    todo = [index for index, line in enumerate(lines) if line is None]
    encode = _line_encoder()
    for run in range(0, len(todo), _ORJSON_RUN):
        indexes = todo[run:run + _ORJSON_RUN]
        batch = [messages[index] for index in indexes]
        fast = _orjson is not None and _plain_tree(batch, MAX_NESTING + 1)
        found = _orjson_run(batch) if fast else None
        if found is None:
            found = [(_orjson_line(message) if fast else None) or _json_line(encode, message, where, index + first)
                     for index, message in zip(indexes, batch)]
        if memo is not None:
            memo.update(zip(map(id, batch), zip(batch, found)))
        if indexes[-1] - indexes[0] == len(indexes) - 1:   # 连着的一段（没有 memo 时总是）：一次切片赋值
            lines[indexes[0]:indexes[-1] + 1] = found
        else:
            for index, line in zip(indexes, found):
                lines[index] = line
    return lines


def _orjson_run(batch: List[Any]) -> Optional[List[bytes]]:
    """一段 _plain_tree 认可的消息 → 每条 orjson 的紧凑字节；有一条它拒绝就 None（交给逐条的 _orjson_line）。"""
    try:
        return list(map(_orjson.dumps, batch))
    except (TypeError, ValueError, RecursionError):   # orjson.JSONEncodeError 是 TypeError
        return None


_ORJSON_RUN = 256   # 一段里有一条含浮点数（或别的 orjson 写法不同的值），只有这一段走 json


def _orjson_line(message: Any) -> Optional[bytes]:
    """_plain_tree 认可的消息 → orjson 的紧凑字节；超过 64 位的整数、孤立代理项、太深的嵌套它报错：None，交给 json。"""
    try:
        return _orjson.dumps(message)
    except (TypeError, ValueError, RecursionError):   # orjson.JSONEncodeError 是 TypeError
        return None


def _json_line(encode: Callable[[Any], str], message: Any, where: str, number: int) -> bytes:
    try:
        text = encode(message)
    except (RecursionError, TypeError, ValueError):
        encode_line(message, where, f"第 {number} 条消息")   # 用新的编码器再试一次，抛出准确的说法
        raise   # pragma: no cover - encode_line 一定会抛
    if _too_deep(text, MAX_NESTING):   # 单独编码的消息：它自己算第 1 层
        raise InvalidMessage(f"{where}第 {number} 条消息嵌套超过 {MAX_NESTING} 层，存下来会读不回来")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _utf8(text)


FINGERPRINT_BYTES = 8 * 1024   # 不超过这么大的文件，指纹是 (长度, Python 的字节哈希)


def fingerprint(raw: bytes) -> Any:
    """认出“还是那几个字节”用的指纹。小文件是长度和 hash(字节) 拼成的一个整数：bytes 的哈希是 SipHash，密钥每个
    进程随机，两份同样长、内容不同的字节偶然同指纹的机会约 2⁻⁶⁴；比 sha256 快，每个文件只占几十字节的内存（存字节
    本身，一个班上万个会话就是几十 MB）。大文件是 ("sha256", 摘要)：整数与元组永远不相等，两种指纹不会被认错。"""
    if len(raw) <= FINGERPRINT_BYTES:
        return len(raw) << 64 | (hash(raw) & 0xFFFF_FFFF_FFFF_FFFF)
    return "sha256", hashlib.sha256(raw).digest()


class SessionFile(NamedTuple):
    """读一次会话文件得到的全部：升级后的内容、当时的 fstat、字节的指纹（fingerprint）。"""
    data: Dict[str, Any]
    info: os.stat_result
    fingerprint: Any


def read_session_file(path: str) -> SessionFile:
    """读一个会话文件（只读普通文件，见 s11_storage.read_regular_file）；不存在抛 FileNotFoundError。"""
    try:
        raw, info = read_regular_file(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise unreadable(path, exc) from None
    return SessionFile(decode_session(raw, path), info, fingerprint(raw))


def unreadable(path: str, exc: OSError) -> UnreadableSession:
    """打不开的条目 → UnreadableSession，说明它是什么（符号链接、FIFO……）或哪个系统错误。"""
    if isinstance(exc, NotRegularFile):
        return UnreadableSession(f"{path} 不是会话文件：它是{exc.kind}；仓库不打开、不覆盖它，请手动处理")
    return UnreadableSession(f"无法读取会话文件 {describe_os_error(exc)}")
