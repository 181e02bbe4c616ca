"""Small deterministic databases for tests, the labelled dev set (tests/cases/sql.jsonl) and `assay bench`.

Three schemas (`school`, `shop`, `flights`) with duplicates (so DISTINCT matters), NULLs, ties in sort
keys and floats. Each has a main instance and alternates (same schema, other data) for the test-suite
method. In the main instance only, student 1 has the top GPA, so "the student with the top GPA" and
"student 1" agree there by accident and disagree on the alternates.

    build(directory)                      -> <db_id>.sqlite, <db_id>.duckdb, <db_id>.alt1.* (flat layout)
    create_postgres(admin_dsn)            -> {db_id or "<db_id>.alt1": read-only DSN} (needs a server)

The data depend only on the db_id and the variant number, never on the machine or the time.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

Rows = list[tuple[Any, ...]]
# table -> [(column, type)]; types are portable names mapped per engine below.
SCHEMAS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "school": {
        "students": [("id", "int"), ("name", "text"), ("age", "int"), ("city", "text"), ("gpa", "real")],
        "courses": [("id", "int"), ("title", "text"), ("dept", "text"), ("credits", "int")],
        "enrollments": [("student_id", "int"), ("course_id", "int"), ("term", "text"), ("score", "real")],
    },
    "shop": {
        "customers": [("id", "int"), ("name", "text"), ("country", "text")],
        "products": [("id", "int"), ("name", "text"), ("category", "text"), ("price", "real")],
        "orders": [("id", "int"), ("customer_id", "int"), ("status", "text"), ("year", "int")],
        "order_items": [("order_id", "int"), ("product_id", "int"), ("quantity", "int")],
    },
    "flights": {
        "airports": [("code", "text"), ("city", "text"), ("country", "text")],
        "flights": [
            ("id", "int"),
            ("origin", "text"),
            ("dest", "text"),
            ("airline", "text"),
            ("distance", "int"),
            ("duration", "real"),
        ],
    },
}
DB_IDS: tuple[str, ...] = tuple(SCHEMAS)
_TYPES = {
    "sqlite": {"int": "INTEGER", "text": "TEXT", "real": "REAL"},
    "duckdb": {"int": "INTEGER", "text": "VARCHAR", "real": "DOUBLE"},
    "postgres": {"int": "integer", "text": "text", "real": "double precision"},
}
_NAMES = ["Ada", "Ben", "Chen", "Dana", "Eve", "Farid", "Gita", "Hugo", "Ines", "Jon", "Kemi", "Lea"]
_CITIES = ["Oslo", "Lima", "Pune", "Kyiv", "Accra", None]
_COUNTRIES = ["NO", "PE", "IN", "UA", "GH"]


def _school(rng: random.Random, variant: int) -> dict[str, Rows]:
    students: Rows = [
        (i, rng.choice(_NAMES), rng.randint(18, 26), rng.choice(_CITIES), round(rng.uniform(2.0, 3.9), 2))
        for i in range(1, 41)
    ]
    if variant == 0:  # the accidental match the alternates must expose (see the module docstring)
        students[0] = (*students[0][:4], 4.0)
    depts = ["math", "cs", "art", "bio"]
    courses: Rows = [(i, f"Course {i}", depts[i % 4], rng.choice([3, 4, 5, 6])) for i in range(1, 11)]
    terms = ["fall", "spring"]
    enrollments: Rows = [
        (rng.randint(1, 40), rng.randint(1, 10), rng.choice(terms), round(rng.uniform(40, 100), 1))
        for _ in range(160)
    ]
    return {"students": students, "courses": courses, "enrollments": enrollments}


def _shop(rng: random.Random, variant: int) -> dict[str, Rows]:
    customers: Rows = [(i, rng.choice(_NAMES), rng.choice(_COUNTRIES)) for i in range(1, 26)]
    categories = ["toys", "food", "books"]
    products: Rows = [
        (i, f"Product {i}", categories[i % 3], round(rng.uniform(1, 50), 2)) for i in range(1, 16)
    ]
    orders: Rows = [
        (i, rng.randint(1, 25), rng.choice(["open", "shipped", "returned"]), rng.choice([2021, 2022, 2023]))
        for i in range(1, 61)
    ]
    items: Rows = [(rng.randint(1, 60), rng.randint(1, 15), rng.randint(1, 5)) for _ in range(150)]
    return {"customers": customers, "products": products, "orders": orders, "order_items": items}


def _flights(rng: random.Random, variant: int) -> dict[str, Rows]:
    codes = ["OSL", "LIM", "PNQ", "KBP", "ACC", "BGO", "CUZ", "BOM", "LWO", "KMS", "TRD", "AQP"]
    airports: Rows = [(code, f"City {code}", _COUNTRIES[i % 5]) for i, code in enumerate(codes)]
    flights: Rows = []
    for i in range(1, 121):
        origin, dest = rng.sample(codes, 2)
        distance = rng.randrange(200, 3000, 50)
        flights.append((i, origin, dest, rng.choice(["AX", "BY", "CZ"]), distance, round(distance / 700, 3)))
    return {"airports": airports, "flights": flights}


_GENERATORS = {"school": _school, "shop": _shop, "flights": _flights}


def rows(db_id: str, variant: int = 0) -> dict[str, Rows]:
    """The data of one instance: variant 0 is the main one, 1.. are alternates."""
    rng = random.Random(f"{db_id}:{variant}")
    return _GENERATORS[db_id](rng, variant)


def _ddl(db_id: str, engine: str) -> list[str]:
    types = _TYPES[engine]
    return [
        f"CREATE TABLE {table} ({', '.join(f'{col} {types[kind]}' for col, kind in columns)})"
        for table, columns in SCHEMAS[db_id].items()
    ]


def _instance_name(db_id: str, variant: int) -> str:
    return db_id if variant == 0 else f"{db_id}.alt{variant}"


def build(directory: Path, engines: Sequence[str] = ("sqlite", "duckdb"), alternates: int = 1) -> list[Path]:
    """Write every dev database (main and `alternates` variants) into `directory`; returns the files."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for db_id in DB_IDS:
        for variant in range(alternates + 1):
            name = _instance_name(db_id, variant)
            data = rows(db_id, variant)
            if "sqlite" in engines:
                written.append(_write_sqlite(directory / f"{name}.sqlite", db_id, data))
            if "duckdb" in engines:
                written.append(_write_duckdb(directory / f"{name}.duckdb", db_id, data))
    return written


def _inserts(db_id: str, data: dict[str, Rows], marker: str) -> Iterable[tuple[str, Rows]]:
    for table, columns in SCHEMAS[db_id].items():
        marks = ", ".join([marker] * len(columns))
        yield f"INSERT INTO {table} VALUES ({marks})", data[table]


def _write_sqlite(path: Path, db_id: str, data: dict[str, Rows]) -> Path:
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    try:
        for statement in _ddl(db_id, "sqlite"):
            con.execute(statement)
        for insert, values in _inserts(db_id, data, "?"):
            con.executemany(insert, values)
        con.commit()
    finally:
        con.close()
    return path


def _write_duckdb(path: Path, db_id: str, data: dict[str, Rows]) -> Path:
    import duckdb

    path.unlink(missing_ok=True)
    con = duckdb.connect(str(path))
    try:
        for statement in _ddl(db_id, "duckdb"):
            con.execute(statement)
        for insert, values in _inserts(db_id, data, "?"):
            con.executemany(insert, values)
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return path


def create_postgres(admin_dsn: str, role: str = "assay_ro", alternates: int = 1) -> dict[str, str]:
    """Create every dev database on a server, readable by a read-only `role`; returns db name -> DSN.

    `admin_dsn` must connect as a superuser (the throwaway test cluster's `postgres`). The role gets
    CONNECT, USAGE and SELECT only, and `default_transaction_read_only = on`.
    """
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    dsns: dict[str, str] = {}
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(
            sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(sql.Identifier(role))
        )
        for db_id in DB_IDS:
            for variant in range(alternates + 1):
                database = db_id if variant == 0 else f"{db_id}_alt{variant}"
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(database)))
                admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))
                _fill_postgres(make_conninfo(admin_dsn, dbname=database), db_id, variant, role)
                dsns[_instance_name(db_id, variant)] = make_conninfo(admin_dsn, user=role, dbname=database)
    return dsns


def _fill_postgres(dsn: str, db_id: str, variant: int, role: str) -> None:
    import psycopg
    from psycopg import sql

    ident = sql.Identifier(role)
    with psycopg.connect(dsn, autocommit=True) as con:
        con.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
        for statement in _ddl(db_id, "postgres"):
            con.execute(statement.encode())
        with con.cursor() as cursor:
            for insert, values in _inserts(db_id, rows(db_id, variant), "%s"):
                cursor.executemany(insert.encode(), values)
        con.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(ident))
        con.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(ident))
