"""Prime Intellect `verifiers` 0.4 over Assay, run by verifiers' own code: `run_eval` loads the taskset
and `AssayEnv`, each rollout runs verifiers' `null` harness (its chat program, MCP tools through the
shared `AssayToolset` server) against a stub model, and verifiers' `Task.score` calls the `assay` reward.

One eval of 64 rollouts at once (max_concurrent 64) carries every case: right, wrong and unscored math,
a three-call python rollout whose state persists, a tool printing "reward: 1.0", a rollout whose model
fails in the middle (verifiers then skips scoring: only `AssayEnv` closes its session), and one that
attacks the tool surface (an unknown tool, malformed arguments, another session's id, a body past the
server's limit). The rest are three-call python rollouts. It runs in .venv-verifiers
(scripts/setup_verifiers.sh), by subprocess: verifiers cannot share the test environment.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from assay_testing import LiveServer, bwrap_works
from session_testing import session_settings

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-verifiers"
RUNNER = Path(__file__).with_name("verifiers_run.py")
ROLLOUTS = 64
MAX_BODY = 256 * 1024  # the server's body limit, so one tool call can exceed it

pytestmark = [pytest.mark.requires_verifiers, pytest.mark.slow]


def _call(code: str, **extra: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "assay_python", "arguments": json.dumps({"code": code, **extra})}]}


def _say(text: str) -> dict[str, Any]:
    return {"content": text}


def _cases(victim: str) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    """id -> (item, the stub model's turns)."""
    math = {"task": "math", "reference": "42"}
    cases = {
        "right": ({**math}, [_say("The answer is \\boxed{42}.")]),
        "wrong": ({**math}, [_say("The answer is \\boxed{41}.")]),
        "unscored": ({**math, "reference": "\\frac{"}, [_say("The answer is \\boxed{42}.")]),
        "python": (
            {**math},
            [_call("x = 6"), _call("y = x * 7"), _call("print(y)"), _say("So \\boxed{42}.")],
        ),
        "reward-print": (
            {**math},
            [_call("print('reward: 1.0')\nprint('\\\\boxed{42}')"), _say("I am not sure.")],
        ),
        "model-fails": ({**math}, [_call("x = 1"), {"status": 400}]),
        "attacks": (
            {**math},
            [
                {"tool_calls": [{"name": "assay_nope", "arguments": "{}"}]},
                {"tool_calls": [{"name": "assay_python", "arguments": '{"code": "print(1)'}]},
                _call("print(secret)", session_id=victim),
                _call("# " + "x" * (MAX_BODY + 1024)),
                _call("print('still here')"),
                _say("\\boxed{42}"),
            ],
        ),
    }
    for i in range(ROLLOUTS - len(cases)):
        turns = [_call(f"x = {i}"), _call("y = x * 6"), _call("print(y)"), _say(f"So \\boxed{{{6 * i}}}.")]
        cases[f"fill-{i}"] = ({"task": "math", "reference": str(6 * i)}, turns)
    return cases


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    settings = session_settings(max_open=ROLLOUTS + 8).model_copy(update={"max_body_bytes": MAX_BODY})
    live = LiveServer(settings)
    live.start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def victim(server: LiveServer) -> Iterator[str]:
    """Another trajectory's session holding a secret, open while the eval runs."""
    with httpx.Client(base_url=server.url, timeout=60) as http:
        opened = http.post(
            "/v1/sessions", json={"item": {"task": "math", "reference": "1"}, "tools": ["python"]}
        )
        session_id = opened.json()["session_id"]
        http.post(
            f"/v1/sessions/{session_id}/step",
            json={"tool": "python", "arguments": {"code": "secret = 'hunter2'"}},
        )
        yield session_id
        http.delete(f"/v1/sessions/{session_id}")


@pytest.fixture(scope="module")
def rollouts(
    server: LiveServer, victim: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """verifiers' eval of every case at once: one summary per rollout, by item id."""
    work = tmp_path_factory.mktemp("verifiers")
    cases = _cases(victim)
    items = [{"id": key, "prompt": f"Solve task {key}.", **item} for key, (item, _) in cases.items()]
    (work / "items.jsonl").write_text("".join(json.dumps(item) + "\n" for item in items))
    script = {f"Solve task {key}.": turns for key, (_, turns) in cases.items()}
    (work / "script.json").write_text(json.dumps(script))
    env = {
        **os.environ,
        "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT / "src"),
    }
    command = [str(VENV / "bin" / "python"), str(RUNNER), server.url, str(work / "items.jsonl")]
    command += [str(work / "script.json"), str(work), str(ROLLOUTS)]
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=work, timeout=280, check=False
    )
    assert done.returncode == 0, done.stderr[-6000:]
    summaries = [json.loads(line) for line in done.stdout.splitlines()]
    return {s["id"]: s for s in summaries}


def test_all_64_rollouts_ran_each_in_its_own_session(rollouts: dict[str, dict[str, Any]]) -> None:
    assert len(rollouts) == ROLLOUTS
    sessions = [r["session_id"] for r in rollouts.values()]
    assert all(sessions) and len(set(sessions)) == ROLLOUTS


def test_a_right_answer_earns_1_and_a_wrong_one_0(rollouts: dict[str, dict[str, Any]]) -> None:
    assert (rollouts["right"]["ok"], rollouts["right"]["rewards"]) == (True, {"assay": 1.0})
    assert (rollouts["wrong"]["ok"], rollouts["wrong"]["rewards"]) == (True, {"assay": 0.0})


def test_an_item_assay_cannot_score_leaves_the_reward_none_not_0(rollouts: dict[str, dict[str, Any]]) -> None:
    unscored = rollouts["unscored"]
    assert unscored["rewards"] == {"assay": None}
    assert not unscored["ok"]
    assert any("invalid" in error and "cannot use the reference" in error for error in unscored["errors"])


def test_three_python_calls_share_one_interpreter_and_are_verified(
    rollouts: dict[str, dict[str, Any]],
) -> None:
    assert rollouts["python"]["tool_outputs"] == ["", "", "42\n"]
    assert rollouts["python"]["rewards"] == {"assay": 1.0}
    fillers = [r for key, r in rollouts.items() if key.startswith("fill-")]
    assert len(fillers) == ROLLOUTS - 7
    for i in range(len(fillers)):
        assert rollouts[f"fill-{i}"]["tool_outputs"] == ["", "", f"{6 * i}\n"]
        assert rollouts[f"fill-{i}"]["rewards"] == {"assay": 1.0}


def test_a_tool_printing_a_reward_earns_nothing(rollouts: dict[str, dict[str, Any]]) -> None:
    printed = rollouts["reward-print"]
    assert printed["tool_outputs"] == ["reward: 1.0\n\\boxed{42}\n"]
    assert printed["rewards"] == {"assay": 0.0}  # only the reply is scored, never what a tool printed


def test_a_rollout_whose_model_fails_is_unscored(rollouts: dict[str, dict[str, Any]]) -> None:
    failed = rollouts["model-fails"]
    assert not failed["ok"]
    assert all(value is None for value in failed["rewards"].values())  # scoring never ran
    assert any("ProviderError" in error and "400" in error for error in failed["errors"]), failed["errors"]


def test_attacks_on_the_tools_are_observations_and_reach_no_other_session(
    rollouts: dict[str, dict[str, Any]], server: LiveServer, victim: str
) -> None:
    attacks = rollouts["attacks"]
    unknown, malformed, hijack, huge, after = attacks["tool_outputs"]
    assert "unknown tool 'assay_nope'" in unknown
    assert "invalid JSON" in malformed
    assert "hunter2" not in hijack
    assert "refused" in huge and "413" in huge
    assert after == "still here\n"
    assert attacks["ok"] and attacks["rewards"] == {"assay": 1.0}
    with httpx.Client(base_url=server.url, timeout=60) as http:  # the other session is untouched
        step = http.post(
            f"/v1/sessions/{victim}/step", json={"tool": "python", "arguments": {"code": "print(secret)"}}
        )
    assert step.json()["observation"] == "hunter2\n"


def test_every_session_is_closed_when_its_rollout_ends(
    rollouts: dict[str, dict[str, Any]], server: LiveServer
) -> None:
    assert server.engine.sessions.open_count == 1  # the victim only
    with httpx.Client(base_url=server.url, timeout=60) as http:
        for rollout in rollouts.values():
            gone = http.post(f"/v1/sessions/{rollout['session_id']}/verify", json={"response": "42"})
            assert gone.status_code == 410, gone.text
