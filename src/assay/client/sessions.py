"""The session calls of `AssayClient` (issue 26): create, step, batch step, verify, delete.

They share the client's retry policy, with one difference: a tool call is not idempotent (a Python cell
that ran twice has changed the interpreter twice), so a step is retried only when the server surely did
not run it: a refused connection, or a 429/503 answer. A read timeout or a reset connection after the
step was sent is an `UnreachableError` at once; the rollout owning the session decides what to do.
Create, verify and delete are retried like scoring (creating twice leaks one session until its TTL;
verify and delete have no effect to repeat).

A gone session (`session_gone`, 404/410) is a `SessionGoneError` with the server's reason; in the batch
form it is that exception in the call's place, and the other calls' results stand.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import httpx
from pydantic import BaseModel, ConfigDict, Field

from assay.errors import ResponseError, ServiceError, SessionGoneError
from assay.types import Item, Result


class OpenedSession(BaseModel):
    """The answer of `POST /v1/sessions`."""

    model_config = ConfigDict(extra="allow")

    session_id: str
    tools: list[dict[str, Any]] = Field(default_factory=list)
    expires_at: float
    limits: dict[str, Any] = Field(default_factory=dict)


class SessionStep(BaseModel):
    """One tool call's answer (`status`: ok, tool_error, invalid_call, session_ended, error)."""

    model_config = ConfigDict(extra="allow")

    session_id: str
    observation: str
    status: str
    step: int
    elapsed_ms: float = 0.0
    reason: str | None = None
    truncated: int = 0


class ToolCall(BaseModel):
    """One entry of a batch step."""

    session_id: str
    tool: str
    arguments: Any = None


StepOutcome = SessionStep | SessionGoneError


class _Sender(Protocol):
    def _send(self, method: str, path: str, payload: Any = None, *, idempotent: bool = True) -> Any: ...

    async def _asend(
        self, method: str, path: str, payload: Any = None, *, idempotent: bool = True
    ) -> Any: ...


def _error_body(response: httpx.Response) -> dict[str, Any]:
    try:
        error = response.json()["error"]
        return error if isinstance(error, dict) else {}
    except (ValueError, KeyError, TypeError):
        return {}


def gone_or_error(response: httpx.Response, session_id: str) -> ServiceError:
    """The ClientError a non-2xx session answer stands for."""
    error = _error_body(response)
    message = str(error.get("message") or response.text[:500])
    if error.get("type") == "session_gone":
        reason = str(error.get("reason") or message)
        return SessionGoneError(message, response.status_code, session_id, reason)
    return ServiceError(f"Assay answered {response.status_code}: {message}", response.status_code)


def _parse(response: httpx.Response, model: type[Any], session_id: str, code: int = 200) -> Any:
    if response.status_code != code:
        raise gone_or_error(response, session_id)
    try:
        return model.model_validate(response.json())
    except ValueError as exc:  # not JSON, or not the contract's shape (pydantic's ValidationError)
        raise ResponseError(f"Assay's session answer does not follow the contract: {exc}") from exc


def _batch(response: httpx.Response, calls: Sequence[ToolCall]) -> list[StepOutcome]:
    if response.status_code != 200:
        raise gone_or_error(response, "")
    try:
        raw = response.json()["results"]
        if len(raw) != len(calls):
            raise ResponseError(f"Assay returned {len(raw)} step results for {len(calls)} calls")
        out: list[StepOutcome] = []
        for call, entry in zip(calls, raw, strict=True):
            error = entry.get("error")
            if isinstance(error, dict):
                message = str(error.get("message", ""))
                reason = str(error.get("reason") or message)
                out.append(SessionGoneError(message, None, call.session_id, reason))
            else:
                out.append(SessionStep.model_validate(entry))
        return out
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ResponseError(f"Assay's batch step answer does not follow the contract: {exc}") from exc


def _create_body(item: Any, tools: Sequence[str], limits: Any) -> dict[str, Any]:
    if isinstance(item, Item):
        item = item.model_dump(mode="json", exclude_none=True)
    if hasattr(limits, "model_dump"):
        limits = limits.model_dump(exclude_none=True)
    return {"item": item, "tools": list(tools), "limits": dict(limits or {})}


def _calls(calls: Sequence[ToolCall | dict[str, Any]]) -> list[ToolCall]:
    return [c if isinstance(c, ToolCall) else ToolCall.model_validate(c) for c in calls]


def _wire(calls: Sequence[ToolCall]) -> dict[str, Any]:
    return {"calls": [c.model_dump() for c in calls]}


class SessionCalls:
    """Mixed into `AssayClient`; uses its `_send`/`_asend` (and so its retries and in-flight slots)."""

    # -- sync ------------------------------------------------------------------------------------
    def open_session(self: _Sender, item: Any, tools: Sequence[str], limits: Any = None) -> OpenedSession:
        """Open a session on `item` (without a response) holding `tools`."""
        response = self._send("POST", "/v1/sessions", _create_body(item, tools, limits))
        return _parse(response, OpenedSession, "", code=201)

    def step(self: _Sender, session_id: str, tool: str, arguments: Any) -> SessionStep:
        """One tool call; the policy's failures are a `status`, a gone session a SessionGoneError."""
        body = {"tool": tool, "arguments": arguments}
        response = self._send("POST", f"/v1/sessions/{session_id}/step", body, idempotent=False)
        return _parse(response, SessionStep, session_id)

    def step_many(self: _Sender, calls: Sequence[ToolCall | dict[str, Any]]) -> list[StepOutcome]:
        """The batch form: one outcome per call, in order (a gone session's is a SessionGoneError)."""
        parsed = _calls(calls)
        if not parsed:
            return []
        response = self._send("POST", "/v1/sessions/step", _wire(parsed), idempotent=False)
        return _batch(response, parsed)

    def verify_session(self: _Sender, session_id: str, response: str) -> Result:
        """The final response scored as /v1/rewards would, with `details.session`."""
        answer = self._send("POST", f"/v1/sessions/{session_id}/verify", {"response": response})
        return _parse(answer, Result, session_id)

    def close_session(self: _Sender, session_id: str) -> None:
        """End the session (idempotent: an unknown or ended id is fine)."""
        response = self._send("DELETE", f"/v1/sessions/{session_id}")
        if response.status_code != 204:
            raise gone_or_error(response, session_id)

    # -- async -----------------------------------------------------------------------------------
    async def aopen_session(
        self: _Sender, item: Any, tools: Sequence[str], limits: Any = None
    ) -> OpenedSession:
        response = await self._asend("POST", "/v1/sessions", _create_body(item, tools, limits))
        return _parse(response, OpenedSession, "", code=201)

    async def astep(self: _Sender, session_id: str, tool: str, arguments: Any) -> SessionStep:
        body = {"tool": tool, "arguments": arguments}
        response = await self._asend("POST", f"/v1/sessions/{session_id}/step", body, idempotent=False)
        return _parse(response, SessionStep, session_id)

    async def astep_many(self: _Sender, calls: Sequence[ToolCall | dict[str, Any]]) -> list[StepOutcome]:
        parsed = _calls(calls)
        if not parsed:
            return []
        response = await self._asend("POST", "/v1/sessions/step", _wire(parsed), idempotent=False)
        return _batch(response, parsed)

    async def averify_session(self: _Sender, session_id: str, response: str) -> Result:
        answer = await self._asend("POST", f"/v1/sessions/{session_id}/verify", {"response": response})
        return _parse(answer, Result, session_id)

    async def aclose_session(self: _Sender, session_id: str) -> None:
        response = await self._asend("DELETE", f"/v1/sessions/{session_id}")
        if response.status_code != 204:
            raise gone_or_error(response, session_id)
