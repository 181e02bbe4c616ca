"""A verbose thinking policy on the demo's task (issue 40): something for length control to remove.

The demo's addition ("37+58=" -> "95") with a thinking block: the prompt ends with `<think>` (the chat
template opened it) and SFT targets think in filler before they close it and answer, `hmm wait so
</think>95`, 2-5 filler words drawn afresh each time, so a policy's lengths vary and a shorter correct
answer exists in most groups. `<think>` and `</think>` are single tokens, as in reasoning models'
vocabularies, so AdaptThink forces one token. The filler carries nothing: the answer after the tag is
all that is scored (the math verifier reads it; the AdaptThink gate wants the one `</think>`).

`assay train --demo --set algorithm.shaping.method=adapt_think` runs here (the plain demo has no thinking
block to close), and `benchmarks/length_control.py` starts every method from one `VerboseStart`.

What is covered: the forced prefix, the importance-sampled loss and the server's shaping, end to end on
a CPU. What is not: a model whose thinking changes its answers (this filler does not).
"""

from __future__ import annotations

import copy
import json
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from assay.client import AssayClient
from assay.errors import ConfigError
from assay.rl_client.backends.hf import HFBackend
from assay.rl_client.config import ControlConfig, GenerateConfig, LossConfig, ShapingConfig, TrainConfig
from assay.rl_client.filter import ServiceRewards
from assay.rl_client.generate import Problem, SamplingParams
from assay.rl_client.runs.addition import addition_problems
from assay.rl_client.runs.models import build_char_model
from assay.rl_client.runs.sft import sft_step
from assay.rl_client.trainer import Trainer

THINK, THINK_CLOSE = "<think>", "</think>"
ALPHABET = "0123456789+= abcdefghijklmnopqrstuvwxyz"
FILLER = ("hmm", "wait", "so", "ok", "well", "right")
PAD, BOS, EOS = 0, 1, 2
MAX_NEW_TOKENS = 40  # 5 filler words of up to 6 characters, the tag and a 3-digit answer fit
SOLVE_RATES = "verbose-solve-rates.jsonl"  # the pre-sampled reference accuracies (AdaptThink)


class ThinkTokenizer:
    """One token per character of `ALPHABET`; `<think>` and `</think>` one token each; pad, begin, end."""

    pad_token_id = PAD
    bos_token_id = BOS
    eos_token_id = EOS

    def __init__(self) -> None:
        self.pieces = [*ALPHABET, THINK, THINK_CLOSE]
        self._ids = {piece: i + 3 for i, piece in enumerate(self.pieces)}

    def __len__(self) -> int:
        return len(self.pieces) + 3

    def encode_plain(self, text: str) -> list[int]:
        ids, at = [], 0
        while at < len(text):
            tag = next((t for t in (THINK_CLOSE, THINK) if text.startswith(t, at)), None)
            piece = tag or text[at]
            if piece in self._ids:
                ids.append(self._ids[piece])
            at += len(piece)
        return ids

    def encode(self, text: str) -> list[int]:
        return [BOS, *self.encode_plain(text)]

    def encode_answer(self, text: str) -> list[int]:
        return [*self.encode_plain(text), EOS]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.pieces[i - 3] for i in ids if i >= 3)


def verbose_problems(seed: int, pool: int = 512, dev_size: int = 500) -> tuple[list[Problem], list[Problem]]:
    """The demo's sums with the thinking block opened in the prompt: (train pool, dev)."""
    train, dev = addition_problems(seed, dev_size)

    def opened(p: Problem) -> Problem:
        return replace(p, prompt=p.prompt + THINK)

    return [opened(p) for p in train[:pool]], [opened(p) for p in dev]


def verbose_target(reference: str, rng: random.Random) -> str:
    words = [rng.choice(FILLER) for _ in range(rng.randint(2, 5))]
    return " ".join(words) + " " + THINK_CLOSE + reference


def answer_of(text: str) -> str | None:
    """The answer after the one `</think>` (None when the format gate fails: AdaptThink's)."""
    if THINK in text or text.count(THINK_CLOSE) != 1:
        return None
    return text.split(THINK_CLOSE, 1)[1].strip()


@dataclass(frozen=True)
class Measure:
    accuracy: float  # greedy, answer after the tag equal to the reference
    length: float  # greedy response tokens, the end token included
    nothinking: float  # the probability of opening with `</think>` at temperature 1, mean over prompts


def measure(backend: HFBackend, problems: Sequence[Problem]) -> Measure:
    greedy = backend.generate([p.prompt for p in problems], SamplingParams(0.0, MAX_NEW_TOKENS))
    right = [answer_of(o.text) == p.reference for o, p in zip(greedy, problems, strict=True)]
    return Measure(
        accuracy=sum(right) / len(problems),
        length=statistics.fmean(len(o.token_ids) for o in greedy),
        nothinking=nothinking_rate(backend, problems),
    )


@torch.no_grad()
def nothinking_rate(backend: HFBackend, problems: Sequence[Problem]) -> float:
    """Mean over prompts of pi(`</think>` first): the NoThinking rate of sampling at temperature 1."""
    tokenizer, model = backend.tokenizer, backend.model
    rows = [tokenizer.encode(p.prompt) for p in problems]
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), PAD, dtype=torch.long)
    attention = torch.zeros_like(ids)
    for i, row in enumerate(rows):  # left-padded with explicit positions, as the backend generates
        ids[i, width - len(row) :] = torch.tensor(row)
        attention[i, width - len(row) :] = 1
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    was_training = model.training
    model.eval()
    try:
        logits = model(input_ids=ids, attention_mask=attention, position_ids=positions).logits[:, -1].float()
    finally:
        model.train(was_training)
    close = ThinkTokenizer().encode_plain(THINK_CLOSE)[0]
    return float(torch.softmax(logits, -1)[:, close].mean().item())


@dataclass
class VerboseStart:
    """One SFT'd verbose policy and its data; every run starts from a copy of `state`."""

    tokenizer: ThinkTokenizer
    state: dict[str, Any]
    train: list[Problem]
    dev: list[Problem]
    sft_steps: int
    seed: int

    def model(self) -> Any:
        model = build_char_model(self.tokenizer, self.seed, positions=64)
        model.load_state_dict(copy.deepcopy(self.state))
        return model


def sft_verbose(
    seed: int = 0,
    target: float = 0.35,
    max_steps: int = 3000,
    batch: int = 64,
    lr: float = 1e-3,
    log: Callable[[str], None] | None = None,
) -> VerboseStart:
    """SFT on verbose targets until greedy dev accuracy (on 128 dev prompts) first reaches `target`, as
    the demo's SFT does."""
    tokenizer = ThinkTokenizer()
    train, dev = verbose_problems(seed)
    model = build_char_model(tokenizer, seed, positions=64)
    backend = HFBackend(model, tokenizer, seed=seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    rng = random.Random(seed)
    step, accuracy = 0, 0.0
    while step < max_steps and accuracy < target:
        rows = [rng.choice(train) for _ in range(batch)]
        pairs = [
            (tokenizer.encode(p.prompt), tokenizer.encode_answer(verbose_target(p.reference, rng)))
            for p in rows
        ]
        sft_step(model, optimizer, pairs, PAD)
        step += 1
        if step % 20 == 0:  # 128 greedy answers of up to 40 tokens cost several SFT steps
            accuracy = greedy_accuracy(backend, dev[:128])
            if log is not None:
                log(f"SFT step {step}: dev accuracy {accuracy:.3f}")
    return VerboseStart(tokenizer, model.state_dict(), train, dev, step, seed)


def greedy_accuracy(backend: HFBackend, problems: Sequence[Problem]) -> float:
    greedy = backend.generate([p.prompt for p in problems], SamplingParams(0.0, MAX_NEW_TOKENS))
    return sum(answer_of(o.text) == p.reference for o, p in zip(greedy, problems, strict=True)) / len(
        problems
    )


def solve_rates(start: VerboseStart, problems: Sequence[Problem], k: int = 8) -> dict[str, float]:
    """The SFT'd policy's accuracy on each prompt over `k` samples at temperature 1."""
    backend = HFBackend(start.model(), start.tokenizer, seed=start.seed + 1)
    params = SamplingParams(1.0, MAX_NEW_TOKENS)
    outs = backend.generate([p.prompt for p in problems for _ in range(k)], params)
    return {
        p.id: sum(answer_of(o.text) == p.reference for o in outs[i * k : (i + 1) * k]) / k
        for i, p in enumerate(problems)
    }


def write_solve_rates(start: VerboseStart, directory: Path, k: int = 8) -> Path:
    """AdaptThink's pre-sampling over the training prompts, as `assay validate --policy` writes it (`id`,
    `solve_rate`), into `directory` (the server's ASSAY_SOLVE_RATES)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / SOLVE_RATES
    rates = solve_rates(start, start.train, k)
    path.write_text("".join(json.dumps({"id": i, "solve_rate": r}) + "\n" for i, r in rates.items()))
    return path


def verbose_config(
    shaping: ShapingConfig, steps: int, seed: int, prompts_per_step: int = 32, lr: float = 3e-4
) -> TrainConfig:
    """The run every method shares: GRPO, group 8, no dynamic sampling (AdaptThink needs every group,
    and all runs take the same batches so lengths compare)."""
    if (
        shaping.method == "adapt_think"
        and shaping.reference_accuracy is None
        and not shaping.reference_accuracy_file
    ):
        shaping = replace(shaping, reference_accuracy_file=SOLVE_RATES)
    return TrainConfig(
        steps=steps,
        lr=lr,
        seed=seed,
        generate=GenerateConfig(group_size=8, temperature=1.0, max_new_tokens=MAX_NEW_TOKENS),
        control=ControlConfig(prompts_per_step=prompts_per_step, dynamic_sampling=False),
        loss=LossConfig(),
        shaping=shaping,
    )


@dataclass
class VerboseRun:
    before: Measure
    after: Measure
    history: list[dict[str, Any]]
    seconds: float
    cfg: TrainConfig
    backend: HFBackend  # the trained policy's


def train_verbose(
    start: VerboseStart,
    cfg: TrainConfig,
    url: str,
    out: Path | None = None,
    progress: bool = False,
    eval_problems: Sequence[Problem] | None = None,
    budget_s: float | None = None,
    before: Measure | None = None,
) -> VerboseRun:
    """`cfg.steps` steps of the trainer (fewer if `budget_s` runs out) from a copy of `start`'s policy
    against the service at `url`."""
    dev = list(eval_problems or start.dev)
    model = start.model()
    backend = HFBackend(model, start.tokenizer, seed=cfg.seed)
    before = before or measure(backend, dev)
    trainer = Trainer(
        model,
        backend,
        ServiceRewards(AssayClient(url, timeout_s=60.0)),
        start.train,
        cfg,
        pad_id=PAD,
        log_path=out / "log.jsonl" if out is not None else None,
        progress=progress,
    )
    started = time.perf_counter()
    try:
        while trainer.step < cfg.steps and (budget_s is None or time.perf_counter() - started < budget_s):
            trainer.train_step()
    finally:
        trainer.close()
    seconds = time.perf_counter() - started
    return VerboseRun(before, measure(backend, dev), trainer.history, seconds, cfg, backend)


def run_think_demo(out: Path, options: Any, started: float) -> dict[str, Any]:
    """`assay train --demo` with `shaping.method adapt_think` (`demo.run_demo` sends it here): SFT a
    verbose thinking policy, pre-sample its solve rates, train against a service that reads them."""
    from assay.rl_client.runs import summary as run_summary
    from assay.rl_client.runs.service import local_service
    from assay.settings import Settings

    if options.server:
        raise ConfigError(
            "--demo with adapt_think starts its own server: it pre-samples the solve-rate file that server "
            "reads (ASSAY_SOLVE_RATES); leave --server out"
        )
    start = sft_verbose(options.seed, options.sft_target)
    rates = out / "solve-rates"
    write_solve_rates(start, rates)
    cfg = verbose_config(options.shaping, options.steps, options.seed, options.prompts_per_step)
    with local_service(Settings(workers=1, solve_rates=rates)) as url:
        budget = max(0.0, options.time_budget_s - (time.perf_counter() - started))
        run = train_verbose(start, cfg, url, out, options.progress, budget_s=budget)
    steps = len(run.history)
    title = f"assay train --demo, adapt_think (seed {options.seed})"
    run_summary.plot_run(out, run.before.accuracy, run.history, steps, run.after.accuracy, title)
    tail = run.history[-10:]
    return {
        **run_summary.common(
            "demo", run.before.accuracy, run.after.accuracy, steps, cfg.steps, options.time_budget_s
        ),
        "sft_steps": start.sft_steps,
        "rl_seconds": round(run.seconds, 2),
        "seed": options.seed,
        "shaping": cfg.shaping.method,
        "response_length": round(statistics.fmean(r["response_length"] for r in tail), 3) if tail else None,
        "length_before": run.before.length,
        "length_after": run.after.length,
        "nothinking_before": run.before.nothinking,
        "nothinking_after": run.after.nothinking,
        "server": "in-process",
        "torch_threads": torch.get_num_threads(),
        "config": cfg.as_dict(),
    }
