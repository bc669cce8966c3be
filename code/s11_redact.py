"""s11_redact — 导出和备份前的脱敏：一张按顺序执行的规则表。

    text ──► RULES：每一行 Rule(name, label, pattern, validator, hints)
               hints      先便宜地圈出“可能在哪”：含 "bearer" 的行、以 sk- 开头的长单词、15 位以上的数字串…
               pattern    只在这些窗口里跑正则，找“长得像”的候选（有名为 secret 的组时只遮这一组）
               validator  否决“长得像但不是”的：校验位、Luhn、发卡行前缀、上下文（订单号、token=token）
         ──► 各行认领的区间，重叠时排在前面的行胜出 ──► [已脱敏:<label>] + {label: count}

Key insight: 正则只负责“长得像”，校验函数和上下文负责“真的是”，而速度来自先便宜地排除——绝大多数行
根本不含 "bearer"、"sk-" 或一长串数字，这些行上昂贵的正则一次也不必运行。

Extending: 在 RULES 里插入一行 Rule（越具体越靠前）。hints 可以不写（整段文本都扫描，只是慢些）；
要写就写每个命中所在的行都必然包含的字符串（任意大小写都算），或用 word_starting("前缀_") 表示
“以固定前缀开头的长令牌”。再在 tests/test_redact.py 的 CASES 里给它一个真阳性和一个假阳性样例：
测试会检查每一行都有，并把整张表去掉 hints 再跑一遍，确认 hints 没有漏掉任何命中。

Guarantees:
- Every row looks at the same original text; where two rows claim overlapping text the earlier row
  wins (a JWT after "Bearer" is labelled JWT, a key after API_KEY= is labelled by its own shape).
- Hints change the speed, never the result.
- redact() is idempotent: a marker is never claimed, and if a mask unblocks another row next to it
  (a lookaround that now sees "]"), the table is applied again until nothing changes.
- redact_value() returns a deep copy and never mutates its input; dict keys are kept.
- Linear time: no pattern backtracks quadratically, whatever the input.
- Speed: 1.7–1.9× one regular-expression pass on 5 MB of realistic text (benchmarks/bench_redact.py).

Out of scope: names, street addresses and free-form secrets ("密码是 hunter2") — they need context,
not patterns; secrets split across messages; non-mainland phone and ID formats; full-width digits
outside mobile numbers; a bare 15–19 digit number with no card word, no grouping and no issuer prefix
(it is an order number until proven otherwise); a bare word after a lower-case name outside YAML
(`password = changeme` reads like code such as `token=token`); deciding what is sensitive for a
particular customer.
"""

from __future__ import annotations

import bisect
import copy
import datetime
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

MARKER = "[已脱敏:{label}]"
_MARKER_START = "[已脱敏:"


class Rule(NamedTuple):
    name: str                                           # identifier used by tests, e.g. "cn_mobile"
    label: str                                          # Chinese text inside the marker, e.g. "手机号"
    pattern: re.Pattern[str]                            # finds candidates; group "secret" = the part to mask
    validator: Callable[[re.Match[str]], bool] | None = None   # vetoes look-alikes; None = every match counts
    hints: tuple[str | Callable[[_HintIndex], list[tuple[int, int]]], ...] = ()   # where to look; () = everywhere


# Digit rules use ASCII-alnum lookarounds instead of \b: in Python's Unicode regexes CJK
# characters are \w, so "手机13812345678请回电" has no \b around the digits. Letters count as
# neighbours on purpose, so a digit run inside a hex id (UUID, git sha) is never a phone or card.
# "3.14159265358" and "0.1234567890123456": digits right after "<digit>." are the decimals of a float.
# The first digit comes before the lookbehinds so that re can skip everything that is not a digit.
_FIRST_DIGIT = r"[0-9](?<![0-9A-Za-z][0-9])(?<![0-9][.,][0-9])"
_NUMBER_END = r"(?![0-9A-Za-z])(?![.,][0-9])"
_WORD_START = r"(?<![A-Za-z0-9_-])"       # a token prefix starts a word: "sk-…", never "task-…"


# ── validators: does a candidate really look like one ──────────────────────────────────────

_ID_WEIGHTS = [2 ** (17 - position) % 11 for position in range(17)]   # 7, 9, 10, 5, 8, 4, 2, 1, 6, 3, …
_ID_CHECK_CHARS = "10X98765432"


def is_valid_cn_id(candidate: str) -> bool:
    """Check an 18-char Chinese ID: ISO 7064 MOD 11-2 check char and a plausible birth date.

    >>> is_valid_cn_id("11010519491231002X"), is_valid_cn_id("110105194912310021")
    (True, False)
    """
    body, check = candidate[:17], candidate[17:].upper()
    if len(candidate) != 18 or not body.isdigit():
        return False
    total = sum(int(digit) * weight for digit, weight in zip(body, _ID_WEIGHTS))
    return check == _ID_CHECK_CHARS[total % 11] and _plausible_birth_date(body[6:14])


def _plausible_birth_date(yyyymmdd: str) -> bool:
    # A random 18-digit number passes the check char 1 time in 11; a real calendar date cuts that further.
    try:
        born = datetime.date(int(yyyymmdd[:4]), int(yyyymmdd[4:6]), int(yyyymmdd[6:]))
    except ValueError:
        return False
    return datetime.date(1900, 1, 1) <= born <= datetime.date.today()


def is_luhn_valid(candidate: str) -> bool:
    """Luhn check for a 15–19 digit card number; spaces, dots and dashes between groups are ignored.

    >>> is_luhn_valid("4111 1111 1111 1111"), is_luhn_valid("2024113012345678")
    (True, False)
    """
    digits = [int(char) for char in candidate if char.isdigit()]
    if not 15 <= len(digits) <= 19:
        return False
    # From the right, every second digit is doubled; a doubled 7 (14) counts as 1 + 4 = 14 - 9.
    total = sum(digit if index % 2 == 0 else (digit * 2 - 9 if digit > 4 else digit * 2)
                for index, digit in enumerate(reversed(digits)))
    return total % 10 == 0


def looks_random(token: str) -> bool:
    """A key or token, not a word: an alphanumeric run of 16+ chars mixing two of upper/lower/digit.

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
    # Bearer tokens may be split by dots and dashes; prose ("Bearer authentication") is one kind of letter.
    token = _secret(match)
    return any(c.isupper() for c in token) + any(c.islower() for c in token) + any(c.isdigit() for c in token) >= 2


def _id_number_ok(match: re.Match[str]) -> bool:
    compact = "".join(char for char in match.group() if char.isalnum())
    return is_valid_cn_id(compact)


# A bare run of 15–19 digits is a card only with evidence (issue decision): the usual grouping, a
# known issuer prefix of the right length (this row), or a card word shortly before (the next row) —
# and always Luhn. Order numbers and snowflake ids are bare runs too.
_CARD_ISSUER = re.compile(r"""
      4[0-9]{15}                                         # Visa
    | (?:5[1-5][0-9]{2}|222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}   # Mastercard
    | 3[47][0-9]{13}                                     # American Express (15 digits)
    | 62[0-9]{14,17}                                     # UnionPay (16-19 digits)
    | (?:6011|64[4-9][0-9]|65[0-9]{2})[0-9]{12}          # Discover
    | 35(?:2[89]|[3-8][0-9])[0-9]{12}                    # JCB
""", re.VERBOSE)
# …and an issuer prefix does not count when the number is labelled as something else.
_ID_WORD_BEFORE = re.compile(
    r"(?:订单|单号|编号|流水|(?<![A-Za-z])(?:orders?|ids?|no)|Ids?|IDs?|ORDER|#)[^\n0-9A-Za-z]{0,4}$")


def _card_ok(match: re.Match[str]) -> bool:
    number = match.group()
    if number.isdigit():                                  # bare: needs a known issuer prefix
        if not _CARD_ISSUER.fullmatch(number):
            return False
        if _ID_WORD_BEFORE.search(match.string, max(0, match.start() - 12), match.start()):
            return False
    return is_luhn_valid(number)                          # Luhn last: it is the slow check


def _luhn_ok(match: re.Match[str]) -> bool:
    return is_luhn_valid(_secret(match))


# A name=value pair is a credential when the name holds a sensitive word (anywhere: DB_PASSWORD,
# JWT_SECRET, clientSecret) and is not metadata about one (token_type, TOKEN_URL, password_file).
_SENSITIVE_WORD = re.compile(
    r"password|passwd|passphrase|secret|token|api[_-]?key"
    r"|(?:access|private|signing|encryption|master|account|auth|client)[_-]?key", re.IGNORECASE)
_METADATA_SUFFIXES = ("tokens", "secrets", "passwords", "keys", "type", "count", "id", "name", "url", "uri", "path",
                      "file", "dir", "length", "len", "ttl", "timeout", "header", "prefix", "limit", "expires_in",
                      "expiresin", "expiry")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# …and the value is data, not a reference, a placeholder or code.
_LITERALS = frozenset("true false null none nil undefined str int bool bytes string optional any".split())
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")   # self.password
_CODE_WORD = re.compile(r"[a-z_][A-Za-z_]*")        # token=token, api_key=api_key, password=pwd
_YAML_LINE = re.compile(r"[ \t]*(?:- )?$")          # only indentation (or a list dash) before the name


def _is_reference(value: str) -> bool:
    """${VAR}, $VAR, %(pw)s, <your-key>, ****, None, 4096, self.password: a name or placeholder, not data.

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
    name_start = match.start()                   # the match starts at the sensitive word: walk back to the name
    while name_start > max(0, match.start() - 64) and text[name_start - 1] in _NAME_CHARS:
        name_start -= 1
    name = text[name_start:match.end("word")]
    if not _SENSITIVE_WORD.search(name) or name.lower().endswith(_METADATA_SUFFIXES):
        return False
    if match.group("quote"):
        return True
    if text[match.end():match.end() + 1] in ("(", "["):             # getpass(), os.environ["X"]
        return False
    # An upper-case name is a .env line, where every value is data. After a lower-case name a bare
    # word is code (token=token) — unless the line is YAML: "password: changeme" alone on its line.
    if name.isupper() or not _CODE_WORD.fullmatch(value):
        return True
    line_end = text.find("\n", match.end())
    return bool(_YAML_LINE.match(text, text.rfind("\n", 0, name_start) + 1, name_start)) and \
        not text[match.end():len(text) if line_end == -1 else line_end].strip()


# File names such as logo@2x.png look like e-mail addresses.
_FILE_SUFFIXES = frozenset("png jpg jpeg gif svg webp ico bmp js mjs ts tsx jsx css scss json yaml yml md txt".split())


def _email_ok(match: re.Match[str]) -> bool:
    return match.group().rsplit(".", 1)[1].lower() not in _FILE_SUFFIXES


# ── hints: where a row needs to look ────────────────────────────────────────────────────────

_JOIN_GAP = 64      # windows closer than this are searched as one: a regex call costs as much as ~100 chars


class _HintIndex:
    """Where a row needs to look. Each hint is searched once per text and shared by every row naming it.

    A string hint gives the lines that contain it, in any case: ASCII hints are found in a lower-cased
    one-byte copy of the text (same positions; characters outside Latin-1 become "?"), so "bearer"
    finds Bearer and BEARER with one bytes.find scan instead of a case-insensitive regex.
    A function hint receives the index (the text and that copy) and returns the spans to look at:
    word_starting() and the number hints below.
    """

    def __init__(self, text: str):
        self.text, self.cache = text, {}
        self.folded = text.encode("latin-1", "replace").lower()

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
    """[(start, end)] of every line holding needle; one find per line, so the cost is one scan."""
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
_NUMBER_SHAPES = (b"0" * 15, b"0000-0000-0000", b"000000-0000")   # bare, 4-4-4 groups, 6-8-4 / 6-4-4-4 / 4-6-5
_ZEROS = re.compile(b"0+")


def _long_numbers(index: _HintIndex) -> list[tuple[int, int, int, int]]:
    """(window start, window end, run start, digits before the first separator) of every run of 15+
    digits, alone or in groups.

    Digits are everywhere in logs, so rather than let re try every digit, the text's one-byte copy
    is translated into a skeleton (digit → "0", one of " .-" → "-", anything else → " ") and
    bytes.find looks for the shapes above at memory speed. A window is the whole stretch of digits
    and separators, plus two characters so that the rows' lookaheads see what follows.

    >>> _long_numbers(_HintIndex("order 2024113012345678, card 4111 1111 1111 1111."))
    [(5, 24, 6, 16), (28, 49, 29, 4)]
    """
    skeleton = index.folded.translate(_DIGIT_SKELETON)
    runs = []
    for shape in _NUMBER_SHAPES:
        position = skeleton.find(shape)
        while position != -1:
            group_end = _ZEROS.match(skeleton, position).end()
            window_end = skeleton.find(b" ", position)
            window_end = len(skeleton) if window_end == -1 else window_end
            runs.append((skeleton.rfind(b" ", 0, position) + 1, min(window_end + 2, len(skeleton)), position,
                         group_end - position))
            position = skeleton.find(shape, group_end if shape == _NUMBER_SHAPES[0] else window_end)
    return sorted(runs)


def id_number_runs(index: _HintIndex) -> list[tuple[int, int]]:
    """Hint for ID numbers: 17 or 18 digits in a row (the 18th character may be X), or 6-8-4 / 6-4-4-4 groups."""
    return [(start, end) for start, end, _, first in index.spans(_long_numbers) if first in (6, 17, 18)]


def card_number_runs(index: _HintIndex) -> list[tuple[int, int]]:
    """Hint for cards: numbers in groups (4-4-4-4; 4-6-5, found by its 6-digit group), or 15–19 digits
    with a card issuer's prefix."""
    text = index.text
    return [(start, end) for start, end, run, first in index.spans(_long_numbers)
            if first in (4, 6) or (15 <= first <= 19 and _CARD_ISSUER.fullmatch(text, run, run + first))]


_WORD_SKELETON = bytes(ord("w") if byte in b"abcdefghijklmnopqrstuvwxyz0123456789_-" else ord(" ")
                       for byte in range(256))        # the copy is lower-cased already
_WORD_PREFIXES: set[str] = set()            # every prefix some row asked for with word_starting()
_LONG_WORD = b"w" * 20                      # every word_starting() row matches at least 20 characters


def word_starting(*prefixes: str) -> Callable[[_HintIndex], list[tuple[int, int]]]:
    """Hint for a token with a fixed prefix: from each 20+ character word starting with one of the
    prefixes (case matters) to the end of its line.

    Ten token rows would cost ten scans of the whole text; instead _prefixed_words finds all long
    words once (a skeleton again: letters, digits, "_" and "-" become "w") and each row keeps its own.
    """
    _WORD_PREFIXES.update(prefixes)

    def hint(index: _HintIndex) -> list[tuple[int, int]]:
        words, text = index.spans(_prefixed_words), index.text
        return [(start, end) for start, end in words if text.startswith(prefixes, start)] if words else words
    hint.__qualname__ = f"word_starting{prefixes}"
    return hint


def _prefixed_words(index: _HintIndex) -> list[tuple[int, int]]:
    skeleton, text, prefixes = index.folded.translate(_WORD_SKELETON), index.text, tuple(_WORD_PREFIXES)
    heads = {prefix[:2] for prefix in prefixes}          # a set lookup first: most long words are identifiers
    spans = []
    position = skeleton.find(_LONG_WORD)
    while position != -1:
        if text[position:position + 2] in heads and text.startswith(prefixes, position):
            line_end = index.folded.find(b"\n", position)
            spans.append((position, len(text) if line_end == -1 else line_end))
        end = skeleton.find(b" ", position)
        position = -1 if end == -1 else skeleton.find(_LONG_WORD, end)
    return spans


# ── the table ───────────────────────────────────────────────────────────────────────────────

# A card number, not part of a longer number or the decimals of a float:
_CARD_NUMBER = (_FIRST_DIGIT + r"(?:[0-9]{14,18}"                                       # bare
                r"|[0-9]{3}(?P<sep>[ .-])[0-9]{4}(?P=sep)[0-9]{4}(?P=sep)[0-9]{4}(?:(?P=sep)[0-9]{1,3})?"  # 4-4-4-4
                r"|[0-9]{3}(?P<amex>[ .-])[0-9]{6}(?P=amex)[0-9]{5})"                      # Amex 4-6-5
                + _NUMBER_END)

# Order matters: specific shapes first. Rows look at the same text; on overlap the earlier row wins.
RULES: list[Rule] = [
    Rule("private_key", "私钥", re.compile(
        # An unterminated block (a truncated tool output) is masked to the end of the text (or of
        # the string, when redact_value() batches several).
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|(?=\n\0)|\Z)")),   # no hints: a block spans lines
    Rule("jwt", "JWT", re.compile(
        _WORD_START + r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), hints=("eyj",)),
    Rule("slack_webhook", "Slack Webhook", re.compile(      # no hints: re finds fixed text as fast as a hint
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/-]{20,})")),
    Rule("sk_api_key", "API密钥", re.compile(                # OpenAI, Anthropic (sk-ant-), DeepSeek …
        _WORD_START + r"sk-[A-Za-z0-9_-]{20,}"), _random_secret, hints=(word_starting("sk-"),)),
    Rule("stripe_key", "Stripe密钥", re.compile(_WORD_START + r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
         hints=(word_starting("sk_live_", "sk_test_", "rk_live_", "rk_test_"),)),
    Rule("aws_access_key", "AWS密钥", re.compile(_WORD_START + r"(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"),
         hints=(word_starting("AKIA", "ASIA"),)),
    Rule("aws_secret_key", "AWS密钥", re.compile(            # 40 base64 chars right after its name
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
        r"(?:Account|SharedAccess)Key=(?P<secret>[A-Za-z0-9+/]{40,}={0,2})"), hints=("key",)),
    Rule("bearer_token", "Bearer令牌", re.compile(           # Bearer x, BEARER x, bearer  x (keeps the word)
        r"(?<![A-Za-z])(?i:bearer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)"), _mixed_secret,
        hints=("bearer",)),
    Rule("auth_header", "认证信息", re.compile(              # Authorization: Basic … / token … / Digest …
        r"(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic|token|digest)[ \t]+"
        r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})"), _not_a_reference, hints=("authorization",)),
    Rule("url_password", "密码", re.compile(                 # postgres://app:S3cr3t@host → only S3cr3t
        r"://[^\s:/?#@]*:(?P<secret>[^\s/?#@]+)@"), _not_a_reference),
    Rule("credential", "凭据", re.compile(                   # API_KEY=…, "password": "…", JWT_SECRET: …
        # Starts at the sensitive word (DB_PASSWORD matches from PASSWORD); the validator reads the
        # whole name. The possessive ++ never gives characters back: no backtracking on long words.
        # The first letter is a plain character class so that re can skip to candidates quickly.
        r"""(?P<word>[PpSsTtKk](?i:ass|ecret|oken|ey)[A-Za-z0-9_.-]*+)["']?[ \t]*[:=][ \t]*"""
        r"""(?P<quote>["'`])?(?P<secret>(?(quote)(?:(?!(?P=quote))[^\n])+|[^\s"'`,;()\[\]{}]+))"""),
        _credential_ok, hints=("pass", "secret", "token", "key")),
    # The lookbehind makes each run of local-part characters start at most one match attempt;
    # without it a long base64 blob costs quadratic time.
    Rule("email", "邮箱", re.compile(
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"), _email_ok,
        hints=("@",)),
    Rule("cn_id_number", "身份证号", re.compile(            # 18 chars, also as 6-8-4 or 6-4-4-4 groups
        _FIRST_DIGIT + r"(?<!0)[0-9]{5}[ -]?(?:18|19|20)[0-9]{2}[ -]?(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])"
        r"[ -]?[0-9]{3}[0-9Xx]" + _NUMBER_END), _id_number_ok, hints=(id_number_runs,)),
    Rule("bank_card", "银行卡号", re.compile(_CARD_NUMBER), _card_ok, hints=(card_number_runs,)),
    Rule("bank_card_after_word", "银行卡号", re.compile(    # 卡号 / 银行卡 / card number: any 15–19 digits
        r"(?:卡|(?i:card))[^0-9\n]{0,20}?(?P<secret>" + _CARD_NUMBER + ")"), _luhn_ok,
        hints=("卡", "card")),
    Rule("cn_mobile", "手机号", re.compile(
        # No hints (digits are everywhere), so the pattern starts with "1[3-9][0-9]": re jumps from
        # one "1" to the next, and only then do the lookbehinds check what stands before those three
        # characters ("..." in them) — a non-alphanumeric, +86, 0086 or a phone word (Tel13812345678),
        # never "<digit>." (the decimals of 3.14159265358).
        r"1[3-9][0-9](?:(?<![0-9A-Za-z]...)(?<![0-9][.,]...)|(?<=\+86...)|(?<=0086...)|(?<=[Tt]el...)"
        r"|(?<=TEL...)|(?<=[Pp]hone...)|(?<=[Mm]obile...))(?P<sep>[ .-]?)[0-9]{4}(?P=sep)[0-9]{4}" + _NUMBER_END)),
    Rule("cn_mobile_fullwidth", "手机号", re.compile(       # １３８１２３４５６７８
        r"(?<![0-9０-９A-Za-z])１[３-９][０-９](?P<sep>[ －-]?)[０-９]{4}(?P=sep)[０-９]{4}(?![0-9０-９A-Za-z])"),
        hints=("１",)),
]


# ── the engine ──────────────────────────────────────────────────────────────────────────────


def redact(text: str) -> str:
    """Replace every secret in text with a [已脱敏:<label>] marker.

    >>> redact("手机13812345678请回电，邮件 alice@example.com")
    '手机[已脱敏:手机号]请回电，邮件 [已脱敏:邮箱]'
    """
    return redact_with_counts(text)[0]


def redact_with_counts(text: str) -> tuple[str, dict[str, int]]:
    """Like redact(), and also report how many secrets of each label were masked (RULES order).

    >>> redact_with_counts("a@example.com b@example.com 时间戳 1732867200123")
    ('[已脱敏:邮箱] [已脱敏:邮箱] 时间戳 1732867200123', {'邮箱': 2})
    """
    counts: Counter[str] = Counter()
    redacted, markers = _apply(text, _claims(text), counts)
    # A mask can unblock a row only next to itself (a lookaround now sees "]"), and rows match
    # within a line, so re-checking the lines that now hold a marker is enough to know we are done.
    if markers and _claims(_lines_around(redacted, markers)):
        while claims := _claims(redacted):                    # rare: repeat until stable
            redacted, _ = _apply(redacted, claims, counts)    # ends: every claim consumes original text
    return redacted, _in_rule_order(counts)


def _claims(text: str) -> list[tuple[int, int, str]]:
    """Apply every row to the same text: sorted (start, end, label); on overlap the earlier row wins."""
    index = _HintIndex(text)
    starts: list[int] = []
    claims: list[tuple[int, int, str]] = []
    for rule in RULES:
        windows = index.windows(rule.hints)
        found = windows and [(start, end, rule.label) for start, end in _matches(rule, text, windows, starts, claims)]
        if found:
            claims = sorted(claims + found)
            starts = [claim[0] for claim in claims]
    return claims


def _apply(text: str, claims: list[tuple[int, int, str]], counts: Counter[str]) -> tuple[str, list[int]]:
    """Replace each claim with its marker; also return where the markers start in the result."""
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
    """The lines holding the given positions, joined by newlines."""
    lines: list[tuple[int, int]] = []
    for position in positions:
        if lines and position < lines[-1][1]:
            continue
        end = text.find("\n", position)
        lines.append((text.rfind("\n", 0, position) + 1, len(text) if end == -1 else end))
    return "\n".join(text[start:end] for start, end in lines)


def _matches(rule: Rule, text: str, windows: list[tuple[int, int]], starts: list[int],
             claims: list[tuple[int, int, str]]):
    """Spans the row claims: matched in its windows, free (not claimed, not a marker), validated."""
    secret = "secret" if "secret" in rule.pattern.groupindex else 0
    for window_start, window_end in windows:
        for match in rule.pattern.finditer(text, window_start, window_end):
            start, end = match.span(secret)
            if start < end and not _overlaps(starts, claims, start, end) and \
                    not text.startswith(_MARKER_START, start) and (rule.validator is None or rule.validator(match)):
                yield start, end


def _overlaps(starts: list[int], claims: list[tuple[int, int, str]], start: int, end: int) -> bool:
    index = bisect.bisect_left(starts, end)              # claims starting before our end …
    return index > 0 and claims[index - 1][1] > start    # … the last of them must end before our start


def _in_rule_order(counts: Counter[str]) -> dict[str, int]:
    if not counts:
        return {}
    labels = dict.fromkeys(rule.label for rule in RULES)
    return {label: counts[label] for label in labels if counts[label]}


def redact_value(value: Any) -> tuple[Any, dict[str, int]]:
    """Deep-copy JSON-like data, redacting every string value (dict keys are left alone).

    >>> redact_value({"role": "user", "content": [{"type": "text", "text": "call 13812345678"}]})
    ({'role': 'user', 'content': [{'type': 'text', 'text': 'call [已脱敏:手机号]'}]}, {'手机号': 1})
    """
    box: list[Any] = [value]
    slots: list[tuple[Any, Any]] = []              # (container in the copy, key) of every string
    copied = _copy_noting_strings(box, slots)
    redacted, counts = _redact_batch([container[key] for container, key in slots])
    for (container, key), text in zip(slots, redacted):
        container[key] = text
    return copied[0], counts


# Strings are redacted as one text (one pass instead of thousands of small ones), joined by a
# separator that no row matches across: rows stop at a newline, the private-key row at "\n\0".
_BATCH_SEPARATOR = "\n\0\n"


def _redact_batch(strings: list[str]) -> tuple[list[str], dict[str, int]]:
    joined = _BATCH_SEPARATOR.join(strings)
    if joined.count("\0") == len(strings) - 1:
        redacted, counts = redact_with_counts(joined)
        return (redacted.split(_BATCH_SEPARATOR) if strings else []), counts
    total: Counter[str] = Counter()            # a string holds "\0" itself: one by one
    pieces = []
    for string in strings:
        piece, counts = redact_with_counts(string)
        pieces.append(piece)
        total.update(counts)
    return pieces, _in_rule_order(total)


def _copy_noting_strings(value: Any, slots: list[tuple[Any, Any]]) -> Any:
    """A deep copy of a list or dict; where each string sits is appended to slots."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    copied: Any = {} if isinstance(value, dict) else [None] * len(value)
    for key, item in items:
        if isinstance(item, str):
            copied[key] = item
            slots.append((copied, key))
        elif isinstance(item, (dict, list, tuple)):
            copied[key] = _copy_noting_strings(item, slots)
        else:
            copied[key] = copy.deepcopy(item)   # numbers, None, bools — and anything odd, never aliased
    return copied
