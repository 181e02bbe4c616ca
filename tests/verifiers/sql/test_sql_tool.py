"""The `sql` tool: read-only exploration of the item's database, with the sql task's guarantees."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from session_testing import session_settings

from assay.errors import ItemError
from assay.sessions import SessionLimits, SessionManager
from assay.types import Item
from assay.verifiers.sql import devdata
from assay.verifiers.sql.tool import render

ITEM = Item(task="sql", db_id="school", reference="SELECT count(*) FROM students")


@pytest.fixture(scope="module")
def databases(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("session_sql")
    devdata.build(directory)
    return directory


@pytest.fixture
def mgr(databases: Path) -> Iterator[SessionManager]:
    settings = session_settings().model_copy(
        update={
            "sql": session_settings().sql.model_copy(update={"databases": databases, "query_timeout_s": 1.0})
        }
    )
    manager = SessionManager(settings)
    yield manager
    manager.close()


def _digest(directory: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def test_a_query_shows_a_table_with_its_row_count(mgr: SessionManager) -> None:
    sid = mgr.create(ITEM, ["sql"], SessionLimits()).id
    step = mgr.step(sid, "sql", {"query": "SELECT count(*) AS n FROM students"})
    assert (step.status, step.observation) == ("ok", "| n |\n|---|\n| 40 |\n(1 row)")


def test_a_long_result_is_cut_to_its_first_rows(mgr: SessionManager) -> None:
    sid = mgr.create(ITEM, ["sql"], SessionLimits()).id
    step = mgr.step(sid, "sql", {"query": "SELECT id FROM students ORDER BY id"})
    lines = step.observation.splitlines()
    assert lines[2:4] == ["| 1 |", "| 2 |"] and len(lines) == 2 + 20 + 1
    assert lines[-1] == "(40 rows; the first 20 shown)"


def test_writes_attach_and_a_second_statement_are_refused(mgr: SessionManager, databases: Path) -> None:
    before = _digest(databases)
    sid = mgr.create(ITEM, ["sql"], SessionLimits()).id
    for query in (
        "DELETE FROM students",
        "UPDATE students SET gpa = 4",
        "SELECT 1; DROP TABLE students",
        f"ATTACH DATABASE '{databases}/evil.sqlite' AS evil",
        f"VACUUM INTO '{databases}/copy.sqlite'",
        "CREATE TABLE t (x)",
    ):
        step = mgr.step(sid, "sql", {"query": query})
        assert (step.status, step.observation.startswith("SQL error")) == ("tool_error", True), query
    assert _digest(databases) == before
    assert mgr.step(sid, "sql", {"query": "SELECT count(*) FROM students"}).status == "ok"


def test_a_runaway_query_is_stopped_at_its_deadline(mgr: SessionManager) -> None:
    sid = mgr.create(ITEM, ["sql"], SessionLimits()).id
    runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    step = mgr.step(sid, "sql", {"query": runaway})
    assert (step.status, step.reason) == ("tool_error", "query_timeout")


def test_an_item_without_a_known_database_cannot_open_the_tool(mgr: SessionManager) -> None:
    with pytest.raises(ItemError, match="db_id"):
        mgr.create(Item(task="math", reference="1"), ["sql"], SessionLimits())
    with pytest.raises(ItemError):
        mgr.create(Item(task="sql", db_id="nowhere", reference="SELECT 1"), ["sql"], SessionLimits())
    assert mgr.open_count == 0


def test_cells_with_pipes_and_newlines_keep_the_table_readable() -> None:
    table = render(["a|b", "c"], [("x\ny", None), ("z" * 100, 1.5)])
    assert table.splitlines() == [
        "| a\\|b | c |",
        "|---|---|",
        "| x\\ny | NULL |",
        "| " + "z" * 57 + "... | 1.5 |",
        "(2 rows)",
    ]
