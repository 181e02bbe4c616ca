"""AdaptThink (Zhang et al. 2025, "AdaptThink: Reasoning Models Can Learn When to Think", arXiv 2505.13417;
THU-KEG/AdaptThink): the forced first token, the importance-sampled loss and the naive advantage.

Generate: `nothinking_ratio` (0.5) of each group is forced to open with `nothinking_prefix` (`</think>`:
the chat template opened the thinking block, so the policy closes it at once: NoThinking); the rest is
sampled as it comes, or forced to open with `thinking_start` when one is set (the released code forces
"Alright", `adapt_think_vllm_rollout.py`). Forced tokens are the policy's: they stay in the loss.

Reward (the server, `assay.groups.shaping.adapt_think`): accuracy (0 unless exactly one `</think>` and no
`<think>`) - the reference accuracy of the prompt + delta x [NoThinking within the length cap]. The
advantage is that reward as it is (the released code's `adv_estimator=naive`): the pre-sampled reference
accuracy is the baseline, so no group mean is taken.

Loss (the paper's Eq. 7): -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A) per response, averaged over
responses, with r = pi_theta(y|x) / pi_IS(y|x), where pi_IS is the distribution the group was sampled
from: for the first token, the mixture of the forced prefix (probability `nothinking_ratio`) and the
thinking half; for every later token, the sampling policy. With `thinking_start` forced both halves are
fixed, so pi_IS(first) is 0.5 / 0.5 exactly (the paper); with the thinking half sampled freely
pi_IS(prefix) = rho + (1 - rho) pi_old(prefix) and pi_IS(y1) = (1 - rho) pi_old(y1) otherwise, rho the
forced share. A prefix of several tokens (a tokenizer without a single `</think>` token) is one unit.
`is_ratio: sequence` is r as the paper writes it; `token_mean` (default) is the released code's
(`adapt_think_core_algos.py`: old log-prob of the first token set to log 0.5, then
r = exp(mean over tokens of log pi_theta - log pi_old)), which trained the paper's models.

Not here: replayed (off-policy) rows (their first token has no pi_IS; `replay.fill_batch` is refused)
and the paper's data-side pre-sampling (`assay validate --policy` writes the solve-rate file).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from assay.errors import ConfigError
from assay.rl_client.config import TrainConfig
from assay.rl_client.generate import Completion, Group, Problem, Sample, SamplingParams
from assay.rl_client.loss import LossParts, aggregate, k3_kl
from assay.rl_client.serial import continuing_tokenizer


def forced_count(size: int, ratio: float) -> int:
    """Members of a group of `size` forced to NoThinking: round(size x ratio), at least one of each."""
    return min(max(1, round(size * ratio)), size - 1)


def naive_advantages(samples: Sequence[Sample]) -> list[float]:
    """The shaped reward as it is (its baseline is the reference accuracy); a masked sample gets 0."""
    return [s.reward if s.reward is not None and s.weight > 0 else 0.0 for s in samples]


class AdaptThinkRollouts:
    """Generate one round of AdaptThink groups (`shaping.method: adapt_think`); scoring is the caller's."""

    def __init__(self, backend: Any, cfg: TrainConfig) -> None:
        self.backend = backend
        self.cfg = cfg
        self.tokenizer: Any = continuing_tokenizer(backend, "adapt_think")
        shaping = cfg.shaping
        self.prefix = list(self.tokenizer.encode_plain(shaping.nothinking_prefix))
        self.start = (
            list(self.tokenizer.encode_plain(shaping.thinking_start)) if shaping.thinking_start else []
        )
        budget = cfg.generate.max_new_tokens
        if not self.prefix or len(self.prefix) >= budget or len(self.start) >= budget:
            raise ConfigError(
                f"adapt_think: the prefix {shaping.nothinking_prefix!r} is {len(self.prefix)} tokens and the "
                f"thinking start {len(self.start)}: each must be at least 1 and fewer than "
                f"generate.max_new_tokens {budget}"
            )
        self.generated = 0
        self.free = 0  # samples of the thinking half this step, and how many of them opened with the prefix
        self.free_nothinking = 0

    def sample_groups(self, problems: Sequence[Problem], sizes: Sequence[int], version: int) -> list[Group]:
        gen = self.cfg.generate
        prompts = [list(self.tokenizer.encode(p.prompt)) for p in problems]
        counts = [forced_count(n, self.cfg.shaping.nothinking_ratio) for n in sizes]
        forced = self._continue(
            [p + self.prefix for p, k in zip(prompts, counts, strict=True) for _ in range(k)],
            gen.max_new_tokens - len(self.prefix),
        )
        free = self._continue(
            [p + self.start for p, n, k in zip(prompts, sizes, counts, strict=True) for _ in range(n - k)],
            gen.max_new_tokens - len(self.start),
        )
        forced_it, free_it = iter(forced), iter(free)
        shaping, groups = self.cfg.shaping, []
        for problem, prompt, n, k in zip(problems, prompts, sizes, counts, strict=True):
            closed = [
                self._join(prompt, self.prefix, shaping.nothinking_prefix, next(forced_it)) for _ in range(k)
            ]
            opened = [
                self._join(prompt, self.start, shaping.thinking_start, next(free_it)) for _ in range(n - k)
            ]
            self.free += len(opened)
            self.free_nothinking += sum(self.opens_with_prefix(c.token_ids) for c in opened)
            self.generated += sum(len(c.token_ids) for c in closed + opened)
            groups.append(Group(problem, problem.prompt, [Sample(c, version) for c in closed + opened]))
        return groups

    def signals(self) -> dict[str, float]:
        """The step's NoThinking rate of the thinking half (what the policy chooses unforced); resets."""
        rate = self.free_nothinking / self.free if self.free else 0.0
        self.free = self.free_nothinking = 0
        return {"nothinking_unforced": rate}

    def opens_with_prefix(self, token_ids: Sequence[int]) -> bool:
        return list(token_ids[: len(self.prefix)]) == self.prefix

    def _continue(self, rows: list[list[int]], budget: int) -> list[Completion]:
        if not rows:
            return []
        params = SamplingParams(self.cfg.generate.temperature, budget)
        out: list[Completion] = self.backend.generate_ids(rows, params)
        return out

    def _join(self, prompt: list[int], forced: list[int], forced_text: str, rest: Completion) -> Completion:
        """The forced tokens and their continuation as one response. The forced tokens' behaviour
        log-probabilities are placeholders: the loss puts pi_IS there (`first_units`)."""
        return Completion(
            prompt_ids=list(prompt),
            token_ids=forced + rest.token_ids,
            text=forced_text + rest.text,
            logprobs=[0.0] * len(forced) + rest.logprobs,
            truncated=rest.truncated,
        )


@dataclass(frozen=True)
class FirstUnits:
    """Per row: where its response starts in the [N, T-1] loss axis, how many tokens its first unit
    spans (the prefix, the forced start word, or one token) and whether it opens with the prefix."""

    first: list[int]
    length: list[int]
    prefixed: list[bool]


def first_units(samples: Sequence[Sample], prefix: Sequence[int], start: Sequence[int]) -> FirstUnits:
    first, length, prefixed = [], [], []
    for sample in samples:
        tokens = sample.completion.token_ids
        opens = len(tokens) >= len(prefix) and list(tokens[: len(prefix)]) == list(prefix)
        unit = len(prefix) if opens else (len(start) if start else 1)
        first.append(len(sample.completion.prompt_ids) - 1)  # logits at t predict token t+1 (`collate`)
        length.append(min(unit, len(tokens)))
        prefixed.append(opens)
    return FirstUnits(first, length, prefixed)


def log_pi_is(
    old_unit: torch.Tensor, prefixed: torch.Tensor, ratio: float, start_forced: bool
) -> torch.Tensor:
    """log pi_IS of each row's first unit, from the sampling policy's log-probability of that unit."""
    if start_forced:  # both halves forced: the mixture puts `ratio` on the prefix and the rest on the start
        return torch.where(
            prefixed,
            torch.full_like(old_unit, math.log(ratio)),
            torch.full_like(old_unit, math.log(1 - ratio)),
        )
    with_prefix = torch.log(ratio + (1 - ratio) * old_unit.exp())
    return torch.where(prefixed, with_prefix, math.log(1 - ratio) + old_unit)


def adapt_think_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    units: FirstUnits,
    cfg: TrainConfig,
    ref_logp: torch.Tensor | None = None,
    n_seqs: float | None = None,
    n_tokens: float | None = None,
) -> LossParts:
    """The importance-sampled clipped surrogate over [sequences, tokens] (module docstring), averaged
    over the batch's `n_seqs` responses (default: the rows here with any loss token)."""
    shaping, loss_cfg = cfg.shaping, cfg.loss
    positions = torch.arange(mask.shape[1])[None, :]
    first = torch.tensor(units.first)[:, None]
    unit = ((positions >= first) & (positions < first + torch.tensor(units.length)[:, None])).to(logp.dtype)
    unit = unit * (mask > 0).to(logp.dtype)
    mask = mask.to(logp.dtype)
    rest = mask * (1 - unit)
    old_unit = (old_logp * unit).sum(-1)
    prefixed = torch.tensor(units.prefixed, dtype=torch.bool)
    log_q = log_pi_is(old_unit, prefixed, shaping.nothinking_ratio, bool(shaping.thinking_start))
    log_ratio = ((logp - old_logp) * rest).sum(-1) + (logp * unit).sum(-1) - log_q
    tokens = mask.sum(-1)
    if shaping.is_ratio == "token_mean":
        log_ratio = log_ratio / tokens.clamp(min=1)
    live = (tokens > 0).to(logp.dtype)
    ratio = torch.exp(log_ratio)
    adv = advantages.to(logp.dtype)
    clipped = ratio.clamp(1.0 - loss_cfg.clip_low, 1.0 + loss_cfg.clip_high)
    per_row = -torch.minimum(ratio * adv, clipped * adv) * live
    count = float(live.sum().item()) if n_seqs is None else n_seqs
    loss = per_row.sum() / max(count, 1.0)
    kl_value = 0.0
    if ref_logp is not None and loss_cfg.kl_coef > 0:
        kl = k3_kl(logp, ref_logp)
        loss = loss + loss_cfg.kl_coef * aggregate(kl, mask, "token", 1, n_tokens, n_seqs)
        kl_value = float(aggregate(kl.detach(), mask, "token", 1).item())
    with torch.no_grad():
        was_clipped = ((ratio - clipped).abs() > 0).to(logp.dtype) * live
        clip_fraction = float((was_clipped.sum() / live.sum().clamp(min=1)).item())
    return LossParts(loss, clip_fraction, kl_value)
