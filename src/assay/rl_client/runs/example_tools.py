"""`assay train --init DIR --tools`: a runnable tool-use example of a configured run (issue 26).

The task of `--demo tools` as files a user can edit: `DIR/run.yaml` (a GRPO run whose rollouts call the
python tool in Assay sessions, `train.tools`), `DIR/data/{train,eval}.jsonl` (3-digit multiplication in
columns `question`/`answer`) and `DIR/model`, a character tokenizer and a 0.2M-parameter GPT-2 saved with
`save_pretrained`. The model is first taught the call format by a short SFT on tool-use traces
(`<python>123*456</python>`, the observation masked, the product copied): from a random start no
rollout would ever call the tool, and RL would have nothing to reward.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

RUN_YAML = """\
# GRPO with a tool, rewarded by Assay sessions: each rollout holds a python session, may call
# <python>code</python>, reads <output>...</output> and answers; the session's verify scores the answer.
# Run it with
#   assay train --config {name}/run.yaml
# (a sandbox is needed: the in-process service runs the python calls under bubblewrap).
model:
  path: model
data:
  train: data/train.jsonl
  eval: data/eval.jsonl
  eval_size: 50
  fields: {{prompt: question, reference: answer}}
  task: math
backend:
  kind: hf                     # hf | vllm | vllm_server
reward:
  url: null                    # an Assay service with sessions; null starts one in this process
train:
  steps: {steps}
  lr: 2.0e-4
  seed: {seed}
  eval_every: 10
  generate: {{group_size: 8, temperature: 1.0, max_new_tokens: 24}}   # per turn
  control: {{prompts_per_step: 8, max_rounds: 2}}
  tools:
    tools: [python]
    call_format: tags          # or hermes: <tool_call>{{"name": ..., "arguments": ...}}</tool_call>
    max_turns: 2               # the last turn cannot call a tool
    max_total_tokens: 64       # response and observations together
    limits: {{max_steps: 2, call_wall_s: 5}}
output:
  dir: out
  checkpoint_every: 10
time_budget_s: 240             # a safety stop (whole run, seconds); summary.json: stopped_by
"""


def write_tools_example(
    directory: Path, seed: int = 0, steps: int = 20, sft_steps: int = 120
) -> dict[str, Any]:
    """Write the config, the data and the SFT-warmed tiny model; returns what was made."""
    from assay.rl_client.runs.demo_tools import ALPHABET, problems, sft
    from assay.rl_client.runs.example import one_torch_thread, save_run, write_data
    from assay.rl_client.runs.models import TextTokenizer, build_char_model, char_tokenizer

    started = time.perf_counter()
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    pool = problems(256 + 512 + 200, rng)
    traces, train, held = pool[:256], pool[256:-200], pool[-200:]
    write_data(directory, {"train": train, "eval": held})
    raw = char_tokenizer(alphabet=ALPHABET)
    model = build_char_model(raw, seed, width=64, layers=2, positions=96)
    with one_torch_thread():
        loss = sft(model, TextTokenizer(raw), traces, sft_steps, seed)
    save_run(directory, model, raw, RUN_YAML.format(name=directory.name, steps=steps, seed=seed))
    return {
        "dir": str(directory),
        "sft_steps": sft_steps,
        "sft_loss": round(loss, 4),
        "seconds": round(time.perf_counter() - started, 2),
    }
