"""Supervised fine-tuning on (prompt ids, target ids) pairs: the one SFT step, used by STaR's inner loop
(`fine_tune`), by the demo's and the example's warm-up (`demo.sft_until`) and by the tools demo's
(`demo_tools.sft`).

Rows are right-padded; only target tokens carry loss (labels are -100 on the prompt and the padding).
A target may hold tokens the policy did not write, a tool's observation among them: a `MaskedPair` names
them with a learn mask, and they are seen as context but take no loss, as in RL on tool rollouts.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

Pair = tuple[list[int], list[int]]
MaskedPair = tuple[list[int], list[int], list[bool]]
"""(prompt, target, learn): `learn[j]` is False where `target[j]` takes no loss; one flag per target token."""


def _target_labels(pair: Pair | MaskedPair) -> list[int]:
    """The labels of a pair's target: its tokens, -100 where a `MaskedPair`'s learn mask is False."""
    if len(pair) == 2:
        return pair[1]
    _, target, learn = pair
    if len(learn) != len(target):
        raise ValueError(f"learn mask has {len(learn)} flags for {len(target)} target tokens")
    return [token if keep else -100 for token, keep in zip(target, learn, strict=True)]


def batch_tensors(
    pairs: Sequence[Pair | MaskedPair], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """input ids, attention mask and labels for a batch of pairs."""
    width = max(len(p[0]) + len(p[1]) for p in pairs)
    ids = torch.full((len(pairs), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(pairs), width), dtype=torch.long)
    labels = torch.full((len(pairs), width), -100, dtype=torch.long)
    for i, pair in enumerate(pairs):
        prompt, target = pair[0], pair[1]
        row = prompt + target
        ids[i, : len(row)] = torch.tensor(row)
        attention[i, : len(row)] = 1
        labels[i, len(prompt) : len(row)] = torch.tensor(_target_labels(pair))
    return ids, attention, labels


def sft_step(
    model: Any, optimizer: torch.optim.Optimizer, pairs: Sequence[Pair | MaskedPair], pad_id: int
) -> float:
    """One optimiser step on the cross-entropy of the pairs' targets; the step's loss."""
    model.train()
    ids, attention, labels = batch_tensors(pairs, pad_id)
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1]
    loss = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]).float(), labels[:, 1:].reshape(-1), ignore_index=-100
    )
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return float(loss.item())


def fine_tune(
    model: Any,
    optimizer: torch.optim.Optimizer,
    pairs: Sequence[Pair | MaskedPair],
    steps: int,
    batch: int,
    rng: random.Random,
    pad_id: int,
) -> float:
    """`steps` optimiser steps on batches drawn (with replacement) from `pairs`; the mean loss."""
    if not pairs:
        return 0.0
    total = 0.0
    for _ in range(steps):
        total += sft_step(model, optimizer, [rng.choice(pairs) for _ in range(batch)], pad_id)
    model.eval()
    return total / steps
