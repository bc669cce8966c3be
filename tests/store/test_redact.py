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
ALIBABA = "LTAI" + "5tQ8xKp2Rv7mNw3Z"                                        # Alibaba Cloud AccessKey ID
TWILIO = "SK" + "2b7c1e9f0a3d4c5b" + "8e6f7a9b0c1d2e3f"
TELEGRAM = "5123456789" + ":" + "AAH" + "dqTcvCH1vGWJxfSeofSAs0K5PALDsaw4"    # bot id : 35 characters
DIGITALOCEAN = "dop_" + "v1_" + "a1b2c3d4e5f6" * 5 + "a1b2"
DIGITALOCEAN_OAUTH = "doo_" + "v1_" + "0f9e8d7c6b5a" * 5 + "4321"
DISCORD_PATH = "1122334455667788" + "99/" + "Xy7Qm2Lp9Rt4Vn8Kc3Hs6Jd1-Wm2Np5Qr8Tv0Yb_E4Fg7Hk2Lm5Nq8Rs1Uv4Xz7Ab0Cd3Ef6Gh9"
SAS_SIGNATURE = "J7Gz%2FXq3Lp9Rt4Vn8Kc3" + "Hs6Jd1Wm2Np5Qr8Tv0Yb%2BE%3D"   # URL-encoded base64
SESSION_ID = "8f3k2j4h5g" + "6f7d8s9a0q"
JSON_PASSWORD = "hunter2-" + "Xy7Qm2"
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
    "discord_webhook": (
        [(f"curl -X POST https://discord.com/api/webhooks/{DISCORD_PATH}", DISCORD_PATH),
         (f"WEBHOOK=https://discordapp.com/api/webhooks/{DISCORD_PATH}", DISCORD_PATH)],
        ["https://discord.com/api/webhooks/<id>/<token>", "https://discord.com/developers/docs/resources/webhook"],
    ),
    "alibaba_access_key": (
        [(f"ALIBABA_CLOUD_ACCESS_KEY_ID={ALIBABA}", ALIBABA), (f"阿里云 AccessKey ID：{ALIBABA}，别外传", ALIBABA),
         (f'"AccessKeyId": "{ALIBABA}"', ALIBABA)],
        ["LTAI is the prefix of Alibaba Cloud AccessKey IDs", "LTAIabcdefghijklmnop", "XLTAI5tQ8xKp2Rv7mNw3Z"],
    ),
    "twilio_api_key": (
        [(f"TWILIO_API_KEY={TWILIO}", TWILIO), (f"client = Client('{TWILIO}', secret)", TWILIO)],
        ["SKU-1234567890 is out of stock", "SK" + "0" * 32, "SK" + "abcdef" * 5 + "ab"],
    ),
    "digitalocean_token": (
        [(f"export DIGITALOCEAN_ACCESS_TOKEN={DIGITALOCEAN}", DIGITALOCEAN), (f"doctl auth init -t {DIGITALOCEAN_OAUTH}",
                                                                          DIGITALOCEAN_OAUTH)],
        ["dop_v1_ is the prefix of DigitalOcean personal tokens", "dop_v1_" + "g" * 64],
    ),
    "telegram_bot_token": (
        [(f"curl https://api.telegram.org/bot{TELEGRAM}/sendMessage", TELEGRAM), (f"机器人令牌 {TELEGRAM}", TELEGRAM)],
        ["1732867200:" + "a" * 35, "at 12:30:45 the bot 123456789 answered", "x5123456789:" + TELEGRAM.split(":")[1]],
    ),
    "azure_sas": (
        [("https://shop.blob.core.windows.net/c/a.txt?sv=2022-11-02&ss=b&sp=r&se=2026-01-01T00%3A00%3A00Z&sig="
          + SAS_SIGNATURE, SAS_SIGNATURE), (f"?sp=racwdl&sig={SAS_SIGNATURE}&spr=https", SAS_SIGNATURE)],
        ["https://shop.blob.core.windows.net/c/a.txt?sv=2022-11-02&sig=<signature>", "the sig= parameter signs it",
         "x.png?sig=short"],
    ),
    "cookie": (
        [(f"Cookie: sessionid={SESSION_ID}; csrftoken=Zx9", SESSION_ID),
         (f"Set-Cookie: PHPSESSID={SESSION_ID}; Path=/; HttpOnly", SESSION_ID),
         (f"curl -H 'Cookie: session={SESSION_ID}' https://example.com", SESSION_ID)],
        ["Cookie: <none>", "the Cookie header carries the sessionid", "Set-Cookie: theme=dark",
         "cookie_jar = requests.cookies.RequestsCookieJar()"],
    ),
    "json_in_json": (
        [('"SecretString": "{\\"username\\":\\"admin\\",\\"password\\":\\"' + JSON_PASSWORD + '\\"}"', JSON_PASSWORD),
         ('{"data": {"config.json": "{\\"db\\": {\\"token\\": \\"' + JSON_PASSWORD + '\\"}}"}}', JSON_PASSWORD),
         ('"text": "{\\\\\\"api_key\\\\\\":\\\\\\"' + JSON_PASSWORD + '\\\\\\"}"', JSON_PASSWORD)],
        ['"SecretString": "{\\"username\\":\\"admin\\",\\"region\\":\\"us-east-1\\"}"',
         '{\\"password\\":\\"${DB_PASSWORD}\\"}', '{\\"token_type\\":\\"Bearer\\"}'],
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


def test_a_new_row_needs_only_a_name_a_label_and_a_pattern(monkeypatch):
    acme_key = re.compile(r"acme_[0-9a-f]{12}")
    text = "first line acme_0123456789ab\nsecond line ACME: acme_ba9876543210"
    assert redact_with_counts(text) == (text, {})
    monkeypatch.setattr(s11_redact, "RULES", RULES + [s11_redact.Rule("acme", "ACME密钥", acme_key)])
    assert redact(text) == "first line [已脱敏:ACME密钥]\nsecond line ACME: [已脱敏:ACME密钥]"
    assert redact_value({"acme_0123456789ab": 1})[0] == {"[已脱敏:ACME密钥]": 1}


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


# ── one structured pass: what export masks is what the review lists ─────────────────────────────────────


def test_json_in_json_masks_the_inner_value_and_never_claims_the_opening_brace():
    text = '"SecretString": "{\\"username\\":\\"admin\\",\\"password\\":\\"' + JSON_PASSWORD + '\\"}"'
    claims = s11_redact.find(text)
    assert [(text[start:end], label) for start, end, label in claims] == [(JSON_PASSWORD, "凭据")]
    assert redact(text) == text.replace(JSON_PASSWORD, "[已脱敏:凭据]")


def test_scan_value_finds_every_place_redact_value_masks_with_its_path():
    value = {"input": {"phone": 13812345678, "card": int(CARD), "passwd": "hunter2", "Cookie": f"sessionid={SESSION_ID}",
                       "a@example.com": [f"key {ALIBABA}"]}}
    found = [(finding.path, finding.part, finding.found, finding.label) for finding in s11_redact.scan_value(value)]
    assert found == [(("input", "phone"), "value", "13812345678", "手机号"),
                     (("input", "card"), "value", CARD, "银行卡号"),
                     (("input", "passwd"), "value", "hunter2", "凭据"),
                     (("input", "Cookie"), "value", f"sessionid={SESSION_ID}", "凭据"),
                     (("input", "a@example.com"), "key", "a@example.com", "邮箱"),
                     (("input", "a@example.com", 0), "value", ALIBABA, "阿里云密钥")]
    masked, counts = redact_value(value)
    assert masked == {"input": {"phone": "[已脱敏:手机号]", "card": "[已脱敏:银行卡号]", "passwd": "[已脱敏:凭据]",
                                "Cookie": "[已脱敏:凭据]", "[已脱敏:邮箱]": ["key [已脱敏:阿里云密钥]"]}}
    assert sum(counts.values()) == len(found)


def test_a_key_repeated_in_two_dicts_is_masked_and_counted_in_each():
    redacted, counts = redact_value([{"a@example.com": 1}, {"a@example.com": 2}])
    assert redacted == [{"[已脱敏:邮箱]": 1}, {"[已脱敏:邮箱]": 2}] and counts == {"邮箱": 2}


_structured_pieces = st.sampled_from([
    "ok", "\n", "手机13812345678", "１３８１２３４５６７８", "a@example.com", "x]", "[已脱敏:邮箱]", "Ｘ", "－",
    "postgres://app:S3cr3t@db/x", "Authorization: Bearer abcdefghijklmnop1234", "-----BEGIN RSA PRIVATE KEY-----\nMIIE",
    "card number: 4111 1111 1111 1111", "身份证11010519491231002X", "API_KEY=", "token = abcdef123456XYZ",
    "a@example.com13812345678",   # the phone is matchable only once the e-mail before it is masked
    '{\\"password\\":\\"hunter2x\\"}', "Cookie: sessionid=abcdefgh1234", TELEGRAM, "sig=" + SAS_SIGNATURE, "?"])
_structured_text = st.lists(_structured_pieces | st.text(max_size=5), max_size=6).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(_structured_text, max_size=5))
@example(["a@example.com13812345678", "x a@example.com13812345678 [已脱敏:邮箱]13812345678"])
def test_each_string_in_a_value_comes_out_as_redact_gives_it_and_redacting_again_changes_nothing(texts):
    redacted, counts = redact_value({"messages": [{"role": "user", "content": text} for text in texts]})
    alone = [redact_with_counts(text) for text in texts]
    assert [message["content"] for message in redacted["messages"]] == [text for text, _ in alone]
    total = collections.Counter()
    for _, found in alone:
        total.update(found)
    assert counts == s11_redact._in_rule_order(total)
    for text, _ in alone:
        assert redact_with_counts(text) == (text, {})


@pytest.mark.parametrize(("text", "masked"), [
    ("Server=db;User Id=sa;Password=gsNXiVmRlMG;", True),     # a random word of mixed case is data
    ("login(user, password=getPassword)", False), ("call(token=accessToken, retries=3)", False),
    ("f(token=token)", False), ("f(password=gsNXiVmRlMG)", True),
])
def test_a_bare_word_after_a_lowercase_name_is_data_only_when_it_is_not_shaped_like_an_identifier(text, masked):
    assert ("[已脱敏:凭据]" in redact(text)) is masked
