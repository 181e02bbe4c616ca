"""Seer-style scheduling (`assay.rl_client.seer`) against hand-worked schedules, with fake completions.

Time is simulated, not slept: a fake request of length L yields to the event loop L times
(`asyncio.sleep(0)` is one pass of the loop, not a wait), so with several slots the requests finish in
an order fixed by their lengths, the same on every run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from assay.rl_client.config import TrainConfig
from assay.rl_client.control import PromptSampler
from assay.rl_client.filter import RewardPipe
from assay.rl_client.generate import Completion, Problem, SamplingParams
from assay.rl_client.replay import ReplayBuffer
from assay.rl_client.rollout import Rollout
from assay.rl_client.seer import Request, SeerQueue, run_scheduled
from rl_client.fakes import ExactMatchRewards, StatelessBackend, completion


def _run(
    sizes: Sequence[int], lengths: Sequence[int], first_chunk: int, slots: int
) -> tuple[list[int], list[str], int]:
    """Dispatch order (flat indices), the event log, and the makespan in loop passes. `lengths[g]` is
    every member of group g's length, in loop passes."""
    order: list[int] = []
    log: list[str] = []
    clock = 0  # loop passes so far, counted by a ticker task that runs once per pass

    async def complete(request: Request) -> int:
        order.append(request.index)
        log.append(f"send {request.index}")
        for _ in range(lengths[request.group]):
            await asyncio.sleep(0)  # one pass of the event loop: simulated time, not a wait
        return lengths[request.group]

    def done(request: Request, length: int) -> None:
        log.append(f"done {request.index}")

    async def main() -> list[int]:
        nonlocal clock
        finished = False

        async def ticker() -> None:
            nonlocal clock
            while not finished:
                clock += 1
                await asyncio.sleep(0)

        tick = asyncio.ensure_future(ticker())
        results = await run_scheduled(SeerQueue(sizes, first_chunk), slots, complete, lambda n: n, done)
        finished = True
        await tick
        return results

    results = asyncio.run(main())
    assert results == [lengths[g] for g, n in enumerate(sizes) for _ in range(n)]  # flat order
    return order, log, clock


def test_one_slot_runs_first_chunks_then_longest_predicted_group_first() -> None:
    # Hand-worked: groups of 3 with lengths 10, 50, 30. Probes 0, 3, 6 (member 0 of each group) first;
    # then group 1 (predicted 50): 4, 5; group 2 (30): 7, 8; group 0 (10): 1, 2.
    order, _, _ = _run([3, 3, 3], [10, 50, 30], first_chunk=1, slots=1)
    assert order == [0, 3, 6, 4, 5, 7, 8, 1, 2]


def test_a_first_chunk_of_two_probes_two_members_per_group() -> None:
    order, _, _ = _run([3, 3], [5, 9], first_chunk=2, slots=1)
    assert order == [0, 1, 3, 4, 5, 2]


def test_a_group_still_running_its_probe_is_predicted_longest() -> None:
    # Hand-worked with 2 slots, groups of 3, group 0 short (1 pass), group 1 long (4 passes):
    # t0: probes 0 and 3 start. t1: 0 is done (group 0 predicted 1); group 1's probe is still running,
    # so group 1 is predicted longest: 4 starts. t4: 3 is done, group 1 (4) beats group 0 (1): 5.
    # t5: 4 is done: 1; t6: 1 done: 2. First-in-first-out sends 0, 1, 2, 3, 4, 5 and ends later.
    order, _, _ = _run([3, 3], [1, 4], first_chunk=1, slots=2)
    assert order == [0, 3, 4, 5, 1, 2]
    fifo_order, _, _ = _run([3, 3], [1, 4], first_chunk=3, slots=2)
    assert fifo_order == [0, 1, 2, 3, 4, 5]


def test_the_long_group_no_longer_forms_the_tail() -> None:
    """The point of the schedule, with 3 slots: groups of 4, three short (2 passes) and the last one long
    (12). First-in-first-out sends the long group last, so it runs alone at the end; Seer sends its probe
    with the first free slot and its other members as soon as they are the longest predicted."""
    sizes, lengths = [4, 4, 4, 4], [2, 2, 2, 12]
    seer_order, _, seer_time = _run(sizes, lengths, first_chunk=1, slots=3)
    fifo_order, _, fifo_time = _run(sizes, lengths, first_chunk=4, slots=3)
    long_group = {12, 13, 14, 15}
    assert long_group <= set(seer_order[:8]) and set(fifo_order[-4:]) == long_group
    assert seer_time < fifo_time


def test_each_result_is_reported_before_the_slot_takes_its_next_request() -> None:
    _, log, _ = _run([2, 2], [3, 1], first_chunk=1, slots=1)
    assert log == ["send 0", "done 0", "send 2", "done 2", "send 1", "done 1", "send 3", "done 3"]


def test_a_failed_request_fails_the_batch_and_stops_the_other_slots() -> None:
    started: list[int] = []

    async def complete(request: Request) -> int:
        started.append(request.index)
        if request.index == 0:
            raise RuntimeError("vLLM server answered 500")
        await asyncio.sleep(0)
        return 1

    async def main() -> list[int]:
        return await run_scheduled(SeerQueue([4, 4], 1), 2, complete, lambda n: n)

    with pytest.raises(RuntimeError, match="500"):
        asyncio.run(main())
    assert len(started) < 8


def test_bad_chunk_or_slots_are_refused() -> None:
    with pytest.raises(ValueError, match="first_chunk"):
        SeerQueue([2], 0)

    async def main() -> None:
        await run_scheduled(SeerQueue([2], 1), 0, _never, lambda n: n)

    with pytest.raises(ValueError, match="slots"):
        asyncio.run(main())


async def _never(request: Request) -> int:
    raise AssertionError("not called")


class SchedulingBackend(StatelessBackend):
    """A backend that schedules groups itself, finishing members in reverse order."""

    schedules_groups = True

    def __init__(self) -> None:
        self.finished: list[int] = []

    def generate_groups(
        self, prompts: Sequence[str], sizes: Sequence[int], params: SamplingParams, on_done: Any
    ) -> list[Completion]:
        flat = [(p, m) for p, n in zip(prompts, sizes, strict=True) for m in range(n)]
        outs = [completion("4" if m % 2 == 0 else "5", tokens=1 + m) for _, m in flat]
        for index in reversed(range(len(flat))):
            self.finished.append(index)
            on_done(index, outs[index])
        return outs

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        raise AssertionError("a round with a scheduling backend goes through generate_groups")


def test_a_round_requests_each_reward_as_its_sample_finishes_and_keeps_member_order() -> None:
    cfg = TrainConfig()
    problems = [Problem("a", "a?", "4"), Problem("b", "b?", "4")]
    rewards = ExactMatchRewards()
    pipe = RewardPipe(rewards)
    backend = SchedulingBackend()
    try:
        rollout = Rollout(
            backend, pipe, PromptSampler(problems, cfg.control, 3, seed=0), ReplayBuffer(cfg.replay), cfg
        )
        groups = rollout.generate_scored(problems, [3, 3], version=0)
    finally:
        pipe.close()
    assert rewards.requests == 6  # one call per finished sample, not one per batch
    assert backend.finished == [5, 4, 3, 2, 1, 0]
    for group in groups:
        assert [len(s.completion.token_ids) for s in group.samples] == [1, 2, 3]  # member order
        assert [s.result.correct if s.result else None for s in group.samples] == [True, False, True]
        assert group.stats is not None and group.stats.mean == pytest.approx(2 / 3)


def _config(**server: Any) -> dict[str, Any]:
    return {
        "model": {"path": "m"},
        "data": {"train": "t.jsonl"},
        "backend": {"kind": "vllm_server", "server": server},
        "train": {"generate": {"group_size": 4}},
    }


def test_seer_is_off_by_default_and_validated_when_on() -> None:
    from assay.errors import ConfigError
    from assay.rl_client.runs.config import validate

    assert validate(_config()).backend.server.seer.enabled is False
    assert validate(_config(seer={"enabled": True, "first_chunk": 2})).backend.server.seer.first_chunk == 2
    with pytest.raises(ConfigError, match=r"first_chunk \(4\) must be below train.generate.group_size"):
        validate(_config(seer={"enabled": True, "first_chunk": 4}))
    hf = {**_config(seer={"enabled": True}), "backend": {"kind": "hf", "server": {"seer": {"enabled": True}}}}
    with pytest.raises(ConfigError, match=r"needs backend\.kind vllm_server"):
        validate(hf)
    with pytest.raises(ConfigError, match="first_chunk"):
        validate(_config(seer={"enabled": True, "first_chunk": 0}))
