"""RoRecomp (Li et al. 2025, "RoRecomp: Enhancing Reasoning Efficiency via Rollout Response Recomposition
in Reinforcement Learning"): no reward changes; the training batch is recomposed. Priority batches hold
the short-correct and long-incorrect responses of each step's groups, a clear signal for brevity; the
remaining responses go to the replay buffer and come back as compensation batches, which keep the policy
from collapsing onto short answers.

As built here (the selection rule and the schedule are ours): advantages are taken over each whole group
first (GRPO), so a response keeps the advantage its full group gave it; then per group the shortest
`priority_fraction` of the correct responses and the longest `priority_fraction` of the incorrect ones
(at least one of each kind present) form the priority part. Every `compensation_every`-th step adds a
compensation batch from the buffer, off-policy and importance-weighted like any replayed sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from assay.rl_client.generate import Group, Sample
from assay.rl_client.loss import group_advantages


def priority_members(samples: Sequence[Sample], fraction: float) -> list[int]:
    """Indices of the shortest `fraction` of the correct samples and the longest `fraction` of the
    incorrect ones (ceil, so at least one of each kind present); unscored and masked samples are neither."""
    verdicts = [s.result.correct if s.result is not None and s.weight > 0 else None for s in samples]
    correct = [i for i, v in enumerate(verdicts) if v is True]
    wrong = [i for i, v in enumerate(verdicts) if v is False]

    def length(i: int) -> int:
        return len(samples[i].completion.token_ids)

    short = sorted(correct, key=length)[: math.ceil(len(correct) * fraction)]
    long = sorted(wrong, key=lambda i: -length(i))[: math.ceil(len(wrong) * fraction)]
    return sorted(short + long)


def recompose(groups: Sequence[Group], fraction: float, scale_std: bool) -> tuple[list[Group], list[Group]]:
    """(priority, remainder) groups: each sample carries the advantage its whole group gave it."""
    priority: list[Group] = []
    remainder: list[Group] = []
    for group in groups:
        rewards = [s.reward if s.weight > 0 else None for s in group.samples]
        for sample, advantage in zip(group.samples, group_advantages(rewards, scale_std), strict=True):
            sample.advantage = advantage
        chosen = set(priority_members(group.samples, fraction))
        for picked, out in ((True, priority), (False, remainder)):
            part = [s for i, s in enumerate(group.samples) if (i in chosen) == picked]
            if part:
                out.append(Group(group.problem, group.prompt, part, hint=group.hint))
    return priority, remainder
