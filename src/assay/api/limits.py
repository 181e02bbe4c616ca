"""A request-body limit enforced while the body streams in, so a huge upload is refused early (413)."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assay.api.codes import Refusal


class BodyLimitMiddleware:
    """Pure ASGI middleware: checks Content-Length up front and counts streamed bytes otherwise."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        seen = 0
        refused = False

        async def counting_receive() -> Message:
            # Past the limit, answer 413 ourselves and tell the app the client left, so whatever the
            # app makes of the cut body never reaches the client.
            nonlocal seen, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    refused = True
                    await self._refuse(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            if not refused:
                await send(message)

        await self.app(scope, counting_receive, guarded_send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {
                "error": {
                    "type": Refusal.TOO_LARGE.type,
                    "message": f"request body exceeds {self.max_bytes} bytes (ASSAY_MAX_BODY_BYTES)",
                }
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": Refusal.TOO_LARGE.code,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
