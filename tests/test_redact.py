"""Redaction: every row of the table catches its secret and leaves its look-alike alone.

Fake secrets are glued together at runtime so that secret scanners (e.g. GitHub push
protection) don't flag this file; none of them is a real credential.
"""

import copy
import doctest
import random
import re
import time

import pytest

import s11_redact
from s11_redact import MARKER, RULES, is_luhn_valid, is_valid_cn_id, redact, redact_value, redact_with_counts

JWT = "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
SK_KEY = "sk-" + "proj-" + "Xy7Qm2Lp9Rt4Vn8Kc3Hs6Jd1"
SK_ANT_KEY = "sk-" + "ant-api03-" + "Zq4Wm8Np2Lx6Rv0Tc5Yb9Hj3Kf7Gd"
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
GITHUB_CLASSIC = "ghp_" + "A1b2C3d4E5" * 4
GITHUB_FINE = "github_pat_" + "11ABCDEFG0" * 5
SLACK = "xox" + "b-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
BEARER = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
PEM_BODY = "MIIEowIBAAKCAQEA7bq3xY"
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA PRIVATE KEY-----"

# rule name -> (true positives as (text, secret that must disappear), false positives left untouched)
CASES = {
    "private_key": (
        [(f"密钥如下：\n{PEM}\n用完删掉", PEM_BODY),
         ("截断的输出 -----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE", "b3BlbnNzaC1rZXktdjE")],
        ["-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQY\n-----END PUBLIC KEY-----",
         "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgI\n-----END CERTIFICATE-----"],
    ),
    "jwt": (
        [(f"token={JWT}", "eyJzdWIiOiIxMjM0NTY3ODkwIn0"), (f"Authorization: Bearer {JWT}", "dozjgNryP4J3")],
        ["header eyJhbGciOiJIUzI1NiJ9 only", "file.eyJ.txt"],
    ),
    "sk_api_key": (
        [(f"OPENAI_API_KEY={SK_KEY}", SK_KEY), (f"密钥{SK_ANT_KEY}用完即删", SK_ANT_KEY)],
        ["task-queue-worker-configuration-v2", "pip install scikit-learn  # alias sk-learn"],
    ),
    "aws_access_key": (
        [(f"aws_access_key_id = {AWS_KEY}", AWS_KEY), (f"密钥{AWS_KEY}在这", AWS_KEY)],
        ["AKIA is the prefix of AWS access key ids", "arn:aws:iam::123456789012:user/akiaiosfodnn7example"],
    ),
    "github_token": (
        [(f"GITHUB_TOKEN={GITHUB_CLASSIC}", GITHUB_CLASSIC), (f"token: {GITHUB_FINE}", GITHUB_FINE)],
        ["ghp_short", "the gho_ prefix marks OAuth tokens"],
    ),
    "slack_token": (
        [(f"SLACK_BOT_TOKEN={SLACK}", SLACK)],
        ["xoxo-hugs-and-kisses-for-everyone", "xoxb-short"],
    ),
    "bearer_token": (
        [(f"Authorization: Bearer {BEARER}", BEARER), (f"curl -H 'authorization: bearer {BEARER}'", BEARER)],
        ["Bearer authenticationschemes are described in RFC 6750", "Authorization: Bearer ${API_TOKEN}"],
    ),
    "email": (
        [("联系我alice.wang+dev@example.com.cn谢谢", "alice.wang+dev@example.com.cn"),
         ("Author: Bob <bob@corp.example.org>", "bob@corp.example.org")],
        ["npm i lodash@4.17.21", "@dataclass\nclass User:", "ssh user@localhost"],
    ),
    "cn_id_number": (
        [("身份证号11010519491231002X已核验", "11010519491231002X"), ("id=11010519491231002x", "11010519491231002x")],
        ["身份证号110105194912310021（校验位错）", "110105194902300020（2 月 30 日）"],
    ),
    "bank_card": (
        [("卡号4111111111111111，有效期12/28", "4111111111111111"), ("卡号 5500-0055-5555-5559", "5500-0055-5555-5559")],
        ["订单号2024113012345678", "卡号4111111111111112（Luhn 不通过）"],
    ),
    "cn_mobile": (
        [("手机13812345678请回电", "13812345678"), ("电话 +86 138 1234 5678", "138 1234 5678"),
         ("tel:159-0000-1234", "159-0000-1234")],
        ["时间戳1732867200123", "编号12345678901", "uuid 123e4567-e89b-12d3-a456-a13812345678"],
    ),
}

RULES_BY_NAME = {rule.name: rule for rule in RULES}
POSITIVES = [(name, text, secret) for name, (positives, _) in CASES.items() for text, secret in positives]
NEGATIVES = [(name, text) for name, (_, negatives) in CASES.items() for text in negatives]


# ── the table ───────────────────────────────────────────────────────────────────────────────


def test_every_rule_has_a_true_positive_and_a_false_positive_case():
    missing = [rule.name for rule in RULES if not (CASES.get(rule.name, ([], []))[0] and CASES[rule.name][1])]
    assert not missing, f"add a (true positive, false positive) pair to CASES for: {missing}"
    assert set(CASES) <= set(RULES_BY_NAME), "CASES names a rule that RULES does not have"


@pytest.mark.parametrize(("name", "text", "secret"), POSITIVES, ids=[f"{p[0]}-{i}" for i, p in enumerate(POSITIVES)])
def test_rule_catches_its_secret(name, text, secret):
    redacted, counts = redact_with_counts(text)
    assert secret not in redacted
    assert MARKER.format(label=RULES_BY_NAME[name].label) in redacted
    assert counts[RULES_BY_NAME[name].label] >= 1


@pytest.mark.parametrize(("name", "text"), NEGATIVES, ids=[f"{n[0]}-{i}" for i, n in enumerate(NEGATIVES)])
def test_rule_leaves_its_look_alike_alone(name, text):
    assert redact_with_counts(text) == (text, {})


def test_a_jwt_after_bearer_is_labelled_jwt_not_bearer():
    assert redact(f"Authorization: Bearer {JWT}") == "Authorization: Bearer [已脱敏:JWT]"


def test_bearer_keeps_the_word_bearer():
    assert redact(f"Bearer {BEARER}") == "Bearer [已脱敏:Bearer令牌]"


# ── validators, checked against independent reference implementations ──────────────────────


def reference_id_check_char(first17: str) -> str:
    # GB 11643-1999: weight of position i (1-based from the right, check char is position 1) is 2^(i-1) mod 11.
    total = sum(int(digit) * pow(2, 17 - index, 11) for index, digit in enumerate(first17))
    return "10X98765432"[total % 11]


def reference_luhn(number: str) -> bool:
    digits = [int(char) for char in reversed(number)]
    doubled = [sum(divmod(digit * 2, 10)) for digit in digits[1::2]]
    return (sum(digits[0::2]) + sum(doubled)) % 10 == 0


def test_the_standards_own_example_id_number_is_valid():
    assert is_valid_cn_id("11010519491231002X")   # the worked example in GB 11643-1999


@pytest.mark.parametrize("first17", ["11010519491231002", "44052419900101001", "31011520000229123"])  # 29 Feb 2000
def test_id_number_is_valid_only_with_its_own_check_char(first17):
    right = reference_id_check_char(first17)
    assert is_valid_cn_id(first17 + right)
    assert not any(is_valid_cn_id(first17 + char) for char in set("0123456789X") - {right})


@pytest.mark.parametrize("first17", ["11010519490230002",   # 30 February
                                     "44052418800101001",   # born 1880
                                     "44052420991231001"])  # born in the future
def test_id_number_with_a_right_check_char_but_impossible_birth_date_is_invalid(first17):
    assert not is_valid_cn_id(first17 + reference_id_check_char(first17))


def test_luhn_agrees_with_a_reference_implementation_on_random_numbers():
    rng = random.Random(811)
    numbers = ["".join(rng.choice("0123456789") for _ in range(rng.randint(16, 19))) for _ in range(2000)]
    assert [is_luhn_valid(number) for number in numbers] == [reference_luhn(number) for number in numbers]
    assert 100 < sum(map(reference_luhn, numbers)) < 300   # about one in ten passes, so both branches ran


def test_luhn_rejects_lengths_outside_16_to_19():
    fifteen = "378282246310005"            # a valid 15-digit Amex test number
    assert reference_luhn(fifteen) and not is_luhn_valid(fifteen)


# ── things that are not secrets ─────────────────────────────────────────────────────────────


@pytest.mark.parametrize("text", [
    "created_at_ms=1732867200123",
    "订单号 2024113012345678 已发货",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    "commit a4111111111111111b3ee2a9c0f1d2e3f4a5b6c7",   # a Luhn-valid digit run inside a hex sha
    "在 2026-08-25 18:46:40 内存从 200MB 涨到 3GB",
])
def test_timestamps_order_numbers_uuids_and_git_shas_are_untouched(text):
    assert redact(text) == text


@pytest.mark.parametrize(("text", "expected"), [
    ("手机13812345678请回电", "手机[已脱敏:手机号]请回电"),
    ("身份证11010519491231002X，卡号4111111111111111。",
     "身份证[已脱敏:身份证号]，卡号[已脱敏:银行卡号]。"),
])
def test_cjk_text_touching_digits_is_still_redacted(text, expected):
    assert redact(text) == expected


# ── counts, idempotence, deep copies ────────────────────────────────────────────────────────


def test_counts_are_per_label_in_rules_order_and_only_for_kinds_that_occurred():
    text = f"手机13812345678，a@example.com，b@example.com，{SK_KEY}"
    redacted, counts = redact_with_counts(text)
    assert counts == {"API密钥": 1, "邮箱": 2, "手机号": 1}
    rule_order = [rule.label for rule in RULES]
    assert list(counts) == sorted(counts, key=rule_order.index)
    assert sum(counts.values()) == len(re.findall(r"\[已脱敏:[^\]]+\]", redacted))


@pytest.mark.parametrize("text", [text for _, text, _ in POSITIVES] + [" ".join(text for _, text, _ in POSITIVES)])
def test_redacting_twice_changes_nothing(text):
    once = redact(text)
    assert redact_with_counts(once) == (once, {})


def test_markers_are_never_matched_by_any_rule():
    for rule in RULES:
        marker = MARKER.format(label=rule.label)
        text = f"Bearer {marker}\n手机{marker}请回电 {marker}"
        assert redact_with_counts(text) == (text, {})


def test_redact_value_copies_deeply_and_never_mutates_its_input():
    value = {"alice@example.com": "key stays", "messages": [{"role": "user", "content": "手机13812345678"},
             ("tuple", "bob@example.com"), 42, None, True, 1.5]}
    before = copy.deepcopy(value)
    redacted, counts = redact_value(value)
    assert value == before
    assert redacted == {"alice@example.com": "key stays", "messages": [{"role": "user", "content": "手机[已脱敏:手机号]"},
                        ["tuple", "[已脱敏:邮箱]"], 42, None, True, 1.5]}
    assert counts == {"邮箱": 1, "手机号": 1}
    redacted["messages"][0]["content"] = "changed"
    assert value["messages"][0]["content"] == "手机13812345678"


def test_a_long_blob_without_secrets_is_scanned_in_linear_time():
    # A base64 image in a tool result: without the e-mail rule's lookbehind this is quadratic (seconds).
    blob = "iVBORw0KGgo" * 3000
    started = time.perf_counter()
    assert redact(blob) == blob
    assert time.perf_counter() - started < 1.0


def test_docstring_examples_hold():
    assert doctest.testmod(s11_redact).failed == 0
