"""Issue 44 item 1: Codex CLI's compressed (.jsonl.zst) and archived rollouts.

Since Codex 0.137 a rollout idle for a week is zstd-compressed beside where it was; archived sessions sit flat in
archived_sessions/. Both must import to the same tree as their plain copies (so a re-import writes nothing), both must
be listed, the decompression is bounded by the same byte limit as any import, and both decompressors (the standard
library's compression.zstd where Python has it, else the zstandard package) behave identically.
The rollouts are built here from the documented shape (tests/import/test_import_codex_gemini.Codex).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import zstandard
from test_import import nodes, own_texts
from test_import_codex_gemini import Codex

import s11_import
from s11_import import UnsupportedFormat, compressed, import_file
from s11_import.report import TranscriptTooLarge
from s11_session import SessionStore

NO_OVERRIDES: dict = {}


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


@pytest.fixture(params=["zstandard", "stdlib"])
def decompressor(request, monkeypatch):
    """Run each test with both decompressors: the stdlib branch through backports.zstd (the same API as 3.14's
    compression.zstd) when it is installed."""
    if request.param == "stdlib":
        backport = pytest.importorskip("backports.zstd")
        monkeypatch.setattr(compressed, "stdlib_zstd", lambda: backport)
    else:
        monkeypatch.setattr(compressed, "stdlib_zstd", lambda: None)
    return request.param


def rollout() -> Codex:
    return Codex().user("给 /login 加限流").assistant("先看路由").user("再加测试").assistant("加好了")


def zst(plain: Path, target: Path, frames: int = 1) -> Path:
    """Compress like Codex does (one zstd frame; frames > 1 writes several frames back to back)."""
    data = plain.read_bytes()
    step = len(data) // frames + 1
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"".join(zstandard.ZstdCompressor().compress(data[i:i + step])
                                for i in range(0, len(data), step)))
    return target


def test_a_compressed_rollout_imports_to_the_same_tree_as_its_plain_copy(tmp_path, decompressor):
    plain = rollout().write(tmp_path / "plain" / "rollout-2026-05-02T10-00-00-abc.jsonl")
    packed = zst(plain, tmp_path / "packed" / "rollout-2026-05-02T10-00-00-abc.jsonl.zst")
    plain_store, packed_store = SessionStore(tmp_path / "a"), SessionStore(tmp_path / "b")
    first, second = import_file(plain, plain_store), import_file(packed, packed_store)
    assert first.node_ids == second.node_ids and second.written == 1
    (a,), (b,) = nodes(plain_store, first), nodes(packed_store, second)
    assert a.messages == b.messages and a.source == b.source and a.title == b.title
    assert b.source["file"] == "rollout-2026-05-02T10-00-00-abc.jsonl"
    assert own_texts(b) == ["给 /login 加限流", "先看路由", "再加测试", "加好了"]
    again = import_file(packed, plain_store)   # the compressed copy of what is already kept writes nothing
    assert (again.written, again.unchanged) == (0, 1)
    assert packed.read_bytes()[:4] == b"\x28\xb5\x2f\xfd"   # the agent's file is only read


def test_several_frames_back_to_back_are_read_whole(tmp_path, store, decompressor):
    plain = rollout().write(tmp_path / "rollout-x.jsonl")
    report = import_file(zst(plain, tmp_path / "z" / "rollout-x.jsonl.zst", frames=3), store)
    assert own_texts(nodes(store, report)[0])[-1] == "加好了" and report.skipped == []


def test_a_bomb_is_refused_by_the_import_limit_before_anything_is_written(tmp_path, store, decompressor):
    bomb = tmp_path / "rollout-bomb.jsonl.zst"
    bomb.write_bytes(zstandard.ZstdCompressor(level=19).compress(b" " * 5_000_000))
    assert bomb.stat().st_size < 2_000
    with pytest.raises(TranscriptTooLarge, match="解压后超过导入上限") as refused:
        import_file(bomb, store, max_bytes=1_000_000)
    assert "仓库没有任何改动" in str(refused.value) and store.list_sessions() == []


def test_a_cut_stream_keeps_what_decompressed_and_says_so(tmp_path, store, decompressor):
    log = rollout()
    for number in range(300):
        log.user(f"第 {number} 个问题").assistant(f"第 {number} 个回答")
    plain = log.write(tmp_path / "rollout-cut.jsonl")
    packed = zst(plain, tmp_path / "z" / "rollout-cut.jsonl.zst")
    packed.write_bytes(packed.read_bytes()[:-200])
    report = import_file(packed, store)
    assert any("压缩流在中途断了" in warning for warning in report.warnings)
    assert own_texts(nodes(store, report)[0])[0] == "给 /login 加限流"


def test_garbage_behind_the_zstd_magic_is_a_clear_refusal(tmp_path, store, decompressor):
    fake = tmp_path / "rollout-fake.jsonl.zst"
    fake.write_bytes(b"\x28\xb5\x2f\xfd" + b"not zstd at all" * 40)
    with pytest.raises(UnsupportedFormat, match="不是有效的 zstd 压缩文件"):
        import_file(fake, store)
    assert store.list_sessions() == []


def codex_home(home: Path) -> dict:
    """~/.codex with one live rollout, one compressed beside its day, one compressed whose plain copy is still
    there, and one archived session."""
    sessions = home / ".codex" / "sessions" / "2026" / "05" / "02"
    live = Codex().user("现在的会话").assistant("好").write(sessions / "rollout-2026-05-02T10-00-00-live.jsonl")
    old = Codex(thread="old-thread").user("一周前的会话").assistant("好").write(tmp := home / "old.jsonl")
    packed = zst(old, sessions.parent / "01" / "rollout-2026-05-01T09-00-00-old.jsonl.zst")
    tmp.unlink()
    both = zst(live, sessions / "rollout-2026-05-02T10-00-00-live.jsonl.zst")
    archived = Codex(thread="arch-thread").user("归档的会话").assistant("好").write(
        home / ".codex" / "archived_sessions" / "rollout-2026-04-01T08-00-00-arch.jsonl")
    for number, path in enumerate((archived, packed, live)):
        os.utime(path, (1_700_000_000 + number, 1_700_000_000 + number))
    return {"live": live, "packed": packed, "both": both, "archived": archived}


def test_compressed_and_archived_rollouts_are_listed_with_their_titles(tmp_path, decompressor):
    paths = codex_home(tmp_path / "home")
    listing = s11_import.list_agent_sessions(str(tmp_path / "home"), env=NO_OVERRIDES)
    rows = [(Path(s.path).name, s.title) for s in listing.sessions]
    assert rows == [(paths["live"].name, "现在的会话"), (paths["packed"].name, "一周前的会话"),
                    (paths["archived"].name, "归档的会话")]   # the .zst beside its plain copy is not listed twice


def test_an_archived_session_imports_to_the_same_tree_as_where_it_lived(tmp_path, store):
    paths = codex_home(tmp_path / "home")
    first = import_file(paths["archived"], store)
    moved = tmp_path / "sessions" / "2026" / "04" / "01" / paths["archived"].name
    moved.parent.mkdir(parents=True)
    moved.write_bytes(paths["archived"].read_bytes())
    again = import_file(moved, store)
    assert again.node_ids == first.node_ids and (again.written, again.unchanged) == (0, 1)


def test_a_folder_import_takes_the_plain_copy_once_and_the_compressed_ones(tmp_path, store):
    paths = codex_home(tmp_path / "home")
    result = s11_import.import_folder(tmp_path / "home" / ".codex", store)
    assert result.problems == []
    assert sorted(report.file for report in result.reports) == sorted(
        [paths["live"].name, paths["packed"].name[:-4], paths["archived"].name])
