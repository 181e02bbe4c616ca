"""An Assay service inside this process: uvicorn in a thread on a free loopback port.

For tests and benchmarks that need a real HTTP service with settings only Python can give (plugins
importable from this process). The trainer's demos start `assay serve` as a process instead
(`assay.rl_client.runs.service`): the trainer never imports the server (layers.toml).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from assay.settings import Settings


@contextmanager
def local_service(settings: Settings, start_timeout_s: float = 60.0) -> Iterator[str]:
    """Yield the base URL of a service built from `settings`; stop it on exit."""
    import uvicorn

    from assay.api.app import create_app

    config = uvicorn.Config(  # port 0: the kernel picks a free one, read back once bound
        create_app(settings), host="127.0.0.1", port=0, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="assay-local-service", daemon=True)
    thread.start()
    try:
        for _ in range(int(start_timeout_s * 10)):  # bounded wait for the lifespan (worker pool)
            if server.started or not thread.is_alive():
                break
            thread.join(0.1)
        if not server.started:
            raise RuntimeError("the Assay service did not start")
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(60)
