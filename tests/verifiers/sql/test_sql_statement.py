"""Finding the SQL in a response and what sqlglot says about it (never the safety layer)."""

from __future__ import annotations

import pytest

from assay.verifiers.sql.statement import (
    analyse,
    extract_sql,
    keyed_query,
    known_dialect,
    order_key_columns,
)


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("```sql\nSELECT 1;\n```", "SELECT 1"),  # trailing semicolon dropped
        ("```sql\nSELECT 1\n```\nthen\n```sql\nSELECT 2\n```", "SELECT 2"),  # the last fence wins
        ("```\nSELECT 3\n```", "SELECT 3"),  # an untagged fence when no sql fence exists
        ("```python\nprint(1)\n```\n```SQL\nSELECT 4\n```", "SELECT 4"),  # tag is case-insensitive
        ("We select the rows.\nSELECT a FROM t WHERE b = 1;\nDone.", "SELECT a FROM t WHERE b = 1"),
        ("First SELECT 1; then the answer: SELECT 2", "SELECT 2"),  # the last statement in the text
        ("SELECT a FROM (SELECT a FROM t) s", "SELECT a FROM (SELECT a FROM t) s"),  # not the inner SELECT
        (
            "with c as (select 1 as x)\nselect x from c\n\nThat is all.",
            "with c as (select 1 as x)\nselect x from c",
        ),
    ],
)
def test_extract_sql(response: str, expected: str) -> None:
    assert extract_sql(response) == expected


@pytest.mark.parametrize("response", ["", "no query here", "we select carefully", "```sql\n;\n```"])
def test_extract_sql_finds_nothing(response: str) -> None:
    assert extract_sql(response) is None


@pytest.mark.parametrize(
    "sql",
    [
        "DROP TABLE t",
        "SELECT 1; DELETE FROM t",
        "PRAGMA user_version = 1",
        "ATTACH 'x.db' AS x",
        "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
        "VACUUM INTO 'copy.db'",
    ],
)
def test_static_filter_refuses_non_queries(sql: str) -> None:
    assert analyse(sql, "sqlite").refusal is not None


def test_static_filter_lets_unparseable_sql_through_to_the_engine() -> None:
    analysis = analyse("SELECT FROM WHERE (", "sqlite")
    assert analysis.refusal is None and analysis.parse_error is not None


@pytest.mark.parametrize(
    ("sql", "ordered"),
    [
        ("SELECT a FROM t ORDER BY a", True),
        ("SELECT a FROM (SELECT a FROM t ORDER BY a LIMIT 3) s", False),  # ORDER BY only in a subquery
        ("WITH c AS (SELECT a FROM t ORDER BY a) SELECT a FROM c", False),  # only in a CTE
        ("WITH c AS (SELECT a FROM t) SELECT a FROM c ORDER BY a", True),
        ("SELECT a FROM t UNION SELECT b FROM u ORDER BY 1", True),
        ("SELECT a FROM t WHERE a IN (SELECT b FROM u ORDER BY b)", False),
    ],
)
def test_order_matters_only_at_top_level(sql: str, ordered: bool) -> None:
    assert analyse(sql, "sqlite").ordered is ordered


def test_order_detection_without_sqlglot_uses_parenthesis_depth() -> None:
    unparsed = analyse("SELECT a FROM (SELECT a FROM t ORDER BY a) s ORDER BY !!", "sqlite")
    assert unparsed.parsed is None and unparsed.ordered
    nested = analyse("SELECT a FROM (SELECT a FROM t ORDER BY a) s WHERE !!", "sqlite")
    assert nested.parsed is None and not nested.ordered


@pytest.mark.parametrize(
    ("sql", "keys"),
    [
        ("SELECT name, age FROM t ORDER BY age", [1]),
        ("SELECT name, age AS years FROM t ORDER BY years DESC, 1", [1, 0]),
        ("SELECT t.name, COUNT(*) FROM t GROUP BY t.name ORDER BY COUNT(*)", [1]),
        ("SELECT name FROM t ORDER BY age", None),  # the key is hidden
        ("SELECT * FROM t ORDER BY age", None),
    ],
)
def test_order_key_columns(sql: str, keys: list[int] | None) -> None:
    assert order_key_columns(analyse(sql, "sqlite").parsed) == keys


def test_keyed_query_appends_hidden_keys() -> None:
    keyed = keyed_query(analyse("SELECT name FROM t ORDER BY age + 1, id", "sqlite").parsed, "sqlite")
    assert keyed is not None
    sql, count = keyed
    assert count == 2 and "ORDER BY age + 1, id" in sql and sql.startswith("SELECT name, age + 1 AS")


@pytest.mark.parametrize("sql", ["SELECT DISTINCT name FROM t ORDER BY age", "SELECT name FROM t ORDER BY 1"])
def test_keyed_query_refuses_what_it_would_change(sql: str) -> None:
    assert keyed_query(analyse(sql, "sqlite").parsed, "sqlite") is None


def test_transpiles_from_the_stated_dialect() -> None:
    analysis = analyse("SELECT IFNULL(`a`, 0) FROM `t` LIMIT 2", "postgres", "mysql")
    assert analysis.sql == "SELECT COALESCE(a, 0) FROM t LIMIT 2"
    assert analysis.notes == ["transpiled from mysql to postgres"]


def test_unknown_dialect_suggests_a_known_one() -> None:
    assert known_dialect("postgres") is None
    assert 'did you mean "postgres"' in str(known_dialect("postgress"))


def test_common_dialect_aliases_are_accepted() -> None:
    assert known_dialect("PostgreSQL") is None and known_dialect("mssql") is None
    assert analyse("SELECT 1", "postgres", "postgresql").notes == []  # same dialect: no transpiling


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT " + "(" * 80 + "1" + ")" * 80,  # overflows sqlglot's recursive parser
        "SELECT 1" + " + 1" * 6000,  # too long to parse within a deadline
    ],
)
def test_what_sqlglot_cannot_read_goes_to_the_engine(sql: str) -> None:
    analysis = analyse(sql, "sqlite", "mysql")
    assert analysis.refusal is None and analysis.parse_error and analysis.sql == sql
