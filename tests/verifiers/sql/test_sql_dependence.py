"""Answers that do not depend on the data earn nothing; answers computed from it still earn 1 (issue 28).

The probes return the gold's result without computing it: literals in every disguise a policy finds
(`SELECT 'Dana', 25`, VALUES, UNION, CTEs, `SELECT 40 FROM t LIMIT 1`, a CASE on a count, a subquery
that reads a table and ignores it, a literal filter that happens to pick the gold's row). The literal
values are read from the database at test time, as a policy would have learnt them. Alternates are
off throughout: the perturbed copies the scorer builds itself must catch these alone.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sql_helpers import file_hashes

from assay.settings import Settings, SqlSettings
from assay.types import Item, Status
from assay.verifiers.sql import SqlScorer
from assay.verifiers.sql.perturb import TableData, perturb

ENGINES = ["sqlite", "duckdb"]
# PostgreSQL's copies are temporary tables on the server (its own attacks: test_sql_pg_dependence.py).
ALL_ENGINES = [*ENGINES, pytest.param("postgres", marks=pytest.mark.requires_postgres)]
TOP = "SELECT name, age FROM students ORDER BY gpa DESC LIMIT 1"
COUNT = "SELECT COUNT(*) FROM students"
BY_CITY = "SELECT city, COUNT(*) FROM students GROUP BY city"
SUM = "SELECT SUM(credits) FROM courses WHERE dept = 'cs'"


@pytest.fixture(scope="module")
def scorer(sql_settings: Settings) -> Iterator[SqlScorer]:
    made = SqlScorer(sql_settings)
    yield made
    made.close()


@pytest.fixture(scope="module")
def scorers(request: pytest.FixtureRequest, scorer: SqlScorer) -> Iterator[Callable[[str], SqlScorer]]:
    """The scorer for an engine: PostgreSQL's knows the throwaway server's databases."""
    made: list[SqlScorer] = []

    def get(engine: str) -> SqlScorer:
        if engine != "postgres":
            return scorer
        if not made:
            made.append(SqlScorer(request.getfixturevalue("pg_settings")))
        return made[0]

    yield get
    for pg in made:
        pg.close()


@pytest.fixture(scope="module")
def facts(sql_dir: Path) -> dict[str, Any]:
    """What a policy would have memorised about the main instance."""
    with sqlite3.connect(sql_dir / "school.sqlite") as con:
        return {
            "top": con.execute(TOP).fetchone(),
            "top_id": con.execute("SELECT id FROM students ORDER BY gpa DESC LIMIT 1").fetchone()[0],
            "count": con.execute(COUNT).fetchone()[0],
            "by_city": con.execute(BY_CITY).fetchall(),
            "sum": con.execute(SUM).fetchone()[0],
        }


def score(scorer: SqlScorer, engine: str, response: str, reference: str, **options: Any) -> Any:
    item = Item(task="sql", response=response, reference=reference, db_id="school")
    parsed = scorer.parse_options({"engine": engine, "alternates": False, **options})
    return scorer.score(item, parsed)


def _lit(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def _row(row: tuple[Any, ...]) -> str:
    return ", ".join(_lit(v) for v in row)


def probes(facts: dict[str, Any]) -> list[tuple[str, str]]:
    name, age = facts["top"]
    n = facts["count"]
    rows = facts["by_city"]
    union = " UNION ALL ".join(f"SELECT {_row(r)}" for r in rows)
    return [
        (TOP, f"SELECT {_lit(name)}, {age}"),
        (TOP, f"VALUES ({_lit(name)}, {age})"),
        (TOP, f"SELECT {_lit(name)} AS name, {age} AS age FROM students LIMIT 1"),
        (TOP, f"WITH t(a, b) AS (VALUES ({_lit(name)}, {age})) SELECT a, b FROM t"),
        (TOP, f"SELECT name, age FROM students WHERE id = {facts['top_id']}"),  # a literal filter
        (TOP, f"SELECT {_lit(name)}, {age} WHERE EXISTS (SELECT 1 FROM students)"),
        (COUNT, f"SELECT {n}"),
        (COUNT, f"SELECT {n} FROM students LIMIT 1"),
        (COUNT, f"SELECT CASE WHEN COUNT(*) > 3 THEN {n} ELSE 0 END FROM students"),
        (COUNT, f"SELECT {n} WHERE EXISTS (SELECT 1 FROM students)"),
        (COUNT, f"SELECT {n} UNION SELECT {n}"),
        (COUNT, f"WITH c AS (SELECT {n} AS k) SELECT k FROM c"),
        (COUNT, f"SELECT MAX({n}) FROM students"),
        (COUNT, f"SELECT COUNT(*) * 0 + {n} FROM students"),
        (COUNT, f"SELECT (SELECT {n}) FROM (SELECT COUNT(*) FROM enrollments) AS s"),
        (BY_CITY, union),
        (BY_CITY, f"WITH r AS ({union}) SELECT * FROM r"),
        (BY_CITY, f"SELECT * FROM ({union}) AS r WHERE EXISTS (SELECT 1 FROM students)"),
        (SUM, f"SELECT {facts['sum']} FROM courses LIMIT 1"),
    ]


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_no_literal_probe_is_rewarded(scorers: Any, engine: str, facts: dict[str, Any]) -> None:
    scorer = scorers(engine)
    for reference, probe in probes(facts):
        unchecked = score(scorer, engine, probe, reference, allow_constant=True)
        assert unchecked.reward == 1.0, (probe, unchecked.reason)  # the probe does fool the main instance
        result = score(scorer, engine, probe, reference)
        assert result.status is Status.OK and result.reward == 0.0, (probe, result.reason)
        assert result.correct is False and result.reason


@pytest.mark.parametrize("engine", ALL_ENGINES)
def test_a_constant_is_named_as_such(scorers: Any, engine: str, facts: dict[str, Any]) -> None:
    result = score(scorers(engine), engine, f"SELECT {facts['count']} FROM students LIMIT 1", COUNT)
    assert result.details["data_check"]["status"] == "constant"
    assert "does not depend on the data" in result.reason
    assert any("hard-coded" in w for w in result.details["warnings"])


CORRECT = [
    (TOP, "SELECT name, age FROM students WHERE gpa = (SELECT MAX(gpa) FROM students)"),
    (COUNT, "SELECT COUNT(id) FROM students"),
    (COUNT, "SELECT COUNT(*) FROM (SELECT DISTINCT id FROM students) AS s"),
    (BY_CITY, "SELECT city, COUNT(id) FROM students GROUP BY 1"),
    (SUM, "SELECT SUM(c.credits) FROM courses c WHERE c.dept IN ('cs')"),
    (
        "SELECT COUNT(*) FROM enrollments",
        "SELECT COUNT(*) FROM enrollments e JOIN students s ON s.id = e.student_id",  # a reference kept
    ),
    (
        "SELECT s.name FROM students s WHERE s.id NOT IN (SELECT student_id FROM enrollments)",
        "SELECT s.name FROM students s WHERE NOT EXISTS "
        "(SELECT 1 FROM enrollments e WHERE e.student_id = s.id)",  # no NULL keys, as in the original
    ),
    (
        "SELECT DISTINCT dept FROM courses WHERE credits > 4",
        "SELECT dept FROM courses WHERE credits > 4 GROUP BY dept",
    ),
]


def test_a_duckdb_query_that_names_its_catalog_runs_on_the_copy(scorer: SqlScorer) -> None:
    result = score(scorer, "duckdb", "SELECT COUNT(*) FROM school.main.students", COUNT)
    assert result.reward == 1.0 and result.details["data_check"]["status"] == "passed", result.reason


@pytest.mark.parametrize("engine", ALL_ENGINES)
@pytest.mark.parametrize(("reference", "response"), CORRECT)
def test_correct_queries_pass_the_check(scorers: Any, engine: str, reference: str, response: str) -> None:
    result = score(scorers(engine), engine, response, reference)
    assert result.reward == 1.0, result.reason
    assert result.details["data_check"]["status"] == "passed"


def test_the_perturbation_is_deterministic_and_keeps_domains_and_references() -> None:
    parents = TableData("p", ["id", "kind"], [(i, "ab"[i % 2]) for i in range(1, 30)])
    children = TableData("c", ["pid", "note"], [(i % 29 + 1, None if i % 5 else "x") for i in range(90)])
    tables = {"p": parents, "c": children}
    first = perturb(tables, {"p", "c"}, "seed")
    assert first == perturb(tables, {"p", "c"}, "seed") != perturb(tables, {"p", "c"}, "other")
    assert 0 < len(first["p"]) < len(parents.rows)
    assert {kind for _, kind in first["p"]} <= {"a", "b"}
    ids = {pid for pid, _ in first["p"]}
    assert len(ids) == len(first["p"])  # still a key
    assert {pid for pid, _ in first["c"]} <= ids  # every reference still has its target
    assert sum(note is None for _, note in first["c"]) > 0  # NULLs kept, none added to "id"


# -- generated probes: literal rows equal to the gold's result, in random disguises --------------------
GOLDS = [
    TOP,
    COUNT,
    BY_CITY,
    SUM,
    "SELECT dept, AVG(credits) FROM courses GROUP BY dept",
    "SELECT MAX(score) FROM enrollments WHERE term = 'fall'",
    "SELECT name FROM students WHERE age > 24 ORDER BY name",
    "SELECT title FROM courses WHERE id IN (SELECT course_id FROM enrollments WHERE score > 90)",
]
TABLES = ["students", "courses", "enrollments"]


def _disguise(rows: list[tuple[Any, ...]], form: int, table: str, alias: bool) -> str | None:
    names = [f"c{i}" for i in range(len(rows[0]))] if rows else []
    first = ", ".join(f"{_lit(v)} AS {n}" if alias else _lit(v) for v, n in zip(rows[0], names, strict=True))
    union = " UNION ALL ".join(f"SELECT {_row(r)}" for r in rows)
    if form == 0:
        return union
    if form == 1:
        return "VALUES " + ", ".join(f"({_row(r)})" for r in rows)
    if form == 2:
        return f"WITH lit AS ({union}) SELECT * FROM lit"
    if form == 3:
        return f"SELECT * FROM ({union}) AS x WHERE EXISTS (SELECT 1 FROM {table})"
    if form == 4:
        return f"SELECT * FROM ({union}) AS x WHERE (SELECT COUNT(*) FROM {table}) > 0"
    if form == 5 and len(rows) == 1:
        return f"SELECT {first} FROM {table} LIMIT 1"
    if form == 6 and len(rows) == 1:
        return f"SELECT {first} FROM (SELECT COUNT(*) AS n FROM {table}) AS s"
    return None


@pytest.mark.parametrize("engine", ALL_ENGINES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    gold=st.sampled_from(GOLDS), form=st.integers(0, 6), table=st.sampled_from(TABLES), alias=st.booleans()
)
def test_generated_literal_answers_earn_nothing(
    scorers: Any, sql_dir: Path, gold: str, form: int, table: str, alias: bool, engine: str
) -> None:
    with sqlite3.connect(sql_dir / "school.sqlite") as con:
        rows = con.execute(gold).fetchall()
    probe = _disguise(rows, form, table, alias) if rows else None
    if probe is None:
        return
    result = score(scorers(engine), engine, probe, gold)
    assert result.status is Status.OK and result.reward == 0.0, (probe, result.reason)


# -- generated correct answers: rewrites that are equivalent on every database ------------------------
REWRITES = [
    lambda q: f"SELECT * FROM ({q}) AS wrapped",
    lambda q: f"WITH q AS ({q}) SELECT * FROM q",
    lambda q: _always_true(q),
    lambda q: q.replace("SELECT ", "SELECT ALL ", 1),
]


def _always_true(query: str) -> str:
    if " WHERE " in query:
        return query.replace(" WHERE ", " WHERE 1 = 1 AND ", 1)
    if " GROUP BY " in query:
        return query.replace(" GROUP BY ", " WHERE 1 = 1 GROUP BY ", 1)
    return query + " WHERE 1 = 1"


UNORDERED = [
    "SELECT {cols} FROM {table}",
    "SELECT {cols} FROM {table} WHERE {num} > {k}",
    "SELECT {group}, COUNT(*), SUM({num}) FROM {table} GROUP BY {group}",
    "SELECT MIN({num}), MAX({num}), COUNT(DISTINCT {group}) FROM {table}",
]
COLUMNS = {
    "students": (["id", "name", "age", "city", "gpa"], ["age", "gpa", "id"], ["city", "name", "age"]),
    "courses": (["id", "title", "dept", "credits"], ["credits", "id"], ["dept", "credits"]),
    "enrollments": (["student_id", "course_id", "term", "score"], ["score", "course_id"], ["term"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("engine", ALL_ENGINES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_generated_equivalent_answers_still_earn_one(scorers: Any, data: Any, engine: str) -> None:
    table = data.draw(st.sampled_from(sorted(COLUMNS)))
    every, numeric, groups = COLUMNS[table]
    cols = ", ".join(data.draw(st.lists(st.sampled_from(every), min_size=1, max_size=3, unique=True)))
    shape = data.draw(st.sampled_from(UNORDERED))
    gold = shape.format(
        cols=cols,
        table=table,
        num=data.draw(st.sampled_from(numeric)),
        group=data.draw(st.sampled_from(groups)),
        k=data.draw(st.integers(0, 60)),
    )
    answer = data.draw(st.sampled_from(REWRITES))(gold)
    result = score(scorers(engine), engine, answer, gold)
    assert result.status is Status.OK and result.reward == 1.0, (gold, answer, result.reason)


def test_a_database_too_large_to_copy_skips_the_check_and_says_so(sql_dir: Path) -> None:
    settings = Settings(workers=1, sql=SqlSettings(databases=sql_dir, perturb_max_cells=50))
    small = SqlScorer(settings)
    try:
        correct = score(small, "sqlite", "SELECT COUNT(id) FROM students", COUNT)
        literal = score(small, "sqlite", "SELECT 40 FROM students LIMIT 1", COUNT)
        no_table = score(small, "sqlite", "SELECT 40", COUNT)
    finally:
        small.close()
    assert correct.reward == 1.0 and correct.details["data_check"]["status"] == "skipped"
    assert "more than 50 values" in correct.details["data_check"]["why"]
    assert literal.details["data_check"]["status"] == "skipped"  # alternates are what is left here
    assert no_table.reward == 0.0  # the reads-no-table check does not need a copy


@pytest.mark.parametrize("engine", ENGINES)
def test_the_copies_leave_the_database_files_untouched(
    scorer: SqlScorer, engine: str, sql_dir: Path, facts: dict[str, Any]
) -> None:
    before = file_hashes(sql_dir)
    for reference, probe in probes(facts)[:6]:
        score(scorer, engine, probe, reference)
    assert file_hashes(sql_dir) == before


def test_no_time_left_for_a_copy_is_a_timeout_not_a_reward(sql_dir: Path) -> None:
    # Less than one query timeout is left once the main instance has run: no copy is started.
    settings = Settings(workers=1, sql=SqlSettings(databases=sql_dir, query_timeout_s=5.0, deadline_s=5.2))
    tight = SqlScorer(settings)
    try:
        literal = score(tight, "sqlite", "SELECT 40 FROM students LIMIT 1", COUNT)
        no_table = score(tight, "sqlite", "SELECT 40", COUNT)
    finally:
        tight.close()
    assert literal.status is Status.TIMEOUT and literal.reward is None
    assert "perturbed check" in literal.reason
    assert no_table.status is Status.OK and no_table.reward == 0.0
