"""`assay serve --ray`: join (or start) Ray, deploy the application, serve until interrupted."""

from __future__ import annotations

import logging
import math
import os
import signal
import threading

from assay.distributed.dispatch import deployed_kinds
from assay.settings import Settings

log = logging.getLogger("assay.distributed")


def local_cpus(settings: Settings) -> int:
    """Logical CPUs for a local Ray: the machine's, or what the replicas reserve at most if that is more
    (Ray's CPUs are a placement count, not a limit; oversubscribing one machine beats never starting)."""
    sections = [getattr(settings.ray, kind) for kind in deployed_kinds(settings)]
    wanted = sum(s.num_cpus * max(s.replicas, s.max_replicas) for s in sections)
    return max(os.cpu_count() or 1, math.ceil(wanted))


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
