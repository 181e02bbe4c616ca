"""The prompt checks alone (no engine): duplicates, near-duplicates, answers given away (the math task's
own `Validation.check_prompt`, applied as `validate` applies it)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from assay.types import Item
from assay.validate.prompts import (
    NEAR_DUPLICATE_JACCARD,
    check_duplicates,
    check_near_duplicates,
    check_prompt,
    shingles,
)
from assay.validate.report import TaskReport
from assay.verifiers.math.scorer import MathScorer


def check_answer_in_prompt(report: TaskReport, item: Item) -> None:
    check_prompt(report, MathScorer, item)


def _reports(n: int) -> list[TaskReport]:
    return [TaskReport(id=f"t{i}") for i in range(n)]


def _math(prompt: str, reference: str = "42") -> Item:
    return Item(task="math", prompt=prompt, reference=reference)


def _checks(report: TaskReport) -> list[tuple[str, str]]:
    return [(p.check, p.severity) for p in report.problems]


def test_a_repeated_prompt_with_the_same_reference_is_a_duplicate_warning() -> None:
    items = [_math("What is 6 times 7?"), _math("what  is 6 TIMES 7?")]
    reports = _reports(2)
    check_duplicates(reports, items)
    assert _checks(reports[0]) == []
    assert _checks(reports[1]) == [("duplicate", "warning")]
    assert reports[1].valid and "t0" in reports[1].problems[0].reason


def test_a_repeated_prompt_with_another_reference_is_an_error() -> None:
    reports = _reports(2)
    check_duplicates(reports, [_math("What is 6 times 7?"), _math("What is 6 times 7?", "41")])
    assert _checks(reports[1]) == [("conflicting_duplicate", "error")]
    assert not reports[1].valid


def test_the_same_prompt_in_two_tasks_is_not_a_duplicate() -> None:
    reports = _reports(2)
    items = [
        _math("Sum the list."),
        Item(task="code", prompt="Sum the list.", tests=[{"stdin": "", "stdout": ""}]),
    ]
    check_duplicates(reports, items)
    assert all(r.problems == [] for r in reports)


def test_a_reworded_long_prompt_is_a_near_duplicate() -> None:
    base = (
        "A farmer keeps chickens and cows on a small farm near the river. Together the animals have "
        "thirty heads and eighty four legs. How many cows does the farmer keep on the farm?"
    )
    items = [_math(base), _math(base.replace("small farm", "little farm")), _math("What is 6 times 7?")]
    reports = _reports(3)
    assert check_near_duplicates(reports, items)
    assert _checks(reports[1]) == [("near_duplicate", "warning")]
    assert reports[0].problems == [] and reports[2].problems == []


def test_templated_prompts_with_other_numbers_are_not_near_duplicates() -> None:
    items = [_math(f"What is {a} times {b}?", str(a * b)) for a in range(3, 9) for b in range(11, 15)]
    reports = _reports(len(items))
    check_near_duplicates(reports, items)
    assert all(r.problems == [] for r in reports)


_words = st.lists(
    st.sampled_from(["the", "a", "cow", "hen", "farm", "legs", "heads", "how", "many", "are", "there", "on"]),
    min_size=3,
    max_size=30,
)


@given(_words, _words)
def test_a_near_duplicate_is_flagged_only_at_the_threshold(a: list[str], b: list[str]) -> None:
    first, second = " ".join(a), " ".join(b)
    reports = _reports(2)
    check_near_duplicates(reports, [_math(first), _math(second)])
    x, y = shingles(first), shingles(second)
    similarity = len(x & y) / len(x | y)
    flagged = [p.check for p in reports[1].problems] == ["near_duplicate"]
    if flagged:  # LSH proposes candidates; each is confirmed by the exact Jaccard similarity
        assert similarity >= NEAR_DUPLICATE_JACCARD
    if similarity == 1.0 and first.split() != second.split():
        assert flagged  # the same shingles in another wording of the prompt


def test_an_answer_after_a_cue_in_the_prompt_is_an_error() -> None:
    for prompt in (
        "What is 6 times 7? The answer is 42.",
        "What is 6 times 7? (Hint: it is 42)",
        "Compute 6*7. Answer: 42",
        "6 乘以 7 等于多少？答案是 42",
        "Find 6*7 and write it as \\boxed{42}.",
    ):
        report = TaskReport(id="t")
        check_answer_in_prompt(report, _math(prompt))
        assert _checks(report) == [("answer_in_prompt", "error")], prompt


def test_a_number_of_the_question_equal_to_the_answer_is_only_a_warning() -> None:
    report = TaskReport(id="t")
    check_answer_in_prompt(report, _math("If x = 3, what is x^2 - 6?", "3"))
    assert _checks(report) == [("answer_in_prompt", "warning")]
    assert report.valid


def test_an_answer_absent_from_the_prompt_raises_nothing() -> None:
    for prompt, gold in (
        ("What is 6 times 7?", "42"),
        ("What is 0.5 + 0.25?", "0.75"),
        ("Area of a 4x5?", "20"),
    ):
        report = TaskReport(id="t")
        check_answer_in_prompt(report, _math(prompt, gold))
        assert report.problems == [], prompt


def test_equal_values_in_other_notation_count_as_the_answer() -> None:
    report = TaskReport(id="t")
    check_answer_in_prompt(report, _math("Halve 1. The answer is 0.50", "1/2"))
    assert _checks(report) == [("answer_in_prompt", "error")]
