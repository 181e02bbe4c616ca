"""STaR (Zelikman et al., 2022, "Self-Taught Reasoner") as `algorithm: star`.

Each iteration: sample `samples` responses to `prompts` training prompts; keep the distinct responses
Assay marks correct; for prompts with none, rationalise: sample again with the answer given as a hint
(`hint_template`) and keep correct responses, but train on them under the original prompt (the hint is
scaffolding, not something the policy will see); then fine-tune on the kept set (from the initial weights
when `restart`, as the paper does, else continuing) and evaluate greedily. The rewards come from the same
Assay service as GRPO's, so any verifiable task works; graded tasks count a reward of 1 as correct.

`StarRun` is an algorithm the driver runs (driver.py, the loop GRPO uses too), one iteration a step, with
a checkpoint after every iteration (checkpoints.py: the model, optimizer, prompt RNG, backend RNG and
log), so a resumed run ends as an uninterrupted one would.
"""

from __future__ import annotations

import copy
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from assay.rl_client import checkpoints
from assay.rl_client.filter import RewardPipe, apply_results, reward_items
from assay.rl_client.generate import Group, Problem, SamplingParams, sample_groups
from assay.rl_client.observe import StepLog
from assay.rl_client.runs.evaluate import Evaluator
from assay.rl_client.runs.session import Session
from assay.rl_client.runs.sft import Pair, fine_tune


class StarRun:
    def __init__(self, session: Session, progress: bool) -> None:
        self.s = session
        self.cfg = session.cfg.star
        self.pipe = RewardPipe(session.rewards)
        self.evaluator = Evaluator(session.backend, lambda: self.pipe, session.eval, session.eval_tokens)
        self.optimizer = torch.optim.AdamW(session.model.parameters(), lr=self.cfg.lr)
        self.initial = copy.deepcopy(session.model.state_dict()) if self.cfg.restart else None
        self.rng = random.Random(session.cfg.train.seed)
        gen = session.cfg.train.generate
        self.params = SamplingParams(gen.temperature, gen.max_new_tokens)
        self.step = 0  # iterations done
        self.history: list[dict[str, Any]] = []
        self.log = StepLog(session.out / "log.jsonl", self.cfg.iterations, progress)
        self.log.rewrite([])  # a new run starts a new log; `load` puts a resumed run's steps back

    @property
    def reward_requests(self) -> int:
        return self.s.rewards.requests

    def sample(self, problems: list[Problem], count: int) -> list[Group]:
        groups = sample_groups(self.s.backend, problems, [count] * len(problems), self.params, self.step)
        if groups:
            results = self.pipe.submit(reward_items(groups)).result()
            apply_results([x for g in groups for x in g.samples], results)
        return groups

    def train_step(self) -> dict[str, Any]:
        """One STaR iteration: sample, keep, rationalise, fine-tune, evaluate."""
        started = time.perf_counter()
        train = self.s.train
        problems = self.rng.sample(train, min(self.cfg.prompts, len(train)))
        groups = self.sample(problems, self.cfg.samples)
        pairs, solved = self._keep(groups, {})
        rationalized = 0
        if self.cfg.rationalize:
            failed = [g.problem for g in groups if g.problem.id not in solved]
            hinted = [replace(p, prompt=self.cfg.hint_template.format(prompt=p.prompt, answer=p.reference))
                      for p in failed]  # fmt: skip
            extra, rescued = self._keep(self.sample(hinted, 1), {p.id: p for p in failed})
            pairs += extra
            rationalized = len(rescued)
        if self.initial is not None:
            self.s.model.load_state_dict(self.initial)
            self.optimizer = torch.optim.AdamW(self.s.model.parameters(), lr=self.cfg.lr)
        loss = fine_tune(self.s.model, self.optimizer, pairs, self.cfg.sft_steps, self.cfg.batch, self.rng,
                         self.s.tokenizer.pad_token_id)  # fmt: skip
        self.s.backend.sync_weights(self.s.model)
        self.step += 1
        samples = [x for g in groups for x in g.samples if x.scored]
        record: dict[str, Any] = {
            "step": self.step,
            "accuracy": sum(_correct(x.result) for x in samples) / len(samples) if samples else 0.0,
            "kept": len(pairs),
            "solved_fraction": len(solved) / len(groups) if groups else 0.0,
            "rationalized": rationalized,
            "loss": loss,
            "reward_requests": self.s.rewards.requests,
        }
        if self.s.eval:
            record["dev_accuracy"] = self.evaluator()
        record["step_s"] = time.perf_counter() - started
        self.history.append(record)
        self.log.write(record)
        return record

    def _keep(self, groups: list[Group], originals: dict[str, Problem]) -> tuple[list[Pair], set[str]]:
        """Distinct correct responses as SFT pairs under the original prompt; the ids of solved problems."""
        pairs: list[Pair] = []
        solved: set[str] = set()
        eos = self.s.tokenizer.eos_token_id
        for group in groups:
            problem = originals.get(group.problem.id, group.problem)
            prompt_ids = self.s.tokenizer.encode(problem.prompt)
            seen: set[tuple[int, ...]] = set()
            for sample in group.samples:
                target = list(sample.completion.token_ids)
                if not _correct(sample.result) or tuple(target) in seen:
                    continue
                seen.add(tuple(target))
                pairs.append((prompt_ids, target if target and target[-1] == eos else [*target, eos]))
            if seen:
                solved.add(problem.id)
        return pairs, solved

    def save(self, directory: Path) -> Path:
        tensors = checkpoints.policy_tensors(self.s.model, self.optimizer, self.s.backend)
        state = {"iteration": self.step, "rng": checkpoints.random_state(self.rng), "history": self.history}
        return checkpoints.save(directory, tensors, state)

    def load(self, directory: Path) -> None:
        tensors, state = checkpoints.load(directory)
        checkpoints.restore_policy(tensors, self.s.model, self.optimizer, self.s.backend)
        checkpoints.set_random_state(self.rng, state["rng"])
        self.step = state["iteration"]
        self.history = state["history"]
        self.log.rewrite(self.history)
        self.s.backend.sync_weights(self.s.model)

    def close(self) -> None:
        self.log.close()
        self.pipe.close()


def _correct(result: Any) -> bool:
    if result is None or result.reward is None:
        return False
    return bool(result.correct) if result.correct is not None else float(result.reward) >= 1.0
