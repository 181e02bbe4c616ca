"""Fixtures shared by the whole suite: explicit settings and a real server on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from assay.settings import Settings

TESTS = Path(__file__).parent
# Worker processes import the test plugins by module name; make sure they can (forkserver copies sys.path).
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from assay_test_plugins import PLUGINS  # noqa: E402
from assay_testing import LiveServer  # noqa: E402


@pytest.fixture
def make_settings() -> Callable[..., Settings]:
    """Settings for tests: 2 workers, the misbehaving plugins, short deadlines; override per test."""

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {
            "workers": 2,
            "plugins": PLUGINS,
            "deadline_s": 1.0,
            "math": {"deadline_s": 2.0},
        }
        values.update(overrides)
        return Settings(**values)

    return make


@pytest.fixture
def live_server(make_settings: Callable[..., Settings]) -> Iterator[Callable[..., LiveServer]]:
    """Start a real server from settings overrides: `server = live_server(queue_size=2)`."""
    servers: list[LiveServer] = []

    def start(**overrides: Any) -> LiveServer:
        server = LiveServer(make_settings(**overrides))
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One real `assay train --demo` run (2-3 minutes on CPU), shared by every test that reads its run
    directory (the demo's own test and the doctor's), so the suite pays for it once."""
    out = tmp_path_factory.mktemp("demo") / "run"
    command = [sys.executable, "-m", "assay.rl_client", "--demo", "--out", str(out), "--seed", "1", "-q"]
    return out, subprocess.run(command, capture_output=True, text=True, timeout=590)


# -- test tiers (issue 24) -----------------------------------------------------------------------------
# One mechanism sets the tiers: the markers, added here at collection.
#
# - `integration`: the test starts a process, a server or a sandbox. Decided by the fixtures it uses
#   (INTEGRATION_FIXTURES), or by its module: one that builds an Engine, an app, a server, a sandbox or a
#   subprocess (INTEGRATION_SIGNS in its source), or that says `pytestmark = pytest.mark.integration`.
#   `make check` runs everything that is neither `integration` nor `slow`, `make test` everything.
# - `requires_*`: the test needs something `make test` installs (REQUIREMENTS). Missing, the test skips
#   with the reason locally and FAILS in CI (`CI` or `ASSAY_REQUIRE_ALL` set: .ci/run sets the latter).
INTEGRATION_FIXTURES = frozenset({"live_server", "demo_run", "sandbox_ready", "api_schema", "executor"})
INTEGRATION_SIGNS = (
    "Engine(",
    "create_app(",
    "LiveServer",
    "live_server",
    "subprocess",
    "code_scorer(",
    "assay.score(",
    "CodeScorer(",
    "WorkerPool(",
    "run_script(",
    "bwrap",
    "main([",
)


def _has_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _vllm_env() -> bool:
    return (TESTS.parent / ".venv-vllm" / "bin" / "python").exists()


def _postgres() -> bool:
    import shutil

    return shutil.which("initdb") is not None or any(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


REQUIREMENTS: dict[str, tuple[Callable[[], bool], str]] = {
    "requires_trainer_clients": (
        lambda: _has_module("verl") and _has_module("openrlhf"),
        "verl's and OpenRLHF's client code are not installed: run `make trainer-clients`",
    ),
    "requires_vllm": (_vllm_env, "no vLLM environment in .venv-vllm: run `make vllm-env`"),
    "requires_ray": (lambda: _has_module("ray"), "Ray is not installed: pip install 'assay[ray]'"),
    "requires_postgres": (_postgres, "no PostgreSQL server binaries: apt-get install -y postgresql-15"),
}


def _in_ci() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("ASSAY_REQUIRE_ALL"))


def _starts_processes(item: pytest.Item) -> bool:
    if INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    path = getattr(module, "__file__", None)
    if path is None:
        return False
    source = _SOURCES.get(path)
    if source is None:
        source = _SOURCES[path] = Path(path).read_text(encoding="utf-8")
    return any(sign in source for sign in INTEGRATION_SIGNS)


_SOURCES: dict[str, str] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("integration") is None and _starts_processes(item):
            item.add_marker(pytest.mark.integration)


def pytest_runtest_setup(item: pytest.Item) -> None:
    for name, (available, reason) in REQUIREMENTS.items():
        if item.get_closest_marker(name) is not None and not available():
            if _in_ci():
                pytest.fail(f"{reason} (CI runs every test: {name})", pytrace=False)
            pytest.skip(reason)


@pytest.fixture(autouse=True)
def _no_assay_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with no ASSAY_* variable set: settings come from what the test passes."""
    for name in list(os.environ):
        if name.startswith("ASSAY_") and name != "ASSAY_REQUIRE_ALL":
            monkeypatch.delenv(name)
