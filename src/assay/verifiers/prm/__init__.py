"""The `prm` task: a score for every reasoning step, aggregated into one reward.

Modules: fields (its item field), scorer (the task: its options, deadline and work kind, and which
backend the settings ask for). The machinery it drives, step splitting, aggregation, prompt formats,
batching and the model backends, is `assay.prm`. Importing this folder loads no torch or transformers.
"""

from assay.verifiers.prm.scorer import PrmOptions, PrmScorer

TASK = "assay.verifiers.prm:PrmScorer"  # this folder is the `prm` task (assay.registry)

__all__ = ["PrmOptions", "PrmScorer"]
