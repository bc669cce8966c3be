"""The explorer's "your own agent folders" panel: only on a loopback-only server, only read, one click to import,
a followed session re-imports when it grows. Logic driven directly; the panel's presence checked in the app config."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

import app
from s11_workbench.agent_folders import (
    AgentFolders,
    Caller,
    Followed,
    access_problem,
    available_for,
    is_loopback,
)
from s11_workbench.explorer import Explorer, View
from s11_workbench.spaces import Limits, Spaces

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROOMY = Limits(creates_per_minute=10_000, create_burst=10_000, min_free_bytes=0)
PORT = 7860
# a click on the panel from the reader's own page: loopback peer, the server's own name and port, its own origin
LOCAL = Caller("127.0.0.1", f"127.0.0.1:{PORT}", PORT, f"http://127.0.0.1:{PORT}")


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
    assert (available_for(host) is None) is (local and host != "127.8.9.1")
    if not local:
        assert "只能在工作台只对本机开放时使用" in available_for(host)


@pytest.mark.parametrize("host", ["127.0.0.2", "127.8.9.1", "localhost.localdomain"])
def test_the_panel_needs_a_listening_address_its_pages_can_be_opened_under(host):
    # every click must come from a page opened as 127.0.0.1 / localhost / [::1]: another loopback address cannot be
    assert "要求 --host 是 127.0.0.1、localhost 或 ::1" in available_for(host)


def test_the_app_refuses_the_flag_on_a_server_reachable_from_other_machines(capsys):
    with pytest.raises(SystemExit) as stop:
        app.parse_args(["--agent-folders", "--host", "0.0.0.0"])
    assert stop.value.code == 2 and "只对本机开放" in capsys.readouterr().err
    assert app.parse_args(["--agent-folders"]).agent_folders is True


def test_listing_importing_and_following_from_this_machine(setup, home):
    spaces, folders = setup
    before = tree_digest(home)
    token = spaces.new_token()
    listing = folders.list(LOCAL)
    assert len(listing.rows) == 1 and listing.rows[0][0] == "Claude Code" and "找到 1 个会话" in listing.note
    page, followed = folders.import_row(LOCAL, token, View(), listing, 0, follow=True)
    assert page.notice.startswith("📥") and "正在跟随" in page.notice, page.notice
    store = spaces.open(token).store
    ids = {s["session_id"] for s in store.list_sessions()}
    assert page.view.session_id in ids and followed.path == listing.paths[0]
    nothing, same = folders.tick(LOCAL, token, page.view, followed)
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
    again, followed = folders.tick(LOCAL, token, page.view, followed)
    assert again is not None and again.notice.startswith("🔄"), again and again.notice
    now = {s["session_id"] for s in store.list_sessions()}
    assert now >= ids   # every node imported before is still there; the new turn lands in exactly one node
    grown_nodes = [sid for sid in now if "再补一个单元测试" in json.dumps(store.load(sid).messages, ensure_ascii=False)]
    assert len(grown_nodes) == 1
    assert folders.tick(LOCAL, token, again.view, followed)[0] is None
    assert tree_digest(home) == after and set(before) == set(after)   # only the agent itself wrote there


def agent_writes(session: Path, text: str, number: int) -> None:
    """The agent appends one user turn after its current end (the leaf that last-prompt names, then this chain)."""
    records = [json.loads(line) for line in session.read_text(encoding="utf-8").splitlines()]
    chained = [r for r in records if str(r.get("uuid", "")).startswith("aaaaaaaa-")]
    leaf = chained[-1]["uuid"] if chained else next(r["leafUuid"] for r in records if r.get("type") == "last-prompt")
    last = next(r for r in records if r.get("uuid") == leaf)
    grown = {**last, "uuid": f"aaaaaaaa-0000-4000-8000-{number:012d}", "parentUuid": leaf, "type": "user",
             "timestamp": f"2099-01-01T00:00:{number:02d}.000Z", "message": {"role": "user", "content": text}}
    moved = {"type": "last-prompt", "lastPrompt": text, "leafUuid": grown["uuid"], "sessionId": last["sessionId"]}
    with session.open("a", encoding="utf-8") as out:   # Claude Code writes last-prompt again after each turn
        out.write(json.dumps(grown, ensure_ascii=False) + "\n" + json.dumps(moved, ensure_ascii=False) + "\n")


def holding(store, text: str) -> list:
    return [s["session_id"] for s in store.list_sessions()
            if text in json.dumps(store.load(s["session_id"]).messages, ensure_ascii=False)]


def test_following_keeps_following_after_a_local_resume(setup):
    """Issue 42 item 5: a local 续写 on the followed node used to make every later agent turn vanish while the result
    line said 已重新导入. Now the reader's node stays as they left it, the agent's turns land in one child node that
    forks where the two diverged, every later turn lands there too, and the result line names that child."""
    spaces, folders = setup
    token = spaces.new_token()
    listing = folders.list(LOCAL)
    page, followed = folders.import_row(LOCAL, token, View(), listing, 0, follow=True)
    store = spaces.open(token).store
    followed_id = page.view.session_id
    imported = len(store.load(followed_id).messages)
    page = folders.explorer.resume(token, page.view, "我自己在页面上接着问一句")
    assert page.notice.startswith("✅"), page.notice
    mine = store.load(followed_id)
    kept_messages = list(mine.messages)
    session = Path(listing.paths[0])
    agent_writes(session, "Agent 之后的第一轮", 1)
    again, followed = folders.tick(LOCAL, token, page.view, followed)
    child_id = holding(store, "Agent 之后的第一轮")
    assert len(child_id) == 1 and child_id[0] != followed_id
    child = store.load(child_id[0])
    assert (child.parent_id, child.fork_point) == (followed_id, imported)   # forks where the two diverged
    assert store.load(followed_id).messages == kept_messages                 # the reader's turn is untouched
    assert f"子节点 `{child.session_id}`" in again.notice and "原样保留" in again.notice, again.notice
    assert again.view.session_id == child.session_id                         # the page shows where the agent is now
    # a second agent turn lands in the same child, nothing else changes
    agent_writes(session, "Agent 之后的第二轮", 2)
    third, followed = folders.tick(LOCAL, token, again.view, followed)
    assert holding(store, "Agent 之后的第二轮") == [child.session_id]
    assert store.load(followed_id).messages == kept_messages and "子节点" in third.notice
    assert [m["content"] for m in store.load(child.session_id).messages[-2:]] == ["Agent 之后的第一轮",
                                                                                  "Agent 之后的第二轮"]


def test_a_resume_on_the_child_too_grows_one_more_level_and_loses_nothing(setup):
    spaces, folders = setup
    token = spaces.new_token()
    listing = folders.list(LOCAL)
    page, followed = folders.import_row(LOCAL, token, View(), listing, 0, follow=True)
    store = spaces.open(token).store
    page = folders.explorer.resume(token, page.view, "读者 1")
    session = Path(listing.paths[0])
    agent_writes(session, "Agent 1", 1)
    page, followed = folders.tick(LOCAL, token, page.view, followed)
    child = page.view.session_id
    page = folders.explorer.resume(token, page.view, "读者 2")
    agent_writes(session, "Agent 2", 2)
    page, followed = folders.tick(LOCAL, token, page.view, followed)
    grandchild = store.load(page.view.session_id)
    assert grandchild.parent_id == child and grandchild.messages[-1]["content"] == "Agent 2"
    assert [m["content"] for m in store.load(child).messages[-2:]] == ["Agent 1", "读者 2"]
    assert holding(store, "读者 1") and holding(store, "读者 2")


@pytest.mark.parametrize("row", [5, -1, "0", None, True, 0.0])
def test_a_row_the_listing_does_not_have_writes_nothing(setup, row):
    spaces, folders = setup
    token = spaces.new_token()
    page, followed = folders.import_row(LOCAL, token, View(), folders.list(LOCAL), row)
    assert "请先在「💻 本机 Agent 文件夹」的表格里点一行" in page.notice and followed == Followed()
    assert spaces.open(token).store.list_sessions() == []


def test_a_request_from_another_machine_is_refused_even_if_the_panel_exists(setup):
    spaces, folders = setup
    token = spaces.new_token()
    listing = folders.list(LOCAL)
    remote = replace(LOCAL, client="192.168.1.20")
    page, _ = folders.import_row(remote, token, View(), listing, 0)
    assert "只对在这台电脑上打开的页面开放" in page.notice and spaces.open(token).store.list_sessions() == []
    with pytest.raises(Exception, match="只对在这台电脑上打开的页面开放"):
        folders.list(remote)


def test_a_named_folder_that_does_not_exist_is_a_clear_error(setup, tmp_path):
    _, folders = setup
    with pytest.raises(Exception, match="没有这个文件夹"):
        folders.list(LOCAL, str(tmp_path / "nowhere"))


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
    risk = folders.at_risk(LOCAL)
    assert [(row[0], row[1]) for row in risk.rows] == [("Claude Code", "快要被删掉的会话"),
                                                        ("Codex CLI", "压缩了的 Codex 会话")]
    assert risk.rows[0][2].startswith("还剩 3.0 天就会被删除") and "已压缩" in risk.rows[1][2]
    assert "2 个会话快要被 Agent 删掉" in risk.note and "默认 30 天" in risk.note
    token = spaces.new_token()
    page = folders.keep_all(LOCAL, token, View(), risk)
    assert page.notice == "🛟 保留了 2/2 个快要被删掉的会话：写入 2 个节点，0 个节点早已保留", page.notice
    store = spaces.open(token).store
    kept = {row["title"] for row in store.list_sessions()}
    assert kept == {"快要被删掉的会话", "压缩了的 Codex 会话"}
    files = tree_digest(Path(store.storage_dir))
    again = folders.keep_all(LOCAL, token, page.view, folders.at_risk(LOCAL))
    assert again.notice == "🛟 保留了 2/2 个快要被删掉的会话：写入 0 个节点，2 个节点早已保留", again.notice
    assert tree_digest(Path(store.storage_dir)) == files and tree_digest(home) == before


def test_keeping_from_another_machine_or_with_nothing_listed_writes_nothing(setup, home):
    spaces, folders = setup
    at_risk_home(home)
    risk = folders.at_risk(LOCAL)
    token = spaces.new_token()
    refused = folders.keep_all(replace(LOCAL, client="192.168.1.20"), token, View(), risk)
    assert "只对在这台电脑上打开的页面开放" in refused.notice
    empty = folders.keep_all(LOCAL, token, View(), type(risk)())
    assert "没有要保留的会话" in empty.notice
    assert spaces.open(token).store.list_sessions() == []
    from s11_workbench.explorer import ExplorerError
    with pytest.raises(ExplorerError):
        folders.at_risk(replace(LOCAL, client="10.0.0.7"))


# ── issue 41 item 1: who may reach the panel (DNS rebinding, tunnels, other local accounts) ──────────────
KEY = "k-" + "7" * 30
REFUSED = {   # a click that is not the reader's own page -> the Chinese sentence that says why
    "a rebinding page (its own name)": (Caller("127.0.0.1", f"evil.example:{PORT}", PORT, f"http://evil.example:{PORT}",
                                               KEY), "把服务器叫作「evil.example"),
    "a rebinding page, no port": (Caller("127.0.0.1", "evil.example", PORT, "http://evil.example", KEY),
                                  "把服务器叫作"),
    "a class address of this machine": (Caller("127.0.0.1", f"10.0.0.5:{PORT}", PORT, f"http://10.0.0.5:{PORT}", KEY),
                                        "把服务器叫作「10.0.0.5"),
    "another port's name": (Caller("127.0.0.1", "127.0.0.1:8080", PORT, "http://127.0.0.1:8080", KEY), "把服务器叫作"),
    "no Host at all": (Caller("127.0.0.1", None, PORT, f"http://127.0.0.1:{PORT}", KEY), "把服务器叫作"),
    "another machine": (Caller("192.168.1.20", f"127.0.0.1:{PORT}", PORT, f"http://127.0.0.1:{PORT}", KEY),
                        "只对在这台电脑上打开的页面开放"),
    "a tunnel that rewrites Host": (Caller("127.0.0.1", f"localhost:{PORT}", PORT, "https://abc.tunnel.example", KEY),
                                    "请求的来源不是它"),
    "a script without Origin": (Caller("127.0.0.1", f"127.0.0.1:{PORT}", PORT, None, KEY), "请求的来源不是它"),
    "an origin on another port": (Caller("127.0.0.1", f"127.0.0.1:{PORT}", PORT, "http://127.0.0.1:9999", KEY),
                                  "请求的来源不是它"),
    "another local account (no key)": (LOCAL, "启动时终端里打印的那个链接"),
    "a wrong key": (replace(LOCAL, key=KEY[:-1] + "8"), "启动时终端里打印的那个链接"),
    "a non-ASCII key": (replace(LOCAL, key="钥匙"), "启动时终端里打印的那个链接"),
    "not a caller": ("127.0.0.1", "只对在这台电脑上打开的页面开放"),
}


@pytest.fixture
def locked(tmp_path, home):
    """The panel as `python app.py --agent-folders` builds it: a key printed only in the terminal."""
    spaces = Spaces(tmp_path / "sessions", limits=ROOMY)
    explorer = Explorer(spaces, export_root=str(tmp_path / "exports"))
    return spaces, AgentFolders(explorer, home=str(home), env={}, key=KEY)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_only_the_readers_own_page_reaches_the_agent_folders(locked, home, case):
    caller, why = REFUSED[case]
    spaces, folders = locked
    token = spaces.new_token()
    listing = AgentFolders(folders.explorer, home=str(home), env={}).list(LOCAL)   # what a real listing holds
    with pytest.raises(Exception, match=why):
        folders.list(caller)                                    # nothing listed
    page, followed = folders.import_row(caller, token, View(), listing, 0, follow=True)
    assert why in page.notice and followed == Followed()        # nothing imported, nothing followed
    assert spaces.open(token).store.list_sessions() == []
    following = Followed(listing.paths[0], None, "x")          # a follow that was started earlier: never re-imported
    assert folders.tick(caller, token, View(), following) == (None, following)
    assert spaces.open(token).store.list_sessions() == []


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost", "[::1]"])
def test_the_readers_own_page_with_the_key_reaches_them_under_each_local_name(locked, name):
    spaces, folders = locked
    caller = Caller("127.0.0.1" if name != "[::1]" else "::1", f"{name}:{PORT}", PORT, f"http://{name}:{PORT}", KEY)
    assert access_problem(caller, KEY) is None
    token = spaces.new_token()
    listing = folders.list(caller)
    page, _ = folders.import_row(caller, token, View(), listing, 0)
    assert page.notice.startswith("📥") and spaces.open(token).store.list_sessions() != []
