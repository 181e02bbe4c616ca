"""Group shaping (assay.groups.shaping) on hand-computed groups: each number is worked out in a comment from
the paper's formula, so the server's arithmetic is checked against the method, not against itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.errors import ItemError
from assay.groups.members import Member, ShapingInputError, take_member_fields
from assay.groups.shaping import AdaptThink, SGrpo, ShorterBetter, SolveRates, parse_options, shape
from assay.types import Result
from assay.validate.report import TaskReport


def _member(correct: bool | None, response: str = "x", **extras: Any) -> Member:
    """A scored member (`correct` True/False), or an unscored one (`correct` None: a timeout)."""
    result = Result.timeout("no verdict") if correct is None else Result.verdict(correct)
    return Member(result, response, extras)


SB = ShorterBetter(method="shorter_better")


# -- ShorterBetter --------------------------------------------------------------------------------
def test_shorter_better_targets_the_shortest_correct_member() -> None:
    # correct lengths 100, 250, 60 -> SOL = 60 (the 40-token member is wrong, so it is not the target)
    # alpha 2, beta 0.001: 2 - 0.04 = 1.96; 0 - 0.02 = -0.02; 2 - 0.19 = 1.81; 2 - 0 = 2.0
    group = [_member(True, length=100), _member(False, length=40)]
    group += [_member(True, length=250), _member(True, length=60)]
    rewards, stats, _ = shape(SB, group)
    assert rewards == pytest.approx([1.96, -0.02, 1.81, 2.0])
    assert (stats.sol, stats.sol_source, stats.length_unit) == (60.0, "shortest_correct", "tokens")


def test_shorter_better_falls_back_to_the_mean_length_when_none_is_correct() -> None:
    # SOL = (100 + 200 + 300) / 3 = 200: -0.1, 0, -0.1
    rewards, stats, _ = shape(SB, [_member(False, length=n) for n in (100, 200, 300)])
    assert rewards == pytest.approx([-0.1, 0.0, -0.1])
    assert (stats.sol, stats.sol_source) == (200.0, "mean_length")


def test_shorter_better_counts_characters_when_no_length_is_given() -> None:
    # "abcd" and "abcdefgh" both correct: SOL = 4 chars; alpha 1, beta 0.5: 1 - 0 = 1, 1 - 0.5 * 4 = -1
    spec = ShorterBetter(method="shorter_better", alpha=1.0, beta=0.5)
    rewards, stats, _ = shape(spec, [_member(True, "abcd"), _member(True, "abcdefgh")])
    assert rewards == [1.0, -1.0]
    assert (stats.length_unit, stats.sol) == ("chars", 4.0)


def test_an_unscored_member_is_null_and_never_the_target() -> None:
    # the 10-token member timed out: it may have been the shortest correct, but SOL comes from ok members
    # only (50), and the stats say one was left out: 2 - 0 = 2, 0 - 0.001 * 30 = -0.03
    group = [_member(None, length=10), _member(True, length=50), _member(False, length=80)]
    rewards, stats, _ = shape(SB, group)
    assert rewards == pytest.approx([None, 2.0, -0.03])
    assert rewards[0] is None and (stats.sol, stats.n_unscored) == (50.0, 1)


@pytest.mark.parametrize(
    ("lengths", "problem"),
    [
        ((10, None), "not on item 1"),  # two units in one group
        ((10, -1), "item 1: length must be a number >= 0"),
        ((10, "12"), "item 1: length must be a number >= 0"),
        ((10, True), "item 1: length must be a number >= 0"),
        ((10, float("nan")), "item 1: length must be a number >= 0"),
    ],
)
def test_bad_lengths_are_a_group_error_with_every_reward_null(lengths: tuple[Any, ...], problem: str) -> None:
    group = [_member(True, **({} if n is None else {"length": n})) for n in lengths]
    rewards, stats, _ = shape(SB, group)
    assert rewards == [None, None]
    assert stats.error is not None and problem in stats.error


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 10_000)), min_size=1, max_size=12))
def test_the_shortest_correct_member_is_never_penalised(members: list[tuple[bool, int]]) -> None:
    rewards, stats, _ = shape(SB, [_member(c, length=n) for c, n in members])
    correct = [(r, n) for (c, n), r in zip(members, rewards, strict=True) if c]
    if correct:
        assert stats.sol == min(n for _, n in correct)
        assert max(r for r, _ in correct if r is not None) == pytest.approx(2.0)
    assert all(r is not None and r <= 2.0 for r in rewards)


# -- AdaptThink -----------------------------------------------------------------------------------
def test_adapt_think_on_a_hand_computed_group() -> None:
    # reference accuracy 0.6, delta 0.05; accuracy is 0 unless one `</think>` and no `<think>`
    spec = AdaptThink(method="adapt_think", reference_accuracy=0.6)
    group = [
        _member(True, "</think>so \\boxed{4}", length=20),  # NoThinking, right: 1 - 0.6 + 0.05 = 0.45
        _member(True, "work...</think>\\boxed{4}", length=500),  # Thinking, right: 1 - 0.6 = 0.4
        _member(False, "</think>\\boxed{5}", length=15),  # NoThinking, wrong: 0 - 0.6 + 0.05 = -0.55
        _member(True, "<think>x</think>\\boxed{4}", length=30),  # opening tag: gate fails: -0.6
        _member(True, "</think>" + "hidden " * 500 + "\\boxed{4}", length=3000),  # over the cap: 0.4
        _member(True, "a</think>b</think>\\boxed{4}", length=40),  # two closing tags: gate fails: -0.6
    ]
    rewards, stats, _ = shape(spec, group, 0.6)
    assert rewards == pytest.approx([0.45, 0.4, -0.55, -0.6, 0.4, -0.6])
    assert (stats.n_nothinking, stats.n_thinking, stats.n_over_cap, stats.n_format_failed) == (3, 3, 1, 2)
    assert (stats.reference_accuracy, stats.nothinking_max_length) == (0.6, 2048.0)


def test_hidden_reasoning_after_the_closing_tag_earns_no_bonus() -> None:
    """An adversarial policy skips the thinking block and reasons in the answer instead, to collect the
    NoThinking bonus; past the cap the answer scores as a Thinking one would."""
    spec = AdaptThink(method="adapt_think", reference_accuracy=0.5, nothinking_max_length=100)
    for hidden in range(0, 400, 37):  # answers from terse to long-winded
        text = "</think>" + "Let me think step by step. " * hidden + "\\boxed{4}"
        rewards, _, _ = shape(spec, [_member(True, text)], 0.5)
        expected = 0.55 if len(text) <= 100 else 0.5  # chars: the server counted them
        assert rewards == [pytest.approx(expected)], len(text)


def test_adapt_think_needs_one_reference_source() -> None:
    with pytest.raises(ItemError, match="exactly one of reference_accuracy"):
        parse_options(0, {"shaping": {"method": "adapt_think"}})
    with pytest.raises(ItemError, match="exactly one of reference_accuracy"):
        parse_options(0, {"shaping": {"method": "adapt_think", "reference_accuracy": 0.5,
                                      "reference_accuracy_file": "r.jsonl"}})  # fmt: skip


def test_a_solve_rate_file_from_assay_validate_is_read_by_group_id(tmp_path: Path) -> None:
    rows = [TaskReport(id="q1", task="math", solve_rate=0.25, samples=8), TaskReport(id="q2", task="math")]
    (tmp_path / "rates.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in rows))
    rates = SolveRates(tmp_path)
    assert rates.accuracy("rates.jsonl", "q1", None) == 0.25
    with pytest.raises(ShapingInputError, match="no solve rate for group 'q2'"):
        rates.accuracy("rates.jsonl", "q2", None)  # invalid task: no rate, an error rather than 0
    with pytest.raises(ShapingInputError, match="ASSAY_SOLVE_RATES"):
        SolveRates(None).accuracy("rates.jsonl", "q1", None)
    with pytest.raises(ShapingInputError, match="cannot read"):
        rates.accuracy("missing.jsonl", "q1", None)


def test_a_solve_rate_file_from_keep_is_read_by_prompt(tmp_path: Path) -> None:
    (tmp_path / "keep.jsonl").write_text('{"prompt": "2 + 2?", "solve_rate": 0.5}\nnot json\n')
    assert SolveRates(tmp_path).accuracy("keep.jsonl", None, "2 + 2?") == 0.5


@pytest.mark.parametrize("name", ["../etc/passwd", "/etc/passwd", ".hidden", "a/b.jsonl", ""])
def test_a_solve_rate_file_outside_the_directory_is_refused(name: str) -> None:
    with pytest.raises(ItemError, match="reference_accuracy_file"):
        parse_options(0, {"shaping": {"method": "adapt_think", "reference_accuracy_file": name}})


# -- S-GRPO ---------------------------------------------------------------------------------------
def test_s_grpo_rewards_earlier_correct_exits_more() -> None:
    # by exit_position: 50 wrong 0, 100 wrong 0, 200 first correct 1, 300 second 1/2, 400 third 1/4
    positions, verdicts = (300, 100, 200, 400, 50), (True, False, True, True, False)
    group = [_member(c, exit_position=p) for p, c in zip(positions, verdicts, strict=True)]
    rewards, stats, _ = shape(SGrpo(method="s_grpo"), group)
    assert rewards == [0.5, 0.0, 1.0, 0.25, 0.0]
    assert (stats.n_correct_exits, stats.first_correct_exit) == (3, 200.0)


def test_s_grpo_ties_keep_item_order_and_skip_unscored_exits() -> None:
    # the timed-out exit at 100 takes no rank: 200 is the first correct exit (1), 300 the second (1/2)
    rewards, stats, _ = shape(
        SGrpo(method="s_grpo"),
        [
            _member(None, exit_position=100),
            _member(True, exit_position=200),
            _member(True, exit_position=300),
        ],
    )
    assert rewards == [None, 1.0, 0.5] and stats.n_unscored == 1
    rewards, _, _ = shape(SGrpo(method="s_grpo", decay=0.25), [_member(True, exit_position=7)] * 3)
    assert rewards == [1.0, 0.25, 0.0625]


def test_s_grpo_without_exit_positions_is_a_group_error() -> None:
    rewards, stats, _ = shape(SGrpo(method="s_grpo"), [_member(True, exit_position=1), _member(True)])
    assert rewards == [None, None] and stats.error is not None and "item 1 has none" in stats.error


# -- options and member fields --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("group", "problem"),
    [
        ({"shaping": {"method": "shortest"}}, "does not match any of the expected tags"),
        ({"shaping": {"method": "shorter_better", "alpha": -1}}, "alpha"),
        ({"shaping": {"method": "shorter_better", "gamma": 1}}, "gamma"),
        (
            {"shaping": {"method": "shorter_better", "alpha": False}},
            "alpha",
        ),  # not a number, as the schema says
        ({"shaping": {"method": "s_grpo", "decay": 0}}, "decay"),
        ({"shaping": {"method": "adapt_think", "reference_accuracy": 1.5}}, "reference_accuracy"),
        ({"shaping": {"method": "shorter_better"}, "rubric": {"components": []}}, "not both"),
        ({"shaping": "shorter_better"}, "bad shaping"),
    ],
)
def test_a_bad_option_is_an_item_error_that_says_what(group: dict[str, Any], problem: str) -> None:
    with pytest.raises(ItemError, match=problem):
        parse_options(3, group)


def test_member_fields_come_off_the_item_before_scoring() -> None:
    item = {"task": "math", "response": "4", "length": 12, "exit_position": 3, "tool_calls": 2}
    assert take_member_fields(item) == (
        {"task": "math", "response": "4"},
        {"length": 12, "exit_position": 3, "tool_calls": 2},
    )
    assert take_member_fields(42) == (42, {})


# -- the hacks, as an adversarial policy would try them ----------------------------------------------
@given(
    st.lists(st.tuples(st.booleans(), st.integers(1, 5_000)), min_size=1, max_size=8),
    st.lists(st.integers(0, 5_000), min_size=1, max_size=4),
)
def test_truncated_wrong_answers_never_move_the_target(
    members: list[tuple[bool, int]], truncated: list[int]
) -> None:
    """A policy that cuts its answers short adds wrong members of any length; the correct members'
    rewards, and SOL while one is correct, stay where they were."""
    honest = [_member(c, length=n) for c, n in members]
    before, stats_before, _ = shape(SB, honest)
    after, stats_after, _ = shape(SB, honest + [_member(False, length=n) for n in truncated])
    if any(c for c, _ in members):
        assert stats_after.sol == stats_before.sol
        assert after[: len(honest)] == before


_PIECES = st.sampled_from(["<think>", "</think>", "reasoning ", "\\boxed{4}", " ", "\n"])


@given(st.lists(_PIECES, max_size=30).map("".join), st.integers(1, 400))
def test_no_response_over_the_cap_earns_more_than_a_thinking_answer(text: str, cap: int) -> None:
    """Whatever tags a policy writes and wherever: past the cap there is no bonus, and any `<think>`
    (reasoning re-opened after the closing tag) fails the gate."""
    spec = AdaptThink(method="adapt_think", reference_accuracy=0.5, nothinking_max_length=cap)
    (reward,), _, _ = shape(spec, [_member(True, text)], 0.5)
    assert reward is not None
    if len(text) > cap:
        assert reward <= 1.0 - 0.5
    if "<think>" in text:
        assert reward <= -0.5 + 0.05
