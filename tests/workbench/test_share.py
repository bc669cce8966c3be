"""The share panel's logic, driven directly (no gradio): review, unmask by unticking, add a string, downloads,
the space token re-checked, the shelf, and the tree JSONL imported through the explorer's upload."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from s11_session import SessionStore
from s11_workbench import downloads
from s11_workbench.explorer import SHELF, Explorer, View
from s11_workbench.share import MAX_ROWS, Share
from s11_workbench.spaces import Limits, Spaces

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from share_trees import HOSTILE_TITLE, hostile_tree, three_branches  # noqa: E402

ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)
TEACHER = "teacher-secret-for-tests"


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path / "sessions", limits=ROOMY, teacher_secret=TEACHER)


@pytest.fixture
def share(spaces, tmp_path) -> Share:
    return Share(spaces, export_root=str(tmp_path / "exports"))


@pytest.fixture
def student(spaces):
    token = spaces.new_token()
    return token, three_branches(spaces.open(token).store)


def test_review_lists_every_hit_with_context_and_counts(share, student):
    token, ids = student
    panel = share.review(token, View(session_id=ids["b1"]), "tree", "")
    assert [row[0] for row in panel.rows] == ["邮箱", "银行卡号", "手机号"]
    assert panel.unmask == [] and [value for _, value in panel.choices] == [row[3] for row in panel.rows]
    assert "«alice@example.com»" in panel.rows[0][1] and panel.rows[0][2] == f"节点 {ids['root']} · 第 2 条"
    assert panel.choices[0][0] == f"{panel.rows[0][3]} · 邮箱 · alice@example.com"
    assert "3** 处" in panel.summary and "邮箱 ×1" in panel.summary
    sub = share.review(token, View(session_id=ids["b1"]), "path", "")
    assert [row[0] for row in sub.rows] == ["邮箱", "银行卡号", "手机号"]
    only_a = share.review(token, View(session_id=ids["a"]), "subtree", "")
    # a subtree's root prints its whole history, so the root's e-mail is A's own message 2 there
    assert [(row[0], row[2]) for row in only_a.rows] == [("邮箱", f"节点 {ids['a']} · 第 2 条")]


def test_ticking_unmask_on_a_row_unmasks_exactly_that_hit_in_all_three_downloads(share, student):
    token, ids = student
    rows = share.review(token, View(session_id=ids["root"]), "tree", "db01.corp.example").rows
    assert [row[0] for row in rows].count("手动") == 3
    card = next(row[3] for row in rows if row[0] == "银行卡号")
    panel = share.download(token, View(session_id=ids["root"]), "tree", "db01.corp.example", [card])
    html_path, md_path, jsonl_path = panel.files
    for path in panel.files:
        text = Path(path).read_text(encoding="utf-8")
        assert "4111 1111 1111 1111" in text
        assert "alice@example.com" not in text and "13812345678" not in text and "db01.corp.example" not in text
    html_text = Path(html_path).read_text(encoding="utf-8")
    assert html_text.count("[已脱敏:手动]") >= 3 and "揭开" in html_text
    head = json.loads(Path(jsonl_path).read_text(encoding="utf-8").split("\n", 1)[0])
    assert head["manifest"]["unmasked"] == 1 and head["manifest"]["masked"] == {"邮箱": 1, "手机号": 1}
    assert "揭开 1 处" in panel.notice and panel.unmask == [card]
    assert "银行卡号" not in panel.manifest.split("按规则遮住")[1].split("\n")[0]


def test_forged_and_unknown_ids_stay_masked(share, student):
    token, ids = student
    rows = share.review(token, View(session_id=ids["root"]), "tree", "").rows
    forged = [rows[0][3], "ffffffffffff-1.1", "../x", 7]
    panel = share.download(token, View(session_id=ids["root"]), "tree", "", forged)
    text = Path(panel.files[0]).read_text(encoding="utf-8")
    assert "alice@example.com" in text and "4111 1111 1111 1111" not in text and panel.unmask == [rows[0][3]]
    # no table at all: everything masked
    plain = Path(share.download(token, View(session_id=ids["root"]), "tree", "", None).files[0]).read_text("utf-8")
    assert "alice@example.com" not in plain


def test_bad_input_gets_a_chinese_notice_and_no_files(share, student, tmp_path):
    token, ids = student
    assert "请先" in share.review(token, View(), "tree", "").notice
    assert "太短" in share.download(token, View(session_id=ids["root"]), "tree", "a", []).notice
    assert "范围" in share.review(token, View(session_id=ids["root"]), "everything", "").notice
    stranger = share.review("not-a-token", View(session_id=ids["root"]), "tree", "")
    assert stranger.rows == [] and stranger.notice
    other = share.spaces.new_token()                                     # another student cannot reach these ids
    assert share.review(other, View(session_id=ids["root"]), "tree", "").rows == []
    assert not (tmp_path / "exports").exists() or not list((tmp_path / "exports").rglob("*.html"))


def test_hostile_text_reaches_the_panel_only_as_text(share, spaces):
    token = spaces.new_token()
    ids = hostile_tree(spaces.open(token).store)
    panel = share.download(token, View(session_id=ids["child"]), "tree", "", [])
    assert "&lt;img src=x onerror=alert(1)&gt;" in Path(panel.files[0]).read_text(encoding="utf-8")
    assert "<script" not in panel.summary + panel.manifest + panel.notice
    assert HOSTILE_TITLE not in panel.manifest


def test_the_shelf_is_shared_redacted(share, spaces, student):
    token, ids = student
    spaces.publish(TEACHER, spaces.open(token).space_id, ids["b1"])
    reader = spaces.new_token()
    panel = share.download(reader, View(source=SHELF, session_id=ids["b1"]), "path", "", [])
    text = Path(panel.files[1]).read_text(encoding="utf-8")
    assert "alice@example.com" not in text and "[已脱敏:邮箱]" in text


def test_the_review_table_is_bounded(share, spaces):
    token = spaces.new_token()
    store = spaces.open(token).store
    root = store.create_session("many", [{"role": "user", "content": " ".join(f"u{i}@example.com" for i in range(700))}])
    panel = share.review(token, View(session_id=root), "tree", "")
    assert len(panel.rows) == MAX_ROWS and "只列出前" in panel.summary
    done = share.download(token, View(session_id=root), "tree", "", [row[3] for row in panel.rows])
    text = Path(done.files[0]).read_text(encoding="utf-8")
    assert text.count("[已脱敏:邮箱]") == 700 - MAX_ROWS and "u699@example.com" not in text   # beyond: masked


def test_the_tree_jsonl_imports_through_the_explorer_upload(share, spaces, student, tmp_path):
    token, ids = student
    panel = share.download(token, View(session_id=ids["root"]), "tree", "", [])
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    upload = uploads / "tree.jsonl"
    shutil.copy(panel.files[2], upload)
    explorer = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads))
    friend = spaces.new_token()
    page = explorer.import_upload(friend, View(), str(upload))
    assert "5 个节点" in page.notice and "8.11 会话树 JSONL" in page.report
    theirs = SessionStore(spaces.open(friend).store.storage_dir)
    assert {s["session_id"] for s in theirs.list_sessions()} == set(ids.values())
    again = explorer.import_upload(friend, View(), str(upload))
    assert "新写入 0" in again.report and "未变化 5" in again.report


# ── downloads: the same capped, reused downloads folder as 📤 export (issue 41 item 4) ──────────────────────
def _files_on_disk(root: Path) -> dict:
    """Every file under the downloads folder → (inode, mtime, size): a rewrite or a new file changes this."""
    found = {}
    for path in root.rglob("*"):
        if path.is_file():
            info = path.stat()
            found[str(path)] = (info.st_ino, info.st_mtime_ns, info.st_size)
    return found


def test_seventy_clicks_by_one_visitor_keep_at_most_the_cap_and_leave_other_visitors_alone(share, spaces, student,
                                                                                         tmp_path):
    token, ids = student
    other = spaces.new_token()
    theirs = three_branches(spaces.open(other).store)
    kept = share.download(other, View(session_id=theirs["root"]), "tree", "", []).files
    before = {path: Path(path).read_bytes() for path in kept}
    store = spaces.open(token).store
    for click in range(70):   # the tree changes before every click: each download is new content
        node = store.load(ids["c"])
        node.messages.append({"role": "user", "content": f"第 {click} 次修改"})
        store.save(node)
        panel = share.download(token, View(session_id=ids["root"]), "tree", "", [])
        assert panel.files[0] is not None, panel.notice
        assert f"第 {click} 次修改" in Path(panel.files[1]).read_text(encoding="utf-8")   # the newest content
    exports = tmp_path / "exports"
    mine = [path for path in exports.rglob("*.html") if str(path) not in before]
    assert len(mine) <= downloads.EXPORTS_PER_OWNER
    assert len(list(exports.rglob("*.jsonl"))) <= downloads.EXPORTS_PER_OWNER + 1
    assert {path: Path(path).read_bytes() for path in kept} == before   # the other visitor's download is untouched


def test_an_unchanged_tree_reuses_the_last_download_and_writes_no_new_bytes(share, student, tmp_path):
    token, ids = student
    first = share.download(token, View(session_id=ids["b1"]), "path", "", [])
    on_disk = _files_on_disk(tmp_path / "exports")
    again = share.download(token, View(session_id=ids["b1"]), "path", "", [])
    assert again.files == first.files and again.notice.startswith("✅")
    assert _files_on_disk(tmp_path / "exports") == on_disk      # same files, same inodes, nothing rewritten
    unmasked = share.review(token, View(session_id=ids["b1"]), "path", "").rows[0][3]
    changed = share.download(token, View(session_id=ids["b1"]), "path", "", [unmasked])
    assert changed.files != first.files                         # another choice is another download
    assert "alice@example.com" in Path(changed.files[1]).read_text(encoding="utf-8")


def test_share_downloads_and_exports_share_one_cap_per_visitor(share, spaces, student, tmp_path):
    token, ids = student
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    for session_id in ids.values():
        explorer.export(token, View(session_id=session_id))
        share.download(token, View(session_id=session_id), "path", "", [])
    owner = tmp_path / "exports" / f"owner-{spaces.open(token).space_id}"
    assert len(list(owner.glob("run-*"))) == downloads.EXPORTS_PER_OWNER
    assert list((tmp_path / "exports").glob("run-*")) == []    # nothing outside the visitor's capped folder
