"""The sql task's notion of answer equivalence (verifiers/sql/equivalence.py): result equality on the
group's database, judged by the scorer itself in both directions."""

from __future__ import annotations

from assay.engine.scoring import Engine
from assay.groups import cluster_indices
from assay.registry import Equivalence
from assay.settings import Settings
from assay.types import Item
from assay.verifiers.sql import SqlOptions, SqlScorer
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
