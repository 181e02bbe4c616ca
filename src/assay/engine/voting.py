"""A group's answer clusters and majority vote, formed beside its scoring (issue 42).

The task's equivalence (`Scorer.equivalence`) may run the verifier's comparer (sympy for math), which can
be slow on a hostile pair; a process-run task's clustering therefore runs in a worker, killable at its
deadline, like an item; any other task's in a thread under the same deadline. Whatever goes wrong (no
equivalence, a group of several tasks, the deadline, a dead worker), the group still scores: its clusters
are null and `clusters_unavailable` says why.

With `self_consistency` a member needs no verdict: an item whose result has no extracted answer (no
reference: the math task answers `invalid`) gives the answer its response states, read by the task's
equivalence, and clusters form by mutual equivalence alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable, Sequence
from functools import partial
from typing import Any

from assay.engine.running import Runner
from assay.engine.workers import failure_text, worker_scorer
from assay.errors import ItemError
from assay.groups import Vote, answer_clusters, cluster_indices
from assay.items import prepare
from assay.registry import Equivalence, Registry, Scorer
from assay.types import Item, Result, Status

# The clustering's own budget is the task's item deadline; the kill comes this much later, so a budget
# that runs out is reported by the clustering itself (which says which step ran long).
_KILL_GRACE_S = 1.0


def form_clusters(
    equivalence: Equivalence,
    context: tuple[str, dict[str, Any], dict[str, Any]],
    answers: list[str | None],
    unread: list[dict[str, Any] | None],
    budget_s: float,
    scorer: Scorer | None = None,
) -> tuple[list[str | None], list[list[int]]]:
    """(answers, clusters): `answers` with each None whose `unread` item is given read by the task, then
    the clusters' positions, by the equivalence bound to the group's `context` (task, first item,
    options) and `scorer` (in a worker: the worker's own). Runs in a worker or a thread."""
    started = time.perf_counter()
    task, first, options = context
    scorer = scorer if scorer is not None else worker_scorer(task)
    equivalence = equivalence.within(
        scorer, scorer.item_model().model_validate(first), scorer.Options.model_validate(options)
    )
    filled = list(answers)
    for index, raw in enumerate(unread):
        if raw is not None and filled[index] is None:
            try:
                filled[index] = equivalence.answer(scorer.item_model().model_validate(raw))
            except Exception:  # an answer the task cannot read is no answer
                filled[index] = None
    left = max(0.0, budget_s - (time.perf_counter() - started))
    return filled, cluster_indices(filled, equivalence, left)


def _prepared(raw_items: Sequence[Any], registry: Registry) -> list[tuple[Item, Any] | None]:
    out: list[tuple[Item, Any] | None] = []
    for raw in raw_items:
        try:
            item, scorer_cls, options = prepare(raw, registry)
        except ItemError:
            out.append(None)
            continue
        out.append((item, (scorer_cls, options)))
    return out


async def group_vote(
    runner: Runner,
    registry: Registry,
    raw_items: Sequence[Any],
    results: Sequence[Result],
    lane: Hashable,
    self_consistency: bool = False,
) -> Vote:
    """The group's clusters, or why there are none; never raises for the group's sake."""
    started = time.perf_counter()
    prepared = _prepared(raw_items, registry)
    tasks = sorted({p[0].task for p in prepared if p is not None})
    if len(tasks) > 1:
        return Vote(unavailable=f"the group mixes tasks ({', '.join(tasks)}): no one notion of equivalence")
    if not tasks:
        return Vote(clusters=[])
    scorer_cls, options = next(p[1] for p in prepared if p is not None)
    equivalence: Equivalence = scorer_cls.equivalence
    if not equivalence.available:
        return Vote(unavailable=f"{tasks[0]}: {equivalence.why_not}")
    answers = [r.extracted if r.status is Status.OK else None for r in results]
    verdicts = [r.correct if r.status is Status.OK else None for r in results]
    unread: list[dict[str, Any] | None] = [
        p[0].model_dump(mode="json") if self_consistency and p is not None and answers[i] is None else None
        for i, p in enumerate(prepared)
    ]
    item = next(p[0] for p in prepared if p is not None)
    budget = runner.deadline(scorer_cls, item, options)
    context = (item.task, item.model_dump(mode="json"), options.model_dump(mode="json"))
    try:
        filled, groups = await _cluster(
            runner, scorer_cls, context, lane, equivalence, answers, unread, budget
        )
    except Exception as exc:  # the deadline, a dead worker, no slot: the group scores without clusters
        reason = "no clusters within the deadline" if isinstance(exc, TimeoutError) else failure_text(exc)
        return Vote(unavailable=reason, elapsed_ms=(time.perf_counter() - started) * 1000.0)
    return Vote(
        clusters=answer_clusters(groups, filled, verdicts),
        elapsed_ms=(time.perf_counter() - started) * 1000.0,
    )


async def _cluster(
    runner: Runner,
    scorer_cls: type[Scorer],
    context: tuple[str, dict[str, Any], dict[str, Any]],
    lane: Hashable,
    equivalence: Equivalence,
    answers: list[str | None],
    unread: list[dict[str, Any] | None],
    budget: float,
) -> tuple[list[str | None], list[list[int]]]:
    if sum(a is not None for a in answers) <= 1 and not any(unread):  # nothing to compare
        return answers, [[i] for i, a in enumerate(answers) if a is not None]
    if scorer_cls.runs_in == "process" and runner.pool is not None:
        args = (equivalence, context, answers, unread, budget)
        return await runner.call_in_worker(form_clusters, args, budget + _KILL_GRACE_S, lane)
    scorer = runner.scorers(scorer_cls)
    work = partial(form_clusters, equivalence, context, answers, unread, budget, scorer)
    call = asyncio.get_running_loop().run_in_executor(runner.threads, work)
    return await asyncio.wait_for(call, budget + _KILL_GRACE_S)
