"""`validate` on real scorers: each planted defect is named by its check; clean tasks stay valid.

The clean math tasks are generated (random operands, the gold computed, rendered as integers, fractions,
decimals or LaTeX), so the checks are tried on tasks no one wrote to pass them.
"""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest

from assay.engine.scoring import Engine
from assay.validate import validate
from assay.validate.report import BadRow, TaskReport
from assay.validate.validator import PACK

pytestmark = pytest.mark.slow


def _checks(report: TaskReport) -> set[str]:
    return {p.check for p in report.problems if p.severity == "error"}


def _one(engine: Engine, task: dict[str, Any], **kwargs: Any) -> TaskReport:
    return validate([task], engine, **kwargs)[0]


def _gold(value: Fraction, style: int) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    return [f"\\frac{{{value.numerator}}}{{{value.denominator}}}", f"{value.numerator}/{value.denominator}"][
        style % 2
    ]


def clean_math_tasks(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    tasks = []
    for i in range(n):
        a, b = rng.randint(2, 999), rng.randint(2, 99)
        op = rng.choice(["+", "-", "*", "/"])
        value = {"+": Fraction(a + b), "-": Fraction(a - b), "*": Fraction(a * b), "/": Fraction(a, b)}[op]
        words = rng.choice(
            ["What is {a} {op} {b}?", "Compute ${a} {op} {b}$.", "Evaluate {a}{op}{b}, simplified."]
        )
        tasks.append(
            {
                "id": f"m{i}",
                "task": "math",
                "prompt": words.format(a=a, op=op, b=b),
                "reference": _gold(value, i),
            }
        )
    return tasks


def test_generated_clean_math_tasks_are_all_valid(engine: Engine) -> None:
    reports = validate(clean_math_tasks(120, seed=7), engine)
    rejected = [(r.id, r.problems) for r in reports if not r.valid]
    assert rejected == []


def test_packed_tasks_keep_their_own_verdicts(engine: Engine) -> None:
    """Probes of consecutive tasks share engine groups (validator.PACK): a broken task spoils only its
    own report, wherever it falls in a pack, and every clean task around it stays valid."""
    tasks = clean_math_tasks(3 * PACK // 2, seed=11)
    broken = set(range(0, len(tasks), 7))
    for i in broken:
        tasks[i]["reference"] = "\\frac{1}{"  # cut short: cannot be any answer
    reports = validate(tasks, engine)
    assert [r.id for r in reports] == [t["id"] for t in tasks]
    assert {i for i, r in enumerate(reports) if not r.valid} == broken
    assert all("reference_unusable" in _checks(reports[i]) for i in broken)


@pytest.mark.parametrize(
    ("task", "check"),
    [
        ({"prompt": "Compute 1/2 + 1/3.", "reference": "\\frac{5}{"}, "reference_unusable"),
        ({"prompt": "What is 6 times 7? The answer is 42.", "reference": "42"}, "answer_in_prompt"),
        ({"prompt": "Say nothing.", "reference": ""}, "reference_unusable"),
    ],
)
def test_a_broken_math_task_is_named(engine: Engine, task: dict[str, Any], check: str) -> None:
    report = _one(engine, {"task": "math", **task})
    assert check in _checks(report) and not report.valid


def test_a_task_that_is_not_an_item_is_malformed_and_keeps_its_place(engine: Engine) -> None:
    reports = validate(
        [
            {"task": "math", "prompt": "1+1?", "reference": "2"},
            {"task": "mth", "reference": "2"},
            {"task": "math", "refrence": "2"},
            "not an object",
            BadRow("line-5", "line 5: not valid JSON"),
        ],
        engine,
    )
    assert [r.valid for r in reports] == [True, False, False, False, False]
    assert "did you mean" in reports[1].problems[0].reason
    assert "refrence" in reports[2].problems[0].reason
    assert reports[4].id == "line-5"


DOUBLE = {
    "task": "code",
    "prompt": "Print twice the input.",
    "tests": [{"stdin": "2", "stdout": "4"}, {"stdin": "5", "stdout": "10"}],
}


def test_a_code_reference_that_passes_deterministically_is_valid(engine: Engine) -> None:
    report = _one(engine, {**DOUBLE, "reference": "print(int(input()) * 2)"})
    assert report.valid, report.problems


def test_a_wrong_code_reference_is_rejected(engine: Engine) -> None:
    report = _one(engine, {**DOUBLE, "reference": "print(int(input()) * 3)"})
    assert _checks(report) == {"reference_rejected"}


def test_a_flaky_code_task_is_nondeterministic(engine: Engine) -> None:
    flaky = "import os\nprint(4 if os.urandom(1)[0] % 2 else 5)"
    tests = [{"stdin": "", "stdout": "4"}] * 6
    report = _one(engine, {"task": "code", "prompt": "?", "reference": flaky, "tests": tests}, repeats=4)
    assert "nondeterministic" in _checks(report)


def test_a_code_task_that_rewards_printing_nothing_is_caught(engine: Engine) -> None:
    task = {
        "task": "code",
        "prompt": "Print nothing.",
        "reference": "pass",
        "tests": [{"stdin": "1", "stdout": ""}],
    }
    assert _checks(_one(engine, task)) == {"trivial_rewarded"}


def test_a_call_test_that_expects_none_is_rewarded_for_a_stub(engine: Engine) -> None:
    task = {
        "task": "code",
        "prompt": "Return nothing.",
        "reference": "def f(x):\n    return None",
        "tests": [{"fn_name": "f", "args": [1], "expected": None}],
    }
    assert _checks(_one(engine, task)) == {"trivial_rewarded"}


def _sql(reference: str) -> dict[str, Any]:
    return {"task": "sql", "prompt": "?", "db_id": "people", "reference": reference}


@pytest.mark.parametrize(
    ("reference", "check"),
    [
        ("SELECT name FROM people ORDER BY age DESC LIMIT 1", "order_dependent"),  # Eli and Fay tie
        ("SELECT name FROM people LIMIT 2", "order_dependent"),
        ("SELECT id FROM scores ORDER BY points DESC LIMIT 2", "order_dependent"),  # 3 rows tie at 9
        ("SELECT name FROM people WHERE age > 100", "empty_result"),
        ("SELECT nme FROM people", "reference_unusable"),
        ("DELETE FROM people", "reference_unusable"),
    ],
)
def test_a_broken_sql_gold_is_named(engine: Engine, reference: str, check: str) -> None:
    assert check in _checks(_one(engine, _sql(reference)))


@pytest.mark.parametrize(
    "reference",
    [
        "SELECT name FROM people ORDER BY age DESC, name LIMIT 1",
        "SELECT name, age FROM people ORDER BY age",  # ties, but no cut: any tie order is accepted
        "SELECT count(*) FROM people WHERE age > 30",
        "SELECT points FROM scores ORDER BY points DESC LIMIT 2",  # tied rows, but the same values
        "SELECT id FROM scores ORDER BY points DESC, id LIMIT 2",
        "SELECT name FROM people WHERE age = (SELECT max(age) FROM people)",
    ],
)
def test_a_sound_sql_gold_is_valid(engine: Engine, reference: str) -> None:
    report = _one(engine, _sql(reference))
    assert report.valid, report.problems


def test_validation_leaves_the_database_as_it_was(engine: Engine, databases: Any) -> None:
    before = (databases / "people.sqlite").read_bytes()
    validate([_sql("SELECT name FROM people LIMIT 2")], engine)
    assert (databases / "people.sqlite").read_bytes() == before
