"""The stable API endpoint /run_demo, driven through gradio_client like a script would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def test_run_demo_endpoint_returns_tree_preview_files_and_downloads(app_server, sessions_dir):
    from conftest import gradio_client

    def session_files():   # the kept revisions (.history/) and the trash are the store's own, beside the nodes
        return {path for path in Path(sessions_dir).rglob("*.json")
                if not any(part.startswith(".") for part in path.relative_to(sessions_dir).parts)}

    before = session_files()
    client = gradio_client(app_server)
    token = client.predict(None, api_name="/enter_space")   # a script first gets its own private space
    outputs = client.predict(token, api_name="/run_demo")
    status, tree, preview, *cards, markdown_file, html_file = outputs

    assert status.startswith("✅") and "3 个会话文件" in status
    assert "```mermaid" in tree and "📂 已恢复" in tree
    assert "会话导出" in preview and "方案 B" in preview and "第 8–9 条" in preview

    written = session_files() - before
    assert len({path.parent for path in written}) == 1 and written.pop().parent.parent.name == "spaces"
    written = session_files() - before
    assert len(written) == 3 and len(cards) == 3
    shown_ids = []
    for card in cards:   # one card per file: the file's name relative to the sessions folder, and its JSON
        data = json.loads(card.split("```json\n", 1)[1].rsplit("\n```", 1)[0])
        folder = next(path.parent for path in written if path.stem == data["session_id"])
        shown = folder.relative_to(Path(sessions_dir).parent).as_posix()
        assert f"`{shown}/{data['session_id']}.json`" in card   # gradio_sessions/spaces/<space id>/<id>.json
        shown_ids.append(data["session_id"])
    assert sorted(shown_ids) == sorted(path.stem for path in written)
    assert "| `revision` | 1 | **2** |" in cards[2]
    for text in (status, tree, preview, *cards):
        assert str(sessions_dir) not in text   # no server paths on the page

    markdown = Path(markdown_file).read_text(encoding="utf-8")
    assert markdown.startswith("# 🗂️ 会话导出") and "## 🟧" not in markdown   # the chapter's format
    assert all(line in preview for line in markdown.splitlines() if line)
    assert "方案 B" in Path(html_file).read_text(encoding="utf-8")


def test_api_lists_run_demo_under_its_stable_name(app_server):
    from conftest import gradio_client

    endpoints = gradio_client(app_server).view_api(print_info=False, return_format="dict")
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
    ({}, ["--port", "x"], "--port 后面应是一个整数，现在是 'x'"),
    ({}, ["--port"], "--port 后面要跟一个值"),
    ({}, ["--colour"], "不认识的参数：--colour"),
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


def test_every_tab_module_exposes_its_label_css_and_build():
    import app

    tabs = app.tabs()
    assert [tab.__name__ for tab in tabs] == ["s11_workbench.demo_tab", "s11_workbench.story_tab",
                                              "s11_workbench.explorer_tab", "s11_workbench.lesson_tab",
                                              "s11_workbench.lab_tab"]
    assert tabs[0].LABEL == "8.11 会话持久化与多分支"
    assert [panel.__name__ for panel in app.panels()] == ["s11_workbench.classroom_tab"]
    for tab in tabs + app.panels():
        assert callable(tab.build) and tab.LABEL and isinstance(tab.CSS, str)
        assert tab.CSS in app.launch_options()["css"]   # each tab's own rules reach the page


def run_app(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "app.py"), *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "GRADIO_SERVER_PORT": "7860"})


def test_app_refuses_to_start_when_the_sessions_folder_is_a_file(tmp_path):
    blocker = tmp_path / "gradio_sessions"
    blocker.write_text("x", encoding="utf-8")
    result = run_app("--sessions-dir", str(blocker))
    assert result.returncode == 2
    assert "会话目录" in result.stderr and "是一个普通文件，不是文件夹" in result.stderr
    assert "Traceback" not in result.stderr
    assert "正在加载 Gradio" not in result.stdout   # refused before the slow import


def test_app_refuses_to_start_when_the_sessions_folder_is_under_a_file(tmp_path, capsys):
    import app

    blocker = tmp_path / "notes.txt"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        app.main(["--sessions-dir", str(blocker / "sessions")])
    assert exit_info.value.code == 2
    assert f"路径上的 {blocker} 是一个普通文件" in capsys.readouterr().err


def test_python_app_keeps_gradios_cache_private_and_removes_it_on_ctrl_c(tmp_path):
    """`python app.py` puts gradio's upload/download cache in a 0700 folder of its own and deletes it on Ctrl+C."""
    import signal
    import time
    import urllib.request

    from conftest import free_port

    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "GRADIO_TEMP_DIR"}
    env.update(TMPDIR=str(tmp_path), GRADIO_ANALYTICS_ENABLED="False")
    server = subprocess.Popen([sys.executable, str(REPO / "app.py"), "--port", str(port),
                               "--sessions-dir", str(tmp_path / "gradio_sessions")],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "app.py never answered"
                time.sleep(0.3)
        caches = list(tmp_path.glob("s11_run_*/gradio"))   # gradio's cache inside this run's private folder
        assert len(caches) == 1 and caches[0].is_dir()
        assert caches[0].parent.stat().st_mode & 0o777 == 0o700
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
        assert not caches[0].parent.exists()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_the_app_does_not_rebuild_gradios_monitoring_summary_after_every_event(tmp_path):
    # gradio turns its last 10,000 event records into a pandas table after every event unless told otherwise;
    # the app turns that off (it has no monitoring page) in a fresh interpreter, where the user set nothing.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADIO_ANALYTICS_")}
    code = (f"import app; demo = app.build_app({str(tmp_path / 's')!r}); demo.queue(); q = demo._queue; "
            "print(q.ANAYLTICS_CACHE_FREQUENCY, q.ANALYTICS_MAX_EVENTS)")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], env=env,
                         capture_output=True, text=True, timeout=120)
    frequency, kept = map(int, out.stdout.split()[-2:])
    assert frequency >= 10**6 and kept <= 1000, out.stderr


def test_the_server_hands_free_heap_pages_back_to_the_system_every_minute(monkeypatch):
    # glibc keeps freed pages in its heap; the app calls malloc_trim(0) from a daemon thread (a class's RSS drift)
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import app
    monkeypatch.setenv("S11_MALLOC_TRIM_SECONDS", "0")
    assert app.trim_memory_periodically() is False          # turned off by the environment: no thread
    monkeypatch.delenv("S11_MALLOC_TRIM_SECONDS")
    assert app.TRIM_SECONDS == 60
    before = {t.ident for t in threading.enumerate() if t.name == "s11-malloc-trim"}
    assert app.trim_memory_periodically(0.01) is True
    time.sleep(0.1)
    [thread] = [t for t in threading.enumerate() if t.name == "s11-malloc-trim" and t.ident not in before]
    assert thread.daemon and thread.is_alive()


def test_the_server_moves_its_start_up_heap_out_of_the_garbage_collector_before_it_serves(monkeypatch, tmp_path):
    # a full collection walks every tracked object: ~180,000 of them once the page is built, ~100 ms with the
    # process stopped; frozen, a full collection walks only what was made after start-up. In a child process:
    # frozen objects are never collected, and this test process builds many pages
    script = ("import gc, sys, tempfile; sys.path[:0] = ['code', '.']; import app; "
              "app.build_app(tempfile.mkdtemp()); frozen = app.settle_heap(); "
              "print(frozen, gc.get_freeze_count(), len(gc.get_objects()))")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"})
    frozen, count, tracked = map(int, out.stdout.split()[-3:])
    assert frozen == count > 100_000 and tracked < frozen // 20, out.stderr

    sys.path.insert(0, str(REPO))
    import app
    steps = []

    class Started(Exception):
        pass

    class Page:   # stands in for the built gradio app: serve() must settle the heap before it starts serving
        def launch(self, **options):
            steps.append("launch")
            raise Started

    monkeypatch.setattr(app, "build_app", lambda *args, **kwargs: Page())
    monkeypatch.setattr(app, "settle_heap", lambda: steps.append("settle"))
    monkeypatch.setattr(app, "launch_options", lambda *args, **kwargs: {})
    with pytest.raises(Started):
        app.serve(app.parse_args(["--sessions-dir", str(tmp_path)]))
    assert steps == ["settle", "launch"]


def test_the_page_scripts_are_read_from_their_js_files_and_combined_for_launch():
    import app
    from s11_workbench import explorer_tab

    script = (REPO / "code" / "s11_workbench" / "explorer_tab.js").read_text(encoding="utf-8")
    assert explorer_tab.JS == script
    js = app.launch_options()["js"]
    assert f"({script})();" in js and js.startswith("() => {")   # each page script runs once when the page loads
    assert app.FORGET_LINK_SECRETS_JS == (REPO / "code" / "s11_workbench" / "forget_link_secrets.js").read_text(
        encoding="utf-8")


def test_run_history_and_monitoring_are_off_and_the_footer_has_no_settings_link():
    # gradio 6.31 keeps the last 100 runs' inputs and outputs in localStorage unless run_history=False
    import inspect

    import gradio as gr

    import app
    options = app.launch_options()
    assert {"run_history", "enable_monitoring", "footer_links"} <= set(inspect.signature(gr.Blocks.launch).parameters)
    assert options["run_history"] is False and options["enable_monitoring"] is False
    assert "settings" not in options["footer_links"] and "runs" not in options["footer_links"]


def test_help_and_errors_of_the_command_line_read_in_chinese(capsys):
    import app
    with pytest.raises(SystemExit):
        app.parse_args(["--help"])
    text = capsys.readouterr().out
    assert text.startswith("用法：") and "选项" in text and "显示这段帮助后退出" in text
    assert "usage:" not in text and "show this help" not in text and "options:" not in text
    with pytest.raises(SystemExit):
        app.parse_args(["--students-per-address", "0"])
    assert "错误：" in capsys.readouterr().err


def test_allowed_host_names_come_from_the_command_line():
    import app
    from s11_workbench.host_guard import allowed_hosts
    args = app.parse_args(["--host", "0.0.0.0", "--allow-host", "lab.example.edu", "--allow-host", "Room-2.local"])
    names, any_ip = allowed_hosts(args.host, args.allow_host)
    assert names == ("127.0.0.1", "localhost", "[::1]", "lab.example.edu", "room-2.local") and any_ip
    # loopback only: the local names and the listening address itself (gradio checks itself under it), no more
    assert allowed_hosts("127.0.0.1", ["lab.example.edu"]) == (("127.0.0.1", "localhost", "[::1]"), False)
    assert allowed_hosts("127.0.0.2", ["lab.example.edu"]) == (("127.0.0.1", "localhost", "[::1]", "127.0.0.2"), False)
    assert allowed_hosts("fe80::1", ["lab.example.edu:443"]).names[3:] == ("[fe80::1]", "lab.example.edu:443")
