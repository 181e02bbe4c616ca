"""Unbiased Pass@K and Maj@K from n samples of one prompt (issue 42's evaluation).

Pass@K (Chen et al. 2021): at least one of K samples is correct; `stats.pass_at_k` is its estimator.
Maj@K (DeepSeekMath, Shao et al. 2024, section 5.2.2; self-consistency, Wang et al. 2022): the majority
answer of K samples is correct. Drawing K of the n samples uniformly without replacement, the estimator
is the exact mean over all C(n, K) subsets of "the subset's majority cluster is correct", computed by
counting, not sampling: for each correct cluster c and each count j of its members in the subset, the
other clusters may hold at most j members each; those holding exactly j tie with c, and a tie of t + 1
clusters credits c with 1/(t + 1) (a random tie-break; with samples in random order this is also the
server's rule, the answer given first). Samples with no answer are drawn but never vote; a subset of them
only has no majority, which counts as wrong. Maj@1 is the fraction of correct samples, as Pass@1 is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction


def majority_at_k(sizes: Sequence[int], correct: Sequence[bool | None], n: int, k: int) -> float:
    """Unbiased Maj@K from n samples whose answers form clusters of `sizes` (`correct[i]`: cluster i's
    verdict; None counts as not correct); the n - sum(sizes) samples left have no answer."""
    unanswered = n - sum(sizes)
    if unanswered < 0 or any(s < 1 for s in sizes) or not 1 <= k <= n or len(correct) != len(sizes):
        raise ValueError(f"need clusters of positive sizes summing to <= n and 1 <= k <= n (n={n}, k={k})")
    credit = Fraction(0)
    for c, size in enumerate(sizes):
        if correct[c] is not True:
            continue
        others = [s for i, s in enumerate(sizes) if i != c]
        for j in range(1, min(size, k) + 1):
            ways = _ways_below(others, unanswered, k - j, j)  # ways[t]: subsets with t clusters tied at j
            credit += math.comb(size, j) * sum(Fraction(w, t + 1) for t, w in enumerate(ways))
    return float(credit / math.comb(n, k))


def _ways_below(others: Sequence[int], unanswered: int, room: int, cap: int) -> list[int]:
    """Ways to draw `room` samples from the other clusters (at most `cap` from each) and the unanswered
    ones, by the number of clusters drawn exactly `cap` times."""
    table = [[0] * (len(others) + 1) for _ in range(room + 1)]  # table[drawn][tied]
    for drawn in range(min(unanswered, room) + 1):
        table[drawn][0] = math.comb(unanswered, drawn)
    for size in others:
        step = [[0] * (len(others) + 1) for _ in range(room + 1)]
        for drawn, row in enumerate(table):
            for tied, ways in enumerate(row):
                if not ways:
                    continue
                for take in range(min(size, cap, room - drawn) + 1):
                    step[drawn + take][tied + (take == cap)] += ways * math.comb(size, take)
        table = step
    return table[room]
