"""Fixtures shared by the whole suite: explicit settings and a real server on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from assay.settings import Settings

# Property tests assert behaviour, never speed (benchmarks measure speed): hypothesis's 200 ms deadline
# and its too-slow health check failed correct code on a loaded 2-core machine.
hypothesis_settings.register_profile("assay", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("assay")

TESTS = Path(__file__).parent
# Worker processes import the test plugins by module name; make sure they can (forkserver copies sys.path).
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from assay_test_plugins import PLUGINS  # noqa: E402
from assay_testing import DEMO_COMMAND, DEMO_OUT, LiveServer, user_shell_env  # noqa: E402


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
    """The README's `assay train --demo` command (DEMO_COMMAND), run once as a user runs it: by bash, from a
    fresh directory, with the environment's `bin` on PATH. Two to three minutes on a CPU, so every test that
    reads a demo run shares this one: the demo's own test, the doctor's and the README's block itself."""
    directory = tmp_path_factory.mktemp("demo")
    command = ["bash", "-euo", "pipefail", "-c", DEMO_COMMAND]
    done = subprocess.run(
        command, cwd=directory, env=user_shell_env(), capture_output=True, text=True, timeout=900
    )
    return directory / DEMO_OUT, done


# The tiers' hooks (tests/assay_tiers.py): pytest finds them as this module's names.
from assay_tiers import (  # noqa: E402, F401
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_ignore_collect,
    pytest_runtest_logstart,
    pytest_runtest_makereport,
    pytest_runtest_setup,
)


@pytest.fixture(autouse=True)
def _no_assay_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test starts with no ASSAY_* variable set: settings come from what the test passes."""
    for name in list(os.environ):
        if name.startswith("ASSAY_") and name != "ASSAY_REQUIRE_ALL":
            monkeypatch.delenv(name)
