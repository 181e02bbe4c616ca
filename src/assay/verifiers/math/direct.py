"""latex2sympy's reading of the simplest answer shapes, built directly (issue 30's speed target).

Most answers are short: `3`, `-2`, `0.25`, `\\frac{3}{4}`, `2\\sqrt{3}`, `\\frac{\\pi}{6}`, `x^2 + 2x + 1`.
The ANTLR parse inside latex2sympy took most of the time of such an item (its Python runtime predicts
every decision through an ATN simulation). `read` parses a small subset of its grammar by recursive
descent and builds, call for call, the unevaluated sympy tree the library's converter builds from the
ANTLR parse tree: the same constructors with `evaluate=False`, the same flattening of sums and products,
the same unary minus, the same mixed-fraction rule (`2\\frac{1}{2}` is 5/2), the same number literals and
symbols. Everything outside the subset, and every place where the grammar offers a second reading, is
refused (None) and parsed by the library, so a refusal costs only time.

The subset (on text `normalize_latex` has already cleaned): ASCII digits with at most one decimal point,
single letters other than `d`, `e`, `E` (the lexer reads `dx` as a differential and `e`, `E` as
the exponential and scientific notation) and not next to another letter (the lexer has multi-letter
tokens: `tr`, `rank`, `eig`, ...), `\\pi`, `\\infty`, `+ - * / ^ !`, `\\cdot`, `\\times`, parentheses,
`\\frac{.}{.}`, `\\binom{.}{.}`, `\\sqrt{.}`. Refused besides: a letter or `\\pi` followed by `(` (the
grammar reads `f(x)` as a call), a whole text in one pair of parentheses (it may be a one-element tuple),
chained powers (`2^x^2` has two readings), `^T` (a transpose), a power of `I` (the converter returns
the unit and drops the exponent) and a power whose exponent is not a single atom or a braced expression.
tests/verifiers/math/test_math_direct.py checks every reading against the library's own, tree for tree.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

# The lexer skips exactly these blanks; `\d` and `\s` would also match other Unicode digits and spaces.
_TOKEN_RE = re.compile(
    r"[ \t\r\n]*(?:([0-9]+(?:\.[0-9]+)?|\.[0-9]+)|([a-zA-Z])|\\([a-zA-Z]+)|([-+*/^(){}!]))"
)
_COMMANDS = {"frac", "sqrt", "binom", "pi", "infty", "cdot", "times"}
_REFUSED_LETTERS = set("deE")
_ATOMS = {"num", "letter", "pi", "infty"}
_STARTS_FACTOR = {*_ATOMS, "frac", "sqrt", "binom", "("}


class Refused(Exception):
    """The text is outside the subset: the library parses it."""


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs; kind is num, letter, a command name or the character itself."""
    if "^T" in text or "^{T}" in text:
        raise Refused("a transpose")
    out: list[tuple[str, str]] = []
    pos, end = 0, len(text.rstrip(" \t\r\n"))
    while pos < end:
        match = _TOKEN_RE.match(text, pos)
        if match is None:
            raise Refused(f"no token at {pos}")
        number, letter, command, char = match.groups()
        pos = match.end()
        if number is not None:
            if pos < len(text) and text[pos] in ".eE":
                raise Refused("a number the lexer splits differently")
            out.append(("num", number))
        elif letter is not None:
            if letter in _REFUSED_LETTERS or (pos < len(text) and text[pos].isalpha()):
                raise Refused("a letter the lexer may read as part of a longer token")
            out.append(("letter", letter))
        elif command is not None:
            if command not in _COMMANDS:
                raise Refused(f"\\{command}")
            out.append((command, "\\" + command))
        else:
            out.append((char, char))
    return out


@lru_cache(maxsize=1)
def _library() -> Any:
    """The library's pieces the converter calls: `get_symbol` and sympy."""
    import sympy
    from latex2sympy2_extended.symbols import get_symbol

    return get_symbol, sympy


class _Reader:
    def __init__(self, tokens: list[tuple[str, str]], converter: Any) -> None:
        self.tokens = tokens
        self.pos = 0
        self.converter = converter
        self.get_symbol, self.sympy = _library()

    def peek(self) -> str:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else ""

    def take(self, kind: str) -> str:
        if self.peek() != kind:
            raise Refused(f"expected {kind!r}")
        self.pos += 1
        return self.tokens[self.pos - 1][1]

    def expr(self) -> Any:  # additive: left-associative + and -
        node = self.mp()
        while self.peek() in ("+", "-"):
            op = self.take(self.peek())
            rh = self.mp()
            if op == "-":
                rh = -rh if rh.func.is_Number else self.converter.mul_flat(-1, rh)
            node = self.converter.add_flat(node, rh)
        return node

    def mp(self) -> Any:  # left-associative *, \cdot, \times and /
        node = self.unary()
        while self.peek() in ("*", "cdot", "times", "/"):
            op = self.take(self.peek())
            rh = self.unary()
            node = self._ratio(node, rh) if op == "/" else self.converter.mul_flat(node, rh)
        return node

    def _ratio(self, upper: Any, lower: Any) -> Any:
        """`a / b` and `\\frac{a}{b}`: a Rational of two integers, else a * b^-1 left unevaluated."""
        if upper.is_Integer and lower.is_Integer:
            return self.sympy.Rational(upper, lower)
        return self.sympy.Mul(upper, self.sympy.Pow(lower, -1, evaluate=False), evaluate=False)

    def unary(self) -> Any:
        if self.peek() in ("+", "-"):
            op = self.take(self.peek())
            inner = self.unary()
            if op == "+":
                return inner
            if inner.func.is_Number or inner.is_Number:
                return -inner
            return self.converter.mul_flat(-1, inner)
        factors = [self.power()]
        while self.peek() in _STARTS_FACTOR:
            factors.append(self.power())
        return self._juxtaposed(factors)

    def _juxtaposed(self, factors: list[Any]) -> Any:
        """Implicit products, folded from the right as the converter folds its list of postfixes."""
        node = factors[-1]
        for res in reversed(factors[:-1]):
            if res.is_Integer and node.is_Rational and node.p > 0 and node.q > 0:  # 2 \frac{1}{2}
                sign = -1 if res < 0 else 1
                node = self.sympy.Rational(res * node.q + sign * node.p, node.q)
            else:
                node = self.converter.mul_flat(res, node)
        return node

    def power(self) -> Any:
        named = self.peek() in ("letter", "pi")
        capital_i = self.tokens[self.pos][1] == "I" if named else False
        base = self.comp()
        if self.peek() == "^":
            if capital_i:  # the converter returns the unit for `I` before it reads a superscript
                raise Refused("a power of I")
            self.take("^")
            if self.peek() == "{":
                exponent = self.braced()
            elif self.peek() in _ATOMS:
                exponent = self.atom()
            else:
                raise Refused("an exponent that is not an atom or a braced expression")
            if self.peek() == "^":
                raise Refused("chained powers")
            base = self.sympy.Pow(base, exponent, evaluate=False)
        if named and self.peek() == "(":
            raise Refused("a letter before a parenthesis reads as a function call")
        while self.peek() == "!":  # a postfix factorial, of the power before it (`2^3!` is (2^3)!)
            self.take("!")
            base = self.sympy.factorial(base, evaluate=False)
        return base

    def comp(self) -> Any:
        kind = self.peek()
        if kind == "(":
            self.take("(")
            inner = self.expr()
            self.take(")")
            return inner
        if kind == "frac":
            self.take("frac")
            return self._ratio(self.braced(), self.braced())
        if kind == "sqrt":
            self.take("sqrt")
            return self.sympy.Pow(self.braced(), self.sympy.S.Half, evaluate=False)
        if kind == "binom":
            self.take("binom")
            upper, lower = self.braced(), self.braced()
            return self.sympy.binomial(upper, lower)
        return self.atom()

    def braced(self) -> Any:
        self.take("{")
        inner = self.expr()
        self.take("}")
        return inner

    def atom(self) -> Any:
        kind = self.peek()
        if kind == "num":
            return self.converter.parse_number(self.take("num"))
        if kind == "letter":
            letter = self.take("letter")
            return self.sympy.I if letter == "I" else self.get_symbol(letter, None, True)
        if kind == "pi":
            return self.get_symbol(self.take("pi"), None, True)
        if kind == "infty":
            self.take("infty")
            return self.sympy.oo
        raise Refused(f"unexpected {kind or 'end'!r}")


def _wrapped(tokens: list[tuple[str, str]]) -> bool:
    """Whether the whole text is one parenthesised group (the grammar may read it as a 1-tuple)."""
    if not tokens or tokens[0][0] != "(" or tokens[-1][0] != ")":
        return False
    depth = 0
    for index, (kind, _) in enumerate(tokens):
        depth += kind == "("
        depth -= kind == ")"
        if depth == 0:
            return index == len(tokens) - 1
    return False


def read(normalized: str, converter: Any) -> Any | None:
    """The tree latex2sympy's converter builds from `normalized`, or None outside the subset.
    `converter`: symbolic.py's (its flattening helpers and number literals are the library's)."""
    try:
        tokens = _tokens(normalized)
        if not tokens or _wrapped(tokens):
            return None
        reader = _Reader(tokens, converter)
        tree = reader.expr()
        return tree if reader.pos == len(tokens) else None
    except Exception:  # Refused, RecursionError, or a constructor that raises: the library decides
        return None
