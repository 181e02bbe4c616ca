"""The numbers of a bench report, from rows and one verifier's outcomes.

How a status counts (the same rule for Assay and every baseline):

- accepted = status `ok` and the verifier said correct. Nothing else is a pass.
- false negative (FN) = labelled true and not accepted. A `timeout`, `error` or `invalid` on a true
  item IS a false negative: a trainer gets no positive reward for it, which is the harm FN measures.
- false positive (FP) = labelled false and accepted. A non-ok status on a false item is not an FP.
- accuracy = (accepted true items + not-accepted false items) / labelled items.
- FN rate = FN / items labelled true; FP rate = FP / items labelled false (null when there are none).
- Unlabelled rows are scored and timed but left out of FN, FP and accuracy. Non-ok counts are reported
  next to the rates (`non_ok_on_true` shows how many FNs are failures to score, not wrong verdicts).
- latency: nearest-rank percentiles of per-item milliseconds over rows actually run;
  items/s = rows actually run / wall time of the verifier's whole pass. Assay's engine gets one item
  per worker at a time (`--chunk`), so its latency is an item's service time, not time spent queued
  behind the batch, and its items/s is a lower bound of what the engine does with a full queue.
  Baselines run one item at a time in one thread: their items/s is single-core.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from assay.bench.dataset import Row
from assay.bench.runner import Outcome, Run

DEFINITIONS = {
    "accepted": "status ok and verdict correct; nothing else is a pass",
    "false_negative": "label true and not accepted (a timeout/error/invalid on a true item counts)",
    "false_positive": "label false and accepted (a non-ok status on a false item is not an FP)",
    "accuracy": "(accepted true + not-accepted false) / labelled",
    "fn_rate": "false negatives / items labelled true",
    "fp_rate": "false positives / items labelled false",
    "latency_ms": "nearest-rank percentiles over rows actually run (not rows invalid at load)",
    "items_per_s": "rows actually run / wall seconds of the verifier's pass (baselines: one thread; "
    "assay: its worker pool fed one item per worker at a time)",
}


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile (no interpolation, so a hand check needs no arithmetic)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100.0 * len(ordered)))
    return ordered[rank - 1]


def _rate(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _confusion(pairs: Sequence[tuple[Row, Outcome]]) -> dict[str, Any]:
    pos = [(r, o) for r, o in pairs if r.label is True]
    neg = [(r, o) for r, o in pairs if r.label is False]
    fn = [r.id for r, o in pos if not (o.status == "ok" and o.accepted)]
    fp = [r.id for r, o in neg if o.status == "ok" and o.accepted]
    labelled = len(pos) + len(neg)
    correct = (len(pos) - len(fn)) + (len(neg) - len(fp))
    return {
        "positives": len(pos),
        "negatives": len(neg),
        "fn": len(fn),
        "fp": len(fp),
        "fn_rate": _rate(len(fn), len(pos)),
        "fp_rate": _rate(len(fp), len(neg)),
        "accuracy": _rate(correct, labelled),
        "non_ok_on_true": sum(o.status != "ok" for _, o in pos),
        "non_ok_on_false": sum(o.status != "ok" for _, o in neg),
        "false_negatives": fn,
        "false_positives": fp,
    }


def summarise(rows: Sequence[Row], run: Run) -> dict[str, Any]:
    """Every number of one verifier's column in the report."""
    pairs = list(zip(rows, run.outcomes, strict=True))
    summary = _confusion(pairs)
    summary["items"] = len(rows)
    for status in ("ok", "invalid", "timeout", "error"):
        summary[status] = sum(o.status == status for o in run.outcomes)
    summary["accepted"] = sum(o.status == "ok" and bool(o.accepted) for o in run.outcomes)
    categories = sorted({r.category for r in rows})
    by_category = {}
    for category in categories:
        sub = _confusion([(r, o) for r, o in pairs if r.category == category])
        by_category[category] = {k: v for k, v in sub.items() if k not in {"non_ok_on_false"}}
    summary["by_category"] = by_category
    latencies = [o.elapsed_ms for r, o in pairs if not r.problem]
    summary["latency_ms"] = {
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "mean": sum(latencies) / len(latencies) if latencies else None,
        "max": max(latencies) if latencies else None,
    }
    summary["wall_s"] = round(run.wall_s, 6)
    summary["items_per_s"] = len(latencies) / run.wall_s if run.wall_s > 0 and latencies else None
    return summary
