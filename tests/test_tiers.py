"""The test tiers (tests/assay_tiers.py): which tests `make check` runs is decided by markers, and a fast
test that starts a process fails. The guard and the unimported modules are checked in a pytest run of
their own on planted test files (a subprocess: so this module is itself `integration`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from assay_tiers import _deselects_all, _module_marks

TESTS = Path(__file__).parent
FAST = "not integration and not slow"


@pytest.mark.parametrize(
    ("markexpr", "marks", "deselected"),
    [
        (FAST, {"integration"}, True),
        (FAST, {"slow"}, True),
        (FAST, {"requires_ray"}, False),  # a test may still carry neither
        (FAST, set(), False),
        ("integration", {"slow"}, False),  # the test may also be integration
        ("not slow", {"integration"}, False),
        ("integration and slow", {"integration"}, False),
        ("not integration or requires_vllm", {"integration"}, False),  # requires_vllm may be on it
    ],
)
def test_a_module_is_left_out_only_when_none_of_its_tests_could_be_selected(
    markexpr: str, marks: set[str], deselected: bool
) -> None:
    assert _deselects_all(markexpr, marks) is deselected


def test_module_marks_come_from_pytestmark_and_the_signs_of_a_process(tmp_path: Path) -> None:
    marked = tmp_path / "test_a.py"
    marked.write_text("import pytest\npytestmark = [pytest.mark.slow, pytest.mark.requires_ray]\n")
    assert _module_marks(marked) == {"slow", "requires_ray", "integration"}  # Ray starts processes
    plain = tmp_path / "test_b.py"
    plain.write_text("def test_x():\n    assert 1\n")
    assert _module_marks(plain) == set()
    spawning = tmp_path / "test_c.py"
    spawning.write_text("import subprocess\n")
    assert _module_marks(spawning) == {"integration"}


INI = """[pytest]
addopts = -p assay_tiers --strict-markers
markers =
    slow: slow
    integration: starts a process
    requires_vllm: x
    requires_ray: x
    requires_postgres: x
    requires_trainer_clients: x
"""

# A process started by a test the signs miss (os.posix_spawn is not one of them), one a fixture starts
# (the fixture's own code has a sign: the test is integration), and a module that cannot even be
# imported but is integration as a whole (`make check` must not import it).
PLANTED = {
    "test_missed.py": (
        "import os, sys\n\n"
        "def test_spawns():\n"
        "    pid = os.posix_spawn(sys.executable, [sys.executable, '-c', 'pass'], dict(os.environ))\n"
        "    os.waitpid(pid, 0)\n\n"
        "def test_pure():\n"
        "    assert sum([1, 2]) == 3\n"
    ),
    "test_fixture.py": (
        "import pytest\n\n"
        "@pytest.fixture\n"
        "def server():\n"
        "    import subprocess\n"
        "    return subprocess.run(['true'])\n\n"
        "def test_uses_server(server):\n"
        "    assert server.returncode == 0\n"
    ),
    # A thread an earlier test left behind spawns during a later test: not the later test's (it failed an
    # unrelated test at random); a thread the test starts itself is the test's.
    "test_threads.py": (
        "import os, sys, threading\n\n"
        "def _spawn():\n"
        "    pid = os.posix_spawn(sys.executable, [sys.executable, '-c', 'pass'], dict(os.environ))\n"
        "    os.waitpid(pid, 0)\n\n"
        "go, done = threading.Event(), threading.Event()\n"
        "left = threading.Thread(target=lambda: (go.wait(), _spawn(), done.set()), daemon=True)\n\n"
        "def test_leaves_a_thread():\n"
        "    left.start()\n\n"
        "def test_after_a_left_thread():\n"
        "    go.set()\n"
        "    assert done.wait(60)\n\n"
        "def test_spawns_in_its_own_thread():\n"
        "    own = threading.Thread(target=_spawn)\n"
        "    own.start()\n"
        "    own.join()\n"
    ),
    "test_heavy.py": (
        "import pytest\npytestmark = pytest.mark.integration\nimport a_module_that_does_not_exist\n"
    ),
}


def run_planted(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text(INI)
    for name, source in PLANTED.items():
        (tmp_path / name).write_text(source)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", *args]
    env = {"PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)


def test_the_fast_tier_fails_a_test_starting_a_process_and_skips_integration_modules(
    tmp_path: Path,
) -> None:
    run = run_planted(tmp_path, "-m", FAST)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "FAILED test_missed.py::test_spawns" in out
    assert "started a spawned process during call but is not marked `integration`" in out
    assert "PASSED test_missed.py::test_pure" in out
    assert "PASSED test_threads.py::test_after_a_left_thread" in out
    assert "FAILED test_threads.py::test_spawns_in_its_own_thread" in out
    assert "test_threads.py:4 in thread Thread-" in out  # where it was called from
    assert "test_uses_server" not in out  # deselected: its fixture starts a process
    assert "a_module_that_does_not_exist" not in out  # never imported
    assert "2 failed, 3 passed" in out


def test_the_whole_suite_runs_every_tier_without_the_guard(tmp_path: Path) -> None:
    run = run_planted(tmp_path, "--continue-on-collection-errors")
    out = run.stdout + run.stderr
    assert "PASSED test_missed.py::test_spawns" in out  # no guard when integration tests run too
    assert "PASSED test_fixture.py::test_uses_server" in out
    assert "ModuleNotFoundError" in out  # the integration module is imported now
