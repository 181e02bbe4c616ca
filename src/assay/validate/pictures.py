"""The readable report: report.md (counts per check, the invalid tasks) and the solve-rate histogram.

matplotlib (the `bench` extra) is imported only when a picture is drawn, with the Agg backend.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from assay.validate.report import TaskReport

_SHOWN = 50  # invalid tasks listed in report.md


def solve_rate_histogram(rates: Sequence[float], path: Path) -> Path:
    from assay.bench.plots import _pyplot

    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(7, 4))
    axis.hist(rates, bins=[i / 10 for i in range(11)], edgecolor="black")
    axis.set_xlabel("solve rate (share of samples the verifier accepted)")
    axis.set_ylabel("prompts")
    axis.set_title(f"solve-rate distribution over {len(rates)} prompts")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def markdown(reports: Sequence[TaskReport]) -> str:
    valid = sum(r.valid for r in reports)
    lines = [
        "# Task validation",
        "",
        f"{len(reports)} tasks: {valid} valid, {len(reports) - valid} invalid.",
        "",
    ]
    checks = Counter((p.check, p.severity) for r in reports for p in r.problems)
    if checks:
        lines += ["| check | severity | tasks |", "| --- | --- | --- |"]
        lines += [f"| {check} | {severity} | {n} |" for (check, severity), n in checks.most_common()]
        lines.append("")
    rates = [r.solve_rate for r in reports if r.solve_rate is not None]
    if rates:
        mean = sum(rates) / len(rates)
        zero, one = sum(r == 0 for r in rates), sum(r == 1 for r in rates)
        lines += [
            f"Solve rates over {len(rates)} prompts: mean {mean:.3f}; "
            f"never solved {zero}, always solved {one}.",
            "",
            "![solve rates](solve_rates.png)",
            "",
        ]
    bad = [r for r in reports if not r.valid]
    if bad:
        lines += ["## Invalid tasks", ""]
        for report in bad[:_SHOWN]:
            errors = "; ".join(f"{p.check}: {p.reason}" for p in report.problems if p.severity == "error")
            lines.append(f"- `{report.id}`: {errors}")
        if len(bad) > _SHOWN:
            lines.append(f"- ... and {len(bad) - _SHOWN} more (see the JSON Lines report)")
    return "\n".join(lines) + "\n"


def write_report(directory: Path, reports: Sequence[TaskReport]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / "report.md"]
    written[0].write_text(markdown(reports), encoding="utf-8")
    rates = [r.solve_rate for r in reports if r.solve_rate is not None]
    if rates:
        written.append(solve_rate_histogram(rates, directory / "solve_rates.png"))
    return written
