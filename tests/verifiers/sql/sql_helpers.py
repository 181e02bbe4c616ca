"""Helpers shared by the sql tests: the case file, file hashes and table digests (fixtures: conftest.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
CASES = REPO / "tests" / "cases" / "sql.jsonl"
PG_TMP = REPO / "scripts" / "pg_tmp.sh"


def load_cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CASES.read_text().splitlines() if line.strip()]


def as_item(case: dict[str, Any]) -> dict[str, Any]:
    """The contract item of a case line (without label, category and note)."""
    return {k: v for k, v in case.items() if k not in {"label", "category", "note"}}


def escaped_files() -> dict[str, tuple[int, int]]:
    """Files the dangerous cases try to write outside the databases (/tmp/assay_sql_danger*).

    Compared before and after, not required absent: a read-write baseline checker run by someone else
    on this machine (a benchmark) may have left them.
    """
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size) for p in Path("/tmp").glob("assay_sql_danger*")}


def file_hashes(directory: Path) -> dict[str, str]:
    """Every file under `directory` (new files and changed bytes both show up)."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def table_digests(admin_dsn: str, databases: list[str]) -> dict[str, Any]:
    """Content digest of every table in every database, plus the list of tables (to see new ones)."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    digests: dict[str, Any] = {}
    for database in databases:
        with psycopg.connect(make_conninfo(admin_dsn, dbname=database), autocommit=True) as con:
            tables = [
                r[0]
                for r in con.execute(
                    "SELECT table_schema || '.' || table_name FROM information_schema.tables "
                    "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1"
                )
            ]
            for table in tables:
                query = f"SELECT md5(COALESCE(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t"
                digests[f"{database}/{table}"] = con.execute(query.encode()).fetchone()
    return digests
