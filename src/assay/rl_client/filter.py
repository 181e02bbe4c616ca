"""Filter: rewards from Assay, without stalling generation, and without inventing scores.

The reward call runs on a background event loop (`RewardPipe`), so the trainer can generate the next
chunk of groups while Assay scores the previous one (the reward step often dominates RL step time).
Sources: `ServiceRewards` (the HTTP service through `AssayClient.ascore`, the default) and
`EngineRewards` (the in-process `assay.Engine`).

A result whose status is not `ok` leaves the sample's reward `None` and its loss weight 0: "we could not
score it" must never train the policy as "the policy was wrong" (verl and others score it 0.0).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any, Protocol

from assay.client import AssayClient
from assay.rl_client.generate import Group, Sample
from assay.scoring import Engine
from assay.types import Result, Status


class RewardSource(Protocol):
    """Anything that scores Assay items asynchronously, in order."""

    requests: int  # calls made so far (HTTP requests for the service)

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]: ...

    async def aclose(self) -> None: ...


class ServiceRewards:
    """Rewards from a running Assay service over HTTP."""

    def __init__(self, client: AssayClient) -> None:
        self.client = client
        self.requests = 0

    @classmethod
    def at(cls, url: str, **client_options: Any) -> ServiceRewards:
        return cls(AssayClient(url, **client_options))

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        self.requests += -(-len(items) // self.client.batch_size)
        return await self.client.ascore(items)

    async def aclose(self) -> None:
        await self.client.aclose()


class EngineRewards:
    """Rewards from an in-process `assay.Engine` (no server; the engine's worker pool does the work)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.requests = 0

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        self.requests += 1
        return await asyncio.to_thread(self.engine.score, items)

    async def aclose(self) -> None:
        return None


class RewardPipe:
    """Runs a reward source on its own event-loop thread; `submit` returns a future at once."""

    def __init__(self, source: RewardSource) -> None:
        self.source = source
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="assay-rewards", daemon=True)
        self._thread.start()
        self.latencies: list[float] = []  # seconds from submit to results, per call

    def submit(self, items: list[dict[str, Any]]) -> Future[list[Result]]:
        started = time.perf_counter()

        async def timed() -> list[Result]:
            try:
                return await self.source.ascore(items)
            finally:
                self.latencies.append(time.perf_counter() - started)

        return asyncio.run_coroutine_threadsafe(timed(), self._loop)

    def close(self) -> None:
        if not self._loop.is_running():
            return
        asyncio.run_coroutine_threadsafe(self.source.aclose(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop.close()


def reward_items(groups: Sequence[Group]) -> list[dict[str, Any]]:
    """One Assay item per sample, in group order. The id says which prompt and sample it is."""
    items = []
    for group in groups:
        for index, sample in enumerate(group.samples):
            items.append(
                {
                    "id": f"{group.problem.id}/{index}",
                    "task": group.problem.task,
                    "prompt": group.prompt,
                    "response": group.hint + sample.completion.text,
                    "reference": group.problem.reference,
                    **group.problem.fields,
                }
            )
            if group.problem.mix:  # expanded and combined by `mix.TaskMix` before it reaches Assay
                items[-1]["mix"] = [list(part) for part in group.problem.mix]
    return items


def apply_results(samples: Sequence[Sample], results: Sequence[Result]) -> None:
    """Attach verdicts; a non-ok verdict masks the sample (weight 0, reward None), never reward 0."""
    if len(samples) != len(results):
        raise ValueError(f"{len(results)} results for {len(samples)} samples")
    for sample, result in zip(samples, results, strict=True):
        sample.result = result
        if result.status is Status.OK and result.reward is not None:
            sample.reward = float(result.reward)
        else:
            sample.reward = None
            sample.weight = 0.0
