"""A run as the doctor reads it: step records, the run's summary and the reward server's counters."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.jsonl import read_lines

LOG_NAME = "log.jsonl"
SERVER_METRICS_NAME = "server_metrics.prom"


@dataclass
class Run:
    records: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)
    server: dict[str, float] = field(default_factory=dict)  # flattened Prometheus samples
    problems: list[str] = field(default_factory=list)  # lines of the log that could not be read

    def series(self, key: str) -> list[tuple[float, float]]:
        """(step, value) of every record that holds a finite number under `key`."""
        points = []
        for index, record in enumerate(self.records):
            value = record.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
                points.append((float(record.get("step", index + 1)), float(value)))
        return points


def load_run(run_dir: Path, metrics_text: str | None = None) -> Run:
    """Read `run_dir`; `metrics_text` (a /metrics scrape) overrides `server_metrics.prom`."""
    log = run_dir / LOG_NAME
    if not log.is_file():
        raise FileNotFoundError(f"no step log at {log} (assay train writes {LOG_NAME} into its --out)")
    records, problems = read_records(log.read_text(encoding="utf-8").splitlines())
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
    if metrics_text is None and (run_dir / SERVER_METRICS_NAME).is_file():
        metrics_text = (run_dir / SERVER_METRICS_NAME).read_text(encoding="utf-8")
    server = parse_metrics(metrics_text) if metrics_text else {}
    return Run(records, summary if isinstance(summary, dict) else {}, server, problems)


def read_records(lines: Sequence[str]) -> tuple[list[dict[str, Any]], list[str]]:
    """JSON objects of a JSON Lines log; a line that is not one is reported, not fatal."""
    records, problems = [], []
    for line in read_lines(lines, objects=True):
        if line.problem:
            problems.append(line.problem)
        else:
            records.append(line.value)
    return records, problems


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text -> {'name{label="v",...}': value}, via prometheus_client's own parser."""
    from prometheus_client.parser import text_string_to_metric_families

    out: dict[str, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
                out[f"{sample.name}{{{labels}}}" if labels else sample.name] = float(sample.value)
    except ValueError:
        return out  # a truncated scrape: keep what was read
    return out
