"""The math task's notion of answer equivalence, for answer clusters and majority votes (issue 42).

Two answers are one answer when the comparer (compare.py) accepts each against the other as the gold:
mutual, because the comparer is asymmetric by design (a decimal gold accepts a more precise answer that
rounds to it, so `1.73` accepts `\\sqrt{3}` but `\\sqrt{3}` does not accept `1.73`). Exact numbers get a
canonical key (their exact value: `1/2`, `0.5`, `\\frac12` and `2/4` share one), and expressions a
signature (their value at a fixed point), so the comparer runs only between answers the keys left apart
and the signatures did not: sets, percents, decimals against fractions, expressions that agree there.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, ClassVar

from assay.registry.equivalence import Equivalence
from assay.types import Item
from assay.verifiers.math import symbolic
from assay.verifiers.math.compare import GoldUnusable, Policy, compare
from assay.verifiers.math.extract import Extraction, extract
from assay.verifiers.math.kinds import Atom
from assay.verifiers.math.values import parse_value

MAX_RESPONSE_CHARS = 200_000  # settings.math.max_response_chars' default: responses are cut to their tail
MAX_ANSWER_CHARS = 2_000  # as the scorer: a longer "answer" is no answer
_POLICY = Policy()  # no prompt, no options: the comparer's defaults
# A fixed point for the signature, one coordinate per free symbol: positive, irrational-looking fractions
# (a point where nothing common is undefined: not 0, 1, or a root of a small polynomial by design).
_POINT = (0.5731, 1.3117, 0.7919, 2.2361, 1.6183)


def _name(symbol: Any) -> str:
    """`str(symbol)`: a plain Symbol's is its name, read without sympy's printer (a fifth of a signature's
    time at G = 64)."""
    from sympy import Symbol

    return str(symbol.name) if type(symbol) is Symbol else str(symbol)


class MathEquivalence(Equivalence):
    available: ClassVar[bool] = True

    def answer(self, item: Item) -> str | None:
        """The final answer as the scorer extracts it; a hedge (several different boxes) is no answer."""
        if item.response is None:
            return None
        found = extract(item.response, MAX_RESPONSE_CHARS)
        if not isinstance(found, Extraction):
            return None
        answers = list(dict.fromkeys(found.answers))
        return answers[0] if len(answers) == 1 and len(answers[0]) <= MAX_ANSWER_CHARS else None

    def key(self, answer: str) -> Hashable | None:
        """An exact number's value (with its percent and degree marks), else the parsed value itself:
        equal parses are one answer whatever their spacing or wrappers."""
        if len(answer) > MAX_ANSWER_CHARS:
            return None
        value = parse_value(answer)
        if isinstance(value, Atom) and value.number is not None and value.var is None:
            number = value.number
            return ("number", number.value, number.percent, number.degrees or value.degrees)
        try:
            hash(value)
        except TypeError:
            return None
        return ("value", value)

    def signature(self, answer: str) -> Hashable | None:
        """An expression's free symbols and its value at one fixed point, to 12 digits (evaluated to 30):
        expressions the comparer accepts as equal agree there, so different ones skip the comparer (64
        different polynomials: 2,016 sympy comparisons otherwise). None for anything but an expression."""
        if len(answer) > MAX_ANSWER_CHARS:
            return None
        value = parse_value(answer)
        if not isinstance(value, Atom) or value.number is not None or value.var is not None or value.degrees:
            return None
        try:
            expr = symbolic.to_sympy(value.text)
        except (symbolic.TooCostly, ValueError):
            return None
        names = sorted(((_name(s), s) for s in expr.free_symbols), key=lambda pair: pair[0])
        point = {s: _POINT[i % len(_POINT)] + i // len(_POINT) for i, (_, s) in enumerate(names)}
        at = symbolic.evaluate(expr, point)
        if at is None:
            return None
        imag = at.imag if abs(at.imag) > 1e-20 * abs(at) else 0.0
        return (tuple(n for n, _ in names), f"{at.real:.12g}", f"{imag:.12g}")

    def equivalent(self, a: str, b: str) -> bool:
        if max(len(a), len(b)) > MAX_ANSWER_CHARS:
            return False
        first, second = parse_value(a), parse_value(b)
        try:
            return compare(first, second, _POLICY).correct and compare(second, first, _POLICY).correct
        except GoldUnusable:
            return False
