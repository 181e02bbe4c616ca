"""Databases by name: which engine and which file or server hold a `db_id`, and its alternate instances.

Layouts under `Settings.sql.databases` (both can be mixed):
- flat:     `<db_id>.sqlite` (also `.db`, `.sqlite3`) or `<db_id>.duckdb`, alternates `<db_id>.alt*.sqlite`;
- BIRD/Spider: `<db_id>/<db_id>.sqlite` (or `.duckdb`); every other database file in `<db_id>/` is an
  alternate instance (the Spider test-suite layout keeps its variants next to the original).
PostgreSQL databases come from `Settings.sql.postgres_dsn` (db_id -> DSN); a key `<db_id>.alt<N>` is an
alternate instance of `<db_id>`.

An alternate instance has the same schema and different data: a prediction must match the gold on every
instance, which catches queries that agree only by accident on one data set (Spider's test-suite method).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import ItemError
from assay.suggest import did_you_mean

ENGINE_ORDER = ("sqlite", "duckdb", "postgres")  # "auto" picks the first engine that has the db_id
_SUFFIXES = {".sqlite": "sqlite", ".sqlite3": "sqlite", ".db": "sqlite", ".duckdb": "duckdb"}
_ALT = re.compile(r"^(?P<db>.+)\.(?P<alt>alt[^.]*)$")


@dataclass(frozen=True)
class Instance:
    """One database holding a db_id's data: `location` is a file path or a DSN."""

    engine: str
    location: str
    label: str  # "main" or the alternate's name


@dataclass
class Entry:
    main: dict[str, Instance] = field(default_factory=dict)  # engine -> instance
    alternates: dict[str, list[Instance]] = field(default_factory=dict)  # engine -> instances

    def add(self, instance: Instance) -> None:
        if instance.label == "main":
            self.main.setdefault(instance.engine, instance)
        else:
            self.alternates.setdefault(instance.engine, []).append(instance)


class UnknownDatabase(ItemError, LookupError):
    """The db_id (or the engine asked for) is not available; the message says what is."""


def scan(directory: Path | None, postgres_dsn: Mapping[str, str]) -> dict[str, Entry]:
    """Index every database under `directory` and in `postgres_dsn`."""
    entries: dict[str, Entry] = {}

    def add(db_id: str, engine: str, location: str, label: str) -> None:
        entries.setdefault(db_id, Entry()).add(Instance(engine, location, label))

    if directory is not None and directory.is_dir():
        for path in sorted(directory.iterdir()):
            engine = _SUFFIXES.get(path.suffix.lower())
            if path.is_file() and engine:
                alt = _ALT.match(path.stem)
                if alt:
                    add(alt["db"], engine, str(path), alt["alt"])
                else:
                    add(path.stem, engine, str(path), "main")
            elif path.is_dir():
                for inner in sorted(path.iterdir()):
                    engine = _SUFFIXES.get(inner.suffix.lower())
                    if inner.is_file() and engine:
                        label = "main" if inner.stem == path.name else inner.stem
                        add(path.name, engine, str(inner), label)
    for key, dsn in sorted(postgres_dsn.items()):
        alt = _ALT.match(key)
        if alt:
            add(alt["db"], "postgres", dsn, alt["alt"])
        else:
            add(key, "postgres", dsn, "main")
    return entries


def resolve(entries: Mapping[str, Entry], db_id: str, engine: str, alternates: bool) -> list[Instance]:
    """The instances to run on, main first; UnknownDatabase with a "did you mean" otherwise."""
    known = {name for name, entry in entries.items() if entry.main}
    entry = entries.get(db_id)
    if entry is None or not entry.main:
        listing = ", ".join(sorted(known)[:20]) or "none (set ASSAY_SQL_DATABASES or sql.postgres_dsn)"
        raise UnknownDatabase(f'unknown db_id "{db_id}"{did_you_mean(db_id, known)}; known: {listing}')
    if engine == "auto":
        engine = next(name for name in ENGINE_ORDER if name in entry.main)
    if engine not in entry.main:
        raise UnknownDatabase(
            f'db_id "{db_id}" has no {engine} database; it is available on: {", ".join(sorted(entry.main))}'
        )
    found = [entry.main[engine]]
    if alternates:
        found.extend(entry.alternates.get(engine, []))
    return found
