"""What the HTTP routers serve from under Ray: the Engine's surface, with scoring done by deployments.

`create_app(settings, engine_factory=...)` puts a `RayEngine` on `app.state.engine` in the ingress
replica, so every route, the contract, the error envelope and the admission bound (429 + Retry-After) are
those of `assay serve`: both engines implement `assay.engine.service.Service`. Scoring differs: items
travel to the per-kind deployments through the `Dispatcher`, and `run_program` (`/run_code`) to a code
replica, whose own engine takes the slot at its fair gate. Sessions are held by session-holder actors, and
each of a session's calls is sent to the actor that holds it (`assay.distributed.sessions` says how and
why);
`verify` scores the session's item through the same deployments as `/v1/rewards`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from assay import items as item_io
from assay.distributed.bindings import RayBindings
from assay.distributed.dispatch import Dispatcher
from assay.distributed.sessions import RaySessions
from assay.engine.admission import Admission
from assay.groups import GroupOutcome, Vote
from assay.groups.shaping import SolveRates, group_outcome, shaping_parts
from assay.metrics import Metrics
from assay.registry import Registry
from assay.sandbox import Execution, Program, SandboxError
from assay.sessions import SessionGone, SessionLimits, StepResult
from assay.sessions.bindings import Bindings, KeyedSessions
from assay.sessions.service import SessionInfo, StepCall, with_trace
from assay.settings import Settings
from assay.types import Item, Result

if TYPE_CHECKING:
    from assay.engine.service import Service

# Answer clusters need the task's equivalence beside its scorer, which the deployments do not offer yet.
_NO_VOTE = Vote(unavailable="answer clusters are not formed under assay serve --ray yet")


class RayEngine:
    """Admission, registry and metrics as in `Engine`; scoring by the deployments behind `handles`;
    sessions on this replica's session-holder actors (started on the first session)."""

    def __init__(
        self, settings: Settings, metrics: Metrics, handles: Mapping[str, Any], bindings: Any = None
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.registry = Registry.from_settings(settings)
        self._sessions = RaySessions(settings, metrics)
        # trajectory -> session: on the `bindings` deployment when there is one (several ingress
        # replicas), else in this replica
        self.bindings: KeyedSessions = RayBindings(bindings) if bindings is not None else Bindings()
        self._handles = dict(handles)
        self.dispatcher = Dispatcher.on_serve(self._call, settings, kinds=self._handles)
        self._admission = Admission(settings, metrics)
        self._solve_rates = SolveRates(settings.solve_rates)  # adapt_think's files, read in the ingress

    @property
    def pending(self) -> int:
        return self._admission.pending

    @property
    def worker_restarts(self) -> int:
        return 0

    def admit(self, count: int) -> None:
        """Reserve room for `count` items or raise QueueFullError (the API answers 429)."""
        self._admission.admit(count)

    def release(self, count: int) -> None:
        self._admission.release(count)

    async def _call(self, kind: str, items: list[Any]) -> list[Result]:
        results: list[Result] = await self._handles[kind].score.remote(items)
        return results

    async def start(self) -> None:
        """Nothing to warm here: each deployment's replicas start and warm their own engines."""

    async def run_program(
        self, program: Program, wait_s: float | None = None, max_waiting: int | None = None
    ) -> Execution:
        """On a replica of the program-running task's kind of work (the code task's: `code`), whose engine
        waits for a slot at its gate (SlotWaitTimeout travels back)."""
        runner = self.registry.program_runner()
        if runner is None:
            raise SandboxError("no task of this server runs programs")
        kind = runner.work
        handle = self._handles.get(kind)
        if handle is None:
            replicas = f"ASSAY_RAY__{kind.upper()}__REPLICAS"
            raise SandboxError(f"no {kind} deployment on this cluster ({replicas} is 0)")
        execution: Execution = await handle.run_program.remote(program, wait_s, max_waiting)
        return execution

    async def score_groups_async(
        self, groups: Sequence[Any], lane: Hashable | None = None
    ) -> list[GroupOutcome]:
        """Groups scored as one flat batch on the deployments, then split back with their statistics and,
        under a group's shaping or rubric, its shaped rewards (as the Engine's group path does)."""
        parsed = [shaping_parts(index, group) for index, group in enumerate(groups)]
        results = iter(await self.score_async([item for _, _, split in parsed for item, _ in split]))
        outcomes = []
        for gid, spec, split in parsed:
            scored = [next(results) for _ in split]
            outcomes.append(
                await asyncio.to_thread(group_outcome, gid, spec, split, scored, self._solve_rates, _NO_VOTE)
                if spec is not None
                else group_outcome(gid, spec, split, scored, self._solve_rates, _NO_VOTE)
            )
        return outcomes

    async def score_async(self, raw_items: Sequence[Any], lane: Hashable | None = None) -> list[Result]:
        """Score a batch on the deployments; results in input order. Admission is the caller's."""
        results = await self.dispatcher.score(raw_items)
        for result in results:
            item_io.count(self.metrics, self.registry, result)
        return results

    # -- sessions: each call on the holder named in the session id ----------------------------------
    def session_tools(self) -> list[dict[str, Any]]:
        return self._sessions.tools.info()

    async def open_session(self, item: Item, tools: list[str], limits: SessionLimits) -> SessionInfo:
        """On one of this replica's holders; ItemError, SessionsFull (every holder full), SandboxError."""
        self.registry.lookup(item.task)  # UnknownTaskError now, not at verify
        return await self._sessions.open(item, tools, limits)

    async def session_step(self, session_id: str, tool: str, arguments: Any) -> StepResult:
        return await self._sessions.step(session_id, tool, arguments)

    async def session_steps(self, calls: Sequence[StepCall]) -> list[StepResult | SessionGone]:
        return await self._sessions.steps(calls)

    async def verify_session(self, session_id: str, response: str) -> Result:
        """The holder gives the item and the trace; the item is scored here, as `/v1/rewards` scores."""
        item, summary = await self._sessions.record(session_id, response)
        (result,) = await self.score_async([item])
        return with_trace(result, summary)

    async def close_session(self, session_id: str) -> None:
        await self._sessions.close(session_id)

    async def aclose(self, wait: bool = True) -> None:
        """End this replica's session holders; the deployments own the workers and their sandboxes."""
        await self._sessions.aclose()


if TYPE_CHECKING:

    def _implements(engine: RayEngine) -> Service:
        return engine  # mypy: the Ray engine implements the service protocol
