"""Answer clusters for the code task (issue 42): programs are one answer when their outputs on the item's
tests, visible and hidden, are identical, read from what scoring observed in the sandbox."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from assay_testing import bwrap_works, code_scorer
from assay_testing import score_program as score

from assay.engine.scoring import Engine
from assay.groups import GroupStats
from assay.settings import CodeSettings, Settings
from assay.verifiers.code import CodeScorer
from assay.verifiers.code.equivalence import DIGEST

TESTS = [{"stdin": "12\n", "stdout": "24"}, {"stdin": "13\n", "stdout": "26"}]
HIDDEN = [{"stdin": "21\n", "stdout": "42"}]
DOUBLE = [
    "print(int(input()) * 2)",
    "n = int(input())\nprint(n + n)",
    "import sys\nprint(2 * int(sys.stdin.read()))",
]
PLUS_TWO = ["print(int(input()) + 2)", "x = int(input())\nprint(x + 2)"]  # wrong, with one output
OFF_ON_21 = "n = int(input())\nprint(n * 2 if n != 21 else 0)"  # differs on the hidden test only


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    with Engine(Settings(workers=1, code=CodeSettings(time_limit_s=2, memory_mb=256, slots=2))) as built:
        yield built


def _item(program: str, **fields: Any) -> dict[str, Any]:
    response = f"```python\n{textwrap.dedent(program)}\n```"
    return {"task": "code", "response": response, "tests": TESTS, "hidden_tests": HIDDEN} | fields


def _stats(engine: Engine, programs: list[str], **fields: Any) -> GroupStats:
    (outcome,) = engine.score_groups([[_item(p, **fields) for p in programs]])
    return outcome.stats


def _members(stats: GroupStats) -> list[list[int]]:
    assert stats.answer_clusters is not None, stats.clusters_unavailable
    return [c.members for c in stats.answer_clusters]


def test_programs_written_differently_with_identical_outputs_are_one_answer(engine: Engine) -> None:
    stats = _stats(engine, [DOUBLE[0], PLUS_TWO[0], DOUBLE[1], PLUS_TWO[1], DOUBLE[2]])
    assert _members(stats) == [[0, 2, 4], [1, 3]]
    assert [c.correct for c in stats.answer_clusters or []] == [True, False]


def test_programs_that_differ_on_one_hidden_test_output_are_two_answers(engine: Engine) -> None:
    stats = _stats(engine, [DOUBLE[0], OFF_ON_21, DOUBLE[1]])
    assert _members(stats) == [[0, 2], [1]]


def test_the_majority_goes_to_the_equivalence_majority_not_the_string_majority(engine: Engine) -> None:
    # Strings: the wrong program twice, each spelling of the right one once: a string vote picks it.
    stats = _stats(engine, [PLUS_TWO[0], DOUBLE[0], PLUS_TWO[0], DOUBLE[1], DOUBLE[2]])
    assert (stats.majority_answer or "").strip() == DOUBLE[0] and stats.majority_correct is True
    assert [c.size for c in stats.answer_clusters or []] == [3, 2]


def test_a_program_that_errs_or_runs_out_of_time_is_an_answer_of_its_own(engine: Engine) -> None:
    raises, loops = "raise SystemExit(int(input()))", "while True:\n    pass"
    programs = [raises, raises, loops, loops, DOUBLE[0], DOUBLE[1]]
    stats = _stats(engine, programs, tests=TESTS[:1], hidden_tests=[], options={"time_limit_s": 0.2})
    assert _members(stats) == [[4, 5], [0], [1], [2], [3]]
    assert stats.majority_correct is True


def test_call_tests_compare_returned_values_as_the_checker_counts_them(engine: Engine) -> None:
    tests = [{"fn_name": "f", "args": [3], "expected": 9}]
    whole = ["def f(x):\n    return x * 2", "def f(x):\n    return float(x + x)"]  # 6 and 6.0: one value
    other = "def f(x):\n    return x + 2"
    stats = _stats(engine, [*whole, other], tests=tests, hidden_tests=[])
    assert _members(stats) == [[0, 1], [2]]


def test_the_outputs_digest_is_keyed_per_scorer_so_it_reveals_no_hidden_output() -> None:
    first, second = (next(code_scorer(time_limit_s=2, memory_mb=256)) for _ in range(2))
    try:
        one, again, other = (score(s, DOUBLE[0], TESTS, hidden_tests=HIDDEN) for s in (first, first, second))
    finally:
        first.close()
        second.close()
    assert one.details[DIGEST] == again.details[DIGEST] != other.details[DIGEST]


def test_a_test_not_run_leaves_no_digest() -> None:
    scorer = next(code_scorer(time_limit_s=2, memory_mb=256))
    try:
        result = scorer.score(
            CodeScorer.item_model().model_validate(
                _item(PLUS_TWO[0], options={"stop_on_first_failure": True})
            ),
            CodeScorer.parse_options({"stop_on_first_failure": True}),
        )
    finally:
        scorer.close()
    assert result.details["tests"][1]["verdict"] == "not_run" and DIGEST not in result.details
