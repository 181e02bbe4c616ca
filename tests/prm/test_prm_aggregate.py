"""Step scores -> reward, and the first step below the threshold (0-based)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.prm.aggregate import aggregate, first_error_step

SCORES = [0.9, 0.4, 0.8, 0.3]


@pytest.mark.parametrize(
    ("how", "expected"),
    [("min", 0.3), ("last", 0.3), ("product", 0.9 * 0.4 * 0.8 * 0.3), ("mean", 0.6)],
)
def test_each_aggregation(how: str, expected: float) -> None:
    assert aggregate(SCORES, how) == pytest.approx(expected)  # type: ignore[arg-type]


def test_last_differs_from_min_when_the_last_step_is_not_the_weakest() -> None:
    assert aggregate([0.2, 0.9], "last") == 0.9 and aggregate([0.2, 0.9], "min") == 0.2


def test_first_error_is_the_first_step_strictly_below_the_threshold() -> None:
    assert first_error_step(SCORES, 0.5) == 1
    assert first_error_step(SCORES, 0.3) is None  # 0.3 is not below 0.3
    assert first_error_step(SCORES, 0.95) == 0


def test_no_scores_cannot_be_aggregated() -> None:
    with pytest.raises(ValueError):
        aggregate([], "min")


probabilities = st.lists(st.floats(0, 1), min_size=1, max_size=20)


@given(probabilities, st.sampled_from(["min", "last", "product", "mean"]))
def test_aggregates_of_probabilities_are_probabilities(scores: list[float], how: str) -> None:
    value = aggregate(scores, how)  # type: ignore[arg-type]
    assert 0.0 <= value <= 1.0 and math.isfinite(value)


@given(probabilities, st.floats(0, 1))
def test_min_is_below_the_threshold_exactly_when_some_step_is(scores: list[float], threshold: float) -> None:
    assert (first_error_step(scores, threshold) is not None) == (aggregate(scores, "min") < threshold)
