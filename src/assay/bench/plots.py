"""The report's pictures: FN/FP rate by category per verifier, and the latency distribution.

matplotlib (the `bench` extra) is imported here only, with the Agg backend, so the bench works on
headless machines and `import assay` never pays for it.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MISSING = 'plots need matplotlib: pip install "assay[bench]"'


def available() -> bool:
    """Whether matplotlib can be imported (the quick-start install has no plotting extra)."""
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except ValueError:  # a module object without a spec (set to None to hide it)
        return False


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise ImportError(MISSING) from exc
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def category_rates(report: Mapping[str, Any], path: Path) -> Path:
    """Grouped bars: one group per category, one bar per verifier; FN rate above, FP rate below."""
    plt = _pyplot()
    names = list(report["verifiers"])
    categories = sorted({c for s in report["verifiers"].values() for c in s["by_category"]})
    fig, axes = plt.subplots(
        2, 1, figsize=(min(18.0, max(6.0, 0.35 * len(categories) * len(names) + 2)), 7), sharex=True
    )
    width = 0.8 / max(1, len(names))
    for axis, key, title in (
        (axes[0], "fn_rate", "false-negative rate"),
        (axes[1], "fp_rate", "false-positive rate"),
    ):
        for i, name in enumerate(names):
            by_cat = report["verifiers"][name]["by_category"]
            # No item to rate (no item labelled that way) is a gap, not a bar at zero.
            values = [math.nan if by_cat[c][key] is None else by_cat[c][key] for c in categories]
            axis.bar([j + i * width for j in range(len(categories))], values, width, label=name)
        axis.set_ylabel(title)
        axis.set_ylim(0, 1)
    axes[1].set_xticks(
        [j + width * (len(names) - 1) / 2 for j in range(len(categories))],
        categories,
        rotation=30,
        ha="right",
    )
    if names and categories:
        axes[0].legend()
    axes[0].set_title(f"FN/FP by category: {report['file']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def latency(latencies: Mapping[str, Sequence[float]], path: Path) -> Path:
    """Empirical CDF of per-item latency per verifier, log-scaled milliseconds."""
    plt = _pyplot()
    fig, axis = plt.subplots(figsize=(7, 4.5))
    for name, values in latencies.items():
        ordered = sorted(max(v, 1e-3) for v in values)
        if ordered:
            axis.step(
                ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], where="post", label=name
            )
    if any(latencies.values()):
        axis.set_xscale("log")
        axis.legend()
    axis.set_xlabel("latency per item (ms, log scale)")
    axis.set_ylabel("fraction of items")
    axis.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
