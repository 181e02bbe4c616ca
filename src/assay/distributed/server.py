"""`assay serve --ray`: join (or start) Ray, deploy the application, serve until interrupted."""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Iterator

from assay.distributed.sizing import local_cpus
from assay.settings import Settings

log = logging.getLogger("assay.distributed")


def serve_forever(settings: Settings, address: str | None = None, stop: threading.Event | None = None) -> int:
    """Deploy and block until `stop` is set or Ctrl-C; then tear the application (and a local Ray) down."""
    import ray

    from assay.distributed.deployments import deploy

    stopped = stop if stop is not None else threading.Event()
    address = address or settings.ray.address
    with _interrupts_held() as interrupted:
        if address is None:  # a local Ray on this machine: room for every replica, even on a 2-core laptop
            ray.init(num_cpus=local_cpus(settings), include_dashboard=False)
        else:
            ray.init(address=address)
    if threading.current_thread() is threading.main_thread():
        # docker and Kubernetes stop with SIGTERM. Set after ray.init, which installs a crash handler for
        # SIGTERM that aborts the process half-way through the clean-up below.
        signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    try:
        if not interrupted:  # a Ctrl-C held while Ray started goes straight to the tear-down
            deploy(settings, http=True)
            print(f"assay: serving on Ray at http://{settings.host}:{settings.port}", flush=True)
            while not stopped.wait(1.0):  # a timed wait lets Ctrl-C through at once
                pass
    except KeyboardInterrupt:
        pass
    finally:
        _tear_down(settings, local=address is None, deployed=not interrupted)
    return 0


@contextlib.contextmanager
def _interrupts_held() -> Iterator[list[int]]:
    """Hold Ctrl-C while Ray starts: an interrupt inside `ray.init` orphans the agents it has started (a
    Ctrl-C 5 s into start-up left Ray's DashboardAgent and RuntimeEnvAgent running). The list says
    whether one came; the caller then tears the started Ray down as on any other stop."""
    interrupted: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: interrupted.append(signum))
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
        if interrupted:
            print("assay serve: interrupted while Ray started; stopping it", flush=True)


def _tear_down(settings: Settings, local: bool, deployed: bool) -> None:
    """Delete the application and stop a Ray this process started; each step runs even when one before
    it fails, so no Ray process outlives the command."""
    import ray
    from ray import serve

    try:
        if deployed:
            serve.delete(settings.ray.app_name)
        if local:
            serve.shutdown()
    except Exception:  # still stop Ray itself: an error here must not leave its processes behind
        log.exception("assay serve: removing the Serve application failed")
    finally:
        ray.shutdown()
