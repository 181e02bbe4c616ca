"""A window over the last groups' statistics, exported as Prometheus gauges: what the trainer sends now."""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterator, Sequence
from threading import Lock

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from assay.groups.stats import GroupStats


class GroupWindow:
    """The last `size` groups' statistics, for the /metrics gauges (zero-advantage fraction and friends).

    A window rather than a running total: the doctor and a dashboard care about what the trainer is
    sending now, not averaged over the life of the server."""

    def __init__(self, size: int = 1024) -> None:
        self._stats: deque[GroupStats] = deque(maxlen=size)
        self._lock = Lock()

    def add(self, stats: Sequence[GroupStats]) -> None:
        with self._lock:
            self._stats.extend(stats)

    def summary(self) -> dict[str, float]:
        """Fractions and means over the window; empty before the first group."""
        with self._lock:
            window = list(self._stats)
        if not window:
            return {}
        return {
            "zero_advantage_fraction": sum(s.all_equal for s in window) / len(window),
            "learning_value_mean": statistics.fmean(s.learning_value for s in window),
            "distinct_answers_mean": statistics.fmean(s.distinct_answers for s in window),
            "duplicate_fraction": sum(s.duplicate_responses for s in window)
            / max(1, sum(s.n for s in window)),
            "in_window": float(len(window)),
        }


class GroupGauges(Collector):
    """Exports a `GroupWindow` as gauges at scrape time (`assay_groups_<name>`)."""

    def __init__(self, window: GroupWindow) -> None:
        self._window = window

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for name, value in self._window.summary().items():
            yield GaugeMetricFamily(
                f"assay_groups_{name}", f"{name.replace('_', ' ')} over the last groups scored", value=value
            )
