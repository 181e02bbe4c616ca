"""One error envelope for every 4xx/5xx: `{"error": {"type", "message"}}`; never a traceback."""

from __future__ import annotations

import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from assay.api.codes import Refusal, envelope_type, refusal_of
from assay.api.state import ClientGone
from assay.errors import QueueFullError
from assay.sessions.bindings import BindingsUnavailable

log = logging.getLogger("assay.api")


class AsciiJSONResponse(JSONResponse):
    """JSON with every non-ASCII character escaped: text echoed from a bad request (a lone surrogate,
    which UTF-8 cannot encode) still renders, so an error never turns into a 500 (issue 12)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode()


def error_body(status: int, message: str) -> dict[str, Any]:
    return {"error": {"type": envelope_type(status), "message": message}}


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return AsciiJSONResponse(error_body(status, message), status_code=status, headers=headers)


def refusal_response(refusal: Refusal, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The envelope answer of a refusal (for code that answers rather than raises)."""
    return error_response(refusal.code, message, headers)


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
        return refusal_response(Refusal.INVALID, _validation_message(exc))

    async def _retry_later(request: Request, exc: Exception) -> JSONResponse:
        """A refusal the client retries after `exc.retry_after_s`: a full queue (429), the trajectory table
        not answering (503)."""
        retry = str(max(1, round(getattr(exc, "retry_after_s", 1.0))))
        return refusal_response(refusal_of(exc), f"{exc}; retry after {retry}s", {"Retry-After": retry})

    for retried in (QueueFullError, BindingsUnavailable):
        app.add_exception_handler(retried, _retry_later)

    @app.exception_handler(ClientGone)
    async def _gone(request: Request, exc: ClientGone) -> JSONResponse:
        # Nobody reads this: nginx's "client closed request" code keeps the metrics honest.
        return refusal_response(
            Refusal.CLIENT_GONE, "the client closed the connection; its items were cancelled"
        )

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return refusal_response(
            Refusal.INTERNAL, f"internal error ({type(exc).__name__}); see the server log"
        )
