"""Fixtures shared by the whole suite: explicit settings and a real server on loopback."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from assay.api import create_app
from assay.settings import Settings

TESTS = Path(__file__).parent
# Worker processes import the test plugins by module name; make sure they can (forkserver copies sys.path).
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from assay_test_plugins import PLUGINS  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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

    def start(self) -> None:
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
