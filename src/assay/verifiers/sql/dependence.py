"""Does a prediction compute its answer from the data? Checked on perturbed copies of the database.

A prediction that matched the gold is run again, with the gold, on `rounds` copies of the database that
the scorer builds itself (scratch.py) from the original's rows perturbed by a seed of the item
(perturb.py: rows deleted, values relabelled, references kept). On each copy the prediction must still
match the gold; where it does not, the item is not rewarded:
- `constant`: the gold's result changed and the prediction's did not (`SELECT 'Dana', 25`, `SELECT 40
  FROM t LIMIT 1`, a CASE on a count, `SELECT 40 WHERE EXISTS (SELECT 1 FROM t)`);
- `differs`: both changed, differently (a literal filter that happens to pick the gold's row, `WHERE
  name = 'Dana'` for "the oldest person");
- `fails`: the prediction failed or ran out of its query time on the copy while the gold ran.
No false negative is added by design where the prediction is equivalent to the gold on every database
that keeps the original's references, NULLs, keys, the values the question names and the domains of
categories (see perturb.py for what is not kept). A copy on which the two differ only where it made an
edge case the question never meant (an aggregate over no rows, a new tie at a LIMIT: edges.py) is not
counted, and another is drawn in its place (at most `rounds` more); so is a copy on which the gold's
result did not move (a constant matches it there, as does a pin that picks nothing where the gold's
answer is nothing), and one on which they match only through a tie a LIMIT cuts there and not on the
original (the engine's pick): it tells nothing. Where the gold's answer is nothing, copies delete no
row (deleting never makes something of it; the relabelling can).
`inconclusive` (the gold's result never changed, or the gold failed on every copy) and `skipped` (the
gold reads no table, the copy would be too large or could not be built) leave the verdict as it was;
the details say which. On PostgreSQL the copies are temporary tables in a session of the scorer's own
(pgscratch.py). When the item's deadline cuts the check short before any copy told gold and prediction
apart, the item is `timeout` (our deadline), never a reward.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from cachetools import LRUCache

from assay.settings import SqlSettings
from assay.verifiers.sql.compare import Comparison, Tolerance, compare
from assay.verifiers.sql.edges import empty_like, new_tie, why_edge
from assay.verifiers.sql.engines import (
    FAILED,
    TIMEOUT,
    EngineUnavailable,
    QueryError,
    QueryLimits,
    QueryResult,
    SqlEngine,
)
from assay.verifiers.sql.memo import Run, plain_run
from assay.verifiers.sql.perturb import Protected, Snapshot, perturb, references
from assay.verifiers.sql.scratch import CopyTooLarge, scratch_engine, snapshot
from assay.verifiers.sql.statement import Analysis, compared_texts, literals

# (engine to run on, gold result there) -> the verdict on it, with ties and LIMIT cuts as on the original
Matcher = Callable[[SqlEngine, QueryResult, QueryResult], Comparison]
Limits = Callable[[], tuple[QueryLimits, bool]]  # the next query's limits, and whether the deadline cut it


@dataclass
class Outcome:
    status: str  # passed, constant, differs, fails, inconclusive, skipped, timeout
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


class _Copies(LRUCache[Any, Any]):
    """Scratch engines kept per worker (an RL group scores many responses against one gold); an
    evicted one is closed."""

    def popitem(self) -> tuple[Any, Any]:
        key, value = super().popitem()
        if isinstance(value, tuple) and isinstance(value[0], SqlEngine):
            value[0].close()
        return key, value


@dataclass(frozen=True)
class Check:
    """One item's check: the original engine, the two queries with their results there, and how the
    scorer runs and compares queries (its budget, its matcher, its tolerance)."""

    engine: SqlEngine
    location: str
    seed: str
    gold: Analysis
    pred: Analysis
    originals: tuple[QueryResult, QueryResult]  # (gold, prediction) on the original
    limits: Limits
    match: Matcher
    tol: Tolerance
    prompt: str | None = None  # the item's prompt: values it names stay in the copies
    run: Run = plain_run  # how a query runs (through a clustering call's memo: memo.py)

    @cached_property
    def protected(self) -> Protected:
        parsed = self.gold.parsed
        return Protected.of(literals(parsed), self.prompt, compared_texts(parsed))


class CutShort(Exception):
    """The item deadline cut the prediction short on a copy (or, for `copies`, the building of one)."""


class DataCheck:
    """The check, with the copies it built kept for the next prediction against the same gold."""

    def __init__(self, settings: SqlSettings) -> None:
        self.settings = settings
        self._snapshots: LRUCache[Any, Snapshot] = LRUCache(maxsize=2)
        # Room for two golds' draws (at most 2 * rounds each): a group's clustering scores each answer
        # as the gold against the answers it is compared with, and the group's own gold keeps its copies.
        self._copies = _Copies(maxsize=max(1, 4 * settings.perturb_rounds))

    def run(self, check: Check) -> Outcome:
        gold_tables = _tables(check.gold)
        if gold_tables is not None and not gold_tables:
            return Outcome("skipped", "the reference reads no table")
        pred_tables = _tables(check.pred)
        try:
            snap, snap_key = self._snapshot(check, gold_tables, pred_tables)
        except CopyTooLarge as exc:
            return Outcome("skipped", str(exc))
        except QueryError as exc:
            return Outcome("skipped", f"the database could not be read for a copy: {exc.message}")
        targets = snap.resolve(gold_tables or set())
        if gold_tables is None or len(targets) < len(gold_tables):  # not parsed, or it reads a view
            targets = set(snap.tables)
        return self._rounds(check, snap, snap_key, targets)

    def copies(
        self, check: Check, tables: set[str] | None
    ) -> list[tuple[SqlEngine, QueryResult | QueryError]]:
        """The copies `run` draws for `check.gold` against a prediction that matches it everywhere, with
        the gold's result (or failure) on each: the sql equivalence compares a group's answers on them.
        `tables`: the tables the answers read (None: not known, every table); they are perturbed with the
        gold's. Where they are among the gold's own, these are the copies scoring built. Empty when the
        check does not apply (the gold reads no table, the copy is too large, an engine is lost);
        CutShort when the item deadline left no time to build one."""
        gold_tables = _tables(check.gold)
        if gold_tables is not None and not gold_tables:
            return []
        try:
            snap, snap_key = self._snapshot(check, gold_tables, tables)
        except (CopyTooLarge, QueryError):
            return []
        wanted = None if gold_tables is None or tables is None else gold_tables | tables
        targets = snap.resolve(wanted or set())
        if wanted is None or len(targets) < len(wanted):  # not parsed, or a view is read
            targets = set(snap.tables)
        drawn: list[tuple[SqlEngine, QueryResult | QueryError]] = []
        counted, index = 0, 0
        while counted < self.settings.perturb_rounds and index < 2 * self.settings.perturb_rounds:
            turn, index = index, index + 1
            seed = f"{check.seed}:{turn}"
            if _copy_key(check, snap_key, seed, targets) not in self._copies and check.limits()[1]:
                raise CutShort("the item deadline left no time for a perturbed copy")
            try:
                copy, gold_result = self._copy(check, snap, snap_key, targets, turn)
            except EngineUnavailable:
                return drawn
            except QueryError as exc:
                raise CutShort("the item deadline cut the reference short on a copy") from exc
            drawn.append((copy, gold_result))
            counted += _counts(check.originals[0], gold_result, check.tol)
        return drawn

    def _snapshot(
        self, check: Check, gold_tables: set[str] | None, pred_tables: set[str] | None
    ) -> tuple[Snapshot, Any]:
        """The tables both queries read (every table when either was not parsed), kept for the next
        prediction that reads the same ones: copying costs more than the queries."""
        cfg = self.settings
        wanted = None if gold_tables is None or pred_tables is None else gold_tables | pred_tables
        key = (check.location, None if wanted is None else frozenset(n.lower() for n in wanted))
        cached = self._snapshots.get(key)
        if cached is None:
            query_limits = check.limits()[0]
            cached = snapshot(check.engine, wanted, query_limits, cfg.perturb_max_rows, cfg.perturb_max_cells)
            self._snapshots[key] = cached
        return cached, key

    def _copy(
        self, check: Check, snap: Snapshot, key: Any, targets: set[str], index: int
    ) -> tuple[SqlEngine, QueryResult | QueryError]:
        """Round `index`'s scratch engine and the gold's result (or failure) on it, built once."""
        seed = f"{check.seed}:{index}"
        cached = self._copies.get(_copy_key(check, key, seed, targets))
        if cached is not None:
            return cached
        if snap.links is None:
            snap.links = references(snap.tables)
        # Where the gold's answer is nothing (a count of 0), deletions cannot make it something: only the
        # relabelling can, so such copies keep every row.
        delete = not empty_like(check.originals[0].rows)
        rows = perturb(snap.tables, targets, seed, snap.links, check.protected, turn=index, delete=delete)
        copy = scratch_engine(check.engine, snap, rows, timeout_s=check.limits()[0].timeout_s)
        query_limits, cut = check.limits()
        try:
            gold_result: QueryResult | QueryError = check.run(copy, check.gold.sql, query_limits)
        except EngineUnavailable:
            copy.close()
            raise
        except QueryError as exc:
            if exc.kind == TIMEOUT and cut:
                copy.close()
                raise
            gold_result = exc
        self._copies[_copy_key(check, key, seed, targets)] = (copy, gold_result)
        return copy, gold_result

    def _predict(
        self, check: Check, snap: Snapshot, key: Any, targets: set[str], index: int, copy: SqlEngine
    ) -> tuple[SqlEngine, QueryResult]:
        """The prediction's result on round `index`'s copy, and that copy (CutShort: the item deadline cut
        the prediction short).

        A copy whose connection is lost (PostgreSQL) is rebuilt once and the prediction run again: lost
        again, it is the prediction's doing (it ended its own session: `pg_terminate_backend(
        pg_backend_pid())`), a failure of the prediction, never a skipped check that keeps a reward."""
        lost: EngineUnavailable | None = None
        for attempt in range(2):
            if attempt:
                copy, _ = self._copy(check, snap, key, targets, index)
            query_limits, cut = check.limits()
            try:
                return copy, check.run(copy, check.pred.sql, query_limits)
            except QueryError as exc:
                if exc.kind == TIMEOUT and cut:
                    raise CutShort from exc
                raise
            except EngineUnavailable as exc:
                self._drop(_copy_key(check, key, f"{check.seed}:{index}", targets))
                lost = exc
        why = f"the connection to the perturbed copy was lost twice while the prediction ran ({lost})"
        raise QueryError(FAILED, why)

    def _drop(self, key: Any) -> None:
        entry = self._copies.pop(key, None)
        if entry is not None:
            entry[0].close()

    def _rounds(self, check: Check, snap: Snapshot, key: Any, targets: set[str]) -> Outcome:
        gold_original = check.originals[0]
        info: dict[str, Any] = {"perturbed_tables": sorted(targets), "rounds": []}
        if any(not snap.tables[name].complete for name in targets):
            info["copied_in_part"] = sorted(name for name in targets if not snap.tables[name].complete)
        told = 0  # rounds on which the gold's result changed and the prediction still matched it
        counted, index = 0, 0
        # A round whose only difference is an edge case the copy made (edges.py) is replaced by another
        # draw, at most `perturb_rounds` times.
        while counted < self.settings.perturb_rounds and index < 2 * self.settings.perturb_rounds:
            turn, index = index, index + 1
            seed = f"{check.seed}:{turn}"
            # Building a copy is not interruptible: start one only while a whole query timeout is left,
            # so that the pool's kill at the item deadline (which loses every copy kept) is not reached.
            if _copy_key(check, key, seed, targets) not in self._copies and check.limits()[1]:
                return self._cut(told, "the copies", info)
            try:
                copy, gold_result = self._copy(check, snap, key, targets, turn)
            except EngineUnavailable as exc:
                return Outcome("skipped", str(exc), info)
            except QueryError:
                return self._cut(told, "the reference", info)
            _note_views(copy, info)
            counted += 1
            if isinstance(gold_result, QueryError):
                info["rounds"].append({"reference": f"failed ({gold_result.kind})"})
                continue
            try:
                copy, pred_result = self._predict(check, snap, key, targets, turn, copy)
                verdict = check.match(copy, gold_result, pred_result)
                edge = (
                    self._chance(check, copy, gold_result)
                    if verdict.equal
                    else self._edge(check, copy, gold_result, pred_result)
                )
            except CutShort:
                return self._cut(told, "the prediction", info)
            except EngineUnavailable as exc:  # rebuilding the copy failed, or the matcher lost it
                return Outcome("skipped", str(exc), info)
            except QueryError as exc:
                changed = not _same(gold_original, gold_result, check.tol)
                info["rounds"].append({"reference_changed": changed, "prediction": f"failed ({exc.kind})"})
                why = f"the prediction fails on a perturbed copy of the database ({exc.kind}: {exc.message})"
                return Outcome("fails", why, info)
            step = _judge(check, (gold_result, pred_result), verdict.equal, verdict.reason, edge, info)
            if isinstance(step, Outcome):
                return step
            # Not counted, another copy is drawn: an edge case the copy made, or a copy on which the gold's
            # result did not move (a constant, or a pin that picks nothing where the gold's answer is
            # nothing, matches it there: it tells nothing).
            if not step:
                if step is not None:
                    info["rounds"][-1]["not_counted"] = "the reference's result did not change on the copy"
                counted -= 1
                continue
            told += step
        if not told:
            why = "the reference's result did not change on any perturbed copy"
            return Outcome("inconclusive", why, info)
        return Outcome("passed", f"matches on {told} perturbed copies of the database", info)

    @staticmethod
    def _edge(check: Check, copy: SqlEngine, gold: QueryResult, pred: QueryResult) -> str | None:
        """Why the two differ only where the copy made an edge case (edges.py), or None."""
        query_limits, cut = check.limits()
        try:
            return why_edge(
                check.gold, check.pred, (gold, pred), (copy, check.engine), query_limits, check.tol, check.run
            )
        except QueryError as exc:
            if exc.kind == TIMEOUT and cut:
                raise CutShort from exc
            return None

    @staticmethod
    def _chance(check: Check, copy: SqlEngine, gold: QueryResult) -> str | None:
        """Why a copy on which the two match tells nothing: a LIMIT of either cuts a tie there that the
        original does not have, so the rows kept are the engine's pick, not the query's (`ORDER BY id = 7
        DESC, kind LIMIT 1`, whose id 7 moved away, returns any row of its kind and may hit the gold's
        by chance on a small table). Such a copy is not counted; another is drawn (issue 44)."""
        if _same(check.originals[0], gold, check.tol):
            return None  # not counted anyway
        query_limits, cut = check.limits()
        try:
            for query in (check.pred, check.gold):
                if new_tie(query, copy, check.engine, query_limits, check.run):
                    return "a match on a tie at an ORDER BY ... LIMIT that the original does not have"
        except QueryError as exc:
            if exc.kind == TIMEOUT and cut:
                raise CutShort from exc
        return None

    @staticmethod
    def _cut(told: int, whose: str, info: dict[str, Any]) -> Outcome:
        if told:
            return Outcome("passed", f"matches on {told} perturbed copies (the deadline cut the rest)", info)
        return Outcome("timeout", f"the item deadline cut {whose} short (perturbed check)", info)

    def close(self) -> None:
        while self._copies:
            self._copies.popitem()


def _judge(
    check: Check,
    results: tuple[QueryResult, QueryResult],
    equal: bool,
    reason: str,
    edge: str | None,
    info: dict[str, Any],
) -> Outcome | bool | None:
    """One copy's verdict, recorded in `info`: the Outcome that refuses the reward, None when the copy
    is not counted (an edge case it made; the gold's result emptied there), else whether the gold's
    result changed (a copy that told the two apart)."""
    (gold_original, pred_original), (gold_result, pred_result) = check.originals, results
    changed = not _same(gold_original, gold_result, check.tol)
    unmoved = _same(pred_original, pred_result, check.tol)
    info["rounds"].append({"reference_changed": changed, "prediction_changed": not unmoved, "match": equal})
    if edge is not None:
        info["rounds"][-1]["not_counted"] = edge
        return None
    if not equal:
        if changed and unmoved:
            why = (
                "the prediction's result does not depend on the data: on a perturbed copy of the "
                "database the reference's result changed and the prediction's did not"
            )
            return Outcome("constant", why, info)
        return Outcome("differs", f"on a perturbed copy of the database: {reason}", info)
    if changed and empty_like(gold_result.rows) and not empty_like(gold_original.rows):
        info["rounds"][-1]["not_counted"] = "the reference's result is empty or zero on the copy"
        return None
    return changed


def _tables(query: Analysis) -> set[str] | None:
    return None if query.tables is None else set(query.tables)


def _counts(original: QueryResult, gold: QueryResult | QueryError, tol: Tolerance) -> bool:
    """Whether `_rounds` counts a copy on which the gold gave `gold` and a prediction matched it: the
    gold failed there, or its result moved without emptying."""
    if isinstance(gold, QueryError):
        return True
    moved = not _same(original, gold, tol)
    return moved and not (empty_like(gold.rows) and not empty_like(original.rows))


def _copy_key(check: Check, key: Any, seed: str, targets: set[str]) -> Any:
    """A copy depends on the gold (its seed, its literals), the tables it perturbs and the values the
    prompt names."""
    return (key, seed, frozenset(targets), check.gold.sql, check.protected.prompt)


def _note_views(copy: SqlEngine, info: dict[str, Any]) -> None:
    missing = getattr(copy, "views_not_copied", None)
    if missing:
        info["views_not_copied"] = sorted(missing)


def _same(a: QueryResult, b: QueryResult, tol: Tolerance) -> bool:
    """The same result as a multiset of rows (whether a query's answer moved with the data)."""
    width = len(a.columns)
    return compare(a.rows, b.rows, gold_width=width, pred_width=len(b.columns), ordered=False, tol=tol).equal
