"""Drives `VLLMBackend` on a real vLLM (the CPU build in `.venv-vllm`) for `test_rl_vllm_real.py`.

Run as a script (Assay's environment has no vLLM; the server-mode test only borrows `hf_logprobs`):

    PYTHONPATH=src .venv-vllm/bin/python tests/rl_client/vllm_driver.py MODEL_DIR OUT_JSON

with the environment the test sets (no multiprocessing, 1 GiB KV cache, offline). It samples groups the
way the trainer does (`sample_groups`), decodes greedily, syncs perturbed weights, decodes greedily again,
syncs the original weights back and decodes once more; it also scores every returned response with a
transformers forward pass of the weights vLLM should be holding at that moment. It writes what it saw to
OUT_JSON; the test makes the assertions, so a failure shows the numbers.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from assay.rl_client.backends.vllm import VLLMBackend
from assay.rl_client.generate import Completion, Problem, SamplingParams, sample_groups

GROUP = 4
MAX_NEW_TOKENS = 8
# The second prompt is longer than one KV-cache block (128 tokens on CPU), so vLLM's prefix cache holds a
# full block of it: a sync that did not reset the cache would decode from keys and values of the old weights.
PROMPTS = [
    "What is 2 + 2?",
    "Feedback: the response follows the reference answer and explains each step. " * 12,  # 168 tokens
]
NOISE = 0.1  # the tiny model's weights are initialised with std 0.02: this makes a different model


def hf_logprobs(model: Any, completion: Completion) -> list[float]:
    """Log-probability of each response token under `model`, from one float32 forward pass."""
    ids = torch.tensor([completion.prompt_ids + completion.token_ids])
    with torch.no_grad():
        logits = model(ids).logits[0].float()
    start = len(completion.prompt_ids) - 1
    logp = torch.log_softmax(logits[start : start + len(completion.token_ids)], dim=-1)
    return [float(v) for v in logp.gather(1, torch.tensor(completion.token_ids)[:, None])[:, 0]]


def record(completions: list[Completion], model: Any) -> list[dict[str, Any]]:
    return [
        {
            "prompt_ids": c.prompt_ids,
            "token_ids": c.token_ids,
            "text": c.text,
            "logprobs": c.logprobs,
            "truncated": c.truncated,
            "hf_logprobs": hf_logprobs(model, c),
        }
        for c in completions
    ]


def main(model_dir: str, out_path: str) -> None:
    torch.manual_seed(1)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    original = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    perturbed = copy.deepcopy(original)  # keeps the tied embedding / lm_head shared
    with torch.no_grad():
        for param in perturbed.parameters():
            param.add_(torch.randn_like(param) * NOISE)

    backend = VLLMBackend(
        model_dir,
        seed=0,
        enforce_eager=True,
        distributed_executor_backend="uni",
        dtype="float32",  # so log-probabilities can be compared with the float32 transformers model
        max_model_len=256,
    )
    problems = [Problem(id=str(i), prompt=p, reference="") for i, p in enumerate(PROMPTS)]
    groups = sample_groups(
        backend, problems, [GROUP] * len(problems), SamplingParams(1.0, MAX_NEW_TOKENS), version=0
    )
    greedy = SamplingParams(0.0, MAX_NEW_TOKENS)

    result: dict[str, Any] = {
        "group": GROUP,
        "max_new_tokens": MAX_NEW_TOKENS,
        "eos_token_id": tokenizer.eos_token_id,
        "prompt_ids": [tokenizer(p)["input_ids"] for p in PROMPTS],
        "groups": [record([s.completion for s in g.samples], original) for g in groups],
        "greedy": record(backend.generate(PROMPTS, greedy), original),
    }
    backend.sync_weights(perturbed)
    result["greedy_perturbed"] = record(backend.generate(PROMPTS, greedy), perturbed)
    backend.sync_weights(original)
    result["greedy_restored"] = record(backend.generate(PROMPTS, greedy), original)
    Path(out_path).write_text(json.dumps(result))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} MODEL_DIR OUT_JSON")
    main(sys.argv[1], sys.argv[2])
