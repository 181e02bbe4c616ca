"""One generation round: Generate -> Filter -> (hint, replay injection) -> shaped rewards.

Prompts are generated in chunks; each chunk's reward request goes out on the reward pipe at once, so
Assay scores chunk k while the backend generates chunk k+1. Results are attached in order, so the
outcome does not depend on timing (exact resume relies on that). A backend that schedules groups itself
(`vllm_server` with Seer-style scheduling on) takes the whole round at once and the rewards are requested
per sample as each one finishes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from assay.groups import GroupOutcome, group_stats
from assay.rl_client.adapt_think import AdaptThinkRollouts
from assay.rl_client.config import TrainConfig
from assay.rl_client.control import PromptSampler, shape
from assay.rl_client.filter import RewardPipe, apply_outcomes, reward_item
from assay.rl_client.generate import (
    Backend,
    Completion,
    Group,
    Problem,
    Sample,
    SamplingParams,
    hint_for,
    sample_groups,
)
from assay.rl_client.multiturn import ToolRollouts
from assay.rl_client.partial import PartialRollouts
from assay.rl_client.partial_tools import PartialToolRollouts
from assay.rl_client.replay import ReplayBuffer
from assay.rl_client.serial import SerialRollouts
from assay.rl_client.tree_rollout import TreeRollouts
from assay.types import Result


@dataclass
class RoundStats:
    """Counters over every round of one step."""

    groups: int = 0  # policy groups generated (before hints and injection)
    all_correct: int = 0
    all_wrong: int = 0
    scored: int = 0  # samples scored ok, of those groups
    correct: int = 0
    hinted: int = 0
    injected: int = 0
    resumed: int = 0  # partial rollouts: groups finished this step that an earlier step started
    reward_wait_s: float = 0.0  # time the trainer sat waiting for rewards (not hidden by generation)
    generated_tokens: int = 0  # response tokens the policy generated (a tree's shared prefix once)


class Rollout:
    def __init__(
        self,
        backend: Backend,
        pipe: RewardPipe,
        sampler: PromptSampler,
        replay: ReplayBuffer,
        cfg: TrainConfig,
        tools: ToolRollouts | None = None,
    ) -> None:
        self.backend = backend
        self.tools = tools  # multi-turn tool use: rollouts verified through their Assay sessions
        self.pipe = pipe
        self.sampler = sampler
        self.replay = replay
        self.cfg = cfg
        self.params = SamplingParams(cfg.generate.temperature, cfg.generate.max_new_tokens)
        self.stats = RoundStats()
        self.partial: PartialRollouts | PartialToolRollouts | None = None
        self.trees = TreeRollouts(backend, pipe, cfg) if cfg.rollout == "tree" else None
        self.serial = SerialRollouts(backend, cfg) if cfg.shaping.method == "s_grpo" else None
        self.adapt = AdaptThinkRollouts(backend, cfg) if cfg.shaping.method == "adapt_think" else None
        if cfg.control.partial_rollouts:  # with tools, unfinished rollouts keep their sessions
            self.partial = (
                PartialToolRollouts(tools, cfg) if tools is not None else PartialRollouts(backend, cfg)
            )

    def round(self, count: int, version: int) -> list[Group]:
        """`count` scored groups for policy `version`, ready for Control."""
        if self.partial is not None:
            problems = self.sampler.draw(self.partial.start_count(count), version)
            sizes = [self.sampler.size_for(p) for p in problems]
            finished = self.partial.run(problems, sizes, count, version)
            groups = finished if self.tools is not None else self._score(finished)  # tools: verified
            self.stats.resumed += self.partial.resumed
        elif self.trees is not None:  # tree rollouts: generated, scored and credited as trees
            before, waited = self.trees.generated, self.trees.reward_wait_s
            groups = self.trees.sample_groups(self.sampler.draw(count, version), version)
            self.stats.generated_tokens += self.trees.generated - before
            self.stats.reward_wait_s += self.trees.reward_wait_s - waited
        elif self.serial is not None:  # S-GRPO: one path and its exits per prompt
            before = self.serial.generated
            groups = self._score(self.serial.sample_groups(self.sampler.draw(count, version), version))
            self.stats.generated_tokens += self.serial.generated - before
        elif self.adapt is not None:  # AdaptThink: part of each group forced to open with </think>
            before, problems = self.adapt.generated, self.sampler.draw(count, version)
            sizes = [self.sampler.size_for(p) for p in problems]
            groups = self._score(self.adapt.sample_groups(problems, sizes, version))
            self.stats.generated_tokens += self.adapt.generated - before
        else:
            problems = self.sampler.draw(count, version)
            sizes = [self.sampler.size_for(p) for p in problems]
            groups = self.generate_scored(problems, sizes, version)
            self.stats.generated_tokens += sum(len(s.completion.token_ids) for g in groups for s in g.samples)
        self.sampler.observe(groups, version)
        self.stats.groups += len(groups)
        self.stats.all_correct += sum(g.all_correct for g in groups)
        self.stats.all_wrong += sum(g.all_wrong for g in groups)
        own = [s.result for g in groups for s in g.samples if s.scored and s.result is not None]
        self.stats.scored += len(own)
        self.stats.correct += sum(r.correct is True for r in own)
        # A cached correct answer is free; resampling with a hint costs a generation: inject first.
        if self.cfg.replay.inject_correct:
            self.stats.injected += sum(self.replay.inject(g, version) for g in groups)
        if self.cfg.generate.hint_fraction > 0:
            groups = self._with_hints(groups, version)
        shape(groups, self.cfg.control, self.cfg.generate.max_new_tokens, self.cfg.shaping.server)
        return groups

    def generate_scored(
        self,
        problems: Sequence[Problem],
        sizes: Sequence[int],
        version: int,
        hints: Sequence[str] | None = None,
    ) -> list[Group]:
        """Generate chunk by chunk; each chunk is scored while the next one generates. With tools, each
        chunk's rollouts are scored by their sessions' verify as they finish."""
        step = self.cfg.generate.chunk_prompts
        if self.tools is not None:
            template = self.cfg.generate.hint_template
            return [
                group
                for start in range(0, len(problems), step)
                for group in self.tools.sample_groups(
                    problems[start : start + step],
                    sizes[start : start + step],
                    version,
                    hints[start : start + step] if hints is not None else None,
                    template,
                )
            ]
        if getattr(self.backend, "schedules_groups", False):
            return self._streamed(problems, sizes, version, hints)
        pending: list[tuple[list[Group], Future[list[GroupOutcome]]]] = []
        for start in range(0, len(problems), step):
            chunk_hints = hints[start : start + step] if hints is not None else None
            groups = sample_groups(
                self.backend,
                problems[start : start + step],
                sizes[start : start + step],
                self.params,
                version,
                chunk_hints,
                self.cfg.generate.hint_template,
            )
            pending.append((groups, self.pipe.submit_groups(groups, self.cfg.shaping.wire())))
        scored: list[Group] = []
        for groups, future in pending:
            waited = time.perf_counter()
            outcomes = future.result()
            self.stats.reward_wait_s += time.perf_counter() - waited
            apply_outcomes(groups, outcomes)
            scored.extend(groups)
        return scored

    def _streamed(
        self,
        problems: Sequence[Problem],
        sizes: Sequence[int],
        version: int,
        hints: Sequence[str] | None,
    ) -> list[Group]:
        """Seer-style rounds (`assay.rl_client.seer`): the backend orders the whole round's requests
        across groups, and each sample's reward is requested the moment it finishes (one item per call),
        so Assay scores while the rest generate. Statistics per group come from `assay.groups`, as for
        a flat source; results are attached in sample order, whatever order they arrived in."""
        hint_list = list(hints) if hints is not None else [""] * len(problems)
        template = self.cfg.generate.hint_template
        groups = [
            Group(p, template.format(prompt=p.prompt, hint=h) if h else p.prompt, hint=h)
            for p, h in zip(problems, hint_list, strict=True)
        ]
        owner = [(g, m) for g, n in enumerate(sizes) for m in range(n)]
        futures: dict[int, Future[list[Result]]] = {}

        def done(index: int, completion: Completion) -> None:
            g, m = owner[index]
            futures[index] = self.pipe.submit([reward_item(groups[g], m, Sample(completion, version))])

        streaming: Any = self.backend
        texts = [g.prompt for g in groups]
        completions = iter(streaming.generate_groups(texts, sizes, self.params, done))
        for group, n in zip(groups, sizes, strict=True):
            group.samples = [Sample(next(completions), version) for _ in range(n)]
        waited = time.perf_counter()
        results = [futures[i].result()[0] for i in range(len(owner))]
        self.stats.reward_wait_s += time.perf_counter() - waited
        outcomes, start = [], 0
        for group in groups:
            part = results[start : start + len(group.samples)]
            start += len(part)
            responses = [group.hint + s.completion.text for s in group.samples]
            outcomes.append(
                GroupOutcome(id=group.problem.id, results=part, stats=group_stats(part, responses))
            )
        apply_outcomes(groups, outcomes)
        return groups

    def _score(self, groups: list[Group]) -> list[Group]:
        if groups:
            waited = time.perf_counter()
            outcomes = self.pipe.submit_groups(groups, self.cfg.shaping.wire()).result()
            self.stats.reward_wait_s += time.perf_counter() - waited
            apply_outcomes(groups, outcomes)
        return groups

    def _with_hints(self, groups: list[Group], version: int) -> list[Group]:
        """XRPO: resample every all-wrong group once with part of the reference in its prompt."""
        failed = [i for i, g in enumerate(groups) if g.all_wrong]
        problems = [groups[i].problem for i in failed]
        hints = [hint_for(p, self.cfg.generate.hint_fraction) for p in problems]
        usable = [(i, p, h) for i, p, h in zip(failed, problems, hints, strict=True) if h]
        if not usable:
            return groups
        retried = self.generate_scored(
            [p for _, p, _ in usable],
            [len(groups[i].samples) for i, _, _ in usable],
            version,
            [h for _, _, h in usable],
        )
        out = list(groups)
        for (i, _, _), group in zip(usable, retried, strict=True):
            out[i] = group
        self.stats.hinted += len(usable)
        return out
