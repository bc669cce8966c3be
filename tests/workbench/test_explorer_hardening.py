"""Issue 18 items 1, 8, 10, 13, 15 and the publish preview, driven through the explorer's logic (no gradio).

- 13: the trash can be emptied and one trashed session purged from the page, each after a confirm step that says
  what it frees; a stale confirm deletes nothing.
- 1:  an import checks the bytes it will write against the space's quota before the first write (a refused import
  writes nothing and says how much it needed) and re-checks the disk reserve while it writes.
- 8:  the teacher's read-only view of a student's space shows titles redacted; publishing is a preview + confirm.
- 10: an unchanged export is reused, and a visitor keeps at most downloads.EXPORTS_PER_OWNER exports.
- 15: text, NaN and infinity in number inputs get a Chinese message and no traceback in the log.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections import namedtuple
from pathlib import Path

import pytest

from s11_session import SessionNode
from s11_text import human_size
from s11_workbench import downloads
from s11_workbench import spaces as spaces_module
from s11_workbench.explorer import Explorer, View
from s11_workbench.spaces import Limits, Spaces

TEACHER = "teacher-secret-for-hardening"
ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)
HELLO = [{"role": "user", "content": "你好"}, {"role": "assistant", "content": "你好！"}]


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path / "sessions", limits=ROOMY, teacher_secret=TEACHER)


@pytest.fixture
def explorer(spaces, tmp_path) -> Explorer:
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    return Explorer(spaces, export_root=str(tmp_path / "exports"), upload_root=str(uploads))


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(Path(folder).rglob("*"))
            if path.is_file() and path.name != ".lock"}


def trash_files(space) -> list[Path]:
    return sorted((Path(space.folder) / ".trash").glob("*.json"))


def student_with_trash(spaces, explorer, count: int = 2):
    token = spaces.new_token()
    store = spaces.open(token).store
    ids = [store.create_session(f"会话 {i}", HELLO * (50 + i)) for i in range(count + 1)]
    view = View()
    for session_id in ids[:count]:
        view = explorer.delete(token, explorer.select(token, view, session_id).view).view
    return token, ids, view


# ── 13: emptying the trash and purging one session, confirmed ─────────────────────────────────
def test_emptying_the_trash_says_what_it_frees_and_deletes_only_after_the_confirm(explorer, spaces):
    token, ids, view = student_with_trash(spaces, explorer)
    space = spaces.open(token)
    sizes = sum(path.stat().st_size for path in trash_files(space))
    shown = explorer.refresh(token, view)
    assert shown.trash_note == f"回收站里有 2 个会话的 2 份副本，共 {human_size(sizes)}（也算在空间的限额里）"

    asked = explorer.ask_empty_trash(token, view)
    assert "确认清空回收站" in asked.confirm and human_size(sizes) in asked.confirm and "2 份副本" in asked.confirm
    assert len(trash_files(space)) == 2                      # the first click deletes nothing

    done = explorer.confirm(token, asked.view)
    assert trash_files(space) == [] and done.confirm == "" and done.trash_choices == []
    assert done.notice == f"🧹 已清空回收站：永久删除了 2 份副本，释放了 {human_size(sizes)}"
    assert space.store.load(ids[2]) is not None              # the live session is untouched
    assert "没有等待确认" in explorer.confirm(token, done.view).notice


def test_purging_one_trashed_session_leaves_the_others(explorer, spaces):
    token, ids, view = student_with_trash(spaces, explorer)
    space = spaces.open(token)
    asked = explorer.ask_purge(token, view, ids[0])
    assert f"永久删除会话 `{ids[0]}`" in asked.confirm and "释放" in asked.confirm
    done = explorer.confirm(token, asked.view)
    assert [path.name.split(".")[0] for path in trash_files(space)] == [ids[1]]
    assert done.notice.startswith(f"🔥 已永久删除会话 {ids[0]}") and "释放了" in done.notice
    assert [value for _, value in done.trash_choices] == [ids[1]]


def test_a_confirm_made_stale_by_another_tab_or_cancelled_deletes_nothing(explorer, spaces):
    token, ids, view = student_with_trash(spaces, explorer)
    space = spaces.open(token)
    asked = explorer.ask_empty_trash(token, view)
    explorer.delete(token, explorer.select(token, View(), ids[2]).view)   # another tab trashes one more
    before = snapshot(Path(space.folder))
    stale = explorer.confirm(token, asked.view)
    assert "变了" in stale.notice and snapshot(Path(space.folder)) == before and stale.confirm == ""

    asked = explorer.ask_empty_trash(token, stale.view)
    cancelled = explorer.cancel(token, asked.view)
    assert cancelled.confirm == "" and "已取消" in cancelled.notice and snapshot(Path(space.folder)) == before
    other_action = explorer.refresh(token, explorer.ask_empty_trash(token, view).view)
    assert other_action.confirm == "" and other_action.view.pending == ()   # any other action drops the question


@pytest.mark.parametrize("target", [None, "", "../x", "no-such-session"])
def test_purging_something_that_is_not_in_the_trash_is_refused(explorer, spaces, target):
    token, ids, view = student_with_trash(spaces, explorer, count=1)
    page = explorer.ask_purge(token, view, target)
    assert page.notice.startswith("⚠️") and page.confirm == ""
    live = explorer.ask_purge(token, view, ids[1])          # a live session is not purged from here
    assert "还在仓库里" in live.notice and spaces.open(token).store.load(ids[1]) is not None


def test_the_shelf_trash_cannot_be_emptied_from_the_page(explorer, spaces):
    token = spaces.new_token()
    page = explorer.ask_empty_trash(token, View(source="shelf"))
    assert "只读" in page.notice and page.confirm == ""


# ── 1: the import's write budget ─────────────────────────────────────────────────────────────
def branchy_claude(path: Path, steps: int = 40, pad: int = 400) -> Path:
    """A Claude Code transcript with a user branch after every answer: small to upload, many nodes to write."""
    lines, parent, clock = [], None, 0
    body = "排查记录：cache_store 命中率、连接数、暂停。" * (pad // 20)

    def entry(kind, uid, parent, role, content):
        nonlocal clock
        clock += 1
        message = {"role": role, "content": content}
        if role == "assistant":
            message.update(id=f"msg_{uid}", type="message", model="claude-sonnet-4-5")
        return {"type": kind, "uuid": uid, "parentUuid": parent, "sessionId": "sess-1", "isSidechain": False,
                "timestamp": f"2026-01-01T10:{clock // 60:02d}:{clock % 60:02d}.000Z", "cwd": "/repo",
                "version": "2.1.42", "message": message}
    for step in range(steps):
        lines.append(entry("user", f"u{step}", parent, "user", f"第 {step} 问 {body}"))
        lines.append(entry("user", f"v{step}", parent, "user", f"换个问法：第 {step} 问"))
        lines.append(entry("assistant", f"a{step}", f"u{step}", "assistant",
                           [{"type": "text", "text": f"第 {step} 答 {body}"}]))
        parent = f"a{step}"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    return path


def test_an_import_that_would_write_past_the_quota_writes_nothing_and_says_how_much(tmp_path):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    upload = branchy_claude(uploads / "branchy.jsonl")
    size = upload.stat().st_size
    quota = size * 3                                  # the upload fits easily; what it writes does not
    spaces = Spaces(tmp_path / "sessions", limits=Limits(max_bytes=quota, min_free_bytes=0, create_burst=100))
    token = spaces.new_token()
    space = spaces.open(token)
    before = snapshot(Path(space.folder))
    page = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads)).import_upload(
        token, View(), str(upload))
    assert "什么都没写" in page.notice and f"上限 {human_size(quota)}" in page.notice
    needed = page.notice.split("写 ", 1)[1].split("，", 1)[0]
    assert needed.endswith(("KB", "MB")) and "个会话" in page.notice
    assert snapshot(Path(space.folder)) == before and space.store.list_sessions() == []


def test_an_import_stops_between_nodes_when_the_disk_reserve_runs_out(tmp_path, monkeypatch):
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    upload = branchy_claude(uploads / "branchy.jsonl", steps=12)
    spaces = Spaces(tmp_path / "sessions", limits=Limits(min_free_bytes=10 * 2**20, create_burst=100))
    token = spaces.new_token()
    real = shutil.disk_usage
    Usage = namedtuple("Usage", "total used free")
    calls = {"n": 0}

    def shrinking(path):   # plenty of room for the checks before the first write, then the disk fills up
        calls["n"] += 1
        usage = real(path)
        return Usage(usage.total, usage.used, 1 << 40 if calls["n"] <= 2 else 0)

    monkeypatch.setattr(spaces_module.shutil, "disk_usage", shrinking)
    page = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads)).import_upload(
        token, View(), str(upload))
    written = spaces.open(token).store.list_sessions()
    assert 1 <= len(written) < 13 and "磁盘只剩" in page.report and "后停下" in page.report
    assert spaces.open(token).store.check() == []              # the nodes it wrote are whole


# ── 8: the teacher's read-only views, the publish preview ──────────────────────────────────────
def test_the_teachers_view_of_a_students_space_shows_titles_redacted(explorer, spaces):
    token = spaces.new_token()
    store = spaces.open(token).store
    root = SessionNode(title="给 alice@example.com 的回复", messages=[{"role": "user", "content": "电话 13812345678"}])
    store.save(root)
    child = store.fork(root.session_id, [{"role": "user", "content": "再问"}], title="问 13812345678 的事")
    teacher_token = spaces.new_token()
    opened = explorer.open_space(teacher_token, View(), spaces.open(token).space_id, TEACHER)
    page = explorer.select(teacher_token, opened.view, child.session_id, TEACHER)
    shown = "\n".join([str(page.rows), str(page.tree_choices), page.details, page.map_markdown,
                       str([row["content"] for row in page.chat])])
    assert "alice@example.com" not in shown and "13812345678" not in shown
    assert "已脱敏" in page.details and any("已脱敏" in label for label, _ in page.tree_choices)
    mine = explorer.select(token, View(), child.session_id)          # the student herself sees her own text
    assert "13812345678" in mine.details


def test_publishing_shows_the_counts_first_and_a_changed_session_is_not_published(explorer, spaces):
    token = spaces.new_token()
    store = spaces.open(token).store
    session_id = store.create_session("发布的示例", [{"role": "user", "content": "邮箱 bob@example.com，电话 13812345678"},
                                                {"role": "user", "content": "抄送 carol@example.com"}])
    view = explorer.select(token, View(), session_id).view
    asked = explorer.publish(token, view, TEACHER)
    assert "邮箱 ×2、手机号 ×1" in asked.confirm and "要写 1 个节点" in asked.confirm
    assert spaces.shelf().store.list_sessions() == []
    node = store.load(session_id)                     # the student changes it before the teacher confirms
    node.messages.append({"role": "user", "content": "dave@example.com"})
    store.save(node)
    stale = explorer.confirm(token, asked.view, TEACHER)
    assert "变了" in stale.notice and spaces.shelf().store.list_sessions() == []
    again = explorer.publish(token, stale.view, TEACHER)
    assert "邮箱 ×3" in again.confirm
    done = explorer.confirm(token, again.view, TEACHER)
    assert done.notice.startswith("📚 已脱敏并发布") and "邮箱 ×3" in done.notice
    shelf_file = Path(spaces.shelf().folder) / f"{session_id}.json"
    assert b"example.com" not in shelf_file.read_bytes() and b"13812345678" not in shelf_file.read_bytes()
    assert "只有老师" in explorer.confirm(token, again.view, None).notice   # the pending step needs the secret too


# ── 10: exports are reused and capped per visitor ─────────────────────────────────────────────
def test_an_unchanged_export_is_reused_and_a_visitor_keeps_a_bounded_number(explorer, spaces, tmp_path):
    token = spaces.new_token()
    store = spaces.open(token).store
    ids = [store.create_session(f"会话 {i}", HELLO) for i in range(downloads.EXPORTS_PER_OWNER + 3)]
    first = explorer.export(token, explorer.select(token, View(), ids[0]).view)
    again = explorer.export(token, first.view)
    assert again.downloads == first.downloads and "用的是上次导出的文件" in again.notice
    assert again.preview == first.preview
    resumed = explorer.resume(token, first.view, "多说一句")
    changed = explorer.export(token, resumed.view)
    assert changed.downloads != first.downloads and "多说一句" in changed.preview
    for session_id in ids[1:]:
        explorer.export(token, explorer.select(token, View(), session_id).view)
    runs = list((tmp_path / "exports").glob("owner-*/run-*"))
    assert len(runs) == downloads.EXPORTS_PER_OWNER
    newest = explorer.export(token, explorer.select(token, View(), ids[-1]).view)
    assert Path(newest.downloads[0]).exists()                       # the one just offered is never the one removed


# ── 15: number inputs ───────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("value", ["abc", float("nan"), float("inf"), "1e999", 0, -3, 2.5, True, [1], {"a": 1}])
def test_bad_window_starts_get_a_chinese_message_and_no_traceback(explorer, spaces, value, caplog):
    token = spaces.new_token()
    session_id = spaces.open(token).store.create_session("根", HELLO)
    view = explorer.select(token, View(), session_id).view
    with caplog.at_level(logging.DEBUG):
        page = explorer.window(token, view, value)
    assert page.notice.startswith("⚠️ 跳到第几条") and page.details   # the page is still drawn
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]


@pytest.mark.parametrize("value", ["abc", float("nan"), float("inf"), "", None, 2.5, [1]])
def test_bad_fork_positions_get_a_chinese_message_and_no_traceback(explorer, spaces, value, caplog):
    token = spaces.new_token()
    session_id = spaces.open(token).store.create_session("根", HELLO)
    view = explorer.select(token, View(), session_id).view
    with caplog.at_level(logging.DEBUG):
        page = explorer.fork(token, view, value)
    assert page.notice.startswith("⚠️ 分叉位置") and len(spaces.open(token).store.list_sessions()) == 1
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR or record.exc_info]


def test_an_empty_window_start_goes_to_the_end(explorer, spaces):
    token = spaces.new_token()
    session_id = spaces.open(token).store.create_session("根", HELLO * 120)
    view = explorer.window(token, explorer.select(token, View(), session_id).view, 3).view
    assert view.start == 2
    assert explorer.window(token, view, None).view.start is None and explorer.window(token, view, " ").view.start is None


def test_emptying_the_trash_frees_what_a_killed_save_left_even_when_no_copy_is_in_it(explorer, spaces):
    """Issue 41 item 10: a temp file left by kill -9 during a big save pinned its chunks for good."""
    import fcntl
    import os
    import time
    token = spaces.new_token()
    space = spaces.open(token)
    big = [{"role": "user", "content": f"{i} " + "长" * 400} for i in range(300)]   # over 64 KiB: chunked
    session_id = space.store.create_session("大会话", big)
    path = Path(space.store.path_of(session_id))
    temp = path.with_name(f".{path.name}.k9x2.tmp")
    temp.write_bytes(path.read_bytes())   # what the killed writer left: it names every chunk
    with open(temp, "rb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)   # the writer was still alive while the session was purged
        space.store.delete(session_id, purge=True)
    os.utime(temp, (time.time() - 3600, time.time() - 3600))   # killed an hour ago
    chunks = list((Path(space.folder) / ".chunks").glob("*.jsonl"))
    pinned = temp.stat().st_size + sum(chunk.stat().st_size for chunk in chunks)
    assert chunks and trash_files(space) == []

    asked = explorer.ask_empty_trash(token, View())
    assert "确认清空回收站" in asked.confirm and human_size(pinned) in asked.confirm
    done = explorer.confirm(token, asked.view)
    assert not temp.exists() and list((Path(space.folder) / ".chunks").glob("*.jsonl")) == []
    assert f"释放了 {human_size(pinned)}" in done.notice
    assert "回收站是空的" in explorer.ask_empty_trash(token, done.view).notice
