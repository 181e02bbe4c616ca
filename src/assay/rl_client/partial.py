"""APRIL-style partial rollouts (Active Partial Rollouts in RL, 2025): over-provision, stop the long tail,
resume the stopped responses next step.

A round asked for `count` groups starts `partial_overprovision * count` of them (groups stopped in an
earlier step first), and generates in segments of `partial_segment` tokens. After each segment it checks
how many groups have every response finished (end token or token limit); once `count` have, generation
stops and the unfinished groups are kept for the next step, where they continue from their tokens under
the newer policy. Each token keeps the log-probability and the policy version that sampled it; a
response that spans versions is off-policy (the loss weighs it by its importance ratio against the
behaviour log-probabilities, capped at `loss.max_is_ratio`) and carries its oldest version.

The backend must continue from token ids (`generate_ids`: the hf and vllm_server backends do).
Multi-turn groups (with `train.tools`) are `partial_tools.py`'s: there an unfinished rollout keeps its
session.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from assay.rl_client.config import TrainConfig
from assay.rl_client.generate import Completion, Group, Problem, Sample, SamplingParams


@dataclass
class Draft:
    """One response being generated: its tokens so far, with the version that sampled each."""

    prompt_ids: list[int]
    token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    done: bool = False
    truncated: bool = False


@dataclass
class DraftGroup:
    problem: Problem
    prompt: str
    drafts: list[Draft]

    @property
    def done(self) -> bool:
        return all(d.done for d in self.drafts)


class PartialRollouts:
    def __init__(self, backend: Any, cfg: TrainConfig) -> None:
        if not hasattr(backend, "generate_ids"):
            raise ValueError(
                "partial rollouts need a backend that continues from token ids (hf, vllm_server)"
            )
        self.backend = backend
        self.cfg = cfg
        self.pending: list[DraftGroup] = []  # stopped groups, resumed first next time
        self.resumed = 0  # groups carried over and finished in a later step (for the step record)

    def start_count(self, count: int) -> int:
        """New problems to draw for a round asked for `count` groups."""
        wanted = math.ceil(count * self.cfg.control.partial_overprovision)
        return max(0, wanted - len(self.pending))

    def run(self, problems: Sequence[Problem], sizes: Sequence[int], count: int, version: int) -> list[Group]:
        """Finished groups (at least `count` when generation allows) as unscored `Group`s."""
        eos = self.backend.tokenizer.eos_token_id
        active = self.pending + [
            DraftGroup(p, p.prompt, [Draft(list(self.backend.tokenizer.encode(p.prompt))) for _ in range(n)])
            for p, n in zip(problems, sizes, strict=True)
        ]
        carried = {id(g) for g in self.pending}
        limit = self.cfg.generate.max_new_tokens
        segment = self.cfg.control.partial_segment or max(1, limit // 4)
        while sum(g.done for g in active) < count and any(not g.done for g in active):
            todo = [d for g in active for d in g.drafts if not d.done]
            params = SamplingParams(self.cfg.generate.temperature, min(segment, limit))
            pieces = self.backend.generate_ids([d.prompt_ids + d.token_ids for d in todo], params)
            for draft, piece in zip(todo, pieces, strict=True):
                _extend(draft, piece, version, limit, eos)
        finished = [g for g in active if g.done]
        self.pending = [g for g in active if not g.done]
        self.resumed = sum(id(g) in carried for g in finished)
        return [self._group(g) for g in finished]

    def _group(self, group: DraftGroup) -> Group:
        samples = []
        for draft in group.drafts:
            body = draft.token_ids[:-1] if draft.token_ids and not draft.truncated else draft.token_ids
            completion = Completion(
                prompt_ids=draft.prompt_ids,
                token_ids=list(draft.token_ids),
                text=self.backend.tokenizer.decode(body),
                logprobs=list(draft.logprobs),
                truncated=draft.truncated,
            )
            versions = draft.versions or [0]
            samples.append(Sample(completion, min(versions), off_policy=len(set(versions)) > 1))
        return Group(group.problem, group.prompt, samples)

    def close(self) -> None:
        """Nothing to release: a draft is only tokens (multi-turn drafts hold sessions: partial_tools)."""

    def state_dict(self) -> dict[str, Any]:
        return {"pending": [{"problem": asdict(g.problem), "prompt": g.prompt,
                             "drafts": [asdict(d) for d in g.drafts]} for g in self.pending]}  # fmt: skip

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pending = [
            DraftGroup(Problem(**g["problem"]), g["prompt"], [Draft(**d) for d in g["drafts"]])
            for g in state["pending"]
        ]


def _extend(draft: Draft, piece: Completion, version: int, limit: int, eos: int) -> None:
    """Append a segment; a response ends at the end token or at the token limit."""
    room = limit - len(draft.token_ids)
    tokens, logprobs = piece.token_ids[:room], piece.logprobs[:room]
    draft.token_ids += tokens
    draft.logprobs += logprobs
    draft.versions += [version] * len(tokens)
    if tokens and tokens[-1] == eos:
        draft.done = True
    elif len(draft.token_ids) >= limit or not tokens:
        draft.done = draft.truncated = True
