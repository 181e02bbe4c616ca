"""Supervised fine-tuning on (prompt ids, target ids) pairs: the one SFT step, used by STaR's inner loop
(`fine_tune`) and by the demo's and the example's warm-up (`demo.sft_until`).

Rows are right-padded; only target tokens carry loss (labels are -100 on the prompt and the padding).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

Pair = tuple[list[int], list[int]]


def batch_tensors(pairs: Sequence[Pair], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """input ids, attention mask and labels for a batch of pairs."""
    width = max(len(p) + len(t) for p, t in pairs)
    ids = torch.full((len(pairs), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(pairs), width), dtype=torch.long)
    labels = torch.full((len(pairs), width), -100, dtype=torch.long)
    for i, (prompt, target) in enumerate(pairs):
        row = prompt + target
        ids[i, : len(row)] = torch.tensor(row)
        attention[i, : len(row)] = 1
        labels[i, len(prompt) : len(row)] = torch.tensor(target)
    return ids, attention, labels


def sft_step(model: Any, optimizer: torch.optim.Optimizer, pairs: Sequence[Pair], pad_id: int) -> float:
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
    pairs: Sequence[Pair],
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
