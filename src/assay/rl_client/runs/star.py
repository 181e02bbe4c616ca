"""STaR (Zelikman et al., 2022, "Self-Taught Reasoner") as `algorithm: star`.

Each iteration: sample `samples` responses to `prompts` training prompts; keep the distinct responses
Assay marks correct; for prompts with none, rationalise: sample again with the answer given as a hint
(`hint_template`) and keep correct responses, but train on them under the original prompt (the hint is
scaffolding, not something the policy will see); then fine-tune on the kept set (from the initial weights
when `restart`, as the paper does, else continuing) and evaluate greedily. The rewards come from the same
Assay service as GRPO's, so any verifiable task works; graded tasks count a reward of 1 as correct.

Checkpoints after every iteration hold the model, optimizer, prompt RNG, backend RNG and log, so a resumed
run ends as an uninterrupted one would.
"""

from __future__ import annotations

import copy
import json
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from assay.rl_client import checkpoints
from assay.rl_client.filter import RewardPipe, apply_results, reward_items
from assay.rl_client.generate import Group, Problem, SamplingParams, sample_groups
from assay.rl_client.observe import StepLog, plot_curves
from assay.rl_client.runs.driver import Session, resume_or_start, start_accuracy, summary_of
from assay.rl_client.runs.evaluate import Evaluator
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
        self.iteration = 0
        self.history: list[dict[str, Any]] = []
        self.log = StepLog(session.out / "log.jsonl", self.cfg.iterations, progress)

    def sample(self, problems: list[Problem], count: int) -> list[Group]:
        groups = sample_groups(self.s.backend, problems, [count] * len(problems), self.params, self.iteration)
        if groups:
            results = self.pipe.submit(reward_items(groups)).result()
            apply_results([x for g in groups for x in g.samples], results)
        return groups

    def iterate(self) -> dict[str, Any]:
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
        self.iteration += 1
        samples = [x for g in groups for x in g.samples if x.scored]
        record: dict[str, Any] = {
            "step": self.iteration,
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
        directory.mkdir(parents=True, exist_ok=True)
        torch.save(
            {
                "model": self.s.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "backend": self.s.backend.state_dict(),
                "torch_rng": torch.get_rng_state(),
            },
            directory / "state.pt",
        )
        version, internal, gauss = self.rng.getstate()
        state = {
            "iteration": self.iteration,
            "rng": [version, list(internal), gauss],
            "history": self.history,
        }
        (directory / "trainer.json").write_text(json.dumps(state), encoding="utf-8")
        return directory

    def load(self, directory: Path) -> None:
        tensors = torch.load(directory / "state.pt", weights_only=True)
        self.s.model.load_state_dict(tensors["model"])
        self.optimizer.load_state_dict(tensors["optimizer"])
        self.s.backend.load_state_dict(tensors["backend"])
        torch.set_rng_state(tensors["torch_rng"])
        state = json.loads((directory / "trainer.json").read_text(encoding="utf-8"))
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))
        self.iteration = state["iteration"]
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


def run_star(session: Session, progress: bool, started: float) -> dict[str, Any]:
    cfg, out = session.cfg, session.out
    star = StarRun(session, progress)
    try:
        resume_or_start(session, star.load, star.evaluator, fresh=lambda: star.log.rewrite([]))
        budget = cfg.time_budget_s
        while star.iteration < cfg.star.iterations and (
            budget is None or time.perf_counter() - started < budget
        ):
            star.iterate()
            checkpoints.write(out / "checkpoints", star.iteration, star.save, cfg.output.keep)
        after = star.evaluator() if session.eval else None
    finally:
        star.close()
    before = start_accuracy(session)
    if cfg.output.plots:
        history = [{"step": 0, "dev_accuracy": before}, *star.history]
        plot_curves(history, out / "curves.png", title=f"assay train (star, seed {cfg.train.seed})")
    return summary_of(session, before, after, star.iteration, session.rewards.requests)
