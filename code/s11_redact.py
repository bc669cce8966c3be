"""s11_redact — 导出和备份前的脱敏：一张按顺序执行的规则表。

    text ──► RULES：每一行 Rule(name, label, pattern, validator, hints)
               hints      先便宜地圈出“可能在哪”：含 "bearer" 的行、以 sk- 开头的长单词、15 位以上的数字串…
               pattern    只在这些窗口里跑正则，找“长得像”的候选（有名为 secret 的组时只遮这一组）
               validator  否决“长得像但不是”的：校验位、Luhn、发卡行前缀、上下文（订单号、token=token）
         ──► 各行认领的区间，重叠时排在前面的行胜出 ──► [已脱敏:<label>] + {label: count}

关键洞察：正则只负责“长得像”，校验函数和上下文负责“真的是”，而速度来自先便宜地排除——绝大多数行
根本不含 "bearer"、"sk-" 或一长串数字，这些行上昂贵的正则一次也不必运行。

扩展：在 RULES 里插入一行 Rule（越具体越靠前）。hints 可以不写（整段文本都扫描，只是慢些）；
要写就写每个命中所在的行都必然包含的字符串（任意大小写都算；越具体越好："key" 这样的词几乎每行代码都有，
等于没写），或用 word_starting("前缀_") 表示“以固定前缀开头的长令牌”，或写一个返回窗口的函数（assignments）。再在 tests/store/test_redact.py 的 CASES 里给它一个真阳性和一个假阳性样例：
测试会检查每一行都有，并把整张表去掉 hints 再跑一遍，确认 hints 没有漏掉任何命中。

保证：
- 每一行看的都是同一份原文；两行认领的文字重叠时，排在前面的行胜出（"Bearer" 后面的 JWT 标成 JWT，
  API_KEY= 后面的密钥按它自己的形状标注）。
- hints 只影响速度，从不影响结果。
- redact() 是幂等的：标记本身从不被认领；如果一处遮盖让另一行能在它旁边匹配了（环视断言现在看到的是 "]"），
  就把整张表再执行一遍，直到什么都不再变化。
- 全角数字（１３８…、１１０１…Ｘ）和半角的一样认：先换成半角再匹配，位置不变。
- redact_value() 返回深拷贝，从不修改输入；字符串、字典的键和 JSON 里 10 位以上的数字都检查，
  名字是凭据的键（"password"、"api_key"）的值整个遮住。
- 线性时间：无论输入是什么，没有哪个正则会出现平方级的回溯。
- 速度：在 5 MB 接近真实的文本上，耗时是单趟正则扫描的 1.7–1.9 倍（一台 AMD 虚拟机）到 2.3–2.4 倍（一台 Intel
  虚拟机；benchmarks/bench_redact.py）。

不做：人名、街道地址和自由形式的秘密（"密码是 hunter2"）——它们要靠上下文，不是靠模式；拆在几条消息里的
秘密；中国大陆以外的电话和证件格式；全角的字母（ｓｋ－…）；没有卡号字样、没有分组、也没有发卡行前缀的
一串 15–19 位裸数字（在证明不是之前，它就是订单号）；YAML 以外、小写名字后面的一个裸单词
（`password = changeme` 读起来就像 `token=token` 这样的代码）；判断对某个具体客户来说什么算敏感。
"""

from __future__ import annotations

import bisect
import copy
import datetime
import functools
import itertools
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

MARKER = "[已脱敏:{label}]"
_MARKER_START = "[已脱敏:"


class Rule(NamedTuple):
    name: str                                           # 测试里用的标识符，例如 "cn_mobile"
    label: str                                          # 标记里的中文，例如 "手机号"
    pattern: re.Pattern[str]                            # 找候选；名为 "secret" 的组 = 要遮住的部分
    validator: Callable[[re.Match[str]], bool] | None = None   # 否决长得像的；None = 每个匹配都算
    hints: tuple[str | Callable[[_HintIndex], list[tuple[int, int]]], ...] = ()   # 去哪里找；() = 全文


# 数字类规则用“ASCII 字母数字”的环视断言，而不用 \b：Python 的 Unicode 正则里汉字也算 \w，
# 所以 "手机13812345678请回电" 里的数字两边都没有 \b。字母故意也算作相邻字符，
# 这样十六进制 id（UUID、git sha）里的一串数字永远不会被当成手机号或卡号。
# "3.14159265358" 和 "0.1234567890123456"：紧跟在 "<数字>." 后面的数字是浮点数的小数部分。
# 第一个数字写在后顾断言前面，re 就能跳过所有不是数字的字符。
_FIRST_DIGIT = r"[0-9](?<![0-9A-Za-z][0-9])(?<![0-9][.,][0-9])"
_NUMBER_END = r"(?![0-9A-Za-z])(?![.,][0-9])"
_WORD_START = r"(?<![A-Za-z0-9_-])"       # 令牌前缀必须在单词开头："sk-…" 算，"task-…" 永远不算


# ── 校验函数：候选是不是真的像 ─────────────────────────────────────────────────────────────

_ID_WEIGHTS = [2 ** (17 - position) % 11 for position in range(17)]   # 7, 9, 10, 5, 8, 4, 2, 1, 6, 3, …
_ID_CHECK_CHARS = "10X98765432"


def is_valid_cn_id(candidate: str) -> bool:
    """检查 18 位的中国身份证号：ISO 7064 MOD 11-2 校验位，以及一个说得通的出生日期。

    >>> is_valid_cn_id("11010519491231002X"), is_valid_cn_id("110105194912310021")
    (True, False)
    """
    body, check = candidate[:17], candidate[17:].upper()
    if len(candidate) != 18 or not body.isdigit():
        return False
    total = sum(int(digit) * weight for digit, weight in zip(body, _ID_WEIGHTS))
    return check == _ID_CHECK_CHARS[total % 11] and _plausible_birth_date(body[6:14])


def _plausible_birth_date(yyyymmdd: str) -> bool:
    # 随机的 18 位数字有 1/11 的机会通过校验位；再要求是日历上真实存在的日期，概率就更低了。
    try:
        born = datetime.date(int(yyyymmdd[:4]), int(yyyymmdd[4:6]), int(yyyymmdd[6:]))
    except ValueError:
        return False
    return datetime.date(1900, 1, 1) <= born <= datetime.date.today()


def is_luhn_valid(candidate: str) -> bool:
    """对 15–19 位的卡号做 Luhn 校验；分组之间的空格、点和短横线忽略不计。

    >>> is_luhn_valid("4111 1111 1111 1111"), is_luhn_valid("2024113012345678")
    (True, False)
    """
    digits = [int(char) for char in candidate if char.isdigit()]
    if not 15 <= len(digits) <= 19:
        return False
    # 从右往左，每隔一位乘 2；7 乘 2 得 14，按 1 + 4 = 14 - 9 计。
    total = sum(digit if index % 2 == 0 else (digit * 2 - 9 if digit > 4 else digit * 2)
                for index, digit in enumerate(reversed(digits)))
    return total % 10 == 0


def looks_random(token: str) -> bool:
    """是密钥或令牌，而不是单词：有一段 16 个字符以上的字母数字串，混有大写、小写、数字中的两种。

    >>> looks_random("proj-Xy7Qm2Lp9Rt4Vn8Kc3Hs6Jd1"), looks_random("spinner-double-bounce-v2")
    (True, False)
    """
    longest = max((run for run in re.split(r"[^A-Za-z0-9]", token)), key=len)
    kinds = any(c.isupper() for c in longest) + any(c.islower() for c in longest) + any(c.isdigit() for c in longest)
    return len(longest) >= 16 and kinds >= 2


def _secret(match: re.Match[str]) -> str:
    return match.group("secret") if "secret" in match.re.groupindex else match.group()


def _random_secret(match: re.Match[str]) -> bool:
    return looks_random(_secret(match))


def _mixed_secret(match: re.Match[str]) -> bool:
    # Bearer 令牌中间可能有点和短横线；正文（"Bearer authentication"）里只有一类字母。
    token = _secret(match)
    return any(c.isupper() for c in token) + any(c.islower() for c in token) + any(c.isdigit() for c in token) >= 2


def _id_number_ok(match: re.Match[str]) -> bool:
    compact = "".join(char for char in match.group() if char.isalnum())
    return is_valid_cn_id(compact)


# 一串 15–19 位的裸数字，要有证据才算卡号（issue 里定下的）：常见的分组写法、长度对得上的
# 已知发卡行前缀（本行），或者前面不远处有卡号字样（下一行）——而且一律要过 Luhn。
# 订单号和 snowflake id 也是一串裸数字。
_CARD_ISSUER = re.compile(r"""
      4[0-9]{15}                                         # Visa
    | (?:5[1-5][0-9]{2}|222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}   # Mastercard
    | 3[47][0-9]{13}                                     # American Express (15 digits)
    | 62[0-9]{14,17}                                     # UnionPay (16-19 digits)
    | (?:6011|64[4-9][0-9]|65[0-9]{2})[0-9]{12}          # Discover
    | 35(?:2[89]|[3-8][0-9])[0-9]{12}                    # JCB
""", re.VERBOSE)
# ……而数字被标明是别的东西时，发卡行前缀不算数。
_ID_WORD_BEFORE = re.compile(
    r"(?:订单|单号|编号|流水|(?<![A-Za-z])(?:orders?|ids?|no)|Ids?|IDs?|ORDER|#)[^\n0-9A-Za-z]{0,4}$")


def _card_ok(match: re.Match[str]) -> bool:
    number = match.group()
    if number.isdigit():                                  # 裸数字：必须有已知的发卡行前缀
        if not _CARD_ISSUER.fullmatch(number):
            return False
        if _ID_WORD_BEFORE.search(match.string, max(0, match.start() - 12), match.start()):
            return False
    return is_luhn_valid(number)                          # Luhn 放最后：它是最慢的检查


def _luhn_ok(match: re.Match[str]) -> bool:
    return is_luhn_valid(_secret(match))


# name=value 是凭据的条件：名字里含敏感词（在哪个位置都算：DB_PASSWORD、JWT_SECRET、clientSecret），
# 而且不是关于凭据的元数据（token_type、TOKEN_URL、password_file）。
_SENSITIVE_WORD = re.compile(
    r"password|passwd|passphrase|secret|token|api[_-]?key"
    r"|(?:access|private|signing|encryption|master|account|auth|client)[_-]?key", re.IGNORECASE)
_METADATA_SUFFIXES = ("tokens", "secrets", "passwords", "keys", "type", "count", "id", "name", "url", "uri", "path",
                      "file", "dir", "length", "len", "ttl", "timeout", "header", "prefix", "limit", "expires_in",
                      "expiresin", "expiry")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# ……而且值是数据，不是引用、占位符或代码。
_LITERALS = frozenset("true false null none nil undefined str int bool bytes string optional any".split())
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")   # self.password
_CODE_WORD = re.compile(r"[a-z_][A-Za-z_]*")        # token=token, api_key=api_key, password=pwd
_YAML_LINE = re.compile(r"[ \t]*(?:- )?$")          # 名字前面只有缩进（或列表的短横线）


def _is_reference(value: str) -> bool:
    """${VAR}、$VAR、%(pw)s、<your-key>、****、None、4096、self.password：是名字或占位符，不是数据。

    >>> [_is_reference(v) for v in ("${API_KEY}", "<your-key>", "None", "4096", "self.password", "hunter2")]
    [True, True, True, True, True, False]
    """
    return ((value[0] == "$" and not value[1:2].isdigit()) or value.startswith("%(") or value == "%s"
            or (value[0] == "<" and value[-1] == ">") or not value.strip("*")
            or value.lower() in _LITERALS or (value.isdigit() and len(value) <= 5)
            or ("." in value and _DOTTED_NAME.fullmatch(value) is not None)
            or value.startswith(_MARKER_START))


def _not_a_reference(match: re.Match[str]) -> bool:
    return not _is_reference(_secret(match))


def _credential_ok(match: re.Match[str]) -> bool:
    value, text = match.group("secret"), match.string
    if _is_reference(value):
        return False
    name_start = match.start()                   # 匹配从敏感词开始：往回找到名字的开头
    while name_start > max(0, match.start() - 64) and text[name_start - 1] in _NAME_CHARS:
        name_start -= 1
    name = text[name_start:match.end("word")]
    if not _SENSITIVE_WORD.search(name) or name.lower().endswith(_METADATA_SUFFIXES):
        return False
    if match.group("quote"):
        return True
    if text[match.end():match.end() + 1] in ("(", "["):             # getpass(), os.environ["X"]
        return False
    # 全大写的名字是 .env 里的一行，那里每个值都是数据。小写名字后面的一个裸单词是代码（token=token）——
    # 除非这一行是 YAML："password: changeme" 独占一行。
    if name.isupper() or not _CODE_WORD.fullmatch(value):
        return True
    line_end = text.find("\n", match.end())
    return bool(_YAML_LINE.match(text, text.rfind("\n", 0, name_start) + 1, name_start)) and \
        not text[match.end():len(text) if line_end == -1 else line_end].strip()


# logo@2x.png 这样的文件名看起来像邮箱地址。
_FILE_SUFFIXES = frozenset("png jpg jpeg gif svg webp ico bmp js mjs ts tsx jsx css scss json yaml yml md txt".split())


def _email_ok(match: re.Match[str]) -> bool:
    return match.group().rsplit(".", 1)[1].lower() not in _FILE_SUFFIXES


# ── hints：每一行需要去哪里找 ───────────────────────────────────────────────────────────────

_JOIN_GAP = 64      # 距离比这更近的窗口合成一个来搜：调用一次正则的开销，约等于扫过 100 个字符


class _HintIndex:
    """每一行需要去哪里找。每个 hint 在一段文本上只搜一次，由所有写了它的行共享。

    字符串 hint 给出含有它的那些行，不分大小写：ASCII 的 hint 在文本的一份转成小写的单字节副本里找
    （位置不变；Latin-1 以外的字符变成 "?"），所以 "bearer" 用一次 bytes.find 扫描就能找到 Bearer
    和 BEARER，不必用忽略大小写的正则。
    函数 hint 接收这个索引（文本和那份副本），返回要看的区间：word_starting() 和下面的几个数字 hint 就是这种。
    """

    def __init__(self, text: str, folded: bytes | None = None, wide: str | None = None):
        self.text, self.cache = text, {}
        # folded：调用方已经拼好的同一份副本（_redact_batch 逐串编码再拼：全是 ASCII 的串编码只是复制）
        self.folded = text.encode("latin-1", "replace").lower() if folded is None else folded
        self.wide = text if wide is None else wide   # 含有 text 里全部非 ASCII 字符的一段文本：非 ASCII 的 hint 只在这里找
        self.present: set[str] | None = None   # _indexed_claims 查过的字符串 hint 里出现了的那些（None：还没查）

    def windows(self, hints) -> list[tuple[int, int]]:
        if not hints:
            return [(0, len(self.text))]
        spans = self.spans(hints[0]) if len(hints) == 1 else sorted(s for hint in hints for s in self.spans(hint))
        if len(spans) < 2:
            return spans
        merged: list[tuple[int, int]] = []
        for start, end in spans:
            if merged and start <= merged[-1][1] + _JOIN_GAP:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return merged

    def spans(self, hint) -> list[tuple[int, int]]:
        if hint not in self.cache:
            if callable(hint):
                self.cache[hint] = hint(self)
            elif hint.isascii():
                self.cache[hint] = _lines_containing(self.folded, hint.lower().encode(), b"\n")
            else:
                self.cache[hint] = _lines_containing(self.text, hint, "\n")
        return self.cache[hint]


def _lines_containing(haystack, needle, newline) -> list[tuple[int, int]]:
    """每个含有 needle 的行的 [(start, end)]；每行只 find 一次，所以总代价就是一次扫描。"""
    lines = []
    position = haystack.find(needle)
    while position != -1:
        end = haystack.find(newline, position)
        end = len(haystack) if end == -1 else end
        lines.append((haystack.rfind(newline, 0, position) + 1, end))
        position = haystack.find(needle, end)
    return lines


_DIGIT_SKELETON = bytes(ord("0") if byte in b"0123456789" else ord("-") if byte in b" .-" else ord(" ")
                        for byte in range(256))
# 裸数字（11 位起：手机号；15 位起：卡号、身份证号）、4-4-4 分组、6-8-4 / 6-4-4-4 / 4-6-5、手机号的 3-4-4 分组
_NUMBER_SHAPES = (b"0" * 11, b"0000-0000-0000", b"000000-0000", b"000-0000-0000")
_GROUPED = b"000-0000"   # 分组的几种形状都含有它
_LONG_RUN = b"0" * 15    # 卡号、身份证号的裸数字至少这么长
_RUN_SHAPES = (_NUMBER_SHAPES[0], _LONG_RUN)
_MANY_SHORT_RUNS = object()   # _HintIndex.cache 里的记号：11–14 位的数字串太多，_long_numbers 没有全记下
_ZEROS = re.compile(b"0+")


def _digit_skeleton(index: _HintIndex) -> bytes:
    """文本的数字骨架（见 _long_numbers）；经 index.spans() 调用，每段文本只翻译一次，几个数字 hint 共用。"""
    return index.folded.translate(_DIGIT_SKELETON)


def _long_numbers(index: _HintIndex) -> list[tuple[int, int, int, int]]:
    """每一串 11 位以上的数字（连成一串的或分组的）的
    (窗口起点, 窗口终点, 数字串起点, 第一个分隔符之前的位数)。卡号、身份证号、手机号三行的 hint 都从这里挑。

    日志里到处是数字，与其让 re 在每个数字上都试一遍，不如把文本的单字节副本翻译成一副骨架
    （数字 → "0"，" .-" 之一 → "-"，其余 → " "），再用 bytes.find 以内存速度查找上面那几种形状。
    一个窗口是数字和分隔符连成的整段，再往后多两个字符，让各行的前瞻断言看得到后面是什么。

    >>> _long_numbers(_HintIndex("order 2024113012345678, card 4111 1111 1111 1111."))
    [(5, 24, 6, 16), (28, 49, 29, 4), (28, 49, 30, 3)]
    """
    skeleton = index.spans(_digit_skeleton)
    runs, short_runs = [], 0
    # 分组的形状都含 "000-0000"：一次 find 找不到它，几种都不必再找（日志里多半没有分组的长数字）
    for shape in _NUMBER_SHAPES if _GROUPED in skeleton else _NUMBER_SHAPES[:1]:
        position = skeleton.find(shape)
        while position != -1:
            group_end = _ZEROS.match(skeleton, position).end()
            if shape is _NUMBER_SHAPES[0] and group_end - position < 15:
                short_runs += 1   # 11–14 位：只有手机号那一行要。太多了（比如每行一个毫秒时间戳），那一行改扫全文，
                if short_runs > _MOBILE_WINDOWS:   # 这里接着只找 15 位以上的：Python 的循环不随时间戳的个数增长
                    index.cache[_MANY_SHORT_RUNS] = True
                    shape = _LONG_RUN
                    position = skeleton.find(shape, group_end)
                    continue
            window_end = skeleton.find(b" ", position)
            window_end = len(skeleton) if window_end == -1 else window_end
            runs.append((skeleton.rfind(b" ", 0, position) + 1, min(window_end + 2, len(skeleton)), position,
                         group_end - position))
            position = skeleton.find(shape, group_end if shape in _RUN_SHAPES else window_end)
    return sorted(runs)


def id_number_runs(index: _HintIndex) -> list[tuple[int, int]]:
    """身份证号的 hint：连着的 17 或 18 位数字（第 18 个字符可以是 X），或 6-8-4 / 6-4-4-4 分组。"""
    return [(start, end) for start, end, _, first in index.spans(_long_numbers) if first in (6, 17, 18)]


id_number_runs.needs = _long_numbers   # type: ignore[attr-defined]


def card_number_runs(index: _HintIndex) -> list[tuple[int, int]]:
    """卡号的 hint：分组的数字（4-4-4-4；4-6-5 靠它那组 6 位数字找到），或带发卡行前缀的 15–19 位数字。"""
    text = index.text
    return [(start, end) for start, end, run, first in index.spans(_long_numbers)
            if first in (4, 6) or (15 <= first <= 19 and _CARD_ISSUER.fullmatch(text, run, run + first))]


card_number_runs.needs = _long_numbers   # type: ignore[attr-defined]


# 凭据那一行的 hint：敏感词 + 名字的其余部分 + 冒号或等号，在小写副本里一趟找完（与那一行的正则同一结构，
# 不分大小写，所以它认领的每一处都在某个窗口里）。只写 "key"、"token" 的行——代码里到处都是——不再是窗口。
# 四个词各用一个正则：以固定文字开头的正则，re 能直接跳到下一个出现处；写成一个 (?:pass|…) 反而慢好几倍。
_SENSITIVE_WORDS = ("pass", "secret", "token", "key")
_ASSIGNMENTS = [(word, re.compile(word.encode() + rb"""(?=([a-z0-9_.-]{0,64}))\1["']?[ \t]*[:=]"""))
                for word in _SENSITIVE_WORDS]


def assignments(index: _HintIndex) -> list[tuple[int, int]]:
    """凭据的 hint：从每个 "<含敏感词的名字> =" 或 ": " 起，到它所在行的行尾。
    四个词也是这一行的字符串 hint（needles）：一个都不在文本里，这一行整个跳过；_indexed_claims 已经查过
    哪些词在（index.present），不在的词就不必再跑它的正则（找不到的词，正则也要扫完全文）。

    >>> assignments(_HintIndex("def evict(self, key):\\nAPI_KEY=abc123XYZ789"))
    [(26, 42)]
    """
    folded, spans, present = index.folded, [], index.present
    for word, pattern in _ASSIGNMENTS:
        if present is not None and word not in present:
            continue
        for match in pattern.finditer(folded):
            end = folded.find(b"\n", match.end())
            spans.append((match.start(), len(folded) if end == -1 else end))
    return sorted(spans)


assignments.needles = _SENSITIVE_WORDS   # type: ignore[attr-defined]


_WORD_SKELETON = bytes(ord("w") if byte in b"abcdefghijklmnopqrstuvwxyz0123456789_-" else ord(" ")
                       for byte in range(256))        # 副本已经转成小写了
_WORD_PREFIXES: set[str] = set()            # 各行通过 word_starting() 要过的所有前缀
_LONG_WORD = b"w" * 20                      # 用 word_starting() 的行，每个匹配都至少 20 个字符


def word_starting(*prefixes: str) -> Callable[[_HintIndex], list[tuple[int, int]]]:
    """固定前缀令牌的 hint：从每个以这些前缀之一开头（区分大小写）、20 个字符以上的单词起，到它所在行的行尾。

    十行令牌规则本来要把全文扫十遍；改为由 _prefixed_words 一次找出所有长单词（又是一副骨架：字母、
    数字、"_" 和 "-" 变成 "w"），每一行再留下自己的那些。
    """
    _WORD_PREFIXES.update(prefixes)

    def hint(index: _HintIndex) -> list[tuple[int, int]]:
        words, text = index.spans(_prefixed_words), index.text
        return [(start, end) for start, end in words if text.startswith(prefixes, start)] if words else words
    hint.__qualname__ = f"word_starting{prefixes}"
    hint.needs = _prefixed_words   # type: ignore[attr-defined]  # 没有 20 个字符以上的单词，它就什么都给不出
    return hint


def _prefixed_words(index: _HintIndex) -> list[tuple[int, int]]:
    skeleton, text, spans = index.folded.translate(_WORD_SKELETON), index.text, []
    position = skeleton.find(_LONG_WORD)
    if position == -1:
        return spans   # 最常见：没有 20 个字符以上的单词
    prefixes = tuple(_WORD_PREFIXES)
    heads = {prefix[:2] for prefix in prefixes}          # 先查一次集合：大多数长单词是标识符
    while position != -1:
        if text[position:position + 2] in heads and text.startswith(prefixes, position):
            line_end = index.folded.find(b"\n", position)
            spans.append((position, len(text) if line_end == -1 else line_end))
        end = skeleton.find(b" ", position)
        position = -1 if end == -1 else skeleton.find(_LONG_WORD, end)
    return spans


def private_key_blocks(index: _HintIndex) -> list[tuple[int, int]]:
    """私钥的 hint：从第一个含 "private key"（不分大小写）的行起，一直到文本末尾——一个块要跨好几行。"""
    position = index.folded.find(b"private key")
    return [] if position == -1 else [(index.folded.rfind(b"\n", 0, position) + 1, len(index.text))]


private_key_blocks.needles = ("private key",)   # type: ignore[attr-defined]


_MOBILE_WINDOWS = 5_000   # 多过这么多串就扫全文：逐段的窗口不再比一趟 re 省


def mobile_numbers(index: _HintIndex) -> list[tuple[int, int]]:
    """手机号的 hint：11 位以上连着的数字，或 3-4-4 分组（_long_numbers 的窗口）。年份、端口、行号这些
    日志里到处都是的短数字不算；这样的长数字串很多（比如每行一个毫秒时间戳）就扫全文。

    >>> mobile_numbers(_HintIndex("端口 8080，电话 138 1234 5678，2024-11-30"))
    [(10, 26)]
    """
    windows = [(start, end) for start, end, _, first in index.spans(_long_numbers) if first == 3 or first >= 11]
    too_many = len(windows) > _MOBILE_WINDOWS or _MANY_SHORT_RUNS in index.cache
    return [(0, len(index.text))] if too_many else windows


mobile_numbers.needs = _long_numbers   # type: ignore[attr-defined]


def urls(index: _HintIndex) -> list[tuple[int, int]]:
    """URL 里的密码的 hint：文本里有 "://" 就扫全文（理由同上：代码和日志里的 URL 很多）。"""
    return [(0, len(index.text))] if b"://" in index.folded else []


urls.needles = ("://",)   # type: ignore[attr-defined]


# ── 规则表 ──────────────────────────────────────────────────────────────────────────────────

# 卡号：不是更长数字的一部分，也不是浮点数的小数部分：
_CARD_NUMBER = (_FIRST_DIGIT + r"(?:[0-9]{14,18}"                                       # 裸数字
                r"|[0-9]{3}(?P<sep>[ .-])[0-9]{4}(?P=sep)[0-9]{4}(?P=sep)[0-9]{4}(?:(?P=sep)[0-9]{1,3})?"  # 4-4-4-4
                r"|[0-9]{3}(?P<amex>[ .-])[0-9]{6}(?P=amex)[0-9]{5})"                      # Amex 4-6-5
                + _NUMBER_END)

# 顺序有讲究：具体的形状在前。各行看的是同一份文本；重叠时排在前面的行胜出。
RULES: list[Rule] = [
    Rule("private_key", "私钥", re.compile(
        # 没有结尾的块（被截断的工具输出）一直遮到文本末尾
        # （redact_value() 把多个字符串合成一批处理时，遮到这个字符串的末尾）。
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|(?=\n\0)|\Z)"), hints=(private_key_blocks,)),
    Rule("jwt", "JWT", re.compile(
        _WORD_START + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), hints=("eyj",)),
    Rule("slack_webhook", "Slack Webhook", re.compile(
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/-]{20,})"), hints=("hooks.slack.com",)),
    Rule("sk_api_key", "API密钥", re.compile(                # OpenAI、Anthropic（sk-ant-）、DeepSeek……
        _WORD_START + r"sk-[A-Za-z0-9_-]{20,}"), _random_secret, hints=(word_starting("sk-"),)),
    Rule("stripe_key", "Stripe密钥", re.compile(_WORD_START + r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
         hints=(word_starting("sk_live_", "sk_test_", "rk_live_", "rk_test_"),)),
    Rule("aws_access_key", "AWS密钥", re.compile(_WORD_START + r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"),
         hints=(word_starting("AKIA", "ASIA"),)),
    Rule("aws_secret_key", "AWS密钥", re.compile(            # 紧跟在名字后面的 40 个 base64 字符
        r"(?i:aws[ _-]?secret[ _-]?(?:access[ _-]?)?key|secret[ _-]?access[ _-]?key)[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"), hints=("secret",)),
    Rule("google_api_key", "Google密钥", re.compile(_WORD_START + r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
         hints=(word_starting("AIza"),)),
    Rule("github_token", "GitHub令牌", re.compile(
        _WORD_START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
        hints=(word_starting("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),)),
    Rule("gitlab_token", "GitLab令牌", re.compile(_WORD_START + r"glpat-[A-Za-z0-9_-]{20,}"),
         hints=(word_starting("glpat-"),)),
    Rule("huggingface_token", "Hugging Face令牌", re.compile(_WORD_START + r"hf_[A-Za-z0-9]{30,}"), _random_secret,
         hints=(word_starting("hf_"),)),
    Rule("npm_token", "npm令牌", re.compile(_WORD_START + r"npm_[A-Za-z0-9]{36}"), _random_secret,
         hints=(word_starting("npm_"),)),
    Rule("slack_token", "Slack令牌", re.compile(_WORD_START + r"xox[abprs]-[A-Za-z0-9-]{15,}"),
         hints=(word_starting("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"),)),
    Rule("azure_key", "Azure密钥", re.compile(
        r"(?:Account|SharedAccess)Key=(?P<secret>[A-Za-z0-9+/]{40,}={0,2})"), hints=("key=",)),
    Rule("bearer_token", "Bearer令牌", re.compile(           # Bearer x、BEARER x、bearer  x（保留这个词本身）
        r"(?<![A-Za-z])(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)"), _mixed_secret,
        hints=("bearer",)),
    Rule("auth_header", "认证信息", re.compile(              # Authorization: Basic … / token … / Digest …
        r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic|token|digest)[ \t]+"
        r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})"), _not_a_reference, hints=("authorization",)),
    Rule("url_password", "密码", re.compile(                 # postgres://app:S3cr3t@host → 只遮 S3cr3t
        r"://[^\s:/?#@]*:(?P<secret>[^\s/?#@]+)@"), _not_a_reference, hints=(urls,)),
    Rule("credential", "凭据", re.compile(                   # API_KEY=…, "password": "…", JWT_SECRET: …
        # 从敏感词开始匹配（DB_PASSWORD 从 PASSWORD 处匹配上）；完整的名字由校验函数去读。
        # 名字的其余部分“吃进就不吐回”（先行断言 + 反向引用，等于 3.11 的占有量词 *+，3.10 也能用）：长单词上不会回溯；
        # 最多 64 个字符：否则 "keykeykey…" 里每个 key 都要扫到单词末尾，是平方级的。
        # 第一个字母用普通的字符类，re 就能快速跳到候选位置。
        r"""(?P<word>[PpSsTtKk](?i:ass|ecret|oken|ey)(?=(?P<rest>[A-Za-z0-9_.-]{0,64}))(?P=rest))["']?[ \t]*[:=][ \t]*"""
        r"""(?P<quote>["'`])?(?P<secret>(?(quote)(?:(?!(?P=quote))[^\n])+|[^\s"'`,;()\[\]{}]+))"""),
        _credential_ok, hints=(assignments,)),
    # 有了这个后顾断言，每一串 local-part（@ 前面的部分）字符最多只发起一次匹配尝试；
    # 没有它，一长段 base64 要花平方级的时间。
    Rule("email", "邮箱", re.compile(
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"), _email_ok,
        hints=("@",)),
    Rule("cn_id_number", "身份证号", re.compile(            # 18 个字符，也可以是 6-8-4 或 6-4-4-4 分组
        _FIRST_DIGIT + r"(?<!0)[0-9]{5}[ -]?(?:18|19|20)[0-9]{2}[ -]?(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])"
        r"[ -]?[0-9]{3}[0-9Xx]" + _NUMBER_END), _id_number_ok, hints=(id_number_runs,)),
    Rule("bank_card", "银行卡号", re.compile(_CARD_NUMBER), _card_ok, hints=(card_number_runs,)),
    Rule("bank_card_after_word", "银行卡号", re.compile(    # 卡号 / 银行卡 / card number：任意 15–19 位数字
        r"(?:卡|(?i:card))[^0-9\n]{0,20}?(?P<secret>" + _CARD_NUMBER + ")"), _luhn_ok,
        hints=("卡", "card")),
    Rule("cn_mobile", "手机号", re.compile(
        # hint 只给出数字骨架里有 11 位数字（或 3-4-4 分组）的行；正则以 "1[3-9][0-9]" 开头：re 从一个 "1" 跳到下一个 "1"，
        # 然后才由后顾断言检查这三个字符前面是什么（断言里的 "..." 就是这三个字符）——非字母数字、
        # +86、0086 或电话字样（Tel13812345678），绝不能是 "<数字>."（3.14159265358 的小数部分）。
        r"1[3-9][0-9](?:(?<![0-9A-Za-z]...)(?<![0-9][.,]...)|(?<=\+86...)|(?<=0086...)|(?<=[Tt]el...)"
        r"|(?<=TEL...)|(?<=[Pp]hone...)|(?<=[Mm]obile...))(?P<sep>[ .-]?)[0-9]{4}(?P=sep)[0-9]{4}" + _NUMBER_END),
        hints=(mobile_numbers,)),
]


class _Gate(NamedTuple):
    """一行规则的“有没有可能”：strings——它的字符串 hint，加上函数 hint 写明的 needles（一个都没在文本里出现，这一行就不可能）；
    source——它的 hint 都依赖的那份索引（长单词、长数字串：是空的，这一行就不可能）。两者都是 None：总要跑。
    说“可能”的行照常走 windows()；说“不可能”的行，windows() 本来也只会给出空列表。"""
    rule: Rule
    strings: frozenset[str] | None
    source: Callable[[_HintIndex], list] | None


def _gate(rule: Rule) -> _Gate:
    hints = rule.hints
    # 函数 hint 可以写明 needles：其中一个都不在文本里时它给不出窗口（assignments、urls、private_key_blocks）
    needles = [(hint,) if isinstance(hint, str) else getattr(hint, "needles", None) for hint in hints]
    if hints and None not in needles:
        return _Gate(rule, frozenset(itertools.chain.from_iterable(needles)), None)
    needs = {getattr(hint, "needs", None) for hint in hints}
    if hints and len(needs) == 1 and None not in needs:
        return _Gate(rule, None, needs.pop())
    return _Gate(rule, None, None)


class _Table(NamedTuple):
    built_in: bool                      # RULES 是否还是内置的那些行
    gates: list[_Gate]
    # gates 按顺序去掉一部分：没有字符串 hint 出现时 / 长单词、长数字串都没有时 / 两样都没有时，要看的只剩这些行
    without_strings: list[_Gate]
    without_sources: list[_Gate]
    without_either: list[_Gate]
    sources: tuple[Callable[[_HintIndex], list], ...]   # 各行依赖的那几份索引
    ascii_hints: tuple[str, ...]        # 所有行的 ASCII 字符串 hint（每个一次），和它们在小写副本里要找的字节
    ascii_needles: tuple[bytes, ...]
    other_hints: tuple[str, ...]        # 其余的字符串 hint（"卡"），在原文里找
    # 长文本先在一份删掉了“哪个 needle 里都没有的字节”（数字、空白、汉字变成的 "?"……）的短副本里找（_ascii_present）：
    # 每个 needle 删成 short_needles 里的样子；短副本里没有它，原文里一定没有
    not_in_needles: bytes
    short_needles: tuple[bytes, ...]


_BUILT_IN: tuple[Rule, ...] = tuple(RULES)
_table_cache: list = [None, None]   # [RULES 的快照, _Table]


def _table() -> _Table:
    """按当前的 RULES 算好的各行 _Gate 和全部字符串 hint；RULES 变了就重算一遍。"""
    rules = tuple(RULES)
    if _table_cache[0] != rules:
        _refuse_rules_that_match_markers(rules)
        gates = [_gate(rule) for rule in rules]
        strings = list(dict.fromkeys(hint for gate in gates for hint in gate.strings or ()))
        ascii_hints = tuple(hint for hint in strings if hint.isascii())

        def without(skip_strings: bool, skip_sources: bool) -> list[_Gate]:   # 按顺序去掉靠字符串 hint / 靠索引把关的行
            return [gate for gate in gates if not (skip_strings and gate.strings is not None)
                    and not (skip_sources and gate.source is not None)]
        sources = tuple(dict.fromkeys(gate.source for gate in gates if gate.source is not None))
        needles = tuple(hint.lower().encode() for hint in ascii_hints)
        kept = set(b"".join(needles)) - set(b" \t\n0123456789")
        not_in_needles = bytes(byte for byte in range(256) if byte not in kept)
        _table_cache[:] = [rules, _Table(rules == _BUILT_IN, gates, without(True, False), without(False, True),
                                         without(True, True), sources, ascii_hints, needles,
                                         tuple(hint for hint in strings if not hint.isascii()), not_in_needles,
                                         tuple(needle.translate(None, not_in_needles) for needle in needles))]
        _redact_short.cache_clear()   # 记住的结果是按旧的规则算的
        _clean_texts.clear()
        _clean_size[0] = 0
    return _table_cache[1]


def _refuse_rules_that_match_markers(rules: tuple[Rule, ...]) -> None:
    """加进来的行要是能在某个标记里认领到东西（比如标签是 "LRU"、正则也是 "LRU"），遮过的地方会被一遍又一遍地再遮，
    redact() 永远停不下来：建表时就拒绝（ValueError，说明是哪一行、哪个标记）。只拿单独的标记试，
    靠前后文才匹配得上的正则试不出来；内置的行一个都不会（测试逐个核对）。"""
    labels = dict.fromkeys([*(rule.label for rule in rules), _CREDENTIAL_LABEL])
    markers = [MARKER.format(label=label) for label in labels]
    for rule in rules:
        secret = "secret" if "secret" in rule.pattern.groupindex else 0
        for marker in markers:
            for match in rule.pattern.finditer(marker):
                start, end = match.span(secret)
                if start < end and not marker.startswith(_MARKER_START, start) and \
                        (rule.validator is None or rule.validator(match)):
                    raise ValueError(f"脱敏规则 {rule.name} 能在标记 {marker} 里认领到 {marker[start:end]!r}："
                                     "遮过的文字会被一遍又一遍地再遮、永远停不下来；请改它的正则或标签")


# ── 执行引擎 ────────────────────────────────────────────────────────────────────────────────


def redact(text: str) -> str:
    """把文本里的每一处秘密替换成 [已脱敏:<label>] 标记。

    >>> redact("手机13812345678请回电，邮件 alice@example.com")
    '手机[已脱敏:手机号]请回电，邮件 [已脱敏:邮箱]'
    """
    return redact_with_counts(text)[0]


def redact_short(text: str) -> str:
    """redact()，短文本（标题、ID：导出的分支路径里每次都是同样几个）记住结果。结果与 redact() 逐字相同
    （脱敏只取决于文本本身）；记住的条数有上限。"""
    _table()   # RULES 变了就先清掉按旧规则记住的结果
    return _short_or_whole(text)


def _short_or_whole(text: str) -> str:
    return _redact_short(text) if len(text) <= _SHORT_TEXT else redact(text)


_SHORT_TEXT = 200


def redact_shorts(values: list) -> list:
    """[redact_short(v) if isinstance(v, str) else v for v in values]，规则表只核对一次（导出的分支路径一次给出全部字段）。

    >>> redact_shorts(["a@example.com", 3, None])
    ['[已脱敏:邮箱]', 3, None]
    """
    _table()
    return [_short_or_whole(value) if isinstance(value, str) else value for value in values]


@functools.lru_cache(maxsize=4096)   # 最多约 4096 × 200 个字符
def _redact_short(text: str) -> str:
    return redact(text)


# 短的“ID 形”文本（会话 ID、不带空格的短标题）：只有字母、数字、"_"、"-"，不到 20 个字符，数字不到 11 个。
# 这样的文本哪一行都匹配不上——令牌类的至少 20 个字符，数字类的至少 11 位数字，其余的都要 @ : = / . 空格之一——
# 所以不必把 23 行挨个试一遍（一个 12 位的 ID 要 20 多万条指令）。测试用完整的规则逐一核对这一点。
_ID_SHAPED = re.compile(r"[A-Za-z0-9_-]{0,19}")
_ID_MAX_DIGITS = 10


def _nothing_can_match(text: str) -> bool:
    """只对内置的这些行成立：RULES 被改过（加了一行）就不走捷径，新行不必知道这里。"""
    return len(text) < 20 and _ID_SHAPED.fullmatch(text) is not None and \
        sum(map(str.isdigit, text)) <= _ID_MAX_DIGITS and _table().built_in


def redact_with_counts(text: str) -> tuple[str, dict[str, int]]:
    """和 redact() 一样，另外报告每种标签各遮住了几处（按 RULES 的顺序）。

    >>> redact_with_counts("a@example.com b@example.com 时间戳 1732867200123")
    ('[已脱敏:邮箱] [已脱敏:邮箱] 时间戳 1732867200123', {'邮箱': 2})
    """
    if _nothing_can_match(text):
        return text, {}
    counts: Counter[str] = Counter()
    redacted, markers = _apply(text, _claims(text), counts)
    # 一处遮盖只可能让紧挨着它的地方变得能匹配（环视断言现在看到的是 "]"），而各行都在一行之内匹配，
    # 所以只要重查现在含有标记的那些行，就足以知道是否已经完成。
    if markers and _claims(_lines_around(redacted, markers)):
        while claims := _claims(redacted):                    # 很少发生：重复到稳定为止
            redacted, _ = _apply(redacted, claims, counts)    # 一定会结束：每次认领都消耗掉一段原文
    return redacted, _in_rule_order(counts)


# 全角数字（１３８…、身份证号末位的 Ｘ、分组用的 －）先换成半角再匹配：一个字符换一个字符，位置不变，
# 所以认领的区间照样落在原文上，各行也不必各写一份全角的版本。
_FULLWIDTH = tuple(zip("０１２３４５６７８９Ｘｘ－", "0123456789Xx-"))
_FULLWIDTH_DIGITS = "０１２３４５６７８９"


def _halfwidth(text: str, wide: str | None = None) -> str:
    """全角数字换成半角。wide：一段含有 text 里全部非 ASCII 字符串的文本（_redact_batch 只把非 ASCII 的那些串拼起来，
    一批导出里它们往往只占一小部分），全角数字只在那里找。"""
    # 十次 str.find（每次都在 C 里扫一遍）比一个字符类的正则快几倍；没有全角数字时 Ｘ 和 － 不影响任何一行。
    # 换的时候逐个字符 str.replace：str.translate 在非 ASCII 文本上要慢一个数量级。
    probe = text if wide is None else wide
    if text.isascii() or not any(digit in probe for digit in _FULLWIDTH_DIGITS):
        return text
    for wide, narrow in _FULLWIDTH:
        if wide in text:
            text = text.replace(wide, narrow)
    return text


def _claims(text: str) -> list[tuple[int, int, str]]:
    """把每一行都用在同一份文本上（全角数字先换成半角）：返回排好序的 (start, end, label)；重叠时排在前面的行胜出。"""
    return _indexed_claims(_HintIndex(_halfwidth(text)))


def _indexed_claims(index: _HintIndex) -> list[tuple[int, int, str]]:
    """_claims() 本身；index 建在已换成半角的文本上（_redact_batch 先用它的单字节副本数一数 "\0"）。"""
    text = index.text
    starts: list[int] = []
    claims: list[tuple[int, int, str]] = []
    table = _table()
    # 所有行的字符串 hint 一次查完，每行再拿自己的那几个去比：比每行各查一遍省下 20 多次函数调用
    present = _ascii_present(index.folded, table)
    present.update(itertools.compress(table.other_hints, map(index.wide.__contains__, table.other_hints)))
    index.present = present
    no_sources = not any(map(index.spans, table.sources))
    # 闲聊一样的文本（最常见）：一个字符串 hint 都没有、也没有长单词和长数字串，只剩几行要看
    gates = (table.without_either if no_sources else table.without_strings) if not present \
        else table.without_sources if no_sources else table.gates
    for rule, strings, source in gates:
        if (strings is not None and strings.isdisjoint(present)) or (source is not None and not index.spans(source)):
            continue   # 这一行的 hint 一个窗口都给不出：不必走 windows()
        windows = index.windows(rule.hints)
        found = windows and [(start, end, rule.label) for start, end in _matches(rule, text, windows, starts, claims)]
        if found:
            claims = sorted(claims + found)
            starts = [claim[0] for claim in claims]
    return claims


_SHORT_COPY_FROM = 256 * 1024   # 比这短的文本直接在小写副本里找：删字节的那一趟省不回来
_PROBE_BYTES = 64 * 1024        # 先在开头这么多字节里找：出现了的 needle（多半在开头就出现）不必再扫
_SHORT_COPY_NEEDLES = 6         # 开头没找到的 needle 有这么多个，删字节的那一趟（约等于扫 5 遍）才省得回来


def _ascii_present(folded: bytes, table: _Table) -> set[str]:
    """小写副本里出现了的 ASCII 字符串 hint。找不到的 needle 要扫完全文，而秘密很少，多数 needle 都找不到：
    长文本里开头没出现的 needle 多了，就先删掉哪个 needle 里都没有的字节（数字、空白、汉字变成的 "?"……），
    在这份短了约一半的副本里找（_short_copy）。"""
    hints, needles = table.ascii_hints, table.ascii_needles
    if len(folded) < _SHORT_COPY_FROM:
        return set(itertools.compress(hints, map(folded.__contains__, needles)))
    present, left = set(), []
    for number, needle in enumerate(needles):
        if folded.find(needle, 0, _PROBE_BYTES) != -1:
            present.add(hints[number])
        else:
            left.append(number)
    if len(left) < _SHORT_COPY_NEEDLES:
        present.update(hints[number] for number in left if needles[number] in folded)
        return present
    short = _short_copy(folded, table)
    for number in left:
        # 删过的 needle 在短副本里找不到，原文里就一定没有（原文里的一处出现，删完还是连着的，而且只会往前挪）；
        # 找到了再回原文、从短副本里的那个位置往后确认（删成空的 needle 在 0 处“找到”，就是在原文里从头找）
        first = short.find(table.short_needles[number])
        if first != -1 and folded.find(needles[number], first) != -1:
            present.add(hints[number])
    return present


def _short_copy(folded: bytes, table: _Table) -> bytes:
    return folded.translate(None, table.not_in_needles)


def _apply(text: str, claims: list[tuple[int, int, str]], counts: Counter[str]) -> tuple[str, list[int]]:
    """把每处认领替换成它的标记；同时返回各个标记在结果里的起点。"""
    pieces, markers, position, length = [], [], 0, 0
    for start, end, label in claims:
        marker = MARKER.format(label=label)
        pieces += [text[position:start], marker]
        markers.append(length + start - position)
        length += start - position + len(marker)
        counts[label] += 1
        position = end
    pieces.append(text[position:])
    return ("".join(pieces) if claims else text), markers


def _lines_around(text: str, positions: list[int]) -> str:
    """含有这些位置的那些行，用换行连起来。"""
    lines: list[tuple[int, int]] = []
    for position in positions:
        if lines and position < lines[-1][1]:
            continue
        end = text.find("\n", position)
        lines.append((text.rfind("\n", 0, position) + 1, len(text) if end == -1 else end))
    return "\n".join(text[start:end] for start, end in lines)


def _matches(rule: Rule, text: str, windows: list[tuple[int, int]], starts: list[int],
             claims: list[tuple[int, int, str]]):
    """这一行认领的区间：在它的窗口里匹配到、还空着（没被认领，也不是标记）、通过了校验。"""
    secret = "secret" if "secret" in rule.pattern.groupindex else 0
    for window_start, window_end in windows:
        for match in rule.pattern.finditer(text, window_start, window_end):
            start, end = match.span(secret)
            if start < end and not _overlaps(starts, claims, start, end) and \
                    not text.startswith(_MARKER_START, start) and (rule.validator is None or rule.validator(match)):
                yield start, end


def _overlaps(starts: list[int], claims: list[tuple[int, int, str]], start: int, end: int) -> bool:
    index = bisect.bisect_left(starts, end)              # 起点在我们终点之前的认领……
    return index > 0 and claims[index - 1][1] > start    # ……其中最后一个必须在我们的起点之前结束


def _in_rule_order(counts: Counter[str]) -> dict[str, int]:
    if not counts:
        return {}
    labels = dict.fromkeys(rule.label for rule in RULES)
    return {label: counts[label] for label in labels if counts[label]}


def redact_value(value: Any) -> tuple[Any, dict[str, int]]:
    """深拷贝类似 JSON 的数据，并对其中的每个字符串、每个字典键和每个够长的数字脱敏。

    数字按它在 JSON 里的写法检查（{"phone": 13812345678}），命中了就换成标记字符串；字典键命中了就换掉
    键（撞上已有的键时加 " (2)" 这样的后缀，键的顺序不变）；名字是凭据的键（"password"、"api_key"）
    对应的字符串值整个换成凭据标记，除非它是 ${VAR}、<your-key> 这样的引用。

    >>> redact_value({"role": "user", "content": [{"type": "text", "text": "call 13812345678"}]})
    ({'role': 'user', 'content': [{'type': 'text', 'text': 'call [已脱敏:手机号]'}]}, {'手机号': 1})
    >>> redact_value({"phone": 13812345678, "a@example.com": 1, "password": "hunter2", "port": 8080})
    ({'phone': '[已脱敏:手机号]', '[已脱敏:邮箱]': 1, 'password': '[已脱敏:凭据]', 'port': 8080}, {'凭据': 1, '邮箱': 1, '手机号': 1})
    """
    plain = _plain_texts(value)
    if plain is not None:   # 最常见的形状（导出时的标题 + 章节式的消息 + 来源说明）：不必走通用的复制
        return _redact_plain(value, *plain)
    found = _Found()
    copied = _copy_noting(found, [value])
    keys = list(found.keys)
    texts = [container[key] for container, key in found.strings]
    texts += [_number_text(container[key]) for container, key in found.numbers]
    redacted, counts = _redact_batch(texts + keys)
    total = Counter(counts)
    strings = len(found.strings)
    for (container, key), text in zip(found.strings, redacted):
        container[key] = text
    for (container, key), text in zip(found.numbers, redacted[strings:]):
        if text != _number_text(container[key]):
            container[key] = text
    for container, key in found.credentials:
        text = container[key]
        if text.strip() and not _is_reference(text) and _MARKER_START not in text:
            container[key] = MARKER.format(label=_CREDENTIAL_LABEL)
            total[_CREDENTIAL_LABEL] += 1
    renamed = {key: text for key, text in zip(keys, redacted[len(texts):]) if text != key}
    if renamed:
        for mapping in found.dicts:
            if not renamed.keys().isdisjoint(mapping):
                _rename_keys(mapping, renamed)
    return copied[0], _in_rule_order(total)


def _plain_texts(value: Any) -> tuple[list[str], list[str]] | None:
    """value 是 [字符串 | 只含字符串键值的字典的列表, …]（章节自己的会话导出时就是这样）时：(其中的全部字符串，
    按出现的顺序, 全部不同的键)——这些就是 redact_value 要交给规则表的全部文字。名字是凭据的键、数字、嵌套、
    子类……都会让 redact_value 走通用的路，这里返回 None。"""
    if type(value) is not list:
        return None
    texts: list[str] = []
    keys: dict[str, None] = {}
    for item in value:
        if type(item) is str:
            texts.append(item)
            continue
        if type(item) is not list or not set(map(type, item)) <= {dict}:
            return None
        names = set().union(*item)
        values = list(itertools.chain.from_iterable(map(dict.values, item)))
        if not set(map(type, names)) <= {str} or not set(map(type, values)) <= {str} \
                or any(map(_is_credential_name, names)):
            return None
        texts += values
        keys.update(dict.fromkeys(names))
    return texts, list(keys)


def _redact_plain(value: list, texts: list[str], keys: list[str]) -> tuple[list, dict[str, int]]:
    """redact_value() 用在 _plain_texts 认得的形状上：一批脱敏，再按原样的结构拼回副本（测试与通用的路逐一核对）。"""
    pieces, counts = _redact_batch(texts + keys, remember=True)
    if not counts:   # 一处都没认领（几乎总是）：原样的副本
        return [item if type(item) is str else list(map(dict, item)) for item in value], {}
    redacted = iter(pieces)
    copied: list = []
    for item in value:
        if type(item) is str:
            copied.append(next(redacted))
        else:
            copied.append([dict(zip(message, itertools.islice(redacted, len(message)))) for message in item])
    renamed = {key: text for key, text in zip(keys, pieces[len(texts):]) if text != key}
    if renamed:
        for item in copied:
            for mapping in item if type(item) is list else ():
                if not renamed.keys().isdisjoint(mapping):
                    _rename_keys(mapping, renamed)
    return copied, counts


class _Found:
    """_copy_noting 一路记下的东西：要脱敏的字符串、数字、字典键，凭据键的值，以及副本里的每个字典。"""

    def __init__(self):
        self.strings: list[tuple[Any, Any]] = []       # (副本里的容器, 键)：值是字符串
        self.numbers: list[tuple[Any, Any]] = []       # 值是 10 位以上的数字（再短的不会是任何一种秘密）
        self.credentials: list[tuple[Any, Any]] = []   # 键的名字是凭据（值是字符串）
        self.keys: dict[str, None] = {}               # 出现过的字符串键，每个只脱敏一次
        self.dicts: list[dict] = []


_CREDENTIAL_LABEL = "凭据"
_BIG_NUMBER = 10 ** 10


def _number_text(number: Any) -> str:
    return str(number) if isinstance(number, int) else repr(number)


def _is_credential_name(name: str) -> bool:
    """"password"、"api_key"、"clientSecret" 是凭据的名字；"token_type"、"max_tokens" 是关于凭据的元数据。"""
    return len(name) <= 64 and _is_short_credential_name(name)


@functools.lru_cache(maxsize=4096)   # 每次导出都是那几个键（role、content……）；最多 4096 × 64 个字符
def _is_short_credential_name(name: str) -> bool:
    return (all(char in _NAME_CHARS for char in name) and _SENSITIVE_WORD.search(name) is not None
            and not name.lower().endswith(_METADATA_SUFFIXES))


def _rename_keys(mapping: dict, renamed: dict[str, str]) -> None:
    items = list(mapping.items())
    mapping.clear()
    for key, item in items:
        new = renamed.get(key, key) if isinstance(key, str) else key
        if new in mapping:
            suffix = 2
            while f"{new} ({suffix})" in mapping:
                suffix += 1
            new = f"{new} ({suffix})"
        mapping[new] = item


def _copy_noting_strings(value: Any, slots: list[tuple[Any, Any]]) -> Any:
    """列表或字典的深拷贝；每个字符串所在的 (容器, 键) 追加到 slots 里（只管字符串：s11_review 用它）。"""
    found = _Found()
    copied = _copy_noting(found, value)
    slots += found.strings
    return copied


def _copy_noting(found: _Found, value: Any) -> Any:
    """列表或字典的深拷贝；要脱敏的每一处记进 found。
    确切的 dict / list（JSON 读出来的都是）先在 C 里整个浅拷贝，之后只替换其中的容器和奇怪的值：
    字符串、None、布尔值、数字不可变，原样留着就是副本。子类和元组拷成普通的 dict / list，逐项写进去。"""
    exact = type(value) is dict or type(value) is list
    is_dict = isinstance(value, dict)
    copied: Any = value.copy() if exact else {} if is_dict else [None] * len(value)
    if is_dict:
        found.dicts.append(copied)
    strings, keys = found.strings, found.keys
    for key, item in value.items() if is_dict else enumerate(value):
        named = is_dict and isinstance(key, str)
        if named:
            keys[key] = None
        kind = type(item)   # 先按确切的类型认 JSON 读出来的几种（最常见），子类再交给 isinstance
        if kind is str or (kind not in _JSON_TYPES and isinstance(item, str)):
            if not exact:
                copied[key] = item
            strings.append((copied, key))
            if named and _is_credential_name(key):
                found.credentials.append((copied, key))
        elif kind is dict or kind is list or (kind not in _JSON_TYPES and isinstance(item, (dict, list, tuple))):
            copied[key] = _copy_noting(found, item)
        else:
            # None、布尔值、整数、浮点数不可变，deepcopy 给回的就是它本身；其余任何奇怪的东西都不与原对象共享
            if kind not in _JSON_TYPES:
                copied[key] = copy.deepcopy(item)
            elif not exact:
                copied[key] = item
            if (kind is int or kind is float) and abs(item) >= _BIG_NUMBER and item == item:
                found.numbers.append((copied, key))
    return copied


_JSON_TYPES = frozenset((str, dict, list, type(None), bool, int, float))   # json / orjson 读出来的全部类型


# 所有字符串拼成一段文本一起脱敏（一趟，而不是几千趟小的），用一个没有哪行能跨过去匹配的分隔符连接：
# 各行遇到换行就停，私钥那一行遇到 "\n\0" 就停。
_BATCH_SEPARATOR = "\n\0\n"
_BATCH_BYTES = _BATCH_SEPARATOR.encode()


def _redact_batch(strings: list[str], remember: bool = False) -> tuple[list[str], dict[str, int]]:
    """[redact_with_counts(s) 的文本 for s in strings] 和加在一起的计数，一趟规则表跑完（测试逐个核对）。
    没被认领的字符串原样交回；认领了的只重拼它自己——不必把整批拼回去再切开（19 MB 的导出省下 ~50 ms）。
    remember（strings 全是 str 本身、不是子类时）：_plainly_nothing 认定干净的文本记进 _clean_texts，下次不再扫。"""
    if not strings:
        return [], {}
    if remember and _table().built_in:
        fresh = [string for string in strings if string not in _clean_texts]
        if not fresh or _plainly_nothing(_BATCH_SEPARATOR.join(fresh)):
            _remember_clean(fresh)
            return list(strings), {}
        joined = _BATCH_SEPARATOR.join(strings)   # fresh 不干净，含有它们的整批也不干净：不必再看一眼
    else:
        joined = _BATCH_SEPARATOR.join(strings)
        if _plainly_nothing(joined):   # 章节式的短会话（最常见）：几次扫描就知道一处都认领不了
            return list(strings), {}
    # str.isascii() 不用扫描：全是 ASCII 的串（工具输出、代码）里不会有全角数字，也不会有 "卡" 这样的 hint；
    # 其余的串只占一小部分时，只在它们里面找
    wide = [string for string in strings if not string.isascii()]
    wide_text = "".join(wide) if 2 * sum(map(len, wide)) < len(joined) else None
    text = _halfwidth(joined, wide_text)
    if text is not joined:   # 有全角数字：逐串换，Ｘ 和 － 只在自己含有全角数字的串里换成半角，和逐个处理时一样
        text = _halfwidth_each(strings)
    # 单字节副本逐串编码再拼（与整段编码逐字节相同：一个字符一个字节）；有全角数字换过的，只好整段编码
    folded = None if text is not joined else \
        _BATCH_BYTES.join([string.encode("latin-1", "replace") for string in strings]).lower()
    index = _HintIndex(text, folded, wide_text)
    if index.folded.count(b"\0") >= len(strings):   # 有字符串自己就含 "\0"（分隔符里各有一个）：只好逐个处理
        return _one_by_one(strings)
    claims = _indexed_claims(index)
    if not claims:
        return list(strings), {}
    ends = list(itertools.accumulate(len(string) + len(_BATCH_SEPARATOR) for string in strings))   # 各串之后的位置
    by_string: dict[int, list[tuple[int, int, str]]] = {}
    for start, end, label in claims:
        number = bisect.bisect_right(ends, start)
        offset = ends[number] - len(strings[number]) - len(_BATCH_SEPARATOR)
        if end > offset + len(strings[number]):   # 跨过了分隔符（各行本不会）：逐个处理
            return _one_by_one(strings)
        by_string.setdefault(number, []).append((start - offset, end - offset, label))
    counts: Counter[str] = Counter()
    pieces, lines = list(strings), []
    for number, found in by_string.items():
        pieces[number], markers = _apply(strings[number], found, counts)
        lines.append(_lines_around(pieces[number], markers))
    # 与 redact_with_counts 同一道检查：一处遮盖让旁边变得能匹配了，就逐个重复到稳定为止（很少发生）
    if _indexed_claims(_HintIndex(_halfwidth_each(lines))):
        return _one_by_one(strings)
    return pieces, _in_rule_order(counts)


_QUICK_TEXT = 16_000   # _plainly_nothing 只看这么长以内的文本：更长的多半有 hint，先看一眼只是多扫一遍


def _plainly_nothing(text: str) -> bool:
    """内置规则表在 text 上一处都认领不了的充分条件，只用几次 C 里的扫描，不建 _HintIndex、不走各行：
    没有全角数字，没有任何一行的字符串 hint 或 needles，数字骨架里没有 4 位连着的数字（长数字串和手机号都至少有），
    没有 20 个字符以上的单词（令牌类的行都至少有）。内置的每一行都由其中一样把关（测试逐行核对这一点，
    并拿不带 hint 的整张表核对结论）；RULES 改过就不走这条路。
    每个条件都只在文本里“有”什么时才成立，所以对一批字符串拼成的文本成立，对其中每一个也成立。"""
    table = _table()
    if not table.built_in or len(text) > _QUICK_TEXT:
        return False
    if not text.isascii() and any(digit in text for digit in _FULLWIDTH_DIGITS):
        return False
    folded = text.encode("latin-1", "replace").lower()
    if any(map(folded.__contains__, table.ascii_needles)) or any(map(text.__contains__, table.other_hints)):
        return False
    return b"0000" not in folded.translate(_DIGIT_SKELETON) and _LONG_WORD not in folded.translate(_WORD_SKELETON)


# 内置规则表下 _plainly_nothing 认定一处都认领不了的文本（每个都不长于 _QUICK_TEXT）。分叉出的每个分支都带着父分支的
# 那些消息，课堂上人人跑的是同一段演示：同样的文字再导出时，查一次字典就够了。条件都只看文本里“有”什么，而分隔符
# 拦得住每一样（数字串、单词、needle 都不会跨过 "\n\0\n"），所以一批里每个都干净，拼起来也干净。
# 有界：记下的字符总数超过 _CLEAN_CHARS 就整个清掉（课堂的服务器上全班共用这一份）；RULES 变了（_table 重算）也清掉。
_clean_texts: dict[str, None] = {}
_clean_size = [0]
_CLEAN_CHARS = 250_000   # ≤ 1 MB 的字符串（最坏每字符 4 字节），加上字典的开销


def _remember_clean(texts: list[str]) -> None:
    if not texts:
        return
    _clean_size[0] += sum(map(len, texts))
    if _clean_size[0] > _CLEAN_CHARS:
        _clean_texts.clear()
        _clean_size[0] = sum(map(len, texts))
    _clean_texts.update(dict.fromkeys(texts))


def _halfwidth_each(strings: list[str]) -> str:
    return _BATCH_SEPARATOR.join(map(_halfwidth, strings))


def _one_by_one(strings: list[str]) -> tuple[list[str], dict[str, int]]:
    total: Counter[str] = Counter()
    pieces = []
    for string in strings:
        piece, counts = redact_with_counts(string)
        pieces.append(piece)
        total.update(counts)
    return pieces, _in_rule_order(total)
