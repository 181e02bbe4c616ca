"""Spread a batch over per-kind deployments in chunks; a chunk whose replica died is sent again; input order.

Every item goes to the deployment of its kind of work (`kind_of`), which its task declares
(`Scorer.work`): code and repository tasks to the sandbox slots, judge to the judge clients, prm to the
PRM, everything else (math, sql, plugins without a kind, unknown tasks, malformed items) to the CPU
scorers, whose Engine answers exactly as a single-process Engine would. A batch is cut into chunks of
`chunk_size` items so that it spreads over a deployment's replicas.

Faults: when the call for a chunk fails (its replica or node died, the replica raised), the chunk is sent
again, up to `retries` times; Ray Serve's router drops a dead replica, so the retry lands elsewhere. If it
still fails, each of its items comes back `error` with the reason. No item is dropped and none becomes a
silent 0. A full deployment queue (`BackPressureError`) is not a fault: it raises `QueueFullError`, which
the HTTP layer answers with 429 and Retry-After.

Nothing here imports Ray: the call is injected, so this logic is tested without a cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.distributed.faults import queue_full
from assay.errors import QueueFullError
from assay.items import raw_id, raw_task
from assay.registry import Registry, Scorer
from assay.settings import Settings
from assay.types import Result

KINDS = ("scorers", "code", "judge", "prm")

Call = Callable[[str, list[Any]], Awaitable[list[Result]]]


def kind_of(raw: Any, registry: Mapping[str, type[Scorer]]) -> str:
    """The deployment an item goes to: its task's `work`; an unknown task or a malformed item goes to
    the CPU scorers, which answer it as the single-process engine does (`unknown_task`, `invalid`)."""
    task = raw.get("task") if isinstance(raw, dict) else getattr(raw, "task", None)
    scorer = registry.get(task) if isinstance(task, str) else None
    return scorer.work if scorer is not None else "scorers"


@dataclass
class DispatchStats:
    """Counters for tests, benchmarks and logs: chunks sent, chunks sent again, items given up on."""

    chunks: int = 0
    retried: int = 0
    lost_items: int = 0


def deployed_kinds(settings: Settings) -> list[str]:
    """The kinds of work with a deployment (a kind with 0 replicas is not deployed)."""
    return [kind for kind in KINDS if getattr(settings.ray, kind).replicas > 0]


def _given_up(raw: Any, kind: str, attempts: int, exc: BaseException) -> Result:
    message = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
    reason = f"the {kind} deployment failed this item {attempts} time(s): {type(exc).__name__}: {message}"
    return Result.error(
        reason if attempts else message,
        id=raw_id(raw),
        task=raw_task(raw),
    )


class Dispatcher:
    """Scores batches through `call(kind, items) -> results`; `backpressure` maps a full queue to 429."""

    def __init__(
        self,
        call: Call,
        chunk_size: int,
        retries: int,
        backpressure: Callable[[BaseException], QueueFullError | None] = lambda exc: None,
        kinds: Collection[str] = KINDS,
        *,
        registry: Mapping[str, type[Scorer]],
    ) -> None:
        self._call = call
        self._registry = registry
        self._kinds = frozenset(kinds)
        self._chunk_size = chunk_size
        self._retries = retries
        self._backpressure = backpressure
        self.stats = DispatchStats()

    @classmethod
    def on_serve(cls, call: Call, settings: Settings, kinds: Collection[str]) -> Dispatcher:
        """The dispatcher over Ray Serve deployments: chunking and retries from `settings.ray`, and a
        deployment's full queue answered as 429."""
        return cls(
            call,
            settings.ray.chunk_size,
            settings.ray.retries,
            lambda exc: queue_full(exc, settings.retry_after_s),
            kinds=kinds,
            registry=Registry.from_settings(settings),
        )

    async def score(self, raw_items: Sequence[Any]) -> list[Result]:
        """One Result per item, in input order."""
        by_kind: dict[str, list[int]] = {}
        for index, raw in enumerate(raw_items):
            by_kind.setdefault(kind_of(raw, self._registry), []).append(index)
        chunks = [
            (kind, indices[start : start + self._chunk_size])
            for kind, indices in by_kind.items()
            for start in range(0, len(indices), self._chunk_size)
        ]
        results: list[Result | None] = [None] * len(raw_items)
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(self._chunk(kind, [raw_items[i] for i in indices]))
                    for kind, indices in chunks
                ]
        except* QueueFullError as full:  # the other chunks were cancelled; the caller retries the batch
            raise full.exceptions[0] from None
        for (_, indices), task in zip(chunks, tasks, strict=True):
            for index, result in zip(indices, task.result(), strict=True):
                results[index] = result
        assert all(r is not None for r in results), "a dispatched item has no result"
        return [r for r in results if r is not None]

    async def _chunk(self, kind: str, items: list[Any]) -> list[Result]:
        if kind not in self._kinds:
            reason = f"no {kind} deployment on this cluster (ASSAY_RAY__{kind.upper()}__REPLICAS is 0)"
            return [_given_up(raw, kind, 0, LookupError(reason)) for raw in items]
        self.stats.chunks += 1
        failure: BaseException = RuntimeError("not attempted")
        for attempt in range(self._retries + 1):
            if attempt:
                self.stats.retried += 1
            try:
                results = await self._call(kind, items)
            except Exception as exc:
                full = self._backpressure(exc)
                if full is not None:
                    raise full from exc
                failure = exc
                continue
            if len(results) == len(items):
                return list(results)
            failure = RuntimeError(f"the replica returned {len(results)} results for {len(items)} items")
        self.stats.lost_items += len(items)
        return [_given_up(raw, kind, self._retries + 1, failure) for raw in items]
