"""The `assay` command, run as a user runs it (a subprocess)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx
from assay_testing import TESTS, free_port, gate_item

from assay import __version__

ASSAY = [sys.executable, "-m", "assay.cli"]
EXAMPLES = TESTS.parent / "examples"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    # The sources next to these tests come first (a venv may hold another checkout's editable install).
    path = os.pathsep.join([str(TESTS.parent / "src"), str(TESTS)])
    env.update({"ASSAY_WORKERS": "1", "PYTHONPATH": path, **extra})
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


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def test_score_a_missing_file_is_one_line_naming_the_cause_and_the_fix(tmp_path: Path) -> None:
    done = _run("score", str(tmp_path / "absent.jsonl"))
    assert done.returncode == 2
    line = _one_line(done.stderr)
    assert line.startswith("assay score: ") and "absent.jsonl" in line
    assert "no such file or directory; check the path" in line


def test_score_into_a_missing_directory_names_that_directory(tmp_path: Path) -> None:
    source = tmp_path / "items.jsonl"
    source.write_text(json.dumps(ITEMS[0]) + "\n")
    done = _run("score", str(source), "-o", str(tmp_path / "nowhere" / "out.jsonl"))
    assert done.returncode == 2
    assert "nowhere" in _one_line(done.stderr)


def test_bench_a_missing_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = _run("bench", str(tmp_path / "absent.jsonl"), "--task", "math")
    assert done.returncode == 2
    line = _one_line(done.stderr)
    assert line.startswith("assay bench: cannot read the bench set: ") and "absent.jsonl" in line
    assert "check the path" in line


def test_bench_an_unknown_task_suggests_the_right_one() -> None:
    done = _run("bench", str(EXAMPLES / "math_bench.jsonl"), "--task", "maths")
    assert done.returncode == 2
    assert 'did you mean "math"' in _one_line(done.stderr)


def test_bench_reads_the_task_from_the_rows_when_every_row_names_one(tmp_path: Path) -> None:
    """Issue 43 item 10: `--task` is needed only when the rows do not all name the same task."""
    done = _run(
        "bench", str(EXAMPLES / "math_bench.jsonl"), "--no-baselines", "--no-progress", "--out", str(tmp_path)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "report.json").read_text())["task"] == "math"
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text(
        json.dumps({"task": "math", "response": "1", "reference": "1"})
        + "\n"
        + json.dumps({"response": "2", "reference": "2"})
        + "\n"
    )
    done = _run("bench", str(mixed), "--no-baselines", "--no-progress")
    assert done.returncode == 2
    assert "1 of 2 rows name no task" in _one_line(done.stderr) and "--task math" in done.stderr


def test_bench_without_matplotlib_writes_the_tables_and_says_how_to_get_plots(tmp_path: Path) -> None:
    # The quick-start install has no plotting extra: hide matplotlib as if it were not installed.
    hide = (
        "import sys; sys.modules['matplotlib'] = None; from assay.cli import main; "
        "sys.exit(main(sys.argv[1:]))"
    )
    args = ["bench", str(EXAMPLES / "math_bench.jsonl"), "--task", "math", "--no-progress"]
    done = subprocess.run(
        [sys.executable, "-c", hide, *args, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "assay " in done.stdout and "math-verify" in done.stdout  # the terminal table
    assert {p.name for p in tmp_path.iterdir()} == {"report.json", "report.md"}
    assert 'no plots: plots need matplotlib: pip install "assay[bench]"' in done.stderr


def test_serve_on_a_busy_port_is_one_line_and_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        done = _run("serve", "--port", str(busy.getsockname()[1]))
    assert done.returncode == 2
    assert "is already in use; stop what runs there or pick --port" in _one_line(done.stderr)


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
            held = gate_item(gate)
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
