"""Bounds on options and compat fields, and an OpenAPI document that lists every answer (issue 12)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from assay_testing import bwrap_works
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.settings import Settings

CODE = {"task": "code", "response": "print(1)", "tests": [{"stdin": "", "stdout": "1"}]}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    settings = Settings(workers=1, code={"slots": 1, "processes": 32, "tmpfs_mb": 64})
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.mark.parametrize("tol", ["Infinity", "-Infinity", "NaN", "1e999"])
def test_float_tol_must_be_finite(client: TestClient, tol: str) -> None:
    body = '{"items": [{"task": "code", "response": "print(1)", "tests": [{"stdout": "1"}],'
    body += f' "options": {{"checker": "float", "float_tol": {tol}}}}}]}}'
    response = client.post("/v1/rewards", content=body, headers={"content-type": "application/json"})
    (result,) = response.json()["results"]
    assert result["status"] == "invalid" and "float_tol" in result["reason"]


@pytest.mark.parametrize("memory", [False, True, 10**9, -5, "lots"])
def test_run_code_memory_limit_is_bounded_and_numeric(client: TestClient, memory: Any) -> None:
    response = client.post("/run_code", json={"code": "print(1)", "memory_limit_MB": memory})
    assert response.status_code == 422
    assert "memory_limit_MB" in response.json()["error"]["message"]


@pytest.mark.parametrize("memory", [None, -1, 256])
def test_run_code_memory_limit_null_means_the_servers_default(client: TestClient, memory: Any) -> None:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    response = client.post("/run_code", json={"code": "print(1)", "memory_limit_MB": memory})
    assert response.status_code == 200, response.text
    assert response.json()["run_result"]["stdout"] == "1\n"


def test_openapi_lists_every_error_answer_with_the_envelope(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/v1/rewards", "/get_reward", "/run_code"):
        answers = paths[path]["post"]["responses"]
        for code in ("400", "413", "422", "429", "503"):
            schema = answers[code]["content"]["application/json"]["schema"]
            assert schema == {"$ref": "#/components/schemas/ErrorEnvelope"}, (path, code)
    metrics = paths["/metrics"]["get"]["responses"]["200"]["content"]
    assert "application/json" not in metrics and any(kind.startswith("text/plain") for kind in metrics)
    assert "/v1/limits" in paths


def test_limits_say_what_a_request_may_hold(client: TestClient) -> None:
    limits = client.get("/v1/limits").json()
    assert limits["max_batch_items"] == 4096 and limits["max_body_bytes"] == 64 * 1024 * 1024
