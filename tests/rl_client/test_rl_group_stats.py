"""rl_client and POST /v1/groups: Control reads Assay's group statistics; the step log carries the
signals `assay doctor` reads."""

from __future__ import annotations

from assay.client import AssayClient
from assay.groups import group_stats
from assay.rl_client.config import ControlConfig
from assay.rl_client.control import PromptSampler, informative
from assay.rl_client.filter import RewardPipe, ServiceRewards, apply_outcomes
from assay.rl_client.generate import Group, Problem
from assay.rl_client.observe import group_signals
from assay.types import Result
from rl_client.fakes import completion, group


def _with_stats(g: Group) -> Group:
    g.stats = group_stats([s.result for s in g.samples if s.result is not None])
    return g


def test_dynamic_sampling_reads_all_equal_from_the_server() -> None:
    g = group([True, False])
    g.stats = group_stats([Result.verdict(True), Result.verdict(True)])  # the server says: all equal
    assert not informative(g)  # its verdict wins over recounting the samples
    g.stats = None
    assert informative(g)


def test_injecting_a_replayed_sample_drops_the_stale_stats() -> None:
    from assay.rl_client.config import ReplayConfig
    from assay.rl_client.replay import ReplayBuffer

    buffer = ReplayBuffer(ReplayConfig(inject_correct=True))
    buffer.add([group([True, False], pid="p")], version=0)
    wrong = _with_stats(group([False, False], pid="p", version=1))
    assert not informative(wrong)
    assert buffer.inject(wrong, version=1)
    assert wrong.stats is None and informative(wrong)


def test_adaptive_group_size_reads_learning_value() -> None:
    cfg = ControlConfig(adaptive_group=True, adaptive_extra=4)
    sampler = PromptSampler([Problem("p", "p?", "4")], cfg, group_size=8)
    half = _with_stats(group([True, False, True, False], pid="p"))
    sampler.observe([half], step=0)
    assert sampler.history["p"].value == 1.0 and sampler.size_for(Problem("p", "p?", "4")) == 12
    sampler.observe([_with_stats(group([True, True, True, False], pid="p"))], step=1)  # 4*.75*.25 = .75
    assert sampler.size_for(Problem("p", "p?", "4")) == 12
    sampler.observe([_with_stats(group([True] * 7 + [False], pid="p"))], step=2)  # 4*(7/8)*(1/8) < .64
    assert sampler.size_for(Problem("p", "p?", "4")) == 8
    restored = PromptSampler([Problem("p", "p?", "4")], cfg, group_size=8)
    restored.load_state_dict(sampler.state_dict())
    assert restored.history == sampler.history


def test_greso_reads_solved_from_the_server() -> None:
    cfg = ControlConfig(skip_solved=True, skip_probability=1.0)
    sampler = PromptSampler([Problem("p", "p?", "4"), Problem("q", "q?", "5")], cfg, group_size=2)
    sampler.observe([_with_stats(group([True, True], pid="p"))], step=0)
    assert sampler.history["p"].solved_at == 0
    assert {p.id for p in sampler.draw(10, step=1)} == {"q"}


def test_groups_are_scored_through_v1_groups(assay_service: str) -> None:
    g = Group(Problem("p", "2+2=", "4"), "2+2=", [])
    from assay.rl_client.generate import Sample

    g.samples = [Sample(completion(text), 0) for text in ("4", "5", "4")]
    source = ServiceRewards(AssayClient(assay_service))
    pipe = RewardPipe(source)
    try:
        apply_outcomes([g], pipe.submit_groups([g]).result(timeout=60))
    finally:
        pipe.close()
    assert [s.reward for s in g.samples] == [1.0, 0.0, 1.0]
    assert g.stats is not None and g.stats.n_correct == 2 and not g.stats.all_equal
    assert source.requests == 1


def test_step_signals_for_the_doctor() -> None:
    seen = [_with_stats(group([True, True], pid="a")), _with_stats(group([True, False], pid="b"))]
    seen.append(group([None, False], pid="c"))  # no server stats: counted here
    seen[1].samples[0].completion.truncated = True
    replayed = group([True, False], pid="d", version=2)
    for sample in replayed.samples:
        sample.off_policy = True
    signals = group_signals(seen, [seen[1], replayed], version=5)
    assert signals["frac_zero_advantage"] == 2 / 3
    assert signals["truncation_rate"] == 1 / 6
    assert signals["replay_lag_mean"] == 3.0 and signals["replay_lag_max"] == 3
    assert signals["error_rate"] == 1 / 6 and signals["invalid_rate"] == 0.0
    assert signals["constant_answer_share"] is None  # fewer than 4 prompts: not meaningful
