"""The session part of the service protocol: `SessionHost`, the sessions of one process, which the
in-process `Engine` has and each Ray session-holder actor has too (`assay.distributed.sessions`).

Blocking work (starting a sandbox, running a cell) runs on the host's threads, never on the event loop.
`verify_session` scores through the owning engine's own `score_async`, so a session's verdict and
`/v1/rewards`' are one path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from assay.sessions.limits import SessionLimits
from assay.sessions.store import Session, SessionGone, SessionManager, StepResult

if TYPE_CHECKING:
    from assay.metrics import Metrics
    from assay.settings import Settings
    from assay.types import Item, Result

T = TypeVar("T")


@dataclass(frozen=True)
class SessionInfo:
    """What opening a session answers (`POST /v1/sessions`)."""

    session_id: str
    tools: list[dict[str, Any]]  # OpenAI function-tool schemas
    expires_at: float  # Unix time
    limits: SessionLimits


@dataclass(frozen=True)
class StepCall:
    """One call of a batch step."""

    session_id: str
    tool: str
    arguments: Any = None


def session_info(session: Session) -> SessionInfo:
    """What opening `session` answers: its id, its tools' schemas, its expiry and limits."""
    schemas = [tool.schema() for tool, _ in session.tools.values()]
    return SessionInfo(session.id, schemas, session.expires_at(), session.context.limits)


def verify_item(session: Session, response: str) -> dict[str, Any]:
    """The raw item `verify` scores: the session's item with the final response."""
    return {**session.context.item.model_dump(exclude_none=True), "response": response}


def with_trace(result: Result, summary: dict[str, Any]) -> Result:
    """A verify result: the scorer's result with the session's trace summary in `details["session"]`."""
    return result.model_copy(update={"details": {**result.details, "session": summary}})


async def step_each(
    step: Callable[[str, str, Any], Awaitable[StepResult]], calls: Sequence[StepCall]
) -> list[StepResult | SessionGone]:
    """Many sessions stepped at once through `step`; a gone session is its SessionGone in its place."""

    async def one(call: StepCall) -> StepResult | SessionGone:
        try:
            return await step(call.session_id, call.tool, call.arguments)
        except SessionGone as exc:
            return exc

    return list(await asyncio.gather(*(one(call) for call in calls)))


class SessionHost:
    """The sessions of one process: a `SessionManager` (its sessions live in sandboxes this process
    started) and the threads its blocking work runs on. The engine has one; so does each Ray
    session-holder actor, which calls the synchronous forms from its own threads. Scoring is not the
    host's: `record` gives what verify scores, and the engine that owns the host scores it."""

    def __init__(self, settings: Settings, metrics: Metrics, id_prefix: str = "s-") -> None:
        self.manager = SessionManager(settings, metrics, id_prefix=id_prefix)
        self._threads = ThreadPoolExecutor(settings.threads, thread_name_prefix="assay-session")

    @property
    def open_count(self) -> int:
        return self.manager.open_count

    def tools(self) -> list[dict[str, Any]]:
        """Every tool sessions may ask for, as OpenAI function-tool schemas."""
        return self.manager.registry.info()

    # -- synchronous: blocking, for a caller on its own thread (a threaded Ray actor) -------------------
    def open_now(self, item: Item, tools: list[str], limits: SessionLimits) -> SessionInfo:
        """Raises ItemError (unknown tool, a tool that cannot serve the item, limits past the maximum),
        SessionsFull, SandboxError."""
        return session_info(self.manager.create(item, tools, limits))

    def step_now(self, session_id: str, tool: str, arguments: Any) -> StepResult:
        """One tool call; SessionGone (404/410) when the session is not there to take it."""
        return self.manager.step(session_id, tool, arguments)

    def record_now(self, session_id: str, response: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """What verify needs: the item with the response, and the session's trace summary."""
        session = self.manager.get(session_id)
        return verify_item(session, response), session.summary()

    def close_now(self, session_id: str) -> None:
        """End a session and free its sandbox; idempotent."""
        self.manager.delete(session_id)

    def shutdown(self) -> None:
        self.manager.close()
        self._threads.shutdown(wait=False, cancel_futures=True)

    # -- asynchronous: the same calls on the host's threads, never on the event loop ---------------------
    async def _blocking(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._threads, fn, *args)

    async def open(self, item: Item, tools: list[str], limits: SessionLimits) -> SessionInfo:
        return await self._blocking(self.open_now, item, tools, limits)

    async def step(self, session_id: str, tool: str, arguments: Any) -> StepResult:
        return await self._blocking(self.step_now, session_id, tool, arguments)

    async def steps(self, calls: Sequence[StepCall]) -> list[StepResult | SessionGone]:
        return await step_each(self.step, calls)

    async def record(self, session_id: str, response: str) -> tuple[dict[str, Any], dict[str, Any]]:
        return self.record_now(session_id, response)  # a lookup: no blocking work

    async def close(self, session_id: str) -> None:
        await self._blocking(self.close_now, session_id)
