"""The same dev set and the same attacks on a real PostgreSQL server (a throwaway cluster, see conftest)."""

from __future__ import annotations

from typing import Any

import pytest
from sql_helpers import as_item, load_cases, table_digests

from assay.engine.scoring import parse_item
from assay.settings import Settings
from assay.types import Status
from assay.verifiers.sql import SqlScorer
from assay.verifiers.sql.engines import REFUSED, TIMEOUT, TOO_LARGE, QueryError, QueryLimits
from assay.verifiers.sql.postgres import PostgresEngine
from assay.verifiers.sql.statement import extract_sql

pytestmark = pytest.mark.requires_postgres

CASES = load_cases()
DANGER = [case for case in CASES if case["category"] == "danger"]
LIMITS = QueryLimits(timeout_s=1.0, max_rows=10_000, max_bytes=8 << 20)
DATABASES = ["school", "school_alt1", "shop", "shop_alt1", "flights", "flights_alt1"]


@pytest.fixture(scope="module")
def pg_scorer(pg_settings: Settings) -> Any:
    scorer = SqlScorer(pg_settings)
    yield scorer
    scorer.close()


@pytest.fixture
def pg_engine(pg_dsns: dict[str, str]) -> Any:
    engine = PostgresEngine(pg_dsns["school"])
    yield engine
    engine.close()


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_verdict_matches_label_on_postgres(
    case: dict[str, Any], pg_scorer: SqlScorer, pg_admin_dsn: str
) -> None:
    before = table_digests(pg_admin_dsn, DATABASES) if case["category"] == "danger" else None
    item = parse_item(as_item(case))
    result = pg_scorer.score(item, pg_scorer.parse_options({**item.options, "engine": "postgres"}))
    assert result.status is Status.OK, result.reason
    assert result.correct is case["label"], f"{case['note']}: {result.reason}"
    if before is not None:
        assert table_digests(pg_admin_dsn, DATABASES) == before


@pytest.mark.parametrize("case", DANGER, ids=[case["note"] for case in DANGER])
def test_dangerous_statement_changes_nothing_on_postgres(
    case: dict[str, str], pg_engine: PostgresEngine, pg_admin_dsn: str
) -> None:
    sql = extract_sql(case["response"])
    assert sql is not None
    before = table_digests(pg_admin_dsn, DATABASES)
    runaway = case["note"].startswith(("recursive CTE", "cartesian"))
    with pytest.raises(QueryError) as caught:
        pg_engine.run(sql, LIMITS)
    assert not runaway or caught.value.kind in {TIMEOUT, TOO_LARGE}, caught.value.message
    assert table_digests(pg_admin_dsn, DATABASES) == before
    assert pg_engine.run("SELECT COUNT(*) FROM students", LIMITS).rows == [(40,)]  # connection still usable


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "SELECT set_config('statement_timeout', '0', false)",
    ],
)
def test_session_settings_do_not_survive_the_rollback(pg_engine: PostgresEngine, sql: str) -> None:
    pg_engine.run(sql, LIMITS)
    with pytest.raises(QueryError) as caught:
        pg_engine.run("SELECT pg_sleep(5)", LIMITS)
    assert caught.value.kind == TIMEOUT
    with pytest.raises(QueryError):
        pg_engine.run("DELETE FROM students", LIMITS)


def test_second_statement_is_refused_by_the_server(pg_engine: PostgresEngine) -> None:
    with pytest.raises(QueryError) as caught:
        pg_engine.run("SELECT 1; SELECT 2", LIMITS)
    assert caught.value.kind == REFUSED


def test_row_cap_cancels_the_stream(pg_engine: PostgresEngine) -> None:
    with pytest.raises(QueryError) as caught:
        pg_engine.run(
            "SELECT a.id FROM students a, students b, students c, students d",
            QueryLimits(30.0, 1000, 8 << 20),
        )
    assert caught.value.kind == TOO_LARGE
    assert pg_engine.run("SELECT 1", LIMITS).rows == [(1,)]


def test_the_role_itself_is_read_only(pg_dsns: dict[str, str]) -> None:
    import psycopg

    with psycopg.connect(pg_dsns["school"], autocommit=True) as con, pytest.raises(psycopg.Error):
        con.execute("DELETE FROM students")


def test_unreachable_server_is_an_error(sql_dir: Any) -> None:
    from assay.settings import SqlSettings

    dsn = {"school": "host=127.0.0.1 port=1 user=nobody dbname=school connect_timeout=2"}
    scorer = SqlScorer(Settings(sql=SqlSettings(databases=sql_dir, postgres_dsn=dsn)))
    item = parse_item({"task": "sql", "db_id": "school", "reference": "SELECT 1", "response": "SELECT 1"})
    result = scorer.score(item, scorer.parse_options({"engine": "postgres"}))
    assert result.status is Status.ERROR and result.reward is None
