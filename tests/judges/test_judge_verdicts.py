"""What makes a small judge usable and its uselessness visible: constrained verdicts, prose fallback,
no cached failures, both orders' text, fresh-only length fits, a deadline that ignores the slot queue,
and per-model quality rates."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest

from assay.judges.quality import JudgeQualityCollector
from assay.judges.structured import pairwise_format
from assay.types import Item, Result, Status
from judges.judge_harness import Harness

QUESTION = "What is 2 + 2?"
GOOD, BAD = "4, which is correct", "5"


def _pair(harness: Harness, scorer: Any, response: str = GOOD, response_b: str = BAD) -> Result:
    return harness.score(scorer, prompt=QUESTION, response=response, response_b=response_b, mode="pairwise")


def test_a_constrained_backend_is_asked_for_json_and_its_answer_is_read(harness: Harness) -> None:
    scorer = harness.scorer(model="json")
    assert _pair(harness, scorer).reward == 1.0
    graded = harness.score(scorer, prompt=QUESTION, response=GOOD, options={"use_logprobs": False})
    assert graded.details["score"] == 5
    body = harness.judges.requests_for("json")[0]["body"]
    assert body["response_format"] == pairwise_format()


def test_without_structured_output_no_response_format_is_sent(harness: Harness) -> None:
    scorer = harness.scorer(model="fair", structured_output=False)
    assert _pair(harness, scorer).reward == 1.0
    assert "response_format" not in harness.judges.requests_for("fair")[0]["body"]


def test_prose_verdicts_are_read_when_no_marker_is_written(harness: Harness) -> None:
    # "A is better" / "Response B is better." as SmolLM2 writes them, in both orders.
    scorer = harness.scorer(model="prose")
    result = _pair(harness, scorer)
    assert (result.status, result.reward) == (Status.OK, 1.0)
    assert _pair(harness, scorer, GOOD, GOOD + "!").reward == 0.5  # "Both are equally good."


def test_an_unparseable_answer_is_never_cached(harness: Harness) -> None:
    scorer = harness.scorer(model="garbage", cache_path=harness.tmp_path / "cache.sqlite")
    for _ in range(2):
        result = harness.score(scorer, prompt=QUESTION, response=GOOD)
        assert result.status is Status.ERROR and "no score" in result.reason
    assert len(harness.judges.requests_for("garbage")) == 2  # asked again, not replayed
    assert scorer.cache_stats.writes == 0


def test_a_failed_pair_keeps_what_the_judge_said_in_both_orders(harness: Harness) -> None:
    scorer = harness.scorer(model="garbage")
    result = _pair(harness, scorer)
    assert result.status is Status.ERROR
    assert result.details["orders"] == ["response first", "response_b first"]
    assert len(result.details["texts"]) == 2
    assert all("thumbs up" in text for text in result.details["texts"])


def test_cache_replays_do_not_feed_the_length_regression(harness: Harness) -> None:
    scorer = harness.scorer(model="fair", cache_path=harness.tmp_path / "cache.sqlite")
    for _ in range(3):
        _pair(harness, scorer)
    [regression] = scorer._lengths.values()
    assert len(regression) == 1  # one fresh judgement, two replays
    assert scorer.cache_stats.hits == 4


def test_the_deadline_counts_the_judges_time_not_the_wait_for_a_request_slot(harness: Harness) -> None:
    # One request at a time, 0.3 s each, a 0.5 s deadline: the fourth item waits 0.9 s for the slot.
    scorer = harness.scorer(model="paced", concurrency=1, deadline_s=0.5)
    items = [Item(task="judge", prompt=QUESTION, response=GOOD) for _ in range(4)]

    async def all_items() -> list[Result]:
        return list(await asyncio.gather(*(scorer.ascore(i, scorer.parse_options(i.options)) for i in items)))

    results = harness.run(all_items())
    assert [r.status for r in results] == [Status.OK] * 4


def test_the_deadline_still_ends_a_judge_that_never_answers(harness: Harness) -> None:
    scorer = harness.scorer(model="slow", deadline_s=0.3, timeout_s=60)
    assert harness.score(scorer, prompt=QUESTION, response=GOOD).status is Status.TIMEOUT


def test_details_say_when_the_two_orders_disagreed(harness: Harness) -> None:
    biased = _pair(harness, harness.scorer(model="first"))
    fair = _pair(harness, harness.scorer(model="fair"))
    assert (biased.details["orders_disagree"], fair.details["orders_disagree"]) == (1, 0)


def test_quality_rates_show_a_position_only_judge(harness: Harness) -> None:
    scorer = harness.scorer(model="first")
    for response, response_b in ((GOOD, BAD), (BAD, GOOD), (GOOD, GOOD + "!")):
        _pair(harness, scorer, response, response_b)
    rates = scorer.quality.rates("first")
    assert rates["order_consistency"] == 0.0 and rates["first_position_rate"] == 1.0
    assert rates["tie_rate"] == 0.0 and rates["parse_failure_rate"] == 0.0
    fair = harness.scorer(model="fair")
    _pair(harness, fair)
    _pair(harness, fair, GOOD, GOOD + "!")
    assert fair.quality.rates("fair")["order_consistency"] == 1.0
    assert fair.quality.rates("fair")["tie_rate"] == 0.5


def test_quality_rates_are_exported_per_model(harness: Harness) -> None:
    scorer = harness.scorer(model="garbage")
    harness.score(scorer, prompt=QUESTION, response=GOOD)
    registry = CollectorRegistry()
    registry.register(JudgeQualityCollector(lambda: scorer.quality))
    text = generate_latest(registry).decode()
    assert 'assay_judge_parse_failure_rate{model="garbage"} 1.0' in text
    assert 'assay_judge_answers_total{model="garbage"} 1.0' in text
