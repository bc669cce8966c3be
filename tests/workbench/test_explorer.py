"""The session explorer's logic, driven directly (no gradio): every action, every refusal, hostile text, big inputs."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import s11_import
from s11_session import SessionNode, SessionStore, demo_tree_branching
from s11_workbench import explorer as explorer_module
from s11_workbench.explorer import LIST_LIMIT, MAP_MAX_CHARS, MAP_MAX_EDGES, PAGE_SIZE, Explorer, View
from s11_workbench.spaces import Limits, Spaces

CODE_DIR = Path(__file__).resolve().parents[2] / "code"
ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)
TEACHER = "teacher-secret-for-tests"
HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>", "${7*7}", "{{x}}",
           "```py\nunclosed fence", '"]; click n0 call alert(1)\n%%{init: {}}%%', "[a](javascript:alert(3))",
           "![x](http://example.com/x.png)", "**bold** _it_ <b>tag</b> &amp; \\ | # ~"]
# Every line the map generator may emit; anything else means session text escaped its label.
MAP_LINE = re.compile(
    r'^(%%\{init: \{"flowchart": \{"wrappingWidth": \d+\}\}\}%%'
    r'|graph TD'
    r'|    n\d+\["[^"\n]*"\]'
    r'|    n\d+ -->\|"[^"\n]*"\| n\d+'
    r'|    classDef \w+ [\w:#,-]+'
    r'|    class n\d+ \w+'
    r'|    click n\d+ href "\?session=[A-Za-z0-9_-]+")$'
)


# ── fixtures ───────────────────────────────────────────────────────────────────────────────
@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path / "sessions", limits=ROOMY, teacher_secret=TEACHER)


@pytest.fixture
def explorer(spaces, tmp_path) -> Explorer:
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    return Explorer(spaces, export_root=str(tmp_path / "exports"), upload_root=str(uploads))


@pytest.fixture
def student(spaces):
    """A student who ran the 8.11 demo: (token, ids of main / branch A / branch B)."""
    token = spaces.new_token()
    return token, demo_tree_branching(spaces.open(token).store)


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under folder with its bytes: 'nothing changed on disk' is a comparison of two of these."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file() and path.name not in (".lock",)}


def store_of(spaces: Spaces, token: str) -> SessionStore:
    return spaces.open(token).store


def unescape(markdown: str) -> str:
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def chat_text(page) -> str:
    return "\n".join(str(row["content"]) + str(row.get("metadata", {}).get("title", "")) for row in page.chat)


# ── no gradio ──────────────────────────────────────────────────────────────────────────────
def test_the_explorer_logic_imports_without_gradio():
    probe = "import sys, s11_workbench.explorer; print('gradio' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], cwd=CODE_DIR, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# ── reading: list, tree, path, map ──────────────────────────────────────────────────────────
def test_a_student_who_ran_the_demo_finds_its_three_sessions(explorer, student):
    token, ids = student
    page = explorer.open_page(token)
    listed = {row[explorer_module.ID_COLUMN] for row in page.rows}
    assert listed == {ids["main_id"], ids["branch_a_id"], ids["branch_b_id"]}
    assert "共 3 个会话" in page.list_note and page.notice == ""


def test_selecting_a_branch_shows_the_tree_with_the_active_end_and_the_path_from_the_root(explorer, student):
    token, ids = student
    page = explorer.select(token, View(), ids["branch_b_id"])
    labels = dict((value, label) for label, value in page.tree_choices)
    assert list(labels) == [ids["main_id"], ids["branch_a_id"], ids["branch_b_id"]]
    assert labels[ids["main_id"]].startswith("🌱")
    assert labels[ids["branch_a_id"]].startswith("├─") and labels[ids["branch_b_id"]].startswith("└─")
    # branch B was resumed last, so the conversation currently ends there
    assert [value for value, label in labels.items() if "◀ 活动端" in label] == [ids["branch_b_id"]]
    headers = [row["content"].split("\n")[0] for row in page.chat if "metadata" not in row]
    assert headers[0].startswith("**#2**") and headers[-1].startswith("**#9**")
    titles = [row["metadata"]["title"] for row in page.chat if "metadata" in row]
    assert titles[0] == "#1 🧠 系统提示" and not any("从这里开始" in title for title in titles)
    assert any(row["content"].startswith("* * *") and "从这里开始" in row["content"] for row in page.chat
               if "metadata" not in row)   # the fork divider is a divider row (issue 42), not a folded bubble
    assert page.view.revision == 2 and page.message_count == 9 and "第 1–9 条" in page.path_note
    assert "前 5 条继承自父会话" in page.details


def test_the_map_draws_every_node_and_links_each_to_its_deep_link(explorer, student):
    token, ids = student
    page = explorer.select(token, View(), ids["main_id"])
    lines = page.map_markdown.split("\n")
    source = lines[lines.index("```mermaid") + 1: lines.index("```", lines.index("```mermaid") + 1)]
    assert all(MAP_LINE.match(line) for line in source), source
    assert sum("-->" in line for line in source) == 2
    assert {f'click n{i} href "?session={sid}"' for i, sid in enumerate(
        [ids["main_id"], ids["branch_a_id"], ids["branch_b_id"]])} <= {line.strip() for line in source}


def test_search_matches_titles_and_ids_case_insensitively(explorer, spaces, student):
    token, ids = student
    store_of(spaces, token).create_session("Refactor the LOGIN cache")
    page = explorer.refresh(token, View(), query="login CACHE")
    assert [row[0] for row in page.rows] == ["🌱 Refactor the LOGIN cache · 0 条"] and "找到 1 个" in page.list_note
    page = explorer.refresh(token, View(), query=ids["branch_a_id"][:8])
    assert [row[explorer_module.ID_COLUMN] for row in page.rows] == [ids["branch_a_id"]]
    assert explorer.refresh(token, View(), query="没有这样的会话").rows == []


def test_tool_calls_and_thinking_are_collapsed_and_long_outputs_folded(explorer, spaces):
    token = spaces.new_token()
    long_output = "\n".join(f"line {i}" for i in range(5000))
    messages = [{"role": "user", "content": "列出文件"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "先看看目录"},
                                                  {"type": "tool_use", "id": "t1", "name": "Bash",
                                                   "input": {"command": "ls"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": long_output}]}]
    sid = store_of(spaces, token).create_session("工具调用", messages)
    page = explorer.select(token, View(), sid)
    thoughts = {row["metadata"]["title"]: row for row in page.chat if "metadata" in row}
    # the assistant turn has no text: no empty bubble, its number goes into the first collapsed block;
    # the tool result (a user turn holding only that) joins its call in one block on the assistant's side
    # the call's header names its command (issue 42: no need to open every call)
    assert set(thoughts) == {"**#2** 🤖 助手 · 💭 思考", "🔧 调用工具 Bash · ls → 📤 有结果"}
    assert all(row["metadata"]["status"] == "done" for row in thoughts.values())   # collapsed
    assert [row["role"] for row in page.chat if "metadata" not in row] == ["user"]   # only "列出文件"
    folded = thoughts["🔧 调用工具 Bash · ls → 📤 有结果"]["content"]
    assert '"command": "ls"' in folded and "📤 结果" in folded
    assert "已折叠" in folded and "5,000 行" in folded and len(folded) < len(long_output) // 5
    assert page.view.chat_numbers == (1, 2, 2)


def test_imported_marks_are_shown_on_the_message(explorer, spaces):
    token = spaces.new_token()
    messages = [{"role": "user", "content": "总结一下", "summary": True},
                {"role": "assistant", "content": [{"type": "text", "text": "x" * 10, "truncated_from": 123456}]}]
    sid = store_of(spaces, token).create_session("导入的", messages)
    text = chat_text(explorer.select(token, View(), sid))
    assert "摘要" in text and "导入时已截断：原长 123,456 字符" in text


# ── fork ───────────────────────────────────────────────────────────────────────────────────
def test_fork_at_message_3_with_a_new_message_appears_at_once_everywhere(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    page = explorer.fork(token, view, 3, "换个思路：先加监控", "监控分支")
    child = store_of(spaces, token).load(page.view.session_id)
    assert child.parent_id == ids["branch_b_id"] and child.fork_point == 3 and child.title == "监控分支"
    assert [m["content"] for m in child.messages[3:]] == ["换个思路：先加监控"]
    assert page.notice.startswith("✅") and child.session_id in page.notice
    assert child.session_id in {row[explorer_module.ID_COLUMN] for row in page.rows}
    assert child.session_id in {value for _, value in page.tree_choices}
    assert "换个思路：先加监控" in chat_text(page) and page.view.revision == child.revision


def test_fork_without_a_message_keeps_exactly_the_prefix(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["main_id"]).view
    page = explorer.fork(token, view, 2)
    assert len(store_of(spaces, token).load(page.view.session_id).messages) == 2


@pytest.mark.parametrize("at", [-1, 99, "三", 2.5, True])
def test_a_bad_fork_position_is_refused_and_writes_nothing(explorer, spaces, student, at):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    before = snapshot(Path(spaces.sessions_dir))
    page = explorer.fork(token, view, at, "新消息")
    assert page.notice.startswith("⚠️") and "分叉位置" in page.notice
    assert snapshot(Path(spaces.sessions_dir)) == before
    assert page.view.session_id == ids["branch_a_id"]   # the page keeps what it showed


def test_a_fork_without_a_chosen_message_is_refused_never_a_silent_0(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    before = snapshot(Path(spaces.sessions_dir))
    page = explorer.fork(token, view, None, "新消息")
    assert page.notice.startswith("⚠️") and "先在对话里点一条消息" in page.notice and page.area == "fork"
    assert snapshot(Path(spaces.sessions_dir)) == before


def test_forking_with_nothing_inherited_is_an_explicit_0(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    page = explorer.fork(token, view, 0, "从头来")
    child = store_of(spaces, token).load(page.view.session_id)
    assert child.fork_point == 0 and [m["content"] for m in child.messages] == ["从头来"]
    assert "什么都不继承" in page.notice


def test_a_second_click_after_a_fork_makes_no_second_fork_and_the_form_clears(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    first = explorer.fork(token, view, 3, "换个思路")
    assert first.fork_reset and first.area == "fork" and first.notice.startswith("✅")
    count = len(store_of(spaces, token).list_sessions())
    again = explorer.fork(token, first.view, None, "换个思路")   # the cleared form sends no position
    assert again.notice.startswith("✅") and "就是现在显示的这个" in again.notice
    assert len(store_of(spaces, token).list_sessions()) == count and again.view.session_id == first.view.session_id
    grandchild = explorer.fork(token, first.view, 2)   # a branch of a branch: the title does not grow "· 分支 · 分支"
    assert store_of(spaces, token).load(grandchild.view.session_id).title == "修复登录服务内存泄漏 · 分支"


def test_editing_an_earlier_user_message_makes_a_branch_before_it(explorer, spaces, student):
    token, ids = student
    page = explorer.select(token, View(), ids["branch_b_id"])
    row = next(i for i, number in enumerate(page.view.chat_numbers) if number == 4)
    shown = page.chat[row]["content"]
    assert page.chat[row]["role"] == "user" and shown.startswith("**#4**")
    edited = shown.replace("event\\_listener", "ws\\_pool")   # what the Chatbot's edit box sends back
    forked = explorer.edit_fork(token, page.view, row, edited)
    child = store_of(spaces, token).load(forked.view.session_id)
    assert child.parent_id == ids["branch_b_id"] and child.fork_point == 3
    assert child.messages[3] == {"role": "user", "content": "我怀疑是 ws_pool 注册表无限增长，帮忙重点排查。"}
    unchanged = explorer.edit_fork(token, page.view, row, shown)
    assert unchanged.notice.startswith("⚠️") and "没有改动" in unchanged.notice
    assistant_row = page.view.chat_numbers.index(5)
    assert "不是用户消息" in explorer.edit_fork(token, page.view, assistant_row, "x").notice
    assert "找不到" in explorer.edit_fork(token, page.view, 999, "x").notice


def test_fork_needs_a_selected_session(explorer, student):
    token, _ = student
    assert "请先在列表或会话树里选一个会话" in explorer.fork(token, View(), 1).notice


def test_an_oversized_first_message_is_refused(explorer, student):
    token, ids = student
    view = explorer.select(token, View(), ids["main_id"]).view
    assert "最多 20,000 字符" in explorer.fork(token, view, 1, "长" * 20_001).notice


# ── resume ─────────────────────────────────────────────────────────────────────────────────
def test_resume_appends_the_typed_turn_and_saves_it(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    page = explorer.resume(token, view, "方案 A 压测通过了", "user")
    node = store_of(spaces, token).load(ids["branch_a_id"])
    assert node.messages[-1] == {"role": "user", "content": "方案 A 压测通过了"}
    assert page.draft == "" and page.view.revision == node.revision == view.revision + 1
    assert page.message_count == 8 and "方案 A 压测通过了" in chat_text(page)


def test_a_stale_page_gets_a_clear_message_and_a_reload_and_no_turn_is_lost(explorer, spaces, student):
    token, ids = student
    first_tab = explorer.select(token, View(), ids["branch_b_id"]).view
    second_tab = explorer.select(token, View(), ids["branch_b_id"]).view
    explorer.resume(token, second_tab, "第二个标签页先写了这一句")
    stale = explorer.resume(token, first_tab, "第一个标签页的这一句")
    assert "别的标签页" in stale.notice and stale.draft == "第一个标签页的这一句"
    node = store_of(spaces, token).load(ids["branch_b_id"])
    assert node.messages[-1]["content"] == "第二个标签页先写了这一句"   # nothing overwritten
    assert stale.view.revision == node.revision and "第二个标签页先写了这一句" in chat_text(stale)   # reloaded
    retried = explorer.resume(token, stale.view, stale.draft)
    contents = [m["content"] for m in store_of(spaces, token).load(ids["branch_b_id"]).messages[-2:]]
    assert retried.notice.startswith("✅") and contents == ["第二个标签页先写了这一句", "第一个标签页的这一句"]


@pytest.mark.parametrize(("text", "role", "expected"), [("", "user", "消息不能为空"), ("   \n", "user", "消息不能为空"),
                                                       ("hi", "system", "角色只能是")])
def test_resume_refuses_empty_text_and_unknown_roles(explorer, spaces, student, text, role, expected):
    token, ids = student
    view = explorer.select(token, View(), ids["main_id"]).view
    before = snapshot(Path(spaces.sessions_dir))
    page = explorer.resume(token, view, text, role)
    assert expected in page.notice and snapshot(Path(spaces.sessions_dir)) == before


# ── export ─────────────────────────────────────────────────────────────────────────────────
def test_export_writes_redacted_downloads_with_a_preview(explorer, spaces):
    token = spaces.new_token()
    sid = store_of(spaces, token).create_session("带密钥的会话", [
        {"role": "user", "content": "我的手机 13812345678，key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"}])
    page = explorer.export(token, explorer.select(token, View(), sid).view)
    markdown_path, html_path = page.downloads
    assert markdown_path.endswith(f"session-{sid}.md") and html_path.endswith(f"session-{sid}.html")
    for path in page.downloads:
        text = Path(path).read_text(encoding="utf-8")
        assert "13812345678" not in text and "已脱敏" in text
    assert page.preview == Path(markdown_path).read_text(encoding="utf-8")
    assert stat.S_IMODE(os.stat(explorer.export_root).st_mode) == 0o700   # other accounts cannot read it


def test_export_uses_the_one_checked_downloads_folder_and_its_pruning(spaces, student, tmp_path):
    """The explorer's downloads go through s11_workbench.downloads like the 8.11 tab's: a folder other accounts
    can open is refused (nothing written), and old run-* folders are removed before a new one is made."""
    token, ids = student
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    explorer = Explorer(spaces, export_root=str(shared))
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    refused = explorer.export(token, view)
    assert refused.downloads == (None, None) and "别的账号也能读写它" in refused.notice
    assert list(shared.iterdir()) == [] and str(tmp_path) not in refused.notice
    os.chmod(shared, 0o700)
    old = shared / "run-old"
    old.mkdir()
    os.utime(old, (1, 1))
    page = explorer.export(token, view)
    assert page.downloads[0] is not None and not old.exists()
    run = Path(page.downloads[0]).parent                 # <root>/owner-<the visitor's space>/run-<fingerprint>
    assert [entry.name for entry in shared.iterdir()] == [run.parent.name] == [f"owner-{spaces.open(token).space_id}"]


def test_export_needs_a_selected_session(explorer, student):
    token, _ = student
    page = explorer.export(token, View())
    assert page.downloads == (None, None) and "请先" in page.notice


# ── delete, restore, check ─────────────────────────────────────────────────────────────────
def test_delete_moves_to_the_trash_and_restore_brings_it_back(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    deleted = explorer.delete(token, view)
    assert ids["branch_a_id"] not in {row[explorer_module.ID_COLUMN] for row in deleted.rows}
    assert deleted.view.session_id == ids["main_id"]   # the page moves up to the parent
    assert [value for _, value in deleted.trash_choices] == [ids["branch_a_id"]]
    assert "修复登录服务内存泄漏" in deleted.trash_choices[0][0]
    restored = explorer.restore(token, deleted.view, ids["branch_a_id"])
    assert restored.notice.startswith("♻️") and restored.view.session_id == ids["branch_a_id"]
    assert restored.trash_choices == [] and len(store_of(spaces, token).load(ids["branch_a_id"]).messages) == 7


def test_deleting_a_parent_keeps_its_branches_whole_and_check_says_so(explorer, spaces, student):
    token, ids = student
    page = explorer.delete(token, explorer.select(token, View(), ids["main_id"]).view)
    assert {row[explorer_module.ID_COLUMN] for row in page.rows} == {ids["branch_a_id"], ids["branch_b_id"]}
    assert "missing\\_parent" in page.problems and spaces.sessions_dir not in page.problems
    branch = explorer.select(token, page.view, ids["branch_b_id"])
    assert branch.message_count == 9 and "#1 🧠 系统提示" in chat_text(branch)


def test_restoring_something_not_in_the_trash_is_refused(explorer, student):
    token, ids = student
    assert "回收站里没有会话" in explorer.restore(token, View(), ids["main_id"]).notice
    assert "非法会话 ID" in explorer.restore(token, View(), "../../etc/passwd").notice


def test_a_corrupt_file_is_listed_by_check_without_server_paths(explorer, spaces, student):
    token, _ = student
    Path(spaces.open(token).folder, "broken.json").write_text("{not json", encoding="utf-8")
    page = explorer.refresh(token, View())
    assert "体检发现" in page.problems and "broken.json" in unescape(page.problems)
    assert spaces.sessions_dir not in page.problems and len(page.rows) == 3


# ── import ─────────────────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("name", [os.path.basename(path) for path in s11_import.list_examples()])
def test_importing_an_example_shows_its_tree_and_the_report(explorer, spaces, name):
    token = spaces.new_token()
    page = explorer.import_example(token, View(), name)
    assert page.notice.startswith("📥") and "导入" in page.report
    assert page.view.session_id is not None and len(page.tree_choices) >= 2
    assert len(page.rows) == len(store_of(spaces, token).list_sessions()) >= 2
    # the page opens where the agent's conversation currently ends, and the tree marks that node
    active = [value for label, value in page.tree_choices if "◀ 活动端" in label]
    assert active == [page.view.session_id]
    assert store_of(spaces, token).load(page.view.session_id).source["active_end"] is True


def test_importing_the_same_example_twice_adds_nothing(explorer, spaces):
    token = spaces.new_token()
    name = os.path.basename(s11_import.list_examples()[0])
    explorer.import_example(token, View(), name)
    before = snapshot(Path(spaces.open(token).folder))
    explorer.import_example(token, View(), name)
    assert snapshot(Path(spaces.open(token).folder)) == before


@pytest.mark.parametrize("name", ["../README.md", "/etc/passwd", "no-such-example.jsonl", None])
def test_only_listed_examples_can_be_imported(explorer, spaces, name):
    token = spaces.new_token()
    page = explorer.import_example(token, View(), name)
    assert "没有叫" in page.notice and spaces.open(token).store.list_sessions() == []


def test_an_uploaded_transcript_is_imported_and_skipped_lines_are_reported(explorer, spaces, tmp_path):
    token = spaces.new_token()
    example = Path(s11_import.list_examples()[-1]).read_bytes()
    upload = tmp_path / "uploads" / "a<b>.jsonl"
    upload.write_bytes(example + b"{torn line\n")
    page = explorer.import_upload(token, View(), str(upload))
    assert page.notice.startswith("📥") and "跳过 1 行" in page.notice
    assert page.report and "\\<b\\>" in page.notice   # the upload name is shown as text


def test_a_compressed_codex_rollout_uploads_to_the_tree_of_its_plain_copy_and_a_bomb_is_refused(spaces, tmp_path):
    """Codex compresses rollouts idle for 7 days (rollout-*.jsonl.zst): the upload box takes them and they import to
    the same nodes as the plain file; a stream that unpacks past the upload limit is refused in Chinese, nothing
    written (the limit counts the unpacked bytes, not the few KB that were uploaded)."""
    zstandard = pytest.importorskip("zstandard")
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"), upload_root=str(uploads))
    plain = next(path for path in s11_import.list_examples() if "codex" in os.path.basename(path))
    raw = Path(plain).read_bytes()
    packed = uploads / "rollout-2026-05-01T00-00-00-c1.jsonl.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress(raw))
    token = spaces.new_token()
    assert explorer.check_upload(token, str(packed)) == ""
    page = explorer.import_upload(token, View(), str(packed))
    assert page.notice.startswith("📥"), page.notice
    store = spaces.open(token).store
    packed_ids = {s["session_id"] for s in store.list_sessions()}
    copy = uploads / "rollout-2026-05-01T00-00-00-c1.jsonl"
    copy.write_bytes(raw)
    again = explorer.import_upload(token, page.view, str(copy))
    assert again.notice.startswith("📥") and {s["session_id"] for s in store.list_sessions()} == packed_ids

    tight = Spaces(tmp_path / "tight", limits=Limits(creates_per_minute=10_000, create_burst=10_000,
                                                      min_free_bytes=0, max_upload_bytes=64 * 1024))
    small = Explorer(tight, export_root=str(tmp_path / "e2"), upload_root=str(uploads))
    bomb = uploads / "rollout-2026-05-02T00-00-00-c2.jsonl.zst"
    bomb.write_bytes(zstandard.ZstdCompressor().compress(raw + b"\n" * (2 * 1024 * 1024)))
    assert bomb.stat().st_size < 64 * 1024                  # small on the wire ...
    student = tight.new_token()
    refused = small.import_upload(student, View(), str(bomb))
    assert refused.notice.startswith("⚠️") and "MB" in refused.notice, refused.notice   # ... too big unpacked
    assert tight.open(student).store.list_sessions() == []


def test_a_gemini_cli_json_document_can_be_uploaded(explorer, spaces, tmp_path):
    token = spaces.new_token()
    doc = {"sessionId": "d98cf9e7-1111-4c2a-9c3b-5a1e2f3a4b5c", "projectHash": "5eb97e" + "0" * 58,
           "startTime": "2026-05-22T14:59:03.120Z", "lastUpdated": "2026-05-22T15:00:30.000Z",
           "messages": [{"id": "u-1", "timestamp": "2026-05-22T15:00:00.000Z", "type": "user",
                         "content": [{"text": "修一下 flaky 的测试"}]},
                        {"id": "g-1", "timestamp": "2026-05-22T15:00:30.000Z", "type": "gemini",
                         "content": "好的，先看断言。", "thoughts": [], "model": "gemini-2.5-pro"}]}
    upload = tmp_path / "uploads" / "session-2026-05-22T14-59-d98cf9e7.json"
    upload.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
    page = explorer.import_upload(token, View(), str(upload))
    assert page.notice.startswith("📥"), page.notice
    (summary,) = spaces.open(token).store.list_sessions()
    node = spaces.open(token).store.load(summary["session_id"])
    assert [m["role"] for m in node.messages] == ["user", "assistant"] and node.source["format"] == "gemini-cli"


@pytest.mark.parametrize("where", ["outside", "missing", "not-jsonl", "random-bytes", "empty"])
def test_bad_uploads_are_refused_and_write_nothing(explorer, spaces, tmp_path, where):
    token = spaces.new_token()
    uploads = tmp_path / "uploads"
    paths = {"outside": tmp_path / "elsewhere.jsonl", "missing": uploads / "gone.jsonl",
             "not-jsonl": uploads / "notes.txt", "random-bytes": uploads / "noise.jsonl",
             "empty": uploads / "empty.jsonl"}
    contents = {"outside": Path(s11_import.list_examples()[-1]).read_bytes(), "not-jsonl": b"hello",
                "random-bytes": os.urandom(4096), "empty": b""}
    path = paths[where]
    if where in contents:
        path.write_bytes(contents[where])
    before = snapshot(Path(spaces.sessions_dir))
    page = explorer.import_upload(token, View(), str(path))
    assert page.notice.startswith("⚠️") and "Traceback" not in page.notice
    assert str(tmp_path) not in page.notice
    assert snapshot(Path(spaces.sessions_dir)) == before


def test_an_upload_over_the_space_limit_is_refused(tmp_path):
    spaces = Spaces(tmp_path / "sessions", limits=Limits(max_upload_bytes=1000, min_free_bytes=0))
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    upload = uploads / "big.jsonl"
    upload.write_bytes(Path(s11_import.list_examples()[-1]).read_bytes() * 10)
    token = spaces.new_token()
    page = Explorer(spaces, export_root=str(tmp_path / "e"), upload_root=str(uploads)).import_upload(
        token, View(), str(upload))
    assert "上限" in page.notice and spaces.open(token).store.list_sessions() == []


# ── spaces: nobody reaches another student's work ───────────────────────────────────────────
def test_another_student_sees_none_of_it_and_every_replayed_request_is_refused(explorer, spaces, student):
    token, ids = student
    other = spaces.new_token()
    assert explorer.open_page(other).rows == []
    before = snapshot(Path(spaces.sessions_dir))
    foreign = View(session_id=ids["branch_b_id"], revision=2)
    pages = [explorer.select(other, View(), ids["branch_b_id"]), explorer.fork(other, foreign, 3, "x"),
             explorer.resume(other, foreign, "x"), explorer.export(other, foreign), explorer.delete(other, foreign),
             explorer.restore(other, View(), ids["branch_b_id"]), explorer.open_page(other, None, ids["main_id"])]
    assert all(page.notice.startswith("⚠️") for page in pages), [page.notice for page in pages]
    assert all(page.downloads == (None, None) for page in pages)
    assert not any(ids["branch_b_id"] in chat_text(page) + page.details for page in pages)
    assert snapshot(Path(spaces.sessions_dir)) == before


@pytest.mark.parametrize("token", [None, "", "forged", "0" * 16 + "." + "0" * 32, "x" * 10_000, 42])
def test_a_forged_token_gets_a_refusal_for_every_action_and_nothing_changes(explorer, spaces, student, token):
    _, ids = student
    before = snapshot(Path(spaces.sessions_dir))
    view = View(session_id=ids["main_id"])
    for page in (explorer.open_page(token), explorer.select(token, view, ids["main_id"]),
                 explorer.fork(token, view, 1, "x"), explorer.resume(token, view, "x"), explorer.export(token, view),
                 explorer.delete(token, view), explorer.restore(token, view, ids["main_id"]),
                 explorer.import_example(token, view, os.path.basename(s11_import.list_examples()[0]))):
        assert page.notice.startswith("⚠️") and page.rows == [] and page.chat == []
    assert snapshot(Path(spaces.sessions_dir)) == before


def test_a_student_cannot_open_another_space_by_naming_it(explorer, spaces, student):
    token, ids = student
    other_id = spaces.open(spaces.new_token()).space_id
    for page in (explorer.switch_source(token, View(), f"space:{other_id}"),
                 explorer.open_space(token, View(), other_id),
                 explorer.switch_source(token, View(), "../spaces"),
                 explorer.select(token, View(source=f"space:{other_id}"), ids["main_id"])):
        assert page.notice.startswith("⚠️") and page.teacher_rows == []


def test_creating_too_fast_is_refused_with_a_clear_message(tmp_path):
    spaces = Spaces(tmp_path / "sessions", limits=Limits(create_burst=2, creates_per_minute=1, min_free_bytes=0))
    token = spaces.new_token()
    sid = spaces.open(token).store.create_session("根", [{"role": "user", "content": "hi"}])
    explorer = Explorer(spaces, export_root=str(tmp_path / "e"))
    view = explorer.select(token, View(), sid).view
    notices = [explorer.fork(token, view, 1).notice for _ in range(3)]
    assert notices[0].startswith("✅") and notices[1].startswith("✅") and "太快" in notices[2]


# ── shelf and teacher ──────────────────────────────────────────────────────────────────────
def test_the_teacher_publishes_and_both_students_can_fork_but_not_change_it(explorer, spaces, student):
    token, ids = student
    other = spaces.new_token()
    anon = explorer.publish(token, explorer.select(token, View(), ids["branch_b_id"]).view, None)
    assert "只有老师" in anon.notice and spaces.shelf().store.list_sessions() == []
    asked = explorer.publish(token, explorer.select(token, View(), ids["branch_b_id"]).view, TEACHER)
    assert asked.confirm.startswith("📚 确认") and spaces.shelf().store.list_sessions() == []
    published = explorer.confirm(token, asked.view, TEACHER)
    assert published.notice.startswith("📚 已脱敏并发布") and published.confirm == ""
    for visitor in (token, other):
        shelf = explorer.switch_source(visitor, View(), "shelf")
        assert ids["branch_b_id"] in {row[explorer_module.ID_COLUMN] for row in shelf.rows} and shelf.read_only
        view = explorer.select(visitor, shelf.view, ids["branch_b_id"]).view
        before = snapshot(Path(spaces.shelf().folder))
        refused = [explorer.resume(visitor, view, "改书架"), explorer.delete(visitor, view)]
        assert all("只读" in page.notice for page in refused)
        assert snapshot(Path(spaces.shelf().folder)) == before
        forked = explorer.fork(visitor, view, 4, "从书架分叉")
        assert forked.notice.startswith("✅") and forked.view.source == "mine"
        copy = spaces.open(visitor).store.load(forked.view.session_id)
        assert copy.messages[-1]["content"] == "从书架分叉" and len(copy.messages) == 5


def test_the_teacher_sees_every_space_and_opens_one_read_only(explorer, spaces, student):
    token, ids = student
    teacher_token = spaces.new_token()
    page = explorer.open_page(teacher_token, TEACHER)
    assert page.teacher and spaces.open(token).space_id in {row[1] for row in page.teacher_rows}
    assert explorer.open_page(token).teacher is False and explorer.open_page(token).teacher_rows == []
    opened = explorer.open_space(teacher_token, View(), spaces.open(token).space_id, TEACHER)
    assert opened.read_only and len(opened.rows) == 3 and "学生空间" in opened.space_label
    view = explorer.select(teacher_token, opened.view, ids["main_id"], TEACHER).view
    before = snapshot(Path(spaces.sessions_dir))
    assert "只读" in explorer.resume(teacher_token, view, "老师改了一句", teacher=TEACHER).notice
    assert "只读" in explorer.delete(teacher_token, view, TEACHER).notice
    assert snapshot(Path(spaces.sessions_dir)) == before
    # the same view without the secret is refused
    assert "只有老师" in explorer.select(teacher_token, view, ids["main_id"]).notice


def test_the_teacher_can_take_a_session_off_the_shelf(explorer, spaces, student):
    token, ids = student
    asked = explorer.publish(token, explorer.select(token, View(), ids["main_id"]).view, TEACHER)
    explorer.confirm(token, asked.view, TEACHER)
    shelf_view = explorer.select(token, View(source="shelf"), ids["main_id"]).view
    assert "只有老师" in explorer.unpublish(token, shelf_view, None).notice
    page = explorer.unpublish(token, shelf_view, TEACHER)
    assert "撤下" in page.notice and page.rows == []


# ── deep links ─────────────────────────────────────────────────────────────────────────────
def test_a_deep_link_selects_the_session_in_the_visitors_own_space(explorer, student):
    token, ids = student
    page = explorer.open_page(token, None, ids["branch_a_id"])
    assert page.view.session_id == ids["branch_a_id"] and page.message_count == 7 and page.notice == ""


@pytest.mark.parametrize("link", ["0123456789ab", "../../.secret", "<script>", "a" * 500])
def test_a_deep_link_to_anything_else_says_so_and_selects_nothing(explorer, student, link):
    token, _ = student
    page = explorer.open_page(token, None, link)
    assert page.view.session_id is None and "不在你的空间里" in page.notice and "<script>" not in page.notice


# ── hostile text stays text ────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("text", HOSTILE)
def test_literal_markdown_escapes_everything_or_fences_it(text):
    shown = explorer_module.literal_markdown(text)
    if shown.startswith("```"):
        fence = shown.split("\n")[0]
        assert shown.endswith("\n" + fence) and fence not in text and shown[len(fence) + 1:-len(fence) - 1] == text
    else:
        assert unescape(shown) == text
        assert not re.search(r"(?<!\\)[<>\[\]!*_`$&{}]", shown.replace("\\\\", ""))


def test_hostile_titles_and_messages_stay_text_in_every_part_of_the_page(explorer, spaces):
    token = spaces.new_token()
    store = store_of(spaces, token)
    root = store.create_session(HOSTILE[5], [{"role": "user", "content": text} for text in HOSTILE])
    for text in HOSTILE[:4]:
        store.fork(root, [{"role": "assistant", "content": text}], at=2, title=text)
    page = explorer.select(token, View(), root)
    lines = page.map_markdown.split("\n")
    source = lines[lines.index("```mermaid") + 1: lines.index("```", lines.index("```mermaid") + 1)]
    assert all(MAP_LINE.match(line) for line in source), source
    text_tree = page.map_markdown.rsplit("\n```\n", 1)[1].strip()   # the phone's text version, after the diagram
    assert "分支 A" in unescape(text_tree) and "<script>alert(1)</script>" in unescape(text_tree)
    # every line: an optional tree prefix in code, then one link to a session id; the text is escaped
    line = re.compile(r"^(`[│├└─ ]+`)?\[.*\]\(\?session=[A-Za-z0-9_-]+\)$")
    rows = text_tree.split("  \n")
    assert all(line.match(row) and row.replace("\\]", "").count("](") == 1 for row in rows), text_tree
    assert "<" not in text_tree.replace("\\<", "")
    # tree labels and table cells are plain text in the page: the title appears verbatim (whitespace folded)
    assert any("<script>alert(1)</script>" in label for label, _ in page.tree_choices)
    assert "├─ 🌿 分支 A：<script>alert(1)</script> · ➕ <script>alert(1)</scrip… · 3 条" in {row[0] for row in page.rows}
    for row in page.chat:
        body = row["content"]
        outside_fences = re.sub(r"(?ms)^(`{3,}).*?^\1$", "", body)
        # user text is escaped character by character; assistant Markdown keeps its layout but no raw HTML,
        # no image, no link other than http(s)
        assert "<" not in outside_fences.replace("\\<", ""), body
        assert "![" not in outside_fences.replace("\\!\\[", "") and not re.search(r"\]\((?!https?://)", body), body
    assert "<" not in page.details.replace("\\<", "") and "${7*7}" not in page.details


# ── big inputs ─────────────────────────────────────────────────────────────────────────────
def test_a_space_with_2000_sessions_lists_a_page_and_search_finds_any_even_after_a_save(explorer, spaces):
    """Titles and message text are both searched; a session saved after the first search is found by its new
    text (the search cache notices the save)."""
    token = spaces.new_token()
    fast = SessionStore(spaces.open(token).folder, durable=False)
    ids = [fast.create_session(f"会话第{i}号", [{"role": "user", "content": f"词{i}号 内容"}]) for i in range(2000)]
    page = explorer.open_page(token)
    assert len(page.rows) == LIST_LIMIT and "共 2,000 个会话" in page.list_note and "用搜索" in page.list_note
    found = explorer.refresh(token, View(), query="第1234号")
    assert [row[explorer_module.ID_COLUMN] for row in found.rows] == [ids[1234]]
    found = explorer.refresh(token, View(), query="词1234号")
    assert [hit[3] for hit in found.hits] == [ids[1234]]
    node = fast.load(ids[1234])
    node.messages.append({"role": "assistant", "content": "新词语 okapi"})
    fast.save(node)
    assert [hit[3] for hit in explorer.refresh(token, View(), query="okapi").hits] == [ids[1234]]


def test_a_5000_message_session_is_shown_a_window_at_a_time(explorer, spaces):
    token = spaces.new_token()
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"第 {i + 1} 条"} for i in range(5000)]
    sid = store_of(spaces, token).create_session("很长的会话", messages)
    page = explorer.select(token, View(), sid)
    numbers = sorted(set(page.view.chat_numbers))
    assert numbers == list(range(5000 - PAGE_SIZE + 1, 5001)) and page.window_start == 5000 - PAGE_SIZE + 1
    moved = explorer.window(token, page.view, 1234)
    assert sorted(set(moved.view.chat_numbers)) == list(range(1234, 1234 + PAGE_SIZE))
    assert "第 1234 条" in chat_text(moved) and "第 1234–1333 条" in moved.path_note
    assert explorer.window(token, moved.view, 10**9).window_start == 5000
    forked = explorer.fork(token, moved.view, 4321, "从中间分叉")
    assert len(store_of(spaces, token).load(forked.view.session_id).messages) == 4322


def test_earlier_and_latest_page_through_the_path_a_window_at_a_time(explorer, spaces):
    token = spaces.new_token()
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"第 {i + 1} 条"} for i in range(250)]
    sid = store_of(spaces, token).create_session("翻页的会话", messages)
    page = explorer.select(token, View(), sid)
    assert page.window_start == 151
    starts = []
    for _ in range(3):   # 151 → 51 → 1, and no further than the first message
        page = explorer.earlier(token, page.view)
        starts.append(page.window_start)
    assert starts == [51, 1, 1] and "第 1–100 条" in page.path_note
    assert explorer.latest(token, page.view).window_start == 151


def _wide_tree(store: SessionStore, count: int) -> str:
    """count nodes, every node with two children (a full binary tree): no chain to compress."""
    root = SessionNode(title="根", messages=[{"role": "user", "content": "0"}])
    store.save(root)
    frontier, made = [root], 1
    while made < count:
        parent = frontier.pop(0)
        for _ in range(2):
            if made >= count:
                break
            child = SessionNode(title=f"节点 {made}", parent_id=parent.session_id, fork_point=1,
                                messages=parent.messages[:1] + [{"role": "user", "content": str(made)}])
            store.save(child)
            frontier.append(child)
            made += 1
    return root.session_id


def _chain(store: SessionStore, count: int, branch_every: int = 0) -> tuple[str, str]:
    parent = SessionNode(title="根", messages=[{"role": "user", "content": "0"}])
    store.save(parent)
    root = parent.session_id
    for i in range(1, count):
        child = SessionNode(title=f"第 {i} 层", parent_id=parent.session_id, fork_point=1,
                            messages=[{"role": "user", "content": str(i)}])
        store.save(child)
        if branch_every and i % branch_every == 0:
            side = SessionNode(title=f"旁支 {i}", parent_id=parent.session_id, fork_point=1,
                               messages=[{"role": "user", "content": "side"}])
            store.save(side)
        parent = child
    return root, parent.session_id


def mermaid_edges(markdown: str) -> int | None:
    if "```mermaid" not in markdown:
        return None
    return sum("-->" in line for line in markdown.split("\n"))


def test_a_1000_node_bushy_tree_falls_back_to_text_never_an_oversized_diagram(explorer, spaces):
    token = spaces.new_token()
    root = _wide_tree(SessionStore(spaces.open(token).folder, durable=False), 1000)
    page = explorer.select(token, View(), root)
    assert len(page.tree_choices) == 1000 and "```mermaid" not in page.map_markdown
    assert "文字版" in page.map_markdown and "还有 700 个节点" in page.map_markdown


def test_a_1000_deep_chain_with_side_branches_draws_only_branch_points(explorer, spaces):
    token = spaces.new_token()
    root, leaf = _chain(SessionStore(spaces.open(token).folder, durable=False), 1000, branch_every=50)
    page = explorer.select(token, View(), leaf)
    assert len(page.tree_choices) == 1000 + 19
    edges = mermaid_edges(page.map_markdown)
    assert edges is not None and edges <= MAP_MAX_EDGES and len(page.map_markdown) <= MAP_MAX_CHARS
    assert "只画根、分岔点和叶子" in page.map_markdown and "省略 48 个" in page.map_markdown
    assert [value for label, value in page.tree_choices if "◀ 活动端" in label] == [leaf]


def test_a_deep_chain_s_labels_stop_widening_and_name_the_depth_instead(explorer, spaces):
    token = spaces.new_token()
    _, leaf = _chain(SessionStore(spaces.open(token).folder, durable=False), 300)
    page = explorer.select(token, View(), leaf)
    labels = [label for label, _ in page.tree_choices]
    assert len(labels) == 300 and "（第 299 层）" in labels[-1]
    assert max(map(len, labels)) < 120             # drawn in full, the deepest would be ~970 characters wide
    rows = [label for label, _ in page.rows]        # the list draws the first LIST_LIMIT rows of the same tree
    assert len(rows) == LIST_LIMIT and f"（第 {LIST_LIMIT - 1} 层）" in rows[-1] and max(map(len, rows)) < 120


def test_branch_points_only_keeps_root_forks_leaves_and_counts_what_it_skips():
    def node(sid, parent):
        return ({"session_id": sid, "parent_id": parent}, "", 0)
    tree = [node("r", None), node("a", "r"), node("b", "a"), node("c", "b"), node("d", "b"), node("e", "d"),
            node("f", "e")]
    kept = explorer_module.branch_points_only(tree, keep=set())
    assert [(n["session_id"], above, skipped) for n, above, skipped in kept] == [
        ("r", None, 0), ("b", "r", 1), ("c", "b", 0), ("f", "b", 2)]


def test_the_page_never_shows_a_stack_trace_when_a_file_breaks_under_it(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    path = Path(store_of(spaces, token).path_of(ids["branch_b_id"]))
    path.write_text(json.dumps({"version": 999}), encoding="utf-8")
    page = explorer.resume(token, view, "还能写吗")
    assert page.notice.startswith("⚠️") and "Traceback" not in page.notice and str(path) not in page.notice
    assert json.loads(path.read_text(encoding="utf-8")) == {"version": 999}


# ── issue 20: act where you look, tell branches apart, find any message ──────────────────────
def test_after_the_demo_tree_list_and_map_name_branches_a_and_b_with_their_first_added_line(explorer, student):
    token, ids = student
    page = explorer.select(token, View(), ids["branch_b_id"])
    labels = dict((value, label) for label, value in page.tree_choices)
    assert "分支 A" in labels[ids["branch_a_id"]] and "➕ 方案 A：为 cache_store" in labels[ids["branch_a_id"]]
    assert "分支 B" in labels[ids["branch_b_id"]] and "➕ 方案 B：改用 WeakValue" in labels[ids["branch_b_id"]]
    assert "分支 A" in page.map_markdown and "分支 B" in page.map_markdown and "➕ 方案 A" in page.map_markdown
    cells = [row[0] for row in page.rows]
    assert cells[0].startswith("🌱 修复登录服务内存泄漏") and cells[1].startswith("├─ 🌿 分支 A")
    assert cells[2].startswith("└─ 🌿 分支 B") and "1 棵树" in page.list_note
    assert page.details.startswith("### 🌿 分支 B：")


def test_the_list_groups_each_tree_and_the_newest_tree_comes_first(explorer, spaces, student):
    token, ids = student
    newer = demo_tree_branching(store_of(spaces, token))
    rows = explorer.refresh(token, View()).rows
    order = [row[explorer_module.ID_COLUMN] for row in rows]
    assert order[:3] == [newer["main_id"], newer["branch_a_id"], newer["branch_b_id"]]
    assert order[3:] == [ids["main_id"], ids["branch_a_id"], ids["branch_b_id"]]


def test_the_sibling_switch_moves_between_branches_at_the_fork_point(explorer, student):
    token, ids = student
    page = explorer.select(token, View(), ids["branch_a_id"])
    text, previous, following = page.siblings
    assert "1/2" in text and "分支 A" in text and following == ids["branch_b_id"]
    page = explorer.next_sibling(token, page.view)
    assert page.view.session_id == ids["branch_b_id"] and "2/2" in page.siblings[0]
    assert explorer.next_sibling(token, page.view).view.session_id == ids["branch_a_id"]   # wraps around
    assert explorer.previous_sibling(token, page.view).view.session_id == ids["branch_a_id"]
    root = explorer.select(token, View(), ids["main_id"])
    assert root.siblings[0] == "" and "没有兄弟" in explorer.next_sibling(token, root.view).notice


def claude_with_tool_result(word: str) -> list[dict]:
    return [{"role": "user", "content": "看看日志"},
            {"role": "assistant", "content": [{"type": "text", "text": "**好的**，我来看 `app.log`。"},
                                              {"type": "tool_use", "id": "t9", "name": "Bash",
                                               "input": {"command": "tail app.log"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9",
                                          "content": f"ERROR pool exhausted {word} at 12:00"}]},
            {"role": "assistant", "content": "连接池耗尽了。"}]


def test_full_text_search_finds_a_word_in_a_tool_result_and_a_click_jumps_to_that_message(explorer, spaces, student):
    token, _ = student
    sid = store_of(spaces, token).create_session("日志排查", claude_with_tool_result("zebraquux"))
    page = explorer.refresh(token, View(), query="ZebraQuux")
    assert page.hits == [["🌱 日志排查", "3", "ERROR pool exhausted zebraquux at 12:00", sid]]
    assert "找到 1 处" in page.hits_note
    jumped = explorer.jump(token, page.view, sid, "3")
    assert jumped.view.session_id == sid and jumped.view.focus == 3
    # the result sits in its call's block (message 2's row): the focused message is the last thing shown
    assert "📍" in chat_text(jumped) and "zebraquux" in chat_text(jumped)
    assert "第 1–3 条" in jumped.path_note and "后面还有 1 条" in jumped.path_note
    assert explorer.refresh(token, View(), query="没有这个词").hits_note.endswith("没有找到")


def test_search_counts_an_inherited_message_once_in_the_node_that_added_it(explorer, spaces, student):
    token, ids = student
    page = explorer.refresh(token, View(), query="event_listener")
    assert [(hit[1], hit[3]) for hit in page.hits] == [("4", ids["main_id"])]


def test_a_message_link_selects_the_session_and_highlights_that_message(explorer, student):
    token, ids = student
    page = explorer.open_page(token, None, ids["branch_b_id"], "4")
    assert page.view.session_id == ids["branch_b_id"] and page.view.focus == 4
    focused = [row["content"] for row in page.chat if "metadata" not in row and "📍" in row["content"]]
    assert len(focused) == 1 and focused[0].startswith("📍 **#4**") and "链接指向这条" in focused[0]
    assert page.chat[-1]["content"] == focused[0]   # the last row: the Chatbot scrolls to it
    for bad in ("0", "99", "x", None):
        assert explorer.open_page(token, None, ids["branch_b_id"], bad).view.focus is None


def test_a_link_to_someone_elses_session_says_whose_space_it_belongs_to(explorer, spaces, student):
    token, ids = student
    other = spaces.new_token()
    page = explorer.open_page(other, None, ids["branch_b_id"])
    assert page.notice.startswith("⚠️") and "不在你的空间里" in page.notice and page.view.session_id is None
    assert page.area == ""   # the top line: a page load has no control beside it


def test_a_reload_returns_to_the_remembered_session_only_if_it_is_still_in_the_space(explorer, spaces, student):
    token, ids = student
    assert explorer.open_page(token, None, None, None, ids["branch_a_id"]).view.session_id == ids["branch_a_id"]
    other = spaces.new_token()
    quiet = explorer.open_page(other, None, None, None, ids["branch_a_id"])
    assert quiet.view.session_id is None and quiet.notice == ""
    assert explorer.open_page(token, None, None, None, "../../x").view.session_id is None


def test_the_trash_lists_titles_sizes_and_when_each_was_deleted(explorer, spaces, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_a_id"]).view
    explorer.delete(token, view)
    fresh = explorer.refresh(token, View())   # a new page: no titles remembered in the view
    label, value = fresh.trash_choices[0]
    assert value == ids["branch_a_id"] and label.startswith("修复登录服务内存泄漏 · 分支 · ")
    assert re.search(r" · \d+(\.\d)? (KB|字节) · 删除于 \d\d-\d\d \d\d:\d\d:\d\d \[", label), label
    restored = explorer.restore(token, fresh.view, value)
    assert "已从回收站取回" in restored.notice and restored.area == "trash"


def test_every_action_says_which_control_its_result_belongs_to(explorer, student):
    token, ids = student
    view = explorer.select(token, View(), ids["branch_b_id"]).view
    assert explorer.fork(token, view, 2).area == "fork"
    assert explorer.resume(token, view, "再来一轮").area == "resume"
    assert explorer.export(token, view).area == "export"
    assert explorer.import_example(token, view, "没有这个").area == "import"
    failed = explorer.import_example(token, view, "没有这个")
    assert failed.report == failed.notice and failed.notice.startswith("⚠️")   # the report box never stays empty


@pytest.mark.parametrize(("text", "kept", "gone"), [
    ("**粗体** 和 `<b>代码</b>`", ["**粗体**", "`<b>代码</b>`"], []),
    ("<script>alert(1)</script>", ["&lt;script>"], ["<script"]),
    ("![远程](http://example.com/x.png)", ["&#33;[远程]"], ["!["]),
    ("[点我](javascript:alert(1))", ["[点我]&#40;javascript"], ["](javascript"]),
    ("[文档](https://example.com/d)", ["[文档](https://example.com/d)"], []),
    ("<javascript:alert(1)>", ["&lt;javascript"], ["<javascript"]),
    ("[r]: javascript:alert(1)\n[x][r]", ["&#91;r]:"], []),
    ("\\`<img src=http://e/x.png>`", ["&lt;img"], ["<img"]),
    ("```html\n<b>围栏里</b>\n```\n<i>外面</i>", ["```html\n<b>围栏里</b>\n```", "&lt;i>外面"], ["<i>"]),
])
def test_assistant_markdown_keeps_its_layout_but_nothing_in_it_can_run_or_load(text, kept, gone):
    from s11_workbench.markdown import inert_markdown
    shown = inert_markdown(text)
    assert all(piece in shown for piece in kept), shown
    assert not any(piece in shown for piece in gone), shown


def test_harness_commands_become_a_command_chip_and_the_divider_has_no_body(explorer, spaces):
    token = spaces.new_token()
    store = store_of(spaces, token)
    sid = store.create_session("命令", [
        {"role": "user", "content": "<command-name>/exit</command-name>\n <command-message>exit</command-message>\n"
                                    " <command-args></command-args>"},
        {"role": "user", "content": "<local-command-stdout>See ya!</local-command-stdout>"},
        {"role": "assistant", "content": "好"}])
    page = explorer.select(token, View(), sid)
    first = page.chat[0]["content"]
    assert "⌨️ 命令 `/exit`" in first and "command-name" not in chat_text(page)
    assert any(row.get("metadata", {}).get("title", "").endswith("📟 命令输出") and "See ya!" in row["content"]
               for row in page.chat)
    child = explorer.fork(token, page.view, 2, "继续")
    divider = [row for row in child.chat if "从这里开始" in row["content"] and "metadata" not in row]
    assert len(divider) == 1 and divider[0]["content"].startswith("* * *")


def test_a_torn_line_is_reported_in_chinese_not_in_the_json_parsers_english(explorer, spaces, tmp_path):
    token = spaces.new_token()
    example = Path(s11_import.list_examples()[-1]).read_bytes()
    upload = tmp_path / "uploads" / "torn.jsonl"
    upload.write_bytes(example + b'{"type": "message" "id": 1}\n')
    page = explorer.import_upload(token, View(), str(upload))
    assert "跳过 1 行" in page.notice and "这里缺一个逗号（第 20 列）" in page.report, page.report
    assert not re.search(r"Expecting|delimiter|Unterminated|column", page.report)


def test_an_upload_is_checked_as_soon_as_it_arrives_with_a_chinese_reason(explorer, spaces, tmp_path):
    token = spaces.new_token()
    uploads = tmp_path / "uploads"
    wrong = uploads / "notes.txt"
    wrong.write_text("hello")
    good = uploads / "ok.jsonl"
    good.write_bytes(Path(s11_import.list_examples()[-1]).read_bytes())
    assert explorer.check_upload(token, str(wrong)).startswith("⚠️ 只能导入 .jsonl、.json、.jsonl.zst、.zip 文件")
    assert explorer.check_upload(token, str(good)) == ""
    assert explorer.check_upload("forged.token", str(good)).startswith("⚠️")   # the token is checked first
    tight = Explorer(Spaces(tmp_path / "s2", limits=Limits(max_upload_bytes=10, min_free_bytes=0)),
                     export_root=str(tmp_path / "e2"), upload_root=str(uploads))
    assert "超过每个文件" in tight.check_upload(tight.spaces.new_token(), str(good))
