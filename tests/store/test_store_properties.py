"""Property tests: random operation sequences against an in-memory model of the store, on both layouts
(version-3 files, and version-4 files whose history is in shared chunks of ~40 bytes)."""

import shutil
import tempfile

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule

from s11_session import ConflictError, SessionNode, SessionStore

messages = st.lists(st.fixed_dictionaries({
    "role": st.sampled_from(["user", "assistant", "system", "tool"]),
    "content": st.one_of(st.none(), st.text(max_size=30),
                         st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}),
                                  max_size=2)),
}), max_size=4)
titles = st.text(min_size=1, max_size=20)


class StoreMachine(RuleBasedStateMachine):
    live = Bundle("live")
    layout: dict = {}

    def __init__(self):
        super().__init__()
        self.folder = tempfile.mkdtemp(prefix="s11-props-")
        self.store = SessionStore(self.folder, durable=False, **self.layout)
        self.model = {}     # id -> {"title", "parent_id", "messages"}
        self.trash = {}     # id -> list of deleted versions, oldest first

    def teardown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    @rule(target=live, title=titles, initial=messages)
    def create(self, title, initial):
        sid = self.store.create_session(title, initial)
        self.model[sid] = {"title": title, "parent_id": None, "messages": list(initial)}
        return sid

    @rule(sid=live, added=messages)
    def append_and_save(self, sid, added):
        node = self.store.load(sid)
        if sid not in self.model:
            assert node is None
            return
        node.messages.extend(added)
        self.store.save(node)
        self.model[sid]["messages"].extend(added)

    @rule(target=live, sid=live, added=messages, data=st.data())
    def fork(self, sid, added, data):
        if sid not in self.model:
            with pytest.raises(ValueError):
                self.store.fork(sid, added)
            return sid
        parent = self.model[sid]
        at = data.draw(st.integers(0, len(parent["messages"])))
        child = self.store.fork(sid, added, at=at)
        self.model[child.session_id] = {"title": parent["title"] + " · 分支", "parent_id": sid,
                                        "messages": parent["messages"][:at] + list(added)}
        return child.session_id

    @rule(sid=live, added=messages)
    def stale_save_conflicts(self, sid, added):
        first, second = self.store.load(sid), self.store.load(sid)
        if first is None:
            return
        first.messages.extend(added)
        self.store.save(first)
        self.model[sid]["messages"].extend(added)
        second.messages.append({"role": "user", "content": "会丢吗？"})
        with pytest.raises(ConflictError):
            self.store.save(second)

    @rule(sid=live)
    def delete(self, sid):
        existed = sid in self.model
        assert self.store.delete(sid) is existed
        if existed:
            self.trash.setdefault(sid, []).append(self.model.pop(sid))

    @precondition(lambda self: self.trash)
    @rule(data=st.data())
    def restore(self, data):
        sid = data.draw(st.sampled_from(list(self.trash)))   # insertion order: ids are random
        if sid in self.model:
            with pytest.raises(ConflictError):
                self.store.restore(sid)
            return
        assert self.store.restore(sid) is True
        self.model[sid] = self.trash[sid].pop()
        if not self.trash[sid]:
            del self.trash[sid]

    @precondition(lambda self: any(sid not in self.model for sid in self.trash))
    @rule(data=st.data(), title=titles, initial=messages)
    def save_a_new_node_under_a_deleted_id(self, data, title, initial):
        sid = data.draw(st.sampled_from([s for s in self.trash if s not in self.model]))
        self.store.save(SessionNode(sid, title, messages=list(initial)))
        self.model[sid] = {"title": title, "parent_id": None, "messages": list(initial)}

    @rule(sid=consumes(live))
    def purge(self, sid):
        """Purging removes the live file and every copy in the trash."""
        assert self.store.delete(sid, purge=True) is (sid in self.model or sid in self.trash)
        self.model.pop(sid, None)
        self.trash.pop(sid, None)
        assert self.store.restore(sid) is False

    @rule()
    def empty_trash(self):
        assert self.store.empty_trash() == sum(len(versions) for versions in self.trash.values())
        self.trash.clear()

    @invariant()
    def store_matches_model(self):
        listed = {s["session_id"]: s for s in self.store.list_sessions()}
        assert set(listed) == set(self.model)
        for sid, expected in self.model.items():
            node = self.store.load(sid)
            assert (node.title, node.parent_id, node.messages) == (
                expected["title"], expected["parent_id"], expected["messages"])
            assert listed[sid]["message_count"] == len(expected["messages"])

    @invariant()
    def check_reports_only_missing_parents_of_deleted_nodes(self):
        for problem in self.store.check():
            assert problem.kind == "missing_parent"
        orphans = {sid for sid, m in self.model.items() if m["parent_id"] and m["parent_id"] not in self.model}
        assert len(self.store.check()) == len(orphans)

    @invariant()
    def the_tree_shows_every_node_once(self):
        text = self.store.render_tree()
        for sid in self.model:
            assert text.count(f"[{sid}]") == 1


class ChunkedStoreMachine(StoreMachine):
    """The same rules with every session that has messages chunked (small chunks: tails and chunks both occur)."""
    layout = {"chunk_threshold": 0, "chunk_bytes": 40}

    @invariant()
    def every_chunk_is_referenced(self):
        assert not [p for p in self.store.check() if p.kind.endswith("_chunk")]


for machine in (StoreMachine, ChunkedStoreMachine):
    machine.TestCase.settings = settings(max_examples=80, stateful_step_count=30, deadline=None,
                                         suppress_health_check=[HealthCheck.too_slow])
TestStoreAgainstModel = StoreMachine.TestCase
TestChunkedStoreAgainstModel = ChunkedStoreMachine.TestCase


def test_a_node_round_trips_through_a_file():
    """Round trip on its own, for readers: save(node) then load(id) gives the same node back."""
    folder = tempfile.mkdtemp()
    try:
        store = SessionStore(folder, durable=False)
        node = SessionNode(title="🌿 分支 \u0000 控制字符", messages=[{"role": "user", "content": "\ud7ff 𝔘𝔫𝔦"}])
        store.save(node)
        assert store.load(node.session_id).to_dict() == node.to_dict()
    finally:
        shutil.rmtree(folder)
