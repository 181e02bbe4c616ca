"""A process the server depends on dies (OOM killer, `kill -9`): the server keeps answering and scoring.

Each test kills one process of a live server between two batches and checks that /healthz answers
within 1 s while the next batch is in flight, and that the next batch is scored (issue 12: an idle
math worker's death used to deadlock the event loop).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from assay_testing import LiveServer, bwrap_works

pytestmark = pytest.mark.slow

MATH = [{"id": str(i), "task": "math", "response": f"\\boxed{{{i}}}", "reference": str(i)} for i in range(4)]
CODE = {
    "id": "c",
    "task": "code",
    "response": "print(int(input()) * 2)",
    "tests": [{"stdin": "21", "stdout": "42"}],
}


def _children(pid: int) -> list[int]:
    """Direct children of a process, read from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


def _cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _forkserver() -> int:
    servers = [p for p in _children(os.getpid()) if "multiprocessing.forkserver" in _cmdline(p)]
    assert len(servers) == 1, servers
    return servers[0]


def _gone(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while not _gone(pid):  # bounded polling, not a sleep
        assert time.monotonic() < deadline, f"process {pid} survived SIGKILL"
        threading.Event().wait(0.01)


def _next_batch_is_scored(server: LiveServer, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Post a batch in the background; /healthz must answer within 1 s meanwhile."""
    outcome: dict[str, Any] = {}

    def post() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as http:
            outcome["response"] = http.post("/v1/rewards", json={"items": items})

    poster = threading.Thread(target=post, daemon=True)
    poster.start()
    with httpx.Client(base_url=server.url, timeout=1.0) as http:
        for _ in range(3):
            assert http.get("/healthz").status_code == 200
    poster.join(60)
    assert not poster.is_alive(), "the batch after the death never came back"
    response = outcome["response"]
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


@pytest.mark.parametrize("victim", ["idle worker", "forkserver"])
def test_a_dead_worker_or_forkserver_never_freezes_the_server(
    live_server: Callable[..., LiveServer], victim: str
) -> None:
    server = live_server()
    with server.client() as http:
        assert [r["status"] for r in http.post("/v1/rewards", json={"items": MATH}).json()["results"]] == [
            "ok"
        ] * 4
    forkserver = _forkserver()
    workers = _children(forkserver)
    assert workers, "no worker processes to kill"
    _kill(workers[0] if victim == "idle worker" else forkserver)
    if victim == "forkserver":  # its workers die with it: no orphan keeps taking the pool's tasks
        deadline = time.monotonic() + 10
        while not all(_gone(w) for w in workers):
            assert time.monotonic() < deadline, "a worker outlived its forkserver"
            threading.Event().wait(0.01)
    results = _next_batch_is_scored(server, MATH)
    assert [(r["id"], r["status"], r["correct"]) for r in results] == [
        (str(i), "ok", True) for i in range(4)
    ], results


def test_a_dead_sandbox_runtime_never_freezes_the_server(live_server: Callable[..., LiveServer]) -> None:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    server = live_server(code={"slots": 1, "processes": 32, "tmpfs_mb": 64})
    with server.client() as http:
        assert http.post("/v1/rewards", json={"items": [CODE]}).json()["results"][0]["reward"] == 1.0
    pool = server.engine.scorer("code").executor.pool
    (slot,) = pool._idle  # tests may look inside the pool
    procs = (slot.cgroup.pids / "cgroup.procs").read_text().split()
    (runtime,) = [int(p) for p in procs if _cmdline(int(p)).startswith("/usr/bin/python3")]
    _kill(runtime)
    deadline = time.monotonic() + 10
    while slot.alive:  # the sandbox notices its runtime is gone
        assert time.monotonic() < deadline, "the slot outlived its runtime"
        threading.Event().wait(0.01)
    (result,) = _next_batch_is_scored(server, [CODE])
    assert (result["status"], result["reward"]) == ("ok", 1.0), result
