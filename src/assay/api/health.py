"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

import logging

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST

from assay.api.codes import OK, Refusal, ready_code
from assay.api.protocol import error_responses
from assay.api.state import engine_of
from assay.engine.service import Service

router = APIRouter(tags=["operations"])
log = logging.getLogger(__name__)


async def start(app: FastAPI, engine: Service) -> None:
    """Start and warm the workers, then mark the service ready (`app.state.ready`)."""
    try:
        await engine.start()
    except Exception:  # a worker that cannot start fails items as `error`; readiness still follows
        log.exception("assay: warming the worker processes failed")
    app.state.ready = True


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@router.get("/readyz", responses=error_responses(Refusal.UNAVAILABLE))
async def readyz(request: Request) -> JSONResponse:
    """Ready to take work: the workers are started and warm, and the queue has room (else 503)."""
    engine = engine_of(request)
    starting = not getattr(request.app.state, "ready", False)
    full = engine.pending >= engine.settings.queue_size
    body = {
        "status": "starting" if starting else "full" if full else "ready",
        "pending": engine.pending,
        "queue_size": engine.settings.queue_size,
        "tasks": list(engine.registry),
    }
    return JSONResponse(body, status_code=ready_code(not (starting or full)))


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    responses={OK: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request) -> Response:
    """Prometheus exposition: requests, items by task and status, latencies, queue depth, restarts."""
    return Response(engine_of(request).metrics.render(), media_type=CONTENT_TYPE_LATEST)
