"""The doctor's output: a markdown report and one PNG per failure mode with its signals over steps.

matplotlib comes with the `bench` and `train` extras; without it the report says so and has no plots.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path

from assay.doctor.checks import Finding
from assay.doctor.run import Run

_MARK = {"tripped": "TRIPPED", "healthy": "ok", "no data": "no data"}


def plots_available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def plot_finding(run: Run, finding: Finding, path: Path) -> Path | None:
    """The finding's signals against the step, one panel each; None when none was logged."""
    present = [key for key in finding.signals if run.series(key)]
    if not present:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(present), figsize=(4.2 * len(present), 2.8), squeeze=False)
    for ax, key in zip(axes.flat, present, strict=True):
        xs, ys = zip(*run.series(key), strict=True)
        ax.plot(xs, ys, marker="." if len(xs) < 30 else None)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("step", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"{finding.title}: {_MARK[finding.status]}", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_report(run: Run, findings: Sequence[Finding], out: Path, plots: bool = True) -> Path:
    """Write `out/doctor.md` (and `out/<mode>.png` when plots are on and matplotlib is installed)."""
    out.mkdir(parents=True, exist_ok=True)
    drawn = plots and plots_available()
    tripped = [f for f in findings if f.tripped]
    lines = [
        "# assay doctor",
        "",
        f"{len(run.records)} steps read; "
        + (
            f"**{len(tripped)} failure mode(s) tripped**: {', '.join(f.title for f in tripped)}."
            if tripped
            else "no failure mode tripped."
        ),
        "",
        "| mode | status | evidence |",
        "|---|---|---|",
        *(f"| {f.title} | {_MARK[f.status]} | {f.evidence or '-'} |" for f in findings),
        "",
    ]
    if plots and not drawn:
        lines += ["Plots skipped: matplotlib is not installed (`pip install 'assay[bench]'`).", ""]
    if run.problems:
        lines += [f"Unreadable log lines: {'; '.join(run.problems[:5])}", ""]
    for finding in findings:
        lines += [f"## {finding.title}: {_MARK[finding.status]}", ""]
        lines += [f"- Evidence: {finding.evidence or 'the signals this check reads were not logged'}"]
        lines += [f"- Threshold: {finding.threshold}", f"- What to try: {finding.advice}"]
        picture = plot_finding(run, finding, out / f"{finding.mode}.png") if drawn else None
        if picture is not None:
            lines += ["", f"![{finding.title}]({picture.name})"]
        lines.append("")
    path = out / "doctor.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
