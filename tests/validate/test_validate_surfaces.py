"""`assay validate` and POST /v1/validate: the same reports through the CLI and over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.settings import Settings

pytestmark = pytest.mark.slow

TASKS = [
    {"id": "ok", "task": "math", "prompt": "What is 2 + 2?", "reference": "4"},
    {"id": "given", "task": "math", "prompt": "What is 3 + 3? The answer is 6.", "reference": "6"},
    {"id": "broken", "task": "math", "prompt": "What is 5 + 5?", "reference": "\\frac{"},
]


def _cli(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "assay.cli", "validate", *args]
    return subprocess.run(command, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=300)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_cli_writes_one_report_line_per_task_and_keeps_the_valid_ones(tmp_path: Path) -> None:
    source = tmp_path / "tasks.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in TASKS) + "{not json\n")
    done = _cli([str(source), "-o", "report.jsonl", "--keep", "keep.jsonl", "--out", "out", "-q"], tmp_path)
    assert done.returncode == 0, done.stderr
    report = _jsonl(tmp_path / "report.jsonl")
    assert [(r["id"], r["valid"]) for r in report] == [
        ("ok", True),
        ("given", False),
        ("broken", False),
        ("line-4", False),
    ]
    assert {p["check"] for p in report[1]["problems"]} >= {"answer_in_prompt"}
    assert report[2]["problems"][0]["check"] == "reference_unusable"
    assert "not valid JSON" in report[3]["problems"][0]["reason"]
    assert [t["id"] for t in _jsonl(tmp_path / "keep.jsonl")] == ["ok"]
    assert "validated 4 tasks: 1 valid, 3 invalid" in done.stderr
    assert "answer_in_prompt" in (tmp_path / "out" / "report.md").read_text()


def test_strict_mode_fails_on_an_invalid_task_and_usage_errors_are_one_line(tmp_path: Path) -> None:
    strict = _cli(["-", "--strict", "-q"], tmp_path, stdin=json.dumps(TASKS[2]) + "\n")
    assert strict.returncode == 1
    missing = _cli(["nope.jsonl"], tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr and "nope.jsonl" in missing.stderr
    band = _cli(["-", "--min-solve-rate", "0.2"], tmp_path, stdin="")
    assert band.returncode == 2 and "need --policy" in band.stderr


class _Policy(BaseHTTPRequestHandler):
    """An OpenAI-compatible completions server on loopback: right on 2 + 2 every other sample."""

    def do_GET(self) -> None:
        self._send({"data": [{"id": "policy"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts = ["\\boxed{4}" if i % 2 == 0 else "\\boxed{5}" for i in range(body["n"])]
        self._send({"choices": [{"index": i, "text": t} for i, t in enumerate(texts)]})

    def _send(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def policy_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Policy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_probing_a_policy_writes_solve_rates_the_band_and_a_picture(tmp_path: Path, policy_url: str) -> None:
    source = tmp_path / "tasks.jsonl"
    source.write_text(json.dumps(TASKS[0]) + "\n")
    args = [str(source), "-o", "r.jsonl", "--policy", f"openai:{policy_url}", "-k", "4", "--out", "out", "-q"]
    done = _cli(
        [*args, "--min-solve-rate", "0.25", "--max-solve-rate", "0.75", "--keep", "keep.jsonl"], tmp_path
    )
    assert done.returncode == 0, done.stderr
    (line,) = _jsonl(tmp_path / "r.jsonl")
    assert (line["solve_rate"], line["samples"], line["learning_value"]) == (0.5, 4, 1.0)
    (kept,) = _jsonl(tmp_path / "keep.jsonl")
    assert kept["id"] == "ok" and kept["solve_rate"] == 0.5
    png = (tmp_path / "out" / "solve_rates.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    narrow = _cli([*args, "--min-solve-rate", "0.9", "--keep", "none.jsonl"], tmp_path)
    assert narrow.returncode == 0 and (tmp_path / "none.jsonl").read_text() == ""


@pytest.fixture
def client(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings()), raise_server_exceptions=False) as test_client:
        yield test_client


def test_the_endpoint_answers_the_same_reports_in_order(client: TestClient) -> None:
    response = client.post("/v1/validate", json={"tasks": [*TASKS, 7]})
    assert response.status_code == 200, response.text
    reports = response.json()["reports"]
    assert [(r["id"], r["valid"]) for r in reports] == [
        ("ok", True),
        ("given", False),
        ("broken", False),
        ("task-3", False),
    ]


def test_a_task_set_too_large_for_one_request_is_413_with_the_way_out(client: TestClient) -> None:
    size = client.get("/v1/limits").json()["queue_size"]
    response = client.post("/v1/validate", json={"tasks": [TASKS[0]] * size})
    assert response.status_code == 413
    assert "assay validate FILE" in response.json()["error"]["message"]


def test_without_the_validate_extra_the_cli_runs_the_other_checks_with_a_notice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The Quick start's `assay validate` on the `make serve` install (no datasketch) used to exit 2."""
    from assay.validate import command, prompts

    monkeypatch.setattr(prompts, "near_duplicates_available", lambda: False)
    source = tmp_path / "tasks.jsonl"
    source.write_text("".join(json.dumps(t) + "\n" for t in TASKS))
    assert command.main([str(source), "-o", str(tmp_path / "report.jsonl"), "-q"]) == 0
    notice = [line for line in capsys.readouterr().err.splitlines() if "near-duplicate" in line]
    assert len(notice) == 1 and "pip install 'assay[validate]'" in notice[0]
    assert [r["valid"] for r in _jsonl(tmp_path / "report.jsonl")] == [True, False, False]
    assert command.main([str(source), "-o", str(tmp_path / "quiet.jsonl"), "-q", "--no-near-duplicates"]) == 0
    assert "near-duplicate" not in capsys.readouterr().err
