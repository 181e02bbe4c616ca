"""The judge inside the one pipeline: the math second opinion is consulted only for rejections, and the
judge cache is visible in the engine's metrics."""

from __future__ import annotations

import logging
from pathlib import Path

from assay.engine.scoring import Engine
from assay.settings import Settings
from assay.types import Status
from judges.scripted_server import ScriptedJudges

# 7% against 8: a form the rules read as a percent, which the second opinion may still be asked about
WRONG = {"task": "math", "response": "so the total is \\boxed{7\\%}", "reference": "8"}
RIGHT = {"task": "math", "response": "so the total is \\boxed{8}", "reference": "8"}


def _settings(judges: ScriptedJudges, tmp_path: Path, second_opinion: bool) -> Settings:
    judge = {
        "base_url": judges.base_url,
        "model": "equiv",
        "second_opinion": second_opinion,
        "cache_path": str(tmp_path / "judge.sqlite"),
    }
    return Settings(workers=1, judge=judge)


def test_a_rejected_math_answer_gets_a_second_opinion(judges: ScriptedJudges, tmp_path: Path) -> None:
    judges.reset()
    with Engine(_settings(judges, tmp_path, second_opinion=True)) as engine:
        wrong, right = engine.score([WRONG, RIGHT])
        metrics = engine.metrics.render().decode()
    assert (wrong.status, wrong.correct, wrong.reward) == (Status.OK, False, 0.0)
    assert wrong.details["decided_by"] == "rule"
    assert wrong.details["second_opinion"]["asked"] is True
    assert "second_opinion" not in right.details  # an accepted answer is never re-checked
    (request,) = judges.requests_for("equiv")
    prompt = request["body"]["messages"][-1]["content"]
    assert "7" in prompt and "so the total is" not in prompt  # only the extracted answer is shown
    assert 'assay_judge_cache_total{event="miss"} 1.0' in metrics
    assert 'assay_judge_cache_total{event="write"} 1.0' in metrics


def test_the_second_opinion_is_off_by_default(judges: ScriptedJudges, tmp_path: Path) -> None:
    judges.reset()
    with Engine(_settings(judges, tmp_path, second_opinion=False)) as engine:
        (wrong,) = engine.score([WRONG])
    assert wrong.correct is False and "second_opinion" not in wrong.details
    assert judges.requests_for("equiv") == []


def test_a_second_opinion_that_never_comes_leaves_the_rule_verdict(
    judges: ScriptedJudges, tmp_path: Path
) -> None:
    # A judge that never answers: the look is bounded by the judge's deadline, not left to hang.
    settings = _settings(judges, tmp_path, second_opinion=True)
    settings = settings.model_copy(
        update={"judge": settings.judge.model_copy(update={"model": "slow", "deadline_s": 0.5})}
    )
    with Engine(settings) as engine:
        (wrong,) = engine.score([WRONG])
    assert (wrong.status, wrong.correct, wrong.reward) == (Status.OK, False, 0.0)
    assert wrong.details["decided_by"] == "rule"
    assert wrong.details["second_opinion"]["status"] == "timeout"
    assert "0.5s" in wrong.details["second_opinion"]["reason"]


def test_the_server_process_never_builds_the_math_scorer(judges: ScriptedJudges, tmp_path: Path) -> None:
    # Math runs in the workers: the engine reads its deadline from the class, so sympy's warm-up and the
    # math scorer's logger settings stay out of the serving process.
    quiet = logging.getLogger("math_verify")
    before = quiet.level
    quiet.setLevel(logging.NOTSET)  # as a fresh process has it (other tests build math scorers here)
    try:
        with Engine(_settings(judges, tmp_path, second_opinion=True)) as engine:
            (right,) = engine.score([RIGHT])
        assert right.correct is True
        assert quiet.level == logging.NOTSET
    finally:
        quiet.setLevel(before)
