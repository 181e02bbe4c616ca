"""SIGTERM with more work in flight than the drain time allows, against a real `assay serve`.

What the drain cannot finish is answered 503 with `Retry-After` and the error envelope (it used to be
uvicorn's plain-text 500, which no client retries), and AssayClient retries it: later, on the restarted
server (issue 12).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from assay_testing import TESTS, free_port, gate_item

from assay.client import AssayClient
from assay.types import Result, Status

pytestmark = pytest.mark.slow


def _serve(port: int, log: Path, drain_s: int = 1) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(TESTS), env.get("PYTHONPATH", "")]),
        ASSAY_WORKERS="1",
        ASSAY_DRAIN_S=str(drain_s),
        ASSAY_PLUGINS=json.dumps(["assay_test_plugins:GateScorer"]),
        ASSAY_LOG_LEVEL="warning",
    )
    with log.open("a") as log_file:
        server = subprocess.Popen(
            [sys.executable, "-m", "assay.cli", "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
        for _ in range(600):  # bounded wait for start-up
            try:
                if http.get("/healthz").status_code == 200:
                    return server
            except httpx.TransportError:
                assert server.poll() is None, f"assay serve exited during start-up:\n{log.read_text()}"
                threading.Event().wait(0.1)  # bounded poll interval, not synchronisation
    server.kill()
    raise AssertionError("assay serve did not start")


def _wait_in_flight(url: str, items: int) -> None:
    with httpx.Client(base_url=url, timeout=5) as http:
        for _ in range(600):  # bounded poll until the items are admitted
            if f"assay_queue_depth {float(items)}" in http.get("/metrics").text:
                return
            threading.Event().wait(0.05)
    raise AssertionError(f"{items} items never came in flight")


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.kill()
        server.wait()


def test_requests_past_the_drain_time_get_503_with_retry_after(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    url = f"http://127.0.0.1:{port}"
    server = _serve(port, log)
    answers: list[httpx.Response] = []
    try:

        def post() -> None:
            with httpx.Client(base_url=url, timeout=60) as http:
                answers.append(http.post("/v1/rewards", json={"items": [gate_item(tmp_path / "never")] * 2}))

        posters = [threading.Thread(target=post) for _ in range(3)]
        for poster in posters:
            poster.start()
        _wait_in_flight(url, 6)
        server.send_signal(signal.SIGTERM)
        for poster in posters:
            poster.join(60)
        assert server.wait(timeout=60) in (0, -signal.SIGTERM)
    finally:
        _stop(server)
    assert len(answers) == 3
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "1"
        assert answer.json()["error"]["type"] == "unavailable"
        assert "shutting down" in answer.json()["error"]["message"]
    assert "Traceback" not in log.read_text()


def test_the_client_retries_what_the_drain_could_not_finish(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    url = f"http://127.0.0.1:{port}"
    gate = tmp_path / "gate"
    first = _serve(port, log)
    waits: list[float] = []
    got: list[Result] = []

    def back_off(seconds: float) -> None:
        waits.append(seconds)
        threading.Event().wait(seconds)  # the client's own back-off, not test synchronisation

    client = AssayClient(url, max_retries=200, backoff_s=0.05, max_backoff_s=2.0, sleep=back_off)
    scoring = threading.Thread(target=lambda: got.extend(client.score([gate_item(gate)])))
    second = None
    try:
        scoring.start()
        _wait_in_flight(url, 1)
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
        gate.touch()
        second = _serve(port, log)  # the rolling restart: same address
        scoring.join(60)
    finally:
        _stop(first)
        if second is not None:
            _stop(second)
        client.close()
    assert [r.status for r in got] == [Status.OK]
    assert got[0].correct is True
    # The 503 was retried after its Retry-After (1 s) plus a jitter below backoff_s (see assay.backoff).
    assert 1.0 <= waits[0] <= 1.05
