"""The doctor's checks while a run trains: the trainer's step log calls `Monitor.update` after each step
and logs a warning the first time a failure mode trips (and a note when it clears)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from assay.doctor.checks import Finding, Thresholds, diagnose
from assay.doctor.run import Run

log = logging.getLogger("assay.doctor")


class Monitor:
    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.thresholds = thresholds or Thresholds()
        self.records: list[dict[str, Any]] = []
        self.tripped: set[str] = set()

    def reset(self, records: Sequence[dict[str, Any]]) -> None:
        """Start over from `records` (a resumed run), without warning about what was already known."""
        self.records = list(records)
        self.tripped = {f.mode for f in diagnose(Run(self.records), self.thresholds) if f.tripped}

    def update(self, record: dict[str, Any]) -> list[Finding]:
        """Add a step; return the findings that tripped at this step (and log them)."""
        self.records.append(record)
        findings = diagnose(Run(self.records), self.thresholds)
        new = [f for f in findings if f.tripped and f.mode not in self.tripped]
        for finding in new:
            log.warning(
                "step %s: %s: %s. Try: %s",
                record.get("step"),
                finding.title,
                finding.evidence,
                finding.advice,
            )
        for finding in findings:
            if finding.mode in self.tripped and finding.status == "healthy":
                log.info("step %s: %s cleared: %s", record.get("step"), finding.title, finding.evidence)
        self.tripped = {f.mode for f in findings if f.tripped}
        return new
