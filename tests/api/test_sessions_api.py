"""The session routes of issue 25, with their fixed wire names, through a real app."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from assay_testing import bwrap_works
from fastapi.testclient import TestClient
from session_testing import session_settings

from assay.api import create_app

ITEM = {"id": "q1", "task": "math", "prompt": "What is 6 * 7?", "reference": "42"}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    settings = session_settings(max_open=4)
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


@pytest.fixture(autouse=True)
def _no_session_left(client: TestClient) -> Iterator[None]:
    yield
    manager = client.app.state.engine.sessions.manager  # type: ignore[attr-defined]
    for sid in list(manager._sessions):  # tests may look inside: a failed test must not fill the cap
        manager.delete(sid)


def _create(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/sessions", json={"item": ITEM, "tools": ["python"], **body})
    assert response.status_code == 201, response.text
    return dict(response.json())


def _gone(response: httpx.Response, code: int) -> str:
    assert response.status_code == code, response.text
    error = response.json()["error"]
    assert error["type"] == "session_gone"
    return str(error["reason"])


def test_create_step_verify_delete(client: TestClient) -> None:
    created = _create(client, limits={"max_steps": 8})
    assert set(created) >= {"session_id", "tools", "expires_at"}
    (tool,) = created["tools"]
    assert tool["type"] == "function" and tool["function"]["name"] == "python"
    assert tool["function"]["parameters"]["required"] == ["code"]
    assert created["limits"]["max_steps"] == 8
    sid = created["session_id"]
    step = client.post(
        f"/v1/sessions/{sid}/step", json={"tool": "python", "arguments": {"code": "a = 6 * 7\na"}}
    )
    assert step.status_code == 200
    body = step.json()
    assert (body["observation"], body["status"], body["step"]) == ("42\n", "ok", 1)
    assert body["elapsed_ms"] > 0
    verdict = client.post(f"/v1/sessions/{sid}/verify", json={"response": "so the answer is \\boxed{42}"})
    assert verdict.status_code == 200
    result = verdict.json()
    assert (result["id"], result["task"], result["status"], result["reward"]) == ("q1", "math", "ok", 1.0)
    assert result["details"]["session"]["steps"] == 1
    assert result["details"]["session"]["statuses"] == {"ok": 1}
    assert client.delete(f"/v1/sessions/{sid}").status_code == 204
    assert client.delete(f"/v1/sessions/{sid}").status_code == 204
    reason = _gone(
        client.post(f"/v1/sessions/{sid}/step", json={"tool": "python", "arguments": {"code": "1"}}), 410
    )
    assert reason == "deleted"


def test_verify_is_the_same_verdict_as_rewards(client: TestClient) -> None:
    sid = _create(client)["session_id"]
    for response in ("\\boxed{41}", "no answer at all", "\\boxed{42}"):
        verdict = client.post(f"/v1/sessions/{sid}/verify", json={"response": response}).json()
        scored = client.post("/v1/rewards", json={"items": [{**ITEM, "response": response}]}).json()[
            "results"
        ][0]
        assert verdict.pop("details")["session"]["session_id"] == sid
        scored.pop("details")
        verdict.pop("elapsed_ms")
        scored.pop("elapsed_ms")
        assert verdict == scored
    client.delete(f"/v1/sessions/{sid}")


def test_a_traceback_is_an_observation_not_an_http_error(client: TestClient) -> None:
    sid = _create(client)["session_id"]
    step = client.post(f"/v1/sessions/{sid}/step", json={"tool": "python", "arguments": {"code": "1/0"}})
    assert step.status_code == 200
    assert step.json()["status"] == "tool_error" and "ZeroDivisionError" in step.json()["observation"]
    client.delete(f"/v1/sessions/{sid}")


def test_the_batch_form_steps_many_sessions_and_reports_gone_ones_in_place(client: TestClient) -> None:
    a, b = _create(client)["session_id"], _create(client)["session_id"]
    calls = [
        {"session_id": a, "tool": "python", "arguments": {"code": "x = 'a'; x"}},
        {"session_id": "s-unknown", "tool": "python", "arguments": {"code": "1"}},
        {"session_id": b, "tool": "python", "arguments": {"code": "'x' in globals()"}},
    ]
    response = client.post("/v1/sessions/step", json={"calls": calls})
    assert response.status_code == 200
    first, missing, third = response.json()["results"]
    assert (first["session_id"], first["observation"]) == (a, "'a'\n")
    assert missing["error"]["type"] == "session_gone"
    assert third["observation"] == "False\n"
    for sid in (a, b):
        client.delete(f"/v1/sessions/{sid}")


def test_unknown_sessions_answer_404_with_the_envelope(client: TestClient) -> None:
    assert "never created" in _gone(client.post("/v1/sessions/s-nope/verify", json={"response": "1"}), 404)
    _gone(client.post("/v1/sessions/s-nope/step", json={"tool": "python", "arguments": {}}), 404)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"item": {**ITEM, "response": "1"}, "tools": ["python"]}, "comes with POST"),
        (
            {"item": {**ITEM, "messages": [{"role": "assistant", "content": "1"}]}, "tools": ["python"]},
            "item.messages",
        ),
        ({"item": ITEM, "tools": ["pyhton"]}, 'did you mean "python"'),
        ({"item": {**ITEM, "task": "mth"}, "tools": ["python"]}, "unknown task"),
        ({"item": ITEM, "tools": ["python"], "limits": {"memory_mb": 10**6}}, "sessions.max_memory_mb"),
        ({"item": ITEM, "tools": []}, "tools"),
    ],
)
def test_a_bad_create_is_a_clear_422(client: TestClient, body: dict[str, Any], message: str) -> None:
    response = client.post("/v1/sessions", json=body)
    assert response.status_code == 422, response.text
    assert message in response.json()["error"]["message"]


def test_past_the_cap_creation_is_429_with_retry_after(client: TestClient) -> None:
    ids = [_create(client)["session_id"] for _ in range(4)]
    response = client.post("/v1/sessions", json={"item": ITEM, "tools": ["python"]})
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "1"
    assert response.json()["error"]["type"] == "sessions_full"
    assert response.json()["error"]["limit"] == 4  # what a client compares with the sessions it holds
    for sid in ids:
        client.delete(f"/v1/sessions/{sid}")
    assert client.post("/v1/sessions", json={"item": ITEM, "tools": ["python"]}).status_code == 201


def test_tasks_lists_the_tools(client: TestClient) -> None:
    tools = client.get("/v1/tasks").json()["tools"]
    assert "python" in [tool["function"]["name"] for tool in tools]


def test_metrics_show_sessions(client: TestClient) -> None:
    sid = _create(client)["session_id"]
    client.post(f"/v1/sessions/{sid}/step", json={"tool": "python", "arguments": {"code": "1/0"}})
    text = client.get("/metrics").text
    assert "assay_sessions_open" in text
    assert 'assay_session_tool_errors_total{reason="exception",tool="python"}' in text
    client.delete(f"/v1/sessions/{sid}")


def test_sessions_with_the_same_tools_share_one_remembered_list_of_schemas(client: TestClient) -> None:
    """/mcp's table of sessions' tool schemas (up to 100,000 entries) holds one list per set of tools, not a
    copy per session: the copies were most of the server's memory growth per step (issue 38)."""
    from assay.api.state import tools_of

    first, second = _create(client)["session_id"], _create(client)["session_id"]
    kept = tools_of(client.app, first)
    assert kept is not None and [t["function"]["name"] for t in kept] == ["python"]
    assert tools_of(client.app, second) is kept and tools_of(client.app, "s-unknown") is None
