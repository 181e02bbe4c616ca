"""Ray's exceptions mapped to Assay's, once, at the boundary (as httpx maps transport errors)."""

from __future__ import annotations

import warnings

from assay.errors import MissingExtraError, QueueFullError


def require_ray() -> None:
    """Import Ray Serve once, or say which extra to install."""
    try:
        with warnings.catch_warnings():
            # Ray Serve's own pydantic models use deprecated Field keywords; nothing a user can act on.
            warnings.simplefilter("ignore", DeprecationWarning)
            import ray.serve  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("ray[serve]", "ray") from exc


def queue_full(exc: BaseException, retry_after_s: float) -> QueueFullError | None:
    """A deployment's full queue (`BackPressureError`) is Assay's QueueFullError (HTTP 429)."""
    require_ray()
    from ray.serve.exceptions import BackPressureError

    if isinstance(exc, BackPressureError):
        queued, limit = exc.args[0], exc.args[1]
        return QueueFullError(int(queued), int(limit), retry_after_s)
    return None
