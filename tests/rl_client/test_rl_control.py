"""Dynamic sampling (exact equality on raw correctness, rounds cap, batch cap), overlong shaping and the
prompt sampler."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from assay.rl_client.config import ControlConfig
from assay.rl_client.control import Fill, PromptSampler, fill_batch, informative, shape, soft_overlong_penalty
from assay.rl_client.generate import Group, Problem
from rl_client.fakes import completion, group


def test_all_correct_and_all_wrong_groups_are_not_informative() -> None:
    assert not informative(group([True] * 4))
    assert not informative(group([False] * 4))
    assert informative(group([True, False, False, False]))


def test_equality_is_on_raw_correctness_not_on_the_shaped_reward() -> None:
    g = group([True, True, True])
    for sample, shaped in zip(g.samples, (1.0, 0.9, 0.75), strict=True):
        sample.reward = shaped  # a length penalty made the rewards differ
    assert not informative(g)


def test_graded_scores_are_compared_exactly() -> None:
    assert not informative(group([0.5, 0.5, 0.5]))
    assert informative(group([0.5, 0.5, 0.5 + 1e-12]))


def test_unscored_samples_do_not_make_a_group_informative() -> None:
    assert not informative(group([True, None, True]))
    assert not informative(group([None, None]))


def _rounds(script: list[list[list[bool]]]) -> tuple[list[int], Callable[[int], list[Group]]]:
    asked: list[int] = []
    rounds = iter(script)

    def next_round(k: int) -> list[Group]:
        asked.append(k)
        verdicts = next(rounds)
        assert len(verdicts) == k
        return [group(v, pid=f"g{len(asked)}-{i}") for i, v in enumerate(verdicts)]

    return asked, next_round


MIXED, RIGHT, WRONG = [True, False], [True, True], [False, False]


def test_dynamic_sampling_drops_constant_groups_and_refills() -> None:
    asked, next_round = _rounds([[MIXED, RIGHT, WRONG, MIXED], [MIXED, WRONG], [MIXED]])
    fill = fill_batch(next_round, 4, ControlConfig(prompts_per_step=4, max_rounds=5))
    assert asked == [4, 2, 1]  # each round asks for the groups still missing
    assert fill.rounds == 3
    assert len(fill.kept) == 4
    assert all(informative(g) for g in fill.kept)
    assert len(fill.seen) == 7


def test_dynamic_sampling_stops_at_the_rounds_cap() -> None:
    asked, next_round = _rounds([[RIGHT, WRONG], [WRONG, RIGHT], [MIXED, WRONG]])
    fill = fill_batch(next_round, 2, ControlConfig(prompts_per_step=2, max_rounds=2))
    assert asked == [2, 2]  # the third round, which would have filled the batch, is never asked for
    assert fill.rounds == 2
    assert fill.kept == []


def test_the_batch_is_capped_at_the_target() -> None:
    asked, next_round = _rounds([[MIXED, WRONG, WRONG], [MIXED, MIXED, MIXED, MIXED]])
    cfg = ControlConfig(prompts_per_step=3, max_rounds=3, oversample=2.0)
    fill: Fill = fill_batch(next_round, 3, cfg)
    assert asked == [3, 4]  # 2 missing x oversample 2
    assert len(fill.kept) == 3


def test_without_dynamic_sampling_one_round_is_kept_as_is() -> None:
    asked, next_round = _rounds([[RIGHT, WRONG, MIXED]])
    fill = fill_batch(next_round, 3, ControlConfig(dynamic_sampling=False))
    assert asked == [3]
    assert len(fill.kept) == 3


@pytest.mark.parametrize(
    ("length", "expected"),
    [(10, 0.0), (12, 0.0), (13, -0.25), (14, -0.5), (16, -1.0), (17, -1.0)],
)
def test_soft_overlong_penalty_is_linear_over_the_cache(length: int, expected: float) -> None:
    # max 16, cache 4: free up to 12, then -1/4 per token, -1 at and past the limit
    assert soft_overlong_penalty(length, 16, 4) == pytest.approx(expected)


def test_shaping_applies_the_penalty_once_and_filters_truncated_responses() -> None:
    g = group([True, True])
    g.samples[0].completion = completion(tokens=3)  # 3 of max 4 with cache 2: penalty -0.5
    g.samples[1].completion = completion(tokens=4, truncated=True)
    cfg = ControlConfig(overlong_penalty=True, overlong_cache=2, overlong_filter=True)
    shape([g], cfg, max_new_tokens=4)
    shape([g], cfg, max_new_tokens=4)  # idempotent: a replayed sample is shaped again
    assert g.samples[0].reward == pytest.approx(0.5)
    assert g.samples[0].weight == 1.0
    assert g.samples[1].weight == 0.0


def test_sampler_skips_recently_solved_prompts() -> None:
    problems = [Problem(str(i), f"{i}?", "1") for i in range(4)]
    cfg = ControlConfig(skip_solved=True, skip_window=5, skip_probability=1.0)
    sampler = PromptSampler(problems, cfg, group_size=2, seed=1)
    solved = group([True, True], pid="0")
    solved.problem = problems[0]
    sampler.observe([solved], step=3)
    assert all(p.id != "0" for p in sampler.draw(50, step=4))
    assert any(p.id == "0" for p in sampler.draw(50, step=8))  # the window has passed


def test_sampler_gives_uncertain_prompts_more_samples() -> None:
    problems = [Problem("a", "a?", "1"), Problem("b", "b?", "1")]
    sampler = PromptSampler(problems, ControlConfig(adaptive_group=True, adaptive_extra=4), group_size=8)
    half = group([True, False], pid="a")
    half.problem = problems[0]
    solved = group([True, True], pid="b")
    solved.problem = problems[1]
    sampler.observe([half, solved], step=0)
    assert sampler.size_for(problems[0]) == 12
    assert sampler.size_for(problems[1]) == 8


def test_sampler_state_round_trips() -> None:
    problems = [Problem(str(i), f"{i}?", "1") for i in range(10)]
    a = PromptSampler(problems, ControlConfig(), group_size=2, seed=3)
    a.draw(5, 0)
    b = PromptSampler(problems, ControlConfig(), group_size=2, seed=99)
    b.load_state_dict(a.state_dict())
    assert [p.id for p in a.draw(20, 1)] == [p.id for p in b.draw(20, 1)]
