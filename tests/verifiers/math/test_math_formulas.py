"""Where boxes and formulas are found (formulas.py): the regressions that pinned them."""

from __future__ import annotations

from assay.verifiers.math.formulas import find_boxes


def test_unclosed_box_is_skipped() -> None:
    assert find_boxes("\\boxed{1} then \\boxed{2") == ["1"]


def test_many_unclosed_boxes_are_paired_once() -> None:
    # a regression: each unclosed box rescanned to the end ("\\boxed{" x 10,000 took 17 s)
    assert find_boxes("\\boxed{" * 10_000) == []
    assert find_boxes("\\boxed{ \\boxed{1} and \\boxed{2") == ["1"]
