"""scripts/screenshot.py — three screenshots of the 8.11 tab for the README: desktop light, desktop dark, phone (390 px)

    python scripts/screenshot.py [--out docs]

Starts the app (a free port, a temporary sessions folder named gradio_sessions/) → Debian's /usr/bin/chromium clicks
the button once → waits until the tree is an SVG and the three session files are filled in → full-page screenshots
docs/screenshot-light.png, docs/screenshot-dark.png (1400 px) and docs/screenshot-phone.png.
The result area has no collapsed panels, so after one click everything is open and nothing else needs a click.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SHOTS = {   # file name -> (viewport width, colour scheme)
    "screenshot-light.png": (1400, "light"),
    "screenshot-dark.png": (1400, "dark"),
    "screenshot-phone.png": (390, "light"),
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def shoot(browser, url: str, width: int, scheme: str, path: Path) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme,
                                  device_scale_factor=1)
    page = context.new_page()
    page.goto(f"{url}/?__theme={scheme}")
    page.wait_for_function("() => { const b = document.querySelector('#s11-run'); return b && !b.disabled; }")
    page.get_by_role("button", name="运行主会话").click()
    page.locator("#s11-tree svg[id^='mermaid']").filter(has_text="已恢复").wait_for(timeout=20_000)
    page.locator("#s11-file-3 pre").first.wait_for(timeout=20_000)
    page.evaluate("document.fonts.ready")
    page.mouse.move(0, 0)       # no hover highlight on the button just clicked
    page.wait_for_timeout(500)  # let layout and the icon fonts settle
    page.screenshot(path=str(path), full_page=True, type="png")
    context.close()
    print(f"wrote {path} ({path.stat().st_size // 1024} KB, {width} px, {scheme})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    import app

    with tempfile.TemporaryDirectory(prefix="s11-shot-") as workdir:
        # paths on the page start at the sessions folder's name (gradio_sessions/spaces/…): the temp folder's full name never shows
        demo = app.build_app(os.path.join(workdir, "gradio_sessions"))
        demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                    quiet=True, **app.launch_options(demo))
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for name, (width, scheme) in SHOTS.items():
                    shoot(browser, demo.local_url.rstrip("/"), width, scheme, out / name)
                browser.close()
        finally:
            demo.close()


if __name__ == "__main__":
    main()
