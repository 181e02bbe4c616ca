"""Held-out evaluation: greedy answers to the eval split, scored by the same Assay rewards as training.

Accuracy counts `correct` verdicts, or the reward of graded tasks, over the items scored `ok`; items
that could not be scored are reported apart (`eval_unscored`), never counted as wrong. A run with
tools evaluates with them: greedy multi-turn rollouts verified by their sessions (a rollout whose
session failed is unscored, not wrong).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from assay.rl_client.filter import RewardPipe, reward_items
from assay.rl_client.generate import Backend, Problem, SamplingParams, sample_groups
from assay.rl_client.multiturn import ToolRollouts


class Evaluator:
    def __init__(
        self,
        backend: Backend,
        pipe: Callable[[], RewardPipe],
        problems: Sequence[Problem],
        max_new_tokens: int,
        tools: ToolRollouts | None = None,
    ) -> None:
        self.backend = backend
        self.tools = tools  # multi-turn runs evaluate with their tools (greedy), verified by the sessions
        self.pipe = pipe  # called late: the trainer owns the pipe and is built after the evaluator
        self.problems = list(problems)
        self.params = SamplingParams(0.0, max_new_tokens)
        self.last: dict[str, Any] = {}

    def __call__(self) -> float:
        if not self.problems:
            return 0.0
        sizes = [1] * len(self.problems)
        if self.tools is not None:
            tooled = self.tools.sample_groups(self.problems, sizes, version=-1, temperature=0.0)
            results = [s.result for g in tooled for s in g.samples if s.result is not None]
        else:
            groups = sample_groups(self.backend, self.problems, sizes, self.params, version=-1)
            results = self.pipe().submit(reward_items(groups)).result()
        ok = [r for r in results if r.reward is not None]
        score = sum(
            (1.0 if r.correct else 0.0) if r.correct is not None else float(r.reward or 0.0) for r in ok
        )
        self.last = {"eval_scored": len(ok), "eval_unscored": len(results) - len(ok)}
        return score / len(ok) if ok else 0.0
