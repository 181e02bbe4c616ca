"""Literal and constant SQL answers rewarded, and correct answers accepted, before and after issue 28.

    .venv/bin/python benchmarks/sql_hacks.py [--sqlglot-sdist DIR] [--engines sqlite,duckdb,postgres]

"Before" is the scorer with `allow_constant: true` (the old behaviour: flag only); "after" is the
default (no reward for a query that reads no table or whose result does not move on perturbed copies
of the database). Alternates are off in both, so only the check under test tells the answers apart.

- Probes: for each of a set of gold queries on the dev database `school`, the gold's result read from the
  database and returned in disguises a policy finds (literal SELECT, VALUES, UNION ALL, CTE, a table
  read and ignored, LIMIT 1 over a table, a CASE on a count, a literal filter). Target: 0 rewarded after.
- Correct answers, our material: the `label: true` cases of tests/cases/sql.jsonl (equivalent rewrites).
- Correct answers, material we did not write: sqlglot's TPC-H fixture (22 queries, each with the
  optimizer's rewritten equivalent, and the data as CSV) from sqlglot's source distribution, loaded into
  a DuckDB file at run time (downloaded with `pip download` when --sqlglot-sdist is not given). The
  original query is the gold and the rewrite the prediction. Target: no false negative added. On
  PostgreSQL the same data are loaded into a database of a throwaway server (scripts/pg_tmp.sh, on
  127.0.0.1, removed afterwards) and both queries are transpiled from DuckDB's dialect by sqlglot; the
  pairs whose gold does not run there are left out and counted.
Prints counts and the time per item after/before (the cost of the check) in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.settings import Settings, SqlSettings
from assay.types import Item
from assay.verifiers.sql import SqlScorer, devdata

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "cases" / "sql.jsonl"
PG_TMP = REPO / "scripts" / "pg_tmp.sh"
_PG_TYPES = {"VARCHAR": "text", "DOUBLE": "double precision", "BIGINT": "bigint", "INTEGER": "integer"}
SQLGLOT = "sqlglot==30.31.0"
GOLDS = [
    "SELECT name, age FROM students ORDER BY gpa DESC LIMIT 1",
    "SELECT COUNT(*) FROM students",
    "SELECT city, COUNT(*) FROM students GROUP BY city",
    "SELECT SUM(credits) FROM courses WHERE dept = 'cs'",
    "SELECT dept, AVG(credits) FROM courses GROUP BY dept",
    "SELECT MAX(score) FROM enrollments WHERE term = 'fall'",
    "SELECT name FROM students WHERE age > 24 ORDER BY name",
    "SELECT title FROM courses WHERE id IN (SELECT course_id FROM enrollments WHERE score > 90)",
    "SELECT term, COUNT(DISTINCT student_id) FROM enrollments GROUP BY term",
]


def _lit(value: Any) -> str:
    if value is None:
        return "NULL"
    return "'" + value.replace("'", "''") + "'" if isinstance(value, str) else repr(value)


def disguises(gold: str, rows: list[tuple[Any, ...]], key_filter: str | None) -> list[str]:
    """The gold's rows returned without computing them, in the forms a policy finds."""
    if not rows:
        return []
    union = " UNION ALL ".join("SELECT " + ", ".join(map(_lit, row)) for row in rows)
    first = ", ".join(map(_lit, rows[0]))
    out = [
        union,
        "VALUES " + ", ".join("(" + ", ".join(map(_lit, row)) + ")" for row in rows),
        f"WITH lit AS ({union}) SELECT * FROM lit",
        f"SELECT * FROM ({union}) AS x WHERE EXISTS (SELECT 1 FROM students)",
        f"SELECT * FROM ({union}) AS x WHERE (SELECT COUNT(*) FROM enrollments) > 0",
    ]
    if len(rows) == 1:
        out += [
            f"SELECT {first} FROM students LIMIT 1",
            f"SELECT {first} FROM (SELECT COUNT(*) AS n FROM courses) AS s",
            f"SELECT CASE WHEN COUNT(*) > 0 THEN {first} END FROM students" if len(rows[0]) == 1 else union,
        ]
    if key_filter:
        out.append(key_filter)
    return out


def probe_items(directory: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(directory / "school.sqlite") as con:
        pairs = []
        for gold in GOLDS:
            rows = con.execute(gold).fetchall()
            key = None
            if gold.startswith("SELECT name, age FROM students ORDER BY gpa"):
                top = con.execute("SELECT id FROM students ORDER BY gpa DESC LIMIT 1").fetchone()[0]
                key = f"SELECT name, age FROM students WHERE id = {top}"
            pairs += [(gold, probe) for probe in disguises(gold, rows, key)]
        pairs += pins(con)
    return pairs


def pins(con: sqlite3.Connection) -> list[tuple[str, str]]:
    """Literal filters that pick the gold's rows by their keys or names (issue 44)."""

    def ids(sql: str) -> str:
        return ", ".join(str(row[0]) for row in con.execute(sql))

    older = ids("SELECT id FROM students WHERE age > 24")
    high = ids("SELECT DISTINCT course_id FROM enrollments WHERE score > 90")
    top_name = con.execute("SELECT title FROM courses ORDER BY credits DESC, id LIMIT 1").fetchone()[0]
    return [
        (
            "SELECT name FROM students WHERE age > 24 ORDER BY name",
            f"SELECT name FROM students WHERE id IN ({older}) ORDER BY name",
        ),
        (
            "SELECT COUNT(*) FROM students WHERE age > 24",
            f"SELECT COUNT(*) FROM students WHERE id IN ({older})",
        ),
        (
            "SELECT title FROM courses WHERE id IN (SELECT course_id FROM enrollments WHERE score > 90)",
            f"SELECT title FROM courses WHERE id IN ({high})",
        ),
        (
            "SELECT title FROM courses WHERE credits = (SELECT MAX(credits) FROM courses) "
            "ORDER BY id LIMIT 1",
            f"SELECT title FROM courses WHERE title = '{top_name}'",
        ),
    ]


# Answers that compute from the data and differ from the gold only where a copy can make an edge case
# the question never meant (an aggregate over no rows, a new tie at a LIMIT): issue 44's controls.
EDGE_CONTROLS = [
    (
        "SELECT COUNT(*) FROM enrollments WHERE score > 95",
        "SELECT SUM(CASE WHEN score > 95 THEN 1 ELSE 0 END) FROM enrollments",
    ),
    (
        "SELECT SUM(credits) FROM courses WHERE dept = 'bio'",
        "SELECT SUM(credits) FROM courses WHERE dept = 'bio' HAVING COUNT(*) > 0",
    ),
    (
        "SELECT student_id FROM enrollments GROUP BY student_id ORDER BY COUNT(*) DESC, student_id LIMIT 1",
        "SELECT student_id FROM enrollments GROUP BY student_id HAVING COUNT(*) = (SELECT MAX(n) FROM "
        "(SELECT COUNT(*) AS n FROM enrollments GROUP BY student_id)) ORDER BY student_id LIMIT 1",
    ),
    (
        "SELECT name FROM students WHERE gpa = (SELECT MAX(gpa) FROM students)",
        "SELECT name FROM students ORDER BY gpa DESC LIMIT 1",
    ),
    (
        "SELECT MAX(score) FROM enrollments WHERE term = 'fall' AND score > 90",
        "SELECT score FROM enrollments WHERE term = 'fall' AND score > 90 ORDER BY score DESC LIMIT 1",
    ),
    (
        "SELECT c.dept, COUNT(*) FROM enrollments e JOIN courses c ON c.id = e.course_id GROUP BY c.dept",
        "SELECT (SELECT dept FROM courses WHERE id = e.course_id) AS d, COUNT(*) "
        "FROM enrollments e GROUP BY d",
    ),
]


def case_items() -> list[tuple[str, str, str]]:
    cases = [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]
    return [(c["db_id"], c["reference"], c["response"]) for c in cases if c["label"]]


def tpch_items(sdist: Path | None, directory: Path) -> list[tuple[str, str]]:
    """(gold, rewritten) pairs and a DuckDB file `tpch.duckdb` in `directory` holding the data."""
    import duckdb

    if sdist is None:
        sdist = directory / "sdist"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-binary",
                ":all:",
                "--no-deps",
                SQLGLOT,
                "-d",
                str(sdist),
            ],
            check=True,
            capture_output=True,
        )
    archives = list(sdist.glob("sqlglot-*.tar.gz"))
    if archives:
        with tarfile.open(archives[0]) as tar:
            tar.extractall(directory / "src", filter="data")
        sdist = next((directory / "src").glob("sqlglot-*"))
    fixtures = sdist / "tests" / "fixtures" / "optimizer" / "tpc-h"
    con = duckdb.connect(str(directory / "tpch.duckdb"))
    for csv in sorted(fixtures.glob("*.csv.gz")):
        table = csv.name.split(".")[0]
        con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_csv('{csv}', delim='|', header=true)")
    con.close()
    text = (fixtures / "tpc-h.sql").read_text()
    statements = [s.strip() for s in re.split(r";\s*\n", re.sub(r"(?m)^--.*$", "", text)) if s.strip()]
    return list(zip(statements[0::2], statements[1::2], strict=True))


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on 127.0.0.1 for the run; yields its superuser DSN. Its directory
    is a top-level temporary one: as root the cluster belongs to the `postgres` user, who must reach it."""
    directory = Path(tempfile.mkdtemp(prefix="assay-pg-bench-"))
    try:
        started = subprocess.run([str(PG_TMP), "start", str(directory)], capture_output=True, text=True)
        if started.returncode:
            raise SystemExit(f"cannot start PostgreSQL for the benchmark: {started.stderr.strip()}")
        port = started.stdout.strip().splitlines()[-1]
        yield f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    finally:
        subprocess.run([str(PG_TMP), "stop", str(directory)], capture_output=True, check=False)
        shutil.rmtree(directory, ignore_errors=True)


def tpch_postgres(admin_dsn: str, duckdb_file: Path, role: str = "assay_ro") -> str:
    """The TPC-H tables of `duckdb_file` copied into a database `tpch`; its read-only DSN."""
    import duckdb
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute("CREATE DATABASE tpch")
    source = duckdb.connect(str(duckdb_file), read_only=True)
    with psycopg.connect(make_conninfo(admin_dsn, dbname="tpch"), autocommit=True) as con:
        for (table,) in source.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall():
            columns = source.execute(
                "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? "
                "ORDER BY column_index",
                [table],
            ).fetchall()
            ddl = ", ".join(f'"{c}" {_PG_TYPES.get(t, t.lower())}' for c, t in columns)
            con.execute(f'CREATE TABLE "{table}" ({ddl})'.encode())
            with con.cursor().copy(f'COPY "{table}" FROM STDIN'.encode()) as copy:
                for row in source.execute(f'SELECT * FROM "{table}"').fetchall():
                    copy.write_row(row)
        con.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}".encode())
    source.close()
    return make_conninfo(admin_dsn, user=role, dbname="tpch")


def tpch_on_postgres(pairs: list[tuple[str, str]], dsn: str) -> tuple[list[tuple[str, str]], int]:
    """The pairs transpiled to PostgreSQL whose gold runs there, and how many were left out."""
    import psycopg
    import sqlglot

    kept = []
    with psycopg.connect(dsn, autocommit=True) as con:
        for gold, rewrite in pairs:
            try:
                gold_pg, rewrite_pg = (
                    sqlglot.transpile(q, read="duckdb", write="postgres")[0] for q in (gold, rewrite)
                )
                con.execute(gold_pg.encode()).fetchall()
            except (sqlglot.errors.SqlglotError, psycopg.Error):
                continue
            kept.append((gold_pg, rewrite_pg))
    return kept, len(pairs) - len(kept)


def score_all(
    scorer: SqlScorer, items: list[tuple[str, str, str, str]], allow: bool, repeat: bool = False
) -> tuple[int, float]:
    """(items rewarded 1.0, seconds per item). With `repeat`, each item is scored twice in a row and only
    the second is timed: the next response of an RL group against the same gold, on warm caches."""
    rewarded = 0
    seconds = 0.0
    for db_id, engine, gold, response in items:
        item = Item(task="sql", db_id=db_id, reference=gold, response=response)
        options = scorer.parse_options({"engine": engine, "alternates": False, "allow_constant": allow})
        if repeat:
            scorer.score(item, options)
        started = time.perf_counter()
        rewarded += scorer.score(item, options).reward == 1.0
        seconds += time.perf_counter() - started
    return rewarded, seconds / max(1, len(items))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sqlglot-sdist", type=Path, help="unpacked sqlglot sdist (or a directory with it)")
    parser.add_argument("--engines", default="sqlite,duckdb,postgres")
    parser.add_argument("--no-tpch", action="store_true")
    parser.add_argument(
        "--rounds", type=int, default=3, help="perturb_rounds of 'after' (0: the reads-no-table check only)"
    )
    args = parser.parse_args()
    engines = args.engines.split(",")
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        directory = Path(tmp)
        devdata.build(directory / "db")
        dsns: dict[str, str] = {}
        if "postgres" in engines:
            admin = stack.enter_context(postgres_server())
            dsns = devdata.create_postgres(admin)
        sets: dict[str, list[tuple[str, str, str, str]]] = {}
        for e in engines:
            probes = probe_items(directory / "db")
            sets[f"literal probes, {e} (target: 0 rewarded)"] = [("school", e, g, p) for g, p in probes]
        for e in engines:
            sets[f"correct, tests/cases/sql.jsonl, {e} (ours)"] = [(db, e, g, p) for db, g, p in case_items()]
        for e in engines:
            sets[f"correct, edge-case controls, {e}"] = [("school", e, g, p) for g, p in EDGE_CONTROLS]
        if not args.no_tpch:
            pairs = tpch_items(args.sqlglot_sdist, directory / "db")
            if "duckdb" in engines:
                sets["correct, sqlglot TPC-H, duckdb (not ours)"] = [
                    ("tpch", "duckdb", g, p) for g, p in pairs
                ]
            if "postgres" in engines:
                dsns["tpch"] = tpch_postgres(admin, directory / "db" / "tpch.duckdb")
                on_pg, left_out = tpch_on_postgres(pairs, dsns["tpch"])
                print(f"TPC-H on PostgreSQL: {len(on_pg)} pairs, {left_out} left out (gold does not run)")
                sets["correct, sqlglot TPC-H, postgres (not ours)"] = [
                    ("tpch", "postgres", g, p) for g, p in on_pg
                ]
        sql = SqlSettings(
            databases=directory / "db", postgres_dsn=dsns, deadline_s=60, perturb_rounds=args.rounds
        )
        settings = Settings(workers=1, sql=sql)
        print(
            f"{'set':48} {'items':>5} {'before':>6} {'after':>6} {'s plain':>7} {'s/item':>7} {'x cold':>7} "
            f"{'x warm':>7}"
        )
        for name, items in sets.items():
            results = []
            for allow, repeat in ((True, False), (False, False), (True, True), (False, True)):
                scorer = SqlScorer(settings)  # fresh caches for each pass
                results.append(score_all(scorer, items, allow, repeat))
                scorer.close()
            (before, t_before), (after, t_after), (_, t_before_warm), (_, t_warm) = results
            cold = t_after / t_before if t_before else math.nan
            warm = t_warm / t_before_warm if t_before_warm else math.nan
            print(
                f"{name:48} {len(items):>5} {before:>6} {after:>6} {t_before:>7.3f} {t_after:>7.3f} "
                f"{cold:>7.1f} "
                f"{warm:>7.1f}"
            )
        print("before: allow_constant=true (flag only); after: the default. Counts are items rewarded 1.0.")
        print("s plain: before (plain execution match), seconds per item.")
        print("s/item: after, first sight of each gold. x cold: after's time per item over before's, each")
        print("item scored once; x warm: the same for a second scoring right after the first (an RL group's")
        print("next response to the same gold: the copies of the database are kept per worker).")


if __name__ == "__main__":
    main()
