"""The group path (POST /v1/groups): a group's items scored together where that saves work.

A group's process-run items (math, sql) go to one worker task: one round trip instead of G, and the items
share that worker's caches (the math gold is parsed once per reference). Whatever that task cannot answer
(no slot in time, a dead worker) and every other item takes the per-item path, so a group's results are
exactly those the items would get one by one. Statistics come from `assay.groups`; answer clusters and
the majority vote from `assay.engine.voting`; a group's `shaping` or `rubric` option turns its verdicts
into each result's `shaped_reward` (assay.groups.shaping) after scoring, from the member fields
(`length`, `exit_position`, `tool_calls`) taken off the items before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any

from assay.engine.running import Job, Runner
from assay.engine.voting import Early, Prepared, batch_clustering, group_vote
from assay.errors import ItemError
from assay.groups import GroupOutcome
from assay.groups.shaping import AdaptThink, SolveRates, group_outcome, shaping_parts
from assay.items import prepare
from assay.registry import Registry
from assay.types import Item, Result

ScoreItems = Callable[[Sequence[Any], Hashable], Awaitable[list[Result]]]
Review = Callable[[Item, Result], Awaitable[Result]]
Finish = Callable[[Any, Result, float], Result]


class GroupPath:
    """Scores groups through the engine's runner, reviews and per-item path (`score_items`)."""

    def __init__(
        self,
        registry: Registry,
        runner: Runner,
        review: Review,
        finish: Finish,
        score_items: ScoreItems,
        solve_rates: SolveRates | None = None,
    ) -> None:
        self._registry = registry
        self._runner = runner
        self._review = review
        self._finish = finish
        self._score_items = score_items
        self._solve_rates = solve_rates if solve_rates is not None else SolveRates(None)

    async def score(self, groups: Sequence[Any], lane: Hashable) -> list[GroupOutcome]:
        """Each group's results in item order, with its statistics; the groups of one call share a lane.
        A malformed group or shaping option raises ItemError before anything is scored."""
        parsed = [shaping_parts(index, group) for index, group in enumerate(groups)]
        voting = [isinstance(group, dict) and group.get("self_consistency") is True for group in groups]
        scored = await asyncio.gather(
            *(
                self._group([i for i, _ in s], lane, vote)
                for (_, _, s), vote in zip(parsed, voting, strict=True)
            )
        )
        votes = await asyncio.gather(
            *(
                group_vote(self._runner, prepared, results, lane, vote, early)
                for (results, prepared, early), vote in zip(scored, voting, strict=True)
            )
        )
        outcomes = []
        for (gid, spec, split), (results, _, _), vote in zip(parsed, scored, votes, strict=True):
            args = (gid, spec, split, results, self._solve_rates, vote)
            if isinstance(spec, AdaptThink) and spec.reference_accuracy_file is not None:  # reads a file
                outcomes.append(await asyncio.to_thread(group_outcome, *args))
            else:
                outcomes.append(group_outcome(*args))
        return outcomes

    async def _group(
        self, raw_items: Sequence[Any], lane: Hashable, self_consistency: bool
    ) -> tuple[list[Result], list[Prepared], Early | None]:
        """The group's results, its items as prepared, and the clusters the worker that scored its
        process-run items formed right after them (None when it did not)."""
        prepared: list[Prepared] = []
        shared: list[tuple[int, Item, float]] = []  # (position, item, its own deadline)
        jobs: list[Job] = []
        for index, raw in enumerate(raw_items):
            try:
                item, scorer_cls, options = prepare(raw, self._registry)
            except ItemError:
                prepared.append(None)
                continue  # the per-item path gives it its `invalid` result
            prepared.append((item, scorer_cls, options))
            if scorer_cls.runs_in == "process":
                shared.append((index, item, self._runner.deadline(scorer_cls, item, options)))
                jobs.append((item.task, item.model_dump(mode="json"), options.model_dump(mode="json")))
        results: list[Result | None] = [None] * len(raw_items)
        early = None
        if len(jobs) > 1:
            # Twice the longest item deadline for the whole task: a group of quick items fits easily;
            # a slow one is rescored alone below, under its own deadline.
            batch_deadline = 2.0 * max(d for _, _, d in shared)
            then = batch_clustering(self._runner, prepared, self_consistency, batch_deadline)
            batch = await self._runner.run_many_in_worker(jobs, batch_deadline, lane, then)
            scored, formed = batch if batch is not None else ([], None)
            early = Early.at([index for index, _, _ in shared], len(raw_items), formed)
            for (index, item, deadline), result in zip(shared, scored, strict=False):
                if result.elapsed_ms > deadline * 1000.0:  # as the per-item path would have answered
                    result = Result.timeout(
                        f"no verdict within the {deadline:g}s deadline", elapsed_ms=result.elapsed_ms
                    )
                result = await self._review(item, result)
                results[index] = self._finish(raw_items[index], result, result.elapsed_ms)
        rest = [i for i, r in enumerate(results) if r is None]
        for index, result in zip(
            rest, await self._score_items([raw_items[i] for i in rest], lane), strict=True
        ):
            results[index] = result
        return [r for r in results if r is not None], prepared, early
