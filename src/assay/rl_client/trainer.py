"""The GRPO/DAPO loop: fill a batch (rollout + control + replay), take one optimiser step, log, repeat.

One optimiser pass per batch (measured on the demo: several passes cost 3.5x and did not help), so
on-policy samples have ratio 1 and only replayed samples are clipped by their importance ratio.
`save`/`load` capture model, optimizer, replay buffer, prompt sampler, RNG states, step and log: a
resumed run continues exactly as an uninterrupted one would.
"""

from __future__ import annotations

import copy
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from assay.errors import ConfigError
from assay.rl_client import checkpoints
from assay.rl_client.adapt_think import adapt_think_loss, first_units, naive_advantages
from assay.rl_client.config import TrainConfig
from assay.rl_client.control import PromptSampler, fill_batch
from assay.rl_client.filter import RewardPipe, RewardSource
from assay.rl_client.generate import Backend, Group, Problem, Sample
from assay.rl_client.loss import correct_coefficients, group_advantages, policy_loss
from assay.rl_client.multiturn import SessionClient, ToolRollouts
from assay.rl_client.observe import StepLog, group_signals
from assay.rl_client.policy import collate, token_logprobs
from assay.rl_client.recompose import recompose
from assay.rl_client.replay import ReplayBuffer
from assay.rl_client.rollout import Rollout, RoundStats
from assay.rl_client.tree_rollout import whiten


class Trainer:
    """Owns the policy, its optimizer and the rollout machinery of one run. Call `close()` when done."""

    def __init__(
        self,
        model: Any,
        backend: Backend,
        rewards: RewardSource,
        problems: Sequence[Problem],
        cfg: TrainConfig,
        *,
        pad_id: int,
        log_path: Path | None = None,
        progress: bool = False,
        evaluate: Callable[[], float] | None = None,
        sessions: SessionClient | None = None,
    ) -> None:
        self.model = model
        self.backend = backend
        self.cfg = cfg
        self.pad_id = pad_id
        self.evaluate = evaluate
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.reference = copy.deepcopy(model).eval() if cfg.loss.kl_coef > 0 else None
        self.sampler = PromptSampler(problems, cfg.control, cfg.generate.group_size, seed=cfg.seed)
        self.replay = ReplayBuffer(cfg.replay)
        self.pipe = RewardPipe(rewards)
        tools = None
        if cfg.tools.tools:  # multi-turn tool use (issue 26): rollouts hold Assay sessions
            if sessions is None:
                raise ConfigError("tools need a session client (an AssayClient of the server)")
            tools = ToolRollouts(backend, sessions, cfg)
        self.rollout = Rollout(backend, self.pipe, self.sampler, self.replay, cfg, tools)
        self.step = 0  # optimiser steps taken = policy version
        self.history: list[dict[str, Any]] = []
        self._requests_before = 0  # reward requests made before a resume
        self.log = StepLog(log_path, cfg.steps, progress)
        self.log.rewrite([])  # a new run starts a new log; `load` puts a resumed run's steps back

    @property
    def reward_requests(self) -> int:
        return self._requests_before + self.pipe.source.requests

    def train(self, until: int | None = None) -> list[dict[str, Any]]:
        """Run steps until `until` (default: `cfg.steps`); returns the records of this call."""
        stop = self.cfg.steps if until is None else until
        records = []
        while self.step < stop:
            records.append(self.train_step())
        return records

    def train_step(self) -> dict[str, Any]:
        started = time.perf_counter()
        self.rollout.stats = RoundStats()
        latencies_before = len(self.pipe.latencies)
        tools = self.rollout.tools  # with tools the verdicts come from the sessions' verify calls
        verify_before = (len(tools.latencies), tools.verify_wait_s) if tools is not None else (0, 0.0)
        version = self.step
        target = self.cfg.control.prompts_per_step
        fill = fill_batch(lambda k: self.rollout.round(k, version), target, self.cfg.control)
        missing = target - len(fill.kept)
        # taken before this step's groups go in: replay tops up with groups of earlier versions only
        extra = self.replay.take(missing, version) if self.cfg.replay.fill_batch and missing > 0 else []
        self.replay.add(fill.seen, version)
        kept = fill.kept + extra
        compensated = 0
        if self.cfg.shaping.method == "ro_recomp":
            kept, compensated = self._recompose(kept, version)
        backend_signals = getattr(self.backend, "step_signals", None)  # e.g. speculative acceptance
        signals = backend_signals() if backend_signals is not None else {}
        update = self._update(kept)
        self.step += 1
        self.backend.sync_weights(self.model)
        record = self._record(fill.seen, kept, fill.rounds, len(extra), update)
        if self.cfg.shaping.method == "ro_recomp":
            record["compensation_groups"] = compensated
        if self.rollout.adapt is not None:
            record.update(self.rollout.adapt.signals())
        record.update(group_signals(fill.seen, kept, version))  # what `assay doctor` reads
        record.update(signals)
        latencies, waited = self.pipe.latencies[latencies_before:], self.rollout.stats.reward_wait_s
        if tools is not None:
            latencies, waited = latencies + tools.latencies[verify_before[0] :], waited + tools.verify_wait_s
            waited -= verify_before[1]
        record["reward_latency_s"] = _mean(latencies)
        record["reward_wait_s"] = waited
        if self.evaluate is not None and self.cfg.eval_every and self.step % self.cfg.eval_every == 0:
            record["dev_accuracy"] = self.evaluate()
        record["step_s"] = time.perf_counter() - started
        self.history.append(record)
        self.log.write(record)
        return record

    def _recompose(self, groups: list[Group], version: int) -> tuple[list[Group], int]:
        """RoRecomp (`recompose.py`): this step's priority batch, plus every `compensation_every`-th step
        a compensation batch of as many groups from the buffer; the rest is kept for later."""
        shaping = self.cfg.shaping
        priority, remainder = recompose(groups, shaping.priority_fraction, self.cfg.loss.scale_std)
        every = shaping.compensation_every
        compensation = (
            self.replay.take_remainder(len(groups), version) if every and (self.step + 1) % every == 0 else []
        )
        self.replay.keep_remainder(remainder)
        return priority + compensation, len(compensation)

    def _update(self, groups: Sequence[Group]) -> dict[str, float]:
        samples: list[Sample] = []
        advantages: list[float] = []
        for group in groups:
            if group.tree_rows is not None:  # the server's node credit, each segment once
                samples.extend(group.tree_rows)
                advantages.extend(s.advantage or 0.0 for s in group.tree_rows)
                continue
            if group.samples and all(s.advantage is not None for s in group.samples):  # RoRecomp's
                advantages.extend(s.advantage or 0.0 for s in group.samples)
            elif self.rollout.adapt is not None:  # AdaptThink: the reward, its baseline the reference
                advantages.extend(naive_advantages(group.samples))
            elif self.cfg.loss.coefficient == "correct":  # algorithm rft: STaR's coefficient, on-policy
                scores = [s.raw_score if s.weight > 0 else None for s in group.samples]
                advantages.extend(correct_coefficients(scores))
            else:
                rewards = [s.reward if s.weight > 0 else None for s in group.samples]
                advantages.extend(group_advantages(rewards, self.cfg.loss.scale_std))
            samples.extend(group.samples)
        if self.cfg.rollout == "tree" and self.cfg.tree.method == "treepo":  # the recipe's batch step
            advantages = whiten(samples)
        if not samples:
            return {"loss": 0.0, "entropy": 0.0, "clip_fraction": 0.0, "kl": 0.0, "grad_norm": 0.0}
        batch = collate(samples, advantages, self.pad_id)
        n_tokens = float(batch.mask.sum().item())
        n_seqs = float((batch.mask.sum(-1) > 0).sum().item())
        temperature = self.cfg.generate.temperature
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        totals = {"loss": 0.0, "entropy": 0.0, "clip_fraction": 0.0, "kl": 0.0}
        for start in range(0, len(batch), self.cfg.micro_batch):
            part = batch.rows(start, start + self.cfg.micro_batch)
            logp, entropy = token_logprobs(self.model, part.input_ids, part.attention_mask, temperature)
            old = torch.where(part.off_policy[:, None], part.behaviour_logp, logp.detach())
            ref = None
            if self.reference is not None:
                with torch.no_grad():
                    ref = token_logprobs(self.reference, part.input_ids, part.attention_mask, temperature)[0]
            if self.rollout.adapt is not None:  # the first token importance-sampled (adapt_think.py)
                units = first_units(samples[start : start + len(part)], self.rollout.adapt.prefix,
                                    self.rollout.adapt.start)  # fmt: skip
                parts = adapt_think_loss(
                    logp, old, part.advantages, part.mask, units, self.cfg, ref, n_seqs, n_tokens
                )
            else:
                parts = policy_loss(
                    logp, old, part.advantages, part.mask, self.cfg.loss, self.cfg.generate.max_new_tokens,
                    part.off_policy, ref, n_tokens, n_seqs,
                )  # fmt: skip
            parts.loss.backward()
            share = float(part.mask.sum().item()) / max(n_tokens, 1.0)
            totals["loss"] += float(parts.loss.item())
            totals["entropy"] += float((entropy * part.mask).sum().item()) / max(n_tokens, 1.0)
            totals["clip_fraction"] += parts.clip_fraction * share
            totals["kl"] += parts.kl * share
        norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.optimizer.step()
        return {**totals, "grad_norm": float(norm.item())}

    def _record(
        self,
        seen: Sequence[Group],
        kept: Sequence[Group],
        rounds: int,
        replayed: int,
        update: dict[str, float],
    ) -> dict[str, Any]:
        stats = self.rollout.stats  # accuracy and group fractions: the policy's own groups, before
        # hints and injection changed them
        own = [s for g in seen for s in g.samples if not s.off_policy]
        scored = [s for s in own if s.scored]
        # the raw reward beside the shaped one the advantages came from (issue 40)
        raw = [float(s.result.reward) for s in scored if s.result is not None and s.result.reward is not None]
        return {
            "step": self.step,
            "reward": _mean([s.reward for s in scored if s.reward is not None]),
            "accuracy": stats.correct / stats.scored if stats.scored else 0.0,
            "response_length": _mean([len(s.completion.token_ids) for s in own]),
            "frac_all_correct": stats.all_correct / stats.groups if stats.groups else 0.0,
            "frac_all_wrong": stats.all_wrong / stats.groups if stats.groups else 0.0,
            "rounds": rounds,
            "groups_seen": len(seen),
            "groups_kept": len(kept),
            "unscored": len(own) - len(scored),
            "masked": sum(1 for g in kept for s in g.samples if s.weight == 0),
            "truncated": sum(1 for s in own if s.completion.truncated),
            "hinted": stats.hinted,
            "injected": stats.injected,
            "replayed": replayed,
            "partial_resumed": stats.resumed,
            "partial_pending": len(self.rollout.partial.pending) if self.rollout.partial else 0,
            "reward_requests": self.reward_requests,
            "generated_tokens": stats.generated_tokens,
            "tokens_per_group": stats.generated_tokens / stats.groups if stats.groups else 0.0,
            **(tool_signals(own) if self.cfg.tools.tools else {}),
            **({"raw_reward": _mean(raw)} if self.cfg.shaping.server else {}),
            **update,
        }

    # -- checkpoint --------------------------------------------------------------------------------
    def save(self, directory: Path) -> Path:
        """Write everything a resume needs into `directory` (`checkpoints.save`)."""
        tensors = checkpoints.policy_tensors(self.model, self.optimizer, self.backend)
        tensors["reference"] = self.reference.state_dict() if self.reference is not None else None
        state = {
            "step": self.step,
            "sampler": self.sampler.state_dict(),
            "replay": self.replay.state_dict(),
            "partial": self.rollout.partial.state_dict() if self.rollout.partial else None,
            "history": self.history,
            "reward_requests": self.reward_requests,
        }
        return checkpoints.save(directory, tensors, state)

    def load(self, directory: Path) -> None:
        """Restore a `save`d state; the JSON Lines log is cut back to the checkpoint's steps."""
        tensors, state = checkpoints.load(directory)
        checkpoints.restore_policy(tensors, self.model, self.optimizer, self.backend)
        if self.reference is not None and tensors["reference"] is not None:
            self.reference.load_state_dict(tensors["reference"])
        self.step = state["step"]
        self.sampler.load_state_dict(state["sampler"])
        self.replay.load_state_dict(state["replay"])
        if self.rollout.partial is not None and state.get("partial") is not None:
            self.rollout.partial.load_state_dict(state["partial"])
        self.history = state["history"]
        self._requests_before = state["reward_requests"] - self.pipe.source.requests
        self.log.rewrite(self.history)
        self.log.bar.n = self.step
        self.backend.sync_weights(self.model)

    def close(self) -> None:
        if self.rollout.partial is not None:  # unfinished multi-turn rollouts hold sessions
            self.rollout.partial.close()
        self.log.close()
        self.pipe.close()


def tool_signals(samples: Sequence[Sample]) -> dict[str, float]:
    """Multi-turn curves (what `assay doctor` reads): turns per rollout, tool calls and tool errors in
    the step, their rates, the share of rollouts whose answering turn still wrote a tool call (never
    stopped calling), the share of response tokens that were observations, and rollouts whose session
    failed on our side (masked)."""
    completions = [s.completion for s in samples]
    calls = sum(c.tool_calls for c in completions)
    errors = sum(c.tool_errors for c in completions)
    tokens = sum(len(c.token_ids) for c in completions)
    observed = sum(c.action_mask.count(0) for c in completions if c.action_mask is not None)
    # Never stopped calling: its answering turn still wrote a call. A count of calls cannot tell it from
    # a rollout that used every turn it had and then answered (with max_turns 2, every good rollout).
    busy = sum(c.kept_calling for c in completions)
    n = max(1, len(completions))
    return {
        "turns": _mean([float(c.turns) for c in completions]),
        "tool_calls": float(calls),
        "tool_errors": float(errors),
        "session_failures": float(sum(c.failure is not None for c in completions)),
        "tool_calls_per_rollout": calls / n,
        "tool_error_rate": errors / calls if calls else 0.0,
        "never_stop_calling_share": busy / n,
        "observation_share": observed / tokens if tokens else 0.0,
    }


def _mean(values: Sequence[float]) -> float:
    return float(statistics.fmean(values)) if values else 0.0
