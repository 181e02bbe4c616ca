"""Filter: rewards from Assay, without stalling generation, and without inventing scores.

The reward call runs on a background event loop (`RewardPipe`), so the trainer can generate the next
chunk of groups while Assay scores the previous one (the reward step often dominates RL step time).
Sources: `ServiceRewards` (the HTTP service through `AssayClient.ascore_groups`, the default) and
`EngineRewards` (the in-process `assay.Engine`). Groups are scored as groups (POST /v1/groups): each comes
back with Assay's statistics (`all_equal`, `learning_value`, ...), which Control reads instead of
recomputing them. A source that only scores flat items gets the same statistics from `assay.groups`.

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
from assay.errors import ConfigError
from assay.groups import GroupOutcome, group_stats
from assay.rl_client.generate import Group, Sample
from assay.trees import TreeOutcome
from assay.types import Result, Status


class RewardSource(Protocol):
    """Anything that scores Assay items asynchronously, in order."""

    requests: int  # calls made so far (HTTP requests for the service)

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]: ...

    async def aclose(self) -> None: ...


class WrappedRewards:
    """A reward source over another (`inner`): the calls it makes are the inner source's, and closing it
    closes the inner one."""

    def __init__(self, inner: RewardSource) -> None:
        self.inner = inner

    @property
    def requests(self) -> int:
        return self.inner.requests

    @requests.setter
    def requests(self, value: int) -> None:
        self.inner.requests = value

    async def aclose(self) -> None:
        await self.inner.aclose()


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

    async def ascore_groups(self, groups: list[dict[str, Any]]) -> list[GroupOutcome]:
        self.requests += len(self.client.group_chunks(groups))
        return await self.client.ascore_groups(groups)

    async def ascore_trees(self, trees: list[dict[str, Any]]) -> list[TreeOutcome]:
        """Tree rollouts through POST /v1/trees (docs/trees.md)."""
        self.requests += len(self.client.tree_chunks(trees))
        return await self.client.ascore_trees(trees)

    async def aclose(self) -> None:
        await self.client.aclose()


class InProcessScorer(Protocol):
    """What `EngineRewards` needs of an in-process scorer: `assay.Engine` is one. The trainer names the
    shape, not the engine, so it never imports the server side (layers.toml)."""

    def score(self, raw_items: list[dict[str, Any]]) -> list[Result]: ...

    def score_groups(self, groups: list[dict[str, Any]]) -> list[GroupOutcome]: ...


class EngineRewards:
    """Rewards from an in-process `assay.Engine` (no server; the engine's worker pool does the work)."""

    def __init__(self, engine: InProcessScorer) -> None:
        self.engine = engine
        self.requests = 0

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        self.requests += 1
        return await asyncio.to_thread(self.engine.score, items)

    async def ascore_groups(self, groups: list[dict[str, Any]]) -> list[GroupOutcome]:
        self.requests += 1
        return await asyncio.to_thread(self.engine.score_groups, groups)

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

    def submit_groups(
        self, groups: Sequence[Group], shaping: dict[str, Any] | None = None
    ) -> Future[list[GroupOutcome]]:
        """Score `groups` as groups; outcomes (results and statistics) in group order. `shaping` (a
        group option, docs/length-control.md) goes with every group, and each result carries its
        `shaped_reward`; a source that cannot shape is a `ConfigError`."""
        if shaping is not None and getattr(self.source, "ascore_groups", None) is None:
            raise ConfigError(
                "shaping needs a reward source that scores groups (the Assay service or engine)"
            )
        payload = group_payload(groups, shaping)
        started = time.perf_counter()

        async def timed() -> list[GroupOutcome]:
            try:
                return await _score_groups(self.source, payload)
            finally:
                self.latencies.append(time.perf_counter() - started)

        return asyncio.run_coroutine_threadsafe(timed(), self._loop)

    def submit_trees(self, trees: list[dict[str, Any]]) -> Future[list[TreeOutcome]]:
        """Score tree rollouts (POST /v1/trees); a source without tree scoring is a `ConfigError`."""
        ascore_trees = getattr(self.source, "ascore_trees", None)
        if ascore_trees is None:
            raise ConfigError("rollout: tree needs the Assay service as reward source (it scores trees)")
        started = time.perf_counter()

        async def timed() -> list[TreeOutcome]:
            try:
                return list(await ascore_trees(trees))
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
    return [reward_item(g, i, s) for g in groups for i, s in enumerate(g.samples)]


def reward_item(group: Group, index: int, sample: Sample) -> dict[str, Any]:
    """The Assay item of `sample`, member `index` of `group` (its id: `<problem id>/<index>`)."""
    item = {
        "id": f"{group.problem.id}/{index}",
        "task": group.problem.task,
        "prompt": group.prompt,
        "response": group.hint + sample.completion.text,
        "reference": group.problem.reference,
        **group.problem.fields,
    }
    if group.problem.mix:  # expanded and combined by `mix.TaskMix` before it reaches Assay
        item["mix"] = [list(part) for part in group.problem.mix]
    return item


def group_payload(groups: Sequence[Group], shaping: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One `{"id", "items"}` per group for POST /v1/groups; the items are `reward_items`'. With `shaping`,
    each group carries it and each item its `length`, the completion's token count, and in a serial group
    (S-GRPO) its `exit_position`."""
    if shaping is None:
        return [{"id": g.problem.id, "items": reward_items([g])} for g in groups]
    return [{"id": g.problem.id, "items": _member_items(g), "shaping": shaping} for g in groups]


def _member_items(group: Group) -> list[dict[str, Any]]:
    items = [
        {**item, "length": len(s.completion.token_ids)}
        for item, s in zip(reward_items([group]), group.samples, strict=True)
    ]
    if group.exit_positions is not None:
        for item, position in zip(items, group.exit_positions, strict=True):
            item["exit_position"] = position
    return items


async def _score_groups(source: RewardSource, payload: list[dict[str, Any]]) -> list[GroupOutcome]:
    """The source's own group scoring when it has one, else flat scoring plus `assay.groups` stats."""
    ascore_groups = getattr(source, "ascore_groups", None)
    if ascore_groups is not None:
        outcomes: list[GroupOutcome] = await ascore_groups(payload)
        return outcomes
    results = await source.ascore([item for group in payload for item in group["items"]])
    out, start = [], 0
    for group in payload:
        part = results[start : start + len(group["items"])]
        start += len(part)
        responses = [item["response"] for item in group["items"]]
        out.append(GroupOutcome(id=group["id"], results=part, stats=group_stats(part, responses)))
    return out


def apply_outcomes(groups: Sequence[Group], outcomes: Sequence[GroupOutcome]) -> None:
    """Attach each group's verdicts (as `apply_results`) and Assay's statistics of the group."""
    if len(groups) != len(outcomes):
        raise ValueError(f"{len(outcomes)} scored groups for {len(groups)} groups")
    for group, outcome in zip(groups, outcomes, strict=True):
        apply_results(group.samples, outcome.results)
        group.stats = outcome.stats


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
