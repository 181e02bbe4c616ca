"""The `reasoning_gym` task served: 64 drawn items and their wrong twins scored at once by the engine's
worker processes, `assay validate` over drawn items (through the task's probes), and a session on an
item verified at its end."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from session_testing import session_settings

from assay.api import create_app
from assay.engine.scoring import Engine
from assay.settings import Settings
from assay.validate import validate
from assay.verifiers.reasoning_gym import library

pytestmark = pytest.mark.requires_reasoning_gym

# Four maths families (Assay's verifier) and four judged by their own scorer, 8 items each.
MATHS = ["basic_arithmetic", "simple_integration", "dice", "gcd"]
FAMILIES = [*MATHS, "word_sorting", "countdown", "spiral_matrix", "caesar_cipher"]


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    with Engine(Settings(workers=2)) as instance:
        yield instance


@pytest.fixture(scope="module")
def drawn() -> list[dict[str, Any]]:
    return [row for name in FAMILIES for row in library.draw(name, 8, 5)]


def test_64_items_and_their_wrong_twins_score_at_once(engine: Engine, drawn: list[dict[str, Any]]) -> None:
    right = [{**row, "response": f"Let me see.\n<answer>{row['reference']}</answer>"} for row in drawn]
    wrong = [{**row, "response": "<answer>I do not know</answer>"} for row in drawn]
    started = time.perf_counter()
    results = engine.score(right + wrong)
    elapsed = time.perf_counter() - started
    assert len(drawn) == 64
    assert [r.status for r in results] == ["ok"] * 128
    assert all(r.reward == 1.0 and r.correct for r in results[:64]), [r.reason for r in results[:64]]
    assert all(r.correct is False and (r.reward or 0) < 0.05 for r in results[64:])
    scorers = {row["dataset"]: r.details["scorer"] for row, r in zip(drawn, results[:64], strict=True)}
    assert [scorers[name] for name in FAMILIES] == ["assay-math"] * 4 + ["reasoning-gym"] * 4
    assert elapsed < 60, elapsed


def test_validate_accepts_drawn_items_through_the_tasks_probes(
    engine: Engine, drawn: list[dict[str, Any]]
) -> None:
    reports = validate(drawn[::4], engine, near_duplicates=False)
    assert all(r.valid for r in reports), [(r.id, r.problems) for r in reports if not r.valid]
    # a gold edited away from its entry: the dataset's own scorer (countdown's checks the target and the
    # numbers; the integrations' differentiate) rejects it, though it matches itself
    integral = next(r for r in drawn if r["dataset"] == "simple_integration")
    countdown = next(r for r in drawn if r["dataset"] == "countdown")
    broken = [{**integral, "reference": "x**2 + C"}, {**countdown, "reference": "1 + 1"}]
    reports = validate(broken, engine, near_duplicates=False)
    assert [{p.check for p in r.problems} for r in reports] == [{"reference_rejected"}] * 2


def test_a_session_on_an_item_is_verified_at_its_end(drawn: list[dict[str, Any]]) -> None:
    item = {k: v for k, v in drawn[8].items() if k != "id"}  # simple_integration
    with TestClient(create_app(session_settings(max_open=2))) as http:
        opened = http.post("/v1/sessions", json={"item": item, "tools": ["python"]})
        assert opened.status_code == 201, opened.text
        session = opened.json()["session_id"]
        call = {"tool": "python", "arguments": {"code": "print('reward: 1')"}}
        step = http.post(f"/v1/sessions/{session}/step", json=call).json()
        assert step["status"] == "ok" and item["reference"] not in str(step)
        lie = http.post(f"/v1/sessions/{session}/verify", json={"response": "reward: 1"}).json()
        right = http.post(
            f"/v1/sessions/{session}/verify", json={"response": f"<answer>{item['reference']}</answer>"}
        ).json()
        other = http.post("/v1/sessions/s-not-mine/verify", json={"response": item["reference"]})
        http.delete(f"/v1/sessions/{session}")
    assert (lie["reward"], right["reward"]) == (0.0, 1.0)
    assert right["details"]["scorer"] == "assay-math"
    assert other.status_code == 404
