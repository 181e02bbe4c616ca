"""Speculative decoding against the real vLLM CPU build (`.venv-vllm`): n-gram drafting passed through
`backend.server.speculative`, drafting only while at most MAX_BATCH requests run.

One server for the module (15-25 s to start). "Off" is the same engine above MAX_BATCH (vLLM's
per-batch-size schedule drafts 0 tokens there) and a transformers greedy decode of the same weights.
The tiny random model writes repetitive text, which prompt lookup drafts well: the acceptance seen here
says nothing about real models.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_models import build_chat_model

from assay.rl_client.generate import SamplingParams
from assay.rl_client.runs.config import ServerSection, SpeculativeSection
from assay.rl_client.runs.models import TextTokenizer
from assay.rl_client.runs.vllm_server import VLLMServerBackend, start_server

pytestmark = [pytest.mark.slow, pytest.mark.requires_vllm, pytest.mark.timeout(600)]

VLLM_PYTHON = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1}
MAX_BATCH = 2
PROMPTS = ["a b c a b c a b c", "What is 2 + 2? 2 + 2 is", "x y x y x y x y"]
GREEDY = SamplingParams(0.0, 24)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VLLMServerBackend, Path]]:
    if not VLLM_PYTHON.exists():
        pytest.fail(f"{VLLM_PYTHON} is missing: run scripts/setup_vllm_venv.sh")
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("vllm-speculative")
    model_dir = build_chat_model(VLLM_PYTHON, root / "tiny-chat")
    tokenizer = TextTokenizer(AutoTokenizer.from_pretrained(str(model_dir)))
    options = ServerSection(
        python=str(VLLM_PYTHON), args=["--max-model-len", "512"], start_timeout_s=240,
        speculative=SpeculativeSection(config=NGRAM, max_batch=MAX_BATCH),
    )  # fmt: skip
    with start_server(model_dir, options, root / "server") as url:
        backend = VLLMServerBackend(url, tokenizer, root / "weights", options=options)
        try:
            yield backend, model_dir
        finally:
            backend.close()


def test_greedy_output_is_identical_with_drafting_on_and_off(server: Any) -> None:
    from transformers import AutoModelForCausalLM

    backend, model_dir = server
    backend.step_signals()
    drafted = [backend.generate([p], GREEDY)[0] for p in PROMPTS]  # one at a time: drafting on
    on = backend.step_signals()
    crowded = backend.generate(PROMPTS * 6, GREEDY)[: len(PROMPTS)]  # 18 at once: drafting off
    assert on["spec_draft_tokens"] and on["spec_draft_tokens"] > 0
    assert on["spec_acceptance"] is not None and 0.0 < on["spec_acceptance"] <= 1.0
    assert [c.token_ids for c in drafted] == [c.token_ids for c in crowded]
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    for c in drafted:  # and the model's own greedy decode, without vLLM
        with torch.no_grad():
            out = model.generate(torch.tensor([c.prompt_ids]), max_new_tokens=24, do_sample=False)
        assert out[0, len(c.prompt_ids) :].tolist() == c.token_ids


def test_drafting_stops_when_more_requests_run_than_max_batch(server: Any) -> None:
    backend, _ = server
    backend.step_signals()
    backend.generate([PROMPTS[0]], GREEDY)
    alone = backend.step_signals()["spec_draft_tokens"]
    backend.generate([PROMPTS[0]] * 16, GREEDY)  # 16 at once: far above MAX_BATCH
    crowded = backend.step_signals()["spec_draft_tokens"]
    assert alone is not None and crowded is not None and alone > 0
    # drafting for all 16 would draft about 16x what one request drafts; only the first moments,
    # before more than MAX_BATCH requests have arrived, may draft
    assert crowded < 4 * alone, (alone, crowded)
