"""`assay train --demo tools`: the point of tools, on a CPU in minutes (issue 26).

The task is multiplying two 3-digit numbers, which a 0.2M-parameter model cannot do in its head but can
do with the python tool: write `<python>123*456</python>`, read `<output>\\n56088\\n</output>\\n`, copy
the number. A short SFT on a few tool-use traces (observation tokens masked, as in RL) teaches the
format; GRPO against a live Assay service with python sessions then trains on the verdicts of the
sessions' `verify`. Reported: greedy accuracy with tools at the start and the end of RL, and the same
model without tools (its calls are not run: it must answer from what it writes itself).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from assay.client import AssayClient
from assay.rl_client.backends.hf import HFBackend
from assay.rl_client.config import ControlConfig, GenerateConfig, ToolsConfig, TrainConfig
from assay.rl_client.filter import ServiceRewards
from assay.rl_client.generate import Problem, SamplingParams
from assay.rl_client.multiturn import ToolRollouts
from assay.rl_client.runs import rundir
from assay.rl_client.runs import summary as run_summary
from assay.rl_client.runs.demo import PAD, CharTokenizer
from assay.rl_client.runs.models import build_char_model
from assay.rl_client.runs.sft import MaskedPair, sft_step
from assay.rl_client.trainer import Trainer

ALPHABET = "0123456789*=<>/\npythonu"
OBSERVATION = "<output>\n{observation}</output>\n"


@dataclass(frozen=True)
class ToolsDemoOptions:
    seed: int = 0
    sft_traces: int = 256  # tool-use traces shown in SFT
    sft_steps: int = 120  # start well below the ceiling (0.62 measured), so RL has room to show
    # A step count ends RL, not the machine's load (issue 43); seed 0 on a loaded 2-core machine: 20 steps
    # in 101 s of RL, 132 s in all, 0.62 -> 0.72.
    rl_steps: int = 20
    eval_size: int = 50
    time_budget_s: float = 480.0  # a safety stop (whole run); the summary's stopped_by says when it fired
    server: str | None = None
    progress: bool = True
    fresh: bool = False  # start anew in an `out` that holds a finished run (`rundir.py`)


def problems(count: int, rng: random.Random) -> list[Problem]:
    out = []
    for i in range(count):
        a, b = rng.randint(100, 999), rng.randint(100, 999)
        out.append(Problem(f"m{i}", f"{a}*{b}=", str(a * b)))
    return out


def trace(problem: Problem) -> tuple[str, str, str]:
    """The policy's call, the observation the session shows, the policy's answer."""
    expression = problem.prompt.rstrip("=")
    return (
        f"<python>{expression}</python>",
        OBSERVATION.format(observation=problem.reference + "\n"),
        problem.reference,
    )


def tool_rows(tok: Any, traces: Sequence[Problem]) -> list[MaskedPair]:
    """SFT rows of the traces: the prompt, then the call, the observation, the answer and the end token
    as the target, the observation masked (the session wrote it, not the policy)."""
    rows = []
    for p in traces:
        call, obs, answer = trace(p)
        target: list[int] = []
        learn: list[bool] = []
        for text, learned in ((call, True), (obs, False), (answer, True)):
            part = tok.encode_plain(text)
            target += part
            learn += [learned] * len(part)
        rows.append((tok.encode(p.prompt), [*target, tok.eos_token_id], [*learn, True]))
    return rows


def sft(model: Any, tok: Any, traces: Sequence[Problem], steps: int, seed: int) -> float:
    """Supervised steps (batches of 32 drawn with replacement) on the policy's tokens of the traces; the
    last step's loss. `tok`: the demo's `CharTokenizer` or a transformers one through
    `models.TextTokenizer` (`--init --tools`)."""
    rows = tool_rows(tok, traces)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = random.Random(seed)
    loss = 0.0
    for _ in range(steps):
        loss = sft_step(model, optimizer, [rng.choice(rows) for _ in range(32)], tok.pad_token_id)
    model.eval()
    return loss


def eval_with_tools(tools: ToolRollouts, dev: Sequence[Problem]) -> float:
    groups = tools.sample_groups(dev, [1] * len(dev), version=-1, temperature=0.0)
    return sum(s.raw_score is True for g in groups for s in g.samples) / len(dev)


def eval_without_tools(backend: HFBackend, client: AssayClient, dev: Sequence[Problem], budget: int) -> float:
    """Greedy, no tool run: the answer is what follows the model's own last `</output>` (or all of it)."""
    outs = backend.generate([p.prompt for p in dev], SamplingParams(0.0, budget))
    answers = [o.text.rsplit("</output>\n", 1)[-1] for o in outs]
    items = [
        {"task": "math", "prompt": p.prompt, "reference": p.reference, "response": a}
        for p, a in zip(dev, answers, strict=True)
    ]
    return sum(r.correct is True for r in client.score(items)) / len(dev)


def train_config(options: ToolsDemoOptions) -> TrainConfig:
    return TrainConfig(
        steps=options.rl_steps,
        lr=2e-4,
        seed=options.seed,
        generate=GenerateConfig(group_size=8, temperature=1.0, max_new_tokens=24),
        control=ControlConfig(prompts_per_step=8, dynamic_sampling=True, max_rounds=2),
        tools=ToolsConfig(
            tools=("python",), max_turns=2, max_total_tokens=64, observation_template=OBSERVATION,
            limits={"max_steps": 2, "call_wall_s": 5.0},
        ),
    )  # fmt: skip


def run_tools_demo(out: Path, options: ToolsDemoOptions) -> dict[str, Any]:
    from assay.rl_client.runs.service import local_service
    from assay.settings import Settings

    started = time.perf_counter()
    rundir.announce(rundir.prepare(out, fresh=options.fresh, resumable=False))
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(options.seed)
    rng = random.Random(options.seed)
    tok = CharTokenizer(ALPHABET)
    model = build_char_model(tok, options.seed, width=64, layers=2, positions=96)
    backend = HFBackend(model, tok, seed=options.seed)
    pool = problems(options.sft_traces + 512 + options.eval_size, rng)
    traces, train, dev = (
        pool[: options.sft_traces],
        pool[options.sft_traces : -options.eval_size],
        pool[-options.eval_size :],
    )
    sft_loss = sft(model, tok, traces, options.sft_steps, options.seed)
    cfg = train_config(options)
    settings = Settings(workers=1, sessions={"max_open": 128})
    with (
        local_service(settings) if options.server is None else _given(options.server) as url,
        AssayClient(url) as client,
    ):
        tools = ToolRollouts(backend, client, cfg)
        eval_start = eval_with_tools(tools, dev)
        trainer = Trainer(model, backend, ServiceRewards.at(url), train, cfg, pad_id=PAD,
                          log_path=out / "log.jsonl", progress=options.progress, sessions=client)  # fmt: skip
        try:
            while trainer.step < cfg.steps and time.perf_counter() - started < options.time_budget_s:
                trainer.train_step()
        finally:
            trainer.close()
        eval_end = eval_with_tools(tools, dev)
        eval_no_tools = eval_without_tools(backend, client, dev, cfg.tools.max_total_tokens)
    title = f"assay train --demo tools (seed {options.seed})"
    run_summary.plot_run(out, eval_start, trainer.history, trainer.step, eval_end, title)
    summary = {
        **run_summary.common(
            "demo_tools", eval_start, eval_end, trainer.step, cfg.steps, options.time_budget_s
        ),
        "eval_no_tools": eval_no_tools,
        "sft_steps": options.sft_steps,
        "sft_loss": round(sft_loss, 4),
        "seconds": round(time.perf_counter() - started, 1),
        "seed": options.seed,
    }
    run_summary.write(out, summary)
    return summary


class _given:
    """A context manager yielding an existing service's URL (`--server URL`)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def __enter__(self) -> str:
        return self.url

    def __exit__(self, *exc: object) -> None:
        return None
