"""The verl-tool / Agent0 tool-server wire format over Assay sessions: `POST /get_observation`.

    {"trajectory_ids": [...], "actions": [...], "finish": [...], "extra_fields": [{"item": {...}}, ...]}
    -> {"observations": [...], "dones": [...], "valids": [...]}

As in verl-tool's tool server, an action is the model's raw text for one turn. Its call is its last
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (the Hermes form Qwen models write and verl's
own parser reads): any tool of the session, by name, with its arguments; else its last fenced python block
(or `<python>...</python>`), run by the python tool (verl-tool's python_code form). A trajectory's first
action opens an Assay session with `extra_fields[i].tools` (default `["python"]`) on
`extra_fields[i].item` (else a bare math item), and later actions step it, so state persists across
turns; `finish: true` ends the trajectory's session (done, valid). An action with no call (or a
`<tool_call>` that is not a JSON object with a name) is not valid (empty observation, not done). A
session that ended (its interpreter lost, its TTL or step limit) answers done with the reason as the
observation. The trajectory -> session map is a bounded table of handles on the app; the state itself is
in the sessions' sandboxes.

One trajectory, one session (issue 38): calls for a trajectory whose session is still being opened wait
for that open instead of opening another, and a `finish` that arrives meanwhile closes it once it is
open. verl-tool's client reads any answer's JSON as observations and shows its own errors to the policy
as an observation ("Tool call error: ..."), so a full server is never answered: the request waits for a
free session (up to `OPEN_WAIT_S`, then 429 `sessions_full`, which verl-tool fails on as a missing key).
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from dataclasses import dataclass, field
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
from assay.rl_client.tool_calls import BadCall, HermesCalls
from assay.sandbox import SandboxError
from assay.sessions import SessionGone, SessionLimits
from assay.sessions.service import StepCall

router = APIRouter(tags=["trainers"], route_class=BoundedRoute)
_TAGGED = re.compile(r"<python>(.*?)</python>", re.S)
_FENCED = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)
_HERMES = HermesCalls()
_KEPT = 100_000


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


def code_of(action: str) -> str | None:
    """The code of one action: its last `<python>` block or fenced python block, else None."""
    found = _TAGGED.findall(action) or _FENCED.findall(action)
    return found[-1] if found and found[-1].strip() else None


def call_of(action: str) -> tuple[str, Any] | None:
    """The tool call of one action, `(tool, arguments)`: its last `<tool_call>` (read as the trainer's
    hermes format reads it), else its code as a python call; None when it has no call it can run."""
    call = _HERMES.parse(action)
    if call is not None:
        return None if isinstance(call, BadCall) else call
    code = code_of(action)
    return None if code is None else ("python", {"code": code})


# How long a trajectory's first action waits for a free session before the request is refused (429);
# verl-tool's own tool_call_time_out (or none) bounds its side.
OPEN_WAIT_S = SESSION_OPEN_WAIT_S


@dataclass
class _Trajectories:
    """The trajectory -> session table of the app, and the opens in flight (one per trajectory)."""

    sessions: OrderedDict[str, str] = field(default_factory=OrderedDict)
    opening: dict[str, asyncio.Future[str]] = field(default_factory=dict)


def _trajectories(request: Request) -> _Trajectories:
    table: _Trajectories | None = getattr(request.app.state, "tool_server_sessions", None)
    if table is None:
        table = request.app.state.tool_server_sessions = _Trajectories()
    return table


async def _session(request: Request, trajectory: str, extra: dict[str, Any]) -> str:
    """The trajectory's session: its own, the one being opened for it, or a new one."""
    table = _trajectories(request)
    if trajectory in table.sessions:
        return table.sessions[trajectory]
    if trajectory in table.opening:
        return await asyncio.shield(table.opening[trajectory])
    opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    table.opening[trajectory] = opened
    try:
        session_id = await _open(request, extra)
    except BaseException as exc:
        opened.set_exception(exc)
        opened.exception()  # retrieved: a trajectory no one else waits on must not warn
        raise
    finally:
        del table.opening[trajectory]
    opened.set_result(session_id)
    table.sessions[trajectory] = session_id
    while len(table.sessions) > _KEPT:
        table.sessions.popitem(last=False)
    return session_id


async def _open(request: Request, extra: dict[str, Any]) -> str:
    """A new session for `extra`'s item and tools, waiting while the server is full (backpressure)."""
    raw = extra.get("item") or {"task": "math"}
    item = engine_of(request).registry.item_model(raw).model_validate(raw)
    tools = extra.get("tools") or ["python"]
    if not (isinstance(tools, list) and all(isinstance(name, str) for name in tools)):
        raise TypeError("tools must be a list of tool names")
    limits = SessionLimits(**extra.get("limits", {}))
    return (await open_when_free(engine_of(request), item, tools, limits, OPEN_WAIT_S)).session_id


async def _finish(request: Request, trajectory: str) -> None:
    """End the trajectory's session, once it is open if its open is in flight."""
    table = _trajectories(request)
    if trajectory in table.opening:
        try:
            await asyncio.shield(table.opening[trajectory])
        except Exception:  # the open failed: nothing to close
            return
    session_id = table.sessions.pop(trajectory, None)
    if session_id is not None:
        await engine_of(request).close_session(session_id)


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
    engine, table = engine_of(request), _trajectories(request).sessions
    observations, dones, valids = [""] * count, [False] * count, [False] * count

    async def prepare(index: int) -> StepCall | None:
        """The entry's step call once its session is open, or None (finished, or no call)."""
        trajectory = body.trajectory_ids[index]
        if finish[index]:
            await _finish(request, trajectory)
            dones[index] = valids[index] = True
            return None
        call = call_of(body.actions[index])
        if call is None:
            return None
        try:
            return StepCall(await _session(request, trajectory, extras[index] or {}), *call)
        except (ItemError, ValidationError, TypeError, AttributeError) as exc:  # a bad item or limits
            raise refuse(Refusal.INVALID, f"extra_fields[{index}]: {exc}") from None
        except SandboxError as exc:
            raise refuse(Refusal.UNAVAILABLE, f"cannot start a session's sandbox: {exc}") from None

    # all at once: a trajectory waiting for a free session does not hold up the others' opens
    prepared = await asyncio.gather(*(prepare(index) for index in range(count)), return_exceptions=True)
    failed = next((p for p in prepared if isinstance(p, BaseException)), None)
    if failed is not None:
        raise failed
    calls = [(index, p) for index, p in enumerate(prepared) if isinstance(p, StepCall)]
    results = await engine.session_steps([call for _, call in calls])
    for (index, _), result in zip(calls, results, strict=True):
        valids[index] = True
        if isinstance(result, SessionGone):
            observations[index], dones[index] = f"[session ended: {result.reason}]", True
            table.pop(body.trajectory_ids[index], None)
        else:
            observations[index] = result.observation
            dones[index] = result.status == "session_ended"
    return ObservationResponse(observations=observations, dones=dones, valids=valids)
