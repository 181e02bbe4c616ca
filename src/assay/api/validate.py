"""POST /v1/validate: `assay validate` over HTTP, for a task set small enough for one request.

The probes go through the engine's bounded queue like any batch: a request is admitted for the most
probes its tasks can need, and larger sets belong to the CLI (`assay validate FILE`), which streams them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from assay.api.body import BoundedRoute
from assay.api.codes import Refusal, refuse
from assay.api.protocol import POST_ERRORS
from assay.api.state import admitted, engine_of
from assay.validate import TaskReport
from assay.validate.probes import most_probes
from assay.validate.prompts import near_duplicates_available
from assay.validate.validator import validate_async

router = APIRouter(tags=["validate"], route_class=BoundedRoute)


class ValidateRequest(BaseModel):
    tasks: list[Any] = Field(description="Items without a response, as in the contract.")
    repeats: int = Field(default=3, ge=1, le=10, description="Runs of a code reference (determinism).")
    # strict: the schema says boolean, so 0 is refused as the schema refuses it (schemathesis, issue 28)
    near_duplicates: bool = Field(
        default=True, strict=True, description="Check prompts for near-duplicates (MinHash)."
    )


class ValidateResponse(BaseModel):
    reports: list[TaskReport] = Field(description="One report per task, in the same order.")


@router.post("/v1/validate", response_model=ValidateResponse, responses=POST_ERRORS)
async def validate_tasks(body: ValidateRequest, request: Request) -> ValidateResponse:
    """Well-posedness and prompt checks per task; `valid` is false when a check found an error."""
    if body.near_duplicates and not near_duplicates_available():
        raise refuse(
            Refusal.BAD_REQUEST,
            "near-duplicate detection needs datasketch on the server: pip install 'assay[validate]', "
            'or send "near_duplicates": false',
        )
    engine = engine_of(request)
    budget = len(body.tasks) * most_probes(engine.registry, body.repeats)
    work = validate_async(body.tasks, engine, repeats=body.repeats, near_duplicates=body.near_duplicates)
    what = f"{len(body.tasks)} tasks (up to {budget} probes; for larger sets run `assay validate FILE`)"
    return ValidateResponse(reports=await admitted(request, budget, work, what))
