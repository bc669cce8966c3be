"""The share panel's logic, driven directly (no gradio): review, unmask by unticking, add a string, downloads,
the space token re-checked, the shelf, and the tree JSONL imported through the explorer's upload."""

from __future__ import annotations

import collections
import copy
import json
import shutil
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s11_redact
import s11_review
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


# ── issue 41 item 3: the review scans and masks exactly what 📤 export masks ───────────────────────────────

TOOL_SECRETS = {"phone": 13812345678, "card": 4111111111111111, "passwd": "hunter2-Xy7Qm2", "sk": "LTAI" + "5tQ8xKp2Rv7mNw3Z"}


def test_a_tool_calls_numbers_and_credential_named_values_are_listed_and_masked_in_all_three_downloads(share, spaces):
    token = spaces.new_token()
    store = spaces.open(token).store
    root = store.create_session("调用工具", [
        {"role": "user", "content": "帮我下单"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "order",
                                           "input": {"phone": 13812345678, "card": 4111111111111111,
                                                     "passwd": TOOL_SECRETS["passwd"], "note": TOOL_SECRETS["sk"],
                                                     "count": 2}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": '{"SecretString": "{\\"password\\":\\"hunter2-Xy7Qm2\\"}"}'}]},
    ])
    panel = share.review(token, View(session_id=root), "tree", "")
    assert sorted((row[0], row[2]) for row in panel.rows) == sorted([
        ("手机号", f"节点 {root} · 第 2 条"), ("银行卡号", f"节点 {root} · 第 2 条"), ("凭据", f"节点 {root} · 第 2 条"),
        ("阿里云密钥", f"节点 {root} · 第 2 条"), ("凭据", f"节点 {root} · 第 3 条")])
    assert not any("«{\\»" in row[1] for row in panel.rows)          # no meaningless `{\` hit for SecretString
    done = share.download(token, View(session_id=root), "tree", "", [])
    for path in done.files:
        text = Path(path).read_text(encoding="utf-8")
        assert "13812345678" not in text and "4111111111111111" not in text, path
        assert "hunter2-Xy7Qm2" not in text and TOOL_SECRETS["sk"] not in text, path
    line = json.loads(Path(done.files[2]).read_text(encoding="utf-8").splitlines()[1])
    tool_input = line["messages"][1]["content"][0]["input"]
    assert tool_input == {"phone": "[已脱敏:手机号]", "card": "[已脱敏:银行卡号]", "passwd": "[已脱敏:凭据]",
                          "note": "[已脱敏:阿里云密钥]", "count": 2}
    head = json.loads(Path(done.files[2]).read_text(encoding="utf-8").splitlines()[0])
    assert sum(head["manifest"]["masked"].values()) == len(panel.rows) == 5
    # unticking the card keeps that number, and only it, as it was written
    card = next(row[3] for row in panel.rows if row[0] == "银行卡号")
    again = share.download(token, View(session_id=root), "tree", "", [card])
    line = json.loads(Path(again.files[2]).read_text(encoding="utf-8").splitlines()[1])
    assert line["messages"][1]["content"][0]["input"]["card"] == 4111111111111111
    assert line["messages"][1]["content"][0]["input"]["phone"] == "[已脱敏:手机号]"


_json_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
    st.sampled_from([13812345678, 4111111111111111, 2024113012345678, 1.3812345678e10, "a@example.com", "hunter2",
                     "${DB_PASSWORD}", "", "电话 13812345678", "postgres://app:S3cr3t@db/x", "[已脱敏:邮箱]",
                     "a@example.com13812345678", '{\\"token\\":\\"tok-8f7e6d5c4b\\"}', "db01.corp.example"]),
    st.text(max_size=6))
_json_keys = st.one_of(st.sampled_from(["role", "content", "password", "passwd", "api_key", "token_type", "phone",
                                        "a@example.com", "b@example.com", "13812345678", "Cookie"]), st.text(max_size=4))
_json_values = st.recursive(_json_leaves, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_json_keys, inner, max_size=4)), max_leaves=16)


@settings(max_examples=300, deadline=None)
@given(st.lists(_json_values, min_size=1, max_size=3), st.sampled_from([(), ("db01.corp.example",), ("*@example.com",)]))
def test_for_any_json_value_the_review_masks_what_redact_value_masks_and_lists_every_masked_place(values, added):
    units = [s11_review.Unit("n1", number, value) for number, value in enumerate(values, 1)]
    before = copy.deepcopy(values)
    review = s11_review.scan(units, ())
    masked, manifest = s11_review.apply(units, review)
    expected = [s11_redact.redact_value(value) for value in values]
    assert repr(masked) == repr([value for value, _ in expected])
    total = collections.Counter()
    for _, counts in expected:
        total.update(counts)
    assert manifest.masked == s11_redact._in_rule_order(total)
    assert len(review.hits) == sum(manifest.masked.values())       # every masked place is a row, and every row masks
    assert values == before                                          # the input is never touched
    # with strings of the reader's own: rule places stay as export masks them, the rest only fills free text
    with_added = s11_review.scan(units, added)
    masked_added, manifest_added = s11_review.apply(units, with_added)
    assert manifest_added.masked == manifest.masked
    listed_added = [hit for hit in with_added.hits if hit.rule == s11_review.ADDED_LABEL]
    assert len(listed_added) >= sum(manifest_added.added.values())
    if not added:
        assert repr(masked_added) == repr(masked)
