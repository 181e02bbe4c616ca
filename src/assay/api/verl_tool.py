"""The verl-tool / Agent0 tool-server wire format over Assay sessions: `POST /get_observation`.

    {"trajectory_ids": [...], "actions": [...], "finish": [...], "extra_fields": [{"item": {...}}, ...]}
    -> {"observations": [...], "dones": [...], "valids": [...]}

As in verl-tool's tool server, an action is the model's raw text for one turn. Its call is its last
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (the Hermes form Qwen models write and verl's
own parser reads): any tool of the session, by name, with its arguments; else its last `<tool>...</tool>`
for a tool of the session (`<python>...</python>`); else its last fenced code block, run by the session's
one tool (verl-tool's python_code form; code that names no tool in a session of several is not valid,
and its observation says to name one). A trajectory's first action opens an Assay session with
`extra_fields[i].tools` (default: the tools the item's task brings, python when it brings none) on
`extra_fields[i].item` (else a bare math item), and later actions step it, so state persists across
turns; `finish: true` ends the trajectory's session (done, valid). An action with no call is not valid
(empty observation, not done); so is a call that cannot be run (a `<tool_call>` that is not a JSON object
with a name, code that names no tool), whose observation says why. A session that ended (its interpreter
lost, its TTL or step limit) answers done with the reason as the observation. The trajectory -> session
map is the engine's `bindings` (`assay.sessions.bindings`: in this process, or under `assay serve --ray`
one table every ingress replica reads); the state itself is in the sessions' sandboxes.

One trajectory, one session (issue 38): calls for a trajectory whose session is still being opened wait
for that open instead of opening another, and a `finish` that arrives meanwhile closes it once it is
open. verl-tool's client reads any answer's JSON as observations and shows its own errors to the policy
as an observation ("Tool call error: ..."), so a full server is never answered: the request waits for a
free session (up to `OPEN_WAIT_S`, then 429 `sessions_full`, which verl-tool fails on as a missing key).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, StrictBool, ValidationError

from assay.api.body import BoundedRoute
from assay.api.codes import Refusal, refuse
from assay.api.protocol import SESSION_ERRORS
from assay.api.session_open import OPEN_WAIT_S as SESSION_OPEN_WAIT_S
from assay.api.session_open import open_when_free
from assay.api.state import engine_of
from assay.errors import ItemError
from assay.registry import Registry
from assay.rl_client.tool_calls import ActionCalls, BadCall, Call
from assay.sandbox import SandboxError
from assay.sessions import SessionGone, SessionLimits
from assay.sessions.bindings import HELD, OPENING, YOURS, Claim
from assay.sessions.service import StepCall
from assay.sessions.tools import task_tools
from assay.types import Item

router = APIRouter(tags=["trainers"], route_class=BoundedRoute)


class ObservationRequest(BaseModel):
    trajectory_ids: list[str]
    actions: list[str]
    # StrictBool: the schema says boolean, so 0 is refused as the schema refuses it (schemathesis, issue 28)
    finish: list[StrictBool] | None = None
    is_last_step: list[StrictBool] | None = None
    extra_fields: list[dict[str, Any]] | None = None


class ObservationResponse(BaseModel):
    observations: list[str] = Field(description="One observation per action ('' when not valid).")
    dones: list[bool]
    valids: list[bool]


@dataclass(frozen=True)
class _Planned:
    """What a trajectory's session is opened on (its item and tools) and how its actions are read."""

    item: Item
    tools: list[str]
    calls: ActionCalls


def _plan(extra: dict[str, Any], registry: Registry, schemas: list[dict[str, Any]]) -> _Planned:
    """The session `extra` asks for: its item (else a bare math item), its tools (else the tools the
    item's task brings: `task_tools`), and the reader of its actions over those tools' `schemas`."""
    raw = extra.get("item") or {"task": "math"}
    item = registry.item_model(raw).model_validate(raw)
    tools = extra.get("tools") or task_tools(registry.lookup(item.task))
    if not (isinstance(tools, list) and all(isinstance(name, str) for name in tools)):
        raise TypeError("tools must be a list of tool names")
    offered = {schema["function"]["name"]: schema for schema in schemas}
    return _Planned(item, tools, ActionCalls([offered[name] for name in tools if name in offered]))


# How long a trajectory's first action waits for a free session before the request is refused (429);
# verl-tool's own tool_call_time_out (or none) bounds its side.
OPEN_WAIT_S = SESSION_OPEN_WAIT_S


SPACE = "verl_tool"  # this route's keys in the engine's bindings table


async def _call(
    request: Request, trajectory: str, action: str, extra: dict[str, Any], claim: Claim
) -> StepCall | str | None:
    """The action's step call in the trajectory's session (its own, the one being opened for it, or a
    new one, opened only for an action with a call); a BadCall's reason; None when it has no call.
    `claim` is the trajectory's state as the request found it (`Bindings.claim`)."""
    engine = engine_of(request)
    bindings = engine.bindings
    while True:
        if claim.state == HELD:
            return _step(claim.value, action)
        if claim.state == OPENING:  # another call of this trajectory opens its session: wait for it
            claim = await bindings.wait(SPACE, trajectory)
            continue
        if claim.state != YOURS:  # absent again (an open abandoned meanwhile): claim it
            (claim,) = await bindings.claim(SPACE, [trajectory])
            continue
        token = claim.value
        try:
            planned = _plan(extra, engine.registry, engine.session_tools())
            call = planned.calls.parse(action)
            if call is None or isinstance(call, BadCall):
                await bindings.abandon(SPACE, trajectory, token)
                return None if call is None else call.reason
            limits = SessionLimits(**extra.get("limits", {}))
            info = await open_when_free(engine, planned.item, planned.tools, limits, OPEN_WAIT_S)
        except BaseException as exc:
            await asyncio.shield(bindings.abandon(SPACE, trajectory, token, exc))
            raise
        if await bindings.settle(SPACE, trajectory, token, (info.session_id, planned.calls)):
            return StepCall(info.session_id, *call)
        await engine.close_session(info.session_id)  # its open was given up meanwhile: not the one
        (claim,) = await bindings.claim(SPACE, [trajectory])


def _step(held: tuple[str, ActionCalls], action: str) -> StepCall | str | None:
    session_id, calls = held
    call: Call | BadCall | None = calls.parse(action)
    if call is None or isinstance(call, BadCall):
        return None if call is None else call.reason
    return StepCall(session_id, *call)


async def _finish(request: Request, trajectory: str) -> None:
    """End the trajectory's session, once it is open if its open is in flight."""
    engine = engine_of(request)
    held = await engine.bindings.release(SPACE, trajectory)
    if held is not None:
        await engine.close_session(held[0])


@router.post("/get_observation", response_model=ObservationResponse, responses=SESSION_ERRORS)
async def get_observation(body: ObservationRequest, request: Request) -> ObservationResponse:
    """One turn for many trajectories (verl-tool's tool-server request)."""
    count = len(body.trajectory_ids)
    finish = body.finish or [False] * count
    extras = body.extra_fields or [{}] * count
    if not (len(body.actions) == len(finish) == len(extras) == count):
        raise refuse(
            Refusal.INVALID, "trajectory_ids, actions, finish and extra_fields must have one entry each"
        )
    engine = engine_of(request)
    going = [body.trajectory_ids[index] for index in range(count) if not finish[index]]
    claims = iter(await engine.bindings.claim(SPACE, going))  # one round trip for the whole request
    claimed: list[Claim | None] = [None if finish[index] else next(claims) for index in range(count)]
    started: set[int] = set()  # entries whose own claim is being handled (see the finally below)
    observations, dones, valids = [""] * count, [False] * count, [False] * count

    async def prepare(index: int) -> StepCall | None:
        """The entry's step call once its session is open, or None (finished, or no call)."""
        trajectory = body.trajectory_ids[index]
        if finish[index]:
            await _finish(request, trajectory)
            dones[index] = valids[index] = True
            return None
        try:
            claim = claimed[index]
            assert claim is not None
            started.add(index)
            call = await _call(request, trajectory, body.actions[index], extras[index] or {}, claim)
        except (ItemError, ValidationError, TypeError, AttributeError) as exc:  # a bad item or limits
            raise refuse(Refusal.INVALID, f"extra_fields[{index}]: {exc}") from None
        except SandboxError as exc:
            raise refuse(Refusal.UNAVAILABLE, f"cannot start a session's sandbox: {exc}") from None
        if isinstance(call, str):  # the policy's call names no tool it can run: not valid, and why
            observations[index] = f"[{call}]"
            return None
        return call

    # all at once: a trajectory waiting for a free session does not hold up the others' opens
    try:
        prepared = await asyncio.gather(*(prepare(i) for i in range(count)), return_exceptions=True)
    finally:  # cancelled before an entry began: an open claimed for it must not stay in flight
        for index, claim in enumerate(claimed):
            if claim is not None and claim.state == YOURS and index not in started:
                await asyncio.shield(engine.bindings.abandon(SPACE, body.trajectory_ids[index], claim.value))
    failed = next((p for p in prepared if isinstance(p, BaseException)), None)
    if failed is not None:
        raise failed
    calls = [(index, p) for index, p in enumerate(prepared) if isinstance(p, StepCall)]
    results = await engine.session_steps([call for _, call in calls])
    for (index, _), result in zip(calls, results, strict=True):
        valids[index] = True
        if isinstance(result, SessionGone):
            observations[index], dones[index] = f"[session ended: {result.reason}]", True
            await engine.bindings.drop(SPACE, body.trajectory_ids[index])
        else:
            observations[index] = result.observation
            dones[index] = result.status == "session_ended"
    return ObservationResponse(observations=observations, dones=dones, valids=valids)
