"""Does a gold query's result depend on the order rows happen to be stored in? (The sql task's
`Validation.recheck` for `assay validate`: run on golds that passed their probes.)

`SELECT name FROM t LIMIT 2` (no ORDER BY) or `... ORDER BY score DESC LIMIT 1` with a tie at the cut
answer differently on the same data stored in another order; a policy that is right then loses reward by
chance. The check copies the database with every table's rows inserted in reverse order (indexes rebuilt
after), reads the copy with SQLite's `reverse_unordered_selects` (so an index scan that fixes an order by
accident runs backwards too), runs the gold on both read-only under the scorer's limits, and compares the
results the way the scorer does (as multisets without ORDER BY, in order up to ties otherwise).

A reversed copy cannot move rows whose rowid is their key (an INTEGER PRIMARY KEY), so a gold with ORDER BY
and LIMIT is also checked directly: run without its LIMIT with the sort keys appended (the scorer's own
`keyed_query`), and see whether the cut falls inside a run of tied keys whose rows differ.

SQLite only (DuckDB and PostgreSQL have no rowid order to reverse; there neither check runs yet).
Databases larger than `MAX_BYTES` are not copied.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

from assay.registry import Finding, Recheck
from assay.settings import Settings
from assay.types import Item
from assay.verifiers.sql import catalog
from assay.verifiers.sql.compare import Tolerance, canon, compare, tie_blocks
from assay.verifiers.sql.engines import QueryError, QueryLimits, Row, SqlEngine, SqliteEngine, _authorize
from assay.verifiers.sql.fields import SqlFields
from assay.verifiers.sql.statement import Analysis, analyse, keyed_query, order_key_columns

MAX_BYTES = 256 << 20


class _Flipped(SqliteEngine):
    """The reversed copy, with unordered scans (table and index) run backwards as well."""

    def _connect(self) -> sqlite3.Connection:
        con = super()._connect()
        # The read-only authorizer refuses every PRAGMA but a few reads; this one only changes scan order.
        con.set_authorizer(None)
        con.execute("PRAGMA reverse_unordered_selects = 1")
        con.set_authorizer(_authorize)
        return con


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def reversed_copy(source: Path, target: Path) -> None:
    """Schema, then rows in reverse rowid order, then indexes, views and triggers."""
    with (
        closing(sqlite3.connect(f"file:{source}?mode=ro", uri=True)) as src,
        closing(sqlite3.connect(target)) as dst,
    ):
        objects = src.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
        tables = [name for kind, name, _ in objects if kind == "table"]
        for kind, _, sql in objects:
            if kind == "table":
                dst.execute(sql)
        for name in tables:
            try:
                rows = src.execute(f"SELECT * FROM {_quoted(name)} ORDER BY rowid DESC")
            except sqlite3.OperationalError:  # a WITHOUT ROWID table: its key fixes the order anyway
                rows = src.execute(f"SELECT * FROM {_quoted(name)}")
            marks = ", ".join("?" * len(rows.description))
            dst.executemany(f"INSERT INTO {_quoted(name)} VALUES ({marks})", rows)
        for kind, _, sql in objects:
            if kind != "table":
                dst.execute(sql)
        dst.commit()


def tie_at_cut(engine: SqlEngine, gold: Analysis, rows: Sequence[Row], limits: QueryLimits) -> str | None:
    """Why the gold's LIMIT cuts through rows tied on its ORDER BY keys (other rows could have been kept
    with equal right), or None. Needs a gold the scorer can rewrite with its keys (`keyed_query`)."""
    keyed = keyed_query(gold.parsed, engine.dialect, unlimited=True)
    if keyed is None or not rows:
        return None
    sql, width = keyed
    full = engine.run(sql, limits)
    n = len(rows)
    if len(full.rows) <= n:
        return None
    key = [canon(v) for v in full.rows[n - 1][-width:]]
    tied = [r for r in full.rows if [canon(v) for v in r[-width:]] == key]
    kept = {tuple(map(canon, r[:-width])) for r in full.rows[:n] if r in tied}
    left = {tuple(map(canon, r[:-width])) for r in full.rows[n:] if r in tied}
    if not left - kept:
        return None
    return (
        f"the LIMIT keeps {n} rows but {len(tied)} rows tie on the ORDER BY keys at the cut, so which ones "
        "the gold returns is up to the engine: add a key that breaks the tie"
    )


class OrderCheck(Recheck):
    """Reversed copies made once per database for one validation run; `close()` removes them."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._dir = tempfile.TemporaryDirectory(prefix="assay-validate-")
        self._copies: dict[str, Path] = {}
        self._entries: dict[str, catalog.Entry] | None = None

    def _copy(self, path: Path) -> Path:
        key = str(path)
        if key not in self._copies:
            target = Path(self._dir.name) / f"{len(self._copies)}.sqlite"
            reversed_copy(path, target)
            self._copies[key] = target
        return self._copies[key]

    def _sqlite_path(self, db_id: str) -> Path | None:
        cfg = self.settings.sql
        if self._entries is None:
            self._entries = catalog.scan(cfg.databases, cfg.postgres_dsn)
        try:
            instance = catalog.resolve(self._entries, db_id, "auto", alternates=False)[0]
        except catalog.UnknownDatabase:
            return None  # the reference probe reports it
        path = Path(instance.location)
        if instance.engine != "sqlite" or path.stat().st_size > MAX_BYTES:
            return None
        return path

    def findings(self, item: Item) -> list[Finding]:
        why = self.why(item)
        return [] if why is None else [Finding("order_dependent", why)]

    def why(self, item: Item) -> str | None:
        """Why the gold depends on storage order; None when it does not, or when that cannot be told."""
        db_id = SqlFields.of(item).db_id
        if item.task != "sql" or not db_id or not item.reference:
            return None
        path = self._sqlite_path(db_id)
        if path is None:
            return None
        gold = analyse(item.reference.strip().rstrip(";"), "sqlite")
        if gold.refusal is not None:
            return None
        cfg = self.settings.sql
        limits = QueryLimits(cfg.query_timeout_s, cfg.max_rows, cfg.max_result_mb << 20)
        stored, flipped = SqliteEngine(path), _Flipped(self._copy(path))
        try:
            a, b = stored.run(gold.sql, limits), flipped.run(gold.sql, limits)
            cut = tie_at_cut(stored, gold, a.rows, limits)
        except QueryError:
            return None  # the reference probe reports a gold that does not run
        finally:
            stored.close()
            flipped.close()
        if cut is not None:
            return cut
        keys = order_key_columns(gold.parsed)
        blocks = None if keys is None else tie_blocks([tuple(row[k] for k in keys) for row in a.rows])
        outcome = compare(
            a.rows,
            b.rows,
            gold_width=len(a.columns),
            pred_width=len(b.columns),
            ordered=gold.ordered,
            tol=Tolerance(rel=cfg.rel_tol, abs=cfg.abs_tol),
            blocks=lambda: blocks,
        )
        if outcome.equal:
            return None
        return (
            "the gold's result changes when the same rows are stored in another order "
            f"({outcome.reason}): add an ORDER BY that breaks ties, or drop the LIMIT"
        )

    def close(self) -> None:
        self._dir.cleanup()
