"""Model-based test of undo / redo (issue 43, "done when"): seeded random sequences of every store operation
(create, save/resume, fork, converge, label, delete, restore, import of a small tree), undone and redone in random
interleavings, with a fresh SessionStore on the folder before every step (what a kill -9 between steps leaves: no
memory, only the files and the journal), and one run killed for real with SIGKILL.

The model is a stack of visible states (every live session with its title, parent and messages): an operation
pushes the new state, undo must show the previous one, redo the next. At the end, undoing everything shows the
start, and every revision ever saved is still readable via load_revision.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import s11_journal
import s11_trash
from s11_format import ConflictError, SessionError
from s11_session import SessionNode, SessionStore

REPO = Path(__file__).resolve().parents[2]
STEPS = 30


def visible(store) -> dict:
    """What a reader sees: every live session with its title, parent and messages."""
    out = {}
    for summary in store.list_sessions():
        node = store.load(summary["session_id"])
        out[node.session_id] = (node.title, node.parent_id, node.messages)
    return out


def message(rng: random.Random, number: int) -> dict:
    return {"role": rng.choice(["user", "assistant"]), "content": f"消息 {number} " + "字" * rng.randrange(1, 30)}


class Run:
    """One seeded run: picks operations on whatever the folder holds, keeps the model stacks and every revision seen."""

    def __init__(self, folder: Path, seed: int):
        self.folder, self.rng, self.counter = folder, random.Random(seed), 0
        self.done = [visible(self.store())]   # the top is what the folder must show now
        self.undone: list = []
        self.seen: dict = {}                  # (session id, revision) -> messages, for every revision ever live

    def store(self) -> SessionStore:
        return SessionStore(self.folder)      # a fresh instance: nothing survives from the last step but the disk

    def messages(self, count: int) -> list:
        self.counter += count
        return [message(self.rng, self.counter - i) for i in range(count)]

    def step(self) -> None:
        rng, store = self.rng, self.store()
        roll = rng.random()
        if roll < 0.2 and len(self.done) > 1:
            store.undo()
            self.undone.append(self.done.pop())
        elif roll < 0.3 and self.undone:
            store.redo()
            self.done.append(self.undone.pop())
        else:
            if not self.operate(store):
                return
            self.done.append(visible(store))
            self.undone.clear()
        assert visible(self.store()) == self.done[-1]
        self.remember(store)

    def operate(self, store: SessionStore) -> bool:
        """One random store operation; False when it did not apply (nothing may have changed then)."""
        rng = self.rng
        live = sorted(s["session_id"] for s in store.list_sessions())
        trashed = sorted(set(s11_trash.trashed_ids(store.storage_dir)) - set(live))
        choices = ["create", "import"] + (["save", "fork", "label", "delete", "converge"] if live else []) + \
            (["restore"] if trashed else [])
        op = rng.choice(choices)
        if op == "create":
            store.create_session(f"会话 {self.counter}", self.messages(rng.randrange(0, 4)))
        elif op == "import":   # what every importer does: parents before children inside store.batch()
            with store.batch():
                root = SessionNode(title="导入的根", messages=self.messages(3))
                store.save(root)
                store.save(SessionNode(title="导入的分支", parent_id=root.session_id, fork_point=2,
                                       messages=root.messages[:2] + self.messages(2)))
        elif op == "save":
            node = store.load(rng.choice(live))
            node.messages = node.messages + self.messages(rng.randrange(1, 4))
            store.save(node)
        elif op == "fork":
            parent = store.load(rng.choice(live))
            store.fork(parent.session_id, self.messages(1), at=rng.randrange(0, len(parent.messages) + 1))
        elif op == "label":
            node = store.load(rng.choice(live))
            if not node.messages:
                return False
            store.label(node.session_id, rng.randrange(1, len(node.messages) + 1), rng.choice(["关键", "", "回头看"]))
        elif op == "delete":
            store.delete(rng.choice(live))
        elif op == "restore":
            store.restore(rng.choice(trashed))
        else:
            chosen, other = rng.choice(live), rng.choice(live)
            before = visible(store)
            try:
                store.converge(chosen, [other], "选这一支")
            except SessionError:   # same node, another tree: refused, and nothing was written
                assert visible(store) == before
                return False
        return True

    def remember(self, store: SessionStore) -> None:
        for summary in store.list_sessions():
            node = store.load(summary["session_id"])
            self.seen[(node.session_id, node.revision)] = node.messages


@pytest.mark.parametrize("seed", range(6))
def test_random_operations_undo_to_the_start_and_lose_no_revision(tmp_path, seed):
    run = Run(tmp_path / "sessions", seed)
    for _ in range(STEPS):
        run.step()
    end = run.done[-1]
    store = run.store()
    undone = 0
    while True:
        try:
            store.undo()
        except SessionError as exc:
            assert "没有可以撤销的操作" in str(exc)
            break
        undone += 1
        store = run.store()
    assert undone == len(run.done) - 1
    assert visible(store) == run.done[0] == {}
    for (session_id, revision), messages in run.seen.items():
        assert store.load_revision(session_id, revision).messages == messages, (session_id, revision)
    for _ in range(undone):   # and all the way forward again
        run.store().redo()
    assert visible(run.store()) == end
    # nothing broken on disk (a random delete may leave a branch whose parent is in the trash: that is allowed)
    assert [p for p in run.store().check() if p.kind not in ("missing_parent", "missing_converged")] == []


# ── a real kill -9 ───────────────────────────────────────────────────────────────────────────────
CHILD = """
import random, sys
sys.path.insert(0, {code!r})
from s11_session import SessionStore
rng = random.Random(7)
store = SessionStore({folder!r})
store.create_session("根", [{{"role": "user", "content": "开始"}}])
number = 0
while True:
    number += 1
    ids = sorted(summary["session_id"] for summary in store.list_sessions())
    if not ids:
        store.create_session("又一个根", [])
        print(number, flush=True)
        continue
    pick = rng.choice(ids)
    roll = rng.random()
    if roll < 0.4:
        node = store.load(pick)
        node.messages.append({{"role": "assistant", "content": "续写 %d " % number + "字" * 200}})
        store.save(node)
    elif roll < 0.7:
        store.fork(pick, [{{"role": "user", "content": "分叉 %d" % number}}])
    elif roll < 0.85:
        store.undo()
    else:
        try:
            store.redo()
        except ValueError:   # nothing to redo: no line written, not counted
            number -= 1
            continue
    print(number, flush=True)   # this step is done: its line is in the journal
"""


def test_a_real_kill_leaves_a_readable_journal_and_loses_nothing(tmp_path):
    folder = tmp_path / "sessions"
    script = CHILD.format(code=str(REPO / "code"), folder=str(folder))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    finished = 0
    deadline = time.monotonic() + 60
    while finished < 40 and time.monotonic() < deadline:   # let it run a while, then kill it mid-whatever
        finished = int(child.stdout.readline() or 0)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert finished >= 40
    store = SessionStore(folder)
    reading = s11_journal.read(str(folder))
    journaled = list(reading.records())
    assert len(reading.skipped) <= 1 and len(journaled) >= finished   # every finished step is in the journal
    if reading.skipped:
        assert reading.skipped[0][0] == len(Path(folder, s11_journal.JOURNAL_FILE).read_bytes().split(b"\n"))
    saved = {}
    for summary in store.list_sessions():
        for entry in store.history(summary["session_id"]):
            saved[(summary["session_id"], entry["revision"])] = store.load_revision(
                summary["session_id"], entry["revision"]).messages
    while True:   # undo back as far as the journal goes; a step the kill cut off is refused, never overwritten
        try:
            store.undo()
        except ConflictError as exc:
            assert "日志之外改过" in str(exc)
            break
        except SessionError as exc:
            assert "没有可以撤销的操作" in str(exc)
            assert store.list_sessions() == []
            break
    for (session_id, revision), messages in saved.items():
        assert store.load_revision(session_id, revision).messages == messages
    assert [p for p in store.check() if p.kind != "temp_file"] == []
