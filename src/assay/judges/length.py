"""Length control: a regression-based correction of the judge's preference for longer answers.

Why: judges reward verbosity (padding fooled weaker judges about 90% of the time), and AlpacaEval's
length-controlled win rate (Dubois et al., 2024) raised agreement with human rankings (Spearman 0.94 to
0.98) by fitting the judge's preference on the length difference and reporting the prediction with the
length term set to zero. The same idea, per item and online:

    d      = len(response) - baseline          characters; the baseline is len(response_b) (pairwise),
                                                else len(reference) when given, else the window's mean
                                                response length (pointwise)
    x      = tanh(d / s)                        s = the standard deviation of d over the window
                                                (or the `length_scale` option), as in AlpacaEval
    r      = a + b * x + e                      ordinary least squares of the judge's raw rewards r on x,
                                                over the last `length_window` judgements of the same
                                                judge configuration (mode and models)
    r_lc   = clip(r - b * x, 0, 1)              the reward with the length term removed

`b` can also be fixed with the `length_slope` option (e.g. fitted offline); with both `length_slope` and
`length_scale` given the correction is deterministic. Until `length_min_samples` judgements are in the
window (and no slope is fixed) the reward is left unchanged and the details say so.

What is not covered: AlpacaEval's per-instruction difficulty term (an item is judged once here), and
lengths in tokens (characters need no tokenizer and are what the details report).
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LengthAdjustment:
    raw: float
    adjusted: float
    slope: float | None
    feature: float | None
    samples: int
    state: str  # "adjusted", "fixed slope", or "warming up"

    def details(self) -> dict[str, Any]:
        return {
            "raw_reward": self.raw,
            "adjusted_reward": round(self.adjusted, 6),
            "slope": None if self.slope is None else round(self.slope, 6),
            "feature": None if self.feature is None else round(self.feature, 6),
            "samples": self.samples,
            "state": self.state,
        }


class LengthRegression:
    """The recent (length, baseline, raw reward) observations of one judge configuration."""

    def __init__(self, window: int, min_samples: int) -> None:
        self._seen: deque[tuple[int, int | None, float]] = deque(maxlen=window)
        self._min_samples = min_samples

    def __len__(self) -> int:
        return len(self._seen)

    def observe(self, length: int, baseline: int | None, reward: float) -> None:
        self._seen.append((length, baseline, reward))

    def _differences(self) -> tuple[list[float], float]:
        mean_length = statistics.fmean(length for length, _, _ in self._seen) if self._seen else 0.0
        diffs = [length - (mean_length if base is None else base) for length, base, _ in self._seen]
        return diffs, mean_length

    def adjust(
        self,
        length: int,
        baseline: int | None,
        reward: float,
        slope: float | None = None,
        scale: float | None = None,
    ) -> LengthAdjustment:
        """The reward with the length term removed (fit on the observations before this one)."""
        fitted = slope is None
        no_baseline = baseline is None and not self._seen
        if no_baseline or (fitted and len(self._seen) < self._min_samples):
            return LengthAdjustment(reward, reward, None, None, len(self._seen), "warming up")
        diffs, mean_length = self._differences()
        if scale is None:
            scale = statistics.pstdev(diffs) if len(diffs) >= 2 else 0.0
        if scale <= 0.0:
            return LengthAdjustment(reward, reward, None, None, len(self._seen), "warming up")
        if slope is None:
            slope = _ols_slope([math.tanh(d / scale) for d in diffs], [r for _, _, r in self._seen])
        d = length - (mean_length if baseline is None else baseline)
        x = math.tanh(d / scale)
        adjusted = min(1.0, max(0.0, reward - slope * x))
        return LengthAdjustment(
            reward, adjusted, slope, x, len(self._seen), "adjusted" if fitted else "fixed slope"
        )


def _ols_slope(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of ys on xs (with an intercept); 0 when xs do not vary."""
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mean_x) ** 2 for x in xs)
    if var == 0.0:
        return 0.0
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / var
