"""Generate: G responses per prompt through a backend, and the records every later stage passes along.

A backend turns prompts into `Completion`s (token ids, text, the behaviour policy's log-probabilities, and
whether the response hit the token limit). Backends: `backends.hf` (a plain PyTorch sampling loop over a
transformers model, CPU tests and demos) and `backends.vllm` (in-process `vllm.LLM`, GPU). This module
does not import torch.

Hints (XRPO): a prompt whose whole group failed can be resampled with the start of the reference answer
appended to the prompt, so the policy sees a correct continuation at least sometimes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from assay.groups import GroupStats
from assay.types import Result


@dataclass(frozen=True)
class Problem:
    """One prompt with its gold answer, as the data set gives it."""

    id: str
    prompt: str  # the text the policy sees (chat template applied, when there is one)
    reference: str
    task: str = "math"
    # Further Assay item fields (tests, db_id, options, the raw prompt for a judge, ...), sent as they are.
    fields: dict[str, Any] = field(default_factory=dict)
    # Rewards combined per item: [(task, weight), ...] scored separately and summed with the weights.
    mix: list[tuple[str, float]] = field(default_factory=list)


@dataclass(frozen=True)
class SamplingParams:
    temperature: float
    max_new_tokens: int
    # Stop strings (multi-turn tool use, issue 26): a row stops once its text contains one, keeping the
    # token that completed it; `Completion.stop` says which.
    stop: tuple[str, ...] = ()


@dataclass
class Completion:
    """What a backend returns for one prompt."""

    prompt_ids: list[int]
    token_ids: list[int]  # the response, including the end token when the model emitted one
    text: str  # the response text without the end token
    logprobs: list[float]  # behaviour log-probability of each response token
    truncated: bool  # stopped by max_new_tokens, not by the end token (nor a stop string)
    stop: str | None = None  # the stop string that ended it, if one did
    # Multi-turn rollouts (rl_client.multiturn): 1 for the policy's own tokens, 0 for tool observations
    # spliced into the response; None: every response token is the policy's.
    action_mask: list[int] | None = None
    turns: int = 1  # generation segments (1 + tool calls answered)
    tool_calls: int = 0
    tool_errors: int = 0  # calls whose status was not ok (tool_error, invalid_call, session_ended)
    kept_calling: bool = False  # the last turn, which could call no tool, wrote a call anyway
    failure: str | None = None  # why the rollout's session failed (the sample is masked), if it did


@dataclass
class Sample:
    """A completion on its way through Filter, Control and the loss."""

    completion: Completion
    version: int  # policy version (optimizer steps taken) that produced it
    result: Result | None = None  # Assay's verdict; None until scored
    reward: float | None = None  # shaped reward; None when the result is not ok
    off_policy: bool = False  # injected from the replay buffer: needs an importance ratio
    weight: float = 1.0  # 0 masks it out of the loss (non-ok result, overlong filtering)
    # given: a tree node's credit from the server, or RoRecomp's over the whole group; None: from the group
    advantage: float | None = None

    @property
    def scored(self) -> bool:
        return self.result is not None and self.result.reward is not None

    @property
    def raw_score(self) -> float | bool | None:
        """Raw correctness (bool) or, for graded tasks, the raw reward; None when not scored ok."""
        if self.result is None or self.result.reward is None:
            return None
        return self.result.correct if self.result.correct is not None else self.result.reward


@dataclass
class Group:
    """The G samples of one prompt."""

    problem: Problem
    prompt: str  # the prompt actually sent (with the hint, if any)
    samples: list[Sample] = field(default_factory=list)
    hint: str = ""  # part of the reference put in the prompt; scored responses start with it
    stats: GroupStats | None = None  # Assay's statistics of exactly these samples (None once changed)
    # Tree rollouts: one row per tree node (its own tokens after its ancestors' as context) with the
    # node's advantage; the loss trains on these instead of `samples` (the leaves), so a shared prefix
    # is credited once (`tree_rollout.py`).
    tree_rows: list[Sample] | None = None
    # S-GRPO serial groups: the token position each sample exits its path at (`serial.py`); None: i.i.d.
    exit_positions: list[int] | None = None

    def raw_scores(self) -> list[float | bool]:
        return [s for s in (x.raw_score for x in self.samples) if s is not None]

    @property
    def all_correct(self) -> bool:
        scores = self.raw_scores()
        return bool(scores) and all(s is True or s == 1.0 for s in scores)

    @property
    def all_wrong(self) -> bool:
        scores = self.raw_scores()
        return bool(scores) and all(s is False or s == 0.0 for s in scores)


class Backend(Protocol):
    """What the trainer needs from an inference engine."""

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """One completion per prompt, in order (repeat a prompt to sample it several times)."""
        ...

    def sync_weights(self, model: Any) -> None:
        """Make the next `generate` use `model`'s current weights."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """RNG state, for exact resume."""
        ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def hint_for(problem: Problem, fraction: float) -> str:
    """The first `fraction` of the reference, at least one character, never all of it."""
    cut = min(max(1, int(len(problem.reference) * fraction)), max(0, len(problem.reference) - 1))
    return problem.reference[:cut]


def sample_groups(
    backend: Backend,
    problems: Sequence[Problem],
    sizes: Sequence[int],
    params: SamplingParams,
    version: int,
    hints: Sequence[str] | None = None,
    template: str = "{prompt}{hint}",
) -> list[Group]:
    """Generate `sizes[i]` samples for `problems[i]` in one backend call, with `hints[i]` if given."""
    hint_list = list(hints) if hints is not None else [""] * len(problems)
    texts = [
        template.format(prompt=p.prompt, hint=h) if h else p.prompt
        for p, h in zip(problems, hint_list, strict=True)
    ]
    flat = [text for text, n in zip(texts, sizes, strict=True) for _ in range(n)]
    completions = iter(backend.generate(flat, params))
    groups = []
    for problem, text, hint, n in zip(problems, texts, hint_list, sizes, strict=True):
        samples = [Sample(next(completions), version) for _ in range(n)]
        groups.append(Group(problem, text, samples, hint=hint))
    return groups


def repeated(prefixes: Sequence[list[int]], counts: Sequence[int]) -> list[list[int]]:
    """Each prefix `counts[i]` times, in order: the rows of a fork that runs every continuation alone."""
    return [list(p) for p, c in zip(prefixes, counts, strict=True) for _ in range(c)]


def grouped(flat: Sequence[Completion], counts: Sequence[int]) -> list[list[Completion]]:
    """`flat` cut into consecutive groups of `counts[i]`: the continuations of each forked prefix."""
    out, at = [], 0
    for count in counts:
        out.append(list(flat[at : at + count]))
        at += count
    return out
