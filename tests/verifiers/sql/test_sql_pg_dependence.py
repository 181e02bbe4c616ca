"""The dependence check on PostgreSQL, attacked where its copies could be named around or told apart.

The copies are temporary tables in a session of the scorer's own (pgscratch.py says why). What is
attacked here: qualified names that would read the original, a query that sets search_path or builds
SQL from a string, a query that detects the copy (temp schema, transaction id, statistics, clock, row
counts) or tries to write it or end its session, two items on one database at once, a worker killed
while holding a copy, and the original never seeing or keeping a copy. The literal families and the
correct rewrites run on PostgreSQL in test_sql_dependence.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sql_helpers import REPO, table_digests

from assay.settings import Settings, SqlSettings
from assay.types import Item, Status
from assay.verifiers.sql import SqlScorer
from assay.verifiers.sql.engines import EngineUnavailable, QueryError, QueryLimits
from assay.verifiers.sql.perturb import perturb
from assay.verifiers.sql.pgscratch import APPLICATION_NAME, rewrite
from assay.verifiers.sql.postgres import PostgresEngine
from assay.verifiers.sql.scratch import scratch_engine, snapshot

pytestmark = pytest.mark.requires_postgres

COUNT = "SELECT COUNT(*) FROM students"
TOP = "SELECT name, age FROM students ORDER BY gpa DESC LIMIT 1"
LIMITS = QueryLimits(timeout_s=2.0, max_rows=10_000, max_bytes=8 << 20)
DATABASES = ["school", "school_alt1", "shop", "flights"]


@pytest.fixture(scope="module")
def lab_dsn(pg_admin_dsn: str, pg_dsns: dict[str, str]) -> str:
    """A database with a second schema on the search path, a view, an enum and a domain."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(pg_admin_dsn, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS lab")
        admin.execute("CREATE DATABASE lab")
    with psycopg.connect(make_conninfo(pg_admin_dsn, dbname="lab"), autocommit=True) as con:
        for statement in (
            "REVOKE ALL ON SCHEMA public FROM PUBLIC",
            "CREATE SCHEMA sales",
            "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')",
            "CREATE DOMAIN qty AS integer CHECK (VALUE > 0)",
            "CREATE TABLE sales.orders (id integer PRIMARY KEY, mood mood NOT NULL, n qty, note jsonb, "
            "n2 integer GENERATED ALWAYS AS (n * 2) STORED)",
            "INSERT INTO sales.orders SELECT i, (ARRAY['sad', 'ok', 'happy'])[1 + i % 3]::mood, 1 + i % 7, "
            "jsonb_build_object('i', i) FROM generate_series(1, 30) AS i",
            "CREATE TABLE public.totals (id integer, total integer)",
            "INSERT INTO public.totals SELECT i, i * 10 FROM generate_series(1, 20) AS i",
            "CREATE VIEW public.big_orders AS SELECT id, n FROM sales.orders WHERE n > 3",
            # measures of every kind issue 44 moves: a smallint, a numeric(6,2), timestamptz, time
            "CREATE TABLE public.ledger (id integer PRIMARY KEY, points smallint, weight numeric(6, 2), "
            "placed timestamptz, at_time time)",
            "INSERT INTO public.ledger SELECT i, (i * 7919) % 30000, ((i * 104729) % 9973) / 100.0, "
            "timestamptz '2021-01-01 00:00:00+00' + ((i * 7907) % 100000) * interval '1 minute', "
            "time '00:00' + ((i * 389) % 1440) * interval '1 minute' FROM generate_series(1, 20) AS i",
            "GRANT USAGE ON SCHEMA public, sales TO assay_ro",
            "GRANT SELECT ON ALL TABLES IN SCHEMA public, sales TO assay_ro",
            "ALTER DATABASE lab SET search_path = public, sales",
        ):
            con.execute(statement.encode())
    return make_conninfo(pg_dsns["school"], dbname="lab")


@pytest.fixture(scope="module")
def settings(pg_settings: Settings, lab_dsn: str) -> Settings:
    dsns = {**pg_settings.sql.postgres_dsn, "lab": lab_dsn}
    sql = SqlSettings(
        databases=pg_settings.sql.databases, postgres_dsn=dsns, query_timeout_s=2.0, deadline_s=8.0
    )
    return Settings(workers=1, sql=sql)


@pytest.fixture(scope="module")
def scorer(settings: Settings) -> Iterator[SqlScorer]:
    made = SqlScorer(settings)
    yield made
    made.close()


def score(scorer: SqlScorer, response: str, reference: str = COUNT, db_id: str = "school") -> Any:
    item = Item(task="sql", response=response, reference=reference, db_id=db_id)
    return scorer.score(item, scorer.parse_options({"engine": "postgres", "alternates": False}))


def check_status(result: Any) -> str:
    return str(result.details.get("data_check", {}).get("status"))


# -- qualified names and search_path ------------------------------------------------------------------
QUALIFIED_CORRECT = [
    (COUNT, "SELECT COUNT(*) FROM public.students"),
    (COUNT, 'SELECT COUNT(*) FROM "public"."students"'),
    (COUNT, "SELECT COUNT(*) FROM school.public.students"),
    (COUNT, "SELECT COUNT(*) FROM ONLY public.students"),
    (COUNT, "SELECT COUNT(public.students.id) FROM public.students"),
    (TOP, "SELECT s.name, s.age FROM public.students AS s ORDER BY s.gpa DESC LIMIT 1"),
]


@pytest.mark.parametrize(("reference", "response"), QUALIFIED_CORRECT)
def test_a_qualified_name_reads_the_copy(scorer: SqlScorer, reference: str, response: str) -> None:
    result = score(scorer, response, reference)
    assert result.reward == 1.0, result.reason
    assert check_status(result) == "passed"


@pytest.mark.parametrize(
    "response",
    [
        "SELECT 40 FROM public.students LIMIT 1",
        'SELECT 40 FROM "public"."students" LIMIT 1',
        "SELECT 40 FROM school.public.students LIMIT 1",
        "SELECT CASE WHEN COUNT(*) > 3 THEN 40 END FROM public.students",
    ],
)
def test_a_qualified_literal_earns_nothing(scorer: SqlScorer, response: str) -> None:
    result = score(scorer, response)
    assert result.status is Status.OK and result.reward == 0.0, result.reason
    assert check_status(result) == "constant"


def test_another_schema_a_view_and_other_types_are_copied(scorer: SqlScorer) -> None:
    gold = "SELECT mood, COUNT(*), SUM(n) FROM orders GROUP BY mood"
    for response in (
        "SELECT mood, COUNT(id), SUM(n) FROM sales.orders GROUP BY 1",
        'SELECT o.mood, COUNT(*), SUM(o.n) FROM "sales"."orders" o GROUP BY o.mood',
    ):
        result = score(scorer, response, gold, db_id="lab")
        assert result.reward == 1.0 and check_status(result) == "passed", result.reason
    via_view = score(
        scorer, "SELECT COUNT(*) FROM public.big_orders", "SELECT COUNT(*) FROM orders WHERE n > 3", "lab"
    )
    assert via_view.reward == 1.0 and check_status(via_view) == "passed", via_view.reason
    generated = score(scorer, "SELECT SUM(n2) FROM orders", "SELECT 2 * SUM(n) FROM orders", "lab")
    assert generated.reward == 1.0 and check_status(generated) == "passed", generated.reason
    as_json = score(scorer, "SELECT SUM((note->>'i')::int) FROM orders", "SELECT SUM(id) FROM orders", "lab")
    # The jsonb column is copied; it equals id only through an identity between two columns, which a
    # copy does not keep (perturb.py): judged on the copy like any other query.
    assert as_json.reward == 0.0 and check_status(as_json) == "differs", as_json.reason
    literal = score(scorer, "SELECT 'ok'::mood, 10::bigint, 40::bigint FROM orders LIMIT 1", gold, "lab")
    assert literal.reward == 0.0


LEDGER_TOP = ["points", "weight", "placed", "at_time"]


@pytest.mark.parametrize("column", LEDGER_TOP)
def test_moved_integers_decimals_and_times_build_on_postgres(
    scorer: SqlScorer, lab_dsn: str, column: str
) -> None:
    """Issue 44: the copy takes moved smallint, numeric(6,2), timestamptz and time values (type and scale
    kept: a copy PostgreSQL refused would leave the check `skipped`), the honest rewrite keeps its reward
    and a pin on the maximum earns nothing. (Deletions alone catch this pin on most draws: what only this
    asserts on PostgreSQL is that the moved values are accepted; the shop generator measures the pins.)"""
    import psycopg

    with psycopg.connect(lab_dsn) as con:
        row = con.execute(f"SELECT MAX({column})::text FROM ledger").fetchone()
    assert row is not None
    gold = f"SELECT MAX({column}) FROM ledger"
    honest = score(scorer, f"SELECT {column} FROM ledger ORDER BY {column} DESC LIMIT 1", gold, "lab")
    assert honest.reward == 1.0 and check_status(honest) == "passed", honest.details
    pin = score(scorer, f"SELECT MAX({column}) FROM ledger WHERE {column} >= '{row[0]}'", gold, "lab")
    assert pin.reward == 0.0 and check_status(pin) in {"constant", "differs"}, pin.details


def test_rewriting_touches_only_names_of_copied_tables() -> None:
    copied = {("public", "students")}
    sql = (
        "SELECT public.students.name, 'public.students', $$public.students$$ FROM public.students, "
        'other.students, "Public"."students", public.lower_case -- public.students'
    )
    assert rewrite(sql, copied) == (
        "SELECT pg_temp.students.name, 'public.students', $$public.students$$ FROM pg_temp.students, "
        'other.students, "Public"."students", public.lower_case -- public.students'
    )
    assert rewrite('SELECT 1 FROM "public".STUDENTS', copied) == "SELECT 1 FROM pg_temp.STUDENTS"
    assert rewrite("SELECT 'unterminated FROM public.students", copied).startswith("SELECT 'unterminated")


DYNAMIC = "(xpath('//c/text()', query_to_xml('SELECT COUNT(*) AS c FROM {table}', false, false, '')))[1]"


@pytest.mark.parametrize(
    "response",
    [
        # SQL built from a string is not rewritten: it reads the original, so its result does not move.
        f"SELECT {DYNAMIC.format(table='public.students')}::text::int FROM students LIMIT 1",
        # The query moves search_path, then builds SQL that resolves its names on the new path.
        "SELECT (xpath('//c/text()', query_to_xml('SELECT COUNT(*) AS c FROM students', false, false, '')))"
        "[1]::text::int FROM (SELECT set_config('search_path', 'public, pg_temp', false)) AS moved, "
        "students LIMIT 1",
    ],
)
def test_reaching_the_original_from_a_copy_earns_nothing(scorer: SqlScorer, response: str) -> None:
    result = score(scorer, response)
    assert result.status is Status.OK and result.reward == 0.0, result.reason
    assert check_status(result) == "constant"
    # The search_path it set was rolled back: the same (kept) copy still judges a correct answer.
    after = score(scorer, "SELECT COUNT(id) FROM students")
    assert after.reward == 1.0 and check_status(after) == "passed", after.reason


# -- telling the copy apart -----------------------------------------------------------------------------
DETECTORS = [
    "pg_my_temp_schema() = 0",
    "pg_current_xact_id_if_assigned() IS NULL",
    "txid_current() > 0",
    "now() > '2000-01-01'",
    "(SELECT COUNT(*) FROM pg_class WHERE relpersistence = 't') = 0",
    "(SELECT COALESCE(SUM(n_live_tup), 0) FROM pg_stat_user_tables WHERE relname = 'students') >= 0",
    "(SELECT COUNT(*) FROM students) = 40",
    "current_setting('search_path') NOT LIKE 'pg_temp%'",
]


@pytest.mark.parametrize("detector", DETECTORS)
def test_detecting_the_copy_earns_nothing(scorer: SqlScorer, detector: str) -> None:
    for otherwise in ("0", "(SELECT COUNT(*) FROM public.students) + 1", "pg_backend_pid()"):
        response = f"SELECT CASE WHEN {detector} THEN 40 ELSE {otherwise} END FROM students LIMIT 1"
        result = score(scorer, response)
        assert result.status is Status.OK and result.reward == 0.0, (response, result.reason)


def test_ending_its_own_session_on_the_copy_earns_nothing(scorer: SqlScorer) -> None:
    response = (
        "SELECT CASE WHEN pg_my_temp_schema() = 0 THEN 40 "
        "ELSE pg_terminate_backend(pg_backend_pid())::int END FROM students LIMIT 1"
    )
    result = score(scorer, response)
    assert result.status is Status.OK and result.reward == 0.0, result.reason
    assert check_status(result) == "fails" and "lost twice" in result.reason
    after = score(scorer, "SELECT COUNT(id) FROM students")  # the next item gets a fresh copy
    assert after.reward == 1.0 and check_status(after) == "passed", after.reason


def test_a_copy_whose_session_is_lost_is_rebuilt_not_read_as_the_original(
    scorer: SqlScorer, pg_admin_dsn: str
) -> None:
    import psycopg
    from psycopg.conninfo import make_conninfo

    assert score(scorer, "SELECT COUNT(id) FROM students").reward == 1.0  # copies built and kept
    with psycopg.connect(make_conninfo(pg_admin_dsn, dbname="school"), autocommit=True) as admin:
        ended = admin.execute(
            "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = 'school' AND application_name = %s",
            [APPLICATION_NAME],
        ).fetchone()
    assert ended is not None and ended[0] > 0
    literal = score(scorer, "SELECT 40 FROM students LIMIT 1")
    assert literal.reward == 0.0 and check_status(literal) == "constant", literal.reason
    correct = score(scorer, "SELECT COUNT(id) FROM students")
    assert correct.reward == 1.0 and check_status(correct) == "passed", correct.reason


# -- writes, isolation, concurrency, a killed worker ------------------------------------------------------
def _copy_of(dsn: str, seed: str) -> tuple[PostgresEngine, Any, dict[str, Any]]:
    engine = PostgresEngine(dsn)
    snap = snapshot(engine, {"students"}, LIMITS, 10_000, 500_000)
    rows = perturb(snap.tables, {"students"}, seed)
    return engine, scratch_engine(engine, snap, rows), rows


def test_a_query_on_a_copy_cannot_change_it(pg_dsns: dict[str, str]) -> None:
    engine, copy, rows = _copy_of(pg_dsns["school"], "writes")
    try:
        n = len(rows["students"])
        # PostgreSQL lets a READ ONLY transaction write a temporary table; the rollback undoes it.
        deleted = copy.run("WITH d AS (DELETE FROM students RETURNING 1) SELECT COUNT(*) FROM d", LIMITS)
        assert deleted.rows == [(n,)]
        with pytest.raises(QueryError):
            copy.run("SELECT set_config('transaction_read_only', 'off', true)", LIMITS)
        qualified = "WITH d AS (DELETE FROM public.students RETURNING 1) SELECT COUNT(*) FROM d"
        assert copy.run(qualified, LIMITS).rows == [(n,)]  # rewritten: it reaches the copy, not the original
        copy.run("SELECT set_config('search_path', 'public', false)", LIMITS)
        assert copy.run("SELECT COUNT(*) FROM students", LIMITS).rows == [(n,)]
        assert engine.run("SELECT COUNT(*) FROM students", LIMITS).rows == [(40,)]
    finally:
        copy.close()
        engine.close()


def test_the_original_never_sees_a_copy(pg_dsns: dict[str, str], pg_admin_dsn: str) -> None:
    before = table_digests(pg_admin_dsn, DATABASES)
    engine, copy, _ = _copy_of(pg_dsns["school"], "seen")
    try:
        temp = copy.run("SELECT pg_my_temp_schema()::regnamespace::text", LIMITS).rows[0][0]
        assert temp.startswith("pg_temp_")
        assert engine.run("SELECT COUNT(*) FROM students", LIMITS).rows == [(40,)]
        with pytest.raises(QueryError) as caught:
            engine.run(f"SELECT COUNT(*) FROM {temp}.students", LIMITS)
        assert "pg_temp" in caught.value.message or "other sessions" in caught.value.message
        assert table_digests(pg_admin_dsn, DATABASES) == before  # nothing persistent created or changed
    finally:
        copy.close()
        engine.close()


def test_two_copies_of_one_database_at_once_each_see_their_own(pg_dsns: dict[str, str]) -> None:
    made: dict[str, tuple[Any, ...]] = {}
    ready = threading.Barrier(2)

    def build(seed: str) -> None:
        ready.wait(timeout=30)
        made[seed] = _copy_of(pg_dsns["school"], seed)

    threads = [threading.Thread(target=build, args=(seed,)) for seed in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    try:
        counts = {seed: len(rows["students"]) for seed, (_, _, rows) in made.items()}
        assert counts["a"] != counts["b"]  # different perturbations, so a leak would show
        for seed, (engine, copy, _) in made.items():
            assert copy.run("SELECT COUNT(*) FROM students", LIMITS).rows == [(counts[seed],)]
            assert engine.run("SELECT COUNT(*) FROM students", LIMITS).rows == [(40,)]
    finally:
        for engine, copy, _ in made.values():
            copy.close()
            engine.close()


def test_two_items_on_one_database_at_once_are_judged_apart(settings: Settings) -> None:
    cases = [
        ("SELECT COUNT(id) FROM students", COUNT, 1.0),
        ("SELECT 40 FROM students LIMIT 1", COUNT, 0.0),
        ("SELECT name, age FROM students WHERE gpa = (SELECT MAX(gpa) FROM students)", TOP, 1.0),
        ("SELECT name, age FROM students WHERE id = 1", TOP, 0.0),
    ]
    rewards: dict[int, Any] = {}
    start = threading.Barrier(len(cases))

    def judge(index: int) -> None:
        own = SqlScorer(settings)  # a worker of its own, as in the pool
        try:
            start.wait(timeout=30)
            response, reference, _ = cases[index]
            for _ in range(3):
                rewards.setdefault(index, []).append(score(own, response, reference).reward)
        finally:
            own.close()

    threads = [threading.Thread(target=judge, args=(i,)) for i in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert {i: rewards.get(i) for i in range(len(cases))} == {
        i: [expected] * 3 for i, (_, _, expected) in enumerate(cases)
    }


_HOLDER = """
import sys
from assay.verifiers.sql.engines import QueryLimits
from assay.verifiers.sql.perturb import perturb
from assay.verifiers.sql.postgres import PostgresEngine
from assay.verifiers.sql.scratch import scratch_engine, snapshot
limits = QueryLimits(5.0, 10_000, 8 << 20)
engine = PostgresEngine(sys.argv[1])
snap = snapshot(engine, {"students"}, limits, 10_000, 500_000)
copy = scratch_engine(engine, snap, perturb(snap.tables, {"students"}, "killed"))
print(copy.run("SELECT pg_my_temp_schema()::regnamespace::text", limits).rows[0][0], flush=True)
sys.stdin.read()
"""


def test_a_killed_worker_leaves_no_copy_behind(pg_dsns: dict[str, str], pg_admin_dsn: str) -> None:
    import psycopg
    from psycopg.conninfo import make_conninfo

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, pg_dsns["school"]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert holder.stdout is not None
        temp = holder.stdout.readline().strip()
        assert temp.startswith("pg_temp_"), temp
        query = (
            "SELECT COUNT(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s"
        )
        with psycopg.connect(make_conninfo(pg_admin_dsn, dbname="school"), autocommit=True) as admin:
            assert admin.execute(query, [temp]).fetchone() == (1,)
            holder.send_signal(signal.SIGKILL)
            holder.wait(timeout=30)
            deadline = time.monotonic() + 30
            while admin.execute(query, [temp]).fetchone() != (
                0,
            ):  # the server drops it when the backend ends
                assert time.monotonic() < deadline, "the killed worker's copy is still there"
                admin.execute("SELECT pg_sleep(0.05)")
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
        for pipe in (holder.stdin, holder.stdout):
            if pipe is not None:
                pipe.close()


def test_a_role_without_temporary_privilege_skips_the_check_and_says_so(
    scorer: SqlScorer, pg_admin_dsn: str, lab_dsn: str, settings: Settings
) -> None:
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(make_conninfo(pg_admin_dsn, dbname="lab"), autocommit=True) as admin:
        admin.execute("REVOKE TEMPORARY ON DATABASE lab FROM PUBLIC")
    own = SqlScorer(settings)
    try:
        result = score(own, "SELECT COUNT(id) FROM totals", "SELECT COUNT(*) FROM totals", db_id="lab")
        literal = score(own, "SELECT 20", "SELECT COUNT(*) FROM totals", db_id="lab")
    finally:
        own.close()
        with psycopg.connect(make_conninfo(pg_admin_dsn, dbname="lab"), autocommit=True) as admin:
            admin.execute("GRANT TEMPORARY ON DATABASE lab TO PUBLIC")
    assert result.reward == 1.0 and check_status(result) == "skipped"
    assert "temporary" in result.details["data_check"]["why"]
    assert literal.reward == 0.0  # the reads-no-table check needs no copy


def test_a_lost_copy_is_never_reopened_as_a_fresh_session(pg_dsns: dict[str, str], pg_admin_dsn: str) -> None:
    import psycopg

    engine, copy, _ = _copy_of(pg_dsns["school"], "lost")
    try:
        pid = copy.run("SELECT pg_backend_pid()", LIMITS).rows[0][0]
        with psycopg.connect(pg_admin_dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s, 10000)", [pid])
        for _ in range(2):  # a new session would hold no copy and read the original's 40 rows
            with pytest.raises(EngineUnavailable):
                copy.run("SELECT COUNT(*) FROM students", LIMITS)
    finally:
        copy.close()
        engine.close()
