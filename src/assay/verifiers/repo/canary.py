"""Canaries a change cannot tell from the task's tests (issue 37): drawn per item, inside the real modules.

Code that the tests import runs in the test process, so it can rewrite pytest's reports or wrap the
reporter before a record is signed; no signature stops that. What stops it paying is a test that must fail
and looks like the ones that count. Per item, for each FAIL_TO_PASS test function (the ones a forgery
must turn):

- the real test is renamed to a fresh name (`test_mul` -> `test_mul_basic`), drawn from the same list as
  the canaries' names;
- a canary takes its original name: a copy of the test's own source, same decorators and body, plus an
  assertion that is always false (placed last, or first where the body may return early);
- the first few also get a second canary under another fresh name;
- a parametrised canary runs the cases of the FAIL_TO_PASS ids it copies, not all of its cases: those
  are the ones a forgery must turn, and each has a canary twin with the same parameters (a change
  breaking 2 of 82 cases cost 330 failing canary cases before: most of a 0.5 s suite's time again).

A forgery that spares the names it knew at the base flips the canary holding the original name; one that
flips names it did not know flips the fresh-named canaries; one that flips every failure flips all of them.
Each way a canary passes and the verdict is 0. What it does not cover: a forgery that reads each test's
source and recognises the false assertion (docs/repo.md).
"""

from __future__ import annotations

import ast
import random
from dataclasses import dataclass, field
from pathlib import Path

_SUFFIXES = (
    "basic", "simple", "again", "edge", "empty", "default", "twice", "large", "small", "mixed",
    "other", "values", "case", "regression", "repeat", "more", "extra", "order", "nested", "single",
)  # fmt: skip
_MOST_EXTRA = 2  # second canaries (under fresh names), for the first functions


@dataclass
class Planted:
    """The run's names: `run_ids` maps a named test to its id in this run; `canaries` are the id prefixes
    (before any `[param]`) of the tests that must fail."""

    run_ids: dict[str, str] = field(default_factory=dict)
    canaries: list[str] = field(default_factory=list)
    extras: int = 0  # second canaries planted so far
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


Def = ast.FunctionDef | ast.AsyncFunctionDef


def _find(tree: ast.Module, classes: tuple[str, ...], func: str) -> Def | None:
    body: list[ast.stmt] = tree.body
    for name in classes:
        found = [n for n in body if isinstance(n, ast.ClassDef) and n.name == name]
        if not found:
            return None
        body = found[-1].body
    defs = [n for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == func]
    return defs[-1] if defs else None


def _may_return_early(node: ast.AST) -> bool:
    """A `return` or `yield` in the function's own scope: an appended assertion might never run."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, ast.Return | ast.Yield | ast.YieldFrom):
            return True
        if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(child))
    return False


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


def _copy(lines: list[str], node: Def, name: str, rng: random.Random) -> list[str]:
    """The function's source under `name`, with an always-false assertion added."""
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
    end = node.end_lineno or node.lineno
    source = lines[first:end]
    def_at = node.lineno - 1 - first
    source[def_at] = source[def_at].replace(f"def {node.name}(", f"def {name}(", 1)
    indent = " " * node.body[0].col_offset
    check = f"{indent}{_false_assertion(rng)}\n"
    if _may_return_early(node):
        at = node.body[0].lineno - 1 - first
        return [*source[:at], check, *source[at:]]
    last = source[-1] if source[-1].endswith("\n") else source[-1] + "\n"
    return [*source[:-1], last, check]


def _plant_file(
    copy: Path,
    path: str,
    funcs: dict[tuple[str, ...], set[str]],
    rng: random.Random,
    planted: Planted,
    rename: bool = True,
) -> dict[tuple[tuple[str, ...], str], str]:
    """Rename each function of `funcs` in `path`, plant its canaries; fresh names by (classes, func).
    Without `rename`, the real tests keep their names and the first canary takes a fresh one."""
    target = copy / path
    try:
        text = target.read_text()
        tree = ast.parse(text)
    except (OSError, SyntaxError, UnicodeError, ValueError):
        return {}
    lines = text.splitlines(keepends=True)
    taken = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    inserts: list[tuple[int, int, list[str]]] = []  # (after line, def line, new lines)
    renamed: dict[tuple[tuple[str, ...], str], str] = {}
    for classes, names in funcs.items():
        for func in sorted(names):
            node = _find(tree, classes, func)
            if (
                node is None
                or node.body[0].lineno == node.lineno
                or f"def {func}(" not in lines[node.lineno - 1]
            ):
                continue  # not found (inherited, generated) or a one-line def: left as it is
            fresh = [f"{func}_{s}" for s in _shuffled(rng) if f"{func}_{s}" not in taken]
            real, extra = fresh[0], fresh[1]
            taken.update((real, extra))
            prefix = "::".join((path, *classes))
            held = func if rename else real  # the name the first canary takes
            body = ["\n", *_copy(lines, node, held, rng)]
            planted.canaries.append(f"{prefix}::{held}")
            planted.copied[f"{prefix}::{held}"] = f"{prefix}::{func}"
            if planted.extras < _MOST_EXTRA:
                planted.extras += 1
                body += ["\n", *_copy(lines, node, extra, rng)]
                planted.canaries.append(f"{prefix}::{extra}")
                planted.copied[f"{prefix}::{extra}"] = f"{prefix}::{func}"
            if rename:
                renamed[(classes, func)] = real
                lines[node.lineno - 1] = lines[node.lineno - 1].replace(f"def {func}(", f"def {real}(", 1)
            inserts.append((node.end_lineno or node.lineno, node.lineno, body))
    for after, _, body in sorted(inserts, reverse=True):
        if not lines[after - 1].endswith("\n"):
            lines[after - 1] += "\n"
        lines[after:after] = body
    target.write_text("".join(lines))
    return renamed


def plant(
    copy: Path, tests: tuple[str, ...], fail_to_pass: tuple[str, ...], rng: random.Random, rename: bool = True
) -> Planted:
    """Rename the FAIL_TO_PASS test functions in the working copy and plant their canaries (see the module
    doc); where none can be planted, one plain failing test joins the first named test's module. Without
    `rename` (suites that key data by a test's name, such as snapshot tests) the canaries take fresh
    names only: a forgery that spares the names it knew then goes uncaught (docs/repo.md)."""
    planted = Planted()
    by_file: dict[str, dict[tuple[str, ...], set[str]]] = {}
    for node_id in fail_to_pass or tests:
        path, classes, func, _ = _split(node_id)
        if func:
            by_file.setdefault(path, {}).setdefault(classes, set()).add(func)
    renamed: dict[tuple[str, tuple[str, ...], str], str] = {}
    for path, funcs in by_file.items():
        for (classes, func), real in _plant_file(copy, path, funcs, rng, planted, rename).items():
            renamed[(path, classes, func)] = real
    for node_id in tests:
        path, classes, func, params = _split(node_id)
        fresh = renamed.get((path, classes, func))
        planted.run_ids[node_id] = "::".join((path, *classes, fresh)) + params if fresh else node_id
    if not planted.canaries:
        planted.canaries.append(_plain_canary(copy, tests[0], rng))
    failing: dict[str, set[str]] = {}
    for node_id in fail_to_pass:
        path, classes, func, case = _split(node_id)
        failing.setdefault("::".join((path, *classes, func)), set()).add(case)
    for canary, real in planted.copied.items():
        cases = failing.get(real, {""})
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
