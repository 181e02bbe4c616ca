"""Disagreement mining: rows where Assay and the baselines do not say the same, ranked for labelling.

This is how the published false-negative studies found their cases: run several verifiers on unlabelled
data and have a person label only where they disagree. A verdict is `accept`, `reject`, or the status
when a verifier reached none (`timeout`, `error`, `invalid`). A row is listed when its verdicts are not
all equal. Ranking, most worth a person's time first:

1. tier 0 `assay-vs-baselines`: Assay reached a verdict and every baseline that reached one says the
   opposite (one side of this is certainly wrong, and it is Assay's verdict or all the baselines');
2. tier 1 `baselines-split`: Assay reached a verdict and the baselines disagree among themselves;
3. tier 2 `status`: someone reached no verdict where another did (a timeout, an error, an invalid).

Within a tier: more baselines opposing Assay first; then rows where Assay rejects (a candidate Assay
false negative, the error this tool exists to measure) before rows where it accepts; then file order.
Each output line is the item plus `label: null` and `category`, so a labelled copy is a bench input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.bench.dataset import Row
from assay.bench.runner import Outcome, Run

TIERS = ("assay-vs-baselines", "baselines-split", "status")


def verdict(outcome: Outcome) -> str:
    if outcome.status != "ok":
        return outcome.status
    return "accept" if outcome.accepted else "reject"


def _classify(verdicts: Sequence[str]) -> tuple[int, int, int] | None:
    """(tier, baselines opposing Assay, 0 if Assay rejects else 1), or None when all agree."""
    if len(set(verdicts)) <= 1:
        return None
    assay, baselines = verdicts[0], verdicts[1:]
    reached = [v for v in baselines if v in ("accept", "reject")]
    if assay not in ("accept", "reject"):
        return (2, len(reached), 1)
    opposing = sum(v != assay for v in reached)
    assay_side = 0 if assay == "reject" else 1
    if reached and opposing == len(reached):
        return (0, opposing, assay_side)
    if opposing:
        return (1, opposing, assay_side)
    return (2, 0, assay_side)


def mine(rows: Sequence[Row], runs: Sequence[Run]) -> list[dict[str, Any]]:
    """The disagreeing rows, ranked; `runs[0]` must be Assay's."""
    found: list[tuple[tuple[int, int, int, int], dict[str, Any]]] = []
    for position, row in enumerate(rows):
        outcomes = [run.outcomes[position] for run in runs]
        verdicts = [verdict(o) for o in outcomes]
        key = _classify(verdicts)
        if key is None:
            continue
        tier, opposing, assay_side = key
        record = {
            **row.item,
            "id": row.id,
            "label": None,
            "category": row.category,
            "disagreement": {
                "tier": TIERS[tier],
                "opposing_baselines": opposing,
                "verdicts": {run.verifier: v for run, v in zip(runs, verdicts, strict=True)},
                "assay_reason": outcomes[0].reason,
                "assay_extracted": outcomes[0].extracted,
            },
        }
        found.append(((tier, -opposing, assay_side, position), record))
    found.sort(key=lambda pair: pair[0])
    ranked = []
    for rank, (_, record) in enumerate(found, 1):
        record["disagreement"]["rank"] = rank
        ranked.append(record)
    return ranked
