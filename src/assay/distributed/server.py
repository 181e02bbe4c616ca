"""`assay serve --ray`: join (or start) Ray, deploy the application, serve until interrupted."""

from __future__ import annotations

import logging
import threading

from assay.settings import Settings

log = logging.getLogger("assay.distributed")


def serve_forever(settings: Settings, address: str | None = None, stop: threading.Event | None = None) -> int:
    """Deploy and block until `stop` is set or Ctrl-C; then tear the application (and a local Ray) down."""
    import ray
    from ray import serve

    from assay.distributed.deployments import deploy

    address = address or settings.ray.address
    ray.init(address=address, include_dashboard=False)
    try:
        deploy(settings, http=True)
        print(f"assay: serving on Ray at http://{settings.host}:{settings.port}", flush=True)
        (stop or threading.Event()).wait()
    except KeyboardInterrupt:
        pass
    finally:
        serve.delete(settings.ray.app_name)
        if address is None:  # the local Ray we started
            serve.shutdown()
        ray.shutdown()
    return 0
