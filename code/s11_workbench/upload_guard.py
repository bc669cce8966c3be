"""upload_guard.py — 请求体进门之前先看大小：一个 ASGI 中间件，在 gradio 读请求体之前（不 import gradio）

    POST multipart/…（上传） ──> spaces.admit_upload(地址, Content-Length, 临时目录)
                                  │ 没声明大小 411 · 太频繁 429 · 太大或磁盘不够 413（一句中文）
                                  └─ 放行 ──> gradio
    其他 POST（事件数据是 JSON） ──> Content-Length ≤ MAX_JSON_BODY_BYTES，否则 413
    其他请求                     ──> 原样交给 gradio

Key insight: 挡在 gradio 之前，超限的上传一个字节都不会落到磁盘上；限额和限速的规则本身在 spaces.py，这里只管 HTTP。
app.py 用 launch(app_kwargs={"middleware": [Middleware(UploadGuard, spaces=spaces)]}) 装上它。
"""

from __future__ import annotations

import tempfile

from s11_workbench.spaces import SpaceError

# 上传之外的 POST（事件数据是 JSON）最多这么大：粘贴一大段文字绰绰有余，塞不进几百 MB
MAX_JSON_BODY_BYTES = 8 * 1024 * 1024


class UploadGuard:
    """ASGI 中间件，在 gradio 读请求体之前：上传（multipart）必须声明大小并经 spaces.admit_upload 放行
    （单个上限、同一地址限速、磁盘余量）；其他 POST 请求体不超过 MAX_JSON_BODY_BYTES。"""

    def __init__(self, app, spaces):
        self.app, self.spaces = app, spaces

    async def __call__(self, scope, receive, send):
        refusal = self.refusal(scope) if scope["type"] == "http" and scope["method"] == "POST" else None
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, text = refusal
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8")]})
        await send({"type": "http.response.body", "body": text.encode("utf-8")})

    def refusal(self, scope) -> tuple[int, str] | None:
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length", b"").decode("latin-1").strip()
        nbytes = int(length) if length.isdigit() else None
        if not headers.get(b"content-type", b"").startswith(b"multipart/"):
            if nbytes is not None and nbytes > MAX_JSON_BODY_BYTES:
                return 413, f"请求太大：{nbytes} 字节，上限 {MAX_JSON_BODY_BYTES} 字节"
            return None
        client = (scope.get("client") or ("?",))[0]
        try:
            self.spaces.admit_upload(client, nbytes, tempfile.gettempdir())
        except SpaceError as error:
            status = 411 if nbytes is None else 429 if "频繁" in str(error) else 413
            return status, str(error)
        return None
