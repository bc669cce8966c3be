"""The tree JSONL round trip: every tree shape the store can make comes back with identical nodes; importing twice
writes nothing; a newer version is refused; bad lines are reported by number and nothing is written; and the
command line (by subprocess) exports, reviews and imports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import s11_import
import s11_tree_export as te
from s11_format import UnsupportedVersion
from s11_import import tree_jsonl
from s11_session import SessionStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from share_trees import SECRETS, ConvergedStore, hostile_tree, three_branches  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, str(REPO / "code" / "s11_cli.py")]


def snapshot(store: SessionStore) -> dict:
    """Every node as the store reads it back (revision aside: a fresh store numbers its own saves)."""
    out = {}
    for summary in store.list_sessions():
        node = store.load(summary["session_id"])
        out[node.session_id] = {**node.to_dict(), "created_ns": node.created_ns,
                                "converged_from": getattr(node, "converged_from", None) or None}
    return out


def files_of(folder: Path) -> dict:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
            and p.name != ".lock"}


def export(store, node, path: Path, scope="tree", **options) -> Path:
    path.write_text(tree_jsonl.render_jsonl(te.prepare(store, node, scope, **options)), encoding="utf-8")
    return path


def every_shape(store: SessionStore, workspace: Path) -> list[str]:
    """Roots of trees of every shape the store can make."""
    roots = [three_branches(store)["root"]]
    chain = store.create_session("链", [{"role": "user", "content": "1"}, {"role": "assistant", "content": "2"}])
    empty = store.fork(chain, [], title="分叉在末尾、没有新消息")
    zero = store.fork(empty.session_id, [{"role": "user", "content": "从头开始"}], at=0, title="分叉在第 0 条")
    store.fork(zero.session_id, [{"role": "user", "content": "孙"}], title="孙")
    edited = store.fork(chain, [{"role": "user", "content": "3"}], title="改过前缀")
    edited.messages[0] = {"role": "user", "content": "1 改过"}
    store.save(edited)
    roots.append(chain)
    orphan_parent = store.create_session("将被删除的父节点", [{"role": "user", "content": "父"}])
    orphan = store.fork(orphan_parent, [{"role": "user", "content": "孤儿分支"}], title="孤儿")
    store.delete(orphan_parent)
    roots.append(orphan.session_id)
    imported = store.create_session("导入的", [{"role": "user", "content": "x", "label": "书签", "timestamp": "t"}])
    node = store.load(imported)
    node.source = {"format": "pi", "file": "a.jsonl", "session_id": "s9", "active_end": True}
    store.save(node)
    roots.append(imported)
    big = SessionStore(store.storage_dir, durable=False, chunk_threshold=2048, chunk_bytes=1024)
    long_root = big.create_session("大会话", [{"role": "user", "content": f"第 {i} 条 " + "内容" * 40}
                                            for i in range(60)])
    big.fork(long_root, [{"role": "assistant", "content": "大会话的分支"}], at=30, title="大会话 · 分支")
    roots.append(long_root)
    (workspace / "a.py").write_text("print(1)\n")
    with_workspace = SessionStore(store.storage_dir, durable=False, workspace=str(workspace))
    roots.append(with_workspace.create_session("带工作区快照", [{"role": "user", "content": "w"}]))
    roots.append(hostile_tree(store)["root"])
    if hasattr(store, "converge"):   # issue 21's converge nodes, once that lands
        ids = three_branches(store)
        store.converge(ids["b"], [ids["a"]], "选 B")
        roots.append(ids["root"])
    return roots


@pytest.fixture
def source(tmp_path):
    store = SessionStore(str(tmp_path / "source"), durable=False)
    workspace = tmp_path / "work"
    workspace.mkdir()
    return store, every_shape(store, workspace)


def test_round_trip_of_every_shape_gives_identical_nodes_and_twice_writes_nothing(source, tmp_path):
    store, roots = source
    target_dir = tmp_path / "target"
    target = SessionStore(str(target_dir), durable=False)
    for number, root in enumerate(roots):
        path = export(store, root, tmp_path / f"tree{number}.jsonl", redact=False)
        report = s11_import.import_file(str(path), target)
        assert report.written == len(report.node_ids) and not report.warnings
    assert snapshot(target) == snapshot(store)
    before = files_of(target_dir)
    for number in range(len(roots)):
        report = s11_import.import_file(str(tmp_path / f"tree{number}.jsonl"), target)
        assert report.written == 0 and report.unchanged == len(report.node_ids)
    assert files_of(target_dir) == before


def test_subtree_and_path_round_trip_keep_ids_and_the_dangling_parent(source, tmp_path):
    store, roots = source
    ids = three_branches(store)
    target = SessionStore(str(tmp_path / "target"), durable=False)
    s11_import.import_file(str(export(store, ids["b"], tmp_path / "sub.jsonl", "subtree", redact=False)), target)
    assert set(snapshot(target)) == {ids["b"], ids["b1"]}
    assert snapshot(target)[ids["b"]] == snapshot(store)[ids["b"]]    # parent_id still names the root
    s11_import.import_file(str(export(store, ids["b1"], tmp_path / "path.jsonl", "path", redact=False)), target)
    assert set(snapshot(target)) == {ids["root"], ids["b"], ids["b1"]}


def test_redacted_by_default_same_structure_no_secrets_no_workspace(source, tmp_path):
    store, roots = source
    target = SessionStore(str(tmp_path / "target"), durable=False)
    for number, root in enumerate(roots):
        path = export(store, root, tmp_path / f"r{number}.jsonl")
        text = path.read_text(encoding="utf-8")
        assert not any(secret in text for secret in SECRETS.values())
        head = json.loads(text.split("\n", 1)[0])
        assert head["redacted"] is True and head["omitted"] == ["workspace"]
        s11_import.import_file(str(path), target)
    mine, theirs = snapshot(store), snapshot(target)
    assert set(mine) == set(theirs)
    for sid, node in theirs.items():
        assert (node["parent_id"], node["fork_point"], len(node["messages"]), node["converged_from"]) == \
            (mine[sid]["parent_id"], mine[sid]["fork_point"], len(mine[sid]["messages"]), mine[sid]["converged_from"])
        assert [m.get("label") is not None for m in node["messages"]] == \
            [m.get("label") is not None for m in mine[sid]["messages"]]
        assert node["workspace"] is None


def test_header_counts_the_manifest(source, tmp_path):
    store, _ = source
    ids = three_branches(store)
    path = export(store, ids["root"], tmp_path / "m.jsonl", added=["db01.corp.example"])
    head = json.loads(path.read_text(encoding="utf-8").split("\n", 1)[0])
    body = path.read_text(encoding="utf-8").split("\n", 1)[1]
    assert head["format"] == "s11-session-tree" and head["version"] == 1 and head["nodes"] == 5
    assert head["manifest"]["added"] == [{"chars": 17, "count": body.count("[已脱敏:手动]")}] == [{"chars": 17, "count": 3}]
    assert "db01.corp.example" not in path.read_text(encoding="utf-8")


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture
def good_file(tmp_path):
    store = SessionStore(str(tmp_path / "source"), durable=False)
    ids = three_branches(store)
    return export(store, ids["root"], tmp_path / "good.jsonl", redact=False)


def test_a_newer_version_is_refused_and_nothing_is_written(good_file, tmp_path):
    lines = lines_of(good_file)
    head = json.loads(lines[0])
    head["version"] = 2
    newer = tmp_path / "newer.jsonl"
    newer.write_text("\n".join([json.dumps(head)] + lines[1:]) + "\n", encoding="utf-8")
    target_dir = tmp_path / "target"
    target = SessionStore(str(target_dir), durable=False)
    with pytest.raises(UnsupportedVersion, match="第 2 版"):
        s11_import.import_file(str(newer), target)
    assert target.list_sessions() == []


def test_bad_lines_are_reported_by_number_and_nothing_is_written(good_file, tmp_path):
    lines = lines_of(good_file)
    node = json.loads(lines[3])
    lines[2] = "{not json"
    lines[3] = json.dumps({**node, "session_id": "../etc/passwd"})
    bad_inherit = json.loads(lines[5])
    lines[5] = json.dumps({**bad_inherit, "inherit": 99})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    target_dir = tmp_path / "target"
    target = SessionStore(str(target_dir), durable=False)
    with pytest.raises(tree_jsonl.BadTreeFile) as caught:
        s11_import.import_file(str(bad), target)
    message = str(caught.value)
    assert "第 3 行" in message and "第 4 行" in message and "第 6 行" in message and "第 2 行" not in message
    assert "什么都没有导入" in message
    assert target.list_sessions() == [] and not list(target_dir.glob("*.json"))


def test_a_truncated_file_and_a_clash_write_nothing(good_file, tmp_path):
    truncated = tmp_path / "cut.jsonl"
    truncated.write_text("\n".join(lines_of(good_file)[:-1]) + "\n", encoding="utf-8")
    target = SessionStore(str(tmp_path / "target"), durable=False)
    with pytest.raises(tree_jsonl.BadTreeFile, match="文件头说有 5 个节点"):
        s11_import.import_file(str(truncated), target)
    assert target.list_sessions() == []
    first = json.loads(lines_of(good_file)[1])
    from s11_session import SessionNode
    mine = SessionNode(session_id=first["session_id"], title="我自己的同名节点", messages=[])
    target.save(mine)
    before = files_of(tmp_path / "target")
    with pytest.raises(tree_jsonl.BadTreeFile, match="为了不覆盖"):
        s11_import.import_file(str(good_file), target)
    assert files_of(tmp_path / "target") == before


def cli(*args, cwd):
    return subprocess.run(CLI + list(args), capture_output=True, text=True, cwd=cwd, timeout=60,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8"})


def test_command_line_export_review_and_import(tmp_path):
    store = SessionStore(str(tmp_path / "a"), durable=False)
    ids = three_branches(store)
    review = cli("--dir", "a", "export", "--tree", ids["root"], "--review", cwd=tmp_path)
    assert review.returncode == 0 and "银行卡号" in review.stdout and "«4111 1111 1111 1111»" in review.stdout
    card = next(line.split()[0] for line in review.stdout.splitlines() if "[银行卡号]" in line)
    page = cli("--dir", "a", "export", "--tree", ids["root"], "--html", "--unmask", card, "--mask", "db01.corp.example",
               cwd=tmp_path)
    assert page.returncode == 0 and "<script" not in page.stdout and "4111 1111 1111 1111" in page.stdout
    assert "alice@example.com" not in page.stdout and "db01.corp.example" not in page.stdout
    markdown = cli("--dir", "a", "export", "--tree", ids["b"], "--subtree", "--md", cwd=tmp_path)
    assert markdown.returncode == 0 and markdown.stdout.startswith("# 🌳 会话树导出")
    done = cli("--dir", "a", "export", "--tree", ids["root"], "--jsonl", "--no-redact", "-o", "t.jsonl", cwd=tmp_path)
    assert done.returncode == 0 and "没有脱敏" in done.stderr
    first = cli("--dir", "b", "import", "t.jsonl", cwd=tmp_path)
    assert first.returncode == 0 and "新写入 5" in first.stdout
    again = cli("--dir", "b", "import", "t.jsonl", cwd=tmp_path)
    assert again.returncode == 0 and "新写入 0" in again.stdout and "未变化 5" in again.stdout
    assert snapshot(SessionStore(str(tmp_path / "b"))) == snapshot(store)
    lines = (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()
    lines[3] = "[1, 2"
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    bad = cli("--dir", "c", "import", "bad.jsonl", cwd=tmp_path)
    assert bad.returncode == 2 and "第 4 行" in bad.stderr and "Traceback" not in bad.stderr
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").glob("*.json"))


@pytest.mark.parametrize("args, said", [
    (["--html"], "缺少参数"),
    (["--tree", "0123456789ab", "--html", "--md"], "要选一种格式"),
    (["--tree", "0123456789ab", "--html"], "未找到会话"),
    (["--tree", "ROOT", "--html", "--unmask", "nope"], "没有这些编号"),
    (["--tree", "ROOT", "--html", "--mask", "a"], "太短"),
    (["--tree", "ROOT", "--html", "--no-redact", "--mask", "abc"], "不能和"),
    (["ROOT", "--jsonl"], "只用于 --tree"),
])
def test_command_line_refuses_bad_export_arguments(tmp_path, args, said):
    store = SessionStore(str(tmp_path / "a"), durable=False)
    root = three_branches(store)["root"]
    result = cli("--dir", "a", "export", *[root if a == "ROOT" else a for a in args], cwd=tmp_path)
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.stderr


def test_converged_from_is_written_and_read_back(tmp_path):
    store = SessionStore(str(tmp_path / "source"), durable=False)
    ids = three_branches(store)
    decided = store.fork(ids["b"], [{"role": "user", "content": "🔀 选 B"}], title="收敛")
    path = export(ConvergedStore(store, decided.session_id, [ids["a"]]), ids["root"], tmp_path / "c.jsonl")
    head, nodes = tree_jsonl.read_tree(str(path))
    by_id = {node.session_id: node for node in nodes}
    assert by_id[decided.session_id].converged_from == [ids["a"]]
    assert getattr(by_id[ids["a"]], "converged_from", None) in (None, [])
    assert [node.session_id for node in nodes][0] == ids["root"] and head["nodes"] == 6


# ── hostile lines (issue 41 items 6, 11, 12): refused by line number, before anything is written ─────────────────
def tree_file(path: Path, rows: list[dict]) -> Path:
    """A tree JSONL file with a correct header around hand-made node rows (the rows are written as given)."""
    head = {"format": "s11-session-tree", "version": 1, "scope": "tree", "focus": None, "nodes": len(rows),
            "messages": 0, "redacted": False}
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [head, *rows]), encoding="utf-8")
    return path


def row(sid: str, parent: str | None = None, messages: list | None = None, **fields) -> dict:
    return {"session_id": sid, "parent_id": parent, "title": sid, "created_at": "2026-01-01 00:00:00",
            "created_ns": 1, "fork_point": None if parent is None else 0, "inherit": 0,
            "messages": [{"role": "user", "content": sid}] if messages is None else messages, **fields}


def refused(path: Path, tmp_path: Path) -> str:
    """Import path into an empty store: it must be refused with BadTreeFile and leave the folder empty."""
    target_dir = tmp_path / "target"
    target = SessionStore(str(target_dir), durable=False)
    with pytest.raises(tree_jsonl.BadTreeFile) as caught:
        s11_import.import_file(str(path), target)
    assert target.list_sessions() == [] and not [p for p in target_dir.rglob("*") if p.name != ".lock"]
    assert "什么都没有导入" in str(caught.value)
    return str(caught.value)


CORRUPT_FIELDS = {   # fields SessionStore.load() calls corrupt: the importer must not pass them to the store
    "fork_point_past_the_messages": ({"fork_point": 5}, "fork_point=5 超过这个节点的 1 条消息"),
    "created_at_a_number": ({"created_at": 20260101}, "created_at 应是字符串或 null"),
    "created_at_a_list": ({"created_at": ["2026"]}, "created_at 应是字符串或 null"),
    "workspace_a_string": ({"workspace": "/home/me/project"}, "workspace 应是对象或 null"),
    "workspace_a_list": ({"workspace": [1, 2]}, "workspace 应是对象或 null"),
}


@pytest.mark.parametrize("case", sorted(CORRUPT_FIELDS))
def test_a_field_load_would_call_corrupt_is_refused_by_line(tmp_path, case):
    fields, said = CORRUPT_FIELDS[case]
    path = tree_file(tmp_path / "t.jsonl", [row("root0001"), row("kid00001", "root0001", **fields)])
    assert f"第 3 行：{said}" in refused(path, tmp_path)


CYCLES = {   # converge() and fork() only ever point at nodes that existed before: a ring is a forged file
    "two_converge_nodes_name_each_other": (
        [row("root0001"), row("aaaa0001", "root0001", converged_from=["bbbb0001"]),
         row("bbbb0001", "root0001", converged_from=["aaaa0001"])], "aaaa0001 → bbbb0001 → aaaa0001"),
    "a_node_converges_its_own_child": (
        [row("root0001"), row("aaaa0001", "root0001", converged_from=["kid00001"]), row("kid00001", "aaaa0001")],
        "aaaa0001 → kid00001 → aaaa0001"),
    "two_nodes_are_each_others_parent": (
        [row("aaaa0001", "bbbb0001"), row("bbbb0001", "aaaa0001")], "aaaa0001 → bbbb0001 → aaaa0001"),
}


@pytest.mark.parametrize("case", sorted(CYCLES))
def test_a_ring_of_parent_and_converged_from_links_is_refused(tmp_path, case):
    rows, ring = CYCLES[case]
    message = refused(tree_file(tmp_path / "t.jsonl", rows), tmp_path)
    assert "绕成了环" in message and ring in message


def test_converged_from_keeps_the_rules_converge_keeps(tmp_path):
    itself = [row("root0001"), row("aaaa0001", "root0001", converged_from=["aaaa0001"])]
    assert "第 3 行：会话 aaaa0001：converged_from 不能包含节点自己" in refused(tree_file(tmp_path / "a.jsonl", itself), tmp_path)
    twice = [row("root0001"), row("bbbb0001", "root0001"), row("aaaa0001", "root0001", converged_from=["bbbb0001"] * 2)]
    assert "第 4 行：会话 aaaa0001：converged_from 最多 64 个、互不重复的 ID" in \
        refused(tree_file(tmp_path / "b.jsonl", twice), tmp_path)


def test_a_label_longer_than_set_label_allows_is_refused_and_one_at_the_limit_imports(tmp_path):
    from s11_converge import MAX_LABEL_CHARS
    huge = [row("root0001", messages=[{"role": "user", "content": "a"},
                                      {"role": "user", "content": "b", "label": "长" * 200_000}])]
    message = refused(tree_file(tmp_path / "huge.jsonl", huge), tmp_path)
    assert f"第 2 行：第 2 条消息：标签最多 {MAX_LABEL_CHARS} 字符，这个有 200,000 字符" in message
    inherited = [row("root0001"), row("kid00001", "root0001", inherit=1, fork_point=1,
                                      messages=[{"role": "user", "content": "x", "label": "长" * (MAX_LABEL_CHARS + 1)}])]
    assert "第 3 行：第 2 条消息：标签最多" in refused(tree_file(tmp_path / "kid.jsonl", inherited), tmp_path)
    fits = [row("root0001", messages=[{"role": "user", "content": "a", "label": "长" * MAX_LABEL_CHARS}])]
    target = SessionStore(str(tmp_path / "fits"), durable=False)
    s11_import.import_file(str(tree_file(tmp_path / "fits.jsonl", fits)), target)
    assert target.load("root0001").messages[0]["label"] == "长" * MAX_LABEL_CHARS


def nested(depth: int) -> dict:
    """A message nested `depth` levels as the store counts them (the message is level 1, the leaf string counts):
    nested(MAX_NESTING) is the deepest message SessionStore.save() accepts."""
    value: object = "底"
    for _ in range(depth - 3):
        value = [value]
    return {"role": "user", "content": [{"type": "text", "text": "x", "deep": value}]}


def test_a_line_nested_100000_deep_is_refused_by_number_not_a_recursion_error(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    good = json.dumps(row("root0001"))
    path = tmp_path / "deep.jsonl"
    head = {"format": "s11-session-tree", "version": 1, "nodes": 2}
    path.write_text("\n".join([json.dumps(head), good, '{"session_id": "kid00001", "messages": ' + deep + "}"]) + "\n")
    assert "第 3 行：嵌套超过 100 层" in refused(path, tmp_path)
    path.write_text('{"format": "s11-session-tree", "x": ' + deep + "}\n" + good + "\n")
    assert tree_jsonl.is_tree_file(str(path)) is False   # sniffing a deep first line does not raise either
    target = SessionStore(str(tmp_path / "head"), durable=False)
    with pytest.raises(tree_jsonl.BadTreeFile, match="第 1 行不是"):
        tree_jsonl.import_tree(str(path), target)


def test_nesting_is_counted_like_the_store_and_brackets_in_strings_do_not_count(tmp_path):
    from s11_format import MAX_NESTING
    at_limit = [row("root0001", messages=[nested(MAX_NESTING), {"role": "user", "content": "[{" * 5000}])]
    target = SessionStore(str(tmp_path / "ok"), durable=False)
    s11_import.import_file(str(tree_file(tmp_path / "ok.jsonl", at_limit)), target)
    assert target.load("root0001").messages == at_limit[0]["messages"]   # the store reads back what it took
    past = [row("root0001"), row("kid00001", "root0001", messages=[nested(MAX_NESTING + 1)])]
    assert f"第 3 行：嵌套超过 {MAX_NESTING} 层" in refused(tree_file(tmp_path / "past.jsonl", past), tmp_path)
