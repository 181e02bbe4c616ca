"""The session routes (issue 25): create, step (one or a batch), verify, delete.

Sessions are the one stateful surface; the state lives in the sandbox the session's tools hold, and the
engine keeps only handles (the session methods of `assay.engine.service.Service`). `verify` scores through the
engine exactly as `/v1/rewards` does (one verdict path) and adds the session's trace summary to
`details`.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.api.body import BoundedRoute
from assay.api.codes import CREATED, NO_CONTENT, Refusal, refusal_of, refuse
from assay.api.envelope import AsciiJSONResponse
from assay.api.protocol import SESSION_ERRORS
from assay.api.state import admitted, engine_of, remember_tools
from assay.errors import ItemError
from assay.registry import Registry
from assay.sandbox.base import SandboxError
from assay.sessions.limits import SessionLimits
from assay.sessions.service import StepCall
from assay.sessions.store import SessionGone, SessionsFull
from assay.types import Item, Result

router = APIRouter(tags=["sessions"], route_class=BoundedRoute)


class CreateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    item: dict[str, Any] = Field(description="An item as in /v1/rewards, without the response.")
    tools: list[str] = Field(
        min_length=1, description='Tool names, e.g. ["python"] (GET /v1/tasks lists them).'
    )
    limits: SessionLimits = Field(default_factory=SessionLimits)


class CreateResponse(BaseModel):
    session_id: str
    tools: list[dict[str, Any]] = Field(description="OpenAI function-tool schemas of the session's tools.")
    expires_at: float = Field(description="Unix time the session expires unless a call renews it.")
    limits: SessionLimits = Field(description="The limits in force (defaults filled in).")


class StepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: Any = Field(default=None, description="The tool's arguments (an object, or its JSON text).")


class StepResponse(BaseModel):
    session_id: str
    observation: str
    status: str = Field(description="ok | tool_error | invalid_call | session_ended")
    step: int
    elapsed_ms: float
    reason: str | None = Field(None, description="Why, when status is not ok (exception, timeout, ...).")
    truncated: int = Field(0, description="Bytes of output cut past the output cap.")


class BatchCall(StepRequest):
    session_id: str


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    calls: list[BatchCall]


class BatchResponse(BaseModel):
    results: list[dict[str, Any]] = Field(
        description="Per call, in order: a StepResponse, or {session_id, error: {type, message}}."
    )


class VerifyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    response: str


def session_item(raw: dict[str, Any], registry: Registry) -> Item:
    """The item a session is opened on (no response yet), with its task's own fields; a clear 422
    otherwise."""
    for field in ("response", "messages"):
        if field in raw:
            raise refuse(Refusal.INVALID, f"item.{field}: a session's response comes with POST .../verify")
    try:
        return registry.item_model(raw).model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "item"
        raise refuse(Refusal.INVALID, f"item.{where}: {first['msg']}") from None


@router.post("/v1/sessions", status_code=CREATED, response_model=CreateResponse, responses=SESSION_ERRORS)
async def create(body: CreateRequest, request: Request) -> CreateResponse:
    """Open a session on an item with the tools asked for."""
    engine = engine_of(request)
    try:
        info = await engine.open_session(session_item(body.item, engine.registry), body.tools, body.limits)
    except ItemError as exc:  # an unknown task or tool, a tool that cannot serve the item, limits too big
        raise refuse(Refusal.INVALID, str(exc)) from None
    except SandboxError as exc:
        raise refuse(Refusal.UNAVAILABLE, f"cannot start the session's sandbox: {exc}") from None
    remember_tools(request.app, info)  # what /mcp lists for it
    return CreateResponse(
        session_id=info.session_id, tools=info.tools, expires_at=info.expires_at, limits=info.limits
    )


@router.post("/v1/sessions/step", response_model=BatchResponse, responses=SESSION_ERRORS)
async def step_batch(body: BatchRequest, request: Request) -> BatchResponse:
    """Step many sessions at once (a trainer's whole batch of rollouts). A gone session is an error
    entry in its place; the other calls still run."""
    engine = engine_of(request)
    limit = engine.settings.sessions.max_batch
    if len(body.calls) > limit:
        raise refuse(
            Refusal.TOO_LARGE, f"{len(body.calls)} calls exceed sessions.max_batch {limit}; split them"
        )
    calls = [StepCall(c.session_id, c.tool, c.arguments) for c in body.calls]
    results = await engine.session_steps(calls)
    return BatchResponse(
        results=[
            {"session_id": r.session_id, **_gone_body(r)} if isinstance(r, SessionGone) else r.wire()
            for r in results
        ]
    )


@router.post("/v1/sessions/{session_id}/step", response_model=StepResponse, responses=SESSION_ERRORS)
async def step(session_id: str, body: StepRequest, request: Request) -> dict[str, Any]:
    """One tool call; a failing call is an observation (status tool_error), not an HTTP error."""
    result = await engine_of(request).session_step(session_id, body.tool, body.arguments)
    return result.wire()


@router.post("/v1/sessions/{session_id}/verify", response_model=Result, responses=SESSION_ERRORS)
async def verify(session_id: str, body: VerifyRequest, request: Request) -> Result:
    """Score the final response exactly as /v1/rewards would, plus the session's trace in details."""
    engine = engine_of(request)
    return await admitted(request, 1, engine.verify_session(session_id, body.response), "verify")


@router.delete("/v1/sessions/{session_id}", status_code=NO_CONTENT, responses=SESSION_ERRORS)
async def delete(session_id: str, request: Request) -> Response:
    """End a session and free its sandbox. Idempotent: an unknown or ended id is 204 too."""
    await engine_of(request).close_session(session_id)
    return Response(status_code=NO_CONTENT)


def _gone_body(exc: SessionGone) -> dict[str, Any]:
    return {"error": {"type": refusal_of(exc).type, "message": str(exc), "reason": exc.reason}}


def install(app: FastAPI) -> None:
    """The envelopes of session failures: session_gone (404/410) and sessions_full (429); an unreachable
    trajectory table (503) is the envelope's retry-later refusal."""

    @app.exception_handler(SessionGone)
    async def _gone(request: Request, exc: SessionGone) -> JSONResponse:
        return AsciiJSONResponse(_gone_body(exc), status_code=refusal_of(exc).code)

    @app.exception_handler(SessionsFull)
    async def _full(request: Request, exc: SessionsFull) -> JSONResponse:
        retry = str(max(1, round(exc.retry_after_s)))
        refusal = refusal_of(exc)
        # `limit` lets a client tell a server full of its own sessions (waiting cannot help) from a busy one
        message = f"{exc}; retry after {retry}s"
        body = {"error": {"type": refusal.type, "message": message, "limit": exc.limit}}
        return AsciiJSONResponse(body, status_code=refusal.code, headers={"Retry-After": retry})
