"""Opening a session for a trainer that cannot retry: wait for a free one instead of answering 429.

verl-tool's client and NeMo Gym's agents treat any error from the tool server as the end of the rollout
(verl-tool shows it to the policy, NeMo Gym's `raise_for_status` fails the `/run`), so a full server
holds the request until another trajectory ends its session (backpressure, DESIGN.md "Sessions"),
up to `OPEN_WAIT_S`; then `SessionsFull` goes out as 429 `sessions_full`.
"""

from __future__ import annotations

import asyncio
import time

from assay.engine.service import Service
from assay.sessions import SessionLimits, SessionsFull
from assay.sessions.service import SessionInfo
from assay.types import Item

# How long an open waits for a free session before it is refused; the trainer's own timeout bounds its side.
OPEN_WAIT_S = 3600.0
_FIRST_WAIT_S = 0.01


async def open_when_free(
    engine: Service, item: Item, tools: list[str], limits: SessionLimits, wait_s: float = OPEN_WAIT_S
) -> SessionInfo:
    """A new session, waiting (with a growing pause) while the server is full."""
    deadline, wait = time.monotonic() + wait_s, _FIRST_WAIT_S
    while True:
        try:
            return await engine.open_session(item, tools, limits)
        except SessionsFull as exc:
            left = deadline - time.monotonic()
            if exc.limit == 0 or left <= 0:  # closing down, or full for too long
                raise
            await asyncio.sleep(min(wait, left))  # a session frees when another trajectory ends
            wait = min(wait * 2, max(exc.retry_after_s, _FIRST_WAIT_S))
