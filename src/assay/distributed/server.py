"""`assay serve --ray`: join (or start) Ray, deploy the application, serve until interrupted."""

from __future__ import annotations

import logging
import signal
import threading

from assay.distributed.sizing import local_cpus
from assay.settings import Settings

log = logging.getLogger("assay.distributed")


def serve_forever(settings: Settings, address: str | None = None, stop: threading.Event | None = None) -> int:
    """Deploy and block until `stop` is set or Ctrl-C; then tear the application (and a local Ray) down."""
    import ray
    from ray import serve

    from assay.distributed.deployments import deploy

    stopped = stop if stop is not None else threading.Event()
    address = address or settings.ray.address
    if address is None:  # a local Ray on this machine: room for every replica, even on a 2-core laptop
        ray.init(num_cpus=local_cpus(settings), include_dashboard=False)
    else:
        ray.init(address=address)
    if threading.current_thread() is threading.main_thread():
        # docker and Kubernetes stop with SIGTERM. Set after ray.init, which installs a crash handler for
        # SIGTERM that aborts the process half-way through the clean-up below.
        signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        deploy(settings, http=True)
        print(f"assay: serving on Ray at http://{settings.host}:{settings.port}", flush=True)
        while not stopped.wait(1.0):  # a timed wait lets Ctrl-C through at once
            pass
    except KeyboardInterrupt:
        pass
    finally:
        serve.delete(settings.ray.app_name)
        if address is None:  # the local Ray we started
            serve.shutdown()
        ray.shutdown()
    return 0
