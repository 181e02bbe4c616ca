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
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field, StrictBool, ValidationError

from assay.api.body import BoundedRoute
from assay.api.codes import Refusal, refuse
from assay.api.protocol import SESSION_ERRORS
from assay.api.state import engine_of
from assay.errors import ItemError
from assay.rl_client.tool_calls import BadCall, HermesCalls
from assay.sandbox import SandboxError
from assay.sessions import SessionGone, SessionLimits
from assay.sessions.service import StepCall
from assay.types import Item

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


def _table(request: Request) -> OrderedDict[str, str]:
    table: OrderedDict[str, str] | None = getattr(request.app.state, "tool_server_sessions", None)
    if table is None:
        table = request.app.state.tool_server_sessions = OrderedDict()
    return table


async def _session(request: Request, trajectory: str, extra: dict[str, Any]) -> str:
    table = _table(request)
    if trajectory not in table:
        item = Item.model_validate(extra.get("item") or {"task": "math"})
        tools = extra.get("tools") or ["python"]
        if not (isinstance(tools, list) and all(isinstance(name, str) for name in tools)):
            raise TypeError("tools must be a list of tool names")
        info = await engine_of(request).open_session(item, tools, SessionLimits(**extra.get("limits", {})))
        table[trajectory] = info.session_id
        while len(table) > _KEPT:
            table.popitem(last=False)
    return table[trajectory]


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
    engine, table = engine_of(request), _table(request)
    observations, dones, valids = [""] * count, [False] * count, [False] * count
    calls: list[tuple[int, StepCall]] = []
    for index, (trajectory, action) in enumerate(zip(body.trajectory_ids, body.actions, strict=True)):
        if finish[index]:
            session_id = table.pop(trajectory, None)
            if session_id is not None:
                await engine.close_session(session_id)
            dones[index] = valids[index] = True
            continue
        call = call_of(action)
        if call is None:
            continue
        try:
            session_id = await _session(request, trajectory, extras[index] or {})
        except (ItemError, ValidationError, TypeError, AttributeError) as exc:  # a bad item or limits
            raise refuse(Refusal.INVALID, f"extra_fields[{index}]: {exc}") from None
        except SandboxError as exc:
            raise refuse(Refusal.UNAVAILABLE, f"cannot start a session's sandbox: {exc}") from None
        calls.append((index, StepCall(session_id, *call)))
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
