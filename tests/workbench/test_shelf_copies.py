"""Copies between spaces and the shelf (issue 18 items 7 and 8): a copy never overwrites a node that differs,
and what reaches the shelf, or a student's space from the shelf, is redacted.

Driven through the Spaces / Space API the explorer uses (publish, publish_plan, fork_from); every file under the
shelf and the student's space is read back as raw bytes to prove the secrets are not on disk.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from s11_session import SessionError, SessionNode, SessionStore
from s11_workbench.spaces import Limits, SpaceError, Spaces

SECRET = "teacher-secret-for-copies"
HELLO = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}]
EMAIL = "alice.wang@example.com"
PHONE = 13812345678
ID_FULL_WIDTH = "１１０１０５１９４９１２３１００２Ｘ"
API_KEY = "sk-" + "proj-" + "Xy7Qm2Lp9Rt4Vn8Kc3Hs6Jd1"
SECRETS = [EMAIL, str(PHONE), ID_FULL_WIDTH, API_KEY]


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path, teacher_secret=SECRET, limits=Limits(create_burst=1000))


def raw_bytes(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(Path(folder).rglob("*")) if path.is_file())


def secret_session(space) -> tuple[str, str]:
    """root → branch, with secrets in a title, a message, a tool input (a JSON number and a key) and the source."""
    root = SessionNode(title=f"联系 {EMAIL}", messages=[
        {"role": "user", "content": f"我的身份证 {ID_FULL_WIDTH}，key 是 {API_KEY}"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "crm",
                                           "input": {"phone": PHONE, EMAIL: "owner"}}]}],
        source={"format": "pi", "file": f"{EMAIL}.jsonl"})
    space.store.save(root)
    branch = space.store.fork(root.session_id, [{"role": "user", "content": "下一步"}], title="分支")
    return root.session_id, branch.session_id


# ── item 7: a copy never overwrites a node that differs ───────────────────────────────
def test_a_second_fork_from_the_shelf_keeps_the_students_continued_node(spaces):
    teacher = spaces.open(spaces.new_token())
    root_id = teacher.store.create_session("老师的示例", HELLO)
    spaces.publish(SECRET, teacher.space_id, root_id)
    student = spaces.open(spaces.new_token())
    first = student.fork_from(spaces.shelf(), root_id, at=1)
    mine = student.store.load(root_id)                        # the student continues her own copy of the root
    mine.messages.append({"role": "user", "content": "我自己的续写"})
    student.store.save(mine)

    second = student.fork_from(spaces.shelf(), root_id, at=2)

    kept = student.store.load(root_id)
    assert kept.messages[-1]["content"] == "我自己的续写" and kept.revision == mine.revision   # untouched
    assert second.parent_id != root_id                        # forked from a second copy of the shelf's node ...
    copy = student.store.load(second.parent_id)
    assert copy.messages == spaces.shelf().store.load(root_id).messages   # ... which holds the shelf's version
    assert second.messages == HELLO
    assert student.store.load(first.session_id).parent_id == root_id
    assert student.store.check() == []
    third = student.fork_from(spaces.shelf(), root_id, at=0)   # the second copy is reused, not copied again
    assert third.parent_id == second.parent_id and len(student.store.list_sessions()) == 5


def test_publishing_a_students_edited_copy_never_replaces_the_shelf_node(spaces):
    teacher = spaces.open(spaces.new_token())
    root_id = teacher.store.create_session("老师的示例", HELLO)
    spaces.publish(SECRET, teacher.space_id, root_id)
    shelf_before = spaces.shelf().store.load(root_id).to_dict()
    student = spaces.open(spaces.new_token())
    student.fork_from(spaces.shelf(), root_id)
    edited = student.store.load(root_id)
    edited.messages[0]["content"] = "学生改过的开头"
    student.store.save(edited)

    published = spaces.publish(SECRET, student.space_id, root_id)

    shelf = spaces.shelf().store
    assert shelf.load(root_id).to_dict() == shelf_before
    assert published != root_id and shelf.load(published).messages[0]["content"] == "学生改过的开头"


def test_a_fork_whose_every_candidate_id_is_taken_is_refused_and_changes_nothing(spaces, monkeypatch):
    import s11_workbench.spaces as spaces_module

    monkeypatch.setattr(spaces_module, "_CANDIDATES", 1)   # only the original id may be used
    teacher = spaces.open(spaces.new_token())
    root_id = teacher.store.create_session("老师的示例", HELLO)
    spaces.publish(SECRET, teacher.space_id, root_id)
    student = spaces.open(spaces.new_token())
    student.fork_from(spaces.shelf(), root_id)
    mine = student.store.load(root_id)
    mine.messages.append({"role": "user", "content": "续写"})
    student.store.save(mine)
    before = raw_bytes(Path(student.folder))
    with pytest.raises(SpaceError, match="内容不同，已全部保留原样"):
        student.fork_from(spaces.shelf(), root_id)
    assert raw_bytes(Path(student.folder)) == before


# ── item 8: the shelf holds only redacted material ───────────────────────────────────
def test_the_publish_plan_counts_what_will_be_masked_and_writes_nothing(spaces, tmp_path):
    teacher = spaces.open(spaces.new_token())
    _, branch_id = secret_session(teacher)
    plan = spaces.publish_plan(SECRET, teacher.space_id, branch_id)
    assert plan.nodes == 2 and len(plan.written) == 2 and plan.renamed == {}
    assert plan.counts == {"API密钥": 1, "邮箱": 1, "身份证号": 1, "手机号": 1}   # the branch: its whole history
    # every file: the root's title, tool-input key and source file name, the branch's inherited copy of each message
    assert plan.chain_counts == {"API密钥": 2, "邮箱": 4, "身份证号": 2, "手机号": 2}
    assert spaces.shelf().store.list_sessions() == []
    with pytest.raises(SpaceError, match="教师"):
        spaces.publish_plan("not the teacher", teacher.space_id, branch_id)


def test_published_files_on_disk_and_a_students_fork_hold_no_secret(spaces, tmp_path):
    teacher = spaces.open(spaces.new_token())
    root_id, branch_id = secret_session(teacher)
    assert any(secret.encode() in raw_bytes(Path(teacher.folder)) for secret in SECRETS)   # the source has them

    spaces.publish(SECRET, teacher.space_id, branch_id)
    shelf_bytes = raw_bytes(tmp_path / "shelf")
    shelf = spaces.shelf().store
    assert shelf.load(root_id).title == "联系 [已脱敏:邮箱]"
    assert shelf.load(branch_id).messages[1]["content"][0]["input"] == {"phone": "[已脱敏:手机号]",
                                                                        "[已脱敏:邮箱]": "owner"}
    student = spaces.open(spaces.new_token())
    fork = student.fork_from(spaces.shelf(), branch_id, new_messages=[{"role": "user", "content": "我的问题"}])
    student_bytes = raw_bytes(Path(student.folder))
    for secret in SECRETS:
        assert secret.encode() not in shelf_bytes
        assert secret.encode() not in student_bytes
    assert student.store.load(fork.session_id).messages[-1]["content"] == "我的问题"


def test_a_shelf_file_left_unredacted_by_an_older_version_is_redacted_when_forked(spaces, tmp_path):
    SessionStore(tmp_path / "shelf").save(SessionNode(session_id="old-shelf-node", title=f"旧的 {EMAIL}",
                                                      messages=[{"role": "user", "content": f"电话 {PHONE}"}]))
    student = spaces.open(spaces.new_token())
    student.fork_from(spaces.shelf(), "old-shelf-node")
    for secret in (EMAIL, str(PHONE)):
        assert secret.encode() not in raw_bytes(Path(student.folder))


# ── issue 41 item 8: a fork from the shelf counts the chunk bytes it will write ─────────────────────────────
def big_messages(total_bytes: int) -> list:
    """Plain words (nothing a redaction rule masks) in 8 KB messages: the session is stored in chunks (version 4)."""
    words = ["会话", "分支", "树", "branch", "fork", "node", "保存", "读取"]
    count = total_bytes // 8_000
    return [{"role": "user" if number % 2 else "assistant",
             "content": f"第 {number} 条 " + " ".join(words[(number + k) % len(words)] for k in range(1_600))}
            for number in range(count)]


def test_a_fork_of_a_chunked_shelf_session_past_the_quota_is_refused_and_writes_nothing(tmp_path):
    spaces = Spaces(tmp_path, teacher_secret=SECRET,
                    limits=Limits(create_burst=1000, max_bytes=1024 * 1024, min_free_bytes=0))
    teacher = spaces.open(spaces.new_token())
    root_id = teacher.store.create_session("大会话", big_messages(2_500_000))
    spaces.publish(SECRET, teacher.space_id, root_id)
    shelf_file = Path(spaces.shelf().store.path_of(root_id))
    assert json.loads(shelf_file.read_text(encoding="utf-8").split("\n", 1)[0])["version"] == 4   # stored in chunks
    student = spaces.open(spaces.new_token())
    before = raw_bytes(Path(student.folder))

    with pytest.raises(SpaceError, match="会超过上限 1.0 MB") as refused:
        student.fork_from(spaces.shelf(), root_id, at=3)
    asked_mb = float(re.search(r"再写 ([\d.]+) MB", str(refused.value)).group(1))
    on_shelf_mb = len(raw_bytes(tmp_path / "shelf")) / (1024 * 1024)   # the copy's file and its chunks
    assert asked_mb >= on_shelf_mb - 0.1                           # the real bytes, chunks included

    assert raw_bytes(Path(student.folder)) == before and student.store.list_sessions() == []


def test_the_disk_reserve_is_checked_with_the_chunk_bytes_too(tmp_path, monkeypatch):
    import s11_workbench.spaces as spaces_module

    spaces = Spaces(tmp_path, teacher_secret=SECRET, limits=Limits(create_burst=1000, min_free_bytes=8_000_000))
    teacher = spaces.open(spaces.new_token())
    root_id = teacher.store.create_session("大会话", big_messages(2_500_000))
    spaces.publish(SECRET, teacher.space_id, root_id)
    student = spaces.open(spaces.new_token())
    before = raw_bytes(Path(student.folder))
    # a disk with 10 MB free and an 8 MB reserve: 2 MB may be written (other helpers' writes must not move it)
    disk = spaces_module.shutil.disk_usage(student.folder)._replace(free=10_000_000)
    monkeypatch.setattr(spaces_module.shutil, "disk_usage", lambda path: disk)
    with pytest.raises(SpaceError, match="服务器磁盘只剩"):
        student.fork_from(spaces.shelf(), root_id)
    assert raw_bytes(Path(student.folder)) == before and student.store.list_sessions() == []


def test_a_fork_that_fits_still_writes_once_and_is_counted_exactly(tmp_path):
    spaces = Spaces(tmp_path, teacher_secret=SECRET,
                    limits=Limits(create_burst=1000, max_bytes=4 * 1024 * 1024, min_free_bytes=0))
    teacher = spaces.open(spaces.new_token())
    root_id = teacher.store.create_session("大会话", big_messages(2_500_000))
    spaces.publish(SECRET, teacher.space_id, root_id)
    student = spaces.open(spaces.new_token())
    fork = student.fork_from(spaces.shelf(), root_id, new_messages=[{"role": "user", "content": "我的问题"}])
    assert student.store.load(fork.session_id).messages[-1]["content"] == "我的问题"
    assert student.store.load(root_id).messages == spaces.shelf().store.load(root_id).messages
    newcomer = spaces.open(spaces.new_token())
    before = raw_bytes(Path(newcomer.folder))
    with pytest.raises(SessionError, match="分叉位置"):          # a bad fork point: refused before the copy is written
        newcomer.fork_from(spaces.shelf(), root_id, at=10_000)
    assert raw_bytes(Path(newcomer.folder)) == before and newcomer.store.list_sessions() == []


def test_a_node_created_between_the_count_and_the_copy_is_kept_and_the_copy_takes_a_new_id(spaces, monkeypatch):
    teacher = spaces.open(spaces.new_token())
    root_id = teacher.store.create_session("老师的示例", HELLO)
    spaces.publish(SECRET, teacher.space_id, root_id)
    student = spaces.open(spaces.new_token())
    real_save, raced = student.store.save, []

    def save_after_a_rival(node):   # another tab of the same student writes the same id first
        if not raced:
            raced.append(True)
            rival = SessionNode(session_id=root_id, title="另一个标签页", messages=[{"role": "user", "content": "抢先"}])
            SessionStore(student.folder).save(rival)
        return real_save(node)
    monkeypatch.setattr(student.store, "save", save_after_a_rival)
    fork = student.fork_from(spaces.shelf(), root_id, new_messages=[{"role": "user", "content": "我的问题"}])
    assert student.store.load(root_id).title == "另一个标签页"             # never overwritten
    assert fork.parent_id != root_id and student.store.load(fork.parent_id).messages == HELLO
    assert student.store.load(fork.session_id).messages == HELLO + [{"role": "user", "content": "我的问题"}]
