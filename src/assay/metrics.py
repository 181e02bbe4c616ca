"""Prometheus metrics of one engine/app. Each instance owns its CollectorRegistry (no global state), so
several apps (tests, replicas in one process) never collide."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

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


# `Result.details["flags"]`: a list of lower_snake names (docs/audit.md). Label values stay bounded: a
# name of another shape counts as "other", and an item counts each of at most _MAX_FLAGS names once.
_FLAG_NAME = re.compile(r"[a-z0-9][a-z0-9_.:-]{0,63}")
_MAX_FLAGS = 16


def flag_names(details: Mapping[str, Any]) -> list[str]:
    """The flags of a result's details as metric label values (deduplicated, bounded)."""
    flags = details.get("flags")
    if not isinstance(flags, list):
        return []
    names = {f if isinstance(f, str) and _FLAG_NAME.fullmatch(f) else "other" for f in flags[:_MAX_FLAGS]}
    return sorted(names)


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
        self.flagged = Counter(
            "assay_flagged_items",
            "Scored items flagged as a possible reward hack (details.flags), by task and flag.",
            ["task", "flag"],
            registry=self.registry,
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
        self.missing_modules = Counter(
            "assay_sandbox_missing_modules",
            "Code items whose program failed importing a package the sandbox runtime lacks, by package"
            f" (at most {_MAX_MODULE_LABELS} names; the rest as other).",
            ["module"],
            registry=self.registry,
        )
        self._module_labels: set[str] = set()

    def count_item(self, task: str | None, status: str, details: Mapping[str, Any]) -> None:
        """One scored item: its status, and each flag it carries."""
        task = task or "unknown"
        self.items.labels(task=task, status=status).inc()
        for flag in flag_names(details):
            self.flagged.labels(task=task, flag=flag).inc()

    def missing_module(self, module: str) -> None:
        """Count one; the label set is bounded, since programs choose the names."""
        if module not in self._module_labels and len(self._module_labels) >= _MAX_MODULE_LABELS:
            module = "other"
        self._module_labels.add(module)
        self.missing_modules.labels(module=module).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
