"""What the HTTP routers serve from under Ray: the Engine's surface, with scoring done by deployments.

`create_app(settings, engine_factory=...)` puts a `RayEngine` on `app.state.engine` in the ingress
replica, so every route, the contract, the error envelope and the admission bound (429 + Retry-After) are
those of `assay serve`. Only `score_async` differs: items travel to the per-kind deployments through the
`Dispatcher`. `/run_code` reaches the code deployment's sandboxes through `scorer("code")`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from assay.admission import Admission
from assay.distributed.dispatch import Dispatcher
from assay.groups import GroupOutcome, group_parts, group_stats, responses_of
from assay.metrics import Metrics
from assay.registry import Registry
from assay.settings import Settings
from assay.types import Result

T = TypeVar("T")


class _RemoteCodeScorer:
    """`run_program(...)` of the code scorer, run by a code replica (called from a worker thread)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def run_program(self, *args: Any, **kwargs: Any) -> Any:
        return self._handle.run_program.remote(*args, **kwargs).result()


class RayEngine:
    """Admission, registry and metrics as in `Engine`; scoring by the deployments behind `handles`."""

    def __init__(self, settings: Settings, metrics: Metrics, handles: Mapping[str, Any]) -> None:
        self.settings = settings
        self.metrics = metrics
        self.registry = Registry.from_settings(settings)
        self._handles = dict(handles)
        self.dispatcher = Dispatcher.on_serve(self._call, settings, kinds=self._handles)
        self._admission = Admission(settings, metrics)

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

    def crowded(self, kind: str, max_waiting: int) -> bool:
        """Never: the code deployment's own queue bounds `/run_code` (its overflow is a 429)."""
        return False

    async def run_sandboxed(self, call: Callable[[], T], wait_s: float) -> T:
        """`call` in a thread: the code replica it reaches holds the slot and bounds the wait."""
        return await asyncio.to_thread(call)

    async def score_groups_async(
        self, groups: Sequence[Any], lane: Hashable | None = None
    ) -> list[GroupOutcome]:
        """Groups scored as one flat batch on the deployments, then split back with their statistics."""
        parsed = [group_parts(index, group) for index, group in enumerate(groups)]
        results = iter(await self.score_async([item for _, items in parsed for item in items]))
        outcomes = []
        for gid, items in parsed:
            scored = [next(results) for _ in items]
            outcomes.append(
                GroupOutcome(id=gid, results=scored, stats=group_stats(scored, responses_of(items)))
            )
        return outcomes

    async def score_async(self, raw_items: Sequence[Any], lane: Hashable | None = None) -> list[Result]:
        """Score a batch on the deployments; results in input order. Admission is the caller's."""
        results = await self.dispatcher.score(raw_items)
        for result in results:
            if isinstance(module := result.details.get("missing_module"), str):  # noted by the replica
                self.metrics.missing_module(module)
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
