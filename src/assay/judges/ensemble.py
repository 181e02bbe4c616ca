"""Ensembles: several judge models, or several samples of one, aggregated into one reward.

Why: a single judge's grade is noisy and has its own biases; averaging judges (or samples of one at a
non-zero temperature) reduces variance, and a majority vote resists one outlier judge.

- `mean`: the mean of the votes' rewards (each in [0, 1]).
- `majority`: the most frequent vote, on the vote's own grid (pointwise: the score rounded to an integer
  on the rubric's scale; pairwise: 0, 0.5 or 1). Tied modes are broken towards the median vote, then
  towards the lower reward (a tie must not round a reward up).

`agreement` in the details is the share of votes equal to the modal vote (1.0: unanimous), with the
spread (highest minus lowest reward) and the vote count.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

Aggregate = Literal["mean", "majority"]


@dataclass(frozen=True)
class Aggregated:
    reward: float
    agreement: float
    spread: float
    votes: int

    def details(self, method: Aggregate) -> dict[str, Any]:
        return {
            "method": method,
            "votes": self.votes,
            "agreement": round(self.agreement, 6),
            "spread": round(self.spread, 6),
        }


def aggregate(rewards: Sequence[float], grid: Sequence[float], method: Aggregate) -> Aggregated:
    """Combine votes: `rewards` are the exact rewards, `grid` the same votes snapped to their grid."""
    if not rewards or len(rewards) != len(grid):
        raise ValueError("aggregate needs one grid value per reward, and at least one")
    counts = Counter(grid)
    top = max(counts.values())
    modes = sorted(value for value, count in counts.items() if count == top)
    median = statistics.median(grid)
    majority = min(modes, key=lambda value: (abs(value - median), value))
    reward = statistics.fmean(rewards) if method == "mean" else majority
    return Aggregated(
        reward=reward,
        agreement=top / len(grid),
        spread=max(rewards) - min(rewards),
        votes=len(rewards),
    )
