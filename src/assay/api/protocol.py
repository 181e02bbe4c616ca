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
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[Any]]


def error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI entries for error answers, each with the envelope's schema."""
    said = {
        400: "The request cannot be read.",
        404: "No such session (session_gone): never created, or ended long ago.",
        410: "The session ended (session_gone): expired, closed, or its sandbox was lost; the reason says.",
        413: "Body or batch too large; GET /v1/limits says the limits.",
        422: "The body does not have the documented shape.",
        429: "Queue full; retry after the Retry-After header.",
        503: "Shutting down or not ready; retry after the Retry-After header.",
    }
    return {code: {"model": ErrorEnvelope, "description": said[code]} for code in codes}


POST_ERRORS = error_responses(400, 413, 422, 429, 503)
# A session's routes answer session_gone for an unknown or ended id as well.
SESSION_ERRORS = error_responses(400, 404, 410, 413, 422, 429, 503)
