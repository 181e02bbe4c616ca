"""APRIL-style partial rollouts: the long tail is stopped once enough groups are done, resumed next step
with each token's policy version kept, and a resumed run still equals an uninterrupted one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from assay.rl_client.backends.hf import HFBackend
from assay.rl_client.config import ControlConfig, GenerateConfig, ReplayConfig, TrainConfig
from assay.rl_client.generate import Completion, Problem, SamplingParams
from assay.rl_client.observe import timing_free
from assay.rl_client.partial import PartialRollouts
from assay.rl_client.runs.demo import PAD, CharTokenizer, addition_problems, build_model
from assay.rl_client.trainer import Trainer
from rl_client.test_rl_trainer import CONFIG, StartsWithOneRewards, _params

EOS = 99


class LengthTokenizer:
    """A prompt is its own length: "3" encodes to [3]; a response of that many tokens then ends."""

    eos_token_id = EOS

    def encode(self, text: str) -> list[int]:
        return [int(text)]

    def decode(self, ids: list[int]) -> str:
        return " ".join(map(str, ids))


class LengthBackend:
    """Continues a response with token 5 until its length is the prompt's number, then emits EOS."""

    def __init__(self) -> None:
        self.tokenizer = LengthTokenizer()
        self.segments = 0

    def generate_ids(self, prompt_ids: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        self.segments += 1
        out = []
        for ids in prompt_ids:
            target, done = ids[0], len(ids) - 1
            n = min(params.max_new_tokens, target - done)
            tokens = [5] * (n - 1) + [EOS] if done + n == target else [5] * n
            out.append(Completion(list(ids), tokens, "", [-0.1 * (done + i + 1) for i in range(n)], False))
        return out


def _cfg(overprovision: float = 2.0, segment: int = 2) -> TrainConfig:
    control = ControlConfig(
        partial_rollouts=True, partial_overprovision=overprovision, partial_segment=segment
    )
    return TrainConfig(generate=GenerateConfig(group_size=2, max_new_tokens=8), control=control)


def _problems(lengths: Sequence[int], start: int = 0) -> list[Problem]:
    return [Problem(str(start + i), str(n), "") for i, n in enumerate(lengths)]


def test_long_tail_is_stopped_and_resumed_with_its_versions() -> None:
    partial = PartialRollouts(LengthBackend(), _cfg())
    assert partial.start_count(2) == 4  # over-provisioned two-fold
    done = partial.run(_problems([2, 2, 8, 8]), [2] * 4, count=2, version=0)
    assert [g.problem.id for g in done] == ["0", "1"]
    assert [len(g.drafts[0].token_ids) for g in partial.pending] == [2, 2]  # stopped after one segment
    assert partial.start_count(2) == 2  # the stopped groups count towards the next round

    for version in (1, 2):
        done = partial.run(_problems([2, 2], start=10 * version), [2, 2], count=2, version=version)
        assert [g.problem.id for g in done] == [str(10 * version), str(10 * version + 1)]
    done = partial.run(_problems([2, 2], start=30), [2, 2], count=2, version=3)
    resumed = [g for g in done if g.problem.id in ("2", "3")]
    assert len(resumed) == 2 and partial.resumed == 2
    for group in resumed:
        for sample in group.samples:
            assert sample.completion.token_ids == [5] * 7 + [EOS]
            # four segments under four policy versions: off-policy, dated by its oldest token
            assert sample.version == 0 and sample.off_policy
            assert sample.completion.logprobs == [-0.1 * (i + 1) for i in range(8)]
    fresh = [s for g in done if g.problem.id in ("30", "31") for s in g.samples]
    assert all(s.version == 3 and not s.off_policy for s in fresh)


def test_pending_groups_survive_a_state_round_trip() -> None:
    partial = PartialRollouts(LengthBackend(), _cfg())
    partial.run(_problems([2, 2, 8, 8]), [2] * 4, count=2, version=0)
    again = PartialRollouts(LengthBackend(), _cfg())
    again.load_state_dict(partial.state_dict())
    assert again.pending == partial.pending


def test_a_backend_without_token_id_input_is_refused() -> None:
    class TextOnly:
        pass

    with pytest.raises(ValueError, match="continues from token ids"):
        PartialRollouts(TextOnly(), _cfg())


class _TextTokenizer(CharTokenizer):
    """The demo tokenizer; the partial path decodes with `backend.tokenizer`."""


def _trainer(log: Path, cfg: TrainConfig, model_seed: int = 0) -> Trainer:
    tokenizer = _TextTokenizer()
    train, _ = addition_problems(0)
    model = build_model(tokenizer, seed=model_seed, width=32)
    # An end-token bias gives responses of many lengths (a random model rarely ends on its own), so some
    # groups finish early and others are stopped and carried over.
    head = torch.nn.Linear(model.lm_head.in_features, model.lm_head.out_features, bias=True)
    with torch.no_grad():
        head.weight.copy_(model.lm_head.weight)
        head.bias.zero_()
        head.bias[tokenizer.eos_token_id] = 2.0
    model.lm_head = head
    backend = HFBackend(model, tokenizer, seed=cfg.seed)
    return Trainer(model, backend, StartsWithOneRewards(), train[:12], cfg, pad_id=PAD, log_path=log)


PARTIAL = replace(
    CONFIG,
    generate=replace(CONFIG.generate, group_size=2, max_new_tokens=6, hint_fraction=0.0),
    control=replace(
        CONFIG.control,
        partial_rollouts=True,
        partial_overprovision=2.0,
        partial_segment=1,
        adaptive_group=False,
        skip_solved=False,
    ),
    replay=ReplayConfig(),
)


def test_trainer_with_partial_rollouts_resumes_exactly(tmp_path: Path) -> None:
    straight = _trainer(tmp_path / "straight.jsonl", PARTIAL)
    try:
        straight.train()
    finally:
        straight.close()
    assert sum(r["partial_resumed"] for r in straight.history) > 0  # some groups really were carried over

    first = _trainer(tmp_path / "resumed.jsonl", PARTIAL)
    try:
        first.train(until=3)
        pending = len(first.rollout.partial.pending) if first.rollout.partial else 0
        first.save(tmp_path / "ckpt")
    finally:
        first.close()
    second = _trainer(tmp_path / "resumed.jsonl", PARTIAL, model_seed=9)
    try:
        second.load(tmp_path / "ckpt")
        assert second.rollout.partial is not None and len(second.rollout.partial.pending) == pending
        second.train()
    finally:
        second.close()
    expected, got = _params(straight), _params(second)
    assert all(torch.equal(expected[k], got[k]) for k in expected)
    assert [timing_free(r) for r in straight.history] == [timing_free(r) for r in second.history]
