"""What a configured run is built from (`Session`): the model and tokenizer, the train and held-out
problems, the generation backend and the reward source, each as the `RunConfig` says. Every algorithm the
driver runs (GRPO/DAPO, STaR) starts from one.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from assay.rl_client.filter import RewardSource, ServiceRewards
from assay.rl_client.generate import Backend, Problem
from assay.rl_client.runs.config import RunConfig
from assay.rl_client.runs.data import (
    chat_renderer,
    read_rows,
    solve_rate_band,
    source_rows,
    split_eval,
    to_problems,
)
from assay.rl_client.runs.mix import TaskMix
from assay.rl_client.runs.models import TextTokenizer, load_model, load_tokenizer, resolve


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
    if data.source is not None:
        rows, where = source_rows(data.source), "data.source"
    else:
        rows, where = read_rows(resolve(data.train or "", base), data.format, data.split), data.train or ""
    rows = solve_rate_band(rows, data.min_solve_rate, data.max_solve_rate, source=where)
    train = to_problems(rows, data.fields, data.task, render, source=where)
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

        path = str(resolve(cfg.model.path, base))
        return VLLMBackend(path, seed=cfg.train.seed, tokenizer=tokenizer, **cfg.backend.vllm)
    from assay.rl_client.runs.vllm_server import VLLMServerBackend, start_server

    server = cfg.backend.server
    url = server.url or stack.enter_context(start_server(resolve(cfg.model.path, base), server, out / "vllm"))
    backend = VLLMServerBackend(url, tokenizer, out / "weights", seed=cfg.train.seed, options=server)
    stack.callback(backend.close)
    return backend
