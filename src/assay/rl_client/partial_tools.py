"""APRIL partial rollouts on multi-turn groups (issue 26): an unfinished rollout keeps its session.

As `partial.py` for single-turn groups: a round asked for `count` groups starts
`partial_overprovision * count` of them (groups stopped in an earlier step first) and stops once `count`
have every rollout finished; the rest are resumed next step under the newer policy. What differs:

- The segment is a turn (generate until a call closes, the end token or `max_new_tokens`, then the
  batch step of the calls): a turn is never cut, so `partial_segment` is not used.
- An unfinished rollout keeps its session open between steps, with its interpreter's state, and goes
  on from its tokens. Its turns may span policy versions: the sample is then off-policy (the loss weighs
  it by its importance ratio, capped at `loss.max_is_ratio`) and carries its oldest version.
- A group is verified when all its rollouts are done; their sessions are deleted then.
- A session that is gone when its rollout resumes (expired past its TTL, deleted, the server restarted)
  leaves that rollout without a verdict: result `error`, reward None, loss weight 0. Never a 0.
- `close()` (the trainer's) deletes the sessions of unfinished rollouts: no session outlives the run.
  A checkpoint carries unfinished rollouts with their session ids; resumed in another process they go
  on only where their sessions still exist, and are masked as above where they do not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from assay.rl_client.config import TrainConfig
from assay.rl_client.generate import Group, Problem
from assay.rl_client.multiturn import ToolRollout, ToolRollouts


@dataclass
class ToolGroup:
    problem: Problem
    prompt: str
    rollouts: list[ToolRollout]

    @property
    def done(self) -> bool:
        return all(r.done for r in self.rollouts)


class PartialToolRollouts:
    def __init__(self, tools: ToolRollouts, cfg: TrainConfig) -> None:
        self.tools = tools
        self.cfg = cfg
        self.pending: list[ToolGroup] = []  # stopped groups, sessions open, resumed first next time
        self.resumed = 0  # groups carried over and finished in a later step (for the step record)

    def start_count(self, count: int) -> int:
        """New problems to draw for a round asked for `count` groups."""
        wanted = math.ceil(count * self.cfg.control.partial_overprovision)
        return max(0, wanted - len(self.pending))

    def run(self, problems: Sequence[Problem], sizes: Sequence[int], count: int, version: int) -> list[Group]:
        """Finished groups (at least `count` when generation allows), verified through their sessions."""
        fresh = [
            ToolGroup(p, p.prompt, [self.tools.new_rollout(p, p.prompt) for _ in range(n)])
            for p, n in zip(problems, sizes, strict=True)
        ]
        active = self.pending + fresh
        carried = {id(g) for g in self.pending}
        self.tools.open([r for g in fresh for r in g.rollouts])
        for _ in range(self.cfg.tools.max_turns):  # a pass is a turn of each: none has more to take
            if sum(g.done for g in active) >= count or all(g.done for g in active):
                break
            todo = [r for g in active for r in g.rollouts if not r.done]
            self.tools.turn(todo, self.tools.temperature, version)
        finished = [g for g in active if g.done]
        self.pending = [g for g in active if not g.done]
        self.resumed = sum(id(g) in carried for g in finished)
        rollouts = [r for g in finished for r in g.rollouts]
        try:
            results = iter(self.tools.verify(rollouts))
        finally:
            self.tools.close(rollouts)
        return [
            self.tools.group(g.problem, g.prompt, [(r, next(results)) for r in g.rollouts]) for g in finished
        ]

    def close(self) -> None:
        """Delete the sessions of the unfinished rollouts (the end of the run)."""
        self.tools.close([r for g in self.pending for r in g.rollouts])

    def state_dict(self) -> dict[str, Any]:
        return {
            "pending": [
                {
                    "problem": asdict(g.problem),
                    "prompt": g.prompt,
                    "rollouts": [asdict(r) for r in g.rollouts],
                }
                for g in self.pending
            ]
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pending = [
            ToolGroup(
                Problem(**g["problem"]),
                g["prompt"],
                [
                    ToolRollout(**{**r, "problem": Problem(**r["problem"]), "pending": None})
                    for r in g["rollouts"]
                ],
            )
            for g in state["pending"]
        ]
