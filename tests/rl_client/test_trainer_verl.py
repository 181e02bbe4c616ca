"""verl 0.9.1's own code against a live Assay: its SandboxFusion client on `/run_code`, its reward loop
managers with our `compute_score`, and its legacy batch manager with our `compute_score_batch`.

verl is installed without its GPU dependencies (scripts/setup_trainer_clients.sh); these tests run the
modules a user's job runs, not imitations of them.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from assay.integrations import verl as adapter
from assay.integrations.clients import RewardUnavailable
from assay.sandbox.bwrap import find_bwrap

try:
    import torch

    with warnings.catch_warnings():  # verl imports Ray's deprecated state API; not ours to fix
        warnings.simplefilter("ignore", DeprecationWarning)
        import verl.utils.reward_score.sandbox_fusion.utils as sandbox_fusion
        from omegaconf import OmegaConf
        from verl import DataProto
        from verl.trainer.ppo.reward import load_reward_manager
        from verl.workers.reward_manager.batch import BatchRewardManager
except ImportError:  # make test installs it; the marker below skips locally and fails in CI without it
    pass

pytestmark = pytest.mark.requires_trainer_clients

ADAPTER = str(Path(adapter.__file__).resolve())


@pytest.fixture(scope="module")
def sandbox_ready() -> None:
    try:
        find_bwrap()
    except Exception:
        pytest.skip("bubblewrap cannot run here")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from tiny_models import build_tokenizer

    return build_tokenizer(tmp_path_factory.mktemp("tok"))


@pytest.fixture
def event_loop_for_verl() -> Iterator[asyncio.AbstractEventLoop]:
    # verl's managers take the thread's event loop when built; give them a fresh one and close it after.
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()


# -- SandboxFusion client -> /run_code --------------------------------------------------------------------
def _check(url: str, code: str, cases: dict[str, Any], **kwargs: Any) -> list[Any]:
    results, _ = sandbox_fusion.check_correctness(url + "/run_code", cases, code, timeout=10, **kwargs)
    return list(results)


def test_verl_sandbox_client_gets_right_verdicts(live_server: Any, sandbox_ready: None) -> None:
    server = live_server(code={"slots": 2})
    cases = {"inputs": ["3\n", "10\n"], "outputs": ["6\n", "20\n"]}
    assert _check(server.url, "print(int(input()) * 2)", cases) == [True, True]
    assert _check(server.url, "print(int(input()) + 2)", cases) == [False, False]
    asserts = {"assert_case": ["assert f(2) == 4", "assert f(3) == 9"]}
    asserts.update(inputs=["", ""], outputs=[None, None])
    assert _check(server.url, "def f(x):\n    return x * x", asserts) == [True, True]


def test_verl_default_null_memory_limit_is_the_server_default(live_server: Any, sandbox_ready: None) -> None:
    server = live_server(code={"slots": 1})
    cases = {"inputs": [""], "outputs": ["ok\n"]}
    assert _check(server.url, "print('ok')", cases, memory_limit_mb=None) == [True]


@pytest.mark.slow
def test_verl_retries_our_504_when_every_slot_is_taken(
    live_server: Any, sandbox_ready: None, caplog: pytest.LogCaptureFixture
) -> None:
    # One slot and no wait queue: of two concurrent cases, the second is refused while the first holds
    # the slot (its program sleeps). We answer 504, the only status verl retries; a 429 here made verl
    # score a correct program 1/2. verl retries after 1 s, then 2 s more: two cases (not three, which
    # collide again on the first retry) pass unless one program holds the slot over 3 s.
    server = live_server(code={"slots": 1, "max_waiting": 0})
    code = "import time\ntime.sleep(0.2)  # sleep-ok\nprint(int(input()) * 2)"
    cases = {"inputs": ["1\n", "2\n"], "outputs": ["2\n", "4\n"]}
    with caplog.at_level(logging.WARNING):
        verdicts = _check(server.url, code, cases, concurrent_semaphore=threading.Semaphore(2))
    assert verdicts == [True, True]
    assert "Gateway Timeout (504)" in caplog.text  # the refusal happened, and verl retried it


@pytest.mark.slow
def test_verl_max_concurrent_above_our_slots_still_scores_correct_programs(
    live_server: Any, sandbox_ready: None
) -> None:
    # verl's max_concurrent 8 against 1 slot: requests wait for the slot inside their own time budget.
    server = live_server(code={"slots": 1})
    code = "import time\ntime.sleep(0.3)  # sleep-ok\nprint(input())"
    cases = {"inputs": [f"{i}\n" for i in range(8)], "outputs": [f"{i}\n" for i in range(8)]}
    assert _check(server.url, code, cases, concurrent_semaphore=threading.Semaphore(8)) == [True] * 8


# -- reward managers with our compute_score ------------------------------------------------------------
def _batch(tokenizer: Any, rows: list[tuple[str, str, dict[str, Any]]]) -> DataProto:
    """A rollout batch as verl builds it: left-padded prompts, right-padded responses, numpy extras."""
    encoded = [tokenizer(text, add_special_tokens=False)["input_ids"] for text, _, _ in rows]
    width = max(len(ids) for ids in encoded)
    pad = tokenizer.pad_token_id
    responses = torch.tensor([ids + [pad] * (width - len(ids)) for ids in encoded])
    prompts = torch.full((len(rows), 2), pad)
    mask = torch.cat([torch.ones_like(prompts), (responses != pad).long()], dim=1)
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask},
        non_tensors={
            "data_source": np.array(["openai/gsm8k"] * len(rows), dtype=object),
            "reward_model": np.array([{"ground_truth": gold} for _, gold, _ in rows], dtype=object),
            "extra_info": np.array([extra for _, _, extra in rows], dtype=object),
        },
    )


def _manager(name: str, url: str, tokenizer: Any) -> Any:
    config = OmegaConf.create(
        {
            "reward": {
                "custom_reward_function": {
                    "path": ADAPTER,
                    "name": "compute_score",
                    "reward_kwargs": {"url": url},
                },
                "reward_manager": {"source": "register", "name": name},
                "max_concurrent": 4,
            }
        }
    )
    return load_reward_manager(config, tokenizer)


def _run(manager: Any, loop: asyncio.AbstractEventLoop, data: DataProto) -> list[dict[str, Any]]:
    async def all_items() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(manager.run_single(data[i : i + 1]) for i in range(len(data)))))

    return loop.run_until_complete(all_items())


def test_verl_naive_manager_scores_through_our_compute_score(
    assay_service: str, tokenizer: Any, event_loop_for_verl: asyncio.AbstractEventLoop
) -> None:
    data = _batch(tokenizer, [("so \\boxed{72}", "72", {}), ("\\boxed{71}", "72", {"split": "train"})])
    scored = _run(_manager("naive", assay_service, tokenizer), event_loop_for_verl, data)
    assert [s["reward_score"] for s in scored] == [1.0, 0.0]
    assert [s["reward_extra_info"]["assay_status"] for s in scored] == ["ok", "ok"]


def test_verl_naive_manager_stops_on_an_unscorable_item_instead_of_scoring_zero(
    assay_service: str, tokenizer: Any, event_loop_for_verl: asyncio.AbstractEventLoop
) -> None:
    data = _batch(tokenizer, [("x", "1", {"assay_task": "buggy"})])
    with pytest.raises(RewardUnavailable, match="error"):
        _run(_manager("naive", assay_service, tokenizer), event_loop_for_verl, data)


def test_verl_rate_limited_manager_turns_our_refusal_into_zero(
    assay_service: str, tokenizer: Any, event_loop_for_verl: asyncio.AbstractEventLoop
) -> None:
    # Pins the behaviour the adapter's docstring warns about: verl's rate_limited manager catches every
    # exception and scores 0.0. If a verl release starts masking these, this test tells us to say so.
    data = _batch(tokenizer, [("x", "1", {"assay_task": "buggy"})])
    [scored] = _run(_manager("rate_limited", assay_service, tokenizer), event_loop_for_verl, data)
    assert scored["reward_score"] == 0.0
    assert "Assay returned error" in scored["reward_extra_info"]["error"]


def test_verl_legacy_batch_manager_passes_numpy_arrays_to_compute_score_batch(
    assay_service: str, tokenizer: Any
) -> None:
    data = _batch(tokenizer, [("\\boxed{1}", "1", {}), ("\\boxed{3}", "2", {"assay_task": "math"})])
    manager = BatchRewardManager(
        tokenizer, num_examine=0, compute_score=adapter.compute_score_batch, url=assay_service
    )
    out = manager(data, return_dict=True)
    assert out["reward_tensor"].sum(dim=1).tolist() == [1.0, 0.0]
    assert list(out["reward_extra_info"]["assay_status"]) == ["ok", "ok"]
