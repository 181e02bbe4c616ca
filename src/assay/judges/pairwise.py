"""Pairwise comparison with position debiasing: judge both orders, count a win only when they agree.

Why: judges prefer a position (in MT-Bench a strong judge gave the same verdict in both orders on only
65% of pairs). With `swap` on (the default), the pair is judged as (response, response_b) and as
(response_b, response); a win needs both orders to name the same winner, anything else is a tie. The
reward for `response` is 1 (won), 0.5 (tie or inconsistent) or 0 (lost). With `swap` off one order is
asked, which is cheaper and exposed to position bias.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from assay.judges.judge import Judge
from assay.judges.parsing import parse_verdict
from assay.judges.prompts import VERDICT_A, VERDICT_B, VERDICT_TIE, render_pairwise

_TEXT_CHARS = 300
_REWARD = {"response": 1.0, "tie": 0.5, "response_b": 0.0}


@dataclass(frozen=True)
class PairwiseVote:
    """One judge's (or one sample's) verdict over both orders."""

    model: str
    sample: int | None
    first: str  # winner with `response` shown first: "response", "response_b" or "tie"
    second: str | None  # winner with `response_b` shown first; None when not swapped
    cached: int  # how many of the orders came from the cache
    texts: tuple[str, ...]

    @property
    def consistent(self) -> bool:
        return self.second is None or self.first == self.second

    @property
    def reward(self) -> float:
        if self.second is None or self.first == self.second:
            return _REWARD[self.first]
        return 0.5  # the orders disagree: position decided, not content

    def details(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "sample": self.sample,
            "response_first": self.first,
            "response_b_first": self.second,
            "consistent": self.consistent,
            "reward": self.reward,
            "cached": self.cached,
            "texts": [t[:_TEXT_CHARS] for t in self.texts],
        }


async def compare(
    judge: Judge,
    model: str,
    *,
    prompt: str,
    response: str,
    response_b: str,
    reference: str | None,
    criteria: str | None = None,
    swap: bool,
    temperature: float,
    sample: int | None = None,
) -> PairwiseVote:
    """Judge the pair in one or both orders; raises a JudgeFailure if a verdict cannot be had."""
    orders = [(response, response_b, {VERDICT_A: "response", VERDICT_B: "response_b"})]
    if swap:
        orders.append((response_b, response, {VERDICT_A: "response_b", VERDICT_B: "response"}))
    answers = await asyncio.gather(
        *(
            judge.ask(
                model,
                render_pairwise(prompt, first, second, reference, criteria),
                temperature=temperature,
                seed=sample,
                logprobs=False,
            )
            for first, second, _ in orders
        )
    )
    winners = [
        parse_verdict(answer.completion.text, {**names, VERDICT_TIE: "tie"})
        for answer, (_, _, names) in zip(answers, orders, strict=True)
    ]
    return PairwiseVote(
        model,
        sample,
        winners[0],
        winners[1] if swap else None,
        sum(a.cached for a in answers),
        tuple(a.completion.text for a in answers),
    )
