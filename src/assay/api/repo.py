"""`POST /v1/repo/preflight`: the repository task preflight (gold passes, empty fails, flaky tests).

A client of the engine, like bench: each task becomes ordinary `repo` items (`preflight.plan`), scored
through the service like any batch (admitted to the bounded queue, sandbox slots shared fairly with code
and repo items), and the verdicts are read by `preflight.assess`. At most `MAX_TASKS` tasks a request
(422 beyond): long sets belong to `assay repo-preflight`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from assay.api.body import BoundedRoute
from assay.api.protocol import POST_ERRORS
from assay.api.state import admitted, engine_of

router = APIRouter(tags=["repo"], route_class=BoundedRoute)

MAX_TASKS = 32


class PreflightRequest(BaseModel):
    tasks: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_TASKS)
    runs: int = Field(2, ge=1, le=5, description="Runs of the gold change (flaky tests need 2 or more).")


class PreflightResponse(BaseModel):
    reports: list[dict[str, Any]]


@router.post("/v1/repo/preflight", response_model=PreflightResponse, responses=POST_ERRORS)
async def repo_preflight(body: PreflightRequest, request: Request) -> PreflightResponse:
    """Per task: `ok`, `problems`, `flaky` node ids, and the gold and empty changes' verdicts."""
    from assay.verifiers.repo.preflight import assess, item_model, plan

    engine = engine_of(request)
    model = item_model(engine.registry)
    plans = [plan(task, model, body.runs) for task in body.tasks]
    items = [item for planned in plans if isinstance(planned, list) for item in planned]
    what = f"preflight of {len(items)} items"
    results = await admitted(request, len(items), engine.score_async(items), what) if items else []
    reports, at = [], 0
    for task, planned in zip(body.tasks, plans, strict=True):
        if isinstance(planned, dict):
            reports.append(planned)
            continue
        reports.append(assess(task, model, results[at : at + len(planned)]))
        at += len(planned)
    return PreflightResponse(reports=reports)
