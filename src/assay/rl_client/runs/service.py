"""Start an Assay service in this process for the demo: uvicorn in a thread on a free loopback port.

The demo must be self-contained, and a thread starts faster than `assay serve` as a subprocess. This is
the one place rl_client touches `assay.api`, imported lazily; training still talks to it only over HTTP.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from assay.settings import Settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def local_service(settings: Settings, start_timeout_s: float = 60.0) -> Iterator[str]:
    """Yield the base URL of a service built from `settings`; stop it on exit."""
    import uvicorn

    from assay.api import create_app

    port = free_port()
    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="assay-demo-service", daemon=True)
    thread.start()
    try:
        for _ in range(int(start_timeout_s * 10)):  # bounded wait for the lifespan (worker pool)
            if server.started or not thread.is_alive():
                break
            thread.join(0.1)
        if not server.started:
            raise RuntimeError("the Assay service did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(60)
