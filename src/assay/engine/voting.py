"""A group's answer clusters and majority vote, formed beside its scoring (issue 42).

The task's equivalence (`Scorer.equivalence`) may run the verifier's comparer (sympy for math), which can
be slow on a hostile pair; a process-run task's clustering therefore runs in a worker, killable at its
deadline, like an item; any other task's in a thread under the same deadline. Whatever goes wrong (no
equivalence, a group of several tasks, the deadline, a dead worker), the group still scores: its clusters
are null and `clusters_unavailable` says why.

Where the cost goes (benchmarks/group_clusters.py): a group of quick math items scores in a few ms, and a
separate worker round trip for its clusters cost 20-48% of that. So a process-run group's clusters are
formed in the worker task that scored its items (`then_cluster`): no second round trip, no second parse
of the items, and the worker's caches still hold every answer's parse and sympy form from scoring. The
engine keeps those clusters only when the answers it finally holds are the ones they were formed from (a
review or a deadline may change a result); otherwise, or when that task ran out of time, it forms them
the separate way. A task judged by what scoring produced (`Equivalence.by_outcome`: the code task's
outputs on its tests) clusters in place, from its results' keys, with nothing compared or run.

With `self_consistency` a member needs no verdict: an item whose result has no extracted answer (no
reference: the math task answers `invalid`) gives the answer its response states, read by the task's
equivalence, and clusters form by mutual equivalence alone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from assay.engine.running import Job, Runner
from assay.engine.workers import Then, failure_text, worker_scorer
from assay.groups import Vote, answer_clusters, cluster_indices, cluster_keys
from assay.registry import Equivalence, Scorer
from assay.types import Item, Result, Status, TaskOptions

# The clustering's own budget is the task's item deadline; the kill comes this much later, so a budget
# that runs out is reported by the clustering itself (which says which step ran long).
_KILL_GRACE_S = 1.0

Context = tuple[str, dict[str, Any], dict[str, Any]]  # (task, first item, options) as JSON
Prepared = tuple[Item, type[Scorer], TaskOptions] | None  # per group position; None: the item is invalid


@dataclass(frozen=True)
class Early:
    """Clusters formed in the worker task that scored a group's items (`then_cluster`), with the answers
    they were formed from, by group position."""

    answers: list[str | None]
    verdicts: list[bool | None]
    reading: list[bool]  # positions whose item was read for its answer (self-consistency)
    filled: list[str | None]
    groups: list[list[int]]
    elapsed_ms: float

    def fits(
        self, answers: Sequence[str | None], verdicts: Sequence[bool | None], reading: Sequence[bool]
    ) -> bool:
        """Whether these clusters were formed from `answers` and `verdicts` (the engine's, after reviews
        and deadlines), with the same items read for theirs: only then are they the clusters of the group."""
        return (
            self.answers == list(answers)
            and self.verdicts == list(verdicts)
            and self.reading == list(reading)
        )

    @classmethod
    def at(cls, positions: Sequence[int], size: int, formed: Any) -> Early | None:
        """`formed` (what `then_cluster` returned over a batch) by the group positions of the batch."""
        if formed is None:
            return None
        answers, verdicts, reading, filled, groups, elapsed_ms = formed

        def spread(values: Sequence[Any], blank: Any) -> list[Any]:
            out = [blank] * size
            for batch_index, position in enumerate(positions):
                out[position] = values[batch_index]
            return out

        return cls(
            answers=spread(answers, None),
            verdicts=spread(verdicts, None),
            reading=spread(reading, False),
            filled=spread(filled, None),
            groups=[[positions[i] for i in group] for group in groups],
            elapsed_ms=elapsed_ms,
        )


def form_clusters(
    equivalence: Equivalence,
    context: Context,
    answers: list[str | None],
    verdicts: Sequence[bool | None],
    unread: list[dict[str, Any] | None],
    budget_s: float,
    scorer: Scorer | None = None,
) -> tuple[list[str | None], list[list[int]]]:
    """(answers, clusters): `answers` with each None whose `unread` item is given read by the task, then
    the clusters' positions, by the equivalence bound to the group's `context` (task, first item,
    options) and `scorer` (in a worker: the worker's own), told which answers scoring judged wrong
    (`verdicts`, by position). Runs in a worker or a thread."""
    started = time.perf_counter()
    task, first, options = context
    scorer = scorer if scorer is not None else worker_scorer(task)
    bound = equivalence.within(
        scorer, scorer.item_model().model_validate(first), scorer.Options.model_validate(options)
    )
    bound.judged_wrong(_judged_wrong(answers, verdicts))
    filled = list(answers)
    for index, raw in enumerate(unread):
        if raw is not None and filled[index] is None:
            try:  # read by the task's own equivalence: a group's binding need not know how to read one
                filled[index] = equivalence.answer(scorer.item_model().model_validate(raw))
            except Exception:  # an answer the task cannot read is no answer
                filled[index] = None
    left = max(0.0, budget_s - (time.perf_counter() - started))
    return filled, cluster_indices(filled, bound, left)


def _judged_wrong(answers: Sequence[str | None], verdicts: Sequence[bool | None]) -> frozenset[str]:
    """The answers some member holds with a wrong verdict and none with a right one."""
    held = list(zip(answers, verdicts, strict=True))
    right = {answer for answer, verdict in held if verdict is True}
    return frozenset(a for a, verdict in held if a is not None and verdict is False and a not in right)


def then_cluster(
    equivalence: Equivalence,
    context: Context,
    self_consistency: bool,
    budget_s: float,
    batch_deadline_s: float,
    jobs: list[Job],
    scored: list[dict[str, Any]],
    elapsed_s: float,
    scorer: Scorer | None = None,
) -> tuple[list[str | None], list[bool | None], list[bool], list[str | None], list[list[int]], float] | None:
    """In the worker that just scored a group's items (`scorer`: that worker's own unless given):
    (answers, verdicts, reading, filled, clusters, ms) over the batch, or None (out of time, or anything
    failed) so the engine forms them the separate way. Its budget ends a grace before the batch's deadline; a
    comparison that hangs past it costs the batch, whose items are then scored one by one."""
    started = time.perf_counter()
    answers = [r.get("extracted") if r.get("status") == Status.OK.value else None for r in scored]
    verdicts = [r.get("correct") if r.get("status") == Status.OK.value else None for r in scored]
    unread = [
        job[1] if self_consistency and answer is None else None
        for job, answer in zip(jobs, answers, strict=True)
    ]
    left = min(budget_s, batch_deadline_s - elapsed_s - _KILL_GRACE_S)
    if left <= 0:
        return None
    try:
        filled, groups = form_clusters(equivalence, context, answers, verdicts, unread, left, scorer)
    except Exception:  # ClusteringTimeout or worse: the separate path retries, under its own budget
        return None
    reading = [raw is not None for raw in unread]
    return answers, verdicts, reading, filled, groups, (time.perf_counter() - started) * 1000.0


def batch_clustering(
    runner: Runner, prepared: Sequence[Prepared], self_consistency: bool, batch_deadline_s: float
) -> Then | None:
    """What the worker scoring a group's items runs after them (`then_cluster`), or None where the
    group's clusters cannot be formed there (several tasks, no equivalence, one judged by outcome)."""
    present = [p for p in prepared if p is not None]
    if not present or len({p[0].task for p in present}) > 1:
        return None
    item, scorer_cls, options = present[0]
    equivalence = scorer_cls.equivalence
    if not equivalence.available or equivalence.by_outcome or scorer_cls.runs_in != "process":
        return None
    context = (item.task, item.model_dump(mode="json"), options.model_dump(mode="json"))
    budget = runner.deadline(scorer_cls, item, options)
    return partial(then_cluster, equivalence, context, self_consistency, budget, batch_deadline_s)


async def group_vote(
    runner: Runner,
    prepared: Sequence[Prepared],
    results: Sequence[Result],
    lane: Hashable,
    self_consistency: bool = False,
    early: Early | None = None,
) -> Vote:
    """The group's clusters, or why there are none; never raises for the group's sake. `early`: the
    clusters its items' worker formed, kept when they were formed from the answers held now."""
    started = time.perf_counter()

    def elapsed_ms() -> float:
        return (time.perf_counter() - started) * 1000.0

    tasks = sorted({p[0].task for p in prepared if p is not None})
    if len(tasks) > 1:
        return Vote(unavailable=f"the group mixes tasks ({', '.join(tasks)}): no one notion of equivalence")
    if not tasks:
        return Vote(clusters=[])
    item, scorer_cls, options = next(p for p in prepared if p is not None)
    equivalence: Equivalence = scorer_cls.equivalence
    if not equivalence.available:
        return Vote(unavailable=f"{tasks[0]}: {equivalence.why_not}")
    answers = [r.extracted if r.status is Status.OK else None for r in results]
    verdicts = [r.correct if r.status is Status.OK else None for r in results]
    if equivalence.by_outcome:
        groups = cluster_keys(answers, [_outcome_key(equivalence, r) for r in results])
        return Vote(clusters=answer_clusters(groups, answers, verdicts), elapsed_ms=elapsed_ms())
    reading = [self_consistency and p is not None and answers[i] is None for i, p in enumerate(prepared)]
    if early is not None and early.fits(answers, verdicts, reading):
        clusters = answer_clusters(early.groups, early.filled, verdicts)
        return Vote(clusters=clusters, elapsed_ms=early.elapsed_ms + elapsed_ms())
    unread: list[dict[str, Any] | None] = [
        p[0].model_dump(mode="json") if p is not None and read else None
        for p, read in zip(prepared, reading, strict=True)
    ]
    budget = runner.deadline(scorer_cls, item, options)
    context = (item.task, item.model_dump(mode="json"), options.model_dump(mode="json"))
    try:
        filled, groups = await _cluster(
            runner, scorer_cls, context, lane, equivalence, answers, verdicts, unread, budget
        )
    except Exception as exc:  # the deadline, a dead worker, no slot: the group scores without clusters
        reason = "no clusters within the deadline" if isinstance(exc, TimeoutError) else failure_text(exc)
        return Vote(unavailable=reason, elapsed_ms=elapsed_ms())
    return Vote(clusters=answer_clusters(groups, filled, verdicts), elapsed_ms=elapsed_ms())


def _outcome_key(equivalence: Equivalence, result: Result) -> Hashable | None:
    try:
        return equivalence.outcome_key(result)
    except Exception:  # a key the task cannot read: the member stays alone
        return None


async def _cluster(
    runner: Runner,
    scorer_cls: type[Scorer],
    context: Context,
    lane: Hashable,
    equivalence: Equivalence,
    answers: list[str | None],
    verdicts: list[bool | None],
    unread: list[dict[str, Any] | None],
    budget: float,
) -> tuple[list[str | None], list[list[int]]]:
    if sum(a is not None for a in answers) <= 1 and not any(unread):  # nothing to compare
        return answers, [[i] for i, a in enumerate(answers) if a is not None]
    if scorer_cls.runs_in == "process" and runner.pool is not None:
        args = (equivalence, context, answers, verdicts, unread, budget)
        return await runner.call_in_worker(form_clusters, args, budget + _KILL_GRACE_S, lane)
    scorer = runner.scorers(scorer_cls)
    work = partial(form_clusters, equivalence, context, answers, verdicts, unread, budget, scorer)
    call = asyncio.get_running_loop().run_in_executor(runner.threads, work)
    return await asyncio.wait_for(call, budget + _KILL_GRACE_S)
