"""The `sql` scorer: execution equivalence of a predicted query and a gold query on a named database.

Per item: find the database (and its alternate instances), read both statements with sqlglot (one
statement, SELECT only, transpiled from the item's `dialect`), run the gold and then the prediction on
each instance under the engine's read-only guard and deadline, and compare results (compare.py).

Statuses, deliberately:
- the gold fails, times out or is too large: `invalid` (a broken reference, not a wrong prediction);
- the prediction is missing, not a query, more than one statement, refused, fails, runs out of its
  query time or is too large: `ok`, reward 0 (the policy's fault); nothing of a response with several
  statements is run, so `SELECT ...; DROP ...` earns nothing for its first half;
- a prediction that reads no table (`VALUES (33)`, `SELECT 33`) while the gold does, or whose result
  does not move with the data on perturbed copies of the database (dependence.py), is `ok`, reward 0,
  and flagged in `details["warnings"]` (option `allow_constant`: the old behaviour, flag only);
- our own item deadline cut a query short: `timeout`; a database that cannot be opened: `error`.
Rewards: binary (1 / 0), or graded (1 correct / `executes_reward` ran but wrong / 0 failed). `correct`
stays the raw verdict in both modes, so a trainer can filter on it rather than on a shaped reward.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar, Literal

from cachetools import LRUCache
from pydantic import Field

from assay.registry import Audit, Equivalence, Scorer, Validation
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions
from assay.verifiers.sql import audit as sql_audit
from assay.verifiers.sql import catalog, probes
from assay.verifiers.sql.compare import (
    Blocks,
    Comparison,
    Tolerance,
    canon,
    column_matchings,
    compare,
    tie_blocks,
    valid_limit_cut,
    values_within,
)
from assay.verifiers.sql.dependence import Check, DataCheck, Outcome
from assay.verifiers.sql.engines import (
    DIALECTS,
    TIMEOUT,
    DuckdbEngine,
    EngineUnavailable,
    QueryError,
    QueryLimits,
    QueryResult,
    SqlEngine,
    SqliteEngine,
)
from assay.verifiers.sql.equivalence import SqlEquivalence
from assay.verifiers.sql.fields import SqlFields
from assay.verifiers.sql.memo import Budget, Recorded, Run
from assay.verifiers.sql.statement import (
    Analysis,
    analyse,
    constant_answer,
    extract_sql,
    keyed_query,
    known_dialect,
    order_key_columns,
)

_MAX_ENGINES = 32  # open databases kept per worker
_MAX_CACHED_ROWS = 10_000


class SqlOptions(TaskOptions):
    reward: Literal["binary", "graded"] = Field(
        "binary", description="binary: 1/0. graded: 1 correct, executes_reward if it ran but is wrong, 0."
    )
    executes_reward: float = Field(0.1, ge=0, le=1, description="graded: reward of a wrong query that ran.")
    engine: Literal["auto", "sqlite", "duckdb", "postgres"] = Field(
        "auto", description="Engine when a db_id is on several (auto: sqlite, then duckdb, then postgres)."
    )
    order: Literal["auto", "ignore", "strict"] = Field(
        "auto", description="auto: row order matters iff the gold's top-level query has ORDER BY."
    )
    alternates: bool | None = Field(None, description="Use alternate instances (default: settings).")
    rel_tol: float | None = Field(
        None, ge=0, le=0.5, description="Relative float tolerance (default: settings)."
    )
    allow_constant: bool = Field(
        False,
        description="Reward a prediction whose result does not depend on the data (reads no table, or "
        "does not change on perturbed copies of the database); it is flagged either way. For items whose "
        "gold is itself a constant in disguise; off for RL, where a policy learns to hard-code answers.",
    )


@dataclass
class _Compared:
    """One item's reference and prediction as they are compared, instance after instance: whether order
    counts, its options and deadline, and the main instance's results (`seen`, for the dependence check)."""

    gold: Analysis
    pred: Analysis
    ordered: bool
    options: SqlOptions
    budget: Budget
    seen: dict[str, QueryResult] = field(default_factory=dict)


class _EngineCache(LRUCache[tuple[str, str], SqlEngine]):
    """Open databases kept per worker; the least recently used one is closed when it is evicted."""

    def popitem(self) -> tuple[tuple[str, str], SqlEngine]:
        key, engine = super().popitem()
        engine.close()
        return key, engine


def open_engine(instance: catalog.Instance, settings: Settings) -> SqlEngine:
    """The read-only engine for one database instance (the scorer's and the session `sql` tool's)."""

    memory = settings.sql.memory_limit_mb
    if instance.engine == "sqlite":
        return SqliteEngine(Path(instance.location), heap_limit_mb=memory)
    if instance.engine == "duckdb":
        spill = settings.sql.duckdb_spill_dir
        return DuckdbEngine(Path(instance.location), memory_limit_mb=memory, spill_dir=spill)
    from assay.verifiers.sql.postgres import PostgresEngine

    return PostgresEngine(instance.location, connect_timeout_s=settings.sql.query_timeout_s)


class SqlScorer(Scorer[SqlOptions]):
    name: ClassVar[str] = "sql"
    tools: ClassVar[Mapping[str, str]] = {"sql": "assay.verifiers.sql.tool:SqlTool"}
    validation: ClassVar[Validation] = probes.SqlValidation()
    audit: ClassVar[Audit] = sql_audit.SqlAudit()
    equivalence: ClassVar[Equivalence] = SqlEquivalence()  # answer clusters (equivalence.py)
    description: ClassVar[str] = (
        "Execution equivalence of a predicted SQL query and a gold query on a named database "
        "(SQLite, DuckDB, PostgreSQL), read-only and bounded."
    )
    Options: ClassVar[type[TaskOptions]] = SqlOptions
    Fields = SqlFields
    item_fields: ClassVar[tuple[str, ...]] = ("response", "reference")
    runs_in = "process"
    baselines: ClassVar[tuple[str, ...]] = ("sql-set",)  # `assay bench` runs it beside the task
    quiet_loggers = ("sqlglot",)  # it logs every fallback to Command

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self._entries: dict[str, catalog.Entry] | None = None
        size = settings.sql.gold_cache_size
        self._engines = _EngineCache(maxsize=_MAX_ENGINES)
        self._gold: LRUCache[tuple[str, str, str], QueryResult] | None = LRUCache(size) if size else None
        self._gold_parsed: LRUCache[tuple[str, str], Analysis] = LRUCache(maxsize=max(1, size))
        self._pred_parsed: LRUCache[tuple[str, str, str | None], Analysis] = LRUCache(maxsize=256)
        self._data_check = DataCheck(settings.sql)
        # What scoring ran, for the group's clustering in this worker (equivalence.py); never read back by
        # scoring, which runs every query afresh.
        self.recorded = Recorded()

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: SqlOptions) -> float:
        return settings.sql.deadline_s

    # -- databases ---------------------------------------------------------------------------------
    def _instances(self, db_id: str, options: SqlOptions) -> list[catalog.Instance]:
        cfg = self.settings.sql
        alternates = cfg.alternates if options.alternates is None else options.alternates
        if self._entries is None or db_id not in self._entries:  # rescan on a miss: a new database
            self._entries = catalog.scan(cfg.databases, cfg.postgres_dsn)
        return catalog.resolve(self._entries, db_id, options.engine, alternates)

    def _engine(self, instance: catalog.Instance) -> SqlEngine:
        key = (instance.engine, instance.location)
        engine = self._engines.get(key)
        if engine is not None:
            return engine
        engine = open_engine(instance, self.settings)
        self._engines[key] = engine
        return engine

    def _limits(self, timeout_s: float) -> QueryLimits:
        cfg = self.settings.sql
        return QueryLimits(timeout_s=timeout_s, max_rows=cfg.max_rows, max_bytes=cfg.max_result_mb << 20)

    # -- scoring -----------------------------------------------------------------------------------
    def score(self, item: Item, options: SqlOptions) -> Result:
        """The item's result. What it runs is recorded for the group's clustering (equivalence.py)."""
        problem = _item_problem(item)
        if problem is not None:
            return Result.invalid(problem)
        fields = SqlFields.of(item)
        assert fields.db_id is not None and item.reference is not None and item.response is not None
        try:
            instances = self._instances(fields.db_id, options)
        except catalog.UnknownDatabase as exc:  # an ItemError: `invalid`
            return Result.of_error(exc)
        budget = Budget(self.settings.sql.deadline_s, self.settings.sql.query_timeout_s, self.recorded.run)
        dialect = DIALECTS[instances[0].engine]
        gold = self.read_gold(item.reference.strip().rstrip(";").strip(), dialect)
        if gold.refusal is not None:
            return Result.invalid(f"the reference is not one read-only query: {gold.refusal}")
        details: dict[str, Any] = {"db_id": fields.db_id, "engine": instances[0].engine}
        limit = self.settings.sql.max_response_chars
        sql = extract_sql(item.response[-limit:])
        cut = len(item.response) > limit
        if cut:  # a cut that goes unsaid reads as "the policy wrote no SQL" (issue 31)
            details["response_cut"] = {"chars": len(item.response), "kept_last": limit}
        if sql is None:
            where = (
                f"the response's last {limit:,} characters (of {len(item.response):,})"
                if cut
                else "the response"
            )
            return _reward(False, False, options, f"no SQL found in {where}", details=details)
        pred = self.read_prediction(sql, dialect, fields.dialect)
        details["notes"] = [*pred.notes] + ([f"sqlglot: {pred.parse_error}"] if pred.parse_error else [])
        if pred.refusal is not None:
            reason = f"rejected before execution: {pred.refusal}"
            return _reward(False, False, options, reason, extracted=sql, details=details)
        if constant_answer(pred.parsed):
            details["warnings"] = [
                "the prediction reads no table (a constant answer): possibly a hard-coded result"
            ]
            if not options.allow_constant and gold.tables != frozenset():
                reason = "the prediction reads no table while the reference does: a constant answer"
                return _reward(False, False, options, reason, extracted=pred.sql, details=details)
        ordered = {"strict": True, "ignore": False}.get(options.order, gold.ordered)
        details["order_enforced"] = ordered
        details["instances"] = []
        compared = _Compared(gold, pred, ordered, options, budget)
        for instance in instances:
            try:
                verdict = self._on_instance(instance, compared, details)
            except EngineUnavailable as exc:
                return Result.error(str(exc), extracted=pred.sql, details=details)
            if verdict is not None:
                return verdict.model_copy(update={"extracted": pred.sql})
        where = "every instance" if len(instances) > 1 else "the database"
        reason = f"{details['instances'][-1]['why']}, on {where}"
        if not options.allow_constant and self.settings.sql.perturb_rounds:
            outcome = self._check_dependence(item, instances[0], compared)
            details["data_check"] = {"status": outcome.status, "why": outcome.reason, **outcome.details}
            verdict = _dependence_verdict(outcome, options, details)
            if verdict is not None:
                return verdict.model_copy(update={"extracted": pred.sql})
        return _reward(True, True, options, reason, extracted=pred.sql, details=details)

    def _tolerance(self, options: SqlOptions) -> Tolerance:
        cfg = self.settings.sql
        return Tolerance(rel=cfg.rel_tol if options.rel_tol is None else options.rel_tol, abs=cfg.abs_tol)

    def _check_dependence(self, item: Item, instance: catalog.Instance, compared: _Compared) -> Outcome:
        """The prediction against the gold on perturbed copies of the main instance (dependence.py)."""
        gold, budget = compared.gold, compared.budget
        tol = self._tolerance(compared.options)

        def limits() -> tuple[QueryLimits, bool]:
            timeout_s, cut = budget.timeout()
            return self._limits(timeout_s), cut

        def match(engine: SqlEngine, gold_result: QueryResult, pred_result: QueryResult) -> Comparison:
            return self._match(engine, gold, gold_result, pred_result, compared.ordered, tol, budget)

        seed = f"{SqlFields.of(item).db_id}\x00{gold.sql}"
        originals = (compared.seen["gold"], compared.seen["pred"])
        engine = self._engine(instance)
        check = Check(
            engine, instance.location, seed, gold, compared.pred, originals, limits, match, tol, item.prompt
        )
        return self._data_check.run(replace(check, run=budget.run))

    def _on_instance(
        self, instance: catalog.Instance, compared: _Compared, details: dict[str, Any]
    ) -> Result | None:
        """None when the prediction matches on this instance, else the item's final result. The main
        instance's results are left in `compared.seen` (for the dependence check)."""
        gold, pred, options, budget = compared.gold, compared.pred, compared.options, compared.budget
        engine = self._engine(instance)
        where = "" if instance.label == "main" else f" on alternate instance {instance.label}"
        timeout_s, cut = budget.timeout()
        try:
            gold_result = self._run_gold(engine, instance, gold.sql, timeout_s, budget.run)
        except QueryError as exc:
            if exc.kind == TIMEOUT and cut:
                return Result.timeout(f"the item deadline cut the reference short{where}", details=details)
            reason = f"the reference query failed{where} ({exc.kind}): {exc.message}"
            return Result.invalid(reason, details=details)
        info: dict[str, Any] = {"instance": instance.label, "reference_rows": len(gold_result.rows)}
        details["instances"].append(info)
        timeout_s, cut = budget.timeout()
        try:
            pred_result = budget.run(engine, pred.sql, self._limits(timeout_s))
        except QueryError as exc:
            info.update(prediction_rows=None, match=False, why=f"{exc.kind}: {exc.message}")
            if exc.kind == TIMEOUT and cut:
                return Result.timeout(f"the item deadline cut the prediction short{where}", details=details)
            reason = f"the prediction did not run{where} ({exc.kind}): {exc.message}"
            return _reward(False, False, options, reason, details=details)
        if instance.label == "main":
            compared.seen.update(gold=gold_result, pred=pred_result)
        outcome = self._match(
            engine, gold, gold_result, pred_result, compared.ordered, self._tolerance(options), budget
        )
        info.update(prediction_rows=len(pred_result.rows), match=outcome.equal, why=outcome.reason)
        if outcome.equal:
            return None
        reason = outcome.reason
        if instance.label != "main":
            reason += f" (on alternate instance {instance.label}; the main instance matched)"
        return _reward(False, True, options, reason, details=details)

    def _match(
        self,
        engine: SqlEngine,
        gold: Analysis,
        gold_result: QueryResult,
        pred_result: QueryResult,
        ordered: bool,
        tol: Tolerance,
        budget: Budget,
    ) -> Comparison:
        """compare(), with the gold's ties and LIMIT cuts recovered on `engine` where order matters."""
        outcome = compare(
            gold_result.rows,
            pred_result.rows,
            gold_width=len(gold_result.columns),
            pred_width=len(pred_result.columns),
            ordered=ordered,
            tol=tol,
            blocks=lambda: self._tie_blocks(engine, gold, gold_result, budget),
        )
        if (
            not outcome.equal
            and ordered
            and self._limit_ties(engine, gold, gold_result, pred_result, tol, budget)
        ):
            outcome = Comparison(True, "same rows in the required order, up to ties cut by the LIMIT")
        return outcome

    def read_prediction(self, sql: str, dialect: str, source: str | None) -> Analysis:
        """sqlglot's reading of a prediction, cached: a group repeats answers, and its clustering reads
        them again (an Analysis is never modified)."""
        key = (sql, dialect, source)
        cached = self._pred_parsed.get(key)
        if cached is None:
            cached = self._pred_parsed[key] = analyse(sql, dialect, source)
        return cached

    def read_gold(self, sql: str, dialect: str) -> Analysis:
        """sqlglot's reading of the gold, cached: parsing costs about a millisecond a statement."""
        key = (sql, dialect)
        cached = self._gold_parsed.get(key)
        if cached is None:
            cached = self._gold_parsed[key] = analyse(sql, dialect)
        return cached

    def _run_gold(
        self, engine: SqlEngine, instance: catalog.Instance, sql: str, timeout_s: float, run: Run
    ) -> QueryResult:
        """The gold's result, cached per worker: an RL group scores many responses against one gold."""
        key = (instance.engine, instance.location, sql)
        cached = self._gold.get(key) if self._gold is not None else None
        if cached is not None:
            return cached
        result = run(engine, sql, self._limits(timeout_s))
        if self._gold is not None and len(result.rows) <= _MAX_CACHED_ROWS:
            self._gold[key] = result
        return result

    def _tie_blocks(
        self, engine: SqlEngine, gold: Analysis, gold_result: QueryResult, budget: Budget
    ) -> Blocks | None:
        """Ranges of gold rows tied on the sort key, or None when the key cannot be recovered."""
        keys = order_key_columns(gold.parsed)
        if keys is not None:
            return tie_blocks([tuple(row[k] for k in keys) for row in gold_result.rows])
        keyed = keyed_query(gold.parsed, engine.dialect)
        if keyed is None:
            return None
        sql, width = keyed
        result = self._rewrite_result(engine, sql, budget)
        if result is None:
            return None
        outputs = [tuple(map(canon, row[:-width])) for row in result.rows]
        if outputs != [tuple(map(canon, row)) for row in gold_result.rows]:
            return None  # the rewrite changed the result; do not trust its keys
        return tie_blocks([row[-width:] for row in result.rows])

    def _rewrite_result(self, engine: SqlEngine, sql: str, budget: Budget) -> QueryResult | None:
        """The result of a rewrite of the gold (its keys made visible) within the budget; None when it
        fails, and the rewrite cannot help."""
        try:
            return budget.run(engine, sql, self._limits(budget.timeout()[0]))
        except QueryError:
            return None

    def _limit_ties(
        self,
        engine: SqlEngine,
        gold: Analysis,
        gold_result: QueryResult,
        pred_result: QueryResult,
        tol: Tolerance,
        budget: Budget,
    ) -> bool:
        """Whether the prediction differs only in which tied rows the gold's LIMIT kept."""
        keyed = keyed_query(gold.parsed, engine.dialect, unlimited=True)
        same_shape = len(pred_result.rows) == len(gold_result.rows) > 0
        if keyed is None or not same_shape or len(pred_result.columns) != len(gold_result.columns):
            return False
        sql, width = keyed
        full = self._rewrite_result(engine, sql, budget)
        if full is None:
            return False
        outputs = [row[:-width] for row in full.rows]
        keys = [row[-width:] for row in full.rows]
        # The gold itself must be a valid cut of the rewritten query, else the rewrite is not trusted.
        if not outputs or not valid_limit_cut(gold_result.rows, outputs, keys, tol):
            return False
        for perm in column_matchings(outputs, pred_result.rows, tol, fits=values_within):
            permuted = [tuple(row[i] for i in perm) for row in pred_result.rows]
            if valid_limit_cut(permuted, outputs, keys, tol):
                return True
        return False

    def close(self) -> None:
        self._data_check.close()
        while self._engines:
            self._engines.popitem()  # closes it


def _item_problem(item: Item) -> str | None:
    if not item.reference or not item.reference.strip():
        return "sql items need a reference (the gold query)"
    fields = SqlFields.of(item)
    if not fields.db_id:
        return "sql items need a db_id (the name of a database the server knows)"
    if item.response is None:
        return "sql items need a response"
    if fields.dialect is not None:
        return known_dialect(fields.dialect)
    return None


def _dependence_verdict(outcome: Outcome, options: SqlOptions, details: dict[str, Any]) -> Result | None:
    """The item's result when the dependence check refuses the reward; None when it stands."""
    if outcome.status == "timeout":
        return Result.timeout(outcome.reason, details=details)
    if outcome.status not in ("constant", "differs", "fails"):
        return None
    if outcome.status == "constant":
        warning = "the prediction's result does not change with the data: possibly a hard-coded result"
        details.setdefault("warnings", []).append(warning)
    # A constant answer earns nothing, not even `executes_reward`: it did not compute anything.
    return _reward(False, outcome.status != "constant", options, outcome.reason, details=details)


def _reward(correct: bool, executed: bool, options: SqlOptions, reason: str, **fields: Any) -> Result:
    reward = 1.0 if correct else 0.0
    if options.reward == "graded" and executed and not correct:
        reward = options.executes_reward
    return Result.partial(correct, reward, reason, **fields)
