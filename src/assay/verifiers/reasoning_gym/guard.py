"""What of an answer may reach reasoning-gym's scorers: several evaluate the text they are given as
Python (n_queens and spiral_matrix call `eval(answer)`; countdown, puzzle24, the integration and
polynomial datasets call sympy's `parse_expr`, which evaluates too; number_sorting evaluates the gold),
so a policy's answer would run on the host. Text that could do more than arithmetic on literals (a name
called that is no maths function, an attribute, a dunder, a keyword of code) or could cost more than an
answer should (a power tower, a huge repeat) is refused before any of them sees it."""

from __future__ import annotations

import re

MAX_CHARS = 20_000
# The functions a mathematical answer calls ("sin(x)", "sqrt(2)"); any other name before "(" is a call.
MATH_CALLS = frozenset(
    {"sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp"}
    | {"log", "ln", "sqrt", "abs", "Abs"}
)
_CALL_RE = re.compile(r"([A-Za-z_][A-Za-z_0-9]*)\s*\(")
_CALLED_RESULT_RE = re.compile(r"[\])}]\s*\(")  # "[f][0](x)": a call of what an expression gives
_CODE_RE = re.compile(
    r"__|\b(?:import|lambda|exec|eval|compile|open|getattr|setattr|globals|locals|vars|input|breakpoint)\b"
)
# "x.real", "().y": with calls and dunders refused an attribute can only read a value, but nothing in an
# answer needs one; "e.g." in prose is the price. "Peg 3. Move" (a space after the dot) is prose.
_ATTRIBUTE_RE = re.compile(r"[A-Za-z_)\]}'\"]\.[A-Za-z_]")
# An exponent is a short number, a letter or a short fraction ("x**10", "x**n", "(2x)**(3/2)"), and no
# power is raised again ("9**9**9", "(9**9)**9"): a tower is too large to evaluate.
_EXPONENT_RE = re.compile(
    r"(?:\*\*|\^)\s*(\(?\s*-?\s*(?:\d{1,3}(?!\d)(?:\s*/\s*\d{1,3}(?!\d))?|[A-Za-z](?![A-Za-z0-9]))\s*\)?)?"
)
_TOWER_RE = re.compile(r"(?:\*\*|\^)[^+\-*/^,\s]*\)?\s*(?:\*\*|\^)|\*\*[^+\-,]*\)\s*\*\*")
# A string or a list repeated ("'a'*10**10"): memory, not maths (numbers multiply cheaply).
_REPEAT_RE = re.compile(r"['\"\]]\s*\*|\*\s*['\"\[]")


def refusal(text: str) -> str | None:
    """Why `text` must not reach a scorer that may evaluate it; None when it is plain enough."""
    if len(text) > MAX_CHARS:
        return f"longer than {MAX_CHARS} characters"
    if _CODE_RE.search(text):
        return "it holds code (a dunder or a keyword of Python)"
    calls = sorted({name for name in _CALL_RE.findall(text) if name not in MATH_CALLS})
    if calls or _CALLED_RESULT_RE.search(text):
        return f"it calls {calls[0] if calls else 'an expression'!r}, which is no maths function"
    if _ATTRIBUTE_RE.search(text):
        return "it reads an attribute"
    exponents = [m.group(1) for m in _EXPONENT_RE.finditer(text)]
    if any(e is None for e in exponents) or _TOWER_RE.search(text) or _REPEAT_RE.search(text):
        return "it asks for a power or a repeat too large to evaluate"
    return None
