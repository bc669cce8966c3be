"""Redaction on a realistic mixed text: every planted secret is masked, look-alikes survive.

    build_corpus(seed) ──► text: log lines, Python/JS code, JSON tool output, shell, CSS, Chinese prose
                            │     + one planted secret every few lines (all kinds, all spellings)
                            │     + look-alikes: order numbers, snowflake ids, floats, timestamps,
                            │       UUIDs, git shas, versions, hex colours, CSS classes, code like `token=token`
                            ▼
                   redact_with_counts(text) ──► true-positive rate  = planted secrets whose text is gone
                                                false-positive rate = look-alikes that were changed,
                                                                      and masks beyond the planted ones

Run `python -m pytest -s tests/store/test_redact_corpus.py` to see the rates. `build_corpus` is also the realistic
text of `benchmarks/bench_redact.py`. Every fake secret is generated from a seeded RNG at runtime (secret
scanners never see a literal one in this file); none of them is a real credential.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from collections import Counter
from dataclasses import dataclass, field

import pytest

from s11_redact import MARKER, RULES, redact_with_counts

UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
BASE62 = UPPER + LOWER + DIGITS
BASE64 = BASE62 + "+/"
BASE64URL = BASE62 + "-_"
HEX = "0123456789abcdef"


@dataclass
class Planted:
    kind: str        # e.g. "phone +86 spaced"
    label: str       # the marker label the module must use
    exposed: list    # substrings that must not survive redaction


@dataclass
class Corpus:
    text: str
    planted: list = field(default_factory=list)       # Planted
    lookalikes: list = field(default_factory=list)    # (category, exact text that must survive)


# ── random material ─────────────────────────────────────────────────────────────────────────


def pick(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def random_token(rng: random.Random, alphabet: str, length: int) -> str:
    """A random token that contains an upper-case letter, a lower-case letter and a digit (as real keys do)."""
    while True:
        token = pick(rng, alphabet, length)
        if any(c.isupper() for c in token) + any(c.islower() for c in token) + any(c.isdigit() for c in token) >= 2:
            return token


def luhn_complete(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + pick(rng, DIGITS, length - len(prefix) - 1)
    for check in DIGITS:
        digits = [int(c) for c in reversed(body + check)]
        total = sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(digits))
        if total % 10 == 0:
            return body + check
    raise AssertionError("unreachable")


def luhn_ok(number: str) -> bool:
    digits = [int(c) for c in reversed(number)]
    return sum(d if i % 2 == 0 else sum(divmod(d * 2, 10)) for i, d in enumerate(digits)) % 10 == 0


def id_number(rng: random.Random) -> str:
    region = rng.choice(["110105", "310115", "440524", "510104", "330106", "420111"])
    born = f"{rng.randint(1950, 2005)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
    body = region + born + pick(rng, DIGITS, 3)
    total = sum(int(d) * pow(2, 17 - i, 11) for i, d in enumerate(body))
    return body + "10X98765432"[total % 11]


def mobile(rng: random.Random) -> str:
    return rng.choice(["13", "15", "17", "18", "19"]) + pick(rng, DIGITS, 9)


def snowflake(rng: random.Random) -> int:
    epoch = rng.choice([1288834974657, 1420070400000])                # Twitter's and Discord's epochs
    now_ms = rng.randint(1_500_000_000_000, 1_790_000_000_000)
    return ((now_ms - epoch) << 22) | (rng.randrange(1024) << 12) | rng.randrange(4096)


def order_number(rng: random.Random) -> str:
    length = rng.randint(16, 19)
    if rng.random() < 0.5:                                              # date-prefixed, the common style
        date = f"20{rng.randint(18, 26)}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
        return date + pick(rng, DIGITS, length - 8)
    return rng.choice("123456789") + pick(rng, DIGITS, length - 1)      # plain random


def uuid4(rng: random.Random) -> str:
    h = pick(rng, HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:]}"


# ── planted secrets: one maker per kind, each returns (line, Planted) ───────────────────────


def _pem(rng):
    kind = rng.choice(["RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", ""])
    body = [pick(rng, BASE64, 64) for _ in range(rng.randint(3, 6))]
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n" + "\n".join(body) + f"\n-----END {kind}PRIVATE KEY-----"
    return f"cat ~/.ssh/id_key\n{block}", Planted(f"pem {kind.strip() or 'PKCS8'}", "私钥", body)


def _pgp(rng):
    body = [pick(rng, BASE64, 64) for _ in range(4)]
    block = ("-----BEGIN PGP PRIVATE KEY BLOCK-----\nComment: exported\n\n" + "\n".join(body)
             + f"\n={pick(rng, BASE64, 4)}\n-----END PGP PRIVATE KEY BLOCK-----")
    return block, Planted("pgp private key block", "私钥", body)


def _jwt(rng):
    payload = base64.urlsafe_b64encode(json.dumps({"sub": pick(rng, DIGITS, 10), "iat": 1732867200}).encode())
    token = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + payload.decode().rstrip("=") + "."
             + pick(rng, BASE64URL, 43))
    line = rng.choice(["Authorization: Bearer {}", '{{"id_token": "{}", "expires_in": 3600}}', "token={}",
                       "Cookie: session={}; Path=/"]).format(token)
    return line, Planted("jwt", "JWT", [token.split(".")[1], token.split(".")[2]])


def _bearer(rng):
    token = random_token(rng, BASE62 + "-._~", rng.randint(24, 48))
    word, gap = rng.choice(["Bearer", "BEARER", "bearer"]), rng.choice([" ", "  ", "\t"])
    line = rng.choice(["Authorization: {}{}{}", "curl -H 'authorization: {}{}{}' https://api.example.com/v1/me",
                       "headers = {{\"Authorization\": \"{}{}{}\"}}"]).format(word, gap, token)
    return line, Planted(f"bearer {word!r} gap {gap!r}", "Bearer令牌", [token])


def _auth_header(rng):
    if rng.random() < 0.5:
        secret = base64.b64encode(f"deploy:{random_token(rng, BASE62, 14)}".encode()).decode()
        line = rng.choice(["Authorization: Basic {}", 'curl -H "authorization: basic {}" https://ci.example.com'])
    else:
        secret = pick(rng, HEX, 40)
        line = rng.choice(["Authorization: token {}", "-H 'Authorization: Token {}'"])
    return line.format(secret), Planted("authorization basic/token", "认证信息", [secret])


def _sk_key(rng):
    key = rng.choice([lambda: "sk-" + "proj-" + random_token(rng, BASE64URL, 64),
                      lambda: "sk-" + random_token(rng, BASE62, 48),
                      lambda: "sk-" + pick(rng, HEX, 32),                       # DeepSeek / DashScope style
                      lambda: "sk-" + "ant-api03-" + random_token(rng, BASE64URL, 93) + "AA"])()
    line = rng.choice(["OPENAI_API_KEY={}", 'client = OpenAI(api_key="{}")', "密钥是 {} 用完就删",
                       "export ANTHROPIC_API_KEY='{}'"]).format(key)
    return line, Planted("sk- api key", "API密钥", [key[3:]])


def _stripe(rng):
    key = rng.choice(["sk_" + "live_", "rk_" + "live_", "sk_" + "test_"]) + random_token(rng, BASE62, rng.randint(24, 99))
    return f"stripe.api_key = \"{key}\"", Planted("stripe key", "Stripe密钥", [key[8:]])


def _aws_access(rng):
    key = rng.choice(["AKIA", "ASIA"]) + pick(rng, UPPER + "234567", 16)
    return rng.choice(["aws_access_key_id = {}", "AccessKeyId: {}"]).format(key), Planted("aws access key", "AWS密钥", [key])


def _aws_secret(rng):
    secret = random_token(rng, BASE64, 40)
    line = rng.choice(["aws_secret_access_key = {}", "export AWS_SECRET_ACCESS_KEY={}", '"SecretAccessKey": "{}",',
                       "AWS secret key: {}"]).format(secret)
    return line, Planted("aws secret access key", "AWS密钥", [secret])


def _prefixed(kind, label, prefix, alphabet, length):
    def make(rng):
        token = prefix + random_token(rng, alphabet, length)
        line = rng.choice(["token: {}", "{} # do not commit", "[auth]\nkey = \"{}\"", "用这个令牌 {} 拉取"]).format(token)
        return line, Planted(kind, label, [token[len(prefix):]])
    return make


def _slack_webhook(rng):
    url = f"https://hooks.slack.com/services/T{pick(rng, UPPER + DIGITS, 8)}/B{pick(rng, UPPER + DIGITS, 8)}/"
    secret = random_token(rng, BASE62, 24)
    return f"curl -X POST -d @msg.json {url}{secret}", Planted("slack webhook", "Slack Webhook", [secret])


def _azure(rng):
    key = random_token(rng, BASE64, 86) + "=="
    line = f"DefaultEndpointsProtocol=https;AccountName=shop;AccountKey={key};EndpointSuffix=core.windows.net"
    return line, Planted("azure account key", "Azure密钥", [key[:-2]])


def _url_password(rng):
    password = random_token(rng, BASE62 + "!*~", rng.randint(8, 16))
    scheme, host = rng.choice([("postgres", "10.0.0.5:5432/app"), ("mysql", "db.internal/shop"),
                               ("redis", "cache.example.com:6379/0"), ("https", "git.example.com/team/repo.git"),
                               ("mongodb+srv", "cluster0.example.net/test")])
    user = rng.choice(["app", "admin", "deploy", ""])
    line = rng.choice(["DATABASE_URL={}://{}:{}@{}", "连接串 {}://{}:{}@{} 已生效", "git clone {}://{}:{}@{}"])
    return line.format(scheme, user, password, host), Planted(f"{scheme} url password", "密码", [password])


def _env_line(rng):
    name = rng.choice(["API_KEY", "DB_PASSWORD", "JWT_SECRET", "SECRET_TOKEN", "MYSQL_ROOT_PASSWORD", "SESSION_SECRET",
                       "AUTH_TOKEN", "CLIENT_SECRET", "ACCESS_TOKEN", "PRIVATE_KEY_PASSPHRASE", "SECRET_KEY_BASE"])
    value = random_token(rng, BASE62 + "!#%^*-", rng.randint(10, 28))
    line = rng.choice(["{}={}", "export {}={}", "{}: {}", '{}="{}"', "  {}: '{}'"]).format(name, value)
    return line, Planted(f"env {name}", "凭据", [value])


def _config_field(rng):
    value = random_token(rng, BASE62 + "!#%^*", rng.randint(10, 24))
    line = rng.choice(['{{"password": "{}", "user": "root"}}', '"client_secret":"{}",', "password: {}",
                       "  apiKey: '{}',", "db_password = '{}'", "Server=db;User Id=sa;Password={};"])
    return line.format(value), Planted("config field", "凭据", [value])


def _email(rng):
    address = f"{pick(rng, LOWER, rng.randint(3, 8))}.{pick(rng, LOWER, 4)}@{rng.choice(['example.com', 'corp.example.cn', 'mail.example.org'])}"
    line = rng.choice(["Author: Wang <{}>", "请联系{}确认", "git config user.email {}"]).format(address)
    return line, Planted("email", "邮箱", [address])


PHONE_FORMATS = {
    "plain": lambda n: n,
    "+86 spaced": lambda n: f"+86 {n[:3]} {n[3:7]} {n[7:]}",
    "+86 glued": lambda n: f"+86{n}",
    "0086": lambda n: f"0086{n}",
    "Tel glued": lambda n: f"Tel{n}",
    "dots": lambda n: f"{n[:3]}.{n[3:7]}.{n[7:]}",
    "dashes": lambda n: f"{n[:3]}-{n[3:7]}-{n[7:]}",
    "full-width": lambda n: n.translate(str.maketrans(DIGITS, "０１２３４５６７８９")),
}


def _phone(rng):
    number = mobile(rng)
    style = rng.choice(list(PHONE_FORMATS))
    written = PHONE_FORMATS[style](number)
    line = rng.choice(["手机{}请回电", "联系电话：{}", '{{"phone": "{}"}}', "call me at {} tomorrow"]).format(written)
    exposed = written.removeprefix("+86").removeprefix("0086").removeprefix("Tel").strip()
    return line, Planted(f"phone {style}", "手机号", [exposed])


def _id(rng):
    number = id_number(rng)
    style = rng.choice(["plain", "6-8-4", "6-4-4-4"])
    written = {"plain": number, "6-8-4": f"{number[:6]} {number[6:14]} {number[14:]}",
               "6-4-4-4": f"{number[:6]} {number[6:10]} {number[10:14]} {number[14:]}"}[style]
    return rng.choice(["身份证号{}已核验", "id_card: {}", "证件号码 {}"]).format(written), Planted(f"id {style}", "身份证号", [written])


def _card(rng):
    issuer, prefix, length = rng.choice([("visa", "4", 16), ("mastercard", "53", 16), ("unionpay", "6222", 19),
                                         ("amex", "37", 15), ("jcb", "3566", 16)])
    number = luhn_complete(rng, prefix, length)
    style = rng.choice(["word", "spaces", "dashes", "dots", "bare"])
    if style in ("spaces", "dashes", "dots"):
        sep = {"spaces": " ", "dashes": "-", "dots": "."}[style]
        groups = [number[:4], number[4:10], number[10:]] if length == 15 else \
                 [number[i:i + 4] for i in range(0, length, 4)]
        written = sep.join(groups)
        line = rng.choice(["支付用的 {}", "paid with {} yesterday"]).format(written)
    elif style == "word":
        written = number
        line = rng.choice(["卡号{}，有效期12/28", "银行卡 {}", "card number: {}", "信用卡：{}"]).format(number)
    else:
        written = number
        line = rng.choice(["{} 12/28 CVV 123", "付款 {} 成功"]).format(number)
    return line, Planted(f"card {issuer} {style}", "银行卡号", [written])


def _alibaba(rng):
    key = "LTAI" + random_token(rng, BASE62, rng.randint(12, 30))
    line = rng.choice(["ALIBABA_CLOUD_ACCESS_KEY_ID={}", "阿里云 AccessKey ID：{}，别外传", '"AccessKeyId": "{}",',
                       "aliyun configure set --access-key-id {}"]).format(key)
    return line, Planted("alibaba cloud access key", "阿里云密钥", [key[4:]])


def _twilio(rng):
    key = "SK" + pick(rng, HEX[:10], 6) + pick(rng, HEX[10:], 4) + pick(rng, HEX, 22)   # a digit and a letter
    line = rng.choice(["TWILIO_API_KEY={}", "client = Client('{}', api_secret, account_sid)"]).format(key)
    return line, Planted("twilio api key", "Twilio密钥", [key[2:]])


def _telegram(rng):
    token = f"{rng.randint(10_000_000, 9_999_999_999)}:AA" + random_token(rng, BASE64URL, 33)
    line = rng.choice(["curl https://api.telegram.org/bot{}/getMe", "TELEGRAM_BOT_TOKEN={}", "机器人令牌 {}"]).format(token)
    return line, Planted("telegram bot token", "Telegram令牌", [token.split(":")[1]])


def _digitalocean(rng):
    token = rng.choice(["dop", "doo", "dor"]) + "_v1_" + pick(rng, HEX, 64)
    line = rng.choice(["export DIGITALOCEAN_ACCESS_TOKEN={}", "doctl auth init -t {}", "{}"]).format(token)
    return line, Planted(f"digitalocean {token[:3]}", "DigitalOcean令牌", [token[7:]])


def _discord_webhook(rng):
    secret = f"{pick(rng, DIGITS, 18)}/{random_token(rng, BASE64URL, 68)}"
    host = rng.choice(["discord.com", "discordapp.com"])
    return (f"curl -H 'Content-Type: application/json' -d @m.json https://{host}/api/webhooks/{secret}",
            Planted("discord webhook", "Discord Webhook", [secret.split("/")[1]]))


def _azure_sas(rng):
    signature = "".join(rng.choice([rng.choice(BASE62), rng.choice(BASE62), "%2B", "%2F"]) for _ in range(40)) + "%3D"
    url = (f"https://shop.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r"
           f"&se=2026-01-01T00%3A00%3A00Z&spr=https&sig={signature}")
    return rng.choice(["azcopy copy '{}' .", "SAS URL: {}"]).format(url), Planted("azure sas sig", "Azure SAS签名",
                                                                               [signature])


def _cookie(rng):
    value = random_token(rng, BASE62, rng.randint(20, 40))
    name = rng.choice(["sessionid", "PHPSESSID", "JSESSIONID", "_session", "connect.sid"])
    line = rng.choice(["Cookie: {}={}; theme=dark", "Set-Cookie: {}={}; Path=/; HttpOnly; Secure",
                       "curl -H 'Cookie: {}={}' https://app.example.com/me"]).format(name, value)
    return line, Planted(f"cookie {name}", "Cookie", [value])


def _json_in_json(rng):
    value = random_token(rng, BASE62 + "!#%^*-", rng.randint(10, 24))
    name = rng.choice(["password", "api_key", "token", "client_secret"])
    inner = json.dumps({"username": "admin", name: value, "host": "db.internal"})
    line = rng.choice([                                                      # what agents print every day
        lambda: json.dumps({"Name": "prod/db", "SecretString": inner}),     # aws secretsmanager get-secret-value
        lambda: json.dumps({"kind": "ConfigMap", "data": {"app.json": inner}}),          # kubectl get cm -o json
        lambda: json.dumps({"content": [{"type": "text", "text": json.dumps({"result": inner})}]}),   # MCP, 2 levels
    ])()
    return line, Planted(f"json-in-json {name}", "凭据", [value])


NEW_KINDS = [_alibaba, _twilio, _telegram, _digitalocean, _discord_webhook, _azure_sas, _cookie, _json_in_json]   # issue 41

MAKERS = [_pem, _pgp, _jwt, _bearer, _auth_header, _sk_key, _stripe, _aws_access, _aws_secret,
          _prefixed("google api key", "Google密钥", "AIza", BASE64URL, 35),
          _prefixed("github classic", "GitHub令牌", "ghp_", BASE62, 36),
          _prefixed("github oauth", "GitHub令牌", "gho_", BASE62, 36),
          _prefixed("github fine-grained", "GitHub令牌", "github_pat_", BASE62 + "_", 82),
          _prefixed("gitlab", "GitLab令牌", "glpat-", BASE62 + "-_", 20),
          _prefixed("hugging face", "Hugging Face令牌", "hf_", UPPER + LOWER, 34),
          _prefixed("npm", "npm令牌", "npm_", BASE62, 36),
          _prefixed("slack bot", "Slack令牌", "xoxb-", DIGITS + "-" + BASE62, 50),
          _slack_webhook, _azure, _url_password, _env_line, _config_field, _email, _phone, _id, _card, *NEW_KINDS]


# ── ordinary text with look-alikes ──────────────────────────────────────────────────────────

# Code and config that only mention secrets: none of these lines holds one.
CODE_MENTIONS = [
    "    response = client.chat(model=model, max_tokens=4096, api_key=api_key)",
    "    token = tokenizer.encode(text)[0]", "    password = getpass.getpass()",
    "def login(user, password=None, token: str | None = None):", "    secret = secrets.token_hex(16)",
    '    headers["Authorization"] = f"Bearer {token}"', "  PI = 3.14159265358", "  E = 2.718281828459045",
    "  max_tokens: 4096", '  "token_count": 1523,', "  - run: npm i lodash@4.17.21", "@dataclass\nclass Session:",
    '  "password": "",', "  API_KEY: ${{ secrets.API_KEY }}", "  DB_PASSWORD=$DB_PASSWORD",
    '  api_key = os.environ["OPENAI_API_KEY"]', "  token=token,", "Bearer authentication is described in RFC 6750.",
    "sk-learn is not a package name", "  PWD=/home/alice/project", "  image: logo@2x.png", '  "token_type": "Bearer",',
    "  SECRET_KEY = settings.SECRET_KEY", "GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/service-account.json",
    "  password_file: /run/secrets/db_password", "  TOKEN_URL=https://auth.example.com/oauth/token",
    "Authorization: Basic <base64 of user:password>", "postgres://app:${DB_PASSWORD}@db:5432/app",
]

CARD_OR_PHONE_LOOKALIKES = {"order number", "snowflake id", "bare 16-19 digit id", "float", "11-digit non-mobile",
                            "timestamp"}


def _ordinary(rng, looks):
    """One ordinary line; every look-alike it contains is recorded as (category, text)."""
    def look(category, text):
        looks.append((category, text))
        return text

    kind = rng.randrange(12)
    if kind == 0:
        return (f"2026-08-25T18:46:{rng.randint(10, 59)}.{rng.randint(100, 999)}Z INFO [worker-{rng.randint(1, 8)}] "
                f"GET /api/orders/{look('order number', order_number(rng))} 200 "
                f"{look('float', repr(rng.random() * 100))} ms trace={look('uuid', uuid4(rng))}")
    if kind == 1:
        return (f'{{"id": {look("snowflake id", str(snowflake(rng)))}, "author": {{"id": '
                f'"{look("snowflake id", str(snowflake(rng)))}"}}, "score": {look("float", repr(rng.random()))}, '
                f'"created_ms": {look("timestamp", str(rng.randint(1_600_000_000_000, 1_790_000_000_000)))}}}')
    if kind == 2:
        return f"订单号 {look('order number', order_number(rng))} 已发货，运费 {rng.randint(5, 30)} 元，预计明天送达。"
    if kind == 3:
        return f"| {rng.randint(1, 999)} | {look('bare 16-19 digit id', pick(rng, '123456789', 1) + pick(rng, DIGITS, rng.randint(15, 18)))} | paid | {rng.randint(1, 99)}.{rng.randint(0, 99):02d} |"
    if kind == 4:
        return f"commit {look('git sha', pick(rng, HEX, 40))}\nAuthor: bot\n    fix: bump {look('version', f'{rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 30)}')}"
    if kind == 5:
        number = rng.choice(["10", "11", "12"]) + pick(rng, DIGITS, 9)
        return f"编号 {look('11-digit non-mobile', number)}，耗时 {look('float', f'{rng.uniform(0, 10):.11f}')} 秒，会话恢复成功。"
    if kind == 6:
        return rng.choice(CODE_MENTIONS)
    if kind == 7:
        return (f'<div class="{look("css class", rng.choice(["sk-spinner", "sk-fading-circle", "sk-cube-grid", "sk-circle12"]))}" '
                f'style="color: {look("hex colour", "#" + pick(rng, HEX, 6))}"></div>')
    if kind == 8:
        return (f"request_id={look('uuid', uuid4(rng))} user={look('uuid', '00000000-0000-0000-0000-000000000000')} "
                f"ts={look('timestamp', str(rng.randint(1_600_000_000, 1_790_000_000)))} "
                f"ip={rng.randint(1, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(0, 255)}")
    if kind == 9:
        return (f"    loss={look('float', repr(rng.random() / 1000))} lr={look('float', repr(rng.random() * 1e-4))} "
                f"step={rng.randint(1, 99999)}")
    return rng.choice(["会话树把每一次分叉都记录下来，恢复时先核对工作区。", "导出前默认脱敏，只改副本，磁盘上的会话不变。",
                       "The session tree keeps every branch; resume checks the workspace first.",
                       "    if node.parent_id is None:\n        return [node]", "```bash\ngit status --short\n```"])


def build_corpus(seed: int = 811, target_chars: int = 1_200_000, secret_every: int = 12) -> Corpus:
    """Ordinary lines with a planted secret about every `secret_every` lines; look-alikes recorded."""
    rng = random.Random(seed)
    corpus, lines, size = Corpus(""), [], 0
    while size < target_chars:
        if rng.randrange(secret_every) == 0:
            line, planted = rng.choice(MAKERS)(rng)
            corpus.planted.append(planted)
        else:
            line = _ordinary(rng, corpus.lookalikes)
        lines.append(line)
        size += len(line) + 1
    corpus.text = "\n".join(lines)
    return corpus


# ── the measurement ─────────────────────────────────────────────────────────────────────────


@dataclass
class Rates:
    planted: int
    caught: int
    missed: list            # Planted kinds that leaked
    lookalikes: Counter     # category -> planted count
    damaged: Counter        # category -> how many were changed
    extra_masks: int        # masks beyond the planted secrets
    counts: dict

    def describe(self) -> str:
        card_phone = sum(self.lookalikes[c] for c in CARD_OR_PHONE_LOOKALIKES)
        card_phone_damaged = sum(self.damaged[c] for c in CARD_OR_PHONE_LOOKALIKES)
        lines = [f"planted secrets: {self.planted}, caught {self.caught} "
                 f"(true-positive rate {self.caught / self.planted:.2%}), missed: {self.missed or 'none'}",
                 f"card/phone look-alikes: {card_phone}, masked {card_phone_damaged} "
                 f"(false-positive rate {card_phone_damaged / card_phone:.3%})",
                 f"masks beyond the planted secrets: {self.extra_masks}"]
        lines += [f"  {category:<22} {self.damaged[category]:>4} / {total:<6} changed"
                  for category, total in sorted(self.lookalikes.items())]
        return "\n".join(lines)


_WORDS = re.compile(r"[0-9A-Za-z#.+-]+")     # every look-alike is one such run in the text


def measure(corpus: Corpus) -> Rates:
    redacted, counts = redact_with_counts(corpus.text)
    missed = [p.kind for p in corpus.planted if any(secret in redacted for secret in p.exposed)]
    before, after = Counter(_WORDS.findall(corpus.text)), Counter(_WORDS.findall(redacted))
    totals, damaged = Counter(), Counter()
    for category, text in corpus.lookalikes:
        assert before[text] > 0, f"look-alike {text!r} is not a whole word of the corpus"
        totals[category] += 1
        damaged[category] += after[text] < before[text]
    return Rates(len(corpus.planted), len(corpus.planted) - len(missed), missed, totals, damaged,
                 sum(counts.values()) - len(corpus.planted), counts)


@pytest.fixture(scope="module")
def corpus():
    return build_corpus()


@pytest.fixture(scope="module")
def rates(corpus):
    result = measure(corpus)
    print("\n" + result.describe())
    return result


def test_the_corpus_plants_every_kind_of_secret_and_every_label(corpus, rates):
    assert {p.label for p in corpus.planted} == {rule.label for rule in RULES}
    assert rates.planted >= 1000 and sum(rates.lookalikes.values()) >= 20_000


def test_every_planted_secret_is_masked(rates):
    assert rates.missed == [], f"leaked: {Counter(rates.missed)}"


def test_each_planted_secret_is_one_mask_with_its_own_label(corpus, rates):
    # The only masks beyond the planted ones are the card look-alikes counted as false positives.
    planted = Counter(p.label for p in corpus.planted)
    extra = Counter(rates.counts) - planted
    assert Counter(rates.counts) - extra == planted
    assert dict(extra) == ({"银行卡号": rates.extra_masks} if rates.extra_masks else {})
    assert rates.extra_masks == sum(rates.damaged[c] for c in CARD_OR_PHONE_LOOKALIKES)


def test_fewer_than_one_percent_of_card_and_phone_look_alikes_are_masked(rates):
    total = sum(rates.lookalikes[c] for c in CARD_OR_PHONE_LOOKALIKES)
    assert total >= 10_000
    assert sum(rates.damaged[c] for c in CARD_OR_PHONE_LOOKALIKES) < 0.01 * total


@pytest.mark.parametrize("category", ["uuid", "git sha", "version", "hex colour", "css class", "timestamp",
                                      "float", "snowflake id", "11-digit non-mobile"])
def test_ordinary_identifiers_are_never_masked(rates, category):
    assert rates.lookalikes[category] > 0
    assert rates.damaged[category] == 0


@pytest.mark.parametrize("line", CODE_MENTIONS)
def test_code_that_only_mentions_secrets_is_left_alone(line):
    assert redact_with_counts(line) == (line, {})


def test_every_spelling_of_phones_and_cards_is_planted(corpus):
    kinds = {p.kind for p in corpus.planted}
    assert {f"phone {style}" for style in PHONE_FORMATS} <= kinds
    assert {kind.split()[1] for kind in kinds if kind.startswith("card ")} == {"visa", "mastercard", "unionpay", "amex", "jcb"}
    assert {kind.split()[2] for kind in kinds if kind.startswith("card ")} == {"word", "spaces", "dashes", "dots", "bare"}


def test_redaction_only_replaces_spans_with_markers_and_is_stable():
    text = build_corpus(seed=3, target_chars=60_000).text
    once, counts = redact_with_counts(text)
    assert redact_with_counts(once) == (once, {})
    markers = re.compile("|".join(re.escape(MARKER.format(label=rule.label)) for rule in RULES))
    assert len(markers.findall(once)) == sum(counts.values())
    position = 0
    for kept in markers.split(once):          # everything between markers is original text, in order
        found = text.find(kept, position)
        assert found != -1
        position = found + len(kept)


# ── issue 41 item 7: every planted secret is masked by 📤 export and listed by the share review ──────────────


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    else:
        yield str(value)


def test_every_kind_planted_in_messages_and_tool_calls_is_masked_by_export_and_listed_by_the_review():
    import s11_export
    import s11_review

    rng = random.Random(41)
    planted, messages = [], []
    for maker in MAKERS * 3:                       # every kind, three spellings each
        line, secret = maker(rng)
        planted.append(secret)
        if len(messages) % 2:                      # half as text, half inside a tool call's input
            messages.append({"role": "user", "content": line})
        else:
            messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{len(messages)}",
                                                               "name": "bash", "input": {"command": line}}]})
    number = mobile(rng)                           # JSON numbers and a credential-named key (issue 41 item 3)
    card = luhn_complete(rng, "4", 16)
    password = random_token(rng, BASE62, 14)
    messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": "order", "name": "order",
                                                       "input": {"phone": int(number), "card": int(card),
                                                                 "passwd": password}}]})
    planted += [Planted("json number phone", "手机号", [number]), Planted("json number card", "银行卡号", [card]),
                Planted("credential-named key", "凭据", [password])]
    assert len({p.kind.split()[0] for p in planted}) >= 30 and len(planted) >= 100

    view = s11_export.prepare({"session_id": "s1", "title": "planted", "messages": messages})
    exported = [list(_strings(message)) for message in view.messages]
    review = s11_review.scan([s11_review.Unit("s1", index + 1, message) for index, message in enumerate(messages)])
    reviewed, _ = s11_review.apply([s11_review.Unit("s1", index + 1, message) for index, message in enumerate(messages)],
                                   review)
    leaked_export, leaked_review, unlisted = [], [], []
    for index, secret in enumerate(planted):
        where = min(index, len(messages) - 1)
        if any(exposed in text for exposed in secret.exposed for text in exported[where]):
            leaked_export.append(secret.kind)
        if any(exposed in text for exposed in secret.exposed for text in _strings(reviewed[where])):
            leaked_review.append(secret.kind)
        if not any(hit.number == where + 1 and hit.rule == secret.label for hit in review.hits):
            unlisted.append(secret.kind)
    assert (leaked_export, leaked_review, unlisted) == ([], [], [])
    assert reviewed == view.messages          # the review masks exactly what export masks
