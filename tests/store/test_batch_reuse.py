"""What one batch of saves reuses (issue 19, item 4: the branchy imports): the plan write_costs made for a node,
the labels a child inherits from its parent, the chunks already confirmed on disk, and the summary taken from a
version-4 head. Each shortcut must leave exactly the files, summaries and errors the long way gives."""

import hashlib
import json
import random
from pathlib import Path

import pytest

import s11_tree
from s11_session import InvalidMessage, SessionNode, SessionStore
from store_layouts import chunk_files


def msg(i, pad=300, label=None):
    message = {"role": ("user", "assistant", "tool")[i % 3], "content": f"第 {i} 轮：" + "日志行 GET /api 200 " * (pad // 24)}
    if label is not None:
        message["label"] = label
    return message


LABELS = ["方案 A", "  ", 7, None, "最终方案", ["not", "text"], "🏷️ 里程碑"]   # blank and non-text labels are not labels


def labelled_history(rng, count, start):
    return [msg(i, rng.choice([100, 300, 1500]), rng.choice(LABELS) if rng.random() < 0.05 else None)
            for i in range(start, start + count)]


def random_tree(seed):
    rng = random.Random(seed)
    nodes = [SessionNode("n0", "根", messages=labelled_history(rng, 1500, 0), created_at="2026-01-01 00:00:00",
                         source={"agent": "pi", "active_end": seed % 2 == 0})]
    for i in range(1, 8):
        parent = rng.choice(nodes)
        keep = rng.randint(0, len(parent.messages))
        prefix = parent.messages[:keep] if rng.random() < 0.8 else [dict(m) for m in parent.messages[:keep]]
        nodes.append(SessionNode(f"n{i}", f"分支 {i}", parent_id=parent.session_id, fork_point=keep,
                                 messages=prefix + labelled_history(rng, rng.randint(0, 300), 10_000 * i),
                                 created_at="2026-01-01 00:00:00", source={"agent": "pi", "active_end": i == 7}))
    for node in nodes:
        node.created_ns = 1
    return nodes


def summaries(store):
    return sorted(store.list_sessions(), key=lambda s: s["session_id"])


@pytest.mark.parametrize("seed", range(4))
def test_write_costs_then_saves_in_one_batch_write_what_one_by_one_saves_write(tmp_path, seed):
    one = SessionStore(tmp_path / "one")
    for node in random_tree(seed):
        one.save(node)
    many, nodes = SessionStore(tmp_path / "many"), random_tree(seed)
    with many.batch():
        costs = many.write_costs(nodes)
        for node in nodes:
            many.save(node)
    assert len(costs) == len(nodes)
    for node in nodes:
        name = f"{node.session_id}.json"
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes(), name
    assert [p.name for p in chunk_files(one)] == [p.name for p in chunk_files(many)]
    # The summaries the saving instance remembered (from the version-4 heads) are what a fresh reader reads.
    fresh = SessionStore(tmp_path / "many")
    assert summaries(many) == summaries(fresh) == summaries(SessionStore(tmp_path / "one"))
    for node, summary in zip(nodes, summaries(fresh)):
        assert summary["labels"] == s11_tree.message_labels(node.messages)
        assert summary["message_count"] == len(node.messages)
        assert summary["active_end"] == node.source["active_end"]
    assert any(summary["labels"] for summary in summaries(fresh))   # the fixture does hold labels


def test_a_child_inherits_its_parents_labels_and_adds_its_own(tmp_path):
    store = SessionStore(tmp_path / "s")
    trunk = [msg(i, label="父的标签" if i == 10 else None) for i in range(1000)]
    parent = SessionNode("p", "主干", messages=trunk)
    after_fork = SessionNode("a", "分叉点之后的标签", parent_id="p", fork_point=5, messages=trunk[:5] + [msg(5000, label="子的")])
    before_fork = SessionNode("b", "继承", parent_id="p", fork_point=800,
                              messages=trunk[:800] + [msg(6000 + i) for i in range(300)] + [msg(7000, label="末尾")])
    at_fork = SessionNode("c", "标签正在分叉点上", parent_id="p", fork_point=11,
                          messages=trunk[:11] + [msg(8000 + i) for i in range(400)])
    store.save_many([parent, after_fork, before_fork, at_fork])
    labels = {s["session_id"]: s["labels"] for s in SessionStore(tmp_path / "s").list_sessions()}
    assert labels == {"p": [[11, "父的标签"]], "a": [[6, "子的"]], "b": [[11, "父的标签"], [1101, "末尾"]],
                      "c": [[11, "父的标签"]]}


def change_title(node):
    node.title = "改过的标题"


def append_message(node):
    node.messages.append(msg(99_999))   # the same list object, one more message


def replace_message(node):
    node.messages[3] = dict(node.messages[3], content="换成了另一个对象")


def edit_source_in_place(node):
    node.source["active_end"] = not node.source["active_end"]   # the same dict object, changed in place


def true_for_one(node):
    node.source = {**node.source, "turns": True}   # 1 == True, but the file must say true


@pytest.mark.parametrize("change", [change_title, append_message, replace_message, edit_source_in_place, true_for_one])
def test_a_node_changed_between_write_costs_and_save_is_saved_as_changed(tmp_path, change):
    store = SessionStore(tmp_path / "s")
    node = SessionNode("n", "会话", messages=[msg(i) for i in range(1500)], source={"agent": "pi", "turns": 1,
                                                                                   "active_end": False})
    with store.batch():
        store.write_costs([node])
        change(node)
        store.save(node)
    reference = SessionStore(tmp_path / "ref")
    twin = SessionNode("n", node.title, messages=list(node.messages), source=dict(node.source),
                       created_at=node.created_at)
    twin.created_ns = node.created_ns
    reference.save(twin)
    assert (tmp_path / "s" / "n.json").read_bytes() == (tmp_path / "ref" / "n.json").read_bytes()
    loaded = SessionStore(tmp_path / "s").load("n")
    assert loaded.title == node.title and loaded.messages == node.messages and loaded.source == node.source


def test_a_bad_change_after_write_costs_is_still_refused_and_nothing_is_written(tmp_path):
    store = SessionStore(tmp_path / "s")
    node = SessionNode("n", "会话", messages=[msg(i) for i in range(1500)])
    with store.batch():
        store.write_costs([node])
        node.messages.append({"role": "user", "content": object()})
        with pytest.raises(InvalidMessage, match="第 1501 条消息"):
            store.save(node)
    assert not (tmp_path / "s" / "n.json").exists() and chunk_files(store) == []


def test_a_chunk_removed_in_the_middle_of_a_batch_is_written_again_before_the_next_save_commits(tmp_path):
    store = SessionStore(tmp_path / "s")
    trunk = [msg(i) for i in range(1500)]
    first = SessionNode("a", "一", messages=trunk)
    second = SessionNode("b", "二", parent_id="a", fork_point=1500, messages=trunk + [msg(5000)])
    with store.batch() as batch:
        store.save(first)
        assert batch.present and set(batch.present) == {p.name.split(".")[0] for p in chunk_files(store)}
        victim = chunk_files(store)[0]
        victim.unlink()   # a careless cleanup between two saves of the batch
        store.save(second)
    assert victim.exists()
    fresh = SessionStore(tmp_path / "s")
    assert fresh.load("b").messages == second.messages and fresh.load("a").messages == trunk
    assert [p for p in fresh.check() if p.kind != "missing_parent"] == []


def test_chunks_confirmed_once_in_a_batch_are_not_looked_at_again_outside_the_lock(tmp_path, monkeypatch):
    store = SessionStore(tmp_path / "s")
    trunk = [msg(i) for i in range(1500)]
    nodes = [SessionNode("a", "一", messages=trunk)]
    nodes += [SessionNode(f"b{i}", "分支", parent_id="a", fork_point=1500, messages=trunk + [msg(5000 + i)])
              for i in range(3)]
    asked = []
    real = store._chunks.missing
    monkeypatch.setattr(store._chunks, "missing", lambda chunks: asked.append(len(chunks)) or real(chunks))
    store.save_many(nodes)
    shared = len(chunk_files(store))
    assert asked[0] == shared and asked[1:] == [0, 0, 0]   # the forks add only their tails (in the session file)


# ── loads inside one batch read and parse each shared chunk once (the importer's re-import) ─────────────
def saved_tree(tmp_path):
    store = SessionStore(tmp_path / "s")
    nodes = random_tree(1)
    store.save_many(nodes)
    return store, nodes


def test_loads_in_a_batch_give_the_values_loads_outside_give_and_share_the_prefix_objects(tmp_path, monkeypatch):
    store, nodes = saved_tree(tmp_path)
    outside = {node.session_id: SessionStore(store.storage_dir).load(node.session_id) for node in nodes}
    reads = []
    real = store._chunks._read_chunk
    monkeypatch.setattr(store._chunks, "_read_chunk", lambda *args: reads.append(args[0]) or real(*args))
    with store.batch():
        inside = {node.session_id: store.load(node.session_id) for node in nodes}
    for sid, node in inside.items():
        assert node.messages == outside[sid].messages and node.to_dict() == outside[sid].to_dict()
    assert sorted(reads) == sorted(set(reads)) and reads   # every chunk read (and its sha256 checked) once
    parent, child = next((inside[n.parent_id], inside[n.session_id]) for n in nodes
                         if n.parent_id and n.fork_point and n.fork_point > 600 and n.messages[:n.fork_point]
                         == next(p for p in nodes if p.session_id == n.parent_id).messages[:n.fork_point])
    assert any(a is b for a, b in zip(parent.messages, child.messages))   # the shared chunks' messages


def test_outside_a_batch_every_load_gets_its_own_objects(tmp_path):
    store, nodes = saved_tree(tmp_path)
    first, second = store.load("n0"), store.load("n0")
    assert first.messages == second.messages and not any(a is b for a, b in zip(first.messages, second.messages))


def chunks_of(store, session_id):
    index = json.loads(Path(store.storage_dir, f"{session_id}.json").read_bytes().split(b"\n")[1])
    return [Path(store.storage_dir, ".chunks", f"{name}.jsonl") for name, _ in index["chunks"]]


def test_a_chunk_damaged_after_saving_is_refused_inside_a_batch_as_outside(tmp_path):
    store, _ = saved_tree(tmp_path)
    victim = chunks_of(store, "n0")[0]
    victim.write_bytes(victim.read_bytes().replace(b"\xe7\xac\xac", b"\xe7\xac\xad", 1))   # one character changed
    with pytest.raises(Exception) as outside:
        SessionStore(store.storage_dir).load("n0")
    with store.batch():
        with pytest.raises(type(outside.value)) as inside:
            store.load("n0")
    assert str(inside.value) == str(outside.value) and "块" in str(inside.value)


def test_a_chunk_whose_messages_do_not_pass_the_checks_reports_the_same_error_in_a_batch(tmp_path):
    store = SessionStore(tmp_path / "s")
    node = SessionNode("n", "会话", messages=[msg(i) for i in range(1500)])
    store.save(node)
    victim = chunks_of(store, "n")[1]
    lines = victim.read_bytes().split(b"\n")
    lines[2] = lines[2].replace(b'"role":', b'"rolle":', 1)   # a message without role, in a chunk with a valid name
    data = b"\n".join(lines)
    forged = victim.with_name(hashlib.sha256(data).hexdigest() + ".jsonl")
    forged.write_bytes(data)
    session_file = tmp_path / "s" / "n.json"
    raw = session_file.read_bytes()
    session_file.write_bytes(raw.replace(victim.stem.encode(), forged.stem.encode(), 1))
    with pytest.raises(Exception) as outside:
        SessionStore(tmp_path / "s").load("n")
    with store.batch() as batch:
        with pytest.raises(type(outside.value)) as inside:
            store.load("n")
        assert forged.stem not in batch.parsed
    assert str(inside.value) == str(outside.value) and "role" in str(inside.value)
