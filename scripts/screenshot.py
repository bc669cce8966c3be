"""scripts/screenshot.py — 给 README 拍两张工作台截图（浅色 / 深色）

    python scripts/screenshot.py [--out docs]

启动 app（空闲端口 + 临时会话目录）→ Debian 的 /usr/bin/chromium 点击按钮 → 等会话树画成 SVG
→ 展开“本次写入的文件” → 整页截图 docs/screenshot-light.png 与 docs/screenshot-dark.png。
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
VIEWPORT = {"width": 1400, "height": 900}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def shoot(browser, url: str, scheme: str, path: Path) -> None:
    context = browser.new_context(viewport=VIEWPORT, color_scheme=scheme, device_scale_factor=1)
    page = context.new_page()
    page.goto(f"{url}/?__theme={scheme}")
    page.get_by_role("button", name="运行主会话").click()
    page.locator("#s11-tree svg[id^='mermaid']").first.wait_for(timeout=20_000)
    page.get_by_role("button", name="本次写入的文件").click()
    page.locator("#s11-files pre").first.wait_for()
    page.get_by_role("button", name="会话 ≠ 代码").click()
    page.locator("#s11-drift").get_by_text("文件已修改").wait_for(timeout=20_000)
    page.mouse.move(0, 0)   # no hover highlight on the last clicked button
    page.wait_for_timeout(500)  # 让折叠动画与字体排版停下来
    page.screenshot(path=str(path), full_page=True, type="png")
    context.close()
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    import app

    with tempfile.TemporaryDirectory(prefix="s11-shot-") as sessions_dir:
        os.chdir(sessions_dir)  # 页面上显示相对路径 gradio_sessions/xxx.json，而不是临时目录的全名
        demo = app.build_app("gradio_sessions")
        demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True,
                    quiet=True, **app.launch_options())
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for scheme in ("light", "dark"):
                    shoot(browser, demo.local_url.rstrip("/"), scheme, out / f"screenshot-{scheme}.png")
                browser.close()
        finally:
            demo.close()
            os.chdir(REPO)


if __name__ == "__main__":
    main()
