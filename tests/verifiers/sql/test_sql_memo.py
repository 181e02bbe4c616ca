"""The sql equivalence's query memo (verifiers/sql/memo.py) and result equality (equivalence.py): one
clustering call runs each distinct query once per database, and on these hand-built groups its verdicts are
those of scoring every pair both ways (the definition before issue 42's cost work; the two may differ
through which perturbed copies are drawn, the reference's for every pair against each answer's own, and
in how an answer is read: once, as a prediction)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from assay.groups import cluster_indices
from assay.registry import Equivalence, MutualVerdicts
from assay.settings import Settings
from assay.types import Item, Result
from assay.verifiers.sql import SqlOptions, SqlScorer
from assay.verifiers.sql.engines import (
    FAILED,
    TIMEOUT,
    QueryError,
    QueryLimits,
    QueryResult,
    SqlEngine,
    SqliteEngine,
)
from assay.verifiers.sql.equivalence import SqlEquivalence
from assay.verifiers.sql.memo import QueryMemo, Recorded

JOIN = (
    "SELECT DISTINCT s.id, s.name FROM students s JOIN enrollments e ON e.student_id = s.id"
    " WHERE e.course_id = 3"
)
SUBQUERY = (
    "SELECT id, name FROM students WHERE id IN (SELECT student_id FROM enrollments WHERE course_id = 3)"
)
EXISTS = (
    "SELECT name, id FROM students s WHERE EXISTS "
    "(SELECT 1 FROM enrollments e WHERE e.student_id = s.id AND e.course_id = 3)"
)
ALL = "SELECT id, name FROM students"
TOP_GPA = "SELECT name FROM students ORDER BY gpa DESC LIMIT 1"
MAX_GPA = "SELECT name FROM students WHERE gpa = (SELECT MAX(gpa) FROM students)"
STUDENT_1 = "SELECT name FROM students WHERE id = 1"  # the top GPA on the main instance only, by design
EMPTY = " FROM enrollments WHERE course_id = 999"

GROUPS = {
    # group: (answers, whether alternates are used, the clusters scoring every pair gives)
    "equal results written differently": (
        [JOIN, ALL, SUBQUERY, EXISTS, f"  {SUBQUERY} ;"],
        None,
        [[0, 2, 3, 4], [1]],
    ),
    # Without alternates, student 1 is the top GPA on the database: only the perturbed copies tell.
    "a near-miss that differs only on a perturbed copy": (
        [TOP_GPA, STUDENT_1, MAX_GPA],
        False,
        [[0, 2], [1]],
    ),
    # ORDER BY binds one direction only: ordered against unordered is two answers, one order is one.
    "order-sensitive and order-insensitive": (
        [ALL, f"{ALL} ORDER BY name, id", f"{ALL} ORDER BY name ASC, id ASC"],
        None,
        [[0], [1, 2]],
    ),
    # On no rows SUM is NULL where TOTAL and COUNT are 0: NULL is not 0, 0.0 is 0.
    "NULL against 0 on an empty result": (
        [f"SELECT SUM(score){EMPTY}", f"SELECT TOTAL(score){EMPTY}", f"SELECT COUNT(*){EMPTY}"],
        None,
        [[0], [1, 2]],
    ),
    # A constant is right against a constant gold, never the other way: two answers.
    "a constant answer": (
        ["SELECT COUNT(*) FROM students", "SELECT 40", "SELECT COUNT(*) FROM students LIMIT 1"],
        None,
        [[0, 2], [1]],
    ),
    "errors": (
        ["SELECT nope FROM nowhere", "SELEC 1", "DELETE FROM students", "SELECT 1; SELECT 2", JOIN, JOIN],
        None,
        [[0], [1], [2], [3], [4, 5]],
    ),
}


def _item() -> Item:
    return Item(task="sql", db_id="school", response="")


def _memoised(scorer: SqlScorer, options: SqlOptions) -> Equivalence:
    """The equivalence as served: result equality with the call's memo."""
    return SqlEquivalence().within(scorer, _item(), options)


def _pairwise(scorer: SqlScorer, options: SqlOptions) -> Equivalence:
    """The definition before: every pair scored both ways, each answer as the other's gold."""
    return MutualVerdicts(scorer.score, _item(), options, SqlEquivalence().key)


@pytest.mark.parametrize("name", list(GROUPS))
def test_memoised_clusters_equal_the_pairwise_clusters(sql_scorer: SqlScorer, name: str) -> None:
    answers, alternates, expected = GROUPS[name]
    options = SqlOptions(alternates=alternates)
    pairwise = cluster_indices(answers, _pairwise(sql_scorer, options))
    assert cluster_indices(answers, _memoised(sql_scorer, options)) == pairwise == expected


@pytest.mark.parametrize("name", list(GROUPS))
def test_every_verdict_of_one_memoised_call_equals_the_pairwise_verdict(
    sql_scorer: SqlScorer, name: str
) -> None:
    """Not only the pairs leader clustering asks about: every ordered pair, all through one memo."""
    answers, alternates, _ = GROUPS[name]
    options = SqlOptions(alternates=alternates)
    memoised, pairwise = _memoised(sql_scorer, options), _pairwise(sql_scorer, options)
    distinct = list(dict.fromkeys(answers))
    pairs = [(a, b) for a in distinct for b in distinct if a != b]
    assert [memoised.equivalent(a, b) for a, b in pairs] == [pairwise.equivalent(a, b) for a, b in pairs]


@pytest.fixture
def executions(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[tuple[int, str]]]:
    """Every query run on a SQLite database or perturbed copy, by (database object, text)."""
    counts: Counter[tuple[int, str]] = Counter()
    run = SqliteEngine.run

    def counted(engine: SqliteEngine, sql: str, limits: QueryLimits) -> QueryResult:
        counts[(id(engine), sql)] += 1
        return run(engine, sql, limits)

    monkeypatch.setattr(SqliteEngine, "run", counted)
    yield counts


def test_a_clustering_call_runs_each_distinct_query_once_per_database(
    sql_settings: Settings, executions: Counter[tuple[int, str]]
) -> None:
    answers = [JOIN, ALL, SUBQUERY, EXISTS, "SELECT id, name FROM students WHERE id < 3", JOIN]
    texts = {" ".join(a.split()) for a in answers}

    def runs_of_answers(equivalence: Equivalence) -> Counter[tuple[int, str]]:
        executions.clear()
        cluster_indices(answers, equivalence)
        return Counter({key: n for key, n in executions.items() if key[1] in texts})

    scorers = [SqlScorer(sql_settings), SqlScorer(sql_settings)]  # each path starts with cold caches
    try:
        memoised = runs_of_answers(_memoised(scorers[0], SqlOptions()))
        pairwise = runs_of_answers(_pairwise(scorers[1], SqlOptions()))
    finally:
        for scorer in scorers:
            scorer.close()
    assert memoised and max(memoised.values()) == 1
    assert max(pairwise.values()) > 1  # what the memo saves: the same query again on the same database


class _Scripted(SqlEngine):
    """An engine that answers from a script and counts its runs."""

    kind = dialect = "sqlite"

    def __init__(self, outcomes: list[QueryResult | QueryError]) -> None:
        self.outcomes, self.runs = outcomes, 0

    def run(self, sql: str, limits: QueryLimits) -> QueryResult:
        outcome = self.outcomes[self.runs]
        self.runs += 1
        if isinstance(outcome, QueryError):
            raise outcome
        return outcome


LIMITS = QueryLimits(timeout_s=1.0, max_rows=100, max_bytes=1 << 20)


def test_a_timeout_is_not_kept_and_runs_again() -> None:
    engine = _Scripted([QueryError(TIMEOUT, "interrupted"), QueryResult(["n"], [(1,)])])
    memo = QueryMemo()
    with pytest.raises(QueryError):
        memo.run(engine, "SELECT n FROM t", LIMITS)
    assert memo.run(engine, "SELECT n FROM t", LIMITS).rows == [(1,)]
    assert memo.run(engine, "SELECT n FROM t", LIMITS).rows == [(1,)] and engine.runs == 2


def test_a_failure_of_the_query_itself_is_kept() -> None:
    engine = _Scripted([QueryError(FAILED, "no such column")])
    memo = QueryMemo()
    for _ in range(2):
        with pytest.raises(QueryError, match="no such column"):
            memo.run(engine, "SELECT nope FROM t", LIMITS)
    assert engine.runs == 1


def test_results_past_the_row_budget_run_again() -> None:
    rows = QueryResult(["n"], [(i,) for i in range(3)])
    engine = _Scripted([rows, rows, rows, rows])
    memo = QueryMemo(max_rows=10, row_budget=4)
    for sql in ("SELECT a", "SELECT a", "SELECT b", "SELECT b"):
        memo.run(engine, sql, LIMITS)
    assert engine.runs == 3  # "SELECT a" kept (3 rows); "SELECT b" would pass the budget of 4


def test_mutual_verdicts_still_take_a_scorer_as_plugins_pass_it() -> None:
    """The public `MutualVerdicts` took a scorer before it took a scoring function: both are served."""

    class Exact:
        def score(self, item: Item, options: object) -> Result:
            return Result.verdict(item.response == item.reference)

    item = Item(task="sql", prompt="p")
    by_scorer = MutualVerdicts(Exact(), item, None, lambda answer: None)
    by_function = MutualVerdicts(Exact().score, item, None, lambda answer: None)
    for verdicts in (by_scorer, by_function):
        assert verdicts.equivalent("a", "a") and not verdicts.equivalent("a", "b")


def test_a_clustering_memo_reads_what_scoring_recorded_and_runs_the_rest() -> None:
    engine = _Scripted([QueryResult(["n"], [(1,)]), QueryError(FAILED, "no such column")])
    recorded = Recorded()
    recorded.run(engine, "SELECT n FROM t", LIMITS)
    with pytest.raises(QueryError):
        recorded.run(engine, "SELECT nope FROM t", LIMITS)
    memo = QueryMemo(recorded=recorded)
    assert memo.run(engine, "SELECT n FROM t", LIMITS).rows == [(1,)]
    with pytest.raises(QueryError, match="no such column"):
        memo.run(engine, "SELECT nope FROM t", LIMITS)
    assert engine.runs == 2  # scoring's two runs, none for the clustering


def test_recording_keeps_neither_a_timeout_nor_a_result_past_its_size() -> None:
    big = QueryResult(["s"], [("x" * 600,), ("y" * 600,)])
    engine = _Scripted([QueryError(TIMEOUT, "interrupted"), big])
    recorded = Recorded(max_bytes=1_000)
    with pytest.raises(QueryError):
        recorded.run(engine, "SELECT slow", LIMITS)
    recorded.run(engine, "SELECT big", LIMITS)
    assert recorded.get(engine, "SELECT slow") is None and recorded.get(engine, "SELECT big") is None
