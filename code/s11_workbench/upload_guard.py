"""upload_guard.py — 请求体进门之前先看表头、边读边数字节：一个 ASGI 中间件，在 gradio 读请求体之前（不 import gradio）

    每个请求 ──> framing(表头)：按服务器的方式解析（名字不分大小写，值去掉空白、类型不分大小写）
                 │ 两个 Content-Type / 两个 Content-Length / Content-Length 与 Transfer-Encoding 同时出现 /
                 │ 长度不是数字 / 不认识的 Transfer-Encoding ──> 400（一句中文）：框定方式有歧义，一律不猜
                 ▼
    上传（multipart/…，或 …/upload 路径） ──> spaces.admit_upload(地址, Content-Length, gradio 的上传目录)
                                  │ 没声明大小 411 · 太频繁 429 · 太大或磁盘不够 413
    其他请求（事件数据是 JSON）   ──> 声明的 Content-Length ≤ MAX_JSON_BODY_BYTES，否则 413
                 ▼
    放行 ──> gradio；它每读一段 http.request，中间件都先数字节：超过上限（声明的长度、或没声明时的上限）
             就立刻回 413，并告诉 gradio“客户端断开了”——分块（chunked）发来的请求体也读不进内存

Key insight: 限额只看“声明的长度”是不够的：分块传输没有 Content-Length，两个表头时各层各取一个。
所以这里先拒绝一切有歧义的框定，再数真正读进来的字节——不论请求怎样框定，读进内存的都不超过上限。
限额和限速的规则本身在 spaces.py，这里只管 HTTP。
app.py 用 launch(app_kwargs={"middleware": [Middleware(UploadGuard, spaces=spaces, upload_folder=…)]}) 装上它。
"""

from __future__ import annotations

import tempfile
from typing import NamedTuple, Optional

from s11_workbench.spaces import SpaceError

# 上传之外的请求体（事件数据是 JSON）最多这么大：粘贴一大段文字绰绰有余，塞不进几百 MB
MAX_JSON_BODY_BYTES = 8 * 1024 * 1024
BODY_BYTES_KEY = "s11.body_bytes"   # 真正读到的请求体字节数记在 ASGI scope 的这个键上（queue_guard 用它算份额）
TEXT_PLAIN = [(b"content-type", b"text/plain; charset=utf-8")]


class Refusal(Exception):
    """一个要回给客户端的拒绝：HTTP 状态码 + 一句中文。"""

    def __init__(self, status: int, text: str):
        super().__init__(text)
        self.status, self.text = status, text


class Framing(NamedTuple):
    """请求体的框定方式：content_type 是小写、去掉参数的类型（没有就是 ""），length 是声明的长度，chunked 是否分块。"""
    content_type: str
    length: Optional[int]
    chunked: bool


def framing(raw_headers) -> Framing:
    """按服务器（h11 / starlette）的方式读表头，有歧义就 Refusal(400)：

        Content-Type: Multipart/Form-Data; boundary=x   ──> content_type="multipart/form-data"
        两个 Content-Type（或两个 Content-Length）        ──> 400：各层可能各取一个
        Content-Length + Transfer-Encoding: chunked      ──> 400：h11 按分块读，声明的长度是假的
    """
    values: dict = {}
    for name, value in raw_headers or []:
        key = bytes(name).decode("latin-1").strip().lower()
        values.setdefault(key, []).append(bytes(value).decode("latin-1").strip())
    for key, label in (("content-type", "Content-Type"), ("content-length", "Content-Length"),
                       ("transfer-encoding", "Transfer-Encoding")):
        if len(values.get(key, [])) > 1:
            raise Refusal(400, f"请求里有 {len(values[key])} 个 {label} 表头：无法确定请求体怎样读，已拒绝")
    length_text = values.get("content-length", [None])[0]
    encoding = values.get("transfer-encoding", [None])[0]
    if length_text is not None and encoding is not None:
        raise Refusal(400, "请求同时带有 Content-Length 和 Transfer-Encoding：请求体的长度不明确，已拒绝")
    if encoding is not None and encoding.lower() != "chunked":
        raise Refusal(400, f"不支持的 Transfer-Encoding {encoding[:40]!r}：只接受 chunked，已拒绝")
    length = None
    if length_text is not None:
        if not length_text.isascii() or not length_text.isdigit():
            raise Refusal(400, f"Content-Length {length_text[:40]!r} 不是一个非负整数，已拒绝")
        length = int(length_text)
    content_type = values.get("content-type", [""])[0].split(";", 1)[0].strip().lower()
    return Framing(content_type, length, encoding is not None)


class UploadGuard:
    """ASGI 中间件，在 gradio 读请求体之前：表头有歧义的请求 400；上传（multipart）必须声明大小并经
    spaces.admit_upload 放行（单个上限、同一地址限速、磁盘余量）；其他请求体不超过 MAX_JSON_BODY_BYTES。
    不论声明与否，读进来的字节都边读边数，超过上限就 413。"""

    def __init__(self, app, spaces, upload_folder: Optional[str] = None, max_json_bytes: int = MAX_JSON_BODY_BYTES):
        self.app, self.spaces = app, spaces
        self.upload_folder = upload_folder
        self.max_json_bytes = max_json_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            cap = self.admit(scope)
        except Refusal as refusal:
            await self._respond(send, refusal)
            return
        await _CappedBody(self, cap, scope, receive, send).run()

    def admit(self, scope) -> int:
        """这个请求最多能读多少字节的请求体；不放行时 Refusal。"""
        frame = framing(scope.get("headers"))
        path = scope.get("path") or ""
        is_upload = frame.content_type.startswith("multipart/") or path.rstrip("/").endswith("/upload")
        if is_upload:
            client = (scope.get("client") or ("?",))[0]
            try:
                self.spaces.admit_upload(client, frame.length, self.upload_folder or tempfile.gettempdir())
            except SpaceError as error:
                status = 411 if frame.length is None else 429 if "频繁" in str(error) else 413
                raise Refusal(status, str(error)) from None
            return frame.length
        if frame.length is not None and frame.length > self.max_json_bytes:
            raise Refusal(413, f"请求太大：{frame.length} 字节，上限 {self.max_json_bytes} 字节")
        return frame.length if frame.length is not None else self.max_json_bytes

    def cap_text(self, cap: int) -> str:
        return f"请求太大：请求体超过了 {cap} 字节的上限（不论是否分块发送），已停止读取"

    @staticmethod
    async def _respond(send, refusal: Refusal) -> None:
        body = refusal.text.encode("utf-8")
        headers = [*TEXT_PLAIN, (b"content-length", str(len(body)).encode("ascii")), (b"connection", b"close")]
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


class _CappedBody:
    """一个请求的 receive/send 包装：数 http.request 的字节，超过 cap 就自己回 413，
    对 gradio 假装客户端已断开，并丢掉 gradio 之后想发的一切。"""

    def __init__(self, guard: UploadGuard, cap: int, scope, receive, send):
        self.guard, self.cap, self.scope, self._receive, self._send = guard, cap, scope, receive, send
        scope[BODY_BYTES_KEY] = 0
        self.seen = 0
        self.refused = False
        self.started = False

    async def receive(self):
        if self.refused:
            return {"type": "http.disconnect"}
        message = await self._receive()
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            self.scope[BODY_BYTES_KEY] = self.seen
            if self.seen > self.cap:
                self.refused = True
                if not self.started:
                    self.started = True
                    await UploadGuard._respond(self._send, Refusal(413, self.guard.cap_text(self.cap)))
                return {"type": "http.disconnect"}
        return message

    async def send(self, message):
        if self.refused:
            return
        if message["type"] == "http.response.start":
            self.started = True
        await self._send(message)

    async def run(self) -> None:
        try:
            await self.guard.app(self.scope, self.receive, self.send)
        except Exception:
            if not self.refused:   # 超限后 gradio 读到“断开”会抛异常：那是我们造成的，413 已经回过了
                raise
