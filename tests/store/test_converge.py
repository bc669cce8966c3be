"""Fork + converge at the store level: compare two nodes of one tree, converge them into a node that records the
decision, labels on messages, the version-5 file, the book's code reading it, and check() on a dangling link.

Every refused input is checked the way a reader would notice damage: the folder's bytes before and after.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

import s11_book
import s11_format
import s11_import
import s11_workspace
from s11_session import (
    FORMAT_VERSION,
    ConflictError,
    CorruptSession,
    InvalidMessage,
    SessionError,
    SessionNode,
    SessionNotFound,
    SessionStore,
    UnsupportedVersion,
    demo_tree_branching,
)


@pytest.fixture
def store(tmp_path):
    return SessionStore(tmp_path / "sessions")


@pytest.fixture
def demo(store):
    """The chapter's story: main (5) -> A (7) and B (9)."""
    ids = demo_tree_branching(store)
    return ids["main_id"], ids["branch_a_id"], ids["branch_b_id"]


def folder_bytes(store) -> dict:
    """Every file under the store folder (lock file aside) -> its bytes."""
    out = {}
    for root, _, files in os.walk(store.storage_dir):
        for name in files:
            path = os.path.join(root, name)
            if name not in (".lock", ".journal.jsonl"):   # the journal only grows (tests/store/test_journal.py)
                out[os.path.relpath(path, store.storage_dir)] = Path(path).read_bytes()
    return out


# ── compare ───────────────────────────────────────────────────────────────────────────────
class TestCompare:
    def test_siblings_share_the_parents_history(self, store, demo):
        main, a, b = demo
        result = store.compare(a, b)
        assert (result["ancestor"], result["relation"], result["common"]) == (main, "siblings", 5)
        assert [m["content"][:5] for m in result["only_a"]] == ["方案 A：", "可以，按方"]
        assert len(result["only_b"]) == 4 and result["only_b"][0]["content"].startswith("方案 B")
        assert "兄弟分支" in result["note"] and (result["revision_a"], result["revision_b"]) == (1, 2)
        assert (result["workspace_a"], result["workspace_b"], result["workspace_diff"]) == (None, None, None)

    def test_cousins_meet_at_the_nearest_common_ancestor(self, store, demo):
        main, a, b = demo
        a1 = store.fork(a, [{"role": "user", "content": "A 再往下"}])
        b1 = store.fork(b, [{"role": "user", "content": "B 再往下"}], at=6)
        result = store.compare(a1.session_id, b1.session_id)
        assert (result["ancestor"], result["relation"], result["common"]) == (main, "cousins", 5)
        assert [m["content"] for m in result["only_a"]][-1] == "A 再往下"
        assert [m["content"] for m in result["only_b"]][-1] == "B 再往下" and len(result["only_b"]) == 2
        assert "最近的共同祖先" in result["note"] and main in result["note"]

    def test_a_node_and_its_descendant_either_way_round(self, store, demo):
        main, _, b = demo
        down = store.compare(main, b)
        assert (down["ancestor"], down["relation"], down["common"], down["only_a"]) == (main, "a_ancestor", 5, [])
        assert len(down["only_b"]) == 4
        up = store.compare(b, main)
        assert (up["ancestor"], up["relation"], up["common"], up["only_b"]) == (main, "b_ancestor", 5, [])

    def test_a_fork_at_an_earlier_message_shares_only_that_prefix(self, store, demo):
        main, a, _ = demo
        early = store.fork(main, [{"role": "user", "content": "换个思路"}], at=3)
        result = store.compare(a, early.session_id)
        assert (result["ancestor"], result["common"]) == (main, 3)
        assert len(result["only_a"]) == 4 and result["only_b"][-1]["content"] == "换个思路"

    def test_common_counts_equal_messages_not_just_the_tree(self, store, demo):
        _, a, b = demo
        node = store.load(b)
        node.messages[2] = {"role": "assistant", "content": "（原地改写的第 3 条）"}
        store.save(node)
        assert store.compare(a, b)["common"] == 2

    def test_unrelated_nodes_share_nothing_and_say_so(self, store, demo):
        _, a, _ = demo
        same_start = store.load(a).messages[:2]
        other = store.create_session("另一件事", list(same_start))
        result = store.compare(a, other)
        assert (result["ancestor"], result["relation"], result["common"]) == (None, "unrelated", 0)
        assert len(result["only_a"]) == 7 and len(result["only_b"]) == 2
        assert "不在同一棵树上" in result["note"]

    def test_the_same_node_twice_or_a_missing_one_is_refused(self, store, demo):
        _, a, _ = demo
        with pytest.raises(SessionError, match="同一个会话"):
            store.compare(a, a)
        with pytest.raises(SessionNotFound, match="feedbeef0000"):
            store.compare(a, "feedbeef0000")
        with pytest.raises(SessionError, match="会话 ID 不对"):
            store.compare("../etc", a)

    def test_workspace_snapshots_differ_file_by_file(self, store, demo, tmp_path):
        _, a, b = demo
        code = tmp_path / "code"
        code.mkdir()
        (code / "cache.py").write_text("lru = 1\n")
        for sid, text in ((a, "lru = 1\n"), (b, "weak = 1\n")):
            (code / "cache.py").write_text(text)
            node = store.load(sid)
            node.workspace = s11_workspace.snapshot(code)
            store.save(node)
        result = store.compare(a, b)
        assert result["workspace_a"]["files"] != result["workspace_b"]["files"]
        assert any("cache.py" in line for line in result["workspace_diff"])


# ── converge ──────────────────────────────────────────────────────────────────────────────
class TestConverge:
    def test_the_converge_node_records_the_decision_and_where_everything_came_from(self, store, demo):
        main, a, b = demo
        before = {name: data for name, data in folder_bytes(store).items()}
        node = store.converge(b, [a], "压测数据支持方案 B；A 的 LRU 上限也留着", carry=[(a, 6)])
        assert (node.parent_id, node.fork_point, node.converged_from) == (b, 9, [a])
        assert node.messages[:9] == store.load(b).messages
        carried = node.messages[9]
        assert carried["origin"] == {"session_id": a, "index": 6}
        assert carried["content"] == store.load(a).messages[5]["content"]
        decision = node.messages[10]
        assert (decision["role"], decision["content"]) == ("user", "压测数据支持方案 B；A 的 LRU 上限也留着")
        assert decision["converge"]["chosen"]["session_id"] == b
        assert [o["session_id"] for o in decision["converge"]["others"]] == [a]
        after = folder_bytes(store)
        assert {name: after[name] for name in before} == before, "no file saved before changed"
        reread = SessionStore(store.storage_dir).load(node.session_id)
        assert reread.converged_from == [a] and reread.messages == node.messages
        data = json.loads(Path(store.path_of(node.session_id)).read_text("utf-8"))
        assert data["version"] == 5 and data["converged_from"] == [a]
        summary = {s["session_id"]: s for s in store.list_sessions()}
        assert summary[node.session_id]["converged_from"] == [a] and summary[a]["converged_from"] == []

    def test_carry_order_is_kept_and_several_branches_converge(self, store, demo):
        main, a, b = demo
        c = store.fork(main, [{"role": "assistant", "content": "方案 C"}]).session_id
        node = store.converge(b, [a, c], "B 胜出", carry=[f"{c}:6", (a, 7), (a, 6)], title="最终方案")
        assert node.title == "最终方案" and node.converged_from == [a, c]
        assert [m["origin"] for m in node.messages[9:12]] == [
            {"session_id": c, "index": 6}, {"session_id": a, "index": 7}, {"session_id": a, "index": 6}]

    @pytest.mark.parametrize("case", [
        "unknown chosen", "bad chosen id", "unknown other", "other from another tree", "chosen among others",
        "no others", "duplicate others", "empty decision", "blank decision", "decision not text",
        "carry index zero", "carry index past the end", "carry from the chosen node", "carry from a stranger",
        "carry twice", "carry not a pair", "carry K not a number", "title too long",
    ])
    def test_every_bad_input_is_refused_in_chinese_and_nothing_is_written(self, store, demo, case):
        main, a, b = demo
        stranger = store.create_session("别的树", [{"role": "user", "content": "x"}])
        calls = {
            "unknown chosen": (("feedbeef0000", [a], "d"), {}, "未找到选定的会话"),
            "bad chosen id": (("../x", [a], "d"), {}, "会话 ID 不对"),
            "unknown other": ((b, ["feedbeef0000"], "d"), {}, "未找到被收敛的会话"),
            "other from another tree": ((b, [stranger], "d"), {}, "不在同一棵树上"),
            "chosen among others": ((b, [a, b], "d"), {}, "不能收敛进自己"),
            "no others": ((b, [], "d"), {}, "至少要有一个"),
            "duplicate others": ((b, [a, a], "d"), {}, "重复"),
            "empty decision": ((b, [a], ""), {}, "决定不能为空"),
            "blank decision": ((b, [a], "  \n"), {}, "决定不能为空"),
            "decision not text": ((b, [a], None), {}, "决定不能为空"),
            "carry index zero": ((b, [a], "d"), {"carry": [(a, 0)]}, "没有第 0 条"),
            "carry index past the end": ((b, [a], "d"), {"carry": [(a, 8)]}, "只有 7 条消息，没有第 8 条"),
            "carry from the chosen node": ((b, [a], "d"), {"carry": [(b, 6)]}, "选定的会话自己"),
            "carry from a stranger": ((b, [a], "d"), {"carry": [(main, 1)]}, "不在被收敛的分支里"),
            "carry twice": ((b, [a], "d"), {"carry": [(a, 6), (a, 6)]}, "带了两次"),
            "carry not a pair": ((b, [a], "d"), {"carry": [(a, 6, 7)]}, "会话 ID, 第几条"),
            "carry K not a number": ((b, [a], "d"), {"carry": [f"{a}:六"]}, "K 必须是整数"),
            "title too long": ((b, [a], "d"), {"title": "长" * 201}, "标题最多 200"),
        }
        args, kwargs, message = calls[case]
        before = folder_bytes(store)
        with pytest.raises(SessionError, match=message):
            store.converge(*args, **kwargs)
        assert folder_bytes(store) == before

    def test_a_comparison_that_went_stale_is_a_conflict_and_writes_nothing(self, store, demo):
        _, a, b = demo
        seen = store.compare(a, b)
        other_tab = SessionStore(store.storage_dir).load(b)
        other_tab.messages.append({"role": "user", "content": "别的标签页刚追加的一轮"})
        SessionStore(store.storage_dir).save(other_tab)
        before = folder_bytes(store)
        with pytest.raises(ConflictError, match="重新对比"):
            store.converge(b, [a], "基于过期的对比", revisions={a: seen["revision_a"], b: seen["revision_b"]})
        assert folder_bytes(store) == before
        fresh = store.compare(a, b)
        node = store.converge(b, [a], "重新对比之后", revisions={a: fresh["revision_a"], b: fresh["revision_b"]})
        assert node.messages[9]["content"] == "别的标签页刚追加的一轮"

    def test_a_stale_copy_of_the_converge_node_cannot_overwrite_a_newer_save(self, store, demo):
        _, a, b = demo
        node = store.converge(b, [a], "B")
        first, second = store.load(node.session_id), SessionStore(store.storage_dir).load(node.session_id)
        first.messages.append({"role": "assistant", "content": "先存的一轮"})
        store.save(first)
        second.messages.append({"role": "assistant", "content": "后存的一轮"})
        evidence = Path(store.path_of(node.session_id)).read_bytes()
        with pytest.raises(ConflictError):
            SessionStore(store.storage_dir).save(second)
        assert Path(store.path_of(node.session_id)).read_bytes() == evidence
        assert store.load(node.session_id).converged_from == [a]

    def test_a_big_converge_node_is_chunked_and_keeps_converged_from_in_its_head(self, tmp_path):
        store = SessionStore(tmp_path / "big", chunk_threshold=2048, chunk_bytes=1024)
        root = store.create_session("大", [{"role": "user", "content": f"第 {i} 条" + "字" * 60} for i in range(80)])
        a = store.fork(root, [{"role": "assistant", "content": "方案 A"}]).session_id
        b = store.fork(root, [{"role": "assistant", "content": "方案 B"}]).session_id
        node = store.converge(b, [a], "选 B", carry=[(a, 81)])
        head = json.loads(Path(store.path_of(node.session_id)).read_bytes().split(b"\n", 1)[0])
        assert head["version"] == 5 and head["converged_from"] == [a]
        fresh = SessionStore(store.storage_dir)
        assert fresh.load(node.session_id).messages == node.messages
        assert {s["session_id"]: s["converged_from"] for s in fresh.list_sessions()}[node.session_id] == [a]
        assert store.check() == []


# ── the file: version 5, migration, the book's code, newer files, check() ──────────────────────
class TestFile:
    def test_a_version_3_file_migrates_and_an_ordinary_node_stays_version_3_byte_for_byte(self, store, demo):
        _, a, _ = demo
        path = Path(store.path_of(a))
        raw = path.read_bytes()
        assert json.loads(raw)["version"] == 3 and b"converged_from" not in raw
        migrated = s11_format.migrate(json.loads(raw), str(path))
        assert (migrated["version"], migrated["converged_from"]) == (FORMAT_VERSION, [])
        node = SessionStore(store.storage_dir).load(a)
        assert node.converged_from == []
        store.save(node)
        again = json.loads(path.read_bytes())
        assert again["version"] == 3 and "converged_from" not in again
        assert path.read_bytes() == raw.replace(b'"revision": 1,', b'"revision": 2,', 1)

    def test_a_chapter_version_1_file_reads_as_an_ordinary_node(self, store):
        path = Path(store.storage_dir) / "0123456789ab.json"
        path.write_text(json.dumps({"session_id": "0123456789ab", "title": "书里的", "parent_id": None,
                                    "messages": [{"role": "user", "content": "hi"}], "created_at": "2026"}))
        assert store.load("0123456789ab").converged_from == []

    def test_the_books_code_reads_a_converge_nodes_file_and_ignores_the_keys_it_does_not_know(self, store, demo):
        _, a, b = demo
        node = store.converge(b, [a], "选 B", carry=[(a, 6)])
        book = s11_book.SessionStore(store.storage_dir)
        read = book.load(node.session_id)
        assert (read.title, read.parent_id, read.messages) == (node.title, b, node.messages)
        listed = {s["session_id"]: s for s in book.list_sessions()}
        assert listed[node.session_id]["message_count"] == 11
        assert "🔀" in book.export_markdown(node.session_id) or "选 B" in book.export_markdown(node.session_id)

    def test_a_converge_file_newer_than_the_module_is_refused_unchanged(self, store, demo):
        _, a, b = demo
        node = store.converge(b, [a], "选 B")
        path = Path(store.path_of(node.session_id))
        data = json.loads(path.read_bytes())
        data["version"] = FORMAT_VERSION + 1
        path.write_text(json.dumps(data, ensure_ascii=False, indent=2), "utf-8")
        evidence = path.read_bytes()
        with pytest.raises(UnsupportedVersion, match=f"version {FORMAT_VERSION + 1}"):
            SessionStore(store.storage_dir).load(node.session_id)
        with pytest.raises(UnsupportedVersion):
            store.save(SessionNode(node.session_id, "覆盖它"))
        assert path.read_bytes() == evidence
        assert "newer_version" in [p.kind for p in store.check()]

    def test_a_malformed_converged_from_in_a_file_is_corrupt(self, store, demo):
        _, a, b = demo
        node = store.converge(b, [a], "选 B")
        path = Path(store.path_of(node.session_id))
        data = json.loads(path.read_bytes())
        data["converged_from"] = ["../etc/passwd"]
        path.write_text(json.dumps(data), "utf-8")
        with pytest.raises(CorruptSession, match="converged_from"):
            SessionStore(store.storage_dir).load(node.session_id)

    def test_a_node_cannot_be_saved_converging_into_itself(self, store, demo):
        _, a, b = demo
        node = store.load(b)
        node.converged_from = [b]
        with pytest.raises(InvalidMessage, match="converged_from"):
            store.save(node)

    @pytest.mark.parametrize("purge", [False, True])
    def test_check_reports_a_converged_from_naming_a_missing_node(self, store, demo, purge):
        _, a, b = demo
        node = store.converge(b, [a], "选 B", carry=[(a, 6)])
        assert store.check() == []
        store.delete(a, purge=purge)
        problems = store.check()
        assert [(p.kind, os.path.basename(p.path)) for p in problems] == [
            ("missing_converged", f"{node.session_id}.json")]
        assert a in problems[0].detail and "收敛" in problems[0].detail
        assert store.load(node.session_id).messages[9]["origin"]["session_id"] == a   # nothing lost


# ── labels ────────────────────────────────────────────────────────────────────────────────
class TestLabels:
    def test_a_label_is_kept_in_the_file_and_shown_in_the_tree(self, store, demo):
        main, a, b = demo
        node = store.label(b, 8, "  最终方案 ")
        assert node.messages[7]["label"] == "最终方案"
        fresh = SessionStore(store.storage_dir)
        assert fresh.load(b).messages[7]["label"] == "最终方案"
        assert {s["session_id"]: s["labels"] for s in fresh.list_sessions()}[b] == [[8, "最终方案"]]
        assert "🏷️ #8 最终方案" in fresh.render_tree(main)
        assert store.load(main).messages == store.load(a).messages[:5], "the parent's copy is untouched"

    def test_a_child_inherits_the_label_and_the_tree_shows_it_once(self, store, demo):
        main, _, b = demo
        store.label(main, 4, "从这里走错了")
        child = store.fork(main, [{"role": "user", "content": "换个方向"}])
        assert child.messages[3]["label"] == "从这里走错了"
        lines = [line for line in store.render_tree(main).splitlines() if "从这里走错了" in line]
        assert len(lines) == 1 and main in lines[0]

    def test_clearing_a_label_and_refusals(self, store, demo):
        _, a, b = demo
        store.label(b, 8, "最终方案")
        store.label(b, 8, "")
        assert "label" not in store.load(b).messages[7]
        before = folder_bytes(store)
        for number, text, message in ((0, "x", "没有第 0 条"), (10, "x", "没有第 10 条"), (True, "x", "没有第"),
                                      (2, "长" * 81, "最多 80"), (2, None, "必须是文字")):
            with pytest.raises(SessionError, match=message):
                store.label(b, number, text)
        with pytest.raises(ConflictError):
            store.label(b, 2, "过期", revision=1)
        assert folder_bytes(store) == before

    def test_labels_of_a_big_session_come_from_its_head(self, tmp_path):
        store = SessionStore(tmp_path / "big", chunk_threshold=2048, chunk_bytes=1024)
        sid = store.create_session("大", [{"role": "user", "content": "字" * 60} for _ in range(80)])
        store.label(sid, 3, "书签")
        head = json.loads(Path(store.path_of(sid)).read_bytes().split(b"\n", 1)[0])
        assert head["version"] == 4 and head["labels"] == [[3, "书签"]]
        assert SessionStore(store.storage_dir).list_sessions()[0]["labels"] == [[3, "书签"]]

    def test_a_pi_label_becomes_a_message_label(self, tmp_path, store):
        entries = [{"type": "session", "version": 3, "id": "pi-1", "timestamp": "2026-01-01T00:00:00.000Z",
                    "cwd": "/w"},
                   {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
                    "message": {"role": "user", "content": "修一下"}},
                   {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:02.000Z",
                    "message": {"role": "assistant", "content": [{"type": "text", "text": "好"}]}},
                   {"type": "label", "id": "l1", "parentId": "a1", "targetId": "a1", "label": "最终方案"}]
        path = tmp_path / "pi.jsonl"
        path.write_text("\n".join(json.dumps(e, ensure_ascii=False) for e in entries) + "\n", "utf-8")
        report = s11_import.import_file(str(path), store)
        node = store.load(report.node_ids[0])
        assert node.messages[1]["label"] == "最终方案"
        assert [[2, "最终方案"]] == {s["session_id"]: s["labels"] for s in store.list_sessions()}[node.session_id]
        assert "🏷️ #2 最终方案" in store.render_tree()
        assert "🏷️ 最终方案" in store.export_markdown(node.session_id)


# ── tree drawing and export card ──────────────────────────────────────────────────────────
class TestDrawingAndExport:
    def test_the_text_tree_draws_the_dashed_link_and_the_converged_mark(self, store, demo):
        main, a, b = demo
        node = store.converge(b, [a], "选 B")
        lines = store.render_tree(main).splitlines()
        line_a = next(line for line in lines if f"[{a}]" in line and "收敛了" not in line)
        line_c = next(line for line in lines if f"[{node.session_id}] 10 条" in line)
        assert line_a.endswith(f"已收敛到 [{node.session_id}]")
        assert f"⇠┄ 收敛了 [{a}]" in line_c and line_c.startswith("    └── ")

    def test_the_export_card_names_the_decision_the_sources_and_the_carried_messages_redacted(self, store, demo):
        _, a, b = demo
        secret = "sk-" + "a1b2c3d4e5" * 3
        node = store.converge(b, [a], f"选 B，临时密钥 {secret} 已作废", carry=[(a, 6)])
        for export in (store.export_markdown, store.export_html):
            text = export(node.session_id)
            assert "🔀 收敛" in text and a in text and b in text and "带自" in text and "第 6 条" in text
            assert secret not in text and "已脱敏" in text
        assert secret in store.export_markdown(node.session_id, redact=False)
        md = store.export_markdown(node.session_id)
        card = md.split("> **🔀 收敛**", 1)[1].split("\n\n", 1)[0]
        assert "选 B" in card and f"`{a}`" in card and "第 10 条" in card

    def test_an_ordinary_export_has_no_card(self, store, demo):
        _, _, b = demo
        markdown, page = store.export_markdown(b), store.export_html(b)
        assert "🔀" not in markdown and '<section class="converge-card"' not in page


def test_infinite_threshold_still_writes_plain_version_5(tmp_path):
    store = SessionStore(tmp_path / "s", chunk_threshold=math.inf)
    ids = demo_tree_branching(store)
    node = store.converge(ids["branch_b_id"], [ids["branch_a_id"]], "选 B")
    assert json.loads(Path(store.path_of(node.session_id)).read_bytes())["version"] == 5
