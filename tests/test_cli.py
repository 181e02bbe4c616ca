"""The `assay` command, run as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
from assay_testing import TESTS, free_port

from assay import __version__

ASSAY = [sys.executable, "-m", "assay.cli"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env.update({"ASSAY_WORKERS": "1", "PYTHONPATH": str(TESTS), **extra})
    return env


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ASSAY, *args], input=stdin, capture_output=True, text=True, timeout=120, env=_env(), check=False
    )


ITEMS = [
    {"id": "a", "task": "math", "response": "The answer is \\boxed{42}.", "reference": "42"},
    {"id": "b", "task": "math", "response": "\\boxed{41}", "reference": "42"},
    {"id": "c", "task": "code?"},
]


def test_version() -> None:
    done = _run("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"assay {__version__}"


def test_score_a_file_into_a_file(tmp_path: Path) -> None:
    source = tmp_path / "items.jsonl"
    source.write_text("\n".join(json.dumps(i) for i in ITEMS) + "\n")
    out = tmp_path / "results.jsonl"
    done = _run("score", str(source), "-o", str(out))
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["status"], r["reward"]) for r in results] == [
        ("a", "ok", 1.0),
        ("b", "ok", 0.0),
        ("c", "invalid", None),
    ]
    summary = done.stderr.strip().splitlines()[-1]
    assert summary.startswith("scored 3 items: ok=2, invalid=1, timeout=0, error=0; correct=1")


def test_score_reads_stdin_and_keeps_going_past_bad_lines() -> None:
    lines = [json.dumps(ITEMS[0]), "{not json", "", json.dumps(ITEMS[1])]
    done = _run("score", "-", "-q", stdin="\n".join(lines) + "\n")
    assert done.returncode == 0, done.stderr
    results = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["status"] for r in results] == ["ok", "invalid", "ok"]
    assert "line 2: not valid JSON" in results[1]["reason"]


def test_score_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    done = _run("score", str(tmp_path / "absent.jsonl"))
    assert done.returncode == 1
    assert "absent.jsonl" in done.stderr and "Traceback" not in done.stderr


def test_serve_binds_loopback_by_default_and_drains_in_flight_requests_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    gate = tmp_path / "gate"
    log = tmp_path / "serve.log"
    with log.open("w") as log_file:
        server = subprocess.Popen(
            [*ASSAY, "serve", "--port", str(port)],
            env=_env(ASSAY_PLUGINS=json.dumps(["assay_test_plugins:GateScorer"])),
            stdout=subprocess.DEVNULL,
            stderr=log_file,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            for _ in range(600):  # bounded wait for start-up
                try:
                    if http.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    assert server.poll() is None, f"assay serve exited during start-up:\n{log.read_text()}"
                    threading.Event().wait(0.1)  # bounded poll interval, not synchronisation
            held = {"task": "gate", "response": "a", "reference": "a", "options": {"gate": str(gate)}}
            answer: dict[str, httpx.Response] = {}
            request = threading.Thread(
                target=lambda: answer.update(r=http.post("/v1/rewards", json={"items": [held]}))
            )
            request.start()
            for _ in range(600):  # bounded poll until the item is in flight
                if "assay_queue_depth 1.0" in http.get("/metrics").text:
                    break
            server.send_signal(signal.SIGTERM)
            gate.touch()
            request.join(60)
        assert answer["r"].status_code == 200
        assert answer["r"].json()["results"][0]["status"] == "ok"
        # uvicorn re-raises the signal it handled once it has drained, so -SIGTERM is a clean stop.
        assert server.wait(timeout=60) in (0, -signal.SIGTERM)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
