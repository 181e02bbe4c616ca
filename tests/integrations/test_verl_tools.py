"""The verl adapter against a live Assay server, driven by verl 0.9.1's own `ToolAgentLoop` (issue 38).

The tool is loaded from a tool-config YAML by verl's `initialize_tools_from_config`; only the LLM is
scripted (tests/integrations/verl_loop.py). verl's agent-loop module needs hydra-core, which
scripts/setup_trainer_clients.sh installs without its dependencies."""

from __future__ import annotations

import asyncio
import statistics
import time
import warnings
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psutil
import pytest
import verl_loop as V
from assay_testing import LiveServer, bwrap_works
from session_testing import SQL, sql_session_settings

from assay.errors import RewardUnavailable
from assay.integrations.clients import RolloutAborted, aclose_loop_clients, shared_session_client
from assay.integrations.verl import compute_score

pytest.importorskip("hydra", reason="verl's agent loop needs hydra-core (scripts/setup_trainer_clients.sh)")
with warnings.catch_warnings():  # verl imports Ray's state API from its deprecated place
    warnings.simplefilter("ignore", DeprecationWarning)
    import verl.experimental.agent_loop.tool_agent_loop  # noqa: F401

T = TypeVar("T")
MAX_OPEN = 32  # fewer than the trajectories of a step: the adapter must wait for free sessions


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    live = LiveServer(sql_session_settings(tmp_path_factory.mktemp("verl_tools_sql"), max_open=MAX_OPEN))
    live.keep_connections_as_served().start()
    with httpx.Client(base_url=live.url) as client:  # the python tool's helpers start with its first session
        opened = client.post("/v1/sessions", json={"item": {"task": "math"}, "tools": ["python"]}).json()
        client.delete(f"/v1/sessions/{opened['session_id']}")
    yield live
    live.stop()


@pytest.fixture(scope="module")
def tok(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return V.tokenizer(tmp_path_factory.mktemp("verl_tokenizer"))


def _run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run`, closing the loop's shared clients before the loop goes (as a trainer's never does)."""

    async def closing() -> T:
        try:
            return await main
        finally:
            await aclose_loop_clients()

    return asyncio.run(closing())


def _sandboxes() -> int:
    """Processes of this test's sessions: bubblewrap's and what runs under it."""
    return sum(
        any(p.name() == "bwrap" for p in [child, *child.parents()])
        for child in psutil.Process().children(recursive=True)
    )


def _steps(server: LiveServer, tok: Any, tmp_path: Path, trajectories: int, parallel: int, det: bool) -> None:
    """Two steps of verl's loop: every observation right, no error shown, no session left open."""
    baseline = _sandboxes()

    async def main() -> None:
        loop = V.agent_loop(tok, V.tools_yaml(tmp_path, server.url), parallel, det)
        for step in (1, 2):
            await V.run_step_and_release(loop, tok, step, trajectories)
            assert server.engine.sessions.open_count == 0
            assert _sandboxes() == baseline

    _run(main())


@pytest.mark.parametrize(("parallel", "determinism"), [(1, False), (2, False), (1, True)])
def test_one_trajectory_one_session_in_verls_own_loop(
    server: LiveServer, tok: Any, tmp_path: Path, parallel: int, determinism: bool
) -> None:
    _steps(server, tok, tmp_path, 40, parallel, determinism)


@pytest.mark.slow
def test_256_trajectories_with_parallel_calls_and_full_determinism(
    server: LiveServer, tok: Any, tmp_path: Path
) -> None:
    # 256 trajectories for 32 sessions: 224 wait for a free one, none is shown the 429
    _steps(server, tok, tmp_path, 256, 2, True)


def test_a_server_that_stays_full_fails_the_rollout_and_shows_the_policy_nothing(
    server: LiveServer, tok: Any, tmp_path: Path
) -> None:
    async def main() -> None:
        client = shared_session_client(server.url)
        held = [await client.aopen_session({"task": "math"}, ["python"]) for _ in range(MAX_OPEN)]
        try:
            loop = V.agent_loop(tok, V.tools_yaml(tmp_path, server.url, open_wait_s=0.5), 1, False)
            with pytest.raises(RolloutAborted, match="429"):
                await V.run_step(loop, 1, 1)
        finally:
            for session in held:
                await client.aclose_session(session.session_id)

    _run(main())
    assert server.engine.sessions.open_count == 0


def test_a_tool_call_costs_about_a_raw_step(server: LiveServer, tok: Any, tmp_path: Path) -> None:
    from verl.experimental.agent_loop.tool_agent_loop import AgentData
    from verl.experimental.agent_loop.tool_parser import FunctionCall

    async def main() -> tuple[float, float]:
        limits = {"max_steps": 256}
        loop = V.agent_loop(tok, V.tools_yaml(tmp_path, server.url, limits=limits), 1, False)
        client = shared_session_client(server.url)
        kwargs = {"python": {"create_kwargs": {"item": {"task": "math"}}}}
        agent_data = AgentData([], [], [], None, None, {}, "r", kwargs)
        raw = (await client.aopen_session({"task": "math"}, ["python"], limits)).session_id
        call = FunctionCall(name="python", arguments='{"code": "x = 1"}')
        through, direct = [], []
        for _ in range(120):  # interleaved, so both see the same load
            started = time.perf_counter()
            await loop._call_tool(call, kwargs, agent_data)
            through.append(time.perf_counter() - started)
            started = time.perf_counter()
            await client.astep(raw, "python", {"code": "x = 1"})
            direct.append(time.perf_counter() - started)
        await client.aclose_session(raw)
        del agent_data
        await loop.tools["python"].wait_closed()
        return statistics.median(through[20:]), statistics.median(direct[20:])

    through, direct = _run(main())
    assert through <= 1.5 * direct, (through, direct)
    assert server.engine.sessions.open_count == 0


def test_an_answer_only_a_tool_printed_earns_nothing(server: LiveServer, tok: Any, tmp_path: Path) -> None:
    """verl's naive reward manager decodes the whole response, tool output included."""

    async def main() -> list[Any]:
        tools = V.tools_yaml(tmp_path, server.url)
        loops = [V.agent_loop(tok, tools, 1, False, answer_in_tool=True), V.agent_loop(tok, tools, 1, False)]
        outputs = [o for loop in loops for o in await V.run_step(loop, 3, 2)]
        for loop in loops:
            await loop.tools["python"].wait_closed()
        return outputs

    outputs = _run(main())
    scores = []
    for output in outputs:
        solution = tok.decode(output.response_ids, skip_special_tokens=True)  # as verl's manager does
        assert "\\boxed{300" in solution
        extra_info = dict(output.extra_fields)
        score = compute_score("math", solution, "3000", extra_info, url=server.url)["score"]
        scores.append(score)
    assert scores == [0.0, 0.0, 1.0, 0.0]  # only the honest 3000 is the model's
    unrecorded = tok.decode(outputs[0].response_ids, skip_special_tokens=True)
    assert compute_score("math", unrecorded, "3000", {}, url=server.url)["score"] == 1.0  # what verl paid
    assert server.engine.sessions.open_count == 0


def test_the_yaml_loads_the_tool_with_the_servers_schema(server: LiveServer, tmp_path: Path) -> None:
    from verl.tools.tool_registry import initialize_tools_from_config

    (tool,) = initialize_tools_from_config(str(V.tools_yaml(tmp_path, server.url)))
    schema = tool.get_openai_tool_schema()
    assert schema.function.name == "python"
    assert schema.function.parameters.required == ["code"]


def test_an_entry_naming_no_tool_is_its_items_tasks_one_tool(server: LiveServer) -> None:
    """Neither `config.tool` nor a schema: the tool is the one the default item's task brings (sql for
    a sql item, python for math, which brings none), never python for every task."""
    from assay.integrations.verl_tools import AssaySessionTool

    sql = AssaySessionTool({"url": server.url, "item": SQL}, None)
    assert sql.tool == "sql" and sql.get_openai_tool_schema().function.parameters.required == ["query"]
    assert AssaySessionTool({"url": server.url}, None).tool == "python"
    with pytest.raises(ValueError, match=r'no task "maths" \(did you mean "math"'):
        AssaySessionTool({"url": server.url, "item": {"task": "maths"}}, None)


def test_calc_reward_is_the_servers_verdict_and_never_a_made_up_zero(
    server: LiveServer, tmp_path: Path
) -> None:
    from verl.experimental.agent_loop.tool_agent_loop import AgentData
    from verl.tools.tool_registry import initialize_tools_from_config

    (tool,) = initialize_tools_from_config(str(V.tools_yaml(tmp_path, server.url)))
    item = {"task": "math", "prompt": "What is 6 * 7?", "reference": "42"}

    async def main() -> None:
        agent_data = AgentData([], [], [], None, None, {}, "r", {})
        instance, _ = await tool.create(create_kwargs={"item": item})
        assert (await tool.execute(instance, {"code": "print(6 * 7)"}, agent_data=agent_data))[
            0
        ].text == "42\n"
        right = await tool.calc_reward(instance, agent_data=agent_data, response="\\boxed{42}")
        wrong = await tool.calc_reward(instance, agent_data=agent_data, response="\\boxed{41}")
        assert (right, wrong) == (1.0, 0.0)
        await tool.release(instance)
        bad, _ = await tool.create(create_kwargs={"item": {"task": "math", "reference": "\\frac{"}})
        with pytest.raises(RewardUnavailable, match="invalid"):
            await tool.calc_reward(bad, response="\\boxed{1}")
        await tool.release(bad)
        del agent_data
        await tool.wait_closed()

    _run(main())
    assert server.engine.sessions.open_count == 0


def test_any_session_tool_is_a_native_tool_with_the_servers_schema(
    server: LiveServer, tok: Any, tmp_path: Path
) -> None:
    from verl.experimental.agent_loop.tool_agent_loop import AgentData
    from verl.experimental.agent_loop.tool_parser import FunctionCall
    from verl.tools.tool_registry import initialize_tools_from_config

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

    async def main() -> None:
        loop = V.agent_loop(tok, config, 1, False)
        tool = loop.tools["sql"]
        kwargs = {"sql": {"create_kwargs": {"item": SQL}}}
        agent_data = AgentData([], [], [], None, None, {}, "sql-1", kwargs)
        count = FunctionCall(name="sql", arguments='{"query": "SELECT count(*) AS n FROM students"}')
        response, reward, metrics = await loop._call_tool(count, kwargs, agent_data)
        assert (response.text, reward, metrics["status"]) == ("| n |\n|---|\n| 40 |\n(1 row)", 0.0, "ok")
        drop = FunctionCall(name="sql", arguments='{"query": "DROP TABLE students"}')
        response, _, metrics = await loop._call_tool(drop, kwargs, agent_data)
        assert metrics["status"] == "tool_error" and metrics["step"] == 2  # the same session, refused
        instance, _ = await tool.create(create_kwargs={"item": SQL})
        gold = "SELECT count(*) FROM students"
        assert await tool.calc_reward(instance, agent_data=agent_data, response=gold) == 1.0
        del agent_data
        await tool.wait_closed()

    _run(main())
    assert server.engine.sessions.open_count == 0
