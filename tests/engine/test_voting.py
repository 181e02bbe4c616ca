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
from assay.settings import Settings


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
