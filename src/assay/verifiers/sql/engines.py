"""Read-only, bounded execution of one query on SQLite and DuckDB (PostgreSQL: postgres.py).

Safety lives here, in the engines, not in a regex or in sqlglot:
- SQLite: opened with the URI `mode=ro`, `PRAGMA query_only`, `trusted_schema=0`, no attached databases
  (`SQLITE_LIMIT_ATTACHED=0`) and an authorizer that allows only reading (SELECT, READ, FUNCTION minus
  `load_extension`, RECURSIVE, a few read-only PRAGMAs) and denies everything else: writes, ATTACH (which
  `mode=ro` alone allows, and which creates files), `VACUUM INTO` (which writes a copy even from a
  read-only connection), triggers, transactions. Python's sqlite3 refuses a second statement.
  Deadlines: a progress handler interrupts the running query (BIRD's `func_timeout` cannot: the query
  keeps a core busy after the "timeout"). Memory: `hard_heap_limit` and `SQLITE_LIMIT_LENGTH`.
- DuckDB: `read_only=True`, `enable_external_access=false` (else `COPY ... TO` and `read_csv('/etc/...')`
  work on a read-only connection), no extension autoload, locked configuration, one thread, a memory
  limit, and no spilling unless `Settings.sql.duckdb_spill_dir` is set (the default spill directory is
  "<database>.tmp", created next to the database). `execute("SELECT 1; DROP ...")` runs both statements, so
  the engine splits first and allows exactly one statement of type SELECT. Deadlines: `interrupt()`
  from a timer.
Both: at most `max_rows` rows and about `max_bytes` of values are fetched; beyond that the result is
"too large", never silently truncated.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from assay.errors import AssayError, BackendUnavailable, MissingExtraError

Row = tuple[Any, ...]

REFUSED = "refused"  # the engine would not run it (a write, a second statement, an extension)
FAILED = "failed"  # it ran and raised (syntax, unknown column, type error)
TIMEOUT = "timeout"  # it ran out of time
TOO_LARGE = "too_large"  # its result passed the row or size cap
OUT_OF_MEMORY = "the worker ran out of memory (its address-space limit) running the query"


DIALECTS = {"sqlite": "sqlite", "duckdb": "duckdb", "postgres": "postgres"}  # engine kind -> sqlglot's name


class QueryError(AssayError):
    """A query did not produce a usable result; `kind` says why (one of the constants above). The scorer
    decides what that means: the reference's failure is `invalid`/`timeout`, the prediction's a wrong
    answer."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class EngineUnavailable(BackendUnavailable):
    """The database cannot be opened or reached: infrastructure, never the policy's fault."""


@dataclass(frozen=True)
class QueryLimits:
    """What one query may use: its wall time and the rows and bytes of its result."""

    timeout_s: float
    max_rows: int
    max_bytes: int


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[Row]


class SqlEngine:
    """One database instance on one engine. Built once per worker, reused across items."""

    kind: ClassVar[str]
    dialect: ClassVar[str]  # sqlglot's name for the engine's dialect

    def run(self, sql: str, limits: QueryLimits) -> QueryResult:
        raise NotImplementedError

    def close(self) -> None:
        """Release the connection."""


def value_size(value: Any) -> int:
    """About how many bytes a fetched value holds: text and blobs by length, lists and structs (DuckDB)
    by their members, anything else 16."""
    if isinstance(value, str | bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, list | tuple):
        return 16 + sum(value_size(v) for v in value)
    if isinstance(value, dict):
        return 16 + sum(value_size(k) + value_size(v) for k, v in value.items())
    return 16


_BATCH_BYTES = 1 << 20  # a fetch asks for about this many bytes of rows at most


def collect(fetchmany: Callable[[int], Sequence[Row]], limits: QueryLimits) -> list[Row]:
    """Fetch up to the caps; raise TOO_LARGE past them instead of truncating.

    The caps are checked after every row, and each fetch asks for as many rows as fit in about 1 MiB at
    the sizes seen so far (one row at first): with 512-row batches a query of 40 rows of 48 MB each was
    fetched whole, 1.9 GB, before the 64 MB cap was looked at (issue 28).
    """
    rows: list[Row] = []
    size = 0
    batch = 1
    while True:
        fetched = fetchmany(batch)
        if not fetched:
            return rows
        for row in fetched:
            size += sum(value_size(v) for v in row)
            rows.append(tuple(row))
            if len(rows) > limits.max_rows:
                raise QueryError(TOO_LARGE, f"more than {limits.max_rows} rows")
            if size > limits.max_bytes:
                raise QueryError(TOO_LARGE, f"more than {limits.max_bytes} bytes of values")
        batch = max(1, min(512, _BATCH_BYTES * len(rows) // max(1, size)))


# SQLite authorizer: allow-list of action codes; everything not listed is denied.
_READ_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
_DENIED_FUNCTIONS = {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"}
_READ_PRAGMAS = {"table_info", "table_xinfo", "index_list", "index_info", "index_xinfo", "foreign_key_list"}


def _authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _src: str | None) -> int:
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and (arg1 or "").lower() in _READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


class SqliteEngine(SqlEngine):
    kind = "sqlite"
    dialect = "sqlite"

    def __init__(self, path: Path, heap_limit_mb: int = 1024, max_value_bytes: int = 16 << 20) -> None:
        self.path = path
        self._heap_limit = heap_limit_mb << 20
        self._max_value = max_value_bytes
        self._con: sqlite3.Connection | None = None
        self._deadline = 0.0
        self._timed_out = False

    def _open(self) -> sqlite3.Connection:
        """The connection, before the read-only guard (scratch.py opens an in-memory one instead)."""
        uri = "file:" + urllib.parse.quote(str(self.path.resolve())) + "?mode=ro"
        return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)

    def _connect(self) -> sqlite3.Connection:
        try:
            con = self._open()
            con.execute("SELECT count(*) FROM sqlite_master").fetchone()  # fail here on a non-database
            con.execute("PRAGMA query_only = 1")
            con.execute("PRAGMA trusted_schema = 0")
            con.execute(f"PRAGMA hard_heap_limit = {int(self._heap_limit)}")
        except sqlite3.Error as exc:
            raise EngineUnavailable(f"cannot open SQLite database {self.path.name}: {exc}") from exc
        con.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, self._max_value)
        con.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, 1 << 20)
        con.set_authorizer(_authorize)
        return con

    def _tick(self) -> int:
        if time.monotonic() > self._deadline:
            self._timed_out = True
            return 1  # non-zero interrupts the running statement
        return 0

    def run(self, sql: str, limits: QueryLimits) -> QueryResult:
        if self._con is None:
            self._con = self._connect()
        con = self._con
        self._deadline = time.monotonic() + limits.timeout_s
        self._timed_out = False
        con.set_progress_handler(self._tick, 1000)
        cursor: sqlite3.Cursor | None = None
        try:
            cursor = con.execute(sql)
            if cursor.description is None:
                raise QueryError(REFUSED, "the statement returns no rows; only queries are allowed")
            columns = [d[0] for d in cursor.description]
            return QueryResult(columns, collect(cursor.fetchmany, limits))
        except MemoryError as exc:  # the worker's address-space limit (Settings.worker_memory_mb)
            raise QueryError(TOO_LARGE, OUT_OF_MEMORY) from exc
        except (sqlite3.ProgrammingError, sqlite3.Warning) as exc:
            raise QueryError(REFUSED, f"refused: {exc}") from exc
        except sqlite3.Error as exc:
            raise self._classify(exc, limits) from exc
        finally:
            if cursor is not None:
                cursor.close()
            con.set_progress_handler(None, 0)

    def _classify(self, exc: sqlite3.Error, limits: QueryLimits) -> QueryError:
        text = str(exc)
        if self._timed_out:
            return QueryError(TIMEOUT, f"interrupted after {limits.timeout_s:g}s")
        if "authoriz" in text or "readonly" in text or "read-only" in text:
            return QueryError(REFUSED, f"refused by the read-only guard: {text}")
        if "too big" in text or "out of memory" in text:
            return QueryError(TOO_LARGE, text)
        return QueryError(FAILED, text)

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def _duckdb() -> Any:
    """The duckdb module, imported only when a DuckDB database is used."""
    try:
        import duckdb
    except ImportError as exc:
        raise MissingExtraError("duckdb", "sql") from exc
    return duckdb


class DuckdbEngine(SqlEngine):
    kind = "duckdb"
    dialect = "duckdb"

    def __init__(self, path: Path, memory_limit_mb: int = 1024, spill_dir: Path | None = None) -> None:
        self.path = path
        self._memory_limit_mb = memory_limit_mb
        self._spill_dir = spill_dir
        self._con: Any = None
        self._interrupted = False

    def _config(self) -> dict[str, Any]:
        """The connection's settings (scratch.py reuses them for an in-memory copy)."""
        # DuckDB spills to "<database>.tmp" by default: a directory created next to the database. Spill
        # only into the operator's directory, else not at all (a query past memory_limit is too large).
        # Every engine of a process must use the same configuration: DuckDB shares one instance per file.
        spill: dict[str, Any] = {"temp_directory": ""}
        if self._spill_dir is not None:
            spill = {
                "temp_directory": str(self._spill_dir),
                "max_temp_directory_size": f"{4 * self._memory_limit_mb}MB",
            }
        config: dict[str, Any] = {  # external access first: DuckDB 2.0 refuses temp_directory before it
            "enable_external_access": False,
            **spill,
            "autoload_known_extensions": False,
            "autoinstall_known_extensions": False,
            "allow_community_extensions": False,
            "threads": 1,
            "memory_limit": f"{self._memory_limit_mb}MB",
            "lock_configuration": True,
        }
        return config

    def _connect(self) -> Any:
        duckdb = _duckdb()
        try:
            return duckdb.connect(str(self.path), read_only=True, config=self._config())
        except duckdb.Error as exc:
            raise EngineUnavailable(f"cannot open DuckDB database {self.path.name}: {exc}") from exc

    def _interrupt(self) -> None:
        self._interrupted = True
        self._con.interrupt()

    def run(self, sql: str, limits: QueryLimits) -> QueryResult:
        duckdb = _duckdb()
        if self._con is None:
            self._con = self._connect()
        con = self._con
        try:
            statements = con.extract_statements(sql)
        except duckdb.Error as exc:
            raise QueryError(FAILED, str(exc).strip()) from exc
        if len(statements) != 1:
            raise QueryError(REFUSED, f"{len(statements)} statements; exactly one query is allowed")
        if statements[0].type != duckdb.StatementType.SELECT:
            raise QueryError(REFUSED, f"a {statements[0].type.name} statement; only SELECT is allowed")
        self._interrupted = False
        timer = threading.Timer(limits.timeout_s, self._interrupt)
        timer.start()
        try:
            con.execute(sql)
            columns = [d[0] for d in con.description or []]
            return QueryResult(columns, collect(con.fetchmany, limits))
        except MemoryError as exc:
            raise QueryError(TOO_LARGE, OUT_OF_MEMORY) from exc
        except duckdb.Error as exc:
            if self._interrupted:
                raise QueryError(TIMEOUT, f"interrupted after {limits.timeout_s:g}s") from exc
            kind = REFUSED if isinstance(exc, duckdb.PermissionException) else FAILED
            if "out of memory" in str(exc).lower():
                kind = TOO_LARGE
            raise QueryError(kind, str(exc).strip().splitlines()[0]) from exc
        finally:
            timer.cancel()

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None
