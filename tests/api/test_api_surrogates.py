"""Lone surrogates (`"\\ud800"`, a valid JSON escape that is not Unicode) in any text field of any route.

Python decodes them into `str` but cannot encode them to UTF-8, so each used to answer HTTP 500 for a
whole batch (issue 12). Now the item is `invalid` (its neighbours are scored) or the request gets the
error envelope, and every answer is valid JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.settings import Settings

BAD = "x\ud800y"
MATH_OK = {"id": "fine", "task": "math", "response": "\\boxed{2}", "reference": "2"}
CODE_ITEM = {"task": "code", "response": "print(1)", "tests": [{"stdin": "", "stdout": "1"}]}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    settings = Settings(workers=1, math={"deadline_s": 5.0})
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


def _post(client: TestClient, path: str, body: Any) -> Any:
    # json.dumps escapes the surrogate as \ud800, exactly what trainers' JSON libraries send.
    response = client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})
    assert response.status_code < 500, response.text
    return response


ITEM_FIELDS: list[tuple[str, dict[str, Any]]] = [
    ("id", {**MATH_OK, "id": BAD}),
    ("task", {**MATH_OK, "task": BAD}),
    ("prompt", {**MATH_OK, "prompt": BAD}),
    ("response", {**MATH_OK, "response": BAD}),
    ("reference", {**MATH_OK, "reference": BAD}),
    ("options", {**MATH_OK, "options": {BAD: 1}}),
    ("options", {**CODE_ITEM, "options": {"checker": BAD}}),
    ("language", {**CODE_ITEM, "language": BAD}),
    ("tests", {**CODE_ITEM, "tests": [{"stdin": BAD, "stdout": "1"}]}),
    ("tests", {**CODE_ITEM, "tests": [{"stdin": "", "stdout": BAD}]}),
    ("tests", {**CODE_ITEM, "tests": [{"fn_name": BAD, "args": [BAD], "expected": BAD}]}),
    ("tests", {**CODE_ITEM, "tests": [{"assert": BAD}]}),
    ("db_id", {"task": "sql", "response": "SELECT 1", "reference": "SELECT 1", "db_id": BAD}),
    (
        "dialect",
        {"task": "sql", "response": "SELECT 1", "reference": "SELECT 1", "db_id": "d", "dialect": BAD},
    ),
    ("mode", {"task": "judge", "response": "a", "mode": BAD}),
    ("response_b", {"task": "judge", "response": "a", "mode": "pairwise", "response_b": BAD}),
    ("rubric", {"task": "judge", "response": "a", "rubric": BAD}),
    ("steps", {"task": "prm", "response": "a", "steps": ["ok", BAD]}),
    ("dataset", {"task": "reasoning_gym", "response": "1", "reference": "1", "dataset": BAD}),
    ("metadata", {"task": "reasoning_gym", "response": "1", "dataset": "gcd", "metadata": {"k": [BAD]}}),
]


@pytest.mark.parametrize(
    ("field", "item"), ITEM_FIELDS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(ITEM_FIELDS)]
)
def test_a_surrogate_in_any_item_field_is_that_items_invalid_status(
    client: TestClient, field: str, item: dict[str, Any]
) -> None:
    response = _post(client, "/v1/rewards", {"items": [MATH_OK, item, MATH_OK]})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["ok", "invalid", "ok"]
    assert field in results[1]["reason"] and "surrogate" in results[1]["reason"]
    assert results[1]["reward"] is None


def test_a_surrogate_id_is_echoed_escaped(client: TestClient) -> None:
    (result,) = _post(client, "/v1/rewards", {"items": [{**MATH_OK, "id": BAD}]}).json()["results"]
    assert result["id"] == "x\\ud800y"


def test_the_connection_survives_a_surrogate(client: TestClient) -> None:
    for _ in range(3):
        _post(client, "/v1/rewards", {"items": [{**MATH_OK, "response": BAD}]})
    assert client.post("/v1/rewards", json={"items": [MATH_OK]}).json()["results"][0]["status"] == "ok"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"query": [BAD]}, "response (character 1) holds a lone surrogate"),
        ({"query": ["q 2"], "prompts": [BAD]}, "prompt (character 1) holds a lone surrogate"),
        ({"query": ["\\boxed{2}"], "labels": [BAD]}, "reference (character 1) holds a lone surrogate"),
        (
            {"query": ["\\boxed{2}"], "labels": ["2"], BAD: BAD},
            "unable to parse raw data as a unicode string",
        ),
    ],
)
def test_get_reward_answers_surrogates_with_the_envelope(
    client: TestClient, body: dict[str, Any], says: str
) -> None:
    response = _post(client, "/get_reward", body)
    if "query" in body and BAD not in body:
        # An unscorable sample: 200 with no rewards and the reason, which OpenRLHF stores as None at once
        # (a 422 it retried five times first; issue 38).
        assert response.status_code == 200 and response.json()["rewards"] is None
    else:
        assert response.status_code == 422
    assert says in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "body",
    [
        {"code": BAD},
        {"code": "print(1)", "stdin": BAD},
        {"code": "print(1)", "language": BAD},
        {"code": "print(1)", "files": {BAD: "x"}},
        {"code": "print(1)", "files": {"a": BAD}},
        {"code": "print(1)", "fetch_files": [BAD]},
    ],
)
def test_run_code_refuses_surrogates_with_the_envelope(client: TestClient, body: dict[str, Any]) -> None:
    response = _post(client, "/run_code", body)
    assert response.status_code == 422
    error = response.json()["error"]
    assert error["type"] == "validation_error" and "surrogate" in error["message"]


def test_an_unknown_route_with_a_surrogate_path_gets_the_envelope(client: TestClient) -> None:
    response = _post(client, "/v1/rewards", {"items": BAD})
    assert response.status_code == 422
    assert response.json()["error"]["type"] == "validation_error"
