"""Perturbed copies of a PostgreSQL database: temporary tables in a session of the scorer's own (issue 28).

Why temporary tables, and not the original perturbed in place inside a transaction that is rolled back:
- Privileges. In place needs a role that may DELETE and INSERT on the real tables: one bug (a commit, an
  autocommit connection) and the database is damaged. A temporary table needs only the TEMPORARY
  privilege on the database (PostgreSQL grants it to PUBLIC by default), so the task's role stays
  read-only on every persistent object; nothing the scorer or a prediction does can change one.
- Isolation. A session's temporary tables are invisible to every other session, and another session's
  attempt to read them through `pg_temp_N.t` is refused by the server ("cannot access temporary tables
  of other sessions"). Two items on one database at once each have their own copy in their own
  session: nothing to lock, nothing to wait for. In place, their deletes would take row locks and
  serialise every worker on one database, hold back vacuum, and leave dead tuples in the real tables.
- Cleanup. The server drops a session's temporary tables when its backend ends, killed worker included;
  nothing persistent is ever created, so there is nothing to clean up after a crash.
- Reuse. A copy is committed in its session, so it is kept for the next response to the same gold (an
  RL group) at no further cost; in place, every response would pay for the perturbation again.

What it costs, and how it is met:
- Naming around the copy. Unqualified names resolve to the copy (the session's search_path is set to
  `pg_temp` first); a qualified one (`public.t`, `"public"."t"`, `db.public.t`) would read the
  original, so every query run on a copy (gold, prediction and the scorer's own tie queries) has the
  schema of each copied table rewritten to `pg_temp`, token by token with sqlglot's tokenizer (the text
  is otherwise kept exactly; no name inside a string literal is touched). A query that sets
  `search_path` itself cannot move its own names (they are resolved before it runs), and the setting
  is undone by the rollback that ends every query. What still reads the original is SQL built at run
  time from a string (`query_to_xml('SELECT ... FROM public.t', ...)`): such a query sees the original
  on the copy, so its result does not move, and it is judged `constant` (no reward). Reaching around
  the copy can only lose a reward, never earn one: on a copy the prediction must match the gold's
  result on data it has not seen.
- Telling the copy apart. A query can see that it runs on a copy (`pg_my_temp_schema()`,
  `pg_current_xact_id_if_assigned()`, `pg_stat_*`, row counts); that gains nothing, for the same
  reason: what it returns there must still equal the gold's result on the perturbed data.
- Writes. Each query on a copy runs exactly as on the original (postgres.py: a `READ ONLY`
  transaction, always rolled back, one statement, `statement_timeout`). PostgreSQL lets a read-only
  transaction write temporary tables (a data-modifying CTE; sqlglot's static check refuses those
  before they run), and any such write is rolled back with the query, so the copy is the same for the
  next query. Only the scorer's build step (one READ WRITE transaction, committed) writes, and only
  temporary tables.
- A lost session. The connection of a copy is never reopened: a fresh session would have no temporary
  tables and silently read the original. A lost connection is EngineUnavailable; dependence.py
  rebuilds the copy once and, when the prediction loses it again (`pg_terminate_backend` of its own
  backend), judges it `fails`.
Views (in the schemas of the search path) are recreated as temporary views over the copies, their
definitions rewritten the same way; one that cannot be recreated is listed in `details` and a query
reading it reads the original view. Each copy holds one connection: a worker keeps at most
2 x `perturb_rounds` of them (dependence.py).
"""

from __future__ import annotations

import re
from typing import Any

from assay.verifiers.sql.engines import EngineUnavailable, QueryLimits, QueryResult
from assay.verifiers.sql.perturb import Row, Snapshot, TableData, quote
from assay.verifiers.sql.postgres import PostgresEngine, _first_line

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_TEXT_OID = 25
APPLICATION_NAME = "assay perturbed copy"  # how an operator finds these sessions in pg_stat_activity


def list_relations(engine: PostgresEngine, limits: QueryLimits) -> Snapshot:
    """Readable tables (plain, partitioned, materialized, foreign) and views on the search path, through
    the engine's guarded `run` like any other query. A name on two schemas of the path: the first."""
    listing = Snapshot()
    path = "current_schemas(false)"
    relations = engine.run(
        "SELECT n.nspname, c.relname, c.relkind, "
        "CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid, true) END "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE n.nspname = ANY ({path}) AND c.relkind IN ('r', 'p', 'm', 'f', 'v') "
        "AND has_table_privilege(c.oid, 'SELECT') "
        f"ORDER BY array_position({path}, n.nspname::text), c.oid",
        limits,
    )
    columns = engine.run(
        "SELECT c.relname, n.nspname, a.attname, a.atttypid::int, a.attgenerated <> '' "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        f"WHERE n.nspname = ANY ({path}) AND c.relkind IN ('r', 'p', 'm', 'f') "
        "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.oid, a.attnum",
        limits,
    )
    by_table: dict[tuple[str, str], list[tuple[str, int, bool]]] = {}
    for table, schema, column, oid, generated in columns.rows:
        by_table.setdefault((schema, table), []).append((column, oid, generated))
    for schema, name, kind, definition in relations.rows:
        if kind == "v":
            listing.qualified_views.append((schema, name, definition))
        elif name in listing.tables:
            listing.skipped.append(f"{schema}.{name}")  # shadowed by a name earlier on the path
        else:
            cols = by_table.get((schema, name), [])
            plain = [column for column, _, generated in cols if not generated]
            source = f"{quote(schema)}.{quote(name)}"
            listing.tables[name] = TableData(
                name,
                plain,
                [],
                create=f"CREATE TEMP TABLE {quote(name)} (LIKE {source} INCLUDING GENERATED)",
                insert_columns=plain,
                types=[str(oid) for _, oid, generated in cols if not generated],
                source=source,
            )
            listing.schemas[name] = schema
    return listing


def rewrite(sql: str, copied: set[tuple[str, str]]) -> str:
    """`sql` with every `schema.table` of a copied (schema, table) pair read from `pg_temp` instead.

    Token by token (sqlglot's PostgreSQL tokenizer), so the rest of the text is kept byte for byte and
    names inside strings are left alone. When the text does not tokenize it is returned as it is: an
    unqualified name still reads the copy, a qualified one the original (which only loses a reward).
    """
    if not copied or "." not in sql:
        return sql
    from sqlglot.dialects.dialect import Dialect
    from sqlglot.errors import SqlglotError

    try:
        tokens = Dialect.get_or_raise("postgres").tokenize(sql)
    except (SqlglotError, ValueError, RecursionError):
        return sql
    names = [_name(sql, token) for token in tokens]
    cuts: list[tuple[int, int]] = []
    for i in range(len(tokens) - 2):
        schema, table = names[i], names[i + 2]  # None where the token is not a name
        if tokens[i + 1].text == "." and (schema, table) in copied:
            cuts.append((tokens[i].start, tokens[i].end + 1))
    for start, end in reversed(cuts):
        sql = sql[:start] + "pg_temp" + sql[end:]
    return sql


def _name(sql: str, token: Any) -> str | None:
    """The name a token spells as PostgreSQL reads it (unquoted: folded to lower case), or None."""
    raw = sql[token.start : token.end + 1]
    if raw.startswith('"') and raw == quote(token.text):
        return str(token.text)
    if raw == token.text and _WORD.fullmatch(raw):
        return raw.lower()
    return None


class ScratchPostgres(PostgresEngine):
    """A session of its own holding the perturbed copy as temporary tables; queries run on it under the
    same guards as on the original, with qualified names rewritten to the copy."""

    def __init__(
        self, dsn: str, snap: Snapshot, rows: dict[str, list[Row]], connect_timeout_s: float
    ) -> None:
        super().__init__(dsn, connect_timeout_s=connect_timeout_s)
        self._snap, self._rows = snap, rows
        self._copied: set[tuple[str, str]] = set()
        self.views_not_copied: list[str] = []

    def build(self, timeout_s: float) -> None:
        con = super()._connection()
        try:
            with con.transaction():
                con.execute("SET TRANSACTION READ WRITE")  # the role's default is read-only
                con.execute(f"SET LOCAL statement_timeout = {max(1, int(timeout_s * 1000))}")
                for name, table in self._snap.tables.items():
                    con.execute(table.create)
                    _copy_rows(con, table, self._rows[name])
                    con.execute(f"ANALYZE {quote(name)}")  # autovacuum never sees temporary tables
                    self._copied.add((self._snap.schemas[name], name))
                self._views(con)
                path = "'pg_temp, ' || current_setting('search_path')"
                con.execute(f"SELECT set_config('search_path', {path}, false)")
                con.execute(f"SELECT set_config('application_name', '{APPLICATION_NAME}', false)")
        except Exception as exc:
            self.close()
            raise EngineUnavailable(f"cannot build the perturbed copy: {_first_line(exc)}") from exc

    def _views(self, con: Any) -> None:
        for schema, name, definition in self._snap.qualified_views:
            try:
                with con.transaction():  # a savepoint: one view that fails leaves the others
                    con.execute(f"CREATE TEMP VIEW {quote(name)} AS {rewrite(definition, self._copied)}")
                self._copied.add((schema, name))
            except Exception:
                self.views_not_copied.append(f"{schema}.{name}")

    def _connection(self) -> Any:
        """Never a new session: it would hold no copy, and a query would silently read the original."""
        con = self._con
        if con is None or con.closed or con.broken:
            raise EngineUnavailable("the connection holding the perturbed copy was lost")
        return con

    def run(self, sql: str, limits: QueryLimits) -> QueryResult:
        return super().run(rewrite(sql, self._copied), limits)


def _copy_rows(con: Any, table: TableData, rows: list[Row]) -> None:
    """COPY the rows in, each column dumped for its type; a type psycopg has no dumper for (an enum, a
    domain, a geometric type) is sent as its text, which the server parses as it would any input."""
    from psycopg import errors, pq
    from psycopg.adapt import PyFormat, Transformer

    if not table.insert_columns or not rows:
        return
    oids, texts = [], set()
    for index, oid in enumerate(int(kind) for kind in table.types):
        try:
            con.adapters.get_dumper_by_oid(oid, pq.Format.TEXT)
            oids.append(oid)
        except errors.ProgrammingError:
            oids.append(_TEXT_OID)
            texts.add(index)
    dump = Transformer(con)

    def text(value: Any) -> Any:  # psycopg's text form of a value (a domain over int loads as int)
        if value is None or isinstance(value, str):
            return value
        return bytes(dump.get_dumper(value, PyFormat.TEXT).dump(value) or b"").decode()

    columns = ", ".join(quote(c) for c in table.insert_columns)
    with con.cursor().copy(f"COPY {quote(table.name)} ({columns}) FROM STDIN") as copy:
        copy.set_types(oids)
        for row in rows:
            copy.write_row([text(v) if i in texts else v for i, v in enumerate(row)] if texts else row)
