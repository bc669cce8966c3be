"""s11_fast.redact — s11_redact 的加速：先用几趟便宜的扫描挑出“可能有秘密”的字符串，规则表只在它们上面跑

    s11_redact.scan_value ──► _find_all(texts)  （accelerate() 给的；S11_PLAIN=1 时是 s11_redact 自己的 [find(t) …]）
        所有字符串用 "\\n" 连成一段 → 一份单字节的小写副本（Latin-1 以外的字符变成 "?"，位置不变）
        → 每行规则的“必要条件”在副本里各找一遍：固定的字符串（"eyj"、"sk-"、"://"、"@"…）、
          凭据的 "<敏感词><名字>=" 形状、数字骨架里 11 位连着的数字或 "0000-0000" 分组……
        → 含有任何一个的字符串交给 s11_redact.find，每一轮只跑条件出现了的那几行；其余的字符串一处都不会有。

关键洞察：导出的绝大多数字符串（代码、日志、闲聊）一个必要条件都不含；判断这一点用 bytes.find 扫几遍副本，
比让 31 条正则各自扫一遍全部文字、每个字符串各调用 31 次要便宜得多。

保证：结果与 s11_redact 的 [find(t) for t in texts] 逐字相同（tests/fast/test_redact_fast.py 拿它作 oracle）。
每个必要条件都是“这一行能在这个字符串里匹配，它就一定出现”；拿不准的字符串一律交给规则表：
含全角数字的（规则表先换成半角），含 re 忽略大小写时会当成 ASCII 字母的 İ ı ſ K 的。
RULES 不是内置的那张表（学生加了一行）时，这里不知道新行的必要条件：整个退回 s11_redact.find。
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Callable
from types import ModuleType

# 每行规则的必要条件，在小写副本里找（规则名 → 要找的字节串）。正则的固定部分小写以后必定出现在副本里。
_NEEDLES = {
    "private_key": [b"private key"], "jwt": [b"eyj"], "slack_webhook": [b"hooks.slack.com/"],
    "discord_webhook": [b"/api/webhooks/"], "sk_api_key": [b"sk-"],
    "aws_access_key": [b"akia", b"asia"], "alibaba_access_key": [b"ltai"], "google_api_key": [b"aiza"],
    "gitlab_token": [b"glpat-"],
    "huggingface_token": [b"hf_"], "npm_token": [b"npm_"], "slack_token": [b"xox"], "digitalocean_token": [b"_v1_"],
    "azure_key": [b"key="], "azure_sas": [b"sig="], "cookie": [b"cookie"], "bearer_token": [b"bearer"],
    "auth_header": [b"authorization"], "url_password": [b"://"], "json_in_json": [b'\\"'], "email": [b"@"],
}
# 只写固定字符串会太宽的行：用与那一行同样结构、但以固定文字开头的正则（re 能直接跳到它）
_SHAPES = {
    "credential": [re.compile(word + rb"""(?=([a-z0-9_.-]{0,64}))\1["']?[ \t]*[:=]""")
                   for word in (rb"pass", rb"secret", rb"token", rb"key")],
    "aws_secret_key": [re.compile(rb"secret[ _-]?(?:access[ _-]?)?key")],
    "github_token": [re.compile(rb"g(?:h[pousr]_|ithub_pat_)")],    # 一趟代替六次 find
    "stripe_key": [re.compile(rb"k_(?:live|test)_")],
    "telegram_bot_token": [re.compile(rb":(?<=[0-9]{8}:)[a-z0-9_-]{35}")],
}
# 数字类的行：数字骨架（数字 → "0"，空格 . - → "-"，其余 → " "）里 11 位连着的数字，或 "0000-0000" 这样的分组。
# 手机号 11 位或 3-4-4 分组，卡号 15–19 位或 4-4-4-4 / 4-6-5，身份证号 18 位或 6-8-4 / 6-4-4-4：都至少含其中一个。
_NUMBER_RULES = ("cn_id_number", "bank_card", "bank_card_after_word", "cn_mobile")
_NUMBER_SHAPES = (b"0" * 11, b"0000-0000")
_SKELETON = bytes(ord("0") if byte in b"0123456789" else ord("-") if byte in b" .-" else ord(" ") for byte in range(256))
# 区分大小写也不常见、小写了就到处都是的前缀：在原文里找
_EXACT = {"twilio_api_key": ["SK"]}
# 拿不准就交给规则表：全角数字，以及 re 忽略大小写时会当成 ASCII 字母的字符（测试在全部 Unicode 上核对这份名单）
_UNSURE = re.compile("[０-９İıſ\u212a]")


def accelerate(plain: ModuleType) -> Callable[[list[str]], list[list[tuple[int, int, str]]]]:
    """plain 是 s11_redact 模块本身（它在自己的最后一行调用这里：本模块从不 import 它，层次只有一个方向）。
    返回它的 _find_all 的加速版：[plain.find(t) for t in texts]，只在挑出来的字符串上跑规则表。"""
    built_in = tuple(plain.RULES)
    covered = set(_NEEDLES) | set(_SHAPES) | set(_EXACT) | set(_NUMBER_RULES)
    if {rule.name for rule in built_in} != covered:   # 内置表里有一行这里不认识：不加速
        return plain._find_all

    def claims(text: str) -> list[tuple[int, int, str]]:
        """plain._claims(text)，只跑条件在 text 里出现了的那几行（别的行在这里匹配不到任何东西）。
        find 的每一轮都用它：遮过之后的文字再看一次条件。"""
        names = _candidates([text]).get(0)
        if not names:
            return []
        return plain._claims(text, None if names is _EVERY else [rule for rule in built_in if rule.name in names])

    def find_all(texts: list[str]) -> list[list[tuple[int, int, str]]]:
        if tuple(plain.RULES) != built_in:   # 学生改过规则表：新行的必要条件这里不知道
            return [plain.find(text) for text in texts]
        chosen = _candidates(texts)
        return [plain.find(text, claims) if index in chosen else [] for index, text in enumerate(texts)]
    return find_all


_EVERY = frozenset({"*"})   # 拿不准的字符串：整张表都跑


def _candidates(texts: list[str]) -> dict[int, frozenset[str] | set[str]]:
    """可能有命中的字符串的下标 → 在它里面出现了必要条件的那些行的名字。"""
    joined = "\n".join(texts)                       # 没有哪个必要条件含换行，所以不会跨过两个字符串
    ends = list(itertools.accumulate(len(text) + 1 for text in texts))   # 各字符串之后那个换行的下一位
    folded = joined.encode("latin-1", "replace").lower()
    chosen: dict[int, frozenset[str] | set[str]] = {}

    def take(position: int, names) -> int:
        """position 所在的字符串记下这几行；返回它的末尾：同一个字符串里的其余出现不必再找。"""
        index = bisect.bisect_right(ends, position)
        rows = chosen.setdefault(index, set())
        if rows is not _EVERY:
            rows.update(names)
        return ends[index]

    for name, needles in _NEEDLES.items():
        for needle in needles:
            position = folded.find(needle)
            while position != -1:
                position = folded.find(needle, take(position, (name,)))
    for name, patterns in _SHAPES.items():
        for pattern in patterns:
            match = pattern.search(folded)
            while match:
                match = pattern.search(folded, take(match.start(), (name,)))
    skeleton = folded.translate(_SKELETON)
    for shape in _NUMBER_SHAPES:
        position = skeleton.find(shape)
        while position != -1:
            position = skeleton.find(shape, take(position, _NUMBER_RULES))
    for name, literals in _EXACT.items():
        for literal in literals:
            position = joined.find(literal)
            while position != -1:
                position = joined.find(literal, take(position, (name,)))
    # str.isascii() 不用扫描：只在含非 ASCII 字符的字符串里找全角数字和那几个字母
    chosen.update((index, _EVERY) for index, text in enumerate(texts) if not text.isascii() and _UNSURE.search(text))
    return chosen
