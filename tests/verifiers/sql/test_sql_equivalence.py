"""The sql task's notion of answer equivalence (verifiers/sql/equivalence.py): result equality on the
group's database, judged by the scorer itself in both directions."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import pytest

from assay.engine.scoring import Engine
from assay.groups import ClusteringTimeout, answer_clusters, cluster_indices, majority
from assay.registry import Equivalence
from assay.settings import Settings, SqlSettings
from assay.types import Item
from assay.verifiers.sql import SqlOptions, SqlScorer
from assay.verifiers.sql import scratch as scratch_module
from assay.verifiers.sql.engines import QueryLimits, QueryResult, SqliteEngine
from assay.verifiers.sql.equivalence import SqlEquivalence

JOIN = (
    "SELECT DISTINCT s.id, s.name FROM students s JOIN enrollments e ON e.student_id = s.id"
    " WHERE e.course_id = 3"
)
SUBQUERY = (
    "SELECT id, name FROM students WHERE id IN (SELECT student_id FROM enrollments WHERE course_id = 3)"
)
ALL = "SELECT id, name FROM students"


def _bound(scorer: SqlScorer) -> Equivalence:
    item = Item(task="sql", db_id="school", response="")
    return SqlEquivalence().within(scorer, item, SqlOptions())


def test_queries_with_equal_results_are_one_answer(sql_scorer: SqlScorer) -> None:
    answers = [JOIN, ALL, SUBQUERY, f"  {SUBQUERY} ;"]
    assert cluster_indices(answers, _bound(sql_scorer)) == [[0, 2, 3], [1]]


def test_a_query_that_fails_equals_nothing(sql_scorer: SqlScorer) -> None:
    answers = ["SELECT nope FROM nowhere", "SELECT also FROM nowhere", JOIN]
    assert cluster_indices(answers, _bound(sql_scorer)) == [[0], [1], [2]]


def test_the_answer_read_without_a_reference_is_the_extracted_sql() -> None:
    item = Item(task="sql", db_id="school", response=f"Here:\n```sql\n{ALL}\n```")
    assert SqlEquivalence().answer(item) == ALL


def test_the_sql_task_declares_its_equivalence() -> None:
    assert isinstance(SqlScorer.equivalence, SqlEquivalence) and SqlScorer.equivalence.available


def test_a_groups_sql_clusters_form_in_the_worker(sql_settings: Settings) -> None:
    """Through the engine: the worker binds the equivalence to its own scorer and the group's database."""
    items = [
        {"task": "sql", "db_id": "school", "response": f"```sql\n{sql}\n```", "reference": JOIN}
        for sql in (ALL, SUBQUERY, ALL, JOIN, f"{SUBQUERY};")
    ]
    with Engine(sql_settings) as engine:
        (outcome,) = engine.score_groups([{"items": items}])
    clusters = outcome.stats.answer_clusters or []
    assert [(c.size, c.correct, c.members) for c in clusters] == [(3, True, [1, 3, 4]), (2, False, [0, 2])]
    assert outcome.stats.majority_correct is True, outcome.stats.clusters_unavailable


def test_a_self_consistency_vote_over_sql_without_a_reference(sql_settings: Settings) -> None:
    """Issue 42 item 2 through the engine: no reference, so no verdict; the clusters form by result
    equality alone (the copies from the first answer that reads a table) and the vote is the majority's."""
    answers = (ALL, SUBQUERY, ALL, JOIN, f"{SUBQUERY};", "SELECT 1")
    items = [{"task": "sql", "db_id": "school", "response": f"```sql\n{sql}\n```"} for sql in answers]
    with Engine(sql_settings) as engine:
        voted, plain = engine.score_groups([{"items": items, "self_consistency": True}, {"items": items}])
    clusters = voted.stats.answer_clusters or []
    assert [(c.size, c.correct, c.members) for c in clusters] == [
        (3, None, [1, 3, 4]),
        (2, None, [0, 2]),
        (1, None, [5]),
    ], voted.stats.clusters_unavailable
    assert (voted.stats.majority_answer, voted.stats.majority_correct) == (SUBQUERY, None)
    assert (plain.stats.answer_clusters, plain.stats.majority_answer) == ([], None)


# -- result equality on the group's databases, its hand-built groups (issue 42 item 1) -------------------
EXISTS = (
    "SELECT name, id FROM students s WHERE EXISTS "
    "(SELECT 1 FROM enrollments e WHERE e.student_id = s.id AND e.course_id = 3)"
)
CITIES = "SELECT id, city FROM students"  # city has NULLs


def _clusters(scorer: SqlScorer, answers: list[str], **options: object) -> list[list[int]]:
    item = Item(task="sql", db_id="school", response="", reference=JOIN)
    return cluster_indices(answers, SqlEquivalence().within(scorer, item, SqlOptions(**options)))


def test_an_order_by_binds_the_others_rows_on_every_database(sql_scorer: SqlScorer) -> None:
    """One order written two ways is one answer; the same rows unordered are another: unordered `ALL`
    comes in id order on the database, not on a perturbed copy, so not even `ORDER BY id` takes it in."""
    answers = [ALL, f"{ALL} ORDER BY id", f"{ALL} ORDER BY name, id", f"{ALL} ORDER BY name ASC, id"]
    assert _clusters(sql_scorer, answers) == [[0], [1], [2, 3]]
    assert _clusters(sql_scorer, answers, order="ignore") == [[0, 1, 2, 3]]


def test_floats_within_the_tolerance_are_one_answer(sql_scorer: SqlScorer) -> None:
    answers = [
        "SELECT AVG(gpa) FROM students",
        "SELECT AVG(gpa) + 1e-9 FROM students",  # not the same float: compared within the tolerance
        "SELECT AVG(gpa) + 0.01 FROM students",
    ]
    assert _clusters(sql_scorer, answers) == [[0, 1], [2]]
    assert _clusters(sql_scorer, answers, rel_tol=0.01) == [[0, 1, 2]]


def test_null_equals_null_and_nothing_else(sql_scorer: SqlScorer) -> None:
    answers = [
        CITIES,
        "SELECT id, CASE WHEN city IS NULL THEN NULL ELSE city END FROM students",
        "SELECT id, COALESCE(city, '') FROM students",
        "SELECT id, COALESCE(city, 'NULL') FROM students",
    ]
    assert _clusters(sql_scorer, answers) == [[0, 1], [2], [3]]


@pytest.mark.parametrize("engine", ["sqlite", pytest.param("duckdb", marks=pytest.mark.slow)])  # copies: ~1 s
def test_columns_in_another_order_are_one_answer(sql_scorer: SqlScorer, engine: str) -> None:
    answers = [SUBQUERY, ALL, EXISTS, JOIN, "SELECT id, name FROM students WHERE id < 3"]
    assert _clusters(sql_scorer, answers, engine=engine) == [[0, 2, 3], [1], [4]]


def _count_queries(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every query SQLite runs from now on, in order (the engine's own `run`, wrapped)."""
    ran: list[str] = []
    run = SqliteEngine.run

    def counted(engine: SqliteEngine, sql: str, limits: QueryLimits) -> QueryResult:
        ran.append(sql)
        return run(engine, sql, limits)

    monkeypatch.setattr(SqliteEngine, "run", counted)
    return ran


def test_a_member_that_errors_or_is_unsafe_stands_alone_and_unsafe_sql_never_runs(
    sql_scorer: SqlScorer, monkeypatch: pytest.MonkeyPatch
) -> None:
    unsafe = ["DELETE FROM students", "SELECT 1; DROP TABLE students", "ATTACH DATABASE '/tmp/x' AS x"]
    answers = [JOIN, "SELECT nope FROM nowhere", *unsafe, SUBQUERY, "SELECT nope FROM nowhere"]
    ran = _count_queries(monkeypatch)
    assert _clusters(sql_scorer, answers) == [[0, 5], [1, 6], [2], [3], [4]]
    assert not any("DELETE" in sql or "DROP" in sql or "ATTACH" in sql for sql in ran)


def test_a_constant_is_never_one_answer_with_a_query_that_reads_the_table(sql_scorer: SqlScorer) -> None:
    answers = ["SELECT COUNT(*) FROM students", "SELECT 40", "SELECT 39 + 1"]
    assert _clusters(sql_scorer, answers) == [[0], [1, 2]]
    assert _clusters(sql_scorer, answers, allow_constant=True) == [[0, 1, 2]]


def test_the_string_majority_is_wrong_where_the_equivalence_majority_is_right(sql_scorer: SqlScorer) -> None:
    """Two identical wrong strings against three spellings of the right answer (the engine's path, with
    a worker, is `test_a_groups_sql_clusters_form_in_the_worker`)."""
    items = [
        Item(task="sql", db_id="school", response=f"```sql\n{sql}\n```", reference=JOIN)
        for sql in (ALL, JOIN, ALL, SUBQUERY, EXISTS)
    ]
    results = [sql_scorer.score(item, SqlOptions()) for item in items]
    answers = [r.extracted for r in results]
    assert Counter(answers).most_common(1) == [(ALL, 2)]  # the vote over strings: wrong
    equivalence = SqlEquivalence().within(sql_scorer, items[0], SqlOptions())
    clusters = answer_clusters(cluster_indices(answers, equivalence), answers, [r.correct for r in results])
    assert [(c.size, c.correct, c.members) for c in clusters] == [(3, True, [1, 3, 4]), (2, False, [0, 2])]
    top = majority(clusters)
    assert top is not None and top.correct is True and top.representative == JOIN


def test_clusters_after_scoring_run_no_query_again_and_build_no_copy(
    sql_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the worker that scored the group: the members' results and the copies are scoring's."""
    responses = [JOIN, ALL, SUBQUERY, EXISTS, "SELECT id, name FROM students WHERE id < 3", JOIN]
    scorer = SqlScorer(sql_settings)
    try:
        items = [Item(task="sql", db_id="school", response=r, reference=JOIN) for r in responses]
        results = [scorer.score(item, SqlOptions()) for item in items]
        built: list[object] = []
        build = scratch_module._ScratchSqlite.build

        def counted_build(engine: object) -> None:
            built.append(engine)
            build(engine)  # type: ignore[arg-type]

        ran = _count_queries(monkeypatch)
        monkeypatch.setattr(scratch_module._ScratchSqlite, "build", counted_build)
        equivalence = SqlEquivalence().within(scorer, items[0], SqlOptions())
        clusters = cluster_indices([r.extracted for r in results], equivalence)
    finally:
        scorer.close()
    assert clusters == [[0, 2, 3, 5], [1], [4]]
    assert ran == [] and built == []


# -- two answers scoring judged wrong: equal on the item's own database ------------------------------
COUNT, MAX_ID = "SELECT COUNT(*) FROM students", "SELECT MAX(id) FROM students"  # 40 and 40, then not


def test_two_wrong_answers_are_one_when_their_results_on_the_items_database_are(
    sql_scorer: SqlScorer,
) -> None:
    """The copies refuse a reward to a match by coincidence; a wrong answer earns nothing whichever cluster
    it joins, so two wrong ones are compared as execution match does, on the item's own database."""
    item = Item(task="sql", db_id="school", response="", reference=JOIN)
    answers = [JOIN, COUNT, MAX_ID]
    assert cluster_indices(answers, SqlEquivalence().within(sql_scorer, item, SqlOptions())) == [
        [0],
        [1],
        [2],
    ]
    for wrong, clusters in (({COUNT, MAX_ID}, [[0], [1, 2]]), ({COUNT}, [[0], [1], [2]])):
        bound = SqlEquivalence().within(sql_scorer, item, SqlOptions())
        bound.judged_wrong(frozenset(wrong))
        assert cluster_indices(answers, bound) == clusters  # one answer judged wrong: the full standard


def test_a_groups_wrong_answers_merge_by_their_results_and_the_right_ones_stay_apart(
    sql_dir: Path, sql_settings: Settings
) -> None:
    """Through the engine: the verdicts reach the clustering. A literal filter on the gold's ids gives the
    gold's rows on the database and not on its alternate: wrong, and never one answer with the right ones
    (which are held to the full standard), though one with a wrong answer equal to it on the database."""
    with sqlite3.connect(sql_dir / "school.sqlite") as db:
        ids = ", ".join(str(row[0]) for row in db.execute(JOIN))
    literal = f"SELECT id, name FROM students WHERE id IN ({ids})"
    answers = (COUNT, JOIN, MAX_ID, SUBQUERY, COUNT, literal, f"{literal} AND id > 0")
    items = [
        {"task": "sql", "db_id": "school", "response": f"```sql\n{sql}\n```", "reference": JOIN}
        for sql in answers
    ]
    with Engine(sql_settings) as engine:
        (outcome,) = engine.score_groups([{"items": items}])
    assert [r.correct for r in outcome.results] == [False, True, False, True, False, False, False]
    clusters = outcome.stats.answer_clusters or []
    assert [(c.size, c.correct, c.members) for c in clusters] == [
        (3, False, [0, 2, 4]),
        (2, True, [1, 3]),
        (2, False, [5, 6]),
    ], outcome.stats.clusters_unavailable
    assert outcome.stats.majority_correct is False


def test_wrong_answers_of_one_shape_are_clustered_without_running_a_query(
    sql_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worst case for the clustering's cost (benchmarks/group_clusters.py's `sql-alike`): wrong answers
    of one shape, equal in pairs on the data. Each pair was checked on the alternate and the copies, where
    scoring ran none of them; now their results from scoring decide, in memory."""
    responses = [JOIN]
    for k in (4, 7, 9):
        responses += [
            f"SELECT id, name FROM students WHERE id != {k}",
            f"SELECT name, id FROM students WHERE id + 0 != {k}",
        ]
    scorer = SqlScorer(sql_settings)
    try:
        items = [Item(task="sql", db_id="school", response=r, reference=JOIN) for r in responses]
        results = [scorer.score(item, SqlOptions()) for item in items]
        ran = _count_queries(monkeypatch)
        equivalence = SqlEquivalence().within(scorer, items[0], SqlOptions())
        equivalence.judged_wrong(
            frozenset(r.extracted for r in results if r.correct is False and r.extracted)
        )
        clusters = cluster_indices([r.extracted for r in results], equivalence)
    finally:
        scorer.close()
    assert [r.correct for r in results] == [True] + [False] * 6
    assert clusters == [[0], [1, 2], [3, 4], [5, 6]]
    assert ran == []


def test_a_query_the_deadline_cuts_short_makes_the_clusters_unavailable(sql_dir: Path) -> None:
    """Not two answers split for want of time: the clustering stops (the group reports why)."""
    settings = Settings(sql=SqlSettings(databases=sql_dir, query_timeout_s=5.0, deadline_s=0.6))
    endless = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n, students"
    )
    scorer = SqlScorer(settings)
    try:
        with pytest.raises(ClusteringTimeout):
            _clusters(scorer, [JOIN, endless])
    finally:
        scorer.close()
