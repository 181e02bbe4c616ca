"""A task's own item fields (`Scorer.Fields`, issue 36): its items carry them, typed and checked, through
the worker processes and into a session; a key no model declares is still an unknown field, and another
task's item may not carry them."""

from __future__ import annotations

import pickle

import pytest
from assay_test_plugins import KeyFields
from fastapi import HTTPException

from assay.api.sessions import session_item
from assay.engine.scoring import Engine
from assay.registry import Registry
from assay.settings import Settings
from assay.types import Item, Status, TaskFields

KEYED = "assay_test_plugins:KeyedScorer"


def test_a_tasks_own_fields_are_read_and_scored_in_the_worker_processes() -> None:
    gold = {"task": "keyed", "answer_key": ["Paris", "paris"]}
    with Engine(Settings(workers=1, plugins=[KEYED])) as engine:
        results = engine.score([{**gold, "response": "Paris"}, {**gold, "response": "Lyon"}])
    assert [(r.status, r.reward) for r in results] == [(Status.OK, 1.0), (Status.OK, 0.0)]


def test_a_key_no_model_declares_is_still_an_unknown_field() -> None:
    items = [
        {"task": "keyed", "response": "x", "answer_keys": ["x"]},
        {"task": "math", "response": "x", "reference": "1", "answer_key": ["x"]},
        {"task": "keyed", "response": "x", "answer_key": "x"},
    ]
    with Engine(Settings(workers=1, plugins=[KEYED])) as engine:
        typo, elsewhere, mistyped = engine.score(items)
    assert typo.status is Status.INVALID
    assert 'unknown field "answer_keys" (did you mean "answer_key"?)' in typo.reason
    assert (elsewhere.status, elsewhere.reason) == (Status.INVALID, 'unknown field "answer_key"')
    assert mistyped.status is Status.INVALID and "answer_key" in mistyped.reason


def test_a_session_item_carries_its_tasks_own_fields() -> None:
    registry = Registry.from_settings(Settings(plugins=[KEYED]))
    item = session_item({"task": "keyed", "answer_key": ["Paris"]}, registry)
    assert KeyFields.of(item).answer_key == ["Paris"]
    with pytest.raises(HTTPException, match="answer_keys"):
        session_item({"task": "keyed", "answer_keys": ["Paris"]}, registry)


def test_the_tasks_own_fields_are_listed_among_its_item_fields() -> None:
    keyed = Registry.from_settings(Settings(plugins=[KEYED]))["keyed"]
    assert keyed.info().item_fields == ["response", "answer_key"]


def test_an_item_with_task_fields_pickles_and_keeps_them() -> None:
    model = Registry.from_settings(Settings(plugins=[KEYED]))["keyed"].item_model()
    item = model.model_validate({"task": "keyed", "answer_key": ["a"]})
    again = pickle.loads(pickle.dumps(item))
    assert isinstance(again, Item) and again == item and KeyFields.of(again).answer_key == ["a"]


def test_task_fields_may_not_take_an_item_field_name() -> None:
    class Clash(TaskFields):
        reference: list[str] | None = None

    with pytest.raises(TypeError, match="reference"):
        Item.with_fields(Clash)


def test_a_scorer_extending_a_builtin_one_keeps_its_fields_beside_its_own() -> None:
    from assay.verifiers.repo import RepoScorer
    from assay.verifiers.repo.task import RepoFields

    class Extended(RepoScorer):
        Fields = KeyFields

    model = Extended.item_model()
    assert {"answer_key", "FAIL_TO_PASS", "test_patch"} <= set(model.model_fields)
    assert "tests" not in model.model_fields  # the repo task's own, not every task's
    item = model.model_validate({"task": "repo", "repo": "r", "answer_key": ["a"]})
    assert RepoFields.of(item).repo == "r" and KeyFields.of(item).answer_key == ["a"]
    assert pickle.loads(pickle.dumps(item)) == item
