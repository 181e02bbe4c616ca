"""OpenEnv's protocol over Assay sessions, driven by OpenEnv 0.10's own client (`GenericEnvClient`, which
speaks the WebSocket form) and by its HTTP request shapes."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from assay_testing import LiveServer, bwrap_works
from fastapi.testclient import TestClient
from openenv.core import GenericEnvClient
from session_testing import SQL, session_settings, sql_session_settings
from transformers.utils import get_json_schema
from websockets.sync.client import connect

from assay.api import create_app

SESSIONS_DOC = Path(__file__).resolve().parents[2] / "docs" / "sessions.md"
MATH = {"id": "q1", "task": "math", "prompt": "What is 6 * 7?", "reference": "42"}
MAX_OPEN = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    live = LiveServer(sql_session_settings(tmp_path_factory.mktemp("openenv_sql"), max_open=MAX_OPEN))
    live.start()
    yield live
    live.stop()


@pytest.fixture(autouse=True)
def no_session_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test ends with every session closed: a closed or dropped connection frees its session (the
    server closes it after the client's close handshake returns, hence the bounded wait)."""
    yield
    if "server" in request.fixturenames:
        live = request.getfixturevalue("server")
        _until(lambda: _open(live) == 0, "a session outlived its episode's connection")


def _env(server: LiveServer) -> Any:
    return GenericEnvClient(base_url=f"{server.url}/openenv", message_timeout_s=60).sync()


def _python(code: str) -> dict[str, Any]:
    return {"tool": "python", "arguments": {"code": code}}


def _until(condition: Callable[[], bool], what: str) -> None:
    """Bounded polling (at most 10 s) for something another thread finishes."""
    deadline, pause = time.monotonic() + 10, threading.Event()
    while not condition():
        assert time.monotonic() < deadline, what
        pause.wait(0.02)


def _open(server: LiveServer) -> int:
    return int(server.engine.sessions.open_count)


def test_an_episode_runs_tools_and_its_answer_is_rewarded_as_v1_rewards(server: LiveServer) -> None:
    with _env(server) as env:
        first = env.reset(item=MATH, limits={"max_steps": 8})
        assert (first.done, first.reward, first.observation["status"]) == (False, None, "ready")
        assert first.observation["prompt"] == MATH["prompt"]
        assert [t["function"]["name"] for t in first.observation["tools"]] == ["python"]
        episode_id = first.metadata["episode_id"]
        assert env.step(_python("x = 6 * 7\nx")).observation["output"] == "42\n"
        after = env.step(_python("x + 0"))
        assert (after.observation["output"], after.observation["step"], after.done) == ("42\n", 2, False)
        assert env.state() == {
            "episode_id": episode_id,
            "step_count": 2,
            "done": False,
            "item_id": "q1",
            "tools": ["python"],
        }
        answered = env.step({"answer": "So the answer is \\boxed{42}."})
        assert (answered.reward, answered.done, answered.observation["status"]) == (1.0, True, "ok")
        result = answered.metadata["result"]
        assert result["details"]["session"]["steps"] == 2
    with server.client() as http:
        expected = http.post(
            "/v1/rewards", json={"items": [{**MATH, "response": "So the answer is \\boxed{42}."}]}
        )
    (scored,) = expected.json()["results"]
    for key in ("status", "correct", "reward", "reason", "extracted"):
        assert result[key] == scored[key], key


def test_a_traceback_is_an_observation_and_a_wrong_answer_is_zero(server: LiveServer) -> None:
    with _env(server) as env:
        env.reset(item=MATH)
        failed = env.step(_python("1 / 0"))
        assert (
            failed.observation["status"] == "tool_error"
            and "ZeroDivisionError" in failed.observation["output"]
        )
        wrong = env.step({"answer": "\\boxed{41}"})
        assert (wrong.reward, wrong.done, wrong.observation["status"]) == (0.0, True, "ok")


def test_an_answer_only_a_tool_printed_earns_nothing(server: LiveServer) -> None:
    """The answer action's text is all that is scored (issue 38): the tool's `\\boxed{42}` is not."""
    with _env(server) as env:
        env.reset(item=MATH)
        printed = env.step(_python("print('\\\\boxed{42}')"))
        assert printed.observation["output"].strip() == "\\boxed{42}"
        answered = env.step({"answer": "the tool printed it"})
        assert (answered.reward, answered.done, answered.observation["status"]) == (0.0, True, "ok")


def test_an_unscorable_answer_has_no_reward_rather_than_zero(server: LiveServer) -> None:
    with _env(server) as env:
        env.reset(item={"task": "math", "reference": "\\frac{"})
        answered = env.step({"answer": "\\boxed{1}"})
        assert answered.done and answered.observation["status"] == "invalid"
        assert answered.reward is None


def test_concurrent_episodes_never_share_a_session(server: LiveServer) -> None:
    async def episode(secret: str) -> list[str]:
        async with GenericEnvClient(base_url=f"{server.url}/openenv", message_timeout_s=60) as env:
            await env.reset(item=MATH)
            seen = []
            for code in (
                f"secret = {secret!r}",
                "import os; os.makedirs('/tmp/mine', exist_ok=True)",
                "print(globals().get('secret'), sorted(os.listdir('/tmp')))",
            ):
                seen.append((await env.step(_python(code))).observation["output"])
            return seen

    async def both() -> list[list[str]]:
        return list(await asyncio.gather(episode("a"), episode("b")))

    first, second = asyncio.run(both())
    assert first[-1] == "a ['mine']\n" and second[-1] == "b ['mine']\n"


def test_reset_ends_the_previous_session_and_starts_afresh(server: LiveServer) -> None:
    with _env(server) as env:
        env.reset(item=MATH)
        env.step(_python("x = 1"))
        again = env.reset(item=MATH)
        assert again.observation["status"] == "ready" and _open(server) == 1
        assert "NameError" in env.step(_python("x")).observation["output"]
        assert env.state()["step_count"] == 1


def test_a_connection_killed_mid_episode_frees_its_session(server: LiveServer) -> None:
    with connect(f"ws://127.0.0.1:{server.port}/openenv/ws") as ws:
        ws.send(json.dumps({"type": "reset", "data": {"item": MATH}}))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"
        assert _open(server) == 1
        ws.socket.shutdown(socket.SHUT_RDWR)  # no close frame: the TCP connection just goes
    _until(lambda: _open(server) == 0, "a dropped connection kept its session")


def test_an_episode_with_a_task_tool_other_than_python(server: LiveServer) -> None:
    with _env(server) as env:
        first = env.reset(item=SQL, tools=["sql"])
        assert [t["function"]["name"] for t in first.observation["tools"]] == ["sql"]
        step = env.step({"tool": "sql", "arguments": {"query": "SELECT count(*) AS n FROM students"}})
        assert (step.observation["status"], step.observation["output"]) == (
            "ok",
            "| n |\n|---|\n| 40 |\n(1 row)",
        )
        answer = env.step({"answer": "SELECT count(*) FROM students"})
        assert (answer.reward, answer.done) == (1.0, True)


def test_an_episode_without_tools_named_holds_the_tools_its_task_brings(server: LiveServer) -> None:
    with _env(server) as env:
        assert [t["function"]["name"] for t in env.reset(item=SQL).observation["tools"]] == ["sql"]
        assert [t["function"]["name"] for t in env.reset(item=MATH).observation["tools"]] == ["python"]


def test_an_interpreter_that_dies_ends_the_tools_and_the_answer_is_still_verified(server: LiveServer) -> None:
    with _env(server) as env:
        env.reset(item=MATH)
        died = env.step(_python("import os; os._exit(3)"))
        assert (died.observation["status"], died.done) == ("session_ended", False)
        after = env.step(_python("1"))
        assert (after.observation["status"], after.done) == ("session_gone", False)
        assert after.observation["output"].startswith("[session ended: ")
        answered = env.step({"answer": "\\boxed{42}"})
        assert (answered.reward, answered.done) == (1.0, True)


def test_an_answer_after_the_session_expired_has_no_reward(server: LiveServer) -> None:
    with _env(server) as env:
        env.reset(item=MATH, limits={"ttl_s": 0.2})
        _until(lambda: _open(server) == 0, "the session was never reaped")
        late = env.step({"answer": "\\boxed{42}"})
        assert (late.done, late.reward, late.observation["status"]) == (True, None, "session_gone")
        assert "expired" in late.observation["reason"]


def test_refusals_are_openenv_error_frames(server: LiveServer) -> None:
    with _env(server) as env:
        with pytest.raises(RuntimeError, match=r"no episode: send reset first \(code: SESSION_ERROR\)"):
            env.step(_python("1"))
        env.reset(item=MATH)
        with pytest.raises(RuntimeError, match=r"action.code: Extra inputs.*VALIDATION_ERROR"):
            env.step({"code": "1"})
        with pytest.raises(RuntimeError, match=r'either \{"tool", "arguments"\} or \{"answer"\}'):
            env.step({"tool": "python", "answer": "42"})
        with pytest.raises(RuntimeError, match=r"item.response: .*VALIDATION_ERROR"):
            env.reset(item={**MATH, "response": "\\boxed{42}"})
        with pytest.raises(RuntimeError, match=r"item.messages: .*VALIDATION_ERROR"):
            env.reset(item={**MATH, "messages": [{"role": "assistant", "content": "\\boxed{42}"}]})
        with pytest.raises(RuntimeError, match=r"unknown tool.*VALIDATION_ERROR"):
            env.reset(item=MATH, tools=["pyhton"])
        with pytest.raises(RuntimeError, match=r"reset.colour: Extra inputs"):
            env.reset(item=MATH, colour="red")
        with pytest.raises(RuntimeError, match=r"no task file"):
            env.reset()
    with connect(f"ws://127.0.0.1:{server.port}/openenv/ws") as ws:
        for sent, code in (
            ("{", "INVALID_JSON"),
            ('{"type": "jump"}', "UNKNOWN_TYPE"),
            ("[1]", "UNKNOWN_TYPE"),
        ):
            ws.send(sent)
            answer = json.loads(ws.recv(timeout=10))
            assert answer["type"] == "error" and answer["data"]["code"] == code


def test_an_answered_episode_cannot_be_answered_again_or_steered(server: LiveServer) -> None:
    """A policy that answered wrong cannot retry, and nothing it sends sets its own reward."""
    with _env(server) as env:
        env.reset(item=MATH)
        env.step(_python("reward = 1.0\nimport builtins; builtins.reward = 1.0"))
        wrong = env.step({"answer": "\\boxed{41}", "metadata": {"reward": 1.0, "correct": True}})
        assert wrong.reward == 0.0 and wrong.metadata["result"]["correct"] is False
        with pytest.raises(RuntimeError, match="the episode is done: send reset first"):
            env.step({"answer": "\\boxed{42}"})
        assert env.state()["done"] is True


def test_sessions_full_is_capacity_reached_and_a_slot_frees_on_close(server: LiveServer) -> None:
    envs = [_env(server) for _ in range(MAX_OPEN + 1)]
    try:
        for env in envs[:MAX_OPEN]:
            env.reset(item=MATH)
        with pytest.raises(RuntimeError, match="CAPACITY_REACHED"):
            envs[MAX_OPEN].reset(item=MATH)
        envs[0].close()
        _until(lambda: _open(server) < MAX_OPEN, "a closed episode kept its slot")
        assert envs[MAX_OPEN].reset(item=MATH).observation["status"] == "ready"
    finally:
        for env in envs:
            env.close()


def test_the_http_form_continues_an_episode_by_its_id(server: LiveServer) -> None:
    with server.client() as http:
        assert http.get("/openenv/health").json() == {"status": "healthy"}
        schema = http.get("/openenv/schema").json()
        assert set(schema) == {"action", "observation", "state"}
        reset = http.post("/openenv/reset", json={"item": MATH, "episode_id": "mine-1"})
        assert reset.status_code == 200 and reset.json()["metadata"]["episode_id"] == "mine-1"
        step = http.post("/openenv/step", json={"action": _python("y = 5"), "episode_id": "mine-1"})
        assert step.json()["observation"]["status"] == "ok"
        step = http.post("/openenv/step", json={"action": _python("y * 2"), "episode_id": "mine-1"})
        assert step.json()["observation"]["output"] == "10\n"
        missing = http.post("/openenv/step", json={"action": _python("1")})
        assert missing.status_code == 422 and "episode_id" in missing.json()["error"]["message"]
        unknown = http.post("/openenv/step", json={"action": _python("1"), "episode_id": "nope"})
        assert unknown.status_code == 404
        state = http.get("/openenv/state", params={"episode_id": "mine-1"}).json()
        assert state["step_count"] == 2 and state["done"] is False
        answer = http.post(
            "/openenv/step", json={"action": {"answer": "\\boxed{42}"}, "episode_id": "mine-1"}
        )
        assert (answer.json()["reward"], answer.json()["done"]) == (1.0, True)
        again = http.post("/openenv/step", json={"action": {"answer": "\\boxed{42}"}, "episode_id": "mine-1"})
        assert again.status_code == 409
        fresh = http.post("/openenv/reset", json={"item": MATH}).json()["metadata"]["episode_id"]
        assert fresh.startswith("s-")  # unnamed, an episode is known by its session's id
        assert http.delete(f"/v1/sessions/{fresh}").status_code == 204
        gone = http.post("/openenv/step", json={"action": _python("1"), "episode_id": fresh}).json()
        assert (gone["done"], gone["observation"]["status"]) == (False, "session_gone")
        late = http.post("/openenv/step", json={"action": {"answer": "42"}, "episode_id": fresh}).json()
        assert (late["done"], late["reward"], late["observation"]["status"]) == (True, None, "session_gone")


@pytest.fixture()
def task_file(tmp_path: Path) -> Iterator[TestClient]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    path = tmp_path / "items.jsonl"
    path.write_text(
        "".join(json.dumps({"id": f"t{n}", "task": "math", "reference": str(n)}) + "\n" for n in range(3))
    )
    settings = session_settings(openenv_items=path).model_copy(update={"max_body_bytes": 4096})
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


def test_reset_without_an_item_draws_from_the_task_file(task_file: TestClient) -> None:
    def item_id(data: dict[str, Any]) -> str:
        with task_file.websocket_connect("/openenv/ws") as ws:
            ws.send_text(json.dumps({"type": "reset", "data": data}))
            assert json.loads(ws.receive_text())["type"] == "observation"
            ws.send_text(json.dumps({"type": "state"}))
            return str(json.loads(ws.receive_text())["data"]["item_id"])

    assert [item_id({}) for _ in range(4)] == ["t0", "t1", "t2", "t0"]
    assert item_id({"index": 2}) == "t2"
    assert item_id({"seed": 7}) == item_id({"seed": 7})
    past = task_file.post("/openenv/reset", json={"index": 3})
    assert past.status_code == 422 and "past the task file's 3 items" in past.json()["error"]["message"]
    answered = task_file.post("/openenv/reset", json={"index": 1}).json()
    episode = answered["metadata"]["episode_id"]
    reward = task_file.post("/openenv/step", json={"action": {"answer": "\\boxed{1}"}, "episode_id": episode})
    assert reward.json()["reward"] == 1.0


def _documented_trl_environment() -> dict[str, Any]:
    """The TRL environment class and reward function docs/sessions.md shows, run as written there."""
    found = re.search(
        r"```python\n(from openenv.core import GenericEnvClient\n\n\nclass AssayOpenEnv.*?)```",
        SESSIONS_DOC.read_text(),
        re.S,
    )
    assert found is not None, "docs/sessions.md no longer shows AssayOpenEnv"
    namespace: dict[str, Any] = {}
    exec(compile(found.group(1), str(SESSIONS_DOC), "exec"), namespace)
    return namespace


def test_trl_drives_the_documented_openenv_environment(server: LiveServer) -> None:
    """In TRL 1.16's GRPOTrainer order: one instance per rollout, its public methods but reset as the tools
    (schemas by transformers' get_json_schema), reset(**row), tool calls, then the reward functions with
    `environments`."""
    documented = _documented_trl_environment()
    env_class, reward = documented["AssayOpenEnv"], documented["assay_reward"]
    members = inspect.getmembers(env_class, predicate=inspect.isfunction)
    tools = [name for name, _ in members if name not in ("reset", "get_reward") and not name.startswith("_")]
    assert tools == ["python"]
    envs = [env_class(server.url) for _ in range(3)]
    try:
        assert get_json_schema(envs[0].python)["function"]["parameters"]["required"] == ["code"]
        rows = [
            {"prompt": [{"role": "user", "content": "6 * 7?"}], "task": "math", "reference": "42"},
            {"prompt": [{"role": "user", "content": "3 + 4?"}], "task": "math", "reference": "7"},
            {"prompt": [{"role": "user", "content": "?"}], "task": "math", "reference": "\\frac{"},
        ]
        for env, row in zip(envs, rows, strict=True):
            assert env.reset(**row) is None
        assert envs[0].python(code="x = 6 * 7\nx") == "42\n"
        assert "NameError" in envs[1].python(code="x")
        completions = [[{"role": "assistant", "content": f"\\boxed{{{n}}}"}] for n in (42, 8, 1)]
        assert reward(completions=completions, environments=envs, prompts=[r["prompt"] for r in rows]) == [
            1.0,
            0.0,
            None,  # unscorable: TRL masks None (NaN), it never trains it as 0
        ]
    finally:
        for env in envs:
            env.env.close()


def test_a_frame_past_the_body_limit_is_refused_and_the_episode_goes_on(task_file: TestClient) -> None:
    with task_file.websocket_connect("/openenv/ws") as ws:
        ws.send_text(json.dumps({"type": "reset", "data": {"index": 0}}))
        assert json.loads(ws.receive_text())["type"] == "observation"
        ws.send_text(json.dumps({"type": "step", "data": _python("x = 1  # " + "y" * 5000)}))
        refused = json.loads(ws.receive_text())
        assert refused["type"] == "error" and "exceeds 4096 bytes" in refused["data"]["message"]
        ws.send_bytes(b"\xff\xfe")
        assert json.loads(ws.receive_text())["data"]["code"] == "INVALID_JSON"
        ws.send_text(json.dumps({"type": "step", "data": _python("print('still here')")}))
        assert json.loads(ws.receive_text())["data"]["observation"]["output"] == "still here\n"


def test_a_task_files_items_keep_their_tasks_own_fields(tmp_path: Path) -> None:
    # `keyed` declares `answer_key` (Scorer.Fields): read without its task's model, the file was refused.
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    path = tmp_path / "keyed.jsonl"
    path.write_text(json.dumps({"id": "k", "task": "keyed", "answer_key": ["Paris"]}) + "\n")
    settings = session_settings(openenv_items=path)
    settings = settings.model_copy(update={"plugins": ["assay_test_plugins:KeyedScorer"]})
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        episode = client.post("/openenv/reset", json={"index": 0}).json()["metadata"]["episode_id"]
        answered = client.post("/openenv/step", json={"action": {"answer": "Paris"}, "episode_id": episode})
    assert answered.json()["reward"] == 1.0
