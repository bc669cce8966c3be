"""s11_redact — 导出和备份前的脱敏：一张按顺序执行的规则表。

    text ──► RULES[0] ──► RULES[1] ──► … ──► RULES[-1] ──► redacted text
             私钥          JWT               手机号         + {label: count}
             每一行 = (name, label, pattern, validator)
             pattern 先找候选，validator 再否决“长得像但不是”的
             （身份证校验位、银行卡 Luhn），命中处换成 [已脱敏:<label>]

Key insight: 正则只负责“长得像”，校验函数负责“真的是”——数字类规则不加校验，
时间戳、订单号、UUID 都会被误杀；顺序从具体到笼统，JWT 要赶在 Bearer 之前认领。

Extending: 在 RULES 里插入一行 Rule，并在 tests/test_redact.py 的 CASES 里给它一个
真阳性和一个假阳性样例（测试会检查每一行都有）。

Guarantees:
- redact() is idempotent: a marker never matches any rule, and redact_with_counts()
  repeats the table until nothing changes (a later rule can unblock an earlier one).
- redact_value() returns a deep copy and never mutates its input; dict keys are kept.

Out of scope: names, street addresses and free-form secrets ("密码是 hunter2") —
they need context, not patterns; secrets split across messages; non-mainland phone
and ID formats; deciding what is sensitive for a particular customer.
"""

from __future__ import annotations

import copy
import datetime
import re
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

MARKER = "[已脱敏:{label}]"

# Digit rules use ASCII-alnum lookarounds instead of \b: in Python's Unicode regexes CJK
# characters are \w, so "手机13812345678请回电" has no \b around the digits. Letters count as
# neighbours on purpose, so a digit run inside a hex id (UUID, git sha) is never a phone or card.
_NO_ALNUM_BEFORE = r"(?<![0-9A-Za-z])"
_NO_ALNUM_AFTER = r"(?![0-9A-Za-z])"


class Rule(NamedTuple):
    name: str                                  # identifier used by tests, e.g. "cn_mobile"
    label: str                                 # Chinese text inside the marker, e.g. "手机号"
    pattern: re.Pattern[str]                   # finds candidates
    validator: Callable[[str], bool] | None    # vetoes look-alikes; None = every match counts


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
    """Luhn check for a 16–19 digit card number; spaces and dashes between groups are ignored.

    >>> is_luhn_valid("4111 1111 1111 1111"), is_luhn_valid("2024113012345678")
    (True, False)
    """
    digits = [int(char) for char in candidate if char.isdigit()]
    if not 16 <= len(digits) <= 19:
        return False
    # From the right, every second digit is doubled; a doubled 7 (14) counts as 1 + 4 = 14 - 9.
    total = sum(digit if index % 2 == 0 else (digit * 2 - 9 if digit > 4 else digit * 2)
                for index, digit in enumerate(reversed(digits)))
    return total % 10 == 0


def _has_digit(token: str) -> bool:
    # Real bearer tokens are random and carry digits; "Bearer authentication_scheme_docs" is prose.
    return any(char.isdigit() for char in token)


# Order matters: specific shapes first, so a JWT is labelled JWT (not Bearer令牌) and an
# 18-digit ID number is labelled 身份证号 before the bank-card rule sees 18 digits.
RULES: list[Rule] = [
    Rule("private_key", "私钥", re.compile(
        # An unterminated block (a truncated tool output) is masked to the end of the text.
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)"),
        None),
    Rule("jwt", "JWT", re.compile(
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"), None),
    Rule("sk_api_key", "API密钥", re.compile(r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}"), None),
    Rule("aws_access_key", "AWS密钥", re.compile(
        _NO_ALNUM_BEFORE + r"(?:AKIA|ASIA)[0-9A-Z]{16}" + _NO_ALNUM_AFTER), None),
    Rule("github_token", "GitHub令牌", re.compile(
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"), None),
    Rule("slack_token", "Slack令牌", re.compile(
        _NO_ALNUM_BEFORE + r"xox[abprs]-[A-Za-z0-9-]{10,}"), None),
    Rule("bearer_token", "Bearer令牌", re.compile(r"(?<=[Bb]earer )[A-Za-z0-9._~+/-]{16,}=*"), _has_digit),
    # The lookbehind makes each run of local-part characters start at most one match attempt;
    # without it a long base64 blob costs quadratic time.
    Rule("email", "邮箱", re.compile(
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"), None),
    Rule("cn_id_number", "身份证号", re.compile(
        _NO_ALNUM_BEFORE + r"[1-9][0-9]{16}[0-9Xx]" + _NO_ALNUM_AFTER), is_valid_cn_id),
    Rule("bank_card", "银行卡号", re.compile(
        _NO_ALNUM_BEFORE + r"[0-9]{4}(?:[ -]?[0-9]{4}){3}(?:[ -]?[0-9]{1,3})?" + _NO_ALNUM_AFTER), is_luhn_valid),
    Rule("cn_mobile", "手机号", re.compile(
        _NO_ALNUM_BEFORE + r"(?:\+86[ -]?)?1[3-9][0-9](?:[ -]?[0-9]{4}){2}" + _NO_ALNUM_AFTER), None),
]


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
    # Repeat until stable, so idempotence holds for any table a student writes: a later row may
    # consume the character that blocked an earlier row's lookaround. Terminates because markers
    # never match, so every pass that changes something consumes original text.
    while True:
        redacted = text
        for rule in RULES:
            redacted = _mask_matches(rule, redacted, counts)
        if redacted == text:
            return text, _in_rule_order(counts)
        text = redacted


def _mask_matches(rule: Rule, text: str, counts: Counter[str]) -> str:
    def mask(match: re.Match[str]) -> str:
        if rule.validator is not None and not rule.validator(match.group()):
            return match.group()
        counts[rule.label] += 1
        return MARKER.format(label=rule.label)

    return rule.pattern.sub(mask, text)


def _in_rule_order(counts: Counter[str]) -> dict[str, int]:
    labels = dict.fromkeys(rule.label for rule in RULES)
    return {label: counts[label] for label in labels if counts[label]}


def redact_value(value: Any) -> tuple[Any, dict[str, int]]:
    """Deep-copy JSON-like data, redacting every string value (dict keys are left alone).

    >>> redact_value({"role": "user", "content": [{"type": "text", "text": "call 13812345678"}]})
    ({'role': 'user', 'content': [{'type': 'text', 'text': 'call [已脱敏:手机号]'}]}, {'手机号': 1})
    """
    counts: Counter[str] = Counter()
    return _redact_tree(value, counts), _in_rule_order(counts)


def _redact_tree(value: Any, counts: Counter[str]) -> Any:
    if isinstance(value, str):
        text, found = redact_with_counts(value)
        counts.update(found)
        return text
    if isinstance(value, dict):
        return {key: _redact_tree(item, counts) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact_tree(item, counts) for item in value]
    return copy.deepcopy(value)   # numbers, None, bools — and anything odd, so the copy never aliases input
