"""Issue 40 (50 students, server p95 ≤ 1 s): the tabs' many-output events pre- and postprocess in their handler.

gradio 6.31 preprocesses each input and postprocesses each output of an event in its own worker-thread hop; an
explorer event has 45–66 outputs, and in the class's opening burst those hops, queued on the event loop, were most
of the server time. Events wired with gradio_fixes.listen() do both inside the handler's own thread and reach gradio
with preprocess=False, postprocess=False. Checked here, in-process through gradio's own process_api (no server, no
timing):

- no input or output of an explorer / lesson / demo event goes through a worker thread of its own (old code: one
  hop each): the handler is the event's one hop;
- what the page receives is exactly what gradio's own postprocess sends for the same handler: plain values, the
  tree's new choices, the hits table shown with its headers, chats, dropdowns whose choices an earlier event
  replaced (postprocessed with the page's current component, so no "not in the list of choices" warning),
  download files moved into gradio's cache.
"""

from __future__ import annotations

import asyncio
import copy
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from conftest import REPO

pytestmark = pytest.mark.slow

MANY_OUTPUTS = ("explorer_refresh", "explorer_search", "explorer_select", "explorer_fork", "explorer_export",
                "explorer_import_example", "lesson_pick", "lesson_start", "run_demo")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import app as app_module
    from s11_workbench.spaces import Limits

    limits = Limits(create_burst=100_000, new_spaces_per_minute=100_000, min_free_bytes=0)
    return app_module.build_app(tmp_path_factory.mktemp("sessions"), teacher_secret="t-events", limits=limits)


def fn_named(demo, api_name):
    return next(fn for fn in demo.fns.values() if fn.api_name == api_name)


def as_gradio_does(fn):
    """The same event as plain gradio would run it: the unwrapped handler, gradio's own pre- and postprocess."""
    plain = copy.copy(fn)
    plain.fn, plain.preprocess, plain.postprocess = fn.fn.__wrapped__, True, True
    return plain


def run(demo, fn, state, data):
    from gradio.utils import get_function_with_locals  # noqa: F401  (gradio's own call path sets the page context)
    call = demo.process_api(fn, list(data), state=state, session_hash=None, in_event_listener=True)
    # in a thread of its own: after a browser test on the same worker, Playwright's event loop runs in this one
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, call).result()


def inputs(fn, values):
    """The raw inputs of an event: stateful ones (gr.State) are read from the page's state, so None here."""
    supplied = iter(values)
    return [None if block.stateful else next(supplied) for block in fn.inputs]


def test_each_many_output_event_postprocesses_in_its_handler(demo):
    for name in MANY_OUTPUTS:
        fn = fn_named(demo, name)
        assert fn.postprocess is False and fn.preprocess is False, name
        assert hasattr(fn.fn, "__wrapped__"), name
        assert len(fn.outputs) >= 8, name


def test_no_input_or_output_takes_a_thread_hop_of_its_own(demo, monkeypatch):
    from gradio.state_holder import SessionState

    hops = []
    original = anyio.to_thread.run_sync

    async def counted(func, *args, **kwargs):
        hops.append(getattr(func, "__name__", ""))
        return await original(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    state, token = SessionState(demo), demo.s11_spaces.new_token()
    run(demo, fn_named(demo, "run_demo"), state, [token])
    for name, values in (("explorer_refresh", [token, ""]), ("explorer_fork", [token, 3, "x", ""]),
                         ("lesson_start", [token, "rewind"])):
        fn = fn_named(demo, name)
        hops.clear()
        output = run(demo, fn, state, inputs(fn, values))
        assert len(output["data"]) == len(fn.outputs), name
        # old code: a "preprocess" hop per input (2–4 here) and a "postprocess" hop per output (23–50)
        assert len(hops) == 1, (name, hops)   # the handler itself


def test_the_page_receives_what_gradio_own_postprocess_sends(demo):
    """Two pages of the same space run the same events: one wired as shipped, one with gradio's own postprocess.
    Every output must be equal, update dicts and file payloads included. (Only events whose second run finds the
    space as the first left it: a third page exports first, so both exports reuse its files.)"""
    from gradio.state_holder import SessionState

    token = demo.s11_spaces.new_token()
    shipped, plain, warm = SessionState(demo), SessionState(demo), SessionState(demo)
    run(demo, fn_named(demo, "run_demo"), warm, [token])
    session_id = demo.s11_spaces.open(token).store.list_sessions()[0]["session_id"]
    for name, values in (("explorer_refresh", [token, ""]), ("explorer_map_pick", [token, f"{session_id}#1"]),
                         ("explorer_export", [token])):
        run(demo, fn_named(demo, name), warm, inputs(fn_named(demo, name), values))
    steps = [("explorer_refresh", [token, ""]), ("explorer_search", [token, "分支"]),
             ("explorer_refresh", [token, ""]), ("explorer_map_pick", [token, f"{session_id}#1"]),
             ("explorer_select", [token, session_id]),
             ("explorer_export", [token]), ("explorer_refresh", [token, ""]), ("lesson_pick", [token, "rewind"])]
    seen = set()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)   # a dropdown postprocessed with stale choices warns
        for name, values in steps:
            fn = fn_named(demo, name)
            ours = run(demo, fn, shipped, inputs(fn, values))["data"]
            theirs = run(demo, as_gradio_does(fn), plain, inputs(fn, values))["data"]
            assert ours == theirs, name
            for value in ours:
                seen.add(type(value).__name__)
                if isinstance(value, dict):
                    seen.update(key for key in ("__type__", "url", "headers") if key in value)
                    if isinstance(value.get("value"), dict):
                        seen.update(key for key in ("url", "headers") if key in value["value"])
                if isinstance(value, list) and value and isinstance(value[0], dict):
                    seen.add("chat")
    # plain text, component updates, a table (headers), the chat, a download moved into gradio's cache (url)
    assert {"str", "__type__", "headers", "chat", "url"} <= seen, seen


def test_a_page_session_copies_no_page_config(demo):
    """gradio copied every component's config into each new page session (for deep links, unused here): about
    35 ms of event-loop CPU at a page's first event, and two more config builds per component update. The page
    session now starts and stays without that copy, and its components and states still update."""
    from gradio.state_holder import SessionState

    state, token = SessionState(demo), demo.s11_spaces.new_token()
    assert state.config_values == {}
    run(demo, fn_named(demo, "run_demo"), state, [token])
    fn = fn_named(demo, "explorer_source")   # the source switch replaces the source radio (new choices)
    output = run(demo, fn, state, inputs(fn, [token, "shelf"]))["data"]
    assert state.config_values == {}
    view = next(block for block in fn.inputs if block.stateful and type(block).__name__ == "State")
    assert state[view._id].source == "shelf"   # the page's gr.State did take the new view
    assert any(isinstance(value, dict) and value.get("__type__") == "update" for value in output)
