"""What routers share: the engine on `app.state` and admission to its bounded queue."""

from __future__ import annotations

from typing import Any

from fastapi import HTTPException, Request

from assay.scoring import Engine
from assay.types import Result


def engine_of(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


async def scored_batch(request: Request, items: list[Any]) -> list[Result]:
    """Admit the batch to the bounded queue (429 when full), score it, release the slots."""
    engine = engine_of(request)
    if len(items) > engine.settings.queue_size:
        raise HTTPException(
            413,
            f"batch of {len(items)} items exceeds the queue size {engine.settings.queue_size}"
            " (ASSAY_QUEUE_SIZE); split it",
        )
    engine.admit(len(items))
    try:
        return await engine.score_async(items)
    finally:
        engine.release(len(items))
