"""The Engine: the one scoring pipeline behind every surface (library, CLI, HTTP, bench).

raw item -> validate (`invalid` with a reason; `assay.items`) -> look up task and options ("did you mean")
         -> wait for a worker process or sandbox slot, fairly across requests (`assay.engine.scheduling`)
         -> run where the task says (killable process pool / thread / event loop) under a deadline
            that starts when the item starts running (`assay.engine.running`)
         -> a second look by a scorer that reviews the task (`assay.engine.reviews`), under its deadline
         -> a `Result` with id, task and elapsed time filled in, in input order.

Groups take `assay.engine.group_scoring`; the synchronous methods run on `assay.engine.background`. The
Engine implements `assay.engine.service.Service`, the surface the HTTP routes use. Nothing here turns a
failure into a reward: a deadline is `timeout`, a crash is `error`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from assay import items as item_io
from assay.engine.admission import Admission
from assay.engine.background import BackgroundLoop
from assay.engine.group_scoring import GroupPath
from assay.engine.reviews import Reviews
from assay.engine.running import Runner, Scorers
from assay.engine.workers import WorkerPool
from assay.errors import ItemError
from assay.groups import GroupGauges, GroupOutcome, GroupWindow, group_rounds
from assay.groups.shaping import SolveRates
from assay.items import parse_item, prepare
from assay.metrics import Metrics
from assay.registry import Registry, Scorer
from assay.sandbox import Execution, Program, SandboxError
from assay.sessions import SessionGone, SessionLimits, StepResult
from assay.sessions.bindings import Bindings, KeyedSessions
from assay.sessions.service import SessionHost, SessionInfo, StepCall, with_trace
from assay.settings import Settings
from assay.types import Item, Result

if TYPE_CHECKING:
    from assay.engine.service import Service

__all__ = ["Engine", "parse_item", "score"]


class Engine:
    """Owns the registry, the worker pool, the thread pool and the admission count of one deployment.

    Use as a context manager, or call `close()`: worker processes outlive a forgotten engine otherwise.
    """

    def __init__(self, settings: Settings | None = None, metrics: Metrics | None = None) -> None:
        self.settings = settings if settings is not None else Settings()
        self.metrics = metrics if metrics is not None else Metrics()
        self.registry = Registry.from_settings(self.settings)
        self.sessions = SessionHost(self.settings, self.metrics)  # a Ray session holder has one too
        self.bindings: KeyedSessions = Bindings()
        self._scorers = Scorers(self.settings)
        pool = None
        if any(cls.runs_in == "process" for cls in self.registry.values()):
            pool = WorkerPool(self.settings, self.registry, on_restart=self._count_restart)
        self._runner = Runner(self.settings, self._scorers, pool)
        self._reviews = Reviews(self.settings, self.registry, self._runner)
        self._groups = GroupPath(
            self.registry,
            self._runner,
            self._reviews,
            self._finish,
            self._score_all,
            SolveRates(self.settings.solve_rates),
        )
        self._admission = Admission(self.settings, self.metrics)
        self._background = BackgroundLoop()
        self._closed = False
        self.group_window = GroupWindow()  # recent groups' statistics, exported as gauges
        self.metrics.registry.register(GroupGauges(self.group_window))
        for scorer_cls in self.registry.values():
            for collector in scorer_cls.collectors(partial(self._scorers.built, scorer_cls.name)):
                self.metrics.registry.register(collector)

    # -- admission -------------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        return self._admission.pending

    def admit(self, count: int) -> None:
        """Reserve room for `count` items or raise QueueFullError (the API answers 429)."""
        self._admission.admit(count)

    def release(self, count: int) -> None:
        self._admission.release(count)

    @property
    def worker_restarts(self) -> int:
        return self._runner.pool.restarts if self._runner.pool is not None else 0

    def _count_restart(self, cause: str) -> None:
        self.metrics.worker_restarts.labels(cause=cause).inc()

    # -- scoring ---------------------------------------------------------------------------------
    async def score_async(self, raw_items: Sequence[Any], lane: Hashable | None = None) -> list[Result]:
        """Score a batch concurrently; results come back in input order. Admission is the caller's.

        Items of one call share a lane: slots go round-robin across lanes, so concurrent batches share
        them fairly. Cancelling the call cancels its items (waiting ones never start)."""
        self._check_open()
        return await self._score_all(raw_items, lane if lane is not None else object())

    async def _score_all(self, raw_items: Sequence[Any], lane: Hashable) -> list[Result]:
        return list(await asyncio.gather(*(self._score_one(raw, lane) for raw in raw_items)))

    async def _score_one(self, raw: Any, lane: Hashable) -> Result:
        started = time.perf_counter()
        own_ms: float | None = None
        try:
            item, scorer_cls, options = prepare(raw, self.registry)
        except ItemError as exc:
            result = Result.invalid(str(exc))
        else:
            ran = await self._runner.run(scorer_cls, item, options, lane)
            reviewed = time.perf_counter()
            result = await self._reviews(item, ran)
            if ran.elapsed_ms > 0:  # the runner measured the verifier's own work; add the reviews'
                own_ms = ran.elapsed_ms + (time.perf_counter() - reviewed) * 1000.0
        # No own time (a timeout, a crash): the time until the result, waits included.
        return self._finish(
            raw, result, own_ms if own_ms is not None else (time.perf_counter() - started) * 1000.0
        )

    def _finish(self, raw: Any, result: Result, elapsed_ms: float) -> Result:
        """Fill id, task and elapsed time (escaping what the item echoes back) and count the item."""
        result = item_io.labelled(raw, result, elapsed_ms)
        item_io.count(self.metrics, self.registry, result)
        return result

    async def score_groups_async(
        self, groups: Sequence[Any], lane: Hashable | None = None
    ) -> list[GroupOutcome]:
        """Score groups (each `{"id", "items"}` or a list of items); results in item order plus the
        group's statistics (assay.groups). Admission is the caller's, as for `score_async`, and the
        groups of one call share a lane, as a batch's items do."""
        self._check_open()
        outcomes = await self._groups.score(groups, lane if lane is not None else object())
        self.group_window.add([o.stats for o in outcomes])
        return outcomes

    def score(self, raw_items: Iterable[Any]) -> list[Result]:
        """Synchronous scoring for library users, in rounds of at most `queue_size` items; runs on the
        engine's own event-loop thread."""
        items = list(raw_items)
        step = self.settings.queue_size
        results: list[Result] = []
        for start in range(0, len(items), step):
            results.extend(self._background.run(self.score_async(items[start : start + step])))
        return results

    def score_groups(self, groups: Iterable[Any]) -> list[GroupOutcome]:
        """Synchronous `score_groups_async`, in rounds of at most `queue_size` items (whole groups)."""
        outcomes: list[GroupOutcome] = []
        for chunk in group_rounds(list(groups), self.settings.queue_size):
            outcomes.extend(self._background.run(self.score_groups_async(chunk)))
        return outcomes

    # -- programs (POST /run_code) ---------------------------------------------------------------
    async def run_program(
        self, program: Program, wait_s: float | None = None, max_waiting: int | None = None
    ) -> Execution:
        """One program in a sandbox slot, taken at the same fair gate as code items (its own lane), the
        wait bounded by `wait_s` (default `code.wait_s`) and `max_waiting`. Raises SlotWaitTimeout
        (GateFull) or SandboxError."""
        self._check_open()
        runner = self.registry.program_runner()
        if runner is None:
            raise SandboxError("no task of this server runs programs")
        run = self._scorers(runner).run_program  # type: ignore[attr-defined]
        return await self._runner.run_in_slot(
            runner.gate or "sandbox", object(), partial(run, program), wait_s=wait_s, max_waiting=max_waiting
        )

    def scorer(self, task: str) -> Scorer:
        """The in-process instance of a task (for library users and tests; routes use the protocol)."""
        return self._scorers(self.registry.lookup(task))

    # -- lifecycle -------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("engine is closed")

    async def start(self) -> None:
        """Start the worker processes and warm their scorers now, not on the first item (the service
        awaits this before /readyz says ready)."""
        if self._runner.pool is not None:
            await self._runner.pool.start()

    # -- sessions: the host's, and verify scores here, as /v1/rewards does ----------------------------
    def session_tools(self) -> list[dict[str, Any]]:
        return self.sessions.tools()

    async def open_session(self, item: Item, tools: list[str], limits: SessionLimits) -> SessionInfo:
        """ItemError (unknown task or tool, a tool that cannot serve the item, limits past the maximum),
        SessionsFull, SandboxError."""
        self.registry.lookup(item.task)  # UnknownTaskError now, not at verify
        return await self.sessions.open(item, tools, limits)

    async def session_step(self, session_id: str, tool: str, arguments: Any) -> StepResult:
        return await self.sessions.step(session_id, tool, arguments)

    async def session_steps(self, calls: Sequence[StepCall]) -> list[StepResult | SessionGone]:
        return await self.sessions.steps(calls)

    async def verify_session(self, session_id: str, response: str) -> Result:
        """The session's item with `response`, scored as `/v1/rewards` would, plus the session's trace
        summary in `details["session"]`. Admission is the caller's (one item)."""
        item, summary = await self.sessions.record(session_id, response)
        (result,) = await self.score_async([item])
        return with_trace(result, summary)

    async def close_session(self, session_id: str) -> None:
        await self.sessions.close(session_id)

    async def aclose(self, wait: bool = True) -> None:
        """`close` from inside a running event loop: loop-bound clients (judges) close on it first."""
        for scorer in self._scorers.all():
            await scorer.aclose()
        await asyncio.to_thread(self.close, wait)

    def close(self, wait: bool = True) -> None:
        """Release workers, threads and scorers. With `wait`, in-flight items finish first."""
        if self._closed:
            return
        self._closed = True
        self.sessions.shutdown()
        self._runner.close(wait)
        for scorer in self._scorers.all():
            scorer.close()
        self._background.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if TYPE_CHECKING:

    def _implements(engine: Engine) -> Service:
        return engine  # mypy: the Engine implements the service protocol


def score(items: Iterable[Any], settings: Settings | None = None) -> list[Result]:
    """Score items in-process and return one Result per item, in order.

    Starts and stops an `Engine` (worker processes) per call; keep an `Engine` open to score many
    batches.
    """
    with Engine(settings) as engine:
        return engine.score(items)
