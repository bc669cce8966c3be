"""The stable API endpoint /run_demo, driven through gradio_client like a script would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_run_demo_endpoint_returns_tree_preview_files_and_downloads(app_server, sessions_dir):
    from gradio_client import Client

    before = set(Path(sessions_dir).glob("*.json"))
    client = Client(app_server, verbose=False)
    status, tree, preview, files, markdown_file, html_file = client.predict(api_name="/run_demo")

    assert status.startswith("✅") and "3 个会话文件" in status
    assert "```mermaid" in tree and "📂 已恢复" in tree
    assert "会话导出" in preview and "方案 B" in preview

    written = set(Path(sessions_dir).glob("*.json")) - before
    assert len(written) == 3
    for path in written:
        assert path.name in files
        assert json.loads(path.read_text(encoding="utf-8"))["session_id"] == path.stem

    assert Path(markdown_file).read_text(encoding="utf-8").strip() == preview.strip()
    if html_file is not None:
        assert "方案 B" in Path(html_file).read_text(encoding="utf-8")


def test_api_lists_run_demo_under_its_stable_name(app_server):
    from gradio_client import Client

    endpoints = Client(app_server, verbose=False).view_api(print_info=False, return_format="dict")
    assert "/run_demo" in endpoints["named_endpoints"]


@pytest.mark.parametrize("env, argv, expected", [
    ({}, [], ("127.0.0.1", 7860)),
    ({"GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": "8000"}, [], ("0.0.0.0", 8000)),
    ({"GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": "8000"}, ["--host", "127.0.0.1", "--port", "9001"],
     ("127.0.0.1", 9001)),
])
def test_flags_win_over_gradio_env_vars(monkeypatch, env, argv, expected):
    import app

    for name in ("GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = app.parse_args(argv)
    assert (args.host, args.port) == expected
    assert args.sessions_dir.endswith("gradio_sessions")


@pytest.mark.parametrize("env, argv, complaint", [
    ({"GRADIO_SERVER_PORT": "abc"}, [], "GRADIO_SERVER_PORT='abc'"),
    ({}, ["--port", "70000"], "--port 70000"),
    ({}, ["--port", "x"], "invalid int value"),
])
def test_a_bad_port_is_a_clear_error_not_a_traceback(monkeypatch, capsys, env, argv, complaint):
    import app

    monkeypatch.delenv("GRADIO_SERVER_PORT", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exit_info:
        app.parse_args(argv)
    assert exit_info.value.code == 2
    assert complaint in capsys.readouterr().err


def test_every_section_module_exposes_build():
    import importlib

    import app

    assert app.SECTIONS[0] == ("8.11 会话持久化与多分支", "s11_tab")
    for _label, module_name in app.SECTIONS:
        assert callable(importlib.import_module(module_name).build)
