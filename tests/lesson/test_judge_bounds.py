"""The lesson judge is bounded (issue 41 item 5): one tree-JSONL upload can put 1,500 near-fits under a goal's
parent, and the judge (a lesson click, the teacher's row click) used to compare and load every one of them.
Now each goal node looks closely at MAX_CANDIDATES nodes picked from the summaries, and a space past
MAX_JUDGED_SESSIONS new sessions, or a search past MAX_FITS comparisons, gets one Chinese sentence instead of a
verdict. Work is counted (comparisons and node loads), never timed."""

from __future__ import annotations

import json
import time

import pytest

import s11_exercises as ex
import s11_import
from s11_session import SessionStore

LEVELS = {exercise.id: exercise for exercise in ex.builtin_exercises()}


@pytest.fixture
def rewind(tmp_path):
    """The rewind level, seeded into a fresh space: its goal c is a child of main, forked at 3, ending in a user turn."""
    exercise = LEVELS["rewind"]
    store = SessionStore(str(tmp_path / "space"), durable=False)
    state = ex.LevelState(started_ns=time.time_ns())
    state.anchors = ex.seed(exercise, store)
    return exercise, store, state


def upload_children(store: SessionStore, parent: str, count: int, tmp_path, *, role="assistant", at=3) -> list[str]:
    """One tree-JSONL upload of `count` children of `parent`, each forked at `at` with one new `role` message: to
    the judge each is a near-fit of goal c (same fork point and length, only the new message's role differs)."""
    prefix = store.load(parent).messages[:at]
    head = {"format": "s11-session-tree", "version": 1, "scope": "subtree", "nodes": count}
    ids = [f"near{n:05d}" for n in range(count)]
    rows = [{"session_id": sid, "parent_id": parent, "title": "上传的", "created_ns": time.time_ns(),
             "fork_point": at, "messages": [*prefix, {"role": role, "content": "x"}]} for sid in ids]
    path = tmp_path / f"upload-{role}-{count}.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [head, *rows]), encoding="utf-8")
    s11_import.import_file(str(path), store)
    return ids


class Counted:
    """The store with its node loads counted (the judge reads summaries for free, a node costs a load)."""

    def __init__(self, store: SessionStore):
        self.store, self.loads = store, 0

    def __getattr__(self, name):
        return getattr(self.store, name)

    def load(self, session_id):
        self.loads += 1
        return self.store.load(session_id)


def counted_fits(monkeypatch) -> list:
    calls = []
    original = ex._fits

    def fits(*args):
        calls.append(args[2])
        return original(*args)
    monkeypatch.setattr(ex, "_fits", fits)
    return calls


def test_a_space_with_1500_uploaded_near_fits_is_not_judged_and_says_why(rewind, tmp_path, monkeypatch):
    exercise, store, state = rewind
    upload_children(store, state.anchors["main"], 1_500, tmp_path)
    calls, counted = counted_fits(monkeypatch), Counted(store)
    verdict = ex.check(exercise, counted, state)
    assert verdict.hint_kind == "too_many" and not verdict.solved and verdict.mapping == {}
    assert verdict.hint.startswith(f"这个空间的会话太多，无法判题（1,500 个，上限 {ex.MAX_JUDGED_SESSIONS:,}）")
    assert [part.ok for part in verdict.parts] == [False] * (len(exercise.goal) + 1)   # goals + the active end
    assert calls == [] and counted.loads == 0


def test_hundreds_of_near_fits_cost_a_bounded_number_of_comparisons_and_loads(rewind, tmp_path, monkeypatch):
    exercise, store, state = rewind
    near = upload_children(store, state.anchors["main"], 600, tmp_path)
    calls, counted = counted_fits(monkeypatch), Counted(store)
    verdict = ex.check(exercise, counted, state)
    assert verdict.hint_kind == "wrong_roles" and "assistant" in verdict.hint   # the same hint as with a few
    looked_at = set(calls) & set(near)
    assert len(looked_at) == ex.MAX_CANDIDATES   # not 600
    assert len(calls) <= 2 * (len(exercise.goal) + ex.MAX_CANDIDATES) and counted.loads <= ex.MAX_CANDIDATES


def test_the_right_fork_among_many_near_fits_is_still_found(rewind, tmp_path, monkeypatch):
    """Near-fits that the summaries already tell apart (wrong fork point) never crowd out the right fork, however old."""
    exercise, store, state = rewind
    main = state.anchors["main"]
    right = store.fork(main, [{"role": "user", "content": "换个思路"}], at=3)   # made first: oldest of all
    upload_children(store, main, 40, tmp_path, at=4)
    verdict = ex.check(exercise, store, state)
    assert verdict.mapping["c"] == right.session_id and verdict.parts[3].ok
    monkeypatch.setattr(ex, "MAX_CANDIDATES", 10_000)   # the unbounded judge is the oracle
    assert ex.check(exercise, store, state) == verdict


def test_only_the_roles_tell_them_apart_and_the_newest_is_looked_at(rewind, tmp_path):
    """Past MAX_CANDIDATES same-shaped candidates the newest are looked at: a student's last try is the likeliest."""
    exercise, store, state = rewind
    main = state.anchors["main"]
    upload_children(store, main, 40, tmp_path)                              # 40 same-shaped assistant endings
    newest = store.fork(main, [{"role": "user", "content": "换个思路"}], at=3)
    verdict = ex.check(exercise, store, state)
    assert verdict.mapping["c"] == newest.session_id and verdict.solved


def test_a_search_past_max_fits_comparisons_stops_with_the_sentence(rewind, tmp_path, monkeypatch):
    exercise, store, state = rewind
    upload_children(store, state.anchors["main"], 20, tmp_path)
    monkeypatch.setattr(ex, "MAX_FITS", 5)
    verdict = ex.check(exercise, store, state)
    assert verdict.hint_kind == "too_many" and "这个空间的会话太多，无法判题（比较了 5 次还没判完，上限 5 次）" in verdict.hint


def test_the_built_in_levels_judge_the_same_with_and_without_the_bound(tmp_path, monkeypatch):
    """Every built-in level, freshly started and with one extra fork per goal parent: the bounded judge gives the
    verdict the unbounded one gives (normal spaces are never near the bound)."""
    for exercise in LEVELS.values():
        store = SessionStore(str(tmp_path / exercise.id), durable=False)
        state = ex.LevelState(started_ns=time.time_ns())
        state.anchors = ex.seed(exercise, store)
        for key in {goal.parent for goal in exercise.goal if goal.parent}:
            store.fork(state.anchors[key], [{"role": "user", "content": "试一下"}], at=1)
        bounded = ex.check(exercise, store, state)
        with monkeypatch.context() as unbounded:
            unbounded.setattr(ex, "MAX_CANDIDATES", 10_000)
            unbounded.setattr(ex, "MAX_FITS", 10**9)
            assert ex.check(exercise, store, state) == bounded, exercise.id
