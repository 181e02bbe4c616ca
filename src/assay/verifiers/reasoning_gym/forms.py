"""Which reasoning-gym datasets answer in numbers or expressions, read off their generated golds: a
dataset is a maths family when every gold of a seeded sample is a number or an expression in a
variable, so Assay's math verifier judges it. An expression without a variable ("94*4 - 61 - 6",
countdown's) is a construction, not a value: "315" has its value and does not answer the question, so
its dataset's own scorer judges it. Grids ("1 0\\n0 1"), words and lists are not maths."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from assay.verifiers.math.compare import GoldUnusable
from assay.verifiers.math.scorer import parse_gold
from assay.verifiers.math.values import kind_of
from assay.verifiers.reasoning_gym import library

Form = Literal["number", "expression", "construction", "other"]
NUMBER_KINDS = frozenset({"integer", "decimal", "fraction", "scientific"})
SAMPLE = 8  # golds read per dataset (seed 0), stopping at the first that is not maths
FUNCTIONS = "sin|cos|tan|cot|sec|csc|asin|acos|atan|sinh|cosh|tanh|exp|log|ln|sqrt|Abs|abs"
# One token of a plain expression: a number, a one-letter variable, a function, an operator, a bracket.
_TOKEN_RE = re.compile(
    rf"\s*(?:(\d+(?:\.\d+)?)|({FUNCTIONS})\s*(?=\()|([A-Za-z])(?![A-Za-z0-9])|(\*\*|[-+*/^()]))"
)


def _tokens(text: str) -> list[tuple[str, str]] | None:
    """(kind, text) of each token, or None when `text` is not written with these tokens alone."""
    found, at = [], 0
    while at < len(text.rstrip()):
        match = _TOKEN_RE.match(text, at)
        if match is None:
            return None
        kind = ("number", "function", "letter", "operator")[match.lastindex - 1 if match.lastindex else 0]
        found.append((kind, match.group(match.lastindex or 0)))
        at = match.end()
    return found


def _well_formed(tokens: list[tuple[str, str]]) -> bool:
    """Operands and operators alternate (no "1 0 1", whose spaces would be products), brackets balance."""
    depth, operand = 0, False
    for kind, text in tokens:
        if kind in ("number", "letter", "function"):
            if operand:
                return False
            operand = kind != "function"  # a function's operand is its bracket
        elif text == "(":
            if operand:
                return False
            depth += 1
        elif text == ")":
            depth -= 1
            if depth < 0 or not operand:
                return False
        elif kind == "operator":
            if not operand and text not in "+-":
                return False
            operand = False
    return depth == 0 and operand


def form_of(gold: str) -> Form:
    try:
        kind = kind_of(parse_gold(gold))
    except GoldUnusable:
        return "other"
    if kind in NUMBER_KINDS:
        return "number"
    tokens = _tokens(gold)
    if kind != "expression" or not tokens or not _well_formed(tokens):
        return "other"
    return "expression" if any(k == "letter" for k, _ in tokens) else "construction"


@lru_cache(maxsize=256)
def is_math(name: str) -> bool:
    """Whether dataset `name` answers in numbers or expressions (its seeded sample's golds all do)."""
    data = library.dataset(name, SAMPLE, 0)
    for index in range(SAMPLE):
        answer = data[index].get("answer")
        if answer is None or form_of(str(answer)) not in ("number", "expression"):
            return False
    return True
