"""Edge cases a perturbed copy creates that the question never meant, so a copy where the prediction and
the gold differ only there says nothing about the prediction (issue 44).

A copy deletes rows and relabels values. Two queries that both compute the question's answer can then
disagree where the copy made a case the original did not have:

- **an aggregate over no rows**: a filter that matched rows on the original matches none on the copy,
  and `SUM` (NULL) meets `TOTAL` or `SUM(CASE ...)` over a non-empty table (0), `COUNT(*)` (0) meets
  `SUM(CASE ...)` over an empty one (NULL), `MAX` (one NULL row) meets `ORDER BY ... LIMIT 1` (no row).
  `null_or_zero` tells results that are equal once NULL, 0 and "no row" are one value;
- **a new tie at a LIMIT**: deletions move counts and sums, so a `GROUP BY ... ORDER BY COUNT(*) DESC
  LIMIT 1` may cut a tie on the copy that it did not cut on the original, where `= (SELECT MAX ...)`
  returns every tied row. `new_tie` tells whether some `ORDER BY ... LIMIT n` of a query (top level, or
  a subquery that runs on its own) cuts through rows tied on its keys on the copy and not on the
  original. Only where the rows of the query that cuts lie within the other's: the two differ in which
  tied rows were kept, nothing else.

A round where the two differ only so is not counted and another copy is drawn (dependence.py); an answer
that does not compute from the data still differs on the copies without such a case. Not covered: a
tie cut by a LIMIT inside a correlated subquery, or by a window function's frame.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from sqlglot import exp
from sqlglot.errors import SqlglotError

from assay.verifiers.sql.compare import Tolerance, canon, column_matchings, compare, values_within
from assay.verifiers.sql.engines import QueryError, QueryLimits, QueryResult, Row, SqlEngine
from assay.verifiers.sql.memo import Run, plain_run
from assay.verifiers.sql.statement import Analysis, keyed_query

_MAX_LIMITS = 4  # ORDER BY ... LIMIT clauses looked at per query


def _zeroed(rows: Sequence[Row]) -> list[Row]:
    """Rows with NULL read as 0, and a single row of nothing but NULL and 0 read as no row."""
    out = [tuple(0 if value is None else value for value in row) for row in rows]
    if len(out) == 1 and all(canon(value) == ("num", 0) for value in out[0]):
        return []
    return out


def empty_like(rows: Sequence[Row]) -> bool:
    """No row, or one row of nothing but NULL and 0: what a filter that matched nothing returns. A copy
    on which the gold returns that (and did not on the original) tells little: a literal filter whose
    values the copy moved returns it too."""
    return not _zeroed(rows)


def null_or_zero(gold: QueryResult, pred: QueryResult, tol: Tolerance) -> bool:
    """Whether two results differ only as NULL, 0 and "no row" do (an aggregate over no rows): the
    whole result, or the rows of groups that lost all their rows on the copy, which one query lists
    with NULL or 0 (a LEFT JOIN, a subquery per group) and the other leaves out (an inner join)."""
    a, b = _zeroed(gold.rows), _zeroed(pred.rows)
    empty_a, empty_b = [r for r in a if _nothing(r)], [r for r in b if _nothing(r)]
    if a == gold.rows and b == pred.rows and not empty_a and not empty_b:
        return False  # no NULL and no zero: the difference lies elsewhere
    width_a, width_b = len(gold.columns), len(pred.columns)

    def same(x: list[Row], y: list[Row]) -> bool:
        return compare(x, y, gold_width=width_a, pred_width=width_b, ordered=False, tol=tol).equal

    if same(a, b):
        return True
    # Only the emptied groups may differ, and something else must be left to compare: a result that
    # is nothing but such rows (a pin that finds no row, against a gold of zeros) is not excused.
    kept_a, kept_b = [r for r in a if not _nothing(r)], [r for r in b if not _nothing(r)]
    return bool(kept_a) and ((bool(empty_a) and same(kept_a, b)) or (bool(empty_b) and same(a, kept_b)))


def _nothing(row: Row) -> bool:
    """A row that holds a NULL or a 0 (read as 0 by `_zeroed`): what a group with no rows aggregates to."""
    return any(canon(value) == ("num", 0) for value in row)


def _limited(query: Analysis, dialect: str) -> list[tuple[str, int, int]]:
    """(the select without its LIMIT and with its sort keys appended, the LIMIT, the key count) for
    each `ORDER BY ... LIMIT n` select of the query."""
    if query.parsed is None:
        return []
    found = []
    for node in query.parsed.find_all(exp.Select):
        limit = node.args.get("limit")
        count = limit.expression if isinstance(limit, exp.Limit) else None
        if not isinstance(count, exp.Literal) or count.is_string or not str(count.this).isdigit():
            continue
        try:
            keyed = keyed_query(node, dialect, unlimited=True)
        except (SqlglotError, RecursionError, ValueError):
            keyed = None
        if keyed is not None:
            found.append((keyed[0], int(str(count.this)), keyed[1]))
        if len(found) == _MAX_LIMITS:
            break
    return found


def _cuts_tie(engine: SqlEngine, sql: str, n: int, width: int, limits: QueryLimits, run: Run) -> bool | None:
    """Whether `LIMIT n` over `sql`'s rows cuts between rows with equal keys; None when it does not run
    on its own (a correlated subquery)."""
    try:
        rows = run(engine, sql, limits).rows
    except QueryError:
        return None
    if n == 0 or len(rows) <= n:
        return False
    return [canon(v) for v in rows[n - 1][-width:]] == [canon(v) for v in rows[n][-width:]]


def new_tie(
    query: Analysis, copy: SqlEngine, original: SqlEngine, limits: QueryLimits, run: Run = plain_run
) -> bool:
    """Whether a LIMIT of `query` cuts a tie on the copy that it did not cut on the original."""
    for sql, n, width in _limited(query, copy.dialect):
        cut_on_copy = _cuts_tie(copy, sql, n, width, limits, run)
        if cut_on_copy and _cuts_tie(original, sql, n, width, limits, run) is False:
            return True
    return False


def why_edge(
    gold: Analysis,
    pred: Analysis,
    results: tuple[QueryResult, QueryResult],
    engines: tuple[SqlEngine, SqlEngine],
    limits: QueryLimits,
    tol: Tolerance,
    run: Run = plain_run,
) -> str | None:
    """Why a copy on which the two differ made an edge case the original did not have, or None.
    `results`: (gold, prediction) on the copy; `engines`: (the copy, the original); `run`: how a query
    runs (memo.py)."""
    if null_or_zero(results[0], results[1], tol):
        return "an aggregate over no rows on the copy (NULL against 0, or no row)"
    copy, original = engines
    gold_result, pred_result = results
    # Only which of the tied rows were kept may differ: the cut side's rows lie within the other's.
    if within(pred_result, gold_result, tol) and new_tie(pred, copy, original, limits, run):
        return "a tie at the prediction's ORDER BY ... LIMIT on the copy that the original does not have"
    if within(gold_result, pred_result, tol) and new_tie(gold, copy, original, limits, run):
        return "a tie at the reference's ORDER BY ... LIMIT on the copy that the original does not have"
    return None


def within(part: QueryResult, whole: QueryResult, tol: Tolerance) -> bool:
    """Whether `part`'s rows are a sub-multiset of `whole`'s, under some order of its columns. A query
    whose LIMIT pins a literal (`ORDER BY id = 7 DESC LIMIT 1`, id 7 moved away) returns any row on the
    copy, not one of the rows the other query ties on."""
    if not part.rows or len(part.columns) != len(whole.columns) or len(part.rows) > len(whole.rows):
        return False
    for perm in column_matchings(whole.rows, part.rows, tol, fits=values_within):
        pool = Counter(tuple(canon(v) for v in row) for row in whole.rows)
        permuted = Counter(tuple(canon(row[i]) for i in perm) for row in part.rows)
        if not permuted - pool:
            return True
    return False
