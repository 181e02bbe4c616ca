"""V-STaR's pieces in the trainer (issue 42 item 4): preference pairs, the DPO loss, best-of-K, and the
recorder that keeps a run's training samples (its held-out evaluations never reach it)."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
from pathlib import Path
from typing import Any

import pytest

from assay.rl_client import verifier as dpo
from assay.rl_client.runs.vstar import Recording, SampleRecorder, best_of_k_table
from assay.types import Result

torch = pytest.importorskip("torch")


def _brute_best_of_k(scored: list[tuple[float, bool]], k: int) -> float:
    """Mean over every K-subset of the correctness of its top score (ties: the mean over the tied)."""
    values = []
    for subset in itertools.combinations(scored, k):
        top = max(s for s, _ in subset)
        tied = [c for s, c in subset if s == top]
        values.append(sum(tied) / len(tied))
    return sum(values) / len(values)


@pytest.mark.parametrize("seed", range(6))
def test_best_of_k_is_the_exact_mean_over_k_subsets(seed: int) -> None:
    rng = random.Random(seed)
    scored = [(float(rng.randint(0, 4)), rng.random() < 0.4) for _ in range(9)]  # ties on purpose
    for k in (1, 2, 4, 9):
        assert dpo.best_of_k(scored, k) == pytest.approx(_brute_best_of_k(scored, k))
    assert dpo.best_of_k(scored, 1) == pytest.approx(sum(c for _, c in scored) / 9)  # best-of-1 = Pass@1
    assert dpo.best_of_k(scored, 10) is None


def test_best_of_k_table_averages_prompts_and_skips_short_groups() -> None:
    rows = [{"id": "a", "correct": c} for c in (True, False, False, False)] + [{"id": "b", "correct": True}]
    table = best_of_k_table(rows, [3.0, 1.0, 0.0, 2.0, 0.0])  # a's correct answer scores highest
    assert table["1"] == pytest.approx((0.25 + 1.0) / 2)
    assert table["4"] == 1.0  # only a has 4 candidates, and its top is right
    assert "16" not in table  # as Pass@K and Maj@K: K up to the candidates sampled


def test_preference_pairs_are_correct_over_incorrect_of_the_same_prompt() -> None:
    samples = [dpo.Candidate("p", "4", True), dpo.Candidate("p", "5", False), dpo.Candidate("p", "6", False),
               dpo.Candidate("q", "1", True)]  # fmt: skip
    pairs = dpo.preference_pairs(samples, per_prompt=4, seed=0)
    assert sorted(pairs) == [("p", "4", "5"), ("p", "4", "6")]  # q has no incorrect sample: no pair
    assert len(dpo.preference_pairs(samples, per_prompt=1, seed=0)) == 1


def test_the_dpo_loss_is_log_2_at_the_reference_and_falls_with_the_margin() -> None:
    zero = torch.zeros(3)
    loss, right = dpo.dpo_loss(zero, zero, zero, zero, beta=0.1)
    assert loss.item() == pytest.approx(0.6931, abs=1e-4) and not right.any()
    better, right = dpo.dpo_loss(torch.full((3,), 2.0), zero, zero, zero, beta=0.1)
    assert better.item() < loss.item() and right.all()


class _Rewards:
    requests = 0

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        return [
            Result.verdict(item["response"] == item["reference"], "ok")
            if item["response"]
            else Result.invalid("no")
            for item in items
        ]

    async def aclose(self) -> None:
        return None


class _Algorithm:
    def __init__(self) -> None:
        self.step = 0
        self.history: list[dict[str, Any]] = []
        self.reward_requests = 0

    def train_step(self) -> dict[str, Any]:
        self.step += 1
        return {"step": self.step}

    def save(self, directory: Path) -> Path:
        return directory

    def load(self, directory: Path) -> None:
        self.step = int(directory.name)


def test_the_recorder_keeps_scored_training_samples_by_step_and_resumes_cut_back(tmp_path: Path) -> None:
    path = tmp_path / "vstar" / "samples.jsonl"
    recorder = SampleRecorder(_Rewards(), ["1+1="], path)
    algorithm = Recording(_Algorithm(), recorder)
    items = [
        {"prompt": "1+1=", "response": "2", "reference": "2"},
        {"prompt": "1+1=", "response": "3", "reference": "2"},
        {"prompt": "1+1=", "response": "", "reference": "2"},  # not scored: no label, not kept
        {"prompt": "9+9=", "response": "18", "reference": "18"},  # a held-out prompt: not kept
    ]
    for _ in range(3):
        asyncio.run(recorder.ascore(items))
        algorithm.train_step()
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["step"], r["response"], r["correct"]) for r in rows[:2]] == [(1, "2", True), (1, "3", False)]
    assert [r["step"] for r in rows] == [1, 1, 2, 2, 3, 3]
    algorithm.load(tmp_path / "2")  # a resume from step 2's checkpoint drops step 3's samples
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 1, 2, 2]
    with path.open("a") as out:  # a kill in the middle of a flush leaves the last line cut short
        out.write('{"step": 3, "prompt": "1+1=", "resp')
    algorithm.load(tmp_path / "2")  # the resume drops the torn line instead of failing on it
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 1, 2, 2]


def test_vstar_is_on_for_star_and_rft_by_default_and_refuses_tool_runs() -> None:
    from assay.errors import ConfigError
    from assay.rl_client.runs.config import validate

    base: dict[str, Any] = {"model": {"path": "m"}, "data": {"train": "t.jsonl"}}
    on = {a: validate({**base, "algorithm": a}).vstar_on for a in ("star", "rft", "grpo")}
    assert on == {"star": True, "rft": True, "grpo": False}
    assert validate({**base, "vstar": {"enabled": True}}).vstar_on  # GRPO's samples, when asked
    assert not validate({**base, "algorithm": "rft", "vstar": {"enabled": False}}).vstar_on
    tools = {"tools": {"tools": ["python"]}}
    with pytest.raises(ConfigError, match="vstar keeps single-turn samples"):
        validate({**base, "train": tools, "vstar": {"enabled": True}})
