"""The group path (POST /v1/groups): a group's items scored together where that saves work.

A group's process-run items (math, sql) go to one worker task: one round trip instead of G, and the items
share that worker's caches (the math gold is parsed once per reference). Whatever that task cannot answer
(no slot in time, a dead worker) and every other item takes the per-item path, so a group's results are
exactly those the items would get one by one. Statistics come from `assay.groups`; a group's `shaping` or
`rubric` option turns its verdicts into each result's `shaped_reward` (assay.groups.shaping) after
scoring, from the member fields (`length`, `exit_position`, `tool_calls`) taken off the items before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any

from assay.engine.running import Job, Runner
from assay.errors import ItemError
from assay.groups import GroupOutcome, GroupResult, group_parts, group_stats, responses_of
from assay.groups.members import Member, ShapingInputError, take_member_fields
from assay.groups.shaping import AdaptThink, SolveRates, parse_options, shape
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
        parsed = [group_parts(index, group) for index, group in enumerate(groups)]
        options = [parse_options(index, group) for index, group in enumerate(groups)]
        split = [[take_member_fields(raw) for raw in items] for _, items in parsed]
        scored = await asyncio.gather(*(self._group([i for i, _ in s], lane) for s in split))
        outcomes = []
        for (gid, _), spec, members, results in zip(parsed, options, split, scored, strict=True):
            items = [item for item, _ in members]
            stats = group_stats(results, responses_of(items))
            if spec is None:
                outcomes.append(GroupOutcome(id=gid, results=results, stats=stats))
                continue
            group = [
                Member(result, text, extras)
                for result, text, (_, extras) in zip(results, responses_of(items), members, strict=True)
            ]
            reference, problem = await self._reference(spec, gid, items)
            rewards, stats.shaping, shaped = shape(spec, group, reference)
            if problem is not None:
                stats.shaping.error = problem
            outcomes.append(
                GroupOutcome(
                    id=gid,
                    results=[
                        GroupResult(**dict(r), shaped_reward=w) for r, w in zip(shaped, rewards, strict=True)
                    ],
                    stats=stats,
                )
            )
        return outcomes

    async def _reference(
        self, spec: Any, gid: str | None, items: Sequence[Any]
    ) -> tuple[float | None, str | None]:
        """(adapt_think's reference accuracy, or why there is none); the file is read off the loop."""
        if not isinstance(spec, AdaptThink):
            return None, None
        if spec.reference_accuracy is not None:
            return spec.reference_accuracy, None
        prompts = [i.get("prompt") for i in items if isinstance(i, dict) and isinstance(i.get("prompt"), str)]
        try:
            found = await asyncio.to_thread(
                self._solve_rates.accuracy,
                spec.reference_accuracy_file or "",
                gid,
                prompts[0] if prompts else None,
            )
        except ShapingInputError as exc:
            return None, str(exc)
        return found, None

    async def _group(self, raw_items: Sequence[Any], lane: Hashable) -> list[Result]:
        shared: list[tuple[int, Item, float]] = []  # (position, item, its own deadline)
        jobs: list[Job] = []
        for index, raw in enumerate(raw_items):
            try:
                item, scorer_cls, options = prepare(raw, self._registry)
            except ItemError:
                continue  # the per-item path gives it its `invalid` result
            if scorer_cls.runs_in == "process":
                shared.append((index, item, self._runner.deadline(scorer_cls, item, options)))
                jobs.append((item.task, item.model_dump(mode="json"), options.model_dump(mode="json")))
        results: list[Result | None] = [None] * len(raw_items)
        if len(jobs) > 1:
            # Twice the longest item deadline for the whole task: a group of quick items fits easily;
            # a slow one is rescored alone below, under its own deadline.
            batch = await self._runner.run_many_in_worker(jobs, 2.0 * max(d for _, _, d in shared), lane)
            for (index, item, deadline), result in zip(shared, batch or [], strict=False):
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
        return [r for r in results if r is not None]
