"""What an answer *is*: a scalar, a sequence (tuple, set, interval, list of solutions, matrix), a union of
intervals, a relation, a multiple-choice letter or a text answer.

The comparer picks its rule from the kind of the gold answer, so this layer decides kinds once, from
cleaned strings, without sympy. Brackets carry meaning and are kept: `(1,2]` is not `[1,2)`, and
`\\{1,2\\}` (a set) is not `(1,2)` (an ordered pair or open interval).

Inequalities in one variable become intervals: "x > 3", "-2 < x \\le 5", "|x| < 3" (the interval
(-3, 3)), "|x| \\ge 3" (a union of two rays), "x \\ne 2" (the line without 2); `\\mathbb{R}` and "all real
numbers" are (-oo, oo). "name = value" is the value with its name kept (`Atom.var`) when the name is a
variable, a function at a point ("f(2)", "f^{-1}(x)"), a segment or an angle ("AB", "\\angle ABC").
"""

from __future__ import annotations

import re
from functools import lru_cache

from assay.verifiers.math import matrices, sets
from assay.verifiers.math.choices import read_letters
from assay.verifiers.math.clock import Clock, read_clock
from assay.verifiers.math.kinds import Atom, Choice, Relation, Seq, Text, Union, Value
from assay.verifiers.math.normalise import canonical_text, clean, is_synonym_word
from assay.verifiers.math.numbers import parse_number

MAX_DEPTH = 8
_INFINITIES = {
    **dict.fromkeys(("\\infty", "+\\infty", "infty", "inf", "infinity", "∞", "+∞", "oo"), "\\infty"),
    **dict.fromkeys(("-\\infty", "-infty", "-inf", "-infinity", "-∞", "-oo"), "-\\infty"),
}
_ALL_REALS = frozenset({"allrealnumbers", "allreals", "allrealvalues", "allrealx", "realnumbers"})
# What may stand on the left of "= value": a variable, a Greek letter, a function at a point ("f(2)",
# "P(A)", "f(x, y)", "f^{-1}(x)"), a tuple of variables, a sum or difference of two variables, or a
# named segment or angle ("AB", "\\angle ABC").
_VAR_RE = re.compile(
    r"^(?:[a-zA-Z](?:_\{?[\w]+\}?)?'*|\\[a-zA-Z]+"
    r"|[a-zA-Z](?:_\{?\w+\}?)?(?:\^\{-1\})?'*\(\s*-?[\w.,/ ]{1,12}\)"
    r"|\((?:\s*[a-z](?:_\{?\w+\}?)?\s*,)+\s*[a-z](?:_\{?\w+\}?)?\s*\)|[a-z]\s*[+-]\s*[a-z]"
    r"|[A-Z]{2,3}|(?:m\s*)?\\angle\s*[A-Z]{1,3}|\\overline\s*\{[A-Z]{2}\})$"
)
# |x| (after `clean`, `\\lvert x \\rvert` and `\\left| x \\right|` are written `|x|` too).
_ABS_VAR_RE = re.compile(r"^\|\s*[a-zA-Z](?:_\{?\w+\}?)?\s*\|$")
_CLOCK_SHAPE_RE = re.compile(r"^\d{1,2}(?::|\s*h\s*)\d{2}(?::\d{2})?\s*(?:[ap]\.?\s?m\.?)?$", re.IGNORECASE)
_RELATION_RE = re.compile(r"\\leq|\\geq|\\ne|\\lt|\\gt|<=|>=|!=|<|>|=")
_OPENERS = {"(": ")", "[": "]", "\\{": "\\}", "\\langle": "\\rangle", "{": "}", "⟨": "⟩"}
_MATRIX_RE = re.compile(r"^\\begin\{([pbvBV]?matrix|array)\}(?:\{[^}]*\})?(.*)\\end\{\1\}$", re.DOTALL)
_BRACKETED_MATRIX_RE = re.compile(
    r"^[\[(]\s*(\\begin\{(?:[pbvBV]?matrix|array)\}.*\\end\{\w+\})\s*[\])]$", re.DOTALL
)
_WORD_RE = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{4,}")
_MATH_WORDS = frozenset(
    {"sqrt", "frac", "sin", "cos", "tan", "log", "ln", "exp", "cot", "sec", "csc", "infty"}
)


def split_top(text: str, separators: tuple[str, ...]) -> list[str]:
    """Split on separators that are outside every bracket pair ((), [], {}, \\{\\}, \\langle\\rangle).

    A text that holds none of the separators is one part (most answers: no scan at all); otherwise one
    compiled pattern jumps from one bracket, sizing command or separator to the next, instead of testing
    every position (this was the hottest loop of the math scorer)."""
    if not any(sep in text for sep in separators):
        return [text.strip()]
    parts: list[str] = []
    depth = 0
    start = 0
    index = 0
    find = _split_tokens(separators).search
    while (match := find(text, index)) is not None:
        token, at = match.group(), match.start()
        index = at + 1
        if token in ("\\left", "\\right"):
            index = at + 5  # `\\left(` is the bracket `(`; the sizing command itself is skipped
        elif token in _OPEN_TOKENS:
            depth += 1
        elif token in _CLOSE_TOKENS:
            depth = max(depth - 1, 0)
        elif depth == 0:
            parts.append(text[start:at])
            start = index = at + len(token)
    parts.append(text[start:])
    return [part.strip() for part in parts]


_OPEN_TOKENS = frozenset(("(", "[", "{", "\\langle"))
_CLOSE_TOKENS = frozenset((")", "]", "}", "\\rangle"))


@lru_cache(maxsize=64)
def _split_tokens(separators: tuple[str, ...]) -> re.Pattern[str]:
    """Sizing commands first, then brackets, then the separators in their order (the first that matches
    at a position wins, as `split_top` reads them)."""
    alternatives = ["\\\\left", "\\\\right", "\\\\langle", "\\\\rangle", r"[(\[{)\]}]"]
    return re.compile("|".join(alternatives + [re.escape(sep) for sep in separators]))


def _enclosed(text: str) -> tuple[str, str, str] | None:
    """(opener, inner, closer) when the whole of `text` is one bracketed group."""
    for opener in ("\\{", "\\langle", "⟨", "(", "[", "{"):
        if not text.startswith(opener):
            continue
        for closer in (")", "]", "\\}", "\\rangle", "⟩", "}"):
            if text.endswith(closer) and len(text) > len(opener) + len(closer) - 1:
                inner = text[len(opener) : len(text) - len(closer)]
                if _balanced(inner):
                    return opener, inner.strip(), closer
    return None


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def _is_text(text: str) -> bool:
    words = [w for w in _WORD_RE.findall(text) if w.lower() not in _MATH_WORDS]
    return bool(words) or is_synonym_word(text)


def _bracketed(opener: str, inner: str, closer: str, depth: int) -> Value | None:
    items = split_top(inner, (",",))
    if len(items) == 1 and ";" in inner:
        items = split_top(inner, (";",))  # "(0;-2;6)": semicolons separate the coordinates
    if len(items) == 1 and opener in ("(", "{") and closer in (")", "}"):
        return parse_value(inner, depth + 1) if inner else None
    values = tuple(parse_value(item, depth + 1) for item in items if item)
    if opener == "\\{":
        return Seq("set", values)
    if opener == "{" and closer == "}":
        return Seq("list", values)  # plain braces only group in LaTeX: "{1,3}" is the list 1, 3
    if opener in ("\\langle", "⟨"):
        return Seq("vector", values)
    if opener == "(" and closer == ")":
        return Seq("paren", values, "(", ")")
    if opener == "[" and closer == "]":
        return Seq("bracket", values, "[", "]")
    if len(values) == 2 and opener in "([" and closer in ")]":
        return Seq("interval", values, opener, closer)
    return None


def _matrix(body: str, depth: int) -> Value:
    rows = [row for row in (r.strip() for r in re.split(r"\\\\", body)) if row]
    cells = [tuple(parse_value(cell, depth + 1) for cell in split_top(row, ("&",))) for row in rows]
    if all(len(row) == 1 for row in cells) and len(cells) > 1:
        return Seq("vector", tuple(row[0] for row in cells))  # a column vector is a vector
    return Seq(
        "matrix", tuple(Seq("vector", row) for row in cells)
    )  # a row is ordered (columns swapped differ)


def _relation(text: str, depth: int) -> Value | None:
    ops, parts = _split_relation(text)
    if not ops:
        return None
    if all(op == "=" for op in ops):
        lhs, rhs = parts[0], parts[-1]
        if not lhs or not rhs:
            return None
        if _VAR_RE.match(lhs) or len(ops) > 1:
            value = parse_value(rhs, depth + 1)
            if isinstance(value, Atom):
                return Atom(value.text, value.number, value.degrees, lhs.replace(" ", ""))
            return value
        if not _letters(rhs) and (not _letters(lhs) or _OPERATOR_LHS_RE.match(lhs)):
            # "\\binom{4}{2} = 6", "\\lim_{x \\to 0} \\frac{\\sin x}{x} = 1", "\\det(A) = 3": a computation,
            # then its value
            return parse_value(rhs, depth + 1)
        if _NAME_LHS_RE.match(lhs) and not _letters(rhs):  # "A:B = 1", "|AB| = 1", "\\frac{NO}{BO} = ..."
            value = parse_value(rhs, depth + 1)
            if isinstance(value, Atom):
                return Atom(value.text, value.number, value.degrees, lhs.replace(" ", ""))
            return value
        return Relation("=", lhs, rhs)
    return _inequality(ops, parts, text, depth)


def _split_relation(text: str) -> tuple[list[str], list[str]]:
    """Operators and parts of a relation, split only outside brackets (`\\sum_{k=0}^{n}` holds no "=")."""
    ops: list[str] = []
    parts: list[str] = []
    start = 0
    for match in _RELATION_RE.finditer(text):
        if _balanced(text[: match.start()]):
            ops.append(match.group(0))
            parts.append(text[start : match.start()].strip())
            start = match.end()
    parts.append(text[start:].strip())
    return ops, parts


def _letters(text: str) -> bool:
    """Whether `text` names a variable (letters other than LaTeX command names and constants)."""
    return bool(re.search(r"[a-zA-Z]", re.sub(r"\\[a-zA-Z]+|(?<![a-zA-Z])(?:e|i)(?![a-zA-Z])", "", text)))


# An operator whose result is a value, written on the left of "= value" (issue 30: these were relations).
_OPERATOR_LHS_RE = re.compile(
    r"^\\(?:lim|det|sum|prod|int|max|min|sup|inf|gcd|operatorname\{?(?:det|lcm|gcd))(?![a-zA-Z])"
)


# The name of a quantity on the left of "= value": a ratio of named things ("A:B", "V_1:V_2"), a length
# ("|AB|") or a quotient of segments ("\\frac{NO}{BO}"); never an expression in variables ("2x - y").
_NAME = r"[A-Z]{1,4}(?:_\{?\w+\}?)?"
_NAME_LHS_RE = re.compile(
    rf"^(?:{_NAME}(?:\s*:\s*{_NAME})+|\|\s*{_NAME}\s*\||\\frac\s*\{{\s*{_NAME}\s*\}}\s*\{{\s*{_NAME}\s*\}})$"
)


def _inequality(ops: list[str], parts: list[str], text: str, depth: int) -> Value:
    """ "x > 3" and "-2 < x \\leq 5" become intervals; anything else stays a relation."""
    norm = {
        "\\lt": "<",
        "\\gt": ">",
        "\\leq": "<=",
        "\\geq": ">=",
        "<=": "<=",
        ">=": ">=",
        "<": "<",
        ">": ">",
    }
    if ops in (["\\ne"], ["!="]) and _VAR_RE.match(parts[0]):  # "x \\ne 2": every real number but 2
        point = parse_value(parts[1], depth + 1)
        return Union(
            (
                Seq("interval", (Atom("-\\infty"), point), "(", ")"),
                Seq("interval", (point, Atom("\\infty")), "(", ")"),
            )
        )
    if any(op not in norm for op in ops):
        return _chain(ops, parts)
    signs = [norm[op] for op in ops]
    inf = Atom("\\infty")
    neg_inf = Atom("-\\infty")
    if len(ops) == 1 and _ABS_VAR_RE.match(parts[0]):
        return _absolute(signs[0], parts[1], depth)
    if len(ops) == 1 and _ABS_VAR_RE.match(parts[1]):
        flipped = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}[signs[0]]
        return _absolute(flipped, parts[0], depth)
    if len(ops) == 1 and _VAR_RE.match(parts[0]):
        bound = parse_value(parts[1], depth + 1)
        var = parts[0].replace(" ", "")
        if signs[0].startswith(">"):
            return Seq("interval", (bound, inf), "[" if signs[0] == ">=" else "(", ")", var)
        return Seq("interval", (neg_inf, bound), "(", "]" if signs[0] == "<=" else ")", var)
    if len(ops) == 1 and _VAR_RE.match(parts[1]):
        flipped = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}[signs[0]]
        return _inequality([flipped], [parts[1], parts[0]], text, depth)
    if len(ops) == 2 and _ABS_VAR_RE.match(parts[1]) and signs[0][0] == signs[1][0] == "<":
        return _absolute_band(signs, parts[0], parts[2], depth)  # "1 <= |z| <= 3/2"
    if len(ops) == 2 and _VAR_RE.match(parts[1]) and signs[0][0] == signs[1][0] == "<":
        low, high = parse_value(parts[0], depth + 1), parse_value(parts[2], depth + 1)
        left, right = "[" if signs[0] == "<=" else "(", "]" if signs[1] == "<=" else ")"
        return Seq("interval", (low, high), left, right, parts[1].replace(" ", ""))
    if len(ops) == 2 and _VAR_RE.match(parts[1]) and signs[0][0] == signs[1][0] == ">":
        flip = {">": "<", ">=": "<="}
        return _inequality([flip[signs[1]], flip[signs[0]]], [parts[2], parts[1], parts[0]], text, depth)
    return _chain(ops, parts)


def _chain(ops: list[str], parts: list[str]) -> Relation:
    """A relation that keeps every part: the middle of "1 < x < 5 < 7" is part of the answer."""
    return Relation(ops[0], parts[0], parts[-1], tuple(parts) if len(ops) > 1 else (), tuple(ops))


def _absolute(sign: str, bound: str, depth: int) -> Value:
    """`|x| < b` is the interval (-b, b); `|x| > b` is the union (-oo, -b) U (b, oo)."""
    high = parse_value(bound, depth + 1)
    low = parse_value(f"-{bound}" if re.fullmatch(r"[^+\-]*", bound) else f"-({bound})", depth + 1)
    if sign.startswith("<"):
        return Seq("interval", (low, high), *(("[", "]") if sign == "<=" else ("(", ")")))
    closed = sign == ">="
    return Union(
        (
            Seq("interval", (Atom("-\\infty"), low), "(", "]" if closed else ")"),
            Seq("interval", (high, Atom("\\infty")), "[" if closed else "(", ")"),
        )
    )


def _absolute_band(signs: list[str], low: str, high: str, depth: int) -> Value:
    """`a <= |x| <= b` (a >= 0): the union [-b, -a] U [a, b], with each end open where the sign is."""
    lo, hi = parse_value(low, depth + 1), parse_value(high, depth + 1)
    neg_lo, neg_hi = parse_value(f"-({low})", depth + 1), parse_value(f"-({high})", depth + 1)
    inner = "[" if signs[0] == "<=" else "("
    outer = "]" if signs[1] == "<=" else ")"
    flip = {"[": "]", "(": ")", "]": "[", ")": "("}
    return Union(
        (
            Seq("interval", (neg_hi, neg_lo), flip[outer], flip[inner]),
            Seq("interval", (lo, hi), inner, outer),
        )
    )


def _expand_pm(text: str) -> list[str] | None:
    if "\\pm" not in text and "±" not in text:
        return None
    head, _, tail = text.replace("±", "\\pm").partition("\\pm")
    head = head.strip()
    if head.endswith("="):
        return [f"{head} {tail}", f"{head} -{tail}"]
    return [f"{head} + {tail}", f"{head} - {tail}"] if head else [tail, f"-{tail}"]


def _named_coordinates(values: tuple[Value, ...]) -> bool:
    """ "x = 1, y = 2" names coordinates of a point (ordered); "x_1 = 2, x_2 = 5" lists roots (unordered)."""
    names = [v.var[0] if isinstance(v, Atom) and v.var else "" for v in values]
    return all(names) and len(set(names)) == len(names)


def _strip_redundant_parens(text: str) -> str:
    """`((((1))))` -> `1` without recursion (300 nested parentheses must not exhaust the stack)."""
    for _ in range(len(text) // 2):
        if not (text.startswith("(") and text.endswith(")")):
            break
        inner = text[1:-1].strip()
        if not _balanced(inner) or len(split_top(inner, (",", ";"))) > 1:
            break
        text = inner
    return text


def _set_operation(text: str, depth: int) -> Value | None:
    """ "A \\setminus B" evaluated (sets.py), when both sides are sets or intervals it knows."""
    if "\\setminus" not in text and "\\backslash" not in text:
        return None
    parts = split_top(text, ("\\setminus", "\\backslash"))
    if len(parts) != 2 or not all(parts):
        return None
    return sets.difference(parse_value(parts[0], depth + 1), parse_value(parts[1], depth + 1))


# Answers up to this length are parsed once per worker: a group's responses often end on the same answer,
# and validation scores the gold's own forms (issue 29), so the gold's string is parsed as an answer too.
_CACHED_CHARS = 512


def parse_value(raw: str, depth: int = 0) -> Value:
    """The structured form of a (possibly uncleaned) answer string. Never raises.

    Values are frozen, so a short answer's parse is shared (`_CACHED_CHARS`)."""
    return _parse_cached(raw, depth) if len(raw) <= _CACHED_CHARS else _parse(raw, depth)


@lru_cache(maxsize=8192)
def _parse_cached(raw: str, depth: int) -> Value:
    return _parse(raw, depth)


def _parse(raw: str, depth: int) -> Value:
    cleaned = clean(raw)
    text = cleaned.text
    if depth > MAX_DEPTH or not text:
        return Atom(text)
    if (letters := read_letters(text)) is not None:  # "(B) 24", "C", "B and C"; never "A total of 48"
        if isinstance(letters, list):
            return Seq("list", tuple(Choice(letter) for letter in letters))  # several options: a hedge
        return Choice(*letters)
    text = re.sub(r"^(?:either|both)\s+|^[a-zA-Z]\s*\\in\s+", "", text, flags=re.IGNORECASE)
    if (infinity := _INFINITIES.get(text.replace(" ", ""))) is not None:
        return Atom(infinity)
    if text in ("R", "ℝ") or canonical_text(text) in _ALL_REALS:  # `\\mathbb{R}` after `clean`
        return Seq("interval", (Atom("-\\infty"), Atom("\\infty")), "(", ")")
    if is_synonym_word(text):
        return Text(canonical_text(text), text)
    if (pm := _expand_pm(text)) is not None:
        return Seq("list", tuple(parse_value(part, depth + 1) for part in pm))
    text = re.sub(r",\s*(?:and|or)\s+", ", ", text)  # "1, 2, and 3": the last item of a list
    text = re.sub(r"([)\]])\s*(or|and)\s*([(\[])", r"\1 \2 \3", text)  # "(11,7)or(7,11)"
    if (difference := _set_operation(text, depth)) is not None:
        return difference
    for separators in ((" or ", " and ", ";", "\\text{or}", "\\text{and}"), ("\\cup", " U ", "∪")):
        parts = split_top(f" {text} ", separators)
        if len(parts) > 1 and all(parts):
            values = tuple(parse_value(p, depth + 1) for p in parts)
            if separators[0] == "\\cup" and (joined := sets.union_of_sets(values)) is not None:
                return joined  # "\\{1,2\\} \\cup \\{3,4\\}" is the set \\{1,2,3,4\\}
            if all(isinstance(v, Seq) and v.kind in ("interval", "paren", "bracket") for v in values):
                return Union(tuple(v for v in values if isinstance(v, Seq)))
            # "21, 16 or 11": one list of solutions, not a list holding a list
            flat = (v.items if isinstance(v, Seq) and v.kind == "list" else (v,) for v in values)
            return Seq("list", tuple(item for group in flat for item in group))
    if text.count("\\begin{") > 1 and (evaluated := matrices.evaluate(text)) is not None:
        body = _MATRIX_RE.match(evaluated)  # "M_1 + M_2", "I M": the matrix it evaluates to
        if body is not None and isinstance(value := _matrix(body.group(2), depth), Seq):
            return Seq(value.kind, value.items, origin="matrix arithmetic evaluated")
    if (bracketed_matrix := _BRACKETED_MATRIX_RE.match(text)) is not None:
        text = bracketed_matrix.group(1)  # \\left[\\begin{array}...\\end{array}\\right]
    if matrix := _MATRIX_RE.match(text):
        return _matrix(matrix.group(2), depth)
    text = _strip_redundant_parens(text)
    if (enclosed := _enclosed(text)) is not None and (
        bracketed := _bracketed(*enclosed, depth=depth)
    ) is not None:
        return bracketed
    if _CLOCK_SHAPE_RE.match(text):  # a time, never the ratio 12/00 (1:00 is not 12:00, 3:15 not 1:5)
        return read_clock(text) or Text(f"not a time {text}", text)
    number = parse_number(text, cleaned.degrees)
    if number is not None:
        return Atom(text, number, cleaned.degrees)
    items = split_top(text, (",",))
    if len(items) > 1 and all(items):
        values = tuple(parse_value(item, depth + 1) for item in items)
        return Seq("paren" if _named_coordinates(values) else "list", values, "(", ")")
    relation = _relation(text, depth) if _RELATION_RE.search(text) else None
    if relation is not None:
        return relation
    if _is_text(text):
        return Text(canonical_text(text), text)
    return Atom(text, None, cleaned.degrees)


def describe(value: Value) -> str:
    """A short human-readable form for `details`."""
    if isinstance(value, Atom):
        core = value.number.describe() if value.number is not None else value.text
        return f"{value.var}={core}" if value.var else core
    if isinstance(value, Seq):
        inner = ", ".join(describe(item) for item in value.items)
        return f"{value.kind}{value.left or '('}{inner}{value.right or ')'}"
    if isinstance(value, Union):
        return " U ".join(describe(part) for part in value.parts)
    if isinstance(value, Relation):
        return f"{value.lhs} {value.op} {value.rhs}"
    if isinstance(value, Choice):
        return f"choice {value.letter}" + (f" ({value.rest})" if value.rest else "")
    if isinstance(value, Clock):
        return value.describe()
    return f"text {value.text!r}"


def kind_of(value: Value) -> str:
    """The gold's type, which selects the comparison rule (reported in `details`)."""
    if isinstance(value, Atom):
        if value.number is None:
            return "expression"
        return "percent" if value.number.percent else value.number.kind
    if isinstance(value, Seq):
        return value.kind
    return type(value).__name__.lower()
