"""Canaries a change cannot tell from the task's tests (issue 37): drawn per item, inside the real modules.

Code that the tests import runs in the test process, so it can rewrite pytest's reports or wrap the
reporter before a record is signed; no signature stops that. What stops it paying is a test that must fail
and looks like the ones that count. Per item, for each FAIL_TO_PASS test function (the ones a forgery
must turn):

- two canaries are planted beside the real test (for the first four functions of an item; one for the
  others, which keeps the number of canaries near the number of functions): copies of its own source,
  same decorators and body, with the same expected value of its own checks changed, each to another
  value (`expected`: where, and values drawn so that the copies do not say which is real). Where no
  such value exists, each copy gets an always-false assertion instead (the earlier scheme), and
  `details.canaries` counts both kinds;
- the copies take the original name and fresh ones from one list, in a random assignment: the name a
  forgery read at the base is the real test's one time in three (or two);
- the copies (the real test among them) are put in a random order where the test was, separated as
  the module separates its functions;
- a parametrised canary runs the cases of the FAIL_TO_PASS ids it copies, not all of its cases (under
  their new ids where the changed value is in the case's tuple): those are the ones a forgery must
  turn (a change breaking 2 of 82 cases cost 330 failing canary cases: most of a 0.5 s suite's time);
- a test method inherited from a mixin of the same module is copied where it is defined; a test that
  another test calls by name keeps its name (a canary under it would fail the caller).

A forgery must flip exactly the real copy of every FAIL_TO_PASS function and no canary. Names, order,
shape and the values' structure are drawn alike for the copies, so a forgery that does not know the
right value guesses, and wins (1/3)^min(n, 4) * (1/2)^(n - 4) for n functions (docs/repo.md says where
that stops: tests the policy can read, shared parameter lists, the fallback).
"""

from __future__ import annotations

import ast
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from assay.verifiers.repo.expected import Def, Pool, case_id, draw, may_return_early, pool, targets

_SUFFIXES = (
    "basic", "simple", "again", "edge", "empty", "default", "twice", "large", "small", "mixed",
    "other", "values", "case", "regression", "repeat", "more", "extra", "order", "nested", "single",
)  # fmt: skip
# Canaries per FAIL_TO_PASS function: two (three copies, three names) for the first _FULL functions of
# an item, one (two copies) for the rest. A forgery then wins (1/3)^min(n, 4) * (1/2)^(n - 4) for n
# functions at best, and an item's canaries stay about as many as its functions plus four: every canary
# runs its function's failing cases (cachetools' largest item has 83 functions).
_CANARIES, _FULL = 2, 4


@dataclass
class Planted:
    """The run's names: `run_ids` maps a named test to its id in this run; `canaries` are the id prefixes
    (before any `[param]`) of the tests that must fail."""

    run_ids: dict[str, str] = field(default_factory=dict)
    canaries: list[str] = field(default_factory=list)
    changed: int = 0  # canaries whose expected value was changed (the others carry a false assertion)
    full: int = 0  # functions given two canaries so far
    # canary -> the `[param]` cases run: those of the FAIL_TO_PASS ids of the test it copies; none: all
    cases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    copied: dict[str, str] = field(default_factory=dict)  # canary -> the id (no params) of the test copied


def _split(node_id: str) -> tuple[str, tuple[str, ...], str, str]:
    """(file, classes, function, `[params]`) of a pytest node id. The parameters are cut off first: they
    may hold `::` themselves (bleach's `test_urlparse[http://2001::1]-ValueError]`)."""
    path, _, rest = node_id.partition("::")
    head, bracket, params = rest.partition("[")
    names = head.split("::") if head else []
    return path, tuple(names[:-1]), names[-1] if names else "", bracket + params


def _shuffled(rng: random.Random) -> list[str]:
    return rng.sample(_SUFFIXES, len(_SUFFIXES))


def _defined(body: list[ast.stmt], func: str) -> Def | None:
    defs = [n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == func]
    return defs[-1] if defs else None


def _find(tree: ast.Module, classes: tuple[str, ...], func: str) -> Def | None:
    """The definition pytest runs for `classes::func`: in the innermost class, else in its bases that the
    module defines itself (a mixin's test methods, as cachetools' suites have them), depth first; None
    where it is elsewhere (another module's mixin) or one line (`def test_x(): pass`)."""
    body: list[ast.stmt] = tree.body
    found: list[ast.ClassDef] = []
    for name in classes:
        found = [n for n in body if isinstance(n, ast.ClassDef) and n.name == name]
        if not found:
            return None
        body = found[-1].body
    node = _defined(body, func)
    top = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    stack, seen = found[-1:] if node is None else [], set()
    while stack and node is None:
        cls = stack.pop(0)
        if cls.name not in seen:
            seen.add(cls.name)
            node = _defined(cls.body, func)
            stack[:0] = [top[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in top]
    return node if node is not None and node.body[0].lineno != node.lineno else None


def _false_assertion(rng: random.Random) -> str:
    """An assertion that is always false, in one of the shapes tests use."""
    a = rng.randint(2, 99)
    words = ("alpha", "beta", "value", "name", "item", "data", "key", "text")
    first, second = rng.sample(words, 2)
    return rng.choice(
        (
            f"assert {a} == {a + rng.randint(1, 9)}",
            f"assert {first!r} == {second!r}",
            f"assert len([{', '.join(str(a + i) for i in range(3))}]) == {rng.randint(4, 9)}",
            f"assert [{a}] == [{a + 1}]",
            f"assert {{{first!r}: {a}}} == {{{first!r}: {a - 1}}}",
        )
    )


def _splice(source: list[str], first: int, node: ast.Constant, text: str) -> list[str]:
    """`source` (lines from file line `first` + 1) with `node`'s spelling replaced by `text`."""
    start, end = node.lineno - 1 - first, (node.end_lineno or node.lineno) - 1 - first
    head = source[start].encode()[: node.col_offset].decode()
    tail = source[end].encode()[node.end_col_offset :].decode()
    return [*source[:start], *(head + text + tail).splitlines(keepends=True), *source[end + 1 :]]


Edit = list[tuple[ast.Constant, str]] | str | None


def _copy(lines: list[str], node: Def, name: str, edit: Edit) -> list[str]:
    """The function's source under `name`: as it is (`edit` None), with constants respelled (a list of
    (node, new spelling)), or with the always-false assertion `edit` added (last, or first where the
    body may return early)."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    end = node.end_lineno or node.lineno
    source = lines[first:end]
    def_at = node.lineno - 1 - first
    source[def_at] = source[def_at].replace(f"def {node.name}(", f"def {name}(", 1)
    if edit is None:
        return source
    if isinstance(edit, list):
        for constant, text in sorted(edit, key=lambda e: (e[0].lineno, e[0].col_offset), reverse=True):
            source = _splice(source, first, constant, text)
        return source
    check = f"{' ' * node.body[0].col_offset}{edit}\n"
    if may_return_early(node):
        at = node.body[0].lineno - 1 - first
        return [*source[:at], check, *source[at:]]
    last = source[-1] if source[-1].endswith("\n") else source[-1] + "\n"
    return [*source[:-1], last, check]


@dataclass(frozen=True)
class _Change:
    """One canary's edit of its copy and the `[param]` cases it runs (None: those of the real test)."""

    edit: list[tuple[ast.Constant, str]] | str
    cases: tuple[str, ...] | None = None


def _changes(
    lines: list[str], node: Def, cases: set[str], rng: random.Random, pool: Callable[[], Pool], k: int
) -> list[_Change]:
    """The edits of the function's canaries: one place (`expected.targets`) changed in all of them, to
    values drawn so that the copies' values do not say which is real (`expected.draw`); else each gets
    an always-false assertion."""
    found = targets(node, cases)
    for target in rng.sample(found, len(found)):
        drawn = draw(target, lines, pool(), k, rng)
        if drawn is None:
            continue
        changes = []
        for i in range(k):
            edit = [(constant, made[i]) for constant, made in zip(target.nodes, drawn, strict=True)]
            ran = tuple(case_id(p, at, made[i]) for (p, at), made in zip(target.ids, drawn, strict=False))
            changes.append(_Change(edit, ran if target.ids else None))
        return changes
    return [_Change(_false_assertion(rng)) for _ in range(k)]


Named = tuple[
    tuple[str, ...], str, str, bool
]  # a named test of a file: classes, function, `[param]`, failing


def _plant_file(
    copy: Path, path: str, named: list[Named], rng: random.Random, planted: Planted, rename: bool = True
) -> dict[tuple[tuple[str, ...], str, bool], str]:
    """Plant the canaries of the FAIL_TO_PASS functions among `named` (the file's named tests) in `path`.
    Returns the name each named test runs under, by (classes, function, failing), where it changed or
    was copied: a FAIL_TO_PASS test runs as the real copy; a PASS_TO_PASS test whose definition is
    copied runs as one more unchanged copy, so the real copy runs the same tests as its canaries (a
    copy running more cases, or in more classes, would be the real one to a forgery counting them).
    With `rename`, the real copy and its two canaries take the original name and two fresh ones in a
    random assignment; without, the real test keeps its name and the canaries take fresh ones."""
    target = copy / path
    try:
        text = target.read_text()
        tree = ast.parse(text)
    except (OSError, SyntaxError, UnicodeError, ValueError):
        return {}
    lines = text.split("\n")  # at line ends only, as Python counts them (never at a form feed)
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    module_pool = functools.cache(lambda: pool(tree, lines))  # read only where a value is changed
    taken = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    # A test the module uses by name (toolz's test_introspect_curry_partial_py3 calls another test with
    # arguments) keeps its name: under it, a canary would fail the caller.
    called = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    called |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    # One set of copies per definition: an inherited test method is copied where it is defined.
    groups: dict[int, tuple[Def, list[Named]]] = {}
    for test in named:
        node = _find(tree, test[0], test[1])
        if (
            node is not None
            and node.body[0].lineno != node.lineno
            and f"def {node.name}(" in lines[node.lineno - 1]
        ):
            groups.setdefault(id(node), (node, []))[1].append(test)
    edits: list[tuple[int, int, list[str]]] = []  # (first line, last line, the lines in their place)
    names: dict[tuple[tuple[str, ...], str, bool], str] = {}
    for node, tests in sorted(groups.values(), key=lambda g: g[0].lineno):
        if not any(failing for *_, failing in tests):
            continue
        func = node.name
        fresh = [f"{func}_{s}" for s in _shuffled(rng) if f"{func}_{s}" not in taken]
        k = _CANARIES if planted.full < _FULL else 1
        planted.full += k == _CANARIES
        if rename and func not in called:  # the name a forgery read at the base is any copy's
            real, *held = rng.sample([func, *fresh[:k]], k + 1)
        else:
            real, held = func, fresh[:k]
        kept = fresh[k]  # the unchanged copy running the PASS_TO_PASS tests of this definition, if any
        taken.update((real, *held, kept))
        cases = {case for *_, case, failing in tests if failing}
        blocks = [_copy(lines, node, real, None)]
        for name, change in zip(held, _changes(lines, node, cases, rng, module_pool, k), strict=True):
            blocks.append(_copy(lines, node, name, change.edit))
            planted.changed += isinstance(change.edit, list) * len({t[0] for t in tests if t[3]})
            for classes in dict.fromkeys(t[0] for t in tests if t[3]):
                prefix = "::".join((path, *classes))
                planted.canaries.append(f"{prefix}::{name}")
                planted.copied[f"{prefix}::{name}"] = f"{prefix}::{func}"
                if change.cases is not None:
                    planted.cases[f"{prefix}::{name}"] = change.cases
        if not all(failing for *_, failing in tests):
            blocks.append(_copy(lines, node, kept, None))
        for classes, _, _, failing in tests:
            names[(classes, func, failing)] = real if failing else kept
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
        above = first  # the blank lines above the function (and its comments) separate the copies
        while above > 0 and lines[above - 1].lstrip().startswith("#"):
            above -= 1
        blank = 0
        while above - blank > 0 and not lines[above - blank - 1].strip():
            blank += 1
        rng.shuffle(blocks)  # the real test is any of the copies, in any place
        edit: list[str] = []
        for block in blocks:
            block[-1] = block[-1] if block[-1].endswith("\n") else block[-1] + "\n"
            edit += [*(["\n"] * max(1, blank) if edit else []), *block]
        edits.append((first, node.end_lineno or node.lineno, edit))
    for first, last, edit in sorted(edits, reverse=True):
        lines[first:last] = edit
    target.write_text("".join(lines))
    return names


def plant(
    copy: Path, tests: tuple[str, ...], fail_to_pass: tuple[str, ...], rng: random.Random, rename: bool = True
) -> Planted:
    """Rename the FAIL_TO_PASS test functions in the working copy and plant their canaries (see the module
    doc); where none can be planted, one plain failing test joins the first named test's module. Without
    `rename` (suites that key data by a test's name, such as snapshot tests) the canaries take fresh
    names only: a forgery that spares the names it knew then goes uncaught (docs/repo.md)."""
    planted = Planted()
    failing_ids = set(fail_to_pass or tests)
    files = {_split(n)[0] for n in failing_ids}
    by_file: dict[str, list[Named]] = {}
    for node_id in dict.fromkeys((*tests, *failing_ids)):
        path, classes, func, case = _split(node_id)
        if func and path in files:
            by_file.setdefault(path, []).append((classes, func, case, node_id in failing_ids))
    names: dict[tuple[str, tuple[str, ...], str, bool], str] = {}
    for path, named in by_file.items():
        planted_names = _plant_file(copy, path, named, rng, planted, rename)
        names.update({(path, *key): name for key, name in planted_names.items()})
    for node_id in tests:
        path, classes, func, params = _split(node_id)
        fresh = names.get((path, classes, func, node_id in failing_ids))
        planted.run_ids[node_id] = "::".join((path, *classes, fresh)) + params if fresh else node_id
    if not planted.canaries:
        planted.canaries.append(_plain_canary(copy, tests[0], rng))
    failing: dict[str, set[str]] = {}
    for node_id in fail_to_pass:
        path, classes, func, case = _split(node_id)
        failing.setdefault("::".join((path, *classes, func)), set()).add(case)
    for canary, real in planted.copied.items():
        cases = failing.get(real, {""})
        if canary not in planted.cases:  # a changed case's id changed with its value (set when planted)
            planted.cases[canary] = () if "" in cases else tuple(sorted(cases))
    return planted


def _plain_canary(copy: Path, node_id: str, rng: random.Random) -> str:
    """A failing module-level test appended to `node_id`'s module (the fallback when no copy was made)."""
    path, _, func, _ = _split(node_id)
    target = copy / path
    text = target.read_text(errors="replace") if target.is_file() else ""
    base = (func or "test_behaviour").removesuffix("_")
    name = next(f"{base}_{s}" for s in _shuffled(rng) if f"def {base}_{s}(" not in text)
    text = text if text.endswith("\n") or not text else text + "\n"
    text += f"\n\ndef {name}():\n    {_false_assertion(rng)}\n"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return f"{path}::{name}"
