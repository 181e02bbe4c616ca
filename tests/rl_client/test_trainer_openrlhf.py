"""OpenRLHF 0.11.2's own rollout code (`SingleTurnAgentExecutor`, its remote reward client) against a live
Assay `/get_reward`.

OpenRLHF is installed without its GPU dependencies (scripts/setup_trainer_clients.sh). The only stand-in
is the generation engine: a scripted object that returns fixed token ids where OpenRLHF awaits vLLM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

with contextlib.suppress(ImportError):  # the marker below skips locally and fails in CI without it
    import openrlhf.utils.agent as agent

pytestmark = pytest.mark.requires_trainer_clients

PROMPT = "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tiny_models import build_tokenizer

    return build_tokenizer(Path(tmp_path_factory.mktemp("tok")))


class ScriptedEngine:
    """Where OpenRLHF awaits vLLM: answers every prompt with the same response tokens."""

    def __init__(self, response_ids: list[int]) -> None:
        self.response_ids = response_ids

    async def generate(self, prompt_ids: list[int], params: Any, multi_modal_data: Any = None) -> Any:
        output = SimpleNamespace(token_ids=self.response_ids, finish_reason="stop", logprobs=None)
        return SimpleNamespace(outputs=[output])


def _rollout(url: str, tokenizer: Any, response: str, label: str) -> dict[str, Any]:
    executor = agent.SingleTurnAgentExecutor(remote_rm_url=url + "/get_reward")
    engine = ScriptedEngine(tokenizer(response, add_special_tokens=False)["input_ids"])
    params = SimpleNamespace(max_tokens=64, logprobs=None)
    output: dict[str, Any] = asyncio.run(executor.execute(PROMPT, label, params, 256, tokenizer, engine))
    return output


def test_openrlhf_rollout_gets_assay_rewards(assay_service: str, tokenizer: Any) -> None:
    # OpenRLHF decodes prompt + response with special tokens as `query`; Assay strips the prompt.
    good = _rollout(assay_service, tokenizer, "It is \\boxed{42}<|im_end|>", "42")
    bad = _rollout(assay_service, tokenizer, "\\boxed{41}<|im_end|>", "42")
    assert good["reward"] == [1.0] and good["extra_logs"]["scored"] == [1.0]
    assert bad["reward"] == [0.0]


@pytest.mark.slow
def test_openrlhf_refused_batch_is_logged_and_counted_by_assay(
    live_server: Any, tokenizer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # OpenRLHF retries a refused batch 5 times (1 s apart), then only logs at INFO and carries on with
    # reward None. What the user can read is Assay's: a warning per item and a metric.
    server = live_server(openrlhf_task="buggy")
    with caplog.at_level(logging.WARNING, logger="assay.openrlhf"):
        output = _rollout(server.url, tokenizer, "\\boxed{42}<|im_end|>", "42")
    assert output["reward"] is None
    lines = [r.getMessage() for r in caplog.records if r.name == "assay.openrlhf"]
    assert len(lines) == 5  # one per attempt, each naming the item, its status and the reason
    assert all("item 0 of 1 refused the batch (error)" in line and "scorer bug" in line for line in lines)
    with server.client() as client:
        metrics = client.get("/metrics").text
    assert 'assay_openrlhf_unscored_items_total{action="refused",status="error"} 5.0' in metrics


def test_an_invalid_sample_is_stored_as_none_at_once_not_after_five_retries(
    assay_service: str, tokenizer: Any, caplog: pytest.LogCaptureFixture
) -> None:
    # a label that is not an answer: retrying cannot help, so OpenRLHF must get an answer it does not retry
    with caplog.at_level(logging.WARNING, logger="assay.openrlhf"):
        output = _rollout(assay_service, tokenizer, "\\boxed{42}<|im_end|>", "\\frac{")
    assert output["reward"] is None and output["scores"] is None
    lines = [r.getMessage() for r in caplog.records if r.name == "assay.openrlhf"]
    assert len(lines) == 1 and "item 0 of 1 refused the batch (invalid)" in lines[0]


def test_openrlhf_zero_mode_sends_zero_and_counts_it(live_server: Any, tokenizer: Any) -> None:
    server = live_server(openrlhf_task="buggy", openrlhf_unscored="zero")
    output = _rollout(server.url, tokenizer, "\\boxed{42}<|im_end|>", "42")
    assert output["reward"] == [0.0] and output["extra_logs"]["scored"] == [0.0]
    with server.client() as client:
        metrics = client.get("/metrics").text
    assert 'assay_openrlhf_unscored_items_total{action="zero",status="error"} 1.0' in metrics
