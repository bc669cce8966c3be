"""s11_fast.redact against its oracle, the plain s11_redact: for any list of strings, find_all gives exactly
[s11_redact.find(t) for t in texts]; S11_PLAIN=1 switches it off; a changed rule table falls back to the plain path.

The accelerator picks the lines to look at in one of two ways, and every test here runs both: "re2" (google-re2
finds every condition in one pass, s11_fast/redact_re2.py) and "python" (its own few re passes, what runs when
google-re2 is not installed). Both must give the plain module's result for every input.

Fake secrets are glued together at runtime; none of them is a real credential.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import s11_redact
from s11_fast import redact as fast

# The two ways, built directly (not through the seam), so S11_PLAIN=1 does not turn these tests into plain-vs-plain.
PATHS = {"re2": fast.accelerate(s11_redact, native=True), "python": fast.accelerate(s11_redact, native=False)}
NEEDS_RE2 = pytest.mark.skipif(fast.LineFinder is None, reason="google-re2 is not installed: only the python way runs")
BOTH = pytest.mark.parametrize("way", [pytest.param("re2", marks=NEEDS_RE2), "python"])
FINDERS = {"re2": fast.LineFinder and fast.LineFinder(s11_redact._CARD_ISSUER.pattern), "python": None}

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))
from test_redact import CASES  # noqa: E402
from test_redact_corpus import build_corpus  # noqa: E402

CODE = Path(__file__).resolve().parents[2] / "code"
EXAMPLES = [text for positives, negatives in CASES.values() for text in [t for t, _ in positives] + negatives]


def plain(texts):
    """What the plain seam gives: {index: find(text)} for the texts with a hit."""
    return {index: found for index, text in enumerate(texts) if (found := s11_redact.find(text))}


def test_every_built_in_row_has_a_necessary_condition_in_both_ways():
    names = {rule.name for rule in s11_redact.RULES}
    assert names == fast._covered()
    if fast.LineFinder is not None:
        assert names == FINDERS["re2"].names()


@BOTH
@pytest.mark.parametrize("number", range(len(EXAMPLES)), ids=lambda number: f"case-{number}")
def test_each_rule_case_alone_and_among_others(way, number):
    texts = [EXAMPLES[number]]
    assert PATHS[way](texts) == plain(texts)
    texts = ["ok", EXAMPLES[number], EXAMPLES[number - 1], ""]
    assert PATHS[way](texts) == plain(texts)


@BOTH
def test_a_corpus_cut_into_lines_gives_the_plain_result_and_skips_lines_without_a_condition(way):
    lines = build_corpus(seed=5, target_chars=200_000, secret_every=6).text.split("\n")
    found = PATHS[way](lines)
    assert found == plain(lines)
    chosen = fast._candidates(lines, None, FINDERS[way])
    assert len(found) > 100 and set(found) <= set(chosen)
    assert "Author: bot" in lines and lines.index("Author: bot") not in chosen


@BOTH
def test_a_whole_corpus_in_a_few_big_strings_gives_the_plain_result(way):
    # Tool outputs are big strings of many lines: here the corpus in chunks of 300 lines, so lines are picked
    # inside strings and the rows run on the joined picks, as in an export.
    lines = build_corpus(seed=11, target_chars=300_000, secret_every=8).text.split("\n")
    texts = ["\n".join(lines[start:start + 300]) for start in range(0, len(lines), 300)]
    found = PATHS[way](texts)
    assert found == plain(texts) and sum(map(len, found.values())) > 100


_pieces = st.sampled_from([
    *EXAMPLES, "ok", "\n", " ", "=", ": ", "key", "KEY", "Pass", "secret", "token", "@", "://", "1", "0", "-", ".",
    "13812345678", "１３８１２３４５６７８", "Ｘ", "－", "4111 1111 1111 1111", "110105-1949-1231-002X", "[已脱敏:邮箱]",
    "paſſword=hunter2x", "\u212aey=abc123XYZ", "İ", "ı", "ſ", "\u212a", "a@example.com13812345678", "bot", "12345678:",
    "\\\"", "sig=", "SK", "LTAI", "eyJ", "sk-", "xoxb-", "dop_v1_", "Cookie: ", "Bearer ", "卡号 ", "卡",
    # characters outside Latin-1 (the re2 way reads them as "?") and outside the BMP (one "?" each, positions kept)
    "用户", "密码很长", "😀", "é", "\u3000", "://用户:", "@db", "password: \"", "sk-abcdefghijklmnopq", "１２３４",
    # where a credential's value ends, and values the validator turns down ("", "$X", followed by "(" or "[")
    "(", "[", "\x0b", "\x1c", "\x85", "$", "$1", "\"\"", "''", "os.environ", "٣"])
_texts = st.lists(st.lists(_pieces | st.text(max_size=6), max_size=6).map("".join), max_size=6)


@BOTH
@settings(max_examples=500, deadline=None)
@given(_texts)
@example(["paſſword=hunter2x"])                     # re's IGNORECASE reads ſ as s: the folded copy cannot
@example(["\u212aey=abc123XYZ"])                     # ... and the Kelvin sign as k
@example(["手机１３８１２３４５６７８"])               # full-width digits: the plain path converts them first
@example(["a@example.com13812345678"])               # a second round after the first masks
@example(["x_key=aws", "secret_key=" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/Ab"])   # lines of two strings
# run together: the second must not see the first's "aws" before it
def test_fast_gives_what_the_plain_module_gives(way, texts):
    assert PATHS[way](texts) == plain(texts)


# Strings of many lines, as tool outputs are: rule cases and look-alikes among noise lines. The rules run only on
# the lines that hold a condition (and the line before a card at a line's start), so this checks that a line gives
# the same result alone as inside its whole string.
_noise = st.sampled_from(["", "ok", "def f(x):", "    return x  # done", "2026-08-25 18:46:40 INFO started", "}"])
_numbers = st.sampled_from([
    "4111111111111111", "4111 1111 1111 1111", "订单号：", "order #", "卡号", "card no.", "13812345678", "+8613812345678",
    "008613812345678", "1234008613812345678", "11010519491231002X", "110105 1949 1231 002X", "1732867200123",
    "1732867200.123456", "6011000990139424", "2024113012345678", "Tel", "id=", "sk-", ".", "-", ",", "0.", "0086",
    'password="订单：', '"', "\\n"])
_line = st.lists(_pieces | _numbers | _noise, max_size=4).map("".join)
_multiline = st.lists(st.lists(_line, min_size=1, max_size=8).map("\n".join), min_size=1, max_size=3)


@BOTH
@settings(max_examples=400, deadline=None)
@given(_multiline)
@example(["订单号：\n4111111111111111"])          # a card at a line's start reads the end of the line before it
@example(["4111111111111111订单号：", "x", "4111111111111111订单号："])   # ... but never the end of another string
@example(["x\na@example.com13812345678\ny"])     # the second round looks again at the marked line
@example(["-----BEGIN PRIVATE KEY-----\nabc\ndef\n-----END PRIVATE KEY-----\n13812345678"])   # spans lines
@example(["monkey.sk-ABCDEFGHIJKLMNOPQRSTUV1234=x"])  # one condition's match must not hide the next one's start
@example(["1234008613812345678", "x+8613812345678", "11010519491231002x"])   # 0086 / +86 mobiles, ID with x
@example(["电话 +86 138 1234 5678\ntel:159-0000-1234"])   # a grouped number on the line before must not stand in
@example(["12340086 138 1234 5678"])                     # a grouped mobile after 0086
@example(["11010519491231-002X", "1101051949123100-2X"])  # an ID number grouped 14-4 holds no "0000-0000"
@example(["-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----\nTOKEN=Abc123Xyz789Qwe\n"
          "a@example.com13812345678"])                   # a key string: only its rows run, a second round too
@example(["x\n-----BEGIN PRIVATE KEY-----\nsecret_key=" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789+/Ab"])   # unended
@example(["6219 2001 86.1\n4111 1111 1111 1111 200 86.1"])   # "<run> 200 86.1" in logs; a card before " 200"
@example(["loss=3.14159265358 1.008613812345678 2,13812345678 x.4111.1111.1111.1111"])   # fractions; 0086 in one
@example(["0.110105194912310021 7.4111111111111111 5.0086138 1234 5678 9,4111 1111 1111 1111"])
def test_many_lines_give_what_the_plain_module_gives(way, texts):
    assert PATHS[way](texts) == plain(texts)


ICBC_19 = "9558801234567890128"   # 19 digits, Luhn-valid, no issuer prefix in the table: only "卡"/"card" marks it
assert s11_redact.is_luhn_valid(ICBC_19) and not s11_redact._CARD_ISSUER.fullmatch(ICBC_19)


@BOTH
@pytest.mark.parametrize(("text", "expected"), [
    ("订单号：\n4111111111111111", []),                                  # the order-number word ends the line before
    ("卡号：\n4111111111111111", [(4, 20, "银行卡号")]),
    ("1234008613812345678", [(8, 19, "手机号")]),                         # 0086 then a mobile, inside a long run
    ("monkey.sk-ABCDEFGHIJKLMNOPQRSTUV1234=x", [(7, 36, "API密钥")]),
    ("身份证 11010519491231-002X", [(4, 23, "身份证号")]),                 # grouped 14-4: only "0000-000" in it
    ("task-ABCDEFGHIJKLMNOPQRSTUV1234 sk-ABCDEFGHIJKLMNOPQRST", []),     # sk- inside a word; 17 characters after
    ("00000000-0000-0000-0000-000000000000 4111-1111-1111-1111", [(37, 56, "银行卡号")]),   # a card after a UUID
    ("loss=0.4111111111111111 lr=1.008613812345678", [(33, 44, "手机号")]),   # a fraction; a 0086 mobile in one
    # the order-number word before the card is inside a credential: once that is masked, the card is a card
    ('password="订单："\n4111111111111111', [(10, 13, "凭据"), (15, 31, "银行卡号")]),
    ('x\nPASSWORD=订单：\n4111111111111111\n4111 1111', [(11, 14, "凭据"), (15, 31, "银行卡号")]),
])
def test_the_cases_that_need_more_than_one_line_or_more_than_one_condition(way, text, expected):
    texts = ["noise\n" * 3 + text + "\nmore noise"]
    shift = len("noise\n" * 3)
    shifted = [(start + shift, end + shift, label) for start, end, label in expected]
    assert plain(texts) == ({0: shifted} if shifted else {})
    assert PATHS[way](texts) == plain(texts)


# Secrets whose line holds nothing else a pre-filter could notice: each line's only trigger is the thing a native
# pattern could miss (a character outside Latin-1 inside the secret, "卡", a full-width digit, a letter that re's
# IGNORECASE reads as ASCII, a number at a line's start, a key spanning lines, characters outside the BMP before it).
# The plain module masks something in every one; a pre-filter that under-selects returns less.
UNDER_SELECTION = [
    "postgres://用户:密码很长@db:5432/app",             # url_password: its classes take any character but /?#@ and space
    'password: "密码是一句很长的话"',                   # credential: a quoted value outside ASCII
    "db_passwd=密码很长很长",                           # ... and an unquoted one
    "Cookie: 会话=很长很长很长很长的值",                  # cookie: name and value outside ASCII
    f"银行卡 {ICBC_19}",                                 # "卡" is the only sign of this card number
    f"卡号:{ICBC_19}",
    f"卡号：{'９５５８８０１２３４５６７８９０１２８'}",   # full-width digits after "卡"
    "手机１３８１２３４５６７８请回电",                   # full-width mobile
    "身份证１１０１０５１９４９１２３１００２Ｘ",          # full-width ID number with a full-width X
    "sk-abcdefghijklmnopq１２３４",                      # full-width digits finish an API key (the table reads 1234)
    "paſſword=hunter2x",                                 # ſ reads as s under IGNORECASE
    "TO\u212aEN=abc123XYZ789",                           # the Kelvin sign reads as k
    "Coo\u212aie: sid=Abc123Xyz789Qwe456",
    "Authorızation: Basic ZGVwbG95Omh1bnRlcjI=",        # dotless ı reads as i
    "Authorİzation: Basic ZGVwbG95Omh1bnRlcjI=",        # dotted İ too
    "4111111111111111 是卡号",                           # a number at a line's start
    "13812345678",
    "11010519491231002X",
    "+8613812345678",
    "Tel13812345678",
    "-----BEGIN PRIVATE KEY-----\nMIIEabc\ndef\n-----END PRIVATE KEY-----",   # spans lines
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE",                  # truncated: to the end of the text
    "😀😀😀 a@example.com 😀 13812345678",              # outside the BMP: positions must still be right
    "café 🎉 password=hunter2x",
    "手机\u300013812345678",                             # an ideographic space before a mobile
]


@BOTH
@pytest.mark.parametrize("number", range(len(UNDER_SELECTION)), ids=lambda number: f"line-{number}")
def test_a_secret_whose_only_trigger_a_pre_filter_could_miss(way, number):
    text = UNDER_SELECTION[number]
    texts = ["noise\n" + text + "\n更多 noise", text, "ok"]
    expected = plain(texts)
    assert 0 in expected and 1 in expected
    assert PATHS[way](texts) == expected


SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"


def _sample_texts(path: Path) -> list[str]:
    """Every string the export's structured pass would look at in one real transcript, plus its raw lines and the
    whole file as one string (a malformed line stays a string)."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    texts = [raw, *raw.splitlines()]
    for line in raw.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        texts += [text for _, _, text, _ in s11_redact.places(record)]
    return texts


@BOTH
@pytest.mark.parametrize("name", sorted(path.name for path in SAMPLES.glob("*.jsonl")) if SAMPLES.is_dir() else [])
def test_the_real_sample_transcripts_give_what_the_plain_module_gives(way, name):
    texts = _sample_texts(SAMPLES / name)
    # Real transcripts hold few secrets: plant the rule cases and the pre-filter traps in every fifth string,
    # once in the middle of a line and once as a line of their own.
    planted = [*UNDER_SELECTION, *EXAMPLES]
    for number, text in enumerate(texts[::5]):
        secret, middle = planted[number % len(planted)], len(text) // 2
        texts += [text[:middle] + " " + secret + " " + text[middle:], text + "\n" + secret]
    expected = plain(texts)
    assert len(expected) > 50
    assert PATHS[way](texts) == expected


@BOTH
def test_only_lines_with_a_condition_and_the_line_before_a_card_at_a_line_start_are_sent_to_the_rules(way):
    text = "a\nb 13812345678\nc\nd\n4111111111111111\ne"
    chosen = fast._candidates([text], None, FINDERS[way])[0]
    assert sorted(chosen.lines) == [2, 20]
    assert fast._pieces(text, chosen.lines) == [(1, 15), (17, 36)]   # "\nd" comes along: 4111… starts its line


def _rows_run(monkeypatch) -> list[set[str]]:
    """Record which rows each call of the plain _claims runs (the full table counts as every row). The tests that use
    it call the accelerator itself, so they check it under S11_PLAIN=1 as well."""
    runs, claims = [], s11_redact._claims

    def recording(text, rules=None):
        runs.append({rule.name for rule in (s11_redact.RULES if rules is None else rules)})
        return claims(text, rules)
    monkeypatch.setattr(s11_redact, "_claims", recording)
    return runs


@BOTH
def test_a_private_key_string_runs_only_the_rows_whose_condition_it_holds(way, monkeypatch):
    # A private key spans lines, so its string goes to the rules whole; but only the rows whose condition occurs in
    # it (and those a "private key" hides at its own position) can claim anything there.
    text = "cat ~/.ssh/id\n-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----\nmail a@example.com"
    expected = plain([text])
    runs = _rows_run(monkeypatch)
    found = fast.accelerate(s11_redact, native=way == "re2")([text])
    assert found == expected and [label for _, _, label in expected[0]] == ["私钥", "邮箱"]
    assert runs and all("private_key" in run and "email" in run and "cn_mobile" not in run for run in runs)


@BOTH
def test_a_second_round_runs_only_the_rows_whose_condition_the_marked_lines_hold(way, monkeypatch):
    # The mask of the e-mail lets the mobile after it match (its lookbehind now sees "]"): the second round must
    # find it, running the rows whose condition occurs on the marked line, not the whole table.
    texts = ["noise\nmail a@example.com13812345678 now\nmore noise"]
    expected = plain(texts)
    runs = _rows_run(monkeypatch)
    found = fast.accelerate(s11_redact, native=way == "re2")(texts)
    assert found == expected and [label for _, _, label in expected[0]] == ["邮箱", "手机号"]
    assert len(runs) == 2 and "email" in runs[0] and "cn_mobile" in runs[1]
    assert not any("jwt" in run for run in runs)


@BOTH
def test_fractions_of_floats_are_not_sent_to_the_number_rows_but_a_0086_mobile_inside_one_is(way):
    # 0.4111111111111111 would be a Visa number with a known issuer, were it not the fraction of a float (the rules'
    # lookbehind refuses it); 1.008613812345678 ends in a mobile after 0086, which the rules do mask.
    texts = ["a\nloss=0.4111111111111111 lr=1.9111677885815004e-05\nb", "c\nlr=1.008613812345678\nd"]
    assert plain(texts) == {1: [(11, 22, "手机号")]}
    chosen = fast._candidates(texts, None, FINDERS[way])
    assert 0 not in chosen and sorted(chosen[1].lines) == [2]


@BOTH
@pytest.mark.parametrize("blob", [
    "iVBORw0KGgo" * 3000, "token" * 20000 + "=", "1" * 60000, "1 " * 30000, "sk-" + "a-" * 30000, "a" * 60000 + "@",
    "key" * 200000, "key=" * 50000, "a@b.io" * 20000, "4111111111111111\n" * 5000, "卡" * 50000 + "1",
], ids=["base64", "token-names", "digit-run", "digit-groups", "sk-prefix", "endless-word-at", "key-names",
        "key-signs", "e-mails", "card-lines", "card-words"])
def test_pathological_input_gives_the_plain_result_without_hanging(way, blob):
    # the pre-filter must stay linear too (RE2 is; the python way's passes are single regexes), and a picked line
    # of 600,000 characters goes to the same rules the plain module runs; the alarm turns a hang into a failure
    def hang(signum, frame):
        raise AssertionError("加速的脱敏在病态输入上停不下来")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    try:
        texts = [blob, "ok " + blob[:1000]]
        assert PATHS[way](texts) == plain(texts)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_long_run_of_card_lines_brings_along_one_line_each_not_all_the_lines_above(monkeypatch):
    # Each line that starts like a card number needs the line before it (the order-number word can only be there).
    # Walking further up while those lines start like cards too made 5,000 such lines cost 12.5 million checks.
    checks = []

    class Counting:
        def match(self, text, position):
            checks.append(position)
            return fast._CARD_AT_LINE_START_PATTERN.match(text, position)
    monkeypatch.setattr(fast, "_CARD_AT_LINE_START_PATTERN", fast._CARD_AT_LINE_START, raising=False)
    monkeypatch.setattr(fast, "_CARD_AT_LINE_START", Counting())
    text = "订单号：\n" + "4111111111111111\n" * 2000
    lines = {position + 1 for position, char in enumerate(text) if char == "\n"}
    assert fast._pieces(text, lines) == [(0, len(text))]
    assert len(checks) <= len(lines)


def test_the_python_ways_conditions_take_in_at_most_two_bytes_so_none_hides_the_start_of_another():
    # (the re2 way does not need this: it asks re2.Set which conditions occur anywhere in a picked line)
    conditions = fast._FOLDED_CONDITIONS + fast._RAW_CONDITIONS
    folded = "\n".join(EXAMPLES).encode("latin-1", "replace")
    for _, pattern in conditions:
        for buffer in (folded, folded.lower()):
            assert all(len(match.group()) <= 2 for match in re.finditer(pattern, buffer)), pattern


def test_the_unsure_characters_are_all_that_ignorecase_reads_as_ascii_letters():
    # Any character outside ASCII that a case-insensitive pattern matches as a-z must send its string to the rules.
    folds = [chr(code) for code in range(0x80, 0x110000) if re.fullmatch("(?i)[a-z]", chr(code))]
    assert all(fast._UNSURE.search(char) for char in folds)
    if fast.LineFinder is not None:   # the re2 way keeps each of them (and the full-width digits) as a byte of its own
        from s11_fast import redact_re2
        kept = redact_re2._KEPT
        assert set(folds) | set("０１２３４５６７８９") <= set(kept) and kept.endswith("卡")


@NEEDS_RE2
def test_the_re2_way_reads_the_card_issuer_table_as_re_does():
    # s11_redact._CARD_ISSUER is written for re.VERBOSE; the re2 way strips its comments and spaces.
    import re2

    from s11_fast import redact_re2
    native = re2.compile(b"(?:" + redact_re2._unverbose(s11_redact._CARD_ISSUER.pattern) + b")")
    numbers = ["4111111111111111", "5500005555555559", "2221000000000009", "378282246310005", "6011000990139424",
               "3530111333300000", "6222021234567890123", "62220212345678901", "2024113012345678", "411111111111111",
               "27211234567890123", "9558801234567890128", "3528000000000000", "3600000000000000"]
    for number in numbers:
        assert bool(native.fullmatch(number.encode())) == bool(s11_redact._CARD_ISSUER.fullmatch(number)), number


@NEEDS_RE2
@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("a1?\n卡é\x85\x8e０９İıſ\u212a汉🤖\ud800\x00")), max_size=30))
@example("卡" * 1001 + "１")                 # so many that the copy is made with the code table itself
@example("x" * 5000 + "卡１İıſ\u212a" * 3)   # a few: patched one by one
def test_the_single_byte_copy_is_the_code_table_one_whatever_the_text(text):
    # Without a character that matters, re2's copy is encode("ascii", "replace"); it must be byte for byte the
    # code table's copy (each non-ASCII character "?", the ones that matter their own byte), whichever way it was made.
    import codecs

    from s11_fast import redact_re2
    assert redact_re2._single_byte(text) == codecs.charmap_encode(text, "replace", redact_re2._SINGLE_BYTE)[0]


@BOTH
def test_a_changed_rule_table_falls_back_to_the_plain_path(way, monkeypatch):
    acme = s11_redact.Rule("acme", "ACME密钥", re.compile(r"acme_[0-9a-f]{12}"))
    monkeypatch.setattr(s11_redact, "RULES", s11_redact.RULES + [acme])
    texts = ["key acme_0123456789ab", "nothing here"]
    assert PATHS[way](texts) == plain(texts) == {0: [(4, 21, "ACME密钥")]}


def test_the_seam_took_the_accelerator_unless_s11_plain_is_set():
    import os
    assert s11_redact._find_all.__module__ == ("s11_redact" if os.environ.get("S11_PLAIN") else "s11_fast.redact")


# A fresh interpreter each: S11_PLAIN=1 (the plain module), the default, and google-re2 missing (import re2 fails:
# the accelerator's python way). All three give the same export.
@pytest.mark.parametrize(("environment", "hide_re2", "used"), [
    ({"S11_PLAIN": "1"}, False, "s11_redact"),
    pytest.param({}, False, "s11_fast.redact re2", marks=NEEDS_RE2),
    ({}, True, "s11_fast.redact python")], ids=["plain", "accelerated", "accelerated-without-re2"])
def test_s11_plain_switches_the_accelerator_off_and_every_way_gives_the_same_export(environment, hide_re2, used):
    program = (("import sys; sys.modules['re2'] = None; " if hide_re2 else "") +
               "import json, s11_redact, s11_fast.redact as fast; "
               "value = {'input': {'phone': 13812345678, 'passwd': 'x'}, 'text': 'mail a@example.com; ok'}; "
               "module = s11_redact._find_all.__module__; "
               "print(module, ('re2' if fast.LineFinder else 'python') if module != 's11_redact' else ''); "
               "print(json.dumps(s11_redact.redact_value(value), ensure_ascii=False))")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(CODE), **environment}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    way, result = done.stdout.splitlines()
    assert way.strip() == used
    assert result == ('[{"input": {"phone": "[已脱敏:手机号]", "passwd": "[已脱敏:凭据]"}, '
                      '"text": "mail [已脱敏:邮箱]; ok"}, {"凭据": 1, "邮箱": 1, "手机号": 1}]')
