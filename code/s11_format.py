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

嵌套深度（不论装了哪个 JSON 库、哪个版本，结果都一样）：
  * 保存：一条消息内部嵌套超过 MAX_NESTING 层（消息本身算第 1 层）抛 InvalidMessage，写明会话和第几条消息；
    标题、工作区快照、source 同样受整个文件的上限约束。
  * 读：任何要解析的字节（整个文件、version 4 的头 / 索引行、块、尾部）先用 too_deep() 数一遍括号
    （跳过字符串里的，线性时间，不递归），嵌套超过 MAX_FILE_NESTING = MAX_NESTING + 2 层就抛 CorruptSession
    “嵌套超过 N 层”，根本不交给 json.loads——所以 5,000 层深的文件与解析器的递归上限无关：列表跳过它、
    check() 报 corrupt、load() 拒绝，文件原样保留，保存时核对修订号也读不懂它，所以从不覆盖它。

本模块只依赖标准库（json、re、itertools）和 s11_storage / s11_text（都在它之下）；紧凑编码 _compact 在文件末尾
一处换上 s11_fast.encode（S11_PLAIN=1 时不换；换不换，写下的字节和拒绝的理由都一样）。
"""

from __future__ import annotations

import itertools
import json
import operator
import os
import re
from typing import Any, Dict, List, Optional, Tuple

from s11_storage import NotRegularFile
from s11_text import describe_os_error, printable

__all__ = ["FORMAT_VERSION", "PLAIN_VERSION", "CHUNKED_VERSION", "CONVERGE_VERSION", "CHUNKED_VERSIONS",
           "MAX_CONVERGED", "MIGRATIONS", "migrate", "validate_session_id", "validate_messages", "too_deep",
           "encode_session", "decode_session", "decode_listing", "checked_version", "is_session_name",
           "encode_line", "encode_message_lines", "newer_head", "check_fields", "parse_json", "parse_json_lines",
           "MAX_ID_LENGTH", "MAX_NESTING", "MAX_FILE_NESTING", "ID_CHARS", "unreadable",
           "SessionError", "InvalidSessionId", "InvalidMessage", "CorruptSession", "UnreadableSession",
           "ChunkError", "UnsupportedVersion", "ConflictError", "SessionNotFound"]

FORMAT_VERSION = 5         # 本模块读得懂的最新版本
PLAIN_VERSION = 3          # 自带全部消息的单个 JSON（小会话写这个版本）
CHUNKED_VERSION = 4        # 头 + 索引 + 尾部消息，历史在共享的块里（s11_chunks）
CONVERGE_VERSION = 5       # 收敛节点（有 converged_from）：布局同 3 或 4，多一个字段
CHUNKED_VERSIONS = (CHUNKED_VERSION, CONVERGE_VERSION)   # 第一行是头的多行文件可能写的版本
MAX_CONVERGED = 64         # 一个收敛节点最多收敛几个分支
MAX_LABEL_CHARS = 200      # 一个标签最多几个字（与 s11_converge 的 label() 相同）
MAX_ID_LENGTH = 64
MAX_NESTING = 100          # 一条消息内部最多嵌套几层列表 / 字典（消息本身算第 1 层）
MAX_FILE_NESTING = MAX_NESTING + 2   # 整个文件：文件的字典 → messages 列表 → 消息
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
def validate_messages(messages: Any, where: str = "", start: int = 0) -> None:
    """messages 必须是 [{"role": 非空字符串, "content": 字符串 | 内容块列表 | None}, ...]。

    start：前 start 条调用方已经确认过（保存时与磁盘上的块逐条相等的那些，见 s11_chunks.plan）。"""
    if not isinstance(messages, list):
        raise InvalidMessage(f"{where}messages 必须是列表，收到 {type(messages).__name__}")
    for number, message in enumerate(itertools.islice(messages, start, None), start + 1):
        if not isinstance(message, dict):
            raise InvalidMessage(f"{where}第 {number} 条消息必须是字典，收到 {type(message).__name__}")
        role = message.get("role")
        if not isinstance(role, str) or not role.strip():
            raise InvalidMessage(f"{where}第 {number} 条消息缺少非空字符串 role")
        if "content" not in message:
            raise InvalidMessage(f"{where}第 {number} 条消息缺少 content 键")
        content = message["content"]
        if not (content is None or isinstance(content, str) or
                (isinstance(content, list) and all(isinstance(block, dict) for block in content))):
            raise InvalidMessage(f"{where}第 {number} 条消息的 content 必须是字符串、内容块（字典）列表或 null")


# ── 🪆 嵌套深度：只数括号，不递归 ──────────────────────────────────────────────────────────────
_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'"[]{}')
_STRING = re.compile(rb'"[^"]*"')
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def too_deep(raw: bytes, limit: int) -> bool:
    """JSON 字节里的容器是否嵌套超过 limit 层（最外层算第 1 层）。一遍线性扫描，与任何解析器的递归上限无关。

    b'{"a":[1,[]]}' 有 3 层：too_deep(它, 2) -> True；字符串里的括号不算：b'["[[[["]' 只有 1 层。
    括号总数不超过 limit 就不可能更深（几乎所有消息到此为止）。否则先去掉转义的反斜杠和引号（\\\\、\\"：JSON 的
    字符串从左到右两个一组地读它们），只留引号和括号，再去掉 "…"（字符串里的括号），累加 +1 / -1。"""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    structure = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    brackets = _STRING.sub(b"", structure)
    return max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


def _deep_message(messages: List[Any]) -> int:
    """第几条消息（1 起）单独编码后嵌套超过 MAX_NESTING 层；没有返回 0。"""
    for number, message in enumerate(messages, 1):
        try:
            if too_deep(_compact(message), MAX_NESTING):
                return number
        except (RecursionError, TypeError, ValueError):
            return number
    return 0


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


def check_fields(data: Any, path: str, message_count: Any = None, every_message: bool = True,
                 start: int = 0) -> None:
    """文件能解析成 JSON 还不够：字段类型也得对，否则按损坏处理。save() 在写之前对要写的字典跑同一个检查。

    message_count：只读了 version 4 文件的头（没有 messages）时，fork_point 按头里的消息条数检查。
    every_message=False：只要 messages 是列表，不逐条检查（列表用，见 decode_listing）。
    start：前 start 条消息调用方已确认过（见 validate_messages）。"""
    if not isinstance(data, dict):
        raise CorruptSession(f"{path}：顶层不是 JSON 对象")
    try:
        validate_session_id(data.get("session_id"))
        if data.get("parent_id") is not None:
            validate_session_id(data["parent_id"])
        messages = data.get("messages", [])
        if every_message or not isinstance(messages, list):
            validate_messages(messages, start=start)
    except SessionError as exc:
        raise CorruptSession(f"{path}：{exc}") from None
    count = len(data.get("messages", [])) if message_count is None else message_count
    fork_point = data.get("fork_point")
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


def _utf8(text: str) -> bytes:
    """孤立代理项（半个 emoji，真实记录里见过）只可能在字符串里：换成 \\udXXX 转义，读回来仍是原来的字符。"""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


# 与 json.dumps(value, ensure_ascii=False, separators=(",", ":")) 相同；json.dumps 带参数时每次新建一个编码器
# （每条消息约 2.5 µs，20 MB 的导入一万多条消息）：这里建一次，编码器不存状态，多线程共用无妨
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _compact(value: Any) -> bytes:
    """紧凑 JSON：{"role": "user", "content": "hi"} -> b'{"role":"user","content":"hi"}'。"""
    return _utf8(_COMPACT.encode(value))


def encode_session(payload: Dict[str, Any], session_id: str) -> bytes:
    """字典 → indent=2 的 UTF-8 字节（一个 JSON 文档，书中代码也读得了），并确认它能原样读回来：
    嵌套太深或含有 JSON 存不了的值时抛 InvalidMessage，写明会话和第几条消息。"""
    where = f"会话 {session_id} 的"
    messages = payload.get("messages") or []
    try:
        raw = _utf8(json.dumps(payload, ensure_ascii=False, indent=2))
    except RecursionError:
        raw = b"[" * (MAX_FILE_NESTING + 1)   # 编码器都递归不下去了：当然太深，下面说明是哪条
    except (TypeError, ValueError):
        number = _first_unencodable(messages)
        what = f"第 {number} 条消息" if number else "标题、工作区快照或 source"
        raise InvalidMessage(f"{where}{what}含有无法存成 JSON 的值") from None
    if too_deep(raw, MAX_FILE_NESTING) or _deep_message(messages):
        number = _deep_message(messages)
        what = f"第 {number} 条消息" if number else "工作区快照或 source"
        raise InvalidMessage(f"{where}{what}嵌套超过 {MAX_NESTING} 层，存下来会读不回来")
    return raw


def _first_unencodable(messages: List[Any]) -> int:
    for number, message in enumerate(messages, 1):
        try:
            json.dumps(message)
        except (TypeError, ValueError, RecursionError):
            return number
    return 0


def encode_line(value: Any, where: str, what: str, limit: int = MAX_FILE_NESTING) -> bytes:
    """一个值 → 一行紧凑 JSON 字节（不含换行），读回来原样；version 4 的头、索引行（limit 同整个文件）
    和每条消息（limit = MAX_NESTING，消息本身算第 1 层）都用它。"""
    try:
        raw = _compact(value)
    except RecursionError:
        raw = b"[" * (limit + 1)
    except (TypeError, ValueError):
        raise InvalidMessage(f"{where}{what}含有无法存成 JSON 的值") from None
    if too_deep(raw, limit):
        raise InvalidMessage(f"{where}{what}嵌套超过 {MAX_NESTING} 层，存下来会读不回来")
    return raw


def encode_message_lines(messages: List[Any], where: str = "", memo: Any = None, first: int = 1) -> List[bytes]:
    """检查过的消息列表 → 每条一行紧凑 JSON 字节（不含换行）。

    [{"role": "user", "content": "hi"}] -> [b'{"role":"user","content":"hi"}']
    memo：一批保存（导入）共用的 {id(消息): (消息, 一行字节)}，同一个对象在这一批里只编码一次——导入一棵共享
    前缀的树时，CPU 随新内容而不是随每个节点的长度之和增长。只在一次调用之内可信，单个 save() 从不传它。
    first：messages[0] 在会话里是第几条（报错用）。"""
    lines = []
    for number, message in enumerate(messages, first):
        known = memo.get(id(message)) if memo is not None else None
        if known is not None and known[0] is message:
            lines.append(known[1])
            continue
        line = encode_line(message, where, f"第 {number} 条消息", MAX_NESTING)
        if memo is not None:
            memo[id(message)] = (message, line)
        lines.append(line)
    return lines


def payload_key(payload: Dict[str, Any]) -> Optional[Tuple[bytes, Tuple[Any, ...]]]:
    """一批保存（导入）里，要保存的字典的指纹：消息以外的字段编码成的字节（原地改了 source、1 换成 True 都看得出），
    加上消息对象本身（一批之内消息对象只读，见 s11_chunks.Batch；换、增、删一条都看得出）。编码不了时 None。"""
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return None
    try:
        return _compact({**payload, "messages": None}), tuple(messages)
    except (TypeError, ValueError, RecursionError):
        return None


def same_payload(key: Optional[Tuple[bytes, Tuple[Any, ...]]], payload: Dict[str, Any]) -> bool:
    """payload 还是 payload_key 记下 key 时的样子吗？消息逐个比 is（不比内容：上万条也只要零点几毫秒）。"""
    now = payload_key(payload)
    if key is None or now is None or key[0] != now[0] or len(key[1]) != len(now[1]):
        return False
    return all(map(operator.is_, key[1], now[1]))


def parse_json(raw: bytes, path: str, what: str = "会话文件") -> Any:
    """UTF-8 字节 → JSON 值；读不懂一律 CorruptSession，写明文件和位置（文件不动）。
    先数括号（too_deep）：嵌套超过 MAX_FILE_NESTING 层的根本不交给解析器。"""
    if too_deep(raw, MAX_FILE_NESTING):
        raise CorruptSession(f"{what}已损坏：{path}：嵌套超过 {MAX_FILE_NESTING} 层，不解析它（文件原样保留）")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise CorruptSession(f"{what}已损坏：{path}：第 {exc.start + 1} 个字节起不是 UTF-8 文本") from None
    except json.JSONDecodeError as exc:
        raise CorruptSession(f"{what}已损坏（可能写入被中断）：{path}：第 {exc.lineno} 行第 {exc.colno} 列"
                             f"无法按 JSON 解析") from None
    except RecursionError:   # 调用栈本来就很深时，上限以内的嵌套也可能用完它
        raise CorruptSession(f"{what}已损坏：{path}：嵌套层数太深，无法解析") from None
    except ValueError:   # 比如上万位的整数
        raise CorruptSession(f"{what}已损坏：{path}：含有无法解析的数值") from None


def parse_json_lines(lines: bytes, count: int, path: str) -> List[Any]:
    """每行一个 JSON 值、每行以换行结尾的字节（version 4 的块和尾部）→ 列表，一次 json.loads：
    b'{"a":1}\\n{"b":2}\\n' -> [{"a": 1}, {"b": 2}]。条数不对抛 CorruptSession。"""
    values = parse_json(b"[" + lines.replace(b"\n", b",")[:-1] + b"]", path) if lines else []
    if not isinstance(values, list) or len(values) != count:
        raise CorruptSession(f"会话文件已损坏：{path}：应有 {count} 条消息，读出的条数不符")
    return values


def decode_session(raw: bytes, path: str) -> Dict[str, Any]:
    """一个 JSON 文档的会话文件（version 1–3）→ 升级到当前版本、字段检查过的字典；读不懂一律 CorruptSession。
    没有 "messages" 键的文件（手写的）读成空的消息列表。"""
    return _upgraded_and_checked(parse_json(raw, path), path, every_message=True)


def decode_listing(raw: bytes, path: str) -> Dict[str, Any]:
    """list_sessions() 读一个 JSON 文档的会话文件（version 1–3）：与 decode_session 只差一处——消息不逐条检查
    （只要 messages 是列表）。消息坏了的文件照样列出，load() 打开它时抛 CorruptSession、check() 报 corrupt，
    与 version 4 的大会话一样（列表只读它的第一行）。"""
    return _upgraded_and_checked(parse_json(raw, path), path, every_message=False)


def _upgraded_and_checked(data: Any, path: str, every_message: bool) -> Dict[str, Any]:
    if isinstance(data, dict):
        data = migrate(data, path)
    check_fields(data, path, every_message=every_message)
    data.setdefault("messages", [])
    return data


def newer_head(head: Any, path: str) -> None:
    """多行文件第一行的 JSON 对象写着比 FORMAT_VERSION 新的版本：UnsupportedVersion，文件保持原样。"""
    version = head.get("version") if isinstance(head, dict) else None
    if type(version) is int and version > FORMAT_VERSION:
        migrate(head, path)   # 抛 UnsupportedVersion（同一句话）


def unreadable(path: str, exc: OSError) -> UnreadableSession:
    """打不开的条目 → UnreadableSession，说明它是什么（符号链接、FIFO……）或哪个系统错误。"""
    if isinstance(exc, NotRegularFile):
        return UnreadableSession(f"{path} 不是会话文件：它是{exc.kind}；仓库不打开、不覆盖它，请手动处理")
    return UnreadableSession(f"无法读取会话文件 {describe_os_error(exc)}")


# 加速（像 heapq 换上 _heapq）：s11_fast.encode 把只由 JSON 基本类型组成的值交给 orjson，字节与上面的 _compact
# 逐个相同，其余（浮点数、子类、拿不准的）仍由它编码（tests/fast 拿这里作 oracle）。S11_PLAIN=1 关掉它；
# 没有 s11_fast 或没装 orjson 时就用上面的。
if not os.environ.get("S11_PLAIN"):
    try:
        from s11_fast.encode import accelerate
    except ImportError:
        pass
    else:
        _compact = accelerate(_compact)
