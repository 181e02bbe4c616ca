"""Held-out evaluation: greedy answers to the eval split, scored by the same Assay rewards as training.

Accuracy counts `correct` verdicts, or the reward of graded tasks, over the items scored `ok`; items
that could not be scored are reported apart (`eval_unscored`), never counted as wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from assay.rl_client.filter import RewardPipe, reward_items
from assay.rl_client.generate import Backend, Problem, SamplingParams, sample_groups


class Evaluator:
    def __init__(
        self,
        backend: Backend,
        pipe: Callable[[], RewardPipe],
        problems: Sequence[Problem],
        max_new_tokens: int,
    ) -> None:
        self.backend = backend
        self.pipe = pipe  # called late: the trainer owns the pipe and is built after the evaluator
        self.problems = list(problems)
        self.params = SamplingParams(0.0, max_new_tokens)
        self.last: dict[str, Any] = {}

    def __call__(self) -> float:
        if not self.problems:
            return 0.0
        groups = sample_groups(self.backend, self.problems, [1] * len(self.problems), self.params, version=-1)
        results = self.pipe().submit(reward_items(groups)).result()
        ok = [r for r in results if r.reward is not None]
        score = sum(
            (1.0 if r.correct else 0.0) if r.correct is not None else float(r.reward or 0.0) for r in ok
        )
        self.last = {"eval_scored": len(ok), "eval_unscored": len(results) - len(ok)}
        return score / len(ok) if ok else 0.0
