"""Every place that names a node calls it what the session tree calls it: search hits (title and full text), the
compare panel's pickers, summary, table and winner choices, and the lesson's tree say 分支 A / 分支 B / 分支 B.A, and
no label anywhere reads "分支 ?" (issue 42 item 8). Driven directly, without gradio."""

from __future__ import annotations

import re

import pytest

from s11_session import demo_tree_branching
from s11_tree import Forest
from s11_workbench.compare import Comparer, choice_label, side_title
from s11_workbench.explorer import (
    UNNAMED_BRANCH,
    Explorer,
    View,
    branch_label,
    names_in_forest,
    node_caption,
    tree_label,
)
from s11_workbench.lesson import Lesson, LessonView
from s11_workbench.spaces import Limits, Spaces

ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)
UNKNOWN_NAME = re.compile(r"分支 \?|分支 ？|分支 None|分支 ：")


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path / "sessions", limits=ROOMY, teacher_secret="t-secret-for-tests")


@pytest.fixture
def demo(spaces):
    """The 8.11 demo (main → A, B) plus B.A: a fork of branch B after message 7 whose first message holds a word
    found nowhere else. -> (token, {"main", "A", "B", "B.A"} -> id)."""
    token = spaces.new_token()
    store = spaces.open(token).store
    ids = demo_tree_branching(store)
    grandchild = store.fork(ids["branch_b_id"], [{"role": "user", "content": "再试 zebraquux 方案"}], at=7,
                            title="修复登录服务内存泄漏 · 分支")
    return token, {"main": ids["main_id"], "A": ids["branch_a_id"], "B": ids["branch_b_id"],
                   "B.A": grandchild.session_id}


# ── the label functions ─────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("name, shown", [("A", "分支 A"), ("B.A", "分支 B.A"), ("…B.A.C.A", "分支 …B.A.C.A"),
                                         (None, UNNAMED_BRANCH), ("", UNNAMED_BRANCH)])
def test_branch_label_never_shows_a_question_mark(name, shown):
    assert branch_label(name) == shown


def test_a_tree_label_without_a_name_says_unnamed_branch_not_a_question_mark():
    node = {"session_id": "abc123", "title": "修复", "message_count": 7, "fork_point": 5, "first_added": "方案 A"}
    child = tree_label(node, "├─ ", False)
    assert UNNAMED_BRANCH in child and not UNKNOWN_NAME.search(child) and "自第 5 条" in child
    root = tree_label({**node, "fork_point": None}, "", False)
    assert root.startswith("🌱 修复") and "分支" not in root
    assert node_caption(node, None).startswith(f"🌿 {UNNAMED_BRANCH}：")


@pytest.mark.parametrize("name, head", [("", "🌱 根"), ("B", "分支 B"), (None, UNNAMED_BRANCH)])
def test_compare_side_titles(name, head):
    assert side_title(name) == head
    node = {"session_id": "abc123", "title": "修复登录", "message_count": 9, "fork_point": 5, "first_added": "方案 B"}
    label = choice_label(node, "└─ ", name)
    assert ("分支" in label) == (name != "") and not UNKNOWN_NAME.search(label)


def test_names_in_forest_walks_only_the_trees_asked_for(spaces, demo):
    token, ids = demo
    forest = Forest(spaces.open(token).store.list_sessions())
    assert names_in_forest(forest, [ids["B.A"]]) == {ids["main"]: "", ids["A"]: "A", ids["B"]: "B", ids["B.A"]: "B.A"}
    assert names_in_forest(forest, ["not-a-session"]) == {}


# ── where the names show ────────────────────────────────────────────────────────────────
def test_full_text_hits_name_the_branch_like_the_tree(spaces, demo):
    token, ids = demo
    page = Explorer(spaces).refresh(token, View(), query="zebraquux")
    assert [(hit[0].split("：")[0], hit[3]) for hit in page.hits] == [("🌿 分支 B.A", ids["B.A"])]
    shared = Explorer(spaces).refresh(token, View(), query="WeakValueDictionary")   # in B, and B.A inherits it
    first_column = {hit[3]: hit[0] for hit in shared.hits}
    assert first_column[ids["B"]].startswith("🌿 分支 B：") and ids["B.A"] not in first_column


def test_title_search_rows_name_the_branch_like_the_tree(spaces, demo):
    token, ids = demo
    page = Explorer(spaces).refresh(token, View(), query="修复登录服务内存泄漏")
    rows = {sid: label for label, sid in page.rows}
    assert rows[ids["main"]].startswith("🌱 修复登录服务内存泄漏")
    for name in ("A", "B", "B.A"):
        assert rows[ids[name]].startswith(f"🌿 分支 {name}："), rows[ids[name]]
    assert not any(UNKNOWN_NAME.search(label) for label in rows.values())


def test_compare_names_both_sides_like_the_tree(spaces, demo):
    token, ids = demo
    comparer = Comparer(spaces)
    pickers = comparer.pickers(token, View())
    labels = {sid: label for label, sid in pickers.choices}
    assert labels[ids["main"]].startswith("修复登录服务内存泄漏 · 5 条")   # the root: no branch name
    for name in ("A", "B", "B.A"):
        assert f"分支 {name} · " in labels[ids[name]], labels[ids[name]]
    shown = comparer.compare(token, View(), ids["A"], ids["B.A"])
    assert shown.notice == ""
    assert "**A** = **分支 A**" in shown.summary and "**B** = **分支 B.A**" in shown.summary
    header = shown.table.splitlines()[0]
    assert "A · 分支 A：" in header and "B · 分支 B.A：" in header
    assert [label.split(" · ")[0] for label, _ in shown.winner_choices] == ["A：分支 A", "B：分支 B.A"]
    against_root = comparer.compare(token, View(), ids["main"], ids["B"])
    assert "**A** = **🌱 根**" in against_root.summary


def test_the_lesson_tree_names_its_branches(spaces):
    """The lesson's own tree (its radio labels) used tree_label without names: every branch read '分支 ?'."""
    lesson = Lesson(spaces)
    token = spaces.new_token()
    page = lesson.start(token, lesson.pick(token, LessonView(), "rebuild").view)
    main = page.view.session_id
    for _ in range(2):
        page = lesson.fork(token, lesson.select(token, page.view, main).view, 5, "")
    labels = [label for label, _ in page.tree_choices]
    assert len(labels) == 3 and not any(UNKNOWN_NAME.search(label) for label in labels)
    assert "🌿 分支 A：" in labels[1] and "🌿 分支 B：" in labels[2]
