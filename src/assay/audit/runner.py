"""Score the probe families with an `Engine` built from the user's settings and count what was rewarded.

The audit is a client of the engine, like bench: the items go through `Engine.score` (the path of
`assay.score`, the CLI and `/v1/rewards`, reviews such as the math second opinion included), so what it
reports is what a trainer would have been paid. It adds no verdict of its own: a probe is "rewarded"
when its result is `ok` with a reward of at least 0.5 (probes.REWARDED), "flagged" when its
`details["flags"]` is not empty, and "not scored" when its status is not `ok` (a missing judge backend,
no sandbox): those are reported, never counted as caught.

`tasks` maps a probe kind (math, code, sql, judge) to the task name to score it with, so a plugin
verifier is audited with the built-in probes of its kind. SQL probes run on a database the audit writes
to a temporary directory (sql.py); the rest of the settings are the user's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.audit.code import code_probes
from assay.audit.judge import judge_probes
from assay.audit.math import math_probes
from assay.audit.probes import Probe, rewarded
from assay.audit.sql import sql_probes, write_database
from assay.engine.scoring import Engine
from assay.settings import Settings
from assay.types import Result

KINDS: dict[str, Callable[[int], list[Probe]]] = {
    "code": lambda seed: code_probes(),
    "math": lambda seed: math_probes(),
    "sql": lambda seed: sql_probes(),
    "judge": lambda seed: judge_probes(seed),
}


@dataclass
class FamilyCount:
    family: str
    kind: str  # "hack" or "control"
    probes: int = 0
    rewarded: int = 0  # hacks: rewarded; controls: judged as they deserve
    flagged: int = 0
    not_scored: int = 0

    @property
    def rate(self) -> float | None:
        """Hacks: the share of scored probes that were rewarded; controls: the share judged right."""
        scored = self.probes - self.not_scored
        return self.rewarded / scored if scored else None


@dataclass
class AuditReport:
    families: dict[str, FamilyCount]
    probes: list[dict[str, Any]] = field(default_factory=list)
    tasks: dict[str, str] = field(default_factory=dict)
    second_opinion: bool = False

    @property
    def hacks_rewarded(self) -> int:
        return sum(c.rewarded for c in self.families.values() if c.kind == "hack")

    def as_json(self) -> dict[str, Any]:
        families = {name: {**asdict(c), "rate": c.rate} for name, c in self.families.items()}
        return {
            "families": families,
            "hacks_rewarded": self.hacks_rewarded,
            "tasks": self.tasks,
            "second_opinion": self.second_opinion,
            "probes": self.probes,
        }


def collect(kinds: Sequence[str], seed: int = 0) -> list[Probe]:
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown probe kinds {unknown}; known: {', '.join(KINDS)}")
    return [probe for kind in kinds for probe in KINDS[kind](seed)]


def run_audit(
    settings: Settings,
    kinds: Sequence[str] = tuple(KINDS),
    tasks: Mapping[str, str] | None = None,
    seed: int = 0,
) -> AuditReport:
    """Score every probe of `kinds` through an Engine built from `settings`; the per-family counts."""
    probes = collect(kinds, seed)
    names = {p.task: (tasks or {}).get(p.task, p.task) for p in probes}  # judge probes include math ones
    items = [{"id": f"{p.family}-{i}", "task": names[p.task], **p.item} for i, p in enumerate(probes)]
    with tempfile.TemporaryDirectory(prefix="assay-audit-") as tmp:
        if "sql" in kinds:
            write_database(Path(tmp))
            settings = settings.model_copy(
                update={"sql": settings.sql.model_copy(update={"databases": Path(tmp)})}
            )
        with Engine(settings) as engine:
            results = engine.score(items)
    return summarise(probes, results, names, settings.judge.second_opinion)


def summarise(
    probes: Sequence[Probe], results: Sequence[Result], tasks: Mapping[str, str], second_opinion: bool
) -> AuditReport:
    families: dict[str, FamilyCount] = {}
    rows = []
    for probe, result in zip(probes, results, strict=True):
        count = families.setdefault(probe.family, FamilyCount(probe.family, probe.kind))
        flags = result.details.get("flags") or []
        won = rewarded(result.status.value, result.reward)
        count.probes += 1
        count.flagged += bool(flags)
        if result.status.value != "ok":
            count.not_scored += 1
        elif (won == probe.deserves) if probe.kind == "control" else won:
            count.rewarded += 1
        rows.append(
            {
                "family": probe.family,
                "kind": probe.kind,
                "note": probe.note,
                "tags": list(probe.tags),
                "status": result.status.value,
                "reward": result.reward,
                "rewarded": won,
                "flags": list(flags) if isinstance(flags, list) else [],
                "reason": result.reason,
            }
        )
    return AuditReport(families, rows, dict(tasks), second_opinion)
