"""TRL 1.16's own `GRPOTrainer` for one step on a tiny model, with `AssayReward` as its reward function
against a live Assay: scored rows train, an unscorable row becomes None and TRL masks it (NaN), never 0."""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from assay.integrations.trl import AssayReward

pytest.importorskip("torch")
with warnings.catch_warnings():  # TRL and its dependencies import deprecated names of theirs
    warnings.simplefilter("ignore")
    trl = pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiny_models import build_chat_model

    return build_chat_model(sys.executable, tmp_path_factory.mktemp("tiny-chat"))


def _trainer(model_dir: Path, out: Path, reward: Any, rows: list[dict[str, str]]) -> Any:
    config = trl.GRPOConfig(
        output_dir=str(out),
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=8,
        max_steps=1,
        learning_rate=1e-4,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        bf16=False,
        seed=0,
    )
    return trl.GRPOTrainer(
        model=str(model_dir),
        reward_funcs=[reward],
        args=config,
        train_dataset=datasets.Dataset.from_list(rows),
    )


class Recording:
    """AssayReward, keeping what it returned to TRL (the wrapped call is the real one)."""

    def __init__(self, reward: AssayReward) -> None:
        self.reward = reward
        self.__name__ = reward.__name__
        self.returned: list[float | None] = []

    def __call__(self, prompts: Any, completions: Any, **kwargs: Any) -> list[float | None]:
        values = self.reward(prompts, completions, **kwargs)
        self.returned.extend(values)
        return values


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")
def test_grpo_trainer_steps_with_assay_rewards(assay_service: str, tiny_model: Path, tmp_path: Path) -> None:
    reward = Recording(AssayReward(assay_service))
    rows = [{"prompt": "What is 1+1?", "answer": "2"}] * 4
    trainer = _trainer(tiny_model, tmp_path, reward, rows)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    assert len(reward.returned) >= 4 and all(r in (0.0, 1.0) for r in reward.returned)
    [logged] = [e for e in trainer.state.log_history if "loss" in e][:1]
    assert math.isfinite(logged["loss"])
    assert "rewards/assay_math/mean" in logged
    changed = any(not p.detach().equal(before[n]) for n, p in trainer.model.named_parameters())
    assert changed or all(r == reward.returned[0] for r in reward.returned)  # no signal, no update


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning", "ignore::UserWarning")
def test_grpo_trainer_masks_rows_assay_cannot_score(
    assay_service: str, tiny_model: Path, tmp_path: Path
) -> None:
    # The `buggy` test task always errors: every reward is None, which TRL turns into NaN and masks
    # (it warns that all rewards are None) instead of training on a made-up 0.
    reward = Recording(AssayReward(assay_service, task="buggy"))
    rows = [{"prompt": "What is 1+1?", "answer": "2"}] * 4
    trainer = _trainer(tiny_model, tmp_path, reward, rows)
    trainer.train()
    assert reward.returned and all(r is None for r in reward.returned)
    [logged] = [e for e in trainer.state.log_history if "loss" in e][:1]
    # nanmean over masked rows is NaN, which TRL logs as None; a made-up 0.0 would have logged 0.0
    assert logged["rewards/assay_buggy/mean"] is None and logged["loss"] == 0.0
