"""AdaptThink in the trainer (issue 40): half of each group forced to open with `</think>`, the server's
adapt_think shaping as the naive advantage, and the importance-sampled loss checked against the paper's
Eq. 7 (Zhang et al. 2025, arXiv 2505.13417) and the released code on hand-computed numbers."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import torch

from assay.groups import GroupOutcome
from assay.groups.shaping import SolveRates, group_outcome, shaping_parts
from assay.rl_client.adapt_think import FirstUnits, adapt_think_loss, forced_count, log_pi_is
from assay.rl_client.config import ControlConfig, GenerateConfig, LossConfig, ShapingConfig, TrainConfig
from assay.rl_client.generate import Completion, Problem, SamplingParams
from assay.rl_client.runs.think_demo import ThinkTokenizer, answer_of
from assay.types import Result
from rl_client.fakes import StatelessBackend, one_round


def _cfg(**shaping: Any) -> TrainConfig:
    return TrainConfig(
        generate=GenerateConfig(group_size=4, max_new_tokens=8),
        control=ControlConfig(prompts_per_step=1, dynamic_sampling=False),
        loss=LossConfig(clip_low=0.2, clip_high=0.28),
        shaping=ShapingConfig(method="adapt_think", reference_accuracy=0.5, **shaping),
    )


def _rows(logp_first: Sequence[float], logp_second: Sequence[float]) -> tuple[torch.Tensor, torch.Tensor]:
    """Two rows with a 2-token prompt and a 2-token response: loss positions 1 and 2."""
    logp = torch.zeros(2, 3)
    logp[:, 1] = torch.log(torch.tensor(logp_first))
    logp[:, 2] = torch.log(torch.tensor(logp_second))
    mask = torch.tensor([[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]])
    return logp, mask


# Row 0 opens with </think> (pi_theta 0.2, then 0.9) and earns acc 1 - ref 0.5 + delta 0.05 = 0.55;
# row 1 thinks (pi_theta of its first token 0.7, then 0.6) and earns 0 - 0.5 = -0.5. On-policy: old = logp.
UNITS = FirstUnits(first=[1, 1], length=[1, 1], prefixed=[True, False])
ADV = torch.tensor([0.55, -0.5])


def test_the_sequence_ratio_is_the_papers_eq_7_with_a_half_half_first_token() -> None:
    # both halves forced (thinking_start set): pi_IS(first) = 0.5 either way, later tokens pi_old
    # row 0: r = 0.2*0.9 / (0.5*0.9) = 0.4; min(0.4*0.55, clip(0.4, 0.8, 1.28)*0.55) = 0.22
    # row 1: r = 0.7*0.6 / (0.5*0.6) = 1.4; min(1.4*-0.5, 1.28*-0.5) = -0.7
    # L = -(0.22 + -0.7) / 2 = 0.24
    logp, mask = _rows([0.2, 0.7], [0.9, 0.6])
    logp.requires_grad_(True)
    cfg = _cfg(thinking_start="x", is_ratio="sequence")
    parts = adapt_think_loss(logp, logp.detach(), ADV, mask, UNITS, cfg)
    assert parts.loss.item() == pytest.approx(0.24, abs=1e-6)
    assert parts.clip_fraction == 1.0  # both ratios are outside [0.8, 1.28] (as `policy_loss` counts)
    parts.loss.backward()
    assert logp.grad is not None
    # d/dlogp_t of -r*A/2 = -r*A/2 for every token of row 0 (r = exp(sum of log ratios)): -0.11
    assert logp.grad[0, 1:].tolist() == pytest.approx([-0.11, -0.11], abs=1e-6)
    # row 1's unclipped term is the minimum: its gradient pushes its tokens down, r*|A|/2 = 0.35
    assert logp.grad[1, 1:].tolist() == pytest.approx([0.35, 0.35], abs=1e-6)
    assert logp.grad[:, 0].tolist() == [0.0, 0.0]  # prompt positions carry no loss


def test_token_mean_is_the_released_codes_ratio() -> None:
    # adapt_think_core_algos.py: old log-prob of the first token set to log 0.5, then
    # r = exp(mean_t(log pi_theta - log pi_old)): row 0 sqrt(0.4) = 0.63246, clipped up to 0.8 and the
    # minimum keeps 0.63246*0.55 = 0.34785; row 1 sqrt(1.4) = 1.18322 < 1.28: 1.18322*-0.5 = -0.59161
    logp, mask = _rows([0.2, 0.7], [0.9, 0.6])
    parts = adapt_think_loss(logp, logp.clone(), ADV, mask, UNITS, _cfg(thinking_start="x"))
    expected = -(math.sqrt(0.4) * 0.55 - math.sqrt(1.4) * 0.5) / 2
    assert parts.loss.item() == pytest.approx(expected, abs=1e-6)
    assert parts.clip_fraction == 0.5  # row 0 below 0.8


def test_a_freely_sampled_thinking_half_makes_the_first_token_a_mixture() -> None:
    # rho 0.5, thinking half unforced: pi_IS(</think>) = 0.5 + 0.5*0.2 = 0.6, so r0 = 0.2/0.6 = 1/3;
    # pi_IS(y1) = 0.5*0.7 = 0.35 for the thinking row, so r1 = 0.7/0.35 = 2.
    # L = -(min(0.5*... ) ...)/2 = -((1/3)*0.55 + 2*-0.5)/2 = 0.408333
    logp, mask = _rows([0.2, 0.7], [0.9, 0.6])
    parts = adapt_think_loss(logp, logp.clone(), ADV, mask, UNITS, _cfg(is_ratio="sequence"))
    assert parts.loss.item() == pytest.approx(-((1 / 3) * 0.55 - 1.0) / 2, abs=1e-6)
    old = torch.log(torch.tensor([0.2, 0.7]))
    mixture = log_pi_is(old, torch.tensor([True, False]), 0.5, False).exp()
    assert mixture.tolist() == pytest.approx([0.6, 0.35])


def test_a_prefix_of_several_tokens_is_one_unit() -> None:
    # a tokenizer without a single </think> token: the prefix's two tokens (0.2 and 0.5 under pi_theta)
    # are one draw of the mixture: pi_IS = 0.5 (start forced), r = 0.2*0.5*0.9 / (0.5*0.9) = 0.2
    logp = torch.log(torch.tensor([[1.0, 0.2, 0.5, 0.9]]))
    mask = torch.tensor([[0.0, 1.0, 1.0, 1.0]])
    units = FirstUnits(first=[1], length=[2], prefixed=[True])
    cfg = _cfg(thinking_start="x", is_ratio="sequence")
    parts = adapt_think_loss(logp, logp.clone(), torch.tensor([1.0]), mask, units, cfg)
    assert parts.loss.item() == pytest.approx(-0.2, abs=1e-6)


def test_forced_counts_keep_one_of_each_mode() -> None:
    assert [forced_count(n, 0.5) for n in (2, 3, 8, 16)] == [1, 2, 4, 8]
    assert forced_count(4, 0.1) == 1 and forced_count(4, 0.9) == 3


class ThinkBackend(StatelessBackend):
    """Over ThinkTokenizer: a continuation after `</think>` answers "3"; any other thinks first."""

    def __init__(self) -> None:
        self.tokenizer = ThinkTokenizer()
        self.rows: list[list[int]] = []

    def generate_ids(self, prompt_ids: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        close = self.tokenizer.encode_plain("</think>")
        out = []
        for row in prompt_ids:
            self.rows.append(list(row))
            text = "3" if row[-1:] == close else "hmm</think>4"
            ids = [*self.tokenizer.encode_plain(text), self.tokenizer.eos_token_id]
            out.append(Completion(list(row), ids, text, [-0.1] * len(ids), False))
        return out


class AdaptThinkServer:
    """POST /v1/groups with the server's own adapt_think arithmetic; correct: "3" after the tag."""

    def __init__(self) -> None:
        self.requests = 0
        self.sent: list[dict[str, Any]] = []

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        raise AssertionError("adapt_think scores groups")

    async def aclose(self) -> None:
        return None

    async def ascore_groups(self, groups: list[dict[str, Any]]) -> list[GroupOutcome]:
        self.sent.extend(groups)
        out = []
        for index, group in enumerate(groups):
            gid, spec, split = shaping_parts(index, group)
            results = [Result.verdict(answer_of(item["response"]) == "3") for item, _ in split]
            out.append(group_outcome(gid, spec, split, results, SolveRates(None)))
        return out


def test_half_of_each_group_opens_with_the_closing_tag_and_the_server_pays_it() -> None:
    cfg, server, backend = _cfg(), AdaptThinkServer(), ThinkBackend()
    rollout, [group] = one_round(backend, server, cfg, [Problem("p", "1+2=<think>", "3")])
    texts = [s.completion.text for s in group.samples]
    assert texts == ["</think>3", "</think>3", "hmm</think>4", "hmm</think>4"]
    close = backend.tokenizer.encode_plain("</think>")
    prompt = backend.tokenizer.encode("1+2=<think>")
    assert backend.rows == [prompt + close, prompt + close, prompt, prompt]
    forced = group.samples[0].completion
    assert forced.prompt_ids == prompt and forced.token_ids[:1] == close  # the forced token is the policy's
    assert forced.logprobs[0] == 0.0  # a placeholder: the loss puts pi_IS there
    [sent] = server.sent
    assert sent["shaping"] == {"method": "adapt_think", "delta": 0.05, "reference_accuracy": 0.5}
    # acc - ref + delta x NoThinking: 1 - 0.5 + 0.05 for the closed ones, 0 - 0.5 for the wrong thinkers
    assert [s.reward for s in group.samples] == pytest.approx([0.55, 0.55, -0.5, -0.5])
    assert rollout.adapt is not None and rollout.adapt.signals() == {"nothinking_unforced": 0.0}


def test_adapt_think_says_what_it_needs() -> None:
    with pytest.raises(ValueError, match=r"exactly one of shaping\.reference_accuracy"):
        TrainConfig(
            shaping=ShapingConfig(method="adapt_think"), control=ControlConfig(dynamic_sampling=False)
        )
    with pytest.raises(ValueError, match="dynamic_sampling false"):
        TrainConfig(shaping=ShapingConfig(method="adapt_think", reference_accuracy_file="rates.jsonl"))
    shaping = ShapingConfig(method="adapt_think", reference_accuracy_file="r.jsonl", nothinking_max_length=16)
    wire = shaping.wire()
    assert wire == {
        "method": "adapt_think",
        "delta": 0.05,
        "reference_accuracy_file": "r.jsonl",
        "nothinking_max_length": 16,
    }


def test_one_trainer_step_runs_the_importance_sampled_loss() -> None:
    from assay.rl_client.backends.hf import HFBackend
    from assay.rl_client.runs.models import build_char_model
    from assay.rl_client.trainer import Trainer

    tokenizer = ThinkTokenizer()
    model = build_char_model(tokenizer, 0, width=32, layers=1, positions=32)
    backend = HFBackend(model, tokenizer, seed=0)
    cfg = _cfg(is_ratio="sequence")
    problems = [Problem("p", "1+2=<think>", "3"), Problem("q", "2+1=<think>", "3")]
    trainer = Trainer(model, backend, AdaptThinkServer(), problems, cfg, pad_id=0)
    before = [p.detach().clone() for p in model.parameters()]
    try:
        record = trainer.train_step()
    finally:
        trainer.close()
    assert 0.0 <= record["nothinking_unforced"] <= 1.0
    assert record["groups_kept"] == 1 and record["masked"] == 0
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_demo_runs_adapt_think_on_the_verbose_policy(tmp_path: Path) -> None:
    from assay.rl_client.runs.demo import DemoOptions, run_demo

    shaping = ShapingConfig(method="adapt_think")  # the demo pre-samples its own solve-rate file
    options = DemoOptions(steps=2, prompts_per_step=4, sft_target=0.0, shaping=shaping, progress=False)
    summary = run_demo(tmp_path / "run", options)
    assert (summary["steps"], summary["shaping"]) == (2, "adapt_think")
    assert summary["config"]["shaping"]["reference_accuracy_file"] == "verbose-solve-rates.jsonl"
    assert (tmp_path / "run" / "solve-rates" / "verbose-solve-rates.jsonl").exists()
    records = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert len(records) == 2 and all("nothinking_unforced" in r and "raw_reward" in r for r in records)
