"""The HTTP surface, through apps built from explicit settings."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from assay_testing import gate_item, held_request
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.settings import Settings

MATH_OK = {"id": "q1", "task": "math", "response": "thus \\boxed{\\frac12}", "reference": "0.5"}


@pytest.fixture
def client(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings()), raise_server_exceptions=False) as test_client:
        yield test_client


def _assert_envelope(response: httpx.Response, status: int, error_type: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == error_type
    assert "Traceback" not in response.text
    return body["error"]


def test_rewards_scores_a_batch_in_order(client: TestClient) -> None:
    items = [MATH_OK, {"id": "q2", "task": "math", "response": "\\boxed{7}", "reference": "8"}]
    response = client.post("/v1/rewards", json={"items": items})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [(r["id"], r["status"], r["reward"]) for r in results] == [("q1", "ok", 1.0), ("q2", "ok", 0.0)]


def test_a_malformed_item_never_fails_the_batch(client: TestClient) -> None:
    items = [MATH_OK, 42, {"task": "mth"}, {"task": "math", "response": "1", "reference": "1", "colour": 1}]
    response = client.post("/v1/rewards", json={"items": items})
    assert response.status_code == 200
    statuses = [r["status"] for r in response.json()["results"]]
    assert statuses == ["ok", "invalid", "invalid", "invalid"]
    assert all(r["reward"] is None for r in response.json()["results"][1:])


def test_an_empty_batch_is_an_empty_answer(client: TestClient) -> None:
    assert client.post("/v1/rewards", json={"items": []}).json() == {"results": []}


@pytest.mark.parametrize(
    ("kwargs", "status", "error_type"),
    [
        ({"json": {"itms": []}}, 422, "validation_error"),
        ({"json": [1, 2]}, 422, "validation_error"),
        ({"content": b"{not json", "headers": {"content-type": "application/json"}}, 422, "validation_error"),
    ],
)
def test_a_bad_body_gets_the_error_envelope(
    client: TestClient, kwargs: dict[str, Any], status: int, error_type: str
) -> None:
    _assert_envelope(client.post("/v1/rewards", **kwargs), status, error_type)


def test_unknown_routes_and_methods_get_the_envelope(client: TestClient) -> None:
    _assert_envelope(client.get("/v2/nothing"), 404, "not_found")
    _assert_envelope(client.get("/v1/rewards"), 405, "method_not_allowed")


def test_a_body_over_the_limit_is_413(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(max_body_bytes=1000))) as small:
        big = {"items": [{"task": "math", "response": "x" * 2000, "reference": "1"}]}
        _assert_envelope(small.post("/v1/rewards", json=big), 413, "payload_too_large")
        # Streamed without a Content-Length, the limit still holds.
        chunks = iter([b'{"items": [', b"1," * 600, b"1]}"])
        streamed = small.post("/v1/rewards", content=chunks, headers={"content-type": "application/json"})
        _assert_envelope(streamed, 413, "payload_too_large")
        assert small.post("/v1/rewards", json={"items": [MATH_OK]}).status_code == 200


def test_a_batch_larger_than_the_queue_is_413_with_advice(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(queue_size=2))) as small:
        error = _assert_envelope(
            small.post("/v1/rewards", json={"items": [MATH_OK] * 3}), 413, "payload_too_large"
        )
    assert "split it" in error["message"]


def test_a_full_queue_answers_429_with_retry_after(live_server: Callable[..., Any], tmp_path: Path) -> None:
    server = live_server(queue_size=2, retry_after_s=3)
    gate = tmp_path / "gate"
    held = {"items": [gate_item(gate)] * 2}
    with httpx.Client(base_url=server.url, timeout=60) as http:
        with held_request(server, gate, lambda: http.post("/v1/rewards", json=held), pending=2) as first:
            refused = http.post("/v1/rewards", json={"items": [MATH_OK]})
            error = _assert_envelope(refused, 429, "queue_full")
            assert refused.headers["retry-after"] == "3" and "queue full" in error["message"]
            assert http.get("/readyz").status_code == 503
        assert [r["status"] for r in first["response"].json()["results"]] == ["ok", "ok"]
        assert http.post("/v1/rewards", json={"items": [MATH_OK]}).status_code == 200
        metrics = http.get("/metrics").text
    assert 'assay_requests_total{code="429",route="/v1/rewards"} 1.0' in metrics
    assert "assay_rejected_items_total 1.0" in metrics


def test_tasks_lists_each_task_with_its_options_schema(client: TestClient) -> None:
    tasks = {t["name"]: t for t in client.get("/v1/tasks").json()["tasks"]}
    assert "math" in tasks
    assert "rel_tol" in tasks["math"]["options_schema"]["properties"]
    assert "reference" in tasks["math"]["item_fields"]


def test_health_and_readiness(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    for _ in range(600):  # bounded poll: ready once the workers are warm (tests/api/test_health.py)
        ready = client.get("/readyz")
        if ready.status_code == 200:
            break
        threading.Event().wait(0.1)
    assert ready.status_code == 200 and ready.json()["status"] == "ready"


def test_metrics_count_items_by_task_and_status(client: TestClient) -> None:
    client.post("/v1/rewards", json={"items": [MATH_OK, {"task": "math"}]})
    text = client.get("/metrics").text
    assert 'assay_items_total{status="ok",task="math"} 1.0' in text
    assert 'assay_items_total{status="invalid",task="math"} 1.0' in text
    assert 'assay_requests_total{code="200",route="/v1/rewards"} 1.0' in text
    assert "assay_item_seconds_bucket" in text and "assay_queue_depth 0.0" in text


def test_metrics_count_flagged_items_by_task_and_flag(client: TestClient) -> None:
    """Issue 28: a result's details.flags reach /metrics (a master key needs no judge backend)."""
    keys = [{"task": "judge", "prompt": "What is 2+2?", "response": r} for r in (":", "Thought process:")]
    results = client.post("/v1/rewards", json={"items": [*keys, MATH_OK]}).json()["results"]
    assert [r["reward"] for r in results[:2]] == [0.0, 0.0]
    text = client.get("/metrics").text
    assert 'assay_flagged_items_total{flag="master_key",task="judge"} 2.0' in text
    assert 'flag="master_key",task="math"' not in text


def test_openapi_documents_the_contract_with_examples(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert {"/v1/rewards", "/v1/tasks", "/get_reward", "/healthz", "/readyz", "/metrics"} <= set(
        spec["paths"]
    )
    assert spec["components"]["schemas"]["RewardsRequest"]["examples"][0]["items"][0]["task"] == "math"
    assert "429" in spec["paths"]["/v1/rewards"]["post"]["responses"]


def test_openrlhf_get_reward_strips_the_prompt(client: TestClient) -> None:
    body = {
        "query": ["<|user|>1+1?<|assistant|>It is \\boxed{2}", "<s><|user|>2+2?<|assistant|>\\boxed{5}"],
        "prompts": ["<|user|>1+1?<|assistant|>", "<|user|>2+2?<|assistant|>"],
        "labels": ["2", "4"],
    }
    response = client.post("/get_reward", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["rewards"] == [1.0, 0.0] and data["scores"] == [1.0, 0.0]
    assert data["extra_logs"]["scored"] == [1.0, 1.0]


def _no_rewards(response: httpx.Response) -> dict[str, Any]:
    """An OpenRLHF batch with an invalid sample: 200 (nothing for OpenRLHF to retry), no rewards."""
    assert response.status_code == 200, response.text
    data = response.json()
    assert (data["rewards"], data["scores"], data["error"]["type"]) == (None, None, "validation_error")
    return dict(data["error"])


def test_openrlhf_answers_no_rewards_rather_than_reporting_a_failure_as_zero(client: TestClient) -> None:
    body = {"query": ["p \\boxed{2}", "q \\boxed{3}"], "prompts": ["p", "q"], "labels": ["", "3"]}
    error = _no_rewards(client.post("/get_reward", json=body))
    assert "1 of 2 items" in error["message"] and "#0 invalid" in error["message"]
    mismatched = {"query": ["a", "b"], "labels": ["1"]}
    error = _no_rewards(client.post("/get_reward", json=mismatched))
    assert "2 of 2 items" in error["message"] and "labels has 1 entries but query has 2" in error["message"]


def test_openrlhf_can_opt_into_zero_for_unscored_items(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(openrlhf_unscored="zero"))) as app:
        data = app.post(
            "/get_reward", json={"query": ["p \\boxed{2}", "q \\boxed{3}"], "labels": ["", "3"]}
        ).json()
    assert data["rewards"] == [0.0, 1.0]
    assert data["extra_logs"]["scored"] == [0.0, 1.0]


def test_openrlhf_lists_that_do_not_pair_up_make_every_sample_invalid(
    make_settings: Callable[..., Settings],
) -> None:
    # The schema allows lists of any lengths (issue 28: schemathesis): the answer is per sample, as for
    # any unscorable one, never a guess at which label belongs to which query.
    body = {"query": ["p \\boxed{2}", "q \\boxed{3}"], "labels": ["2", "3", "4"]}
    with TestClient(create_app(make_settings(openrlhf_unscored="zero"))) as app:
        response = app.post("/get_reward", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["rewards"] == [0.0, 0.0]
    assert response.json()["extra_logs"]["scored"] == [0.0, 0.0]


def test_the_openapi_document_states_the_item_caps(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(queue_size=7))) as app:
        schemas = app.get("/openapi.json").json()["components"]["schemas"]
    capped = [
        schemas["RewardsRequest"]["properties"]["items"],
        schemas["GroupsRequest"]["properties"]["groups"],
        schemas["GroupIn"]["properties"]["items"],
        schemas["OpenRLHFRequest"]["properties"]["query"],
    ]
    assert [array["maxItems"] for array in capped] == [7, 7, 7, 7]
