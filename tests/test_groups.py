"""Group statistics (assay.groups), POST /v1/groups, Engine.score_groups and the client's score_groups."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from assay_testing import gate_item, held_request
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from assay.api import create_app
from assay.client import AssayClient
from assay.engine.scoring import Engine
from assay.groups import GroupStats, group_stats, learning_value, pass_at_k
from assay.settings import Settings
from assay.types import Result


def _math(i: int, answer: str, reference: str = "4") -> dict[str, Any]:
    return {"id": f"s{i}", "task": "math", "response": f"so \\boxed{{{answer}}}", "reference": reference}


# -- statistics -----------------------------------------------------------------------------------
@given(st.integers(1, 10).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_equals_the_fraction_of_k_subsets_holding_a_correct_sample(
    nck: tuple[int, int, int],
) -> None:
    n, c, k = nck
    samples = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(samples, k))
    assert pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets))


def test_pass_at_k_refuses_impossible_counts() -> None:
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(4, 1, 5)


def test_stats_of_a_mixed_binary_group() -> None:
    results = [Result.verdict(True, extracted="4"), Result.verdict(False, extracted="5")]
    results += [Result.verdict(False, extracted="5"), Result.verdict(True, extracted="4")]
    stats = group_stats(results, ["aa", "bbbb", "bbbb", "aa"])
    assert (stats.n, stats.n_scored, stats.n_correct, stats.mean, stats.std) == (4, 4, 2, 0.5, 0.5)
    assert not stats.all_equal
    assert stats.learning_value == 1.0  # p = 0.5: 4p(1-p) = 1
    assert stats.pass_at_k == {"1": 0.5, "2": pytest.approx(5 / 6), "4": 1.0}
    assert (stats.distinct_answers, stats.duplicate_responses) == (2, 2)
    assert (stats.response_length_mean, stats.response_length_max) == (3.0, 4)


def test_learning_value_is_4p_1_minus_p_for_binary_scores() -> None:
    assert learning_value([1.0, 0.0, 0.0, 0.0]) == pytest.approx(4 * 0.25 * 0.75)
    assert learning_value([1.0] * 8) == 0.0 and learning_value([0.0] * 8) == 0.0


def test_all_equal_is_exact_for_graded_rewards() -> None:
    assert group_stats([Result.graded(0.5), Result.graded(0.5)]).all_equal
    assert not group_stats([Result.graded(0.5), Result.graded(0.5 + 1e-12)]).all_equal


def test_all_equal_reads_correctness_not_the_reward() -> None:
    """A task may shape its reward; zero advantage is about raw correctness."""
    shaped = [Result(status="ok", correct=True, reward=r) for r in (1.0, 0.9)]  # type: ignore[arg-type]
    assert group_stats(shaped).all_equal


def test_failed_items_are_neither_right_nor_wrong() -> None:
    stats = group_stats([Result.verdict(True), Result.error("worker died"), Result.timeout("slow")])
    assert (stats.n, stats.n_scored, stats.mean, stats.all_equal) == (3, 1, 1.0, True)
    assert stats.pass_at_k == {"1": 1.0}
    empty = group_stats([Result.invalid("no reference")])
    assert (empty.n_scored, empty.mean, empty.std, empty.all_equal, empty.pass_at_k) == (
        0,
        None,
        None,
        True,
        {},
    )


def test_graded_groups_have_no_pass_at_k() -> None:
    stats = group_stats([Result.graded(0.2), Result.graded(0.8)])
    assert stats.pass_at_k == {} and stats.learning_value == pytest.approx(4 * 0.09)


# -- HTTP -----------------------------------------------------------------------------------------
@pytest.fixture
def client(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings()), raise_server_exceptions=False) as test_client:
        yield test_client


def test_groups_give_the_same_results_as_rewards_in_order(client: TestClient) -> None:
    groups = [
        {"id": "q1", "items": [_math(0, "4"), _math(1, "5"), 42, _math(2, "\\frac{8}{2}")]},
        {"id": 7, "items": [_math(3, "3", "3"), _math(4, "3", "3")]},
        {"id": "empty", "items": []},
    ]
    flat = [item for g in groups for item in g["items"]]  # type: ignore[attr-defined]
    rewards = client.post("/v1/rewards", json={"items": flat}).json()["results"]
    response = client.post("/v1/groups", json={"groups": groups})
    assert response.status_code == 200, response.text
    out = response.json()["groups"]
    assert [g["id"] for g in out] == ["q1", "7", "empty"]
    grouped = [r for g in out for r in g["results"]]
    keep = ("id", "status", "correct", "reward", "extracted")
    assert [{k: r[k] for k in keep} for r in grouped] == [{k: r[k] for k in keep} for r in rewards]
    first = GroupStats.model_validate(out[0]["stats"])
    assert (first.n, first.n_scored, first.n_correct, first.all_equal) == (4, 3, 2, False)
    assert out[1]["stats"]["all_equal"] is True and out[1]["stats"]["learning_value"] == 0.0
    assert out[2]["stats"]["n"] == 0


def test_a_bad_group_body_gets_the_envelope(client: TestClient) -> None:
    for body in ({"groups": [{"items": "x"}]}, {"groups": [[_math(0, "4")]]}, {"grups": []}):
        response = client.post("/v1/groups", json=body)
        assert response.status_code == 422 and response.json()["error"]["type"] == "validation_error"


def test_more_items_than_the_queue_holds_is_413(make_settings: Callable[..., Settings]) -> None:
    with TestClient(create_app(make_settings(queue_size=3)), raise_server_exceptions=False) as small:
        groups = [{"id": "a", "items": [_math(i, "4") for i in range(2)]}] * 2
        response = small.post("/v1/groups", json={"groups": groups})
    assert response.status_code == 413 and "split it" in response.json()["error"]["message"]


def test_a_hanging_item_times_out_alone_and_its_group_still_scores(client: TestClient) -> None:
    hang = {"id": "h", "task": "hang", "response": "x", "reference": "x"}
    crash = {"id": "c", "task": "crash", "response": "x", "reference": "x"}
    groups = [{"id": "g", "items": [_math(0, "4"), hang, _math(1, "5")]}, {"items": [crash, _math(2, "4")]}]
    out = client.post("/v1/groups", json={"groups": groups}).json()["groups"]
    assert [r["status"] for r in out[0]["results"]] == ["ok", "timeout", "ok"]
    assert [r["status"] for r in out[1]["results"]] == ["error", "ok"]
    assert out[0]["stats"]["n_scored"] == 2 and out[0]["stats"]["mean"] == 0.5


def test_an_item_past_its_own_deadline_is_a_timeout_even_when_its_group_finished(client: TestClient) -> None:
    """Scored with a quick item in one worker task, the slow item still answers what the per-item path
    would: its own deadline passed, so `timeout` (with no reward), not its late verdict."""
    late = {"id": "late", "task": "overstay", "response": "x", "reference": "x"}
    out = client.post("/v1/groups", json={"groups": [{"items": [late, _math(0, "4")]}]}).json()["groups"][0]
    assert [(r["status"], r["reward"]) for r in out["results"]] == [("timeout", None), ("ok", 1.0)]
    assert "0.05s deadline" in out["results"][0]["reason"]


def test_metrics_export_the_zero_advantage_fraction(client: TestClient) -> None:
    groups = [{"items": [_math(0, "4"), _math(1, "4")]}, {"items": [_math(2, "4"), _math(3, "5")]}]
    client.post("/v1/groups", json={"groups": groups})
    metrics = client.get("/metrics").text
    assert "assay_groups_zero_advantage_fraction 0.5" in metrics
    assert "assay_groups_learning_value_mean 0.5" in metrics


def test_a_full_queue_answers_429(live_server: Callable[..., Any], tmp_path: Path) -> None:
    server = live_server(queue_size=2, retry_after_s=2)
    gate = tmp_path / "gate"
    held = {"groups": [{"items": [gate_item(gate)] * 2}]}
    with (
        httpx.Client(base_url=server.url, timeout=60) as http,
        held_request(server, gate, lambda: http.post("/v1/groups", json=held), pending=2) as first,
    ):
        refused = http.post("/v1/groups", json={"groups": [{"items": [_math(0, "4")]}]})
    assert refused.status_code == 429 and refused.headers["retry-after"] == "2"
    assert refused.json()["error"]["type"] == "queue_full"
    assert first["response"].json()["groups"][0]["stats"]["all_equal"] is True


def test_a_client_that_goes_away_cancels_its_groups(live_server: Callable[..., Any], tmp_path: Path) -> None:
    # Issue 24: /v1/groups used to keep scoring (and holding its admitted items) for a client that left.
    server = live_server(workers=1, deadline_s=120.0)
    held = {"groups": [{"items": [gate_item(tmp_path / "never")] * 3}]}
    with httpx.Client(base_url=server.url, timeout=1.0) as http, pytest.raises(httpx.ReadTimeout):
        http.post("/v1/groups", json=held)
    for _ in range(1500):  # bounded poll: the abandoned request gives its admitted items back
        if server.engine.pending == 0:
            break
        threading.Event().wait(0.02)
    assert server.engine.pending == 0, "the abandoned groups kept their place in the queue"
    with server.client() as http:  # and its worker is free for the next request
        answer = http.post("/v1/groups", json={"groups": [{"items": [_math(0, "4")]}]}).json()
    assert answer["groups"][0]["results"][0]["correct"] is True


# -- library and client ---------------------------------------------------------------------------
def test_engine_score_groups_matches_the_api(make_settings: Callable[..., Settings]) -> None:
    with Engine(make_settings(queue_size=3)) as engine:  # 3 items a round: groups are never split
        outcomes = engine.score_groups(
            [[_math(0, "4"), _math(1, "5")], {"id": "b", "items": [_math(2, "4")] * 2}]
        )
    assert [o.id for o in outcomes] == [None, "b"]
    assert [[r.correct for r in o.results] for o in outcomes] == [[True, False], [True, True]]
    assert [o.stats.all_equal for o in outcomes] == [False, True]


def test_engine_refuses_a_group_that_is_not_a_group(make_settings: Callable[..., Settings]) -> None:
    with Engine(make_settings()) as engine, pytest.raises(Exception, match="group 0 must be"):
        engine.score_groups([42])


def test_client_score_groups_sync_and_async(live_server: Callable[..., Any]) -> None:
    server = live_server()
    groups = [{"id": f"g{i}", "items": [_math(j, str(j % 3 + 3)) for j in range(3)]} for i in range(5)]
    with AssayClient(server.url, batch_size=4) as client:  # one group (3 items) per request
        assert len(client.group_chunks(groups)) == 5
        sync = client.score_groups(groups)

        async def run() -> list[Any]:
            async with AssayClient(server.url, batch_size=7) as async_client:
                return await async_client.ascore_groups(groups)

        concurrent = asyncio.run(run())
    for outcomes in (sync, concurrent):
        assert [o.id for o in outcomes] == [f"g{i}" for i in range(5)]
        assert all(o.stats.n_correct == 1 and not o.stats.all_equal for o in outcomes)


def test_cli_group_by_writes_per_group_stats(tmp_path: Path) -> None:
    from assay.cli import main

    lines = [{**_math(i, str(4 + i % 2)), "group": f"p{i % 2}"} for i in range(4)]
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n")
    out, stats = tmp_path / "results.jsonl", tmp_path / "groups.jsonl"
    code = main(
        ["score", str(source), "-o", str(out), "--group-by", "group", "--group-stats", str(stats), "-q"]
    )
    assert code == 0
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in results] == ["s0", "s1", "s2", "s3", None]
    assert [r["status"] for r in results] == ["ok"] * 4 + ["invalid"]
    by_group = {g["id"]: g for g in map(json.loads, stats.read_text().splitlines())}
    assert by_group["p0"]["stats"]["n_correct"] == 2 and by_group["p0"]["stats"]["all_equal"] is True
    assert by_group["p1"]["stats"]["n_correct"] == 0
    assert set(by_group) == {"p0", "p1"}  # the line that is not JSON belongs to no group


def test_cli_group_by_a_tasks_own_field_keeps_it_on_the_item(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `answer_key` is the keyed task's own field (Scorer.Fields): grouping by it must not strip it.
    from assay.cli import main

    monkeypatch.setenv("ASSAY_PLUGINS", '["assay_test_plugins:KeyedScorer"]')
    monkeypatch.setenv("ASSAY_WORKERS", "1")
    keyed = {"task": "keyed", "response": "a"}
    lines = [{**keyed, "id": f"k{i}", "answer_key": [k]} for i, k in enumerate("aab")]
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out, stats = tmp_path / "results.jsonl", tmp_path / "groups.jsonl"
    args = ["score", str(source), "-o", str(out), "--group-by", "answer_key", "--group-stats", str(stats)]
    assert main([*args, "-q"]) == 0
    assert [json.loads(line)["reward"] for line in out.read_text().splitlines()] == [1.0, 1.0, 0.0]
    assert sorted(json.loads(g)["stats"]["n_correct"] for g in stats.read_text().splitlines()) == [0, 2]
