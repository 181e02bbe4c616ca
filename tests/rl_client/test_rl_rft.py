"""`algorithm: rft` (issue 42): online rejection fine-tuning on GRPO's loop, with STaR's gradient
coefficient (1 for a correct sample, 0 otherwise) on fresh samples from the current policy."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch

import assay.rl_client.trainer as trainer_module
from assay.rl_client.backends.hf import HFBackend
from assay.rl_client.config import GenerateConfig, LossConfig, TrainConfig
from assay.rl_client.loss import correct_coefficients
from assay.rl_client.runs.config import validate
from assay.rl_client.runs.demo import PAD, CharTokenizer, addition_problems, build_model
from assay.rl_client.trainer import Trainer
from assay.types import Result


class HalfRightRewards:
    """Correct when the response's characters sum to an even code: about half of every group."""

    requests = 0

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        return [Result.verdict(sum(map(ord, str(i["response"]))) % 2 == 0) for i in items]

    async def aclose(self) -> None:
        return None


def test_coefficients_are_one_for_correct_and_zero_otherwise() -> None:
    assert correct_coefficients([True, False, None, 1.0, 0.5, 0.0]) == [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]


def _advantages(tmp_path: Path, coefficient: str, monkeypatch: pytest.MonkeyPatch) -> list[list[float]]:
    seen: list[list[float]] = []
    collate = trainer_module.collate

    def recording(samples: Any, advantages: list[float], pad_id: int) -> Any:
        seen.append(list(advantages))
        return collate(samples, advantages, pad_id)

    monkeypatch.setattr(trainer_module, "collate", recording)
    tokenizer = CharTokenizer()
    train, _ = addition_problems(0)
    model = build_model(tokenizer, seed=0, width=32)
    cfg = TrainConfig(
        steps=1,
        generate=GenerateConfig(group_size=4, max_new_tokens=3, temperature=1.5),
        loss=LossConfig(coefficient=coefficient),
    )
    backend = HFBackend(model, tokenizer, seed=cfg.seed)
    trainer = Trainer(model, backend, HalfRightRewards(), train[:6], cfg, pad_id=PAD, log_path=tmp_path / "l")
    try:
        trainer.train_step()
    finally:
        trainer.close()
    return seen


def test_rft_trains_on_the_correct_fresh_samples_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (rft,) = _advantages(tmp_path, "correct", monkeypatch)
    assert set(rft) <= {0.0, 1.0} and 0.0 in rft and 1.0 in rft
    (grpo,) = _advantages(tmp_path, "group", monkeypatch)
    assert any(a not in (0.0, 1.0) for a in grpo)  # group-normalised: centred, so some are negative


def test_the_run_config_switch_and_the_coefficient_check() -> None:
    base = {"model": {"path": "m"}, "data": {"train": "t.jsonl"}}
    assert [validate({**base, "algorithm": a}).algorithm for a in ("grpo", "rft", "star")] == [
        "grpo",
        "rft",
        "star",
    ]
    with pytest.raises(ValueError):
        validate({**base, "algorithm": "rtf"})
    with pytest.raises(ValueError, match="coefficient must be group or correct"):
        LossConfig(coefficient="one")
    assert replace(LossConfig(), coefficient="correct").coefficient == "correct"
    assert torch.tensor(correct_coefficients([True])).item() == 1.0
