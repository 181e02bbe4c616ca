"""verl-tool's tool-server wire format (`/get_observation`) over Assay sessions."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from assay_testing import bwrap_works
from fastapi.testclient import TestClient
from session_testing import SQL, ServeHandle, sql_session_settings

import assay.api.verl_tool as verl_tool
from assay.api import create_app
from assay.distributed.bindings import RayBindings


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    settings = sql_session_settings(tmp_path_factory.mktemp("verl_tool_sql"))
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


def _turn(client: TestClient, ids: list[str], actions: list[str], finish: list[bool]) -> dict[str, Any]:
    body = {"trajectory_ids": ids, "actions": actions, "finish": finish}
    response = client.post("/get_observation", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_trajectories_keep_their_state_and_finish_ends_them(client: TestClient) -> None:
    first = _turn(
        client,
        ["a", "b", "c"],
        [
            "Let me compute.\n```python\nx = 20\nprint(x)\n```",
            "<python>y = 'b'</python>",
            "I am done thinking.",
        ],
        [False, False, False],
    )
    assert first == {
        "observations": ["20\n", "", ""],
        "dones": [False, False, False],
        "valids": [True, True, False],
    }
    second = _turn(
        client,
        ["a", "b"],
        ["```python\nx + 22\n```", "<python>print('x' in globals(), y)</python>"],
        [False, False],
    )
    assert second["observations"] == ["42\n", "False b\n"]
    ended = _turn(client, ["a", "b"], ["", ""], [True, True])
    assert ended == {"observations": ["", ""], "dones": [True, True], "valids": [True, True]}
    again = _turn(client, ["a"], ["```python\nprint('x' in globals())\n```"], [False])
    assert again["observations"] == ["False\n"]  # a finished id that comes back starts afresh
    _turn(client, ["a"], [""], [True])


def test_a_traceback_is_the_observation(client: TestClient) -> None:
    turn = _turn(client, ["t"], ["```python\n1/0\n```"], [False])
    assert "ZeroDivisionError" in turn["observations"][0] and turn["valids"] == [True]
    _turn(client, ["t"], [""], [True])


def test_mismatched_lists_are_a_clear_422(client: TestClient) -> None:
    response = client.post("/get_observation", json={"trajectory_ids": ["a", "b"], "actions": ["x"]})
    assert response.status_code == 422 and "one entry each" in response.json()["error"]["message"]


def test_a_tool_call_runs_any_tool_of_the_session_by_name(client: TestClient) -> None:
    query = json.dumps({"name": "sql", "arguments": {"query": "SELECT count(*) AS n FROM students"}})
    body = {
        "trajectory_ids": ["q"],
        "actions": [f"Let me look.\n<tool_call>\n{query}\n</tool_call>"],
        "finish": [False],
        "extra_fields": [{"item": SQL, "tools": ["sql", "python"]}],
    }
    first = client.post("/get_observation", json=body).json()
    assert first == {"observations": ["| n |\n|---|\n| 40 |\n(1 row)"], "dones": [False], "valids": [True]}
    second = _turn(client, ["q"], ["<python>print(6 * 7)</python>"], [False])  # the same session
    assert second["observations"] == ["42\n"]
    refused = _turn(
        client, ["q"], ['<tool_call>{"name": "sql", "arguments": {"q": "1"}}</tool_call>'], [False]
    )
    assert refused["valids"] == [True] and "query" in refused["observations"][0]  # the session's own refusal
    _turn(client, ["q"], [""], [True])


def test_code_that_names_no_tool_runs_in_the_tasks_one_tool_else_asks_to_name_one(
    client: TestClient,
) -> None:
    # A sql item with no tools named: its session holds the tool its task brings, and a fenced block
    # (verl-tool's python_code form) is that tool's one argument (the query), not python code.
    query = "```\nSELECT count(*) AS n FROM students\n```"
    body = {"trajectory_ids": ["s"], "actions": [query], "finish": [False], "extra_fields": [{"item": SQL}]}
    answer = client.post("/get_observation", json=body).json()
    assert answer == {"observations": ["| n |\n|---|\n| 40 |\n(1 row)"], "dones": [False], "valids": [True]}
    _turn(client, ["s"], [""], [True])
    several = {**body, "trajectory_ids": ["m"], "extra_fields": [{"item": SQL, "tools": ["sql", "python"]}]}
    refused = client.post("/get_observation", json=several).json()
    assert refused["valids"] == [False] and refused["dones"] == [False]
    assert "several tools (sql, python)" in refused["observations"][0]
    bound = asyncio.run(client.app.state.engine.bindings.snapshot(verl_tool.SPACE))
    assert "m" not in bound  # no session opened for it


def test_a_trajectory_table_that_does_not_answer_is_a_503_to_retry_never_an_observation(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under `assay serve --ray` the table is a deployment a replica loss can take away for a while."""

    engine = client.app.state.engine
    monkeypatch.setattr(engine, "bindings", RayBindings(ServeHandle(lost=True)))
    body = {"trajectory_ids": ["lost"], "actions": ["<python>print(1)</python>"], "finish": [False]}
    response = client.post("/get_observation", json=body)
    assert response.status_code == 503, response.text
    assert response.json()["error"]["type"] == "unavailable" and "observations" not in response.json()
    assert response.headers["Retry-After"] == "1"
    assert engine.sessions.open_count == 0
