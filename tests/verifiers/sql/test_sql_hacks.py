"""Responses that game the sql reward: extra statements, writes, constant answers (on every engine)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from assay.settings import Settings
from assay.types import Item, Status
from assay.verifiers.sql import SqlScorer
from assay.verifiers.sql.statement import extract_sql

GOLD = "SELECT name FROM students WHERE age > 20"
ENGINES = ["sqlite", "duckdb", pytest.param("postgres", marks=pytest.mark.requires_postgres)]
SMUGGLED = [
    f"{GOLD}; DROP TABLE students",
    f"The query is:\n{GOLD};\nDROP TABLE students;",
    f"```sql\n{GOLD};\nDELETE FROM students;\n```",
    f"```sql\n{GOLD};\n{GOLD};\n```",  # two reads: which one counts would be the driver's choice
    f"Answer:\n{GOLD};\n{GOLD}",
    f"{GOLD}; -- and to be safe\nINSERT INTO students VALUES (99, 'x', 30)",
    f"```sql\nUPDATE students SET age = 30;\n{GOLD}\n```",
]


@pytest.fixture(scope="module")
def scorers(request: pytest.FixtureRequest, sql_settings: Settings) -> Any:
    made: dict[str, SqlScorer] = {}

    def get(engine: str) -> SqlScorer:
        if engine not in made:
            settings = request.getfixturevalue("pg_settings") if engine == "postgres" else sql_settings
            made[engine] = SqlScorer(settings)
        return made[engine]

    yield get
    for scorer in made.values():
        scorer.close()


def score(scorer: SqlScorer, engine: str, response: str, reference: str = GOLD, **options: Any) -> Any:
    item = Item(task="sql", response=response, reference=reference, db_id="school")
    return scorer.score(item, scorer.parse_options({"engine": engine, **options}))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("response", SMUGGLED)
def test_more_than_one_statement_is_never_rewarded(scorers: Any, engine: str, response: str) -> None:
    for reward in ("binary", "graded"):
        result = score(scorers(engine), engine, response, reward=reward)
        assert result.status is Status.OK and result.reward == 0.0 and result.correct is False
        assert "rejected before execution" in result.reason and "2 statements" in result.reason
    assert score(scorers(engine), engine, GOLD).reward == 1.0  # the tables are still there


def test_the_reason_names_the_statements() -> None:
    assert extract_sql(f"{GOLD}; DROP TABLE students") == f"{GOLD}; DROP TABLE students"
    assert extract_sql(f"{GOLD}; this lists the names") == GOLD  # prose after the ';' is not SQL


@pytest.mark.parametrize("engine", ENGINES)
def test_a_constant_answer_is_flagged_and_not_rewarded(scorers: Any, engine: str, sql_dir: Path) -> None:
    with sqlite3.connect(sql_dir / "school.sqlite") as con:
        count = con.execute("SELECT COUNT(*) FROM students").fetchone()[0]
    reference = "SELECT COUNT(*) FROM students"
    for response in (f"There are {count}.\n\nVALUES ({count})", f"```sql\nSELECT {count};\n```"):
        result = score(scorers(engine), engine, response, reference)
        assert result.status is Status.OK and result.reward == 0.0, result.reason
        assert "reads no table" in result.reason and "hard-coded" in result.details["warnings"][0]
        graded = score(scorers(engine), engine, response, reference, reward="graded")
        assert graded.reward == 0.0  # not even the reward for a query that ran
        allowed = score(scorers(engine), engine, response, reference, allow_constant=True)
        assert allowed.reward == 1.0 and "hard-coded" in allowed.details["warnings"][0]
    honest = score(scorers(engine), engine, reference, reference)
    assert honest.reward == 1.0 and "warnings" not in honest.details


@pytest.mark.parametrize("engine", ENGINES)
def test_a_constant_gold_lets_a_constant_answer_through(scorers: Any, engine: str) -> None:
    result = score(scorers(engine), engine, "SELECT 2", "SELECT 1 + 1")
    assert result.reward == 1.0 and result.details["warnings"]
