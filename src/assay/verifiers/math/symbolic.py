"""The slow path: LaTeX -> sympy (through latex2sympy2_extended, math-verify's parser), a cost guard, and
equality by exact structure, then numeric evaluation at random points, then a bounded simplification.

Cost guard (measured: with math-verify's timeouts off, `9^{9^9}` did not finish in 45 s and 300 nested
parentheses hit a 5 s limit): text longer than `MAX_CHARS` or nested deeper than `MAX_NESTING` is never
parsed, and a parsed tree whose constant powers or factorials would have more than `MAX_DIGITS` digits is
never evaluated exactly. What the guard refuses is reported as "too costly", never as equal.

Tiny values are compared relatively (1/2^99 is not 1/2^98): only two exact zeros are "close to zero".
"""

from __future__ import annotations

import logging
import math
import random
from fractions import Fraction
from functools import lru_cache
from typing import Any

MAX_CHARS = 400
MAX_NESTING = 24
MAX_DIGITS = 10_000
MAX_NODES = 400
POINTS = 5
DIGITS = 30
EXACT_REL_TOL = 1e-12  # two exact expressions agree to this many digits at every point -> equal
_SIMPLIFY_MAX_OPS = 40

log = logging.getLogger(__name__)


class TooCostly(Exception):
    """The expression would take too long or too much memory to evaluate."""


def nesting(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in ")]}":
            depth -= 1
    return deepest


def _log10_size(node: Any) -> float:
    """Upper estimate of log10 |value| of a constant subtree (inf if it is astronomically large)."""
    import sympy

    if node.is_Integer or node.is_Rational:
        return max(abs(int(node.p)).bit_length(), abs(int(node.q)).bit_length()) * math.log10(2)
    if node.is_Float or node.is_NumberSymbol or node is sympy.I:
        return 1.0
    if node.is_Pow:
        base, exponent = _log10_size(node.base), _log10_size(node.exp)
        if exponent > 7:
            return math.inf
        return base * 10**exponent + 1
    if isinstance(node, sympy.factorial):
        size = _log10_size(node.args[0])
        return math.inf if size > 6 else 10**size * size + 1
    if node.args:
        return sum(_log10_size(arg) for arg in node.args) + 1
    return 1.0


def check_cost(expr: Any) -> None:
    """Raise TooCostly when exact work on `expr` could explode (towers, huge factorials, huge trees)."""
    import sympy

    for nodes, node in enumerate(sympy.preorder_traversal(expr)):
        if nodes >= MAX_NODES:
            raise TooCostly(f"more than {MAX_NODES} nodes")
        exact = (node.is_Pow or isinstance(node, sympy.factorial)) and node.is_number
        if exact and _log10_size(node) > MAX_DIGITS:
            raise TooCostly(f"{node.func.__name__} with more than {MAX_DIGITS} digits")
        if node.is_Pow and not node.is_number and node.exp.is_Integer and abs(int(node.exp)) > 200:
            raise TooCostly("a symbolic power above 200")


def _imaginary(expr: Any) -> Any:
    """latex2sympy reads `i` (and `j`) as symbols; in a final answer they are the imaginary unit."""
    import sympy

    swaps = {s: sympy.I for s in expr.free_symbols if getattr(s, "name", "") in ("i", "j")}
    return expr.xreplace(swaps) if swaps else expr


@lru_cache(maxsize=4096)
def to_sympy(text: str) -> Any:
    """The sympy form of a cleaned LaTeX expression; raises TooCostly or ValueError. Cached per text."""
    if len(text) > MAX_CHARS:
        raise TooCostly(f"longer than {MAX_CHARS} characters")
    if nesting(text) > MAX_NESTING:
        raise TooCostly(f"nested deeper than {MAX_NESTING}")
    from latex2sympy2_extended import latex2sympy
    from latex2sympy2_extended.math_normalization import NormalizationConfig

    config = NormalizationConfig(
        basic_latex=True, units=False, malformed_operators=True, nits=True, boxed=False, equations=False
    )
    try:
        expr = latex2sympy(text, normalization_config=config)
    except TooCostly:
        raise
    except Exception as exc:  # the parser raises many types (antlr, sympy, RecursionError)
        raise ValueError(f"cannot parse {text!r}: {type(exc).__name__}") from exc
    if not hasattr(expr, "free_symbols") or not hasattr(expr, "evalf"):
        raise ValueError(f"{text!r} is not an expression")
    expr = _imaginary(expr)
    check_cost(expr)
    return expr


# Typical answer shapes: the LaTeX parser (ANTLR) builds its prediction cache per shape on first sight,
# which made the first real item after start-up take 4x longer than the next ones.
_WARM_UP = (
    "\\frac{x}{2} + \\sqrt{2}",
    "\\sqrt{2}",
    "\\frac{\\sqrt{8}}{2}",
    "\\dfrac{3}{4}",
    "2\\pi",
    "x^2 + 2x + 1",
    "(x+1)^2",
    "2\\sqrt{3}",
    "\\frac{1}{2^{98}}",
    "e^{i\\pi}",
    "\\log_2 8",
    "\\sin(x)",
    "3.5",
)


def warm_up() -> None:
    """Import sympy and the LaTeX parser and parse typical answers once, so later parses are fast."""
    for text in _WARM_UP:
        try:
            evaluate(to_sympy(text), {})
        except (TooCostly, ValueError):  # pragma: no cover - fixed, known-good expressions
            log.warning("math: warming up the LaTeX parser on %r failed", text)


def evaluate(expr: Any, subs: dict[Any, Any] | None = None) -> complex | None:
    """High-precision numeric value, or None when undefined (division by zero, log of 0, ...)."""
    try:
        value = expr.evalf(DIGITS, subs=subs) if subs else expr.evalf(DIGITS)
        result = complex(value)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError):
        return None
    if math.isnan(result.real) or math.isnan(result.imag) or math.isinf(abs(result)):
        return None
    return result


def close(a: complex, b: complex, rel_tol: float) -> bool:
    """Relative closeness; only exact zeros are close to zero (no absolute tolerance)."""
    if a == b:
        return True
    return abs(a - b) <= rel_tol * max(abs(a), abs(b))


def _points(symbols: list[Any], count: int) -> list[dict[Any, Any]]:
    rng = random.Random(20240517)  # deterministic: the same pair always gets the same verdict
    return [{s: rng.uniform(0.3, 2.7) for s in symbols} for _ in range(count)]


def _rename_single(gold: Any, answer: Any) -> Any:
    """`2t + 1` answers `2x + 1`: one free symbol on each side, with different names."""
    if (
        len(gold.free_symbols) == 1
        and len(answer.free_symbols) == 1
        and gold.free_symbols != answer.free_symbols
    ):
        return answer.xreplace({next(iter(answer.free_symbols)): next(iter(gold.free_symbols))})
    return answer


def equal(gold: Any, answer: Any) -> tuple[bool | None, str]:
    """Whether two sympy expressions are equal: (verdict or None if undecided, the rule that decided)."""
    import sympy

    if gold == answer:
        return True, "symbolic: identical"
    answer = _rename_single(gold, answer)
    symbols = sorted(gold.free_symbols | answer.free_symbols, key=str)
    agreed = 0
    for point in _points(symbols, POINTS if symbols else 1):
        g, a = evaluate(gold, point), evaluate(answer, point)
        if g is None or a is None:
            continue
        if not close(g, a, EXACT_REL_TOL):
            where = ", ".join(f"{k}={v:.3f}" for k, v in point.items()) or "constant"
            return False, f"numeric: differ at {where} ({g:.6g} vs {a:.6g})"
        agreed += 1
    if agreed == (POINTS if symbols else 1) or agreed >= 3:
        return True, f"numeric: agree at {agreed} point(s) to {DIGITS} digits"
    try:
        difference = gold - answer
        if sympy.count_ops(difference) <= _SIMPLIFY_MAX_OPS and sympy.simplify(difference) == 0:
            return True, "symbolic: simplify(gold - answer) == 0"
    except Exception as exc:  # sympy raises broadly on odd trees; undecided, not an error
        log.debug("simplify failed: %s", exc)
    return None, "undecided: could not evaluate"


def proportional(gold: Any, answer: Any, positive: bool) -> tuple[bool | None, str]:
    """Whether `answer == c * gold` for a constant c != 0 (c > 0 if `positive`): same equation/inequality."""
    answer = _rename_single(gold, answer)
    symbols = sorted(gold.free_symbols | answer.free_symbols, key=str)
    ratios: list[complex] = []
    for point in _points(symbols, POINTS):
        g, a = evaluate(gold, point), evaluate(answer, point)
        if g is None or a is None or g == 0:
            continue
        ratios.append(a / g)
    if len(ratios) < 3:
        return None, "undecided: could not evaluate"
    first = ratios[0]
    if first == 0 or not all(close(r, first, EXACT_REL_TOL) for r in ratios):
        return False, "numeric: sides are not proportional"
    if positive and (first.real <= 0 or abs(first.imag) > EXACT_REL_TOL):
        return False, "numeric: the inequality is reversed"
    return True, f"numeric: proportional at {len(ratios)} points"


def equal_to_number(text: str, number: Fraction) -> tuple[bool | None, str]:
    """An expression with symbols that may cancel (`1 + x - x`) against an exact number."""
    import sympy

    try:
        expr = to_sympy(text)
    except (TooCostly, ValueError) as exc:
        return False, f"answer cannot be evaluated ({exc})"
    if not isinstance(expr, sympy.Expr):
        return False, "answer is not a number"
    return equal(sympy.Rational(number.numerator, number.denominator), expr)


def constant_value(text: str) -> complex | None:
    """Numeric value of a constant expression (no free symbols), or None."""
    expr = to_sympy(text)
    if expr.free_symbols:
        return None
    return evaluate(expr)
