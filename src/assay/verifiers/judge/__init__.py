"""The `judge` task: an LLM judge over any OpenAI-compatible backend, with its known biases corrected.

Modules: fields (its item fields), scorer (the task: its options, deadline, work kind, metrics and the
second opinion it gives other tasks), audit (the judge probes `assay audit` tries). The machinery the
task drives, the HTTP client, prompts, parsing, ensembles, cache and guard, is `assay.judges`.
"""

from assay.verifiers.judge.scorer import JudgeOptions, JudgeScorer

TASK = "assay.verifiers.judge:JudgeScorer"  # this folder is the `judge` task (assay.registry)

__all__ = ["JudgeOptions", "JudgeScorer"]
