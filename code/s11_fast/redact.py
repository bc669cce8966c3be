"""s11_fast.redact — s11_redact 的加速：先用几趟便宜的扫描挑出“可能有秘密”的行，规则表只在这些行上跑

    s11_redact.scan_value ──► _find_all(texts)  （accelerate() 给的；S11_PLAIN=1 时是 s11_redact 自己的那个）
        scan_value 本身也换成 accelerate_scan() 给的：先只收文字，找到命中后才给那几处拼路径（见它的文档）
        所有字符串用 "\\n" 连成一段（纯 ASCII 的和其余的各一段）
        → 挑行：装了 google-re2 时，redact_re2.LineFinder 一趟 RE2 找齐所有必要条件，re2.Set 说出每一行有哪几个；
          没装时用本模块的几趟 re：单字节副本（Latin-1 以外的字符变成 "?"，位置不变）上，同一个开头字节的条件
          并成一个正则（_FOLDED_CONDITIONS、_RAW_CONDITIONS），数字骨架里长度和开头几位对得上的一整串数字、
          分好组的号码（_number_rows、_NUMBER_GROUPED），再在原文里找全角数字、İ ı ſ K 和 "卡"
        → 记下条件出现在哪个字符串的哪一行、是哪几行规则的条件（两种挑法挑出的行可以不同，结果一样）
        → 所有字符串里条件相同的行（各带上它前面的 "\\n"，字符串的第一行补一个）拼成一段小文字，只跑一次这几行
          规则（s11_redact._claims）；遮过之后的第二轮，所有字符串有标记的行一起再找一遍条件、只跑找到的那几行
          规则；命中的位置换算回原来的字符串（find 本身还是 s11_redact.find）。

关键洞察：规则表的每一行（私钥除外）都不跨过换行（s11_redact 的文档这样保证），所以一行文字的结果只取决于
这一行本身和它前面的那个 "\\n"：把挑出来的行单独拼起来跑，和在整个字符串上跑，得到的是同样的命中。
导出里的大段工具输出往往只有几行含有任何必要条件，其余的行规则表根本不必看。

两处例外，宁可多带文字：
- 私钥一行跨行（找的是 END 那一行）：条件 "private key" 出现的字符串整个交给 s11_redact.find，每一轮只跑
  在整个字符串里找得到条件的那几行规则（加上 _KEY_NAMES）；
- 卡号的校验会往前看 12 个字符找“订单号”字样（re 的 $ 也认一个结尾的换行），
  行首就是一串像卡号的数字时，上一行整个带上（字样和行尾之间不能有换行，所以再往上的行用不着；
  一行一行往上追，一万行卡号就是平方级的）；遮过之后的下一轮，
  有标记的行后面紧跟着这样一行时，这一行也再看一遍（字样可能被遮掉了）。

保证：结果与 s11_redact._find_all 逐字相同，装没装 google-re2、装的哪个版本都一样（tests/fast/test_redact_fast.py
拿它作 oracle，两种挑法都核对：hypothesis 在规则表的 CASES、数字和杂行拼成的多行字符串上，还有语料和真实的会话样本）。每个必要条件都是“这一行规则能在这一行里
认领到东西，它就一定出现”：多数只看正则的固定部分；数字类的还用到校验函数的两条（裸卡号要有
s11_redact._CARD_ISSUER 的发卡行前缀；手机号以 1[3-9] 开头）——改了这些，要同时改这里，oracle 测试会报出来。
拿不准的字符串一律整个交给规则表：含全角数字的（规则表先换成半角，而且是整个字符串一起换），
含 re 忽略大小写时会当成 ASCII 字母的 İ ı ſ K 的。
RULES 不是内置的那张表（学生加了一行）时，这里不知道新行的必要条件：整个退回 s11_redact.find。
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections import Counter
from collections.abc import Callable
from types import ModuleType

try:   # google-re2：一趟找齐所有必要条件。没装它时用本模块的几趟 re：挑出的行多一些，结果一样
    from s11_fast.redact_re2 import UNSURE as _UNSURE_ROW
    from s11_fast.redact_re2 import LineFinder
except ImportError:
    LineFinder = None
    _UNSURE_ROW = "unsure"   # 不是规则名：字符串里有拿不准的字符，整个交给整张表

# 每行规则的必要条件：(规则名, 正则)。正则的写法固定为：一个开头字节（条件里最不常见的那个字节），
# 也许再跟一个别的字节，其余都是环视断言（"sk-" 写成 k-(?<=sk-)）。同一个开头字节的条件并成一个正则、一趟扫完：
# re 对以固定字符开头的正则直接跳到那个字符，扫一遍的代价几乎只看这个字节有多常见。
# 只吃进开头这一两个字节，是为了不跳过后面另一个条件的开头（"monkey.sk-…=" 里的 sk-）；
# 同一个位置上最多只有一个条件能成立（第二个字节或断言互相排斥；"private key" 除外：它让整个字符串交给规则表）。
# 正则的固定部分小写以后必定出现在小写副本里。
_NAME_THEN_SIGN = rb"""[a-z0-9_.-]{0,64}["']?[ \t]*[:=]"""     # 凭据名字的其余部分，然后是 = 或 :
_FOLDED_CONDITIONS = [   # 在小写副本里找
    (("private_key",), rb"ke(?<=private ke)(?=y)"),          # 排在同一开头的条件前面
    (("slack_webhook",), rb"ks(?<=hooks)(?=\.slack\.com/)"),
    (("discord_webhook",), rb"ks(?<=/api/webhooks)(?=/)"),
    (("sk_api_key",), rb"k-(?<=sk-)(?<![a-z0-9_-]sk-)(?=[a-z0-9_-]{20})"),   # 在单词开头（task- 不算），后面 20 个字符
    (("stripe_key",), rb"k_(?=(?:live|test)_)"),
    (("cookie",), rb"ki(?<=cooki)(?=e)"),
    (("credential",), rb"ke(?<=toke)(?=n" + _NAME_THEN_SIGN + rb")"),
    # "key" 后面跟着 = 或 :，也是 aws_secret_key（…secret_access_key=）和 azure_key（AccountKey=）的必要条件
    (("credential", "aws_secret_key", "azure_key"), rb"ke(?=y" + _NAME_THEN_SIGN + rb")"),
    (("credential",), rb"pa(?=ss" + _NAME_THEN_SIGN + rb")"),
    (("credential",), rb"cr(?<=secr)(?=et" + _NAME_THEN_SIGN + rb")"),
    (("bank_card_after_word",), rb"ca(?=rd)"),                  # 还有 "卡"：在含非 ASCII 字符的字符串里找
    (("email", "url_password"), rb"@"),
    (("json_in_json",), rb'\\"'),
    (("slack_token",), rb"xo(?=x)"),
    (("auth_header",), rb"za(?<=authoriza)(?=tion)"),
    (("bearer_token",), rb"be(?=arer)"),
    (("gitlab_token",), rb"gl(?=pat-)"),
    (("github_token",), rb"gh(?=[pousr]_)"),
    (("github_token",), rb"gi(?=thub_pat_)"),
    (("azure_sas",), rb"g=(?<=sig=)"),
    (("huggingface_token",), rb"_(?<=hf_)"),
    (("npm_token",), rb"_(?<=npm_)"),
    (("digitalocean_token",), rb"_v(?<=do[opr]_v)(?=1_)"),
    (("telegram_bot_token",), rb":(?<=[0-9]{8}:)(?=[a-z0-9_-]{35})"),
]
_RAW_CONDITIONS = [      # 区分大小写的前缀（小写了就到处都是）：在没有小写的字节里找
    (("jwt",), rb"J(?<=eyJ)"),
    (("aws_access_key",), rb"AK(?=IA)"),
    (("aws_access_key",), rb"AS(?=IA)"),
    (("google_api_key",), rb"AI(?=za)"),
    (("alibaba_access_key",), rb"LT(?=AI)"),
    (("twilio_api_key",), rb"K(?<=SK)(?=[0-9a-f]{32})"),
]
_WHOLE_STRING = "private_key"   # 唯一会跨行的一行：条件出现了，就把整个字符串交给规则表
# "private ke" 那个位置上，以 "ke" 开头的别的条件被它挡住了（同一个正则里只有一支能成立）：这几行一起跑
_KEY_NAMES = {"private_key", "credential", "aws_secret_key", "azure_key"}


def _by_first_byte(conditions: list[tuple[tuple[str, ...], bytes]]) -> list[tuple[re.Pattern[bytes], dict[str, tuple]]]:
    """同一个开头字节的条件并成一个正则 <开头字节>(?:<第二个字节>(?P<c0>…)|…)：[(正则, {组名: 规则名})]。
    开头字节写在分组外面，re 才认得出这个正则以固定字符开头；第二个字节写在组的前面，re 才能一眼否决那些分支。

    >>> [(pattern.pattern, named) for pattern, named in _by_first_byte([(("a",), b"k-(?<=sk-)"), (("b",), b"ke(?=y)")])]
    [(b'k(?:-(?P<c0>(?<=sk-))|e(?P<c1>(?=y)))', {'c0': ('a',), 'c1': ('b',)})]
    """
    groups: dict[bytes, list[tuple[tuple[str, ...], bytes]]] = {}
    for names, pattern in conditions:
        first = pattern[:2] if pattern.startswith(b"\\") else pattern[:1]    # 转义的字符占两个字节
        groups.setdefault(first, []).append((names, pattern[len(first):]))
    combined = []
    for first, members in groups.items():
        named = {f"c{number}": names for number, (names, _) in enumerate(members)}
        rest = b"|".join(_literal_then_group(pattern, number) for number, (_, pattern) in enumerate(members))
        combined.append((re.compile(first + b"(?:" + rest + b")"), named))
    return combined


def _literal_then_group(pattern: bytes, number: int) -> bytes:
    second = b"" if pattern[:1] in (b"", b"(") else pattern[:1]
    return second + b"(?P<c%d>%s)" % (number, pattern[len(second):])


_FOLDED = _by_first_byte(_FOLDED_CONDITIONS)
_RAW = _by_first_byte(_RAW_CONDITIONS)
# 数字类的行，在数字骨架里找（数字 → "0"，空格和 - → "-"，"." "," "+" "x" 不变，其余 → " "）：
# 不分组的号码是前后都不挨着数字的一整串（后顾断言和 _NUMBER_END 保证的），长度和开头的几位决定它可能是哪一种（_number_rows）；
# 分组的号码（3-4-4、4-4-4-4、4-6-5、6-8-4、6-4-4-4、14-4……）都含有 "0000-000"，三行都要跑。
# 日志里的 13 位毫秒时间戳、12 和 14 位的数字、没有发卡行前缀的订单号不是任何一种，不必交给规则表。
# （卡号字样后面的卡号那一行，条件是 "card" 或 "卡" 这个词本身。）
_NUMBER_RULES = ("cn_id_number", "bank_card", "cn_mobile")
# 11 位，15 位以上，或 + 后面的 13 位（12、14 位不会是任何一种）；紧跟在 "<数字>." 或 "<数字>," 后面的是浮点数的
# 小数部分（loss=0.0003032226645370183），三行都不认——除非其中有 0086 后面的手机号：_MOBILE_AFTER_0086 另找。
_NUMBER_RUN = re.compile(
    rb"00000000000(?<!000000000000)(?<!0[.,]00000000000)(?:(?:0000+)?(?!0)|00(?<=\+0000000000000)(?!0))")
_MOBILE_AFTER_0086 = re.compile(rb"0086(?=1[3-9][0-9](?:[0-9]{8}|[ .-][0-9]{4}[ .-][0-9]{4})(?![0-9]))")


def _number_rows(folded: bytes, start: int, end: int, card_issuer: re.Pattern[bytes] | None) -> tuple[str, ...]:
    """folded[start:end] 是一整串数字（11 位、15 位以上，或 + 后面的 13 位）：哪几行规则可能认领它。
    手机号以 1[3-9] 开头：11 位的整串，+86 后面（13 位的后 11 位），或者 0086 后面（任意长的一串的最后 11 位）；
    身份证号是 18 位（或 17 位 + X），第 7、8 位是 18、19 或 20；
    15–19 位的裸卡号要有已知的发卡行前缀（card_issuer 是 s11_redact._CARD_ISSUER 的字节版；None = 不查）。"""
    length, rows = end - start, []
    mobile = start if length == 11 else start + 2 if length == 13 else end - 11
    if folded[mobile] == ord("1") and folded[mobile + 1] in b"3456789" and \
            (length <= 13 or folded[mobile - 4:mobile] == b"0086"):
        rows.append("cn_mobile")
    if 15 <= length <= 19 and (card_issuer is None or card_issuer.fullmatch(folded, start, end)):
        rows.append("bank_card")
    if length in (17, 18) and folded[start + 6:start + 8] in (b"18", b"19", b"20"):   # 17 位 + X 也是
        rows.append("cn_id_number")
    return tuple(rows)


# 每一种分好组的号码都含有 "0000-000" 再跟一个数字或 x（卡号、Amex、手机号里的 "0000-0000"，身份证号 6-4-4-4 的
# 某个分隔处，或只在最后分组时的 "0000-000x"）：日志里的 "<一串数字> 200 86.1" 没有，不必一一细看。
# 找到它就连同它右边的整串数字和分隔符一起吃进（一串 UUID 只算一处），
_NUMBER_GROUP_RUN = re.compile(rb"0000[-.]000[0x][0.-]*")
# ……再看它附近是不是真有一个分好了组的号码：前后不再挨着数字，每组的位数对得上（全是数字的 UUID 8-4-4-4-12、
# 浮点数时间戳 1732867200.123456 都不是）。卡号 4-4-4-4(-1..3)、Amex 4-6-5、手机号 3-4-4（前面可以是 +86），
# 身份证号 6-4-4-4（每个分隔都可有可无，至少有一个）；0086 后面的手机号由 _MOBILE_AFTER_0086 另找。
_NUMBER_GROUPED = re.compile(   # 每一支都从号码的第一个数字开始：正则以字面的 0 打头，re 只在数字上尝试
    rb"0(?:(?<!00)(?:000[-.]0000[-.]0000[-.]0000(?:[-.]0{1,3})?"           # 卡号 4-4-4-4(-1..3)
    rb"|000[-.]000000[-.]00000"                                              # Amex 4-6-5
    rb"|00[-.]0000[-.]0000"                                                  # 手机号 3-4-4
    rb"|00000(?:[-.]0000[-.]?0000[-.]?|0000(?:[-.]0000[-.]?|0000[-.]))000[0x])"   # 身份证号 6-4-4-4，至少一个分隔
    rb"|(?<=\+000)00[-.]0000[-.]0000)(?!0)")                                # +86 后面的手机号 3-4-4
_SKELETON = bytes(ord("0") if byte in b"0123456789" else ord("-") if byte in b" -" else
                  byte if byte in b".,+x" else ord(" ") for byte in range(256))
# 拿不准就交给规则表：全角数字，以及 re 忽略大小写时会当成 ASCII 字母的字符（测试在全部 Unicode 上核对这份名单）
_UNSURE = re.compile("[０-９İıſ\u212a]")
_UNSURE_OR_CARD_WORD = re.compile(_UNSURE.pattern + "|卡")   # 一趟同时找 bank_card_after_word 的 "卡"
# 行首能不能开始一个卡号（15 个以上的数字，中间最多隔一个空格、点或短横线）：能的话，校验要看上一行的末尾
_CARD_AT_LINE_START = re.compile(r"(?:[0-9][ .-]?){15}")


def _covered() -> set[str]:
    """有必要条件的规则名。"""
    conditions = _FOLDED_CONDITIONS + _RAW_CONDITIONS
    return {name for names, _ in conditions for name in names} | set(_NUMBER_RULES)


class _Lines:
    """一个字符串里要交给规则表的地方：lines = {行首位置: 条件出现了的规则名}；whole = 整个字符串、整张表；
    key = 有私钥的条件：整个字符串交给规则表，但只跑条件出现了的那几行规则（加上 _KEY_NAMES）。"""

    def __init__(self) -> None:
        self.lines: dict[int, frozenset[str]] = {}
        self.whole = False
        self.key = False

    def names(self) -> set[str]:
        return set().union(*self.lines.values())


def accelerate(plain: ModuleType, native: bool = True) -> Callable[[list[str]], dict[int, list[tuple[int, int, str]]]]:
    """plain 是 s11_redact 模块本身（它在自己的最后一行调用这里：本模块从不 import 它，层次只有一个方向）。
    返回它的 _find_all 的加速版：{下标: plain.find(t)}（只列出有命中的），只在挑出来的行上跑规则表。
    native：装了 google-re2 就用它一趟找齐必要条件（redact_re2）；False 或没装 = 本模块的几趟 re，结果一样。"""
    built_in = tuple(plain.RULES)
    card_issuer = re.compile(plain._CARD_ISSUER.pattern.encode(), plain._CARD_ISSUER.flags & ~re.UNICODE)
    finder = LineFinder(plain._CARD_ISSUER.pattern) if native and LineFinder is not None else None
    names = {rule.name for rule in built_in}
    if names != _covered() or (finder is not None and names != finder.names()):   # 有一行这里不认识：不加速
        return plain._find_all

    def rules_for(names: set[str]) -> list:
        return [rule for rule in built_in if rule.name in names]

    def claims_in_lines(places: list[tuple[str, list[int]]], names: set[str] | None) -> list[list[tuple[int, int, str]]]:
        """对 places 里的每个 (text, lines)：plain._claims(text) 落在 lines（行首位置）那些行里的命中。
        所有这些行（和它们要带上的上文）拼成一段小文字，只跑一次规则表，再换算回各自 text 的位置。
        每段都以一个 "\n" 开头（字符串开头的那段补两个：一个 "\n" 挡不住往前看的校验——正则的 $ 也在末尾的
        "\n" 之前成立，卡号前 12 个字符里的“订单号”字样就会从前一段读过来），所以哪一段的规则都看不到前一段的文字。
        names：要跑的规则；None = 在拼好的这段文字里找一遍必要条件，只跑条件出现了的那几行（条件不跨行，
        所以在这段里找到的就是这些行里的）。"""
        pieces, starts, owners, size = [], [], [], 0      # owners：这一段属于 places 的第几个、位置差多少
        for number, (text, lines) in enumerate(places):
            for start, end in _pieces(text, lines):
                prefix = "" if start else "\n\n"
                pieces.append(prefix + text[start:end])
                starts.append(size)
                owners.append((number, start - len(prefix) - size))
                size += len(pieces[-1])
        wanted = [set(lines) for _, lines in places]
        found: list[list[tuple[int, int, str]]] = [[] for _ in places]
        joined = "".join(pieces)
        for start, end, label in scanned_claims(joined) if names is None else plain._claims(joined, rules_for(names)):
            number, shift = owners[bisect.bisect_right(starts, start) - 1]   # 命中从不跨过一行，所以落在一段里
            text = places[number][0]
            if text.rfind("\n", 0, start + shift) + 1 in wanted[number]:     # 带上的上文里的命中归它自己那一行去算
                found[number].append((start + shift, end + shift, label))
        return found

    def scanned_claims(text: str) -> list[tuple[int, int, str]]:
        """plain._claims(text)，只跑在 text 里找得到必要条件的那几行规则（其余的行在这里什么也认领不到，
        跑不跑结果都一样）；拿不准的字符（全角数字等）在的时候跑整张表。"""
        found = _scan([text], card_issuer, finder).get(0)
        if found is None:
            return []
        if found.whole:
            return plain._claims(text)
        return plain._claims(text, rules_for(found.names() | (_KEY_NAMES if found.key else set())))

    def first_round(texts: list[str], chosen: dict[int, _Lines]) -> dict[int, list[tuple[int, int, str]]]:
        """挑出来的每个字符串（整个交给规则表的除外）第一轮的命中：所有字符串里条件相同的行拼在一起，只跑这些条件
        对应的规则（一行里没有条件的规则在这一行什么也找不到，跑不跑都一样）。"""
        same_rows: dict[frozenset[str], dict[int, list[int]]] = {}
        for index, lines in chosen.items():
            for line, names in ({} if lines.whole or lines.key else lines.lines).items():
                same_rows.setdefault(frozenset(names), {}).setdefault(index, []).append(line)
        found: dict[int, list[tuple[int, int, str]]] = {index: [] for index, lines in chosen.items()
                                                        if not (lines.whole or lines.key)}
        for names, by_text in same_rows.items():
            places = [(texts[index], lines) for index, lines in by_text.items()]
            for index, claims in zip(by_text, claims_in_lines(places, names)):
                found[index] += claims
        return {index: sorted(claims) for index, claims in found.items()}

    def second_round(texts: list[str], first: dict[int, list]) -> dict[int, tuple[str, list[tuple[int, int, str]]]]:
        """第一轮有命中的每个字符串：遮好的文字和它第二轮的命中（只看有标记的行，见 find_in_lines）。
        所有字符串的这些行一起跑一次，而不是每个字符串各找一遍条件、各跑一遍规则。"""
        masked = {index: plain._apply(texts[index], claims, Counter()) for index, claims in first.items() if claims}
        places = [(text, _marked_lines(text, plain._MARKER_START)) for text in masked.values()]
        return {index: (text, claims) for (index, text), claims in zip(masked.items(), claims_in_lines(places, None))}

    def find_in_lines(text: str, first: list[tuple[int, int, str]],
                      second: tuple[str, list[tuple[int, int, str]]] | None) -> list[tuple[int, int, str]]:
        """plain.find(text)，第一轮的命中已经有了（first_round），第二轮的多半也有了（second_round）。后几轮只看
        有标记的行（别的行一个字都没变，上一轮在它们里面什么也没找到，这一轮也一样），在这几行上只跑找得到
        必要条件的那几行规则。"""
        def claims(masked: str) -> list[tuple[int, int, str]]:
            if masked is text:
                return first
            if second is not None and masked == second[0]:
                return second[1]
            return claims_in_lines([(masked, _marked_lines(masked, plain._MARKER_START))], None)[0]
        return plain.find(text, claims)

    def find_one(text: str, lines: _Lines, first: list | None, second: tuple | None) -> list[tuple[int, int, str]]:
        if lines.whole:
            return plain.find(text)
        if lines.key:                          # 私钥跨行：整个字符串一起找
            return plain.find(text, scanned_claims)
        return find_in_lines(text, first or [], second)

    def find_all(texts: list[str]) -> dict[int, list[tuple[int, int, str]]]:
        if tuple(plain.RULES) != built_in:   # 学生改过规则表：新行的必要条件这里不知道
            return {index: found for index, text in enumerate(texts) if (found := plain.find(text))}
        chosen = _candidates(texts, card_issuer, finder)
        first = first_round(texts, chosen)
        second = second_round(texts, first)
        found = {index: find_one(texts[index], chosen[index], first.get(index), second.get(index))
                 for index in sorted(chosen)}
        return {index: spans for index, spans in found.items() if spans}
    return find_all


def accelerated(plain: ModuleType) -> tuple[Callable, Callable]:
    """s11_redact 在它的最后几行换上的两个函数：(_find_all, scan_value) 的加速版。"""
    find_all = accelerate(plain)
    return find_all, accelerate_scan(plain, find_all)


def accelerate_scan(plain: ModuleType, find_all: Callable[[list[str]], dict]) -> Callable[[object], list]:
    """plain.scan_value 的加速版（find_all 是上面 accelerate() 给的，或朴素的 _find_all）：结果逐项相同。

    朴素的 scan_value 先用 places() 给每一处文字建好 (路径, 部分, 文字, 凭据) 和它的路径元组——一个 20 MB 的会话
    有几万处，有命中的往往只有几十处。这里走两趟：
    1. _texts：只收文字（和凭据名字下的字符串的编号），不给字符串建任何元组；每个容器记下一对数：它走完时数到了
       第几处文字、第几个容器（ends，按进入的先后）；
    2. _paths：再走一遍，只给有命中的那几处拼出路径；一个容器里没有要找的编号，就按 ends 整个跳过。
    走的顺序、数的编号都与 plain.places() 一样（tests/fast 在生成的值和真实样本上拿朴素的作 oracle）。"""
    def scan_value(value: object) -> list:
        texts: list[str] = []
        named: list[int] = []
        ends: list[tuple[int, int]] = []
        _texts(value, False, texts, named, ends, {})
        hits = find_all(texts)
        for index in set(named) - hits.keys():   # 名字说它是凭据，值又不是引用：整个遮住（同 plain.scan_value）
            text = texts[index]
            if text.strip() and not plain._is_reference(text.strip()) and plain._MARKER_START not in text:
                hits[index] = [(0, len(text), plain._CREDENTIAL_LABEL)]
        if not hits:
            return []
        hits = dict(sorted(hits.items()))
        found: list[tuple] = []
        _paths(value, (), _HERE, False, [*hits, len(texts)], ends, [0, 0], found)   # 末尾一个永远数不到的编号
        return [plain.Finding(path, part, start, end, label, text)
                for (path, part, text, _), spans in zip(found, hits.values()) for start, end, label in spans]

    def _texts(item: object, credential: bool, texts: list, named: list, ends: list, names: dict) -> None:
        if isinstance(item, str):
            if credential:
                named.append(len(texts))
            texts.append(item)
        elif isinstance(item, dict):
            number = len(ends)
            ends.append((0, 0))
            for key, child in item.items():
                is_name = isinstance(key, str)
                if is_name:
                    texts.append(key)
                    if key not in names:   # 这一趟里判断过的键名，各只判断一次（同 plain._collect）
                        names[key] = plain._is_credential_name(key)
                _texts(child, is_name and names[key], texts, named, ends, names)
            ends[number] = (len(texts), len(ends))
        elif isinstance(item, (list, tuple)):
            number = len(ends)
            ends.append((0, 0))
            for child in item:
                _texts(child, False, texts, named, ends, names)
            ends[number] = (len(texts), len(ends))
        elif plain._is_big_number(item):
            texts.append(plain._number_text(item))

    def _paths(item: object, parent: tuple, step: object, credential: bool, wanted: list[int], ends: list,
               count: list[int], found: list) -> None:
        """found 里依次放进编号在 wanted（排好序，最后一个是数不到的文字总数）里的那些位置；
        count = [已数过的文字, 已进入的容器]。item 的路径 parent + (step,) 只在要用时才拼。"""
        if isinstance(item, str) or (not isinstance(item, (dict, list, tuple)) and plain._is_big_number(item)):
            if count[0] == wanted[len(found)]:
                text = item if isinstance(item, str) else plain._number_text(item)
                found.append((parent if step is _HERE else parent + (step,), "value", text,
                              credential and isinstance(item, str)))
            count[0] += 1
            return
        if not isinstance(item, (dict, list, tuple)):
            return
        text_end, container_end = ends[count[1]]
        count[1] += 1
        if wanted[len(found)] >= text_end:   # 这个容器里一处要找的都没有：整个跳过
            count[0], count[1] = text_end, container_end
            return
        path = parent if step is _HERE else parent + (step,)
        children = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in children:
            is_name = isinstance(item, dict) and isinstance(key, str)
            if is_name:
                if count[0] == wanted[len(found)]:
                    found.append((path + (key,), "key", key, False))
                count[0] += 1
            _paths(child, path, key, is_name and plain._is_credential_name(key), wanted, ends, count, found)
            if len(found) == len(wanted) - 1:   # 全找到了：其余的不必再走（外面的各层也就此返回）
                return

    return scan_value


_HERE = object()   # _paths 的 step：item 的路径就是 parent 本身（根）


def _pieces(text: str, lines) -> list[tuple[int, int]]:
    """要跑的各段 (start, end)：每段是连着的几行，从它前面的 "\\n" 开始（字符串开头的那行从 0 开始），
    到行尾为止（不含下一个 "\\n"）。行首像卡号的，连上一行一起（见模块文档）。

    >>> _pieces("ab\\ncd\\nef\\ngh", {3: set(), 9: set()})
    [(2, 5), (8, 11)]
    """
    pieces: list[tuple[int, int]] = []
    for line in sorted(lines):
        first = line
        if first > 0 and _CARD_AT_LINE_START.match(text, first):   # 只要上一行：字样后面不能再有换行
            first = text.rfind("\n", 0, first - 1) + 1
        start, end = max(first - 1, 0), text.find("\n", line)
        end = len(text) if end == -1 else end
        while pieces and start <= pieces[-1][1]:    # 挨着或重叠的段并成一段
            before_start, before_end = pieces.pop()
            start, end = min(start, before_start), max(end, before_end)
        pieces.append((start, end))
    return pieces


def _marked_lines(text: str, marker: str) -> list[int]:
    """含有 marker 的那些行的行首位置，以及紧跟其后、行首像卡号的那一行：卡号的校验往前看 12 个字符找
    “订单号”字样，上一行遮过之后，这个字样可能已经不在了（'password="订单："' 整个是一处凭据）。

    >>> _marked_lines("a\\nb [m] [m]\\nc\\n[m]\\n4111111111111111", "[m")
    [2, 14, 18]
    """
    lines, position = [], text.find(marker)
    while position != -1:
        lines.append(text.rfind("\n", 0, position) + 1)
        end = text.find("\n", position)
        if end != -1 and _CARD_AT_LINE_START.match(text, end + 1):
            lines.append(end + 1)
        position = -1 if end == -1 else text.find(marker, end)
    return lines


def _grouped_number_near(skeleton: bytes, start: int, end: int) -> bool:
    """skeleton[start:end] 是从一个 "0000-000" 起、到这一串数字和分隔符的末尾：附近有没有一个真正分好组的号码
    （有就把这一行交给数字类的规则）。号码最长 23 个字符、含有这串里的某个 "0000-000"，所以它起于 start 前
    15 个字符以内，止于 end 后 1 个字符以内（"x"）；再给环视断言留几个字符。"""
    return bool(_NUMBER_GROUPED.search(skeleton, max(start - 24, 0), end + 8))


_HOPS = 1000   # 开头字节出现过这么多次以后，剩下的交给 re 自己扫


def _matches(pattern: re.Pattern[bytes], buffer: bytes):
    """pattern.finditer(buffer)。开头字节不常见时，用 bytes.find 跳到它（memchr，比 re 逐字节地扫快得多），
    在那里试 pattern.match；跳了 _HOPS 次还没扫完（这个字节其实很常见），剩下的交给 finditer。"""
    anchor = pattern.pattern[1:2] if pattern.pattern.startswith(b"\\") else pattern.pattern[:1]
    position = buffer.find(anchor)
    for _ in range(_HOPS):
        if position == -1:
            return
        match = pattern.match(buffer, position)
        if match:
            yield match
        position = buffer.find(anchor, match.end() if match else position + 1)
    if position != -1:
        yield from pattern.finditer(buffer, position)


def _candidates(texts: list[str], card_issuer: re.Pattern[bytes] | None = None, finder=None) -> dict[int, _Lines]:
    """可能有命中的字符串的下标 → 它里面出现了必要条件的那些行，和每行出现的是哪几行规则的条件。
    纯 ASCII 的字符串和其余的分开扫：ASCII 的连起来还是单字节的 str，编码只是复制；混在一起就整段变宽。"""
    chosen: dict[int, _Lines] = {}
    ascii_flags = list(map(str.isascii, texts))
    for flags in (ascii_flags, [not flag for flag in ascii_flags]):
        indexes = list(itertools.compress(range(len(texts)), flags))
        found = _scan(list(itertools.compress(texts, flags)), card_issuer, finder)
        chosen.update((indexes[number], lines) for number, lines in found.items())
    return chosen


def _scan(texts: list[str], card_issuer: re.Pattern[bytes] | None, finder=None) -> dict[int, _Lines]:
    """_candidates 的一组字符串。finder：redact_re2.LineFinder（一趟 RE2 找齐所有条件）；None = 下面那几趟 re。
    没有哪个必要条件含换行，所以用 "\n" 连起来不会跨过两个字符串。"""
    joined = "\n".join(texts)
    ends: list[int] = []   # 各字符串之后那个换行的下一位；用到时才算（多数的组一行也挑不出来）
    chosen: dict[int, _Lines] = {}

    def take(position: int, names) -> None:
        """position 所在的那一行记下这几行规则；私钥（跨行）和拿不准的字符记在整个字符串上。"""
        if not ends:
            ends.extend(itertools.accumulate(len(text) + 1 for text in texts))
        index = bisect.bisect_right(ends, position)
        begin = ends[index - 1] if index else 0
        lines = chosen.get(index) or chosen.setdefault(index, _Lines())
        lines.key |= _WHOLE_STRING in names
        lines.whole |= _UNSURE_ROW in names
        line = (joined.rfind("\n", begin, position) + 1 or begin) - begin
        before = lines.lines.get(line)
        lines.lines[line] = frozenset(names) if before is None else before.union(names)

    if finder is not None:
        for line_start, names in finder.lines(joined):
            take(line_start, names)
        return chosen
    _find_conditions(joined, card_issuer, take)
    # str.isascii() 不用扫描：只在含非 ASCII 字符的字符串里找全角数字和那几个字母
    begin = 0                                       # 这个字符串在 joined 里从哪里开始
    for text in [] if joined.isascii() else texts:
        if not text.isascii():                      # "卡" 在单字节副本里成了 "?"：在原文里找
            for match in _UNSURE_OR_CARD_WORD.finditer(text):
                if match.group() != "卡":
                    take(begin + match.start(), (_UNSURE_ROW,))
                    break
                take(begin + match.start(), ("bank_card_after_word",))
        begin += len(text) + 1
    return chosen


def _find_conditions(joined: str, card_issuer: re.Pattern[bytes] | None, take: Callable[[int, tuple], None]) -> None:
    """没有 RE2 时的必要条件：每个开头字节一趟 re，再加数字骨架上的几趟；每处出现交给 take。"""
    # 单字节副本：Latin-1 以外的字符变成 "?"，一个字符一个字节，位置不变
    encoded = joined.encode("latin-1", "replace")
    folded = encoded.lower()
    for buffer, combined in ((folded, _FOLDED), (encoded, _RAW)):
        for pattern, named in combined:
            for match in _matches(pattern, buffer):
                take(match.start(), named[match.lastgroup])
    skeleton = folded.translate(_SKELETON)
    for match in _NUMBER_RUN.finditer(skeleton):
        rows = _number_rows(folded, match.start(), match.end(), card_issuer)
        if rows:
            take(match.start(), rows)
    for match in _NUMBER_GROUP_RUN.finditer(skeleton):
        if _grouped_number_near(skeleton, match.start(), match.end()):
            take(match.start(), _NUMBER_RULES)
    for match in _MOBILE_AFTER_0086.finditer(folded):
        take(match.start(), ("cn_mobile",))
