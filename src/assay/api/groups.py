"""POST /v1/groups: score GRPO/DAPO groups and say which can teach the policy anything.

Same items, results and limits as /v1/rewards (413 past the queue size, 429 when the queue is full), plus
statistics over each group's `ok` items (assay.groups): zero advantage, pass@k, learning value, answer
diversity, response lengths, and answer clusters with the majority vote (`self_consistency`: without a
reference). A group's `shaping` (shorter_better, adapt_think, s_grpo) or `rubric` adds each result's
`shaped_reward` and the quantities used (`stats.shaping`); a bad option is a 422.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from assay.api.body import BoundedRoute
from assay.api.codes import Refusal
from assay.api.protocol import error_responses
from assay.api.state import admitted, engine_of
from assay.groups import GroupOutcome
from assay.groups.rubric import Rubric
from assay.groups.shaping import Shaping
from assay.types import id_text

router = APIRouter(tags=["groups"], route_class=BoundedRoute)

_EXAMPLE_GROUP: dict[str, Any] = {
    "id": "q17",
    "items": [
        {"id": "q17-s0", "task": "math", "response": "so \\boxed{\\frac12}", "reference": "0.5"},
        {"id": "q17-s1", "task": "math", "response": "the answer is 2", "reference": "0.5"},
    ],
}

_ERRORS = error_responses(
    Refusal.TOO_LARGE,
    Refusal.INVALID,
    Refusal.QUEUE_FULL,
    TOO_LARGE="Body too large, or more items than the queue holds.",
    INVALID='The body is not {"groups": [{"id", "items": [...]}]}.',
)


class GroupIn(BaseModel):
    """One group: the responses to one prompt. Items stay untyped so a malformed one is `invalid`."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field(
        None,
        description="Echoed back (integers are echoed as text).",
        # The schema says what is accepted: an integer id is read as its text (schemathesis, issue 28).
        json_schema_extra={"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
    )
    items: list[Any] = Field(
        description="Items as in /v1/rewards; with shaping they may carry `length` (tokens),"
        " `exit_position` (s_grpo) and `tool_calls` (rubric)."
    )
    shaping: Shaping | None = Field(
        None, description="Length control over the group (docs/length-control.md)."
    )
    rubric: Rubric | None = Field(
        None, description="Weighted components with gates (docs/length-control.md)."
    )
    # strict: the schema says boolean, so 0 is refused as the schema refuses it (schemathesis, issue 28)
    self_consistency: bool = Field(
        False,
        strict=True,
        description="Vote without a reference: an item with no verdict still joins the answer clusters with"
        " the answer its response states; the stats' `majority_answer` is the vote (docs/voting.md).",
    )

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return id_text(value)

    @model_validator(mode="after")
    def _one_option(self) -> GroupIn:
        if self.shaping is not None and self.rubric is not None:
            raise ValueError("give shaping or rubric, not both")
        return self


class GroupsRequest(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"groups": [_EXAMPLE_GROUP]}]})

    groups: list[GroupIn]


class GroupsResponse(BaseModel):
    groups: list[GroupOutcome] = Field(description="One entry per group, in order; results in item order.")


@router.post("/v1/groups", response_model=GroupsResponse, responses=_ERRORS)
async def groups(body: GroupsRequest, request: Request) -> GroupsResponse:
    """Score groups of responses; each comes back with its results and its statistics."""
    engine = engine_of(request)
    count = sum(len(g.items) for g in body.groups)
    work = engine.score_groups_async(
        [
            {
                "id": g.id,
                "items": g.items,
                "shaping": g.shaping,
                "rubric": g.rubric,
                "self_consistency": g.self_consistency,
            }
            for g in body.groups
        ]
    )
    outcomes = await admitted(request, count, work, f"{count} items in {len(body.groups)} groups")
    return GroupsResponse(groups=outcomes)
