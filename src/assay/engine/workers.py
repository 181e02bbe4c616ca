"""Killable process pools with per-item deadlines, shared by every "process" task (math, sql).

Why processes and not signals: math-verify's own timeouts use SIGALRM, which fails off the main thread
(its issues #11, #50, #55), and a thread running a sympy simplification or a SQLite query cannot be
stopped at all. Here each item runs in a worker process; when its deadline passes, pebble terminates
that worker and starts a fresh one, the item gets `timeout`, and the pool keeps serving.

Workers start through the "forkserver" context: forking the server process itself (with its event loop
and threads) is unsafe, and a forkserver that has imported the scorers once makes restarts cheap.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from pebble import ProcessExpired, ProcessPool

from assay.engine.worker_processes import WorkerContext, die_with_parent, limit_memory
from assay.errors import AssayError
from assay.registry import Registry, Scorer
from assay.settings import Settings
from assay.types import Result

# pebble's timeout starts when a worker takes the task; a task handed to a pool in the instant it broke
# (every worker gone with the forkserver) is neither taken nor failed. Past its deadline plus this grace
# (room for a worker to start: its initializer warms sympy) the engine gives the task up.
_START_GRACE_S = 30.0
# How often a pending task's pool is checked for having broken under it.
_POOL_CHECK_S = 0.5

# Process-local state of a worker: the scorers it built at start-up (never set in the server process).
_worker_scorers: dict[str, Scorer] = {}


def _init_worker(settings: Settings) -> None:
    die_with_parent()
    limit_memory(settings.worker_memory_mb)
    registry = Registry.from_settings(settings)
    for name in registry:
        if registry[name].runs_in == "process":
            for logger in registry[name].quiet_loggers:  # this process is ours: no one else's levels
                logging.getLogger(logger).setLevel(logging.ERROR)
            _worker_scorers[name] = registry[name](settings)


def worker_scorer(task: str) -> Scorer:
    """The scorer this worker built for `task` at start-up (a group's clustering binds its equivalence)."""
    return _worker_scorers[task]


def failure_text(exc: BaseException) -> str:
    """`Name: message` for a result's reason; an exception raised with no message is placed instead
    (`Name at file.py:LINE, no message`), so a reason never ends on a bare class name."""
    message = str(exc).strip()
    if message:
        return f"{type(exc).__name__}: {message}"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}{where}, no message"


def run_item(task: str, item: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Score one item inside a worker. Arguments and result cross the process boundary as plain data."""
    started = time.perf_counter()
    scorer = _worker_scorers[task]
    parsed = scorer.item_model().model_validate(item)
    try:
        result = scorer.score(parsed, scorer.Options.model_validate(options))
    except AssayError as exc:  # mapped here: not every AssayError survives pickling back to the engine
        result = Result.of_error(exc)
    except Exception as exc:  # a scorer bug: described here, where its traceback is
        result = Result.error(f"scorer failed: {failure_text(exc)}")
    dumped = result.model_dump(mode="json")
    dumped["elapsed_ms"] = round((time.perf_counter() - started) * 1000.0, 3)  # the item's own work
    return dumped


def _cancel_scheduled(scheduling: asyncio.Future[Future[dict[str, Any]]]) -> None:
    if not scheduling.cancelled() and scheduling.exception() is None:
        scheduling.result().cancel()  # pebble stops the worker if the item already started


def _worker_pid() -> int:
    """A worker answers with its pid once its initializer (scorers built, sympy warmed) has run."""
    return os.getpid()


# What runs after a group's items in their worker task: (jobs, their results, seconds spent) -> a value
# sent back beside them (a group's answer clusters, formed where the answers were just parsed).
Then = Callable[[list[tuple[str, dict[str, Any], dict[str, Any]]], list[dict[str, Any]], float], Any]


def run_items(
    jobs: list[tuple[str, dict[str, Any], dict[str, Any]]], then: Then | None = None
) -> tuple[list[dict[str, Any]], Any]:
    """Score several items in one worker task (a group: one round trip, and the items share the worker's
    caches, such as the parsed gold), then `then` over them; (results, what `then` returned, or None).
    A scorer that raises gives that item an `error`, not the batch; `then` must not raise."""
    begun = time.perf_counter()
    out = []
    for task, item, options in jobs:
        started = time.perf_counter()
        try:
            out.append(run_item(task, item, options))  # timed by run_item itself
        except Exception as exc:  # raised before run_item's own guard (an item that does not parse)
            result = Result.error(f"scorer failed: {failure_text(exc)}").model_dump(mode="json")
            result["elapsed_ms"] = round((time.perf_counter() - started) * 1000.0, 3)
            out.append(result)
    return out, then(jobs, out, time.perf_counter() - begun) if then is not None else None


class PoolStalled(Exception):
    """A task that will never end: its pool broke while it was pending, or no worker took it within its
    deadline plus `_START_GRACE_S`. `replaced`: a fresh pool now serves (internal: `WorkerPool` turns
    it into a retry or a result)."""

    def __init__(self, replaced: bool) -> None:
        super().__init__("no worker took the task")
        self.replaced = replaced


class WorkerPool:
    """A bounded set of worker processes; `run` scores one item under a hard deadline."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        on_restart: Callable[[str], None] | None = None,
    ) -> None:
        self._settings = settings
        self._context = WorkerContext()  # forkserver, without the caller's __main__ (see its module)
        # Preloading makes each (re)started worker cheap: the heavy imports happen once.
        modules = {cls.__module__ for cls in registry.values() if cls.runs_in == "process"}
        self._context.set_forkserver_preload(["assay.engine.workers", *sorted(modules)])
        self._on_restart = on_restart
        self._lock = threading.Lock()  # guards swapping `_pool`; never held while calling out
        self._count_lock = threading.Lock()
        self._pool = self._new_pool()
        # The pool each pending task was handed to: a stalled task tells whether its pool broke.
        self._pool_of: weakref.WeakKeyDictionary[Future[Any], ProcessPool] = weakref.WeakKeyDictionary()
        self.restarts = 0

    def _new_pool(self) -> ProcessPool:
        return ProcessPool(
            max_workers=self._settings.workers,
            max_tasks=self._settings.max_tasks_per_worker,
            initializer=_init_worker,
            initargs=(self._settings,),
            context=self._context,
        )

    def _schedule(
        self, args: tuple[Any, ...], deadline_s: float, function: Callable[..., Any] = run_item
    ) -> Future[Any]:
        """Hand one task to pebble; runs in a thread, because replacing a broken pool forks workers
        (and, after the forkserver died, a fresh forkserver), which must not stall the event loop."""
        with self._lock:
            try:
                future = self._pool.schedule(function, args=args, timeout=deadline_s)
                replaced = False
            except RuntimeError:
                # pebble marks a pool broken when workers cannot start (a failing initializer) or when
                # an idle worker dies (OOM killer, kill -9); a fresh pool is the only way to keep serving.
                self._swap_pool()
                future = self._pool.schedule(function, args=args, timeout=deadline_s)
                replaced = True
            self._pool_of[future] = self._pool
        # Counted outside the lock: `_count` takes a lock too, and calling it while holding this
        # non-reentrant one deadlocked the event loop, freezing the whole server (issue 12).
        if replaced:
            self._count("crash")
        return future

    def _swap_pool(self) -> None:
        """Stop the pool and start a fresh one. The caller holds `_lock` and counts the restart."""
        self._pool.stop()
        self._pool = self._new_pool()

    async def _submit(
        self, args: tuple[Any, ...], deadline_s: float, function: Callable[..., Any] = run_item
    ) -> Future[Any]:
        scheduling = asyncio.ensure_future(asyncio.to_thread(self._schedule, args, deadline_s, function))
        try:
            return await asyncio.shield(scheduling)
        except asyncio.CancelledError:  # the request went away: do not leave the item running
            scheduling.add_done_callback(_cancel_scheduled)
            raise

    async def _outcome(self, future: Future[Any], deadline_s: float) -> Any:
        """The task's return value, or its exception raised. PoolStalled (the task cancelled) when its
        pool broke while it was still pending (pebble fails at once only the tasks a worker had been
        given, so a pending one would never end), or when no worker finished it within its deadline
        plus `_START_GRACE_S` (pebble's own timeout starts only when a worker takes the task)."""
        pool = self._pool_of.get(future)
        waiting = asyncio.wrap_future(future)
        loop = asyncio.get_running_loop()
        give_up = loop.time() + deadline_s + _START_GRACE_S
        try:
            while not waiting.done():
                await asyncio.wait({waiting}, timeout=min(_POOL_CHECK_S, max(0.0, give_up - loop.time())))
                broken = pool is not None and not pool.active
                if not waiting.done() and (broken or loop.time() >= give_up):
                    future.cancel()
                    waiting.cancel()
                    raise PoolStalled(self._replace_if_broken(pool))
        except asyncio.CancelledError:  # the request went away: do not leave the item running
            waiting.cancel()
            raise
        return waiting.result()

    def _replace_if_broken(self, pool: ProcessPool | None) -> bool:
        """Whether a fresh pool now serves in place of `pool` (a stalled task's; None: the current
        one): replaced already, or now because pebble marked it broken."""
        with self._lock:
            if pool is not None and pool is not self._pool:
                return True
            if self._pool.active:
                return False
            self._swap_pool()
        self._count("crash")
        return True

    async def run_many(
        self,
        jobs: list[tuple[str, dict[str, Any], dict[str, Any]]],
        deadline_s: float,
        then: Then | None = None,
    ) -> tuple[list[Result], Any] | None:
        """Score `jobs` (task, item, options) in one worker task under one deadline, then `then` over
        them in the same task (`run_items`): (results, what `then` returned). None when that task
        timed out or its worker died: the caller then scores the items one by one, so each gets its own
        deadline and its own status (no item's verdict depends on which group it came in)."""
        try:
            future = await self._submit((jobs, then), deadline_s, run_items)
        except Exception:  # even a fresh pool could not start: the per-item path reports it
            return None
        try:
            scored, extra = await self._outcome(future, deadline_s)
            return [Result.model_validate(r) for r in scored], extra
        except PoolStalled:
            return None
        except FutureTimeout:
            self._count("timeout")
            return None
        except ProcessExpired:
            self._count("crash")
            return None
        except BrokenProcessPool:
            return None

    async def call(self, function: Callable[..., Any], args: tuple[Any, ...], deadline_s: float) -> Any:
        """`function(*args)` in a worker under `deadline_s` (a group's answer clusters): its return value,
        or its exception raised; a worker past the deadline is killed (FutureTimeout), a dead one is
        ProcessExpired. Nothing is retried: the caller reports the failure as its own."""
        future = await self._submit(args, deadline_s, function)
        return await self._outcome(future, deadline_s)

    async def run(
        self, task: str, item: dict[str, Any], options: dict[str, Any], deadline_s: float
    ) -> Result:
        """Score one item in a worker: a deadline is `timeout`, a dead worker is `error`.

        An item caught in a pool that broke under it (an idle worker died while it was queued) is sent
        once more, to the fresh pool: the failure was not the item's."""
        for attempt in range(2):
            try:
                future = await self._submit((task, item, options), deadline_s)
            except Exception as exc:  # even a fresh pool could not start: this item errs, the server lives
                self._count("crash")
                return Result.error(f"worker pool could not start: {failure_text(exc)}")
            try:
                return Result.model_validate(await self._outcome(future, deadline_s))
            except PoolStalled as exc:
                if not exc.replaced:
                    waited = deadline_s + _START_GRACE_S
                    return Result.timeout(f"no worker took the item within {waited:g}s")
                if attempt == 1:
                    return Result.error("the worker pool broke twice under the item; it was replaced")
            except FutureTimeout:
                self._count("timeout")
                return Result.timeout(
                    f"no verdict within the {deadline_s:g}s deadline; the worker was replaced"
                )
            except ProcessExpired as exc:
                self._count("crash")
                return Result.error(f"worker process died ({exc}); it was replaced")
            except BrokenProcessPool as exc:
                if attempt == 1:
                    return Result.error(f"worker pool failed to start a worker: {exc}")
            except Exception as exc:  # a scorer bug must not lose the batch
                return Result.error(f"scorer failed: {failure_text(exc)}")
        raise AssertionError("unreachable")

    async def start(self, timeout_s: float = 120.0) -> None:
        """Start every worker now rather than on the first item, and return once each has answered.

        Workers build and warm their scorers in the initializer (sympy and the LaTeX parser take
        seconds), so after this the first real item is served as fast as the tenth.
        """
        seen: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while len(seen) < self._settings.workers and time.monotonic() < deadline:
            left = deadline - time.monotonic()
            futures = [await self._submit((), left, _worker_pid) for _ in range(self._settings.workers)]
            # Bounded: a pool that breaks during the warm-up (its forkserver killed) never answers.
            seen.update(await asyncio.gather(*(self._outcome(f, left) for f in futures)))
            if len(seen) < self._settings.workers:
                await asyncio.sleep(0.05)  # the others are still in their initializer

    def _count(self, cause: str) -> None:
        with self._count_lock:
            self.restarts += 1
        if self._on_restart is not None:
            self._on_restart(cause)

    def close(self, wait: bool = True) -> None:
        """Stop accepting work; with `wait`, let scheduled items finish first."""
        with self._lock:
            if wait:
                self._pool.close()
            else:
                self._pool.stop()
        self._pool.join()
