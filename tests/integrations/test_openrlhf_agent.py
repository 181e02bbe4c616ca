"""OpenRLHF 0.11.2's own `MultiTurnAgentExecutor` over Assay sessions (issue 38 item 5): only vLLM is
scripted (it answers each trajectory's turns from its prompt); the executor, its loop and its context
building are OpenRLHF's."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from assay_testing import LiveServer, bwrap_works
from session_testing import session_settings

from assay.integrations import clients
from assay.integrations.clients import aclose_loop_clients

with contextlib.suppress(ImportError):  # the marker below skips locally and fails in CI without it
    from assay.integrations import openrlhf_agent

pytestmark = pytest.mark.requires_trainer_clients
MAX_OPEN = 16  # fewer than the trajectories: most wait for a free session


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    live = LiveServer(session_settings(max_open=MAX_OPEN)).keep_connections_as_served()
    live.start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tiny_models import build_tokenizer

    return build_tokenizer(Path(tmp_path_factory.mktemp("tok")))


def _turns(t: int) -> list[str]:
    """Trajectory t's turns: state kept across calls; odd ones have a tool print the answer and claim it."""
    printed = "```python\nprint('\\\\bo' + 'xed{' + str(6 * 7) + '}')\n```"  # no answer in its own text
    last = printed if t % 2 else "```python\nprint(x * 0 + 42)\n```"
    answer = "the tool printed it" if t % 2 else "so it is \\boxed{42}"
    return [f"```python\nx = {t}\nprint(x)\n```", "```python\nprint(x + 1)\n```", last, answer]


class ScriptedEngine:
    """Where OpenRLHF awaits vLLM: the next turn of the trajectory the context belongs to."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    async def generate(self, prompt_ids: list[int], params: Any, multi_modal_data: Any = None) -> Any:
        context = self.tokenizer.decode(prompt_ids)
        match = re.search(r"Trajectory (\d+):", context)
        assert match is not None
        text = _turns(int(match.group(1)))[context.count("<tool_response>")]
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        output = SimpleNamespace(token_ids=ids, text=text, finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


def _expected(t: int) -> list[str]:
    return [f"{t}\n", f"{t + 1}\n", "\\boxed{42}\n" if t % 2 else "42\n"]


def _run(server: LiveServer, tokenizer: Any, monkeypatch: pytest.MonkeyPatch, trajectories: int) -> None:
    monkeypatch.setenv("ASSAY_URL", server.url)
    executor = openrlhf_agent.AgentExecutor()
    engine = ScriptedEngine(tokenizer)

    async def one(t: int) -> dict[str, Any]:
        params = SimpleNamespace(max_tokens=None, logprobs=None)
        return dict(await executor.execute(f"Trajectory {t}: 6*7?\n", "42", params, 4096, tokenizer, engine))

    async def main() -> list[dict[str, Any]]:
        try:
            outputs = await asyncio.gather(*(one(t) for t in range(trajectories)))
            await openrlhf_agent.wait_closed()
            return outputs
        finally:
            await aclose_loop_clients()

    outputs = asyncio.run(main())
    for t, output in enumerate(outputs):
        context = tokenizer.decode(output["observation_tokens"])
        seen = re.findall(r"<tool_response>\n(.*?)\n</tool_response>", context, re.S)
        assert seen == _expected(t), (t, seen)
        assert output["reward"] == (0.0 if t % 2 else 1.0), t  # the tool's \boxed{42} earns nothing
    assert server.engine.sessions.open_count == 0


def test_openrlhfs_executor_keeps_one_session_per_trajectory(
    server: LiveServer, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(server, tokenizer, monkeypatch, 64)


@pytest.mark.slow
def test_256_trajectories_in_openrlhfs_executor(
    server: LiveServer, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run(server, tokenizer, monkeypatch, 256)


def test_a_trajectory_out_of_tokens_closes_its_session(
    server: LiveServer, tokenizer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OpenRLHF stops a trajectory whose budget ran out without telling the instance: dropping it closes."""
    monkeypatch.setenv("ASSAY_URL", server.url)
    executor = openrlhf_agent.AgentExecutor()
    prompt = "Trajectory 3: 6*7?\n"
    budget = len(tokenizer(prompt + _turns(3)[0], add_special_tokens=False)["input_ids"]) + 2

    async def main() -> dict[str, Any]:
        try:
            params = SimpleNamespace(max_tokens=None, logprobs=None)
            output = await executor.execute(
                prompt, "42", params, budget, tokenizer, ScriptedEngine(tokenizer)
            )
            await openrlhf_agent.wait_closed()
            return dict(output)
        finally:
            await aclose_loop_clients()

    output = asyncio.run(main())
    assert "<tool_response>\n3\n" in tokenizer.decode(output["observation_tokens"])  # one call ran
    assert output["reward"] == 0  # no answer: OpenRLHF's own total of step rewards
    assert server.engine.sessions.open_count == 0


def test_a_trajectorys_code_runs_in_the_tool_its_task_brings(monkeypatch: pytest.MonkeyPatch) -> None:
    """No tools named: the session holds the tools the item's task brings (as the server lists them), and
    code that names no tool is its one tool's argument; of several tools, the policy is told to name one."""
    url = "http://assay.invalid"
    monkeypatch.setenv("ASSAY_URL", url)
    sql = {"type": "function", "function": {"name": "sql", "parameters": {"required": ["query"]}}}
    python = {"type": "function", "function": {"name": "python", "parameters": {"required": ["code"]}}}
    listed = {
        "tasks": [{"name": "sql", "tools": ["sql"]}, {"name": "math", "tools": []}],
        "tools": [sql, python],
    }
    monkeypatch.setitem(clients._listings, url, listed)

    class SqlAgent(openrlhf_agent.AgentInstance):
        item: ClassVar[dict[str, Any]] = {"task": "sql", "db_id": "school"}

    class BothAgent(SqlAgent):
        tools: ClassVar[list[str] | None] = ["sql", "python"]

    code = "```\nSELECT 1\n```"
    assert asyncio.run(SqlAgent()._reader()).parse(code) == ("sql", {"query": "SELECT 1\n"})
    assert asyncio.run(openrlhf_agent.AgentInstance()._reader()).parse(code) == (
        "python",
        {"code": "SELECT 1\n"},
    )
    told = asyncio.run(BothAgent().step({"action_text": code}))
    assert told["done"] is False and "several tools (sql, python)" in told["environment_feedback"]
