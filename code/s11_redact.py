"""s11_redact — 导出和分享前的脱敏：一张按顺序执行的规则表，和一趟走遍 JSON 值的结构化扫描

    text ──► RULES：每一行 Rule(name, label, pattern, validator)
               pattern    找“长得像”的候选（有名为 secret 的组时只遮这一组）
               validator  否决“长得像但不是”的：校验位、Luhn、发卡行前缀、上下文（订单号、token=token）
         ──► 各行认领的区间，重叠时排在前面的行胜出 ──► [已脱敏:<label>] + {label: count}

    value（消息、工具调用的 JSON）──► scan_value(value)：每一处要遮的 Finding(路径, 键还是值, 起, 止, 标签, 原文)
                                        字符串、字典的键、10 位以上的 JSON 数字、名字是凭据的键下的字符串
                                  ──► mask_value(value, findings)：遮好的深拷贝 + 计数
    redact_value(value) = mask_value(value, scan_value(value))；分享前的复核（s11_review）列出的、遮住的也是这些 Finding。

关键洞察：正则只负责“长得像”，校验函数和上下文负责“真的是”；导出和复核共用同一趟结构化扫描，
所以复核表列出的，正是导出会遮住的——一处不多，一处不少。
扩展：在 RULES 里插入一行 Rule（越具体越靠前），再在 tests/store/test_redact.py 的 CASES 里给它一个真阳性
和一个假阳性样例（测试会检查每一行都有）。

线性时间（这是本模块唯一的“性能设计”）：每条正则都写成不会灾难性回溯的样子，无论输入是什么。
- 数字类规则用后顾断言判断“前面不是数字或字母”，而不是让 re 从一串数字的每一位重新开始；
- 邮箱的 local-part 前面有后顾断言：一串字符只在开头发起一次尝试（否则一长段 base64 是平方级）；
- 凭据名字的其余部分用“先行断言 + 反向引用”吃进就不吐回（等于占有量词），而且最多 64 个字符；
- 其余的量词都有上限或停在换行处；一行规则不会跨过换行（私钥块除外：它找的是 END 那一行）。

保证：
- 每一行看的都是同一份原文；两行认领的文字重叠时，排在前面的行胜出（"Bearer" 后面的 JWT 标成 JWT，
  API_KEY= 后面的密钥按它自己的形状标注）。
- redact() 是幂等的：标记本身从不被认领；如果一处遮盖让另一行能在它旁边匹配了（环视断言现在看到的是 "]"），
  就再跑一遍，直到什么都不再变化（find() 把后几轮的命中也换算回原文的位置）。
- 全角数字（１３８…、１１０１…Ｘ）和半角的一样认：先换成半角再匹配，位置不变。
- redact_value() 返回深拷贝，从不修改输入；元组拷成列表，dict 的子类拷成 dict。
- 加进来的行如果能在某个标记里认领到东西，遮过的地方会被一遍遍再遮：第一次用到这张表时就拒绝（ValueError）。

不做：人名、街道地址和自由形式的秘密（"密码是 hunter2"）——它们要靠上下文，不是靠模式；拆在几条消息里的
秘密；中国大陆以外的电话和证件格式；全角的字母（ｓｋ－…）；没有卡号字样、没有分组、也没有发卡行前缀的
一串 15–19 位裸数字（在证明不是之前，它就是订单号）；YAML 以外、小写名字后面的一个裸单词
（`password = changeme` 读起来就像 `token=token` 这样的代码）；JSON 字符串里值本身又含转义引号的密码
（只遮到第一个 \\" 为止）；判断对某个具体客户来说什么算敏感。
"""

from __future__ import annotations

import bisect
import copy
import datetime
import itertools
import os
import re
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any, NamedTuple

MARKER = "[已脱敏:{label}]"
_MARKER_START = "[已脱敏:"
_MARKERS = re.compile(r"\[已脱敏:[^\]\n]{1,40}\]")
_CREDENTIAL_LABEL = "凭据"


class Rule(NamedTuple):
    name: str                                           # 测试里用的标识符，例如 "cn_mobile"
    label: str                                          # 标记里的中文，例如 "手机号"
    pattern: re.Pattern[str]                            # 找候选；名为 "secret" 的组 = 要遮住的部分
    validator: Callable[[re.Match[str]], bool] | None = None   # 否决长得像的；None = 每个匹配都算


# 数字类规则用“ASCII 字母数字”的环视断言，而不用 \b：Python 的 Unicode 正则里汉字也算 \w，
# 所以 "手机13812345678请回电" 里的数字两边都没有 \b。字母故意也算作相邻字符，
# 这样十六进制 id（UUID、git sha）里的一串数字永远不会被当成手机号或卡号。
# "3.14159265358" 和 "0.1234567890123456"：紧跟在 "<数字>." 后面的数字是浮点数的小数部分。
# 第一个数字写在后顾断言前面，re 就能跳过所有不是数字的字符。
_FIRST_DIGIT = r"[0-9](?<![0-9A-Za-z][0-9])(?<![0-9][.,][0-9])"
_NUMBER_END = r"(?![0-9A-Za-z])(?![.,][0-9])"
_WORD_END = r"(?![A-Za-z0-9_-])"


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
    return len(longest) >= 16 and _kinds(longest) >= 2


def _kinds(token: str) -> int:
    """大写、小写、数字三类字符里出现了几类。"""
    return any(c.isupper() for c in token) + any(c.islower() for c in token) + any(c.isdigit() for c in token)


def _secret(match: re.Match[str]) -> str:
    # 名为 secret 的组（要遮的部分）或 tail 组（固定前缀之后的随机部分），否则整个匹配
    names = match.re.groupindex
    return match.group("secret" if "secret" in names else "tail" if "tail" in names else 0)


def _random_secret(match: re.Match[str]) -> bool:
    return looks_random(_secret(match))


def _mixed_secret(match: re.Match[str]) -> bool:
    # 正文（"Bearer authentication"、"LTAIabcdefghijklmnop"）里只有一类字母；令牌至少混着两类
    return _kinds(_secret(match)) >= 2


def _id_number_ok(match: re.Match[str]) -> bool:
    compact = "".join(char for char in match.group() if char.isalnum())
    return is_valid_cn_id(compact)


# 一串 15–19 位的裸数字（订单号和 snowflake id 也是）要有证据才算卡号（issue 里定下的）：常见的分组写法、
# 长度对得上的已知发卡行前缀（本行），或者前面不远处有卡号字样（下一行）——而且一律要过 Luhn。
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
    r"password|passwd|passphrase|secret|token|cookie|api[_-]?key"
    r"|(?:access|private|signing|encryption|master|account|auth|client)[_-]?key", re.IGNORECASE)
_METADATA_SUFFIXES = ("tokens", "secrets", "passwords", "keys", "type", "count", "id", "name", "url", "uri", "path",
                      "file", "dir", "length", "len", "ttl", "timeout", "header", "prefix", "limit", "expires_in",
                      "expiresin", "expiry")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
# ……而且值是数据，不是引用、占位符或代码。
_LITERALS = frozenset("true false null none nil undefined str int bool bytes string optional any".split())
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")   # self.password
# token=token, api_key=api_key, password=pwd, token=accessToken；"gsNXiVmRlMG" 不像标识符，是数据
_CODE_WORD = re.compile(r"[a-z_][a-z_]*(?:[A-Z][a-z_]+)*")
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
            or value.startswith(_MARKER_START) or value[:2] in _EMBEDDED_JSON)


# "SecretString": "{\"password\":\"…\"}"：名字是凭据，值却是一份嵌在字符串里的 JSON 的开头（"{\"），
# 它里面的键值对由 json_in_json 那一行去遮；把 "{\" 当成密码遮住，复核表里就是一条毫无意义的命中。
_EMBEDDED_JSON = ("{\\", "[\\", "{", "[")


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


def _aws_secret_ok(match: re.Match[str]) -> bool:
    # secret_access_key，或前面紧挨着 aws（aws_secret_key）：只写 "secret_key" 的是别的服务的凭据
    before = match.string[max(0, match.start() - 4):match.start()].lower()
    return bool(match.group("access")) or before.endswith(("aws", "aws_", "aws-", "aws "))


def _escaped_credential_ok(match: re.Match[str]) -> bool:
    # 转义过的 JSON 里，名字整个在两个 \" 之间：直接读它
    return _is_credential_name(match.group("name")) and not _is_reference(match.group("secret"))


# logo@2x.png 这样的文件名看起来像邮箱地址。
_FILE_SUFFIXES = frozenset("png jpg jpeg gif svg webp ico bmp js mjs ts tsx jsx css scss json yaml yml md txt".split())


def _email_ok(match: re.Match[str]) -> bool:
    return match.group().rsplit(".", 1)[1].lower() not in _FILE_SUFFIXES


# ── 规则表 ──────────────────────────────────────────────────────────────────────────────────

# 卡号：不是更长数字的一部分，也不是浮点数的小数部分：
_CARD_NUMBER = (_FIRST_DIGIT + r"(?:[0-9]{14,18}"                                       # 裸数字
                r"|[0-9]{3}(?P<sep>[ .-])[0-9]{4}(?P=sep)[0-9]{4}(?P=sep)[0-9]{4}(?:(?P=sep)[0-9]{1,3})?"  # 4-4-4-4
                r"|[0-9]{3}(?P<amex>[ .-])[0-9]{6}(?P=amex)[0-9]{5})"                      # Amex 4-6-5
                + _NUMBER_END)

# 凭据的名字：从敏感词开始匹配（DB_PASSWORD 从 PASSWORD 处匹配上），完整的名字由校验函数去读（"cookie" 只在 JSON
# 的键名里算：文本里的 Cookie 头归 cookie 那一行）。名字的其余部分“吃进就不吐回”（先行断言 + 反向引用，等于占有量词）：
# 长单词上不会回溯；最多 64 个字符：否则 "keykeykey…" 里每个 key 都要扫到单词末尾，是平方级的。
_CREDENTIAL_NAME = r"(?P<word>[PpSsTtKk](?i:ass|ecret|oken|ey)(?=(?P<rest>[A-Za-z0-9_.-]{0,64}))(?P=rest))"


def _token(pattern: str) -> re.Pattern[str]:
    """固定前缀的令牌，前缀必须在单词开头（"sk-…" 算，"task-…" 永远不算）。这个断言写在第一个字符（或字符类）
    之后：正则以普通字符开头，re 就能直接跳到它出现的地方，而不必在文本的每个位置都先试一遍后顾断言。

    >>> [m.group() for m in _token("sk-[a-z0-9]{4}").finditer("sk-ab12 task-cd34")]
    ['sk-ab12']
    """
    first = pattern.index("]") + 1 if pattern.startswith("[") else 1
    return re.compile(pattern[:first] + r"(?<![A-Za-z0-9_-][\s\S])" + pattern[first:])


# 顺序有讲究：具体的形状在前。各行看的是同一份文本；重叠时排在前面的行胜出。
RULES: list[Rule] = [
    Rule("private_key", "私钥", re.compile(                # 没有结尾的块（被截断的工具输出）一直遮到文本末尾
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)")),
    Rule("jwt", "JWT", _token(r"eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
    Rule("slack_webhook", "Slack Webhook", re.compile(
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<secret>[A-Za-z0-9_/-]{20,})")),
    Rule("discord_webhook", "Discord Webhook", re.compile(   # 遮住频道 id 和令牌，留下 discord.com/api/webhooks/
        r"discord(?:app)?\.com/api/webhooks/(?P<secret>[0-9]{17,20}/[A-Za-z0-9_-]{40,100})" + _WORD_END)),
    Rule("sk_api_key", "API密钥", _token(r"sk-[A-Za-z0-9_-]{20,}"), _random_secret),   # OpenAI、Anthropic（sk-ant-）、DeepSeek……
    Rule("stripe_key", "Stripe密钥", _token(r"[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    Rule("aws_access_key", "AWS密钥", _token(r"A(?:KIA|SIA)[0-9A-Z]{16}(?![0-9A-Za-z])")),
    Rule("aws_secret_key", "AWS密钥", re.compile(            # (aws_)secret_access_key / aws_secret_key 后面的 40 个 base64 字符
        r"[Ss](?i:ecret)[ _-]?(?P<access>(?i:access)[ _-]?)?(?i:key)[\"']?[ \t]*[:=][ \t]*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"), _aws_secret_ok),
    Rule("alibaba_access_key", "阿里云密钥", _token(         # 阿里云 AccessKey ID：LTAI + 12–30 个字母数字
        r"LTAI(?P<tail>[A-Za-z0-9]{12,30})(?![A-Za-z0-9])"), _mixed_secret),
    Rule("google_api_key", "Google密钥", _token(r"AIza[0-9A-Za-z_-]{35}" + _WORD_END)),
    Rule("github_token", "GitHub令牌", _token(r"g(?:h[pousr]_[A-Za-z0-9]{30,}|ithub_pat_[A-Za-z0-9_]{30,})")),
    Rule("gitlab_token", "GitLab令牌", _token(r"glpat-[A-Za-z0-9_-]{20,}")),
    Rule("huggingface_token", "Hugging Face令牌", _token(r"hf_[A-Za-z0-9]{30,}"), _random_secret),
    Rule("npm_token", "npm令牌", _token(r"npm_[A-Za-z0-9]{36}"), _random_secret),
    Rule("slack_token", "Slack令牌", _token(r"xox[abprs]-[A-Za-z0-9-]{15,}")),
    Rule("twilio_api_key", "Twilio密钥", _token(r"SK(?P<tail>[0-9a-f]{32})(?![0-9A-Za-z])"), _mixed_secret),
    Rule("digitalocean_token", "DigitalOcean令牌", _token(r"do[opr]_v1_[0-9a-f]{64}(?![0-9A-Za-z])")),
    Rule("telegram_bot_token", "Telegram令牌", re.compile(   # <机器人 id>:<35 个字符>；URL 里写成 /bot123…:AA…
        r"[0-9](?:(?<![0-9A-Za-z][0-9])|(?<=bot[0-9]))[0-9]{7,9}:(?P<tail>[A-Za-z0-9_-]{35})" + _WORD_END), _mixed_secret),
    Rule("azure_key", "Azure密钥", re.compile(r"(?:Account|SharedAccess)Key=(?P<secret>[A-Za-z0-9+/]{40,}={0,2})")),
    Rule("azure_sas", "Azure SAS签名", re.compile(          # ?sv=…&sig=<URL 编码的 base64>；先写 "sig="，re 能直接跳到它
        r"sig=(?<=[?&]sig=)(?P<secret>(?:[A-Za-z0-9+/]|%[0-9A-Fa-f]{2}){20,}={0,2})"), _mixed_secret),
    Rule("cookie", "Cookie", re.compile(                     # Cookie: / Set-Cookie: 后面的整串 name=value（到行尾或引号）
        r"[Cc](?<![A-Za-z0-9_][Cc])(?i:ookie)[\"']?[ \t]*:[ \t]*[\"']?"
        r"(?P<secret>[^\s=;\"']{1,64}=[^\n\"']{8,})")),
    Rule("bearer_token", "Bearer令牌", re.compile(           # Bearer x、BEARER x、bearer  x（保留这个词本身）
        r"[Bb](?<![A-Za-z][Bb])(?i:earer)[ \t]+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)"), _mixed_secret),
    Rule("auth_header", "认证信息", re.compile(              # Authorization: Basic … / token … / Digest …
        r"[Aa](?i:uthorization)[\"']?[ \t]*[:=][ \t]*[\"']?(?i:basic|token|digest)[ \t]+"
        r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})"), _not_a_reference),
    Rule("url_password", "密码", re.compile(                 # postgres://app:S3cr3t@host → 只遮 S3cr3t
        r"://[^\s:/?#@]*:(?P<secret>[^\s/?#@]+)@"), _not_a_reference),
    Rule("json_in_json", _CREDENTIAL_LABEL, re.compile(      # 字符串里的 JSON：{\"password\":\"hunter2\"}（一层或多层转义）
        r"\\(?P<more>\\*)\"(?P<name>[A-Za-z0-9_.-]{1,64})\\(?P=more)\"[ \t]*:[ \t]*\\(?P=more)\""
        r"(?P<secret>[^\n\\\"]+)\\(?P=more)\""), _escaped_credential_ok),
    Rule("credential", _CREDENTIAL_LABEL, re.compile(        # API_KEY=…, "password": "…", JWT_SECRET: …
        _CREDENTIAL_NAME + r"""["']?[ \t]*[:=][ \t]*"""
        r"""(?P<quote>["'`])?(?P<secret>(?(quote)(?:(?!(?P=quote))[^\n])+|[^\s"'`,;()\[\]{}]+))"""),
        _credential_ok),
    # 有了这个后顾断言，每一串 local-part（@ 前面的部分）字符最多只发起一次匹配尝试；
    # 没有它，一长段 base64 要花平方级的时间。
    Rule("email", "邮箱", re.compile(
        r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"), _email_ok),
    Rule("cn_id_number", "身份证号", re.compile(            # 18 个字符，也可以是 6-8-4 或 6-4-4-4 分组
        _FIRST_DIGIT + r"(?<!0)[0-9]{5}[ -]?(?:18|19|20)[0-9]{2}[ -]?(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])"
        r"[ -]?[0-9]{3}[0-9Xx]" + _NUMBER_END), _id_number_ok),
    Rule("bank_card", "银行卡号", re.compile(_CARD_NUMBER), _card_ok),
    Rule("bank_card_after_word", "银行卡号", re.compile(    # 卡号 / 银行卡 / card number：任意 15–19 位数字
        r"(?:卡|[Cc](?i:ard))[^0-9\n]{0,20}?(?P<secret>" + _CARD_NUMBER + ")"), _luhn_ok),
    Rule("cn_mobile", "手机号", re.compile(
        # 以 "1[3-9][0-9]" 开头：re 从一个 "1" 跳到下一个 "1"，然后才由后顾断言检查这三个字符前面是什么
        # （断言里的 "..." 就是这三个字符）——非字母数字、+86、0086 或电话字样（Tel13812345678），
        # 绝不能是 "<数字>."（3.14159265358 的小数部分）。
        r"1[3-9][0-9](?:(?<![0-9A-Za-z]...)(?<![0-9][.,]...)|(?<=\+86...)|(?<=0086...)|(?<=[Tt]el...)"
        r"|(?<=TEL...)|(?<=[Pp]hone...)|(?<=[Mm]obile...))(?P<sep>[ .-]?)[0-9]{4}(?P=sep)[0-9]{4}" + _NUMBER_END)),
]


# ── 执行引擎：文本 ──────────────────────────────────────────────────────────────────────────


def redact(text: str) -> str:
    """把文本里的每一处秘密替换成 [已脱敏:<label>] 标记。

    >>> redact("手机13812345678请回电，邮件 alice@example.com")
    '手机[已脱敏:手机号]请回电，邮件 [已脱敏:邮箱]'
    """
    return redact_with_counts(text)[0]


def redact_with_counts(text: str) -> tuple[str, dict[str, int]]:
    """和 redact() 一样，另外报告每种标签各遮住了几处（按 RULES 的顺序）。

    >>> redact_with_counts("a@example.com b@example.com 时间戳 1732867200123")
    ('[已脱敏:邮箱] [已脱敏:邮箱] 时间戳 1732867200123', {'邮箱': 2})
    """
    counts: Counter[str] = Counter()
    return _apply(text, find(text), counts), _in_rule_order(counts)


def find(text: str, claims: Callable[[str], list] | None = None) -> list[tuple[int, int, str]]:
    """text 里要遮住的每一处 (start, end, label)，按位置排序，位置都在原文上。claims：每一轮找命中的函数
    （默认 _claims，整张表；s11_fast 传入只跑条件出现了的那几行的版本）。

    一处遮盖可能让旁边变得能匹配（环视断言现在看到的是 "]"）：那就在遮好的文本上再找一遍，
    新的命中换算回原文的位置（它们从不与标记重叠，所以落在原文没被改动的那几段里），直到什么都不再多出来。

    >>> find("a@example.com13812345678")      # 手机号前面原来是字母，遮掉邮箱后才是 "]"
    [(0, 13, '邮箱'), (13, 24, '手机号')]
    """
    claims = claims or _claims
    found = claims(text)
    while found:
        more = claims(_apply(text, found, Counter()))
        if not more:
            break
        # 过了第 i 个标记，遮好的文本比原文多出 grown[i] 个字符；那个标记在遮好的文本里结束于 ends[i]
        grown = list(itertools.accumulate(len(MARKER.format(label=label)) - (end - start) for start, end, label in found))
        ends = [end + extra for (_, end, _), extra in zip(found, grown)]
        found = sorted(found + [_shifted_back(claim, ends, grown) for claim in more])
    return found


def _shifted_back(claim: tuple[int, int, str], ends: list[int], grown: list[int]) -> tuple[int, int, str]:
    start, end, label = claim
    before = bisect.bisect_right(ends, start) - 1      # 它前面最近的那个标记
    extra = grown[before] if before >= 0 else 0
    return start - extra, end - extra, label


def _apply(text: str, claims: list[tuple[int, int, str]], counts: Counter[str]) -> str:
    """把每处认领替换成它的标记，并计数。"""
    pieces, position = [], 0
    for start, end, label in claims:
        pieces += [text[position:start], MARKER.format(label=label)]
        counts[label] += 1
        position = end
    pieces.append(text[position:])
    return "".join(pieces)


# 全角数字（１３８…、身份证号末位的 Ｘ、分组用的 －）先换成半角再匹配：一个字符换一个字符，位置不变，
# 所以认领的区间照样落在原文上，各行也不必各写一份全角的版本。没有全角数字时 Ｘ 和 － 不影响任何一行。
_FULLWIDTH_DIGITS = "０１２３４５６７８９"
_HALFWIDTH = str.maketrans("０１２３４５６７８９Ｘｘ－", "0123456789Xx-")


def _halfwidth(text: str) -> str:
    has_digits = not text.isascii() and any(digit in text for digit in _FULLWIDTH_DIGITS)
    return text.translate(_HALFWIDTH) if has_digits else text


def _claims(text: str, rules: list[Rule] | None = None) -> list[tuple[int, int, str]]:
    """每一行（或只是 rules 这几行）都用在同一份文本上：排好序的 (start, end, label)；重叠时排在前面的行胜出。"""
    rules = _checked_rules() if rules is None else rules
    text = _halfwidth(text)
    claims: list[tuple[int, int, str]] = []
    if _MARKER_START in text:   # 文本里已有的标记先占位：哪一行都不能认领它们的一部分
        claims = [(match.start(), match.end(), "") for match in _MARKERS.finditer(text)]
    starts = [claim[0] for claim in claims]
    for rule in rules:
        secret = "secret" if "secret" in rule.pattern.groupindex else 0
        found = []
        for match in rule.pattern.finditer(text):
            start, end = match.span(secret)
            if start < end and not _overlaps(starts, claims, start, end) and \
                    (rule.validator is None or rule.validator(match)):
                found.append((start, end, rule.label))
        if found:
            claims = sorted(claims + found)
            starts = [claim[0] for claim in claims]
    return [claim for claim in claims if claim[2]]


def _overlaps(starts: list[int], claims: list[tuple[int, int, str]], start: int, end: int) -> bool:
    index = bisect.bisect_left(starts, end)              # 起点在我们终点之前的认领……
    return index > 0 and claims[index - 1][1] > start    # ……其中最后一个必须在我们的起点之前结束


def _in_rule_order(counts: Counter[str] | dict[str, int]) -> dict[str, int]:
    return {label: counts[label] for label in dict.fromkeys(rule.label for rule in RULES) if counts.get(label)}


_checked: list[tuple[Rule, ...]] = [()]   # 最近一次检查过的 RULES（测试和学生会改它）


def _checked_rules() -> tuple[Rule, ...]:
    rules = tuple(RULES)
    if rules != _checked[0]:
        _refuse_rules_that_match_markers(rules)
        _checked[0] = rules
    return rules


def _refuse_rules_that_match_markers(rules: tuple[Rule, ...]) -> None:
    """加进来的行要是能在某个标记里认领到东西（比如标签是 "LRU"、正则也是 "LRU"），遮过的地方会被一遍又一遍地再遮：
    建表时就拒绝（ValueError，说明是哪一行、哪个标记）。只拿单独的标记试，靠前后文才匹配得上的正则试不出来。"""
    markers = [MARKER.format(label=label) for label in dict.fromkeys(rule.label for rule in rules)]
    for rule in rules:
        secret = "secret" if "secret" in rule.pattern.groupindex else 0
        for marker in markers:
            for match in rule.pattern.finditer(marker):
                start, end = match.span(secret)
                if start < end and not marker.startswith(_MARKER_START, start) and \
                        (rule.validator is None or rule.validator(match)):
                    raise ValueError(f"脱敏规则 {rule.name} 能在标记 {marker} 里认领到 {marker[start:end]!r}："
                                     "遮过的文字会被一遍又一遍地再遮、永远停不下来；请改它的正则或标签")


# ── 结构化的一趟：JSON 值里的每一处 ─────────────────────────────────────────────────────────────


class Finding(NamedTuple):
    """JSON 值里要遮住的一处。path：从根到那个位置的键和下标；part："value"（字符串或数字本身）或 "key"
    （path 最后一级的那个字典键）；start/end：在 text 里的位置；text：那个位置的原文（数字按它在 JSON 里的写法）。"""
    path: tuple
    part: str
    start: int
    end: int
    label: str
    text: str

    @property
    def found(self) -> str:
        return self.text[self.start:self.end]


_BIG_NUMBER = 10 ** 10   # 再短的数字不会是任何一种秘密（手机号 11 位）


def scan_value(value: Any) -> list[Finding]:
    """value 里 redact_value 会遮住的每一处，按走到的顺序：字符串、字典的键、10 位以上的 JSON 数字，
    以及名字是凭据的键（"password"、"api_key"）下的字符串——它整个是一处，除非是 ${VAR} 这样的引用或空白。

    >>> [(f.path, f.part, f.found, f.label) for f in scan_value({"phone": 13812345678, "a@b.io": 1, "passwd": "x"})]
    [(('phone',), 'value', '13812345678', '手机号'), (('a@b.io',), 'key', 'a@b.io', '邮箱'), (('passwd',), 'value', 'x', '凭据')]
    """
    findings: list[Finding] = []
    found = places(value)
    hits = _find_all([text for _, _, text, _ in found])
    named = [index for index, place in enumerate(found) if place[3]]   # 凭据名字下的字符串
    for index in sorted(hits.keys() | named):   # 绝大多数位置什么也没有：只看这两种
        path, part, text, _ = found[index]
        spans = hits.get(index, ())
        if not spans and text.strip() and not _is_reference(text.strip()) and _MARKER_START not in text:
            spans = [(0, len(text), _CREDENTIAL_LABEL)]   # 名字说它是凭据，值又不是引用：整个遮住
        findings += [Finding(path, part, start, end, label, text) for start, end, label in spans]
    return findings


def _find_all(texts: list[str]) -> dict[int, list[tuple[int, int, str]]]:
    """{下标: find(t)}，只列出有命中的：scan_value 一次问完一个值的全部文字（s11_fast.redact 在这里换上它的版本）。"""
    return {index: found for index, text in enumerate(texts) if (found := find(text))}


def places(value: Any) -> list[tuple[tuple, str, str, bool]]:
    """value 里规则表要看的每个位置：(路径, "value" 或 "key", 文字, 是不是凭据名字下的字符串)，按走到的顺序。
    文字是字符串本身、字典的键，或 10 位以上的 JSON 数字的写法。s11_review 在同样的位置上找读者手动加的字符串。

    >>> places({"n": [13812345678, 7], "password": "x"})
    [(('n',), 'key', 'n', False), (('n', 0), 'value', '13812345678', False), (('password',), 'key', 'password', False), (('password',), 'value', 'x', True)]
    """
    found: list[tuple[tuple, str, str, bool]] = []
    _collect(value, (), False, found, {})
    return found


def _collect(item: Any, path: tuple, credential: bool, found: list, names: dict[str, bool]) -> None:
    if isinstance(item, str):
        found.append((path, "value", item, credential))
    elif isinstance(item, dict):
        for key, child in item.items():
            child_path, named = path + (key,), isinstance(key, str)
            if named:
                found.append((child_path, "key", key, False))
                if key not in names:   # names：这一趟里判断过的键名。每条消息都是那几个键，各只判断一次
                    names[key] = _is_credential_name(key)
            _collect(child, child_path, named and names[key], found, names)
    elif isinstance(item, (list, tuple)):
        for index, child in enumerate(item):
            _collect(child, path + (index,), False, found, names)
    elif _is_big_number(item):
        found.append((path, "value", _number_text(item), False))


def _is_big_number(item: Any) -> bool:
    return type(item) in (int, float) and item == item and abs(item) >= _BIG_NUMBER   # bool 不算；NaN 不等于自己


def _number_text(number: int | float) -> str:
    return str(number) if isinstance(number, int) else repr(number)


def _is_credential_name(name: str) -> bool:
    """"password"、"api_key"、"clientSecret" 是凭据的名字；"token_type"、"max_tokens" 是关于凭据的元数据。"""
    return (_SENSITIVE_WORD.search(name) is not None and _NAME.fullmatch(name) is not None
            and not name.lower().endswith(_METADATA_SUFFIXES))


_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def mask_value(value: Any, findings: list[Finding], *, share: bool = False) -> tuple[Any, list[Finding]]:
    """value 的深拷贝（输入从不修改），findings 里的每一处换成它的标记；返回 (副本, 真正遮上的那些 Finding)。
    同一个位置上重叠的两处，排在前面的胜出、后面的不遮（调用方把规则的命中放在读者手动加的前面）。
    数字命中了就换成字符串；键命中了就换掉键（撞上已有的键时加 " (2)" 这样的后缀，键的顺序不变）。
    share=True：只新建通向命中的那些容器，其余的子树不拷贝、与 value 共用（元组还是元组）——给只读的调用方（导出）。"""
    chosen: dict[tuple[tuple, str], list[Finding]] = {}
    for finding in findings:
        spans = chosen.setdefault((finding.path, finding.part), [])
        if not any(other.start < finding.end and finding.start < other.end for other in spans):
            spans.append(finding)
    # 只有通向某处命中的容器才逐个看它的孩子；其余的整棵照抄（share 时原样共用）
    on_the_way = {finding.path[:depth] for finding in findings for depth in range(len(finding.path) + 1)}
    places = {place: sorted((f.start, f.end, f.label) for f in spans) for place, spans in chosen.items()}
    applied = [finding for spans in chosen.values() for finding in spans]
    return _masked(value, (), places, on_the_way, (lambda item: item) if share else _copy), applied


def _masked(item: Any, path: tuple, places: dict, on_the_way: set, copy_rest: Callable[[Any], Any]) -> Any:
    spans = places.get((path, "value"))
    if spans:   # 只有字符串和长数字的位置上有命中（places() 给出的那些）
        return _apply(item if isinstance(item, str) else _number_text(item), spans, Counter())
    if not isinstance(item, (dict, list, tuple)) or path not in on_the_way:
        return copy_rest(item)
    if not isinstance(item, dict):
        return [_masked(child, path + (index,), places, on_the_way, copy_rest) for index, child in enumerate(item)]
    copied: dict = {}
    for key, child in item.items():
        spans = places.get((path + (key,), "key"))
        new_key = _apply(key, spans, Counter()) if spans else key
        if spans and new_key in copied:
            suffix = 2
            while f"{new_key} ({suffix})" in copied:
                suffix += 1
            new_key = f"{new_key} ({suffix})"
        copied[new_key] = _masked(child, path + (key,), places, on_the_way, copy_rest)
    return copied


def _copy(item: Any) -> Any:
    """JSON 形状的深拷贝：dict（及其子类）拷成 dict，list 和元组拷成 list；字符串、数字、None 不可变，原样就是副本；
    其余任何奇怪的东西交给 copy.deepcopy，从不与输入共享。"""
    if item is None or type(item) in (str, int, float, bool):
        return item
    if isinstance(item, dict):
        return {key: _copy(child) for key, child in item.items()}
    if isinstance(item, (list, tuple)):
        return [_copy(child) for child in item]
    return item if isinstance(item, str) else copy.deepcopy(item)


def redact_value(value: Any, *, share: bool = False) -> tuple[Any, dict[str, int]]:
    """深拷贝类似 JSON 的数据，并遮住 scan_value 找到的每一处（mask_value；share 的意思也同它）。

    >>> redact_value({"role": "user", "content": [{"type": "text", "text": "call 13812345678"}]})
    ({'role': 'user', 'content': [{'type': 'text', 'text': 'call [已脱敏:手机号]'}]}, {'手机号': 1})
    >>> redact_value({"phone": 13812345678, "a@example.com": 1, "password": "hunter2", "port": 8080})
    ({'phone': '[已脱敏:手机号]', '[已脱敏:邮箱]': 1, 'password': '[已脱敏:凭据]', 'port': 8080}, {'凭据': 1, '邮箱': 1, '手机号': 1})
    """
    copied, applied = mask_value(value, scan_value(value), share=share)
    return copied, _in_rule_order(Counter(finding.label for finding in applied))


# 加速（像 heapq 换上 _heapq）：s11_fast.redact 先挑出可能有秘密的字符串、只给有命中的位置拼路径，结果与上面的
# _find_all 和 scan_value 相同（tests/fast 拿这里作 oracle）。S11_PLAIN=1 关掉它；没有 s11_fast 这个目录时就用上面的。
if not os.environ.get("S11_PLAIN"):
    try:
        from s11_fast.redact import accelerated
    except ImportError:
        pass
    else:
        _find_all, scan_value = accelerated(sys.modules[__name__])
