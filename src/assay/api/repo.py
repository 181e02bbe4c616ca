"""`POST /v1/repo/preflight`: the repository task preflight (gold passes, empty fails, flaky tests).

Each task runs once a sandbox slot is free, through the engine's fair gate shared with code and repo
items, so a preflight never takes more sandboxes than `code.slots`. A task set larger than
`MAX_TASKS` is refused (422): long sets belong to `assay repo-preflight`.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from assay.api.envelope import error_response
from assay.api.protocol import POST_ERRORS
from assay.api.state import engine_of, until_disconnected
from assay.scheduling import SlotWaitTimeout

router = APIRouter(tags=["repo"])

MAX_TASKS = 32


class PreflightRequest(BaseModel):
    tasks: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_TASKS)
    runs: int = Field(2, ge=1, le=5, description="Runs of the gold change (flaky tests need 2 or more).")


class PreflightResponse(BaseModel):
    reports: list[dict[str, Any]]


@router.post("/v1/repo/preflight", response_model=PreflightResponse, responses=POST_ERRORS)
async def repo_preflight(body: PreflightRequest, request: Request) -> Any:
    """Per task: `ok`, `problems`, `flaky` node ids, and the gold and empty changes' verdicts."""
    from assay.verifiers.repo.preflight import check_task
    from assay.verifiers.repo.scorer import RepoScorer

    engine = engine_of(request)
    scorer = RepoScorer(engine.settings)
    deadline = (engine.settings.repo.wall_s + 60.0) * (body.runs + 1)
    calls = [partial(check_task, scorer, task, body.runs) for task in body.tasks]
    work = asyncio.gather(*(engine.run_in_slot("sandbox", "repo-preflight", c, deadline) for c in calls))
    try:
        reports = await until_disconnected(request, work)
    except (SlotWaitTimeout, TimeoutError) as exc:
        retry = str(engine.settings.retry_after_s)
        return error_response(503, f"repo preflight: {exc}", {"Retry-After": retry})
    return JSONResponse({"reports": reports})
