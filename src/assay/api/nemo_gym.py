"""NeMo Gym's resources-server protocol over Assay sessions (issue 39).

What nemo-gym 0.7.0's agents send a resources server (its `SimpleAgent.run`, which rollout collection's
`/run` calls): `POST /seed_session` with the dataset row, `POST /<tool>` with a tool call's arguments for
every call the model makes, and `POST /verify` with the row and the model's final response, the
resources server's cookies carried from each answer to the next call. An Environment Server seeds and
closes under its own id instead (`resources_session_id`, `POST /close_session`).

The routes are at the root, not under a prefix: NeMo Gym's `ServerClient` calls
`http://<host>:<port><path>`, with no base path to configure.

- `/seed_session` opens an Assay session on the row's `item` (an item as in /v1/rewards without the
  response; a row with only `expected_answer` is a math item), with the row's `tools` (none by default:
  a math item is single step) and `limits`, and sets the `assay_nemo_gym_session` cookie. An Environment
  Server's `ResourcesSeedSessionRequest` reads them from `task_data`; seeding its id again returns the
  same session, and an id that was closed stays closed. A full server holds the seed (backpressure).
- `/<tool>` (one route per session tool the server offers: python, sql, run_tests, ...) runs the call in
  the cookie's session: a traceback or a bad argument is an observation, shown to the model.
- `/verify` scores the assistant's own text in `response.output` (never the tools' outputs) exactly as
  /v1/rewards would, then ends the session (the legacy path never calls close). Unscored (the item is
  invalid, the verifier timed out or failed, the session expired) is `mask_sample: true` with a
  `failure_kind` and `failure_reason`; `reward` is then 0.0 only because NeMo Gym's wire requires a float.
- `/close_session` ends the session named by `resources_session_id` (its `episode_id` must match) or by
  the cookie; idempotent.

Not served: NeMo Gym's MCP exposure (`/mcp`), `/aggregate_metrics` and the typed Environment Server verify.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Body, FastAPI, Request, Response
from pydantic import ValidationError
from starlette.routing import Match

from assay.api.body import BoundedRoute
from assay.api.codes import Refusal, refuse
from assay.api.nemo_gym_wire import (
    BaseSeedSessionResponse,
    BaseVerifyRequest,
    BaseVerifyResponse,
    EpisodeId,
    ResourcesCloseSessionRequest,
    ResourcesCloseSessionResponse,
    ResourcesSeedSessionRequest,
    ResourcesSeedSessionResponse,
    ToolResponse,
)
from assay.api.protocol import error_responses
from assay.api.session_open import open_when_free
from assay.api.state import admitted, engine_of
from assay.errors import ItemError
from assay.items import parse_item
from assay.registry import Registry
from assay.sandbox import SandboxError
from assay.sessions import SessionGone, SessionLimits, ToolRegistry
from assay.sessions.bindings import ABSENT, CLOSED, HELD, OPENING, YOURS, Claim
from assay.sessions.service import SessionInfo
from assay.settings import Settings
from assay.types import Item, Result, Status

router = APIRouter(tags=["nemo_gym"], route_class=BoundedRoute)
COOKIE = "assay_nemo_gym_session"
# NeMo Gym's own endpoints (its RESERVED_MCP_TOOL_NAMES): never a tool route.
RESERVED = frozenset({"seed_session", "verify", "close_session", "aggregate_metrics", "mcp"})
ERRORS = error_responses(
    Refusal.BAD_REQUEST,
    Refusal.SESSION_UNKNOWN,
    Refusal.EPISODE_DONE,
    Refusal.SESSION_ENDED,
    Refusal.TOO_LARGE,
    Refusal.INVALID,
    Refusal.QUEUE_FULL,
    Refusal.UNAVAILABLE,
    SESSION_UNKNOWN="No session: no session cookie (seed first), or one naming no session.",
    EPISODE_DONE="The resources_session_id is closed, or bound to another episode.",
)
# An unscored Result's failure_kind: NeMo Gym's vocabulary where it has the word, else `assay:<kind>`.
_FAILURE_KINDS = {
    Status.INVALID: "assay:item_invalid",
    Status.TIMEOUT: "assay:verifier_timeout",
    Status.ERROR: "verifier_error",
}


@dataclass(frozen=True)
class _Bound:
    session_id: str
    episode_id: EpisodeId


SPACE = "nemo_gym"  # Environment Server ids in the engine's bindings table (bound, opening, closed)


def session_of_row(
    data: dict[str, Any], registry: Registry | None = None
) -> tuple[Item, list[str], SessionLimits]:
    """The item, tools and limits a row (or `task_data`) asks for; 422 naming the field otherwise."""
    raw = data.get("item")
    if raw is None and "expected_answer" in data:
        raw = {"task": "math", "reference": str(data["expected_answer"])}
    if not isinstance(raw, dict):
        raise refuse(Refusal.INVALID, "seed_session needs `item` (an Assay item) or `expected_answer`")
    for name in ("response", "messages"):  # what is scored is the model's own final response
        if name in raw:
            raise refuse(Refusal.INVALID, f"item.{name}: the response comes with POST /verify")
    tools = data.get("tools", [])
    if not (isinstance(tools, list) and all(isinstance(name, str) for name in tools)):
        raise refuse(Refusal.INVALID, "tools must be a list of tool names")
    try:
        return parse_item(raw, registry), tools, SessionLimits.model_validate(data.get("limits") or {})
    except ItemError as exc:
        raise refuse(Refusal.INVALID, f"item: {exc}") from None
    except ValidationError as exc:
        raise refuse(Refusal.INVALID, f"limits: {exc.errors()[0]['msg']}") from None


async def _open(request: Request, data: dict[str, Any]) -> SessionInfo:
    item, tools, limits = session_of_row(data, engine_of(request).registry)
    try:
        return await open_when_free(engine_of(request), item, tools, limits)
    except ItemError as exc:  # an unknown task or tool, a tool that cannot serve the item, limits too big
        raise refuse(Refusal.INVALID, str(exc)) from None
    except SandboxError as exc:
        raise refuse(Refusal.UNAVAILABLE, f"cannot start the session's sandbox: {exc}") from None


def responses_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI function-tool schema in the Responses API's flat form (what NeMo Gym prompts with)."""
    function = schema["function"]
    return {"type": "function", "strict": False, **function}


def _cookie_session(request: Request) -> str:
    session_id = request.cookies.get(COOKIE)
    if not session_id:
        raise refuse(Refusal.SESSION_UNKNOWN, f"no {COOKIE} cookie: POST /seed_session first")
    return session_id


@router.post("/seed_session", responses=ERRORS)
async def seed_session(
    request: Request, response: Response, body: Annotated[dict[str, Any], Body()]
) -> dict[str, Any]:
    """Open a session for one rollout: the row's item, tools and limits (or an Environment Server's)."""
    if "resources_session_id" in body:
        try:
            seed = ResourcesSeedSessionRequest.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise refuse(Refusal.INVALID, f"{where}: {first['msg']}") from None
        bound = await _bind(request, seed)
        response.set_cookie(COOKIE, bound.session_id, httponly=True, samesite="strict")
        return ResourcesSeedSessionResponse(resources_session_id=seed.resources_session_id).model_dump()
    previous = request.cookies.get(COOKIE)
    info = await _open(request, body)
    if previous:  # one cookie, one session: a new seed ends the one it carried
        await engine_of(request).close_session(previous)
    response.set_cookie(COOKIE, info.session_id, httponly=True, samesite="strict")
    tools = [responses_tool(schema) for schema in info.tools]
    return BaseSeedSessionResponse(tools=tools, expires_at=info.expires_at).model_dump()


async def _bind(request: Request, seed: ResourcesSeedSessionRequest) -> _Bound:
    """The session of an Environment Server's id: the one already bound or being opened, or a new one."""
    bindings, key = engine_of(request).bindings, seed.resources_session_id
    (claim,) = await bindings.claim(SPACE, [key])
    while claim.state not in (HELD, YOURS):
        if claim.state == CLOSED:
            raise refuse(Refusal.EPISODE_DONE, f"resources session {key!r} is closed")
        if claim.state == OPENING:  # another seed of this id opens it: its session, once open
            claim = await bindings.wait(SPACE, key)
        else:  # absent again (an open abandoned meanwhile)
            (claim,) = await bindings.claim(SPACE, [key])
    if claim.state == HELD:
        bound: _Bound = claim.value
    else:
        try:
            bound = _Bound((await _open(request, seed.task_data)).session_id, seed.episode_id)
        except BaseException as exc:
            await asyncio.shield(bindings.abandon(SPACE, key, claim.value, exc))
            raise
        if not await bindings.settle(SPACE, key, claim.value, bound):  # given up meanwhile
            await engine_of(request).close_session(bound.session_id)
            raise refuse(Refusal.UNAVAILABLE, f"resources session {key!r}: its open was given up; seed again")
    if bound.episode_id != seed.episode_id:
        raise refuse(Refusal.EPISODE_DONE, f"resources session {key!r} is bound to another episode")
    return bound


def tool_route(name: str) -> Callable[..., Awaitable[ToolResponse]]:
    """The route of one tool: the body is the call's arguments, the session is the cookie's."""

    async def call(request: Request, arguments: Annotated[dict[str, Any], Body()]) -> ToolResponse:
        result = await engine_of(request).session_step(_cookie_session(request), name, arguments)
        return ToolResponse(
            output=result.observation,
            status=result.status,
            step=result.step,
            reason=result.reason,
            truncated=result.truncated,
        )

    call.__doc__ = f"One `{name}` call in the cookie's session; a failing call is an observation."
    return call


def answer_text(response: dict[str, Any]) -> str:
    """The model's own text in a Responses object: its assistant messages' output_text parts, in order.
    Tool outputs, tool calls and reasoning are left out (a verdict reads the model's text only)."""
    output = response.get("output")
    if not isinstance(output, list):
        raise refuse(Refusal.INVALID, "response.output must be a list of output items")
    texts = []
    for entry in output:
        if not (isinstance(entry, dict) and entry.get("type") == "message"):
            continue
        if entry.get("role", "assistant") != "assistant" or not isinstance(entry.get("content"), list):
            continue
        for part in entry["content"]:
            text = part.get("text") if isinstance(part, dict) and part.get("type") == "output_text" else None
            if isinstance(text, str):
                texts.append(text)
    return "\n".join(texts)


def verdict(body: BaseVerifyRequest, result: Result) -> BaseVerifyResponse:
    """NeMo Gym's verify response for an Assay Result: unscored is masked, never a bare 0."""
    scored = result.status == Status.OK and result.reward is not None
    return BaseVerifyResponse.model_validate(
        {
            **body.model_dump(),
            "reward": result.reward if scored else 0.0,
            "mask_sample": not scored,
            "failure_kind": None if scored else _FAILURE_KINDS.get(result.status, "verifier_error"),
            "failure_reason": None if scored else result.reason,
            "assay_result": result.model_dump(mode="json"),
        }
    )


def _lost(body: BaseVerifyRequest, exc: SessionGone) -> BaseVerifyResponse:
    """The session's record is gone (expired, or ended by an earlier verify): masked, with the reason."""
    kind = "session_expired" if exc.reason.startswith("expired") else "session_lost"
    fields = {"mask_sample": True, "failure_kind": kind, "failure_reason": f"session ended: {exc.reason}"}
    return BaseVerifyResponse.model_validate({**body.model_dump(), "reward": 0.0, **fields})


@router.post("/verify", response_model=BaseVerifyResponse, responses=ERRORS)
async def verify(body: BaseVerifyRequest, request: Request, response: Response) -> BaseVerifyResponse:
    """Score the final response as /v1/rewards would, then end the session."""
    session_id, engine = _cookie_session(request), engine_of(request)
    text = answer_text(body.response)
    try:
        result = await admitted(request, 1, engine.verify_session(session_id, text), "verify")
    except SessionGone as exc:
        if not exc.ended:  # an id no session ever had: a forged or foreign cookie
            raise
        return _lost(body, exc)
    await engine.close_session(session_id)
    response.delete_cookie(COOKIE)
    return verdict(body, result)


@router.post("/close_session", response_model=ResourcesCloseSessionResponse, responses=ERRORS)
async def close_session(
    body: ResourcesCloseSessionRequest, request: Request, response: Response
) -> ResourcesCloseSessionResponse:
    """End a session (an Environment Server's by its id and episode, else the cookie's); idempotent."""
    engine = engine_of(request)
    key = body.resources_session_id
    if key is None:
        session_id = _cookie_session(request)
        await engine.close_session(session_id)
        response.delete_cookie(COOKIE)
        return ResourcesCloseSessionResponse(resources_session_id=session_id)
    if body.episode_id is None:
        raise refuse(Refusal.INVALID, "episode_id: required with resources_session_id")
    try:  # after an open in flight; one that failed bound nothing
        claim = await engine.bindings.wait(SPACE, key)
    except Exception:
        claim = Claim(ABSENT)
    if claim.state == HELD and claim.value.episode_id != body.episode_id:
        raise refuse(Refusal.EPISODE_DONE, "episode_id does not match the seeded resources session")
    # closed: a seed arriving after the close must not open it again
    bound = await engine.bindings.release(SPACE, key, close=True)
    if bound is not None:
        await engine.close_session(bound.session_id)
    return ResourcesCloseSessionResponse(resources_session_id=key)


def _taken(app: FastAPI, path: str) -> bool:
    """Whether a route of the app already answers `path` (for any method)."""
    scope = {"type": "http", "path": path, "root_path": "", "method": "POST"}
    return any(route.matches(scope)[0] != Match.NONE for route in app.routes)


def install(app: FastAPI, settings: Settings) -> None:
    """Mount the routes, and one `POST /<tool>` per session tool this server offers whose path is free
    (after every other router, so no existing route is shadowed)."""
    app.include_router(router)
    tools = APIRouter(tags=["nemo_gym"], route_class=BoundedRoute)
    for name in ToolRegistry.from_settings(settings):
        if name in RESERVED or _taken(app, f"/{name}"):
            continue
        tools.add_api_route(
            f"/{name}",
            tool_route(name),
            methods=["POST"],
            response_model=ToolResponse,
            responses=ERRORS,
            name=f"nemo_gym_tool_{name}",
            summary=f"NeMo Gym tool call: {name}",
        )
    app.include_router(tools)
