"""Replay buffer: staleness limit, AR3PO injection, off-policy marking, checkpoint round trip."""

from __future__ import annotations

from assay.rl_client.config import ReplayConfig
from assay.rl_client.replay import ReplayBuffer
from rl_client.fakes import group


def test_a_cached_correct_response_is_injected_into_an_all_wrong_group() -> None:
    buffer = ReplayBuffer(ReplayConfig(inject_correct=True, max_staleness=2))
    buffer.add([group([True, False], pid="q", version=3)], version=3)
    failed = group([False, False, False], pid="q", version=4)
    assert buffer.inject(failed, version=4)
    injected = failed.samples[-1]
    assert injected.off_policy
    assert injected.version == 3  # keeps its behaviour policy for the importance ratio
    assert injected.result is not None and injected.result.correct is True
    assert [s.off_policy for s in failed.samples[:-1]] == [False, False]


def test_no_injection_into_a_group_that_is_not_all_wrong_or_without_a_cache() -> None:
    buffer = ReplayBuffer(ReplayConfig(inject_correct=True))
    buffer.add([group([True, False], pid="q")], version=0)
    assert not buffer.inject(group([True, False], pid="q"), version=1)
    assert not buffer.inject(group([False, False], pid="other"), version=1)


def test_stale_responses_are_never_injected() -> None:
    buffer = ReplayBuffer(ReplayConfig(inject_correct=True, max_staleness=2))
    buffer.add([group([True, False], pid="q", version=0)], version=0)
    assert not buffer.inject(group([False, False], pid="q"), version=3)


def test_take_returns_fresh_groups_newest_first_marked_off_policy() -> None:
    buffer = ReplayBuffer(ReplayConfig(max_staleness=1))
    buffer.add([group([True, False], pid="old", version=0)], version=0)
    buffer.add([group([True, False], pid="new", version=1)], version=1)
    buffer.add([group([True, True], pid="flat", version=1)], version=1)  # not informative: not kept
    taken = buffer.take(5, version=2)  # "old" is 2 versions behind: stale
    assert [g.problem.id for g in taken] == ["new"]
    assert all(s.off_policy for s in taken[0].samples)
    assert buffer.take(5, version=2) == []  # taken groups leave the buffer


def test_state_round_trips_through_json_types() -> None:
    buffer = ReplayBuffer(ReplayConfig(inject_correct=True))
    buffer.add([group([True, False, None], pid="q", version=2)], version=2)
    restored = ReplayBuffer(ReplayConfig(inject_correct=True))
    restored.load_state_dict(buffer.state_dict())
    assert restored.state_dict() == buffer.state_dict()
    assert restored.inject(group([False, False], pid="q"), version=3)
