"""String normalisation, numbers and answer kinds. Every row pins a real-world spelling."""

from __future__ import annotations

from fractions import Fraction

import pytest

from assay.verifiers.math.normalise import canonical_text, clean, strip_units
from assay.verifiers.math.numbers import parse_number
from assay.verifiers.math.values import describe, kind_of, parse_value

CLEAN = [
    ("\\dfrac{1}{2}", "\\frac{1}{2}"),  # dfrac in MATH solutions
    ("\\left( 1, 2 \\right]", "( 1, 2 ]"),  # sizing commands around intervals
    ("\\text{(B) } 24", "(B) 24"),  # AMC answer written by the model
    ("$x = 3$.", "x = 3"),  # delimiters and the sentence's full stop
    ("1{,}000", "1,000"),  # LaTeX braced comma
    ("x\\le5", "x\\leq 5"),  # \le before a digit
    (".125", ".125"),  # a leading point is part of the number (a regression: it was stripped)
    ("100\\,\\text{cm}^2", "100 cm^2"),  # a thin space before a word command is still a space
    ("\\lvert x \\rvert < 2", "| x | < 2"),  # absolute value bars
    ("\\left| x \\right| < 2", "| x | < 2"),
]

NUMBERS = [
    ("1,000,000", Fraction(1_000_000), "integer"),  # thousands separators
    ("1\\,000", Fraction(1000), "integer"),  # LaTeX thin space
    ("10^6", Fraction(1_000_000), "integer"),  # power of ten
    ("0.\\overline{3}", Fraction(1, 3), "fraction"),  # repeating decimal
    ("2\\frac{1}{2}", Fraction(5, 2), "fraction"),  # mixed number
    ("-\\frac{2}{3}", Fraction(-2, 3), "fraction"),  # signed fraction
    ("1.5\\times10^{3}", Fraction(1500), "scientific"),  # scientific notation
    ("2.50", Fraction(5, 2), "decimal"),  # decimal with a trailing zero
    ("(-3)", Fraction(-3), "integer"),  # parenthesised negative (a regression: the sign flipped)
    ("eighteen", Fraction(18), "integer"),  # "The answer is eighteen."
    ("twenty-five", Fraction(25), "integer"),
]

KINDS = [
    ("(1, 2]", "interval"),
    ("\\{1, 2\\}", "set"),  # a set, never an ordered pair
    ("(1, 2)", "paren"),  # ordered pair or open interval
    ("\\langle 1, 2 \\rangle", "vector"),
    ("\\begin{pmatrix} 1 \\\\ 2 \\end{pmatrix}", "vector"),  # column vector (a regression: `\\ ` was eaten)
    ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "matrix"),
    ("x = \\pm 2", "list"),  # two solutions
    ("x > 3", "interval"),  # inequality in one variable
    ("x^2 + y^2 = 1", "relation"),
    ("(-\\infty, 1) \\cup (2, \\infty)", "union"),
    ("\\textbf{(B) } 24", "choice"),
    ("\\text{no solution}", "text"),
    ("50\\%", "percent"),
    ("\\frac{\\sqrt{3}}{2}", "expression"),
    ("|x| < 3", "interval"),  # absolute-value inequality (a known weak spot)
    ("|x| \\geq 3", "union"),
    ("x \\ne 2", "union"),  # a punctured line
    ("\\mathbb{R}", "interval"),  # the whole real line
    ("f(2) = 5", "integer"),  # a function at a point is a name for the value
    ("x + y = 3", "integer"),  # kept as "x+y = 3"; the comparer reads it as an equation when needed
]


@pytest.mark.parametrize(("raw", "expected"), CLEAN)
def test_clean(raw: str, expected: str) -> None:
    assert clean(raw).text == expected


def test_degree_mark_is_a_flag() -> None:
    assert clean("30^\\circ") == clean("30 degrees") and clean("30^\\circ").degrees


@pytest.mark.parametrize(("raw", "value", "kind"), NUMBERS)
def test_parse_number(raw: str, value: Fraction, kind: str) -> None:
    number = parse_number(clean(raw).text)
    assert number is not None and number.value == value and number.kind == kind


def test_huge_power_is_not_computed() -> None:
    assert parse_number("9^{9^9}") is None and parse_number("2^{1000000}") is None


@pytest.mark.parametrize(("raw", "kind"), KINDS)
def test_kind_of_answer(raw: str, kind: str) -> None:
    assert kind_of(parse_value(raw)) == kind, describe(parse_value(raw))


def test_units_go_only_after_a_bare_number() -> None:
    assert strip_units("20 cm") == "20"
    assert strip_units("20 dollars and 50 cents") == "20 dollars and 50 cents"  # math-verify FP
    assert strip_units("45 km/h") == "45"  # a unit with a slash
    assert strip_units("3 x/y") == "3 x/y"  # variables are not units
    assert strip_units("12a") == "12a"  # a trainer run: "12a" was scored as 12; a lone letter is a variable
    assert strip_units("12 m") == "12"  # ...unless it is a one-letter SI unit
    assert strip_units("42 is wrong") == "42 is wrong"  # a sentence about the number is not a unit


def test_text_synonyms() -> None:
    assert canonical_text("No Solution") == canonical_text("\\emptyset") == canonical_text("none")
