"""One place that finds the SQL in a response and reads it with sqlglot.

What sqlglot is used for: splitting and parsing (one statement only), a static SELECT-only check that
rejects obvious writes early and cheaply, transpiling a prediction from its stated dialect, and telling
whether the gold's top-level query has ORDER BY (and which output columns form the sort key, for ties).

What it is NOT used for: safety. A statement sqlglot cannot parse still goes to the engine, which is
read-only, authorised and bounded on its own (see engines.py); sqlglot's dialect coverage is incomplete
and refusing valid engine SQL because of a parser gap would be a false negative.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import SqlglotError

from assay.suggest import did_you_mean

# Fence tags taken as SQL. An untagged fence is the fallback when no tagged one exists.
_SQL_TAGS = {"sql", "sqlite", "postgres", "postgresql", "psql", "duckdb", "mysql", "tsql", "plsql"}
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)
# "the last SQL statement in the text": a SELECT/WITH/VALUES that starts a line, else an upper-case one
# anywhere (a lower-case "select" inside prose is English, not SQL).
_LINE_START = re.compile(r"^[ \t]*(?:SELECT|WITH|VALUES)\b", re.IGNORECASE | re.MULTILINE)
_UPPER = re.compile(r"\b(?:SELECT|WITH|VALUES)\b")
_END = re.compile(r";|\n[ \t]*\n")
# What may follow a ';' as a further statement of the same answer (`SELECT ...; DROP TABLE t`): the
# answer then is all of them, and more than one statement is never run.
_NEXT_STATEMENT = re.compile(
    r"[ \t]*\n?[ \t]*(?:--[^\n]*\n[ \t]*)*(?=(?:SELECT|WITH|VALUES|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|"
    r"ATTACH|DETACH|PRAGMA|REPLACE|TRUNCATE|COPY|SET|BEGIN|COMMIT|GRANT|REVOKE|VACUUM|EXEC|EXECUTE|CALL|"
    r"MERGE|UPSERT|LOAD|INSTALL|EXPORT|IMPORT)\b)",
    re.IGNORECASE,
)
# sqlglot needs seconds for a 100,000-character statement; past this the engine alone decides.
_MAX_PARSE_CHARS = 20_000
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Nodes that make a statement something other than a read-only query, wherever they appear (a
# data-modifying CTE in PostgreSQL is `WITH d AS (DELETE ... RETURNING *) SELECT ...`).
_WRITE_NODES: tuple[type[exp.Expression], ...] = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.Command,
    exp.Pragma,
    exp.Attach,
    exp.Detach,
    exp.Copy,
    exp.Set,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Use,
)


# Names people use for a dialect that sqlglot spells differently.
_ALIASES = {"postgresql": "postgres", "pg": "postgres", "sqlserver": "tsql", "mssql": "tsql"}


def dialect_name(name: str) -> str:
    """sqlglot's spelling of a dialect name (lower case, common aliases mapped)."""
    return _ALIASES.get(name.lower(), name.lower())


def known_dialect(name: str) -> str | None:
    """None if sqlglot knows `name` as a dialect, else a reason with a "did you mean"."""
    names = {n for n in Dialect.classes if n}
    if dialect_name(name) in names:
        return None
    return f'unknown SQL dialect "{name}"{did_you_mean(name.lower(), names)}'


def extract_sql(response: str) -> str | None:
    """The SQL of a response: the last ```sql fence, else the last SQL statement in the text."""
    fences = [(tag.lower(), body) for tag, body in _FENCE.findall(response)]
    tagged = [body for tag, body in fences if tag in _SQL_TAGS]
    untagged = [body for tag, body in fences if not tag]
    for body in (tagged or untagged)[::-1]:
        sql = _clean(body)
        if sql:
            return sql
    starts = list(_LINE_START.finditer(response)) or list(_UPPER.finditer(response))
    answer, covered = None, 0
    for match in starts:  # the last run of statements wins; one inside the previous run is part of it
        if match.start() >= covered:
            covered = _statements_end(response, match.start())
            answer = response[match.start() : covered]
    return _clean(answer) if answer is not None else None


def _statements_end(text: str, begin: int) -> int:
    """Where the statement at `begin` ends, including statements chained after it with ';'."""
    while True:
        end = _END.search(text, begin)
        if end is None:
            return len(text)
        if end.group() != ";":
            return end.start()
        chained = _NEXT_STATEMENT.match(text, end.end())
        if chained is None:
            return end.end()
        begin = chained.end()


def _clean(sql: str) -> str | None:
    sql = sql.strip().rstrip(";").strip()
    return sql or None


@dataclass
class Analysis:
    """What sqlglot could tell about one statement (in the engine's dialect)."""

    sql: str  # the text to run (transpiled when a dialect was stated)
    parsed: exp.Expression | None = None  # None when sqlglot could not parse it
    parse_error: str | None = None
    refusal: str | None = None  # set when the static check already knows it is not one read-only query
    notes: list[str] = field(default_factory=list)

    @property
    def ordered(self) -> bool:
        """Whether the top-level query has ORDER BY (not one inside a subquery or CTE)."""
        node = _unwrap(self.parsed) if self.parsed is not None else None
        if node is None:
            return _top_level_order_by(self.sql)
        return node.args.get("order") is not None

    @cached_property
    def tables(self) -> frozenset[str] | None:
        """`referenced_tables`, walked once: an Analysis is shared through the scorer's caches (scoring
        and the group's clustering read the same query's)."""
        found = referenced_tables(self.parsed)
        return None if found is None else frozenset(found)


def analyse(sql: str, engine_dialect: str, source_dialect: str | None = None) -> Analysis:
    """Parse one statement; transpile from `source_dialect`; run the static SELECT-only filter."""
    source_dialect = dialect_name(source_dialect) if source_dialect else None
    read = source_dialect or engine_dialect
    if len(sql) > _MAX_PARSE_CHARS:
        return Analysis(sql=sql, parse_error=f"longer than {_MAX_PARSE_CHARS} characters; not parsed")
    try:
        parsed = sqlglot.parse(sql, read=read)
        statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
    except (SqlglotError, RecursionError, ValueError) as exc:  # 200 nested parentheses overflow it
        return Analysis(sql=sql, parse_error=_first_line(exc))
    if len(statements) != 1:
        kinds = ", ".join(str(st.key).upper() for st in statements)
        many = f"{len(statements)} statements ({kinds}); exactly one read-only query is allowed"
        return Analysis(sql=sql, refusal=many)
    tree: Any = statements[0]  # sqlglot >= 30 types parse results as Expr
    analysis = Analysis(sql=sql, parsed=tree)
    refusal = _static_refusal(tree)
    if refusal is not None:
        analysis.refusal = refusal
        return analysis
    if source_dialect and source_dialect != engine_dialect:
        # A quoted plain name (MySQL's `name`) is case-insensitive in most dialects but case-sensitive
        # once written as "name" for PostgreSQL: unquote it so the engine folds case as the source did.
        for ident in tree.find_all(exp.Identifier):
            if ident.quoted and _PLAIN_NAME.fullmatch(ident.name):
                ident.set("quoted", False)
        try:
            analysis.sql = tree.sql(dialect=engine_dialect)
            analysis.parsed = cast(exp.Expression, sqlglot.parse_one(analysis.sql, read=engine_dialect))
            analysis.notes.append(f"transpiled from {source_dialect} to {engine_dialect}")
        except (SqlglotError, RecursionError, ValueError) as exc:
            analysis.notes.append(f"could not transpile from {source_dialect}: {_first_line(exc)}")
    return analysis


def constant_answer(tree: exp.Expression | None) -> bool:
    """Whether a query reads no table and no column: `VALUES (33)`, `SELECT 33`, a UNION of such.

    Such an answer cannot depend on the database: a possible hard-coded result.
    """
    node = _unwrap(tree)
    if not isinstance(node, exp.Query | exp.Values):
        return False
    return not any(True for _ in node.find_all(exp.Table, exp.Column, exp.From))


def _static_refusal(tree: exp.Expression) -> str | None:
    if not isinstance(_unwrap(tree), exp.Query | exp.Values):
        return f"not a query ({tree.key.upper()}); only SELECT is allowed"
    for node in tree.walk():
        if isinstance(node, _WRITE_NODES):
            return f"contains {node.key.upper()}; only read-only queries are allowed"
    return None


def _unwrap(tree: exp.Expression | None) -> exp.Expression | None:
    while isinstance(tree, exp.Subquery | exp.Paren):
        tree = tree.this
    return tree


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]


def _top_level_order_by(sql: str) -> bool:
    """Fallback when sqlglot cannot parse the gold: ORDER BY at parenthesis depth 0, outside quotes."""
    depth, quote, outer = 0, "", []
    for char in sql:
        if quote:
            quote = "" if char == quote else quote
            outer.append(" ")
        elif char in "'\"`":
            quote = char
            outer.append(" ")
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        else:
            outer.append(char if depth == 0 else " ")
    return re.search(r"\bORDER\s+BY\b", "".join(outer), re.IGNORECASE) is not None


def order_key_columns(tree: exp.Expression | None) -> list[int] | None:
    """Indexes of the output columns that make the top-level sort key, or None if some key is hidden.

    ORDER BY resolves a bare name against output column names first (SQL standard, SQLite, PostgreSQL,
    DuckDB), then an ordinal, then an expression equal to a projection.
    """
    node = _unwrap(tree)
    if node is None or node.args.get("order") is None:
        return None
    select: Any = node
    while isinstance(select, exp.SetOperation):
        select = _unwrap(select.this)
    if not isinstance(select, exp.Select):
        return None
    projections = select.expressions
    if any(isinstance(p, exp.Star) or (isinstance(p, exp.Column) and p.is_star) for p in projections):
        return None
    keys: list[int] = []
    for ordered in node.args["order"].expressions:
        index = _resolve_key(ordered.this, projections)
        if index is None:
            return None
        keys.append(index)
    return keys


def _resolve_key(key: exp.Expression, projections: list[exp.Expression]) -> int | None:
    if isinstance(key, exp.Literal) and not key.is_string and key.this.isdigit():
        index = int(key.this) - 1
        return index if 0 <= index < len(projections) else None
    if isinstance(key, exp.Column) and not key.table:
        named = [i for i, p in enumerate(projections) if p.alias_or_name.lower() == key.name.lower()]
        if len(named) == 1:
            return named[0]
    for i, projection in enumerate(projections):
        inner = projection.this if isinstance(projection, exp.Alias) else projection
        if inner == key:
            return i
    return None


def keyed_query(tree: exp.Expression | None, dialect: str, unlimited: bool = False) -> tuple[str, int] | None:
    """The gold with its sort-key expressions appended as extra columns, to find ties it hides.

    Only for a plain SELECT without DISTINCT, where extra projections change neither the rows nor their
    order. Returns (sql, number of key columns appended last), or None when that is not safe to build.
    With `unlimited`, also drops the LIMIT (only for a gold with LIMIT and no OFFSET).
    """
    node = _unwrap(tree)
    if not isinstance(node, exp.Select) or node.args.get("distinct") or node.args.get("order") is None:
        return None
    keys = [ordered.this for ordered in node.args["order"].expressions]
    if any(isinstance(key, exp.Literal) for key in keys):  # an ordinal would become a constant column
        return None
    if unlimited:  # the gold without its LIMIT, to see the rows tied with the last one it kept
        if node.args.get("limit") is None or node.args.get("offset") is not None:
            return None
        node = node.copy()
        node.set("limit", None)
    extra = [exp.alias_(key.copy(), f"assay_sort_key_{i}") for i, key in enumerate(keys)]
    try:
        return node.select(*extra, append=True).sql(dialect=dialect), len(extra)
    except (SqlglotError, RecursionError, ValueError):
        return None


def referenced_tables(tree: exp.Expression | None) -> set[str] | None:
    """Names of the tables and views a query reads (CTE names excluded); None when it was not parsed.

    A table function (`range(5)`, `generate_series`) is not a table of the database.
    """
    if tree is None:
        return None
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    names: set[str] = set()
    for table in tree.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier):
            continue
        if table.name.lower() in ctes and not table.db:
            continue
        names.add(table.name)
    return names


def literals(tree: exp.Expression | None) -> set[Any]:
    """The constants a query names (numbers and strings, a leading minus folded in): the gold's are the
    question's own values, which a perturbed copy keeps (perturb.Protected)."""
    if tree is None:
        return set()
    found: set[Any] = set()
    for node in tree.find_all(exp.Literal):
        text = str(node.this)
        sign = -1 if isinstance(node.parent, exp.Neg) else 1
        if node.is_string:
            found.add(text)
        number = _number(text)
        if number is not None:
            found.add(sign * number if not node.is_string else number)
    return found


def compared_texts(tree: exp.Expression | None) -> set[tuple[str, str]]:
    """(column name in lower case, text) for each text the query compares a column with (`city = 'Oslo'`,
    `city <> 'Oslo'`, `city IN ('Oslo', 'Lima')`): the values the question names, and where."""
    if tree is None:
        return set()
    found: set[tuple[str, str]] = set()
    for node in tree.find_all(exp.EQ, exp.NEQ, exp.In):
        if isinstance(node, exp.In):
            column, values = node.this, node.expressions
        else:
            sides = (node.this, node.expression)
            column = next((side for side in sides if isinstance(side, exp.Column)), None)
            values = [side for side in sides if side is not column]
        if isinstance(column, exp.Column):
            found |= {
                (column.name.lower(), str(v.this))
                for v in values
                if isinstance(v, exp.Literal) and v.is_string
            }
    return found


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None
