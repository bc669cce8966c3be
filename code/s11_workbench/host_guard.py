"""host_guard.py — 只回答叫得出本服务器名字的请求：Host 表头的白名单，挡住 DNS 重绑定（不 import gradio）

    每个 HTTP / WebSocket 请求 ──> HostGuard（ASGI 中间件，在 gradio 之前）
        Host 是 127.0.0.1:<端口>、localhost:<端口>、[::1]:<端口>           ──> 放行（<端口> = 这个连接进来的端口）
        课堂模式（--host 不是本机地址）：再加任何 IP 字面量:<端口>、--host 的名字、--allow-host 给的名字
                                       （--allow-host 名字:端口 = 反向代理对外的那个端口）
        其余（evil.example:<端口>、没有 Host、两个 Host、端口不对）        ──> 421 一句中文，gradio 看不到这个请求

    本机 Agent 文件夹（agent_folders.py）另有更严的一道：不论哪种模式，Host 只能是上面那三个本机名字，
    请求还必须来自本机、页面的 Origin 也是这三个之一。

Key insight: 浏览器只看名字不看地址。恶意网页把自己的域名重新解析到 127.0.0.1 以后，它的脚本就能向本机的
工作台发请求、读回答——同源策略以为那还是 evil.example。只有 Host 表头还带着它的真名：不认识的名字一律不答。
IP 字面量不会被重绑定（没有 DNS 可改），所以课堂模式放行任何 IP 字面量。

Scope: 挡的是“别人的网页借读者的浏览器来访问”；挡不住本机的另一个账户或把端口转出去的隧道（它们可以
伪造任何 Host），那一道在 agent_folders.py 的访问检查里说明。
"""

from __future__ import annotations

import ipaddress
from typing import Iterable, NamedTuple, Optional

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
LOCAL_NAMES = {"localhost", "localhost.localdomain"}
MISDIRECTED = 421   # “这个请求送错了服务器”：正是一个叫错名字的请求该得到的回答
TEXT_PLAIN = [(b"content-type", b"text/plain; charset=utf-8")]


def split_host(host: Optional[str]) -> tuple[str, Optional[int]]:
    """Host 表头 -> (小写的名字, 端口或 None)。认不出来的返回 ("", None)。

        "LocalHost:7860" -> ("localhost", 7860)；"[::1]:7860" -> ("[::1]", 7860)；"a:b" -> ("", None)
    """
    host = (host or "").strip().lower()
    if host.startswith("["):
        name, bracket, rest = host.partition("]")
        name += bracket
        if not bracket or (rest and not rest.startswith(":")):
            return "", None
        port_text = rest[1:] if rest else None
    else:
        name, colon, port_text = host.partition(":")
        port_text = port_text if colon else None
    if port_text is None:
        return name, None
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return "", None
    return name, int(port_text)


def is_ip_literal(name: str) -> bool:
    """"10.1.2.3"、"[fe80::1]" 是 IP 字面量；"evil.example"、"10.1.2"、"::1"（没有方括号）不是。"""
    bare = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    if ":" in bare and bare == name:
        return False   # Host 表头里的 IPv6 地址总带方括号
    try:
        ipaddress.ip_address(bare)
    except ValueError:
        return False
    return True


def is_loopback(host: Optional[str]) -> bool:
    """监听地址 host 只对本机开放吗（127.0.0.0/8、::1、localhost）。0.0.0.0 / 空 = 对所有网卡开放，不算。"""
    if not host:
        return False
    if host.lower() in LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def host_allowed(host: Optional[str], port: int, names: Iterable[str] = LOOPBACK_NAMES,
                 any_ip: bool = False) -> bool:
    """Host 表头是不是 names 里的一个名字（或 any_ip 时任何 IP 字面量）加上本服务器的端口 port。
    names 里写了端口的（"lab.example.edu:443"，前面有反向代理时）只认那个端口。浏览器在 80 端口不写端口，也算。

        host_allowed("localhost:7860", 7860) -> True；host_allowed("evil.example:7860", 7860) -> False
    """
    name, given = split_host(host)
    given = given if given is not None else 80
    if not name:
        return False
    for allowed in names:
        allowed_name, allowed_port = split_host(allowed)
        if name == allowed_name and given == (allowed_port if allowed_port is not None else port):
            return True
    return any_ip and given == port and is_ip_literal(name)


class Allowed(NamedTuple):
    """HostGuard 放行什么：names 里的名字（可带端口），any_ip 时再加任何 IP 字面量（都是本服务器的端口）。"""
    names: tuple = LOOPBACK_NAMES
    any_ip: bool = False


def allowed_hosts(listen_host: Optional[str], extra: Iterable[str] = ()) -> Allowed:
    """按启动参数定白名单。只对本机开放：三个本机名字和 --host 本身（gradio 启动时用它访问自己，
    如 127.0.0.2）；课堂模式（--host 不是本机地址）：再加任何 IP 字面量、--host 的名字、--allow-host 的名字。

        allowed_hosts("127.0.0.1", ["lab.local"]) -> Allowed(("127.0.0.1", "localhost", "[::1]"), False)
        allowed_hosts("0.0.0.0", ["lab.local"])   -> Allowed(("127.0.0.1", "localhost", "[::1]", "lab.local"), True)
    """
    local = is_loopback(listen_host)
    names = list(LOOPBACK_NAMES)
    for name in [listen_host or "", *([] if local else extra)]:
        name = name.strip().lower()
        if name and name not in ("0.0.0.0", "::", "[::]"):
            names.append(f"[{name}]" if _is_bare_ipv6(name) else name)   # Host 表头里 IPv6 地址带方括号
    return Allowed(tuple(dict.fromkeys(names)), not local)


def _is_bare_ipv6(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).version == 6
    except ValueError:
        return False


def refusal_text(host: Optional[str]) -> str:
    shown = "".join(ch if ch.isprintable() else "?" for ch in (host or ""))[:80]
    return (f"拒绝：这个请求把服务器叫作「{shown or '（没有 Host）'}」，不是本工作台的地址。"
            "请用启动时终端里打印的地址打开（例如 http://127.0.0.1:7860/）。")


class HostGuard:
    """ASGI 中间件：Host 表头不在白名单（allowed，见 allowed_hosts；None = 三个本机名字）里的请求回 421（一句中文），
    不交给 gradio。"""

    def __init__(self, app, allowed: Optional[Allowed] = None):
        self.app = app
        self.names, self.any_ip = allowed if allowed is not None else Allowed()

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        hosts = [value for key, value in scope.get("headers") or [] if key.lower() == b"host"]
        host = bytes(hosts[0]).decode("latin-1") if len(hosts) == 1 else None
        if host is not None and host_allowed(host, server_port(scope), self.names, self.any_ip):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = refusal_text(host).encode("utf-8")
        await send({"type": "http.response.start", "status": MISDIRECTED,
                    "headers": TEXT_PLAIN + [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def server_port(scope) -> int:
    """这个连接进来的端口（服务器自己的套接字，不是 Host 表头说的）；不知道时 0（什么都不匹配）。"""
    server = scope.get("server") or ()
    return server[1] if len(server) > 1 and isinstance(server[1], int) else 0
