"""Step scores -> one reward, and where the reasoning first went wrong.

`min` is the default because a chain of reasoning is only as sound as its weakest step (the aggregation
the Qwen2.5-Math-PRM and ProcessBench papers use to rank solutions); `last` is the model's view of the
whole solution, `product` treats steps as independent chances of being right, `mean` is lenient.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

Aggregation = Literal["min", "last", "product", "mean"]


def aggregate(scores: Sequence[float], how: Aggregation) -> float:
    """One number for a non-empty list of step scores."""
    if not scores:
        raise ValueError("no step scores to aggregate")
    if how == "min":
        return min(scores)
    if how == "last":
        return scores[-1]
    if how == "product":
        return math.prod(scores)
    if how == "mean":
        return math.fsum(scores) / len(scores)
    raise ValueError(f"unknown aggregation {how!r}")


def first_error_step(scores: Sequence[float], threshold: float) -> int | None:
    """The 0-based index of the first step scored strictly below `threshold`, or None if there is none.

    0-based, like `details.step_scores` and the `steps` list of the item, and like ProcessBench's labels
    (where -1 means "no error"; here that is None).
    """
    for index, score in enumerate(scores):
        if score < threshold:
            return index
    return None
