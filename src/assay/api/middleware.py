"""Request metrics, and an honest answer for requests a shutting-down server cannot finish.

After SIGTERM, uvicorn lets in-flight requests run for `ASSAY_DRAIN_S`, then cancels them; a request
cancelled before its response began used to get uvicorn's plain-text 500, which clients do not retry,
so a trainer crashed during a rolling restart (issue 12). Here it gets 503 with `Retry-After` and the
error envelope, which clients retry (later, or on another replica).
"""

from __future__ import annotations

import asyncio
import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from assay.api.codes import Refusal
from assay.api.envelope import refusal_response
from assay.metrics import Metrics

log = logging.getLogger("assay.api")


def route_name(scope: Scope) -> str:
    """The route template (not the raw path) so metrics labels stay bounded."""
    route = scope.get("route")  # set by Starlette's router once it matched
    return str(getattr(route, "path", "unmatched"))


class ObserveMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware): cancellation and client disconnects reach the app as they are."""

    def __init__(self, app: ASGIApp, metrics: Metrics, retry_after_s: int) -> None:
        self.app = app
        self.metrics = metrics
        self.retry_after = str(max(1, retry_after_s))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None

        async def observed_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        except asyncio.CancelledError:
            if status is not None:
                raise
            # Only the server cancels a request task: it is shutting down past its drain time.
            log.warning("shutting down: %s %s answered 503 (drain time over)", scope["method"], scope["path"])
            status = Refusal.UNAVAILABLE.code
            response = refusal_response(
                Refusal.UNAVAILABLE,
                "the server is shutting down and could not finish this request in its drain time; retry",
                {"Retry-After": self.retry_after, "Connection": "close"},
            )
            await response(scope, receive, send)
        finally:
            route = route_name(scope)
            # No response yet: an exception is on its way to the 500 handler outside this middleware.
            self.metrics.requests.labels(route=route, code=str(status or Refusal.INTERNAL.code)).inc()
            self.metrics.request_seconds.labels(route=route).observe(time.perf_counter() - started)
