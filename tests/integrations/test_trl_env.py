"""The TRL environment, inspected and driven the way TRL 1.16's GRPOTrainer does it."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import httpx
import pytest
from assay_testing import LiveServer, bwrap_works
from session_testing import SQL, sql_session_settings
from transformers.utils import get_json_schema

from assay.integrations.trl_env import AssayEnv, AssayPythonEnv


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    settings = sql_session_settings(tmp_path_factory.mktemp("trl_env_sql"))
    live = LiveServer(settings.model_copy(update={"plugins": ["assay_test_plugins:KeyedScorer"]}))
    live.start()
    yield live
    live.stop()


def _tools(env: AssayEnv) -> list[object]:
    """GRPOTrainer's selection: public functions of the class except reset and get_reward."""
    members = inspect.getmembers(type(env), predicate=inspect.isfunction)
    return [
        getattr(env, name)
        for name, _ in members
        if name not in ("reset", "get_reward") and not name.startswith("_")
    ]


def test_the_only_tool_is_python_with_a_schema_transformers_can_build(server: LiveServer) -> None:
    env = AssayPythonEnv(server.url)
    (tool,) = _tools(env)
    schema = get_json_schema(tool)
    assert schema["function"]["name"] == "python"
    assert schema["function"]["parameters"]["required"] == ["code"]


def test_reset_gives_each_rollout_a_fresh_session(server: LiveServer) -> None:
    env = AssayPythonEnv(server.url, limits={"max_steps": 4})
    row = {"prompt": [{"role": "user", "content": "6 * 7?"}], "task": "math", "reference": "42", "extra": 1}
    assert env.reset(**row) is None
    assert env.python(code="x = 6 * 7\nx") == "42\n"
    assert env.python(code="x") == "42\n"
    env.reset(**row)
    assert "NameError" in env.python(code="x")
    for _ in range(3):
        env.python(code="1")
    assert env.python(code="1").startswith("[the session's limit of 4 tool calls")
    assert env.python(code="1").startswith("[session ended: ")


def test_the_tools_named_are_offered_with_the_servers_schemas(server: LiveServer) -> None:
    env = AssayEnv(server.url, tools=["sql", "python"])
    offered = {schema["function"]["name"]: schema for schema in server.engine.session_tools()}
    built = {tool.__name__: get_json_schema(tool)["function"] for tool in _tools(env)}  # type: ignore[attr-defined]
    assert set(built) == {"sql", "python"}
    for name, schema in built.items():
        server_side = offered[name]["function"]
        assert schema["description"] == server_side["description"]
        assert schema["parameters"]["required"] == server_side["parameters"]["required"]
        assert set(schema["parameters"]["properties"]) == set(server_side["parameters"]["properties"])


def test_a_sql_rollout_queries_its_items_database_through_trls_tool_call(server: LiveServer) -> None:
    env = AssayEnv(server.url, task="sql")  # the tools the sql task brings: sql
    tools = {tool.__name__: tool for tool in _tools(env)}  # type: ignore[attr-defined]
    assert list(tools) == ["sql"]
    row = {k: v for k, v in SQL.items() if k != "task"}  # a row that names no task is the env's task's
    env.reset(prompt=[{"role": "user", "content": "How many students?"}], **row)
    arguments = {"query": "SELECT count(*) AS n FROM students"}  # GRPOTrainer calls tool(**arguments)
    assert tools["sql"](**arguments) == "| n |\n|---|\n| 40 |\n(1 row)"
    assert tools["sql"](query="DELETE FROM students").startswith("SQL error")


def test_optional_and_enum_arguments_keep_their_schema(server: LiveServer) -> None:
    (tool,) = _tools(AssayEnv(server.url, tools=["repo"]))
    schema = get_json_schema(tool)["function"]
    command = schema["parameters"]["properties"]["command"]
    assert schema["parameters"]["required"] == ["command"]
    assert command["enum"] == ["view", "str_replace", "create", "run", "diff"]
    assert schema["parameters"]["properties"]["start_line"]["type"] == "integer"


def test_a_tool_or_task_the_server_does_not_offer_is_a_clear_error(server: LiveServer) -> None:
    with pytest.raises(ValueError, match=r'no tool "sqll" \(did you mean "sql"\?\)'):
        AssayEnv(server.url, tools=["sqll"])
    with pytest.raises(ValueError, match=r'no task "maths" \(did you mean "math"\?\)'):
        AssayEnv(server.url, task="maths")


def test_a_task_that_brings_no_tool_of_its_own_gets_python(server: LiveServer) -> None:
    (tool,) = _tools(AssayEnv(server.url, task="math"))
    assert tool.__name__ == "python"  # type: ignore[attr-defined]


def test_a_row_keeps_its_tasks_own_fields(server: LiveServer) -> None:
    # `keyed` declares `answer_key` (Scorer.Fields); the server lists it among the task's item_fields.
    env = AssayEnv(server.url, task="keyed")
    env.reset(prompt="Capital of France?", answer_key=["Paris"], difficulty="easy")
    verdict = httpx.post(f"{server.url}/v1/sessions/{env._session}/verify", json={"response": "Paris"})
    assert verdict.json()["reward"] == 1.0
