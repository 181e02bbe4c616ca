"""Group shaping end to end: POST /v1/groups, Engine.score_groups, AssayClient and `assay score`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.client import AssayClient
from assay.engine.scoring import Engine
from assay.errors import ItemError
from assay.settings import Settings


def _math(i: int, answer: str, **fields: Any) -> dict[str, Any]:
    return {"id": f"s{i}", "task": "math", "response": f"so \\boxed{{{answer}}}", "reference": "4", **fields}


# correct lengths 100 and 60 -> SOL 60; 2 - 0.04 = 1.96, 0 - 0.001 * 20 = -0.02, 2.0; the 42 is invalid
SHORTER = {
    "id": "q1",
    "shaping": {"method": "shorter_better"},
    "items": [_math(0, "4", length=100), _math(1, "5", length=40), _math(2, "4", length=60), 42],
}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app for the HTTP tests of this module (an app's first math item starts its workers)."""
    rates = tmp_path_factory.mktemp("rates")
    (rates / "rates.jsonl").write_text('{"id": "q2", "solve_rate": 0.25}\n')
    with TestClient(create_app(Settings(workers=1, solve_rates=rates)), raise_server_exceptions=False) as tc:
        yield tc


def test_groups_carry_shaped_rewards_and_the_quantities_used(client: TestClient) -> None:
    plain = {"id": "plain", "items": [_math(3, "4")]}
    response = client.post("/v1/groups", json={"groups": [SHORTER, plain]})
    assert response.status_code == 200, response.text
    shaped, unshaped = response.json()["groups"]
    assert [r["shaped_reward"] for r in shaped["results"]] == pytest.approx([1.96, -0.02, 2.0, None])
    assert [r["status"] for r in shaped["results"]] == ["ok", "ok", "ok", "invalid"]
    shaping = shaped["stats"]["shaping"]
    assert (shaping["method"], shaping["sol"], shaping["length_unit"], shaping["n_unscored"]) == (
        "shorter_better",
        60.0,
        "tokens",
        1,
    )
    assert unshaped["results"][0]["shaped_reward"] is None and unshaped["stats"]["shaping"] is None
    rewards = client.post("/v1/rewards", json={"items": [_math(3, "4")]}).json()["results"]
    assert "shaped_reward" not in rewards[0]  # only the group path has it


def test_adapt_think_reads_the_solve_rate_file_and_a_missing_prompt_is_a_group_error(
    client: TestClient,
) -> None:
    option = {"method": "adapt_think", "reference_accuracy_file": "rates.jsonl"}
    items = [{**_math(0, "4"), "response": "</think>so \\boxed{4}"}, _math(1, "4")]
    groups = [
        {"id": "q2", "items": items, "shaping": option},
        {"id": "q9", "items": items, "shaping": option},
    ]
    found, missing = client.post("/v1/groups", json={"groups": groups}).json()["groups"]
    # q2: reference 0.25. NoThinking right: 1 - 0.25 + 0.05 = 0.8; no `</think>` at all: gate: -0.25
    assert [r["shaped_reward"] for r in found["results"]] == pytest.approx([0.8, -0.25])
    assert found["stats"]["shaping"]["reference_accuracy"] == 0.25
    assert [r["shaped_reward"] for r in missing["results"]] == [None, None]
    assert "no solve rate for group 'q9'" in missing["stats"]["shaping"]["error"]
    assert [r["reward"] for r in missing["results"]] == [1.0, 1.0]  # the verdicts stand


BAD_OPTIONS: list[dict[str, Any]] = [
    {"shaping": {"method": "shortest"}},
    {"shaping": {"method": "shorter_better", "beta": -1}},
    {"shaping": {"method": "adapt_think"}},
    {"shaping": {"method": "adapt_think", "reference_accuracy_file": "../../etc/passwd"}},
    {"shaping": {"method": "s_grpo"}, "rubric": {"components": [{"name": "c", "kind": "correctness"}]}},
    {"rubric": {"components": [{"name": "c", "kind": "votes"}]}},
]


def test_a_bad_option_is_a_422_envelope(client: TestClient) -> None:
    for option in BAD_OPTIONS:
        body = {"groups": [{"id": "g", "items": [_math(0, "4")], **option}]}
        response = client.post("/v1/groups", json=body)
        assert response.status_code == 422, (option, response.text)
        assert response.json()["error"]["type"] == "validation_error"


def test_a_rubric_over_http_keeps_each_raw_value(client: TestClient) -> None:
    rubric = {
        "components": [
            {"name": "correct", "kind": "correctness", "gate": True},
            {"name": "calls", "kind": "tool_calls", "weight": -0.25},
        ]
    }
    items = [_math(0, "4", tool_calls=2), _math(1, "5", tool_calls=0)]
    group = client.post("/v1/groups", json={"groups": [{"items": items, "rubric": rubric}]}).json()["groups"][
        0
    ]
    assert [r["shaped_reward"] for r in group["results"]] == [0.5, 0.0]  # 1 - 0.5; gate fails
    assert group["results"][0]["details"]["rubric"]["raw"] == {"correct": 1.0, "calls": 2.0}
    assert group["stats"]["shaping"]["n_gated"] == 1


def test_engine_score_groups_shapes_s_grpo_and_refuses_a_bad_option(
    make_settings: Callable[..., Settings],
) -> None:
    # exits at 30 (wrong), 10 (right), 20 (right): 10 is the first correct exit (1), 20 the second (1/2)
    items = [
        _math(0, "5", exit_position=30),
        _math(1, "4", exit_position=10),
        _math(2, "4", exit_position=20),
    ]
    with Engine(make_settings()) as engine:
        (outcome,) = engine.score_groups([{"id": "path", "items": items, "shaping": {"method": "s_grpo"}}])
        with pytest.raises(ItemError, match="group 0: bad shaping"):
            engine.score_groups([{"items": items, "shaping": {"method": "s_grpo", "decay": 2}}])
    assert [r.shaped_reward for r in outcome.results] == [0.0, 1.0, 0.5]
    assert outcome.stats.shaping is not None and outcome.stats.shaping.n_correct_exits == 2


def test_the_client_sends_the_option_and_reads_shaped_rewards(live_server: Callable[..., Any]) -> None:
    server = live_server()
    with AssayClient(server.url) as client:
        (outcome,) = client.score_groups([SHORTER])
        plain = client.score_groups([[_math(0, "4")]])
    assert [r.shaped_reward for r in outcome.results] == pytest.approx([1.96, -0.02, 2.0, None])
    assert outcome.stats.shaping is not None and outcome.stats.shaping.sol == 60.0
    assert plain[0].results[0].shaped_reward is None and plain[0].stats.shaping is None


def test_cli_shapes_each_group(tmp_path: Path) -> None:
    from assay.cli import main

    # chars: "so \boxed{4}" is 12 characters, "so \boxed{44}" 13 and wrong: SOL 12; 2 - 0 and 0 - 0.001
    lines = [{**_math(0, "4"), "prompt_id": "p"}, {**_math(1, "44"), "prompt_id": "p"}]
    source, out, stats = tmp_path / "items.jsonl", tmp_path / "out.jsonl", tmp_path / "stats.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    shaping = json.dumps({"method": "shorter_better"})
    args = [
        "score",
        str(source),
        "-o",
        str(out),
        "--group-by",
        "prompt_id",
        "--group-stats",
        str(stats),
        "-q",
    ]
    assert main([*args, "--shaping", shaping]) == 0
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["shaped_reward"] for r in results] == pytest.approx([2.0, -0.001])
    assert json.loads(stats.read_text())["stats"]["shaping"]["length_unit"] == "chars"
    assert main([*args, "--shaping", '{"method": "nope"}']) == 2
    assert main(["score", str(source), "--shaping", shaping]) == 2  # shaping needs groups


def test_the_ray_engine_shapes_groups_too() -> None:
    """Under `assay serve --ray` the groups are scored on deployments; the shaping must not be dropped."""
    import asyncio

    from assay.distributed.engine import RayEngine
    from assay.metrics import Metrics
    from assay.types import Result

    class Scorers:  # a deployment handle: `.score.remote(items)`, the answer 4 is right
        class score:  # Ray's handle.method.remote shape
            @staticmethod
            async def remote(items: list[Any]) -> list[Result]:
                dicts = [i for i in items if isinstance(i, dict)]
                assert dicts and all("length" not in i for i in dicts)  # taken off before scoring
                return [
                    Result.verdict(i["response"].endswith("{4}"))
                    if isinstance(i, dict)
                    else Result.invalid("no")
                    for i in items
                ]

    engine = RayEngine(Settings(workers=1), Metrics(), {"scorers": Scorers()})
    (outcome,) = asyncio.run(engine.score_groups_async([SHORTER]))
    assert [r.shaped_reward for r in outcome.results] == pytest.approx([1.96, -0.02, 2.0, None])
