"""The HTTP service: `create_app(settings)` builds a FastAPI app around one scoring `Engine`."""

from assay.api.app import create_app

__all__ = ["create_app"]
