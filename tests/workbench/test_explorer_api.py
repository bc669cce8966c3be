"""The explorer through the HTTP API of a running app, the way a script or a classmate's tool calls it.

- Issue 18 item 15: text, NaN, infinity and other junk in the number inputs (window start, fork position) get a
  Chinese message, and the server writes no traceback to its output.
- Issue 18 item 10: export clicks do not pile up files: an unchanged export is reused, and one visitor keeps at most
  downloads.EXPORTS_PER_OWNER exports in the server's private download folder.

The app runs in-process on a free port with its real launch options; calls go through /gradio_api/queue/join with
raw JSON bodies (so NaN can be sent as the bare token Python's json module writes), and the server's stdout/stderr
are captured at the file-descriptor level (capfd).
"""

from __future__ import annotations

import json
import secrets
import sys
from pathlib import Path

import pytest

from conftest import REPO, launch, tls_context

pytestmark = pytest.mark.slow

httpx = pytest.importorskip("httpx")

TEACHER = "teacher-" + secrets.token_hex(8)
TIMEOUT = 60


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import app as app_module
    from s11_workbench.spaces import Limits

    root = tmp_path_factory.mktemp("explorer_api_sessions")
    limits = Limits(create_burst=100_000, new_spaces_per_minute=100_000, min_free_bytes=0)
    demo = app_module.build_app(root, teacher_secret=TEACHER, limits=limits)
    launch(demo, **app_module.launch_options(demo))
    url = demo.local_url.rstrip("/")
    try:
        config = httpx.get(f"{url}/config", timeout=TIMEOUT, verify=tls_context()).json()
        ids = {c["id"]: c.get("props", {}).get("elem_id") or "" for c in config["components"]}
        ELEM_IDS.update(ids)
        yield demo, url, config
    finally:
        demo.close()


def named(config: dict, api_name: str) -> dict:
    return next(dep for dep in config["dependencies"] if dep.get("api_name") == api_name)


def select_dependency(config: dict) -> dict:
    table = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "s11x-list")
    return next(dep for dep in config["dependencies"] if [table, "select"] in [list(t) for t in dep["targets"]])


def call(url: str, dep: dict, data: list, session: str, *, event_data=None) -> dict:
    """One event through the queue; returns the process_completed message. `data` is sent as raw JSON text."""
    body = {"data": data, "fn_index": dep["id"], "session_hash": session, "event_data": event_data,
            "trigger_id": None}
    joined = httpx.post(f"{url}/gradio_api/queue/join", content=json.dumps(body, allow_nan=True),
                        headers={"content-type": "application/json"}, timeout=TIMEOUT, verify=tls_context())
    assert joined.status_code == 200, joined.text
    event_id = joined.json()["event_id"]
    with httpx.stream("GET", f"{url}/gradio_api/queue/data", params={"session_hash": session},
                      timeout=TIMEOUT, verify=tls_context()) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("event_id") == event_id and message.get("msg") == "process_completed":
                    return {**message, "outputs": dep["outputs"]}
    raise AssertionError("no process_completed")


ELEM_IDS: dict = {}   # component id -> elem_id, from /config


def notice_slots(outputs: list) -> list[int]:
    """Where an explorer event's answer may be: the top notice, then each result line (each event lists only the
    outputs it can change, so the positions are looked up per event)."""
    ids = [ELEM_IDS.get(cid) or "" for cid in outputs]
    return [i for i, elem in enumerate(ids) if elem == "s11x-notice"] + [
        i for i, elem in enumerate(ids) if elem.startswith("s11x-") and elem.endswith("-result")]


def notice_of(message: dict) -> str:
    """The one sentence the event answered: the top notice, or the result line beside the control (issue 20)."""
    assert message.get("success"), message
    data = message["output"]["data"]
    slots = notice_slots(message["outputs"])
    assert slots, message["outputs"]
    return next((data[i] for i in slots if isinstance(data[i], str) and data[i]), data[slots[0]])


def student(app) -> tuple[str, str, object]:
    demo, _, _ = app
    spaces = demo.s11_spaces
    token = spaces.new_token()
    space = spaces.open(token)
    session_id = space.store.create_session("接口测试", [{"role": "user", "content": "你好"}] * 3)
    return token, session_id, space


def selected(app, token: str, session_id: str) -> str:
    """A page session (session_hash) whose server-side view has session_id selected, as a click on the list does."""
    _, url, config = app
    session = secrets.token_hex(8)
    reply = call(url, select_dependency(config), [token, None, None, None], session,
                 event_data={"index": [0, 0], "value": "x", "row_value": ["接口测试", session_id]})
    assert reply.get("success") and notice_of(reply) == "", reply
    return session


BAD_NUMBERS = ["abc", float("nan"), float("inf"), "1e999", "", [1], {"x": 1}, True, 2.5]


@pytest.mark.parametrize("value", BAD_NUMBERS, ids=[repr(v) for v in BAD_NUMBERS])
def test_junk_in_the_window_start_is_a_chinese_message_and_no_traceback(app, capfd, value):
    _, url, config = app
    token, session_id, _ = student(app)
    session = selected(app, token, session_id)
    capfd.readouterr()
    notice = notice_of(call(url, named(config, "explorer_window"), [token, None, None, value, None], session))
    out, err = capfd.readouterr()
    if value == "":
        assert notice == ""                                   # empty means "back to the end"
    else:
        assert notice.startswith("⚠️ 跳到第几条"), notice
    assert "Traceback" not in out + err and "Error" not in err


@pytest.mark.parametrize("value", BAD_NUMBERS, ids=[repr(v) for v in BAD_NUMBERS])
def test_junk_in_the_fork_position_is_a_chinese_message_writes_nothing_and_no_traceback(app, capfd, value):
    _, url, config = app
    token, session_id, space = student(app)
    session = selected(app, token, session_id)
    capfd.readouterr()
    notice = notice_of(call(url, named(config, "explorer_fork"), [token, None, None, value, "", "", None], session))
    out, err = capfd.readouterr()
    assert notice.startswith("⚠️ 分叉位置"), notice
    assert "Traceback" not in out + err and "Error" not in err
    assert len(space.store.list_sessions()) == 1


def test_export_clicks_reuse_an_unchanged_export_and_keep_a_bounded_number(app):
    from s11_workbench import downloads

    _, url, config = app
    export = named(config, "explorer_export")
    demo, _, _ = app
    token = demo.s11_spaces.new_token()
    space = demo.s11_spaces.open(token)
    ids = [space.store.create_session("接口测试", [{"role": "user", "content": f"第 {i} 个"}]) for i in range(6)]
    owner = Path(downloads.private_export_root()) / f"owner-{space.space_id}"
    session = selected(app, token, ids[0])
    first = call(url, export, [token, None, None, None], session)
    for _ in range(4):
        again = call(url, export, [token, None, None, None], session)
        assert "用的是上次导出的文件" in notice_of(again)
    assert len(list(owner.glob("run-*"))) == 1 and len(list(owner.rglob("*.md"))) == 1
    assert notice_of(first).startswith("✅ 已导出")
    for session_id in ids[1:]:
        assert notice_of(call(url, export, [token, None, None, None], selected(app, token, session_id))).startswith("✅")
    assert len(list(owner.glob("run-*"))) == downloads.EXPORTS_PER_OWNER
    assert len(list(owner.rglob("*.html"))) == downloads.EXPORTS_PER_OWNER


def output_of(message: dict, elem_id: str):
    """What the event sent to one control: a plain value, or a property update (a dict with __type__)."""
    position = [ELEM_IDS.get(cid) for cid in message["outputs"]].index(elem_id)
    return message["output"]["data"][position]


def is_update(value) -> bool:
    return isinstance(value, dict) and value.get("__type__") == "update"


def test_a_control_comes_back_as_a_property_update_only_when_its_properties_change(app):
    """Issue: gradio builds a new component for every property update on its event loop. An event sends the tree
    radio's choices only when they changed, the download buttons' interactivity only when it flipped, and each
    event lists only what it can change (the import report only on an import)."""
    _, url, config = app
    token, session_id, space = student(app)
    child = space.store.fork(session_id, [{"role": "user", "content": "分支"}], at=1).session_id
    session = selected(app, token, session_id)
    select = named(config, "explorer_select")
    again = call(url, select, [token, None, None, child, None], session)      # same tree: the radio's value only
    assert output_of(again, "s11x-tree") == child
    assert not any(is_update(output_of(again, name)) for name in ("s11x-tree", "s11x-source", "s11x-trash"))
    assert "s11x-report" not in [ELEM_IDS.get(cid) for cid in again["outputs"]]
    space.store.fork(child, [{"role": "user", "content": "又一个"}], at=1)   # a new node: new choices
    grown = call(url, select, [token, None, None, session_id, None], session)
    tree = output_of(grown, "s11x-tree")
    assert is_update(tree) and len(tree["choices"]) == 3 and tree["value"] == session_id
    export = named(config, "explorer_export")
    first = output_of(call(url, export, [token, None, None, None], session), "s11x-download-md")
    assert is_update(first) and first["interactive"] is True and first["value"]["url"]
    second = output_of(call(url, export, [token, None, None, None], session), "s11x-download-md")
    assert not is_update(second) and second["url"]                       # already clickable: the file only
    closed = output_of(call(url, select, [token, None, None, child, None], session), "s11x-download-md")
    assert is_update(closed) and closed["interactive"] is False           # another action: disabled again
    imported = call(url, named(config, "explorer_import_example"),
                    [token, None, None, "claude-code-rate-limit.jsonl", None], session)
    report = output_of(imported, "s11x-report")
    assert isinstance(report, str) and report.strip() and not is_update(report), report
    assert notice_of(imported).startswith("📥")
