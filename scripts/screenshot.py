"""scripts/screenshot.py — 给 README 拍三张 8.11 标签页截图：桌面浅色、桌面深色、手机（390 px）

    python scripts/screenshot.py [--out docs]

启动 app（空闲端口 + 临时会话目录 gradio_sessions/）→ Debian 的 /usr/bin/chromium 点一次按钮 → 等会话树画成 SVG、
三个会话文件填好 → 整页截图 docs/screenshot-light.png、docs/screenshot-dark.png（1400 px）与 docs/screenshot-phone.png。
结果区里没有折叠面板，点一次之后所有内容都已展开，所以不需要再点别的。
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
    page.wait_for_timeout(500)  # 让排版与图标字体停下来
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
        # 页面上的路径从会话目录名写起（gradio_sessions/spaces/…），临时目录的全名不会出现在截图里
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
