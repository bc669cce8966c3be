"""Shared fixtures: a free port and the workbench app launched in-process; how the suite is split over workers.

Importing gradio costs ~5 s, so it happens only inside the fixture (tests that never ask for
`app_server` stay fast and gradio-free).

pyproject.toml runs the suite on two pytest-xdist workers with `--dist loadgroup`. Every test file is one group
(so a module's server and browser context are built once, on one worker), except the files that run the benchmark
scripts and the layout test that walks benchmarks/: they share one group, because the scripts create and delete
scratch folders there while the walk would list them. The slowest groups are queued first so that neither worker
is left with a long file at the end.
"""

from __future__ import annotations

import functools
import os
import socket
import sys
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# Gradio recomputes a pandas summary of the last 10,000 events (a groupby and percentiles per function) after every
# event it completes, for its monitoring page; a sweep of a thousand events spends a fifth of its CPU there. The
# summary is never read by the app or the tests, so the test servers refresh it at most once a million events.
os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", "1000000")

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    """Ask the OS for an unused port (Gradio's server_port=0 does not work)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(demo, host: str = "127.0.0.1", **options) -> str:
    """demo.launch() on host:<free port>, in the background; returns the base URL (no trailing slash).
    Gradio's launch() ends by asking its own page with one 3-second HEAD and raises "When localhost is not
    accessible..." if that times out, which a loaded CI machine can do; a port that free_port() just named can also
    be taken by then. Either way the half-started server is closed and launched again on a new port (3 tries)."""
    for attempt in range(3):
        port = free_port()
        try:
            demo.launch(server_name=host, server_port=port, prevent_thread_lock=True, quiet=True, **options)
            return f"http://{host}:{port}"
        except (ValueError, OSError):
            demo.close()
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


@functools.cache
def tls_context():
    """One SSL context per process for every test client. httpx builds one for each client it makes, even for plain
    http, by reading the whole CA bundle (about 35 ms here), and httpx.get() / post() / stream() make a new client per
    call: the security sweeps spent seconds of CPU on contexts no request used."""
    import httpx
    return httpx.create_ssl_context()


def local_http(**options):
    """An httpx.Client for this machine's test servers (plain http on 127.0.0.0/8), sharing tls_context()."""
    import httpx
    return httpx.Client(verify=tls_context(), **options)


def local_transport(source: str):
    """An httpx transport that sends from the loopback address `source` (each its own connection pool)."""
    import httpx
    return httpx.HTTPTransport(local_address=source, verify=tls_context())


def gradio_client(url: str, **options):
    """gradio_client.Client for a test server on this machine. The URL is plain http, so there is no certificate to
    check; ssl_verify=False only stops it building a default SSL context (the CA bundle again) for each request."""
    from gradio_client import Client
    return Client(url, verbose=False, ssl_verify=False, **options)


@pytest.fixture(scope="session")
def sessions_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("gradio_sessions")


@pytest.fixture(scope="session")
def app_server(sessions_dir):
    """Launch app.build_app() on 127.0.0.1:<free port>; yields the base URL."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import app

    demo = app.build_app(sessions_dir)
    url = launch(demo, **app.launch_options(demo))
    try:
        yield url
    finally:
        demo.close()


@pytest.fixture(scope="session")
def browser():
    """Debian's chromium driven by Playwright (`playwright install` cannot download browsers here)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is absent (apt-get install chromium); playwright cannot download browsers here")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


# Groups that must run on the same worker: these run scripts that make and remove scratch folders in benchmarks/,
# and test_layout walks benchmarks/ (a folder vanishing mid-walk is a FileNotFoundError in Python 3.11).
SHARED_GROUPS = {"tests/test_layout.py": "benchmarks-folder", "tests/test_benchmarks_smoke.py": "benchmarks-folder",
                 "tests/store/test_export.py": "benchmarks-folder", "tests/import/test_import.py": "benchmarks-folder"}
# Rough seconds per group on an idle 2-core machine: a --durations=0 run of the whole suite, less the walks that now
# run at one look only (browser_tabs.looks), scaled by that run's wall time to an idle run's (0.78). Groups not named
# here count as short and keep their order.
SLOW_GROUPS = {"tests/browser/test_explorer_browser.py": 130, "tests/browser/test_explorer_pick_browser.py": 88,
               "tests/workbench/test_security_client.py": 54, "tests/browser/test_lesson_browser.py": 50,
               "tests/browser/test_agent_folders_browser.py": 39, "tests/browser/test_share_browser.py": 32,
               "tests/browser/test_undo_browser.py": 31, "tests/browser/test_class_browser.py": 27,
               "benchmarks-folder": 26, "tests/browser/test_browser.py": 24,
               "tests/browser/test_explorer_confirm_browser.py": 23, "tests/browser/test_lab_browser.py": 20,
               "tests/browser/test_chinese_browser.py": 19, "tests/browser/test_agent_reading_browser.py": 17,
               "tests/browser/test_local_storage_browser.py": 16, "tests/browser/test_story_browser.py": 16,
               "tests/browser/test_export_browser.py": 15, "tests/workbench/test_server_hardening.py": 13,
               "tests/workbench/test_app_client.py": 11, "tests/browser/test_converge_browser.py": 11,
               "tests/workbench/test_host_allowlist.py": 10}


@pytest.hookimpl(tryfirst=True)   # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    def group_of(item) -> str:
        path = Path(str(item.fspath)).resolve().relative_to(REPO).as_posix()
        return SHARED_GROUPS.get(path, path)

    for item in items:
        if not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group_of(item)))
    # a stable sort: the slow groups first, every other test in the order it was collected
    items.sort(key=lambda item: -SLOW_GROUPS.get(group_of(item), 0))
