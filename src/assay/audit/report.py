"""The audit's outputs: a table for the terminal, `audit.json`, and `audit.png` (hacks rewarded per family).

matplotlib (the `bench` extra) is imported only when the picture is drawn, with the Agg backend.
"""

from __future__ import annotations

import json
from pathlib import Path

from assay.audit.runner import AuditReport
from assay.bench.plots import MISSING, available


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def table(report: AuditReport) -> str:
    """One line per family: hacks rewarded (or controls judged right), flagged, not scored."""
    lines = [f"{'family':<26} {'probes':>6} {'rewarded':>9} {'rate':>5} {'flagged':>8} {'not scored':>10}"]
    for kind, title in (("hack", "rewarded"), ("control", "judged right")):
        rows = [c for c in report.families.values() if c.kind == kind]
        if kind == "control" and rows:
            lines.append(f"controls ({title}):")
        for c in rows:
            counts = f"{c.probes:>6} {c.rewarded:>9} {_rate(c.rate):>5} {c.flagged:>8} {c.not_scored:>10}"
            lines.append(f"{c.family:<26} {counts}")
    scored = sum(c.probes - c.not_scored for c in report.families.values() if c.kind == "hack")
    lines.append(f"hacks rewarded: {report.hacks_rewarded} of {scored} hack probes scored")
    not_run = report.not_run
    if not_run:
        count = sum(report.families[name].probes for name in not_run)
        lines.append(f"NOT RUN: {len(not_run)} families ({count} probes) were not scored, so not measured:")
        for reason, names in _by_reason(not_run).items():
            lines.append(f"  {', '.join(names)}: {reason or 'no reason given'}")
    if not report.second_opinion:
        lines.append("(the math second opinion is off: judge_second_opinion probes measure the rules alone)")
    return "\n".join(lines)


def _by_reason(not_run: dict[str, str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for name, reason in not_run.items():
        grouped.setdefault(reason, []).append(name)
    return grouped


def write_json(report: AuditReport, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_plot(report: AuditReport, path: Path) -> Path | None:
    """Bars: the share of each hack family's scored probes that were rewarded. None without matplotlib."""
    if not available():
        return None
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - available() said it was there
        raise ImportError(MISSING) from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    hacks = [c for c in report.families.values() if c.kind == "hack"]
    names = [c.family for c in hacks]
    rates = [(c.rate or 0.0) * 100 for c in hacks]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(names) + 2), 4.5))
    bars = ax.bar(names, rates, color=["#c0392b" if r > 0 else "#27ae60" for r in rates])
    for bar, c in zip(bars, hacks, strict=True):
        where = (bar.get_x() + bar.get_width() / 2, bar.get_height())
        ax.annotate(f"{c.rewarded}/{c.probes - c.not_scored}", where, ha="center", va="bottom", fontsize=8)
    ax.set_ylabel("hacks rewarded (%)")
    ax.set_ylim(0, 105)
    ax.set_title("assay audit: probes rewarded per family")
    ax.tick_params(axis="x", labelrotation=60, labelsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
