"""Pairwise judging in both orders: a position-biased judge no longer decides by position."""

from __future__ import annotations

from assay.types import Status
from judges.judge_harness import Harness
from judges.obedient import section

QUESTION = "What is 2 + 2?"
GOOD, BAD = "4, which is correct", "5"


def test_one_order_lets_a_first_position_judge_crown_whichever_answer_comes_first(harness: Harness) -> None:
    scorer = harness.scorer(model="first")
    one_order = {"swap": False}
    a = harness.score(
        scorer, prompt=QUESTION, response=BAD, response_b=GOOD, mode="pairwise", options=one_order
    )
    b = harness.score(
        scorer, prompt=QUESTION, response=GOOD, response_b=BAD, mode="pairwise", options=one_order
    )
    assert (a.reward, b.reward) == (1.0, 1.0)  # both answers "win": position decided
    assert len(harness.judges.requests_for("first")) == 2


def test_both_orders_turn_a_position_bias_into_a_tie(harness: Harness) -> None:
    scorer = harness.scorer(model="first")
    result = harness.score(scorer, prompt=QUESTION, response=BAD, response_b=GOOD, mode="pairwise")
    assert (result.status, result.reward, result.correct) == (Status.OK, 0.5, None)
    assert result.details["consistent"] is False
    vote = result.details["votes"][0]
    assert (vote["response_first"], vote["response_b_first"]) == ("response", "response_b")
    assert "position bias" in result.reason
    shown_first = [
        section(r["body"]["messages"][-1]["content"], "Answer A")
        for r in harness.judges.requests_for("first")
    ]
    assert sorted(shown_first) == sorted([BAD, GOOD])  # each answer was shown first once


def test_a_content_judge_wins_and_loses_consistently_in_both_orders(harness: Harness) -> None:
    scorer = harness.scorer(model="fair")
    win = harness.score(scorer, prompt=QUESTION, response=GOOD, response_b=BAD, mode="pairwise")
    loss = harness.score(scorer, prompt=QUESTION, response=BAD, response_b=GOOD, mode="pairwise")
    assert (win.reward, loss.reward) == (1.0, 0.0)
    assert win.details["consistent"] and loss.details["consistent"]
    assert win.reason == "response preferred in both orders"


def test_the_judge_may_call_a_tie(harness: Harness) -> None:
    scorer = harness.scorer(model="fair")
    result = harness.score(scorer, prompt=QUESTION, response=GOOD, response_b=GOOD + "!", mode="pairwise")
    assert result.reward == 0.5
    assert result.details["consistent"] is True
    assert (
        '{"verdict": "tie"} for a tie'
        in harness.judges.requests_for("fair")[-1]["body"]["messages"][-1]["content"]
    )


def test_a_pairwise_answer_without_a_verdict_is_an_error_with_the_raw_text(harness: Harness) -> None:
    result = harness.score(
        harness.scorer(model="garbage"), prompt=QUESTION, response=GOOD, response_b=BAD, mode="pairwise"
    )
    assert result.status is Status.ERROR
    assert result.reason == "the judge's answer holds no verdict"
    assert "thumbs up" in result.details["raw"]


def test_both_lengths_are_reported(harness: Harness) -> None:
    result = harness.score(harness.scorer(), prompt=QUESTION, response=GOOD, response_b=BAD, mode="pairwise")
    assert result.details["lengths"] == {"response": len(GOOD), "response_b": len(BAD)}


def test_a_rubric_reaches_the_pairwise_prompt_as_criteria(harness: Harness) -> None:
    scorer = harness.scorer(model="fair")
    item = {"prompt": QUESTION, "response": GOOD, "response_b": BAD, "mode": "pairwise"}
    harness.score(scorer, **item, rubric="Prefer brevity.")
    for request in harness.judges.requests_for("fair"):
        user = request["body"]["messages"][-1]["content"]
        assert section(user, "Criteria") == "Prefer brevity."
