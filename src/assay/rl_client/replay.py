"""Replay: scored groups kept with the policy version that produced them.

Two uses, both off-policy and therefore weighted by an importance ratio against the current policy in
the loss (the samples carry their behaviour log-probabilities):
- AR3PO-style injection: an all-wrong group gets one cached correct response to the same prompt, so it
  has a non-zero advantage instead of being dropped.
- Topping up a batch that dynamic sampling could not fill within its rounds.
- RoRecomp's compensation batches (`recompose.py`): the responses a priority batch left out, each with
  the advantage its whole group gave it.
Anything older than `max_staleness` policy versions is never used: its ratios would be far from 1 and
mostly clipped.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from assay.groups import GroupResult
from assay.rl_client.config import ReplayConfig
from assay.rl_client.control import informative
from assay.rl_client.generate import Completion, Group, Problem, Sample
from assay.types import Result


class ReplayBuffer:
    def __init__(self, cfg: ReplayConfig) -> None:
        self.cfg = cfg
        self.groups: deque[Group] = deque(maxlen=cfg.capacity or None)
        self.correct: dict[tuple[str, str], Sample] = {}  # (problem id, prompt) -> latest correct
        self.remainder: deque[Group] = deque(maxlen=cfg.capacity or None)  # RoRecomp's compensation

    def _fresh(self, version: int, produced: int) -> bool:
        return version - produced <= self.cfg.max_staleness

    def _evict_stale(self, version: int) -> None:
        self.groups = deque(
            (g for g in self.groups if self._fresh(version, min(s.version for s in g.samples))),
            maxlen=self.groups.maxlen,
        )
        self.correct = {k: s for k, s in self.correct.items() if self._fresh(version, s.version)}
        self.remainder = deque(
            (g for g in self.remainder if self._fresh(version, min(s.version for s in g.samples))),
            maxlen=self.remainder.maxlen,
        )

    def add(self, groups: Sequence[Group], version: int) -> None:
        """Remember informative groups, and the latest correct response of every prompt."""
        for group in groups:
            for sample in group.samples:
                if sample.result is not None and sample.result.correct is True and sample.weight > 0:
                    self.correct[(group.problem.id, group.prompt)] = copy.deepcopy(sample)
            if self.cfg.capacity and informative(group):
                self.groups.append(copy.deepcopy(group))
        self._evict_stale(version)

    def inject(self, group: Group, version: int) -> bool:
        """Replace the last sample of an all-wrong group with a cached correct one (AR3PO)."""
        if not group.all_wrong:
            return False
        cached = self.correct.get((group.problem.id, group.prompt))
        if cached is None or not self._fresh(version, cached.version):
            return False
        replayed = copy.deepcopy(cached)
        replayed.off_policy = True
        group.samples[-1] = replayed
        group.stats = None  # the server scored the group without this sample
        return True

    def take(self, count: int, version: int) -> list[Group]:
        """Up to `count` of the newest fresh groups, removed from the buffer and marked off-policy."""
        self._evict_stale(version)  # rebinds the deques: read them after
        return _pop_newest(self.groups, count, version)

    def keep_remainder(self, groups: Sequence[Group]) -> None:
        """Keep what a RoRecomp priority batch left out (its samples carry their advantages)."""
        self.remainder.extend(copy.deepcopy(g) for g in groups if g.samples)

    def take_remainder(self, count: int, version: int) -> list[Group]:
        """A compensation batch: up to `count` of the newest fresh remainder groups, marked off-policy."""
        self._evict_stale(version)
        return _pop_newest(self.remainder, count, version)

    # -- checkpoint --------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "groups": [_group_json(g) for g in self.groups],
            "correct": [[k[0], k[1], _sample_json(s)] for k, s in self.correct.items()],
            "remainder": [_group_json(g) for g in self.remainder],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.groups = deque((_group_from(g) for g in state["groups"]), maxlen=self.groups.maxlen)
        self.correct = {(pid, prompt): _sample_from(s) for pid, prompt, s in state["correct"]}
        remainder = state.get("remainder", [])  # absent from checkpoints written before RoRecomp
        self.remainder = deque((_group_from(g) for g in remainder), maxlen=self.remainder.maxlen)


def _sample_json(sample: Sample) -> dict[str, Any]:
    return {
        "completion": asdict(sample.completion),
        "version": sample.version,
        "result": sample.result.model_dump(mode="json") if sample.result is not None else None,
        "reward": sample.reward,
        "off_policy": sample.off_policy,
        "weight": sample.weight,
        "advantage": sample.advantage,
    }


def _sample_from(data: dict[str, Any]) -> Sample:
    raw = data["result"]
    # A result from the group path is a GroupResult (it carries `shaped_reward`): restore it as one.
    kind = GroupResult if isinstance(raw, dict) and "shaped_reward" in raw else Result
    result = kind.model_validate(raw) if raw is not None else None
    return Sample(
        Completion(**data["completion"]),
        data["version"],
        result,
        data["reward"],
        data["off_policy"],
        data["weight"],
        data.get("advantage"),
    )


def _group_json(group: Group) -> dict[str, Any]:
    return {
        "problem": asdict(group.problem),
        "prompt": group.prompt,
        "hint": group.hint,
        "samples": [_sample_json(s) for s in group.samples],
    }


def _group_from(data: dict[str, Any]) -> Group:
    samples = [_sample_from(s) for s in data["samples"]]
    return Group(Problem(**data["problem"]), data["prompt"], samples, data["hint"])


def _pop_newest(pool: deque[Group], count: int, version: int) -> list[Group]:
    """Up to `count` groups from the right of `pool`, removed, their samples marked off-policy."""
    taken: list[Group] = []
    while pool and len(taken) < count:
        group = pool.pop()
        for sample in group.samples:
            sample.off_policy = sample.off_policy or sample.version != version
        taken.append(group)
    return taken
