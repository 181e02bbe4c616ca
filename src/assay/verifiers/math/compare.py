"""Equivalence of an answer with the gold, with the rule chosen by the gold's kind.

Rules (each Decision names the one that decided, for `details`):
- integer gold: exact equality only ("1,000,000", "10^6", "1\\,000" are exact spellings of integers).
- fraction gold: exact equality; a decimal answer within `rel_tol` (relative) also counts.
- decimal gold: within `rel_tol`, or an answer more precise than the gold that rounds to it
  ("1.732" or `\\sqrt{3}` for gold "1.73"; "1.7" does not).
- percent: a percent answer is its decimal ("50%" equals gold 0.5 or 1/2, "4%" never equals gold 4);
  it equals the bare number of percent ("4%" for gold 4) only when the prompt asks for a percent
  (prompt.py). A percent gold "50\\%" is answered by "50%", by 0.5 or 1/2, or by a bare 50. Nothing
  else is ever scaled by 100 (Qwen2.5-Math's grader accepts x100 and /100 of any gold).
- choice with a prompt that lists options: a letter answers the option's text and the text its letter.
- expressions: sympy, see `symbolic.equal` (symbols by name first, constants exactly, then agreement at
  positive, negative and complex points, then a bounded simplify); the string fast path keeps grouping.
- sequences: sets and lists of solutions are unordered (a repeated element is one); tuples, vectors,
  intervals and matrices are ordered; interval ends must match, and so must an interval's variable; a
  set is never an ordered pair; values named by distinct variables ("b = 3, a = 2") compare by name.
- chains ("a < x < b < c" that is not an interval): every operator and every part, in order.
- equations: "x = 3" answers "3" and "y = 2x+1" answers "2x+1" (and back); when the gold and the answer
  name different variables ("x = 2y+1" for "y = 2x+1") or the answer is an equation in another form
  ("2x - y + 1 = 0"), both are compared as equations (same solution set up to a constant factor).
- a single-value gold answered by several different values (a hedge, "2 or 3") is incorrect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from assay.verifiers.math import symbolic
from assay.verifiers.math.clock import Clock, same_time
from assay.verifiers.math.normalise import canonical_text, strip_unit_words, strip_units
from assay.verifiers.math.numbers import Number, parse_number
from assay.verifiers.math.values import Atom, Choice, Relation, Seq, Text, Union, Value, parse_value


@dataclass(frozen=True)
class Policy:
    """The comparison knobs an item may set (see MathOptions)."""

    rel_tol: float = 1e-6
    percent: bool = True
    units: bool = True
    ordered_lists: bool = False  # a list gold is answered only in its order (MathOptions.ordered_lists)
    percent_question: bool = False  # the prompt asks for a percent (prompt.asks_for_percent)
    options: tuple[tuple[str, str], ...] = ()  # the prompt's options, (letter, text) (choices.py)


@dataclass(frozen=True)
class Decision:
    correct: bool
    rule: str


class GoldUnusable(Exception):
    """The reference cannot be read as an expression: the item is invalid, not the answer wrong."""


_ORDERED_PEERS = {
    "paren": {"paren", "vector", "list", "interval"},
    "vector": {"vector", "paren", "list", "bracket"},
    "bracket": {"bracket", "list", "interval"},
    "interval": {"interval", "paren", "bracket"},
    "matrix": {"matrix"},
}
_UNORDERED_PEERS = {"set": {"set", "list"}, "list": {"set", "list"}}


# Left sides that make "lhs = value" an equation in the variables ("y", "x_1", "x+y"), unlike "f(2)".
_PLAIN_VAR_RE = re.compile(r"[a-zA-Z](?:_\{?\w+\}?)?(?:[+-][a-zA-Z](?:_\{?\w+\}?)?)?$")


def _squash(text: str) -> str:
    """Spacing that cannot change meaning goes; grouping stays (`x^{2y}` is not `x^2 y`, `2^{10}` is not
    `2^1 0`). A one-token group is the token (`x^{2}` is `x^2`)."""
    text = re.sub(r"([\^_])\{\s*(\w)\s*\}", r"\1\2", text.strip())
    text = re.sub(r"\s+", " ", text)
    return re.sub(r" (?=[^\w\\])|(?<=[^\w]) ", "", text)


def compare(gold: Value, answer: Value, policy: Policy) -> Decision:
    """Whether `answer` is equivalent to `gold`, by the rule the gold's kind selects; a set built by an
    operation (sets.py) names that operation in the rule."""
    decision = _compare(gold, answer, policy)
    origins = [origin for v in (gold, answer) if (origin := getattr(v, "origin", ""))]
    return Decision(decision.correct, f"{', '.join(origins)}: {decision.rule}") if origins else decision


def _compare(gold: Value, answer: Value, policy: Policy) -> Decision:
    if isinstance(gold, Choice):
        return _choice(gold, answer, policy)
    if isinstance(gold, Clock) or isinstance(answer, Clock):
        if not (isinstance(gold, Clock) and isinstance(answer, Clock)):
            return Decision(False, "clock: a time against a value that is not a time")
        return Decision(*same_time(gold, answer))
    if isinstance(gold, Text):
        return _text(gold, answer)
    if isinstance(answer, Choice):
        option = dict(policy.options).get(answer.letter)
        if option is not None:  # a letter for a gold written as the option's text
            decision = compare(gold, parse_value(option), policy)
            return Decision(decision.correct, f"choice-from-prompt: option {answer.letter} ({decision.rule})")
        if not answer.rest:
            answer = Atom(answer.letter)
        else:
            return compare(gold, parse_value(answer.rest), policy)
    if isinstance(gold, Atom):
        return _scalar_gold(gold, answer, policy)
    if isinstance(gold, Seq):
        return _sequence(gold, answer, policy)
    if isinstance(gold, Union):
        return _union(gold, answer, policy)
    return _relation(gold, answer)


def _choice(gold: Choice, answer: Value, policy: Policy) -> Decision:
    if isinstance(answer, Atom) and (m := re.fullmatch(r"\(?([a-j])\)?", answer.text)):
        answer = Choice(m.group(1).upper())
    if not isinstance(answer, Choice | Seq) and policy.options:
        matching = [
            letter for letter, text in policy.options if compare(parse_value(text), answer, policy).correct
        ]
        if len(matching) == 1:  # the option's text for a gold letter: its letter in the prompt's list
            ok = matching[0] == gold.letter
            return Decision(
                ok, f"choice-from-prompt: option {matching[0]} {'=' if ok else '!='} {gold.letter}"
            )
    if isinstance(answer, Choice):
        ok = answer.letter == gold.letter
        return Decision(ok, f"choice: letter {answer.letter} {'=' if ok else '!='} {gold.letter}")
    if isinstance(answer, Seq) and any(isinstance(item, Choice) for item in answer.items):
        return Decision(False, "choice: several options given (a hedge)")
    if gold.rest:
        decision = compare(parse_value(gold.rest), answer, policy)
        return Decision(decision.correct, f"choice: by the option's value ({decision.rule})")
    return Decision(False, "choice: no option letter in the answer")


def _text(gold: Text, answer: Value) -> Decision:
    if isinstance(answer, Text):
        said = answer.text
    elif isinstance(answer, Seq) and answer.kind == "set" and not answer.items:
        said = "nosolution"
    elif isinstance(answer, Atom):
        said = canonical_text(answer.text)
    else:
        return Decision(False, "text: the answer is not text")
    ok = said == gold.text
    return Decision(ok, f"text: {said!r} {'=' if ok else '!='} {gold.text!r}")


def _scalar_gold(gold: Atom, answer: Value, policy: Policy) -> Decision:
    if isinstance(answer, Seq) and answer.kind == "list" and answer.items:
        verdicts = [compare(gold, item, policy) for item in answer.items]
        if all(v.correct for v in verdicts):
            return Decision(True, f"repeated answer: {verdicts[0].rule}")
        return Decision(False, "several different answers for a single-valued gold (a hedge)")
    if isinstance(answer, Text):
        if canonical_text(gold.text) == answer.text:
            return Decision(True, "text: same words")
        stripped = strip_units(answer.raw) if policy.units else answer.raw
        if stripped == answer.raw and policy.units:
            stripped = strip_unit_words(answer.raw)  # "16\\pi square units"
        if stripped == answer.raw:
            return Decision(False, "text: a text answer for a mathematical gold")
        answer = parse_value(stripped)
        if not isinstance(answer, Atom):
            return Decision(False, "text: a text answer for a mathematical gold")
        decision = scalar_equal(gold, answer, policy)
        return Decision(decision.correct, "units stripped; " + decision.rule)
    if isinstance(answer, Relation) and gold.var and _PLAIN_VAR_RE.match(gold.var):
        return _relation(Relation("=", gold.var, gold.text), answer)  # "2x - y + 1 = 0" for "y = 2x+1"
    if not isinstance(answer, Atom):
        return Decision(False, f"a {type(answer).__name__.lower()} where a single value was expected")
    if _different_vars(gold, answer):  # "x = 2y + 1" does not answer "y = 2x + 1"
        return _relation(Relation("=", gold.var or "", gold.text), answer)
    return scalar_equal(gold, answer, policy)


def _different_vars(gold: Atom, answer: Atom) -> bool:
    both = gold.var and answer.var and gold.var != answer.var
    return bool(both and _PLAIN_VAR_RE.match(gold.var or "") and _PLAIN_VAR_RE.match(answer.var or ""))


def scalar_equal(gold: Atom, answer: Atom, policy: Policy) -> Decision:
    """Two scalars: string fast path, then exact numbers, then sympy."""
    if _squash(gold.text) == _squash(answer.text) and gold.text:
        return Decision(True, "string: identical after normalisation")
    if gold.number is not None:
        number = answer.number
        rule_prefix = ""
        if number is None and policy.units:
            stripped = strip_units(answer.text)
            if stripped != answer.text and (number := parse_number(stripped)) is not None:
                rule_prefix = "units stripped; "
        if number is not None:
            decision = _numbers(gold.number, number, policy)
            return Decision(decision.correct, rule_prefix + decision.rule)
        return _number_vs_expression(gold, answer, policy)
    if answer.number is not None and answer.number.kind in ("decimal", "scientific"):
        return _decimal_vs_expression(gold, answer, policy)
    decision = _symbolic(gold, answer)
    if not decision.correct and policy.units and (bare := strip_unit_words(answer.text)) != answer.text:
        retry = _symbolic(gold, Atom(bare, None, answer.degrees))
        if retry.correct:
            return Decision(True, "units stripped; " + retry.rule)
    return decision


def _numbers(gold: Number, answer: Number, policy: Policy) -> Decision:
    candidates: list[tuple[Fraction, str]] = [(answer.value, "")]
    if answer.percent and not gold.percent:
        # "50%" is 0.5 (issue 30), never 50, unless the question asks for a percent: then a gold 4 is
        # "4 percent" and "4%" answers it (without that question, 4 for 4% was a reward not earned, issue 28)
        candidates = [(answer.value / 100, "percent answer as its decimal; ")] if policy.percent else []
        if policy.percent and policy.percent_question:
            candidates.append((answer.value, "percent answer to a question that asks for a percent; "))
        if not candidates:
            return Decision(False, "percent: a percent answer for a gold that is not a percent")
    elif gold.percent and not answer.percent and policy.percent:
        candidates.append((answer.value * 100, "fraction answer as a percent; "))
    for value, note in candidates:
        decision = _number_equal(gold, value, answer, policy.rel_tol)
        if decision.correct:
            return Decision(True, note + decision.rule)
    if answer.percent and not gold.percent and not policy.percent_question:
        read = f"{answer.describe()} read as {answer.value / 100}"
        return Decision(False, f"percent: {read} != {gold.describe()} (no prompt that asks for a percent)")
    return Decision(False, f"number: {answer.describe()} != {gold.describe()}")


def _rounding_gold(gold: Number) -> bool:
    """A decimal gold written with >= 3 significant digits reads as a rounded value (1.73 for sqrt 3);
    a shorter one (0.5, 2.5) is more often exact, and accepting 0.46 for it would be a false positive."""
    return gold.kind == "decimal" and gold.significant_digits >= 3


_NOISE_TOL = 1e-6


def _number_equal(gold: Number, value: Fraction, answer: Number, rel_tol: float) -> Decision:
    if value == gold.value:
        return Decision(True, "number: exact")
    inexact = {"decimal", "scientific"}
    if gold.kind == "integer" or (gold.kind not in inexact and answer.kind not in inexact):
        return Decision(False, "number: exact value required")
    if gold.kind == answer.kind == "decimal" and answer.decimals <= gold.decimals and rel_tol <= _NOISE_TOL:
        # 37212.16 for 37212.15 is within a relative 1e-6 but differs at a digit both wrote: a tolerance
        # this small is for floating-point noise, which a written digit is not (a larger rel_tol is a choice)
        return Decision(False, "number: differs at a written digit")
    if abs(value - gold.value) <= Fraction(rel_tol) * max(abs(value), abs(gold.value)):
        return Decision(True, "number: within relative tolerance")
    more_precise = answer.kind != "decimal" or answer.decimals > gold.decimals
    if (
        _rounding_gold(gold)
        and more_precise
        and abs(value - gold.value) <= Fraction(1, 2 * 10**gold.decimals)
    ):
        return Decision(True, f"number: rounds to the gold's {gold.decimals} decimal place(s)")
    return Decision(False, "number: differs")


def _evaluate(text: str) -> complex | None:
    try:
        return symbolic.constant_value(text)
    except (symbolic.TooCostly, ValueError):
        return None


def _number_vs_expression(gold: Atom, answer: Atom, policy: Policy) -> Decision:
    """An exact number gold against an expression answer: exact equality first (through the difference, so
    10^{18} + 1 is not 10^{18}), then a decimal gold's tolerance or rounding."""
    import sympy

    assert gold.number is not None
    expr = _answer_sympy(answer, unreadable="answer is not a number or expression that can be read")
    if isinstance(expr, Decision):
        return expr
    if not isinstance(expr, sympy.Expr):
        return Decision(False, "answer is not a number")
    if gold.degrees and "\\pi" in answer.text and not expr.free_symbols:
        expr = expr * 180 / sympy.pi
    exact = sympy.Rational(gold.number.value.numerator, gold.number.value.denominator)
    verdict, rule = symbolic.equal(exact, expr)
    if verdict or expr.free_symbols or gold.number.kind != "decimal":
        return Decision(bool(verdict), rule)
    value = symbolic.evaluate(expr)
    if value is None or abs(value.imag) > symbolic.EXACT_REL_TOL * abs(value):
        return Decision(False, rule)
    real, target = value.real, float(gold.number.value)
    if symbolic.close(real, target, policy.rel_tol):
        return Decision(True, "numeric: within relative tolerance")
    places = gold.number.decimals
    if _rounding_gold(gold.number) and abs(real - target) <= 0.5 * 10.0**-places * (1 + 1e-12):
        return Decision(True, f"numeric: rounds to the gold's {places} decimal place(s)")
    return Decision(False, f"numeric: {real:.10g} != {target:.10g}")


def _decimal_vs_expression(gold: Atom, answer: Atom, policy: Policy) -> Decision:
    assert answer.number is not None
    value = _evaluate(gold.text)
    if value is None:
        return _symbolic(gold, answer)
    try:
        target = float(answer.number.value)
    except OverflowError:
        return Decision(False, "numeric: the decimal answer is out of floating range")
    ok = abs(value.imag) <= symbolic.EXACT_REL_TOL * abs(value) and symbolic.close(
        value.real, target, policy.rel_tol
    )
    return Decision(ok, f"numeric: decimal answer {'within' if ok else 'outside'} rel_tol of the exact gold")


def _answer_sympy(answer: Atom, unreadable: str) -> Any:
    """The answer as a sympy object, or the Decision that rejects it: too costly to evaluate, or not
    readable (`unreadable` says how, in the words of the rule that asked)."""
    try:
        return symbolic.to_sympy(answer.text)
    except symbolic.TooCostly as exc:
        return Decision(False, f"answer too costly to evaluate ({exc})")
    except ValueError:
        return Decision(False, unreadable)


def _symbolic(gold: Atom, answer: Atom) -> Decision:
    try:
        gold_expr = symbolic.to_sympy(gold.text)
    except symbolic.TooCostly as exc:  # a legal gold too costly to evaluate: only its own spelling matches
        return Decision(False, f"gold too costly to evaluate ({exc}); only the same spelling matches")
    except ValueError as exc:
        raise GoldUnusable(str(exc)) from exc
    answer_expr = _answer_sympy(answer, unreadable="answer cannot be read as an expression")
    if isinstance(answer_expr, Decision):
        return answer_expr
    import sympy

    if gold.degrees != answer.degrees:
        if gold.degrees and gold_expr.is_number:
            gold_expr = gold_expr * sympy.pi / 180
        elif answer.degrees and answer_expr.is_number:
            answer_expr = answer_expr * sympy.pi / 180
    if not (isinstance(gold_expr, sympy.Expr) and isinstance(answer_expr, sympy.Expr)):
        return Decision(bool(gold_expr == answer_expr), "symbolic: structural (not scalar expressions)")
    verdict, rule = symbolic.equal(gold_expr, answer_expr)
    return Decision(bool(verdict), rule)


def _sequence(gold: Seq, answer: Value, policy: Policy) -> Decision:
    if isinstance(answer, Union) and len(answer.parts) == 1:
        answer = answer.parts[0]
    elif isinstance(answer, Union) and gold.kind in _UNORDERED_PEERS:
        answer = Seq("list", answer.parts)  # "(1,2) and (3,4)": a list of pairs, not a union
    if isinstance(answer, Relation) and (as_relation := _ray_relation(gold)) is not None:
        return _relation(as_relation, answer)  # "-x > -1" for "x < 1"
    if not isinstance(answer, Seq):
        return Decision(False, f"a single value where a {gold.kind} was expected")
    if gold.var and answer.var and gold.var != answer.var:
        return Decision(False, f"interval of {answer.var} where one of {gold.var} was expected")
    if (named := _by_name(gold, answer, policy)) is not None:
        return named
    if (indexed := _by_index(gold, answer, policy)) is not None:
        return indexed
    ordered = policy.ordered_lists and gold.kind == "list" and answer.kind == "list"
    if gold.kind in _UNORDERED_PEERS and not ordered:
        if answer.kind not in _UNORDERED_PEERS[gold.kind]:
            return Decision(False, f"{answer.kind} where a {gold.kind} (unordered) was expected")
        return _unordered(gold.items, answer.items, policy, gold.kind)
    if not ordered and answer.kind not in _ORDERED_PEERS.get(gold.kind, set()):
        return Decision(False, f"{answer.kind} where a {gold.kind} was expected")
    if "interval" in (gold.kind, answer.kind) and (gold.left, gold.right) != (answer.left, answer.right):
        return Decision(
            False, f"interval ends differ: {gold.left}{gold.right} vs {answer.left}{answer.right}"
        )
    if len(gold.items) != len(answer.items):
        return Decision(False, f"{len(answer.items)} components where {len(gold.items)} were expected")
    for index, (g, a) in enumerate(zip(gold.items, answer.items, strict=True)):
        decision = compare(g, a, policy)
        if not decision.correct:
            return Decision(False, f"component {index + 1}: {decision.rule}")
    return Decision(True, f"{gold.kind}: every component equal in order")


def _ray_relation(value: Value) -> Relation | None:
    """ "x < 1" (read as the interval (-oo, 1) of x) as the relation it was written as."""
    if not (isinstance(value, Seq) and value.kind == "interval" and value.var and len(value.items) == 2):
        return None
    low, high = value.items
    if isinstance(low, Atom) and low.text == "-\\infty" and isinstance(high, Atom):
        return Relation("<=" if value.right == "]" else "<", value.var, high.text)
    if isinstance(high, Atom) and high.text == "\\infty" and isinstance(low, Atom):
        return Relation(">=" if value.left == "[" else ">", value.var, low.text)
    return None


def _by_name(gold: Seq, answer: Seq, policy: Policy) -> Decision | None:
    """ "b = 3, a = 2" answers "a = 2, b = 3": values named by distinct variables compare by name."""
    gold_named, answer_named = _named_items(gold), _named_items(answer)
    if gold_named is None or answer_named is None or gold_named.keys() != answer_named.keys():
        return None
    for var, item in gold_named.items():
        decision = compare(item, answer_named[var], policy)
        if not decision.correct:
            return Decision(False, f"{var}: {decision.rule}")
    return Decision(True, "named values: each variable equal")


_INDEXED_RE = re.compile(r"^([a-zA-Z])_\{?(\d+)\}?$")


def _by_index(gold: Seq, answer: Seq, policy: Policy) -> Decision | None:
    """ "a_1 = -1, a_2 = 1" answered by the tuple "(-1, 1)" (issue 30): terms named by one letter with
    distinct indices are read in index order, so a tuple that lists them in that order answers them."""
    named = _named_items(gold)
    indices = [_INDEXED_RE.match(var) for var in named or {}]
    if not named or not all(indices) or len({m.group(1) for m in indices if m}) != 1:
        return None
    if answer.kind not in ("paren", "vector") or len(answer.items) != len(named) or _named_items(answer):
        return None
    order = sorted(named, key=lambda var: int(_INDEXED_RE.match(var).group(2)))  # type: ignore[union-attr]
    for var, item in zip(order, answer.items, strict=True):
        decision = compare(named[var], item, policy)
        if not decision.correct:
            return Decision(False, f"indexed terms in order: {var}: {decision.rule}")
    return Decision(True, "indexed terms in order: each term equal")


def _named_items(seq: Seq) -> dict[str, Atom] | None:
    """The items of `seq` by variable, in order; None unless every item is a value of its own variable."""
    named = {item.var: item for item in seq.items if isinstance(item, Atom) and item.var}
    return named if len(named) == len(seq.items) else None


def _unordered(gold: tuple[Value, ...], answer: tuple[Value, ...], policy: Policy, kind: str) -> Decision:
    gold, answer = tuple(dict.fromkeys(gold)), tuple(dict.fromkeys(answer))  # a repeated element is one
    if len(gold) != len(answer):
        return Decision(False, f"{len(answer)} elements where {len(gold)} were expected")
    unused = list(answer)
    for g in gold:
        match = next((a for a in unused if compare(g, a, policy).correct), None)
        if match is None:
            return Decision(False, f"{kind}: no element of the answer matches one of the gold")
        unused.remove(match)
    return Decision(True, f"{kind}: same elements (order ignored)")


def _union(gold: Union, answer: Value, policy: Policy) -> Decision:
    parts: tuple[Value, ...] = ()
    if isinstance(answer, Union):
        parts = answer.parts
    elif isinstance(answer, Seq) and answer.kind == "list" and all(isinstance(a, Seq) for a in answer.items):
        parts = answer.items  # "(5,2),(7,2)" for "p=5,q=2; p=7,q=2"
    elif isinstance(answer, Seq):
        parts = (answer,)
    if len(parts) != len(gold.parts):
        return Decision(False, f"{len(parts)} intervals where {len(gold.parts)} were expected")
    unused = list(parts)
    for g in gold.parts:
        match = next((a for a in unused if _sequence(g, a, policy).correct), None)
        if match is None:
            return Decision(False, "union: an interval of the gold is missing")
        unused.remove(match)
    return Decision(True, "union: same intervals")


def _relation(gold: Relation, answer: Value) -> Decision:
    if isinstance(answer, Atom) and answer.var:
        answer = Relation("=", answer.var, answer.text)
    answer = _ray_relation(answer) or answer
    if not isinstance(answer, Relation):
        return Decision(False, "a value where a relation was expected")
    if gold.chain or answer.chain:
        return _chain(gold, answer)
    g_op, g_lhs, g_rhs = _oriented(gold)
    a_op, a_lhs, a_rhs = _oriented(answer)
    if g_op != a_op:
        return Decision(False, f"relation {answer.op} where {gold.op} was expected")
    if _squash(g_lhs + g_op + g_rhs) == _squash(a_lhs + a_op + a_rhs):
        return Decision(True, "string: identical relation")
    try:
        gold_expr = symbolic.to_sympy(g_lhs) - symbolic.to_sympy(g_rhs)
        answer_expr = symbolic.to_sympy(a_lhs) - symbolic.to_sympy(a_rhs)
    except symbolic.TooCostly as exc:
        return Decision(False, f"too costly to evaluate ({exc})")
    except ValueError:
        return Decision(False, "relation cannot be read")
    verdict, rule = symbolic.proportional(gold_expr, answer_expr, positive=g_op != "=")
    return Decision(bool(verdict), f"relation: {rule}")


def _chain(gold: Relation, answer: Relation) -> Decision:
    """A chain "a < b < c": every operator and every part equal, read in the same direction."""
    g_ops, g_parts = _flow(gold)
    a_ops, a_parts = _flow(answer)
    if g_ops != a_ops or len(g_parts) != len(a_parts):
        return Decision(False, f"chain {' '.join(a_ops)} where {' '.join(g_ops)} was expected")
    for index, (g, a) in enumerate(zip(g_parts, a_parts, strict=True)):
        decision = compare(parse_value(g), parse_value(a), Policy())
        if not decision.correct:
            return Decision(False, f"chain part {index + 1}: {decision.rule}")
    return Decision(True, "chain: every part and operator equal")


def _flow(relation: Relation) -> tuple[list[str], list[str]]:
    """Operators and parts of a chain written left to right with `<`-type operators where possible."""
    parts = list(relation.chain or (relation.lhs, relation.rhs))
    ops = [_oriented(Relation(op, "a", "b"))[0] for op in (relation.ops or (relation.op,))]
    swapped = [_oriented(Relation(op, "a", "b"))[1] == "b" for op in (relation.ops or (relation.op,))]
    if swapped and all(swapped):  # written with < : read right to left so every operator is >
        return ops[::-1], parts[::-1]
    return ops, parts


def _oriented(relation: Relation) -> tuple[str, str, str]:
    """`a < b` as `b > a`, so both sides of a comparison face the same way."""
    flips = {
        "<": ">",
        "\\lt": ">",
        "<=": ">=",
        "\\leq": ">=",
        ">": ">",
        "\\gt": ">",
        "\\geq": ">=",
        ">=": ">=",
    }
    op = relation.op
    if op in ("<", "\\lt", "<=", "\\leq"):
        return flips[op], relation.rhs, relation.lhs
    return flips.get(op, op), relation.lhs, relation.rhs
