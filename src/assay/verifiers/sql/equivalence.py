"""The sql task's notion of answer equivalence, for answer clusters and majority votes (issue 42).

Two queries are one answer when their results are equal, both ways, on the same databases: the group's
instance and its alternates, and the perturbed copies the group's scoring checks its answers on (those
drawn for the reference; without one, for the group's first answer that reads a table and runs), with
the tables either query reads perturbed too. Equal is the scorer's own comparison (compare.py: rows as a
multiset, columns in any order, floats within tolerance, NULL only equal to NULL; the order a query's
ORDER BY states binds the other's rows, ties and LIMIT cuts as in scoring), and a copy on which the two
differ only by an edge case the copy made (edges.py) does not count against them, as in scoring. As in
scoring also: a query that is refused, or fails on the instance or an alternate, is an answer of its own
(the same text is still one answer: the key); a query that reads no table is never one answer with one
that reads a table (`allow_constant`: it may be, and then no copies are used); two queries that both fail
on a copy are not told apart by it, one that fails where the other runs is.

Two answers the group's scoring judged wrong against its reference (`judged_wrong`) are held to a lesser
standard: their results equal on the item's own database, as execution match (BIRD, Spider) and execution-
based self-consistency votes compare queries. The alternates and copies exist to refuse a reward to an
answer that matches the gold by a coincidence of the data; a wrong answer earns nothing whichever cluster
it joins. A right answer, or one without a verdict (self-consistency), is held to the full standard, so a
wrong answer that gives the gold's rows on the database (a literal filter on their ids) never joins the
right ones.

Cost: each distinct query is read once and runs once per database, and in the worker that just scored
the group not even that: the scorer recorded what it ran (memo.py), and the copies are the ones it built
(dependence.py keeps them). A query runs on an alternate or a copy only once it equals another on the
databases before. What is left is comparing results in memory, pair by pair where the shapes (columns,
rows on the instance) agree: `compare.Fingerprint` settles the pairs of equal values and the pairs that
cannot match as multisets without compare()'s search. The worst case was a group of many answers of one
shape, equal in pairs on the data but written differently and wrong: each pair was checked on every
copy, where scoring, finding them wrong on the instance, ran none of them (docs/voting.md measures it).
Judged wrong, they are now compared on the database alone, from the results scoring recorded.

Before this, each pair was scored both ways (each query as the other's gold), which built copies seeded
by every answer that matched another on the instance: the share of clustering in a group's scoring time
stayed at 20-41% at G = 8. Verdicts differ from that mutual scoring only through which copies are drawn
(here the reference's for every pair) and how an answer is read (as a prediction, in the item's dialect).
"""

from __future__ import annotations

from collections.abc import Hashable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, ClassVar

from assay.groups.clusters import ClusteringTimeout
from assay.registry.equivalence import Equivalence
from assay.types import Item
from assay.verifiers.sql.compare import Comparison, Fingerprint
from assay.verifiers.sql.dependence import Check, CutShort
from assay.verifiers.sql.edges import why_edge
from assay.verifiers.sql.engines import (
    DIALECTS,
    TIMEOUT,
    EngineUnavailable,
    QueryError,
    QueryLimits,
    QueryResult,
    SqlEngine,
)
from assay.verifiers.sql.fields import SqlFields
from assay.verifiers.sql.memo import Budget, QueryMemo
from assay.verifiers.sql.statement import Analysis, constant_answer, extract_sql

MAX_RESPONSE_CHARS = 100_000  # settings.sql.max_response_chars' default: responses are cut to their tail


class SqlEquivalence(Equivalence):
    available: ClassVar[bool] = True

    def within(self, scorer: Any, item: Item, options: Any) -> Equivalence:
        """Result equality on the group's databases, with the worker's scorer (its databases, copies,
        recorded results and comparison)."""
        return ResultEquality(scorer, item, options)

    def answer(self, item: Item) -> str | None:
        return extract_sql(item.response[-MAX_RESPONSE_CHARS:]) if item.response is not None else None

    def key(self, answer: str) -> Hashable | None:
        return text_key(answer)


def text_key(answer: str) -> str:
    """The query's text with its spacing and final semicolon dropped: the same query written twice."""
    return " ".join(answer.split()).rstrip(";").strip()


@dataclass
class _Answer:
    """One distinct query of the group: how it reads, and its results on the instances so far (the main
    one first; an alternate's only once it equals another answer on those before)."""

    query: Analysis | None
    alone: bool  # refused, or failed on an instance: equivalent to nothing but itself
    results: list[QueryResult] = field(default_factory=list)
    ordered: bool = False
    tables: frozenset[str] | None = None  # what it reads (None: not parsed)
    constant: bool = False  # reads no table and no column

    @classmethod
    def of(cls, query: Analysis, results: list[QueryResult], ordered: bool) -> _Answer:
        return cls(query, False, results, ordered, query.tables, constant_answer(query.parsed))


class ResultEquality(Equivalence):
    """The sql equivalence bound to one group (see the module docstring). Runs in a worker, like scoring;
    every query goes through the scorer's read-only engines and the call's memo."""

    available: ClassVar[bool] = True

    def __init__(self, scorer: Any, item: Item, options: Any) -> None:
        self._scorer, self._item, self._options = scorer, item, options
        self._memo = QueryMemo(recorded=scorer.recorded)
        cfg = scorer.settings.sql
        self._budget = Budget(cfg.deadline_s, cfg.query_timeout_s, self._memo.run)
        self._answers: dict[str, _Answer] = {}
        self._copies: dict[frozenset[str] | None, list[tuple[SqlEngine, QueryResult | QueryError]]] = {}
        self._pivot: tuple[Analysis, QueryResult] | None = None
        self._fingerprints: dict[int, tuple[QueryResult, Fingerprint]] = {}
        self._wrong: frozenset[str] = frozenset()
        self._fields = SqlFields.of(item)
        try:
            db_id = self._fields.db_id
            self._instances = scorer._instances(db_id, options) if db_id else []
        except Exception:  # an unknown database: every answer stands alone, as scoring finds it invalid
            self._instances = []
        self._dialect = DIALECTS[self._instances[0].engine] if self._instances else "sqlite"

    def key(self, answer: str) -> Hashable | None:
        return text_key(answer)

    def signature(self, answer: str) -> Hashable | None:
        """The shape of the result on the group's instance (columns, rows): equal results have equal
        shapes. An answer that stands alone has a signature of its own."""
        read = self._read(answer)
        if read.alone:
            return ("alone", answer)
        return (len(read.results[0].columns), len(read.results[0].rows))

    def judged_wrong(self, answers: AbstractSet[str]) -> None:
        self._wrong = frozenset(answers)

    def equivalent(self, a: str, b: str) -> bool:
        first, second = self._read(a), self._read(b)
        if first.alone or second.alone or self._constant_apart(first, second):
            return False
        both_wrong = a in self._wrong and b in self._wrong
        instances = self._instances[:1] if both_wrong else self._instances
        for index, instance in enumerate(instances):
            x, y = self._result(first, index), self._result(second, index)
            if x is None or y is None or not self._may_agree(first, x, second, y):
                return False
            if not self._agree(self._scorer._engine(instance), (first, x), (second, y)):
                return False
        if both_wrong or not self._copies_apply(first, second):
            return True
        return all(self._agree_on_copy(copy, first, second) for copy in self._copies_for(first, second))

    # -- reading and running -----------------------------------------------------------------------
    def _read(self, answer: str) -> _Answer:
        found = self._answers.get(answer)
        if found is None:
            found = self._answers[answer] = self._first_reading(answer)
        return found

    def _first_reading(self, answer: str) -> _Answer:
        """The answer read as a prediction (as scoring reads a response) and run on the main instance."""
        sql = extract_sql(answer[-self._scorer.settings.sql.max_response_chars :])
        if sql is None or not self._instances:
            return _Answer(None, alone=True)
        query = self._scorer.read_prediction(sql, self._dialect, self._fields.dialect)
        if query.refusal is not None:
            return _Answer(query, alone=True)  # never run, as scoring never runs it
        try:
            result = self._run(self._scorer._engine(self._instances[0]), query.sql)
        except (QueryError, EngineUnavailable):
            return _Answer(query, alone=True)
        ordered = {"strict": True, "ignore": False}.get(self._options.order, query.ordered)
        return _Answer.of(query, [result], ordered)

    def _result(self, answer: _Answer, index: int) -> QueryResult | None:
        """The answer's result on instance `index`, run on first need; None once it failed there (it then
        stands alone, as scoring finds it wrong or its reference invalid)."""
        if index < len(answer.results):
            return answer.results[index]
        assert answer.query is not None and index == len(answer.results)
        try:
            answer.results.append(self._run(self._scorer._engine(self._instances[index]), answer.query.sql))
        except (QueryError, EngineUnavailable):
            answer.alone = True
            return None
        return answer.results[index]

    def _run(self, engine: SqlEngine, sql: str) -> QueryResult:
        """The query's result (memo.py); ClusteringTimeout where the item deadline cut it short."""
        timeout_s, cut = self._budget.timeout()
        try:
            return self._memo.run(engine, sql, self._scorer._limits(timeout_s))
        except QueryError as exc:
            if exc.kind == TIMEOUT and cut:
                raise ClusteringTimeout("the item deadline cut a query short") from exc
            raise

    # -- the rules ---------------------------------------------------------------------------------
    def _constant_apart(self, a: _Answer, b: _Answer) -> bool:
        """A query that reads no table is wrong against one that does (scoring's rule), unless allowed."""
        if self._options.allow_constant:
            return False
        return (a.constant and b.tables != set()) or (b.constant and a.tables != set())

    def _copies_apply(self, a: _Answer, b: _Answer) -> bool:
        """Scoring checks a match on copies unless allowed constants, no rounds, or neither reads a table."""
        rounds = self._scorer.settings.sql.perturb_rounds
        return not self._options.allow_constant and rounds > 0 and (a.tables != set() or b.tables != set())

    def _may_agree(self, a: _Answer, x: QueryResult, b: _Answer, y: QueryResult) -> bool:
        """A quick necessary condition on an instance: where either result is compared as a multiset (its
        query states no order), their columns' values must match as multisets (compare.Fingerprint). A
        group of 64 wrong answers of one shape compares 2,016 pairs: each costs a lookup, not a search."""
        if a.ordered and b.ordered:  # a LIMIT cut inside a tie may keep other rows: no such condition
            return True
        return self._fingerprint(x).may_equal_as_multisets(self._fingerprint(y))

    def _agree(
        self, engine: SqlEngine, a: tuple[_Answer, QueryResult], b: tuple[_Answer, QueryResult]
    ) -> bool:
        """Each result matches the other as the gold, by the scorer's own comparison on `engine`."""
        return self._matches(engine, a, b) and self._matches(engine, b, a)

    def _matches(
        self, engine: SqlEngine, gold: tuple[_Answer, QueryResult], pred: tuple[_Answer, QueryResult]
    ) -> bool:
        (answer, gold_result), (_, pred_result) = gold, pred
        assert answer.query is not None
        if self._fingerprint(gold_result).decides_equal(self._fingerprint(pred_result), answer.ordered):
            return True  # the same values: the comparison's verdict without its search
        tol = self._scorer._tolerance(self._options)
        match = self._scorer._match(
            engine, answer.query, gold_result, pred_result, answer.ordered, tol, self._budget
        )
        return bool(match.equal)

    def _fingerprint(self, result: QueryResult) -> Fingerprint:
        """Once per result object (kept here with it, so its id stays its own during the call)."""
        found = self._fingerprints.get(id(result))
        if found is None or found[0] is not result:
            found = self._fingerprints[id(result)] = (
                result,
                Fingerprint.of(len(result.columns), result.rows),
            )
        return found[1]

    def _agree_on_copy(self, copy: SqlEngine, a: _Answer, b: _Answer) -> bool:
        """Scoring's rule on one copy, both ways: a gold that fails there is not checked on it; a
        prediction that fails where the gold runs is wrong; a difference that is only an edge case the
        copy made is not counted."""
        outcomes: list[QueryResult | QueryError] = []
        for answer in (a, b):
            assert answer.query is not None
            try:
                outcomes.append(self._run(copy, answer.query.sql))
            except QueryError as exc:
                outcomes.append(exc)
        first, second = outcomes
        for (gold, gold_result), (pred, pred_result) in (
            ((a, first), (b, second)),
            ((b, second), (a, first)),
        ):
            if isinstance(gold_result, QueryError) or gold.tables == set():
                continue  # a gold that fails on the copy, or reads no table, is not checked there
            if isinstance(pred_result, QueryError):
                return False
            if not self._matches(copy, (gold, gold_result), (pred, pred_result)) and not self._edge(
                copy, (gold, gold_result), (pred, pred_result)
            ):
                return False
        return True

    def _edge(
        self, copy: SqlEngine, gold: tuple[_Answer, QueryResult], pred: tuple[_Answer, QueryResult]
    ) -> bool:
        (gold_answer, gold_result), (pred_answer, pred_result) = gold, pred
        assert gold_answer.query is not None and pred_answer.query is not None
        timeout_s, cut = self._budget.timeout()
        try:
            why = why_edge(
                gold_answer.query,
                pred_answer.query,
                (gold_result, pred_result),
                (copy, self._scorer._engine(self._instances[0])),
                self._scorer._limits(timeout_s),
                self._scorer._tolerance(self._options),
                self._memo.run,
            )
        except QueryError as exc:
            if exc.kind == TIMEOUT and cut:
                raise ClusteringTimeout("the item deadline cut an edge check short") from exc
            return False
        return why is not None

    # -- the copies --------------------------------------------------------------------------------
    def _copies_for(self, a: _Answer, b: _Answer) -> list[SqlEngine]:
        """The copies the pair is compared on: the pivot's draws with the pair's tables perturbed too."""
        tables_a, tables_b = a.tables, b.tables
        tables = None if tables_a is None or tables_b is None else tables_a | tables_b
        drawn = self._copies.get(tables)
        if drawn is None:
            drawn = self._copies[tables] = self._draw(None if tables is None else set(tables))
        return [copy for copy, _ in drawn]

    def _draw(self, tables: set[str] | None) -> list[tuple[SqlEngine, QueryResult | QueryError]]:
        pivot = self._find_pivot()
        if pivot is None:
            return []
        gold, gold_result = pivot
        instance = self._instances[0]
        scorer = self._scorer

        def limits() -> tuple[QueryLimits, bool]:
            timeout_s, cut = self._budget.timeout()
            return scorer._limits(timeout_s), cut

        check = Check(
            scorer._engine(instance),
            instance.location,
            f"{self._fields.db_id}\x00{gold.sql}",
            gold,
            gold,
            (gold_result, gold_result),
            limits,
            _no_match,
            scorer._tolerance(self._options),
            self._item.prompt,
            self._memo.run,
        )
        try:
            return list(scorer._data_check.copies(check, tables))
        except CutShort as exc:
            raise ClusteringTimeout(str(exc)) from exc

    def _find_pivot(self) -> tuple[Analysis, QueryResult] | None:
        """Whose copies: the reference's, as scoring draws them; without one, the first answer read (in
        the group's order) that reads a table and ran."""
        if self._pivot is not None:
            return self._pivot
        reference = self._item.reference
        if reference and reference.strip():
            gold = self._scorer.read_gold(reference.strip().rstrip(";").strip(), self._dialect)
            if gold.refusal is None:
                try:
                    result = self._scorer._run_gold(
                        self._scorer._engine(self._instances[0]),
                        self._instances[0],
                        gold.sql,
                        self._budget.timeout()[0],
                        self._memo.run,
                    )
                except QueryError:
                    return None
                self._pivot = (gold, result)
                return self._pivot
            return None
        for answer in self._answers.values():  # dicts keep insertion order: the group's order
            if not answer.alone and answer.tables != set() and answer.query is not None:
                self._pivot = (answer.query, answer.results[0])
                return self._pivot
        return None


def _no_match(engine: SqlEngine, gold: QueryResult, pred: QueryResult) -> Comparison:
    """The matcher of a check that only draws copies (`DataCheck.copies`): never asked."""
    raise AssertionError("DataCheck.copies compares nothing")
