"""`assay serve --ray [--address ADDR]` hands the settings to the Ray server; plain `serve` does not."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from assay_testing import free_port

import assay.distributed
from assay.cli import main
from assay.settings import Settings


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Settings, str | None]]:
    calls: list[tuple[Settings, str | None]] = []

    def fake_serve(settings: Settings, address: str | None = None) -> int:
        calls.append((settings, address))
        return 0

    monkeypatch.setattr(assay.distributed, "serve", fake_serve)
    return calls


def test_serve_ray_passes_the_settings_and_no_address(served: list[Any]) -> None:
    assert main(["serve", "--ray", "--port", "8123", "--workers", "3"]) == 0
    [(settings, address)] = served
    assert (settings.port, settings.workers, address) == (8123, 3, None)


def test_an_address_implies_ray(served: list[Any]) -> None:
    assert main(["serve", "--address", "ray://head:10001"]) == 0
    assert served[0][1] == "ray://head:10001"


@pytest.mark.slow
def test_assay_serve_ray_serves_the_api_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    """The real command: a local Ray, the HTTP API, then SIGTERM (as docker and Kubernetes send)."""
    port = free_port()
    env = {
        **os.environ,
        "ASSAY_WORKERS": "1",
        "ASSAY_RAY__SCORERS__WORKERS": "1",
        "ASSAY_RAY__CODE__REPLICAS": "0",
        "ASSAY_RAY__JUDGE__REPLICAS": "0",
        "ASSAY_RAY__PRM__REPLICAS": "0",
    }
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "assay.cli", "serve", "--ray", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=log,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while not _answers(url):
            assert server.poll() is None, (tmp_path / "serve.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "assay serve --ray did not answer within 120 s"
            time.sleep(0.2)  # sleep-ok: polling interval of a bounded wait for another process
        items = [
            {"task": "math", "response": "\\boxed{4}", "reference": "4"},
            {"task": "code", "response": "x"},
        ]
        results = httpx.post(url + "/v1/rewards", json={"items": items}, timeout=60).json()["results"]
        tree = {p.pid for p in psutil.Process(server.pid).children(recursive=True)}
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=120)
        log.close()
    assert [(r["status"], r["reward"]) for r in results] == [("ok", 1.0), ("error", None)]
    assert "no code deployment" in results[1]["reason"]
    assert code == 0, (tmp_path / "serve.log").read_text()[-2000:]
    deadline = time.monotonic() + 60
    while _running(tree) and time.monotonic() < deadline:
        time.sleep(0.1)  # sleep-ok: polling interval of a bounded wait for processes to exit
    assert not _running(tree), "Ray processes outlived assay serve --ray"


def _running(pids: set[int]) -> list[int]:
    left = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                left.append(pid)
        except psutil.NoSuchProcess:
            continue
    return left


def _answers(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.slow
def test_ctrl_c_while_ray_starts_leaves_no_ray_process() -> None:
    """Issue 43 item 7: a Ctrl-C inside `ray.init` (here: once Ray's raylet is up, before the command
    serves) left Ray's DashboardAgent and RuntimeEnvAgent running for minutes, reparented away from the
    command. Ray's own temporary folder (short: its socket paths must fit 107 bytes) finds them: every
    Ray process names it or holds a log file in it."""
    ray_tmp = tempfile.mkdtemp(prefix="ar-", dir="/tmp")
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "ASSAY_WORKERS": "1", "ASSAY_RAY__CODE__REPLICAS": "0"}
    env |= {"ASSAY_RAY__JUDGE__REPLICAS": "0", "ASSAY_RAY__PRM__REPLICAS": "0"}
    log_path = Path(ray_tmp) / "serve.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "assay.cli", "serve", "--ray", "--port", str(free_port())],
            env=env,
            stdout=log,
            stderr=log,
        )
        try:
            deadline = time.monotonic() + 120
            while not _ray_processes(ray_tmp, named="raylet"):
                assert server.poll() is None, log_path.read_text()[-2000:]
                assert time.monotonic() < deadline, "Ray's raylet did not start within 120 s"
                time.sleep(0.05)  # sleep-ok: polling interval of a bounded wait for another process
            assert "serving on Ray" not in log_path.read_text()  # the interrupt lands during start-up
            server.send_signal(signal.SIGINT)
            server.wait(timeout=120)
        finally:
            if server.poll() is None:
                server.kill()
    deadline = time.monotonic() + 30
    while _ray_processes(ray_tmp) and time.monotonic() < deadline:
        time.sleep(0.1)  # sleep-ok: polling interval of a bounded wait for processes to exit
    left = [" ".join(p.cmdline())[:80] for p in _ray_processes(ray_tmp)]
    for process in _ray_processes(ray_tmp):  # leave nothing to the next test, whatever the verdict
        process.kill()
    shutil.rmtree(ray_tmp, ignore_errors=True)
    assert not left, f"Ray processes outlived a Ctrl-C during start-up: {left}"


def _ray_processes(ray_tmp: str, named: str = "") -> list[psutil.Process]:
    """Live processes that name `ray_tmp` on their command line or hold a file open in it."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        try:
            line = " ".join(process.info["cmdline"] or ())
            if process.info["status"] == psutil.STATUS_ZOMBIE or named not in line:
                continue
            if ray_tmp in line or any(f.path.startswith(ray_tmp) for f in process.open_files()):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found
