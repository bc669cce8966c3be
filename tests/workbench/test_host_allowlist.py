"""Issue 41 item 1: DNS rebinding. A page that rebinds its own name to 127.0.0.1 sends `Host: evil.example:<port>`
from the reader's browser; the workbench answers only the names it is known by.

Two apps run in-process on free 127.0.0.1 ports, both with the agent-folders panel (a fake home folder holding one
Claude Code session) and its key: one as `python app.py` starts it (loopback only), one configured for the class
network (main() never allows the panel there; here it is on, to show its events refuse anyway). Requests come from
127.0.0.1 through httpx (Host set by hand) and raw sockets.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import socket
import sys

import pytest

from conftest import REPO, gradio_client, launch, local_http, tls_context

httpx = pytest.importorskip("httpx")
pytestmark = pytest.mark.slow

KEY = secrets.token_urlsafe(24)
CJK = re.compile(r"[\u4e00-\u9fff]")


def start(tmp_path_factory, home, class_network: bool):
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import app
    from s11_workbench.host_guard import allowed_hosts

    demo = app.build_app(tmp_path_factory.mktemp("sessions"),
                         agent_folders={"home": str(home), "env": {}, "key": KEY})
    hosts = allowed_hosts("0.0.0.0", ["lab.example.edu"]) if class_network else None
    port = int(launch(demo, **app.launch_options(demo, hosts=hosts)).rsplit(":", 1)[1])
    return demo, port


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    project = home / ".claude" / "projects" / "-home-dev-api"
    project.mkdir(parents=True)
    shutil.copy(REPO / "examples" / "claude-code-rate-limit.jsonl", project / "3f1c-session.jsonl")
    return home


@pytest.fixture(scope="module")
def local(tmp_path_factory, home):
    demo, port = start(tmp_path_factory, home, class_network=False)
    try:
        yield demo, port
    finally:
        demo.close()


@pytest.fixture(scope="module")
def classroom(tmp_path_factory, home):
    demo, port = start(tmp_path_factory, home, class_network=True)
    try:
        yield demo, port
    finally:
        demo.close()


def get(port: int, path: str, host: str) -> httpx.Response:
    return httpx.get(f"http://127.0.0.1:{port}{path}", headers={"Host": host}, timeout=30, verify=tls_context())


def raw(port: int, request: bytes) -> tuple[int, str]:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(request)
        answer = b""
        while b"\r\n\r\n" not in answer or len(answer.partition(b"\r\n\r\n")[2]) < int(
                (re.search(rb"(?i)content-length:\s*(\d+)", answer) or [b"", b"0"])[1]):
            piece = sock.recv(65536)
            if not piece:
                break
            answer += piece
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode("utf-8", "replace")


def refused(response_status: int, text: str) -> bool:
    return response_status == 421 and "不是本工作台的地址" in text and CJK.search(text) is not None


# ── the whole app: a foreign name gets a Chinese refusal, never the page or the API ──────────────────────
FOREIGN = ["evil.example:{port}", "EVIL.example:{port}", "evil.example", "127.0.0.1.evil.example:{port}",
           "localhost.evil.example:{port}", "127.0.0.1:{other}", "localhost:{other}", "10.0.0.5:{port}",
           "lab.example.edu:{port}", "[fe80::1]:{port}", "127.0.0.1:{port}@evil.example", "127.0.0.1:abc"]
PATHS = ["/", "/config", "/gradio_api/info", "/gradio_api/openapi.json", "/gradio_api/queue/status"]


@pytest.mark.parametrize("host", FOREIGN)
def test_a_loopback_app_answers_no_other_name(local, host):
    _, port = local
    name = host.format(port=port, other=port + 1)
    for path in PATHS:
        response = get(port, path, name)
        assert refused(response.status_code, response.text), (path, response.status_code, response.text[:200])
    call = httpx.post(f"http://127.0.0.1:{port}/gradio_api/call/enter_space", json={"data": [None]},
                      headers={"Host": name}, timeout=30, verify=tls_context())
    assert refused(call.status_code, call.text)
    join = httpx.post(f"http://127.0.0.1:{port}/gradio_api/queue/join", headers={"Host": name}, timeout=30,
                      json={"data": [None], "fn_index": 0, "session_hash": "x" * 10, "event_data": None},
                      verify=tls_context())
    assert refused(join.status_code, join.text)


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LocalHost:{port}", "[::1]:{port}"])
def test_a_loopback_app_answers_its_own_names(local, host):
    _, port = local
    response = get(port, "/config", host.format(port=port))
    assert response.status_code == 200 and "components" in response.json()


def test_raw_requests_without_a_host_or_with_two_are_refused(local):
    _, port = local
    status, text = raw(port, b"GET /config HTTP/1.0\r\n\r\n")
    assert refused(status, text)
    status, _ = raw(port, f"GET /config HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example:{port}\r\n"
                          "Connection: close\r\n\r\n".encode())
    assert status in (400, 421)   # h11 itself may refuse a second Host before the app sees it
    status, text = raw(port, f"GET /config HTTP/1.1\r\nHost: evil.example:{port}\r\nConnection: close\r\n\r\n".encode())
    assert refused(status, text)


def test_gradio_client_through_a_foreign_name_gets_nothing(local):
    _, port = local
    with pytest.raises(Exception):   # noqa: B017 (the refusal surfaces as whatever the client makes of a 421)
        gradio_client(f"http://127.0.0.1:{port}/", headers={"Host": f"evil.example:{port}"})
    client = gradio_client(f"http://127.0.0.1:{port}/")   # the same client under the real name works
    assert client.predict(None, api_name="/enter_space")


# ── the class network: IP literals and the configured names, never a foreign name ─────────────────────────
@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "10.0.0.5:{port}", "192.168.1.23:{port}", "[fe80::1]:{port}",
                                  "lab.example.edu:{port}", "LAB.example.edu:{port}"])
def test_the_class_network_app_answers_ip_literals_and_its_configured_names(classroom, host):
    _, port = classroom
    assert get(port, "/config", host.format(port=port)).status_code == 200


@pytest.mark.parametrize("host", ["evil.example:{port}", "10.0.0.5:{other}", "lab.example.edu.evil.example:{port}",
                                  "10.0.0.5.nip.io:{port}"])
def test_the_class_network_app_still_refuses_a_foreign_name(classroom, host):
    _, port = classroom
    response = get(port, "/", host.format(port=port, other=port + 1))
    assert refused(response.status_code, response.text)


# ── the agent-folders events: only the reader's own page, in either mode ──────────────────────────────────
def agents_list(demo, port: int, host: str, origin: str | None, key: str | None) -> str:
    """Click 「🔄 列出本机会话」 as a page would (queue/join + SSE), sending Host/Origin as given; returns the
    note the panel shows plus the table rows, as one text."""
    config = demo.get_config_file()
    button = next(c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "s11x-agents-list")
    fn = next(d["id"] for d in config["dependencies"] if (button, "click") in map(tuple, d["targets"]))
    session = secrets.token_hex(8)
    headers = {"Host": host, **({"Origin": origin} if origin else {})}
    with local_http(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as http:
        joined = http.post("/gradio_api/queue/join", json={"data": ["", key], "fn_index": fn, "session_hash": session,
                                                           "event_data": None, "trigger_id": button})
        assert joined.status_code == 200, joined.text
        with http.stream("GET", "/gradio_api/queue/data", params={"session_hash": session}) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if message.get("msg") == "process_completed":
                        return json.dumps(message.get("output"), ensure_ascii=False)
    raise AssertionError("no answer")


def test_the_readers_own_page_lists_the_sessions(local):
    demo, port = local
    answer = agents_list(demo, port, f"127.0.0.1:{port}", f"http://127.0.0.1:{port}", KEY)
    assert "找到 1 个会话" in answer and "Claude Code" in answer


@pytest.mark.parametrize("case, why", [
    ("key missing", "启动时终端里打印的那个链接"),
    ("foreign origin", "请求的来源不是它"),
    ("no origin", "请求的来源不是它"),
], ids=["key-missing", "foreign-origin", "no-origin"])
def test_the_loopback_app_lists_nothing_for_anyone_else(local, case, why):
    demo, port = local
    own = f"http://127.0.0.1:{port}"
    origin, key = {"key missing": (own, None), "foreign origin": (f"http://evil.example:{port}", KEY),
                   "no origin": (None, KEY)}[case]
    answer = agents_list(demo, port, f"127.0.0.1:{port}", origin, key)
    assert why in answer and "Claude Code" not in answer and "找到" not in answer


@pytest.mark.parametrize("host", ["10.0.0.5:{port}", "lab.example.edu:{port}"])
def test_the_class_network_app_never_lists_the_agent_folders_under_a_class_name(classroom, host):
    demo, port = classroom
    name = host.format(port=port)
    answer = agents_list(demo, port, name, f"http://{name}", KEY)   # the page itself is served under this name
    assert "把服务器叫作" in answer and "Claude Code" not in answer and "找到" not in answer
    assert get(port, "/config", f"evil.example:{port}").status_code == 421


# ── the rule itself, for any spelling ─────────────────────────────────────────────────────────────────────
@pytest.mark.parametrize("host, names, any_ip, allowed", [
    ("127.0.0.1:7860", None, False, True), ("LOCALHOST:7860", None, False, True), ("[::1]:7860", None, False, True),
    ("127.0.0.1", None, False, False), ("127.0.0.1:80", None, False, False), ("127.0.0.2:7860", None, False, False),
    ("::1:7860", None, False, False), ("[::1]", None, False, False), ("", None, False, False), (None, None, False, False),
    ("127.0.0.1:07860", None, False, True), ("127.0.0.1:7860:1", None, False, False), ("127.0.0.1:+7860", None, False, False),
    ("10.0.0.5:7860", None, True, True), ("10.0.0.5:7861", None, True, False), ("10.0.0.5.nip.io:7860", None, True, False),
    ("[fe80::1]:7860", None, True, True), ("[fe80::zz]:7860", None, True, False), ("10.0.0:7860", None, True, False),
    ("lab.example.edu:7860", ("lab.example.edu",), False, True),
    ("lab.example.edu", ("lab.example.edu:80",), False, True),           # a proxy in front, on port 80
    ("lab.example.edu:443", ("lab.example.edu:443",), False, True),
    ("lab.example.edu:7860", ("lab.example.edu:443",), False, False),     # a pinned port is the only one
    ("evil.example:443", ("lab.example.edu:443",), True, False),
])
def test_the_host_rule(host, names, any_ip, allowed):
    from s11_workbench.host_guard import LOOPBACK_NAMES, host_allowed
    assert host_allowed(host, 7860, names or LOOPBACK_NAMES, any_ip) is allowed


def test_an_app_on_another_loopback_address_starts_and_answers_under_it(tmp_path):
    # gradio checks a fresh server by requesting its own local_url (http://127.0.0.2:<port>/): that name must pass
    import app
    from s11_workbench.host_guard import allowed_hosts

    demo = app.build_app(tmp_path / "sessions")
    port = int(launch(demo, "127.0.0.2", **app.launch_options(demo, hosts=allowed_hosts("127.0.0.2"))).rsplit(":", 1)[1])
    try:
        answer = httpx.get(f"http://127.0.0.2:{port}/config", timeout=30, verify=tls_context())
        assert answer.status_code == 200
        refused_answer = httpx.get(f"http://127.0.0.2:{port}/config", headers={"Host": f"evil.example:{port}"},
                                   timeout=30, verify=tls_context())
        assert refused(refused_answer.status_code, refused_answer.text)
    finally:
        demo.close()
