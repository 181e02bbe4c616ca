"""The contract types: what every surface sends and receives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from assay.types import Item, Result, Status

_json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
_details = st.dictionaries(
    st.text(max_size=10), st.recursive(_json_scalars, lambda c: st.lists(c, max_size=3)), max_size=4
)


@st.composite
def results(draw: st.DrawFn) -> Result:
    status = draw(st.sampled_from(list(Status)))
    ok = status is Status.OK
    return Result(
        id=draw(st.none() | st.text(max_size=20)),
        task=draw(st.none() | st.sampled_from(["math", "code", "sql", "judge", "prm"])),
        status=status,
        correct=draw(st.none() | st.booleans()),
        reward=draw(st.floats(-1e6, 1e6, allow_nan=False)) if ok else None,
        reason=draw(st.text(max_size=50)),
        extracted=draw(st.none() | st.text(max_size=50)),
        details=draw(_details),
        elapsed_ms=draw(st.floats(0, 1e7, allow_nan=False)),
    )


@given(results())
def test_any_result_survives_json(result: Result) -> None:
    assert Result.model_validate_json(result.model_dump_json()) == result
    assert Result.model_validate(json.loads(result.model_dump_json())) == result


@pytest.mark.parametrize("status", [Status.INVALID, Status.TIMEOUT, Status.ERROR])
def test_a_failed_result_cannot_carry_a_reward(status: Status) -> None:
    with pytest.raises(ValidationError, match="has no reward"):
        Result(status=status, reward=0.0)


def test_an_ok_result_needs_a_reward() -> None:
    with pytest.raises(ValidationError, match="needs a reward"):
        Result(status=Status.OK)


def test_verdict_maps_correctness_to_reward() -> None:
    assert Result.verdict(True).reward == 1.0
    assert Result.verdict(False).reward == 0.0
    assert Result.graded(0.3).correct is None


def test_partial_credit_keeps_the_verdict_and_stays_in_range() -> None:
    result = Result.partial(False, 0.25, "1/4 tests passed")
    assert (result.status, result.correct, result.reward) == (Status.OK, False, 0.25)
    for reward in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match=r"in \[0, 1\]"):
            Result.partial(False, reward)


def test_result_json_has_exactly_the_contract_fields() -> None:
    fields = set(json.loads(Result.verdict(True).model_dump_json()))
    assert fields == {
        "id",
        "task",
        "status",
        "correct",
        "reward",
        "reason",
        "extracted",
        "details",
        "elapsed_ms",
    }


def test_integer_ids_are_echoed_as_text() -> None:
    assert Item(task="math", id=7).id == "7"


def test_item_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        Item.model_validate({"task": "math", "refrence": "1"})


@pytest.mark.parametrize(
    ("value", "text"),
    [(42, "42"), (-7, "-7"), (0.5, "0.5"), (3.0, "3"), (10**30, str(10**30)), (1e300, "1e+300")],
)
def test_a_numeric_reference_is_its_canonical_text(value: int | float, text: str) -> None:
    # Datasets store numeric gold answers as JSON numbers; they used to make the item invalid (issue 31).
    assert Item(task="math", reference=value, response=value).reference == text  # type: ignore[arg-type]
    assert Item.model_validate_json(json.dumps({"task": "math", "reference": value})).reference == text


def test_a_numeric_stdout_in_a_code_test_is_text_and_expected_stays_a_value() -> None:
    item = Item.model_validate(
        {"task": "code", "tests": [{"stdin": 3, "stdout": 9}, {"fn_name": "f", "expected": 2}]}
    )
    assert item.tests == [{"stdin": "3", "stdout": "9"}, {"fn_name": "f", "expected": 2}]


def test_a_boolean_reference_is_still_refused() -> None:
    with pytest.raises(ValidationError):
        Item.model_validate({"task": "math", "reference": True})


@given(st.integers() | st.floats(allow_nan=False, allow_infinity=False))
def test_any_finite_number_round_trips_through_its_text(value: int | float) -> None:
    text = Item(task="math", reference=value).reference  # type: ignore[arg-type]
    assert text is not None and float(text) == float(value)


_IDS = [(7, "7"), ("q-1", "q-1"), (True, None), (1.5, None), (None, None)]


@pytest.mark.parametrize(("raw", "echoed"), _IDS)
def test_one_id_coercion_for_items_groups_and_unreadable_items(raw: Any, echoed: str | None) -> None:
    # issue 24: the id rule lives in types.id_text; each reader of an id gives the same answer.
    from assay.api.groups import GroupIn
    from assay.items import raw_id
    from assay.validate.validator import task_id

    assert raw_id({"id": raw}) == echoed
    assert task_id({"id": raw}, 4) == (echoed if echoed is not None else "task-4")
    if echoed is not None or raw is None:
        assert Item.model_validate({"id": raw, "task": "math"}).id == echoed
        assert GroupIn.model_validate({"id": raw, "items": []}).id == echoed
    else:
        with pytest.raises(ValidationError):
            Item.model_validate({"id": raw, "task": "math"})


# Issue 36: each built-in task declares its own item fields, in its folder; `Item` holds the shared ones.
_SHARED = {"id", "task", "prompt", "response", "messages", "reference", "options"}


def test_item_holds_only_the_fields_every_task_shares_and_each_task_declares_its_own() -> None:
    from assay.registry import folder_tasks, load_object

    assert set(Item.model_fields) == _SHARED
    declared: dict[str, str] = {}
    for folder, path in folder_tasks().items():
        scorer = load_object(path)
        if scorer.Fields is not None:
            assert scorer.Fields.__module__.startswith(f"assay.verifiers.{folder}."), scorer.Fields
            for name in scorer.Fields.model_fields:
                assert name not in declared, f"{name} declared by {declared.get(name)} and {folder}"
                declared[name] = folder
    assert {"tests", "db_id", "FAIL_TO_PASS", "response_b", "steps", "metadata"} <= set(declared)


@pytest.mark.parametrize(
    "build",
    [
        lambda raw: Item(**raw),
        Item.model_validate,
        lambda raw: Item.model_validate_json(json.dumps(raw)),
    ],
    ids=["constructor", "model_validate", "model_validate_json"],
)
def test_an_item_of_a_builtin_task_is_read_with_its_tasks_fields(build: Any) -> None:
    import pickle

    from assay.verifiers.code.fields import CodeFields

    item = build({"task": "code", "language": "python", "tests": [{"stdin": 1, "stdout": 1}]})
    assert isinstance(item, Item) and isinstance(item, CodeFields)
    assert CodeFields.of(item) is item and item.tests == [{"stdin": "1", "stdout": "1"}]
    assert pickle.loads(pickle.dumps(item)) == item
    with pytest.raises(ValidationError, match="tets"):
        build({"task": "code", "tets": []})  # a typo of the task's own field is still refused


def test_another_builtin_tasks_fields_are_ignored_as_before_and_unknown_keys_refused() -> None:
    # A mixed dataset gives every row every column: a math row with code's and sql's columns still reads.
    item = Item.model_validate({"task": "math", "reference": "2", "tests": None, "db_id": "x", "rubric": "r"})
    assert type(item) is Item and item.model_dump(exclude_none=True) == {
        "task": "math",
        "reference": "2",
        "options": {},
    }
    with pytest.raises(ValidationError, match="no_such_field"):
        Item.model_validate({"task": "math", "no_such_field": 1})
    with pytest.raises(ValidationError, match="Invalid JSON"):
        Item.model_validate_json("{not json")


def test_an_item_of_a_task_not_built_in_still_carries_every_builtin_tasks_fields() -> None:
    # A plugin task reads what `Item` held before issue 36 (its own `Fields` come from its registry).
    import pickle

    item = Item(task="a_plugin_task", tests=[{"stdin": 1, "stdout": 1}], db_id="shop", rubric="r")
    assert (item.tests, item.db_id, item.rubric) == ([{"stdin": "1", "stdout": "1"}], "shop", "r")
    assert pickle.loads(pickle.dumps(item)) == item
    assert Item.model_validate(item.model_dump()).db_id == "shop"
