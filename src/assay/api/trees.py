"""POST /v1/trees: score tree rollouts and credit the nodes the leaves share (issue 41, docs/trees.md).

Each leaf is an item as in /v1/rewards (identical leaves scored once); each node gets its value and the
method's advantage. Trees stay untyped here so a malformed one is that tree's `invalid`, not a 422 for all.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from assay.api.body import BoundedRoute
from assay.api.codes import Refusal
from assay.api.protocol import error_responses
from assay.api.state import admitted, engine_of
from assay.trees import TreeOutcome, plan_trees

router = APIRouter(tags=["trees"], route_class=BoundedRoute)

_EXAMPLE_TREE: dict[str, Any] = {
    "id": "q17",
    "method": "treerl",
    "nodes": [
        {"id": "r", "parent": None, "length": 12},
        {"id": "a", "parent": "r", "length": 8},
        {"id": "b", "parent": "r", "length": 9},
    ],
    "leaves": [
        {"node": "a", "item": {"id": "q17-a", "task": "math", "response": "\\boxed{2}", "reference": "2"}},
        {"node": "b", "item": {"id": "q17-b", "task": "math", "response": "\\boxed{3}", "reference": "2"}},
    ],
}

_ERRORS = error_responses(
    Refusal.TOO_LARGE,
    Refusal.INVALID,
    Refusal.QUEUE_FULL,
    TOO_LARGE="Body too large, or more leaves than the queue holds.",
    INVALID='The body is not {"trees": [...]}.',
)


class TreesRequest(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"trees": [_EXAMPLE_TREE]}]})

    trees: list[dict[str, Any]] = Field(
        description='Trees: {"id", "method": "treerl" | "treerpo" | "treepo", "options": {...}, "nodes":'
        ' [{"id", "parent" (null for the root), "length" (tokens, optional)}], "leaves": [{"node", "item"}]}.'
    )


class TreesResponse(BaseModel):
    trees: list[TreeOutcome] = Field(description="One entry per tree, in order; leaf results in leaf order.")


@router.post("/v1/trees", response_model=TreesResponse, responses=_ERRORS)
async def trees(body: TreesRequest, request: Request) -> TreesResponse:
    """Score trees of rollouts: leaf verdicts, node values and the method's node advantages."""
    engine = engine_of(request)
    plan = plan_trees(body.trees)
    count = len(plan.unique)
    work = plan.score(engine.score_async)
    outcomes = await admitted(request, count, work, f"{count} leaves in {len(body.trees)} trees")
    return TreesResponse(trees=outcomes)
