"""What one MCP session sees: its Assay session's tools, and three lifecycle tools with fixed names.

An MCP session is bound to at most one Assay session (`Binding`). Unbound, it lists only `open_session`
(an item, tools and limits, as `POST /v1/sessions` takes them), which binds it. Bound, it lists the
session's own tools (their OpenAI schemas turned into MCP tools: the same names, descriptions and JSON
schemas) plus `verify` and `close_session`. The lifecycle tools carry `_meta["assay/lifecycle"]: true`
so a harness can keep them from the policy.

Every call answers a `CallToolResult` (wire dict): the observation as text, the step's status in
`structuredContent`, and `isError` whenever the call did not simply succeed (a traceback, bad arguments,
an unknown tool, a gone session, a full server). Nothing here raises for the policy's doing.

`verify` over MCP is allowed once per MCP session (a second verify is refused with the first verdict's
reward): a policy handed the tool cannot use it as an oracle for trying answers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.api.sessions import session_item
from assay.api.state import remember_tools, tools_of
from assay.engine.service import Service
from assay.errors import ItemError, QueueFullError
from assay.sandbox.base import SandboxError
from assay.sessions.limits import SessionLimits
from assay.sessions.store import SessionGone, SessionsFull

log = logging.getLogger("assay.mcp")
OPEN, VERIFY, CLOSE = "open_session", "verify", "close_session"
LIFECYCLE_META = {"assay/lifecycle": True}


@dataclass
class Binding:
    """The Assay session one MCP session is bound to (None until `open_session`); `owned` when it was
    opened over MCP, so that ending the MCP session closes it too."""

    session_id: str | None = None
    owned: bool = False
    verdict: dict[str, Any] | None = None  # the one verify this MCP session made


class OpenArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    item: dict[str, Any] = Field(description="An item as in /v1/rewards, without the response.")
    tools: list[str] = Field(min_length=1, description='Tool names, e.g. ["python"].')
    limits: SessionLimits = Field(default_factory=SessionLimits)


class VerifyArguments(BaseModel):
    model_config = ConfigDict(extra="forbid")

    response: str = Field(description="The final response, scored as /v1/rewards scores it.")


_LIFECYCLE: dict[str, tuple[str, type[BaseModel] | None]] = {
    OPEN: (
        "Open the Assay session this MCP session works in, on an item with the tools named.",
        OpenArguments,
    ),
    VERIFY: (
        "Score the final response (once): the Result, as /v1/sessions/{id}/verify answers.",
        VerifyArguments,
    ),
    CLOSE: ("End the Assay session and free its sandbox.", None),
}


def mcp_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI function-tool schema (what GET /v1/tasks lists) as an MCP tool."""
    function = schema["function"]
    return {
        "name": function["name"],
        "description": function["description"],
        "inputSchema": function["parameters"],
    }


def _lifecycle_tool(name: str) -> dict[str, Any]:
    description, model = _LIFECYCLE[name]
    schema = model.model_json_schema() if model is not None else {"type": "object", "properties": {}}
    schema.pop("title", None)
    return {"name": name, "description": description, "inputSchema": schema, "_meta": LIFECYCLE_META}


def answer(text: str, is_error: bool, structured: dict[str, Any] | None = None) -> dict[str, Any]:
    """A CallToolResult as its wire dict."""
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        result["structuredContent"] = structured
    return result


def refused(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return answer(message, True, {"error": {"type": kind, "message": message, **extra}})


def list_tools(engine: Service, app: Any, binding: Binding) -> list[dict[str, Any]]:
    if binding.session_id is None:
        return [_lifecycle_tool(OPEN)]
    schemas = tools_of(app, binding.session_id)
    if schemas is None:  # opened elsewhere (another replica): every tool this server offers
        schemas = engine.session_tools()
    own = [mcp_tool(schema) for schema in schemas if schema["function"]["name"] not in _LIFECYCLE]
    return [*own, _lifecycle_tool(VERIFY), _lifecycle_tool(CLOSE)]


async def call_tool(
    engine: Service, app: Any, binding: Binding, name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    """What calling `name` answers; the policy's mistakes and a gone or full server are tool errors."""
    if name == OPEN:
        return await _open(engine, app, binding, arguments)
    if binding.session_id is None:
        return refused(
            "unbound",
            f'tool "{name}": this MCP session has no Assay session yet; send X-Assay-Session when'
            f" initializing, or call {OPEN}",
        )
    try:
        if name == VERIFY:
            return await _verify(engine, binding, arguments)
        if name == CLOSE:
            await engine.close_session(binding.session_id)
            return answer(f"session {binding.session_id} closed", False, {"closed": True})
        step = await engine.session_step(binding.session_id, name, arguments)
    except SessionGone as exc:
        return refused("session_gone", f"[session gone: {exc.reason}]", reason=exc.reason)
    wire = step.wire()
    del wire["session_id"], wire["observation"]
    return answer(step.observation, step.status != "ok", wire)


async def _open(engine: Service, app: Any, binding: Binding, arguments: dict[str, Any]) -> dict[str, Any]:
    if binding.session_id is not None:
        return refused("already_bound", "this MCP session is bound to an Assay session already; one each")
    try:
        asked = OpenArguments.model_validate(arguments)
        info = await engine.open_session(session_item(asked.item, engine.registry), asked.tools, asked.limits)
    except ValidationError as exc:
        return refused("validation_error", f"invalid arguments for {OPEN}: {_problems(exc)}")
    except HTTPException as exc:  # the item refused as POST /v1/sessions refuses it
        return refused("validation_error", str(exc.detail))
    except ItemError as exc:
        return refused("validation_error", str(exc))
    except SessionsFull as exc:
        retry = max(1, round(exc.retry_after_s))
        return refused("sessions_full", f"{exc}; retry after {retry}s", retry_after_s=retry)
    except SandboxError as exc:
        return refused("unavailable", f"cannot start the session's sandbox: {exc}")
    binding.session_id, binding.owned = info.session_id, True
    remember_tools(app, info)
    opened = {"session_id": info.session_id, "tools": [t["function"]["name"] for t in info.tools]}
    return answer(f"session {info.session_id} opened with tools {', '.join(opened['tools'])}", False, opened)


async def _verify(engine: Service, binding: Binding, arguments: dict[str, Any]) -> dict[str, Any]:
    assert binding.session_id is not None
    if binding.verdict is not None:
        reward = binding.verdict.get("reward")
        return refused("verified", f"this session was verified already (reward {reward}); one verify each")
    try:
        response = VerifyArguments.model_validate(arguments).response
    except ValidationError as exc:
        return refused("validation_error", f"invalid arguments for {VERIFY}: {_problems(exc)}")
    try:
        engine.admit(1)
    except QueueFullError as exc:
        return refused("queue_full", f"{exc}; retry later", retry_after_s=exc.retry_after_s)
    try:
        result = await engine.verify_session(binding.session_id, response)
    finally:
        engine.release(1)
    binding.verdict = result.model_dump(mode="json")
    return answer(result.model_dump_json(), False, binding.verdict)


def _problems(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in exc.errors()[:5]
    )
