"""Samples through `assay validate --policy vllm:MODEL`'s sampler on a real vLLM (the CPU build in
`.venv-vllm`) for `test_solve_rate_vllm.py`. Run as a script, the way that test runs it:

    PYTHONPATH=src .venv-vllm/bin/python tests/validate/vllm_sampler_driver.py MODEL_DIR OUT_JSON

It builds the sampler from its spec exactly as the command does (`sampler_from_spec`), asks for K
answers to each prompt, and writes them (and the engine's view of the tokenizer) as JSON; the test makes
the assertions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from assay.validate.solve_rate import BackendSampler, sampler_from_spec

PROMPTS = ["What is 2 + 2?", "Name a colour."]
K = 4
MAX_TOKENS = 8


def main(model_dir: str, out_path: str) -> None:
    sampler = sampler_from_spec(f"vllm:{model_dir}", temperature=1.0, max_tokens=MAX_TOKENS, seed=0)
    assert isinstance(sampler, BackendSampler)
    answers = sampler.sample(PROMPTS, K)
    again = sampler.sample(PROMPTS[:1], K)
    report = {"prompts": PROMPTS, "k": K, "answers": answers, "again": again, "kind": type(sampler).__name__}
    Path(out_path).write_text(json.dumps(report))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} MODEL_DIR OUT_JSON")
    main(sys.argv[1], sys.argv[2])
