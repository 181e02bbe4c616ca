"""The trainer loop: step records, the option paths, and exact resume from a checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from assay.rl_client.backends.hf import HFBackend
from assay.rl_client.config import ControlConfig, GenerateConfig, LossConfig, ReplayConfig, TrainConfig
from assay.rl_client.observe import timing_free
from assay.rl_client.runs.demo import PAD, CharTokenizer, addition_problems, build_model
from assay.rl_client.trainer import Trainer
from assay.types import Result


class StartsWithOneRewards:
    """Correct when the response starts with "1": rare for a random policy, so many groups are all
    wrong (hints and replay injection get work) and some are informative (the loss gets work)."""

    def __init__(self) -> None:
        self.requests = 0

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        self.requests += 1
        return [Result.verdict(i["response"].startswith("1")) for i in items]

    async def aclose(self) -> None:
        return None


CONFIG = TrainConfig(
    steps=6,
    lr=3e-4,
    seed=5,
    micro_batch=7,  # several micro-batches per step
    generate=GenerateConfig(group_size=4, max_new_tokens=3, hint_fraction=0.5, chunk_prompts=2),
    control=ControlConfig(
        prompts_per_step=4,
        max_rounds=2,
        overlong_penalty=True,
        overlong_cache=1,
        skip_solved=True,
        adaptive_group=True,
        adaptive_extra=2,
    ),
    replay=ReplayConfig(inject_correct=True, fill_batch=True, max_staleness=2),
    loss=LossConfig(kl_coef=0.05),
)


def _trainer(log: Path, model_seed: int = 0, cfg: TrainConfig = CONFIG) -> Trainer:
    tokenizer = CharTokenizer()
    train, _ = addition_problems(0)
    model = build_model(tokenizer, seed=model_seed, width=32)
    backend = HFBackend(model, tokenizer, seed=cfg.seed)
    return Trainer(model, backend, StartsWithOneRewards(), train[:6], cfg, pad_id=PAD, log_path=log)


def _params(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}


def test_a_step_records_what_the_issue_asks_for(tmp_path: Path) -> None:
    trainer = _trainer(tmp_path / "log.jsonl")
    try:
        before = _params(trainer)
        record = trainer.train_step()
    finally:
        trainer.close()
    for key in ("reward", "accuracy", "response_length", "entropy", "frac_all_correct", "frac_all_wrong",
                "rounds", "reward_latency_s", "loss", "reward_requests"):  # fmt: skip
        assert key in record, key
    assert 1 <= record["rounds"] <= 2
    assert record["groups_kept"] <= 4
    assert any(not torch.equal(before[k], v) for k, v in _params(trainer).items())
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1]


def test_resumed_run_equals_an_uninterrupted_one(tmp_path: Path) -> None:
    straight = _trainer(tmp_path / "straight.jsonl")
    try:
        straight.train()
    finally:
        straight.close()

    first = _trainer(tmp_path / "resumed.jsonl")
    try:
        first.train(until=3)
        first.save(tmp_path / "ckpt")
        first.train(until=4)  # steps past the checkpoint are forgotten on resume
    finally:
        first.close()
    second = _trainer(tmp_path / "resumed.jsonl", model_seed=123)  # different init: load must overwrite
    try:
        second.load(tmp_path / "ckpt")
        assert second.step == 3
        second.train()
    finally:
        second.close()

    expected, got = _params(straight), _params(second)
    assert all(torch.equal(expected[k], got[k]) for k in expected)
    assert [timing_free(r) for r in straight.history] == [timing_free(r) for r in second.history]
    logged = [timing_free(json.loads(x)) for x in (tmp_path / "resumed.jsonl").read_text().splitlines()]
    assert logged == [timing_free(r) for r in straight.history]
    # the options really ran
    assert sum(r["injected"] for r in straight.history) > 0
    assert sum(r["hinted"] for r in straight.history) > 0
    assert sum(r["groups_kept"] for r in straight.history) > 0


@pytest.mark.parametrize("aggregation", ["sequence", "dr_grpo"])
def test_other_aggregations_train(tmp_path: Path, aggregation: str) -> None:
    cfg = TrainConfig(
        steps=2,
        seed=1,
        generate=GenerateConfig(group_size=4, max_new_tokens=3),
        control=ControlConfig(prompts_per_step=4, dynamic_sampling=False),
        loss=LossConfig(aggregation=aggregation, scale_std=aggregation != "dr_grpo"),  # type: ignore[arg-type]
    )
    trainer = _trainer(tmp_path / "log.jsonl", cfg=cfg)
    try:
        records = trainer.train()
    finally:
        trainer.close()
    assert [r["rounds"] for r in records] == [1, 1]
    assert all(r["groups_kept"] == 4 for r in records)


def test_config_errors_say_what_to_change() -> None:
    with pytest.raises(ValueError, match="1e-3 collapsed"):
        TrainConfig(lr=0.05)
    with pytest.raises(ValueError, match="group_size must be at least 2"):
        GenerateConfig(group_size=1)


def test_a_backends_step_signals_are_logged_with_the_step(tmp_path: Path) -> None:
    """Speculative decoding's acceptance (issue 41) reaches the log through the backend's step_signals."""
    trainer = _trainer(tmp_path / "log.jsonl")
    reads: list[int] = []

    def step_signals() -> dict[str, float | None]:
        reads.append(trainer.step)
        return {"spec_acceptance": 0.25, "spec_draft_tokens": 8.0}

    trainer.backend.step_signals = step_signals  # type: ignore[attr-defined]
    try:
        record = trainer.train_step()
    finally:
        trainer.close()
    assert reads == [0] and record["spec_acceptance"] == 0.25 and record["spec_draft_tokens"] == 8.0
    assert json.loads((tmp_path / "log.jsonl").read_text())["spec_acceptance"] == 0.25
