"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST

from assay.api.protocol import error_responses
from assay.api.state import engine_of

router = APIRouter(tags=["operations"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@router.get("/readyz", responses=error_responses(503))
async def readyz(request: Request) -> JSONResponse:
    """Ready to take work: the engine is open and the queue has room."""
    engine = engine_of(request)
    full = engine.pending >= engine.settings.queue_size
    body = {
        "status": "full" if full else "ready",
        "pending": engine.pending,
        "queue_size": engine.settings.queue_size,
        "tasks": list(engine.registry),
    }
    return JSONResponse(body, status_code=503 if full else 200)


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def metrics(request: Request) -> Response:
    """Prometheus exposition: requests, items by task and status, latencies, queue depth, restarts."""
    return Response(engine_of(request).metrics.render(), media_type=CONTENT_TYPE_LATEST)
