"""Shared by the session tests (a plain module: `conftest` is ambiguous across test folders)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from assay_testing import LiveServer, bwrap_works

from assay.sessions import SessionLimits, SessionManager
from assay.settings import Settings
from assay.types import Item

PREFIX = Path(__file__).resolve().parents[1] / ".sandbox-runtime" / "python"
MATH = Item(task="math", reference="42")


def session_settings(**sessions: Any) -> Settings:
    """Settings with the sandbox runtime's packages and small, test-sized sessions."""
    if not PREFIX.is_dir():
        pytest.fail(f"{PREFIX} is missing: build it with `make sandbox-runtime` (make test does)")
    values: dict[str, Any] = {"max_open": 16, "call_wall_s": 5.0, "memory_mb": 256, "reap_interval_s": 0.05}
    values.update(sessions)
    return Settings(workers=1, code={"python_prefix": PREFIX, "tmpfs_mb": 64}, sessions=values)


def live_sessions(**sessions: Any) -> Iterator[LiveServer]:
    """A live server whose sessions have these settings, for a module fixture to `yield from`. It keeps
    idle connections as `assay serve` does: trainers' loops drive many session steps at once, and on
    uvicorn's 5 s default a step sent on a connection the server is closing is lost (CI: 1 of 256
    verl-tool trajectories, an httpx.ReadError, on a loaded 2-core machine)."""
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    live = LiveServer(session_settings(**sessions)).keep_connections_as_served()
    live.start()
    yield live
    live.stop()


def manager(**sessions: Any) -> Iterator[SessionManager]:
    """A started session manager for a fixture to `yield from`; closed (every sandbox killed) after."""
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    mgr = SessionManager(session_settings(**sessions))
    mgr.start()
    try:
        yield mgr
    finally:
        mgr.close()


def python_session(mgr: SessionManager, item: Item = MATH, **limits: Any) -> str:
    return mgr.create(item, ["python"], SessionLimits(**limits)).id


def run(mgr: SessionManager, session_id: str, code: str) -> Any:
    return mgr.step(session_id, "python", {"code": code})


def sandbox_processes() -> int:
    """Processes on the host inside this test process's session cgroups (bwrap and the interpreters)."""
    mark = f"/assay/sessions-{os.getpid()}/".encode()
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                count += mark in (entry / "cgroup").read_bytes()
            except OSError:
                continue
    return count


SQL = {"task": "sql", "db_id": "school", "reference": "SELECT count(*) FROM students"}


def sql_session_settings(directory: Path, **sessions: Any) -> Settings:
    """`session_settings` whose sql tool reads the dev databases, written (SQLite only) into `directory`."""
    from assay.verifiers.sql import devdata

    devdata.build(directory, engines=("sqlite",), alternates=0)
    settings = session_settings(**sessions)
    return settings.model_copy(update={"sql": settings.sql.model_copy(update={"databases": directory})})


class ServeHandle:
    """The shape of a Serve handle to the `bindings` deployment (`handle.claim.remote(...)` awaited), on
    an in-process replica; `lost` makes every call fail as Ray's would when the replica is gone."""

    def __init__(self, lost: bool = False) -> None:
        from assay.distributed.bindings import BindingsReplica

        self.replica, self.lost = BindingsReplica(), lost

    def __getattr__(self, method: str) -> Any:
        async def remote(*args: Any) -> Any:
            if self.lost:
                raise ConnectionError("actor died")
            return await getattr(self.replica, method)(*args)

        return type("Method", (), {"remote": staticmethod(remote)})
