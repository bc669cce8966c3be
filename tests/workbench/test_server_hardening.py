"""Server hardening (issue 18 items 4, 5, 6, 11, 12, 16; issue 19 item 6), driven over HTTP.

One app is launched in-process on a free 127.0.0.1 port with small limits; every test speaks to it from its own
loopback source address (127.0.0.x), so per-address budgets of one test never touch another's. Request framings
are written byte by byte on raw sockets (httpx would normalise them). The temp-folder test starts `python app.py`
as a subprocess and stops it with SIGTERM and SIGHUP.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import REPO, free_port, launch, local_transport, tls_context

httpx = pytest.importorskip("httpx")

MB = 1024 * 1024
CJK = re.compile(r"[\u4e00-\u9fff]")
UPLOAD_LIMIT = 64 * 1024


# ── the app ──────────────────────────────────────────────────────────────────────────────
@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import app
    from s11_workbench.spaces import Limits

    root = tmp_path_factory.mktemp("hardening_sessions")
    limits = Limits(max_upload_bytes=UPLOAD_LIMIT, uploads_per_minute=3, create_burst=3, creates_per_minute=3,
                    new_spaces_per_minute=1000, queued_per_visitor=2,
                    queued_bytes_per_visitor=6 * MB)
    demo = app.build_app(root, teacher_secret="t-" + secrets.token_hex(8), limits=limits)
    port = int(launch(demo, **app.launch_options(demo)).rsplit(":", 1)[1])
    config = httpx.get(f"http://127.0.0.1:{port}/config", timeout=30, verify=tls_context()).json()
    fns = {dep.get("api_name"): index for index, dep in enumerate(config["dependencies"])}
    fns.update({dep.get("api_name"): dep["id"] for dep in config["dependencies"] if "id" in dep})
    try:
        yield {"demo": demo, "port": port, "url": f"http://127.0.0.1:{port}", "fns": fns, "root": root}
    finally:
        demo.close()


# ── raw HTTP ─────────────────────────────────────────────────────────────────────────────
def raw(port: int, head: str, chunks=(), source: str = "127.0.0.1", timeout: float = 20.0):
    """Send head (CRLF lines, no blank line at the end) and then each chunk as is; stop sending as soon as the
    server answers. Returns (status, body text, bytes of body sent)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    answer, sent = b"", 0
    try:
        sock.sendall(head.encode("latin-1") + b"\r\n\r\n")
        for chunk in chunks:
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                piece = sock.recv(65536)
            except (TimeoutError, ConnectionResetError):
                break
            if not piece:
                break
            answer += piece
            header, _, body = answer.partition(b"\r\n\r\n")
            length = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", header)
            if length and len(body) >= int(length.group(1)):
                break
    finally:
        sock.close()
    header, _, body = answer.partition(b"\r\n\r\n")
    status = int(header.split(b" ", 2)[1]) if header.startswith(b"HTTP/") else None
    return status, body.decode("utf-8", "replace"), sent


def chunked(data: bytes, size: int = 64 * 1024, last: bool = True):
    for start in range(0, len(data), size):
        piece = data[start:start + size]
        yield b"%x\r\n" % len(piece) + piece + b"\r\n"
    if last:
        yield b"0\r\n\r\n"


def multipart(content: bytes, name: str = "notes.jsonl") -> tuple[str, bytes]:
    boundary = "s11" + secrets.token_hex(8)
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode() + content + f"\r\n--{boundary}--\r\n".encode()
    return boundary, body


def client(source: str) -> httpx.Client:
    return httpx.Client(transport=local_transport(source), timeout=60)


def call(http: httpx.Client, url: str, api_name: str, data: list):
    """The simple API: POST /call/<name>, then its SSE stream. Returns ("complete", outputs) or ("error", text)."""
    response = http.post(f"{url}/gradio_api/call/{api_name}", json={"data": data})
    if response.status_code != 200:
        return "refused", response.json().get("detail")
    event_id = response.json()["event_id"]
    kind = None
    with http.stream("GET", f"{url}/gradio_api/call/{api_name}/{event_id}") as stream:
        for line in stream.iter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and kind in ("complete", "error"):
                return kind, json.loads(line[5:].strip() or "null")
    return kind, None


def join(port: int, fn_index: int, data: list, source: str, session_hash: str | None = None,
         http: httpx.Client | None = None):
    """POST /gradio_api/queue/join as a page does; returns (status, json)."""
    body = json.dumps({"data": data, "event_data": None, "fn_index": fn_index, "trigger_id": None,
                       "session_hash": session_hash or secrets.token_hex(6)}).encode()
    if http is None:
        with client(source) as http:
            return join(port, fn_index, data, source, session_hash, http)
    response = http.post(f"http://127.0.0.1:{port}/gradio_api/queue/join", content=body,
                         headers={"content-type": "application/json"})
    return response.status_code, response.json()


# ── 18.4 request bodies: capped whatever the framing ─────────────────────────────────────
def test_a_chunked_event_body_is_capped_while_it_is_read(server):
    port = server["port"]
    head = (f"POST /gradio_api/queue/join HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked")

    def huge():   # 64 MB of one JSON string, chunk by chunk (never built in memory here either)
        yield from chunked(b'{"data": ["', last=False)
        piece = b"x" * (64 * 1024)
        for _ in range(1024):
            yield b"%x\r\n" % len(piece) + piece + b"\r\n"

    status, text, sent = raw(port, head, huge(), source="127.0.0.11")
    assert status == 413 and CJK.search(text) and "上限" in text, (status, text)
    assert sent < 32 * MB   # answered while the body was still coming: the rest was never read
    # a chunked upload declares no size: refused before a byte is stored
    boundary, body = multipart(b"{}\n")
    status, text, _ = raw(port, f"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nTransfer-Encoding: chunked\r\n"
                          f"Content-Type: multipart/form-data; boundary={boundary}", chunked(body),
                          source="127.0.0.11")
    assert status == 411 and "Content-Length" in text and CJK.search(text)
    # an ordinary small chunked event still works (the cap is not a ban on chunking)
    ok = json.dumps({"data": [None], "event_data": None, "fn_index": server["fns"]["enter_space"],
                     "trigger_id": None, "session_hash": "chunky1"}).encode()
    status, text, _ = raw(port, head, chunked(ok), source="127.0.0.11")
    assert status == 200 and "event_id" in text, (status, text)


# ── 18.5 the upload guard reads headers the way the server does ──────────────────────────
def upload_head(port: int, boundary: str, length: int, content_type: str = "multipart/form-data",
                extra: str = "") -> str:
    return (f"POST /gradio_api/upload HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: {content_type}; boundary={boundary}\r\nContent-Length: {length}{extra}")


def test_every_upload_framing_meets_the_size_and_rate_rules(server):
    port = server["port"]
    big = b'{"type": "user"}\n' * (200 * 1024 // 17)        # > UPLOAD_LIMIT + multipart overhead
    boundary, body = multipart(big)
    # the plain spelling was always refused; the mixed-case one slipped through as "not an upload"
    for spelling in ("multipart/form-data", "Multipart/Form-Data", "MULTIPART/FORM-DATA"):
        status, text, _ = raw(port, upload_head(port, boundary, len(body), spelling), [body], source="127.0.0.21")
        assert status == 413 and "上限" in text, (spelling, status, text)
    # Content-Length next to chunked encoding: the guard saw 20 bytes, the server read the chunks
    status, text, _ = raw(port, upload_head(port, boundary, 20, extra="\r\nTransfer-Encoding: chunked"), chunked(body),
                          source="127.0.0.22")
    assert status == 400 and "Transfer-Encoding" in text and CJK.search(text), (status, text)
    # two Content-Type headers: the guard took the last (JSON), the upload route the first (multipart)
    status, text, _ = raw(port, upload_head(port, boundary, len(body), extra="\r\nContent-Type: application/json"),
                          [body], source="127.0.0.23")
    assert status == 400 and "Content-Type" in text and CJK.search(text), (status, text)
    status, text, _ = raw(port, upload_head(port, boundary, 20, extra=f"\r\nContent-Length: {len(body)}"),
                          [body], source="127.0.0.23")
    assert status == 400   # two different lengths (h11 itself refuses these; the guard would too)
    # the rate rule holds for every spelling: 3 uploads a minute from one address, the 4th is refused
    boundary, small = multipart(b'{"type": "user"}\n')
    statuses = []
    for spelling in ("multipart/form-data", "Multipart/form-data", "multipart/FORM-data", "mULTIPART/form-data"):
        status, text, _ = raw(port, upload_head(port, boundary, len(small), spelling), [small], source="127.0.0.24")
        statuses.append(status)
    assert statuses == [200, 200, 200, 429], statuses
    assert "频繁" in text


# ── 18.6 per-visitor bound on the queue; the one-at-a-time lab is served in turn ─────────
def cancel(port: int, fn_index: int, event_id: str, session_hash: str) -> None:
    httpx.post(f"http://127.0.0.1:{port}/gradio_api/cancel",
               json={"session_hash": session_hash, "fn_index": fn_index, "event_id": event_id}, timeout=30,
               verify=tls_context())


def test_one_visitor_cannot_fill_the_queue(server):
    port, fns = server["port"], server["fns"]
    kill, other, slower = fns["lab_kill"], fns["lab_ids"], fns["lab_drift"]
    script = [join(port, kill, [], "127.0.0.41") for _ in range(4)]
    assert [status for status, _ in script] == [200, 400, 400, 400], script
    refusal = script[1][1]["detail"]
    assert "一次只跑一个" in refusal and CJK.search(refusal)
    # a classmate on another address is not put behind the script's runs: she gets in at once
    queued = []   # (fn, event id, session hash) of runs that need not happen: cancelled at the end
    status, answer = join(port, kill, [], "127.0.0.42", "classmate")
    assert status == 200 and "event_id" in answer
    queued.append((kill, answer["event_id"], "classmate"))
    # the bytes a visitor may hold: 4 MB queued (behind the two runs above), another 4 MB refused
    status, answer = join(port, kill, ["y" * (4 * MB)], "127.0.0.43", "heavy")
    assert status == 200
    queued.append((kill, answer["event_id"], "heavy"))
    status, answer = join(port, other, ["y" * (4 * MB)], "127.0.0.43")
    assert status == 400 and "MB" in answer["detail"] and CJK.search(answer["detail"]), answer
    # and how many events in all (2 here): one queued, one running, a third refused
    status, answer = join(port, kill, [], "127.0.0.44", "busy")
    queued.append((kill, answer["event_id"], "busy"))
    with client("127.0.0.44") as http, ThreadPoolExecutor(2) as pool:   # both in flight at once
        answers = list(pool.map(lambda fn: join(port, fn, [], "127.0.0.44", http=http), (slower, other)))
    assert sorted(status for status, _ in answers) == [200, 400], answers
    assert "每位同学最多 2 个" in next(answer["detail"] for status, answer in answers if status == 400)
    # a space token counts as a visitor too: the same space from two addresses shares one allowance
    with client("127.0.0.45") as http:
        _, (token, _teacher) = call(http, server["url"], "enter_space", [None])
    first = join(port, kill, [token], "127.0.0.45", "two-homes")
    second = join(port, kill, [token], "127.0.0.46")
    assert first[0] == 200 and second[0] == 400 and "你的空间" in second[1]["detail"], (first, second)
    queued.append((kill, first[1]["event_id"], "two-homes"))
    for fn_index, event_id, session_hash in queued:
        cancel(port, fn_index, event_id, session_hash)
    # a visitor whose turn is over may queue again: the script's first run is the only one left
    status, answer = join(port, kill, [], "127.0.0.42", "classmate")
    assert status == 200
    cancel(port, kill, answer["event_id"], "classmate")


# ── 18.11 the create budget holds per address, however many spaces it mints ──────────────
def test_new_spaces_do_not_multiply_the_create_budget(server):
    url = server["url"]
    outcomes = []
    with client("127.0.0.51") as http:
        for _ in range(6):
            kind, value = call(http, url, "enter_space", [None])
            assert kind == "complete", value
            kind, outputs = call(http, url, "run_demo", [value[0]])
            outcomes.append(outputs[0] if kind == "complete" else f"{kind}: {outputs}")
    done = [text for text in outcomes if text.startswith("✅")]
    refused = [text for text in outcomes if text.startswith("⚠️")]
    assert len(done) == 3 and len(refused) == 3, outcomes          # create_burst=3 for the whole address
    assert all("同一地址" in text for text in refused)
    with client("127.0.0.52") as http:                              # a classmate still has her own budget
        _, (token, _teacher) = call(http, url, "enter_space", [None])
        kind, outputs = call(http, url, "run_demo", [token])
    assert kind == "complete" and outputs[0].startswith("✅"), outputs


# ── 18.16 the teacher's list is cached, and right after a student writes ─────────────────
def test_the_teacher_list_does_not_walk_every_file_each_click(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "code"))
    from s11_session import SessionNode
    from s11_workbench import spaces as spaces_module

    now = [1000.0]
    spaces = spaces_module.Spaces(tmp_path, teacher_secret="t", clock=lambda: now[0])
    owned = []
    for _ in range(4):
        space = spaces.open(spaces.new_token())
        for number in range(3):
            space.store.save(SessionNode(title=f"s{number}", messages=[{"role": "user", "content": "hi"}]))
        owned.append(space)
    first = spaces.list_spaces("t")
    assert sorted(row["sessions"] for row in first) == [3, 3, 3, 3]
    walked = []
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda path=".": walked.append(os.fspath(path)) or real_scandir(path))
    assert spaces.list_spaces("t") == first
    assert walked == []                                  # the second click reads no folder's files
    # a student saves a session: the very next list shows it (the folder's mtime changed)
    owned[0].store.save(SessionNode(title="new", messages=[{"role": "user", "content": "more"}]))
    row = next(r for r in spaces.list_spaces("t") if r["space_id"] == owned[0].space_id)
    assert row["sessions"] == 4 and row["bytes"] == spaces_module.folder_bytes(owned[0].folder)
    assert all(path.startswith(owned[0].folder) for path in walked)   # only that space was walked again
    # a write that leaves the folder's mtime alone is seen once the short TTL has passed
    path = next(Path(owned[1].folder).glob("*.json"))
    stamp = os.stat(owned[1].folder).st_mtime_ns
    with open(path, "ab") as handle:
        handle.write(b" " * 5000)
    os.utime(owned[1].folder, ns=(stamp, stamp))
    now[0] += spaces_module.ROW_CACHE_SECONDS + 1
    row = next(r for r in spaces.list_spaces("t") if r["space_id"] == owned[1].space_id)
    assert row["bytes"] == spaces_module.folder_bytes(owned[1].folder)


# ── 19.6 a page's state does not grow per round ──────────────────────────────────────────
class Page:
    """One browser tab: its own session_hash, the queue protocol (join + SSE stream)."""

    def __init__(self, server, source: str):
        self.server, self.source = server, source
        self.session_hash = secrets.token_hex(8)
        self.http = client(source)

    def run(self, api_name: str, data: list):
        port, url = self.server["port"], self.server["url"]
        status, answer = join(port, self.server["fns"][api_name], data, self.source, self.session_hash)
        assert status == 200, answer
        with self.http.stream("GET", f"{url}/gradio_api/queue/data", params={"session_hash": self.session_hash}) \
                as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("msg") == "process_completed" and message.get("event_id") == answer["event_id"]:
                        assert message.get("success"), message
                        return message["output"]["data"]
        raise AssertionError("no process_completed")


def test_a_page_state_stays_flat_round_after_round(server):
    state_holder = server["demo"].server_app.state_holder
    page = Page(server, "127.0.0.61")
    token = page.run("enter_space", [None])[0]
    store = server["demo"].s11_spaces.open(token).store
    trashed = store.create_session("in the trash", [{"role": "user", "content": "x"}])
    store.delete(trashed)
    sizes = []
    for _round in range(5):
        # the trash dropdown's choices change with the source (the shelf has no trash), so it comes back as a
        # property update every round, and the purge button takes it as an input
        page.run("explorer_source", [token, None, None, "shelf", None])
        page.run("explorer_source", [token, None, None, "mine", None])
        page.run("explorer_purge", [token, None, None, trashed, None])
        page.run("explorer_refresh", [token, None, None, "", None])
        state = state_holder.session_data[page.session_hash]
        sizes.append((len(state.blocks_config.blocks), len(state.config_values)))
    assert sizes[1:] == [sizes[1]] * 4, sizes


def test_a_page_keeps_no_second_copy_of_what_it_was_shown(server):
    # gradio stores every output's latest value in the page session's config (for deep links, unused here);
    # with that copy, server memory grows with every student's biggest page
    state_holder = server["demo"].server_app.state_holder
    page = Page(server, "127.0.0.63")
    token = page.run("enter_space", [None])[0]
    store = server["demo"].s11_spaces.open(token).store
    marker = "shown-once-" + secrets.token_hex(6)
    store.create_session(marker, [{"role": "user", "content": marker + " body"}])
    shown = page.run("explorer_refresh", [token, None, None, "", None])
    assert marker in json.dumps(shown, ensure_ascii=False, default=str)   # the page did get it
    state = state_holder.session_data[page.session_hash]
    kept = json.dumps(list(state.components), ensure_ascii=False, default=str)
    assert marker not in kept


def test_the_page_session_table_drops_closed_pages_first(server):
    holder = server["demo"].server_app.state_holder
    assert holder.capacity <= 500                  # not gradio's 10,000
    keep = holder.capacity
    pages = [Page(server, "127.0.0.62") for _ in range(4)]
    try:
        for page in pages:
            page.run("enter_space", [None])
        reader, closed = pages[0], pages[1]        # the reader opened first and has not clicked since
        holder.session_data[closed.session_hash].is_closed = True   # what a closed tab's heartbeat sets
        holder.capacity = len(holder.session_data)
        Page(server, "127.0.0.62").run("enter_space", [None])
        assert reader.session_hash in holder.session_data
        assert closed.session_hash not in holder.session_data
    finally:
        holder.capacity = keep


def test_an_idle_queue_looks_for_work_at_most_about_a_hundred_times_a_second(server, monkeypatch):
    """gradio's queue polls for new events every 1 ms when it has none (about 6 % of a core for a server doing
    nothing); gradio_fixes.calm_queue makes that 10 ms. Counted: the queue's own sleeps during one idle second,
    and an event still runs right after it."""
    import asyncio

    import gradio.queueing
    queueing_file = gradio.queueing.__file__
    original, naps = asyncio.sleep, []

    def counted(delay, *args, **kwargs):
        if sys._getframe(1).f_code.co_filename == queueing_file:
            naps.append(delay)
        return original(delay, *args, **kwargs)

    monkeypatch.setattr(asyncio, "sleep", counted)
    time.sleep(1.0)
    monkeypatch.undo()
    assert naps and min(naps) >= 0.01
    assert len(naps) <= 300, f"the idle queue woke {len(naps)} times in one second"
    token = Page(server, "127.0.0.63").run("enter_space", [None])
    assert token


# ── 18.12 temp folders go on SIGTERM and SIGHUP; leftovers of earlier runs at start-up ───
def owner(folder: Path, pid: int, sessions: Path, started=None) -> Path:
    folder.mkdir()
    (folder / "owner.json").write_text(json.dumps({"pid": pid, "started": started,
                                                   "sessions_dir": str(sessions.resolve())}))
    (folder / "gradio").mkdir()
    (folder / "gradio" / "upload.jsonl").write_text("secret transcript")
    return folder


def test_temp_folders_go_when_the_server_stops(tmp_path):
    """The real `python app.py`, stopped by kill (SIGTERM). Ctrl+C is the same path through a real process in
    test_app_client.py, and closing the terminal (SIGHUP) is shown to take that path in the test below."""
    stop = signal.SIGTERM
    sys.path.insert(0, str(REPO / "code"))
    from s11_workbench.run_folder import process_started

    temp, sessions = tmp_path / "tmp", tmp_path / "sessions"
    temp.mkdir()
    sessions.mkdir()
    gone = subprocess.Popen(["true"])   # a pid that has just exited
    gone.wait()
    dead = owner(temp / "s11_run_dead", gone.pid, sessions)
    live = owner(temp / "s11_run_live", os.getpid(), sessions, process_started(os.getpid()))
    other = owner(temp / "s11_run_other", 999_999_999, tmp_path / "elsewhere")
    port = free_port()
    env = {key: value for key, value in os.environ.items() if key != "GRADIO_TEMP_DIR"}
    env.update(TMPDIR=str(temp), GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
    server = subprocess.Popen([sys.executable, str(REPO / "app.py"), "--port", str(port), "--sessions-dir",
                               str(sessions)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.stdout.read()
                time.sleep(0.2)
        assert not dead.exists() and live.exists() and other.exists()
        [mine] = [p for p in temp.iterdir() if p.name.startswith("s11_run_") and p not in (live, other)]
        assert mine.stat().st_mode & 0o777 == 0o700
        boundary, body = multipart(b'{"type": "user", "message": "hello"}\n')
        status, text, _ = raw(port, upload_head(port, boundary, len(body)), [body])
        assert status == 200, text
        assert any(path.is_file() for path in (mine / "gradio").rglob("*"))   # the upload landed inside
        server.send_signal(stop)
        server.wait(timeout=30)
        assert not mine.exists(), list(mine.rglob("*"))
        assert live.exists() and other.exists()
        assert sorted(p.name for p in temp.iterdir()) == ["s11_run_live", "s11_run_other"]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_closing_the_terminal_stops_the_server_as_ctrl_c_does():
    """SIGHUP raises KeyboardInterrupt, as SIGINT and SIGTERM do: main() then returns normally and removes its
    temp folder (the test above follows that path in a real process)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import app

    kept = {name: signal.getsignal(getattr(signal, name)) for name in ("SIGINT", "SIGTERM", "SIGHUP")}
    try:
        app.stop_on_signals()
        for name in ("SIGTERM", "SIGHUP"):
            handler = signal.getsignal(getattr(signal, name))
            assert callable(handler), name   # not SIG_DFL, which would end the process without the cleanup
            with pytest.raises(KeyboardInterrupt):
                handler(getattr(signal, name), None)
    finally:
        for name, handler in kept.items():
            signal.signal(getattr(signal, name), handler)


# ── gradio's cache cleanup while handlers add files ──────────────────────────────────────
def cleanup_while_adding(tmp_path, cleanup) -> tuple:
    """Run cleanup(blocks, None) on 2,000 cached files while another thread keeps adding new ones to the same set,
    as a handler does when it hands out a download during gradio's scheduled cleanup."""
    from types import SimpleNamespace
    files: set = set()
    for index in range(2000):
        path = tmp_path / f"old-{index}"
        path.write_bytes(b"x")
        files.add(str(path))
    old = set(files)
    blocks = SimpleNamespace(blocks={}, temp_file_sets=[files])
    stop, added = threading.Event(), []

    def add():
        while not stop.is_set():
            path = tmp_path / f"new-{len(added)}"
            path.write_bytes(b"y")
            added.append(str(path))
            files.add(str(path))
    adder = threading.Thread(target=add)
    adder.start()
    try:
        cleanup(blocks, None)
    finally:
        stop.set()
        adder.join()
    return files, old, added


def test_the_cache_cleanup_survives_handlers_adding_files(tmp_path):
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from gradio import route_utils

    from s11_workbench import gradio_fixes
    gradio_fixes.safe_cache_cleanup()
    files, old, added = cleanup_while_adding(tmp_path, route_utils.delete_files_created_by_app)
    assert added                                          # the other thread did add files meanwhile
    assert not any(os.path.exists(path) for path in old)  # every file that was cached before is gone
    assert all(os.path.exists(path) for path in files)    # what the set still lists is still on disk
    assert not old & files
