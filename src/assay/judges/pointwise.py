"""Pointwise grading: one response against a rubric (and a reference answer when given) -> a score.

The judge writes feedback and ends with `[RESULT] N` (prompts.py), or, where the backend constrains its
output (structured.py), answers `{"score": N}`. The score is the G-Eval expectation
over the score tokens' probabilities when the backend returns logprobs, else the parsed score
(parsing.py). A text without a parseable score raises `JudgeUnparseable` (status `error`, raw text kept).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.judges.judge import Judge
from assay.judges.parsing import expected, parse_score, weighted_score
from assay.judges.prompts import Rubric, render_pointwise
from assay.judges.structured import score_format

_TEXT_CHARS = 500


@dataclass(frozen=True)
class PointwiseVote:
    """One judge's (or one sample's) grade."""

    model: str
    sample: int | None
    score: float  # on the rubric's scale (expected score when weighted)
    reward: float  # the score mapped to [0, 1]
    text_score: float  # the score as written in the text
    probs: dict[int, float] | None  # the score distribution, when logprobs were used
    cached: bool
    text: str

    def details(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "sample": self.sample,
            "score": round(self.score, 6),
            "text_score": self.text_score,
            "source": "logprobs" if self.probs is not None else "text",
            "probs": None if self.probs is None else {str(k): round(v, 6) for k, v in self.probs.items()},
            "cached": self.cached,
            "text": self.text[:_TEXT_CHARS],
        }


async def grade(
    judge: Judge,
    model: str,
    *,
    prompt: str,
    response: str,
    rubric: Rubric,
    reference: str | None,
    use_logprobs: bool,
    temperature: float,
    sample: int | None = None,
) -> PointwiseVote:
    """Ask one judge model for a grade; raises a JudgeFailure if it cannot be had."""
    rendered = render_pointwise(prompt, response, rubric, reference, structured=judge.structured_output)
    answer = await judge.ask(
        model,
        rendered,
        lambda c: parse_score(c.text, rubric.low, rubric.high),
        temperature=temperature,
        seed=sample,
        logprobs=use_logprobs,
        response_format=score_format(rubric.low, rubric.high),
    )
    text, parsed = answer.completion.text, answer.value
    probs = weighted_score(answer.completion, parsed, rubric.low, rubric.high) if use_logprobs else None
    score = expected(probs) if probs is not None else parsed.value
    reward = (score - rubric.low) / (rubric.high - rubric.low)
    return PointwiseVote(model, sample, score, reward, parsed.value, probs, answer.cached, text)
