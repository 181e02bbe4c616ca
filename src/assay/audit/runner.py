"""Score the probe families with an `Engine` built from the user's settings and count what was rewarded.

The audit is a client of the engine, like bench: the items go through `Engine.score` (the path of
`assay.score`, the CLI and `/v1/rewards`, reviews such as the math second opinion included), so what it
reports is what a trainer would have been paid. It adds no verdict of its own: a probe is "rewarded"
when its result is `ok` with a reward of at least 0.5 (probes.REWARDED), "flagged" when its
`details["flags"]` is not empty, and "not scored" when its status is not `ok` (a missing judge backend,
no sandbox): those are reported, never counted as caught.

Each task owns its probe families (`Scorer.audit`; the built-in ones in their folders' `audit`
modules); a probe kind is the name of a task that gives probes, read from the registry. `tasks` maps a
kind to the task name to score it with, so a plugin verifier is audited with the built-in probes of its
kind. What probes need is written by their task (`Audit.settings`: the SQL probes' database, in a
temporary directory); the rest of the settings are the user's.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.engine.scoring import Engine
from assay.registry import Audit, Registry, Scorer
from assay.registry.audit import Probe, rewarded
from assay.settings import Settings
from assay.types import Result


def probe_kinds(settings: Settings) -> dict[str, type[Scorer]]:
    """The tasks under `settings` that declare audit probes (an `Audit` with its own `probes`), by name:
    the kinds `assay audit` knows. Read from the declaration, so no probe is built twice."""
    registry = Registry.from_settings(settings)
    return {name: cls for name, cls in registry.items() if type(cls.audit).probes is not Audit.probes}


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

    @property
    def not_run(self) -> dict[str, str]:
        """Families none of whose probes was scored, each with the reason of its first probe (no judge
        configured, no sandbox): an audit that skipped them has not measured them, whatever it counts."""
        reasons: dict[str, str] = {}
        for row in self.probes:
            reasons.setdefault(row["family"], row["reason"])
        return {
            name: reasons.get(name, "")
            for name, c in self.families.items()
            if c.probes and c.not_scored == c.probes
        }

    def as_json(self) -> dict[str, Any]:
        families = {name: {**asdict(c), "rate": c.rate} for name, c in self.families.items()}
        return {
            "families": families,
            "hacks_rewarded": self.hacks_rewarded,
            "not_run": self.not_run,
            "tasks": self.tasks,
            "second_opinion": self.second_opinion,
            "probes": self.probes,
        }


def collect(known: Mapping[str, type[Scorer]], kinds: Sequence[str], seed: int = 0) -> list[Probe]:
    unknown = [k for k in kinds if k not in known]
    if unknown:
        raise ValueError(f"unknown probe kinds {unknown}; known: {', '.join(known)}")
    return [probe for kind in kinds for probe in known[kind].audit.probes(seed)]


def run_audit(
    settings: Settings,
    kinds: Sequence[str] | None = None,
    tasks: Mapping[str, str] | None = None,
    seed: int = 0,
) -> AuditReport:
    """Score every probe of `kinds` (default: every task that gives probes) through an Engine built from
    `settings`; the per-family counts."""
    known = probe_kinds(settings)
    kinds = list(known) if kinds is None else list(kinds)
    probes = collect(known, kinds, seed)
    names = {p.task: (tasks or {}).get(p.task, p.task) for p in probes}  # judge probes include math ones
    items = [{"id": f"{p.family}-{i}", "task": names[p.task], **p.item} for i, p in enumerate(probes)]
    with tempfile.TemporaryDirectory(prefix="assay-audit-") as tmp:
        for kind in kinds:
            workdir = Path(tmp) / kind
            workdir.mkdir()
            settings = known[kind].audit.settings(settings, workdir)
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
