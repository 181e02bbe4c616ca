"""`assay doctor RUN_DIR`: which of the known RL failure modes a run shows, with evidence and what to try.

A run directory holds the trainer's step log (`log.jsonl`, one JSON record per step, as `assay train`
writes it) and, optionally, a scrape of the reward server's `/metrics` (`server_metrics.prom`, or fetched
with `--metrics-url`). Each failure mode is a check over signals in those records:

    vanishing advantage    frac_zero_advantage (groups whose raw scores are all equal)
    exploration collapse   entropy, distinct_answers_mean
    length explosion       truncation_rate, response_length
    stale replay           replay_lag_mean (policy versions between a replayed sample and the update)
    reward hacking         reward vs dev_accuracy, hedge_rate, test_literal_rate, constant_answer_share
    brittle verifier       invalid_rate, timeout_rate, error_rate, judge_disagreement_rate
    runaway self-evolution task_difficulty (of generated tasks)

What is covered: trends and levels of logged signals against documented thresholds (`Thresholds`).
What is not: causes. A tripped check says where to look, not what is wrong; a signal a trainer does not
log makes its check "no data", never "healthy".
"""

from __future__ import annotations

from assay.doctor.checks import Finding, Thresholds, diagnose
from assay.doctor.run import Run, load_run

__all__ = ["Finding", "Run", "Thresholds", "diagnose", "load_run"]
