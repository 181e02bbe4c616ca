"""Ensembles of judge models or samples: mean vs majority, and their agreement in the details."""

from __future__ import annotations

import pytest

from assay.judges.ensemble import aggregate
from assay.types import Status
from judges.judge_harness import Harness

QUESTION = "What is 2 + 2?"
MODELS = ["fixed-5", "fixed-2", "fixed-2"]  # one lenient outlier, two agreeing judges


def _ensemble(harness: Harness, **options: object) -> tuple[float | None, dict[str, object]]:
    scorer = harness.scorer(model="fixed-5", extra_models=["fixed-2", "fair", "seeded", "garbage"])
    result = harness.score(scorer, prompt=QUESTION, response="4", options={"models": MODELS, **options})
    assert result.status is Status.OK
    return result.reward, result.details


def test_a_majority_vote_outvotes_a_single_outlier_judge(harness: Harness) -> None:
    reward, details = _ensemble(harness, aggregate="majority")
    assert reward == 0.25  # score 2 on 1..5, not the outlier's 5
    assert details["ensemble"] == {
        "method": "majority",
        "votes": 3,
        "agreement": pytest.approx(2 / 3),
        "spread": 0.75,
    }
    assert [v["model"] for v in details["votes"]] == MODELS  # type: ignore[attr-defined]


def test_the_mean_averages_every_vote(harness: Harness) -> None:
    reward, details = _ensemble(harness)
    assert reward == pytest.approx((1.0 + 0.25 + 0.25) / 3)
    assert details["ensemble"]["method"] == "mean"  # type: ignore[index]


def test_samples_of_one_model_are_drawn_with_distinct_seeds_at_the_sample_temperature(
    harness: Harness,
) -> None:
    scorer = harness.scorer(model="seeded", sample_temperature=0.9)
    result = harness.score(scorer, prompt=QUESTION, response="4", options={"samples": 3})
    bodies = [r["body"] for r in harness.judges.requests_for("seeded")]
    assert sorted(b["seed"] for b in bodies) == [0, 1, 2]
    assert {b["temperature"] for b in bodies} == {0.9}
    assert [v["score"] for v in result.details["votes"]] == [1.0, 2.0, 3.0]
    assert result.reward == pytest.approx(0.25)  # mean score 2 on 1..5
    assert result.details["ensemble"]["agreement"] == pytest.approx(1 / 3)


def test_one_failing_member_fails_the_whole_ensemble(harness: Harness) -> None:
    scorer = harness.scorer(model="fair", extra_models=["garbage"])
    result = harness.score(scorer, prompt=QUESTION, response="4", options={"models": ["fair", "garbage"]})
    assert result.status is Status.ERROR
    assert (result.details["failed_votes"], result.details["votes"]) == (1, 2)


def test_an_ensemble_may_only_name_configured_models(harness: Harness) -> None:
    result = harness.score(
        harness.scorer(), prompt=QUESTION, response="4", options={"models": ["gpt-unknown"]}
    )
    assert result.status is Status.ERROR
    assert "ASSAY_JUDGE__EXTRA_MODELS" in result.reason
    assert harness.judges.requests == []


def test_pairwise_ensembles_vote_on_debiased_verdicts(harness: Harness) -> None:
    scorer = harness.scorer(model="fair", extra_models=["first"])
    result = harness.score(
        scorer,
        prompt=QUESTION,
        response="4 correct",
        response_b="5",
        mode="pairwise",
        options={"models": ["fair", "first", "fair"], "aggregate": "majority"},
    )
    assert [v["reward"] for v in result.details["votes"]] == [1.0, 0.5, 1.0]
    assert result.reward == 1.0


def test_majority_ties_break_towards_the_median_then_down() -> None:
    assert aggregate([0.0, 1.0], [0.0, 1.0], "majority").reward == 0.0
    assert aggregate([0.0, 0.5, 1.0], [0.0, 0.5, 1.0], "majority").reward == 0.5
