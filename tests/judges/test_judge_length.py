"""Length control: the regression correction takes the win away from padding, and leaves content alone."""

from __future__ import annotations

import math

import pytest

from assay.judges.length import LengthRegression
from assay.verifiers.judge.scorer import JudgeScorer
from judges.judge_harness import Harness

QUESTION = "Explain why 2 + 2 = 4."
CONCISE_CORRECT = "4, which is correct"
PADDED_WRONG = "5. " + "Let me explain this very carefully and thoroughly. " * 10


def _warm_up_pairs(harness: Harness, scorer: JudgeScorer) -> None:
    """Pairs of many length differences, each in both roles, the correct one as often long as short."""
    for diff in (20, 80, 320, 640):
        for good_is_long in (True, False):
            # " 4, correct": an answer plus the `fair` judge's marker (a bare "correct" with no content is
            # a self-verdict the guard neutralises, issue 28)
            short = "x" * 10 + ("" if good_is_long else " 4, correct")
            long_ = "y" * (10 + diff) + (" 4, correct" if good_is_long else "")
            for response, response_b in ((short, long_), (long_, short)):
                harness.score(
                    scorer, prompt=QUESTION, response=response, response_b=response_b, mode="pairwise"
                )


def test_pairwise_length_control_takes_the_win_away_from_padding(harness: Harness) -> None:
    scorer = harness.scorer(model="longer")
    _warm_up_pairs(harness, scorer)
    item = {"prompt": QUESTION, "response": PADDED_WRONG, "response_b": CONCISE_CORRECT, "mode": "pairwise"}
    raw = harness.score(scorer, **item)
    controlled = harness.score(scorer, **item, options={"length_control": True})
    assert raw.reward == 1.0  # the length-biased judge prefers the padding in both orders
    lc = controlled.details["length_control"]
    assert lc["state"] == "adjusted" and lc["slope"] > 0.4 and lc["raw_reward"] == 1.0
    assert controlled.reward is not None and controlled.reward <= 0.6  # no longer a win
    assert controlled.details["lengths"] == {
        "response": len(PADDED_WRONG),
        "response_b": len(CONCISE_CORRECT),
    }


def test_pairwise_length_control_leaves_a_content_judge_alone(harness: Harness) -> None:
    scorer = harness.scorer(model="fair")
    _warm_up_pairs(harness, scorer)
    item = {"prompt": QUESTION, "response": CONCISE_CORRECT, "response_b": PADDED_WRONG, "mode": "pairwise"}
    controlled = harness.score(scorer, **item, options={"length_control": True})
    lc = controlled.details["length_control"]
    assert lc["state"] == "adjusted" and abs(lc["slope"]) < 0.1
    assert controlled.reward is not None and controlled.reward > 0.9  # the concise correct answer still wins


def test_pointwise_length_control_closes_the_gap_that_padding_opened(harness: Harness) -> None:
    scorer = harness.scorer(model="longer")
    for length in range(0, 500, 50):
        harness.score(scorer, prompt=QUESTION, response="z" * length)
    raw_padded = harness.score(scorer, prompt=QUESTION, response=PADDED_WRONG)
    raw_concise = harness.score(scorer, prompt=QUESTION, response=CONCISE_CORRECT)
    lc = {"length_control": True}
    padded = harness.score(scorer, prompt=QUESTION, response=PADDED_WRONG, options=lc)
    concise = harness.score(scorer, prompt=QUESTION, response=CONCISE_CORRECT, options=lc)
    assert raw_padded.reward is not None and raw_concise.reward is not None
    assert padded.reward is not None and concise.reward is not None
    assert raw_padded.reward - raw_concise.reward == 1.0
    assert padded.reward - concise.reward < 0.5 * (raw_padded.reward - raw_concise.reward)


def test_a_fixed_slope_and_scale_give_the_documented_formula(harness: Harness) -> None:
    scorer = harness.scorer(model="longer")
    options = {"length_control": True, "length_slope": 0.4, "length_scale": 100.0}
    item = {"prompt": QUESTION, "response": PADDED_WRONG, "response_b": CONCISE_CORRECT, "mode": "pairwise"}
    result = harness.score(scorer, **item, options=options)
    x = math.tanh((len(PADDED_WRONG) - len(CONCISE_CORRECT)) / 100.0)
    assert result.reward == pytest.approx(1.0 - 0.4 * x, abs=1e-6)
    assert result.details["length_control"]["state"] == "fixed slope"


def test_length_control_waits_for_enough_judgements_before_adjusting(harness: Harness) -> None:
    scorer = harness.scorer(model="longer", length_min_samples=8)
    result = harness.score(
        scorer,
        prompt=QUESTION,
        response=PADDED_WRONG,
        response_b="4",
        mode="pairwise",
        options={"length_control": True},
    )
    assert result.reward == 1.0
    assert result.details["length_control"]["state"] == "warming up"


def test_the_regression_keeps_only_its_window() -> None:
    regression = LengthRegression(window=4, min_samples=2)
    for i in range(10):
        regression.observe(i, None, 0.5)
    assert len(regression) == 4
