"""Issue 42 item 4: a Claude Code session uploaded with its subagents/ folder in one .zip keeps its subagents.

A browser uploads one file, so the session and the folder beside it travel as a zip. Names and sizes in a zip are
written by whoever made it: unsafe names are refused, the real unpacked bytes are counted, and a refusal leaves the
store as it was (and no temporary folder behind).
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

import pytest

from s11_import import import_file
from s11_import.report import TranscriptTooLarge, UnsupportedFormat
from s11_session import SessionStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SESSION = EXAMPLES / "claude-code-rate-limit.jsonl"
AGENT = EXAMPLES / "claude-code-rate-limit" / "subagents" / "agent-a7e3c91.jsonl"


@pytest.fixture
def store(tmp_path) -> SessionStore:
    return SessionStore(tmp_path / "store")


def packed(path: Path, members: dict) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def whole_session(tmp_path: Path, prefix: str = "") -> Path:
    return packed(tmp_path / "upload.zip", {f"{prefix}3f1c.jsonl": SESSION.read_bytes(),
                                            f"{prefix}3f1c/subagents/agent-a7e3c91.jsonl": AGENT.read_bytes(),
                                            f"{prefix}notes.txt": b"ignored"})


def leftovers() -> set:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("s11-zip-")}


@pytest.mark.parametrize("prefix", ["", "project/"], ids=["flat", "in-a-folder"])
def test_a_zip_with_the_subagents_folder_imports_the_subagent_under_its_task_call(tmp_path, store, prefix):
    before = leftovers()
    report = import_file(whole_session(tmp_path, prefix), store)
    assert report.missing_subagents == [] and len(report.node_ids) == 3
    agents = [store.load(sid) for sid in report.node_ids if store.load(sid).source.get("subagent")]
    assert len(agents) == 1 and agents[0].source["spawned_at"] == 4 and agents[0].title.startswith("子代理：")
    assert leftovers() == before   # the temporary folder is gone


def test_the_zip_and_the_plain_file_give_the_same_node_ids(tmp_path, store):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "3f1c.jsonl").write_bytes(SESSION.read_bytes())
    (plain / "3f1c" / "subagents").mkdir(parents=True)
    (plain / "3f1c" / "subagents" / "agent-a7e3c91.jsonl").write_bytes(AGENT.read_bytes())
    direct = import_file(plain / "3f1c.jsonl", SessionStore(tmp_path / "other"))
    assert import_file(whole_session(tmp_path), store).node_ids == direct.node_ids


@pytest.mark.parametrize("members, reason", [
    ({"../evil.jsonl": b"{}"}, "名字不安全"),
    ({"/abs/evil.jsonl": b"{}"}, "名字不安全"),
    ({"a\\..\\evil.jsonl": b"{}"}, "名字不安全"),
    ({"notes.txt": b"x"}, "没有会话记录"),
    ({"a.jsonl": SESSION.read_bytes(), "b.jsonl": SESSION.read_bytes()}, "有 2 个会话文件"),
], ids=["dotdot", "absolute", "backslash", "no-session", "two-sessions"])
def test_a_bad_zip_is_refused_in_chinese_and_the_store_is_unchanged(tmp_path, store, members, reason):
    store.create_session("已经保存的")
    saved = sorted(p.name for p in Path(store.storage_dir).iterdir())
    before = leftovers()
    with pytest.raises(UnsupportedFormat, match=reason) as caught:
        import_file(packed(tmp_path / "bad.zip", members), store)
    assert "bad.zip" in str(caught.value) and "仓库没有任何改动" in str(caught.value)
    assert sorted(p.name for p in Path(store.storage_dir).iterdir()) == saved and leftovers() == before
    assert not (tmp_path / "evil.jsonl").exists()


def test_a_symlink_member_is_refused(tmp_path, store):
    path = tmp_path / "link.zip"
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo("3f1c.jsonl")
        info.external_attr = (0o120777 << 16)   # a symbolic link to /etc/passwd
        archive.writestr(info, "/etc/passwd")
    with pytest.raises(UnsupportedFormat, match="符号链接"):
        import_file(path, store)


def test_the_unpacked_bytes_are_counted_not_the_sizes_the_zip_claims(tmp_path, store):
    bomb = packed(tmp_path / "bomb.zip", {"3f1c.jsonl": b"{" + b" " * 5_000_000 + b"}\n"})
    assert bomb.stat().st_size < 50_000
    with pytest.raises(TranscriptTooLarge, match="解开后超过"):
        import_file(bomb, store, max_bytes=1_000_000)
    assert store.list_sessions() == []


def test_something_that_is_not_a_zip_is_refused(tmp_path, store):
    fake = tmp_path / "fake.zip"
    fake.write_bytes(b"not a zip at all")
    with pytest.raises(UnsupportedFormat, match="不是能读的 .zip 文件"):
        import_file(fake, store)
