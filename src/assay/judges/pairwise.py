"""Pairwise comparison with position debiasing: judge both orders, count a win only when they agree.

Why: judges prefer a position (in MT-Bench a strong judge gave the same verdict in both orders on only
65% of pairs). With `swap` on (the default), the pair is judged as (response, response_b) and as
(response_b, response); a win needs both orders to name the same winner, anything else is a tie. The
reward for `response` is 1 (won), 0.5 (tie or inconsistent) or 0 (lost). With `swap` off one order is
asked, which is cheaper and exposed to position bias.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assay.judges.client import ChatReply
from assay.judges.failures import JudgeFailure
from assay.judges.judge import Answer, Judge
from assay.judges.parsing import parse_verdict
from assay.judges.prompts import VERDICT_A, VERDICT_B, VERDICT_TIE, render_pairwise
from assay.judges.structured import pairwise_format

_TEXT_CHARS = 300
_RAW_CHARS = 2000
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
    """Judge the pair in one or both orders; raises a JudgeFailure if a verdict cannot be had (with
    both orders' raw text when the judge answered)."""
    orders = [(response, response_b, {VERDICT_A: "response", VERDICT_B: "response_b"})]
    if swap:
        orders.append((response_b, response, {VERDICT_A: "response_b", VERDICT_B: "response"}))
    outcomes = await asyncio.gather(
        *(
            judge.ask(
                model,
                render_pairwise(
                    prompt, first, second, reference, criteria, structured=judge.structured_output
                ),
                _reader({**names, VERDICT_TIE: "tie"}),
                temperature=temperature,
                seed=sample,
                logprobs=False,
                response_format=pairwise_format(),
            )
            for first, second, names in orders
        ),
        return_exceptions=True,
    )
    answers = [o for o in outcomes if isinstance(o, Answer)]
    if len(answers) < len(outcomes):
        raise _failure(outcomes)
    return PairwiseVote(
        model,
        sample,
        answers[0].value,
        answers[1].value if swap else None,
        sum(a.cached for a in answers),
        tuple(a.completion.text for a in answers),
    )


def _reader(verdicts: dict[str, str]) -> Callable[[ChatReply], str]:
    return lambda completion: parse_verdict(completion.text, verdicts)


def _failure(outcomes: list[Any]) -> BaseException:
    """The first failure, carrying what the judge said in each order (its text, or why there is none)."""
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    first = failures[0]
    if not isinstance(first, JudgeFailure):
        return first  # a bug, not a judge failure: the pipeline reports it
    texts = []
    for outcome in outcomes:
        if isinstance(outcome, Answer):
            texts.append(outcome.completion.text[:_RAW_CHARS])
        elif isinstance(outcome, JudgeFailure):
            texts.append(outcome.details.get("raw") or f"({type(outcome).__name__}: {outcome})")
        else:
            texts.append(f"({type(outcome).__name__})")
    first.details["orders"] = ["response first", "response_b first"][: len(outcomes)]
    first.details["texts"] = texts
    return first
