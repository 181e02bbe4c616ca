"""One retry policy for Assay's HTTP clients: the service client (client/http.py) and the judge client.

- What is retried is the caller's call (429/5xx and refused connections for both clients).
- The wait before retry `attempt` (0-based) is full-jitter exponential back-off, uniform in
  `[0, min(max_s, base_s * 2**attempt)]` (the AWS architecture blog's "full jitter"), unless the server
  sent `Retry-After` (delta-seconds or an HTTP date): then that, plus a jitter below `min(base_s, 1 s)` so
  that clients refused together do not return in lock-step.
- A `Retry-After` beyond `max_s` ends the retries: waiting less than the server asked would only be
  refused again, and waiting longer than the caller allows is the caller's call to make.

Sleeping is the caller's (sync or async, injectable in tests); the policy only computes.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from dataclasses import dataclass, field


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date); None if absent or bad."""
    if value is None:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


@dataclass(frozen=True)
class Backoff:
    """How many retries, and how long before each."""

    retries: int = 3
    base_s: float = 0.5
    max_s: float = 10.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry `attempt` (0-based), or None: stop retrying."""
        if attempt >= self.retries:
            return None
        if retry_after is not None:
            if retry_after > self.max_s:
                return None
            return retry_after + self.rng.uniform(0, min(self.base_s, 1.0))
        return self.rng.uniform(0, min(self.max_s, self.base_s * 2**attempt))

    def why_stopped(self, attempt: int, retry_after: float | None) -> str:
        """Why `delay` returned None, for the error message."""
        if attempt < self.retries and retry_after is not None and retry_after > self.max_s:
            return f"asked to retry after {retry_after:g}s (max_backoff_s={self.max_s:g})"
        return f"gave up after {attempt + 1} attempts"
