"""Solve-rate probing: samples from a policy, scored by Assay, pass rates and the band filter."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import httpx
import pytest

from assay.engine.scoring import Engine
from assay.errors import ConfigError
from assay.validate.solve_rate import (
    BackendSampler,
    OpenAISampler,
    SolveRate,
    in_band,
    sampler_from_spec,
    solve_rates,
)

TASKS = [
    {"id": "easy", "task": "math", "prompt": "What is 1 + 1?", "reference": "2"},
    {"id": "half", "task": "math", "prompt": "What is 2 + 2?", "reference": "4"},
    {"id": "hard", "task": "math", "prompt": "What is 3 + 3?", "reference": "6"},
]
# What the scripted policy answers per prompt: always right, right half the time, never right.
SCRIPT = {
    "What is 1 + 1?": ["\\boxed{2}"] * 4,
    "What is 2 + 2?": ["\\boxed{4}", "\\boxed{5}", "The answer is 4", "no idea"],
    "What is 3 + 3?": ["\\boxed{7}"] * 4,
}


class _Scripted:
    """An OpenAI-compatible /v1/completions that answers from SCRIPT; records each request body."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, object]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "policy"}]})
        body = json.loads(request.content)
        self.bodies.append(body)
        texts = SCRIPT[str(body["prompt"])][: int(body["n"])]  # type: ignore[call-overload]
        return httpx.Response(200, json={"choices": [{"index": i, "text": t} for i, t in enumerate(texts)]})


def test_the_openai_sampler_asks_for_k_samples_per_prompt() -> None:
    server = _Scripted()
    sampler = OpenAISampler("http://policy", transport=httpx.MockTransport(server), temperature=0.7)
    out = sampler.sample(["What is 1 + 1?", "What is 3 + 3?"], 3)
    assert out == [["\\boxed{2}"] * 3, ["\\boxed{7}"] * 3]
    assert {(b["model"], b["n"], b["temperature"]) for b in server.bodies} == {("policy", 3, 0.7)}


def test_solve_rates_are_the_share_the_verifier_accepts(engine: Engine) -> None:
    sampler = OpenAISampler("http://policy/v1", transport=httpx.MockTransport(_Scripted()))
    rates = solve_rates(TASKS, sampler, engine, k=4)
    assert [r.rate for r in rates] == [1.0, 0.5, 0.0]
    assert [r.learning_value for r in rates] == [0.0, 1.0, 0.0]
    assert all(r.samples == 4 and r.scored == 4 for r in rates)


def test_a_task_assay_cannot_score_has_no_rate_not_a_rate_of_zero(engine: Engine) -> None:
    broken = {"id": "x", "task": "math", "prompt": "What is 1 + 1?", "reference": "\\frac{"}
    sampler = OpenAISampler("http://policy", transport=httpx.MockTransport(_Scripted()))
    (rate,) = solve_rates([broken], sampler, engine, k=2)
    assert rate == SolveRate(None, 2, 0)
    assert rate.learning_value is None


def test_the_band_keeps_prompts_inside_it_and_drops_unrated_ones() -> None:
    assert [in_band(r, 0.1, 0.9) for r in (0.0, 0.1, 0.5, 0.9, 1.0, None)] == [
        False,
        True,
        True,
        True,
        False,
        False,
    ]
    assert in_band(None, None, None) and in_band(0.0, None, 0.5) and not in_band(0.7, None, 0.5)


class _Backend:
    """The Generate backend interface: one completion per prompt, here numbered so order is visible."""

    def generate(self, prompts: Sequence[str], params: object) -> list[object]:
        from types import SimpleNamespace

        return [SimpleNamespace(text=f"{p}#{i}") for i, p in enumerate(prompts)]


def test_the_backend_sampler_repeats_each_prompt_k_times_in_order() -> None:
    out = BackendSampler(_Backend()).sample(["a", "b"], 2)
    assert out == [["a#0", "a#1"], ["b#2", "b#3"]]


def test_an_unknown_policy_spec_names_the_forms() -> None:
    with pytest.raises(ConfigError, match="openai:URL"):
        sampler_from_spec("gpt4", temperature=1.0, max_tokens=8)


@pytest.mark.slow
def test_a_real_tiny_model_samples_through_the_hf_backend(tmp_path: Path, engine: Engine) -> None:
    import sys

    from tiny_models import build_chat_model

    model = build_chat_model(sys.executable, tmp_path / "model")
    sampler = sampler_from_spec(f"hf:{model}", temperature=1.0, max_tokens=8)
    rates = solve_rates(TASKS[:2], sampler, engine, k=3)
    assert [r.samples for r in rates] == [3, 3]
    assert all(r.scored == 3 and r.rate is not None for r in rates)  # random weights: scored, not skipped
