"""Where a parsed item runs, under its deadline: a killable worker process, a thread, or the event loop.

A task's `runs_in` picks the mode (see `assay.registry`):

- "process": the item waits its turn at the "workers" gate, then runs in the killable worker pool
  (`assay.engine.workers`), which starts the deadline when a worker picks it up and kills the worker past it.
- "thread": the scorer's `score` runs in a thread; a scorer that declares a `gate` ("sandbox") first waits
  its turn there, and keeps the slot until the thread really returns.
- "async": the scorer's `ascore` runs on the event loop.

The deadline and the result's `elapsed_ms` measure the item's own work, never its wait: a wait has its
own bound (`SlotWaitTimeout` becomes `timeout` with cause "slot_wait"). Nothing here turns a failure into
a reward: a deadline is `timeout`, an `AssayError` ends as its class's status, any other exception is
`error`.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar, cast

from assay.engine.scheduling import Gates, SlotWaitTimeout
from assay.engine.workers import Then, WorkerPool, failure_text
from assay.errors import AssayError
from assay.registry import Scorer
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions

# A thread cannot be killed; a thread-run scorer enforces its own deadline (the sandbox kills the
# program). The pipeline waits this much longer before it answers `timeout` on the scorer's behalf.
THREAD_GRACE_S = 2.0

T = TypeVar("T")

Job = tuple[str, dict[str, Any], dict[str, Any]]  # (task, item as JSON, options as JSON) for a worker


def _since(result: Result, started: float) -> Result:
    return result.model_copy(update={"elapsed_ms": (time.perf_counter() - started) * 1000.0})


def _timed(score: Callable[[Item, TaskOptions], Result], item: Item, options: TaskOptions) -> Result:
    """`score(item, options)` with `elapsed_ms` its own time: the wait for a thread or a slot is not
    the item's (a worker measures its items the same way, `workers.run_item`)."""
    started = time.perf_counter()
    return _since(score(item, options), started)


class Scorers:
    """The in-process instance of each task, built on first use (so unused extras are never loaded)."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._built: dict[str, Scorer] = {}
        self._lock = threading.Lock()

    def __call__(self, scorer_cls: type[Scorer]) -> Scorer:
        with self._lock:
            scorer = self._built.get(scorer_cls.name)
            if scorer is None:
                scorer = self._built[scorer_cls.name] = scorer_cls(self._settings)
            return scorer

    def built(self, name: str) -> Scorer | None:
        """The instance of task `name` if it was built, else None (metrics read it at scrape time)."""
        return self._built.get(name)

    def all(self) -> list[Scorer]:
        return list(self._built.values())


class Runner:
    """Runs items where their task says; owns the worker pool, the thread pool and the slot gates."""

    def __init__(self, settings: Settings, scorers: Scorers, pool: WorkerPool | None) -> None:
        self.settings = settings
        self.scorers = scorers
        self.pool = pool
        self.gates = Gates(settings)
        self.threads = ThreadPoolExecutor(settings.threads, thread_name_prefix="assay-score")

    def deadline(self, scorer_cls: type[Scorer], item: Item, options: TaskOptions) -> float:
        """The item's deadline, read from the class (a process-run scorer lives in the workers)."""
        return scorer_cls.deadline_for(self.settings, item, options)

    async def run(self, scorer_cls: type[Scorer], item: Item, options: TaskOptions, lane: Hashable) -> Result:
        """The item's result from its task, in the task's mode, under its deadline."""
        deadline = self.deadline(scorer_cls, item, options)
        try:
            if scorer_cls.runs_in == "process":
                return await self._in_worker(item, options, deadline, lane)
            scorer = self.scorers(scorer_cls)
            score = partial(_timed, scorer.score, item, options)
            if scorer_cls.runs_in == "thread" and scorer_cls.gate is not None:
                return await self.run_in_slot(scorer_cls.gate, lane, score, deadline + THREAD_GRACE_S)
            if scorer_cls.runs_in == "thread":
                call = asyncio.get_running_loop().run_in_executor(self.threads, score)
                return await asyncio.wait_for(call, deadline + THREAD_GRACE_S)
            started = time.perf_counter()
            result = await asyncio.wait_for(scorer.ascore(item, options), deadline)
            return _since(result, started)
        except SlotWaitTimeout as exc:
            return self.gates.waited_too_long(exc)
        except TimeoutError:
            return Result.timeout(f"no verdict within the {deadline:g}s deadline")
        except AssayError as exc:  # a failure the scorer raised: its class knows its status
            return Result.of_error(exc)
        except Exception as exc:  # a scorer bug must not lose the batch
            return Result.error(f"scorer failed: {failure_text(exc)}")

    async def _in_worker(self, item: Item, options: TaskOptions, deadline: float, lane: Hashable) -> Result:
        if self.pool is None:
            raise RuntimeError("no worker pool: no registered task runs in a process")
        gate = self.gates("workers")
        await gate.acquire(lane, self.settings.wait_s)
        try:  # pebble starts the deadline when a worker picks the item up
            return await self.pool.run(
                item.task, item.model_dump(mode="json"), options.model_dump(mode="json"), deadline
            )
        finally:
            gate.release()

    async def run_many_in_worker(
        self, jobs: list[Job], deadline_s: float, lane: Hashable, then: Then | None = None
    ) -> tuple[list[Result], Any] | None:
        """Several process-run items as one worker task (one round trip; they share the worker's caches),
        then `then` over them in that task, in one "workers" slot taken fairly like an item's:
        (results, what `then` returned). None: no slot within the wait, or no pool; the caller scores
        them one by one instead (which reports its own wait)."""
        if self.pool is None:
            return None
        gate = self.gates("workers")
        try:
            await gate.acquire(lane, self.settings.wait_s)
        except SlotWaitTimeout:
            return None
        try:
            return await self.pool.run_many(jobs, deadline_s, then)
        finally:
            gate.release()

    async def call_in_worker(
        self, function: Callable[..., T], args: tuple[Any, ...], deadline_s: float, lane: Hashable
    ) -> T:
        """`function(*args)` in a worker, in one "workers" slot taken fairly like an item's (a group's
        answer clusters beside its items). Raises when there is no pool or slot, past the deadline, or
        when the function raises."""
        if self.pool is None:
            raise RuntimeError("no worker pool")
        gate = self.gates("workers")
        await gate.acquire(lane, self.settings.wait_s)
        try:
            return cast(T, await self.pool.call(function, args, deadline_s))
        finally:
            gate.release()

    async def run_in_slot(
        self,
        kind: str,
        lane: Hashable,
        call: Callable[[], T],
        deadline_s: float | None = None,
        wait_s: float | None = None,
        max_waiting: int | None = None,
    ) -> T:
        """Run a blocking `call` in a thread once a `kind` slot is free (fair wait, bounded by `wait_s`
        or the kind's setting, and by `max_waiting` callers ahead), under a deadline that starts once
        the slot is ours. Raises SlotWaitTimeout (GateFull) or TimeoutError.

        The slot is held until the thread really returns, even when the caller stops waiting for it,
        so a slow call never lets more threads than slots at the resource."""
        gate = self.gates(kind)
        await gate.acquire(lane, wait_s if wait_s is not None else self.gates.wait_bound(kind), max_waiting)
        try:
            context = contextvars.copy_context()
            running = asyncio.get_running_loop().run_in_executor(self.threads, context.run, call)
        except BaseException:
            gate.release()
            raise
        running.add_done_callback(lambda _: gate.release())
        return await asyncio.wait_for(asyncio.shield(running), deadline_s)

    def close(self, wait: bool) -> None:
        if self.pool is not None:
            self.pool.close(wait=wait)
        self.threads.shutdown(wait=wait, cancel_futures=not wait)
