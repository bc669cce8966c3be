"""A hostile classmate with a script: every endpoint the page exposes, called with forged spaces, other people's ids,
paths and oversized inputs, must answer with a clean refusal and leave every space's files byte-identical.

The app is launched in-process on a free port with its real launch options. Endpoints are not hard-coded: the test
reads `/config` (every dependency, public or private, by `fn_index`) and `view_api()` (the named ones, through
`gradio_client`), and builds arguments from a table of value shapes per component type — so endpoints that other
tabs add later are covered without editing this file.

Two students: A owns sessions carrying MARKER (title and text); B is the attacker with a valid space of her own.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, gradio_client, launch, local_http

pytestmark = pytest.mark.slow

httpx = pytest.importorskip("httpx")

TEACHER = "teacher-" + secrets.token_hex(8)
MARKER = "甲的私密标记" + secrets.token_hex(4)
SHELF_MARKER = "书架公开" + secrets.token_hex(4)
CJK = re.compile(r"[\u4e00-\u9fff]")
CALL_TIMEOUT = 120
# Refusals gradio itself gives before a handler runs (a value outside a Radio's choices, a file that was never
# uploaded): a refusal, not a crash, so they count as clean.
GRADIO_REFUSALS = ("not in the list of choices", "File not allowed", "Cannot find", "is not in", "not allowed",
                   "Invalid", "invalid", "minimum value", "maximum value")


# ── the world: one server, two students, a shelf ─────────────────────────────────────
@dataclass
class World:
    url: str
    root: Path
    spaces: Any
    a_token: str
    b_token: str
    a_space: Any
    b_space: Any
    a_ids: list
    a_trashed: str
    shelf_id: str
    other_server_token: str
    config: dict = field(default_factory=dict)
    uploaded: str | None = None   # a real transcript B uploaded (examples/), to send under a hostile name
    http: Any = None              # one pooled client for the whole module: a new httpx.Client per call costs
                                  # more CPU (its TLS context) than the server spends answering

    @property
    def b_folder(self) -> Path:
        return Path(self.b_space.folder)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    import app
    from s11_workbench.spaces import Limits, Spaces

    root = tmp_path_factory.mktemp("security_sessions")
    limits = Limits(max_upload_bytes=256 * 1024, create_burst=100_000, new_spaces_per_minute=100_000,
                    uploads_per_minute=100_000)
    demo = app.build_app(root, teacher_secret=TEACHER, limits=limits)
    launch(demo, **app.launch_options(demo))
    spaces = demo.s11_spaces
    a_token, b_token = spaces.new_token(), spaces.new_token()
    a_space, b_space = spaces.open(a_token), spaces.open(b_token)
    secret_messages = [{"role": "user", "content": f"{MARKER} 数据库密码在这里"},
                       {"role": "assistant", "content": f"收到，{MARKER}"}]
    root_id = a_space.store.create_session(f"{MARKER} 的会话", secret_messages)
    branch = a_space.store.fork(root_id, [{"role": "user", "content": f"{MARKER} 分支"}], at=1)
    trashed = a_space.store.create_session(f"{MARKER} 已删除", secret_messages)
    a_space.store.delete(trashed)
    public_id = a_space.store.create_session(f"{SHELF_MARKER} 老师的例子", [{"role": "user", "content": SHELF_MARKER}])
    spaces.publish(TEACHER, a_space.space_id, public_id)
    b_space.store.create_session("乙自己的会话", [{"role": "user", "content": "乙"}])
    other = Spaces(tmp_path_factory.mktemp("other_server")).new_token()
    url = demo.local_url.rstrip("/")
    http = pooled_client()
    config = http.get(f"{url}/config", timeout=30).json()
    example = REPO / "examples" / "pi-v3-report-cache.jsonl"
    uploaded = None
    if example.is_file():
        reply = http.post(f"{url}/gradio_api/upload", files={"files": (example.name, example.read_bytes())},
                          timeout=30)
        uploaded = reply.json()[0]
    try:
        yield World(url, root, spaces, a_token, b_token, a_space, b_space, [root_id, branch.session_id], trashed,
                    public_id, other, config, uploaded, http)
    finally:
        http.close()
        demo.close()


def pooled_client():
    """Thread-safe and keeps its connections: the sweeps share it across their worker threads."""
    return local_http(timeout=CALL_TIMEOUT, limits=httpx.Limits(max_connections=16, max_keepalive_connections=16))


# ── calling an event the way the page does (any fn_index, public or private) ───────────────
@dataclass
class Outcome:
    success: bool
    data: Any
    error: str | None
    text: str   # everything the server sent back, for leak checks


def call(world: World, dep: dict, data: list, *, event_data=None, session_hash=None, query="") -> Outcome:
    session_hash = session_hash or secrets.token_hex(8)
    trigger = next((t[0] for t in dep.get("targets", []) if t and t[0] is not None), None)
    body = {"data": data, "fn_index": dep["id"], "session_hash": session_hash, "event_data": event_data,
            "trigger_id": trigger}
    if dep.get("queue") is False:
        reply = world.http.post(f"{world.url}/gradio_api/run/predict{query}", json=body)
        payload = reply.json() if reply.headers.get("content-type", "").startswith("application/json") else {}
        return Outcome(reply.status_code == 200, payload.get("data"), payload.get("error") or
                       (None if reply.status_code == 200 else reply.text), reply.text)
    joined = world.http.post(f"{world.url}/gradio_api/queue/join{query}", json=body)
    if joined.status_code != 200:
        return Outcome(False, None, joined.text, joined.text)
    event_id = joined.json()["event_id"]
    with world.http.stream("GET", f"{world.url}/gradio_api/queue/data", params={"session_hash": session_hash}) \
            as stream:
        texts = []
        for line in stream.iter_lines():
            if not line.startswith("data:"):
                continue
            texts.append(line)
            message = json.loads(line[5:])
            if message.get("event_id") == event_id and message.get("msg") == "process_completed":
                output = message.get("output") or {}
                return Outcome(bool(message.get("success")), output.get("data"), output.get("error"),
                               "\n".join(texts))
    raise AssertionError(f"事件 {dep['id']} 没有返回结果")


def is_select(dep: dict) -> bool:
    return any(t[1] == "select" for t in dep.get("targets", []))


def endpoint_name(dep: dict) -> str:
    return f"#{dep['id']} {dep.get('api_name') or '(未命名)'}"


# ── value shapes per component type ─────────────────────────────────────────────────
def file_data(path: str, name: str = "x.jsonl") -> dict:
    return {"path": path, "orig_name": name, "meta": {"_type": "gradio.FileData"}}


def attack_strings(world: World) -> list:
    a_id = world.a_ids[-1]
    return [a_id, world.a_trashed, "../x", "/etc/passwd", f"../{world.a_space.space_id}/{a_id}", "..%2f..%2f.secret",
            str(world.root / ".secret"), "<script>alert(1)</script>${7*7}{{x}}", "界" * 300_000]


def attack_files(world: World) -> list:
    a_file = world.a_space.store.path_of(world.a_ids[0])
    files = [file_data(str(world.root / ".secret")), file_data(a_file, "../../x.json"), file_data("/etc/passwd")]
    if world.uploaded:   # a genuine upload whose name (chosen by the browser) points into A's space
        files.append(file_data(world.uploaded, f"../../spaces/{world.a_space.space_id}/{world.a_ids[0]}.json"))
    return files


def baseline(component: dict, world: World) -> Any:
    """A plausible value for an input: A's session id in every text-like slot (the attacker's best guess)."""
    kind, props = component["type"], component.get("props", {})
    if kind in TEXT_LIKE:
        return world.a_ids[-1]
    if kind in NUMBER_LIKE:
        return 1
    if kind in FILE_LIKE:
        return None
    return props.get("value")


TEXT_LIKE = {"textbox", "dropdown", "radio", "code", "markdown", "html", "textarea"}
NUMBER_LIKE = {"number", "slider"}
FILE_LIKE = {"file", "uploadbutton", "downloadbutton", "image", "gallery", "multimodaltextbox"}


def attack_sets(world: World, components: list[dict]) -> list[tuple[str, list]]:
    """(label, values for the non-token inputs). One attack value in every slot of its kind at once."""
    sets = []
    for text in attack_strings(world):
        label = f"字符串 {text[:30]!r}{'…' if len(text) > 30 else ''}"
        sets.append((label, [text if c["type"] in TEXT_LIKE else baseline(c, world) for c in components]))
    for number in (-1, 2 ** 63):
        sets.append((f"数字 {number}", [number if c["type"] in NUMBER_LIKE else baseline(c, world) for c in components]))
    if any(c["type"] in FILE_LIKE for c in components):
        for item in attack_files(world):
            sets.append((f"文件 {item['path'][-40:]}",
                         [item if c["type"] in FILE_LIKE else baseline(c, world) for c in components]))
    if any(c["type"] == "dataframe" for c in components):
        table = {"headers": ["a", "b", "c"], "data": [[world.a_ids[0]] * 3, ["../x"] * 3]}
        sets.append(("表格", [table if c["type"] == "dataframe" else baseline(c, world) for c in components]))
    return sets


def select_payloads(world: World) -> list:
    values = [world.a_ids[0], world.a_trashed, "../x", "界" * 10_000]
    return [{"index": [0, 0], "value": v, "row_value": [v, v, v], "col_value": [v], "selected": True}
            for v in values]


# ── the oracle: bytes on disk and what came back ────────────────────────────────────
def tree_digest(root: Path, *, skip: Path | None = None) -> dict[str, str]:
    result = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and not (skip is not None and skip in path.parents):
            result[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return result


def leaks(world: World, outcome: Outcome, *, allow: tuple = ()) -> list[str]:
    """What of A's (or the server's) secrets appears in a reply."""
    found = []
    for secret, what in ((MARKER, "甲的会话内容"), (world.a_token, "甲的令牌"), (TEACHER, "教师密钥"),
                         (world.a_space.space_id, "甲的空间名")):
        if secret not in allow and secret in outcome.text:
            found.append(what)
    return found


def clean(outcome: Outcome, *, ours: bool = False, file_attack: bool = False) -> bool:
    """Success, or a refusal with a message — never a crash (gradio hides unexpected errors as an empty message).

    file_attack: a FileData naming a file that was never uploaded is stopped by gradio's own path check
    (InvalidPathError, before any handler runs; blocked_paths names the sessions folder). Gradio hides that
    message like any non-gr.Error, so an empty error is accepted there — the disk and leak checks still apply."""
    if outcome.success or (file_attack and outcome.error in (None, "None")):
        return True
    message = outcome.error or ""
    if not message.strip() or "Traceback" in message:
        return False
    return bool(CJK.search(message)) or (not ours and any(p in message for p in GRADIO_REFUSALS))


def components_of(world: World) -> dict[int, dict]:
    return {c["id"]: c for c in world.config["components"]}


def callable_deps(world: World) -> list[dict]:
    return [d for d in world.config["dependencies"] if d.get("backend_fn")]


def token_slot(world: World, dep: dict) -> int | None:
    kinds = [components_of(world)[i]["type"] for i in dep["inputs"]]
    return kinds.index("browserstate") if "browserstate" in kinds else None


def build_data(world: World, dep: dict, token, values: list) -> list:
    """Token into the BrowserState slot, None into server-side State (the server ignores it anyway), values elsewhere."""
    components = components_of(world)
    data, rest = [], iter(values)
    for component_id in dep["inputs"]:
        kind = components[component_id]["type"]
        data.append(token if kind == "browserstate" else None if kind == "state" else next(rest))
    return data


def other_inputs(world: World, dep: dict) -> list[dict]:
    components = components_of(world)
    return [components[i] for i in dep["inputs"] if components[i]["type"] not in ("browserstate", "state")]


def forged_tokens(world: World) -> list[tuple[str, Any]]:
    a_space_id = world.a_space.space_id
    return [("没有令牌", None), ("空字符串", ""), ("伪造的令牌", f"{'0' * 16}.{'0' * 32}"),
            ("甲的空间名 + 错误签名", f"{a_space_id}.{secrets.token_hex(16)}"),
            ("别的服务器签的令牌", world.other_server_token), ("超长令牌", "A" * 200_000),
            ("不是字符串", {"space": a_space_id}), ("路径", f"../{a_space_id}")]


# ── tests ──────────────────────────────────────────────────────────────────────────
def test_the_sweep_has_endpoints_to_attack(world):
    deps = callable_deps(world)
    assert any(token_slot(world, d) is not None for d in deps), "没有任何事件接收空间令牌（visitor）"
    print("\n事件：" + "，".join(endpoint_name(d) for d in deps))


@dataclass
class Attack:
    where: str
    dep: dict
    data: list
    event_data: Any = None
    file_attack: bool = False


def sweep(world: World, attacks: list[Attack], *, skip: Path | None = None, allow: tuple = ()) -> list[str]:
    """Run the attacks four at a time (interleaved across events), then check the whole tree once: nothing outside
    `skip` may change. Only when it did are the attacks replayed one by one to name the one that wrote."""
    before = tree_digest(world.root, skip=skip)
    tabs = threading.local()   # each of the four workers is one open page (its own session_hash), as a script
                               # driving a few tabs would be; a fresh session per call costs gradio a copy of
                               # every component's config, more than most handlers take to answer

    def attack(a: Attack) -> Outcome:
        if not hasattr(tabs, "session_hash"):
            tabs.session_hash = secrets.token_hex(8)
        return call(world, a.dep, a.data, event_data=a.event_data, session_hash=tabs.session_hash)

    with ThreadPoolExecutor(max_workers=4) as pool:
        outcomes = list(pool.map(attack, attacks))
    problems = []
    for attack, outcome in zip(attacks, outcomes):
        if not clean(outcome, file_attack=attack.file_attack):
            problems.append(f"{attack.where}：不是干净的拒绝：{str(outcome.error)[:200]!r}")
        problems += [f"{attack.where}：泄露了{what}" for what in leaks(world, outcome, allow=allow)]
    if tree_digest(world.root, skip=skip) != before:
        problems.append("会话目录里本不该变的文件变了；逐个重放：")
        for attack in attacks:
            one_before = tree_digest(world.root, skip=skip)
            call(world, attack.dep, attack.data, event_data=attack.event_data)
            if tree_digest(world.root, skip=skip) != one_before:
                problems.append(f"{attack.where}：写了不该写的文件")
    return problems


def interleave(groups: list[list]) -> list:
    """[[a1, a2], [b1]] -> [a1, b1, a2]: consecutive calls hit different events, so they run in parallel."""
    return [item for round_ in zip_longest(*groups) for item in round_ if item is not None]


def test_forged_space_tokens_change_nothing_and_reveal_nothing(world):
    """Every event that takes the space token, with every kind of forged token, A's ids in every other slot
    (and, for a table's select event, A's id in the event data too)."""
    groups = []
    for dep in callable_deps(world):
        if token_slot(world, dep) is None:
            continue
        values = [baseline(c, world) for c in other_inputs(world, dep)]
        selects = [None] + (select_payloads(world)[:1] if is_select(dep) else [])
        groups.append([Attack(f"{endpoint_name(dep)} · {label}" + (" · 选中数据" if event else ""), dep,
                              build_data(world, dep, token, values), event)
                       for label, token in forged_tokens(world) for event in selects])
    problems = sweep(world, interleave(groups), allow=(world.a_space.space_id,))
    assert not problems, "\n".join(problems)


def test_a_valid_space_cannot_reach_another_space_through_any_argument(world):
    """B's own valid token, A's ids / trashed id / paths / huge strings / other files in every other slot."""
    groups = []
    for dep in callable_deps(world):
        if token_slot(world, dep) is None:
            continue
        inputs = other_inputs(world, dep)
        runs = [(label, values, None) for label, values in attack_sets(world, inputs)]
        if is_select(dep):
            runs += [("选中事件数据", [baseline(c, world) for c in inputs], payload) for payload in select_payloads(world)]
        groups.append([Attack(f"{endpoint_name(dep)} · {label}", dep, build_data(world, dep, world.b_token, values),
                              event, label.startswith("文件")) for label, values, event in runs])
    problems = sweep(world, interleave(groups), skip=world.b_folder, allow=(world.a_space.space_id,))
    problems = [p for p in problems if not p.endswith("泄露了甲的空间名")]
    assert not problems, "\n".join(problems)


def test_events_without_a_space_token_write_nothing_into_the_sessions_folder(world):
    """An event that takes no space token must not touch any space (it has no right to any)."""
    problems, tab = [], secrets.token_hex(8)   # one open page makes every call (a fresh session per call costs
                                              # gradio a copy of every component's config)
    for dep in callable_deps(world):
        if token_slot(world, dep) is not None:
            continue
        values = [baseline(c, world) for c in other_inputs(world, dep)]
        before = tree_digest(world.root)
        outcome = call(world, dep, build_data(world, dep, None, values), session_hash=tab)
        if tree_digest(world.root) != before:
            problems.append(f"{endpoint_name(dep)}：没有空间令牌却写了会话目录")
        problems += [f"{endpoint_name(dep)}：泄露了{what}" for what in leaks(world, outcome)]
    assert not problems, "\n".join(problems)


def test_a_visitor_sees_her_own_sessions_but_never_another_students(world):
    """Positive control for the leak oracle: A's own calls do show A's text (so the checks above can fail),
    and the same calls made with B's token never do."""
    seen_by_a, problems = [], []
    a_tab, b_tab = secrets.token_hex(8), secrets.token_hex(8)   # each student one open page of her own
    for dep in callable_deps(world):
        if token_slot(world, dep) is None:
            continue
        values = [baseline(c, world) for c in other_inputs(world, dep)]
        if MARKER in call(world, dep, build_data(world, dep, world.a_token, values), session_hash=a_tab).text:
            seen_by_a.append(endpoint_name(dep))
        outcome = call(world, dep, build_data(world, dep, world.b_token, values), session_hash=b_tab)
        problems += [f"{endpoint_name(dep)}（乙）：看到了{what}" for what in leaks(world, outcome, allow=(world.a_space.space_id,))]
    assert not problems, "\n".join(problems)
    if not seen_by_a:
        pytest.skip("还没有任何事件显示会话内容（浏览器标签页尚未接入），正向对照无从检查")


def test_the_page_load_hands_out_a_fresh_signed_token_for_anything_forged(world):
    load = next(d for d in callable_deps(world) if any(t[1] == "load" for t in d.get("targets", []))
                and token_slot(world, d) is not None)
    for label, token in forged_tokens(world):
        outcome = call(world, load, build_data(world, load, token, []))
        assert outcome.success, label
        fresh = outcome.data[0]
        assert fresh != token and world.spaces.verify(fresh) != world.a_space.space_id, label
        assert TEACHER not in outcome.text
    kept = call(world, load, build_data(world, load, world.b_token, []), query=f"?teacher={TEACHER}")
    assert kept.data[0] == world.b_token
    assert TEACHER not in kept.text, "教师密钥被回传给了浏览器"


def test_the_teacher_secret_in_state_cannot_be_forged_from_the_browser(world):
    """Events whose inputs include the server-side teacher State: sending the secret as data does not make a
    student the teacher (the server substitutes its own State), so A's space name never shows up for B."""
    components = components_of(world)
    problems, tab = [], secrets.token_hex(8)   # one open page of B's makes every call
    for dep in callable_deps(world):
        if token_slot(world, dep) is None or not any(components[i]["type"] == "state" for i in dep["inputs"]):
            continue
        data = [world.b_token if components[i]["type"] == "browserstate" else
                TEACHER if components[i]["type"] == "state" else baseline(components[i], world)
                for i in dep["inputs"]]
        outcome = call(world, dep, data, query="?teacher=guess", session_hash=tab)
        if world.a_space.space_id in outcome.text and world.a_space.space_id not in json.dumps(data):
            problems.append(f"{endpoint_name(dep)}：学生看到了别人的空间名")
    assert not problems, "\n".join(problems)


def test_named_endpoints_through_gradio_client_refuse_forged_tokens_cleanly(world):
    from gradio_client.exceptions import AppError

    client = gradio_client(world.url)
    api = client.view_api(print_info=False, return_format="dict")
    problems, called = [], 0
    for name, info in api["named_endpoints"].items():
        params = info["parameters"]
        if not any(p["component"] == "Browserstate" for p in params):
            continue
        # one forged token, the one naming A's real space: every kind of forged token already goes to every event,
        # these included, in the raw sweep above; what this test adds is the named-endpoint route of gradio_client
        for label, token in forged_tokens(world)[3:4]:
            args = [token if p["component"] == "Browserstate" else
                    world.a_ids[0] if p["python_type"]["type"] == "str" else p.get("parameter_default")
                    for p in params]
            before = tree_digest(world.root)
            try:
                result = client.predict(*args, api_name=name)
                text = json.dumps(result, ensure_ascii=False, default=str)
            except AppError as error:
                text = str(error)
                if not CJK.search(text) and not any(p in text for p in GRADIO_REFUSALS):
                    problems.append(f"{name} · {label}：错误不是给同学看的中文：{text[:120]!r}")
            except Exception as error:   # noqa: BLE001 - anything else is the finding
                problems.append(f"{name} · {label}：{type(error).__name__}: {str(error)[:120]}")
                continue
            called += 1
            if tree_digest(world.root) != before:
                problems.append(f"{name} · {label}：会话目录里的文件变了")
            if MARKER in text:
                problems.append(f"{name} · {label}：泄露了甲的会话内容")
    assert not problems, "\n".join(problems)
    if called == 0:
        pytest.skip("还没有带空间令牌参数的命名接口")


# ── raw HTTP: the file route, uploads, oversized bodies ────────────────────────────
def file_urls(world: World) -> list[str]:
    a_file = Path(world.a_space.store.path_of(world.a_ids[0]))
    targets = [world.root / ".secret", a_file, world.root / "shelf" / f"{world.shelf_id}.json",
               Path(world.a_space.folder) / ".trash"]
    urls = []
    for target in targets:
        absolute = str(target)
        urls += [absolute, os.path.relpath(absolute), absolute.replace("/", "%2f"),
                 f"{world.root}/spaces/..%2f.secret", f"/tmp/../{absolute.lstrip('/')}"]
    return urls


def test_the_file_route_cannot_read_anything_under_the_sessions_folder(world):
    secret_text = (world.root / ".secret").read_text().strip()
    problems = []
    for path in file_urls(world):
        for method in ("GET", "HEAD"):
            reply = world.http.request(method, f"{world.url}/gradio_api/file={path}", timeout=30)
            if reply.status_code < 400 or secret_text in reply.text or MARKER in reply.text:
                problems.append(f"{method} file={path} → {reply.status_code}")
    assert not problems, "\n".join(problems)


def test_an_oversized_upload_is_refused_before_it_is_stored(world):
    limit = world.spaces.limits.max_upload_bytes
    before = tree_digest(world.root)
    reply = world.http.post(f"{world.url}/gradio_api/upload",
                            files={"files": ("big.jsonl", b"{}\n" * (limit // 3 + 30_000))}, timeout=60)
    assert reply.status_code == 413
    assert "上限" in reply.text
    assert tree_digest(world.root) == before


def test_an_upload_that_does_not_declare_its_size_is_refused(world):
    def body():
        yield b"--b\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.jsonl\"\r\n\r\n{}\r\n--b--\r\n"
    reply = world.http.post(f"{world.url}/gradio_api/upload", content=body(),
                            headers={"content-type": "multipart/form-data; boundary=b"}, timeout=30)
    assert reply.status_code == 411 and "Content-Length" in reply.text


def test_a_path_in_an_upload_name_stays_inside_the_upload_folder(world):
    before = tree_digest(world.root)
    reply = world.http.post(f"{world.url}/gradio_api/upload",
                            files={"files": ("../../../sessions/evil.json", b"{}")}, timeout=30)
    assert reply.status_code == 200
    [stored] = reply.json()
    assert Path(stored).name == "evil.json" and ".." not in Path(stored).parts
    assert not str(Path(stored).resolve()).startswith(str(world.root.resolve()))
    assert tree_digest(world.root) == before


def test_an_oversized_event_body_is_refused(world):
    dep = next(d for d in callable_deps(world) if token_slot(world, d) is not None)
    data = [None] * len(dep["inputs"])
    data[0] = "x" * (9 * 1024 * 1024)
    reply = world.http.post(f"{world.url}/gradio_api/queue/join", timeout=60,
                            json={"data": data, "fn_index": dep["id"], "session_hash": "h" * 10})
    assert reply.status_code == 413 and "请求太大" in reply.text


# ── the rate limits, end to end (a second app with tight limits) ─────────────────────────
@pytest.fixture(scope="module")
def tight_app(tmp_path_factory):
    import app
    from s11_workbench.spaces import Limits

    limits = Limits(max_upload_bytes=64 * 1024, uploads_per_minute=3, new_spaces_per_minute=3)
    demo = app.build_app(tmp_path_factory.mktemp("tight_sessions"), limits=limits)
    launch(demo, **app.launch_options(demo))
    http = pooled_client()
    try:
        yield demo.local_url.rstrip("/"), http.get(f"{demo.local_url}config", timeout=30).json(), http
    finally:
        http.close()
        demo.close()


def test_one_address_uploading_in_a_loop_is_slowed_down(tight_app):
    url, _config, http = tight_app
    codes = [http.post(f"{url}/gradio_api/upload", files={"files": ("a.jsonl", b"{}\n")}, timeout=30)
             for _ in range(5)]
    assert [r.status_code for r in codes[:3]] == [200, 200, 200]
    assert codes[3].status_code == 429 and "上传太频繁" in codes[3].text


def test_one_address_minting_spaces_in_a_loop_is_stopped(tight_app):
    url, config, http = tight_app
    load = next(d for d in config["dependencies"] if any(t[1] == "load" for t in d.get("targets", [])))
    world = World(url, Path("."), None, "", "", None, None, [], "", "", "", config, http=http)
    outcomes = [call(world, load, [None] * len(load["inputs"])) for _ in range(4)]
    assert all(o.success for o in outcomes[:3])
    assert not outcomes[3].success and "领取新空间太频繁" in (outcomes[3].error or "")
