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


_MAX_MODULE_LABELS = 64
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

        self.missing_modules = Counter(
            "assay_sandbox_missing_modules",
            "Code items whose program failed importing a package the sandbox runtime lacks, by package"
            f" (at most {_MAX_MODULE_LABELS} names; the rest as other).",
            ["module"],
            registry=self.registry,
        )
        self._module_labels: set[str] = set()

    def missing_module(self, module: str) -> None:
        """Count one; the label set is bounded, since programs choose the names."""
        if module not in self._module_labels and len(self._module_labels) >= _MAX_MODULE_LABELS:
            module = "other"
        self._module_labels.add(module)
        self.missing_modules.labels(module=module).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
