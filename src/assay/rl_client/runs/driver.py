"""A configured run (`assay train --config`): build model, data, backend and rewards from a `RunConfig`,
train with GRPO/DAPO (`Trainer`) or STaR (`star.py`), evaluate greedily every `eval_every` steps,
checkpoint every `checkpoint_every` steps, resume from the newest checkpoint, and finish with
`summary.json`, `curves.png` and the trained model saved with `save_pretrained`.

Exact resume: every checkpoint holds the model, optimizer, sampler and replay state, the backends' RNGs
and the step log, so a run killed at any point and started again with the same command ends with the
same weights and metrics as one that was never stopped (tests/rl_client/test_rl_run.py kills one).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from assay.client import AssayClient
from assay.rl_client import checkpoints
from assay.rl_client.filter import RewardSource, ServiceRewards
from assay.rl_client.generate import Backend, Problem
from assay.rl_client.multiturn import ToolRollouts
from assay.rl_client.observe import plot_curves
from assay.rl_client.runs.config import ConfigError, RunConfig
from assay.rl_client.runs.data import chat_renderer, read_rows, solve_rate_band, split_eval, to_problems
from assay.rl_client.runs.evaluate import Evaluator
from assay.rl_client.runs.mix import TaskMix
from assay.rl_client.runs.models import TextTokenizer, load_model, load_tokenizer, resolve
from assay.rl_client.trainer import Trainer


@dataclass
class Session:
    """Everything a run is built from."""

    cfg: RunConfig
    base: Path  # relative paths start here (the config file's directory)
    out: Path
    model: Any
    tokenizer: TextTokenizer
    backend: Backend
    train: list[Problem]
    eval: list[Problem]
    rewards: RewardSource
    url: str = ""  # the Assay service (multi-turn runs open their sessions there)

    @property
    def eval_tokens(self) -> int:
        return self.cfg.eval_max_new_tokens or self.cfg.train.generate.max_new_tokens


def run(cfg: RunConfig, base: Path, progress: bool = True) -> dict[str, Any]:
    """Train as configured; returns (and writes) the summary."""
    from assay.rl_client.runs.service import local_service
    from assay.settings import Settings

    started = time.perf_counter()
    torch.set_num_threads(cfg.threads)
    out = resolve(cfg.output.dir, base)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(cfg.model_dump_json(indent=2) + "\n", encoding="utf-8")
    with ExitStack() as stack:
        url = cfg.reward.url or stack.enter_context(local_service(Settings(workers=cfg.reward.workers)))
        session = build_session(cfg, base, out, url, stack)
        if cfg.algorithm == "star":
            from assay.rl_client.runs.star import run_star

            summary = run_star(session, progress, started)
        else:
            summary = run_grpo(session, progress, started)
        if cfg.output.save_model:
            session.model.save_pretrained(str(out / "model"))
            session.tokenizer.tokenizer.save_pretrained(str(out / "model"))
    summary["seconds"] = round(time.perf_counter() - started, 2)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def build_session(cfg: RunConfig, base: Path, out: Path, url: str, stack: ExitStack) -> Session:
    torch.manual_seed(cfg.train.seed)
    raw_tokenizer = load_tokenizer(cfg.model, base)
    render = chat_renderer(raw_tokenizer, cfg.data.chat_template, cfg.data.system_prompt)
    templated = render("x") != "x"
    tokenizer = TextTokenizer(raw_tokenizer, add_special_tokens=not templated)
    train, held = load_problems(cfg, base, render)
    model = load_model(cfg.model, base)
    backend = build_backend(cfg, base, model, tokenizer, out, stack)
    source = ServiceRewards.at(url, timeout_s=cfg.reward.timeout_s)
    rewards = TaskMix(source, cfg.reward.task_weights)
    return Session(cfg, base, out, model, tokenizer, backend, train, held, rewards, url)


def load_problems(cfg: RunConfig, base: Path, render: Any) -> tuple[list[Problem], list[Problem]]:
    data = cfg.data
    rows = read_rows(resolve(data.train, base), data.format, data.split)
    rows = solve_rate_band(rows, data.min_solve_rate, data.max_solve_rate, source=data.train)
    train = to_problems(rows, data.fields, data.task, render, source=data.train)
    if data.eval is not None:
        eval_rows = read_rows(resolve(data.eval, base), data.format, data.split)
        held = to_problems(eval_rows, data.fields, data.task, render, source=data.eval)[: data.eval_size]
        return train, held
    return split_eval(train, data.eval_fraction, data.eval_size, cfg.train.seed)


def build_backend(
    cfg: RunConfig, base: Path, model: Any, tokenizer: TextTokenizer, out: Path, stack: ExitStack
) -> Backend:
    kind = cfg.backend.kind
    if kind == "hf":
        from assay.rl_client.backends.hf import HFBackend

        return HFBackend(model, tokenizer, seed=cfg.train.seed, batch_size=cfg.backend.batch_size)
    if kind == "vllm":
        from assay.rl_client.backends.vllm import VLLMBackend

        return VLLMBackend(str(resolve(cfg.model.path, base)), seed=cfg.train.seed, **cfg.backend.vllm)
    from assay.rl_client.runs.vllm_server import VLLMServerBackend, start_server

    server = cfg.backend.server
    url = server.url or stack.enter_context(start_server(resolve(cfg.model.path, base), server, out / "vllm"))
    backend = VLLMServerBackend(url, tokenizer, out / "weights", seed=cfg.train.seed, options=server)
    stack.callback(backend.close)
    return backend


def run_grpo(session: Session, progress: bool, started: float) -> dict[str, Any]:
    cfg, out = session.cfg, session.out
    trainer: Trainer | None = None
    sessions = AssayClient(session.url, timeout_s=cfg.reward.timeout_s) if cfg.train.tools.tools else None
    tools = ToolRollouts(session.backend, sessions, cfg.train) if sessions is not None else None
    evaluator = Evaluator(session.backend, lambda: _pipe(trainer), session.eval, session.eval_tokens, tools)
    trainer = Trainer(
        session.model, session.backend, session.rewards, session.train, cfg.train,
        pad_id=session.tokenizer.pad_token_id, log_path=out / "log.jsonl", progress=progress,
        evaluate=evaluator if session.eval else None, sessions=sessions,
    )  # fmt: skip
    board = _tensorboard(out) if cfg.output.tensorboard else None
    try:
        resume_or_start(session, trainer.load, evaluator)
        budget = cfg.time_budget_s
        while trainer.step < cfg.train.steps and (budget is None or time.perf_counter() - started < budget):
            record = trainer.train_step()
            if board is not None:
                for key, value in record.items():
                    if isinstance(value, int | float):
                        board.add_scalar(key, value, record["step"])
            every = cfg.output.checkpoint_every
            if every and trainer.step % every == 0:
                checkpoints.write(out / "checkpoints", trainer.step, trainer.save, cfg.output.keep)
        checkpoints.write(out / "checkpoints", trainer.step, trainer.save, cfg.output.keep)
        after = evaluator() if session.eval else None
    finally:
        trainer.close()
        if sessions is not None:
            sessions.close()
        if board is not None:
            board.close()
    before = start_accuracy(session)
    history = [{"step": 0, "dev_accuracy": before}, *trainer.history]
    if cfg.output.plots:
        plot_curves(
            history, out / "curves.png", title=f"assay train ({cfg.algorithm}, seed {cfg.train.seed})"
        )
    return summary_of(session, before, after, trainer.step, trainer.reward_requests)


def resume_or_start(
    session: Session,
    load: Callable[[Path], None],
    evaluate: Callable[[], float | None],
    fresh: Callable[[], None] | None = None,
) -> None:
    """Load the newest checkpoint, or (after `fresh`, for a run starting anew) record the held-out
    accuracy the run starts from in `eval_start.json`, so a resumed run reports the same starting point
    as an uninterrupted one."""
    out = session.out
    latest = checkpoints.newest(out / "checkpoints") if session.cfg.output.resume else None
    if latest is not None:
        load(latest)
        return
    if fresh is not None:
        fresh()
    before = evaluate() if session.eval else None
    (out / "eval_start.json").write_text(json.dumps({"dev_accuracy": before}), encoding="utf-8")


def start_accuracy(session: Session) -> float | None:
    """The held-out accuracy recorded when the run started (see `resume_or_start`)."""
    value = json.loads((session.out / "eval_start.json").read_text(encoding="utf-8"))["dev_accuracy"]
    return None if value is None else float(value)


def _pipe(trainer: Trainer | None) -> Any:
    if trainer is None:
        raise RuntimeError("evaluation before the trainer exists")
    return trainer.pipe


def summary_of(
    session: Session, before: float | None, after: float | None, steps: int, requests: int
) -> dict[str, Any]:
    cfg = session.cfg
    return {
        "algorithm": cfg.algorithm,
        "eval_accuracy_before": before,
        "eval_accuracy_after": after,
        "improvement": None if before is None or after is None else round(after - before, 4),
        "steps": steps,
        "reward_requests": requests,
        "train_problems": len(session.train),
        "eval_problems": len(session.eval),
        "backend": cfg.backend.kind,
        "seed": cfg.train.seed,
        "torch_threads": torch.get_num_threads(),
    }


def _tensorboard(out: Path) -> Any:
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as exc:
        raise ConfigError(
            "output.tensorboard is true but TensorBoard is not installed: pip install tensorboard"
        ) from exc
    return SummaryWriter(str(out / "tensorboard"))
