"""Where a canary changes a test's expected value, and what it changes it to (issue 37).

A canary is a copy of a real FAIL_TO_PASS test with an expected value changed, so that it fails whenever
the real copy passes. `targets` finds the places: the written-out expected value of an equality check
(`assert A == 12`, `self.assertEqual(A, [1, 2])`, a value in a set or a dict's value), the singleton of
an identity check (`assert A is True`), or, in a parametrised test that compares with one of its
parameters (`assert plural == pluralize(singular)`), that parameter's value in each FAIL_TO_PASS case of
the test's own inline `parametrize` list. The check must run exactly once whenever the test passes (a
statement of the function's own body, no branch, loop, `with` or `try` around it, no early return) and
be its last statement: then a canary fails where its real copy fails, whatever the bug (a real copy that
passed a first check and failed a later one, beside canaries failing at the first, was the copy failing
at another line), and a failing canary skips no cleanup.

`values` picks the new values so that the values the copies show at that place do not say which copy is
real: the set is drawn by a rule that treats every member alike. Where the real value also appears
elsewhere in the module, the others are drawn from the module's other constants of its type (then each
member appears elsewhere); where it does not, they differ from it in one character (a digit, a letter
of the same case) at one place, drawn from the same alphabet (then no member appears elsewhere, all have
the same length and shape). A value that is not written canonically (`1_000`, `1.50`, `r"x"`, an
escape) is left alone: a canonical spelling beside it would stand out. Earlier rules gave the real copy
away: an int was raised by 1-9 (the real value was the smallest), a string lost a character (the real
one was the longest), values were drawn from the module's constants even where the real value was the
only one in the module that appeared nowhere else, and two copies changed different constants (the real
one was the copy differing from each other copy in one place while they differed from each other in
two). What stays is knowledge of the domain: telling `"people"` from `"peoxle"` (docs/repo.md).
"""

from __future__ import annotations

import ast
import random
import string
from collections.abc import Callable
from dataclasses import dataclass

Def = ast.FunctionDef | ast.AsyncFunctionDef
Pool = dict[type, dict[object, int]]  # the module's constants by type: value -> occurrences

_ASSERT_CALLS = frozenset(
    ("assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual", "assertDictEqual",
     "assertMultiLineEqual", "assertSequenceEqual", "assertSetEqual")
)  # fmt: skip
_KINDS = (int, float, str, bytes)  # the constants an expected value may change to another of its type
_SINGLETONS = (True, False, None)  # `is` checks: the copies show all three
_ALPHABETS = (string.digits, string.ascii_lowercase, string.ascii_uppercase)


@dataclass(frozen=True)
class Target:
    """Constants changed together in a canary: one, or one per FAIL_TO_PASS case of a parametrised test
    (`ids`: per node, that case's id parts and the index of the part the value writes)."""

    nodes: tuple[ast.Constant, ...]
    ids: tuple[tuple[tuple[str, ...], int], ...] = ()
    taken: frozenset[str] = frozenset()  # every case's `[id]` in the list: a new one must not repeat them
    # the other members of the set the one node is in: a new value repeating one would read `{1, 3, 3}`,
    # which a test never writes, beside the real copy's `{1, 2, 3}`
    siblings: frozenset[object] = frozenset()
    # in a list or tuple, the neighbours' values and how the value compares with each (-1, 0, 1): a new
    # value keeps those (a sorted `[1, 2, 3]` never becomes `[1, 7, 3]`, which only a canary would write)
    order: tuple[tuple[object, int], ...] = ()


def may_return_early(node: ast.AST) -> bool:
    """A `return` or `yield` in the function's own scope: an appended assertion might never run."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, ast.Return | ast.Yield | ast.YieldFrom):
            return True
        if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(child))
    return False


def _is_literal(node: ast.expr) -> bool:
    """A value written out: a constant, a negative number, or a tuple, list, set or dict of them."""
    if isinstance(node, ast.Constant):
        return node.value is not Ellipsis
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(_is_literal(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _is_literal(k) for k in node.keys) and all(map(_is_literal, node.values))
    return False


def _changeable(node: ast.expr) -> list[ast.Constant]:
    """The constants inside a literal whose value a canary may change: not dict keys, not bool/None, in a
    set only where its members are distinct constants (so the changed set is another set)."""
    if isinstance(node, ast.Constant):
        one_line = node.lineno == node.end_lineno
        return [node] if type(node.value) in _KINDS and one_line else []
    if isinstance(node, ast.UnaryOp):
        return _changeable(node.operand)
    if isinstance(node, ast.Set):
        members = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        if len(members) != len(node.elts) or len({(type(m), m) for m in members}) != len(members):
            return []
    inner = node.values if isinstance(node, ast.Dict) else getattr(node, "elts", [])
    return [c for e in inner for c in _changeable(e)]


def _pair(stmt: ast.stmt) -> tuple[str, list[ast.expr]]:
    """('eq' or 'is', the two sides) of `assert A == B`, `assert A is B`, `self.assertEqual(A, B)` or
    `self.assertIs(A, B)`; ('', []) for anything else."""
    if isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare) and len(stmt.test.ops) == 1:
        op = stmt.test.ops[0]
        kind = "eq" if isinstance(op, ast.Eq) else "is" if isinstance(op, ast.Is) else ""
        return kind, [stmt.test.left, stmt.test.comparators[0]]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        if isinstance(call.func, ast.Attribute) and len(call.args) >= 2:
            kind = "eq" if call.func.attr in _ASSERT_CALLS else "is" if call.func.attr == "assertIs" else ""
            return kind, list(call.args[:2])
    return "", []


def _nothing_after(rest: list[ast.stmt]) -> bool:
    """Nothing that runs after the check: `pass` or a bare constant (a string used as a comment)."""
    return all(
        isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        for s in rest
    )


@dataclass(frozen=True)
class _Cases:
    """A test's one inline `@pytest.mark.parametrize(names, [...])`: its argument names, each case's
    values and id parts (as pytest writes them for scalars)."""

    names: tuple[str, ...]
    values: tuple[tuple[ast.expr, ...], ...]
    ids: tuple[tuple[str, ...], ...]


def _idval(node: ast.expr) -> str | None:
    """pytest's id for a scalar case value written out; None where it would escape or name the argument."""
    if isinstance(node, ast.UnaryOp):
        inner = node.operand.value if isinstance(node.operand, ast.Constant) else None
        negative = (
            isinstance(node.op, ast.USub) and isinstance(inner, int | float) and not isinstance(inner, bool)
        )
        return f"-{inner!r}" if negative else None
    if not isinstance(node, ast.Constant):
        return None
    if isinstance(node.value, bytes):
        text = node.value.decode("latin-1")
    elif isinstance(node.value, str):
        text = node.value
    else:
        return str(node.value) if type(node.value) in (int, float, bool, type(None)) else None
    return text if text and text.isascii() and text.isprintable() and "\\" not in text else None


def _parametrised(node: Def) -> _Cases | None:
    marks = [
        d
        for d in node.decorator_list
        if isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize"
    ]
    if len(marks) != 1 or len(marks[0].args) != 2 or marks[0].keywords:
        return None
    head, body = marks[0].args
    if isinstance(head, ast.Constant) and isinstance(head.value, str):
        names = tuple(n.strip() for n in head.value.split(","))
    elif isinstance(head, ast.Tuple | ast.List) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in head.elts
    ):
        names = tuple(e.value for e in head.elts)  # type: ignore[attr-defined]
    else:
        return None
    if not isinstance(body, ast.List | ast.Tuple):
        return None
    values: list[tuple[ast.expr, ...]] = []
    for case in body.elts:
        if len(names) == 1:
            values.append((case,))
        elif isinstance(case, ast.Tuple | ast.List) and len(case.elts) == len(names):
            values.append(tuple(case.elts))
        else:
            return None
    ids = [tuple(_idval(v) for v in case) for case in values]
    if any(None in parts for parts in ids):
        return None
    joined = ["-".join(parts) for parts in ids]  # type: ignore[arg-type]
    if len(set(joined)) != len(joined):
        return None  # pytest would add suffixes to tell them apart
    return _Cases(names, tuple(values), tuple(ids))  # type: ignore[arg-type]


def _case_target(cases: _Cases, name: str, wanted: set[str]) -> Target | None:
    """The parameter `name`'s value in each FAIL_TO_PASS case (`[id]` strings) of the list."""
    at = cases.names.index(name)
    nodes, ids = [], []
    by_id = {"[" + "-".join(parts) + "]": i for i, parts in enumerate(cases.ids)}
    for case in sorted(wanted):
        index = by_id.get(case)
        if index is None:
            return None  # a bare id, or one this rule does not write as pytest does
        value = cases.values[index][at]
        node = value.operand if isinstance(value, ast.UnaryOp) else value
        if not (isinstance(node, ast.Constant) and type(node.value) in _KINDS) or node is not value:
            return None  # a negative number's sign is not the constant: left alone
        nodes.append(node)
        ids.append((cases.ids[index], at))
    taken = frozenset(by_id)
    return Target(tuple(nodes), tuple(ids), taken) if nodes else None


def _order(node: ast.Constant, rows: list[list[ast.expr]]) -> tuple[tuple[object, int], ...]:
    """How `node`'s value compares with its neighbours of the same type in the sequence holding it."""
    row = next((r for r in rows if any(e is node for e in r)), [])
    at = next((i for i, e in enumerate(row) if e is node), -1)
    near = [row[i] for i in (at - 1, at + 1) if 0 <= i < len(row)] if at >= 0 else []
    same = [e.value for e in near if isinstance(e, ast.Constant) and type(e.value) is type(node.value)]
    return tuple((v, _sign(node.value, v)) for v in same)


def _sign(a: object, b: object) -> int:
    return (a > b) - (a < b)  # type: ignore[operator]


def targets(node: Def, cases: set[str]) -> list[Target]:
    """The places a canary of `node` may change; `cases`: the `[id]` strings of its FAIL_TO_PASS cases
    (empty or holding '': it is not parametrised, or all of it counts)."""
    if may_return_early(node):
        return []
    params = _parametrised(node)
    stored = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    found: list[Target] = []
    for at, stmt in enumerate(node.body):
        kind, pair = _pair(stmt)
        if not kind or not _nothing_after(node.body[at + 1 :]):
            continue
        literal = [side for side in pair if _is_literal(side)]
        if len(literal) == 1 and kind == "is":
            value = literal[0]
            if isinstance(value, ast.Constant) and any(value.value is s for s in _SINGLETONS):
                found.append(Target((value,)))
        elif len(literal) == 1:
            sets = [n for n in ast.walk(literal[0]) if isinstance(n, ast.Set)]
            rows = [n.elts for n in ast.walk(literal[0]) if isinstance(n, ast.List | ast.Tuple)]
            for c in _changeable(literal[0]):
                around = [e for n in sets if c in n.elts for e in n.elts if e is not c]
                others = frozenset(e.value for e in around if isinstance(e, ast.Constant))
                found.append(Target((c,), siblings=others, order=_order(c, rows)))
        elif not literal and kind == "eq" and params and cases and "" not in cases:
            # `assert param == f(x)`: the expected value is the parameter's, in each case's tuple
            named = [s for s in pair if isinstance(s, ast.Name) and s.id in params.names]
            if len(named) == 1 and named[0].id not in stored:
                target = _case_target(params, named[0].id, cases)
                found += [target] if target is not None else []
    return found


def pool(tree: ast.Module, lines: list[str]) -> Pool:
    """The module's own one-line constants by type, counted (docstrings and multi-line strings left
    out): the values a changed expected value is drawn from where the real one is among them too."""
    docs = {
        id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)
    }
    found: Pool = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and type(node.value) in _KINDS
            and id(node) not in docs
            and node.lineno == node.end_lineno
            and node.end_col_offset is not None
        ):
            source = lines[node.lineno - 1].encode()[node.col_offset : node.end_col_offset].decode()
            if not source.lstrip("rRbBuU").startswith(('"""', "'''")):
                counts = found.setdefault(type(node.value), {})
                counts[node.value] = counts.get(node.value, 0) + 1
    return found


def spelled(value: object, like: str) -> str:
    """`value` written as Python source, in the quotes of `like` where that is the same."""
    text = repr(value)
    if isinstance(value, str | bytes) and like.lstrip("bB")[:1] == '"' and text.lstrip("b")[:1] == "'":
        body = text.lstrip("b")[1:-1]
        if '"' not in body and "\\'" not in body:
            text = ("b" if isinstance(value, bytes) else "") + f'"{body}"'
    return text


def _one_place(old: object, k: int, rng: random.Random, ok: Callable[[object], bool]) -> list[object] | None:
    """k values differing from `old` in one character at one place, from that character's alphabet
    (digits, lower or upper case letters), each passing `ok`: any member of the set could be the old."""
    back: Callable[[str], object]
    if isinstance(old, int):
        text, back = str(abs(old)), (lambda s: int(s) * (-1 if old < 0 else 1))
    elif isinstance(old, float):
        text, back = repr(old), float
    elif isinstance(old, str):
        text, back = old, str
    else:
        assert isinstance(old, bytes)
        text, back = old.decode("latin-1"), (lambda s: s.encode("latin-1"))
    mantissa = text.split("e")[0] if isinstance(old, float) else text
    places = [i for i, c in enumerate(mantissa) if c.isascii() and c.isalnum()]
    for j in rng.sample(places, len(places)):
        alphabet = next(a for a in _ALPHABETS if text[j] in a)
        if isinstance(old, int) and j == 0 and len(text) > 1:
            alphabet = alphabet[1:]  # no leading zero
        made = [text[:j] + c + text[j + 1 :] for c in alphabet]
        fits = [back(m) for m in made if not isinstance(old, float) or repr(float(m)) == m]
        others = [v for v in fits if v != old and ok(v)]
        if len(others) >= k:
            return rng.sample(others, k)
    return None


def values(
    node: ast.Constant, like: str, pool: Pool, k: int, rng: random.Random, ok: Callable[[object], bool]
) -> list[str] | None:
    """k spellings of new values for the constant `node` (its source from `like` on), each passing `ok`;
    None where its spelling is not canonical or no such values exist. See the module doc for the rule."""
    old = node.value
    if old is None or isinstance(old, bool):
        return [repr(v) for v in _SINGLETONS if v is not old]
    width = (node.end_col_offset or 0) - node.col_offset
    source = like.encode()[:width].decode("utf-8", "replace") if node.lineno == node.end_lineno else ""
    if spelled(old, source) != source or old in ("", b""):
        return None
    counts = pool.get(type(old), {})
    if counts.get(old, 0) > 1:  # it appears elsewhere: so does every value drawn
        others = sorted((v for v in counts if v != old and v not in ("", b"") and ok(v)), key=repr)
        chosen = rng.sample(others, k) if len(others) >= k else None
    else:  # it appears nowhere else: nor does any value drawn
        chosen = _one_place(old, k, rng, lambda v: v not in counts and ok(v))
    return [spelled(v, source) for v in chosen] if chosen is not None else None


def case_id(parts: tuple[str, ...], at: int, text: str) -> str:
    """The `[id]` of a parametrised case whose part `at` is now the value spelled `text`."""
    value = ast.literal_eval(text)
    new = value.decode("latin-1") if isinstance(value, bytes) else str(value)
    return "[" + "-".join((*parts[:at], new, *parts[at + 1 :])) + "]"


def _new_case(target: Target, i: int) -> Callable[[object], bool]:
    """Whether a value may stand in node i's case: pytest writes it as it is, and the case's new id
    repeats no case of the list (pytest would then add suffixes to both)."""
    parts, at = target.ids[i]
    return lambda v: _idval(ast.Constant(v)) is not None and case_id(parts, at, repr(v)) not in target.taken  # type: ignore[arg-type]


def _fits(target: Target, value: object) -> bool:
    """A new value that repeats no member of its set and keeps its order with its neighbours."""
    return value not in target.siblings and all(_sign(value, v) == sign for v, sign in target.order)


def draw(target: Target, lines: list[str], pool: Pool, k: int, rng: random.Random) -> list[list[str]] | None:
    """Per node of `target`, k new spellings (`values`); a case's new id must not repeat another's."""
    drawn = []
    for i, node in enumerate(target.nodes):
        ok = _new_case(target, i) if target.ids else (lambda v: _fits(target, v))
        like = lines[node.lineno - 1].encode()[node.col_offset :].decode("utf-8", "replace")
        made = values(node, like, pool, k, rng, ok)
        if made is None:
            return None
        drawn.append(made)
    return drawn
