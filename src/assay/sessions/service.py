"""The session part of the service protocol: the in-process host (`Engine`), and the pieces a Ray session
holder shares with it (`session_info`, `verify_item`, `with_trace`; see `assay.distributed.sessions`).

An engine holds one `SessionManager` (its sessions live in sandboxes this process started) and answers
the protocol's session methods from it. Blocking work (starting a sandbox, running a cell) runs on the
engine's session threads, never on the event loop. `verify_session` scores through the engine's own
`score_async`, so a session's verdict and `/v1/rewards`' are one path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from assay.sessions.limits import SessionLimits
from assay.sessions.store import Session, SessionGone, SessionManager, StepResult

if TYPE_CHECKING:
    from assay.metrics import Metrics
    from assay.registry import Registry
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


class SessionHost:
    """Mixin: the protocol's session methods over `self.sessions`. The engine calls `_start_sessions`
    in its constructor and `_close_sessions` when it closes."""

    settings: Settings
    registry: Registry
    sessions: SessionManager
    _session_threads: ThreadPoolExecutor

    async def score_async(self, raw_items: Sequence[Any], lane: Hashable | None = None) -> list[Result]:
        raise NotImplementedError

    def _start_sessions(self, settings: Settings, metrics: Metrics) -> None:
        self.sessions = SessionManager(settings, metrics)
        self._session_threads = ThreadPoolExecutor(settings.threads, thread_name_prefix="assay-session")

    def _close_sessions(self) -> None:
        self.sessions.close()
        self._session_threads.shutdown(wait=False, cancel_futures=True)

    async def _blocking(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._session_threads, fn, *args)

    def session_tools(self) -> list[dict[str, Any]]:
        """Every tool sessions may ask for, as OpenAI function-tool schemas."""
        return self.sessions.registry.info()

    async def open_session(self, item: Item, tools: list[str], limits: SessionLimits) -> SessionInfo:
        """Open a session on `item` (no response) with `tools`. Raises ItemError (unknown tool, a tool
        that cannot serve the item, limits past the maximum), SessionsFull, SandboxError."""
        self.registry.lookup(item.task)  # UnknownTaskError now, not at verify
        session = await self._blocking(self.sessions.create, item, tools, limits)
        return session_info(session)

    async def session_step(self, session_id: str, tool: str, arguments: Any) -> StepResult:
        """One tool call; SessionGone (404/410) when the session is not there to take it."""
        return await self._blocking(self.sessions.step, session_id, tool, arguments)

    async def session_steps(self, calls: Sequence[StepCall]) -> list[StepResult | SessionGone]:
        """Many sessions stepped at once; a gone session is its SessionGone in its place."""

        async def one(call: StepCall) -> StepResult | SessionGone:
            try:
                return await self.session_step(call.session_id, call.tool, call.arguments)
            except SessionGone as exc:
                return exc

        return list(await asyncio.gather(*(one(call) for call in calls)))

    async def verify_session(self, session_id: str, response: str) -> Result:
        """The session's item with `response`, scored as `/v1/rewards` would, plus the session's trace
        summary in `details["session"]`. Admission is the caller's (one item)."""
        session = self.sessions.get(session_id)
        (result,) = await self.score_async([verify_item(session, response)])
        return with_trace(result, session.summary())

    async def close_session(self, session_id: str) -> None:
        """End a session and free its sandbox; idempotent."""
        await self._blocking(self.sessions.delete, session_id)
