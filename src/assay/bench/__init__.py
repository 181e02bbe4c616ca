"""`assay bench`: how often a verifier rejects correct answers and accepts wrong ones, on your data.

- `dataset`: labelled sets (JSONL, CSV, Parquet, `datasets` folders) as items plus labels;
- `baselines`: the verifiers people use today (math-verify as verl calls it, BIRD's set comparison,
  exact stdout), and `module:function` plugins;
- `runner` / `metrics`: one pass per verifier over the same rows; FN/FP rates, latency, throughput;
- `report` / `plots`: report.json, report.md, the terminal table, PNGs (matplotlib, lazily);
- `disagree`: ranked disagreements on unlabelled data, for a person to label;
- `command`: the CLI (`assay bench`, `python -m assay.bench`).

Covered: verdict-level comparison on one machine. Not covered: graded tasks beyond "reward >= 0.5
accepts", per-baseline deadlines for plugins (they run unbounded in the main thread).
"""

from assay.bench.baselines import math_verify_verl

__all__ = ["math_verify_verl"]
