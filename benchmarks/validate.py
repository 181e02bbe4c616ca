"""Task validation, measured: planted defects found, clean tasks kept, and the cost against one scoring.

    python benchmarks/validate.py defects [--n 300] [--seed 0]   # mixed set with planted defects
    python benchmarks/validate.py speed [--n 10000]               # validate vs score once, same tasks

`defects`: `make_task_set` below writes a mixed math/code/SQL set and plants defects in some tasks. It
knows nothing of the checks: each planted task says only what is wrong with it in plain terms (its
`defect`), and a defect counts as reported when the task's report lists any problem at all. Printed: per
defect kind, reported / planted; clean tasks rejected (valid false) and clean tasks with a warning.

`speed`: N generated math tasks, scored once with a realistic response each (the cost a trainer pays per
sample), then validated (3-4 probes per task plus the prompt checks); the ratio is the target (<= 2x).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

from assay.engine.scoring import Engine
from assay.settings import Settings
from assay.validate import validate


def _math_task(rng: random.Random, i: int) -> tuple[dict[str, Any], Fraction]:
    a, b = rng.randint(2, 999), rng.randint(2, 99)
    op = rng.choice("+-*/")
    value = {"+": Fraction(a + b), "-": Fraction(a - b), "*": Fraction(a * b), "/": Fraction(a, b)}[op]
    prompt = rng.choice(["What is {a} {op} {b}?", "Compute ${a} {op} {b}$.", "Evaluate {a}{op}{b}."])
    gold = str(value) if value.denominator == 1 else f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
    return {
        "id": f"math-{i}",
        "task": "math",
        "prompt": prompt.format(a=a, op=op, b=b),
        "reference": gold,
    }, value


def _code_task(rng: random.Random, i: int) -> dict[str, Any]:
    k, c = rng.randint(2, 9), rng.randint(-20, 20)
    xs = rng.sample(range(-50, 50), 4)
    return {
        "id": f"code-{i}",
        "task": "code",
        "prompt": f"Read an integer x and print {k}*x + ({c}).",
        "reference": f"x = int(input())\nprint({k} * x + ({c}))",
        "tests": [{"stdin": str(x), "stdout": str(k * x + c)} for x in xs],
    }


def make_database(directory: Path, rng: random.Random) -> None:
    """Scores with deliberate ties (several people share a score) and unique names and ids."""
    with sqlite3.connect(directory / "club.sqlite") as db:
        db.execute(
            "CREATE TABLE members (id INTEGER PRIMARY KEY, name TEXT UNIQUE, score INTEGER, city TEXT)"
        )
        rows = [
            (i, f"m{i:03d}", rng.choice([10, 20, 20, 30, 40, 40, 50]), rng.choice("ABC")) for i in range(60)
        ]
        db.executemany("INSERT INTO members VALUES (?, ?, ?, ?)", rows)


_SQL = [
    ("How many members live in city {c}?", "SELECT count(*) FROM members WHERE city = '{c}'"),
    ("List members scoring at least {s}, by id.", "SELECT name FROM members WHERE score >= {s} ORDER BY id"),
    ("Best score per city (question {i}).", "SELECT city, max(score) FROM members GROUP BY city"),
    ("The {n} best members, ties by id.", "SELECT name FROM members ORDER BY score DESC, id LIMIT {n}"),
]


def _sql_task(rng: random.Random, i: int) -> dict[str, Any]:
    prompt, gold = rng.choice(_SQL)
    values = {"c": rng.choice("ABC"), "s": rng.choice([20, 30, 40]), "n": rng.randint(1, 5), "i": i}
    return {
        "id": f"sql-{i}",
        "task": "sql",
        "prompt": f"Task {i}. " + prompt.format(**values),
        "db_id": "club",
        "reference": gold.format(**values),
    }


def _plant(rng: random.Random, task: dict[str, Any], value: Fraction | None) -> tuple[dict[str, Any], str]:
    """A copy of a clean task with one thing wrong, and what is wrong in words."""
    t = json.loads(json.dumps(task))
    kind = t["task"]
    if kind == "math":
        choice = rng.choice(["wrong gold", "answer in prompt"])
        if choice == "wrong gold":  # a reference that cannot be any answer: cut short or prose
            t["reference"] = rng.choice(
                [t["reference"][:-1] if "{" in t["reference"] else "\\frac{1}{", "see solution"]
            )
        else:
            hint = rng.choice(["The answer is {v}.", "(Hint: it equals {v})", "Answer: {v}"])
            t["prompt"] += " " + hint.format(v=t["reference"])
        return t, choice
    if kind == "code":
        choice = rng.choice(["wrong gold", "non-deterministic test", "empty answer rewarded"])
        if choice == "wrong gold":
            t["tests"][rng.randrange(len(t["tests"]))]["stdout"] += "1"
        elif choice == "non-deterministic test":
            t["reference"] = "import os\nx = int(input())\nprint(x if os.urandom(1)[0] % 2 else -x)"
            t["tests"] = [{"stdin": "7", "stdout": "7"}] * 5
        else:
            t["tests"] = [{"stdin": s["stdin"], "stdout": ""} for s in t["tests"]]
            t["reference"] = "pass"
        return t, choice
    choice = rng.choice(["ties-dependent gold", "empty answer rewarded", "wrong gold"])
    if choice == "ties-dependent gold":
        t["reference"] = f"SELECT name FROM members ORDER BY score DESC LIMIT {rng.randint(1, 3)}"
    elif choice == "empty answer rewarded":
        t["reference"] = "SELECT name FROM members WHERE score > 1000"
    else:
        t["reference"] = "SELECT nmae FROM members"
    return t, choice


def make_task_set(n: int, seed: int) -> list[tuple[dict[str, Any], str | None]]:
    """(task, defect or None): about a third planted, plus duplicates of clean tasks."""
    rng = random.Random(seed)
    out: list[tuple[dict[str, Any], str | None]] = []
    for i in range(n):
        kind = rng.choice(["math", "math", "code", "sql"])
        value = None
        if kind == "math":
            task, value = _math_task(rng, i)
        else:
            task = _code_task(rng, i) if kind == "code" else _sql_task(rng, i)
        if rng.random() < 0.3:
            planted, defect = _plant(rng, task, value)
            planted["id"] += "-planted"
            out.append((planted, defect))
        else:
            out.append((task, None))
    clean = [i for i, (_, d) in enumerate(out) if d is None]
    for at in sorted(rng.sample(clean, max(1, n // 30)), reverse=True):
        copy = dict(out[at][0], id=out[at][0]["id"] + "-copy")
        out.insert(rng.randrange(at + 1, len(out) + 1), (copy, "duplicate"))  # after the original
    return out


def defects(n: int, seed: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        make_database(Path(tmp), random.Random(seed))
        labelled = make_task_set(n, seed)
        with Engine(Settings(sql={"databases": Path(tmp)})) as engine:
            start = time.perf_counter()
            reports = validate([t for t, _ in labelled], engine)
            took = time.perf_counter() - start
    planted: Counter[str] = Counter()
    found: Counter[str] = Counter()
    rejected_clean, warned_clean, clean = [], 0, 0
    missed: list[tuple[str, dict[str, Any]]] = []
    for (task, defect), report in zip(labelled, reports, strict=True):
        if defect is None:
            clean += 1
            if not report.valid:
                rejected_clean.append((task["id"], [p.reason for p in report.problems]))
            warned_clean += bool(report.problems) and report.valid
        else:
            planted[defect] += 1
            found[defect] += bool(report.problems)
            if not report.problems:
                missed.append((defect, task))
    print(f"{len(labelled)} tasks ({clean} clean), validated in {took:.1f} s")
    print(f"{'defect':<26} reported / planted")
    for defect in sorted(planted):
        print(f"{defect:<26} {found[defect]:>4} / {planted[defect]}")
    print(
        f"clean tasks rejected: {len(rejected_clean)} / {clean}; clean tasks with a warning: {warned_clean}"
    )
    for ident, reasons in rejected_clean[:10]:
        print(f"  rejected clean {ident}: {reasons}")
    for defect, task in missed[:10]:
        print(f"  missed {defect}: {json.dumps(task)[:200]}")


def speed(n: int, seed: int) -> None:
    rng = random.Random(seed)
    tasks = []
    items = []
    for i in range(n):
        task, value = _math_task(rng, i)
        tasks.append(task)
        answer = (
            str(value) if value.denominator == 1 else f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
        )
        work = (
            f"We compute step by step: {task['prompt']} gives {answer}. So the answer is \\boxed{{{answer}}}."
        )
        items.append(
            {
                **task,
                "response": work if rng.random() < 0.7 else work.replace(answer, str(rng.randint(1, 99))),
            }
        )
    with Engine(Settings()) as engine:
        engine.score(items[:64])  # warm the workers
        start = time.perf_counter()
        engine.score(items)
        scored = time.perf_counter() - start
        start = time.perf_counter()
        reports = validate(tasks, engine)
        validated = time.perf_counter() - start
    invalid = sum(not r.valid for r in reports)
    print(
        f"{n} math tasks: scored once in {scored:.1f} s, validated in {validated:.1f} s "
        f"({validated / scored:.2f}x; target <= 2x); {invalid} reported invalid"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("defects", "speed"))
    parser.add_argument("--n", type=int)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.mode == "defects":
        defects(args.n or 300, args.seed)
    else:
        speed(args.n or 10_000, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
