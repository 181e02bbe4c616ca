"""Prometheus metrics of one engine/app. Each instance owns its CollectorRegistry (no global state), so
several apps (tests, replicas in one process) never collide."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector


class ReadCounter(Collector):
    """A counter whose values are read at scrape time from the component that keeps them."""

    def __init__(self, name: str, documentation: str, label: str, read: Callable[[], Mapping[str, float]]):
        self._name, self._documentation, self._label, self._read = name, documentation, label, read

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(self._name, self._documentation, labels=[self._label])
        for value_label, value in self._read().items():
            family.add_metric([value_label], value)
        yield family


_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "assay_requests",
            "HTTP requests by route and status code.",
            ["route", "code"],
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "assay_request_seconds",
            "HTTP request latency by route.",
            ["route"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.items = Counter(
            "assay_items", "Scored items by task and status.", ["task", "status"], registry=self.registry
        )
        self.item_seconds = Histogram(
            "assay_item_seconds",
            "Per-item scoring latency by task.",
            ["task"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "assay_queue_depth", "Items admitted and not yet finished.", registry=self.registry
        )
        self.worker_restarts = Counter(
            "assay_worker_restarts",
            "Worker processes replaced, by cause.",
            ["cause"],
            registry=self.registry,
        )
        self.rejected = Counter(
            "assay_rejected_items", "Items refused because the queue was full.", registry=self.registry
        )
        self.openrlhf_unscored = Counter(
            "assay_openrlhf_unscored_items",
            "OpenRLHF /get_reward items that could not be scored, by status and what was done"
            " (refused: the batch was refused; zero: sent as 0.0).",
            ["status", "action"],
            registry=self.registry,
        )

        # sessions (issue 25)
        self.sessions_open = Gauge(
            "assay_sessions_open", "Sessions open now (holding a sandbox).", registry=self.registry
        )
        self.sessions_ended = Counter(
            "assay_sessions_ended",
            "Sessions ended, by cause (deleted, expired, max_steps, lost, shutdown).",
            ["cause"],
            registry=self.registry,
        )
        self.session_steps = Counter(
            "assay_session_steps",
            "Session tool calls by tool and status (ok, tool_error, invalid_call, session_ended).",
            ["tool", "status"],
            registry=self.registry,
        )
        self.session_tool_errors = Counter(
            "assay_session_tool_errors",
            "Session tool calls that failed (status tool_error), by tool and reason.",
            ["tool", "reason"],
            registry=self.registry,
        )

    def render(self) -> bytes:
        return generate_latest(self.registry)
