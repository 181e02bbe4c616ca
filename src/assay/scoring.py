"""The one scoring pipeline behind every surface (library, CLI, HTTP, bench).

raw item -> validate (`invalid` with a reason) -> look up task and options ("did you mean")
         -> wait for a worker process or sandbox slot, fairly across requests (`assay.scheduling`)
         -> run where the task says (killable process pool / thread / event loop) under a deadline
            that starts when the item starts running
         -> a second look by a scorer that reviews the task (`Scorer.reviews`), under its deadline
         -> a `Result` with id, task and elapsed time filled in, in input order.

Nothing here turns a failure into a reward: a deadline is `timeout`, a crash is `error`.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

from pydantic import ValidationError

from assay.admission import Admission
from assay.errors import AssayError, ItemError
from assay.groups import GroupGauges, GroupOutcome, GroupWindow, group_parts, group_stats, responses_of
from assay.metrics import Metrics
from assay.registry import Registry, Scorer
from assay.sandbox.runtime import note_missing_module
from assay.scheduling import FairGate, SlotWaitTimeout
from assay.settings import Settings
from assay.suggest import did_you_mean
from assay.types import Item, Result, TaskOptions
from assay.workers import WorkerPool

# A thread cannot be killed; a thread-run scorer enforces its own deadline (the sandbox kills the
# program). The pipeline waits this much longer before it answers `timeout` on the scorer's behalf.
_THREAD_GRACE_S = 2.0

T = TypeVar("T")


def parse_item(raw: Any) -> Item:
    """Validate one raw item; ItemError says exactly what is wrong (with "did you mean" for typos)."""
    if isinstance(raw, Item):
        return raw
    if not isinstance(raw, dict):
        raise ItemError(f"an item must be a JSON object, got {type(raw).__name__}")
    try:
        return Item.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err["loc"])
            if err["type"] == "extra_forbidden":
                name = str(err["loc"][0])
                problems.append(f'unknown field "{name}"{did_you_mean(name, Item.FIELDS)}')
            elif err["type"] == "missing":
                problems.append(f'missing field "{field}"')
            else:
                message = str(err["msg"]).removeprefix("Value error, ")
                problems.append(f"{field}: {message}" if field else message)
        raise ItemError("; ".join(problems)) from exc


def _raw_id(raw: Any) -> str | None:
    """The id of an item that failed validation, when one can be read, so the caller can match it."""
    value = raw.get("id") if isinstance(raw, dict) else None
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else None


class Engine:
    """Owns the registry, the worker pool, the thread pool and the admission count of one deployment.

    Use as a context manager, or call `close()`: worker processes outlive a forgotten engine otherwise.
    """

    def __init__(self, settings: Settings | None = None, metrics: Metrics | None = None) -> None:
        self.settings = settings if settings is not None else Settings()
        self.metrics = metrics if metrics is not None else Metrics()
        self.registry = Registry.from_settings(self.settings)
        self._local: dict[str, Scorer] = {}
        self._local_lock = threading.Lock()
        self._threads = ThreadPoolExecutor(self.settings.threads, thread_name_prefix="assay-score")
        self._pool: WorkerPool | None = None
        if any(cls.runs_in == "process" for cls in self.registry.values()):
            self._pool = WorkerPool(self.settings, self.registry, on_restart=self._count_restart)
        self._admission = Admission(self.settings, self.metrics)
        self._reviewers: dict[str, list[type[Scorer]]] = {}
        for reviewer_cls in self.registry.values():
            for task in reviewer_cls.reviews(self.settings):
                self._reviewers.setdefault(task, []).append(reviewer_cls)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._closed = False
        # One set of gates per event loop (a gate's futures belong to one loop).
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, FairGate]] = (
            weakref.WeakKeyDictionary()
        )
        self.group_window = GroupWindow()  # recent groups' statistics, exported as gauges
        self.metrics.registry.register(GroupGauges(self.group_window))
        for scorer_cls in self.registry.values():
            for collector in scorer_cls.collectors(partial(self._local.get, scorer_cls.name)):
                self.metrics.registry.register(collector)

    # -- admission -------------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        return self._admission.pending

    @property
    def worker_restarts(self) -> int:
        return self._pool.restarts if self._pool is not None else 0

    def admit(self, count: int) -> None:
        """Reserve room for `count` items or raise QueueFullError (the API answers 429)."""
        self._admission.admit(count)

    def release(self, count: int) -> None:
        self._admission.release(count)

    def _count_restart(self, cause: str) -> None:
        self.metrics.worker_restarts.labels(cause=cause).inc()

    # -- scoring ---------------------------------------------------------------------------------
    async def score_async(self, raw_items: Sequence[Any], lane: Hashable | None = None) -> list[Result]:
        """Score a batch concurrently; results come back in input order. Admission is the caller's.

        Items of one call share a lane: slots go round-robin across lanes, so concurrent batches share
        them fairly. Cancelling the call cancels its items (waiting ones never start)."""
        if self._closed:
            raise RuntimeError("engine is closed")
        lane = lane if lane is not None else object()
        return list(await asyncio.gather(*(self._score_one(raw, lane) for raw in raw_items)))

    def score(self, raw_items: Iterable[Any]) -> list[Result]:
        """Synchronous scoring for library users; runs on the engine's own event-loop thread."""
        items = list(raw_items)
        results: list[Result] = []
        step = self.settings.queue_size
        for start in range(0, len(items), step):
            chunk = items[start : start + step]
            future = asyncio.run_coroutine_threadsafe(self.score_async(chunk), self._background_loop())
            results.extend(future.result())
        return results

    async def _score_one(self, raw: Any, lane: Hashable) -> Result:
        started = time.perf_counter()
        try:
            item = parse_item(raw)
            scorer_cls = self.registry.lookup(item.task)
            options = scorer_cls.parse_options(item.options)
        except ItemError as exc:
            result = Result.invalid(str(exc))
        else:
            result = await self._review(item, await self._run(scorer_cls, item, options, lane))
        return self._labelled(raw, result, (time.perf_counter() - started) * 1000.0)

    def _labelled(self, raw: Any, result: Result, elapsed_ms: float) -> Result:
        """Fill id, task and elapsed time (escaping what the item echoes back) and count the item."""
        task = raw.get("task") if isinstance(raw, dict) else None
        result = result.model_copy(
            update={
                "id": _raw_id(raw),
                "task": task if isinstance(task, str) else None,
                "elapsed_ms": round(elapsed_ms, 3),
            }
        ).json_safe()
        result = note_missing_module(result, self.metrics.missing_module)
        label = result.task if result.task in self.registry else "unknown"
        self.metrics.items.labels(task=label, status=result.status.value).inc()
        self.metrics.item_seconds.labels(task=label).observe(elapsed_ms / 1000.0)
        return result

    # -- groups (POST /v1/groups) ----------------------------------------------------------------
    async def score_groups_async(
        self, groups: Sequence[Any], lane: Hashable | None = None
    ) -> list[GroupOutcome]:
        """Score groups (each `{"id", "items"}` or a list of items); results in item order plus the
        group's statistics (assay.groups). Admission is the caller's, as for `score_async`, and the
        groups of one call share a lane, as a batch's items do."""
        if self._closed:
            raise RuntimeError("engine is closed")
        lane = lane if lane is not None else object()
        parsed = [group_parts(index, group) for index, group in enumerate(groups)]
        scored = await asyncio.gather(*(self._score_group(items, lane) for _, items in parsed))
        outcomes = [
            GroupOutcome(id=gid, results=results, stats=group_stats(results, responses_of(items)))
            for (gid, items), results in zip(parsed, scored, strict=True)
        ]
        self.group_window.add([o.stats for o in outcomes])
        return outcomes

    def score_groups(self, groups: Iterable[Any]) -> list[GroupOutcome]:
        """Synchronous `score_groups_async`, in rounds of at most `queue_size` items (whole groups)."""
        outcomes: list[GroupOutcome] = []
        for chunk in _group_rounds(list(groups), self.settings.queue_size):
            future = asyncio.run_coroutine_threadsafe(self.score_groups_async(chunk), self._background_loop())
            outcomes.extend(future.result())
        return outcomes

    async def _score_group(self, raw_items: Sequence[Any], lane: Hashable) -> list[Result]:
        """A group's process-run items go to one worker task: one round trip instead of G, and the items
        share that worker's caches (the math gold is parsed once per reference). Whatever that task
        cannot answer (deadline, dead worker) and every other item takes the per-item path."""
        shared: list[tuple[int, Item, float]] = []  # (position, item, its own deadline)
        jobs: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        for index, raw in enumerate(raw_items):
            try:
                item = parse_item(raw)
                scorer_cls = self.registry.lookup(item.task)
                options = scorer_cls.parse_options(item.options)
            except ItemError:
                continue  # the per-item path gives it its `invalid` result
            if scorer_cls.runs_in == "process":
                shared.append((index, item, self._deadline(scorer_cls, item, options)))
                jobs.append((item.task, item.model_dump(mode="json"), options.model_dump(mode="json")))
        results: list[Result | None] = [None] * len(raw_items)
        if len(jobs) > 1 and self._pool is not None:
            # Twice the longest item deadline for the whole task: a group of quick items fits easily;
            # a slow one is rescored alone below, under its own deadline.
            batch = await self._run_group_in_worker(jobs, 2.0 * max(d for _, _, d in shared), lane)
            for (index, item, deadline), result in zip(shared, batch or [], strict=False):
                if result.elapsed_ms > deadline * 1000.0:  # as the per-item path would have answered
                    result = Result.timeout(
                        f"no verdict within the {deadline:g}s deadline", elapsed_ms=result.elapsed_ms
                    )
                result = await self._review(item, result)
                results[index] = self._labelled(raw_items[index], result, result.elapsed_ms)
        rest = [i for i, r in enumerate(results) if r is None]
        for index, result in zip(
            rest, await self.score_async([raw_items[i] for i in rest], lane), strict=True
        ):
            results[index] = result
        return [r for r in results if r is not None]

    async def _run_group_in_worker(
        self, jobs: list[tuple[str, dict[str, Any], dict[str, Any]]], deadline_s: float, lane: Hashable
    ) -> list[Result] | None:
        """One worker slot for the whole group, taken fairly like an item's; None sends the items on
        the per-item path (which reports its own slot wait)."""
        assert self._pool is not None
        gate = self._gate("workers")
        try:
            await gate.acquire(lane, self.settings.wait_s)
        except SlotWaitTimeout:
            return None
        try:
            return await self._pool.run_many(jobs, deadline_s)
        finally:
            gate.release()

    # -- slots -----------------------------------------------------------------------------------
    def _gate(self, kind: str) -> FairGate:
        gates = self._gates.setdefault(asyncio.get_running_loop(), {})
        gate = gates.get(kind)
        if gate is None:
            size = self.settings.code.slots if kind == "sandbox" else self.settings.workers
            gate = gates[kind] = FairGate(kind, size)
        return gate

    def crowded(self, kind: str, max_waiting: int) -> bool:
        """Every `kind` slot ("workers" or "sandbox") is taken and `max_waiting` callers already wait."""
        gate = self._gate(kind)
        return gate.busy >= gate.size and gate.waiting >= max_waiting

    def _wait_bound(self, kind: str) -> tuple[float, str]:
        if kind == "sandbox":
            return self.settings.code.wait_s, "ASSAY_CODE__WAIT_S"
        return self.settings.wait_s, "ASSAY_WAIT_S"

    async def run_in_slot(
        self,
        kind: str,
        lane: Hashable,
        call: Callable[[], T],
        deadline_s: float | None = None,
        wait_s: float | None = None,
    ) -> T:
        """Run a blocking `call` in a thread once a `kind` slot is free (fair wait, bounded by `wait_s`
        or the kind's setting), under a deadline that starts once the slot is ours. Raises
        SlotWaitTimeout or TimeoutError.

        The slot is held until the thread really returns, even when the caller stops waiting for it,
        so a slow call never lets more threads than slots at the resource."""
        gate = self._gate(kind)
        await gate.acquire(lane, wait_s if wait_s is not None else self._wait_bound(kind)[0])
        try:
            context = contextvars.copy_context()
            running = asyncio.get_running_loop().run_in_executor(self._threads, context.run, call)
        except BaseException:
            gate.release()
            raise
        running.add_done_callback(lambda _: gate.release())
        return await asyncio.wait_for(asyncio.shield(running), deadline_s)

    async def run_sandboxed(self, call: Callable[[], T], wait_s: float) -> T:
        """A blocking sandbox `call` (a /run_code program) once a sandbox slot is free: the route shares
        the slots fairly with code items, its wait bounded by `wait_s` (raises SlotWaitTimeout)."""
        return await self.run_in_slot("sandbox", object(), call, wait_s=wait_s)

    def _waited_too_long(self, exc: SlotWaitTimeout) -> Result:
        setting = self._wait_bound(exc.gate)[1]
        return Result.timeout(
            f"not run: no {exc.gate} slot came free within {exc.waited_s:g}s ({setting})",
            details={"cause": "slot_wait", "waited_s": round(exc.waited_s, 3)},
        )

    async def _run_in_worker(
        self, scorer_cls: type[Scorer], item: Item, options: TaskOptions, lane: Hashable
    ) -> Result:
        assert self._pool is not None
        deadline = self._deadline(scorer_cls, item, options)
        gate = self._gate("workers")
        try:
            await gate.acquire(lane, self.settings.wait_s)
        except SlotWaitTimeout as exc:
            return self._waited_too_long(exc)
        try:  # pebble starts the deadline when a worker picks the item up
            return await self._pool.run(
                item.task, item.model_dump(mode="json"), options.model_dump(mode="json"), deadline
            )
        finally:
            gate.release()

    async def _run(
        self, scorer_cls: type[Scorer], item: Item, options: TaskOptions, lane: Hashable
    ) -> Result:
        if scorer_cls.runs_in == "process":
            return await self._run_in_worker(scorer_cls, item, options, lane)
        scorer = self._scorer(scorer_cls)
        deadline = self._deadline(scorer_cls, item, options)
        kind = getattr(scorer_cls, "gate", None)
        try:
            if scorer_cls.runs_in == "thread" and kind is not None:
                score = partial(scorer.score, item, options)
                return await self.run_in_slot(kind, lane, score, deadline + _THREAD_GRACE_S)
            if scorer_cls.runs_in == "thread":
                loop = asyncio.get_running_loop()
                call = loop.run_in_executor(self._threads, scorer.score, item, options)
                return await asyncio.wait_for(call, deadline + _THREAD_GRACE_S)
            return await asyncio.wait_for(scorer.ascore(item, options), deadline)
        except SlotWaitTimeout as exc:
            return self._waited_too_long(exc)
        except TimeoutError:
            return Result.timeout(f"no verdict within the {deadline:g}s deadline")
        except AssayError as exc:  # a failure the scorer raised: its class knows its status
            return Result.of_error(exc)
        except Exception as exc:  # a scorer bug must not lose the batch
            return Result.error(f"scorer failed: {type(exc).__name__}: {exc}")

    def _deadline(self, scorer_cls: type[Scorer], item: Item, options: TaskOptions) -> float:
        """The item's deadline, read from the class; a scorer that still overrides the instance form
        (`deadline_s`) is built here to answer it."""
        if scorer_cls.deadline_s is not Scorer.deadline_s:
            return self._scorer(scorer_cls).deadline_s(item, options)
        return scorer_cls.deadline_for(self.settings, item, options)

    async def _review(self, item: Item, result: Result) -> Result:
        """The second looks the task's reviewers take (the judge's second opinion on math), each under
        the reviewer's own deadline. A review that overruns or fails leaves the verdict as it was."""
        for reviewer_cls in self._reviewers.get(item.task, ()):
            reviewer = self._scorer(reviewer_cls)
            options = reviewer_cls.parse_options({})
            deadline = self._deadline(reviewer_cls, item, options)
            try:
                result = await asyncio.wait_for(reviewer.review(item, result), deadline)
            except TimeoutError:
                why = f"no second look within the {deadline:g}s deadline"
                return _reviewed(result, reviewer_cls.name, "timeout", why)
            except Exception as exc:  # a reviewer's bug must not lose the verdict it reviews
                return _reviewed(result, reviewer_cls.name, "error", f"{type(exc).__name__}: {exc}")
        return result

    def scorer(self, task: str) -> Scorer:
        """The in-process instance of a task, for endpoints that need its resources (a sandbox pool)."""
        return self._scorer(self.registry.lookup(task))

    def _scorer(self, scorer_cls: type[Scorer]) -> Scorer:
        """The in-process instance of a task (built on first use, so unused extras are never loaded)."""
        with self._local_lock:
            scorer = self._local.get(scorer_cls.name)
            if scorer is None:
                scorer = self._local[scorer_cls.name] = scorer_cls(self.settings)
            return scorer

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Start the worker processes and warm their scorers now, not on the first item (the service
        awaits this before /readyz says ready)."""
        if self._pool is not None:
            await self._pool.start()

    def _background_loop(self) -> asyncio.AbstractEventLoop:
        with self._local_lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._loop_thread = threading.Thread(
                    target=self._loop.run_forever, name="assay-engine-loop", daemon=True
                )
                self._loop_thread.start()
            return self._loop

    async def aclose(self, wait: bool = True) -> None:
        """`close` from inside a running event loop: loop-bound clients (judges) close on it first."""
        for scorer in list(self._local.values()):
            await scorer.aclose()
        await asyncio.to_thread(self.close, wait)

    def close(self, wait: bool = True) -> None:
        """Release workers, threads and scorers. With `wait`, in-flight items finish first."""
        if self._closed:
            return
        self._closed = True
        if self._pool is not None:
            self._pool.close(wait=wait)
        self._threads.shutdown(wait=wait, cancel_futures=not wait)
        for scorer in self._local.values():
            scorer.close()
        if self._loop is not None and self._loop_thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop_thread.join()
            self._loop.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reviewed(result: Result, reviewer: str, status: str, reason: str) -> Result:
    """The verdict as it was, with the review that did not finish recorded in its details."""
    review = {"by": reviewer, "status": status, "reason": reason}
    return result.model_copy(update={"details": {**result.details, "review": review}})


def _group_rounds(groups: list[Any], limit: int) -> Iterator[list[Any]]:
    """Consecutive runs of whole groups holding at most `limit` items (a larger group goes alone)."""
    chunk: list[Any] = []
    size = 0
    for index, group in enumerate(groups):
        count = len(group_parts(index, group)[1])
        if chunk and size + count > limit:
            yield chunk
            chunk, size = [], 0
        chunk.append(group)
        size += count
    if chunk:
        yield chunk


def score(items: Iterable[Any], settings: Settings | None = None) -> list[Result]:
    """Score items in-process and return one Result per item, in order.

    Starts and stops an `Engine` (worker processes) per call; keep an `Engine` open to score many
    batches.
    """
    with Engine(settings) as engine:
        return engine.score(items)
