"""POST /v1/validate: `assay validate` over HTTP, for a task set small enough for one request.

The probes go through the engine's bounded queue like any batch: a request is admitted for the most
probes its tasks can need, and larger sets belong to the CLI (`assay validate FILE`), which streams them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, Field

from assay.api.protocol import POST_ERRORS
from assay.api.state import engine_of, until_disconnected
from assay.validate import TaskReport, validate
from assay.validate.probes import most_probes
from assay.validate.prompts import near_duplicates_available

router = APIRouter(tags=["validate"])


class ValidateRequest(BaseModel):
    tasks: list[Any] = Field(description="Items without a response, as in the contract.")
    repeats: int = Field(default=3, ge=1, le=10, description="Runs of a code reference (determinism).")
    near_duplicates: bool = Field(default=True, description="Check prompts for near-duplicates (MinHash).")


class ValidateResponse(BaseModel):
    reports: list[TaskReport] = Field(description="One report per task, in the same order.")


@router.post("/v1/validate", response_model=ValidateResponse, responses=POST_ERRORS)
async def validate_tasks(body: ValidateRequest, request: Request) -> ValidateResponse:
    """Well-posedness and prompt checks per task; `valid` is false when a check found an error."""
    engine = engine_of(request)
    if body.near_duplicates and not near_duplicates_available():
        raise HTTPException(
            400,
            "near-duplicate detection needs datasketch on the server: pip install 'assay[validate]', "
            'or send "near_duplicates": false',
        )
    budget = len(body.tasks) * most_probes(body.repeats)
    if budget > engine.settings.queue_size:
        raise HTTPException(
            413,
            f"{len(body.tasks)} tasks need up to {budget} probes, more than the queue size "
            f"{engine.settings.queue_size} (ASSAY_QUEUE_SIZE): split them, or run `assay validate FILE`",
        )
    engine.admit(budget)
    try:
        work = asyncio.to_thread(
            validate, body.tasks, engine, repeats=body.repeats, near_duplicates=body.near_duplicates
        )
        reports: list[TaskReport] = await until_disconnected(request, work)
    finally:
        engine.release(budget)
    return ValidateResponse(reports=reports)
