"""The lesson's texts name controls the page really has (issue 42 item 8: a solution said 「🩺 体检」 and
「📤 导出（已脱敏）」 while the buttons read otherwise).

Every 「…」 in what a student reads — the level files' instructions, steps and hints, and the strings the checker and the
lesson page show (s11_exercises.py, lesson.py, docstrings left out) — must name something on the 🎯 练习 tab as the
built page labels it: a button, a tab, an accordion, a field's label, a Markdown heading, or a node of the level's goal.
「点「X」」 (click X) must name a button. A label may carry a leading icon the text leaves out, or a note in （…）
after the words the text quotes: 「🩺 体检」 names the button "🩺 体检（check()）".
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LEVELS = sorted((REPO / "exercises").glob("*.json"))
PAGE_TEXT_MODULES = [REPO / "code" / "s11_exercises.py", REPO / "code" / "s11_workbench" / "lesson.py"]
QUOTED = re.compile(r"(点击?|按)?「([^「」{}\n]{1,60})」")
LEADING_ICON = re.compile(r"^[^\w（(]+\s*")


def strings_in_json(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings_in_json(item)]
    if isinstance(value, list):
        return [text for item in value for text in strings_in_json(item)]
    return []


def shown_strings(path: Path) -> list[str]:
    """String constants of a module, f-strings' literal parts included, docstrings left out (a reader of the code
    sees those, not a student)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


@pytest.fixture(scope="module")
def lesson_page(tmp_path_factory) -> dict[str, set[str]]:
    """The built 🎯 练习 tab: {"button": labels of its buttons, "any": every label on it}."""
    import app
    from s11_workbench import lesson_tab
    config = app.build_app(tmp_path_factory.mktemp("sessions")).get_config_file()
    by_id = {component["id"]: component for component in config["components"]}

    def find(node):
        component = by_id.get(node["id"], {})
        if component.get("type") == "tabitem" and component.get("props", {}).get("label") == lesson_tab.LABEL:
            return node
        return next((found for child in node.get("children", []) if (found := find(child))), None)

    def inside(node):
        yield by_id[node["id"]]
        for child in node.get("children", []):
            yield from inside(child)

    tab = find(config["layout"])
    assert tab is not None, "no 🎯 练习 tab in the built page"
    buttons, labels = set(), {lesson_tab.LABEL}
    for component in inside(tab):
        props = component.get("props", {})
        kind = component.get("type")
        if kind in ("button", "downloadbutton", "uploadbutton"):
            buttons.add(str(props.get("value", "")).strip())
        elif kind == "markdown":
            labels.update(line.lstrip("#").strip() for line in str(props.get("value") or "").splitlines()
                          if line.startswith("#"))
        if isinstance(props.get("label"), str):
            labels.add(props["label"].strip())
    return {"button": buttons, "any": labels | buttons}


def names(phrase: str, labels: set[str]) -> bool:
    """「phrase」 names one of labels: equal, or equal once the label's leading icon is dropped, or the label goes on
    with a note in （…）."""
    for label in labels:
        for form in (label, LEADING_ICON.sub("", label)):
            if form == phrase or form.startswith(phrase + "（"):
                return True
    return False


def quotes(texts: list[str]) -> list[tuple[bool, str]]:
    """(is it a click, the quoted words) for every 「…」 in texts."""
    return [(bool(match.group(1)), match.group(2).strip()) for text in texts for match in QUOTED.finditer(text)]


def goal_nodes(level: dict) -> list[dict]:
    goal = level.get("goal") if isinstance(level.get("goal"), dict) else {}
    return [node for node in goal.get("nodes", []) if isinstance(node, dict)]


def goal_labels(level: dict) -> set[str]:
    """The goal's node names (「主会话」): the lesson draws them in its goal tree and marks them on the student's."""
    return {str(node.get("label", "")) for node in goal_nodes(level)}


@pytest.mark.parametrize("path", LEVELS, ids=lambda path: path.stem)
def test_a_levels_texts_name_controls_on_the_lesson_page(lesson_page, path):
    level = json.loads(path.read_text(encoding="utf-8"))
    texts = strings_in_json({key: value for key, value in level.items() if key != "goal"}) + \
        [str(node.get("hint", "")) for node in goal_nodes(level)]
    wrong = [(click, phrase) for click, phrase in quotes(texts)
             if not names(phrase, lesson_page["button"] if click else lesson_page["any"] | goal_labels(level))]
    assert wrong == [], f"{path.name} names controls the page calls otherwise: {wrong}"


@pytest.mark.parametrize("path", PAGE_TEXT_MODULES, ids=lambda path: path.stem)
def test_the_checker_and_the_page_name_controls_on_the_lesson_page(lesson_page, path):
    goals = {label for level in LEVELS for label in goal_labels(json.loads(level.read_text(encoding="utf-8")))}
    wrong = [(click, phrase) for click, phrase in quotes(shown_strings(path))
             if not names(phrase, lesson_page["button"] if click else lesson_page["any"] | goals)]
    assert wrong == [], f"{path.name} names controls the page calls otherwise: {wrong}"


def test_the_check_itself_catches_a_wrong_name():
    page = {"🩺 体检（check()）", "📤 导出选中的会话（已脱敏）", "🪟 第二个标签页"}
    assert names("🩺 体检", page) and names("第二个标签页", page)
    assert not names("📤 导出（已脱敏）", page) and not names("🌿 分叉", page)
    assert quotes(["先点「🩺 体检」，再在「当前的树」里选"]) == [(True, "🩺 体检"), (False, "当前的树")]
