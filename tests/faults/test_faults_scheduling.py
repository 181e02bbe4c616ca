"""Deadline-true, fair scheduling of sandbox slots under a live server (issue 12, scaled down).

The full case (164 looping programs on 2 slots with a 2 s limit) is `benchmarks/load.py --loops`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from assay_testing import LiveServer, bwrap_works

pytestmark = pytest.mark.slow

LOOP = {
    "task": "code",
    "response": "while True:\n    pass\n",
    "tests": [{"stdin": "", "stdout": "never"}],
    "options": {"time_limit_s": 1},
}
QUICK = {"id": "quick", "task": "code", "response": "print(2)", "tests": [{"stdout": "2"}]}


@pytest.fixture
def server(live_server: Callable[..., LiveServer]) -> LiveServer:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    # Queueing 12 looping programs on 2 slots takes far longer than one item's deadline (its limits plus
    # a small margin): a deadline that counted the wait would fail most of the batch.
    return live_server(code={"slots": 2, "processes": 32, "tmpfs_mb": 64})


def test_every_looping_program_gets_a_verdict_and_a_small_request_is_not_stuck(server: LiveServer) -> None:
    loops = [{**LOOP, "id": str(i)} for i in range(12)]
    outcome: dict[str, Any] = {}

    def post_batch() -> None:
        with httpx.Client(base_url=server.url, timeout=300) as http:
            outcome["batch"] = http.post("/v1/rewards", json={"items": loops})
            outcome["batch_done"] = time.monotonic()

    batch = threading.Thread(target=post_batch)
    batch.start()
    gates = server.engine._runner.gates  # tests may look inside: wait until the batch queues for slots
    for _ in range(600):
        if gates.waiting("sandbox"):
            break
        threading.Event().wait(0.05)
    with httpx.Client(base_url=server.url, timeout=300) as http:
        (quick,) = http.post("/v1/rewards", json={"items": [QUICK]}).json()["results"]
        quick_done = time.monotonic()
    batch.join(300)
    assert (quick["status"], quick["reward"]) == ("ok", 1.0)
    assert quick_done < outcome["batch_done"], "the 1-item request waited for the whole batch"
    results = outcome["batch"].json()["results"]
    assert [r["id"] for r in results] == [str(i) for i in range(12)]
    assert all(r["status"] == "ok" and r["reward"] == 0.0 for r in results), results
    assert {t["verdict"] for r in results for t in r["details"]["tests"]} == {"time_limit"}


def test_a_wait_past_its_bound_is_reported_as_a_wait(live_server: Callable[..., LiveServer]) -> None:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    server = live_server(code={"slots": 1, "processes": 32, "tmpfs_mb": 64, "wait_s": 0.5})
    with server.client() as http:
        results = http.post("/v1/rewards", json={"items": [LOOP, LOOP]}).json()["results"]
    assert results[0]["status"] == "ok"
    assert results[1]["status"] == "timeout"
    assert results[1]["details"]["cause"] == "slot_wait" and "ASSAY_CODE__WAIT_S" in results[1]["reason"]


def test_an_abandoned_requests_items_are_cancelled(server: LiveServer) -> None:
    loops = [{**LOOP, "id": str(i)} for i in range(12)]
    with httpx.Client(base_url=server.url, timeout=1.0) as http, pytest.raises(httpx.ReadTimeout):
        http.post("/v1/rewards", json={"items": loops})
    gates = server.engine._runner.gates
    deadline = time.monotonic() + 30
    while gates.waiting("sandbox"):
        assert time.monotonic() < deadline, "the abandoned batch kept its place in the queue"
        threading.Event().wait(0.05)
    started = time.monotonic()
    with server.client() as http:
        (quick,) = http.post("/v1/rewards", json={"items": [QUICK]}).json()["results"]
    assert quick["status"] == "ok"
    assert time.monotonic() - started < 10  # at most the two programs already running finish first
    assert server.engine.pending == 0
