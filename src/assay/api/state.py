"""What routers share: the engine on `app.state` and admission to its bounded queue."""

from __future__ import annotations

import asyncio
import contextlib
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
        return await until_disconnected(request, engine.score_async(items))
    finally:
        engine.release(len(items))


class ClientGone(Exception):
    """The client closed the connection before its answer was ready; nobody reads what follows."""


async def until_disconnected(request: Request, work: Any) -> Any:
    """Await `work`, cancelling it when the client goes away, so an abandoned batch stops taking slots
    (its waiting items never start; running math/sql workers are stopped)."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_disconnect(request))
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:  # the server itself is stopping: let the cancellation through
        task.cancel()
        watcher.cancel()
        raise
    watcher.cancel()
    if task in done:
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    raise ClientGone


async def _disconnect(request: Request) -> None:
    # The body is read already, so the next ASGI message can only be the disconnect.
    while (await request.receive())["type"] != "http.disconnect":
        pass
