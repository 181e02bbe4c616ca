"""Assay as a NeMo Gym resources server, driven by nemo-gym 0.7.0's own code (issue 39).

nemo-gym cannot share the test environment (its pins: openai, mcp, ray), so `nemo_gym_driver.py` runs
under `.venv-nemo-gym` (scripts/setup_nemo_gym.sh): nemo-gym's rollout collection, its legacy_agent
environment server and `SimpleAgent` (`/run`), its `ServerClient` and its request/response models against
the live server this module starts, with a stub model. The
driver runs once (module fixture); each test asserts one property of what it saw.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from assay_testing import LiveServer, bwrap_works
from fastapi.testclient import TestClient
from session_testing import session_settings

from assay.api import create_app
from assay.api.nemo_gym import COOKIE, RESERVED, answer_text, verdict
from assay.api.nemo_gym_wire import BaseVerifyRequest
from assay.settings import Settings
from assay.types import Result, Status

ROOT = Path(__file__).resolve().parents[2]
NEMO_PYTHON = ROOT / ".venv-nemo-gym" / "bin" / "python"
DRIVER = Path(__file__).with_name("nemo_gym_driver.py")
CONCURRENT = 64
MAX_BODY = 256 * 1024
DRIVER_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    if not NEMO_PYTHON.exists():
        pytest.skip("no .venv-nemo-gym: run scripts/setup_nemo_gym.sh")
    settings = session_settings(max_open=CONCURRENT, ttl_s=120.0)
    live = LiveServer(settings.model_copy(update={"max_body_bytes": MAX_BODY}))
    live.start()
    out = tmp_path_factory.mktemp("nemo_gym") / "report.json"
    try:
        command = [str(NEMO_PYTHON), str(DRIVER), live.url, str(out), COOKIE, str(CONCURRENT), str(MAX_BODY)]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=DRIVER_TIMEOUT_S)
        if done.returncode != 0 or not out.exists():
            pytest.fail(f"the NeMo Gym driver exited {done.returncode}:\n{done.stderr[-4000:]}")
        yield {**json.loads(out.read_text()), "open_after": live.engine.sessions.open_count}
    finally:
        live.stop()


pytestmark = pytest.mark.requires_nemo_gym


def test_assays_wire_models_have_every_field_of_nemo_gyms(report: dict[str, Any]) -> None:
    assert report["fields_missing"] == {name: [] for name in report["fields_missing"]}
    assert len(report["fields_missing"]) == 7


def test_math_single_step_rewards_right_wrong_and_masks_the_unscorable(report: dict[str, Any]) -> None:
    runs = report["rollouts"]
    assert (runs["math_correct"]["reward"], runs["math_correct"]["mask_sample"]) == (1.0, False)
    assert (runs["math_wrong"]["reward"], runs["math_wrong"]["mask_sample"]) == (0.0, False)
    assert runs["math_expected_answer"]["reward"] == 1.0
    unscorable = runs["math_unscorable"]
    assert unscorable["mask_sample"] is True
    assert unscorable["failure_kind"] == "assay:item_invalid"
    assert "cannot use the reference" in unscorable["failure_reason"]
    assert unscorable["assay_result"]["reward"] is None  # Assay's own result: unscored, not 0
    assert runs["math_correct"]["failure_kind"] is None


def test_a_python_session_keeps_state_across_three_calls_and_is_verified(report: dict[str, Any]) -> None:
    run = report["rollouts"]["python_session"]
    assert run["reward"] == 1.0
    assert [json.loads(o)["status"] for o in run["tool_outputs"]] == ["ok", "ok", "ok"]
    assert json.loads(run["tool_outputs"][2])["output"] == "42\n"
    assert run["assay_result"]["details"]["session"]["steps"] == 3


def test_a_tool_printing_a_reward_does_not_reach_the_verdict(report: dict[str, Any]) -> None:
    run = report["rollouts"]["tool_prints_reward"]
    assert "reward: 1.0" in json.loads(run["tool_outputs"][0])["output"]
    assert (run["reward"], run["mask_sample"]) == (0.0, False)


def test_the_verify_body_cannot_replace_the_seeded_gold(report: dict[str, Any]) -> None:
    forged = report["probes"]["verify_with_forged_gold"]["body"]
    assert (forged["reward"], forged["mask_sample"]) == (0.0, False)
    assert forged["assay_result"]["details"]["gold"] == "42"


def test_a_row_without_an_item_is_refused_clearly(report: dict[str, Any]) -> None:
    failed = report["rollouts"]["no_item"]["failed"]  # SimpleAgent's /run fails on the seed's 422
    assert failed["_ng_failure_http_status"] == 500
    refused = report["probes"]["seed_no_item"]
    assert refused["status"] == 422
    assert "`item`" in refused["body"]["error"]["message"]


def test_assay_installs_beside_nemo_gym_without_moving_its_pins(report: dict[str, Any]) -> None:
    assert report["assay_version"]
    assert report["pins_broken"] == []


def test_64_python_sessions_at_once_each_see_only_their_own_state(report: dict[str, Any]) -> None:
    results = report["many"]["results"]
    assert len(results) == CONCURRENT
    for i, run in enumerate(results):
        assert json.loads(run["tool_outputs"][2])["output"] == f"{i + 1}\n"
        assert (run["reward"], run["mask_sample"]) == (1.0, False)
    assert report["open_after"] == 0  # verify ended every session


def test_one_sessions_cookie_cannot_reach_anothers_state(report: dict[str, Any]) -> None:
    probes = report["probes"]
    assert probes["seed"]["status"] == 200 and probes["seed"]["cookie_set"]
    assert probes["seed"]["body"]["tools"][0]["name"] == "python"
    assert probes["a_sets"]["body"]["status"] == "ok"
    assert "NameError" in probes["b_reads"]["body"]["output"]
    assert probes["a_reads"]["body"]["output"] == "a-only\n"


def test_a_missing_forged_or_closed_session_gets_a_clear_error(report: dict[str, Any]) -> None:
    probes = report["probes"]
    for name in ("no_cookie", "forged_cookie", "verify_forged"):
        assert probes[name]["status"] == 404, name
    assert "seed_session" in probes["no_cookie"]["body"]["error"]["message"]
    assert probes["forged_cookie"]["body"]["error"]["type"] == "session_gone"
    assert probes["close_a"]["status"] == 200
    assert probes["a_after_close"]["status"] == 410
    after = probes["verify_after_close"]["body"]
    assert (after["mask_sample"], after["failure_kind"]) == (True, "session_lost")


def test_bad_calls_are_observations_or_clear_refusals(report: dict[str, Any]) -> None:
    probes = report["probes"]
    assert probes["unknown_tool_route"]["status"] == 404
    assert probes["tool_not_in_session"]["body"]["status"] == "invalid_call"
    assert probes["bad_arguments"]["body"]["status"] == "invalid_call"
    assert probes["not_an_object"]["status"] == 422
    assert probes["huge_body"]["status"] == 413


def test_an_environment_servers_seed_is_idempotent_bound_to_its_episode_and_closes(
    report: dict[str, Any],
) -> None:
    env = report["environment_server"]
    assert env["first"] == {
        "resources_session_id": env["id"],
        "resources_tools": None,
        "sandbox_access": None,
    }
    assert env["again"] == env["first"]
    assert env["again_reads"]["body"]["output"] == "7\n"  # the same session
    assert env["other_episode"]["status"] == 409
    assert env["wrong_episode_close"]["status"] == 409
    assert env["close"] == {"resources_session_id": env["id"]}
    assert env["close_again"] == 200
    assert env["after_close"]["status"] == 410
    assert env["seed_after_close"]["status"] == 409


def _result(status: Status, reward: float | None, reason: str = "fine") -> Result:
    return Result(id="x", task="math", status=status, reward=reward, correct=None, reason=reason)


def test_every_unscored_status_is_masked_with_a_kind_never_a_bare_zero() -> None:
    body = BaseVerifyRequest(responses_create_params={}, response={"output": []}, reward=7)
    for status, kind in [
        (Status.INVALID, "assay:item_invalid"),
        (Status.TIMEOUT, "assay:verifier_timeout"),
        (Status.ERROR, "verifier_error"),
    ]:
        answer = verdict(body, _result(status, None, "why"))
        assert (answer.mask_sample, answer.failure_kind, answer.failure_reason) == (True, kind, "why")
    assert verdict(body, _result(Status.OK, 0.5)).reward == 0.5  # a row's own `reward` field is replaced


def test_only_the_assistants_own_text_is_verified() -> None:
    output = [
        {"type": "function_call", "name": "python", "arguments": "{}", "call_id": "c"},
        {"type": "function_call_output", "call_id": "c", "output": "\\boxed{42}"},
        {"type": "reasoning", "id": "r", "summary": [{"type": "summary_text", "text": "\\boxed{42}"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "so 41"}]},
    ]
    assert answer_text({"output": output}) == "so 41"


def test_tool_routes_take_only_free_paths() -> None:
    app = create_app(Settings())
    paths = app.openapi()["paths"]
    assert {"/seed_session", "/verify", "/close_session", "/python", "/sql", "/run_tests"} <= set(paths)
    assert not {f"/{name}" for name in RESERVED - {"seed_session", "verify", "close_session"}} & set(paths)
    # an existing route keeps its answer: POST /healthz is not taken over by a tool route
    assert TestClient(app).post("/healthz").status_code == 405
