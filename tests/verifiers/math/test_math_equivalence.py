"""The math task's notion of answer equivalence (verifiers/math/equivalence.py): what a group's answer
clusters merge and what they keep apart."""

from __future__ import annotations

import pytest

from assay.groups import cluster_indices
from assay.types import Item
from assay.verifiers.math import MathScorer
from assay.verifiers.math.equivalence import MathEquivalence

EQ = MathEquivalence()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("1/2", "0.5"),  # the issue's own example: one answer in three spellings
        ("\\frac12", "0.5"),
        ("\\frac{2}{4}", "1/2"),
        ("x+1", "1+x"),  # no key: the comparer decides
        ("\\sqrt{2}", "2^{1/2}"),
        ("\\{1, 2\\}", "\\{2, 1\\}"),  # a set is unordered
    ],
)
def test_equivalent_spellings_are_one_answer(a: str, b: str) -> None:
    assert cluster_indices([a, b], EQ) == [[0, 1]]


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("1/2", "0.4"),
        ("(1,2)", "\\{1,2\\}"),  # an ordered pair is not a set
        ("1.73", "\\sqrt{3}"),  # the gold 1.73 accepts sqrt(3), not back: equivalence is mutual
        ("x+1", "y+1"),
        ("0.333", "1/3"),
        ("50\\%", "50"),
    ],
)
def test_different_answers_stay_apart(a: str, b: str) -> None:
    assert cluster_indices([a, b], EQ) == [[0], [1]]


def test_exact_numbers_share_a_key_so_they_need_no_comparison() -> None:
    assert EQ.key("1/2") == EQ.key("0.5") == EQ.key("\\frac{1}{2}") != EQ.key("0.4")


def test_the_answer_read_without_a_reference_is_the_scorers_extraction() -> None:
    assert EQ.answer(Item(task="math", response="so the answer is \\boxed{\\frac12}")) == "\\frac12"
    assert EQ.answer(Item(task="math", response="\\boxed{2} or maybe \\boxed{3}")) is None  # a hedge
    cut_off = "Let me think about this step by step. First we expand the square and then we"
    assert EQ.answer(Item(task="math", response=cut_off)) is None


def test_the_math_task_declares_its_equivalence() -> None:
    assert MathScorer.equivalence.available and isinstance(MathScorer.equivalence, MathEquivalence)


def test_expressions_that_differ_at_the_fixed_point_are_never_compared() -> None:
    class Counting(MathEquivalence):
        compared = 0

        def equivalent(self, a: str, b: str) -> bool:
            Counting.compared += 1
            return super().equivalent(a, b)

    polynomials = [f"{i + 1}x^{i % 5 + 2}+{i}" for i in range(64)]
    assert len(cluster_indices([*polynomials, "(x+1)^2", "x^2+2x+1"], Counting())) == 65
    assert Counting.compared == 1  # only the one pair that agrees at the point: (x+1)^2 and x^2+2x+1


def test_a_signature_is_for_expressions_only() -> None:
    assert EQ.signature("x+1") == EQ.signature("1+x") != EQ.signature("x+2")
    assert EQ.signature("x+1") != EQ.signature("y+1")  # the symbols are part of it
    assert EQ.signature("1/2") is None and EQ.signature("\\{1,2\\}") is None
