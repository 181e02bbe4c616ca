"""Stand-ins for the rl_client tests: groups built from verdicts, a scripted backend, a local reward."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.rl_client.generate import Completion, Group, Problem, Sample, SamplingParams
from assay.types import Result


def completion(text: str = "1", tokens: int = 2, truncated: bool = False) -> Completion:
    return Completion([1, 5], list(range(3, 3 + tokens)), text, [-0.5] * tokens, truncated)


def group(verdicts: Sequence[bool | float | None], pid: str = "p", version: int = 0) -> Group:
    """A scored group: True/False are verifiable verdicts, floats graded rewards, None an error."""
    samples = []
    for v in verdicts:
        if v is None:
            result = Result.error("worker crashed")
        elif isinstance(v, bool):
            result = Result.verdict(v)
        else:
            result = Result.graded(v)
        sample = Sample(completion(), version, result, result.reward, weight=1.0 if v is not None else 0.0)
        samples.append(sample)
    return Group(Problem(pid, f"{pid}?", "4"), f"{pid}?", samples)


class StatelessBackend:
    """The backend protocol's weight and checkpoint methods for a fake that has no weights or state."""

    def sync_weights(self, model: Any) -> None:
        return None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None


class ScriptedBackend:
    """Answers every prompt with the next text of a script (cycled)."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        self.calls = 0

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        out = []
        for _ in prompts:
            out.append(completion(self.texts[self.calls % len(self.texts)]))
            self.calls += 1
        return out

    def sync_weights(self, model: Any) -> None:
        return None

    def state_dict(self) -> dict[str, Any]:
        return {"calls": self.calls}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls = state["calls"]


class ExactMatchRewards:
    """A deterministic local reward source: exact string match, no server."""

    def __init__(self) -> None:
        self.requests = 0

    async def ascore(self, items: list[dict[str, Any]]) -> list[Result]:
        self.requests += 1
        return [Result.verdict(i["response"] == i["reference"]) for i in items]

    async def aclose(self) -> None:
        return None


def one_round(backend: Any, source: Any, cfg: Any, problems: Sequence[Problem]) -> tuple[Any, list[Group]]:
    """The rollout and the groups of its one round (`Rollout.round(1)`) of `backend` scored by `source`,
    sampling `problems` in a fixed order; the reward pipe is closed after it."""
    from assay.rl_client.control import PromptSampler
    from assay.rl_client.filter import RewardPipe
    from assay.rl_client.replay import ReplayBuffer
    from assay.rl_client.rollout import Rollout

    pipe = RewardPipe(source)
    sampler = PromptSampler(list(problems), cfg.control, cfg.generate.group_size, seed=0)
    rollout = Rollout(backend, pipe, sampler, ReplayBuffer(cfg.replay), cfg)
    try:
        return rollout, rollout.round(1, version=0)
    finally:
        pipe.close()
