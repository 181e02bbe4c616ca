"""The one scoring pipeline behind every surface (library, CLI, HTTP, bench).

raw item -> validate (`invalid` with a reason) -> look up task and options ("did you mean")
         -> run where the task says (killable process pool / thread / event loop) under a deadline
         -> a `Result` with id, task and elapsed time filled in, in input order.

Nothing here turns a failure into a reward: a deadline is `timeout`, a crash is `error`.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import ValidationError

from assay.errors import ItemError, QueueFullError
from assay.judges.quality import JudgeQualityCollector
from assay.metrics import Metrics
from assay.registry import Registry, Scorer
from assay.settings import Settings
from assay.suggest import did_you_mean
from assay.types import Item, Result, Status, TaskOptions
from assay.workers import WorkerPool

# A thread cannot be killed; a thread-run scorer enforces its own deadline (the sandbox kills the
# program). The pipeline waits this much longer before it answers `timeout` on the scorer's behalf.
_THREAD_GRACE_S = 2.0


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
                problems.append(f"{field}: {err['msg']}")
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
        self._pending = 0
        self._pending_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None
        self._closed = False
        self.metrics.watch_counter(
            "assay_judge_cache", "Judge cache lookups and writes, by event.", "event", self._judge_cache_stats
        )
        self.metrics.registry.register(
            JudgeQualityCollector(lambda: getattr(self._local.get("judge"), "quality", None))
        )

    # -- admission -------------------------------------------------------------------------------
    @property
    def pending(self) -> int:
        return self._pending

    @property
    def worker_restarts(self) -> int:
        return self._pool.restarts if self._pool is not None else 0

    def admit(self, count: int) -> None:
        """Reserve room for `count` items or raise QueueFullError (the API answers 429)."""
        with self._pending_lock:
            if self._pending + count > self.settings.queue_size:
                self.metrics.rejected.inc(count)
                raise QueueFullError(self._pending, self.settings.queue_size, self.settings.retry_after_s)
            self._pending += count
            self.metrics.queue_depth.set(self._pending)

    def release(self, count: int) -> None:
        with self._pending_lock:
            self._pending -= count
            self.metrics.queue_depth.set(self._pending)

    def _count_restart(self, cause: str) -> None:
        self.metrics.worker_restarts.labels(cause=cause).inc()

    # -- scoring ---------------------------------------------------------------------------------
    async def score_async(self, raw_items: Sequence[Any]) -> list[Result]:
        """Score a batch concurrently; results come back in input order. Admission is the caller's."""
        if self._closed:
            raise RuntimeError("engine is closed")
        return list(await asyncio.gather(*(self._score_one(raw) for raw in raw_items)))

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

    async def _score_one(self, raw: Any) -> Result:
        started = time.perf_counter()
        task = raw.get("task") if isinstance(raw, dict) else None
        try:
            item = parse_item(raw)
            scorer_cls = self.registry.lookup(item.task)
            options = scorer_cls.parse_options(item.options)
        except ItemError as exc:
            result = Result.invalid(str(exc))
        else:
            result = await self._run(scorer_cls, item, options)
            result = await self._second_opinion(item, result)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        result = result.model_copy(
            update={
                "id": _raw_id(raw),
                "task": task if isinstance(task, str) else None,
                "elapsed_ms": round(elapsed_ms, 3),
            }
        )
        label = result.task if result.task in self.registry else "unknown"
        self.metrics.items.labels(task=label, status=result.status.value).inc()
        self.metrics.item_seconds.labels(task=label).observe(elapsed_ms / 1000.0)
        return result

    async def _run(self, scorer_cls: type[Scorer], item: Item, options: TaskOptions) -> Result:
        if scorer_cls.runs_in == "process":
            assert self._pool is not None
            deadline = self._scorer(scorer_cls).deadline_s(item, options)
            return await self._pool.run(
                item.task, item.model_dump(mode="json"), options.model_dump(mode="json"), deadline
            )
        scorer = self._scorer(scorer_cls)
        deadline = scorer.deadline_s(item, options)
        try:
            if scorer_cls.runs_in == "thread":
                loop = asyncio.get_running_loop()
                call = loop.run_in_executor(self._threads, scorer.score, item, options)
                return await asyncio.wait_for(call, deadline + _THREAD_GRACE_S)
            return await asyncio.wait_for(scorer.ascore(item, options), deadline)
        except TimeoutError:
            return Result.timeout(f"no verdict within the {deadline:g}s deadline")
        except Exception as exc:  # a scorer bug must not lose the batch
            return Result.error(f"scorer failed: {type(exc).__name__}: {exc}")

    async def _second_opinion(self, item: Item, result: Result) -> Result:
        """With `judge.second_opinion` on, a math answer the rules rejected is re-checked by the judge
        (which sees only the extracted answer and the gold; see assay.judges.second_opinion)."""
        if not (
            self.settings.judge.second_opinion
            and item.task == "math"
            and result.status is Status.OK
            and result.correct is False
            and item.reference
            and "judge" in self.registry
        ):
            return result
        from assay.judges.scorer import JudgeScorer
        from assay.judges.second_opinion import second_opinion

        judge_scorer = self.scorer("judge")
        if not isinstance(judge_scorer, JudgeScorer):
            return result
        judge = judge_scorer.judge()
        return await second_opinion(
            result, result.extracted, item.reference, judge.client, self.settings, cache=judge.cache
        )

    def _judge_cache_stats(self) -> dict[str, float]:
        judge = self._local.get("judge")
        stats = getattr(judge, "cache_stats", None)
        if stats is None:
            return {}
        return {"hit": stats.hits, "miss": stats.misses, "write": stats.writes}

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


def score(items: Iterable[Any], settings: Settings | None = None) -> list[Result]:
    """Score items in-process and return one Result per item, in order.

    Starts and stops an `Engine` (worker processes) per call; keep an `Engine` open to score many
    batches.
    """
    with Engine(settings) as engine:
        return engine.score(items)
