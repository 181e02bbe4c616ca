"""Loss: group-relative advantages and the clipped policy-gradient surrogate.

- Advantages: reward minus the group mean, optionally divided by the group's (sample) std (GRPO);
  Dr. GRPO drops the std. Samples with no reward (not scored ok) or zero weight are left out of the
  group statistics and get advantage 0 and no loss.
- Clipping is asymmetric (DAPO clip-higher: 1 - 0.2 .. 1 + 0.28), so low-probability tokens with a
  positive advantage can still grow.
- Aggregation: `token` (DAPO: every token of the batch weighs the same), `sequence` (GRPO: mean per
  response, then mean over responses, so long responses' tokens weigh less) or `dr_grpo` (sum over
  tokens divided by responses x generation budget, a constant, so there is no length bias).
- Off-policy samples (from the replay buffer) use their behaviour log-probabilities as "old": the ratio
  is then the importance ratio against the current policy, capped at `max_is_ratio`.
- Optional KL to a frozen reference, with the k3 estimator (always >= 0, unbiased).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from assay.rl_client.config import Aggregation, LossConfig


def group_advantages(rewards: Sequence[float | None], scale_std: bool, eps: float = 1e-6) -> list[float]:
    """Mean-centred (and optionally std-scaled) rewards of one group; None stays out and gets 0."""
    present = [r for r in rewards if r is not None]
    if len(present) < 2:
        return [0.0] * len(rewards)
    mean = sum(present) / len(present)
    scale = 1.0
    if scale_std:
        std = math.sqrt(sum((r - mean) ** 2 for r in present) / (len(present) - 1))
        scale = 1.0 / (std + eps)
    return [0.0 if r is None else (r - mean) * scale for r in rewards]


def correct_coefficients(scores: Sequence[float | bool | None]) -> list[float]:
    """Rejection fine-tuning's coefficients (STaR, Zelikman et al. 2022; online RFT): 1 for a correct
    sample (a graded one: a reward of 1), 0 for anything else, unscored included. On fresh on-policy
    samples the clipped surrogate with these advantages is the SFT gradient on the correct ones."""
    return [1.0 if s is True or (type(s) is float and s >= 1.0) else 0.0 for s in scores]


def aggregate(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    mode: Aggregation,
    max_len: int,
    n_tokens: float | None = None,
    n_seqs: float | None = None,
) -> torch.Tensor:
    """Reduce a [sequences, tokens] loss under `mask`. `n_tokens`/`n_seqs` are the whole batch's counts
    when this is one micro-batch of it (default: counted here)."""
    mask = mask.to(per_token.dtype)
    lengths = mask.sum(-1)
    if n_tokens is None:
        n_tokens = float(lengths.sum().item())
    if n_seqs is None:
        n_seqs = float((lengths > 0).sum().item())
    if n_tokens == 0 or n_seqs == 0:
        return per_token.sum() * 0.0
    masked = per_token * mask
    if mode == "token":
        return masked.sum() / n_tokens
    if mode == "sequence":
        return (masked.sum(-1) / lengths.clamp(min=1)).sum() / n_seqs
    if mode == "dr_grpo":
        return masked.sum() / (n_seqs * max_len)
    raise ValueError(f"unknown aggregation {mode!r}")


def importance_ratio(logp: torch.Tensor, old_logp: torch.Tensor) -> torch.Tensor:
    """Per-token pi_current / pi_behaviour."""
    return torch.exp(logp - old_logp)


def k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Per-token KL(pi || ref) estimate exp(r) - r - 1 with r = ref - logp (Schulman's k3)."""
    log_ratio = ref_logp - logp
    return torch.exp(log_ratio) - log_ratio - 1.0


@dataclass
class LossParts:
    loss: torch.Tensor
    clip_fraction: float
    kl: float


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    cfg: LossConfig,
    max_len: int,
    off_policy: torch.Tensor | None = None,
    ref_logp: torch.Tensor | None = None,
    n_tokens: float | None = None,
    n_seqs: float | None = None,
) -> LossParts:
    """The clipped surrogate (negated, to minimise) over [sequences, tokens] tensors.

    `advantages` is one value per sequence; `off_policy` marks rows whose ratio is capped.
    """
    ratio = importance_ratio(logp, old_logp)
    if off_policy is not None:
        capped = ratio.clamp(max=cfg.max_is_ratio)
        ratio = torch.where(off_policy[:, None], capped, ratio)
    adv = advantages[:, None].to(logp.dtype)
    clipped = ratio.clamp(1.0 - cfg.clip_low, 1.0 + cfg.clip_high)
    per_token = -torch.minimum(ratio * adv, clipped * adv)
    kl_value = 0.0
    if ref_logp is not None and cfg.kl_coef > 0:
        kl = k3_kl(logp, ref_logp)
        per_token = per_token + cfg.kl_coef * kl
        kl_value = float(aggregate(kl.detach(), mask, "token", max_len).item())
    loss = aggregate(per_token, mask, cfg.aggregation, max_len, n_tokens, n_seqs)
    with torch.no_grad():
        was_clipped = ((ratio - clipped).abs() > 0).to(logp.dtype)
        tokens = mask.sum().clamp(min=1)
        clip_fraction = float(((was_clipped * mask).sum() / tokens).item())
    return LossParts(loss, clip_fraction, kl_value)
