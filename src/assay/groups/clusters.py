"""Answer clusters and the majority vote of a group, with equivalence judged by the task (issue 42).

Majority voting (self-consistency, Wang et al. 2022, "Self-Consistency Improves Chain of Thought Reasoning
in Language Models"; Maj@K in DeepSeekMath, Shao et al. 2024) counts answers, not strings: `1/2`, `0.5`
and `\\frac12` are one answer, and a vote over strings hands the majority to two identical wrong strings
over three spellings of the right one. Members are merged when the task's own verifier judges their
extracted answers equivalent (`assay.registry.Equivalence`: a canonical key first, pairwise comparison
only among what the keys left apart and the signatures did not).

The rules, stated once here and in docs/voting.md:

- Members: the items scored `ok` with an extracted answer; with `self_consistency` (no reference needed),
  also every item whose response gives an answer the task can read without one.
- Merging: answers with equal keys (or identical text) are one answer; then each remaining answer joins the
  first cluster, in order of appearance, whose representative it is equivalent to (leader clustering:
  deterministic, at most one comparison per pair of representatives, none where the signatures differ).
  The task's equivalence is first told which answers scoring judged wrong (`Equivalence.judged_wrong`):
  it may compare two of those by a cheaper standard (sql: results on the item's database alone).
- A cluster's `representative` is its first member's answer; its `correct` is the verdict of its first
  member that has one (null when none has: self-consistency without references).
- Order and ties: clusters by size, largest first; among equal sizes, the one whose first member comes
  earliest in the group. The majority is the first cluster, so a tie goes to the answer given first
  (self-consistency leaves ties unspecified; a fixed rule keeps a verdict reproducible).
- `majority_correct` is the majority cluster's `correct`: null when no member is `ok` with a verdict.
- A task judged by outcome (`Equivalence.by_outcome`: code) merges members with equal keys of their scored
  results and nothing else; a member without such a key is a cluster of its own.
- Clustering never fails a group: past its budget, or when the task has no notion of equivalence, the
  clusters are null with the reason in `clusters_unavailable`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence

from pydantic import BaseModel, Field

from assay.registry.equivalence import Equivalence


class ClusteringTimeout(Exception):
    """Clustering ran past its budget; the group reports its clusters as unavailable."""


class AnswerCluster(BaseModel):
    """One answer of a group: the members whose answers the task judges equivalent."""

    representative: str = Field(description="The answer of the cluster's first member, as extracted.")
    size: int = Field(description="Members in the cluster.")
    correct: bool | None = Field(
        description="The verdict of the cluster's first member that has one; null when none has."
    )
    members: list[int] = Field(description="Positions of the members in the group, ascending.")


class Vote(BaseModel):
    """A group's clusters, or why there are none (what the engine hands `group_stats`)."""

    clusters: list[AnswerCluster] | None = None
    unavailable: str | None = None
    elapsed_ms: float = 0.0


def _safe_key(equivalence: Equivalence, answer: str) -> Hashable:
    try:
        key = equivalence.key(answer)
    except Exception:  # a key the task cannot compute is no key: the pair is compared instead
        key = None
    return ("key", key) if key is not None else ("text", answer)


def _safe_signature(equivalence: Equivalence, answer: str) -> Hashable | None:
    try:
        return equivalence.signature(answer)
    except ClusteringTimeout:  # the task's own deadline: the clusters are unavailable, not wrong
        raise
    except Exception:  # no signature: compared with every answer
        return None


def _apart(a: Hashable | None, b: Hashable | None) -> bool:
    """Different signatures: the pair needs no comparison."""
    return a is not None and b is not None and a != b


def _safe_equivalent(equivalence: Equivalence, a: str, b: str) -> bool:
    try:
        return bool(equivalence.equivalent(a, b))
    except ClusteringTimeout:
        raise
    except Exception:  # a comparison that fails merges nothing
        return False


def cluster_indices(
    answers: Sequence[str | None],
    equivalence: Equivalence,
    budget_s: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> list[list[int]]:
    """Positions of the answers grouped into clusters (see the module docstring), in order of each
    cluster's first member; None answers belong to none. Raises ClusteringTimeout past `budget_s`."""
    give_up = clock() + budget_s if budget_s is not None else None
    buckets: dict[Hashable, list[int]] = {}
    for index, answer in enumerate(answers):
        if answer is not None:
            buckets.setdefault(_safe_key(equivalence, answer), []).append(index)
            if give_up is not None and clock() > give_up:
                raise ClusteringTimeout(f"the answers' keys took longer than {budget_s:g}s")
    clusters: list[tuple[list[int], Hashable | None]] = []  # members, the leader's signature
    for members in buckets.values():  # dicts keep insertion order: by first appearance
        answer = answers[members[0]]
        assert answer is not None
        signature = _safe_signature(equivalence, answer) if len(buckets) > 1 else None
        for cluster, leader_signature in clusters:
            if give_up is not None and clock() > give_up:
                raise ClusteringTimeout(f"comparing answers took longer than {budget_s:g}s")
            leader = answers[cluster[0]]
            assert leader is not None
            if not _apart(signature, leader_signature) and _safe_equivalent(equivalence, leader, answer):
                cluster.extend(members)
                break
        else:
            clusters.append((list(members), signature))
    return [sorted(c) for c, _ in clusters]


def cluster_keys(answers: Sequence[str | None], keys: Sequence[Hashable | None]) -> list[list[int]]:
    """Clusters by outcome keys (`Equivalence.by_outcome`), in order of each cluster's first member:
    equal keys are one cluster, a member without a key (one that erred or ran out of time on a test) is a
    cluster of its own; None answers belong to none. Nothing is compared, whatever the text says."""
    buckets: dict[Hashable, list[int]] = {}
    for index, (answer, key) in enumerate(zip(answers, keys, strict=True)):
        if answer is not None:
            buckets.setdefault(("key", key) if key is not None else ("alone", index), []).append(index)
    return list(buckets.values())


def answer_clusters(
    groups: Sequence[Sequence[int]], answers: Sequence[str | None], verdicts: Sequence[bool | None]
) -> list[AnswerCluster]:
    """The clusters of `cluster_indices`, largest first, ties to the earliest first member."""
    out = []
    for members in groups:
        first = min(members)
        answer = answers[first]
        assert answer is not None
        correct = next((verdicts[i] for i in sorted(members) if verdicts[i] is not None), None)
        out.append(
            AnswerCluster(representative=answer, size=len(members), correct=correct, members=sorted(members))
        )
    return sorted(out, key=lambda c: (-c.size, c.members[0]))


def majority(clusters: Sequence[AnswerCluster]) -> AnswerCluster | None:
    """The majority answer: the largest cluster, a tie to the earliest first member; None when empty."""
    return min(clusters, key=lambda c: (-c.size, c.members[0]), default=None)
