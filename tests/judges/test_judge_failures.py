"""Each way a judge can fail ends as the right status through the real pipeline, never as a reward."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from assay.engine.scoring import Engine
from assay.registry import folder_tasks
from assay.settings import Settings
from assay.types import Result, Status
from judges.judge_harness import Harness, closed_port_url

ITEM = {"task": "judge", "prompt": "What is 2 + 2?", "response": "4 correct"}


def _score(settings: Settings, **item: Any) -> Result:
    with Engine(settings) as engine:
        (result,) = engine.score([{**ITEM, **item}])
    return result


def test_the_judge_task_is_registered() -> None:
    assert folder_tasks()["judge"] == "assay.verifiers.judge:JudgeScorer"


def test_a_judge_slower_than_the_deadline_is_a_timeout(harness: Harness) -> None:
    result = _score(harness.settings(model="slow", deadline_s=0.5, timeout_s=60))
    assert (result.status, result.reward) == (Status.TIMEOUT, None)
    assert result.reason == "no verdict within the 0.5s deadline"


def test_a_request_past_the_client_timeout_is_a_timeout(harness: Harness) -> None:
    result = _score(harness.settings(model="slow", deadline_s=30, timeout_s=0.3))
    assert (result.status, result.reward) == (Status.TIMEOUT, None)
    assert "did not answer within 0.3s" in result.reason


def test_a_judge_answering_429_then_succeeding_gives_a_score(harness: Harness) -> None:
    result = _score(harness.settings(model="flaky", retries=3))
    assert (result.status, result.reward) == (Status.OK, 1.0)
    assert len(harness.judges.requests_for("flaky")) == 3


def test_a_judge_still_answering_429_after_the_retries_is_an_error(harness: Harness) -> None:
    result = _score(harness.settings(model="flaky", retries=1))
    assert (result.status, result.reward) == (Status.ERROR, None)
    assert "HTTP 429; gave up after 2 attempts" in result.reason


def test_a_judge_answering_garbage_is_an_error_with_its_text(harness: Harness) -> None:
    result = _score(harness.settings(model="garbage"))
    assert (result.status, result.reward) == (Status.ERROR, None)
    assert result.details["raw"] == "What a lovely answer! I would give it a thumbs up."


def test_a_judge_that_is_down_is_an_error(harness: Harness) -> None:
    result = _score(harness.settings(base_url=closed_port_url(), retries=1))
    assert (result.status, result.reward) == (Status.ERROR, None)
    assert "cannot reach the judge backend" in result.reason


def test_without_a_backend_the_reason_names_the_setting(harness: Harness) -> None:
    assert "ASSAY_JUDGE__BASE_URL" in _score(Settings(workers=1)).reason
    no_model = _score(Settings(workers=1, judge={"base_url": harness.judges.base_url}))
    assert (no_model.status, no_model.reward) == (Status.ERROR, None)
    assert "ASSAY_JUDGE__MODEL" in no_model.reason


def test_the_api_key_never_reaches_a_result(harness: Harness) -> None:
    key = "sk-judge-key-never-echo"
    result = _score(harness.settings(model="echo-auth", api_key=key))
    assert result.status is Status.ERROR
    assert "HTTP 401" in result.reason
    assert key not in result.model_dump_json()
    assert key not in repr(harness.settings(api_key=key))


def test_the_judges_load_no_model_library() -> None:
    # The judge talks HTTP only: importing it must not pull torch, transformers or vllm into the server.
    code = (
        "import sys, assay.verifiers.judge.scorer, assay.judges.second_opinion; "
        "print(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"
