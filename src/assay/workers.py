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
import multiprocessing
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from pebble import ProcessExpired, ProcessPool

from assay.registry import Registry, Scorer
from assay.settings import Settings
from assay.types import Item, Result

# Process-local state of a worker: the scorers it built at start-up (never set in the server process).
_worker_scorers: dict[str, Scorer] = {}


def _init_worker(settings: Settings) -> None:
    registry = Registry.from_settings(settings)
    for name in registry:
        if registry[name].runs_in == "process":
            _worker_scorers[name] = registry[name](settings)


def run_item(task: str, item: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Score one item inside a worker. Arguments and result cross the process boundary as plain data."""
    scorer = _worker_scorers[task]
    parsed = Item.model_validate(item)
    result = scorer.score(parsed, scorer.Options.model_validate(options))
    return result.model_dump(mode="json")


def run_items(jobs: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[dict[str, Any]]:
    """Score several items in one worker task (a group: one round trip, and the items share the worker's
    caches, such as the parsed gold). A scorer that raises gives that item an `error`, not the batch."""
    out = []
    for task, item, options in jobs:
        started = time.perf_counter()
        try:
            result = run_item(task, item, options)
        except Exception as exc:
            result = Result.error(f"scorer failed: {type(exc).__name__}: {exc}").model_dump(mode="json")
        result["elapsed_ms"] = round((time.perf_counter() - started) * 1000.0, 3)
        out.append(result)
    return out


class WorkerPool:
    """A bounded set of worker processes; `run` scores one item under a hard deadline."""

    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        on_restart: Callable[[str], None] | None = None,
    ) -> None:
        self._settings = settings
        self._context = multiprocessing.get_context("forkserver")
        # Preloading makes each (re)started worker cheap: the heavy imports happen once.
        modules = {cls.__module__ for cls in registry.values() if cls.runs_in == "process"}
        self._context.set_forkserver_preload(["assay.workers", *sorted(modules)])
        self._on_restart = on_restart
        self._lock = threading.Lock()
        self._pool = self._new_pool()
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
        with self._lock:
            try:
                return self._pool.schedule(function, args=args, timeout=deadline_s)
            except RuntimeError:
                # pebble marks a pool broken when workers cannot start (e.g. a failing initializer);
                # a fresh pool is the only way to keep serving. Its error reaches the item as `error`.
                self._pool.stop()
                self._pool = self._new_pool()
                self._count("crash")
                return self._pool.schedule(function, args=args, timeout=deadline_s)

    async def run_many(
        self, jobs: list[tuple[str, dict[str, Any], dict[str, Any]]], deadline_s: float
    ) -> list[Result] | None:
        """Score `jobs` (task, item, options) in one worker task under one deadline. None when that task
        timed out or its worker died: the caller then scores the items one by one, so each gets its own
        deadline and its own status (no item's verdict depends on which group it came in)."""
        future = self._schedule((jobs,), deadline_s, run_items)
        try:
            return [Result.model_validate(r) for r in await asyncio.wrap_future(future)]
        except FutureTimeout:
            self._count("timeout")
            return None
        except ProcessExpired:
            self._count("crash")
            return None
        except BrokenProcessPool:
            return None

    async def run(
        self, task: str, item: dict[str, Any], options: dict[str, Any], deadline_s: float
    ) -> Result:
        """Score one item in a worker: a deadline is `timeout`, a dead worker is `error`."""
        future = self._schedule((task, item, options), deadline_s)
        try:
            return Result.model_validate(await asyncio.wrap_future(future))
        except FutureTimeout:
            self._count("timeout")
            return Result.timeout(f"no verdict within the {deadline_s:g}s deadline; the worker was replaced")
        except ProcessExpired as exc:
            self._count("crash")
            return Result.error(f"worker process died ({exc}); it was replaced")
        except BrokenProcessPool as exc:
            return Result.error(f"worker pool failed to start a worker: {exc}")
        except Exception as exc:  # a scorer bug must not lose the batch
            return Result.error(f"scorer failed: {type(exc).__name__}: {exc}")

    def _count(self, cause: str) -> None:
        with self._lock:
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
