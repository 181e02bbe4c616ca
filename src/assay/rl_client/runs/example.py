"""`assay train --init DIR`: a runnable example of a configured run, built offline in about a minute.

It writes `DIR/run.yaml` (every section, commented), `DIR/data/{train,eval}.jsonl` (2-digit addition in
columns named `question`/`answer`, so the field mapping is exercised) and `DIR/model`: a character
tokenizer trained with `tokenizers` and a 0.4M-parameter GPT-2 built from a config, saved with
`save_pretrained`. The model is first trained by SFT until its greedy eval accuracy reaches about 0.35:
from a random start RL has no signal, and a fixed number of SFT steps gave starts from 12% to 69% by
seed, while stopping at an accuracy gave a gain in every seed (the measurements behind `demo.py`).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.rl_client.generate import Problem

RUN_YAML = """\
# A GRPO/DAPO run on 2-digit addition, rewarded by Assay's math task. Run it with
#   assay train --config {name}/run.yaml
# and override any field from the command line, e.g. --set train.steps=20 --set algorithm=star.
model:
  path: model                  # save_pretrained directory (relative to this file); gguf_file for GGUF
data:
  train: data/train.jsonl      # JSON Lines, Parquet, or a saved `datasets` directory
  eval: data/eval.jsonl        # or eval_fraction: 0.05 to hold out part of train
  eval_size: 200
  fields: {{prompt: question, reference: answer}}   # item field -> column
  task: math                   # rows may name their own task (and a `mix` of weighted tasks)
  chat_template: auto          # used when the tokenizer has one
algorithm: grpo                # or star
backend:
  kind: hf                     # hf | vllm | vllm_server
reward:
  url: null                    # an Assay service; null starts one in this process
  task_weights: {{}}             # e.g. {{math: 1.0, code: 0.5}}
train:
  steps: {steps}
  lr: 3.0e-4
  seed: {seed}
  eval_every: 10
  generate: {{group_size: 8, temperature: 1.0, max_new_tokens: 4}}
  control: {{prompts_per_step: 32, oversample: 2.0}}
star:                          # used when algorithm is star
  iterations: 4
  samples: 4
  prompts: 512
  hint_template: "{{answer}}|{{prompt}}"
  sft_steps: 40
output:
  dir: out
  checkpoint_every: 10
  tensorboard: false
time_budget_s: 170             # a safety stop (whole run, seconds); summary.json: stopped_by
"""


def write_example(
    directory: Path, seed: int = 0, steps: int = 120, sft_target: float = 0.35
) -> dict[str, Any]:
    """Write the config, the data and the warmed-up tiny model; returns what was made."""
    from assay.rl_client.backends.hf import HFBackend
    from assay.rl_client.runs.addition import addition_problems
    from assay.rl_client.runs.demo import sft_until
    from assay.rl_client.runs.models import TextTokenizer, build_char_model, char_tokenizer

    started = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    train, held = addition_problems(seed, dev_size=200)
    write_data(directory, {"train": train, "eval": held})
    raw = char_tokenizer()
    tokenizer = TextTokenizer(raw)
    model = build_char_model(raw, seed)
    with one_torch_thread():
        sft = sft_until(HFBackend(model, tokenizer, seed=seed), tokenizer, train, held,
                        target=sft_target, seed=seed)  # fmt: skip
    save_run(directory, model, raw, RUN_YAML.format(name=directory.name, steps=steps, seed=seed))
    return {
        "dir": str(directory),
        "sft_steps": sft.steps,
        "sft_eval_accuracy": sft.dev_accuracy,
        "seconds": round(time.perf_counter() - started, 2),
    }


def write_data(directory: Path, splits: dict[str, Sequence[Problem]]) -> None:
    """`data/<split>.jsonl` with the fields the example configs name (id, question, answer)."""
    data = directory / "data"
    data.mkdir(exist_ok=True)
    for name, problems in splits.items():
        lines = [json.dumps({"id": p.id, "question": p.prompt, "answer": p.reference}) for p in problems]
        (data / f"{name}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def save_run(directory: Path, model: Any, tokenizer: Any, run_yaml: str) -> None:
    """The warmed-up model and its tokenizer in `model/`, and the run config beside them."""
    model.save_pretrained(str(directory / "model"))
    tokenizer.save_pretrained(str(directory / "model"))
    (directory / "run.yaml").write_text(run_yaml, encoding="utf-8")


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch on one thread while the example warms up: on a busy 2-core machine 2 threads ran 10x slower."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
