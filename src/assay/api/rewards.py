"""POST /v1/rewards and GET /v1/tasks: the native surface."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request

from assay.api.body import BoundedRoute
from assay.api.protocol import POST_ERRORS, LimitsResponse, RewardsRequest, RewardsResponse, TasksResponse
from assay.api.state import admitted, batcher_of, engine_of

router = APIRouter(tags=["rewards"], route_class=BoundedRoute)


@router.post("/v1/rewards", response_model=RewardsResponse, responses=POST_ERRORS)
async def rewards(body: RewardsRequest, request: Request) -> RewardsResponse:
    """Score a batch. Results come back in item order; a malformed item is `invalid`, never a 4xx."""
    count = len(body.items)
    work = batcher_of(request).score(body.items)
    return RewardsResponse(results=await admitted(request, count, work, f"batch of {count} items"))


@router.get("/v1/tasks", response_model=TasksResponse)
async def tasks(request: Request) -> TasksResponse:
    """The registered tasks, the item fields each reads, and the JSON schema of its options."""
    engine = engine_of(request)
    registry, settings = engine.registry, engine.settings
    # A code runtime's toolchain versions come from running them once: off the event loop.
    infos = await asyncio.to_thread(lambda: [registry[name].info(settings) for name in registry])
    return TasksResponse(tasks=infos, tools=engine.session_tools())


@router.get("/v1/limits", response_model=LimitsResponse)
async def limits(request: Request) -> LimitsResponse:
    """The request limits of this server, so a client can size its batches instead of meeting a 413."""
    settings = engine_of(request).settings
    return LimitsResponse(
        max_batch_items=settings.queue_size,
        max_body_bytes=settings.max_body_bytes,
        queue_size=settings.queue_size,
        retry_after_s=settings.retry_after_s,
    )
