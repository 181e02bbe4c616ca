"""Filter: a result that is not ok masks its sample out of the loss (weight 0, reward None), never 0."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
import torch

from assay.client import AssayClient
from assay.rl_client.config import LossConfig
from assay.rl_client.filter import RewardPipe, ServiceRewards, apply_results, reward_items
from assay.rl_client.generate import Group, Problem, Sample
from assay.rl_client.loss import group_advantages, policy_loss
from assay.rl_client.policy import collate
from assay.types import Result
from rl_client.fakes import completion


def _group(texts: list[str], task: str = "math") -> Group:
    samples = [Sample(completion(t), 0) for t in texts]
    return Group(Problem("q", "2+2=", "4", task), "2+2=", samples)


def _fake_assay(request: httpx.Request) -> httpx.Response:
    """Scores exact matches; any response "slow" times out, as a stuck verifier would."""
    items = json.loads(request.content)["items"]
    results = []
    for item in items:
        if item["response"] == "slow":
            results.append(Result.timeout("deadline passed", id=item["id"]))
        else:
            results.append(Result.verdict(item["response"] == item["reference"], id=item["id"]))
    return httpx.Response(200, json={"results": [r.model_dump(mode="json") for r in results]})


def _score(group: Group, client: AssayClient) -> None:
    pipe = RewardPipe(ServiceRewards(client))
    try:
        results = pipe.submit(reward_items([group])).result(timeout=60)
    finally:
        pipe.close()
    apply_results(group.samples, results)


def test_items_carry_prompt_reference_task_and_hint() -> None:
    group = _group(["4"])
    group.hint = "1"
    [item] = reward_items([group])
    assert item == {"id": "q/0", "task": "math", "prompt": "2+2=", "response": "14", "reference": "4"}


def test_a_timed_out_sample_gets_zero_weight_not_reward_zero() -> None:
    group = _group(["4", "5", "slow", "4"])
    client = AssayClient("http://assay.test", async_transport=httpx.MockTransport(_fake_assay))
    _score(group, client)
    assert [s.reward for s in group.samples] == [1.0, 0.0, None, 1.0]
    assert [s.weight for s in group.samples] == [1.0, 1.0, 0.0, 1.0]
    rewards = [s.reward if s.weight > 0 else None for s in group.samples]
    advantages = group_advantages(rewards, scale_std=False)
    # mean over the three scored samples is 2/3; scoring "slow" as 0 would have made it 1/2
    assert advantages == pytest.approx([1 / 3, -2 / 3, 0.0, 1 / 3])
    batch = collate(group.samples, advantages, pad_id=0)
    assert batch.mask[2].sum().item() == 0
    logp = torch.zeros_like(batch.mask, requires_grad=True)
    policy_loss(logp, logp.detach(), batch.advantages, batch.mask, LossConfig(), 4).loss.backward()
    assert logp.grad is not None and logp.grad[2].abs().sum().item() == 0


def test_results_must_match_samples_one_to_one() -> None:
    with pytest.raises(ValueError, match="1 results for 2 samples"):
        apply_results(_group(["4", "4"]).samples, [Result.verdict(True)])


def test_requests_are_counted() -> None:
    source = ServiceRewards(
        AssayClient("http://assay.test", batch_size=2, async_transport=httpx.MockTransport(_fake_assay))
    )
    _score(_group(["4"] * 5), source.client)
    pipe = RewardPipe(source)
    try:
        pipe.submit(reward_items([_group(["4"] * 5)])).result(timeout=60)
    finally:
        pipe.close()
    assert source.requests == 3
    assert len(pipe.latencies) == 1


def test_live_service_errors_are_masked(live_server: Callable[..., Any]) -> None:
    """Against a real server: the `buggy` test plugin's scorer raises, which Assay reports as error."""
    server = live_server()
    group = _group(["4", "5"])
    broken = _group(["4", "4"], task="buggy")
    pipe = RewardPipe(ServiceRewards(AssayClient(server.url)))
    try:
        results = pipe.submit(reward_items([group, broken])).result(timeout=120)
    finally:
        pipe.close()
    apply_results(group.samples + broken.samples, results)
    assert [s.reward for s in group.samples] == [1.0, 0.0]
    assert [s.result.status.value for s in broken.samples if s.result] == ["error", "error"]
    assert [(s.reward, s.weight) for s in broken.samples] == [(None, 0.0), (None, 0.0)]


def test_in_process_engine_is_a_reward_source() -> None:
    from assay.engine.scoring import Engine
    from assay.rl_client.filter import EngineRewards
    from assay.settings import Settings

    group = _group(["\\boxed{4}", "5"])
    with Engine(Settings(workers=1)) as engine:
        pipe = RewardPipe(EngineRewards(engine))
        try:
            results = pipe.submit(reward_items([group])).result(timeout=120)
        finally:
            pipe.close()
    apply_results(group.samples, results)
    assert [s.reward for s in group.samples] == [1.0, 0.0]
