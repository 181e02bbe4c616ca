"""The one map from a kind of failure to its HTTP status and envelope type (issue 24, part 5).

Routes, middleware and handlers name what went wrong (`Refusal.TOO_LARGE`, an exception from the tree in
`assay.errors`); only this module knows the number. `tests/api/test_codes.py` walks the HTTP layer's
source and fails on a status code written anywhere else. Inside scoring a failure is an item status
(`errors.py`); it reaches HTTP only as the refusals below.
"""

from __future__ import annotations

import enum

from fastapi import HTTPException

from assay.errors import QueueFullError
from assay.sessions.bindings import BindingsUnavailable
from assay.sessions.store import SessionGone, SessionsFull


class Refusal(enum.Enum):
    """Why a request gets no answer of its own: (HTTP status, envelope `error.type`, OpenAPI text)."""

    BAD_REQUEST = (400, "bad_request", "The request cannot be read.")
    NOT_FOUND = (404, "not_found", "No such route.")
    SESSION_UNKNOWN = (
        404,
        "session_gone",
        "No such session (session_gone): never created, or ended long ago.",
    )
    METHOD_NOT_ALLOWED = (405, "method_not_allowed", "The route does not take this method.")
    EPISODE_DONE = (409, "error", "The OpenEnv episode is done (answered, or its session gone).")
    SESSION_ENDED = (
        410,
        "session_gone",
        "The session ended (session_gone): expired, closed, or its sandbox was lost; the reason says.",
    )
    TOO_LARGE = (413, "payload_too_large", "Body or batch too large; GET /v1/limits says the limits.")
    UNSUPPORTED_MEDIA_TYPE = (415, "unsupported_media_type", "The body is not JSON.")
    INVALID = (422, "validation_error", "The body does not have the documented shape.")
    QUEUE_FULL = (429, "queue_full", "Queue full; retry after the Retry-After header.")
    SESSIONS_FULL = (429, "sessions_full", "As many sessions open as allowed; retry after Retry-After.")
    # nginx's "client closed request": nobody reads it; it keeps the request metrics honest.
    CLIENT_GONE = (499, "error", "The client closed the connection.")
    INTERNAL = (500, "internal", "A bug; the server log has the traceback.")
    NOT_INSTALLED = (501, "not_installed", "The route needs an optional extra; the message names it.")
    UNAVAILABLE = (503, "unavailable", "Shutting down or not ready; retry after the Retry-After header.")
    # The one answer SandboxFusion's clients (verl) retry.
    BUSY = (504, "busy", "No sandbox slot within the wait; retry (SandboxFusion clients do).")

    @property
    def code(self) -> int:
        return int(self.value[0])

    @property
    def type(self) -> str:
        return str(self.value[1])

    @property
    def said(self) -> str:
        return str(self.value[2])


# Answers that are not failures, for the routes that do not answer 200.
CREATED = 201
NO_CONTENT = 204
OK = 200

_BY_CODE = {refusal.code: refusal for refusal in reversed(Refusal)}  # first listed wins a shared code


def envelope_type(status: int) -> str:
    """The envelope `error.type` for a status Starlette or FastAPI chose (a 404 route, a 405 method)."""
    known = _BY_CODE.get(status)
    if known is not None:
        return known.type
    return "error" if status < Refusal.INTERNAL.code else "internal"


def refuse(refusal: Refusal, message: str, headers: dict[str, str] | None = None) -> HTTPException:
    """The exception a route raises to refuse a request; the envelope handler renders it."""
    return HTTPException(refusal.code, message, headers=headers)


def refusal_of(exc: BaseException) -> Refusal:
    """The refusal an exception from `assay.errors` (or the session store) ends a request with."""
    if isinstance(exc, QueueFullError):
        return Refusal.QUEUE_FULL
    if isinstance(exc, SessionsFull):
        return Refusal.SESSIONS_FULL
    if isinstance(exc, SessionGone):
        return Refusal.SESSION_ENDED if exc.ended else Refusal.SESSION_UNKNOWN
    if isinstance(exc, BindingsUnavailable):
        return Refusal.UNAVAILABLE
    return Refusal.INTERNAL


def ready_code(ready: bool) -> int:
    """/readyz: 200 when ready, else UNAVAILABLE's status."""
    return OK if ready else Refusal.UNAVAILABLE.code
