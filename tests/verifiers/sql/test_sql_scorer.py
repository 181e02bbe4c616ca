"""The sql scorer's statuses, rewards, database layouts and details."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sql_helpers import load_cases

from assay.registry import Registry
from assay.settings import Settings, SqlSettings
from assay.types import Item, Result, Status
from assay.verifiers.sql import SqlScorer

STUDENTS = "SELECT name FROM students WHERE age > 20"


def score(
    scorer: SqlScorer, response: str, reference: str = STUDENTS, db_id: str = "school", **fields: Any
) -> Result:
    options = scorer.parse_options(fields.pop("options", {}))
    return scorer.score(
        Item(task="sql", response=response, reference=reference, db_id=db_id, **fields), options
    )


def test_registered_as_a_process_task() -> None:
    registry = Registry.from_settings(Settings())
    assert registry.lookup("sql") is SqlScorer and SqlScorer.runs_in == "process"


def test_unknown_db_id_is_invalid_with_a_suggestion(sql_scorer: SqlScorer) -> None:
    result = score(sql_scorer, "SELECT 1", db_id="schol")
    assert result.status is Status.INVALID and 'did you mean "school"' in result.reason


def test_missing_reference_or_db_id_is_invalid(sql_scorer: SqlScorer) -> None:
    assert score(sql_scorer, "SELECT 1", reference=" ").status is Status.INVALID
    assert score(sql_scorer, "SELECT 1", db_id="").status is Status.INVALID


def test_unknown_dialect_is_invalid(sql_scorer: SqlScorer) -> None:
    result = score(sql_scorer, "SELECT 1", dialect="mysq")
    assert result.status is Status.INVALID and 'did you mean "mysql"' in result.reason


@pytest.mark.parametrize(
    ("reference", "why"),
    [
        ("SELECT nme FROM students", "failed"),  # a broken gold is the item's problem, not the policy's
        ("DELETE FROM students", "not one read-only query"),
        ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c", "timeout"),
    ],
)
def test_broken_reference_is_invalid(sql_scorer: SqlScorer, reference: str, why: str) -> None:
    result = score(sql_scorer, "SELECT name FROM students", reference=reference)
    assert result.status is Status.INVALID and why in result.reason and result.reward is None


def test_correct_prediction_records_row_counts(sql_scorer: SqlScorer) -> None:
    result = score(sql_scorer, "```sql\nSELECT name FROM students WHERE age >= 21\n```")
    assert result.correct is True and result.extracted == "SELECT name FROM students WHERE age >= 21"
    main = result.details["instances"][0]
    assert main["instance"] == "main" and main["reference_rows"] == main["prediction_rows"] > 0
    assert result.details["engine"] == "sqlite" and result.details["order_enforced"] is False


@pytest.mark.parametrize(
    ("response", "binary", "graded"),
    [
        ("SELECT name FROM students WHERE age >= 21", 1.0, 1.0),
        ("SELECT name FROM students WHERE age >= 20", 0.0, 0.1),  # runs, wrong
        ("SELECT nme FROM students", 0.0, 0.0),  # does not run
        ("no SQL at all", 0.0, 0.0),
    ],
)
def test_graded_reward(sql_scorer: SqlScorer, response: str, binary: float, graded: float) -> None:
    assert score(sql_scorer, response).reward == binary
    result = score(sql_scorer, response, options={"reward": "graded"})
    assert result.reward == graded and result.correct is (binary == 1.0)  # correct stays the raw verdict


def test_order_option_overrides_the_gold(sql_scorer: SqlScorer) -> None:
    reversed_order = "SELECT name FROM students WHERE age > 20 ORDER BY id DESC"
    gold = "SELECT name FROM students WHERE age > 20 ORDER BY id"
    assert score(sql_scorer, reversed_order, reference=gold).correct is False
    assert score(sql_scorer, reversed_order, reference=gold, options={"order": "ignore"}).correct is True
    strict = score(
        sql_scorer, reversed_order, reference=STUDENTS + " ORDER BY id", options={"order": "strict"}
    )
    assert strict.correct is False


def test_alternates_catch_an_accidental_match(sql_scorer: SqlScorer) -> None:
    gold = "SELECT name FROM students ORDER BY gpa DESC LIMIT 1"
    guess = "SELECT name FROM students WHERE id = 1"
    caught = score(sql_scorer, guess, reference=gold)
    assert caught.correct is False and "alt1" in caught.reason
    assert [i["match"] for i in caught.details["instances"]] == [True, False]
    # Without alternates, the perturbed copies the scorer builds itself catch it too (issue 28) ...
    alone = score(sql_scorer, guess, reference=gold, options={"alternates": False})
    assert alone.correct is False and alone.details["data_check"]["status"] == "differs"
    # ... and with neither, the main instance alone is fooled.
    unchecked = {"alternates": False, "allow_constant": True}
    assert score(sql_scorer, guess, reference=gold, options=unchecked).correct is True


def test_engine_without_the_db_is_invalid(sql_scorer: SqlScorer) -> None:
    result = score(sql_scorer, "SELECT 1", options={"engine": "postgres"})
    assert result.status is Status.INVALID and "available on: duckdb, sqlite" in result.reason


def test_bird_layout_and_variants_directory(tmp_path: Path, sql_dir: Path) -> None:
    (tmp_path / "school").mkdir()
    shutil.copy(sql_dir / "school.sqlite", tmp_path / "school" / "school.sqlite")
    shutil.copy(sql_dir / "school.alt1.sqlite", tmp_path / "school" / "school_variant.sqlite")
    scorer = SqlScorer(Settings(sql=SqlSettings(databases=tmp_path)))
    result = score(
        scorer,
        "SELECT name FROM students WHERE id = 1",
        "SELECT name FROM students ORDER BY gpa DESC LIMIT 1",
    )
    assert [i["instance"] for i in result.details["instances"]] == ["main", "school_variant"]
    assert result.correct is False


def test_database_added_after_start_is_found(tmp_path: Path, sql_dir: Path) -> None:
    scorer = SqlScorer(Settings(sql=SqlSettings(databases=tmp_path)))
    assert score(scorer, "SELECT 1", db_id="shop").status is Status.INVALID
    shutil.copy(sql_dir / "shop.sqlite", tmp_path / "shop.sqlite")
    assert score(scorer, "SELECT 1", reference="SELECT 1", db_id="shop").correct is True


def test_unreadable_database_is_an_error_not_a_zero(tmp_path: Path) -> None:
    (tmp_path / "broken.sqlite").write_bytes(b"this is not a database" * 100)
    scorer = SqlScorer(Settings(sql=SqlSettings(databases=tmp_path)))
    result = score(scorer, "SELECT 1", reference="SELECT 1", db_id="broken")
    assert result.status is Status.ERROR and result.reward is None


def test_databases_directory_from_the_documented_variable(
    monkeypatch: pytest.MonkeyPatch, sql_dir: Path
) -> None:
    monkeypatch.setenv("ASSAY_SQL_DATABASES", str(sql_dir))
    assert Settings().sql.databases == sql_dir
    monkeypatch.setenv("ASSAY_SQL__DATABASES", "/elsewhere")
    assert Settings().sql.databases == Path("/elsewhere")


def test_prediction_timeout_is_the_policys_fault(sql_scorer: SqlScorer) -> None:
    runaway = "SELECT COUNT(*) FROM enrollments a, enrollments b, enrollments c, enrollments d"
    result = score(sql_scorer, runaway, reference="SELECT 1")
    assert result.status is Status.OK and result.reward == 0.0 and "timeout" in result.reason


def test_gold_result_is_reused_across_a_group(sql_scorer: SqlScorer) -> None:
    gold = "SELECT id FROM flights WHERE distance > 1500"
    first = score(sql_scorer, "SELECT id FROM flights WHERE distance > 1500", reference=gold, db_id="flights")
    assert first.correct is True
    assert any(key[2] == gold for key in sql_scorer._gold)


def test_reference_with_a_trailing_semicolon(sql_scorer: SqlScorer) -> None:
    assert score(sql_scorer, "SELECT name FROM students WHERE age >= 21", reference=STUDENTS + " ;\n").correct


# DuckDB builds its perturbed copies per gold: the sweep takes seconds, so it is in the slow tier.
@pytest.mark.parametrize("engine", ["sqlite", pytest.param("duckdb", marks=pytest.mark.slow)])
def test_every_reference_equals_itself(sql_scorer: SqlScorer, engine: str) -> None:
    for case in load_cases():
        options = {"engine": engine}
        result = score(sql_scorer, case["reference"], case["reference"], case["db_id"], options=options)
        assert result.correct is True, f"{case['id']}: {result.reason}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=200))
def test_scorer_is_total_on_any_response(sql_scorer: SqlScorer, response: str) -> None:
    result = score(sql_scorer, response)
    assert result.status is Status.OK and result.reward in {0.0, 1.0}


def test_no_databases_configured_says_how_to_configure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ASSAY_SQL_DATABASES", raising=False)
    result = score(SqlScorer(Settings(sql=SqlSettings(databases=None))), "SELECT 1")
    assert result.status is Status.INVALID and "ASSAY_SQL_DATABASES" in result.reason


def test_sql_too_deep_for_sqlglot_is_judged_by_the_engine(sql_scorer: SqlScorer) -> None:
    deep = "SELECT " + "(" * 3000 + "1" + ")" * 3000
    result = score(sql_scorer, deep, reference="SELECT 1")
    assert result.status is Status.OK and result.correct is False and "did not run" in result.reason
    shallow_enough = "SELECT " + "(" * 80 + "1" + ")" * 80  # too deep for sqlglot, fine for SQLite
    assert score(sql_scorer, shallow_enough, reference="SELECT 1").correct is True


TOP3 = "SELECT name, age FROM students ORDER BY age LIMIT 3"  # seven students share the lowest age


@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
@pytest.mark.parametrize(
    ("reference", "response", "correct"),
    [
        (TOP3, "SELECT name, age FROM students ORDER BY age, name DESC LIMIT 3", True),  # other tied rows
        (TOP3, "SELECT age, name FROM students ORDER BY age, name DESC LIMIT 3", True),  # and columns swapped
        (TOP3, "SELECT name, age FROM students WHERE age > 18 ORDER BY age LIMIT 3", False),  # not tied
        (TOP3, "SELECT name, age FROM students ORDER BY age DESC LIMIT 3", False),
        (TOP3, "SELECT name, age FROM students ORDER BY age, name DESC LIMIT 4", False),
        (
            "SELECT name FROM students ORDER BY age LIMIT 3",
            "SELECT name FROM students ORDER BY age, id DESC LIMIT 3",
            True,
        ),
    ],
)
def test_ties_cut_by_a_limit(
    sql_scorer: SqlScorer, engine: str, reference: str, response: str, correct: bool
) -> None:
    result = score(sql_scorer, response, reference, options={"engine": engine})
    assert result.correct is correct, result.reason


def test_evicted_and_closed_engines_are_closed() -> None:
    from assay.verifiers.sql.scorer import _EngineCache

    closed: list[str] = []

    class Fake:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            closed.append(self.name)

    cache = _EngineCache(maxsize=2)
    for name in "abc":
        cache[(name, name)] = Fake(name)  # type: ignore[assignment]
    assert closed == ["a"]
    while cache:
        cache.popitem()
    assert sorted(closed) == ["a", "b", "c"]


def test_a_response_cut_to_its_end_says_so_in_the_reason(sql_scorer: SqlScorer) -> None:
    # 5 MB of SQL first, then prose: only the last max_response_chars are read (issue 31 found the cut
    # unsaid: "no SQL found" read as the policy's own omission).
    limit = sql_scorer.settings.sql.max_response_chars
    response = "SELECT name FROM students WHERE age > 20\n" + "x" * (limit + 10)
    result = score(sql_scorer, response)
    assert result.reward == 0.0
    assert result.reason == f"no SQL found in the response's last {limit:,} characters (of {len(response):,})"
    assert result.details["response_cut"] == {"chars": len(response), "kept_last": limit}


def test_a_short_response_without_sql_is_not_called_cut(sql_scorer: SqlScorer) -> None:
    result = score(sql_scorer, "I do not know.")
    assert result.reason == "no SQL found in the response" and "response_cut" not in result.details
