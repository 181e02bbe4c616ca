"""Every numeric option of every built-in task is finite and bounded on both sides (issue 28).

A client sets options per item, and an option that can move a reward is an attack surface: SQL
`rel_tol: Infinity` matched any number, a judge `length_slope` of -Infinity gave a wrong answer 1.0. The
test walks the option models themselves, so a field added later without bounds fails here.
"""

from __future__ import annotations

import math
import types
import typing
from typing import Any

import pytest

from assay.errors import OptionsError
from assay.registry import Registry, Scorer
from assay.settings import Settings
from assay.types import TaskOptions

REGISTRY = Registry.from_settings(Settings())
EXTREMES = [math.inf, -math.inf, math.nan, 1e308, -1e308, 10**30, -(10**30)]


def _numeric(annotation: Any) -> bool:
    """Whether a field holds an int or a float (bool, str, lists and literals do not count)."""
    if annotation in (int, float):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_numeric(arg) for arg in typing.get_args(annotation))
    return False


FIELDS = [
    (name, field)
    for name in sorted(REGISTRY)
    for field, info in REGISTRY[name].Options.model_fields.items()
    if _numeric(info.annotation)
]


def test_the_walk_finds_the_known_numeric_options() -> None:
    found = set(FIELDS)
    for expected in [("sql", "rel_tol"), ("judge", "length_slope"), ("code", "float_tol")]:
        assert expected in found


@pytest.mark.parametrize(("task", "field"), FIELDS, ids=[f"{t}.{f}" for t, f in FIELDS])
def test_extreme_values_are_refused_with_the_field_named(task: str, field: str) -> None:
    scorer: type[Scorer[Any]] = REGISTRY[task]
    for value in EXTREMES:
        with pytest.raises(OptionsError, match=field):
            scorer.parse_options({field: value})


@pytest.mark.parametrize(("task", "field"), FIELDS, ids=[f"{t}.{f}" for t, f in FIELDS])
def test_the_schema_states_both_bounds(task: str, field: str) -> None:
    schema = REGISTRY[task].Options.model_json_schema()["properties"][field]
    variants = schema.get("anyOf", [schema])
    numbers = [v for v in variants if v.get("type") in ("integer", "number")]
    assert numbers, schema
    for variant in numbers:
        assert {"minimum", "exclusiveMinimum"} & set(variant), (task, field, variant)
        assert {"maximum", "exclusiveMaximum"} & set(variant), (task, field, variant)


def test_every_option_model_refuses_non_finite_numbers() -> None:
    assert TaskOptions.model_config.get("allow_inf_nan") is False
