"""The slow path: LaTeX -> sympy (through latex2sympy2_extended, math-verify's parser), a cost guard, and
equality by exact structure, then numeric evaluation at random points, then a bounded simplification.

Cost guard (measured: with math-verify's timeouts off, `9^{9^9}` did not finish in 45 s and 300 nested
parentheses hit a 5 s limit): text longer than `MAX_CHARS` or nested deeper than `MAX_NESTING` is never
parsed, and a parsed tree whose constant powers or factorials would have more than `MAX_DIGITS` digits is
never evaluated exactly. What the guard refuses is reported as "too costly", never as equal.

Tiny values are compared relatively (1/2^99 is not 1/2^98): only two exact zeros are "close to zero". Two
values are compared through their difference, evaluated as one expression, so big values are exact too.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import re
from fractions import Fraction
from functools import lru_cache
from typing import Any

MAX_CHARS = 400
MAX_NESTING = 24
MAX_DIGITS = 10_000
MAX_NODES = 400
DIGITS = 30
EXACT_REL_TOL = 1e-12  # two exact expressions agree to this many digits at every point -> equal
_SIMPLIFY_MAX_OPS = 40

log = logging.getLogger(__name__)


_SCIENTIFIC_RE = re.compile(r"(?<![\w\\.])(\d+(?:\.\d+)?)[eE]([-+]?\d+)(?![\w.])")


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
        if 7 < exponent < 60 and node.exp.is_number:  # a loose bound on a small exponent: evaluate it
            with contextlib.suppress(TypeError, ValueError, OverflowError):
                exponent = math.log10(max(abs(complex(node.exp.evalf(15))), 1e-300))
        if exponent > 7:
            return math.inf
        return base * 10**exponent + 1
    if isinstance(node, sympy.factorial):
        size = _log10_size(node.args[0])
        return math.inf if size > 6 else 10**size * size + 1
    if node.is_Add:  # |a + b| <= 2 max(|a|, |b|): a sum is no bigger than its biggest term (+ log10 of count)
        return max(_log10_size(arg) for arg in node.args) + math.log10(len(node.args))
    if node.args:
        return sum(max(_log10_size(arg), 0.0) for arg in node.args) + 1
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
        if isinstance(node, sympy.binomial) and not node.is_number and _large_integer_arg(node):
            raise TooCostly("a symbolic binomial above 200")  # binomial(x, 99999): a degree-99999 polynomial


def _large_integer_arg(node: Any) -> bool:
    return any(arg.is_Integer and abs(int(arg)) > 200 for arg in node.args)


def _imaginary(expr: Any) -> Any:
    """latex2sympy reads `i` (and `j`) as symbols; in a final answer they are the imaginary unit."""
    import sympy

    swaps = {s: sympy.I for s in expr.free_symbols if getattr(s, "name", "") in ("i", "j")}
    return expr.xreplace(swaps) if swaps else expr


_PLAIN_INTEGER_RE = re.compile(r"[0-9]+")
_PLAIN_DECIMAL_RE = re.compile(r"[0-9]+\.[0-9]*|\.[0-9]+")


@lru_cache(maxsize=1)
def _converter_class() -> Any:
    """latex2sympy's converter with its number literals read directly (issue 30's speed target).

    Its `parse_number` calls `sympy.Number(text)`, and a string there goes through `parse_expr`, which
    executes `from sympy import *` for every literal: 1-2 ms each, about half the time of a typical item.
    A literal of ASCII digits, with or without a decimal point, becomes the `Integer` or `Float` that
    `parse_expr` builds from it; any other literal goes the library's way."""
    import sympy
    from latex2sympy2_extended.latex2sympy2 import _Latex2Sympy

    class Converter(_Latex2Sympy):
        prediction_mode: int | None = None  # None: the library's (full LL)

        def create_parser(self, latex_str: str) -> Any:
            parser = super().create_parser(latex_str)
            if self.prediction_mode is not None:
                parser._interp.predictionMode = self.prediction_mode
            return parser

        def parse_number(self, text: str) -> Any:
            plain = text.replace(",", "")
            if _PLAIN_INTEGER_RE.fullmatch(plain):
                return sympy.Integer(plain.lstrip("0") or "0")
            if _PLAIN_DECIMAL_RE.fullmatch(plain):
                return sympy.Float(plain)
            return super().parse_number(text)

    return Converter


def _converter(sll: bool = False) -> Any:
    """A fresh converter per parse, as `latex2sympy` makes one (it keeps state while converting)."""
    from antlr4.atn.PredictionMode import PredictionMode
    from latex2sympy2_extended.latex2sympy2 import ConversionConfig

    converter = _converter_class()(None, None, False, config=ConversionConfig())
    if sll:
        converter.prediction_mode = PredictionMode.SLL
    return converter


_SLL_FAILS_RE = re.compile(r"[a-zA-Z]\s*[_^]")


def parse_latex(normalized: str, direct: bool = True) -> Any:
    """latex2sympy's reading of normalised LaTeX (issue 30's speed target): the simplest shapes built
    directly (direct.py; `direct=False` skips that), the rest parsed by ANTLR in two stages.

    ANTLR's SLL prediction ignores the parser's call stack, so it never falls back to the full-context
    LL prediction that took about a third of each parse. ANTLR documents that an SLL parse either
    returns the parse tree LL would return or reports a syntax error; the library's error listener
    raises on every syntax error, so any failure of the SLL stage is parsed again with full LL, and
    the result is always the library's own (LL) reading. A letter with a sub- or superscript (`x^2`,
    `a_{1}`) is a decision SLL always gets wrong in this grammar (measured: every SLL failure of a valid
    input in 2,107 recorded answers had one), so such text goes to LL at once instead of being parsed twice.
    """
    from assay.verifiers.math.direct import read

    if direct and (tree := read(normalized, _converter())) is not None:  # the simplest shapes: no ANTLR
        return tree
    if not _SLL_FAILS_RE.search(normalized):
        try:
            return _converter(sll=True).parse(normalized)
        except Exception:  # a syntax error under SLL may be an LL-only input: the LL parse decides
            pass
    return _converter().parse(normalized)


def _normalised(text: str) -> str:
    """The text as `latex2sympy(text, config)` hands it to its parser."""
    from latex2sympy2_extended.math_normalization import NormalizationConfig, normalize_latex

    config = NormalizationConfig(
        basic_latex=True, units=False, malformed_operators=True, nits=True, boxed=False, equations=False
    )
    text = _SCIENTIFIC_RE.sub(r"\1\\times 10^{\2}", text)  # 1e100000 is 10^100000, not 1 * e * 100000
    return normalize_latex(text, config)


@lru_cache(maxsize=4096)
def to_sympy(text: str) -> Any:
    """The sympy form of a cleaned LaTeX expression; raises TooCostly or ValueError. Cached per text."""
    if len(text) > MAX_CHARS:
        raise TooCostly(f"longer than {MAX_CHARS} characters")
    if nesting(text) > MAX_NESTING:
        raise TooCostly(f"nested deeper than {MAX_NESTING}")
    try:
        expr = parse_latex(_normalised(text))  # what `latex2sympy(text, config)` does
    except TooCostly:
        raise
    except Exception as exc:  # the parser raises many types (antlr, sympy, RecursionError)
        raise ValueError(f"cannot parse {text!r}: {type(exc).__name__}") from exc
    if not hasattr(expr, "free_symbols") or not hasattr(expr, "evalf"):
        raise ValueError(f"{text!r} is not an expression")
    expr = _imaginary(expr)
    check_cost(expr)
    return _evaluated(expr)


def _evaluated(expr: Any) -> Any:
    """The tree rebuilt with sympy's automatic evaluation (the parser leaves `(x+1)^{60} - (1+x)^{60}`
    unevaluated, and its numeric value is then cancellation noise). Run after the cost guard."""
    if getattr(expr, "is_Float", False):  # "10.5" as written is exactly 21/2
        import sympy

        return sympy.Rational(str(expr))
    if not getattr(expr, "args", ()):
        return expr
    try:
        return expr.func(*(_evaluated(arg) for arg in expr.args))
    except Exception:  # an odd node (a Tuple of relations, a matrix): keep it as parsed
        return expr


# Typical answer shapes: the LaTeX parser (ANTLR) builds its prediction cache per shape on first sight,
# which made the first real item after start-up take 4x longer than the next ones. The shapes direct.py
# builds without ANTLR are parsed by ANTLR here too, and so are shapes it leaves to ANTLR (calls, logs,
# the exponential, factorials, subscripts, tuples, relations), each first seen costing 20-90 ms.
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
    "n(n+1)",
    "\\frac{f(x)}{2}",
    "\\ln 2",
    "\\log_{2}{3}",
    "e^{2}",
    "\\binom{5}{2}",
    "5!",
    "-\\infty",
    "\\sin^2 x",
    "x_{1} + x_{2}",
    "(1, 2)",
    "x \\leq 3",
    "2 \\times 10^{5}",
    "\\sqrt[3]{2}",
    "|x - 1|",
)


def warm_up() -> None:
    """Import sympy and the LaTeX parser and parse typical answers once, so later parses are fast."""
    for text in _WARM_UP:
        try:
            evaluate(to_sympy(text), {})
            parse_latex(_normalised(text), direct=False)
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


# Functions that are defined only on the reals (or differ on complex points from what a student means):
# where either side has one, the sampled points stay real.
_REAL_ONLY = ("Abs", "floor", "ceiling", "sign", "Min", "Max", "re", "im", "arg", "conjugate", "frac")


def _complex_allowed(*exprs: Any) -> bool:
    return not any(
        getattr(getattr(node, "func", None), "__name__", "") in _REAL_ONLY
        for e in exprs
        for node in _nodes(e)
    )


def _nodes(expr: Any) -> Any:
    import sympy

    return sympy.preorder_traversal(expr)


_CUT_OFFSET = Fraction(1, 1000)


def _points(symbols: list[Any], complex_ok: bool) -> list[dict[Any, Any]]:
    """Positive, negative and (where allowed) complex fractional points: sampling only (0.3, 2.7) accepted
    sqrt(x^2) for x, |x| for x and log(x^2) for 2 log x (issue 14)."""
    import sympy

    rng = random.Random(20240517)  # deterministic: the same pair always gets the same verdict

    def fraction(low: float, high: float) -> Any:  # exact inputs: evalf then keeps DIGITS digits
        return sympy.Rational(rng.randint(int(low * 10**6), int(high * 10**6)), 10**6)

    kinds = ["pos", "neg", "pos", "neg", "mixed", "mixed"] + (["complex", "complex"] if complex_ok else [])
    points = []
    for kind in kinds:
        point: dict[Any, Any] = {}
        for s in symbols:
            sign = {"pos": 1, "neg": -1}.get(kind, rng.choice((1, -1)))
            value: Any = sign * fraction(0.31, 2.77)
            if kind == "complex":
                value = value + rng.choice((1, -1)) * fraction(0.29, 1.93) * sympy.I
            elif sign < 0 and complex_ok:
                # Just above the negative real axis, not on it: the cut of sqrt, log and x^(1/n) lies
                # there, so 1/sqrt(x) and sqrt(1/x) (equal everywhere off the cut) differed at every
                # negative point (issue 30). Off-axis points still tell sqrt(x^2) from x, log(x^2) from
                # 2 log x and sqrt(x) sqrt(y) from sqrt(xy), which differ on a whole half-plane.
                value = value + _CUT_OFFSET * sympy.I
            point[s] = value
        points.append(point)
    return points


def undefined(expr: Any) -> bool:
    """Whether a value is undefined (division by zero, 0/0): never equal to anything, itself included."""
    import sympy

    return bool(expr.has(sympy.zoo, sympy.nan))


def _names(expr: Any) -> set[str]:
    return {str(s) for s in expr.free_symbols}


def _agree(gold: Any, answer: Any, point: dict[Any, Any]) -> bool | None:
    """Whether the two agree at `point` to about DIGITS digits (None where either is undefined).

    The difference is evaluated as one expression, so sympy raises its working precision through
    cancellation: 10^18 + x + 1 and 10^18 + x differ, which a relative tolerance on the values would miss.
    """
    g, a = evaluate(gold, point), evaluate(answer, point)
    if g is None or a is None:
        return None
    try:
        diff = (gold - answer).evalf(DIGITS, subs=point)
        d = complex(diff)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError, AttributeError):
        return None
    if d == 0 or getattr(diff, "_prec", 100) < 10:  # exact zero, or all precision cancelled away
        return True
    # evalf raised its working precision until the difference itself has DIGITS digits: a difference it
    # reports with full precision is real (10^37 + 1 and 10^37 + 2 differ by exactly 1, whatever their size).
    return abs(d) <= 1e-60 * max(abs(g), abs(a))


def equal(gold: Any, answer: Any) -> tuple[bool | None, str]:
    """Whether two sympy expressions are equal: (verdict or None if undecided, the rule that decided).

    Symbolic evidence comes first and numeric evidence never overrules it: different free symbols are
    different answers (3x - 2 is not 3y - 2, a_1 is not a_2), an undefined value equals nothing, two
    constants compare exactly. Only then may agreement at every sampled point accept.
    """
    import sympy

    if undefined(gold) or undefined(answer):
        return False, "symbolic: an undefined value (division by zero) equals nothing"
    if gold == answer:
        return True, "symbolic: identical"
    if _names(gold) != _names(answer):
        return False, f"symbolic: different symbols ({sorted(_names(answer))} vs {sorted(_names(gold))})"
    symbols = sorted(gold.free_symbols | answer.free_symbols, key=str)
    if not symbols:
        verdict = _agree(gold, answer, {})
        if verdict is None:
            return None, "undecided: could not evaluate"
        return verdict, f"exact: constants {'equal' if verdict else 'differ'} (difference to {DIGITS} digits)"
    points = _points(symbols, _complex_allowed(gold, answer))
    agreed = 0
    for point in points:
        verdict = _agree(gold, answer, point)
        if verdict is False:
            where = ", ".join(f"{k}={complex(v):.3g}" for k, v in point.items())
            return False, f"numeric: differ at {where}"
        agreed += verdict is True
    if agreed >= len(points) - 1:
        return True, f"numeric: agree at {agreed} positive, negative and complex point(s) to {DIGITS} digits"
    try:
        difference = gold - answer
        if sympy.count_ops(difference) <= _SIMPLIFY_MAX_OPS and sympy.simplify(difference) == 0:
            return True, "symbolic: simplify(gold - answer) == 0"
    except Exception as exc:  # sympy raises broadly on odd trees; undecided, not an error
        log.debug("simplify failed: %s", exc)
    return None, "undecided: could not evaluate"


def proportional(gold: Any, answer: Any, positive: bool) -> tuple[bool | None, str]:
    """Whether `answer == c * gold` for a constant c != 0 (c > 0 if `positive`): same equation/inequality."""
    if _names(gold) != _names(answer):
        return False, "symbolic: different symbols"
    symbols = sorted(gold.free_symbols | answer.free_symbols, key=str)
    ratios: list[complex] = []
    for point in _points(symbols, complex_ok=False):
        g, a = evaluate(gold, point), evaluate(answer, point)
        if g is None or a is None or g == 0:
            continue
        ratios.append(a / g)
    if len(ratios) < 4:
        return None, "undecided: could not evaluate"
    first = ratios[0]
    if first == 0 or not all(close(r, first, EXACT_REL_TOL) for r in ratios):
        return False, "numeric: sides are not proportional"
    if positive and (first.real <= 0 or abs(first.imag) > EXACT_REL_TOL):
        return False, "numeric: the inequality is reversed"
    return True, f"numeric: proportional at {len(ratios)} points"


def constant_value(text: str) -> complex | None:
    """Numeric value of a constant expression (no free symbols), or None."""
    expr = to_sympy(text)
    if expr.free_symbols:
        return None
    return evaluate(expr)
