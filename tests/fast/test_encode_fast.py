"""s11_fast.encode against its oracle, the plain s11_format._compact: for any value, the same bytes or the same
exception (type and message); S11_PLAIN=1 and a machine without orjson give the store the same files.

The oracle is a second copy of s11_format loaded with S11_PLAIN=1 (its _compact is the standard library's), and the
accelerated encoder is built directly from it with accelerate(), so a run under S11_PLAIN=1 still tests fast vs plain.
What the accelerator must route back to the plain encoder is listed in ODD: each kind where orjson writes different
bytes (floats, NaN, ints past 64 bits), refuses what json writes (lone surrogates, non-str keys), or writes what json
refuses (UUID, Enum, dates, dataclasses, subclasses, Fragment, bytes, sets).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import os
import subprocess
import sys
import uuid
from collections import OrderedDict
from pathlib import Path

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from plain_copy import plain_copy
from s11_fast import encode as fast

CODE = Path(__file__).resolve().parents[2] / "code"
SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "samples"


PLAIN = plain_copy("s11_format")._compact
FAST = fast.accelerate(PLAIN)


def outcome(encode, value):
    try:
        return "ok", encode(value)
    except Exception as exc:   # the exact exception is part of the contract: callers turn its type into a message
        return "refused", type(exc), str(exc)


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Text(str):
    pass


class Number(int):
    pass


class Mapping(dict):
    pass


class Items(list):
    pass


@dataclasses.dataclass
class Point:
    x: int


ODD = [1.5, 0.1, 1e16, 1e-7, 1e-05, 1e300, -0.0, 5e-324, float("nan"), float("inf"), float("-inf"),
       2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1, 2 ** 64, -2 ** 63, -2 ** 63 - 1, 2 ** 200,
       "\ud83d", "a\udc00b", "\u2028\u2029", "".join(map(chr, range(32))), "\x7f\x80\x9f", "\ufeff\uffff",
       '"\\/', "😀", "\U0010ffff",
       Colour.RED, Level.HIGH, Text("sub"), Number(7), Mapping(a=1), Items([1]), OrderedDict(a=1),
       uuid.UUID(int=5), datetime.date(2026, 1, 1), datetime.datetime(2026, 1, 1, 12), datetime.time(1, 2),
       Point(1), (1, "a"), (), b"bytes", bytearray(b"x"), {1, 2}, frozenset(), orjson.Fragment(b"1"), object(),
       1j, Ellipsis]
scalars = st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.text() | st.floats() | st.sampled_from(ODD)
keys = st.text() | st.integers() | st.sampled_from([1.5, None, True, False, Text("k"), (1, 2), Colour.RED])
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4)
                      | st.tuples(inner, inner), max_leaves=25)


@settings(max_examples=400, deadline=None)
@given(values)
@example({"role": "user", "content": [{"type": "text", "text": "hi\n\x1f", "n": 1, "ok": True, "x": None}]})
@example({"score": float("nan")})
@example([1e-7])
@example({1: "int key"})
def test_any_value_gives_the_plain_bytes_or_the_plain_exception(value):
    assert outcome(FAST, value) == outcome(PLAIN, value)


@pytest.mark.parametrize("number", range(len(ODD)), ids=lambda number: f"odd-{number}")
def test_each_odd_kind_alone_as_a_key_and_deep_inside_a_message(number):
    odd = ODD[number]
    for value in (odd, [odd], {"role": "user", "content": [{"type": "text", "text": "t", "v": {"w": [odd]}}]}):
        assert outcome(FAST, value) == outcome(PLAIN, value)
    keyed = {}
    try:
        keyed[odd] = 1
    except TypeError:   # unhashable: cannot be a key
        return
    assert outcome(FAST, keyed) == outcome(PLAIN, keyed)


def test_cycles_shared_objects_and_deep_values_take_the_plain_path():
    looped = {"role": "user"}
    looped["self"] = looped
    shared = {"a": 1}
    deep = "leaf"
    for _ in range(5_000):
        deep = [deep]
    for value in (looped, [shared, shared], {"a": shared, "b": [shared]}, deep, [[[]] * 3]):
        assert outcome(FAST, value) == outcome(PLAIN, value)
    assert outcome(FAST, looped)[:2] == ("refused", ValueError)   # json's "Circular reference detected"


def sample_values():
    """Every JSON value in the real transcripts, line by line (a torn or malformed line is skipped)."""
    for path in sorted(SAMPLES.glob("*.jsonl")):
        for line in path.read_text("utf-8", errors="replace").splitlines():
            try:
                yield json.loads(line)
            except ValueError:
                continue


def test_every_line_of_the_real_samples():
    values = list(sample_values())
    assert len(values) > 100
    for value in values:
        assert outcome(FAST, value) == outcome(PLAIN, value)
        for part in value.values() if isinstance(value, dict) else ():
            assert outcome(FAST, part) == outcome(PLAIN, part)


def test_the_seam_is_on_by_default_and_off_with_s11_plain():
    import s11_format
    expected = "compact" if os.environ.get("S11_PLAIN") is None else "_compact"
    assert s11_format._compact.__name__ == expected
    assert PLAIN.__name__ == "_compact" and FAST.__name__ == "compact"


# ── the whole store, three ways: the files an import writes are the same ───────────────────────────
IMPORT_SAMPLES = r"""
import glob, hashlib, json, os, re, sys
if sys.argv[2] == "hidden":
    sys.modules["orjson"] = None   # as on a machine without it: import orjson raises ImportError
import s11_format, s11_import
from s11_session import SessionStore
store = SessionStore(sys.argv[1], durable=False, chunk_threshold=1024, chunk_bytes=1024)   # small chunks: every line is encoded
for path in sorted(glob.glob(os.path.join(sys.argv[3], "*.jsonl"))):
    try:
        s11_import.import_file(path, store)
    except Exception as exc:
        print("refused", os.path.basename(path), type(exc).__name__, exc)
files = {}
for folder, _, names in os.walk(sys.argv[1]):
    for name in names:
        path = os.path.join(folder, name)
        rel = os.path.relpath(path, sys.argv[1])
        if rel.startswith(".journal") or name.endswith(".lock"):
            continue   # the journal and lock carry the time of the run
        data = re.sub(rb'"created_ns": ?\d+', b'"created_ns":0', open(path, "rb").read())   # the time of the import
        files[rel] = hashlib.sha256(data).hexdigest()
print(s11_format._compact.__name__)
print(json.dumps(files, sort_keys=True))
"""


def test_an_import_writes_the_same_files_with_the_accelerator_s11_plain_and_no_orjson(tmp_path):
    results = {}
    for way, env in (("fast", {}), ("plain", {"S11_PLAIN": "1"}), ("hidden", {})):
        environment = {key: value for key, value in os.environ.items() if key != "S11_PLAIN"}
        environment.update(env, PYTHONPATH=str(CODE))
        done = subprocess.run([sys.executable, "-c", IMPORT_SAMPLES, str(tmp_path / way), way, str(SAMPLES)],
                              capture_output=True, text=True, env=environment, timeout=120)
        assert done.returncode == 0, done.stderr
        *refusals, encoder, files = done.stdout.splitlines()
        results[way] = (encoder, refusals, json.loads(files))
    assert [results[way][0] for way in ("fast", "plain", "hidden")] == ["compact", "_compact", "_compact"]
    chunks = [name for name in results["fast"][2] if name.startswith(".chunks")]
    assert len(chunks) > 20   # the comparison covers many chunk files, not only small version-3 sessions
    assert results["fast"][1:] == results["plain"][1:] == results["hidden"][1:]
