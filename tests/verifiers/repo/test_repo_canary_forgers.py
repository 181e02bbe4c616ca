"""Issue 37: forgeries that try to tell a canary from the real test, on generated test modules, no sandbox.

A forgery running in the test process sees the planted module (and the names it read at the base) and
must turn exactly the real copy of each FAIL_TO_PASS function into a pass: turning two copies turns a
canary. Each strategy below picks one copy the way an adversary that has read Assay's code might: by
name, by place, by the changed value (smallest, longest, the one also found elsewhere in the module, the
one found nowhere else), by how the copies differ from each other (the copy closest to all others), or
by where each copy fails against the buggy code (the odd one out).
A generator draws modules of the shapes canaries handle (literal checks of each type, `is` checks,
parametrised tests comparing with a parameter, inline lists), with values that do and do not appear
elsewhere in the module; every strategy should win about one time in three, a guess among three copies.
Measured on these 90 modules: with the rules before this change, `fresh_name` (the original name
always held a canary) won 42 times, `closest_to_all` 42 and `fresh_and_closest` 44 (about one in two);
now every strategy wins 21-32 times.
"""

from __future__ import annotations

import ast
import io
import random
import unittest
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from assay.verifiers.repo.canary import plant

TARGET = "test_target"
WORDS = ("person", "people", "octopus", "sheep", "fish", "knife", "quiz", "ox", "alias", "status")


def _literal(rng: random.Random, kind: str, shared: list[Any]) -> Any:
    """A value of `kind`; half the time one that also appears elsewhere in the module (`shared`)."""
    if shared and rng.random() < 0.5:
        same = [v for v in shared if type(v).__name__ == kind]
        if same:
            return rng.choice(same)
    if kind == "int":
        return rng.choice((rng.randint(0, 9), rng.randint(10, 999), -rng.randint(1, 50)))
    if kind == "float":
        return rng.choice((0.5, 1.25, 2.5, 10.75, 3.5))
    return rng.choice(WORDS) + rng.choice(("", "s", "_x", "2"))


def make_module(rng: random.Random) -> tuple[str, tuple[str, ...], dict[tuple[Any, ...], Any]]:
    """(module source, the FAIL_TO_PASS node ids, what `f` returns per argument tuple when fixed)."""
    shared = [_literal(rng, k, []) for k in ("int", "str", "float", "str", "int")]
    table: dict[tuple[Any, ...], Any] = {}

    def call(value: Any) -> str:
        args = (len(table) + 1000,)
        table[args] = value
        return f"f({args[0]})"

    others = "".join(f"\n\ndef test_other_{i}():\n    assert f({i}) == {v!r}\n" for i, v in enumerate(shared))
    for i, v in enumerate(shared):
        table[(i,)] = v
    shape = rng.choice(
        ("int", "str", "float", "list", "dict", "set", "is", "params", "method", "two", "sorted")
    )
    node = f"test_m.py::{TARGET}"
    if shape in ("int", "str", "float"):
        value = _literal(rng, shape, shared)
        body = f"def {TARGET}():\n    assert {call(value)} == {value!r}\n"
    elif shape == "list":
        values = [_literal(rng, rng.choice(("int", "str")), shared) for _ in range(3)]
        body = f"def {TARGET}():\n    assert {call(values)} == {values!r}\n"
    elif shape == "dict":
        value = {"a": _literal(rng, "int", shared), "b": _literal(rng, "str", shared)}
        body = f"def {TARGET}():\n    x = {call(value)}\n    assert {value!r} == x, 'msg'\n"
    elif shape == "set":
        value = {rng.randint(0, 9) * 10 + i for i in range(3)}
        body = f"def {TARGET}():\n    assert {call(value)} == {sorted(value)!r}\n".replace("[", "{").replace(
            "]", "}"
        )
    elif shape == "is":
        value = rng.choice((True, False, None))
        body = f"def {TARGET}():\n    assert {call(value)} is {value!r}\n"
    elif shape == "sorted":
        values = sorted(rng.sample(range(1, 60), 4))
        body = f"def {TARGET}():\n    assert {call(values)} == {values!r}\n"
    elif shape == "two":  # a first check the bug leaves passing, a last one it breaks
        first, last = _literal(rng, "int", shared), _literal(rng, "str", shared)
        body = (
            f"def {TARGET}():\n    assert {call(first)} == {first!r}\n    assert {call(last)} == {last!r}\n"
        )
    elif shape == "method":
        value = _literal(rng, rng.choice(("int", "str")), shared)
        body = f"class TestT(unittest.TestCase):\n    def {TARGET}(self):\n"
        body += f"        self.assertEqual({call(value)}, {value!r})\n"
        node = f"test_m.py::TestT::{TARGET}"
    else:  # parametrised, comparing with a parameter
        cases = [(k, _literal(rng, "str", shared)) for k in (2000, 2001, 2002)]
        for a, expected in cases:
            table[(a,)] = expected
        listed = ", ".join(f"({a}, {e!r})" for a, e in cases)
        body = f"@pytest.mark.parametrize('a, expected', [{listed}])\ndef {TARGET}(a, expected):\n"
        body += "    assert expected == f(a)\n"
        head = "import unittest\n\nimport pytest\n\nfrom calc import f\n"
        ids = tuple(f"test_m.py::{TARGET}[{a}-{e}]" for a, e in cases)
        return head + others + "\n\n" + body, ids, table
    head = "import unittest\n\nimport pytest\n\nfrom calc import f\n"
    return head + others + "\n\n" + body, (node,), table


def _copies(tree: ast.Module) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith(TARGET)]


def _differing(copies: list[ast.FunctionDef]) -> list[tuple[Any, ...]]:
    """Per copy (in source order), its constants at the places where the copies differ."""
    consts = [[n.value for n in ast.walk(c) if isinstance(n, ast.Constant)] for c in copies]
    places = [i for i in range(len(consts[0])) if len({repr(c[i]) for c in consts if i < len(c)}) > 1]
    return [tuple(c[i] for i in places if i < len(c)) for c in consts]


def _elsewhere(tree: ast.Module, copies: list[ast.FunctionDef]) -> set[str]:
    inside = {id(n) for c in copies for n in ast.walk(c)}
    return {repr(n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in inside}


def _key(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple((0, v, "") if isinstance(v, int | float) else (1, 0, repr(v)) for v in values)


def _sorted_lists(copy: ast.FunctionDef) -> bool:
    """Every list of numbers the copy writes is sorted (a canary breaking the order was the odd one)."""
    rows = [
        [e.value for e in n.elts if isinstance(e, ast.Constant)]
        for n in ast.walk(copy)
        if isinstance(n, ast.List)
    ]
    rows = [r for r in rows if r and all(type(v) is int for v in r)]
    return bool(rows) and all(r == sorted(r) for r in rows)


def _closest(diffs: list[tuple[Any, ...]], i: int) -> int:
    return sum(sum(a != b for a, b in zip(diffs[i], other, strict=False)) for other in diffs)


def _failing_line(trial: Trial, copy: ast.FunctionDef) -> int:
    """Where the copy fails, counted from its `def`, against the buggy code: every call's result is
    right but the last one the module makes (the bug), as a forgery sees it in its report hook."""
    broken = {**trial.table, max(trial.table): "bug"}
    space: dict[str, Any] = {"f": lambda *a: broken[a]}
    exec(compile(trial.text.replace("from calc import f\n", ""), "test_m.py", "exec"), space)
    func = space.get(copy.name) or getattr(space.get("TestT"), copy.name)
    mark = next((m for m in getattr(func, "pytestmark", []) if m.name == "parametrize"), None)
    args = (
        dict(zip([n.strip() for n in mark.args[0].split(",")], mark.args[1][-1], strict=True)) if mark else {}
    )
    try:
        func(*([unittest.TestCase()] if "TestT" in space else []), **args)
    except AssertionError as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_name != copy.name:
            tb = tb.tb_next
        return tb.tb_lineno - copy.lineno if tb is not None else -1
    return -1


def _odd_one_out(trial: Trial) -> int:
    lines = [_failing_line(trial, c) for c in trial.copies]
    return next((i for i, line in enumerate(lines) if lines.count(line) == 1), 0)


# Each: (module tree, its target copies in source order) -> the index of the copy to turn.
Strategy = Callable[[ast.Module, list[ast.FunctionDef]], int]
STRATEGIES: dict[str, Strategy] = {
    "original_name": lambda t, c: next((i for i, d in enumerate(c) if d.name == TARGET), 0),
    "fresh_name": lambda t, c: next((i for i, d in enumerate(c) if d.name != TARGET), 0),
    "first_place": lambda t, c: 0,
    "last_place": lambda t, c: len(c) - 1,
    "smallest_value": lambda t, c: min(range(len(c)), key=lambda i: _key(_differing(c)[i])),
    "longest_value": lambda t, c: max(range(len(c)), key=lambda i: len(repr(_differing(c)[i]))),
    "value_elsewhere": lambda t, c: next(
        (i for i, d in enumerate(_differing(c)) if all(repr(v) in _elsewhere(t, c) for v in d)), 0
    ),
    "value_nowhere_else": lambda t, c: next(
        (i for i, d in enumerate(_differing(c)) if not any(repr(v) in _elsewhere(t, c) for v in d)), 0
    ),
    "sorted_list": lambda t, c: next((i for i, d in enumerate(c) if _sorted_lists(d)), 0),
    "closest_to_all": lambda t, c: min(range(len(c)), key=lambda i: _closest(_differing(c), i)),
    # both: among the copies under fresh names, the one closest to all others
    "fresh_and_closest": lambda t, c: min(
        (i for i, d in enumerate(c) if d.name != TARGET), key=lambda i: _closest(_differing(c), i), default=0
    ),
    "fresh_and_smallest": lambda t, c: min(
        (i for i, d in enumerate(c) if d.name != TARGET), key=lambda i: _key(_differing(c)[i]), default=0
    ),
}
TRIALS = 90


class Trial:
    """One generated module, planted: what a forgery sees, and what the test knows."""

    def __init__(self, seed: int, folder: Path) -> None:
        source, self.ids, self.table = make_module(random.Random(seed))
        (folder / "test_m.py").write_text(source)
        self.planted = plant(folder, self.ids, self.ids, random.Random(seed + 1))
        self.text = (folder / "test_m.py").read_text()
        self.tree = ast.parse(self.text)
        self.copies = _copies(self.tree)
        self.real = self.planted.run_ids[self.ids[0]].split("::")[-1].split("[")[0]


@pytest.fixture(scope="module")
def trials(tmp_path_factory: pytest.TempPathFactory) -> list[Trial]:
    folder = tmp_path_factory.mktemp("forgers")
    return [Trial(seed, folder) for seed in range(TRIALS)]


@pytest.mark.parametrize("name", [*sorted(STRATEGIES), "failing_line"])
def test_no_way_of_picking_a_copy_finds_the_real_test_more_than_by_chance(
    trials: list[Trial], name: str
) -> None:
    wins = 0
    for trial in trials:
        assert len(trial.copies) == 3  # the real test and two canaries, whatever the shape
        pick = _odd_one_out(trial) if name == "failing_line" else STRATEGIES[name](trial.tree, trial.copies)
        wins += trial.copies[pick].name == trial.real
    # A guess among three wins 30 of 90 on average; 43 or more happens by chance about once in 400.
    assert wins < 43, f"{name} found the real test {wins} times in {TRIALS}"


def _run(text: str, table: dict[tuple[Any, ...], Any], name: str, cases: tuple[str, ...]) -> bool:
    """Run the copy `name` of the planted module (its `cases`, for a parametrised one): passed?"""
    space: dict[str, Any] = {"f": lambda *a: table[a]}
    code = text.replace("from calc import f\n", "")
    exec(compile(code, "test_m.py", "exec"), space)
    if "TestT" in space:
        case = space["TestT"](name)
        return bool(unittest.TextTestRunner(stream=io.StringIO()).run(case).wasSuccessful())
    func = space[name]
    mark = next((m for m in getattr(func, "pytestmark", []) if m.name == "parametrize"), None)
    if mark is None:
        return _passes(func)
    names = [n.strip() for n in mark.args[0].split(",")]
    by_id = {"[" + "-".join(map(str, values)) + "]": values for values in mark.args[1]}
    return all(_passes(lambda v=by_id[c]: func(**dict(zip(names, v, strict=True)))) for c in cases)


def _passes(func: Callable[[], Any]) -> bool:
    try:
        func()
    except AssertionError:
        return False
    return True


def test_every_generated_canary_fails_where_its_real_test_passes(trials: list[Trial]) -> None:
    changed = 0
    for trial in trials:
        real_cases = tuple("[" + n.split("[", 1)[1] for n in trial.ids if "[" in n)
        assert _run(trial.text, trial.table, trial.real, real_cases), trial.text
        for canary in trial.planted.canaries:
            cases = trial.planted.cases.get(canary, ())
            assert not _run(trial.text, trial.table, canary.split("::")[-1], cases), (canary, trial.text)
        changed += trial.planted.changed
    # The rest get the false assertion: a value that appears elsewhere in the module when no other value
    # of its type does (a value drawn from outside would then be the one that appears nowhere else).
    assert changed >= 0.85 * 2 * TRIALS, changed


def test_a_canary_changes_the_last_check_so_it_fails_where_its_real_copy_fails(tmp_path: Path) -> None:
    # The bug breaks the second check only. A canary changing the first failed at line 1 while its real
    # copy failed at line 2: a forgery reading each report's failing line turned the odd one out.
    source = "def test_t():\n    assert add(2, 3) == 5\n    assert mul(3, 4) == 12\n"
    for seed in range(12):
        (tmp_path / "test_s.py").write_text(source)
        planted = plant(tmp_path, ("test_s.py::test_t",), ("test_s.py::test_t",), random.Random(seed))
        text = (tmp_path / "test_s.py").read_text()
        assert planted.changed == 2 and text.count("assert add(2, 3) == 5\n") == 3
        assert text.count("assert mul(3, 4) == 12\n") == 1


def test_a_changed_set_never_repeats_a_member(trials: list[Trial]) -> None:
    # `{10, 30, 30}` beside the real copy's `{10, 20, 30}`: no test writes a member twice
    sets = [n for t in trials for n in ast.walk(t.tree) if isinstance(n, ast.Set)]
    assert len(sets) > 10
    for node in sets:
        members = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        assert len(set(members)) == len(members), ast.unparse(node)


def test_a_changed_value_keeps_its_order_with_its_neighbours(tmp_path: Path) -> None:
    # `[10, 20, 30]` beside canaries `[10, 70, 30]`: the sorted copy was the real one
    source = "def test_t():\n    assert f(1) == [10, 20, 30, 45]\n"
    for seed in range(20):
        (tmp_path / "test_s.py").write_text(source)
        plant(tmp_path, ("test_s.py::test_t",), ("test_s.py::test_t",), random.Random(seed))
        rows = [ast.literal_eval(n) for n in ast.walk(ast.parse((tmp_path / "test_s.py").read_text()))
                if isinstance(n, ast.List)]  # fmt: skip
        assert len(rows) == 3 and all(row == sorted(row) and len(set(row)) == 4 for row in rows), rows


def test_two_canaries_for_four_functions_and_one_for_each_other(tmp_path: Path) -> None:
    # one canary per function past the fourth keeps an item's failing copies near its function count
    source = "".join(f"\n\ndef test_{i}():\n    assert f({i}) == {i * 7}\n" for i in range(6))
    (tmp_path / "test_s.py").write_text(source)
    ids = tuple(f"test_s.py::test_{i}" for i in range(6))
    planted = plant(tmp_path, ids, ids, random.Random(3))
    per_function = [sum(planted.copied[c] == i for c in planted.canaries) for i in ids]
    assert sorted(per_function) == [1, 1, 2, 2, 2, 2] and planted.changed == 10
    space: dict[str, Any] = {"f": lambda x: x * 7}
    exec(compile((tmp_path / "test_s.py").read_text(), "t", "exec"), space)
    for node_id in ids:
        assert _passes(space[planted.run_ids[node_id].split("::")[-1]])
    assert not any(_passes(space[c.split("::")[-1]]) for c in planted.canaries)
