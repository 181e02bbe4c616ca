"""The test tiers (issue 24), as a pytest plugin that tests/conftest.py loads: markers set at collection,
modules no selected test needs left unimported, and a guard that fails a fast-tier test starting a process.
A plain module (not conftest) so a test can load it into a pytest run of its own (tests/test_tiers.py)."""

from __future__ import annotations

import functools
import inspect
import itertools
import os
import re
import subprocess
import threading
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).parent

# One mechanism sets the tiers: the markers, added here at collection.
#
# - `integration`: the test starts a process, a server or a sandbox. Decided by the fixtures it uses
#   (INTEGRATION_FIXTURES, or any whose own code has one of INTEGRATION_SIGNS), by the server it needs
#   (INTEGRATION_REQUIREMENTS), or by its module: one that builds an Engine, an app, a server, a sandbox
#   or a subprocess (INTEGRATION_SIGNS in its source), or that says `pytestmark = pytest.mark.integration`.
#   `make check` runs everything that is neither `integration` nor `slow` (a module none of whose tests
#   would run is not even imported), `make test` everything. In a run without `integration`, a test that
#   starts a process fails (the tier guard below).
# - `requires_*`: the test needs something `make test` installs (REQUIREMENTS). Missing, the test skips
#   with the reason locally and FAILS in CI (`CI` or `ASSAY_REQUIRE_ALL` set: .ci/run sets the latter).
INTEGRATION_FIXTURES = frozenset(
    {
        "live_server",
        "demo_run",
        "sandbox_ready",
        "api_schema",
        "executor",
        "assay_service",  # rl_client's live service
        "pg_admin_dsn",  # a throwaway PostgreSQL server (every PostgreSQL fixture uses it)
        "repos",  # git repositories for repository tasks (git runs as a process)
    }
)
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
    "make_repo(",  # a git repository for repository tasks
    "local_service(",  # an Assay service, in this process or a child
)
# Needing one of these is needing a server or an engine's processes.
INTEGRATION_REQUIREMENTS = frozenset(
    {"requires_postgres", "requires_vllm", "requires_ray", "requires_nemo_gym"}
)


def _has_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _vllm_env() -> bool:
    return (TESTS.parent / ".venv-vllm" / "bin" / "python").exists()


def _mcp_v2_env() -> bool:
    return (TESTS.parent / ".venv-mcp" / "bin" / "python").exists()


def _nemo_gym_env() -> bool:
    return (TESTS.parent / ".venv-nemo-gym" / "bin" / "python").exists()


def _verifiers_env() -> bool:
    return (TESTS.parent / ".venv-verifiers" / "bin" / "python").exists()


def _postgres() -> bool:
    import shutil

    return shutil.which("initdb") is not None or any(Path("/usr/lib/postgresql").glob("*/bin/initdb"))


REQUIREMENTS: dict[str, tuple[Callable[[], bool], str]] = {
    "requires_trainer_clients": (
        lambda: _has_module("verl") and _has_module("openrlhf"),
        "verl's and OpenRLHF's client code are not installed: run `make trainer-clients`",
    ),
    "requires_mcp": (
        lambda: _has_module("mcp.server.streamable_http_manager"),
        "the official MCP SDK is not installed: run `make trainer-clients` (scripts/setup_mcp.sh)",
    ),
    "requires_mcp_v2": (_mcp_v2_env, "no .venv-mcp (Assay with mcp 2.3.0): run `make trainer-clients`"),
    "requires_skyrl_gym": (
        lambda: _has_module("skyrl_gym"),
        "SkyRL-gym is not installed: run `make trainer-clients` (scripts/setup_skyrl_gym.sh)",
    ),
    "requires_skyrl_train": (
        lambda: (TESTS.parent / ".skyrl-train" / "skyrl_train").is_dir(),
        "SkyRL's generator is not in .skyrl-train: run `make trainer-clients` (scripts/setup_skyrl_gym.sh)",
    ),
    "requires_vllm": (_vllm_env, "no vLLM environment in .venv-vllm: run `make vllm-env`"),
    "requires_nemo_gym": (
        _nemo_gym_env,
        "no NeMo Gym environment in .venv-nemo-gym: run scripts/setup_nemo_gym.sh (make trainer-clients)",
    ),
    "requires_verifiers": (
        _verifiers_env,
        "no verifiers environment in .venv-verifiers: run `make trainer-clients`",
    ),
    "requires_ray": (lambda: _has_module("ray"), "Ray is not installed: pip install 'assay[ray]'"),
    "requires_postgres": (_postgres, "no PostgreSQL server binaries: apt-get install -y postgresql-15"),
    "requires_reasoning_gym": (
        lambda: _has_module("reasoning_gym"),
        "reasoning-gym is not installed: pip install 'assay[reasoning-gym]'",
    ),
}


def _in_ci() -> bool:
    return bool(os.environ.get("CI") or os.environ.get("ASSAY_REQUIRE_ALL"))


def _starts_processes(item: pytest.Item) -> bool:
    if INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    if any(item.get_closest_marker(name) is not None for name in INTEGRATION_REQUIREMENTS):
        return True
    if any(_fixture_starts_processes(fixture.func) for fixture in _fixtures(item)):
        return True
    path = getattr(getattr(item, "module", None), "__file__", None)
    return path is not None and _has_signs(_module_source(path))


@functools.cache
def _module_source(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def _has_signs(source: str) -> bool:
    return any(sign in source for sign in INTEGRATION_SIGNS)


def _fixtures(item: pytest.Item) -> list[Any]:
    info = getattr(item, "_fixtureinfo", None)  # pytest's own record of the fixtures a test uses
    return [fixture for defs in getattr(info, "name2fixturedefs", {}).values() for fixture in defs]


@functools.cache
def _fixture_starts_processes(func: Callable[..., Any]) -> bool:
    """A fixture whose own code builds an Engine, a server, a sandbox or a subprocess."""
    try:
        return _has_signs(inspect.getsource(func))
    except (OSError, TypeError):
        return False


_MODULE_MARK_RE = re.compile(r"^pytestmark\s*=\s*(.+)$", re.MULTILINE)


def _module_marks(path: Path) -> set[str]:
    """The markers every test of a test module carries whatever it does: `pytestmark` and `integration`."""
    source = _module_source(str(path))
    marks = {
        name for line in _MODULE_MARK_RE.findall(source) for name in re.findall(r"pytest\.mark\.(\w+)", line)
    }
    if _has_signs(source) or marks & INTEGRATION_REQUIREMENTS:
        marks.add("integration")
    return marks


def _deselects_all(markexpr: str, marks: set[str]) -> bool:
    """Whether `-m markexpr` deselects every test that carries at least `marks` (whatever else it has)."""
    from _pytest.mark.expression import Expression

    expression = Expression.compile(markexpr)
    others = sorted(set(re.findall(r"[A-Za-z_]\w*", markexpr)) - marks - {"and", "or", "not"})
    if len(others) > 8:
        return False
    for bits in itertools.product((False, True), repeat=len(others)):
        on = marks | {name for name, bit in zip(others, bits, strict=True) if bit}
        if expression.evaluate(lambda name, /, _on=on, **_: name in _on):
            return False
    return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Do not import a test module none of whose tests `-m` would run: `make check` then skips the
    imports of verl, Ray, transformers and the like that only integration modules need."""
    markexpr = config.option.markexpr
    if not markexpr or collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    marks = _module_marks(collection_path)
    return True if marks and _deselects_all(markexpr, marks) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("integration") is None and _starts_processes(item):
            item.add_marker(pytest.mark.integration)


# -- the tier guard --------------------------------------------------------------------------------
# In a run that leaves `integration` out (`make check`), a test that starts a process anyway fails and
# says so: the markers above are a rule, not a hope. Every way the standard library starts a program or a
# worker ends in one of these calls.
# A spawn from a thread that was already running when the test started (a pool or a library's thread that
# an earlier test left behind) is not the test's: counting it failed an unrelated test at random.
_SPAWNED: list[tuple[str, str]] = []  # (what started, where)
_THREADS_BEFORE: set[int] = set()


def _record(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(call)
    def spawn(*args: Any, **kwargs: Any) -> Any:
        thread = threading.current_thread()
        if thread is threading.main_thread() or thread.ident not in _THREADS_BEFORE:
            caller = next(
                (f for f in reversed(traceback.extract_stack()[:-1]) if not _in_stdlib(f.filename)), None
            )
            where = f"{caller.filename}:{caller.lineno}" if caller else "?"
            _SPAWNED.append((name, f"{where} in thread {thread.name}"))
        return call(*args, **kwargs)

    return spawn


def _in_stdlib(filename: str) -> bool:
    return filename.startswith(_STDLIB) or filename == __file__


_STDLIB = os.path.dirname(os.__file__)


def pytest_configure(config: pytest.Config) -> None:
    markexpr = config.option.markexpr
    if markexpr and _deselects_all(markexpr, {"integration"}):
        import _posixsubprocess

        subprocess._fork_exec = _record("a subprocess", subprocess._fork_exec)  # type: ignore[attr-defined]
        _posixsubprocess.fork_exec = _record("a worker process", _posixsubprocess.fork_exec)
        os.fork = _record("a forked process", os.fork)
        os.posix_spawn = _record("a spawned process", os.posix_spawn)


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _SPAWNED.clear()  # what started before this test (collection, a test runner's own set-up) is not its
    _THREADS_BEFORE.clear()
    _THREADS_BEFORE.update(t.ident for t in threading.enumerate() if t.ident is not None)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    report: pytest.TestReport = yield
    if _SPAWNED:
        started = sorted({name for name, _ in _SPAWNED})
        where = sorted({place for _, place in _SPAWNED})
        _SPAWNED.clear()
        if report.passed:
            report.outcome = "failed"
            report.longrepr = (
                f"{item.nodeid} started {', '.join(started)} during {report.when} but is not marked "
                "`integration`: give it a fixture in INTEGRATION_FIXTURES or its module a sign in "
                f"INTEGRATION_SIGNS (tests/assay_tiers.py); called from {'; '.join(where)}"
            )
    return report


def pytest_runtest_setup(item: pytest.Item) -> None:
    for name, (available, reason) in REQUIREMENTS.items():
        if item.get_closest_marker(name) is not None and not available():
            if _in_ci():
                pytest.fail(f"{reason} (CI runs every test: {name})", pytrace=False)
            pytest.skip(reason)
