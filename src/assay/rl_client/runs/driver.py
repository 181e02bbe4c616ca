"""A configured run (`assay train --config`): build a `Session` from a `RunConfig`, then drive one loop
for every algorithm, GRPO/DAPO and RFT (`Trainer`) or STaR (`star.py`): resume from the newest checkpoint,
step until the configured count or the time budget, checkpoint every `checkpoint_every` steps (STaR: every
iteration) and at the end, evaluate greedily, and finish with `summary.json`, `curves.png` and the
trained model saved with `save_pretrained`.

Exact resume: every checkpoint holds what the algorithm needs to go on (`checkpoints.py`: the model,
optimizer, sampler and replay state, the backends' RNGs and the step log), so a run killed at any point
and started again with the same command ends with the same weights and metrics as one that was never
stopped (tests/rl_client/test_rl_run.py kills one).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

import torch

from assay.client import AssayClient
from assay.rl_client import checkpoints
from assay.rl_client.generate import SamplingParams
from assay.rl_client.multiturn import ToolRollouts
from assay.rl_client.runs import k_eval, rundir, vstar
from assay.rl_client.runs import summary as run_summary
from assay.rl_client.runs.config import ConfigError, RunConfig
from assay.rl_client.runs.evaluate import Evaluator
from assay.rl_client.runs.k_eval import k_evaluation
from assay.rl_client.runs.models import resolve
from assay.rl_client.runs.session import Session, build_session
from assay.rl_client.runs.star import StarRun
from assay.rl_client.trainer import Trainer


class Algorithm(Protocol):
    """What the driver runs: `Trainer` (GRPO/DAPO) and `StarRun` (STaR)."""

    step: int  # steps (iterations) done
    history: list[dict[str, Any]]

    @property
    def reward_requests(self) -> int: ...

    def train_step(self) -> dict[str, Any]: ...

    def save(self, directory: Path) -> Path: ...

    def load(self, directory: Path) -> None: ...


def run(cfg: RunConfig, base: Path, progress: bool = True, fresh: bool = False) -> dict[str, Any]:
    """Train as configured; returns (and writes) the summary. An output directory that holds a run is
    handled by `rundir.prepare` (a finished one is refused unless `fresh`)."""
    from assay.rl_client.runs.service import local_service
    from assay.settings import Settings

    started = time.perf_counter()
    torch.set_num_threads(cfg.threads)
    out = resolve(cfg.output.dir, base)
    rundir.announce(rundir.prepare(out, fresh=fresh, resumable=cfg.output.resume))
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(cfg.model_dump_json(indent=2) + "\n", encoding="utf-8")
    with ExitStack() as stack:
        url = cfg.reward.url or stack.enter_context(local_service(Settings(workers=cfg.reward.workers)))
        session = build_session(cfg, base, out, url, stack)
        summary = train(session, progress, started)
        if cfg.output.save_model:
            session.model.save_pretrained(str(out / "model"))
            session.tokenizer.tokenizer.save_pretrained(str(out / "model"))
    summary["seconds"] = round(time.perf_counter() - started, 2)
    run_summary.write(out, summary)
    return summary


def train(session: Session, progress: bool, started: float) -> dict[str, Any]:
    """Build the configured algorithm, drive it, close it; the summary of the run."""
    cfg = session.cfg
    recorder = vstar.start(session) if cfg.vstar_on else None  # V-STaR keeps the samples (issue 42)
    if recorder is not None:
        session = replace(session, rewards=recorder)
    with ExitStack() as stack:
        if cfg.algorithm == "star":
            star = StarRun(session, progress)
            stack.callback(star.close)
            algorithm: Algorithm = star
            evaluator, total, every = star.evaluator, cfg.star.iterations, 1
        else:
            trainer, evaluator = _grpo(session, progress, stack)
            algorithm, total, every = trainer, cfg.train.steps, cfg.output.checkpoint_every
        if recorder is not None:
            algorithm = vstar.Recording(algorithm, recorder)
        k_before = sampled_evaluation(session, start=True)
        after = drive(session, algorithm, evaluator, total, every, started)
        k_after = sampled_evaluation(session, start=False)
    report, best = vstar.finish(session, _candidates(session)) if recorder is not None else ({}, {})
    k_before, k_after = {**k_before, **best.get("before", {})}, {**k_after, **best.get("after", {})}
    before = start_accuracy(session)
    if cfg.output.plots:
        title = f"assay train ({cfg.algorithm}, seed {cfg.train.seed})"
        history = _with_k_points(algorithm.history, algorithm.step, k_before, k_after)
        run_summary.plot_run(session.out, before, history, algorithm.step, after, title)
    summary = summary_of(session, before, after, algorithm.step, total, algorithm.reward_requests)
    for when, evaluated in (("before", k_before), ("after", k_after)):
        summary.update({f"{name}_{when}": table for name, table in evaluated.items()})
    summary.update(report)
    return summary


def _candidates(session: Session) -> dict[str, Path]:
    """The held-out candidates the sampled evaluations kept (best-of-K ranks them)."""
    return {when: session.out / f"k_eval_{when}_candidates.jsonl" for when in ("before", "after")}


def sampled_evaluation(session: Session, start: bool) -> dict[str, dict[str, float | None]]:
    """Pass@K and Maj@K on the held-out set (runs/k_eval.py); at the start, recorded once in
    `k_eval_start.json`, so a resumed run reports the starting point of the uninterrupted one."""
    cfg, path = session.cfg, session.out / "k_eval_start.json"
    if not session.eval or not cfg.eval_samples:
        return {}
    if start and path.exists():
        return dict(json.loads(path.read_text(encoding="utf-8")))
    params = SamplingParams(cfg.train.generate.temperature, session.eval_tokens)
    keep = _candidates(session)["before" if start else "after"] if cfg.vstar_on else None
    with AssayClient(session.url, timeout_s=cfg.reward.timeout_s) as client:
        evaluated = k_evaluation(session.backend, client, session.eval, cfg.eval_samples, params, keep)
    if start:
        path.write_text(json.dumps(evaluated), encoding="utf-8")
    return evaluated


def _with_k_points(
    history: list[dict[str, Any]], steps: int, before: dict[str, Any], after: dict[str, Any]
) -> list[dict[str, Any]]:
    """The step log with the sampled evaluation at step 0 and at the last step, for the plot."""
    first = [{"step": 0, **k_eval.curve_points(before)}] if before else []
    last = [{"step": steps, **k_eval.curve_points(after)}] if after else []
    return [*first, *history, *last]


def _grpo(session: Session, progress: bool, stack: ExitStack) -> tuple[Trainer, Evaluator]:
    cfg = session.cfg
    trainer: Trainer | None = None
    sessions = AssayClient(session.url, timeout_s=cfg.reward.timeout_s) if cfg.train.tools.tools else None
    if sessions is not None:
        stack.callback(sessions.close)
    tools = ToolRollouts(session.backend, sessions, cfg.train) if sessions is not None else None
    evaluator = Evaluator(session.backend, lambda: _pipe(trainer), session.eval, session.eval_tokens, tools)
    train = cfg.train
    if cfg.algorithm == "rft":  # the same loop with STaR's coefficient (loss.correct_coefficients)
        train = replace(train, loss=replace(train.loss, coefficient="correct"))
    trainer = Trainer(
        session.model, session.backend, session.rewards, session.train, train,
        pad_id=session.tokenizer.pad_token_id, log_path=session.out / "log.jsonl", progress=progress,
        evaluate=evaluator if session.eval else None, sessions=sessions,
    )  # fmt: skip
    stack.callback(trainer.close)
    return trainer, evaluator


def drive(
    session: Session,
    algorithm: Algorithm,
    evaluate: Callable[[], float | None],
    total: int,
    every: int,
    started: float,
) -> float | None:
    """The one driver loop: resume or start, step until `total` steps or the time budget, checkpoint
    every `every` steps (0: only at the end) and at the end; the held-out accuracy after training."""
    cfg, root = session.cfg, session.out / "checkpoints"
    board = _tensorboard(session.out) if cfg.output.tensorboard else None
    try:
        written = resume_or_start(session, algorithm.load, evaluate)
        budget = cfg.time_budget_s
        while algorithm.step < total and (budget is None or time.perf_counter() - started < budget):
            record = algorithm.train_step()
            if board is not None:
                for key, value in record.items():
                    if isinstance(value, int | float):
                        board.add_scalar(key, value, record["step"])
            if every and algorithm.step % every == 0:
                checkpoints.write(root, algorithm.step, algorithm.save, cfg.output.keep)
                written = algorithm.step
        if written != algorithm.step:
            checkpoints.write(root, algorithm.step, algorithm.save, cfg.output.keep)
        return evaluate() if session.eval else None
    finally:
        if board is not None:
            board.close()


def resume_or_start(
    session: Session, load: Callable[[Path], None], evaluate: Callable[[], float | None]
) -> int | None:
    """Load the newest checkpoint and return its step; or, for a run starting anew, record the held-out
    accuracy the run starts from in `eval_start.json` (so a resumed run reports the same starting point
    as an uninterrupted one) and return None."""
    out = session.out
    latest = checkpoints.newest(out / "checkpoints") if session.cfg.output.resume else None
    if latest is not None:
        load(latest)
        return checkpoints.step_of(latest)
    before = evaluate() if session.eval else None
    (out / "eval_start.json").write_text(json.dumps({"dev_accuracy": before}), encoding="utf-8")
    return None


def start_accuracy(session: Session) -> float | None:
    """The held-out accuracy recorded when the run started (see `resume_or_start`)."""
    value = json.loads((session.out / "eval_start.json").read_text(encoding="utf-8"))["dev_accuracy"]
    return None if value is None else float(value)


def _pipe(trainer: Trainer | None) -> Any:
    if trainer is None:
        raise RuntimeError("evaluation before the trainer exists")
    return trainer.pipe


def summary_of(
    session: Session, before: float | None, after: float | None, steps: int, total: int, requests: int
) -> dict[str, Any]:
    cfg = session.cfg
    return {
        **run_summary.common("config", before, after, steps, total, cfg.time_budget_s),
        "algorithm": cfg.algorithm,
        "reward_requests": requests,
        "train_problems": len(session.train),
        "eval_problems": len(session.eval),
        "backend": cfg.backend.kind,
        "seed": cfg.train.seed,
        "torch_threads": torch.get_num_threads(),
        # the vector unit torch computes with: float32 rounding, and so the run, differs between them
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def _tensorboard(out: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise ConfigError(
            "output.tensorboard is true but TensorBoard is not installed: pip install tensorboard"
        ) from exc
    return SummaryWriter(str(out / "tensorboard"))
