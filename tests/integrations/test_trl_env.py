"""The TRL environment, inspected and driven the way TRL 1.16's GRPOTrainer does it."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest
from assay_testing import LiveServer, bwrap_works
from session_testing import session_settings
from transformers.utils import get_json_schema

from assay.integrations.trl_env import AssayPythonEnv


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    live = LiveServer(session_settings())
    live.start()
    yield live
    live.stop()


def _tools(env: AssayPythonEnv) -> list[object]:
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
