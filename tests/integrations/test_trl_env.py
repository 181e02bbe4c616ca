"""The TRL environment, inspected and driven the way TRL 1.16's GRPOTrainer does it."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import httpx
import pytest
from assay_testing import LiveServer, bwrap_works
from session_testing import SQL, sql_session_settings
from transformers.utils import get_json_schema

from assay.integrations import trl_env
from assay.integrations.clients import RolloutAborted
from assay.integrations.trl import AssayReward
from assay.integrations.trl_env import AssayEnv, AssayPythonEnv, end_sessions

MAX_OPEN = 4
ROW = {"prompt": [{"role": "user", "content": "6 * 7?"}], "task": "math", "reference": "42"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    settings = sql_session_settings(tmp_path_factory.mktemp("trl_env_sql"), max_open=MAX_OPEN)
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
    env.python(code="1")  # the rollout's first call takes its session
    verdict = httpx.post(
        f"{server.url}/v1/sessions/{env._session}/verify", json={"response": "Paris"}, timeout=60
    )
    end_sessions([env])
    assert verdict.json()["reward"] == 1.0


@pytest.fixture
def full(server: LiveServer) -> Iterator[list[str]]:
    """The server's every session held by another client (another training process)."""
    with server.client() as client:
        body = {"item": {"task": "math"}, "tools": ["python"]}
        held = [client.post("/v1/sessions", json=body).json()["session_id"] for _ in range(MAX_OPEN)]
        yield held
        for session in held:
            client.delete(f"/v1/sessions/{session}")


def test_a_full_server_is_waited_for_at_the_tool_call_never_at_reset(
    server: LiveServer, full: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []

    def another_rollout_ends(seconds: float) -> None:  # while this one waits, another process's ends
        waits.append(seconds)
        httpx.delete(f"{server.url}/v1/sessions/{full.pop()}")

    monkeypatch.setattr(trl_env, "_sleep", another_rollout_ends)
    env = AssayPythonEnv(server.url)
    assert env.reset(**ROW) is None  # TRL resets every rollout first, in one thread: it must not wait
    assert env.python(code="print(6 * 7)") == "42\n"
    assert len(waits) == 1 and waits[0] >= 1.0  # the server's Retry-After, honoured
    end_sessions([env])
    assert server.engine.sessions.open_count == len(full)


def test_a_server_that_stays_full_fails_the_step_and_shows_the_policy_nothing(
    server: LiveServer, full: list[str]
) -> None:
    env = AssayPythonEnv(server.url, open_wait_s=0)
    env.reset(**ROW)
    with pytest.raises(RolloutAborted, match="stayed full"):  # past TRL's `except Exception`
        env.python(code="1")


def test_a_server_full_of_this_processs_own_rollouts_fails_at_once(server: LiveServer) -> None:
    envs = [AssayPythonEnv(server.url) for _ in range(MAX_OPEN + 1)]
    for env in envs:
        env.reset(**ROW)
    for env in envs[:MAX_OPEN]:
        assert env.python(code="1 + 1") == "2\n"
    with pytest.raises(RolloutAborted, match=f"allows {MAX_OPEN} open sessions and this process holds"):
        envs[-1].python(code="1")  # waiting could only deadlock: TRL steps the others in this thread
    end_sessions(envs)
    assert server.engine.sessions.open_count == 0


def test_the_reward_ends_the_rollouts_sessions(server: LiveServer) -> None:
    envs = [AssayPythonEnv(server.url) for _ in range(2)]
    for env in envs:
        env.reset(**ROW)
        env.python(code="x = 42")
    completions = [[{"role": "assistant", "content": "\\boxed{42}"}]] * 2
    reward = AssayReward(server.url)
    assert reward([ROW["prompt"]] * 2, completions, answer=["42", "41"], environments=envs) == [1.0, 0.0]
    assert server.engine.sessions.open_count == 0
    with pytest.raises(RuntimeError, match="reset"):  # the rollout is over: no fresh interpreter behind it
        envs[0].python(code="x")


def test_rollouts_that_call_no_tool_give_their_sessions_to_ones_that_do(server: LiveServer) -> None:
    envs = [AssayPythonEnv(server.url) for _ in range(2 * MAX_OPEN)]
    for env in envs:  # every reset asks for a session ahead; the server has one for half of them
        env.reset(**ROW)
    for env in envs[MAX_OPEN:]:  # which half got one is the order the opens ran in
        assert env.python(code="1 + 1") == "2\n"
    end_sessions(envs)
    assert server.engine.sessions.open_count == 0
