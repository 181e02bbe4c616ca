"""The parse fast paths of the math verifier against latex2sympy's own reading, tree for tree.

`direct.read` builds the simplest shapes without ANTLR and `symbolic.parse_latex` parses the rest with
SLL prediction first: each must give exactly the tree (`srepr`: types, argument order, Float precision)
that the library's converter gives with its default full-LL parse, and never a tree where the library
raises. The texts come from a rule-blind grammar of answer-like LaTeX that also produces the shapes the
fast path must refuse, and from random strings of LaTeX tokens.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sympy import srepr

from assay.verifiers.math import direct, symbolic

BOUNDED = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def tree(expr: Any) -> Any:
    """A sympy object as nested (type, arguments in order), each leaf by its exact `srepr` (a Float's
    digits and precision, a Symbol's assumptions). `srepr` of the whole cannot print some unevaluated
    trees (it sorts a product with `nan` in it)."""
    if not getattr(expr, "args", ()):
        return srepr(expr)
    return (type(expr).__name__, tuple(tree(arg) for arg in expr.args))


def library_reading(text: str) -> Any:
    """What the library's converter builds from `text` with the default (LL) parse, or its error type."""
    try:
        return tree(symbolic._converter().parse(text))
    except Exception as exc:  # the parser raises many types; the type is what must match
        return f"error: {type(exc).__name__}"


LEAVES = st.one_of(
    st.from_regex(r"0{0,2}[0-9]{1,4}", fullmatch=True),
    st.from_regex(r"[0-9]{0,3}\.[0-9]{1,3}", fullmatch=True),
    st.sampled_from([*"xyzabnkmtIidEeTXA", "\\pi", "\\pi ", "\\infty"]),
)

# Shapes of the subset and of its neighbours; A and B are subexpressions, `~` a blank of 0-2 spaces, K a
# small integer (sympy's binomial expands `\\binom{x}{9999}` into 9999 factors, in the library as here).
# fmt: off
INSIDE = ["A~+~B", "A~-~B", "A*B", "A\\cdot~B", "A\\times~B", "A/B", "-A", "+A", "AB", "A~B", "A^B", "A^{B}",
          "(A)", "\\frac{A}{B}", "\\sqrt{A}", "A!", "\\binom{A}{K}"]
OUTSIDE = ["A(B)", "A!=B", "A_B", "\\ln~A", "\\sqrt[A]{B}", "{A}", "A^T", "A,B", "A=B"]
TOKENS = [" ", "1", "2", "0", "12", ".5", "3.", "x", "y", "e", "d", "I", "T", "+", "-", "*", "/", "^",
          "(", ")", "{", "}", "\\frac", "\\sqrt", "\\pi", "\\cdot", "\\times", "!", "_", ",", "\\infty", "%",
          "\\%", "٣"]
# fmt: on


def _filled(draw: st.DrawFn, shape: str, a: str, b: str) -> str:
    blank, small = st.sampled_from(["", " ", "  "]), st.integers(0, 12).map(str)
    fills = {"A": lambda: a, "B": lambda: b, "~": lambda: draw(blank), "K": lambda: draw(small)}
    return "".join(fills[c]() if c in fills else c for c in shape)


@st.composite
def expressions(draw: st.DrawFn, depth: int = 3, shapes: tuple[str, ...] = (*INSIDE, *OUTSIDE)) -> str:
    """Answer-like LaTeX over the subset's operators and a few of its neighbours (`!`, `_`, `\\ln`)."""
    if depth == 0 or draw(st.integers(0, 4)) == 0:
        return draw(LEAVES)
    a, b = draw(expressions(depth - 1, shapes)), draw(expressions(depth - 1, shapes))
    return _filled(draw, draw(st.sampled_from(shapes)), a, b)


TOKEN_SOUP = st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12).map("".join)


@BOUNDED
@given(st.one_of(expressions(), expressions(shapes=tuple(INSIDE)), TOKEN_SOUP))
def test_a_direct_reading_is_the_librarys_tree(text: str) -> None:
    built = direct.read(text, symbolic._converter())
    if built is not None:
        assert tree(built) == library_reading(text)


@BOUNDED
@given(st.one_of(expressions(), TOKEN_SOUP))
def test_the_two_stage_parse_is_the_librarys_tree(text: str) -> None:
    """SLL first (with the LL parse where SLL fails) reads every text as the default LL parse does."""
    try:
        ours = tree(symbolic.parse_latex(text))
    except Exception as exc:  # the same error type as the library's own parse
        ours = f"error: {type(exc).__name__}"
    assert ours == library_reading(text)


COMMON = [
    "3",
    "-2",
    "007",
    "0.25",
    ".5",
    "-3.75",
    "\\frac{3}{4}",
    "-\\frac{1}{2}",
    "3/4",
    "2\\frac{1}{2}",
    "2\\sqrt{3}",
    "\\frac{\\sqrt{3}}{2}",
    "\\frac{\\pi}{6}",
    "2\\pi",
    "x^2 + 2x + 1",
    "(x+1)^2",
    "3x^2 - 2x + 1",
    "\\frac{x+1}{x-1}",
    "1 + 2i",
    "2^{1/3}",
    "(\\sqrt{2}+\\sqrt{3})^2",
    "\\pi \\cdot 2",
    "x^{-1}",
    "a^2+b^2",
    "1 - 2 - 3",
    "2 \\times 3 / 4",
    "5!",
    "\\binom{10}{3}",
    "-\\infty",
    "2^3!",
]


@pytest.mark.parametrize("text", COMMON)
def test_common_answers_take_the_direct_path_and_match_the_library(text: str) -> None:
    built = direct.read(text, symbolic._converter())
    assert built is not None
    assert tree(built) == library_reading(text)


@pytest.mark.parametrize(
    "text",
    [
        "n(n+1)",  # a letter before a parenthesis: the grammar reads a function call
        "x^2(x+1)",
        "\\pi(2)",
        "(x+1)",  # one parenthesised group: possibly a one-element tuple
        "x^T",  # a transpose
        "I^2",  # the converter drops the exponent of I
        "2e",  # exponential e
        "2E5",  # scientific notation
        "dx",  # a differential
        "xy",  # adjacent letters: the lexer has multi-letter tokens (tr, rank, ...)
        "2^x^2",  # chained powers have two readings
        "1.2.3",
        "2.",
        "x_1",
        "\\sqrt[3]{2}",
        "\\infty\\%",
        "\\partial",
        "50\\%",
        "٣",  # a digit outside ASCII
        "x\u00a0+ 1",  # a blank the lexer does not skip
        "1, 2",
        "x = 1",
        "",
        "   ",
    ],
)
def test_shapes_with_another_reading_are_left_to_the_library(text: str) -> None:
    assert direct.read(text, symbolic._converter()) is None


@pytest.mark.parametrize("text", ["x^2 + 1", "a_{1} + 2", "3 + \\sqrt{2}", "\\ln 2", "(1, 2)", "1 + "])
def test_to_sympy_is_unchanged_by_the_fast_paths(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole pipeline (normalisation, parse, cost guard, evaluation) gives the same object or error
    with the fast paths as with the library's parse alone."""

    def pipeline() -> str:
        symbolic.to_sympy.cache_clear()
        try:
            return srepr(symbolic.to_sympy(text))
        except (symbolic.TooCostly, ValueError) as exc:
            return f"{type(exc).__name__}: {exc}"

    fast = pipeline()
    monkeypatch.setattr(symbolic, "parse_latex", lambda normalized: symbolic._converter().parse(normalized))
    slow = pipeline()
    symbolic.to_sympy.cache_clear()
    assert fast == slow
