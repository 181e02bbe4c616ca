"""verl-tool's tool-server wire format (`/get_observation`) over Assay sessions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from assay_testing import bwrap_works
from fastapi.testclient import TestClient
from session_testing import SQL, sql_session_settings

from assay.api import create_app
from assay.api.verl_tool import call_of, code_of


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


@pytest.mark.parametrize(
    ("action", "code"),
    [
        ("```python\nprint(1)\n```", "print(1)\n"),
        ("first ```python\na=1\n``` then ```py\nb=2\n```", "b=2\n"),
        ("<python>x</python> and <python>y</python>", "y"),
        ("no code here", None),
        ("```python\n\n```", None),
    ],
)
def test_the_code_of_an_action_is_its_last_block(action: str, code: str | None) -> None:
    assert code_of(action) == code


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


@pytest.mark.parametrize(
    ("action", "call"),
    [
        (
            '<tool_call>{"name": "sql", "arguments": {"query": "SELECT 1"}}</tool_call>',
            ("sql", {"query": "SELECT 1"}),
        ),
        (
            '<tool_call>{"name": "a"}</tool_call> <tool_call>{"name": "b", "arguments": {}}</tool_call>',
            ("b", {}),
        ),
        ("```python\nprint(1)\n```", ("python", {"code": "print(1)\n"})),
        ("<tool_call>not json</tool_call>", None),
        ('<tool_call>["sql"]</tool_call>', None),
        ("no call here", None),
    ],
)
def test_the_call_of_an_action_is_its_last_tool_call_else_its_code(action: str, call: object) -> None:
    assert call_of(action) == call
