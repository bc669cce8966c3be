"""Private spaces: signed tokens, limits, the shelf, the teacher's view and the after-class command line.

Everything here drives `s11_workbench.spaces` directly (no gradio); the HTTP side is in test_security_client.py.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import stat
import time
from pathlib import Path

import pytest

import s11_cli
import s11_workbench.spaces as spaces_module
from s11_workbench.spaces import Limits, ReadOnlyStore, SpaceError, Spaces, TokenBucket

HELLO = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}]


class FakeClock:
    """A monotonic clock the test moves by hand: rate limits are checked without sleeping."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under root → sha256 of its bytes (the 'nothing changed on disk' oracle)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path, teacher_secret="teacher-secret-for-tests")


def forged_tokens(spaces: Spaces, real: str) -> list:
    space_id, signature = real.split(".")
    flipped = signature[:-1] + ("0" if signature[-1] != "0" else "1")
    other_server = Spaces(Path(spaces.sessions_dir).parent / "other-server").new_token()
    return [None, "", 42, ["a"], {"token": real}, "x" * 100_000, real.upper(), real + ".", f"{space_id}.",
            f"../{space_id}.{signature}", f"{space_id}.{flipped}", f"{'0' * 16}.{signature}",
            other_server, real.replace(".", "/"), f"{space_id}.{signature}\n"]


# ── tokens ─────────────────────────────────────────────────────────────────────────
class TestTokens:
    def test_a_token_opens_its_own_folder_and_two_tokens_never_share_one(self, spaces, tmp_path):
        first, second = spaces.open(spaces.new_token()), spaces.open(spaces.new_token())
        assert first.space_id != second.space_id
        first.store.create_session("甲的会话", HELLO)
        assert Path(first.folder).parent == tmp_path / "spaces"
        assert len(first.store.list_sessions()) == 1
        assert second.store.list_sessions() == []

    def test_every_forged_or_garbled_token_is_refused_and_creates_nothing(self, spaces, tmp_path):
        real = spaces.new_token()
        spaces.open(real).store.create_session("真的", HELLO)
        before = tree_digest(tmp_path)
        folders_before = sorted(os.listdir(tmp_path / "spaces"))
        for token in forged_tokens(spaces, real):
            with pytest.raises(SpaceError, match="令牌"):
                spaces.open(token)
        assert sorted(os.listdir(tmp_path / "spaces")) == folders_before
        assert tree_digest(tmp_path) == before

    def test_the_error_never_echoes_a_huge_token(self, spaces):
        with pytest.raises(SpaceError) as error:
            spaces.open("秘" * 50_000)
        assert len(str(error.value)) < 200

    def test_tokens_survive_a_restart_because_the_secret_is_kept_on_disk(self, tmp_path):
        token = Spaces(tmp_path).new_token()
        Spaces(tmp_path).open(token).store.create_session("重启前", HELLO)
        after_restart = Spaces(tmp_path).open(token)
        assert [s["title"] for s in after_restart.store.list_sessions()] == ["重启前"]

    def test_the_secret_file_is_private_to_the_server_account(self, spaces, tmp_path):
        mode = stat.S_IMODE(os.stat(tmp_path / ".secret").st_mode)
        assert mode == 0o600

    def test_a_damaged_secret_file_is_a_clear_error_not_a_new_secret(self, tmp_path):
        Spaces(tmp_path)
        (tmp_path / ".secret").write_text("not hex\n")
        with pytest.raises(SpaceError, match=r"\.secret 已损坏"):
            Spaces(tmp_path)
        assert (tmp_path / ".secret").read_text() == "not hex\n"

    def test_processes_starting_together_agree_on_one_secret(self, tmp_path):
        with multiprocessing.get_context("spawn").Pool(4) as pool:
            tokens = pool.map(_token_from_fresh_server, [str(tmp_path)] * 8)
        checker = Spaces(tmp_path)
        for token in tokens:
            checker.open(token)   # every process signed with the same secret
        assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []

    def test_ensure_keeps_a_valid_token_and_replaces_anything_else(self, spaces):
        token = spaces.new_token()
        assert spaces.ensure(token)[0] == token
        for bad in (None, "forged.token", token[:-2] + "zz"):
            fresh, space = spaces.ensure(bad)
            assert fresh != bad and spaces.open(fresh).space_id == space.space_id

    def test_a_broken_sessions_folder_is_named_without_the_server_path(self, tmp_path):
        spaces = Spaces(tmp_path / "gradio_sessions")
        token = spaces.new_token()
        (tmp_path / "gradio_sessions" / "spaces").rename(tmp_path / "moved")
        (tmp_path / "gradio_sessions" / "spaces").write_text("一个普通文件")
        assert spaces.ensure_token(token) == token          # the page still loads …
        with pytest.raises(SpaceError) as error:            # … and the first use says what is wrong
            spaces.open(token)
        assert "无法写入会话目录 gradio_sessions" in str(error.value) and "普通文件" in str(error.value)
        assert str(tmp_path) not in str(error.value)

    def test_a_client_minting_spaces_in_a_loop_is_stopped_but_others_are_not(self, tmp_path):
        clock = FakeClock()
        spaces = Spaces(tmp_path, limits=Limits(new_spaces_per_minute=5), clock=clock)
        for _ in range(5):
            spaces.ensure(None, client="10.0.0.66")
        with pytest.raises(SpaceError, match="领取新空间太频繁"):
            spaces.ensure(None, client="10.0.0.66")
        spaces.ensure(None, client="10.0.0.7")            # a classmate is unaffected
        clock.advance(12)                                 # one new space per 12 s refills
        spaces.ensure(None, client="10.0.0.66")


def _token_from_fresh_server(folder: str) -> str:
    return Spaces(folder).new_token()


# ── limits ─────────────────────────────────────────────────────────────────────────
class TestLimits:
    def test_token_bucket_lets_a_burst_through_then_refills_at_its_rate(self):
        clock = FakeClock()
        bucket = TokenBucket(3, 0.5, clock)
        assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
        assert bucket.take() == pytest.approx(2.0)
        clock.advance(2)
        assert bucket.take() == 0.0

    def test_a_student_clicking_the_demo_normally_is_never_throttled(self, tmp_path):
        clock = FakeClock()
        space = Spaces(tmp_path, clock=clock).open(Spaces(tmp_path).new_token())
        for _ in range(20):          # twenty demo runs in quick succession …
            space.throttle()
            clock.advance(0.5)
        for _ in range(60):          # … then one click every 3 seconds for three minutes
            clock.advance(3)
            space.throttle()

    def test_a_script_running_the_demo_70_times_a_second_is_stopped(self, tmp_path):
        clock = FakeClock()
        spaces = Spaces(tmp_path, clock=clock)
        space = spaces.open(spaces.new_token())
        allowed = 0
        for _ in range(70 * 10):     # ten seconds of hammering
            try:
                space.throttle()
                allowed += 1
            except SpaceError as error:
                assert "操作太快了" in str(error) and "秒后再试" in str(error)
            clock.advance(1 / 70)
        limits = spaces.limits
        assert allowed <= limits.create_burst + 10 * limits.creates_per_minute / 60 + 1
        assert allowed >= limits.create_burst

    def test_the_bucket_belongs_to_the_space_not_to_the_request(self, tmp_path):
        clock = FakeClock()
        spaces = Spaces(tmp_path, limits=Limits(create_burst=2, creates_per_minute=1), clock=clock)
        token = spaces.new_token()
        spaces.open(token).throttle()
        spaces.open(token).throttle()
        with pytest.raises(SpaceError, match="操作太快了"):
            spaces.open(token).throttle()

    def test_session_count_and_byte_limits_name_the_space_and_the_limit(self, tmp_path):
        spaces = Spaces(tmp_path, limits=Limits(max_sessions=2, max_bytes=4000))
        space = spaces.open(spaces.new_token())
        space.store.create_session("一", HELLO)
        space.require_room(sessions=1)
        space.store.create_session("二", HELLO)
        with pytest.raises(SpaceError, match=rf"空间 {space.space_id} 已有 2 个会话，上限是 2"):
            space.require_room(sessions=1)
        with pytest.raises(SpaceError, match="上限 3.9 KB") as refused:   # not "上限 0 MB" (issue 18 item 16)
            space.require_room(sessions=0, nbytes=5000)
        assert "再写 4.9 KB" in str(refused.value) and "0 MB" not in str(refused.value)

    def test_deleted_sessions_still_count_against_the_byte_limit(self, tmp_path):
        spaces = Spaces(tmp_path, limits=Limits(max_bytes=10_000))
        space = spaces.open(spaces.new_token())
        session_id = space.store.create_session("大", [{"role": "user", "content": "字" * 2500}])
        space.store.delete(session_id)
        assert space.usage()[0] == 0
        with pytest.raises(SpaceError, match="含回收站"):
            space.require_room(nbytes=3000)

    def test_an_oversized_upload_is_refused_with_its_size(self, spaces):
        space = spaces.open(spaces.new_token())
        space.require_upload(spaces.limits.max_upload_bytes)
        with pytest.raises(SpaceError, match="上限"):
            space.require_upload(spaces.limits.max_upload_bytes + 1)

    def test_a_nearly_full_disk_refuses_writes(self, tmp_path):
        spaces = Spaces(tmp_path, limits=Limits(min_free_bytes=2 ** 62))
        with pytest.raises(SpaceError, match="磁盘"):
            spaces.open(spaces.new_token()).require_room()


# ── shelf and teacher ──────────────────────────────────────────────────────────────
def student_with_lineage(spaces: Spaces) -> tuple:
    """A student's space holding root → branch; returns (token, space, root_id, branch_id)."""
    token = spaces.new_token()
    space = spaces.open(token)
    root_id = space.store.create_session("老师的示例", HELLO)
    branch = space.store.fork(root_id, [{"role": "user", "content": "换个方案"}], at=1)
    return token, space, root_id, branch.session_id


class TestTeacher:
    SECRET = "teacher-secret-for-tests"

    def test_is_teacher_accepts_only_the_exact_secret(self, spaces):
        assert spaces.is_teacher(self.SECRET)
        for wrong in (None, "", self.SECRET + "x", self.SECRET[:-1], self.SECRET.upper(), 0, [self.SECRET], "老师"):
            assert not spaces.is_teacher(wrong)

    def test_a_secret_is_made_when_none_is_given_and_differs_per_start(self, tmp_path):
        first, second = Spaces(tmp_path).teacher_secret, Spaces(tmp_path).teacher_secret
        assert len(first) >= 24 and first != second

    @pytest.mark.parametrize("call", [
        lambda s, secret: s.list_spaces(secret),
        lambda s, secret: s.view(secret, "0" * 16),
        lambda s, secret: s.publish(secret, "0" * 16, "abc"),
        lambda s, secret: s.unpublish(secret, "abc"),
    ])
    def test_without_the_secret_nothing_of_other_spaces_is_reachable(self, spaces, tmp_path, call):
        student_with_lineage(spaces)
        before = tree_digest(tmp_path)
        for wrong in (None, "", "guess", spaces.new_token()):
            with pytest.raises(SpaceError, match="需要教师链接"):
                call(spaces, wrong)
        assert tree_digest(tmp_path) == before

    def test_list_spaces_reports_sessions_bytes_and_last_activity(self, spaces):
        _, space, _, _ = student_with_lineage(spaces)
        rows = spaces.list_spaces(self.SECRET)
        assert [(r["space_id"], r["sessions"]) for r in rows] == [(space.space_id, 2)]
        assert rows[0]["bytes"] == sum(p.stat().st_size for p in Path(space.folder).rglob("*") if p.is_file())
        assert abs(rows[0]["last_activity"] - time.time()) < 60

    def test_the_teacher_view_is_read_only(self, spaces, tmp_path):
        _, space, root_id, _ = student_with_lineage(spaces)
        view = spaces.view(self.SECRET, space.space_id)
        assert view.read_only and isinstance(view.store, ReadOnlyStore)
        assert {s["session_id"] for s in view.store.list_sessions()} == {s["session_id"] for s in space.store.list_sessions()}
        before = tree_digest(tmp_path)
        node = view.store.load(root_id)
        node.messages.append({"role": "user", "content": "老师不该能写"})
        for write in (lambda: view.writable(), lambda: view.throttle(), lambda: view.require_room(),
                      lambda: view.store.save(node), lambda: view.store.delete(root_id),
                      lambda: view.store.fork(root_id), lambda: view.store.create_session("x")):
            with pytest.raises(SpaceError, match="只读"):
                write()
        assert tree_digest(tmp_path) == before

    @pytest.mark.parametrize("space_id", ["../spaces", "/etc", "..", "shelf", "0" * 15, "0" * 17, "G" * 16,
                                          "../../etc/passwd", "..%2f..%2f", None, 7])
    def test_path_like_or_unknown_space_names_are_refused(self, spaces, space_id):
        with pytest.raises(SpaceError, match="空间"):
            spaces.view(self.SECRET, space_id)

    def test_view_of_a_missing_space_does_not_create_it(self, spaces, tmp_path):
        with pytest.raises(SpaceError, match="没有空间"):
            spaces.view(self.SECRET, "0123456789abcdef")
        assert not (tmp_path / "spaces" / "0123456789abcdef").exists()

    def test_publish_copies_the_node_with_its_lineage_and_the_same_ids(self, spaces):
        _, space, root_id, branch_id = student_with_lineage(spaces)
        assert spaces.publish(self.SECRET, space.space_id, branch_id) == branch_id
        shelf = spaces.shelf().store
        assert [s["session_id"] for s in shelf.lineage(branch_id)] == [root_id, branch_id]
        assert shelf.load(branch_id).messages == space.store.load(branch_id).messages

    def test_publishing_twice_keeps_one_copy_and_new_turns_arrive_beside_the_old_version(self, spaces):
        _, space, root_id, branch_id = student_with_lineage(spaces)
        spaces.publish(self.SECRET, space.space_id, branch_id)
        spaces.publish(self.SECRET, space.space_id, branch_id)
        assert len(spaces.shelf().store.list_sessions()) == 2
        node = space.store.load(branch_id)
        node.messages.append({"role": "assistant", "content": "补充一轮"})
        space.store.save(node)
        newer = spaces.publish(self.SECRET, space.space_id, branch_id)
        shelf = spaces.shelf().store
        assert newer != branch_id and shelf.load(newer).messages[-1]["content"] == "补充一轮"
        assert shelf.load(branch_id).messages[-1]["content"] == "换个方案"   # what students forked from stays
        assert shelf.load(newer).parent_id == root_id
        assert spaces.publish(self.SECRET, space.space_id, branch_id) == newer   # the same content: no third copy
        assert len(shelf.list_sessions()) == 3

    def test_students_read_the_shelf_but_cannot_change_it(self, spaces, tmp_path):
        _, space, _, branch_id = student_with_lineage(spaces)
        spaces.publish(self.SECRET, space.space_id, branch_id)
        shelf = spaces.shelf()
        before = tree_digest(tmp_path / "shelf")
        assert shelf.read_only
        with pytest.raises(SpaceError, match="只读"):
            shelf.store.delete(branch_id)
        with pytest.raises(SpaceError, match="只读"):
            shelf.writable()
        assert tree_digest(tmp_path / "shelf") == before

    def test_a_fork_from_the_shelf_lands_in_the_students_own_space(self, spaces, tmp_path):
        _, space, root_id, branch_id = student_with_lineage(spaces)
        spaces.publish(self.SECRET, space.space_id, branch_id)
        shelf_before = tree_digest(tmp_path / "shelf")
        other = spaces.open(spaces.new_token())
        fork = other.fork_from(spaces.shelf(), branch_id, at=2, new_messages=[{"role": "user", "content": "我的"}])
        assert [s["session_id"] for s in other.store.lineage(fork.session_id)] == [root_id, branch_id, fork.session_id]
        assert other.store.check() == []
        again = other.fork_from(spaces.shelf(), branch_id, at=1)
        assert len(other.store.list_sessions()) == 4      # the ancestors were copied once
        assert again.parent_id == branch_id
        assert tree_digest(tmp_path / "shelf") == shelf_before

    def test_a_fork_from_the_shelf_respects_the_students_limits(self, tmp_path):
        spaces = Spaces(tmp_path, teacher_secret=self.SECRET, limits=Limits(max_sessions=2))
        _, space, _, branch_id = student_with_lineage(spaces)
        spaces.publish(self.SECRET, space.space_id, branch_id)
        other = spaces.open(spaces.new_token())
        with pytest.raises(SpaceError, match="上限是 2"):
            other.fork_from(spaces.shelf(), branch_id)
        assert other.store.list_sessions() == []

    def test_unpublish_takes_a_session_down_but_student_copies_stay(self, spaces):
        _, space, _, branch_id = student_with_lineage(spaces)
        spaces.publish(self.SECRET, space.space_id, branch_id)
        other = spaces.open(spaces.new_token())
        other.fork_from(spaces.shelf(), branch_id)
        assert spaces.unpublish(self.SECRET, branch_id) is True
        assert spaces.shelf().store.load(branch_id) is None
        assert other.store.load(branch_id) is not None
        assert spaces.unpublish(self.SECRET, branch_id) is False


# ── after class ───────────────────────────────────────────────────────────────────
def age(folder: str, hours: float) -> None:
    """Make a space look idle: every file and folder in it last touched `hours` ago."""
    when = time.time() - hours * 3600
    for path in [*Path(folder).rglob("*"), Path(folder)]:
        os.utime(path, (when, when))


class TestCleanup:
    def test_remove_idle_moves_only_idle_spaces_to_the_trash(self, spaces, tmp_path):
        _, idle, _, _ = student_with_lineage(spaces)
        _, busy, _, _ = student_with_lineage(spaces)
        age(idle.folder, 5)
        assert spaces.remove_idle(3 * 3600) == [idle.space_id]
        assert not Path(idle.folder).exists() and Path(busy.folder).exists()
        [trashed] = spaces.trash_entries()
        assert trashed.startswith(idle.space_id) and len(list((tmp_path / "spaces-trash" / trashed).glob("*.json"))) == 2

    def test_a_returning_student_gets_an_empty_space_and_the_trash_keeps_the_old_one(self, spaces):
        token, space, _, _ = student_with_lineage(spaces)
        age(space.folder, 30)
        spaces.remove_idle(24 * 3600)
        assert spaces.open(token).store.list_sessions() == []
        assert spaces.empty_trash() == 1 and spaces.trash_entries() == []

    @pytest.mark.parametrize("bad", [-1, float("nan"), "3", None, True])
    def test_a_bad_idle_time_is_refused(self, spaces, bad):
        with pytest.raises(SpaceError, match="闲置时间"):
            spaces.remove_idle(bad)


class TestCommandLine:
    def run(self, capsys, *argv):
        argv = list(argv)
        code = s11_cli.main(argv[:2] + ["class"] + argv[2:])   # ["--dir", D, "list"] -> --dir D class list
        out, err = capsys.readouterr()
        return code, out, err

    def test_list_show_remove_idle_and_empty_trash(self, spaces, tmp_path, capsys):
        _, space, root_id, _ = student_with_lineage(spaces)
        code, out, _ = self.run(capsys, "--dir", str(tmp_path), "list")
        assert code == 0 and space.space_id in out and "共 1 个空间" in out
        code, out, _ = self.run(capsys, "--dir", str(tmp_path), "show", space.space_id)
        assert code == 0 and root_id in out and "2 个会话" in out
        age(space.folder, 10)
        code, out, _ = self.run(capsys, "--dir", str(tmp_path), "remove-idle", "--hours", "8")
        assert code == 0 and f"已移入回收站：{space.space_id}" in out
        code, out, _ = self.run(capsys, "--dir", str(tmp_path), "empty-trash")
        assert code == 0 and "1 个空间" in out
        assert self.run(capsys, "--dir", str(tmp_path), "list")[1].startswith("还没有任何学生空间")

    @pytest.mark.parametrize("argv, complaint", [
        (["show", "../../etc"], "空间名"),
        (["show", "0123456789abcdef"], "没有空间"),
        (["remove-idle", "--hours", "-2"], "--hours -2"),
    ])
    def test_bad_input_is_a_chinese_error_not_a_traceback(self, spaces, tmp_path, capsys, argv, complaint):
        code, out, err = self.run(capsys, "--dir", str(tmp_path), *argv)
        assert code == 2 and err.startswith("错误：") and complaint in err and "Traceback" not in err

    def test_a_missing_sessions_folder_is_named(self, tmp_path, capsys):
        code, _, err = self.run(capsys, "--dir", str(tmp_path / "nope"), "list")
        assert code == 2 and "nope 不存在" in err
        assert not (tmp_path / "nope").exists()

    def test_show_prints_hostile_titles_as_inert_text(self, spaces, tmp_path, capsys):
        space = spaces.open(spaces.new_token())
        space.store.create_session("evil\x1b[2J\u202etxt.exe\r└── 伪造的行", HELLO)
        code, out, _ = self.run(capsys, "--dir", str(tmp_path), "show", space.space_id)
        assert code == 0
        assert "\x1b" not in out and "\u202e" not in out and "\r" not in out
        assert "\\u001b" in out and "\\u202e" in out


def test_local_addresses_lists_no_loopback_address():
    for name, address in spaces_module.local_addresses():
        assert not address.startswith("127.") and address.count(".") == 3
        assert isinstance(name, str)


class TestUploads:
    def test_an_upload_must_declare_its_size_and_fit_the_limit(self, tmp_path):
        spaces = Spaces(tmp_path, limits=Limits(max_upload_bytes=1000))
        spaces.admit_upload("10.0.0.1", 1000)
        with pytest.raises(SpaceError, match="Content-Length"):
            spaces.admit_upload("10.0.0.1", None)
        with pytest.raises(SpaceError, match="上限"):
            spaces.admit_upload("10.0.0.1", 1000 + spaces_module.UPLOAD_OVERHEAD_BYTES + 1)

    def test_one_address_uploading_in_a_loop_is_slowed_but_a_classmate_is_not(self, tmp_path):
        clock = FakeClock()
        spaces = Spaces(tmp_path, limits=Limits(uploads_per_minute=3), clock=clock)
        for _ in range(3):
            spaces.admit_upload("10.0.0.66", 10)
        with pytest.raises(SpaceError, match="上传太频繁"):
            spaces.admit_upload("10.0.0.66", 10)
        spaces.admit_upload("10.0.0.7", 10)
        clock.advance(20)
        spaces.admit_upload("10.0.0.66", 10)

    def test_two_largest_files_pass_then_bytes_refill_slowly(self, tmp_path):
        clock = FakeClock()
        limit = 1000
        spaces = Spaces(tmp_path, limits=Limits(max_upload_bytes=limit), clock=clock)
        spaces.admit_upload("10.0.0.1", limit)
        spaces.admit_upload("10.0.0.1", limit)
        with pytest.raises(SpaceError, match="上传太频繁"):
            spaces.admit_upload("10.0.0.1", limit)
        clock.advance(300)                       # one largest file per five minutes
        spaces.admit_upload("10.0.0.1", limit)

    def test_uploads_stop_when_the_disk_is_nearly_full(self, tmp_path):
        spaces = Spaces(tmp_path, limits=Limits(min_free_bytes=2 ** 62))
        with pytest.raises(SpaceError, match="磁盘"):
            spaces.admit_upload("10.0.0.1", 10, str(tmp_path))


class TestClassroomLinks:
    def test_on_all_interfaces_students_get_lan_addresses_and_the_teacher_a_local_link(self, monkeypatch):
        monkeypatch.setattr(spaces_module, "local_addresses", lambda: [("wlan0", "192.168.1.23")])
        lines = spaces_module.classroom_links("0.0.0.0", 7860, "s3cret")
        assert "http://192.168.1.23:7860/" in lines[0] and "wlan0" in lines[0]
        assert lines[-1].endswith("http://127.0.0.1:7860/?teacher=s3cret")
        assert not any("teacher" in line for line in lines[:-1])

    def test_without_a_lan_address_the_teacher_is_told_how_to_find_one(self, monkeypatch):
        monkeypatch.setattr(spaces_module, "local_addresses", lambda: [])
        assert "ip addr" in spaces_module.classroom_links("0.0.0.0", 8000, "x")[0]

    def test_on_loopback_the_page_is_local_only_and_says_how_to_open_it_up(self):
        lines = spaces_module.classroom_links("127.0.0.1", 7860, "x")
        assert "--host 0.0.0.0" in lines[0] and lines[1].endswith("http://127.0.0.1:7860/?teacher=x")

    def test_a_specific_host_is_used_for_both_links(self):
        lines = spaces_module.classroom_links("10.1.2.3", 7860, "x")
        assert lines == ["🧑‍🎓 学生打开：http://10.1.2.3:7860/",
                         "🧑‍🏫 教师链接（只给自己用，别发给学生、别投到大屏上）：http://10.1.2.3:7860/?teacher=x"]


class TestOneAddress:
    """The start-up line and the teacher link name the same address: the space token lives per browser and address."""

    @pytest.mark.parametrize(("host", "expected"), [("0.0.0.0", "http://127.0.0.1:7860/"),
                                                    ("localhost", "http://127.0.0.1:7860/"),
                                                    ("127.0.0.1", "http://127.0.0.1:7860/"),
                                                    ("10.1.2.3", "http://10.1.2.3:7860/"),
                                                    ("fe80::1", "http://[fe80::1]:7860/")])
    def test_own_address(self, host, expected):
        assert spaces_module.own_address(host, 7860) == expected
        assert spaces_module.classroom_links(host, 7860, "x")[-1].endswith(expected + "?teacher=x")


def _walked_usage(folder: str) -> tuple[int, int]:
    """The quota figures the slow way: every file stat-ed, nothing cached."""
    sessions = sum(1 for name in os.listdir(folder) if name.endswith(".json") and not name.startswith(".")
                   and os.path.isfile(os.path.join(folder, name)))
    total = sum(os.lstat(os.path.join(root, name)).st_size
                for root, _, names in os.walk(folder) for name in names
                if stat.S_ISREG(os.lstat(os.path.join(root, name)).st_mode))
    return sessions, total


def test_the_quota_figures_follow_every_write_delete_restore_and_purge_even_within_one_clock_tick(spaces):
    space = spaces.open(spaces.new_token())
    store = space.store
    ids = []
    for i in range(30):   # back to back: many of these land in the same clock tick of the folder's mtime
        ids.append(store.create_session(f"s{i}", [{"role": "user", "content": "x" * (i * 37)}]))
        assert space.usage() == _walked_usage(space.folder)
    big = store.create_session("big", [{"role": "user", "content": f"m{i} " * 40} for i in range(400)])
    assert space.usage() == _walked_usage(space.folder)          # chunks live in a subfolder
    store.delete(ids[0])
    assert space.usage() == _walked_usage(space.folder)          # the trash is counted
    store.restore(ids[0])
    assert space.usage() == _walked_usage(space.folder)
    store.delete(big, purge=True)
    assert space.usage() == _walked_usage(space.folder)
    time.sleep(0.12)   # past the racy window: the cached scans are now trusted ...
    assert space.usage() == _walked_usage(space.folder)
    store.create_session("after", [{"role": "user", "content": "y"}])
    assert space.usage() == _walked_usage(space.folder)          # ... and a new file still shows at once


def test_a_change_in_the_same_clock_tick_as_the_last_scan_is_still_counted(spaces):
    # A coarse clock gives two changes in one tick the same folder mtime; simulate it by putting the
    # folder's mtime back after the second change.
    space = spaces.open(spaces.new_token())
    space.store.create_session("first", [{"role": "user", "content": "a"}])
    before = space.usage()
    mtime = os.stat(space.folder).st_mtime_ns
    space.store.create_session("second", [{"role": "user", "content": "b" * 500}])
    os.utime(space.folder, ns=(mtime, mtime))
    assert space.usage() == _walked_usage(space.folder) != before
