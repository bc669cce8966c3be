"""Redaction: every row of the table catches its secret and leaves its look-alike alone.

Fake secrets are glued together at runtime so that secret scanners (e.g. GitHub push
protection) don't flag this file; none of them is a real credential.
"""

import collections
import copy
import doctest
import random
import re
import signal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import s11_redact
from s11_redact import MARKER, RULES, is_luhn_valid, is_valid_cn_id, redact, redact_value, redact_with_counts


def with_luhn_check(body: str) -> str:
    """body + the one digit that makes it pass Luhn (test data, computed rather than pasted)."""
    for check in "0123456789":
        digits = [int(c) for c in reversed(body + check)]
        if sum(d if i % 2 == 0 else sum(divmod(d * 2, 10)) for i, d in enumerate(digits)) % 10 == 0:
            return body + check
    raise AssertionError("unreachable")


JWT = "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
SK_KEY = "sk-" + "proj-" + "Xy7Qm2Lp9Rt4Vn8Kc3Hs6Jd1"
SK_ANT_KEY = "sk-" + "ant-api03-" + "Zq4Wm8Np2Lx6Rv0Tc5Yb9Hj3Kf7Gd"
SK_HEX_KEY = "sk-" + "3f2a9c1b7e6d4a8f" + "0b5c2e9d1a7f3b6c"                  # DeepSeek / DashScope style
STRIPE_KEY = "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
STRIPE_RESTRICTED = "rk_" + "live_" + "51Hq8TzK2eZvKYlo2C0aBcDeF"
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"                 # AWS's documentation example
GOOGLE_KEY = "AIza" + "SyD9tSrke72PouQMnMXa7eZSW0jkFMBWYq8"
GITHUB_CLASSIC = "ghp_" + "A1b2C3d4E5" * 4
GITHUB_FINE = "github_pat_" + "11ABCDEFG0" * 5
GITLAB = "glpat-" + "xY7mQ2pL9rT4vN8kC3hS"
HUGGING_FACE = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"
NPM = "npm_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SLACK = "xox" + "b-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
SLACK_HOOK_PATH = "T0" + "4ABCDEF/B05GHIJKL/" + "aB3dE5fG7hI9jK1lM3nO5pQ7"
AZURE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq" + "/K1SZFPTOtr/KBHBeksoGMGw=="
BEARER = "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
BASIC = "ZGVwbG95Omh1" + "bnRlcjI="                                            # base64 of deploy:hunter2
PEM_BODY = "MIIEowIBAAKCAQEA7bq3xY"
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\n" + PEM_BODY + "\n-----END RSA PRIVATE KEY-----"
PGP_BODY = "lQOYBGQx2dIBCADK7pD3"
PGP = "-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\n\n" + PGP_BODY + "\n=AbCd\n-----END PGP PRIVATE KEY BLOCK-----"
UNIONPAY_19 = with_luhn_check("622202123456789012")                        # 62: a UnionPay prefix
ICBC_19 = with_luhn_check("955880123456789012")                            # 9558: no issuer prefix in the table
AMEX = "378282246310005"                                                   # American Express's test number

# rule name -> (true positives as (text, secret that must disappear), false positives left untouched)
CASES = {
    "private_key": (
        [(f"密钥如下：\n{PEM}\n用完删掉", PEM_BODY),
         ("截断的输出 -----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE", "b3BlbnNzaC1rZXktdjE"),
         (f"gpg --export-secret-keys\n{PGP}", PGP_BODY)],
        ["-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQY\n-----END PUBLIC KEY-----",
         "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgI\n-----END CERTIFICATE-----",
         "-----BEGIN PGP PUBLIC KEY BLOCK-----\nmQENBFzT3eIBCAC\n-----END PGP PUBLIC KEY BLOCK-----"],
    ),
    "jwt": (
        [(f"token={JWT}", "eyJzdWIiOiIxMjM0NTY3ODkwIn0"), (f"Authorization: Bearer {JWT}", "dozjgNryP4J3")],
        ["header eyJhbGciOiJIUzI1NiJ9 only", "file.eyJ.txt"],
    ),
    "slack_webhook": (
        [(f"curl -X POST https://hooks.slack.com/services/{SLACK_HOOK_PATH}", SLACK_HOOK_PATH)],
        ["https://api.slack.com/messaging/webhooks", "see hooks.slack.com/services/ in the Slack docs"],
    ),
    "url_password": (
        [("DATABASE_URL=postgres://app:S3cr3t@10.0.0.5/db", "S3cr3t"), ("redis://:p4ssw0rd@cache:6379/0", "p4ssw0rd")],
        ["postgres://app:${DB_PASSWORD}@db/app", "http://localhost:8080/api/v1", "git clone https://github.com/org/repo.git"],
    ),
    "sk_api_key": (
        [(f"OPENAI_API_KEY={SK_KEY}", SK_KEY), (f"密钥{SK_ANT_KEY}用完即删", SK_ANT_KEY), (f"key: {SK_HEX_KEY}", SK_HEX_KEY)],
        ["task-queue-worker-configuration-v2", "pip install scikit-learn  # alias sk-learn",
         '<div class="sk-spinner sk-fading-circle sk-spinner-double-bounce-container">', ".sk-circle12 { color: red }"],
    ),
    "stripe_key": (
        [(f'stripe.api_key = "{STRIPE_KEY}"', STRIPE_KEY), (f"受限密钥 {STRIPE_RESTRICTED} 只读", STRIPE_RESTRICTED)],
        ["sk_live_ is the prefix of live-mode keys", "mark_test_helpers_and_fixtures_v2"],
    ),
    "aws_access_key": (
        [(f"aws_access_key_id = {AWS_KEY}", AWS_KEY), (f"密钥{AWS_KEY}在这", AWS_KEY)],
        ["AKIA is the prefix of AWS access key ids", "arn:aws:iam::123456789012:user/akiaiosfodnn7example"],
    ),
    "aws_secret_key": (
        [(f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET), (f'"SecretAccessKey": "{AWS_SECRET}",', AWS_SECRET),
         (f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET)],
        ["the AWS secret access key is 40 characters long", "aws_secret_access_key = ${AWS_SECRET_ACCESS_KEY}"],
    ),
    "google_api_key": (
        [(f"https://maps.googleapis.com/maps/api/js?key={GOOGLE_KEY}", GOOGLE_KEY)],
        ["AIza is the prefix of Google API keys", "AIzaShortValue"],
    ),
    "github_token": (
        [(f"GITHUB_TOKEN={GITHUB_CLASSIC}", GITHUB_CLASSIC), (f"token: {GITHUB_FINE}", GITHUB_FINE)],
        ["ghp_short", "the gho_ prefix marks OAuth tokens"],
    ),
    "gitlab_token": (
        [(f"git clone https://oauth2:{GITLAB}@gitlab.example.com/team/app.git", GITLAB), (f"令牌 {GITLAB}", GITLAB)],
        ["glpat- is the prefix of GitLab personal access tokens", "glpat-short"],
    ),
    "huggingface_token": (
        [(f"huggingface-cli login --token {HUGGING_FACE}", HUGGING_FACE)],
        ["hf_hub_download_with_retries_and_cache", "hf_" + "a" * 34],
    ),
    "npm_token": (
        [(f"//registry.npmjs.org/:_authToken={NPM}", NPM)],
        ["npm_config_cache_directory_is_set", "npm_" + "a" * 36],
    ),
    "slack_token": (
        [(f"SLACK_BOT_TOKEN={SLACK}", SLACK)],
        ["xoxo-hugs-and-kisses-for-everyone", "xoxb-short"],
    ),
    "azure_key": (
        [(f"DefaultEndpointsProtocol=https;AccountName=shop;AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
          AZURE_KEY[:40])],
        ["AccountKey=<your-storage-account-key>", "the AccountKey setting is documented here"],
    ),
    "bearer_token": (
        [(f"Authorization: Bearer {BEARER}", BEARER), (f"curl -H 'authorization: bearer {BEARER}'", BEARER),
         (f"BEARER {BEARER}", BEARER), (f"Authorization: Bearer  {BEARER}", BEARER)],
        ["Bearer authenticationschemes are described in RFC 6750", "Authorization: Bearer ${API_TOKEN}"],
    ),
    "auth_header": (
        [(f"Authorization: Basic {BASIC}", BASIC), ("Authorization: token " + "0123456789abcdef" * 2 + "01234567",
                                                     "0123456789abcdef0123456789abcdef01234567")],
        ["Authorization: Basic <credentials>", "the Authorization header carries a token"],
    ),
    "credential": (
        [("API_KEY=abc123XYZ789", "abc123XYZ789"), ("DB_PASSWORD=hunter2!", "hunter2!"),
         ("JWT_SECRET: s3cr3t-value", "s3cr3t-value"), ("SECRET_TOKEN: tok_8f7e6d5c", "tok_8f7e6d5c"),
         ('{"password": "correct horse battery staple"}', "correct horse battery staple"),
         ("db:\n  password: changeme\n", "changeme"), ("?access_token=a1b2c3d4e5&page=2", "a1b2c3d4e5")],
        ["max_tokens: 4096", "client = OpenAI(api_key=api_key)", "password = getpass.getpass()",
         "API_KEY: ${{ secrets.API_KEY }}", '"password": "",', "PWD=/home/alice/project", '"token_type": "Bearer"',
         "token = tokenizer.encode(text)[0]", "def login(user, password=None, token: str | None = None):"],
    ),
    "email": (
        [("联系我alice.wang+dev@example.com.cn谢谢", "alice.wang+dev@example.com.cn"),
         ("Author: Bob <bob@corp.example.org>", "bob@corp.example.org")],
        ["npm i lodash@4.17.21", "@dataclass\nclass User:", "ssh user@localhost", "![logo](img/logo@2x.png)"],
    ),
    "cn_id_number": (
        [("身份证号11010519491231002X已核验", "11010519491231002X"), ("id=11010519491231002x", "11010519491231002x"),
         ("证件号码 110105 19491231 002X", "110105 19491231 002X"), ("110105-1949-1231-002X", "110105-1949-1231-002X"),
         ("身份证１１０１０５１９４９１２３１００２Ｘ", "１１０１０５１９４９１２３１００２Ｘ")],
        ["身份证号110105194912310021（校验位错）", "110105194902300020（2 月 30 日）"],
    ),
    "bank_card": (
        [("卡号4111111111111111，有效期12/28", "4111111111111111"), ("卡号 5500-0055-5555-5559", "5500-0055-5555-5559"),
         ("paid with 4111.1111.1111.1111", "4111.1111.1111.1111"), (f"Amex {AMEX} exp 12/28", AMEX),
         ("3782 822463 10005", "3782 822463 10005"), (f"付款 {UNIONPAY_19} 成功", UNIONPAY_19)],
        ["订单号2024113012345678", "卡号4111111111111112（Luhn 不通过）", "订单号 4111111111111111 已发货",
         '{"id": 1798432165432123456}'],
    ),
    "bank_card_after_word": (
        [(f"银行卡 {ICBC_19}", ICBC_19), (f"card number: {ICBC_19}", ICBC_19)],
        [f"卡号{ICBC_19[:-1]}{(int(ICBC_19[-1]) + 1) % 10}（Luhn 不通过）", "会员卡积分 12 分"],
    ),
    "cn_mobile": (
        [("手机13812345678请回电", "13812345678"), ("电话 +86 138 1234 5678", "138 1234 5678"),
         ("tel:159-0000-1234", "159-0000-1234"), ("008613812345678", "13812345678"), ("+8613812345678", "13812345678"),
         ("Tel13812345678", "13812345678"), ("138.1234.5678", "138.1234.5678"),
         ("手机１３８１２３４５６７８请回电", "１３８１２３４５６７８"), ("电话 １３８－１２３４－５６７８", "１３８－１２３４－５６７８")],
        ["时间戳1732867200123", "编号12345678901", "uuid 123e4567-e89b-12d3-a456-a13812345678", "PI = 3.14159265358",
         "x = 0.13812345678", "第１３８号", "编号１２３４５６７８９０１"],
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


def test_luhn_accepts_15_to_19_digits_and_nothing_else():
    fifteen = "378282246310005"            # a valid 15-digit Amex test number
    assert reference_luhn(fifteen) and is_luhn_valid(fifteen)
    fourteen, twenty = with_luhn_check("3056930902590"), with_luhn_check("4" * 19)
    assert reference_luhn(fourteen) and reference_luhn(twenty)
    assert not is_luhn_valid(fourteen) and not is_luhn_valid(twenty)


# ── things that are not secrets ─────────────────────────────────────────────────────────────


@pytest.mark.parametrize("text", [
    "created_at_ms=1732867200123",
    "订单号 2024113012345678 已发货",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
    "commit a4111111111111111b3ee2a9c0f1d2e3f4a5b6c7",   # a Luhn-valid digit run inside a hex sha
    "在 2026-08-25 18:46:40 内存从 200MB 涨到 3GB",
    "user 00000000-0000-0000-0000-000000000000",          # the nil UUID
    '{"id": 1798432165432123456, "author_id": "624107960998263135"}',   # snowflake ids
    "PI = 3.14159265358; p = 0.1234567890123456; lr = 1.2345678901234567e-05",
    "pip install torch==2.13.8 numpy==1.26.4; version 2024.11.30.1234",
    "color: #1a2b3c; background: #4111111111111111;",
    '<div class="sk-spinner sk-fading-circle sk-circle12"></div>',
    "| 17 | 2024113012345678 | 20241130123456789012 |",
])
def test_timestamps_ids_floats_versions_and_css_are_untouched(text):
    assert redact_with_counts(text) == (text, {})


@pytest.mark.parametrize(("text", "expected"), [
    ("postgres://app:S3cr3t@10.0.0.5/db", "postgres://app:[已脱敏:密码]@10.0.0.5/db"),
    (f"BEARER {BEARER}", "BEARER [已脱敏:Bearer令牌]"),
    (f"Authorization: Bearer  {BEARER}", "Authorization: Bearer  [已脱敏:Bearer令牌]"),
    ("DB_PASSWORD=hunter2!\nexport JWT_SECRET='s3cr3t value'", "DB_PASSWORD=[已脱敏:凭据]\nexport JWT_SECRET='[已脱敏:凭据]'"),
    ('{"user": "root", "password": "p@ss w0rd"}', '{"user": "root", "password": "[已脱敏:凭据]"}'),
    ("电话 +86 138 1234 5678 或 008613812345678", "电话 +86 [已脱敏:手机号] 或 0086[已脱敏:手机号]"),
    ("手机１３８１２３４５６７８", "手机[已脱敏:手机号]"),
    ("卡号 4111.1111.1111.1111，Amex 378282246310005", "卡号 [已脱敏:银行卡号]，Amex [已脱敏:银行卡号]"),
])
def test_each_secret_is_replaced_and_its_surroundings_kept(text, expected):
    assert redact(text) == expected


@pytest.mark.parametrize(("text", "counts"), [
    (f"OPENAI_API_KEY={SK_KEY}", {"API密钥": 1}),                      # the key's shape, not the .env line
    (f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", {"AWS密钥": 1}),
    (f"git clone https://oauth2:{GITLAB}@gitlab.example.com/a.git", {"GitLab令牌": 1}),
    (f"Authorization: Bearer {JWT}", {"JWT": 1}),
    (f"卡号 {UNIONPAY_19}", {"银行卡号": 1}),                          # two card rows, one mask
])
def test_overlapping_rows_mask_once_with_the_most_specific_label(text, counts):
    assert redact_with_counts(text)[1] == counts


# ── hints: where each row looks ─────────────────────────────────────────────────────────────


def test_hints_never_hide_a_match(monkeypatch):
    # Run the table once with its hints and once scanning everything: the results must be identical.
    texts = [text for _, text, _ in POSITIVES] + [text for _, text in NEGATIVES]
    texts.append("\n".join(texts))
    with_hints = [redact_with_counts(text) for text in texts]
    monkeypatch.setattr(s11_redact, "RULES", [rule._replace(hints=()) for rule in RULES])
    assert [redact_with_counts(text) for text in texts] == with_hints


class _CountingPattern:
    """Stands in for a rule's compiled pattern and counts the scans the engine asks of it."""

    def __init__(self, pattern, scans):
        self.pattern, self.groupindex, self.scans = pattern, pattern.groupindex, scans

    def finditer(self, *args):
        self.scans.append(self.pattern.pattern[:20])
        return self.pattern.finditer(*args)


def test_every_row_has_a_hint_so_plain_chat_text_runs_no_pattern_at_all(monkeypatch):
    # The chapter's own messages (Chinese prose, identifiers, numbers shorter than four digits) give no row a
    # window, so redacting them costs the hints alone. Each kind of trigger still brings its row back.
    scans = []
    monkeypatch.setattr(s11_redact, "RULES", [rule._replace(pattern=_CountingPattern(rule.pattern, scans))
                                              for rule in RULES])
    s11_redact._table()
    scans.clear()   # building the table tries each pattern on the markers once; redacting must scan nothing
    chat = "服务连续运行 3 天后，内存占用从 200MB 涨到 3GB。已检查 cache_store.py：`_listeners.append(cb)` 从不移除回调。"
    assert redact_with_counts(chat) == (chat, {}) and scans == []
    for trigger, label in [("postgres://app:S3cr3t@10.0.0.5/db", "密码"), ("手机13812345678请回电", "手机号"),
                           ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "私钥"),
                           (f"https://hooks.slack.com/services/{SLACK_HOOK_PATH}", "Slack Webhook")]:
        scans.clear()
        assert label in redact_with_counts(chat + "\n" + trigger)[1] and scans


# The phone row looks only at 11-digit runs and 3-4-4 groups (_long_numbers' windows), not at every line with a year
# or a port. Whatever the digits, separators and prefixes around a number, the row must claim what it claims when it
# scans the whole text.
_phone_pieces = st.sampled_from(["138", "1234", "5678", "13812345678", "0086", "+86", "Tel", "phone", "Mobile", "1",
                                 "0", "9", " ", "-", ".", ",", "a", "\n", "１３８", "2024-11-30", ":8080"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_phone_pieces | st.text("0123456789 .-+", max_size=6), max_size=14).map("".join))
@example("电话 +86-138-1234-5678")
@example("0086138 1234 5678 和 Tel13812345678")
@example("卡 4111 1111 1111 1111 后 138.1234.5678")
def test_the_phone_row_finds_in_its_windows_what_it_finds_in_the_whole_text(text):
    phone = next(rule for rule in RULES if rule.name == "cn_mobile")
    index = s11_redact._HintIndex(s11_redact._halfwidth(text))
    everywhere = list(s11_redact._matches(phone, index.text, [(0, len(index.text))], [], []))
    assert list(s11_redact._matches(phone, index.text, index.windows(phone.hints), [], [])) == everywhere


def test_years_ports_and_line_numbers_give_the_phone_row_no_window_and_a_log_of_timestamps_one():
    log = "\n".join(f"{line:>5}\t2024-11-30 GET :8080/items/{line} 200" for line in range(1, 400))
    assert s11_redact.mobile_numbers(s11_redact._HintIndex(log)) == []
    index = s11_redact._HintIndex(log + "\n回电 138 1234 5678")
    assert [index.text[start:end].strip() for start, end in s11_redact.mobile_numbers(index)] == ["138 1234 5678"]
    stamps = "\n".join(f"{1732867200123 + line} ok" for line in range(s11_redact._MOBILE_WINDOWS + 1))
    assert s11_redact.mobile_numbers(s11_redact._HintIndex(stamps)) == [(0, len(stamps))]


def test_a_log_of_millisecond_timestamps_keeps_the_number_walk_bounded_and_still_finds_cards_and_phones():
    # 13-digit timestamps on every line are runs only the phone row could want. Past _MOBILE_WINDOWS of them the
    # walk stops recording them (the phone row scans the whole text) and looks only for 15+ digit runs.
    stamps = "\n".join(f"{1732867200123 + line} GET /items" for line in range(3 * s11_redact._MOBILE_WINDOWS))
    text = f"{stamps}\n卡号 4111111111111111，身份证 11010519491231002X，电话 13812345678"
    runs = s11_redact._long_numbers(s11_redact._HintIndex(text))
    assert len(runs) == s11_redact._MOBILE_WINDOWS + 2   # the first 5,000 stamps, the card, the ID number
    assert redact_with_counts(text)[1] == {"身份证号": 1, "银行卡号": 1, "手机号": 1}


# Some function hints declare needles: strings one of which must be in the text for the hint to give any window.
# The engine skips the row without calling the hint when none is there, so each declaration must be true.
_needle_pieces = st.sampled_from(["key", "KEY", "Pass", "secret", "token", "TOKEN", "=", ": ", "_", "a", "1", "\n",
                                  "://", "private key", "PRIVATE KEY", "-----BEGIN ", "ſ", "K", "é", "@", " "])
_needle_text = st.lists(_needle_pieces | st.text(max_size=5), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(_needle_text)
@example("DB_PASSWORD=hunter2\napi key: abc")
@example("-----BEGIN RSA PRIVATE KEY-----\nMIIE")
def test_a_hint_gives_windows_only_where_one_of_its_needles_is(text):
    hinted = [hint for rule in RULES for hint in rule.hints if hasattr(hint, "needles")]
    assert {hint.__name__ for hint in hinted} == {"assignments", "urls", "private_key_blocks"}
    index = s11_redact._HintIndex(text)
    for hint in hinted:
        if hint(index):
            assert any(needle.encode() in index.folded for needle in hint.needles), hint.__name__


@settings(max_examples=400, deadline=None)
@given(_needle_text)
@example("secret=1 token=2 key=3 pass=4")
def test_assignments_skipping_the_words_found_absent_gives_the_same_windows(text):
    # _indexed_claims tells the index which string hints it found; assignments then runs only those words' patterns.
    alone = s11_redact.assignments(s11_redact._HintIndex(text))
    index = s11_redact._HintIndex(text)
    s11_redact._indexed_claims(index)
    assert index.present is not None and s11_redact.assignments(index) == alone


# Long texts look for the string hints in a shorter copy first (bytes no needle has are deleted): a needle missing
# there is missing from the text. Pieces that the copy deletes ("key 1=", "to?ken") make needles that appear only
# in the copy, so the answer must still come from the text itself.
_present_pieces = st.sampled_from(["key", "=", " ", "1", "to", "ken", "汉", "@", "eyJ", "bear", "er", ":/", "/",
                                   "\n", "Private", "KEY", "card", "x"])


@pytest.mark.parametrize("left_for_copy", [0, 99], ids=["short copy", "each needle in the text"])
@settings(max_examples=300, deadline=None)
@given(text=st.lists(_present_pieces | st.text(max_size=3), max_size=16).map("".join))
@example(text="key 1= to汉ken bear\ner :/ /")
@example(text="private 1 key")
@example(text="-----BEGIN RSA PRIVATE KEY-----")
def test_the_short_copy_finds_exactly_the_hints_the_text_has(left_for_copy, text):
    table = s11_redact._table()
    folded = s11_redact._HintIndex(text).folded
    expected = {hint for hint, needle in zip(table.ascii_hints, table.ascii_needles) if needle in folded}
    with pytest.MonkeyPatch.context() as patch:   # the long-text path on short texts: a 4-byte probe first
        patch.setattr(s11_redact, "_SHORT_COPY_FROM", 0)
        patch.setattr(s11_redact, "_PROBE_BYTES", 4)
        patch.setattr(s11_redact, "_SHORT_COPY_NEEDLES", left_for_copy)
        assert s11_redact._ascii_present(folded, table) == expected


def test_a_long_text_takes_the_short_copy_and_still_redacts_the_same(monkeypatch):
    # 300 KB of log with a secret at the very end and decoys that only the short copy contains.
    secret = "sk-proj-Xy7Qm2Lp9Rt4Vn8Kc3Hs6Jd1"
    text = "2026-12-03 18:33:28 GET /health 200 key 1= to汉ken\n" * 6000 + f"export API_TOKEN={secret}\n"
    assert len(text) > s11_redact._SHORT_COPY_FROM
    copies = []
    real = s11_redact._short_copy
    monkeypatch.setattr(s11_redact, "_short_copy", lambda folded, table: copies.append(len(folded)) or
                        real(folded, table))
    redacted, counts = redact_with_counts(text)
    assert copies == [len(text)]
    assert secret not in redacted and redacted.endswith("export API_TOKEN=[已脱敏:API密钥]\n")
    assert counts == {"API密钥": 1} and redacted.count("key 1= to汉ken") == 6000
    copies.clear()
    monkeypatch.setattr(s11_redact, "_SHORT_COPY_FROM", len(text) + 1)   # the plain search: the same answer
    assert redact_with_counts(text) == (redacted, counts) and copies == []


def test_a_long_text_whose_needles_show_early_is_not_copied(monkeypatch):
    # Real code and logs name "key", "token", "://"... in their first lines: the copy would not pay for itself.
    head = "token: abc\nsee https://example.com key=1 bearer x authorization card @ eyJ secret hooks.slack.com\n"
    text = head + "plain log line 2026-12-03 without any hint\n" * 8000
    copies = []
    monkeypatch.setattr(s11_redact, "_short_copy", lambda folded, table: copies.append(1) or b"")
    assert redact_with_counts(text)[0].endswith("without any hint\n") and copies == []


_digit_pieces = st.sampled_from(["0", "1234", "5678", " ", "-", ".", "4111 1111 1111 1111", "110105-1949-1231-002X",
                                 "371449-635398-431", "11010519491231002X", "2024113012345678", "a", "\n"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_digit_pieces | st.text("0123456789 .-", max_size=8), max_size=12).map("".join))
def test_long_number_runs_are_the_same_when_grouped_shapes_are_looked_for_only_after_one_find(text):
    # _long_numbers looks for the grouped shapes only when the skeleton has "000-0000", which they all contain.
    def every_shape(index):
        skeleton, runs = index.spans(s11_redact._digit_skeleton), []
        for shape in s11_redact._NUMBER_SHAPES:
            position = skeleton.find(shape)
            while position != -1:
                group_end = s11_redact._ZEROS.match(skeleton, position).end()
                window_end = skeleton.find(b" ", position)
                window_end = len(skeleton) if window_end == -1 else window_end
                runs.append((skeleton.rfind(b" ", 0, position) + 1, min(window_end + 2, len(skeleton)), position,
                             group_end - position))
                position = skeleton.find(shape, group_end if shape == s11_redact._NUMBER_SHAPES[0] else window_end)
        return sorted(runs)
    assert all(s11_redact._GROUPED in shape for shape in s11_redact._NUMBER_SHAPES[1:])
    assert s11_redact._long_numbers(s11_redact._HintIndex(text)) == every_shape(s11_redact._HintIndex(text))


def test_a_new_row_needs_only_a_pattern_and_hints_narrow_where_it_looks(monkeypatch):
    acme_key = re.compile(r"acme_[0-9a-f]{12}")
    text = "first line acme_0123456789ab\nsecond line ACME: acme_ba9876543210"
    monkeypatch.setattr(s11_redact, "RULES", RULES + [s11_redact.Rule("acme", "ACME密钥", acme_key)])
    assert redact_with_counts(text)[1] == {"ACME密钥": 2}
    monkeypatch.setattr(s11_redact, "RULES", RULES + [s11_redact.Rule("acme", "ACME密钥", acme_key, hints=("first",))])
    assert redact(text) == "first line [已脱敏:ACME密钥]\nsecond line ACME: acme_ba9876543210"


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
        text = (f"Bearer {marker}\n手机{marker}请回电 {marker}\npostgres://app:{marker}@db/x\nDB_PASSWORD={marker}\n"
                f'"password": "{marker}"\n卡号{marker}\nAuthorization: Basic {marker}')
        assert redact_with_counts(text) == (text, {})


def test_redact_value_copies_deeply_and_never_mutates_its_input():
    value = {"alice@example.com": "key redacted too", "messages": [{"role": "user", "content": "手机13812345678"},
             ("tuple", "bob@example.com"), 42, None, True, 1.5]}
    before = copy.deepcopy(value)
    redacted, counts = redact_value(value)
    assert value == before
    assert redacted == {"[已脱敏:邮箱]": "key redacted too", "messages": [{"role": "user", "content": "手机[已脱敏:手机号]"},
                        ["tuple", "[已脱敏:邮箱]"], 42, None, True, 1.5]}
    assert counts == {"邮箱": 2, "手机号": 1}
    redacted["messages"][0]["content"] = "changed"
    assert value["messages"][0]["content"] == "手机13812345678"


# ── structured values (issue 18 item 9): numbers, keys, values named as credentials ───────────────────


CARD = "4111111111111111"


def test_json_numbers_that_are_phones_or_cards_are_masked_and_small_numbers_kept():
    tool_input = {"phone": 13812345678, "card": int(CARD), "order": 2024113012345678, "port": 8080,
                  "ratio": 0.5, "ok": True, "big": 10 ** 30}
    redacted, counts = redact_value({"type": "tool_use", "input": tool_input})
    assert redacted["input"] == {"phone": "[已脱敏:手机号]", "card": "[已脱敏:银行卡号]", "order": 2024113012345678,
                                 "port": 8080, "ratio": 0.5, "ok": True, "big": 10 ** 30}
    assert counts == {"银行卡号": 1, "手机号": 1}


def test_dictionary_keys_are_redacted_in_place_keeping_their_order_and_never_colliding():
    value = {"first": 1, "alice@example.com": 2, "bob@example.com": 3, "13812345678": 4, "last": 5}
    redacted, counts = redact_value([value])
    assert list(redacted[0].items()) == [("first", 1), ("[已脱敏:邮箱]", 2), ("[已脱敏:邮箱] (2)", 3),
                                         ("[已脱敏:手机号]", 4), ("last", 5)]
    assert counts == {"邮箱": 2, "手机号": 1}


@pytest.mark.parametrize(("value", "expected"), [
    ({"password": "hunter2"}, {"password": "[已脱敏:凭据]"}),
    ({"api_key": "abc", "clientSecret": "x y"}, {"api_key": "[已脱敏:凭据]", "clientSecret": "[已脱敏:凭据]"}),
    ({"password": "${DB_PASSWORD}", "token_type": "Bearer", "max_tokens": 4096, "key": "enter"},
     {"password": "${DB_PASSWORD}", "token_type": "Bearer", "max_tokens": 4096, "key": "enter"}),
    ({"password": ""}, {"password": ""}),
])
def test_a_string_under_a_credential_name_is_masked_unless_it_is_a_reference(value, expected):
    assert redact_value(value)[0] == expected


def test_full_width_id_numbers_and_phones_are_masked_where_they_stand():
    text = "身份证号：１１０１０５１９４９１２３１００２Ｘ，手机１３８１２３４５６７８。"
    assert redact_with_counts(text) == ("身份证号：[已脱敏:身份证号]，手机[已脱敏:手机号]。", {"身份证号": 1, "手机号": 1})


@pytest.mark.parametrize("blob", [
    "iVBORw0KGgo" * 3000,            # a base64 image: without the e-mail row's lookbehind, quadratic
    "token" * 20000 + "=",           # a name full of sensitive words: the credential row must not backtrack
    "1" * 60000,                     # one endless digit run
    "1 " * 30000,                    # digits in single-space groups
    "sk-" + "a-" * 30000,            # a token prefix followed by an endless word
    "a" * 60000 + "@",
    "key" * 200000,                  # sensitive words with no "=": each once scanned to the end of the word
], ids=["base64", "token-names", "digit-run", "digit-groups", "sk-prefix", "endless-word-at", "key-names"])
def test_pathological_input_comes_back_unchanged_without_hanging(blob):
    # Speed is measured in benchmarks/bench_redact.py; here only a watchdog: a backtracking rule would run for
    # minutes on these inputs, and the alarm turns that hang into a failure instead of a stuck CI run.
    def hang(signum, frame):
        raise AssertionError("redact() 在病态输入上停不下来：某条规则在回溯")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    try:
        assert redact(blob) == blob
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_docstring_examples_hold():
    assert doctest.testmod(s11_redact).failed == 0


# The shortcut for short id-shaped text (session ids, short titles without spaces): every such text the
# shortcut lets through must be one the full rules leave alone.
_ID_PIECES = st.sampled_from(["sk-", "sk_live_", "AKIA", "AIza", "ghp_", "glpat-", "hf_", "npm_", "xoxb-", "card",
                              "eyJ", "1", "13812345678", "4111", "110101", "X", "-", "_", "a", "Z9"])


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.from_regex(r"[A-Za-z0-9_-]{0,19}", fullmatch=True),
                 st.lists(_ID_PIECES, max_size=8).map("".join),
                 st.from_regex(r"[0-9]{0,19}", fullmatch=True)))
def test_id_shaped_text_the_shortcut_skips_is_text_no_rule_matches(text):
    if s11_redact._nothing_can_match(text):
        assert s11_redact._claims(text) == []
        assert redact(text) == text


@pytest.mark.parametrize("text", ["13812345678", "x13812345678", "AKIA" + "A" * 16, "card4111111111111111"])
def test_id_shaped_text_that_does_hold_a_secret_still_goes_through_the_rules(text):
    assert not s11_redact._nothing_can_match(text) or s11_redact._claims(text) == []
    if s11_redact._claims(text):
        assert redact(text) != text


def test_a_rule_added_later_also_applies_to_short_id_shaped_text_and_remembered_titles(monkeypatch):
    assert s11_redact.redact_short("acme_0123456789ab") == "acme_0123456789ab"
    monkeypatch.setattr(s11_redact, "RULES", RULES + [s11_redact.Rule("acme", "ACME密钥", re.compile(r"acme_[0-9a-f]{12}"))])
    assert s11_redact.redact_short("acme_0123456789ab") == "[已脱敏:ACME密钥]"   # the memo is not stale
    assert redact("acme_0123456789ab") == "[已脱敏:ACME密钥]"


# redact_value looks at the common export shape ([title, chapter-style messages, source]) as one batch first and,
# when no row claims anything, returns a plain copy. The result must be what the general walk gives, always.
_pieces = st.sampled_from(["服务内存从 200MB 涨到 3GB", "方案 A：LRU", "ok", "", "\0", "key=", "@", "card",
                           "手机13812345678", "postgres://app:S3cr3t@db/x", "token: abcdefghijklmnopqrstuv",
                           "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2", "1234", "2026-12-03", "a@example.com"])
_plain_text = st.lists(_pieces | st.text(max_size=8), max_size=4).map("".join)
_plain_keys = st.sampled_from(["role", "content", "name", "password", "api_key", "token", "a@example.com", "b@x.io",
                              "卡", "[已脱敏:邮箱]"])
_plain_shape = st.lists(_plain_text | st.lists(st.dictionaries(_plain_keys, _plain_text, max_size=3), max_size=4),
                        max_size=3)


@settings(max_examples=400, deadline=None)
@given(_plain_shape)
def test_the_plain_shape_shortcut_gives_what_the_general_walk_gives(value):
    original = copy.deepcopy(value)
    fast = redact_value(value)
    assert value == original
    real = s11_redact._plain_texts
    try:
        s11_redact._plain_texts = lambda value: None
        general = redact_value(value)
    finally:
        s11_redact._plain_texts = real
    assert repr(fast) == repr(general)
    copied = fast[0]
    for mine, theirs in zip(copied, value):   # a copy all the way down, even when nothing changed
        assert mine is not theirs or type(mine) is str
        if type(mine) is list:
            assert all(a is not b for a, b in zip(mine, theirs))


def test_the_plain_shape_skips_the_general_walk_unless_a_key_names_a_credential_or_content_has_blocks(monkeypatch):
    walks = []
    real = s11_redact._copy_noting
    monkeypatch.setattr(s11_redact, "_copy_noting", lambda found, value: walks.append(1) or real(found, value))
    chat = ["修复登录服务内存泄漏", [{"role": "user", "content": "服务内存从 200MB 涨到 3GB"}], ""]
    assert redact_value(chat) == (chat, {}) and walks == []
    phone = ["x", [{"role": "user", "content": "手机13812345678", "a@example.com": "k"}], ""]
    assert redact_value(phone) == (["x", [{"role": "user", "content": "手机[已脱敏:手机号]", "[已脱敏:邮箱]": "k"}], ""],
                                   {"邮箱": 1, "手机号": 1}) and walks == []   # claims are masked in the batch
    for walked in (["x", [{"role": "user", "password": "hunter2"}], ""],          # a credential's name
                   ["x", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], ""]):   # blocks
        walks.clear()
        redact_value(walked)
        assert walks


def test_a_rule_that_would_claim_text_inside_a_marker_is_refused_with_its_name(monkeypatch):
    # Its own marker "[已脱敏:LRU]" holds "LRU": each pass would mask the marker again, without end.
    monkeypatch.setattr(s11_redact, "RULES", RULES + [s11_redact.Rule("lru", "LRU", re.compile("LRU"))])
    with pytest.raises(ValueError, match="lru.*已脱敏:LRU"):
        redact("方案 A：LRU")
    # Matching another row's marker is refused too; matching only where a marker starts is harmless (never claimed).
    monkeypatch.setattr(s11_redact, "RULES", RULES + [s11_redact.Rule("mail", "信箱", re.compile("邮箱"))])
    with pytest.raises(ValueError, match="mail"):
        redact("x")
    monkeypatch.setattr(s11_redact, "RULES", RULES + [s11_redact.Rule("open", "开头", re.compile(r"\[已脱敏:|LRU"))])
    assert redact("LRU 与 a@example.com") == "[已脱敏:开头] 与 [已脱敏:邮箱]"
    monkeypatch.setattr(s11_redact, "RULES", RULES)
    assert redact("LRU") == "LRU"   # the refused tables left nothing behind


# _redact_batch first asks _plainly_nothing: a few scans that prove the built-in table can claim nothing in a short
# text. Each built-in row must be guarded by one of its conditions, and the answer must agree with the whole table.
def test_every_built_in_row_is_guarded_by_a_condition_the_quick_check_looks_at():
    table = s11_redact._table()
    sources = {s11_redact._prefixed_words, s11_redact._long_numbers}
    for gate in table.gates:
        assert gate.strings is not None or gate.source in sources, gate.rule.name
    assert all(b"0000" in shape for shape in s11_redact._NUMBER_SHAPES)   # every long number has 0000


_quick_pieces = st.sampled_from(["服务内存从 200MB 涨到 3GB", "方案 A：LRU", "123", "4567", "12 34", "１２３４", "Ｘ",
                                 "a" * 19, "b" * 20, "abcdefghij_klmnopqrst", "key", "KEY=", "@", "://", "card", "卡",
                                 "eyJ", "Bearer ", "sk-", "\n", "\0", "private KEY", "token", "PassWord", "é", "😀"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_quick_pieces | st.text(max_size=6), max_size=10).map("".join))
@example("手机 138 1234 5678")
@example("card 4111-1111-1111-1111")
@example("id AKIAIOSFODNN7EXAMPLE ok")   # a 20-character token: the shortest long word
@example("手机１３８１２３４５６７８")   # full-width digits
def test_the_quick_check_says_nothing_only_where_the_whole_table_without_hints_claims_nothing(text):
    if not s11_redact._plainly_nothing(text):
        return
    saved = s11_redact.RULES
    s11_redact.RULES = [rule._replace(hints=()) for rule in RULES]
    try:
        assert s11_redact._claims(text) == []
    finally:
        s11_redact.RULES = saved


def test_chapter_text_takes_the_quick_check_and_a_changed_table_does_not(monkeypatch):
    built = []
    real = s11_redact._HintIndex
    monkeypatch.setattr(s11_redact, "_HintIndex", lambda text, *more: built.append(text) or real(text, *more))
    chat = ["修复登录服务内存泄漏", "服务连续运行 3 天后，内存占用从 200MB 一路涨到 3GB，帮我定位根因。", "role", "content"]
    assert s11_redact._redact_batch(chat) == (chat, {}) and built == []
    assert s11_redact._redact_batch(chat + ["电话 13812345678"])[1] == {"手机号": 1} and built
    monkeypatch.setattr(s11_redact, "RULES", RULES + [s11_redact.Rule("lru", "缓存策略", re.compile("LRU"))])
    built.clear()
    assert s11_redact._redact_batch(["方案 A：LRU"]) == (["方案 A：[已脱敏:缓存策略]"], {"缓存策略": 1}) and built


# Exports of chapter-shaped sessions remember the texts the quick check found clean (forks carry their parent's
# messages; a class runs the same demo), so the next export of the same text looks it up instead of scanning it.
def test_texts_found_clean_are_looked_up_next_time_and_forgotten_when_the_rules_change(monkeypatch):
    s11_redact._clean_texts.clear()
    calls = []
    quick = s11_redact._plainly_nothing
    monkeypatch.setattr(s11_redact, "_plainly_nothing", lambda text: calls.append(text) or quick(text))
    session = ["标题", [{"role": "user", "content": "方案 A：LRU 缓存"}, {"role": "assistant", "content": "好的"}], ""]
    assert redact_value(session) == (session, {}) and len(calls) == 1
    calls.clear()
    copied, counts = redact_value(session)
    assert (copied, counts, calls) == (session, {}, []) and copied[1][0] is not session[1][0]   # still a copy
    # one new message: only it is checked, the remembered ones are not joined again
    session[1].append({"role": "user", "content": "再试一次"})
    assert redact_value(session) == (session, {}) and calls == ["再试一次"]
    # a secret next to remembered texts is still masked
    session[1].append({"role": "user", "content": "电话 13812345678"})
    assert redact_value(session)[1] == {"手机号": 1}
    # a new row that claims a remembered text: the memory is dropped with the old table
    monkeypatch.setattr(s11_redact, "RULES", RULES + [s11_redact.Rule("lru", "缓存策略", re.compile("LRU"))])
    assert redact_value(session)[0][1][0]["content"] == "方案 A：[已脱敏:缓存策略] 缓存"
    assert "方案 A：LRU 缓存" not in s11_redact._clean_texts
    assert s11_redact._clean_size == [0]   # the count restarts with the new table, so the bound stays exact


def test_the_memory_of_clean_texts_is_bounded(monkeypatch):
    s11_redact._clean_texts.clear()
    monkeypatch.setattr(s11_redact, "_CLEAN_CHARS", 1_000)
    for number in range(50):
        redact_value(["t", [{"role": "user", "content": f"第 {number} 条：" + "好" * 95}], ""])
        assert sum(map(len, s11_redact._clean_texts)) <= 1_000
    assert any("第 49 条" in text for text in s11_redact._clean_texts)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_quick_pieces | st.deferred(lambda: _batch_pieces), max_size=4).map("".join), min_size=1,
                max_size=6))
@example(["好的", "电话 13812345678"])
@example(["１２３４", "Ｘa@example.com"])
def test_an_export_that_remembers_clean_texts_redacts_as_a_fresh_one_does(contents):
    session = ["标题", [{"role": "user", "content": text} for text in contents], ""]
    first = redact_value(copy.deepcopy(session))
    assert redact_value(copy.deepcopy(session)) == first   # now partly from memory
    s11_redact._clean_texts.clear()
    assert redact_value(copy.deepcopy(session)) == first
    assert first[0] == ["标题", [{"role": "user", "content": redact(text)} for text in contents], ""]


# _copy_noting recognises the exact JSON types first. Whatever it meets, it must record what the plain isinstance walk
# records, in the same order, and copy what that walk copies.
def _reference_copy_noting(found, value):
    is_dict = isinstance(value, dict)
    items = value.items() if is_dict else enumerate(value)
    copied = {} if is_dict else [None] * len(value)
    if is_dict:
        found.dicts.append(copied)
    for key, item in items:
        if is_dict and isinstance(key, str):
            found.keys[key] = None
        if isinstance(item, str):
            copied[key] = item
            found.strings.append((copied, key))
            if is_dict and isinstance(key, str) and s11_redact._is_credential_name(key):
                found.credentials.append((copied, key))
        elif isinstance(item, (dict, list, tuple)):
            copied[key] = _reference_copy_noting(found, item)
        else:
            copied[key] = copy.deepcopy(item)
            if type(item) in (int, float) and abs(item) >= s11_redact._BIG_NUMBER and item == item:
                found.numbers.append((copied, key))
    return copied


class _Text(str):
    pass


class _Mapping(dict):
    pass


_walk_leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
                         st.sampled_from(["a@example.com", _Text("x@example.com"), 13812345678, 1e12, True]),
                         st.builds(collections.Counter, st.text(max_size=2)), st.builds(bytearray, st.binary(max_size=3)))
_walk_keys = st.one_of(st.sampled_from(["role", "content", "password", "api_key", _Text("token"), "卡"]),
                       st.text(max_size=4), st.integers(), st.none())
_walk_values = st.recursive(_walk_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(_walk_keys, inner, max_size=3), st.dictionaries(_walk_keys, inner, max_size=2).map(_Mapping)),
    max_leaves=12)


def _noted(found):
    where = lambda slots: [(type(container).__name__, key) for container, key in slots]   # noqa: E731
    return (where(found.strings), where(found.numbers), where(found.credentials), list(found.keys),
            [type(mapping).__name__ for mapping in found.dicts])


@settings(max_examples=400, deadline=None)
@given(st.lists(_walk_values, max_size=3))
def test_the_walk_records_and_copies_what_the_isinstance_walk_does(value):
    ours, reference = s11_redact._Found(), s11_redact._Found()
    copied, expected = s11_redact._copy_noting(ours, value), _reference_copy_noting(reference, value)
    assert _noted(ours) == _noted(reference)
    assert repr(copied) == repr(expected)
    # nothing mutable is shared with the input
    originals = {id(item) for item in _containers(value)}
    assert not originals & {id(item) for item in _containers(copied)}


def _containers(value):
    if isinstance(value, (dict, list, tuple, collections.Counter, bytearray)):
        yield value
        if isinstance(value, (list, tuple)):
            for item in value:
                yield from _containers(item)
        elif isinstance(value, dict):
            for item in value.values():
                yield from _containers(item)


# redact_value redacts all of a value's strings as one batch (joined by a separator no row can match across).
# Whatever the batch does to save time, each string must come out as redacting it alone gives, counts summed.
_batch_pieces = st.sampled_from([
    "ok", "\n", "\0", "\n\0\n", "手机13812345678", "１３８１２３４５６７８", "a@example.com", "x]", "[已脱敏:邮箱]",
    "postgres://app:S3cr3t@db/x", "Authorization: Bearer abcdefghijklmnop1234", "-----BEGIN RSA PRIVATE KEY-----\nMIIE",
    "-----END RSA PRIVATE KEY-----", "card number: 4111 1111 1111 1111", "身份证11010519491231002X", "API_KEY=",
    "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2", "token = abcdef123456XYZ", " ", "服务内存从 200MB 涨到 3GB",
    "a@example.com13812345678",   # the phone is matchable only once the e-mail before it is masked
    "Ｘ", "－", "１２３４", "身份证１１０１０５１９４９１２３１００２Ｘ"])   # full-width X and dash count only beside full-width digits
_batch_strings = st.lists(st.lists(_batch_pieces | st.text(max_size=6), max_size=5).map("".join), max_size=8)


@settings(max_examples=500, deadline=None)
@given(_batch_strings)
@example(["ok", "a@example.com13812345678手机", ""])   # one batch, and a second pass after the first masks
@example(["a@example.com", "x\n\0", "手机13812345678"])   # a string holding "\0": each string on its own
@example(["ok 1234", "手机１３８１２３４５６７８", "abc"])   # full-width digits are looked for in the non-ASCII strings
@example(["\0"])
@example(["\n\0\n", "a@example.com13812345678"])
@example(["１２３４", "Ｘa@example.com"])   # digits in another string do not turn this full-width X into an ASCII one
@example(["１２３４ a@example.com", "Ｘa@example.com"])   # ... nor in the second look after the masks
def test_a_batch_of_strings_is_redacted_as_each_string_alone(strings):
    pieces, counts = s11_redact._redact_batch(list(strings))
    alone = [redact_with_counts(string) for string in strings]
    assert pieces == [text for text, _ in alone]
    total = {}
    for _, found in alone:
        for label, count in found.items():
            total[label] = total.get(label, 0) + count
    assert counts == s11_redact._in_rule_order(collections.Counter(total))
