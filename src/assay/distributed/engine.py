"""What the HTTP routers serve from under Ray: the Engine's surface, with scoring done by deployments.

`create_app(settings, engine_factory=...)` puts a `RayEngine` on `app.state.engine` in the ingress
replica, so every route, the contract, the error envelope and the admission bound (429 + Retry-After) are
those of `assay serve`. Only `score_async` differs: items travel to the per-kind deployments through the
`Dispatcher`. `/run_code` reaches the code deployment's sandboxes through `scorer("code")`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from assay.distributed.dispatch import Dispatcher
from assay.distributed.faults import queue_full
from assay.errors import QueueFullError
from assay.metrics import Metrics
from assay.registry import Registry
from assay.settings import Settings
from assay.types import Result


class _RemoteExecutor:
    """`executor.execute(...)` of the code scorer, run by a code replica (called from a worker thread)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def execute(self, *args: Any) -> Any:
        return self._handle.execute.remote(*args).result()


class _RemoteCodeScorer:
    def __init__(self, handle: Any) -> None:
        self.executor = _RemoteExecutor(handle)


class RayEngine:
    """Admission, registry and metrics as in `Engine`; scoring by the deployments behind `handles`."""

    def __init__(self, settings: Settings, metrics: Metrics, handles: Mapping[str, Any]) -> None:
        self.settings = settings
        self.metrics = metrics
        self.registry = Registry.from_settings(settings)
        self._handles = dict(handles)
        self.dispatcher = Dispatcher(
            self._call,
            settings.ray.chunk_size,
            settings.ray.retries,
            lambda exc: queue_full(exc, settings.retry_after_s),
            kinds=self._handles,
        )
        self._pending = 0
        self._lock = threading.Lock()

    @property
    def pending(self) -> int:
        return self._pending

    @property
    def worker_restarts(self) -> int:
        return 0

    def admit(self, count: int) -> None:
        """Reserve room for `count` items or raise QueueFullError (the API answers 429)."""
        with self._lock:
            if self._pending + count > self.settings.queue_size:
                self.metrics.rejected.inc(count)
                raise QueueFullError(self._pending, self.settings.queue_size, self.settings.retry_after_s)
            self._pending += count
            self.metrics.queue_depth.set(self._pending)

    def release(self, count: int) -> None:
        with self._lock:
            self._pending -= count
            self.metrics.queue_depth.set(self._pending)

    async def _call(self, kind: str, items: list[Any]) -> list[Result]:
        results: list[Result] = await self._handles[kind].score.remote(items)
        return results

    async def score_async(self, raw_items: Sequence[Any]) -> list[Result]:
        """Score a batch on the deployments; results in input order. Admission is the caller's."""
        results = await self.dispatcher.score(raw_items)
        for result in results:
            label = result.task if result.task in self.registry else "unknown"
            self.metrics.items.labels(task=label, status=result.status.value).inc()
            self.metrics.item_seconds.labels(task=label).observe(result.elapsed_ms / 1000.0)
        return results

    def scorer(self, task: str) -> Any:
        """Only the code scorer's sandbox is used directly by a route (`/run_code`)."""
        if task != "code":
            raise KeyError(f"under Ray, the {task} scorer lives in its deployment")
        return _RemoteCodeScorer(self._handles["code"])

    async def aclose(self, wait: bool = True) -> None:
        """Nothing to release here: the deployments own the workers and sandboxes."""
