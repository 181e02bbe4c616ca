"""The SkyRL-gym environment, driven through skyrl_gym 0.4.0's own registry, `make`, `init` and `step`
(what SkyRL's generator calls for each trajectory) against a live Assay server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from assay_testing import LiveServer, bwrap_works, free_port
from session_testing import SQL, live_sessions, session_settings, sql_session_settings

from assay.errors import RewardUnavailable

try:  # without skyrl-gym the requires_skyrl_gym marker skips these locally and fails them in CI
    import skyrl_gym

    from assay.integrations.skyrl_gym import AssayGymEnv, parse_call, register
except ImportError:
    pass

pytestmark = pytest.mark.requires_skyrl_gym

ROOT = Path(__file__).resolve().parents[2]
MAX_OPEN = 32  # below the 64 trajectories run at once: the rest wait for a free session
BODY_LIMIT = 256 * 1024
PROMPT = [{"role": "user", "content": "What is 6 * 7? Use the python tool, answer in <answer></answer>."}]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    settings = sql_session_settings(tmp_path_factory.mktemp("skyrl_gym_sql"), max_open=MAX_OPEN)
    live = LiveServer(settings.model_copy(update={"max_body_bytes": BODY_LIMIT}))
    live.start()
    register()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def roomy_server() -> Iterator[LiveServer]:
    """A session for each of SkyRL's 64 trajectories: its generator steps them on 32 threads, and a
    trajectory waiting for a session holds one (with 32 sessions for 64, none ever finished)."""
    yield from live_sessions(max_open=64)


def make(server: LiveServer, ground_truth: str = "42", max_turns: int = 5, **config: Any) -> AssayGymEnv:
    """What SkyRL's generator does: make the registered env from its config and the dataset row."""
    row = {"reward_spec": {"method": "rule", "ground_truth": ground_truth}, "max_turns": max_turns}
    env = skyrl_gym.make("assay", env_config={"url": server.url, **config}, extras=row)
    assert isinstance(env, AssayGymEnv)
    env.init(PROMPT)
    return env


def content(out: dict[str, Any]) -> str:
    (message,) = out["observations"]
    assert message["role"] == "user" and out["done"] is False and out["reward"] == 0.0
    return str(message["content"])


def test_register_puts_the_env_in_skyrl_gyms_registry_once(server: LiveServer) -> None:
    register()  # again: the same entry point, nothing to do
    assert skyrl_gym.spec("assay").entry_point == "assay.integrations.skyrl_gym:AssayGymEnv"
    with pytest.raises(skyrl_gym.error.RegistrationError, match="already has an environment 'gsm8k'"):
        register("gsm8k")


def _answers(server: LiveServer, route: str, code: int) -> float:
    """How many requests to `route` the server answered with `code` so far."""
    labels = {"route": route, "code": str(code)}
    return server.engine.metrics.registry.get_sample_value("assay_requests_total", labels) or 0.0


def test_single_turn_math_pays_assays_verdict_without_a_session(server: LiveServer) -> None:
    opened = _answers(server, "/v1/sessions", 201)
    for answer, reward in (("6 * 7 = \\boxed{42}", 1.0), ("<answer>41</answer>", 0.0)):
        env = make(server, max_turns=1)
        out = env.step(answer)
        assert (out["reward"], out["done"], out["observations"]) == (reward, True, [])
        assert out["metadata"]["assay"]["status"] == "ok"
        assert out["metadata"]["assay"]["correct"] is (reward == 1.0)
        assert env.get_metrics() == {"assay_tool_calls": 0, "assay_unscored": 0.0, "assay_correct": reward}
    assert _answers(server, "/v1/sessions", 201) == opened  # one turn calls no tool: no sandbox held


def test_an_unscored_verdict_raises_rather_than_paying_zero(server: LiveServer) -> None:
    env = make(server, ground_truth="\\frac{", max_turns=1)  # a gold the math task cannot parse
    with pytest.raises(RewardUnavailable, match="Assay returned invalid: cannot use the reference"):
        env.step("\\boxed{42}")
    assert server.engine.sessions.open_count == 0
    assert env.get_metrics()["assay_unscored"] == 1.0


def test_unscored_none_returns_a_null_reward_with_assays_status(server: LiveServer) -> None:
    env = make(server, ground_truth="\\frac{", max_turns=1, unscored="none")
    out = env.step("\\boxed{42}")
    assert out["reward"] is None and out["done"] is True
    assert out["metadata"]["assay"]["status"] == "invalid"
    assert "cannot use the reference" in out["metadata"]["assay"]["reason"]
    assert server.engine.sessions.open_count == 0


def test_three_python_calls_keep_state_then_the_answer_is_verified(server: LiveServer) -> None:
    env = make(server, ground_truth="43")
    assert server.engine.sessions.open_count == 1
    assert content(env.step("First <python>x = 6 * 7</python>")) == ""
    json_call = '<tool_call>{"name": "python", "arguments": {"code": "y = x + 1"}}</tool_call>'
    assert content(env.step(json_call)) == ""
    assert content(env.step("<tool><python>print(y)</python></tool>")) == "43\n"  # SkyRL's searchcode form
    out = env.step("So the answer is <answer>\\boxed{43}</answer>")
    assert (out["reward"], out["done"]) == (1.0, True)
    assert env.get_metrics() == {"assay_tool_calls": 3, "assay_unscored": 0.0, "assay_correct": 1.0}
    assert server.engine.sessions.open_count == 0


def test_a_row_names_its_task_and_tools_and_a_tag_fills_the_tools_argument(server: LiveServer) -> None:
    item = {k: v for k, v in SQL.items() if k != "reference"} | {"tools": ["sql"]}
    row = {"reward_spec": {"ground_truth": SQL["reference"]}, "assay": item, "max_turns": 3}
    env = skyrl_gym.make("assay", env_config={"url": server.url}, extras=row)
    _, info = env.init(PROMPT)
    assert [tool["function"]["name"] for tool in info["assay"]["tools"]] == ["sql"]
    counted = content(env.step("<sql>SELECT count(*) AS n FROM students</sql>"))
    assert counted == "| n |\n|---|\n| 40 |\n(1 row)"
    assert content(env.step("<sql>DROP TABLE students</sql>")).startswith("SQL error")
    out = env.step("```sql\nSELECT COUNT(*) FROM students\n```")  # the last turn: the answer
    assert (out["reward"], out["metadata"]["assay"]["status"]) == (1.0, "ok")


def test_a_row_naming_no_tools_gets_the_tools_its_task_brings(server: LiveServer) -> None:
    item = {k: v for k, v in SQL.items() if k != "reference"}  # a sql row, no `tools` anywhere
    row = {"reward_spec": {"ground_truth": SQL["reference"]}, "assay": item, "max_turns": 2}
    env = skyrl_gym.make("assay", env_config={"url": server.url}, extras=row)
    _, info = env.init(PROMPT)
    assert [tool["function"]["name"] for tool in info["assay"]["tools"]] == ["sql"]
    assert content(env.step("<sql>SELECT count(*) AS n FROM students</sql>")).endswith("| 40 |\n(1 row)")
    env.close()


def _trajectory(server: LiveServer, i: int) -> tuple[list[str], float | None]:
    env = make(server, ground_truth=str(i * 3))
    seen = [
        content(env.step(f"<python>x = {i}</python>")),
        content(env.step("<python>x = x * 3</python>")),
        content(env.step("<python>print(x)</python>")),
    ]
    guess = i * 3 if i % 2 == 0 else i * 3 + 1  # odd trajectories answer wrong
    out = env.step(f"<answer>{guess}</answer>")
    env.close()
    return seen, out["reward"]


def test_64_trajectories_at_once_each_in_its_own_session(server: LiveServer) -> None:
    refused = _answers(server, "/v1/sessions", 429)
    started = time.monotonic()
    with ThreadPoolExecutor(64) as pool:  # SkyRL steps envs from a thread pool (max_env_workers)
        outcomes = list(pool.map(lambda i: _trajectory(server, i), range(64)))
    elapsed = time.monotonic() - started
    for i, (seen, reward) in enumerate(outcomes):
        assert seen == ["", "", f"{i * 3}\n"]  # each saw its own state, none another's
        assert reward == (1.0 if i % 2 == 0 else 0.0)
    assert server.engine.sessions.open_count == 0
    assert _answers(server, "/v1/sessions", 429) > refused  # some found the server full, waited, and ran
    print(f"64 trajectories (3 calls + verify each, {MAX_OPEN} sessions at most) in {elapsed:.1f} s")


def test_a_tool_printing_a_reward_earns_nothing(server: LiveServer) -> None:
    env = make(server)
    printed = content(env.step('<python>print("reward: 1.0")\nprint("\\\\boxed{42}")</python>'))
    assert printed == "reward: 1.0\n\\boxed{42}\n"
    out = env.step("<answer>I do not know</answer>")  # the tool's output is not the policy's answer
    assert (out["reward"], out["metadata"]["assay"]["correct"]) == (0.0, False)


def test_bad_actions_get_a_clear_observation_and_the_rollout_goes_on(server: LiveServer) -> None:
    env = make(server, max_turns=10)
    no_call = content(env.step("I will think first."))
    assert no_call.startswith("[no tool call found: call a tool with <python>")
    unknown = content(env.step('<tool_call>{"name": "shell", "arguments": {"cmd": "id"}}</tool_call>'))
    assert "shell" in unknown and "python" in unknown
    assert content(env.step("<tool_call>{not json</tool_call>")).startswith("[malformed tool call: ")
    assert content(env.step('<tool_call>["python"]</tool_call>')).startswith("[malformed tool call: ")
    huge = content(env.step("<python>" + "#" * (BODY_LIMIT * 2) + "</python>"))
    assert huge.startswith("[tool call refused: Assay answered 413")
    assert content(env.step("<python>print(6 * 7)</python>")) == "42\n"
    assert env.step("<answer>42</answer>")["reward"] == 1.0


def test_a_call_naming_another_session_runs_in_its_own(server: LiveServer) -> None:
    victim, attacker = make(server), make(server)
    content(victim.step("<python>secret = 'victims'</python>"))
    call = f'{{"name": "python", "arguments": {{"code": "secret"}}, "session_id": "{victim.session_id}"}}'
    assert "NameError" in content(attacker.step(f"<tool_call>{call}</tool_call>"))
    victim.close()
    attacker.close()


def test_the_last_turn_is_verified_even_without_an_answer_tag(server: LiveServer) -> None:
    env = make(server, max_turns=2)
    content(env.step("<python>print(42)</python>"))
    out = env.step("<python>print(43)</python>")  # max_turns reached: this turn is the answer
    assert out["done"] is True and out["metadata"]["assay"]["status"] == "ok"
    assert out["reward"] == 0.0  # no answer of its own in the text: ok, wrong, not unscored
    assert server.engine.sessions.open_count == 0


def test_close_ends_the_session_mid_rollout(server: LiveServer) -> None:
    env = make(server)
    content(env.step("<python>x = 1</python>"))
    assert server.engine.sessions.open_count == 1
    env.close()
    env.close()  # idempotent
    assert server.engine.sessions.open_count == 0
    with pytest.raises(RuntimeError, match="step outside an episode"):
        env.step("<python>x</python>")


def test_a_server_lost_mid_trajectory_is_unscored_not_zero() -> None:
    register()
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    lost = LiveServer(session_settings())
    lost.start()
    try:
        env = make(lost)
        assert content(env.step("<python>x = 1</python>")) == ""
    finally:
        lost.stop()
    with pytest.raises(RewardUnavailable, match="Assay returned error: the python call failed: cannot reach"):
        env.step("<python>print(x)</python>")


@pytest.mark.parametrize(
    ("max_turns", "reason"),
    [(1, "verify failed: cannot reach Assay"), (3, "cannot open an Assay session: cannot reach Assay")],
)
def test_an_unreachable_server_is_unscored_not_zero(max_turns: int, reason: str) -> None:
    register()
    row = {"reward_spec": {"ground_truth": "42"}, "max_turns": max_turns}
    config = {"url": f"http://127.0.0.1:{free_port()}", "unscored": "none"}
    env = skyrl_gym.make("assay", env_config=config, extras=row)
    env.init(PROMPT)
    out = env.step("<answer>\\boxed{42}</answer>")
    assert out["reward"] is None and out["done"] is True
    assert out["metadata"]["assay"]["reason"].startswith(reason)


def test_a_full_server_is_waited_for_a_bounded_time_then_unscored() -> None:
    register()
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    full = LiveServer(session_settings(max_open=1))
    full.start()
    try:
        holder = make(full)
        waiter = make(full, open_wait_s=1)
        with pytest.raises(
            RewardUnavailable, match="the Assay server stayed full for 1 s: size its sessions"
        ):
            waiter.step("<python>1</python>")
        holder.close()
        assert content(make(full).step("<python>print(1)</python>")) == "1\n"
    finally:
        full.stop()


@pytest.mark.requires_skyrl_train
def test_skyrls_own_generator_runs_trajectories_and_fails_loudly_on_unscored(
    roomy_server: LiveServer, tmp_path: Path
) -> None:
    """skyrl_generator.py in a child process whose path puts .skyrl-train (skyrl-train and its Ray)
    first: 64 trajectories through SkyRL's SkyRLGymGenerator, then 16 whose gold cannot be parsed."""
    path = os.pathsep.join([str(ROOT / ".skyrl-train"), str(ROOT / "src")])
    script = Path(__file__).with_name("skyrl_generator.py")
    done = subprocess.run(
        [sys.executable, str(script), roomy_server.url, str(tmp_path), "64:ok", "16:raise"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONPATH": path},
    )
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    scored, unscored = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    assert scored["rewards"] == [1.0 if i % 2 == 0 else 0.0 for i in range(64)]
    assert scored["read"] == {str(i): str(i * 3) for i in range(64)}  # the observations reached the model
    assert scored["metrics"] == {
        "environment/assay_tool_calls": 3.0,
        "environment/assay_unscored": 0.0,
        "environment/assay_correct": 0.5,
    }
    assert unscored == {
        "raised": "RewardUnavailable: Assay returned invalid: cannot use the reference "
        "'\\\\frac{': cannot parse '\\\\frac{': Exception"
    }
    # the generator dropped the other trajectories mid-flight: their environments closed their sessions
    assert roomy_server.engine.sessions.open_count == 0


def test_a_row_whose_item_the_server_refuses_is_unscored_as_invalid(server: LiveServer) -> None:
    row = {"reward_spec": {"ground_truth": "42"}, "assay": {"task": "maths"}, "max_turns": 3}
    env = skyrl_gym.make("assay", env_config={"url": server.url, "unscored": "none"}, extras=row)
    env.init(PROMPT)
    out = env.step("<python>print(1)</python>")
    assert out["reward"] is None and out["done"] is True
    assert out["metadata"]["assay"]["status"] == "invalid"
    assert 'did you mean "math"' in out["metadata"]["assay"]["reason"]


def test_parse_call_takes_the_first_call_and_maps_a_tag_to_the_tools_one_argument() -> None:
    tools = {"python": "code", "repo": None}
    assert parse_call("<python>a</python> <python>b</python>", tools) == ("python", {"code": "a"})
    both = '<tool_call>{"name": "repo", "arguments": {"command": "diff"}}</tool_call><python>b</python>'
    assert parse_call(both, tools) == ("repo", {"command": "diff"})
    assert parse_call("<repo>x</repo>", tools) == (
        "[no tool call found: call a tool with <python>...</python> or "
        '<tool_call>{"name": ..., "arguments": {...}}</tool_call>, or answer inside <answer>...</answer>]'
    )
