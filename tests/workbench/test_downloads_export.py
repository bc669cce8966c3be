"""Issue 40, the redacted-export budget: the explorer's export click streams both formats into their files.

- the .md and .html downloads hold exactly the store's redacted export (the same bytes a joined string would give);
- the preview is the start of the .md file with its line breaks as written ("\\r\\n" in a message stays "\\r\\n"),
  on the first click and on a click that reuses the unchanged files alike (before, the reused preview read the
  file with universal newlines and showed "\\n").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from s11_workbench.explorer import Explorer, View
from s11_workbench.spaces import Limits, Spaces

ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)


@pytest.fixture
def spaces(tmp_path) -> Spaces:
    return Spaces(tmp_path / "sessions", limits=ROOMY)


@pytest.fixture
def explorer(spaces, tmp_path) -> Explorer:
    return Explorer(spaces, export_root=str(tmp_path / "exports"))


def test_export_files_are_the_redacted_export_and_the_preview_keeps_its_line_breaks(explorer, spaces):
    token = spaces.new_token()
    store = spaces.open(token).store
    messages = [{"role": "user", "content": "Windows 的日志：\r\nERROR 1\r\n联系 ops@example.com 👀"},
                {"role": "assistant", "content": [{"type": "text", "text": "看到了\r\n```\r\nx = 1\r\n```"}]}]
    session_id = store.create_session("换行 ✅", messages)
    first = explorer.export(token, explorer.select(token, View(), session_id).view)
    again = explorer.export(token, first.view)
    assert "用的是上次导出的文件" in again.notice and again.downloads == first.downloads
    markdown_path, html_path = (Path(path) for path in first.downloads)
    assert markdown_path.read_bytes() == store.export_markdown(session_id).encode("utf-8")
    assert html_path.read_bytes() == store.export_html(session_id).encode("utf-8")
    assert first.preview == again.preview == store.export_markdown(session_id)
    assert "\r\nERROR 1\r\n" in again.preview and "ops@example.com" not in again.preview
