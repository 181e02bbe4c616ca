"""Answer clusters and the majority vote through POST /v1/groups (assay.engine.voting): formed by the
task's own equivalence beside scoring, with and without references, and never failing or hanging a group."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from assay_test_plugins import PLUGINS
from fastapi.testclient import TestClient
from vote_plugins import VOTE_PLUGINS

from assay.api import create_app
from assay.client import AssayClient
from assay.engine.voting import Early, then_cluster
from assay.groups import cluster_indices
from assay.settings import Settings
from assay.verifiers.math.equivalence import MathEquivalence
from assay.verifiers.math.scorer import MathScorer


def _math(answer: str, reference: str | None = "0.5") -> dict[str, Any]:
    item = {"task": "math", "response": f"so the answer is \\boxed{{{answer}}}"}
    return item | ({"reference": reference} if reference is not None else {})


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    settings = Settings(workers=2, plugins=PLUGINS + VOTE_PLUGINS, deadline_s=0.5, math={"deadline_s": 2.0})
    with TestClient(create_app(settings), raise_server_exceptions=False) as test_client:
        yield test_client


def _stats(client: TestClient, *groups: dict[str, Any]) -> list[dict[str, Any]]:
    response = client.post("/v1/groups", json={"groups": list(groups)})
    assert response.status_code == 200, response.text
    return [g["stats"] for g in response.json()["groups"]]


def _clusters(stats: dict[str, Any]) -> list[tuple[str, int, bool | None]]:
    return [(c["representative"], c["size"], c["correct"]) for c in stats["answer_clusters"]]


def test_a_wrong_string_majority_loses_to_the_right_equivalence_majority(client: TestClient) -> None:
    # Strings: "3" twice, each spelling of one half once: a string vote picks the wrong "3".
    (stats,) = _stats(client, {"items": [_math(a) for a in ("3", "1/2", "3", "0.5", "\\frac12")]})
    assert _clusters(stats) == [("1/2", 3, True), ("3", 2, False)]
    assert [c["members"] for c in stats["answer_clusters"]] == [[1, 3, 4], [0, 2]]
    assert (stats["majority_answer"], stats["majority_correct"]) == ("1/2", True)
    assert stats["distinct_answers"] == 4 and stats["clusters_unavailable"] is None
    # Maj@1 is the share of right samples (3/5); with all five the vote is right.
    assert stats["maj_at_k"]["1"] == pytest.approx(0.6) and stats["maj_at_k"]["5"] == 1.0


# Spellings of one answer that differ as strings, and near-misses the math verifier keeps apart.
_SPELLINGS = ["1/2", "0.5", "\\frac{1}{2}", "2/4", "0.50", "0.51", "1/3", "0.333", "50\\%"]
_SPELLINGS += ["x+1", "1+x", "x+1.0001", "x-1", "(x+1)^2", "x^2+2x+1", "\\frac{x^2-1}{x-1}"]
_MERGED = [[0, 1, 2, 3, 4, 8], [5], [6], [7], [9, 10, 15], [11], [12], [13, 14]]


def test_clusters_formed_beside_scoring_are_the_separate_paths(client: TestClient) -> None:
    # The group's clusters come from the worker that scored it; the separate path (cluster_indices
    # over the same answers) must give the very same clusters, near-misses apart.
    assert cluster_indices(_SPELLINGS, MathEquivalence()) == _MERGED
    (stats,) = _stats(client, {"items": [_math(a, "1/2") for a in _SPELLINGS]})
    assert sorted(c["members"] for c in stats["answer_clusters"]) == sorted(_MERGED)
    assert (stats["majority_answer"], stats["majority_correct"]) == ("1/2", True)


def test_clusters_formed_beside_scoring_keep_the_positions_of_invalid_items(client: TestClient) -> None:
    items: list[dict[str, Any]] = [_math("2/4"), {"task": "math", "response": "x", "bogus": 1}, _math("3")]
    items += [_math("0.5"), _math("6/2")]
    (stats,) = _stats(client, {"items": items})
    assert [c["members"] for c in stats["answer_clusters"]] == [[0, 3], [2, 4]]


def test_the_worker_side_clustering_is_the_separate_paths() -> None:
    scorer = MathScorer(Settings())
    options = MathScorer.Options()
    jobs = [("math", _math(a, "1/2"), options.model_dump(mode="json")) for a in _SPELLINGS]
    scored = [
        scorer.score(scorer.item_model().model_validate(item), options).model_dump(mode="json")
        for _, item, _ in jobs
    ]
    context = jobs[0]
    formed = then_cluster(MathEquivalence(), context, False, 5.0, 10.0, jobs, scored, 0.0, scorer)
    assert formed is not None and formed[4] == _MERGED and formed[0] == _SPELLINGS
    assert formed[1] == [r["correct"] for r in scored]
    # Spread over a group whose position 1 held an invalid item: positions shift, answers align.
    early = Early.at([0, *range(2, len(_SPELLINGS) + 1)], len(_SPELLINGS) + 1, formed)
    assert early is not None and early.groups[0] == [0, 2, 3, 4, 5, 9]
    verdicts = [r["correct"] for r in scored]
    spread = [verdicts[0], None, *verdicts[1:]]
    assert early.fits([_SPELLINGS[0], None, *_SPELLINGS[1:]], spread, [False] * (len(_SPELLINGS) + 1))


def test_worker_clusters_are_dropped_when_the_answers_changed_after_them() -> None:
    early = Early(["1/2", "0.5"], [True, True], [False, False], ["1/2", "0.5"], [[0, 1]], 0.1)
    assert early.fits(["1/2", "0.5"], [True, True], [False, False])
    assert not early.fits(["1/2", None], [True, True], [False, False])  # a deadline took an answer away
    assert not early.fits(["1/2", "0.5"], [True, True], [False, True])
    assert not early.fits(["1/2", "0.5"], [True, False], [False, False])  # a review changed a verdict


def test_the_worker_side_clustering_gives_up_when_the_batch_has_no_time_left() -> None:
    jobs = [("math", _math("1/2"), {}), ("math", _math("0.5"), {})]
    scored = [{"status": "ok", "extracted": "1/2"}, {"status": "ok", "extracted": "0.5"}]
    assert then_cluster(MathEquivalence(), jobs[0], False, 5.0, 2.0, jobs, scored, 1.5) is None


def test_a_tie_goes_to_the_answer_given_first(client: TestClient) -> None:
    (stats,) = _stats(client, {"items": [_math(a) for a in ("2", "\\frac{1}{2}", "2.0", "0.5")]})
    assert _clusters(stats) == [("2", 2, False), ("\\frac{1}{2}", 2, True)]
    assert stats["majority_correct"] is False


def test_self_consistency_votes_without_a_reference(client: TestClient) -> None:
    items = [_math(a, reference=None) for a in ("7", "14/2", "3", "7.0", "3")]
    voted, plain = _stats(client, {"items": items, "self_consistency": True}, {"items": items})
    assert _clusters(voted) == [("7", 3, None), ("3", 2, None)]
    assert (voted["majority_answer"], voted["majority_correct"], voted["maj_at_k"]) == ("7", None, {})
    # Without the option only verdicts vote, and an item with no reference has none.
    assert (plain["answer_clusters"], plain["majority_answer"], plain["majority_correct"]) == ([], None, None)


def test_self_consistency_keeps_the_verdicts_of_items_that_have_a_reference(client: TestClient) -> None:
    items = [_math("2", reference=None), _math("1/2"), _math("0.5", reference=None)]
    (stats,) = _stats(client, {"items": items, "self_consistency": True})
    assert _clusters(stats) == [("1/2", 2, True), ("2", 1, None)]


def test_a_task_without_equivalence_or_a_mixed_group_says_so(client: TestClient) -> None:
    buggy = {"task": "buggy", "response": "x"}
    none, mixed = _stats(client, {"items": [buggy, buggy]}, {"items": [_math("1"), buggy]})
    assert none["answer_clusters"] is None and none["majority_correct"] is None
    assert none["clusters_unavailable"] == "buggy: the task has no notion of answer equivalence"
    assert mixed["answer_clusters"] is None and "mixes tasks (buggy, math)" in mixed["clusters_unavailable"]


def test_an_equivalence_that_hangs_leaves_the_group_scored_without_clusters(client: TestClient) -> None:
    items = [{"task": "hanging_vote", "response": r, "reference": "a"} for r in ("a", "b", "c")]
    response = client.post("/v1/groups", json={"groups": [{"items": items}]})
    group = response.json()["groups"][0]
    assert [r["correct"] for r in group["results"]] == [True, False, False]
    assert group["stats"]["answer_clusters"] is None and group["stats"]["majority_correct"] is None
    assert "deadline" in group["stats"]["clusters_unavailable"]
    assert group["stats"]["pass_at_k"]["1"] == pytest.approx(1 / 3)


def test_an_equivalence_that_raises_merges_only_identical_answers(client: TestClient) -> None:
    items = [{"task": "raising_vote", "response": r, "reference": "a"} for r in ("b", "a", "b")]
    (stats,) = _stats(client, {"items": items})
    assert _clusters(stats) == [("b", 2, False), ("a", 1, True)]


def test_the_client_sends_the_self_consistency_option() -> None:
    with AssayClient("http://unused") as client:
        chunks = client.group_chunks(
            [{"id": "g", "items": [_math("1")], "self_consistency": True}, [_math("1")]]
        )
    assert [g.get("self_consistency") for g in chunks[0]] == [True, None]
