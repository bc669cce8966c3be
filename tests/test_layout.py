"""The house rules of the code layout, checked by reading the source with `ast` (nothing is imported).

- imports flow one way, lowest first (LAYERS), with no cycle anywhere, packages included;
- gradio is imported only by the *_tab modules and app.py;
- no library module builds an argument parser: the one command line is code/s11_cli.py;
- one home per idea: exactly one printable(), one table of OS errors, one tree walker;
- code/ is a folder of lessons, not a package;
- one language rule for comments: Chinese in code/ and app.py, English in tests/, benchmarks/ and scripts/;
- the README is a front door (≤ 250 lines, every tab and all four agents on its first screen), the manual lives in
  docs/ one page per topic, and every link and code path they name exists;
- every benchmark script ends with absolute budgets (PASS / MISS) and uses the public API only.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CODE = REPO / "code"

# Lowest first. A module may import only modules of a lower layer (or, inside one package, its siblings).
LAYERS = [
    ["s11_fast"],               # speed code beside the plain modules: imports nothing of ours (each seam passes itself)
    ["s11_text", "s11_redact", "s11_workspace", "s11_book"],
    ["s11_storage"],
    ["s11_format"],
    ["s11_trash", "s11_tree", "s11_export", "s11_journal"],
    ["s11_chunks", "s11_converge", "s11_check"],
    ["s11_history"],            # kept revisions and undo / redo, written against the store's public API
    ["s11_session"],
    ["s11_review"],             # the redaction review of one export (s11_redact's table, hit by hit)
    ["s11_tree_export"],        # whole-tree HTML / Markdown pages
    ["s11_import", "s11_exercises"],
    ["s11_workbench"],          # its gradio-free logic
    ["s11_workbench.*_tab"],    # the layout modules: the only ones (with app.py) that import gradio
    ["s11_cli"],
    ["app"],
]


def module_files() -> dict[str, Path]:
    found = {"app": REPO / "app.py"}
    for path in sorted(CODE.rglob("*.py")):
        parts = path.relative_to(CODE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = module_files()


@functools.cache
def nodes_of(path: Path) -> tuple[ast.AST, ...]:
    """Every node of a file, parsed once per run: a dozen checks below each walk all of code/."""
    return tuple(ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


PACKAGES = {name for name, path in MODULES.items() if path.name == "__init__.py"}


def layer_of(name: str) -> int:
    top = name.split(".")[0]
    for rank, group in enumerate(LAYERS):
        for pattern in group:
            if pattern.endswith("*_tab"):
                if name.startswith(pattern.split(".")[0] + ".") and name.endswith("_tab"):
                    return rank
            elif pattern == name or (pattern == top and not name.endswith("_tab")):
                return rank
    raise AssertionError(f"{name} is in no layer of LAYERS: add it where it belongs")


def our_imports(name: str, path: Path) -> set[str]:
    """Every module of ours that `name` imports, anywhere in the file (lazy imports count too)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in nodes_of(path):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from . import claude` imports the submodule; `from s11_format import X` imports the module
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in MODULES and target != name)
    return found


GRAPH = {name: our_imports(name, path) for name, path in MODULES.items()}


def test_there_is_no_code_package():
    assert not (CODE / "__init__.py").exists(), "a package named `code` would shadow the standard `code` module"


def test_every_module_has_a_layer():
    for name in MODULES:
        layer_of(name)


def test_imports_flow_from_higher_layers_to_lower_ones_only():
    wrong = []
    for name, targets in GRAPH.items():
        for target in targets:
            same_package = target.split(".")[0] == name.split(".")[0] and name.split(".")[0] in PACKAGES
            if layer_of(target) > layer_of(name) or (layer_of(target) == layer_of(name) and not same_package):
                wrong.append(f"{name} (layer {layer_of(name)}) imports {target} (layer {layer_of(target)})")
    assert wrong == []


def test_there_is_no_import_cycle():
    state: dict[str, int] = {}
    cycles = []

    def visit(start: str) -> None:   # iterative DFS: white 0 / grey 1 / black 2
        stack = [(start, iter(sorted(GRAPH[start])))]
        path = [start]
        state[start] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(child, 0) == 1:
                cycles.append(" -> ".join(path[path.index(child):] + [child]))
            elif state.get(child, 0) == 0:
                state[child] = 1
                stack.append((child, iter(sorted(GRAPH[child]))))
                path.append(child)

    for name in sorted(GRAPH):
        if state.get(name, 0) == 0:
            visit(name)
    assert cycles == []


def imports_named(path: Path, wanted: str) -> bool:
    for node in nodes_of(path):
        if isinstance(node, ast.Import) and any(alias.name.split(".")[0] == wanted for alias in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == wanted and not node.level:
            return True
    return False


def test_only_tab_modules_and_app_import_gradio():
    importers = sorted(name for name, path in MODULES.items() if imports_named(path, "gradio"))
    # gradio_fixes: the one module about gradio's internals (it imports gradio inside the functions app.py calls)
    allowed = ("app", "s11_workbench.gradio_fixes")
    assert importers and all(name in allowed or name.endswith("_tab") for name in importers), importers


def test_only_the_command_line_and_app_build_an_argument_parser():
    builders = sorted(name for name, path in MODULES.items() if imports_named(path, "argparse"))
    assert set(builders) <= {"s11_cli", "app"}, builders


def definitions(predicate) -> list[str]:
    found = []
    for name, path in MODULES.items():
        for node in nodes_of(path):
            if predicate(node):
                found.append(f"{name}:{node.lineno}")
    return found


def test_there_is_one_printable():
    found = definitions(lambda node: isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and node.name.lstrip("_") == "printable")
    assert len(found) == 1 and found[0].startswith("s11_text:"), found


def is_os_error_table(node) -> bool:
    """A dict (or a dict comprehension over pairs) keyed by errno codes or OSError subclasses, with Chinese text."""
    if isinstance(node, ast.Dict):
        keys = node.keys
    elif isinstance(node, ast.Tuple) and all(isinstance(item, ast.Tuple) and len(item.elts) == 2 for item in node.elts):
        keys = [item.elts[0] for item in node.elts]
    else:
        return False
    errno_keys = [key for key in keys if isinstance(key, ast.Attribute) and isinstance(key.value, ast.Name)
                  and key.value.id == "errno"
                  or isinstance(key, ast.Call) and "errno" in ast.unparse(key)
                  or isinstance(key, ast.Name) and key.id.endswith("Error") and key.id != "OSError"]
    return len(errno_keys) >= 3


def test_there_is_one_table_of_os_errors():
    found = definitions(is_os_error_table)
    assert len(found) == 1 and found[0].startswith("s11_text:"), found


@pytest.mark.parametrize("walker", ["walk_tree", "_render_subtree", "_children_index", "root_of", "walk"])
def test_the_tree_is_walked_in_one_place(walker):
    found = definitions(lambda node: isinstance(node, ast.FunctionDef) and node.name == walker)
    assert all(place.startswith("s11_tree:") for place in found), found


# ── one language rule for comments ───────────────────────────────────────────────────────────
# code/ and app.py (read next to the Chinese book): comments and docstrings in Chinese, identifiers in English.
# tests/, benchmarks/, scripts/: comments in English (Chinese inside quotes is test data or a quoted UI text).
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
THREE_ENGLISH_WORDS = re.compile(r"[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}")
QUOTED = re.compile(r"\"[^\"]*\"|'[^']*'|`[^`]*`|「[^」]*」|“[^”]*”")
PRAGMA = re.compile(r"#\s*(noqa|type:|pragma|fmt:)")


def comments(path: Path):
    for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if token.type == tokenize.COMMENT and not PRAGMA.match(token.string):
            yield token.start[0], token.string


def docstrings(path: Path):
    for node in nodes_of(path):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            text = ast.get_docstring(node)
            if text:
                yield getattr(node, "lineno", 1), text


def test_comments_and_docstrings_in_code_are_chinese():
    english = []
    for name, path in MODULES.items():
        if name == "s11_book":   # the chapter's printed code, verbatim
            continue
        for line, text in [*comments(path), *docstrings(path)]:
            if THREE_ENGLISH_WORDS.search(QUOTED.sub("", text)) and not CJK.search(text):
                english.append(f"{path.relative_to(REPO)}:{line}: {text[:60]!r}")
    assert english == []


def test_comments_in_tests_benchmarks_and_scripts_are_english():
    chinese = []
    for folder in ("tests", "benchmarks", "scripts"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for line, text in comments(path):
                if CJK.search(QUOTED.sub("", text)):
                    chinese.append(f"{path.relative_to(REPO)}:{line}: {text[:60]!r}")
    assert chinese == []


# ── the README is a front door; the manual is in docs/ ──────────────────────────────────────
README = REPO / "README.md"
DOCS = REPO / "docs"
FIRST_SCREEN = 40
DOC_PAGES = ["store", "explorer", "classroom", "sharing", "import", "converge", "exercises", "performance", "undo"]
AGENTS = ["Claude Code", "Pi", "Codex CLI", "Gemini CLI"]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
CODE_PATH = re.compile(r"`((?:code|benchmarks|tests|scripts|exercises|examples)/[\w./-]*[\w/])`")


def tab_labels() -> list[str]:
    """The LABEL of every *_tab module (each tab or panel of the page), read with ast."""
    labels = []
    for path in sorted((CODE / "s11_workbench").glob("*_tab.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if (isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "LABEL" for t in node.targets)
                    and isinstance(node.value, ast.Constant)):
                labels.append(node.value.value)
    return labels


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md")), REPO / "benchmarks" / "README.md"]


def test_the_readme_fits_in_250_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_the_first_screen_names_every_tab_and_all_four_agents():
    first = "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN])
    labels = tab_labels()
    assert len(labels) >= 5   # the 8.11 tab, the explorer, the lesson, the lab, the teacher's class panel
    missing = [name for name in labels + AGENTS if name not in first]
    assert missing == []


def test_the_manual_has_one_page_per_topic_and_the_readme_links_each():
    readme = README.read_text(encoding="utf-8")
    for page in DOC_PAGES:
        assert (DOCS / f"{page}.md").is_file(), page
        assert f"](docs/{page}.md" in readme, page


@pytest.mark.parametrize("path", markdown_files(), ids=lambda path: path.relative_to(REPO).as_posix())
def test_every_link_and_code_path_in_the_docs_exists(path):
    text = path.read_text(encoding="utf-8")
    missing = [target for target in LINK.findall(text)
               if "://" not in target and not (path.parent / target).exists()]
    missing += [name for name in CODE_PATH.findall(text) if not (REPO / name.rstrip("/")).exists()]
    assert missing == []


def test_the_readme_has_no_dated_benchmark_tables():
    assert not re.search(r"20\d\d-\d\d-\d\d", README.read_text(encoding="utf-8"))


# ── benchmarks: absolute budgets, public API ────────────────────────────────────────────────
BENCH_SCRIPTS = sorted([*(REPO / "benchmarks").glob("bench_*.py"), REPO / "benchmarks" / "load_classroom.py"])


@pytest.mark.parametrize("path", BENCH_SCRIPTS, ids=lambda path: path.name)
def test_every_benchmark_ends_with_its_budgets_and_uses_public_names_only(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Attribute) and node.func.attr == "report"]
    assert calls, "print the budgets with _common.report()"
    ours = {name.split(".")[0] for name in MODULES}
    private = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ours:
            private += [alias.name for alias in node.names if alias.name.startswith("_")]
            assert node.module != "s11_book", "no comparison with the chapter's printed store"
        if isinstance(node, ast.Import):
            assert "s11_book" not in [alias.name for alias in node.names], "no comparison with the printed store"
        if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                and isinstance(node.value, ast.Name) and node.value.id in ours):
            private.append(f"{node.value.id}.{node.attr}")
    assert private == []


def test_no_test_id_comes_from_repr():
    """repr() of an object can hold its address, which differs between the two xdist workers: collection then stops
    ("Different tests were collected between gw0 and gw1"). Ids are names written in the test."""
    found = [f"{path.relative_to(REPO)}:{number}" for path in sorted((REPO / "tests").rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"ids\s*=\s*(repr|str)\b", line)]
    assert found == []
