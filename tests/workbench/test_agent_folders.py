"""The explorer's "your own agent folders" panel: only on a loopback-only server, only read, one click to import,
a followed session re-imports when it grows. Logic driven directly; the panel's presence checked in the app config."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

import app
from s11_workbench.agent_folders import AgentFolders, Followed, available_for, is_loopback
from s11_workbench.explorer import Explorer, View
from s11_workbench.spaces import Limits, Spaces

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)


@pytest.fixture
def home(tmp_path) -> Path:
    """A home folder with one Claude Code session (and its subagent folder) where Claude Code keeps them."""
    project = tmp_path / "home" / ".claude" / "projects" / "-home-dev-api"
    project.mkdir(parents=True)
    shutil.copy(EXAMPLES / "claude-code-rate-limit.jsonl", project / "3f1c-session.jsonl")
    shutil.copytree(EXAMPLES / "claude-code-rate-limit", project / "3f1c-session")
    return tmp_path / "home"


@pytest.fixture
def setup(tmp_path, home):
    spaces = Spaces(tmp_path / "sessions", limits=ROOMY)
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    return spaces, AgentFolders(explorer, home=str(home), env={})


def tree_digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("host, local", [("127.0.0.1", True), ("127.8.9.1", True), ("::1", True),
                                         ("localhost", True), ("0.0.0.0", False), ("192.168.1.20", False),
                                         ("", False), (None, False), ("example.com", False)])
def test_only_a_loopback_server_may_show_the_panel(host, local):
    assert is_loopback(host) is local
    assert (available_for(host) is None) is local
    if not local:
        assert "只能在工作台只对本机开放时使用" in available_for(host)


def test_the_app_refuses_the_flag_on_a_server_reachable_from_other_machines(capsys):
    with pytest.raises(SystemExit) as stop:
        app.parse_args(["--agent-folders", "--host", "0.0.0.0"])
    assert stop.value.code == 2 and "只对本机开放" in capsys.readouterr().err
    assert app.parse_args(["--agent-folders"]).agent_folders is True


def test_listing_importing_and_following_from_this_machine(setup, home):
    spaces, folders = setup
    before = tree_digest(home)
    token = spaces.new_token()
    listing = folders.list("127.0.0.1")
    assert len(listing.rows) == 1 and listing.rows[0][0] == "Claude Code" and "找到 1 个会话" in listing.note
    page, followed = folders.import_row("127.0.0.1", token, View(), listing, 0, follow=True)
    assert page.notice.startswith("📥") and "正在跟随" in page.notice, page.notice
    store = spaces.open(token).store
    ids = {s["session_id"] for s in store.list_sessions()}
    assert page.view.session_id in ids and followed.path == listing.paths[0]
    nothing, same = folders.tick("127.0.0.1", token, page.view, followed)
    assert nothing is None and same == followed
    # the agent writes one more turn: the followed session is imported again, same nodes updated
    session = Path(listing.paths[0])
    records = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
    leaf = next(r["leafUuid"] for r in records if r.get("type") == "last-prompt")
    last = next(r for r in records if r.get("uuid") == leaf)
    grown = {**last, "uuid": "aaaaaaaa-0000-4000-8000-000000000001", "parentUuid": leaf, "type": "user",
             "timestamp": "2099-01-01T00:00:00.000Z", "message": {"role": "user", "content": "再补一个单元测试"}}
    with session.open("a", encoding="utf-8") as out:
        out.write(json.dumps(grown, ensure_ascii=False) + "\n")
    after = tree_digest(home)
    again, followed = folders.tick("127.0.0.1", token, page.view, followed)
    assert again is not None and again.notice.startswith("🔄"), again and again.notice
    now = {s["session_id"] for s in store.list_sessions()}
    assert now >= ids   # every node imported before is still there; the new turn lands in exactly one node
    grown_nodes = [sid for sid in now if "再补一个单元测试" in json.dumps(store.load(sid).messages, ensure_ascii=False)]
    assert len(grown_nodes) == 1
    assert folders.tick("127.0.0.1", token, again.view, followed)[0] is None
    assert tree_digest(home) == after and set(before) == set(after)   # only the agent itself wrote there


@pytest.mark.parametrize("row", [5, -1, "0", None, True, 0.0])
def test_a_row_the_listing_does_not_have_writes_nothing(setup, row):
    spaces, folders = setup
    token = spaces.new_token()
    page, followed = folders.import_row("127.0.0.1", token, View(), folders.list("127.0.0.1"), row)
    assert "请先在「💻 本机 Agent 文件夹」的表格里点一行" in page.notice and followed == Followed()
    assert spaces.open(token).store.list_sessions() == []


def test_a_request_from_another_machine_is_refused_even_if_the_panel_exists(setup):
    spaces, folders = setup
    token = spaces.new_token()
    listing = folders.list("127.0.0.1")
    page, _ = folders.import_row("192.168.1.20", token, View(), listing, 0)
    assert "只对在这台电脑上打开的页面开放" in page.notice and spaces.open(token).store.list_sessions() == []
    with pytest.raises(Exception, match="只对在这台电脑上打开的页面开放"):
        folders.list("192.168.1.20")


def test_a_named_folder_that_does_not_exist_is_a_clear_error(setup, tmp_path):
    _, folders = setup
    with pytest.raises(Exception, match="没有这个文件夹"):
        folders.list("127.0.0.1", str(tmp_path / "nowhere"))


def test_the_panel_and_its_events_exist_only_with_the_flag(tmp_path, home):
    def ids(demo):
        config = demo.get_config_file()
        return {c.get("props", {}).get("elem_id") for c in config["components"]}
    assert "s11x-agents-table" not in ids(app.build_app(tmp_path / "a"))
    assert "s11x-agents-table" in ids(app.build_app(tmp_path / "b", agent_folders={"home": str(home), "env": {}}))


# ── issue 44: sessions the agents are about to delete ────────────────────────────────────────
def at_risk_home(home: Path) -> None:
    """Beside the fixture's fresh session: a Claude Code session 27 days old (deleted at 30), and a compressed Codex
    rollout; Claude's settings keep the default period."""
    import os
    import time

    import zstandard
    project = home / ".claude" / "projects" / "-home-dev-api"
    old = project / "0ld-session.jsonl"
    lines = [{"type": "user", "uuid": "o1", "parentUuid": None, "sessionId": "0ld-session", "cwd": "/api",
              "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": "快要被删掉的会话"}},
             {"type": "assistant", "uuid": "o2", "parentUuid": "o1", "sessionId": "0ld-session",
              "timestamp": "2026-01-01T00:00:05.000Z",
              "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "好"}],
                          "usage": {"input_tokens": 10, "output_tokens": 2}}}]
    old.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    stamp = time.time() - 27 * 86400
    os.utime(old, (stamp, stamp))
    rollout = ('{"timestamp":"2026-05-01T00:00:00Z","type":"session_meta","payload":{"id":"c1","cwd":"/x"}}\n'
               '{"timestamp":"2026-05-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user",'
               '"content":[{"type":"input_text","text":"压缩了的 Codex 会话"}]}}\n')
    day = home / ".codex" / "sessions" / "2026" / "05" / "01"
    day.mkdir(parents=True)
    (day / "rollout-2026-05-01T00-00-00-c1.jsonl.zst").write_bytes(zstandard.ZstdCompressor().compress(rollout.encode()))


def test_the_panel_lists_what_the_agents_will_delete_and_keeps_it_all_in_one_click(setup, home):
    spaces, folders = setup
    at_risk_home(home)
    before = tree_digest(home)
    risk = folders.at_risk("127.0.0.1")
    assert [(row[0], row[1]) for row in risk.rows] == [("Claude Code", "快要被删掉的会话"),
                                                        ("Codex CLI", "压缩了的 Codex 会话")]
    assert risk.rows[0][2].startswith("还剩 3.0 天就会被删除") and "已压缩" in risk.rows[1][2]
    assert "2 个会话快要被 Agent 删掉" in risk.note and "默认 30 天" in risk.note
    token = spaces.new_token()
    page = folders.keep_all("127.0.0.1", token, View(), risk)
    assert page.notice == "🛟 保留了 2/2 个快要被删掉的会话：写入 2 个节点，0 个节点早已保留", page.notice
    store = spaces.open(token).store
    kept = {row["title"] for row in store.list_sessions()}
    assert kept == {"快要被删掉的会话", "压缩了的 Codex 会话"}
    files = tree_digest(Path(store.storage_dir))
    again = folders.keep_all("127.0.0.1", token, page.view, folders.at_risk("127.0.0.1"))
    assert again.notice == "🛟 保留了 2/2 个快要被删掉的会话：写入 0 个节点，2 个节点早已保留", again.notice
    assert tree_digest(Path(store.storage_dir)) == files and tree_digest(home) == before


def test_keeping_from_another_machine_or_with_nothing_listed_writes_nothing(setup, home):
    spaces, folders = setup
    at_risk_home(home)
    risk = folders.at_risk("127.0.0.1")
    token = spaces.new_token()
    refused = folders.keep_all("192.168.1.20", token, View(), risk)
    assert "只对在这台电脑上打开的页面开放" in refused.notice
    empty = folders.keep_all("127.0.0.1", token, View(), type(risk)())
    assert "没有要保留的会话" in empty.notice
    assert spaces.open(token).store.list_sessions() == []
    from s11_workbench.explorer import ExplorerError
    with pytest.raises(ExplorerError):
        folders.at_risk("10.0.0.7")
