"""Reward composition (assay.groups.rubric): weighted components with gates, raw values in details."""

from __future__ import annotations

from typing import Any

import pytest

from assay.errors import ItemError
from assay.groups.members import Member
from assay.groups.rubric import Rubric
from assay.groups.shaping import parse_options, shape
from assay.types import Result

RUBRIC = Rubric.model_validate(
    {
        "components": [
            {"name": "correct", "kind": "correctness", "weight": 1.0, "gate": True},
            {"name": "format", "kind": "format", "check": "think_closed", "weight": 0.2},
            {"name": "length", "kind": "length", "weight": -0.001},
            {"name": "tools", "kind": "tool_calls", "weight": -0.1, "gate": True, "max": 3},
        ]
    }
)


def _member(correct: bool | None, response: str, **extras: Any) -> Member:
    result = Result.timeout("no verdict") if correct is None else Result.verdict(correct, extracted="4")
    return Member(result, response, extras)


def test_a_rubric_on_a_hand_computed_group() -> None:
    group = [
        _member(True, "x</think>4", length=100, tool_calls=2),  # 1 + 0.2 - 0.1 - 0.2 = 0.9
        _member(False, "x</think>5", length=80, tool_calls=0),  # correctness gate fails: 0
        _member(True, "no tags 4", length=50, tool_calls=5),  # 5 tool calls > 3: gate fails: 0
        _member(True, "x</think>4", length=300, tool_calls=[{"name": "python"}]),  # 1 + .2 - .3 - .1 = .8
        _member(None, "x</think>4", length=10, tool_calls=0),  # unscored: null, details untouched
    ]
    rewards, stats, results = shape(RUBRIC, group)
    assert rewards == pytest.approx([0.9, 0.0, 0.0, 0.8, None])
    assert rewards[4] is None
    assert (stats.method, stats.n_gated, stats.n_unscored, stats.length_unit) == ("rubric", 2, 1, "tokens")
    first = results[0].details["rubric"]
    assert first["raw"] == {"correct": 1.0, "format": 1.0, "length": 100.0, "tools": 2.0}
    assert first["weighted"] == pytest.approx({"correct": 1.0, "format": 0.2, "length": -0.1, "tools": -0.2})
    assert first["passed"] is True
    assert results[2].details["rubric"]["raw"]["tools"] == 5.0 and not results[2].details["rubric"]["passed"]
    assert "rubric" not in results[4].details


def test_the_fail_value_and_the_format_checks() -> None:
    rubric = Rubric.model_validate(
        {
            "fail_value": -1.0,
            "components": [
                {"name": "think", "kind": "format", "check": "think", "gate": True, "weight": 0.0},
                {"name": "answer", "kind": "format", "weight": 0.5},  # default check: extracted
            ],
        }
    )
    group = [_member(True, "<think>a</think>4"), _member(True, "a</think>4"), _member(True, "<think>a")]
    rewards, _, _ = shape(rubric, group)
    assert rewards == [0.5, -1.0, -1.0]


def test_a_missing_tool_call_count_is_a_group_error() -> None:
    rewards, stats, results = shape(RUBRIC, [_member(True, "x</think>4", length=1)])
    assert rewards == [None] and stats.error is not None and "tool_calls" in stats.error
    assert "rubric" not in results[0].details


@pytest.mark.parametrize(
    ("rubric", "problem"),
    [
        ({"components": []}, "at least 1"),
        ({"components": [{"name": "a", "kind": "correctness"}] * 2}, "names repeat"),
        ({"components": [{"name": "a", "kind": "length", "check": "think"}]}, "format component"),
        ({"components": [{"name": "a", "kind": "length", "max": 3}]}, "set gate: true"),
        ({"components": [{"name": "a", "kind": "judge"}]}, "kind"),
        ({"components": [{"name": "a b", "kind": "length"}]}, "name"),
        ({"components": [{"name": "a", "kind": "length", "weight": float("inf")}]}, "weight"),
    ],
)
def test_a_bad_rubric_is_an_item_error(rubric: dict[str, Any], problem: str) -> None:
    with pytest.raises(ItemError, match=problem):
        parse_options(0, {"rubric": rubric})
