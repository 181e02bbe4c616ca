"""Ray's exceptions mapped to Assay's, once, at the boundary (as httpx maps transport errors)."""

from __future__ import annotations

from assay.errors import QueueFullError


def queue_full(exc: BaseException, retry_after_s: float) -> QueueFullError | None:
    """A deployment's full queue (`BackPressureError`) is Assay's QueueFullError (HTTP 429)."""
    from ray.serve.exceptions import BackPressureError

    if isinstance(exc, BackPressureError):
        queued, limit = exc.args[0], exc.args[1]
        return QueueFullError(int(queued), int(limit), retry_after_s)
    return None
