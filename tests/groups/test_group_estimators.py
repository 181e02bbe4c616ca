"""Maj@K (assay.groups.estimators) against its definition: the mean over every K-subset of the n samples
of "the subset's majority answer is correct", ties broken at random (so a tie of t counts 1/t)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.groups.estimators import majority_at_k


def _by_enumeration(sizes: list[int], correct: list[bool | None], n: int, k: int) -> float:
    labels = [c for c, size in enumerate(sizes) for _ in range(size)] + [None] * (n - sum(sizes))
    total = Fraction(0)
    subsets = list(itertools.combinations(labels, k))
    for subset in subsets:
        counts = {c: subset.count(c) for c in set(subset) if c is not None}
        if not counts:
            continue
        top = max(counts.values())
        winners = [c for c, m in counts.items() if m == top]
        total += Fraction(sum(correct[c] is True for c in winners), len(winners))
    return float(total / len(subsets))


def test_hand_computed_cases() -> None:
    # Clusters {c, c} (correct), {a}, {b}; k = 2: {c,c} wins (1 subset), {c,a} and {c,b} tie (4 subsets, 1/2
    # each), {a,b} has no correct answer: (1 + 4/2) / 6 = 1/2.
    assert majority_at_k([2, 1, 1], [True, False, False], 4, 2) == pytest.approx(0.5)
    # Maj@1 is the share of correct samples; Maj@n is the whole group's vote (3 right vs 2 wrong).
    assert majority_at_k([3, 2], [True, False], 5, 1) == pytest.approx(0.6)
    assert majority_at_k([2, 3], [False, True], 5, 5) == 1.0
    # The example: the string majority is wrong, the answer majority is right, for K = n.
    assert majority_at_k([3, 2], [True, False], 5, 5) == 1.0
    # Two samples without an answer: k = 2 draws both with chance 1/C(4,2), no majority then.
    assert majority_at_k([2], [True], 4, 2) == pytest.approx(5 / 6)


@settings(deadline=None)  # the enumeration is the slow side
@given(
    st.lists(st.tuples(st.integers(1, 3), st.sampled_from([True, False, None])), min_size=1, max_size=4),
    st.integers(0, 2),
    st.data(),
)
def test_majority_at_k_is_the_mean_over_every_k_subset(
    clusters: list[tuple[int, bool | None]], unanswered: int, data: st.DataObject
) -> None:
    sizes = [s for s, _ in clusters]
    correct = [c for _, c in clusters]
    n = sum(sizes) + unanswered
    k = data.draw(st.integers(1, n))
    assert majority_at_k(sizes, correct, n, k) == pytest.approx(_by_enumeration(sizes, correct, n, k))


def test_impossible_counts_are_refused() -> None:
    with pytest.raises(ValueError, match="1 <= k <= n"):
        majority_at_k([3], [True], 2, 1)
