"""How trustworthy a judge model is, from its own answers: order consistency, ties, position preference,
parse failures; exported per model in /metrics.

Why: a judge can be useless while every item still comes back `ok` (a 135M model picked position 1 on
every pair: the swap turned each item into a tie, and nothing said so). These rates make that visible:
- order consistency: share of swapped pairs whose two orders named the same winner (MT-Bench reports
  about 65% for a strong judge; a position-only judge scores 0%);
- tie rate: share of pairwise answers (per order) that were a tie;
- first-position rate: share of non-tie pairwise answers that picked the answer shown first (0.5 is
  unbiased; 1.0 is a judge that only reads positions);
- parse-failure rate: share of answers from which no score or verdict could be read.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector


@dataclass
class ModelCounts:
    answers: int = 0  # answers read or failed to read (pointwise, pairwise orders, second opinions)
    parse_failures: int = 0
    pairwise_answers: int = 0
    ties: int = 0
    first_position: int = 0  # non-tie pairwise answers that picked the answer shown first
    swapped_pairs: int = 0
    consistent_pairs: int = 0


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else float("nan")


class JudgeQuality:
    """Counters per judge model; thread-safe (judges may run on several event loops)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._models: dict[str, ModelCounts] = defaultdict(ModelCounts)

    def answer(self, model: str, parsed: bool) -> None:
        with self._lock:
            counts = self._models[model]
            counts.answers += 1
            counts.parse_failures += 0 if parsed else 1

    def pairwise(self, model: str, winners: list[str]) -> None:
        """One pair's winners per order ("response", "response_b" or "tie"; the first order shows
        `response` first)."""
        shown_first = ["response", "response_b"]
        with self._lock:
            counts = self._models[model]
            for order, winner in enumerate(winners):
                counts.pairwise_answers += 1
                counts.ties += winner == "tie"
                counts.first_position += winner == shown_first[order]
            if len(winners) == 2:
                counts.swapped_pairs += 1
                counts.consistent_pairs += winners[0] == winners[1]

    def snapshot(self) -> dict[str, ModelCounts]:
        with self._lock:
            return {model: ModelCounts(**vars(counts)) for model, counts in self._models.items()}

    def rates(self, model: str) -> dict[str, float]:
        counts = self.snapshot().get(model, ModelCounts())
        decided = counts.pairwise_answers - counts.ties
        return {
            "order_consistency": _rate(counts.consistent_pairs, counts.swapped_pairs),
            "tie_rate": _rate(counts.ties, counts.pairwise_answers),
            "first_position_rate": _rate(counts.first_position, decided),
            "parse_failure_rate": _rate(counts.parse_failures, counts.answers),
        }


class JudgeQualityCollector(Collector):
    """Exports the rates (gauges) and the answer counts behind them, per model, at scrape time."""

    def __init__(self, source: Callable[[], JudgeQuality | None]) -> None:
        self._source = source

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        quality = self._source()
        snapshot = quality.snapshot() if quality is not None else {}
        answers = CounterMetricFamily(
            "assay_judge_answers", "Judge answers read, per model.", labels=["model"]
        )
        gauges = {
            name: GaugeMetricFamily(f"assay_judge_{name}", doc, labels=["model"])
            for name, doc in (
                ("order_consistency", "Share of swapped pairs whose two orders agreed."),
                ("tie_rate", "Share of pairwise answers (per order) that were a tie."),
                ("first_position_rate", "Share of non-tie pairwise answers picking the answer shown first."),
                ("parse_failure_rate", "Share of judge answers with no readable score or verdict."),
            )
        }
        for model, counts in snapshot.items():
            answers.add_metric([model], counts.answers)
            assert quality is not None
            for name, value in quality.rates(model).items():
                gauges[name].add_metric([model], value)
        yield answers
        yield from gauges.values()
