"""The sandbox runtime as part of set-up (issue 31): `assay sandbox-runtime` builds it where the code
task finds it, `/v1/tasks` says what sandboxed Python may import, and a program that fails importing a
package the runtime lacks is named in `details.missing_module` and counted on `/metrics`, so a missing
package is told apart from a wrong program."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from assay_testing import bwrap_works, reachable_by_sandboxes
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.metrics import Metrics
from assay.sandbox import runtime_build
from assay.sandbox.runtime import check_prefix, missing_module, prefix_packages
from assay.settings import Settings

SHARED_PREFIX = Path(__file__).resolve().parents[2] / ".sandbox-runtime" / "python"
NUMPY_PROGRAM = "```python\nimport numpy as np\nprint(int(np.sum([1, 2])))\n```"


def _failed(stderr: str, verdict: str = "runtime_error") -> dict[str, Any]:
    return {"tests": [{"verdict": "passed"}, {"verdict": verdict, "stderr": stderr}]}


def _traceback(last: str) -> str:
    return f'Traceback (most recent call last):\n  File "main.py", line 1, in <module>\n{last}\n'


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user cache with no runtime built in it (the default location is read from XDG_CACHE_HOME),
    on a path the sandbox's unprivileged user can traverse (pytest's own temporary root is 0700)."""
    reachable_by_sandboxes(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        (_traceback("ModuleNotFoundError: No module named 'numpy'"), "numpy"),
        (_traceback("ModuleNotFoundError: No module named 'scipy.optimize'"), "scipy"),
        (_traceback("ModuleNotFoundError: No module named 'json'"), None),  # stdlib: the program's doing
        (_traceback("ImportError: cannot import name 'x' from 'numpy'"), None),
        ("ModuleNotFoundError: No module named 'numpy'\nbut the program went on\n", None),
        ("", None),
    ],
)
def test_the_missing_package_is_read_from_the_end_of_a_failed_tests_stderr(
    stderr: str, expected: str | None
) -> None:
    assert missing_module(_failed(stderr)) == expected


def test_a_wrong_answer_that_printed_the_line_is_not_a_missing_package() -> None:
    stderr = _traceback("ModuleNotFoundError: No module named 'numpy'")
    assert missing_module(_failed(stderr, verdict="wrong_answer")) is None


def test_the_metric_labels_are_bounded_since_programs_choose_the_names() -> None:
    metrics = Metrics()
    for n in range(100):
        metrics.missing_module(f"pkg{n}")
    text = metrics.render().decode()
    labels = set(re.findall(r'assay_sandbox_missing_modules_total\{module="([^"]+)"\}', text))
    assert len(labels) == 65 and "other" in labels


def test_an_interrupted_build_is_not_taken_for_a_finished_one(empty_cache: Path) -> None:
    target = runtime_build.default_target()
    target.mkdir(parents=True)
    (target / "numpy").mkdir()
    assert check_prefix(None) is None
    (target / runtime_build.MARKER).write_text("numpy\n")
    assert check_prefix(None) == str(target)


@pytest.fixture
def stdlib_client(empty_cache: Path) -> Iterator[TestClient]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    settings = Settings(workers=1, code={"slots": 1})
    with TestClient(create_app(settings), raise_server_exceptions=False) as client:
        yield client


def test_tasks_say_sandboxed_python_has_the_standard_library_only(stdlib_client: TestClient) -> None:
    tasks = {t["name"]: t for t in stdlib_client.get("/v1/tasks").json()["tasks"]}
    python = tasks["code"]["runtime"]["languages"]["python"]
    assert python["packages"] == {} and python["standard_library_only"] is True
    assert "assay sandbox-runtime" in python["hint"]


def test_an_import_the_runtime_lacks_is_named_and_counted(stdlib_client: TestClient) -> None:
    item = {"task": "code", "response": NUMPY_PROGRAM, "tests": [{"stdout": "3"}]}
    (result,) = stdlib_client.post("/v1/rewards", json={"items": [item]}).json()["results"]
    # numpy is in the runtime's package list: the server cannot score the program (issue 44)
    assert (result["status"], result["reward"]) == ("error", None)
    assert "numpy" in result["reason"] and "ASSAY_CODE__PYTHON_PREFIX" in result["reason"]
    assert result["details"]["missing_module"] == "numpy"
    metrics = stdlib_client.get("/metrics").text
    assert 'assay_sandbox_missing_modules_total{module="numpy"} 1.0' in metrics


def test_with_the_runtime_the_same_program_passes_and_nothing_is_missing() -> None:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    if not SHARED_PREFIX.is_dir():
        pytest.fail(f"{SHARED_PREFIX} is missing: build it with `make sandbox-runtime` (make test does)")
    settings = Settings(workers=1, code={"slots": 1, "python_prefix": SHARED_PREFIX})
    item = {"task": "code", "response": NUMPY_PROGRAM, "tests": [{"stdout": "3"}]}
    with TestClient(create_app(settings)) as client:
        (result,) = client.post("/v1/rewards", json={"items": [item]}).json()["results"]
    assert result["reward"] == 1.0 and "missing_module" not in result["details"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_command_builds_a_runtime_the_code_task_then_uses(
    empty_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # One small pure-Python package instead of the full list (400 MB): the same pip call, from its cache.
    requirements = tmp_path / "small.txt"
    requirements.write_text("sortedcontainers==2.4.0\n")
    target = runtime_build.build(runtime_build.default_target(), requirements=requirements)
    assert prefix_packages(check_prefix(None)) == {"sortedcontainers": "2.4.0"}
    assert check_prefix(None) == str(target)
    monkeypatch.setattr(runtime_build, "packages_file", lambda: requirements)
    assert runtime_build.main([]) == 0  # already built from this list: kept, and says where
    assert f"already built at {target}" in capsys.readouterr().err
