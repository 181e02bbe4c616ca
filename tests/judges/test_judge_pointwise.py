"""Pointwise grading: rubric prompts, reference-guided grading, G-Eval weighting, robust score parsing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.errors import OptionsError
from assay.judges.client import ChatReply, TokenLogprobs
from assay.judges.failures import JudgeUnparseable
from assay.judges.parsing import parse_score, weighted_score
from assay.types import Status
from judges.judge_harness import Harness
from judges.obedient import section

QUESTION = "What is 2 + 2?"


def test_a_good_answer_gets_a_higher_normalised_reward_than_a_bad_one(harness: Harness) -> None:
    scorer = harness.scorer(model="fair")
    good = harness.score(scorer, prompt=QUESTION, response="4, which is correct")
    bad = harness.score(scorer, prompt=QUESTION, response="5")
    assert (good.status, good.reward, good.correct) == (Status.OK, 1.0, None)  # 5 on 1..5
    assert bad.reward == 0.25  # 2 on 1..5
    assert good.details["votes"][0]["source"] == "logprobs"


def test_g_eval_weights_the_score_by_its_token_probabilities(harness: Harness) -> None:
    # The judge writes 4 but puts equal probability on 4 and 2: the expected score is 3.
    scorer = harness.scorer(model="unsure")
    weighted = harness.score(scorer, prompt=QUESTION, response="4")
    plain = harness.score(scorer, prompt=QUESTION, response="4", options={"use_logprobs": False})
    assert weighted.details["votes"][0]["probs"] == {"2": 0.5, "4": 0.5}
    assert weighted.details["score"] == pytest.approx(3.0)
    assert weighted.reward == pytest.approx(0.5)
    assert plain.reward == pytest.approx(0.75)
    assert plain.details["votes"][0]["source"] == "text"
    assert "logprobs" not in harness.judges.requests_for("unsure")[-1]["body"]


def test_without_logprobs_from_the_backend_the_written_score_is_used(harness: Harness) -> None:
    scorer = harness.scorer(model="unsure", top_logprobs=0)
    result = harness.score(scorer, prompt=QUESTION, response="4")
    assert result.reward == pytest.approx(0.75)
    assert result.details["votes"][0]["source"] == "text"


def test_an_answer_without_a_score_is_an_error_with_the_raw_text(harness: Harness) -> None:
    result = harness.score(harness.scorer(model="garbage"), prompt=QUESTION, response="4")
    assert result.status is Status.ERROR
    assert result.reward is None
    assert result.reason == "the judge's answer holds no score"
    assert result.details["raw"] == "What a lovely answer! I would give it a thumbs up."


def test_the_reference_and_rubric_reach_the_prompt(harness: Harness) -> None:
    scorer = harness.scorer(model="fair")
    harness.score(scorer, prompt=QUESTION, response="4", reference="four", rubric="Is the arithmetic right?")
    user = harness.judges.requests_for("fair")[-1]["body"]["messages"][-1]["content"]
    assert section(user, "Reference answer") == "four"
    assert "Is the arithmetic right?\nScore 1: " in user
    assert 'Answer with JSON only: {"score": N}, where N is one integer from 1 to 5.' in user


def test_a_custom_scale_with_descriptions_is_normalised_to_0_1(harness: Harness) -> None:
    scorer = harness.scorer(model="fixed-2")
    options = {"min_score": 0, "max_score": 4, "score_descriptions": {str(s): f"level {s}" for s in range(5)}}
    result = harness.score(scorer, prompt=QUESTION, response="4", options=options)
    assert result.reward == pytest.approx(0.5)
    user = harness.judges.requests_for("fixed-2")[-1]["body"]["messages"][-1]["content"]
    assert "Score 0: level 0\n" in user and "Score 4: level 4" in user


def test_a_score_outside_the_scale_is_an_error(harness: Harness) -> None:
    result = harness.score(
        harness.scorer(model="fixed-5"), prompt=QUESTION, response="4", options={"max_score": 3}
    )
    assert result.status is Status.ERROR
    assert "outside the scale 1..3" in result.reason


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"min_score": 5, "max_score": 5}, "must exceed"),
        ({"score_descriptions": {"1": "bad"}}, "describe exactly the scores 1..5"),
        ({"aggregate": "median"}, "aggregate"),
        ({"sampels": 2}, 'did you mean "samples"'),
    ],
)
def test_bad_options_are_refused_with_a_reason(
    harness: Harness, options: dict[str, object], message: str
) -> None:
    scorer = harness.scorer()
    with pytest.raises(OptionsError, match=message):
        scorer.parse_options(options)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"response": "4"}, "need a prompt"),
        ({"prompt": QUESTION}, "need a response"),
        ({"prompt": QUESTION, "response": "4", "mode": "pairwise"}, "need response_b"),
        ({"prompt": QUESTION, "response": "4", "response_b": "5"}, 'only read in mode "pairwise"'),
        ({"prompt": QUESTION, "response": "4", "mode": "listwise"}, 'must be "pointwise" or "pairwise"'),
    ],
)
def test_malformed_judge_items_are_invalid(harness: Harness, fields: dict[str, str], reason: str) -> None:
    result = harness.score(harness.scorer(), **fields)
    assert result.status is Status.INVALID
    assert reason in result.reason
    assert harness.judges.requests == []


@pytest.mark.parametrize(
    ("text", "score"),
    [
        ("Good.\n[RESULT] 4", 4.0),  # the Prometheus marker
        ("[RESULT] 2 ... on reflection [RESULT] 3", 3.0),  # the last marker wins
        ("Score: 5", 5.0),  # a common free-form answer
        ("I rate it 3/5.", 3.0),  # a fraction of the top score
        ("  4. ", 4.0),  # a bare number
        ("[RESULT] **4**", 4.0),  # markdown emphasis
    ],
)
def test_scores_are_parsed_from_common_judge_formats(text: str, score: float) -> None:
    assert parse_score(text, 1, 5).value == score


@pytest.mark.parametrize("text", ["", "Looks great!", "[RESULT] 9", "answer 42 is correct"])
def test_texts_without_a_score_on_the_scale_are_unparseable(text: str) -> None:
    with pytest.raises(JudgeUnparseable) as caught:
        parse_score(text, 1, 5)
    assert caught.value.details["raw"] == text


def test_a_score_token_merged_with_other_text_falls_back_to_the_written_score() -> None:
    # "]4" as one token: the token's alternatives are not alternatives for the score alone
    completion = ChatReply(
        "[RESULT]4", (TokenLogprobs("[RESULT", -0.1), TokenLogprobs("]4", -0.1, (("]4", -0.1),)))
    )
    assert weighted_score(completion, parse_score(completion.text, 1, 5), 1, 5) is None


@given(text=st.text(max_size=200), low=st.integers(0, 3), span=st.integers(1, 9))
def test_score_parsing_is_total_and_stays_on_the_scale(text: str, low: int, span: int) -> None:
    high = low + span
    try:
        parsed = parse_score(text, low, high)
    except JudgeUnparseable as exc:
        assert exc.details["raw"] == text
    else:
        assert low <= parsed.value <= high
