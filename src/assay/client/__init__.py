"""The client wing: what a trainer or a user's process needs to talk to an Assay service over HTTP, and
nothing of the server (tests/layers.toml).

    http.py        `AssayClient` (sync and async): batching, retries, limits learned from a 413
    sessions.py    the session calls `AssayClient` inherits (create, step, verify, close)
    coalescing.py  merging concurrent small calls into batches (`coalesce_s`)
"""

from assay.client.http import AssayClient

__all__ = ["AssayClient"]
