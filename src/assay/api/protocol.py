"""Request and response schemas of the HTTP surface (the wire contract of DESIGN.md)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.types import Result, TaskInfo

_EXAMPLE_ITEM: dict[str, Any] = {
    "id": "q17-s3",
    "task": "math",
    "prompt": "What is 1/2 as a decimal?",
    "response": "Dividing 1 by 2 gives ... so the answer is \\boxed{\\frac12}",
    "reference": "0.5",
    "options": {},
}


class RewardsRequest(BaseModel):
    """A batch of items. Items stay untyped here so one malformed item is `invalid`, not a 422."""

    model_config = ConfigDict(json_schema_extra={"examples": [{"items": [_EXAMPLE_ITEM]}]})

    items: list[Any] = Field(description="Items as in the contract (see GET /v1/tasks for each task).")


class RewardsResponse(BaseModel):
    results: list[Result] = Field(description="One result per item, in the same order.")


class TasksResponse(BaseModel):
    tasks: list[TaskInfo]


class ErrorBody(BaseModel):
    type: str
    message: str


class ErrorEnvelope(BaseModel):
    """The one shape of every 4xx/5xx body."""

    error: ErrorBody


class OpenRLHFRequest(BaseModel):
    """OpenRLHF's remote reward request: `query` is the decoded prompt + response."""

    model_config = ConfigDict(extra="allow")

    query: list[str]
    prompts: list[str] | None = None
    labels: list[str] | None = None


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[Any]]
