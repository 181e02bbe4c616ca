"""Start `assay serve` as a child process for a self-contained run (the demos, a run without
`reward.url`): the trainer reaches scoring only over HTTP, as it does against any deployed service, and
never imports the server (layers.toml). The settings travel as the `ASSAY_*` variables `assay serve`
reads; the child dies with this process (PR_SET_PDEATHSIG) and is stopped on exit.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from assay.settings import Settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def settings_env(settings: Settings) -> dict[str, str]:
    """The `ASSAY_*` variables that rebuild `settings`: the fields that were set, nested with `__`
    (pydantic-settings' delimiter); lists and mappings as JSON, which pydantic-settings parses."""

    def flat(prefix: str, values: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        for key, value in values.items():
            name = f"{prefix}__{key.upper()}" if prefix else f"ASSAY_{key.upper()}"
            if isinstance(value, Mapping):
                yield from flat(name, value)
            elif isinstance(value, str):
                yield name, value
            else:
                yield name, json.dumps(value)

    return dict(flat("", settings.model_dump(mode="json", exclude_unset=True)))


def _die_with_parent() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: no orphan server when the trainer is killed


@contextmanager
def local_service(settings: Settings, start_timeout_s: float = 90.0) -> Iterator[str]:
    """Yield the URL of `assay serve` started with `settings` on a free loopback port; stop it on exit."""
    port = free_port()
    quiet = {"ASSAY_LOG_LEVEL": "warning"}  # no access-log line per reward call in the run's output
    env = {
        **os.environ,
        **quiet,
        **settings_env(settings),
        "ASSAY_HOST": "127.0.0.1",
        "ASSAY_PORT": str(port),
    }
    command = [sys.executable, "-m", "assay.cli", "serve"]
    child = subprocess.Popen(command, env=env, preexec_fn=_die_with_parent)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_healthy(child, url, start_timeout_s)
        yield url
    finally:
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _wait_until_healthy(child: subprocess.Popen[bytes], url: str, timeout_s: float) -> None:
    """Bounded: ready when /healthz answers (uvicorn accepts only after the lifespan started the worker
    pool); an early exit of the child is an error at once."""
    deadline = time.monotonic() + timeout_s
    with httpx.Client(timeout=2.0) as http:
        while time.monotonic() < deadline:
            try:
                if http.get(f"{url}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            try:
                code = child.wait(0.1)  # the pause between probes doubles as the exit check
            except subprocess.TimeoutExpired:
                continue
            raise RuntimeError(f"assay serve exited with code {code} before it was ready")
    raise RuntimeError(f"assay serve did not answer /healthz within {timeout_s:.0f} s")
