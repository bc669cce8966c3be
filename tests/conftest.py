"""Shared fixtures: a free port and the workbench app launched in-process.

Importing gradio costs ~5 s, so it happens only inside the fixture (tests that never ask for
`app_server` stay fast and gradio-free).
"""

from __future__ import annotations

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
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                quiet=True, **app.launch_options(demo))
    try:
        yield demo.local_url.rstrip("/")
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
