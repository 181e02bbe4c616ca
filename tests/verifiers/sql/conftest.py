"""Fixtures for the sql verifier: the dev databases (built once per session) and a throwaway PostgreSQL.

PostgreSQL: `scripts/pg_tmp.sh` runs initdb into a temporary directory and starts a server on
127.0.0.1 (as the `postgres` OS user when the tests run as root). CI installs the server with
`apt-get install -y postgresql-15`; when the binaries are missing the fixture FAILS, it does not skip.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from assay_testing import free_port
from sql_helpers import PG_TMP

from assay.settings import Settings, SqlSettings
from assay.verifiers.sql import SqlScorer, devdata


@pytest.fixture(scope="session")
def sql_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("sqldbs")
    devdata.build(directory)
    # Left by a read-write baseline checker (benchmarks/sql_exec.py cleans up after itself, others may
    # not): with them present, an ATTACH or VACUUM INTO that got through would go unnoticed.
    for leftover in Path("/tmp").glob("assay_sql_danger*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
    return directory


@pytest.fixture(scope="session")
def sql_settings(sql_dir: Path) -> Settings:
    # Short query limits keep the runaway cases cheap; the item deadline stays well above them.
    return Settings(workers=1, sql=SqlSettings(databases=sql_dir, query_timeout_s=1.0, deadline_s=4.0))


@pytest.fixture(scope="session")
def sql_scorer(sql_settings: Settings) -> Iterator[SqlScorer]:
    scorer = SqlScorer(sql_settings)
    yield scorer
    scorer.close()


@pytest.fixture(scope="session")
def pg_admin_dsn() -> Iterator[str]:
    """A superuser DSN on a fresh cluster that lives for the session."""
    directory = Path(tempfile.mkdtemp(prefix="assay-pg-"))
    port = free_port()
    started = subprocess.run(
        [str(PG_TMP), "start", str(directory), str(port)], capture_output=True, text=True, check=False
    )
    if started.returncode != 0:
        shutil.rmtree(directory, ignore_errors=True)
        pytest.fail(
            "cannot start the throwaway PostgreSQL server for the `postgres` tests: "
            f"{started.stderr.strip() or started.stdout.strip()}\n"
            "Install the server with: apt-get install -y postgresql-15",
            pytrace=False,
        )
    try:
        yield f"host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=10"
    finally:
        subprocess.run([str(PG_TMP), "stop", str(directory)], capture_output=True, check=False)
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_dsns(pg_admin_dsn: str) -> dict[str, str]:
    """db name -> read-only DSN for every dev database (main and alternates)."""
    return devdata.create_postgres(pg_admin_dsn)


@pytest.fixture(scope="session")
def pg_settings(sql_dir: Path, pg_dsns: dict[str, str]) -> Settings:
    return Settings(
        workers=1,
        sql=SqlSettings(databases=sql_dir, postgres_dsn=pg_dsns, query_timeout_s=1.0, deadline_s=4.0),
    )
