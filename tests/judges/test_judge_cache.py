"""The SQLite cache: a restart keeps answers, keys separate what changes an answer, failures are not kept."""

from __future__ import annotations

from assay.judges.cache import cache_key
from assay.judges.client import ChatRequest
from assay.types import Status
from judges.judge_harness import Harness

QUESTION = "What is 2 + 2?"


def test_a_new_scorer_on_the_same_path_answers_from_the_cache(harness: Harness) -> None:
    path = harness.tmp_path / "judge-cache.sqlite"
    first = harness.scorer(model="fair", cache_path=path)
    before = harness.score(first, prompt=QUESTION, response="4 correct")
    assert (first.cache_stats.misses, first.cache_stats.writes) == (1, 1)
    first.close()  # a restart: the process's scorer goes away, the file stays
    events: list[str] = []  # the hook a metrics exporter would use
    second = harness.scorer(model="fair", cache_path=path, on_cache_event=events.append)
    after = harness.score(second, prompt=QUESTION, response="4 correct")
    assert events == ["hit"]
    assert len(harness.judges.requests_for("fair")) == 1
    assert after.reward == before.reward == 1.0
    assert after.details["cached"] == 1 and before.details["cached"] == 0
    assert (second.cache_stats.hits, second.cache_stats.misses) == (1, 0)


def test_both_pairwise_orders_are_cached_separately_and_reused(harness: Harness) -> None:
    scorer = harness.scorer(model="first", cache_path=harness.tmp_path / "c.sqlite")
    item = {"prompt": QUESTION, "response": "4", "response_b": "5", "mode": "pairwise"}
    harness.score(scorer, **item)
    again = harness.score(scorer, **item)
    assert len(harness.judges.requests_for("first")) == 2  # two orders, asked once each
    assert again.reward == 0.5 and again.details["cached"] == 2


def test_failures_are_not_cached(harness: Harness) -> None:
    scorer = harness.scorer(model="broken", retries=0, cache_path=harness.tmp_path / "c.sqlite")
    for _ in range(2):
        assert harness.score(scorer, prompt=QUESTION, response="4").status is Status.ERROR
    assert len(harness.judges.requests_for("broken")) == 2
    assert scorer.cache_stats.writes == 0


def test_the_key_covers_backend_model_template_parameters_and_order() -> None:
    base = ChatRequest("m", (("user", "A: x B: y"),), temperature=0.0, max_tokens=10, top_logprobs=5)
    key = cache_key("http://a/v1", "pointwise@1", base)
    variants = [
        cache_key("http://b/v1", "pointwise@1", base),
        cache_key("http://a/v1", "pointwise@2", base),
        cache_key("http://a/v1", "pointwise@1", ChatRequest("m2", base.messages, 0.0, 10, 5)),
        cache_key("http://a/v1", "pointwise@1", ChatRequest("m", base.messages, 0.5, 10, 5)),
        cache_key("http://a/v1", "pointwise@1", ChatRequest("m", base.messages, 0.0, 10, 5, seed=1)),
        cache_key("http://a/v1", "pointwise@1", ChatRequest("m", (("user", "A: y B: x"),), 0.0, 10, 5)),
    ]
    assert key not in variants and len(set(variants)) == len(variants)


def test_an_unusable_cache_path_is_an_error_per_item(harness: Harness) -> None:
    blocker = harness.tmp_path / "file"
    blocker.write_text("not a directory")
    scorer = harness.scorer(cache_path=blocker / "cache.sqlite")
    result = harness.score(scorer, prompt=QUESTION, response="4")
    assert result.status is Status.ERROR
    assert "cannot open the judge cache" in result.reason
