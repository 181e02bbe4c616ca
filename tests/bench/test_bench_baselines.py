"""The built-in baselines: math-verify as verl calls it, BIRD's set comparison, exact stdout."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from assay.bench.baselines import BirdSetBaseline, StdoutBaseline, load, math_verify_verl
from assay.bench.runner import call_baseline
from assay.settings import Settings

MATH_PAIRS = [
    ("so the answer is $\\boxed{\\frac{1}{2}}$", "0.5", True),
    ("The answer is \\boxed{3}", "4", False),
    ("no answer here at all", "4", False),
    ("$\\boxed{x^2+2x+1}$", "(x+1)^2", True),
]


@pytest.mark.parametrize(("response", "reference", "expected"), MATH_PAIRS)
def test_math_verify_verl_in_the_main_thread(response: str, reference: str, expected: bool) -> None:
    assert math_verify_verl(response, reference) is expected


def test_math_verify_verl_off_the_main_thread_gives_the_same_verdicts() -> None:
    # verl's own call fails off the main thread (SIGALRM) and its `except Exception` would make it 0.
    seen: list[bool] = []
    worker = threading.Thread(target=lambda: seen.extend(math_verify_verl(r, g) for r, g, _ in MATH_PAIRS))
    worker.start()
    worker.join()
    assert seen == [expected for _, _, expected in MATH_PAIRS]


def test_math_verify_baseline_without_a_reference_is_an_error() -> None:
    outcome = call_baseline(load("math-verify", Settings()), {"task": "math", "response": "\\boxed{1}"})
    assert (outcome.status, outcome.accepted) == ("error", None)
    assert "reference" in outcome.reason


# -- sql ----------------------------------------------------------------------------------------------
@pytest.fixture
def databases(tmp_path: Path) -> Path:
    folder = tmp_path / "dbs"
    (folder / "shop").mkdir(parents=True)  # BIRD's <db_id>/<db_id>.sqlite layout
    with sqlite3.connect(folder / "shop" / "shop.sqlite") as conn:
        conn.execute("CREATE TABLE items (id INTEGER, name TEXT, price REAL)")
        conn.executemany(
            "INSERT INTO items VALUES (?, ?, ?)", [(1, "pen", 2.0), (2, "ink", 5.0), (3, "pen", 2.5)]
        )
    conn.close()
    return folder


def _sql(response: str, reference: str) -> dict[str, Any]:
    return {"task": "sql", "db_id": "shop", "response": f"```sql\n{response}\n```", "reference": reference}


def test_sql_set_accepts_an_equivalent_query(databases: Path) -> None:
    baseline = BirdSetBaseline(databases)
    assert baseline(_sql("SELECT name FROM items WHERE price < 3", "SELECT name FROM items WHERE id <> 2"))
    baseline.close()


def test_sql_set_rejects_different_rows_and_failing_predictions(databases: Path) -> None:
    baseline = BirdSetBaseline(databases)
    assert not baseline(_sql("SELECT name FROM items", "SELECT name FROM items WHERE price > 3"))
    assert not baseline(_sql("SELECT nope FROM items", "SELECT name FROM items"))
    baseline.close()


def test_sql_set_ignores_duplicates_and_order_like_bird(databases: Path) -> None:
    # A known BIRD false positive: set() equality drops the duplicate "pen" and the ORDER BY.
    baseline = BirdSetBaseline(databases)
    assert baseline(_sql("SELECT DISTINCT name FROM items", "SELECT name FROM items ORDER BY name DESC"))
    baseline.close()


def test_sql_set_writes_go_to_a_copy_not_the_users_database(databases: Path) -> None:
    baseline = BirdSetBaseline(databases)
    baseline(_sql("DELETE FROM items", "SELECT 1"))
    baseline.close()
    with sqlite3.connect(databases / "shop" / "shop.sqlite") as conn:
        assert conn.execute("SELECT count(*) FROM items").fetchone() == (3,)
    conn.close()


def test_sql_set_unknown_database_is_an_error(databases: Path) -> None:
    item = {**_sql("SELECT 1", "SELECT 1"), "db_id": "nosuch"}
    outcome = call_baseline(BirdSetBaseline(databases), item)
    assert outcome.status == "error"
    assert "nosuch" in outcome.reason


# -- code ---------------------------------------------------------------------------------------------
def _fake_runner(language: str, program: str, stdin: bytes) -> bytes:
    # Stands in for the sandbox: "echo" repeats stdin, "echo-space" adds a trailing space.
    return stdin + (b" " if program == "echo-space" else b"")


def _code(program: str, tests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"task": "code", "language": "python", "response": f"```python\n{program}```", "tests": tests}


def test_stdout_baseline_needs_an_exact_match() -> None:
    baseline = StdoutBaseline(runner=_fake_runner)
    tests = [{"stdin": "1 2\n", "stdout": "1 2\n"}]
    assert baseline(_code("echo", tests))
    assert not baseline(_code("echo-space", tests))  # a trailing space fails: no normalisation


def test_stdout_baseline_refuses_call_based_tests() -> None:
    outcome = call_baseline(StdoutBaseline(runner=_fake_runner), _code("x", [{"fn_name": "f", "args": []}]))
    assert outcome.status == "error"
    assert "stdin/stdout" in outcome.reason


def test_plugin_baselines_load_by_module_and_function() -> None:
    assert load("bench_fakes:always_yes", Settings())({"response": "x"}) is True
    with pytest.raises(ValueError, match="cannot load"):
        load("bench_fakes:nosuch", Settings())


@pytest.mark.slow
def test_stdout_baseline_runs_programs_in_the_sandbox() -> None:
    from assay.sandbox import SandboxError
    from assay.settings import CodeSettings

    baseline = StdoutBaseline(code_settings=CodeSettings(slots=1))
    tests = [{"stdin": "1 2\n", "stdout": "3\n"}]
    try:
        right = baseline(_code("print(sum(map(int, input().split())))\n", tests))
    except SandboxError as exc:  # no bubblewrap on this machine
        pytest.skip(f"sandbox unavailable: {exc}")
    try:
        assert right
        assert not baseline(_code("print(sum(map(int, input().split())), end=' \\n')\n", tests))
    finally:
        baseline.close()


@pytest.mark.slow
def test_sql_bench_runs_assay_and_the_bird_baseline_on_the_same_items(
    databases: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from assay.bench.command import main

    monkeypatch.setenv("ASSAY_SQL_DATABASES", str(databases))
    lines = [
        {
            # A rewrite equivalent on any data (one that matched only on this data, such as `id <> 2`, is
            # now told apart on the perturbed copies the sql task builds).
            **_sql("SELECT name FROM items WHERE price < 3", "SELECT name FROM items WHERE NOT (3 <= price)"),
            "label": True,
        },
        {**_sql("SELECT DISTINCT name FROM items", "SELECT name FROM items"), "label": False},
    ]
    path = tmp_path / "sql.jsonl"
    path.write_text("".join(json.dumps({**line, "id": f"s{i}"}) + "\n" for i, line in enumerate(lines)))
    assert (
        main([str(path), "--task", "sql", "--out", str(tmp_path / "o"), "--no-progress", "--no-plots"]) == 0
    )
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert list(report["verifiers"]) == ["assay", "sql-set"]
    # set() equality drops the duplicate "pen": BIRD's known false positive. Assay counts rows.
    assert report["verifiers"]["sql-set"]["false_positives"] == ["s1"]
    assert report["verifiers"]["sql-set"]["false_negatives"] == []
    assert report["verifiers"]["assay"]["ok"] == 2
    assert (
        report["verifiers"]["assay"]["false_positives"],
        report["verifiers"]["assay"]["false_negatives"],
    ) == ([], [])
