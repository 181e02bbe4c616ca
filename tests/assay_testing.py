"""Helpers shared by tests in any folder (a plain module: `from conftest import ...` is ambiguous once
sub-folders have conftest files of their own)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from assay.api import create_app
from assay.cli import KEEP_ALIVE_S
from assay.integrations.clients import _listings
from assay.settings import CodeSettings, Settings
from assay.types import Item, Result
from assay.verifiers.code import CodeScorer

TESTS = Path(__file__).parent
# The README's training block, word for word: tests/conftest.py's `demo_run` runs it once for the suite.
DEMO_COMMAND = "assay train --demo --out runs/demo -q"
DEMO_OUT = "runs/demo"


def user_shell_env() -> dict[str, str]:
    """The environment of a user's shell in this checkout after `source .venv/bin/activate`: no ASSAY_*
    variable, the environment's `bin` first on PATH, and this checkout's sources first on PYTHONPATH (a
    venv may hold another checkout's editable install). The README's blocks and the demo run in it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASSAY_")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = str(TESTS.parent / "src")
    return env


def run_script(python: Path | str, script: str, *args: str, timeout: float, what: str) -> None:
    """Run a test helper script under another interpreter (the vLLM venv), or apart so that its memory
    is returned when it ends; RuntimeError with the end of its output when it fails."""
    done = subprocess.run(
        [str(python), str(Path(script).resolve()), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


def reachable_by_sandboxes(path: Path) -> Path:
    """`path` with o+x on it and every directory above it: pytest's own temporary root is 0700, and a root
    server's sandboxes run as a uid that cannot enter it (a prefix there is refused, issue 43)."""
    for directory in [*path.parents, path]:
        if not directory.stat().st_mode & 0o001:
            directory.chmod(directory.stat().st_mode | 0o001)
    return path


def bwrap_works() -> bool:
    """Whether bubblewrap sandboxes can start on this machine (code tests skip otherwise)."""
    from assay.sandbox.bwrap import find_bwrap

    try:
        find_bwrap()
    except Exception:
        return False
    return os.geteuid() == 0 or Path("/proc/sys/user/max_user_namespaces").read_text().strip() != "0"


def code_scorer(**code: Any) -> Iterator[CodeScorer]:
    """A code scorer with its own sandbox slots under `CodeSettings(**code)`, for a fixture to
    `yield from`; closed after. Skips where bubblewrap cannot run."""
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    instance = CodeScorer(Settings(code=CodeSettings(**code)))
    try:
        yield instance
    finally:
        instance.close()


def score_program(scorer: CodeScorer, program: str, tests: list[dict[str, Any]], **item: Any) -> Result:
    """Score `program` (dedented, in a python fence) against `tests` with default options."""
    response = f"```python\n{textwrap.dedent(program)}\n```"
    return scorer.score(
        Item(task="code", response=response, tests=tests, **item), CodeScorer.parse_options({})
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    """A uvicorn server in a thread on a free loopback port, started and stopped by the fixture."""

    def __init__(self, settings: Settings) -> None:
        self.app = create_app(settings)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def keep_connections_as_served(self) -> LiveServer:
        """Idle connections kept as `assay serve` keeps them (before `start`), for tests that drive many
        session steps from a loaded client: uvicorn's 5 s default races a client's reuse of an idle
        connection, and a step lost that way is a ReadError no retry may repeat. Not the default: a stop
        then waits longer for open connections (2.4 s against 0.5 s measured)."""
        self.server.config.timeout_keep_alive = KEEP_ALIVE_S
        return self

    def start(self) -> None:
        # A new server on a URL an earlier test's server had (ports are reused): the adapters' listing
        # of its tasks (asked once per process and URL) must be asked again.
        _listings.pop(self.url, None)
        self.thread.start()
        started = threading.Event()
        for _ in range(600):  # bounded: up to 60 s for the lifespan (worker pool) to come up
            if self.server.started:
                started.set()
                break
            self.thread.join(0.1)
        assert started.is_set(), "test server did not start"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(60)

    @property
    def engine(self) -> Any:
        return self.app.state.engine

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60)


def gate_item(gate: Path) -> dict[str, Any]:
    """An item of the `gate` test task: held in its worker until the file `gate` exists."""
    return {"task": "gate", "response": "a", "reference": "a", "options": {"gate": str(gate)}}


@contextlib.contextmanager
def held_request(
    server: LiveServer, gate: Path, send: Callable[[], httpx.Response], pending: int
) -> Iterator[dict[str, httpx.Response]]:
    """`send` (a request of gate items) in flight, its `pending` items admitted, while the block runs;
    then the gate opens and its answer is in the yielded dict under "response"."""
    answer: dict[str, httpx.Response] = {}
    worker = threading.Thread(target=lambda: answer.update(response=send()))
    worker.start()
    try:
        for _ in range(500):  # bounded poll until the items are admitted
            if server.engine.pending == pending:
                break
            worker.join(0.02)
        assert server.engine.pending == pending, "the held request was never admitted"
        yield answer
    finally:
        gate.touch()
        worker.join(60)
