"""What a page pays in the browser for each event's outputs.

gradio 6.31's page keeps a loading-status entry for every component that has been a progress target of any event
it ran (an event's progress targets are its show_progress_on, or all of its outputs when that is not set), and after
every status change of every later event it re-reads each entry and all of that entry's children
(gradio_fixes.open_tab_js and gradio_fixes.progress_on_few say more). So three things decide how heavy every click
is in the reader's browser: each event shows its progress on one component at most, no event may list a block that
holds much of the page (gr.Tabs holds all of it), and the events a page runs by itself when it opens (the load
event and what it chains) should list only what the reader sees first.
These checks read the app's own page config, the one gradio sends to the browser.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow

LAYOUTS = {"row", "column", "group", "accordion", "tabs", "tabitem", "walkthrough", "step", "sidebar"}


@pytest.fixture(scope="module")
def page_config(tmp_path_factory):
    import app
    demo = app.build_app(tmp_path_factory.mktemp("sessions"), teacher_secret="t-" + "0" * 16)
    return demo.get_config_file()


def _children(config) -> dict:
    children = {}

    def walk(node):
        children[node["id"]] = [child["id"] for child in node.get("children", [])]
        for child in node.get("children", []):
            walk(child)
    walk(config["layout"])
    return children


def _size(children: dict, block: int) -> int:
    return 1 + sum(_size(children, child) for child in children.get(block, []))


def _inside(children: dict, block: int) -> set:
    return {block}.union(*(_inside(children, child) for child in children.get(block, [])))


def _opening_events(config) -> list:
    """The load event and everything chained after it with .then / .success: what a page runs before any click."""
    events = config["dependencies"]
    chain = [event for event in events if any(target[1] == "load" for target in event["targets"])]
    ids = {event["id"] for event in chain}
    grew = True
    while grew:
        grew = False
        for event in events:
            if event.get("trigger_after") in ids and event["id"] not in ids:
                chain.append(event)
                ids.add(event["id"])
                grew = True
    return chain


def test_no_event_writes_to_the_tab_bar_or_to_a_block_holding_a_sixth_of_the_page(page_config):
    components = {component["id"]: component for component in page_config["components"]}
    children = _children(page_config)
    page = len(components)
    assert page > 300   # the whole workbench: every tab, panel and state
    heavy = sorted({(event.get("api_name") or str(event["id"]), components[block]["type"], _size(children, block))
                    for event in page_config["dependencies"] for block in event["outputs"]
                    if components[block]["type"] == "tabs" or _size(children, block) > page // 6})
    assert heavy == []


def test_a_page_opening_runs_only_the_events_its_first_screen_needs(page_config):
    components = {component["id"]: component for component in page_config["components"]}
    children = _children(page_config)
    opening = _opening_events(page_config)
    assert any(event.get("api_name") == "enter_space" for event in opening)   # the chain was found
    outputs = {block for event in opening for block in event["outputs"]}
    # the explorer and the lesson are drawn when their tabs first open; the teacher's class panel loads only after
    # the teacher's key was checked (a State that changes); what is left is the space, the run button, the checks
    assert len(outputs) <= 10
    explorer = next(block for block, component in components.items()
                    if component["type"] == "tabitem" and component["props"].get("label") == "🌳 会话树浏览器")
    assert outputs.isdisjoint(_inside(children, explorer))
    lesson = next(block for block, component in components.items()
                  if component["type"] == "tabitem" and component["props"].get("label") == "🎯 练习")
    panel = next(block for block, component in components.items()
                 if component["props"].get("elem_id") == "s11c-panel")
    assert outputs.isdisjoint(_inside(children, lesson)) and outputs.isdisjoint(_inside(children, panel))
    big_layouts = [(components[block]["props"].get("elem_id"), _size(children, block)) for block in outputs
                   if components[block]["type"] in LAYOUTS and _size(children, block) > 8]
    assert big_layouts == []


def test_the_class_panel_is_loaded_by_a_teacher_check_not_by_the_page_load(page_config):
    components = {component["id"]: component for component in page_config["components"]}
    panel = next(block for block, component in components.items()
                 if component["props"].get("elem_id") == "s11c-panel")
    loaders = [event for event in page_config["dependencies"] if panel in event["outputs"]]
    assert loaders and all(event not in _opening_events(page_config) for event in loaders)
    triggers = {(components[target[0]]["type"] if target[0] in components else None, target[1])
                for event in loaders for target in event["targets"]}
    assert ("state", "change") in triggers   # fired only when the check finds the teacher's key


def test_every_event_shows_its_progress_on_one_component_at_most_and_never_on_a_layout(page_config):
    components = {component["id"]: component for component in page_config["components"]}
    events = page_config["dependencies"]
    targets = {event.get("api_name") or str(event["id"]): event["show_progress_on"] for event in events}
    assert all(shown is not None for shown in targets.values())   # none falls back to all of its outputs
    assert max(len(shown) for shown in targets.values()) == 1
    kinds = {components[block]["type"] for shown in targets.values() for block in shown}
    assert kinds.isdisjoint(LAYOUTS | {"state", "browserstate"})
    assert all(event["show_progress_on"] == [] for event in events if event.get("show_progress") == "hidden")
    # the whole page's progress targets together: what the browser re-reads at every status change at most
    assert len({block for shown in targets.values() for block in shown}) <= 60


@pytest.mark.parametrize("api_name, place", [
    ("explorer_select", "s11x-path"), ("explorer_fork", "s11x-path"), ("explorer_search", "s11x-list"),
    ("explorer_import", "s11x-report"), ("explorer_import_example", "s11x-report"),
    ("explorer_export", "s11x-preview"), ("explorer_delete", "s11x-trash"), ("explorer_map_pick", "s11x-map")])
def test_an_explorer_action_shows_its_progress_where_the_reader_waits_for_its_result(page_config, api_name, place):
    components = {component["id"]: component for component in page_config["components"]}
    event = next(event for event in page_config["dependencies"] if event.get("api_name") == api_name)
    assert [components[block]["props"].get("elem_id") for block in event["show_progress_on"]] == [place]
