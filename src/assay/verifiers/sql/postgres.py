"""Read-only, bounded execution of one query on a PostgreSQL server (psycopg 3, imported lazily).

Layers, any one of which stops a write: the DSN's role should be read-only (SELECT grants only, and
`default_transaction_read_only`); every query runs in a transaction started `READ ONLY` that is always
rolled back (so even a `set_config(...)` disappears); the extended query protocol (`cursor.stream`)
refuses a second statement server-side. Deadlines: `SET LOCAL statement_timeout` on the server, a
client-side cancel shortly after it as a backstop, and the killable worker pool as the last resort.
Rows are streamed, so a cartesian explosion is cancelled at the row cap instead of filling memory.
"""

from __future__ import annotations

import threading
from typing import Any

from assay.errors import MissingExtraError
from assay.verifiers.sql.engines import (
    FAILED,
    OUT_OF_MEMORY,
    REFUSED,
    TIMEOUT,
    TOO_LARGE,
    EngineUnavailable,
    QueryError,
    QueryLimits,
    QueryResult,
    Row,
    SqlEngine,
    value_size,
)

_CANCEL_GRACE_S = 1.0  # the server's statement_timeout should fire first; this only backs it up


class PostgresEngine(SqlEngine):
    kind = "postgres"
    dialect = "postgres"

    def __init__(self, dsn: str, connect_timeout_s: float = 5.0) -> None:
        self.dsn = dsn
        self._connect_timeout = max(1, int(connect_timeout_s))
        self._con: Any = None

    def _connection(self) -> Any:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - psycopg is a base dependency of the sql task
            raise MissingExtraError("psycopg", "sql") from exc
        if self._con is not None and not self._con.closed and not self._con.broken:
            return self._con
        try:
            self._con = psycopg.connect(self.dsn, autocommit=False, connect_timeout=self._connect_timeout)
        except psycopg.Error as exc:
            raise EngineUnavailable(f"cannot connect to PostgreSQL: {exc}".strip()) from exc
        return self._con

    def run(self, sql: str, limits: QueryLimits) -> QueryResult:
        import psycopg
        from psycopg import errors

        con = self._connection()
        state = {"too_large": ""}
        watchdog = threading.Timer(limits.timeout_s + _CANCEL_GRACE_S, con.cancel)
        watchdog.start()
        try:
            with con.transaction(force_rollback=True):
                con.execute("SET TRANSACTION READ ONLY")
                con.execute(f"SET LOCAL statement_timeout = {max(1, int(limits.timeout_s * 1000))}")
                cursor = con.cursor()
                rows = self._stream(con, cursor, sql, limits, state)
                columns = [d.name for d in cursor.description or []]
        except QueryError:
            raise
        except MemoryError as exc:
            raise QueryError(TOO_LARGE, OUT_OF_MEMORY) from exc
        except errors.QueryCanceled as exc:
            if state["too_large"]:
                raise QueryError(TOO_LARGE, state["too_large"]) from exc
            raise QueryError(TIMEOUT, f"cancelled after {limits.timeout_s:g}s") from exc
        except (errors.ReadOnlySqlTransaction, errors.InsufficientPrivilege) as exc:
            raise QueryError(REFUSED, f"refused by the read-only guard: {_first_line(exc)}") from exc
        except errors.SyntaxError as exc:
            kind = REFUSED if "multiple commands" in str(exc) else FAILED
            raise QueryError(kind, _first_line(exc)) from exc
        except psycopg.OperationalError as exc:
            raise EngineUnavailable(f"PostgreSQL connection failed: {_first_line(exc)}") from exc
        except psycopg.Error as exc:
            raise QueryError(FAILED, _first_line(exc)) from exc
        finally:
            watchdog.cancel()
        if state["too_large"]:
            raise QueryError(TOO_LARGE, state["too_large"])
        return QueryResult(columns, rows)

    @staticmethod
    def _stream(con: Any, cursor: Any, sql: str, limits: QueryLimits, state: dict[str, str]) -> list[Row]:
        rows: list[Row] = []
        size = 0
        for row in cursor.stream(sql):
            rows.append(tuple(row))
            size += sum(value_size(v) for v in row)
            if len(rows) > limits.max_rows or size > limits.max_bytes:
                many = len(rows) > limits.max_rows
                state["too_large"] = f"more than {limits.max_rows} rows" if many else "result too large"
                con.cancel()  # leaving the stream early would otherwise wait for the whole result
                break
        return rows

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
