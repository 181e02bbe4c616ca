"""The `sql` tool: read-only queries against the session item's database, shown as a truncated table.

The engines are the `sql` task's own (`assay.verifiers.sql.engines`): SQLite opened read-only with an
allow-list authorizer, DuckDB read-only without external access, one statement per call, a deadline and
row/byte caps enforced by the engine, never by a regex. A refused or failing query is a `tool_error`
observation that quotes the engine's message, as SkyRL-SQL's exploratory turns show it to the model.
The connection is per session (opened at create, closed at the end), in the server process: like the
scorer's, it is bounded by the engine's deadline and SQLite's heap limit.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from assay.sessions.tools import (
    OK,
    TOOL_ERROR,
    Observation,
    SessionContext,
    Tool,
    ToolArguments,
    ToolUnavailable,
)
from assay.types import Item
from assay.verifiers.sql.fields import SqlFields

_ROWS_SHOWN = 20
_CELL_CHARS = 60


class SqlArguments(ToolArguments):
    query: str = Field(
        description="One read-only SQL query (SELECT / WITH) on the task's database.", max_length=1 << 16
    )


class SqlTool(Tool[SqlArguments]):
    name = "sql"
    description = (
        "Run one read-only SQL query on the task's database and see the first rows of its result"
        " (at most 20 rows are shown; the total row count is given)."
    )
    Arguments = SqlArguments

    def check(self, item: Item) -> None:
        if not SqlFields.of(item).db_id:
            raise ToolUnavailable("the sql tool needs an item with a db_id")

    def open(self, session: SessionContext) -> Any:
        from assay.verifiers.sql import catalog
        from assay.verifiers.sql.scorer import SqlOptions, open_engine

        item, cfg = session.item, self.settings.sql
        options = SqlOptions.model_validate(item.options) if item.task == "sql" else SqlOptions()
        entries = catalog.scan(cfg.databases, cfg.postgres_dsn)
        db_id = str(SqlFields.of(item).db_id)
        instance = catalog.resolve(entries, db_id, options.engine, alternates=False)[0]
        return open_engine(instance, self.settings)

    def call(self, session: SessionContext, state: Any, arguments: SqlArguments) -> Observation:
        from assay.verifiers.sql.engines import QueryError, QueryLimits

        cfg = self.settings.sql
        timeout = min(float(session.limits.call_wall_s or cfg.query_timeout_s), cfg.query_timeout_s)
        limits = QueryLimits(timeout_s=timeout, max_rows=cfg.max_rows, max_bytes=cfg.max_result_mb << 20)
        try:
            result = state.run(arguments.query, limits)
        except QueryError as exc:
            return Observation(f"SQL error ({exc.kind}): {exc.message}", TOOL_ERROR, f"query_{exc.kind}")
        text = render(result.columns, result.rows)
        cap = int(session.limits.output_bytes or 8192)
        data = text.encode()
        if len(data) > cap:
            cut = len(data) - cap
            text = data[:cap].decode("utf-8", "ignore") + f"\n[... {cut} more bytes cut]"
            return Observation(text, OK, truncated=cut, details={"rows": len(result.rows)})
        return Observation(text, OK, details={"rows": len(result.rows)})

    def close(self, state: Any) -> None:
        state.close()


def _cell(value: Any) -> str:
    text = "NULL" if value is None else str(value)
    text = text.replace("\n", "\\n").replace("|", "\\|")
    return text if len(text) <= _CELL_CHARS else text[: _CELL_CHARS - 3] + "..."


def render(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    """A Markdown table of the first rows, then how many there are in all."""
    head = "| " + " | ".join(_cell(c) for c in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows[:_ROWS_SHOWN]]
    more = f"\n({len(rows)} rows; the first {_ROWS_SHOWN} shown)" if len(rows) > _ROWS_SHOWN else ""
    count = "" if more else f"\n({len(rows)} row{'s' if len(rows) != 1 else ''})"
    return "\n".join([head, rule, *body]) + (more or count)
