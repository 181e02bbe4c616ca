"""The session routes (issue 25): create, step (one or a batch), verify, delete.

Sessions are the one stateful surface; the state lives in the sandbox the session's tools hold, and the
`SessionManager` on `app.state.sessions` keeps only handles. `verify` scores through the engine exactly
as `/v1/rewards` does (one verdict path) and adds the session's trace summary to `details`.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.api.envelope import AsciiJSONResponse
from assay.api.state import engine_of, scored_batch
from assay.errors import ItemError
from assay.sandbox.base import SandboxError
from assay.sessions.limits import SessionLimits
from assay.sessions.store import SessionGone, SessionManager, SessionsFull, StepResult
from assay.types import Item, Result

router = APIRouter(tags=["sessions"])


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


def sessions_of(request: Request) -> SessionManager:
    manager: SessionManager = request.app.state.sessions
    return manager


def _pool(request: Request) -> ThreadPoolExecutor:
    pool: ThreadPoolExecutor = request.app.state.session_threads
    return pool


async def _in_thread(request: Request, fn: Any, *args: Any) -> Any:
    return await asyncio.get_running_loop().run_in_executor(_pool(request), fn, *args)


def _item(raw: dict[str, Any], request: Request) -> Item:
    if "response" in raw:
        raise HTTPException(422, "item.response: a session's response comes with POST .../verify")
    try:
        item = Item.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "item"
        raise HTTPException(422, f"item.{where}: {first['msg']}") from None
    engine_of(request).registry.lookup(item.task)  # UnknownTaskError (422) now, not at verify
    return item


@router.post("/v1/sessions", status_code=201, response_model=CreateResponse)
async def create(body: CreateRequest, request: Request) -> CreateResponse:
    """Open a session on an item with the tools asked for."""
    manager = sessions_of(request)
    try:
        item = _item(body.item, request)
        session = await _in_thread(request, manager.create, item, body.tools, body.limits)
    except ItemError as exc:  # an unknown task or tool, a tool that cannot serve the item, limits too big
        raise HTTPException(422, str(exc)) from None
    except SandboxError as exc:
        raise HTTPException(503, f"cannot start the session's sandbox: {exc}") from None
    return CreateResponse(
        session_id=session.id,
        tools=[tool.schema() for tool, _ in session.tools.values()],
        expires_at=session.expires_at(),
        limits=session.context.limits,
    )


@router.post("/v1/sessions/step", response_model=BatchResponse)
async def step_batch(body: BatchRequest, request: Request) -> BatchResponse:
    """Step many sessions at once (a trainer's whole batch of rollouts). A gone session is an error
    entry in its place; the other calls still run."""
    manager = sessions_of(request)
    if len(body.calls) > manager.config.max_batch:
        raise HTTPException(
            413, f"{len(body.calls)} calls exceed sessions.max_batch {manager.config.max_batch}"
        )

    async def one(call: BatchCall) -> dict[str, Any]:
        try:
            result: StepResult = await _in_thread(
                request, manager.step, call.session_id, call.tool, call.arguments
            )
        except SessionGone as exc:
            return {"session_id": call.session_id, "error": _gone_body(exc)["error"]}
        return result.wire()

    return BatchResponse(results=list(await asyncio.gather(*(one(call) for call in body.calls))))


@router.post("/v1/sessions/{session_id}/step", response_model=StepResponse)
async def step(session_id: str, body: StepRequest, request: Request) -> dict[str, Any]:
    """One tool call; a failing call is an observation (status tool_error), not an HTTP error."""
    result: StepResult = await _in_thread(
        request, sessions_of(request).step, session_id, body.tool, body.arguments
    )
    return result.wire()


@router.post("/v1/sessions/{session_id}/verify", response_model=Result)
async def verify(session_id: str, body: VerifyRequest, request: Request) -> Result:
    """Score the final response exactly as /v1/rewards would, plus the session's trace in details."""
    session = sessions_of(request).get(session_id)
    item = {**session.context.item.model_dump(exclude_none=True), "response": body.response}
    (result,) = await scored_batch(request, [item])
    return result.model_copy(update={"details": {**result.details, "session": session.summary()}})


@router.delete("/v1/sessions/{session_id}", status_code=204)
async def delete(session_id: str, request: Request) -> Response:
    """End a session and free its sandbox. Idempotent: an unknown or ended id is 204 too."""
    await _in_thread(request, sessions_of(request).delete, session_id)
    return Response(status_code=204)


def _gone_body(exc: SessionGone) -> dict[str, Any]:
    return {"error": {"type": "session_gone", "message": str(exc), "reason": exc.reason}}


def install(app: FastAPI) -> None:
    """The envelopes of session failures: session_gone (404/410) and sessions_full (429)."""

    @app.exception_handler(SessionGone)
    async def _gone(request: Request, exc: SessionGone) -> JSONResponse:
        return AsciiJSONResponse(_gone_body(exc), status_code=exc.code)

    @app.exception_handler(SessionsFull)
    async def _full(request: Request, exc: SessionsFull) -> JSONResponse:
        retry = str(max(1, round(exc.retry_after_s)))
        body = {"error": {"type": "sessions_full", "message": f"{exc}; retry after {retry}s"}}
        return AsciiJSONResponse(body, status_code=429, headers={"Retry-After": retry})
