"""One engine for the validation tests, with a small SQLite database of people under its sql root."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.engine.scoring import Engine
from assay.settings import Settings

PEOPLE = [("Dana", 25), ("Eli", 40), ("Fay", 40), ("Gus", 19), ("Hal", 33)]


@pytest.fixture(scope="session")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("validate-dbs")
    with sqlite3.connect(root / "people.sqlite") as db:
        db.execute("CREATE TABLE people (name TEXT PRIMARY KEY, age INTEGER)")
        db.executemany("INSERT INTO people VALUES (?, ?)", PEOPLE)
        db.execute("CREATE INDEX people_age ON people (age)")
        # An INTEGER PRIMARY KEY is the rowid: storing rows in another order cannot move them.
        db.execute("CREATE TABLE scores (id INTEGER PRIMARY KEY, points INTEGER)")
        db.executemany("INSERT INTO scores VALUES (?, ?)", [(1, 5), (2, 9), (3, 9), (4, 9), (5, 1)])
    return root


@pytest.fixture(scope="session")
def engine(databases: Path) -> Iterator[Engine]:
    with Engine(Settings(workers=2, sql={"databases": databases})) as instance:
        yield instance
