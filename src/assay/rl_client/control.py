"""Control: which groups and samples reach the loss, and how many samples each prompt gets.

- DAPO dynamic sampling: a group whose raw correctness is all equal has zero advantage everywhere and
  only dilutes the batch; drop it and sample more prompts, up to `max_rounds` rounds, then cap the batch.
  Equality is tested exactly on raw correctness, never on a shaped reward (float noise and length
  penalties make constant groups look informative).
- DAPO overlong filtering (truncated responses get zero loss weight) and soft overlong punishment
  (a linear penalty over the last `overlong_cache` tokens before the limit).
- GRESO-style prompt selection: prompts that were all-correct recently are skipped with high probability;
  prompts near 50% success get extra samples (`PromptSampler`).

Both read Assay's group statistics (`Group.stats`, from POST /v1/groups: `all_equal`, `learning_value`)
when the group still holds exactly the samples Assay scored, and compute them from the samples otherwise
(a replayed sample was injected).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from assay.rl_client import checkpoints
from assay.rl_client.config import ControlConfig
from assay.rl_client.generate import Group, Problem
from assay.types import Result

# learning_value = 4p(1-p) >= 0.64 exactly when the pass rate p is within 0.2..0.8
_UNCERTAIN_VALUE = 0.64


def informative(group: Group) -> bool:
    """True when the group's raw scores are not all equal (exact comparison), over scored samples:
    Assay's `all_equal` when it scored these very samples, else computed here."""
    if group.stats is not None:
        return not group.stats.all_equal
    return len(set(group.raw_scores())) > 1


def soft_overlong_penalty(length: int, max_len: int, cache: int, factor: float = 1.0) -> float:
    """DAPO eq. 13: 0 up to `max_len - cache`, then linear down to -factor at `max_len`, -factor past it."""
    start = max_len - cache
    if length <= start:
        return 0.0
    if length > max_len or cache == 0:
        return -factor
    return factor * (start - length) / cache


def base_reward(result: Result | None, shaped: bool) -> float | None:
    """The reward advantages start from: the server's `shaped_reward` when the run shapes (issue 40),
    else the raw reward; None when there is none (the sample is masked, never scored 0)."""
    if result is None or result.reward is None:
        return None
    if not shaped:
        return float(result.reward)
    value = getattr(result, "shaped_reward", None)
    return None if value is None else float(value)


def shape(groups: Sequence[Group], cfg: ControlConfig, max_new_tokens: int, shaped: bool = False) -> None:
    """Set shaped rewards from raw ones (or from the server's `shaped_reward` when `shaped`; idempotent),
    with overlong filtering and the soft penalty. A scored sample without a shaped reward is masked."""
    for group in groups:
        for sample in group.samples:
            reward = base_reward(sample.result, shaped)
            if reward is None:
                if sample.scored:  # ok verdict, but the server could not shape its group
                    sample.reward, sample.weight = None, 0.0
                continue
            sample.reward = reward
            if cfg.overlong_filter and sample.completion.truncated:
                sample.weight = 0.0
            if cfg.overlong_penalty:
                length = len(sample.completion.token_ids)
                sample.reward += soft_overlong_penalty(
                    length, max_new_tokens, cfg.overlong_cache, cfg.overlong_factor
                )


@dataclass
class Fill:
    """The outcome of filling one step's batch."""

    kept: list[Group]
    seen: list[Group]  # every group generated this step, kept or not (for statistics)
    rounds: int


def fill_batch(next_round: Callable[[int], list[Group]], target: int, cfg: ControlConfig) -> Fill:
    """Ask `next_round(k)` for k more scored groups until `target` informative ones are kept.

    Without dynamic sampling one round is taken as it comes. The batch is capped at `target`.
    """
    kept: list[Group] = []
    seen: list[Group] = []
    rounds = 0
    max_rounds = cfg.max_rounds if cfg.dynamic_sampling else 1
    while len(kept) < target and rounds < max_rounds:
        missing = target - len(kept)
        ask = missing if rounds == 0 else math.ceil(missing * cfg.oversample)
        groups = next_round(ask)
        rounds += 1
        seen.extend(groups)
        kept.extend(g for g in groups if informative(g) or not cfg.dynamic_sampling)
    return Fill(kept[:target], seen, rounds)


@dataclass
class _History:
    pass_rate: float
    solved_at: int | None  # last step at which the whole group was correct
    value: float | None = None  # Assay's learning_value of the last group (None: not reported)


@dataclass
class PromptSampler:
    """Draws problems for each round (with replacement across steps, without within a draw)."""

    problems: Sequence[Problem]
    cfg: ControlConfig
    group_size: int
    seed: int = 0
    rng: random.Random = field(init=False)
    history: dict[str, _History] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.problems:
            raise ValueError("no training problems")
        self.rng = random.Random(self.seed)

    def draw(self, count: int, step: int) -> list[Problem]:
        """`count` problems; recently solved ones are skipped with `skip_probability` (GRESO)."""
        chosen: list[Problem] = []
        for _ in range(count * 20):  # bounded: a pool of only solved prompts still yields a batch
            if len(chosen) == count:
                break
            problem = self.problems[self.rng.randrange(len(self.problems))]
            # The coin is tossed only for a solved prompt, so turning skipping off changes no draw.
            solved = self.cfg.skip_solved and self._recently_solved(problem, step)
            if solved and self.rng.random() < self.cfg.skip_probability:
                continue
            chosen.append(problem)
        while len(chosen) < count:
            chosen.append(self.problems[self.rng.randrange(len(self.problems))])
        return chosen

    def _recently_solved(self, problem: Problem, step: int) -> bool:
        seen = self.history.get(problem.id)
        return (
            seen is not None and seen.solved_at is not None and step - seen.solved_at < self.cfg.skip_window
        )

    def size_for(self, problem: Problem) -> int:
        """More samples where the outcome is most uncertain (last pass rate within 0.2..0.8)."""
        seen = self.history.get(problem.id)
        if not self.cfg.adaptive_group or seen is None:
            return self.group_size
        uncertain = seen.value >= _UNCERTAIN_VALUE if seen.value is not None else 0.2 <= seen.pass_rate <= 0.8
        return self.group_size + self.cfg.adaptive_extra if uncertain else self.group_size

    def observe(self, groups: Sequence[Group], step: int) -> None:
        for group in groups:
            scores = group.raw_scores()
            if not scores:
                continue
            rate = sum(float(s) for s in scores) / len(scores)
            value = None
            all_correct = group.all_correct
            if group.stats is not None:  # GRESO reads Assay's verdict on the group
                value = group.stats.learning_value
                all_correct = group.stats.all_equal and 0 < group.stats.n_correct == group.stats.n_scored
            old = self.history.get(group.problem.id)
            solved = step if all_correct else (old.solved_at if old else None)
            self.history[group.problem.id] = _History(rate, solved, value)

    def state_dict(self) -> dict[str, Any]:
        return {
            "rng": checkpoints.random_state(self.rng),
            "history": {k: [h.pass_rate, h.solved_at, h.value] for k, h in self.history.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        checkpoints.set_random_state(self.rng, state["rng"])
        self.history = {k: _History(*v) for k, v in state["history"].items()}
