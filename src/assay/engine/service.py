"""The service interface: what the HTTP routes (and any other front end) may ask of an engine.

Two engines implement it: `assay.engine.scoring.Engine` (in-process: worker pools, sandboxes, judge
clients) and `assay.distributed.engine.RayEngine` (the same work done by Ray Serve deployments). The routes in
`assay.api` call only these names (a test reads the routers and checks it), never a scorer or a pool,
so a new engine, or a new kind of work, is one implementation of this protocol. mypy checks both engines
against it (see the `_implements` functions beside them).

The surface, by concern:

- admission: `admit`/`release` of a bounded count (429 past `settings.queue_size`), `pending`;
- scoring: `score_async` (a batch of raw items, results in order), `score_groups_async` (GRPO groups
  with their statistics), both taking a `lane` so one request's items share slots fairly with others;
- programs: `run_program` (`/run_code`): one program on one input in a sandbox slot, through the same
  fair gate as code items;
- lifecycle: `start` (warm workers before /readyz says ready), `aclose`;
- introspection: `settings`, `metrics`, `registry`, `worker_restarts`;
- sessions (issue 25, the one stateful part): `session_tools`, `open_session` (an item and tools -> an
  id, the tools' schemas, an expiry), `session_step` / `session_steps` (tool calls; the policy's failures
  are observations), `verify_session` (the item with the final response, scored by `score_async`: one
  verdict path), `close_session`. A session lost with its holder ends as `SessionGone`. `Engine`
  has a `assay.sessions.service.SessionHost` (sessions in this process); `RayEngine` sends each call to
  the session-holder actor named in the id, which has a `SessionHost` of its own
  (`assay.distributed.sessions`). `bindings` keys sessions by a trainer's trajectory id
  (`assay.sessions.bindings`): a table in this process for `Engine`, one shared by every ingress replica
  for `RayEngine`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Protocol, runtime_checkable

from assay.groups import GroupOutcome
from assay.metrics import Metrics
from assay.registry import Registry
from assay.sandbox import Execution, Program
from assay.sessions import SessionGone, SessionLimits, StepResult
from assay.sessions.bindings import KeyedSessions
from assay.sessions.service import SessionInfo, StepCall
from assay.settings import Settings
from assay.types import Item, Result


@runtime_checkable
class Service(Protocol):
    """An engine the HTTP layer can serve from. Every method is safe to call from the event loop."""

    settings: Settings
    metrics: Metrics
    registry: Registry
    bindings: KeyedSessions  # trajectory key -> session, for the routes that name a trajectory

    # -- admission ------------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Items admitted and not yet released."""
        ...

    def admit(self, count: int) -> None:
        """Reserve room for `count` items or raise `QueueFullError` (HTTP 429 with Retry-After)."""
        ...

    def release(self, count: int) -> None:
        """Give back what `admit(count)` reserved."""
        ...

    # -- scoring --------------------------------------------------------------------------------
    async def score_async(self, raw_items: Sequence[Any], lane: Hashable | None = None) -> list[Result]:
        """One `Result` per raw item, in input order; a malformed item is `invalid`, never a raise.
        Admission is the caller's. Cancelling the call cancels its items."""
        ...

    async def score_groups_async(
        self, groups: Sequence[Any], lane: Hashable | None = None
    ) -> list[GroupOutcome]:
        """Groups (`{"id", "items"}` or lists of items) scored, with each group's statistics."""
        ...

    # -- programs -------------------------------------------------------------------------------
    async def run_program(
        self, program: Program, wait_s: float | None = None, max_waiting: int | None = None
    ) -> Execution:
        """Compile and run one program in a sandbox slot, waiting for one at most `wait_s` behind at
        most `max_waiting` callers. Raises `SlotWaitTimeout` (`GateFull` when too many wait) when no
        slot came free, `SandboxError` when the sandbox failed."""
        ...

    # -- sessions -------------------------------------------------------------------------------
    def session_tools(self) -> list[dict[str, Any]]:
        """Every tool a session may ask for, as OpenAI function-tool schemas."""
        ...

    async def open_session(self, item: Item, tools: list[str], limits: SessionLimits) -> SessionInfo:
        """Open a session; ItemError (422), SessionsFull (429) or SandboxError (503) when it cannot."""
        ...

    async def session_step(self, session_id: str, tool: str, arguments: Any) -> StepResult:
        """One tool call in a session; SessionGone (404/410) when the session is not there."""
        ...

    async def session_steps(self, calls: Sequence[StepCall]) -> list[StepResult | SessionGone]:
        """Many calls (many sessions) at once; a gone session is its SessionGone in its place."""
        ...

    async def verify_session(self, session_id: str, response: str) -> Result:
        """The session's item with `response`, scored as `score_async` scores it, plus the session's
        trace summary in `details["session"]`. Admission is the caller's."""
        ...

    async def close_session(self, session_id: str) -> None:
        """End a session and free its sandbox; idempotent."""
        ...

    # -- lifecycle and introspection ------------------------------------------------------------
    @property
    def worker_restarts(self) -> int:
        """Worker processes replaced since start (0 where workers live elsewhere)."""
        ...

    async def start(self) -> None:
        """Start and warm what scoring needs; the service awaits it before /readyz says ready."""
        ...

    async def aclose(self, wait: bool = True) -> None:
        """Release everything; with `wait`, in-flight work finishes first."""
        ...
