"""One error envelope for every 4xx/5xx: `{"error": {"type", "message"}}`; never a traceback."""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from assay.api.state import ClientGone
from assay.errors import QueueFullError

log = logging.getLogger("assay.api")

_TYPES = {
    400: "bad_request",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "validation_error",
    429: "queue_full",
    503: "unavailable",
    504: "busy",
}


class AsciiJSONResponse(JSONResponse):
    """JSON with every non-ASCII character escaped: text echoed from a bad request (a lone surrogate,
    which UTF-8 cannot encode) still renders, so an error never turns into a 500 (issue 12)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()


def error_body(status: int, message: str) -> dict[str, Any]:
    return {
        "error": {"type": _TYPES.get(status, "error" if status < 500 else "internal"), "message": message}
    }


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return AsciiJSONResponse(error_body(status, message), status_code=status, headers=headers)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:10]:
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "invalid request: " + "; ".join(parts)


def install(app: FastAPI) -> None:
    """Register the handlers that map every failure to the envelope."""

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, str(exc.detail), getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, _validation_message(exc))

    @app.exception_handler(QueueFullError)
    async def _full(request: Request, exc: QueueFullError) -> JSONResponse:
        retry = str(max(1, round(exc.retry_after_s)))
        return error_response(429, f"{exc}; retry after {retry}s", {"Retry-After": retry})

    @app.exception_handler(ClientGone)
    async def _gone(request: Request, exc: ClientGone) -> JSONResponse:
        # Nobody reads this: nginx's "client closed request" code keeps the metrics honest.
        return error_response(499, "the client closed the connection; its items were cancelled")

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error_response(500, f"internal error ({type(exc).__name__}); see the server log")
