"""Server-side micro-batching: concurrent small requests reach the workers in batches.

With per-rollout streaming (verl's reward loop, slime, OpenRLHF: one sample per request) the server sees
thousands of single-item requests at once. Scored one by one, each item costs its own worker round trip
(a thread hop to schedule it, one process-pool task, one result message). A `MicroBatcher` holds a small
request for at most `microbatch.window_ms` (the bound on added latency), merges every small request that
arrived in that window (assay.client.coalescing), and scores the merged items through the engine's group path
in pieces of `microbatch.worker_items`: the process-run items of a piece go to a worker as one task
(one round trip), and pieces spread over the workers. The group path guarantees each item the result it
would get alone (a piece that times out or loses its worker is rescored item by item), so batching
changes costs, never verdicts. Requests of `microbatch.max_items` items or more are not held, but go to
the workers in the same pieces (measured: a batch of 250 math items took half the time that way).

Admission stays per request (the caller admits its own items before it calls), and a request whose
client leaves drops out of its batch without affecting the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.client.coalescing import Coalescer
from assay.engine.service import Service
from assay.types import Result


class MicroBatcher:
    """`await score(items)` -> results in order, merged with other concurrent small requests."""

    def __init__(self, engine: Service) -> None:
        self._engine = engine
        settings = engine.settings.microbatch
        self.enabled = settings.enabled
        self.worker_items = settings.worker_items
        self._coalescer: Coalescer[Any, Result] = Coalescer(
            self._score_merged, window_s=settings.window_ms / 1000.0, max_items=settings.max_items
        )

    @property
    def batches(self) -> int:
        return self._coalescer.batches

    async def score(self, items: Sequence[Any]) -> list[Result]:
        if not self.enabled:
            return await self._engine.score_async(items)
        if len(items) >= self._coalescer.max_items:
            return await self._score_merged(list(items))
        return await self._coalescer.submit(items)

    async def _score_merged(self, items: list[Any]) -> list[Result]:
        if len(items) == 1:
            return await self._engine.score_async(items)
        step = self.worker_items
        pieces = [{"id": None, "items": items[i : i + step]} for i in range(0, len(items), step)]
        outcomes = await self._engine.score_groups_async(pieces)
        return [result for outcome in outcomes for result in outcome.results]

    async def aclose(self) -> None:
        """At shutdown, after the server drained its requests: what is left has no caller; stop it."""
        await self._coalescer.cancel()
