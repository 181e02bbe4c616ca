"""Answer clusters and the majority vote (assay.groups.clusters), on hand-built groups with a toy notion
of equivalence, so each rule of the module docstring is checked without any verifier."""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from typing import ClassVar

import pytest

from assay.groups import (
    AnswerCluster,
    ClusteringTimeout,
    Vote,
    answer_clusters,
    cluster_indices,
    cluster_keys,
    group_stats,
    majority,
)
from assay.registry import Equivalence
from assay.types import Result


class Fractions(Equivalence):
    """'a/b' answers: a key for reduced fractions, pairwise comparison by cross-multiplying otherwise."""

    available: ClassVar[bool] = True

    def __init__(self, keyed: bool = True) -> None:
        self.keyed = keyed
        self.compared: list[tuple[str, str]] = []

    def key(self, answer: str) -> Hashable | None:
        if not self.keyed:
            return None
        a, b = answer.split("/")
        return None if int(b) != 1 else int(a)  # only whole numbers get a key here

    def equivalent(self, a: str, b: str) -> bool:
        self.compared.append((a, b))
        (p, q), (r, s) = (x.split("/") for x in (a, b))
        return int(p) * int(s) == int(q) * int(r)


def test_equivalent_answers_form_one_cluster_in_order_of_first_appearance() -> None:
    answers = ["1/2", "3/1", None, "2/4", "6/2", "5/7", "3/6"]
    assert cluster_indices(answers, Fractions()) == [[0, 3, 6], [1, 4], [5]]


def test_equal_keys_are_merged_without_a_comparison() -> None:
    equivalence = Fractions()
    assert cluster_indices(["2/1", "2/1", "2/1", "4/2"], equivalence) == [[0, 1, 2, 3]]
    assert equivalence.compared == [("2/1", "4/2")]  # one bucket of three, then one pair


def test_identical_answers_without_a_key_are_one_answer_compared_once() -> None:
    equivalence = Fractions(keyed=False)
    assert cluster_indices(["1/3"] * 5 + ["2/6"], equivalence) == [[0, 1, 2, 3, 4, 5]]
    assert len(equivalence.compared) == 1


def test_comparisons_are_at_most_one_per_pair_of_representatives() -> None:
    equivalence = Fractions(keyed=False)
    answers = [f"{i}/{i + 1}" for i in range(1, 65)]  # 64 different answers
    assert len(cluster_indices(answers, equivalence)) == 64
    assert len(equivalence.compared) == 64 * 63 // 2


def test_a_key_or_comparison_that_raises_merges_nothing_but_identical_text() -> None:
    class Raises(Equivalence):
        available: ClassVar[bool] = True

        def key(self, answer: str) -> Hashable | None:
            raise ValueError(answer)

        def equivalent(self, a: str, b: str) -> bool:
            raise ValueError(a)

    assert cluster_indices(["1", "01", "1"], Raises()) == [[0, 2], [1]]


def test_clustering_past_its_budget_raises() -> None:
    ticks = itertools.count()
    with pytest.raises(ClusteringTimeout, match="longer than 3s"):
        cluster_indices([f"{i}/7" for i in range(1, 9)], Fractions(keyed=False), 3.0, lambda: next(ticks))


def test_outcome_keys_merge_equal_keys_whatever_the_text_and_leave_keyless_members_alone() -> None:
    answers = ["a", "b", None, "a", "c", "a"]
    keys: list[Hashable | None] = ["k1", "k1", "k1", None, "k2", None]
    # "a" and "b" share an outcome; the two keyless "a" stay apart; a non-member joins nothing.
    assert cluster_keys(answers, keys) == [[0, 1], [3], [4], [5]]


def _cluster(first: int, size: int, correct: bool | None) -> AnswerCluster:
    return AnswerCluster(representative=str(first), size=size, correct=correct, members=[first])


def test_the_majority_is_the_largest_cluster_and_a_tie_goes_to_the_earliest() -> None:
    assert majority([_cluster(3, 2, True), _cluster(0, 3, False)]) == _cluster(0, 3, False)
    assert majority([_cluster(4, 2, True), _cluster(1, 2, False)]) == _cluster(1, 2, False)
    assert majority([]) is None


def test_a_clusters_verdict_is_its_first_member_with_one() -> None:
    clusters = answer_clusters([[1, 3, 4], [0]], ["x", "a", "x", "b", "c"], [None, None, None, True, False])
    assert [(c.representative, c.size, c.correct, c.members) for c in clusters] == [
        ("a", 3, True, [1, 3, 4]),
        ("x", 1, None, [0]),
    ]


def test_a_string_majority_that_is_wrong_loses_to_the_equivalence_majority() -> None:
    answers = ["7/1", "7/1", "1/2", "2/4", "3/6"]  # strings: "7/1" twice, the rest once each
    verdicts = [False, False, True, True, True]
    results = [Result.verdict(v, extracted=a) for a, v in zip(answers, verdicts, strict=True)]
    clusters = answer_clusters(cluster_indices(answers, Fractions()), answers, verdicts)
    stats = group_stats(results, vote=Vote(clusters=clusters))
    assert [(c.representative, c.size, c.correct) for c in stats.answer_clusters or []] == [
        ("1/2", 3, True),
        ("7/1", 2, False),
    ]
    assert (stats.majority_answer, stats.majority_correct) == ("1/2", True)


def test_no_member_with_a_verdict_means_majority_correct_is_null() -> None:
    stats = group_stats([Result.invalid("no reference")] * 2, vote=Vote(clusters=[]))
    assert (stats.answer_clusters, stats.majority_answer, stats.majority_correct) == ([], None, None)


def test_unavailable_clusters_say_why() -> None:
    stats = group_stats([Result.verdict(True)], vote=Vote(unavailable="judge: no notion"))
    assert (stats.answer_clusters, stats.majority_correct, stats.clusters_unavailable) == (
        None,
        None,
        "judge: no notion",
    )
