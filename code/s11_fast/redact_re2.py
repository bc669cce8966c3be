"""s11_fast.redact_re2 — s11_fast.redact 的必要条件，用 RE2（google-re2）一趟找齐：哪些行可能有秘密、是哪几行规则的

    所有字符串用 "\\n" 连成的一段（s11_fast.redact._scan 给的）
        ──► 单字节副本：ASCII 原样，拿不准的字符（全角数字、İ ı ſ K）和 "卡" 各成一个 0x80 起的字节，
            其余的字符都成了 "?"——一个字符一个字节，位置不变
        ──► _any：所有条件并成一个正则，RE2 的 DFA 一趟扫完；每一行只取它的第一个匹配
        ──► 那一行交给 _every（re2.Set）：一次说出这一行里出现了哪几个条件 → 哪几行规则，有没有拿不准的字符

关键洞察：RE2 没有环视断言，所以这里的条件都“吃进”它要看的上下文（前后的非数字字符、"sk-" 前面的字符）；
这在别处会挡住紧挨着的另一个条件，这里不会：_ANY 只用来找出行，行里有哪些条件由 re2.Set 逐个说出，
每个条件各自独立地匹配。所以一个条件只需是“这一行规则能在这一行里认领到东西，它就一定匹配”——
宁可多挑（多挑只是让规则表多看几行），绝不能少挑。

每个条件来自 s11_redact 的那一行规则：去掉环视断言（只会多匹配）、反向引用换成它引用的那个组、计数的重复
只留下限或缩短、校验函数不看（只有发卡行前缀例外：它写在 s11_redact._CARD_ISSUER 里，这里原样用上）。
单字节副本里的 "?" 可能是任何一个非 ASCII 字符：原规则里能匹配这种字符的字符类，在这里都要能匹配 "?"
（这里的字符类都只列 ASCII 字符，所以 0x80 以上的字节和 "?" 一样对待）。re 忽略大小写时当成 ASCII 字母的
İ ı ſ K 和全角数字（规则表先把它们换成半角）有一个条件 UNSURE：出现了，整个字符串交给整张表。

保证：s11_fast.redact 用这里找出的行与它自己的纯 Python 条件找出的行，交给的是同一个 s11_redact；
结果与 s11_redact 逐字相同（tests/fast/test_redact_fast.py 在两条路上都拿 s11_redact 作 oracle）。
没装 google-re2 时 import 这个模块会失败，s11_fast.redact 就用它自己的那几趟 re：结果一样，只是慢一些。
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator

import re2

# 单字节副本的编码表：0–127 是 ASCII 本身，0x80 起是要紧的几个非 ASCII 字符，其余的字符编码成 "?"
# （"\ufffe" 是标准库 cp* 编码表里“没有这个字节”的写法）。
_KEPT = "０１２３４５６７８９İıſ\u212a卡"
_SINGLE_BYTE = codecs.charmap_build("".join(map(chr, range(128))) + _KEPT + "\ufffe" * (128 - len(_KEPT)))
_UNSURE_BYTES = rb"[\x80-\x8d]"     # 全角数字和 İ ı ſ K
_CARD_WORD = rb"\x8e"                # 卡
UNSURE = "unsure"                    # 不是规则名：这一行有拿不准的字符，整个字符串交给整张表

# 数字的前后：前面不是字母数字、也不是 "<数字>."（浮点数的小数部分）；后面不是字母数字、也不是 ".<数字>"。
# 一行的开头和结尾（^ $，多行模式）也算；字符类里都不含 "\n"，所以一个条件永远不会跨到别的行。
_NUMBER_START = rb"(?:^|[^0-9A-Za-z.,\n]|(?:^|[^0-9\n])[.,])"
_NUMBER_END = rb"(?:$|[^0-9A-Za-z.,\n]|[.,](?:$|[^0-9\n]))"
_CARD_GROUPED = (rb"[0-9]{4}[ .-][0-9]{4}[ .-][0-9]{4}[ .-][0-9]{4}(?:[ .-][0-9]{1,3})?"   # 4-4-4-4(-1..3)
                 rb"|[0-9]{4}[ .-][0-9]{6}[ .-][0-9]{5}")                                  # Amex 4-6-5
_CARD_AFTER_WORD = rb"(?:(?i:card)|" + _CARD_WORD + rb")[^0-9\n]{0,20}[0-9]"
_CREDENTIAL_VALUE = rb"""[ \t]*(?:["'`][^\n]|[^\s"'`,;()\[\]{}])"""   # 引号加一个字符，或者不带引号的第一个字符

# (规则名, 条件)；"{issuer}" 换成 s11_redact._CARD_ISSUER（去掉注释和空白）。
CONDITIONS: list[tuple[tuple[str, ...], bytes]] = [
    ((UNSURE,), _UNSURE_BYTES),
    (("private_key",), rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY"),
    (("jwt",), rb"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\."),
    (("slack_webhook",), rb"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20}"),
    (("discord_webhook",), rb"discord(?:app)?\.com/api/webhooks/[0-9]{17}"),
    (("sk_api_key",), rb"(?:^|[^A-Za-z0-9_\n-])sk-[A-Za-z0-9_-]{20}"),
    (("stripe_key",), rb"[rs]k_(?:live|test)_[A-Za-z0-9]{16}"),
    (("aws_access_key",), rb"A(?:KIA|SIA)[0-9A-Z]{16}"),
    (("aws_secret_key",), rb"""(?i:secret)[ _-]?(?:(?i:access)[ _-]?)?(?i:key)["']?[ \t]*[:=][ \t]*["']?[A-Za-z0-9/+]{40}"""),
    (("alibaba_access_key",), rb"LTAI[A-Za-z0-9]{12}"),
    (("google_api_key",), rb"AIza[0-9A-Za-z_-]{35}"),
    (("github_token",), rb"gh[pousr]_[A-Za-z0-9]{30}|github_pat_[A-Za-z0-9_]{30}"),
    (("gitlab_token",), rb"glpat-[A-Za-z0-9_-]{20}"),
    (("huggingface_token",), rb"hf_[A-Za-z0-9]{30}"),
    (("npm_token",), rb"npm_[A-Za-z0-9]{36}"),
    (("slack_token",), rb"xox[abprs]-[A-Za-z0-9-]{15}"),
    (("twilio_api_key",), rb"SK[0-9a-f]{32}"),
    (("digitalocean_token",), rb"do[opr]_v1_[0-9a-f]{64}"),
    (("telegram_bot_token",), rb"[0-9]{8}:[A-Za-z0-9_-]{35}"),
    (("azure_key",), rb"(?:Account|SharedAccess)Key=[A-Za-z0-9+/]{40}"),
    (("azure_sas",), rb"[?&]sig=(?:[A-Za-z0-9+/]|%[0-9A-Fa-f]{2}){20}"),
    (("cookie",), rb"""(?i:cookie)["']?[ \t]*:[ \t]*["']?[^\s=;"']{1,64}=[^\n"']{8}"""),
    (("bearer_token",), rb"(?i:bearer)[ \t]+[A-Za-z0-9._~+/-]{16}"),
    (("auth_header",), rb"""(?i:authorization)["']?[ \t]*[:=][ \t]*["']?(?i:basic|token|digest)[ \t]+[A-Za-z0-9._~+/=-]{8}"""),
    (("url_password",), rb"://[^\n/#@]*:[^\n/#@]+@"),      # 原规则的字符类不含 "?"，这里含：它可能是一个汉字
    (("json_in_json",), rb"""\\+"[A-Za-z0-9_.-]*(?i:pass|secret|token|cookie|key)[A-Za-z0-9_.-]*\\+"[ \t]*:[ \t]*\\+"[^\n\\"]+\\+\""""),
    (("credential",), rb"""(?i:pass|secret|token|key)[A-Za-z0-9_.-]*["']?[ \t]*[:=]""" + _CREDENTIAL_VALUE),
    (("email",), rb"[A-Za-z0-9._%+-]@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2}"),
    (("cn_id_number",), _NUMBER_START + rb"[1-9][0-9]{5}[ -]?(?:18|19|20)[0-9]{2}[ -]?(?:0[1-9]|1[0-2])"
                                       rb"(?:0[1-9]|[12][0-9]|3[01])[ -]?[0-9]{3}[0-9Xx]" + _NUMBER_END),
    (("bank_card",), _NUMBER_START + rb"(?:{issuer}|" + _CARD_GROUPED + rb")" + _NUMBER_END),
    (("bank_card_after_word",), _CARD_AFTER_WORD),
    (("cn_mobile",), rb"(?:" + _NUMBER_START + rb"|86|(?i:tel|phone|mobile))1[3-9][0-9][ .-]?[0-9]{4}[ .-]?[0-9]{4}"
                     + _NUMBER_END),
]


def _options() -> re2.Options:
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1   # 一个字节一个字符，和单字节副本的位置一一对应
    options.never_capture = True
    options.log_errors = False
    return options


def _unverbose(pattern: str) -> bytes:
    """re.VERBOSE 写法的正则去掉注释和空白（RE2 不认 VERBOSE）。只用在不含字面空格和 "#" 的正则上。

    >>> _unverbose("4[0-9]{15}   # Visa\\n | 3[47][0-9]{13}")
    b'4[0-9]{15}|3[47][0-9]{13}'
    """
    return re.sub(r"#[^\n]*|\s+", "", pattern).encode()


def _single_byte(joined: str) -> bytes:
    """joined 的单字节副本。没有要紧的字符时，它就是 encode("ascii", "replace")（每个非 ASCII 字符都成 "?"）：
    这条路在 C 里一口气做完，比逐字查编码表快一倍多，而查一遍那 15 个字符（`in`）很便宜。"""
    if any(char in joined for char in _KEPT):
        return codecs.charmap_encode(joined, "replace", _SINGLE_BYTE)[0]
    return joined.encode("ascii", "replace")


class LineFinder:
    """lines(joined)：joined 里含有某个条件的每一行 (行首位置, 条件出现了的规则名)；规则名里有 UNSURE 时，
    这一行有拿不准的字符。card_issuer：s11_redact._CARD_ISSUER 的写法（VERBOSE）。"""

    def __init__(self, card_issuer: str) -> None:
        issuer = _unverbose(card_issuer)
        conditions = [(names, pattern.replace(b"{issuer}", issuer)) for names, pattern in CONDITIONS]
        self._names = [names for names, _ in conditions]
        self._any = re2.compile(b"(?m)" + b"|".join(pattern for _, pattern in conditions), _options())
        self._every = re2.Set.SearchSet(_options())
        for _, pattern in conditions:
            self._every.Add(b"(?m)" + pattern)
        self._every.Compile()

    def names(self) -> set[str]:
        """有条件的规则名。"""
        return {name for names in self._names for name in names} - {UNSURE}

    def lines(self, joined: str) -> Iterator[tuple[int, frozenset[str]]]:
        buffer = _single_byte(joined)
        named: dict[tuple[int, ...], frozenset[str]] = {}   # 条件的组合不多：同一个组合共用一个集合
        # 条件都不跨行，所以一行里只要有一个条件，_any 就在这一行里找到一个匹配（前一个匹配在上一行里就结束了）。
        # 一行只看一次：同一行里后面的匹配跳过，这一行有哪些条件由 _every 一次说全。
        line_end = -1
        for match in self._any.finditer(buffer):
            start = match.start()
            if start < line_end:
                continue
            line_start = buffer.rfind(b"\n", 0, start) + 1
            line_end = buffer.find(b"\n", start)
            line_end = len(buffer) if line_end == -1 else line_end
            found = self._every.Match(buffer[line_start:line_end])
            # _any 和 _every 是同一组条件：这一行总有一个。万一没有，宁可让这一行跑所有的规则
            numbers = tuple(range(len(self._names)) if found is None else found)
            if numbers not in named:
                named[numbers] = frozenset(name for number in numbers for name in self._names[number])
            yield line_start, named[numbers]
