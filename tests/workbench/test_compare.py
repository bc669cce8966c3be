"""The explorer's compare / converge panel, driven directly (no gradio): default pair after the 8.11 demo, the aligned
table, converging from the comparison, a stale comparison, refusals, hostile text, and the map's dashed edge."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from s11_session import demo_tree_branching
from s11_workbench.compare import Comparer, Pair, carry_for
from s11_workbench.explorer import SHELF, Explorer, View
from s11_workbench.spaces import Limits, Spaces

ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)
MAP_LINE = re.compile(
    r'^(%%\{init: \{"flowchart": \{"wrappingWidth": \d+\}\}\}%%'
    r'|graph TD'
    r'|    n\d+\["[^"\n]*"\]'
    r'|    n\d+ -->\|"[^"\n]*"\| n\d+'
    r'|    n\d+ -\.->\|"🔀 收敛"\| n\d+'
    r'|    classDef \w+ [\w:#,-]+'
    r'|    class n\d+ \w+'
    r'|    click n\d+ href "\?session=[A-Za-z0-9_-]+")$'
)


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path / "sessions", limits=ROOMY, teacher_secret="t-secret-for-tests")


@pytest.fixture
def student(spaces):
    token = spaces.new_token()
    return token, demo_tree_branching(spaces.open(token).store)


def folder_bytes(folder: Path) -> dict:
    return {str(p): p.read_bytes() for p in Path(folder).rglob("*") if p.is_file() and p.name != ".lock"}


def test_after_the_demo_the_default_pair_is_branch_a_against_branch_b(spaces, student):
    token, ids = student
    found = Comparer(spaces).pickers(token, View())
    assert (found.a, found.b, found.note) == (ids["branch_a_id"], ids["branch_b_id"], "")
    labels = [label for label, _ in found.choices]
    assert len(labels) == 3 and "方案 A" in labels[1] and labels[2].startswith("└─")
    chosen_main = Comparer(spaces).pickers(token, View(session_id=ids["main_id"]))
    assert chosen_main.b == ids["main_id"] and chosen_main.a in (ids["branch_a_id"], ids["branch_b_id"])


def test_the_comparison_collapses_the_prefix_and_aligns_the_two_deltas_by_turn(spaces, student):
    token, ids = student
    shown = Comparer(spaces).compare(token, View(), ids["branch_a_id"], ids["branch_b_id"])
    assert shown.notice == "" and shown.shared_label == "前 5 条相同（点开看）"
    assert "兄弟分支" in shown.summary and "之后 2 条消息、0 次工具调用" in shown.summary
    assert "之后 4 条消息" in shown.summary
    rows = [line for line in shown.table.splitlines() if re.match(r"\| \d+ \|", line)]
    assert [row.split(" | ")[0] for row in rows] == ["| 6", "| 7", "| 8", "| 9"]
    assert "方案 A" in rows[0] and "方案 B" in rows[0] and rows[2].split(" | ")[1] == "—"
    assert shown.shared.count("\n- ") == 5 and "共同祖先" in shown.shared
    assert "没有记录工作区" in shown.workspace
    assert shown.winner == ids["branch_b_id"] and isinstance(shown.pair, Pair)
    assert [value for _, value in carry_for(shown.pair, shown.winner)] == [f"{ids['branch_a_id']}:6",
                                                                          f"{ids['branch_a_id']}:7"]


def test_converging_from_the_comparison_writes_one_node_and_the_explorer_shows_it(spaces, student, tmp_path):
    token, ids = student
    a, b = ids["branch_a_id"], ids["branch_b_id"]
    comparer = Comparer(spaces)
    shown = comparer.compare(token, View(), a, b)
    notice, new_id = comparer.converge(token, View(), shown.pair, b, [f"{a}:6"], "压测支持 B；留下 A 的 LRU 上限")
    assert new_id and notice.startswith("✅ 已收敛") and "带过来 1 条" in notice
    store = spaces.open(token).store
    node = store.load(new_id)
    assert node.converged_from == [a] and node.messages[9]["origin"] == {"session_id": a, "index": 6}
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    page = explorer.select(token, View(), new_id)
    labels = dict((value, label) for label, value in page.tree_choices)
    assert f"已收敛到 [{new_id}]" in labels[a] and f"⇠┄ 收敛了 [{a}]" in labels[new_id]
    source = page.map_markdown.split("```mermaid\n", 1)[1].split("\n```", 1)[0]   # the diagram, not the text version after it
    assert all(MAP_LINE.match(line) for line in source.splitlines()), source
    assert re.search(r'-\.->\|"🔀 收敛"\|', source) and "已收敛到" in source
    exported = explorer.export(token, page.view)
    assert "🔀 收敛" in exported.preview and "带自" in exported.preview
    assert "🔀 收敛" in page.chat[-1]["content"] and any("带自" in str(row.get("content")) for row in page.chat)


def test_a_stale_comparison_is_refused_and_nothing_is_written(spaces, student, tmp_path):
    token, ids = student
    a, b = ids["branch_a_id"], ids["branch_b_id"]
    comparer = Comparer(spaces)
    shown = comparer.compare(token, View(), a, b)
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    page = explorer.select(token, View(), b)
    explorer.resume(token, page.view, "另一个标签页追加的一轮")
    before = folder_bytes(spaces.open(token).store.storage_dir)
    notice, new_id = comparer.converge(token, View(), shown.pair, b, [], "基于过期的对比")
    assert new_id is None and "重新对比" in notice
    assert folder_bytes(spaces.open(token).store.storage_dir) == before


@pytest.mark.parametrize("case", ["no comparison", "bad winner", "stray carry", "empty decision", "shelf", "token"])
def test_refusals_say_what_was_wrong_and_write_nothing(spaces, student, case):
    token, ids = student
    a, b = ids["branch_a_id"], ids["branch_b_id"]
    comparer = Comparer(spaces)
    pair = comparer.compare(token, View(), a, b).pair
    args = {"no comparison": (token, View(), None, b, [], "d"),
            "bad winner": (token, View(), pair, ids["main_id"], [], "d"),
            "stray carry": (token, View(), pair, b, [f"{b}:6"], "d"),
            "empty decision": (token, View(), pair, b, [], "   "),
            "shelf": (token, View(source=SHELF), pair, b, [], "d"),
            "token": ("not-a-token", View(), pair, b, [], "d")}[case]
    expected = {"no comparison": "先点「⚖️ 对比」", "bad winner": "胜出的一支", "stray carry": "另一支自己的消息",
                "empty decision": "决定不能为空", "shelf": "我的空间", "token": "⚠️"}[case]
    before = folder_bytes(spaces.open(token).store.storage_dir)
    notice, new_id = comparer.converge(*args)
    assert new_id is None and expected in notice
    assert folder_bytes(spaces.open(token).store.storage_dir) == before


def test_hostile_text_stays_text_in_the_table_and_the_labels(spaces):
    token = spaces.new_token()
    store = spaces.open(token).store
    root = store.create_session("<b>根</b>", [{"role": "user", "content": "start"}])
    a = store.fork(root, [{"role": "assistant", "content": "<script>alert(1)</script> | cell | break"}])
    b = store.fork(root, [{"role": "assistant", "content": "![x](http://example.com/x.png)"}],
                   title='"]; click n0 call alert(1)')
    shown = Comparer(spaces).compare(token, View(), a.session_id, b.session_id)
    assert "<script>" not in shown.table and "](http" not in shown.table
    rows = [line for line in shown.table.splitlines() if line.startswith("| 2 |")]
    assert len(rows) == 1 and rows[0].count(" | ") == 2 and "\\| cell \\|" in rows[0]
    assert "<b>" not in shown.summary


def test_a_label_from_the_panel_shows_in_the_path_the_tree_and_the_map(spaces, student, tmp_path):
    token, ids = student
    b = ids["branch_b_id"]
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    page = explorer.select(token, View(), b)
    view, notice = Comparer(spaces).label(token, page.view, 8, "最终方案")
    assert notice.startswith("🏷️ 已给第 8 条加上标签") and view.revision == page.view.revision + 1
    page = explorer.render(token, view, None, notice)
    assert "🏷️ #8 最终方案" in dict((v, k) for k, v in page.tree_choices)[b]
    assert "🏷️ #8 最终方案" in page.map_markdown
    assert any("🏷️ 最终方案" in str(row.get("content")) for row in page.chat)
    assert spaces.open(token).store.load(b).messages[7]["label"] == "最终方案"


def test_a_label_on_a_stale_page_or_a_bad_number_is_refused_and_nothing_is_written(spaces, student, tmp_path):
    token, ids = student
    b = ids["branch_b_id"]
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    stale = explorer.select(token, View(), b).view
    explorer.resume(token, stale, "别的标签页追加的一轮")
    before = folder_bytes(spaces.open(token).store.storage_dir)
    view, notice = Comparer(spaces).label(token, stale, 8, "过期")
    assert view.revision == -1 and "别的标签页" in notice
    for number, text, expected in ((0, "x", "没有第 0 条"), ("三", "x", "整数"), (2, "长" * 81, "最多 80")):
        _, notice = Comparer(spaces).label(token, explorer.select(token, View(), b).view, number, text)
        assert expected in notice
    _, notice = Comparer(spaces).label(token, View(), 2, "x")
    assert "先在列表或会话树里选一个会话" in notice
    assert folder_bytes(spaces.open(token).store.storage_dir) == before


# ── issue 44: usage totals side by side ──────────────────────────────────────────────────────
def test_compare_shows_the_two_branches_usage_side_by_side(spaces):
    from s11_session import SessionNode
    token = spaces.new_token()
    store = spaces.open(token).store

    def reply(text, inp, out, calls=0, ms=None):
        message = {"role": "assistant", "content": [{"type": "text", "text": text}] + [
            {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {}} for i in range(calls)],
            "usage": {"input": inp, "output": out, "cache_read": 10}}
        if ms:
            message["duration_ms"] = ms
        return message

    prefix = [{"role": "user", "content": "方案？"}, reply("想想", 100, 5)]
    root = SessionNode(session_id="root", title="根", messages=prefix)
    store.save(root)
    store.save(SessionNode(session_id="cheap", title="便宜", parent_id="root", fork_point=2,
                           messages=[*prefix, {"role": "user", "content": "用 A"}, reply("A", 1000, 50, 1, 2000)]))
    store.save(SessionNode(session_id="dear", title="贵", parent_id="root", fork_point=2,
                           messages=[*prefix, {"role": "user", "content": "用 B"}, reply("B", 30000, 900, 3, 64000),
                                     {"role": "tool", "content": "ok"}, {"role": "assistant", "content": "没有数"}]))
    shown = Comparer(spaces).compare(token, View(), "cheap", "dear")
    rows = {line.split(" | ")[0].strip("| "): [cell.strip(" |") for cell in line.split(" | ")[1:]]
            for line in shown.summary.splitlines() if line.startswith("| ") and "---" not in line}
    assert rows["输入 token"] == ["1,000", "30,000", "1,100", "30,100"]
    assert rows["输出 token"] == ["50", "900", "55", "905"]
    assert rows["缓存读"] == ["10", "10", "20", "20"]
    assert rows["工具调用"] == ["1", "3", "1", "3"] and rows["耗时"] == ["2.0 秒", "64.0 秒", "2.0 秒", "64.0 秒"]


def test_compare_says_when_no_usage_was_recorded(spaces, student):
    token, ids = student
    shown = Comparer(spaces).compare(token, View(), ids["branch_a_id"], ids["branch_b_id"])
    assert "两边都没有记录 token 数" in shown.summary and "| 输入 token" not in shown.summary


def test_the_explorer_details_show_a_nodes_and_its_branchs_usage(spaces):
    from s11_session import SessionNode
    from s11_workbench.explorer import Explorer
    token = spaces.new_token()
    store = spaces.open(token).store
    first = [{"role": "user", "content": "问"},
             {"role": "assistant", "content": "答", "usage": {"input": 1000, "output": 20}}]
    store.save(SessionNode(session_id="root", title="根", messages=first))
    store.save(SessionNode(session_id="kid", title="分支", parent_id="root", fork_point=2, messages=[
        *first, {"role": "user", "content": "再问"},
        {"role": "assistant", "content": "再答", "usage": {"input": 3000, "output": 70, "cache_read": 2500},
         "duration_ms": 4000}]))
    page = Explorer(spaces).select(token, View(), "kid")
    assert "💰 本节点：输入 3,000 · 输出 70 · 缓存读 2,500 · 工具调用 0 次 · 耗时 4.0 秒" in page.details
    assert "💰 整条分支：输入 4,000 · 输出 90 · 缓存读 2,500" in page.details
    plain = Explorer(spaces).select(token, View(), "root")
    assert "💰 本节点：输入 1,000 · 输出 20" in plain.details
