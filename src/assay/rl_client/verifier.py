"""A V-STaR verifier: a causal LM trained with DPO on the generator's own correct and incorrect samples.

Source: Hosseini et al. 2024, "V-STaR: Training Verifiers for Self-Taught Reasoners" (arXiv:2402.06457).
The verifier starts from the generator's starting model, which is also DPO's reference; for each prompt,
preference pairs (a correct sample, an incorrect sample) of the generator's own responses, gathered
across iterations, train it with the DPO loss (Rafailov et al. 2023)

    L = -log sigmoid( beta * [ (log pv(y+|x) - log pref(y+|x)) - (log pv(y-|x) - log pref(y-|x)) ] )

and at test time best-of-K picks the candidate with the highest score, the implicit reward
`beta * (log pv(y|x) - log pref(y|x))` (V-STaR ranks by this likelihood ratio; the per-prompt log Z(x) of
DPO's reward is the same for every candidate of one prompt and drops out of the ranking).

`save` writes a directory that Assay's `prm` task serves with `format: vstar` (docs/training.md): the
verifier saved with `save_pretrained` (and its tokenizer), the reference in `reference/`, and
`vstar.json` (beta, how the prompt is encoded). Scoring here and in the served backend encode a
candidate the same way: the prompt as the policy saw it, then the response's tokens and the end token.

What is covered: the paper's verifier objective and ranking on the models the trainer runs on a CPU.
What is not: the paper's scale (7B models, 16 candidates per prompt per iteration over 3 iterations) or
its LoRA training; here the whole (tiny) model is fine-tuned.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

CONFIG_FILE = "vstar.json"
REFERENCE_DIR = "reference"


@dataclass(frozen=True)
class Candidate:
    """One generator sample: the prompt as the policy saw it, its response, and Assay's verdict."""

    prompt: str
    response: str
    correct: bool


Pair = tuple[str, str, str]  # (prompt, preferred response, rejected response)


def preference_pairs(candidates: Sequence[Candidate], per_prompt: int, seed: int) -> list[Pair]:
    """V-STaR's preference data: per prompt, (correct, incorrect) pairs of its samples, at most
    `per_prompt` of them drawn from all such combinations (prompts with only one kind give none)."""
    by_prompt: dict[str, tuple[list[str], list[str]]] = {}
    for c in candidates:
        right, wrong = by_prompt.setdefault(c.prompt, ([], []))
        (right if c.correct else wrong).append(c.response)
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for prompt, (right, wrong) in by_prompt.items():
        total = len(right) * len(wrong)
        if not total:
            continue
        picks = rng.sample(range(total), min(per_prompt, total))
        pairs.extend((prompt, right[i // len(wrong)], wrong[i % len(wrong)]) for i in picks)
    return pairs


class Encoder:
    """Token ids of a candidate: the prompt (special tokens as the policy's tokenizer adds them), then
    the response and the end token."""

    def __init__(self, tokenizer: Any, add_special_tokens: bool = True) -> None:
        self.tokenizer = tokenizer
        self.add_special_tokens = add_special_tokens
        eos = tokenizer.eos_token_id
        pad = tokenizer.pad_token_id
        self.eos_id = int(eos)
        self.pad_id = int(pad if pad is not None else eos)

    def encode(self, prompt: str, response: str) -> tuple[list[int], list[int]]:
        prompt_ids = list(self.tokenizer(prompt, add_special_tokens=self.add_special_tokens)["input_ids"])
        response_ids = list(self.tokenizer(response, add_special_tokens=False)["input_ids"])
        return prompt_ids, [*response_ids, self.eos_id]


def sequence_logprobs(model: Any, rows: Sequence[tuple[list[int], list[int]]], pad_id: int) -> torch.Tensor:
    """Sum of log p(response token | everything before it) per (prompt ids, response ids) row, [N].
    Right padding: every row's real tokens keep the positions they have alone."""
    width = max(len(p) + len(r) for p, r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width - 1))
    for i, (prompt, response) in enumerate(rows):
        ids[i, : len(prompt) + len(response)] = torch.tensor(prompt + response, dtype=torch.long)
        attention[i, : len(prompt) + len(response)] = 1
        mask[i, len(prompt) - 1 : len(prompt) + len(response) - 1] = 1.0  # logits at t predict t+1
    logits = model(input_ids=ids, attention_mask=attention).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    return (logp * mask).sum(-1)


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    reference_chosen: torch.Tensor,
    reference_rejected: torch.Tensor,
    beta: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The DPO loss (mean over pairs) and, per pair, whether the chosen response's implicit reward is
    the higher one."""
    margin = beta * ((policy_chosen - reference_chosen) - (policy_rejected - reference_rejected))
    return -torch.nn.functional.logsigmoid(margin).mean(), margin > 0


@dataclass(frozen=True)
class DpoSettings:
    beta: float = 0.1
    steps: int = 1000
    batch: int = 32
    lr: float = 3e-4
    seed: int = 0


@dataclass
class DpoReport:
    pairs: int
    steps: int
    loss_first: float | None
    loss_last: float | None
    pair_accuracy: float | None  # share of the training pairs ranked right after training

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def train_dpo(
    verifier: Any, reference: Any, encoder: Encoder, pairs: Sequence[Pair], settings: DpoSettings
) -> DpoReport:
    """DPO steps on batches drawn (with replacement) from `pairs`; `verifier` is trained in place."""
    if not pairs:
        return DpoReport(0, 0, None, None, None)
    encoded = [(encoder.encode(x, good), encoder.encode(x, bad)) for x, good, bad in pairs]
    reference.eval()
    with torch.no_grad():  # the reference is fixed: its log-probabilities once
        ref_good = _batched(reference, [g for g, _ in encoded], encoder.pad_id)
        ref_bad = _batched(reference, [b for _, b in encoded], encoder.pad_id)
    optimizer = torch.optim.AdamW(verifier.parameters(), lr=settings.lr)
    rng = random.Random(settings.seed)
    losses = []
    verifier.train()
    for _ in range(settings.steps):
        rows = [rng.randrange(len(encoded)) for _ in range(settings.batch)]
        good = sequence_logprobs(verifier, [encoded[i][0] for i in rows], encoder.pad_id)
        bad = sequence_logprobs(verifier, [encoded[i][1] for i in rows], encoder.pad_id)
        loss, _ = dpo_loss(good, bad, ref_good[rows], ref_bad[rows], settings.beta)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.item()))
    verifier.eval()
    with torch.no_grad():
        good = _batched(verifier, [g for g, _ in encoded], encoder.pad_id)
        bad = _batched(verifier, [b for _, b in encoded], encoder.pad_id)
        _, right = dpo_loss(good, bad, ref_good, ref_bad, settings.beta)
    return DpoReport(len(pairs), settings.steps, losses[0], losses[-1], float(right.float().mean().item()))


def _batched(
    model: Any, rows: Sequence[tuple[list[int], list[int]]], pad_id: int, size: int = 512
) -> torch.Tensor:
    parts = [sequence_logprobs(model, rows[i : i + size], pad_id) for i in range(0, len(rows), size)]
    return torch.cat(parts)


def scores(
    verifier: Any, reference: Any, encoder: Encoder, candidates: Sequence[tuple[str, str]], beta: float
) -> list[float]:
    """The verifier's score of each (prompt, response): beta * (log pv(y|x) - log pref(y|x))."""
    if not candidates:
        return []
    rows = [encoder.encode(x, y) for x, y in candidates]
    with torch.no_grad():
        ratio = _batched(verifier, rows, encoder.pad_id) - _batched(reference, rows, encoder.pad_id)
    return [beta * float(v) for v in ratio.tolist()]


def save(
    directory: Path, verifier: Any, reference: Any, tokenizer: Any, beta: float, add_special_tokens: bool,
    report: DpoReport,
) -> Path:  # fmt: skip
    """The verifier directory `prm` serves with `format: vstar`."""
    directory.mkdir(parents=True, exist_ok=True)
    verifier.save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    reference.save_pretrained(str(directory / REFERENCE_DIR))
    meta = {
        "method": "V-STaR verifier (Hosseini et al. 2024, arXiv:2402.06457): DPO on the generator's own "
        "(correct, incorrect) samples; score = beta * (log p_verifier - log p_reference) of the response",
        "beta": beta,
        "add_special_tokens": add_special_tokens,
        "training": report.as_dict(),
    }
    (directory / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return directory


def best_of_k(scored: Sequence[tuple[float, bool]], k: int) -> float | None:
    """Expected correctness of the highest-scored candidate among K drawn without replacement from the
    `n` scored candidates of one prompt (exact over all K-subsets, the unbiased estimator; ties broken
    uniformly at random). None when n < k."""
    n = len(scored)
    if n < k or k < 1:
        return None
    ordered = sorted(scored, key=lambda s: -s[0])
    total = math.comb(n, k)
    value, start = 0.0, 0
    while start < n:
        stop = start
        while stop < n and ordered[stop][0] == ordered[start][0]:
            stop += 1
        # P(the best of a random K-subset is in this block of ties) = [C(n-start,k) - C(n-stop,k)] / C(n,k)
        block = (math.comb(n - start, k) - math.comb(n - stop, k)) / total
        value += block * sum(c for _, c in ordered[start:stop]) / (stop - start)
        start = stop
    return value
