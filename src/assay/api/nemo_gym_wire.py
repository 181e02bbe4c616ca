"""NeMo Gym's resources-server request and response models, field for field (nemo-gym 0.7.0,
`nemo_gym.base_resources_server`), so Assay speaks its wire without importing it: nemo-gym lives in its
own environment (its pins do not fit Assay's). tests/nemo_gym_driver.py checks, in that environment,
that each model here has the fields of its namesake and that bodies round-trip between the two.

The OpenAI Responses objects inside (`responses_create_params`, `response`) stay plain JSON here: Assay
reads only the assistant's text out of `response.output` and echoes the rest as it came.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


def _not_a_bool(value: Any) -> Any:
    """JSON Schema's integer: 3.0 is one, false is not (pydantic would read false as 0)."""
    if isinstance(value, bool):
        raise ValueError("must be an integer, not a boolean")
    return value


class EpisodeId(BaseModel):
    """One attempt of one rollout."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rollout_id: str = Field(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    attempt: Annotated[int, BeforeValidator(_not_a_bool)] = Field(0, ge=0)


class TaskId(BaseModel):
    """One task of a taskset."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    taskset: str = Field(min_length=1, max_length=255)
    task_id: str = Field(min_length=1, max_length=255)


class BaseRunRequest(BaseModel):
    """One dataset row as NeMo Gym's agents send it to `/seed_session` (the legacy `/run` path): the
    model's request plus the row's own fields. Assay reads `item` (an Assay item without the response;
    else `expected_answer` makes a math item), `tools` and `limits`; other fields are the row's."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    responses_create_params: dict[str, Any] = Field(default_factory=dict)


class BaseVerifyRequest(BaseRunRequest):
    """The row plus the model's final `response` (an OpenAI Responses object with its `output` items)."""

    response: dict[str, Any]


class BaseVerifyResponse(BaseVerifyRequest):
    """NeMo Gym's verdict. `reward` is a float on its wire even when there is no verdict: then
    `mask_sample` is true (leave the sample out), `failure_kind` names the kind (NeMo Gym's vocabulary,
    or `assay:<kind>`) and `failure_reason` says why. `assay_result` is Assay's own Result (its
    `reward` is null when unscored), added for clients that read it."""

    reward: float
    mask_sample: bool = False
    failure_kind: str | None = None
    failure_reason: str | None = None
    assay_result: dict[str, Any] | None = None


class BaseSeedSessionResponse(BaseModel):
    """The legacy seed's answer (NeMo Gym's is empty; these fields are added): the session's tools as
    Responses API function tools and when it expires unless a call renews it."""

    tools: list[dict[str, Any]] = Field(default_factory=list)
    expires_at: float | None = None


class ResourcesSeedSessionRequest(BaseModel):
    """An Environment Server's seed: its own session id, the episode and the task's data (`item`,
    `tools`, `limits` are read from `task_data` as from a row)."""

    model_config = ConfigDict(extra="forbid")

    resources_session_id: str = Field(min_length=1, max_length=255)
    episode_id: EpisodeId
    task_id: TaskId
    task_data: dict[str, Any]


class ResourcesSeedSessionResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    resources_session_id: str
    resources_tools: dict[str, Any] | None = None
    sandbox_access: dict[str, Any] | None = None


class ResourcesCloseSessionRequest(BaseModel):
    """Close a session: the one seeded under `resources_session_id` (with its `episode_id`), or, with
    neither, the one the request's session cookie names."""

    model_config = ConfigDict(extra="forbid")

    resources_session_id: str | None = Field(None, min_length=1, max_length=255)
    episode_id: EpisodeId | None = None


class ResourcesCloseSessionResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    resources_session_id: str


class ToolResponse(BaseModel):
    """What a tool route answers (the agent shows its JSON to the model as the call's output)."""

    output: str
    status: str = Field(description="ok | tool_error | invalid_call | session_ended | error")
    step: int
    reason: str | None = None
    truncated: int = 0
