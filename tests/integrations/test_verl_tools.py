"""The verl adapter against a live Assay server, loaded by verl 0.9.1's own tool-config loader.

verl's `ToolAgentLoop` cannot be imported here (its module needs hydra, which verl does not declare and
which would pull an antlr4 that breaks math-verify), so `_call` does what its `_call_tool` does, in its
order: `create(create_kwargs=...)`, `execute(instance_id, args, agent_data=...)`, `release(instance_id)`
for every single call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from assay_testing import LiveServer, bwrap_works
from session_testing import SQL, sql_session_settings
from verl.tools.tool_registry import initialize_tools_from_config

from assay.errors import RewardUnavailable

ITEM = {"task": "math", "prompt": "What is 6 * 7?", "reference": "42"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    live = LiveServer(sql_session_settings(tmp_path_factory.mktemp("verl_tools_sql")))
    live.start()
    yield live
    live.stop()


def _tools(tmp_path: Path, url: str) -> dict[str, Any]:
    config = tmp_path / "tools.yaml"
    config.write_text(
        "tools:\n"
        "  - class_name: assay.integrations.verl_tools.AssaySessionTool\n"
        f"    config: {{type: native, url: '{url}', tool: python, limits: {{max_steps: 8}}}}\n"
    )
    return {tool.name: tool for tool in initialize_tools_from_config(str(config))}


def _agent_data(request_id: str) -> Any:
    """The fields of verl's AgentData that the tool path reads."""
    return SimpleNamespace(request_id=request_id, tools_kwargs={"python": {"create_kwargs": {"item": ITEM}}})


def _caller(tools: dict[str, Any]) -> Callable[[Any, str], Any]:
    async def call_tool(agent_data: Any, code: str) -> Any:
        tool = tools["python"]
        args = json.loads(json.dumps({"code": code}))  # the loop parses the model's JSON text
        kwargs = agent_data.tools_kwargs.get("python", {})
        instance_id, _ = await tool.create(create_kwargs=kwargs.get("create_kwargs", {}))
        try:
            return await tool.execute(instance_id, args, agent_data=agent_data)
        finally:
            await tool.release(instance_id)

    return lambda agent_data, code: asyncio.run(call_tool(agent_data, code))


def test_the_yaml_loads_the_tool_with_the_servers_schema(server: LiveServer, tmp_path: Path) -> None:
    tools = _tools(tmp_path, server.url)
    schema = tools["python"].get_openai_tool_schema()
    assert schema.function.name == "python"
    assert schema.function.parameters.required == ["code"]


def test_state_survives_verls_per_call_create_and_release(server: LiveServer, tmp_path: Path) -> None:
    call = _caller(_tools(tmp_path, server.url))
    first, second = _agent_data("traj-1"), _agent_data("traj-2")
    call(first, "x = 6 * 7")
    call(second, "x = 'other'")
    response, reward, metrics = call(first, "x")
    assert (response.text, reward, metrics["status"], metrics["step"]) == ("42\n", 0.0, "ok", 2)
    error, _, metrics = call(second, "1 / 0")
    assert "ZeroDivisionError" in error.text and metrics["status"] == "tool_error"


def test_calc_reward_is_the_servers_verdict_and_never_a_made_up_zero(
    server: LiveServer, tmp_path: Path
) -> None:
    tool = _tools(tmp_path, server.url)["python"]
    call = _caller({"python": tool})
    agent_data = _agent_data("traj-3")
    call(agent_data, "print(6 * 7)")
    instance, _ = asyncio.run(tool.create(create_kwargs={"item": ITEM}))
    right = asyncio.run(tool.calc_reward(instance, agent_data=agent_data, response="\\boxed{42}"))
    wrong = asyncio.run(tool.calc_reward(instance, agent_data=agent_data, response="\\boxed{41}"))
    assert (right, wrong) == (1.0, 0.0)
    bad, _ = asyncio.run(tool.create(create_kwargs={"item": {"task": "math", "reference": "\\frac{"}}))
    with pytest.raises(RewardUnavailable, match="invalid"):
        asyncio.run(tool.calc_reward(bad, response="\\boxed{1}"))
    asyncio.run(tool.close_trajectory("traj-3"))
    _, _, metrics = call(agent_data, "print(1)")
    assert metrics["status"] == "ok"  # a closed trajectory that is called again gets a fresh session


def test_any_session_tool_is_a_native_tool_with_the_servers_schema(
    server: LiveServer, tmp_path: Path
) -> None:
    config = tmp_path / "tools.yaml"
    config.write_text(
        "tools:\n"
        "  - class_name: assay.integrations.verl_tools.AssaySessionTool\n"
        f"    config: {{type: native, url: '{server.url}'}}\n"
        "    tool_schema:\n"  # hand-written: it names the tool; the schema is the server's
        "      type: function\n"
        "      function: {name: sql, description: query, parameters: {type: object, properties: {}}}\n"
    )
    (tool,) = initialize_tools_from_config(str(config))
    (offered,) = [t for t in server.engine.session_tools() if t["function"]["name"] == "sql"]
    schema = tool.get_openai_tool_schema().model_dump(exclude_unset=True)
    assert schema["function"]["description"] == offered["function"]["description"]
    assert schema["function"]["parameters"]["required"] == ["query"]

    async def call(request_id: str, arguments: str) -> Any:  # verl's _call_tool, for the sql tool
        instance_id, _ = await tool.create(create_kwargs={"item": SQL})
        try:
            return await tool.execute(
                instance_id, json.loads(arguments), agent_data=SimpleNamespace(request_id=request_id)
            )
        finally:
            await tool.release(instance_id)

    response, reward, metrics = asyncio.run(call("sql-1", '{"query": "SELECT count(*) AS n FROM students"}'))
    assert (response.text, reward, metrics["status"]) == ("| n |\n|---|\n| 40 |\n(1 row)", 0.0, "ok")
    response, _, metrics = asyncio.run(call("sql-1", '{"query": "DROP TABLE students"}'))
    assert metrics["status"] == "tool_error" and metrics["step"] == 2  # the same session, refused
    instance, _ = asyncio.run(tool.create(create_kwargs={"item": SQL}))
    agent_data = SimpleNamespace(request_id="sql-1")
    gold = "SELECT count(*) FROM students"
    assert asyncio.run(tool.calc_reward(instance, agent_data=agent_data, response=gold)) == 1.0
    asyncio.run(tool.close_trajectory("sql-1"))
