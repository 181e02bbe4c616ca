"""`assay new-task NAME` (issue 36): in a copy of the checkout, the scaffold changes files only in the new
task's folder and its tests, and with no other edit the task is listed with its tool, scores, opens a
session on its tool, is validated, audited and routed under Ray; its own tests pass."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from assay.cli import main

ROOT = Path(__file__).resolve().parents[1]

CHECK = """
import json
from fastapi.testclient import TestClient
from assay.api import create_app
from assay.audit.runner import run_audit
from assay.distributed.dispatch import kind_of
from assay.registry import Registry
from assay.settings import Settings

settings = Settings(workers=1)
gold = {"task": "demo", "reference": "Paris"}
items = [{**gold, "response": "so\\nParis"}, {**gold, "response": "Lyon"}]
with TestClient(create_app(settings)) as http:
    listed = http.get("/v1/tasks").json()
    rewards = [r["reward"] for r in http.post("/v1/rewards", json={"items": items}).json()["results"]]
    opened = http.post("/v1/sessions", json={"item": gold, "tools": ["demo_check"]}).json()
    call = {"tool": "demo_check", "arguments": {"answer": "a\\nb"}}
    step = http.post(f"/v1/sessions/{opened['session_id']}/step", json=call).json()
    asked = {"tasks": [gold], "near_duplicates": False}
    reports = http.post("/v1/validate", json=asked).json()["reports"]
audit = run_audit(settings, ["demo"])
print(json.dumps({
    "tasks": [t["name"] for t in listed["tasks"]],
    "tools": [t["function"]["name"] for t in listed["tools"]],
    "rewards": rewards,
    "step": step["status"],
    "valid": reports[0]["valid"],
    "hacks": audit.hacks_rewarded,
    "controls": audit.families["demo_controls"].rewarded,
    "kind": kind_of({"task": "demo"}, Registry.from_settings(settings)),
}))
"""


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.slow
def test_a_new_task_is_one_folder_that_scores_serves_a_tool_validates_and_audits(tmp_path: Path) -> None:
    shutil.copytree(
        ROOT / "src" / "assay", tmp_path / "src" / "assay", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "tests").mkdir()
    before = _files(tmp_path)
    assert main(["new-task", "demo", "--root", str(tmp_path)]) == 0
    assert _files(tmp_path) - before == {
        "src/assay/verifiers/demo/__init__.py",
        "src/assay/verifiers/demo/scorer.py",
        "src/assay/verifiers/demo/tool.py",
        "src/assay/verifiers/demo/README.md",
        "tests/verifiers/demo/test_demo.py",
    }
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    done = subprocess.run(
        [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "demo" in seen["tasks"] and "demo_check" in seen["tools"]
    assert seen["rewards"] == [1.0, 0.0]
    assert seen["step"] == "tool_error"  # two lines are not one answer
    assert seen["valid"] is True
    assert (seen["hacks"], seen["controls"]) == (0, 2)  # the template's hedge is caught, controls right
    assert seen["kind"] == "scorers"
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(ROOT / "pyproject.toml"),
         "--rootdir", str(tmp_path), str(tmp_path / "tests" / "verifiers" / "demo")],
        env=env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout[-3000:]


@pytest.mark.parametrize(
    ("name", "says"), [("Demo", "not a task name"), ("math", "exists already"), ("class", "not a task name")]
)
def test_a_bad_or_taken_name_is_refused_with_the_reason(
    name: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new-task", name, "--root", str(ROOT)]) == 2
    assert says in capsys.readouterr().err
