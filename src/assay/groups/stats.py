"""Statistics over a group: the G scored responses a GRPO/DAPO trainer samples for one prompt.

The trainer's Control stage needs to know whether a group can teach anything. What is computed, and why:

- `all_equal`: every `ok` item has the same raw score, so every advantage is zero (DAPO drops such
  groups). The raw score is `correct` where the task gives one, else the reward, and equality is exact:
  float tolerance would call a graded group with a real spread constant, and shaped rewards would call a
  constant group informative (filter on raw correctness, never on a shaped reward).
- `learning_value`: 4 * Var(raw score) clipped to [0, 1]. For binary correctness with pass rate p this is
  4p(1-p): 0 for a solved or hopeless prompt, 1 at p = 0.5, where VCRL finds a prompt most useful. For
  graded rewards in [0, 1] it is the variance scaled by its largest possible value (1/4).
- `pass_at_k`: the unbiased estimator 1 - C(n-c, k) / C(n, k) of Chen et al. (2021) over the items with a
  bool `correct` (n of them, c correct), for k = 1, 2, 4, ... up to n, and n itself.
- `distinct_answers` (distinct `extracted` values) and `duplicate_responses` (responses identical to an
  earlier one): exploration collapse shows here before it shows in the reward.
- Response length mean and max, in characters (the server sees text, not tokens).
- `answer_clusters`, `majority_answer`, `majority_correct`: the group's answers merged by the task's own
  equivalence and its majority vote (`assay.groups.clusters`, issue 42); `maj_at_k`, the unbiased Maj@k
  over them (`assay.groups.estimators`); `clusters_unavailable` says why there are none.

Reward statistics count only `ok` items: an item we could not score is neither right nor wrong. Response
statistics count every item that carries a response.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from assay.groups.clusters import AnswerCluster, Vote, majority
from assay.groups.estimators import majority_at_k
from assay.groups.members import ShapingStats
from assay.types import Result, Status


class GroupStats(BaseModel):
    """What `POST /v1/groups` reports about one group."""

    n: int = Field(description="Items in the group.")
    n_scored: int = Field(description="Items scored `ok`; the reward statistics are over these.")
    n_correct: int = Field(0, description="Items with `correct: true`.")
    mean: float | None = Field(None, description="Mean reward of the ok items (null when none).")
    std: float | None = Field(None, description="Population standard deviation of the ok rewards.")
    all_equal: bool = Field(
        description="Every ok item has the same raw score (exact), so every advantage is zero."
    )
    pass_at_k: dict[str, float] = Field(
        default_factory=dict,
        description="Unbiased pass@k for k = 1, 2, 4, ... up to n and n itself (empty for graded tasks).",
    )
    learning_value: float = Field(
        description="4 * variance of the raw scores, in [0, 1]: 4p(1-p) for pass rate p; 1 at p = 0.5."
    )
    distinct_answers: int = Field(0, description="Distinct `extracted` answers among the ok items.")
    duplicate_responses: int = Field(0, description="Responses identical to an earlier one in the group.")
    response_length_mean: float | None = Field(None, description="Mean response length in characters.")
    response_length_max: int | None = Field(None, description="Longest response in characters.")
    shaping: ShapingStats | None = Field(
        None, description="With a group's shaping or rubric: the quantities used (assay.groups.shaping)."
    )
    answer_clusters: list[AnswerCluster] | None = Field(
        None,
        description="Answers merged when the task judges them equivalent, largest first (ties: earliest"
        " first member); null when unavailable (see `clusters_unavailable`).",
    )
    majority_answer: str | None = Field(None, description="The majority cluster's representative.")
    majority_correct: bool | None = Field(
        None, description="Whether the majority answer is correct; null when no member is ok with a verdict."
    )
    maj_at_k: dict[str, float] = Field(
        default_factory=dict,
        description="Unbiased Maj@k over the answer clusters for k = 1, 2, 4, ... up to n and n itself (ok"
        " members and ok items without an answer; empty when no cluster has a verdict).",
    )
    clusters_unavailable: str | None = Field(None, description="Why there are no answer clusters.")
    clusters_ms: float | None = Field(None, description="Time spent forming the answer clusters.")


def raw_score(result: Result) -> float | None:
    """`correct` as 0/1 where the task gives it, else the reward; None unless the result is ok."""
    if result.status is not Status.OK or result.reward is None:
        return None
    return float(result.correct) if result.correct is not None else float(result.reward)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct (Chen et al. 2021, "Evaluating Large
    Language Models Trained on Code"), computed exactly on integers."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def _ks(n: int) -> list[int]:
    ks = [1 << i for i in range(n.bit_length()) if 1 << i <= n]
    return ks + ([n] if n and ks[-1] != n else [])


def learning_value(scores: Sequence[float]) -> float:
    """4 * population variance, clipped to [0, 1] (see the module docstring)."""
    if len(scores) < 2:
        return 0.0
    return min(1.0, 4.0 * statistics.pvariance(scores))


def group_stats(
    results: Sequence[Result], responses: Sequence[str | None] | None = None, vote: Vote | None = None
) -> GroupStats:
    """Statistics of one group's results; `responses` (same order) feed the length and duplicate counts;
    `vote`, the answer clusters the engine formed (assay.groups.clusters)."""
    ok = [r for r in results if r.status is Status.OK and r.reward is not None]
    rewards = [float(r.reward) for r in ok if r.reward is not None]
    scores = [s for s in (raw_score(r) for r in ok) if s is not None]
    verdicts = [r.correct for r in ok if r.correct is not None]
    n_correct = sum(verdicts)
    texts = [t for t in (responses or []) if isinstance(t, str)]
    lengths = [len(t) for t in texts]
    return GroupStats(
        n=len(results),
        n_scored=len(ok),
        n_correct=n_correct,
        mean=statistics.fmean(rewards) if rewards else None,
        std=statistics.pstdev(rewards) if rewards else None,
        all_equal=len(set(scores)) <= 1,
        pass_at_k={str(k): pass_at_k(len(verdicts), n_correct, k) for k in _ks(len(verdicts))},
        learning_value=learning_value(scores),
        distinct_answers=len({r.extracted for r in ok if r.extracted is not None}),
        duplicate_responses=len(texts) - len(set(texts)),
        response_length_mean=statistics.fmean(lengths) if lengths else None,
        response_length_max=max(lengths) if lengths else None,
        **_vote_fields(vote, results),
    )


def _maj_at_k(clusters: Sequence[AnswerCluster], results: Sequence[Result]) -> dict[str, float]:
    """Maj@k over the clusters' members and the ok items that gave no answer (they never vote)."""
    if all(c.correct is None for c in clusters):
        return {}
    members = {i for c in clusters for i in c.members}
    unanswered = sum(r.status is Status.OK and i not in members for i, r in enumerate(results))
    n = len(members) + unanswered
    sizes, verdicts = [c.size for c in clusters], [c.correct for c in clusters]
    return {str(k): majority_at_k(sizes, verdicts, n, k) for k in _ks(n)}


def _vote_fields(vote: Vote | None, results: Sequence[Result]) -> dict[str, object]:
    if vote is None:
        return {}
    if vote.clusters is None:
        return {"clusters_unavailable": vote.unavailable, "clusters_ms": vote.elapsed_ms}
    top = majority(vote.clusters)
    return {
        "clusters_ms": vote.elapsed_ms,
        "maj_at_k": _maj_at_k(vote.clusters, results),
        "answer_clusters": vote.clusters,
        "majority_answer": top.representative if top else None,
        "majority_correct": top.correct if top else None,
    }


class GroupResult(Result):
    """A result on the group path: the item's Result plus the reward group shaping gave it."""

    shaped_reward: float | None = Field(
        None, description="The shaped or composed reward; null without shaping or when the item is not ok."
    )


class GroupOutcome(BaseModel):
    """One scored group: its id, its results in item order, and their statistics."""

    id: str | None = None
    results: list[GroupResult]
    stats: GroupStats

    @field_validator("results", mode="before")
    @classmethod
    def _as_group_results(cls, value: Any) -> Any:
        """Plain Results (a group scored without shaping) become GroupResults with no shaped reward."""
        if not isinstance(value, list):
            return value
        return [dict(r) if type(r) is Result else r for r in value]
