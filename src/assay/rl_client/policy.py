"""Tensors for the update: padded prompt+response rows and per-token log-probabilities under a model.

Rows are right-padded, so positions count from 0 in every row and the model needs no position ids.
`mask[i, t]` is 1 where token t+1 of row i is a response token of a sample with non-zero weight: only
those tokens carry loss. In a multi-turn rollout the tool observations spliced into the response are 0
there (`Completion.action_mask`): the policy did not choose them. Log-probabilities use
logits / temperature, the distribution that sampled them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from assay.rl_client.generate import Sample


@dataclass
class Batch:
    input_ids: torch.Tensor  # [N, T]
    attention_mask: torch.Tensor  # [N, T]
    mask: torch.Tensor  # [N, T-1] response tokens that carry loss
    behaviour_logp: torch.Tensor  # [N, T-1] the sampler's log-probs, aligned with `mask`
    advantages: torch.Tensor  # [N]
    off_policy: torch.Tensor  # [N] bool

    def __len__(self) -> int:
        return int(self.input_ids.shape[0])

    def rows(self, start: int, stop: int) -> Batch:
        return Batch(
            self.input_ids[start:stop],
            self.attention_mask[start:stop],
            self.mask[start:stop],
            self.behaviour_logp[start:stop],
            self.advantages[start:stop],
            self.off_policy[start:stop],
        )


def collate(samples: Sequence[Sample], advantages: Sequence[float], pad_id: int) -> Batch:
    """Pad samples into a batch; a zero-weight sample keeps its row but has an all-zero mask."""
    rows = [s.completion.prompt_ids + s.completion.token_ids for s in samples]
    width = max(len(r) for r in rows)
    n = len(rows)
    input_ids = torch.full((n, width), pad_id, dtype=torch.long)
    attention = torch.zeros((n, width), dtype=torch.long)
    mask = torch.zeros((n, width - 1))
    behaviour = torch.zeros((n, width - 1))
    for i, (sample, row) in enumerate(zip(samples, rows, strict=True)):
        input_ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        attention[i, : len(row)] = 1
        start = len(sample.completion.prompt_ids) - 1  # logits at t predict token t+1
        stop = start + len(sample.completion.token_ids)
        if sample.weight > 0:
            mask[i, start:stop] = sample.weight
            if sample.completion.action_mask is not None:  # tool observations are not the policy's
                mask[i, start:stop] *= torch.tensor(sample.completion.action_mask, dtype=mask.dtype)
        behaviour[i, start:stop] = torch.tensor(sample.completion.logprobs)
    return Batch(
        input_ids,
        attention,
        mask,
        behaviour,
        torch.tensor(list(advantages), dtype=torch.float32),
        torch.tensor([s.off_policy for s in samples], dtype=torch.bool),
    )


def token_logprobs(
    model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probability of each next token [N, T-1], and the entropy of each next-token distribution."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, input_ids[:, 1:, None]).squeeze(-1)
    with torch.no_grad():
        entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp, entropy
