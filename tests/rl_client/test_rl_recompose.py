"""RoRecomp (Li et al. 2025) in the trainer: priority batches of short-correct and long-incorrect
responses, the rest kept in the replay buffer for compensation batches, advantages over whole groups."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from assay.rl_client.config import ReplayConfig, ShapingConfig, TrainConfig
from assay.rl_client.generate import Completion, Group, Problem, Sample
from assay.rl_client.recompose import priority_members, recompose
from assay.rl_client.replay import ReplayBuffer
from assay.types import Result


def _group(members: Sequence[tuple[bool | None, int]], version: int = 0) -> Group:
    """(verdict, length) per member; None is a sample the server could not score."""
    samples = []
    for verdict, length in members:
        result = Result.error("worker crashed") if verdict is None else Result.verdict(verdict)
        completion = Completion([1], [3] * length, "x" * length, [-0.5] * length, False)
        samples.append(
            Sample(completion, version, result, result.reward, weight=0.0 if verdict is None else 1.0)
        )
    return Group(Problem("p", "q?", "4"), "q?", samples)


# correct at 0..3 with lengths 5, 2, 8, 3; wrong at 4..6 with lengths 4, 9, 1; unscored at 7
MIXED = [(True, 5), (True, 2), (True, 8), (True, 3), (False, 4), (False, 9), (False, 1), (None, 1)]


def test_priority_is_the_shortest_correct_and_the_longest_incorrect() -> None:
    samples = _group(MIXED).samples
    # half of 4 correct: lengths 2 and 3 (indices 1, 3); ceil(half of 3) wrong: lengths 9 and 4 (5, 4)
    assert priority_members(samples, 0.5) == [1, 3, 4, 5]
    assert priority_members(samples, 0.25) == [1, 5]  # one of each kind at least
    assert priority_members(samples, 1.0) == [0, 1, 2, 3, 4, 5, 6]  # never the unscored one


def test_advantages_are_over_the_whole_group_before_the_split() -> None:
    group = _group([(True, 2), (True, 6), (False, 6), (False, 2)])
    [priority], [rest] = recompose([group], 0.5, scale_std=False)
    # rewards 1, 1, 0, 0: mean 0.5, so +0.5 for the correct, -0.5 for the wrong, wherever they go
    assert [(len(s.completion.token_ids), s.advantage) for s in priority.samples] == [(2, 0.5), (6, -0.5)]
    assert [(len(s.completion.token_ids), s.advantage) for s in rest.samples] == [(6, 0.5), (2, -0.5)]


def test_a_group_without_wrong_answers_sends_its_long_correct_ones_to_the_buffer() -> None:
    [priority], [rest] = recompose([_group([(True, 1), (True, 4)])], 0.5, scale_std=True)
    assert [len(s.completion.token_ids) for s in priority.samples] == [1]
    assert [len(s.completion.token_ids) for s in rest.samples] == [4]
    assert all(math.isclose(s.advantage or 0.0, 0.0) for s in priority.samples + rest.samples)


def test_compensation_batches_come_back_off_policy_and_stale_ones_never() -> None:
    buffer = ReplayBuffer(ReplayConfig(max_staleness=1))
    _, rest = recompose([_group([(True, 1), (True, 3), (False, 2), (False, 5)], version=0)], 0.5, True)
    buffer.keep_remainder(rest)
    [taken] = buffer.take_remainder(4, version=1)
    assert all(s.off_policy and s.advantage is not None for s in taken.samples)
    buffer.keep_remainder(rest)
    assert buffer.take_remainder(4, version=2) == []  # two versions old, past max_staleness 1


def test_the_remainder_and_its_advantages_survive_a_checkpoint() -> None:
    buffer = ReplayBuffer(ReplayConfig())
    _, rest = recompose([_group([(True, 1), (True, 3), (False, 2), (False, 5)])], 0.5, scale_std=False)
    buffer.keep_remainder(rest)
    restored = ReplayBuffer(ReplayConfig())
    restored.load_state_dict(buffer.state_dict())
    [group] = restored.take_remainder(4, version=0)
    assert [s.advantage for s in group.samples] == [s.advantage for s in rest[0].samples] == [0.5, -0.5]


@pytest.mark.parametrize(
    ("options", "needle"),
    [({"priority_fraction": 0.0}, "priority_fraction"), ({"compensation_every": -1}, "compensation_every")],
)
def test_bad_recomposition_settings_say_what_to_change(options: dict[str, float], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        ShapingConfig(method="ro_recomp", **options)  # type: ignore[arg-type]


def test_ro_recomp_changes_no_reward_so_nothing_is_sent_to_the_server() -> None:
    cfg = TrainConfig(shaping=ShapingConfig(method="ro_recomp"))
    assert cfg.shaping.wire() is None and not cfg.shaping.server


class StartsWithOne:
    """Correct when the response starts with "1" (some groups mixed, for a random policy)."""

    requests = 0

    async def ascore(self, items: list[dict[str, object]]) -> list[Result]:
        return [Result.verdict(str(i["response"]).startswith("1")) for i in items]

    async def aclose(self) -> None:
        return None


def test_the_trainer_trains_on_priority_batches_and_compensates_every_kth_step(tmp_path: Path) -> None:
    from assay.rl_client.backends.hf import HFBackend
    from assay.rl_client.config import ControlConfig, GenerateConfig
    from assay.rl_client.runs.demo import PAD, CharTokenizer, addition_problems, build_model
    from assay.rl_client.trainer import Trainer

    cfg = TrainConfig(
        steps=2,
        seed=3,
        generate=GenerateConfig(group_size=4, max_new_tokens=3),
        control=ControlConfig(prompts_per_step=2, dynamic_sampling=False),
        shaping=ShapingConfig(method="ro_recomp", compensation_every=2),
    )
    tokenizer = CharTokenizer()
    model = build_model(tokenizer, seed=0, width=32)
    train, _ = addition_problems(0)
    trainer = Trainer(model, HFBackend(model, tokenizer, seed=3), StartsWithOne(), train[:6], cfg, pad_id=PAD,
                      log_path=tmp_path / "log.jsonl")  # fmt: skip
    try:
        first, second = trainer.train_step(), trainer.train_step()
    finally:
        trainer.close()
    assert first["compensation_groups"] == 0  # step 1 of every 2: the priority batch only
    assert second["compensation_groups"] > 0  # step 2: the remainder of step 1 comes back
    assert {s.version for g in trainer.replay.remainder for s in g.samples} == {1}  # step 1's was used
