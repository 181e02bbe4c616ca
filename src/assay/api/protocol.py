"""Request and response schemas of the HTTP surface (the wire contract of DESIGN.md)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.api.codes import Refusal
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
    tools: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Session tools, as OpenAI function-tool schemas (POST /v1/sessions).",
    )


class LimitsResponse(BaseModel):
    """What one request may hold; clients size their batches from it (and after a 413)."""

    max_batch_items: int = Field(description="Most items in one request (ASSAY_QUEUE_SIZE); more is 413.")
    max_body_bytes: int = Field(description="Largest request body (ASSAY_MAX_BODY_BYTES); more is 413.")
    queue_size: int = Field(description="Items admitted at once over all requests; beyond it: 429.")
    retry_after_s: int = Field(description="Retry-After sent with 429 and 503.")


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
    rewards: list[float] | None = Field(description="null when a sample is invalid (see `error`).")
    scores: list[float] | None
    extra_logs: dict[str, list[Any]]
    error: ErrorBody | None = Field(
        default=None, description="Why the batch has no rewards: a sample is invalid (retrying cannot help)."
    )


def error_responses(*refusals: Refusal, **said: str) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for refusals, each with the envelope's schema; `said` replaces a refusal's
    description, by its name."""
    return {r.code: {"model": ErrorEnvelope, "description": said.get(r.name, r.said)} for r in refusals}


POST_ERRORS = error_responses(
    Refusal.BAD_REQUEST, Refusal.TOO_LARGE, Refusal.INVALID, Refusal.QUEUE_FULL, Refusal.UNAVAILABLE
)
# A session's routes answer session_gone for an unknown or ended id as well.
SESSION_ERRORS = error_responses(
    Refusal.BAD_REQUEST,
    Refusal.SESSION_UNKNOWN,
    Refusal.SESSION_ENDED,
    Refusal.TOO_LARGE,
    Refusal.INVALID,
    Refusal.QUEUE_FULL,
    Refusal.UNAVAILABLE,
)
