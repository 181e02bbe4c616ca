"""The `reasoning_gym` task: items drawn from any reasoning-gym dataset by name and seed, scored by
Assay's math verifier where the dataset's answers are numbers or expressions and by the dataset's own
`score_answer` otherwise (docs/reasoning-gym.md).

Modules: fields (its item fields), library (reasoning-gym's own API, imported lazily), guard (what of an
answer may reach a scorer that evaluates it), forms (which datasets answer in numbers or expressions),
scorer (the task, its validation probes and its data source).
"""

from assay.verifiers.reasoning_gym.library import draw
from assay.verifiers.reasoning_gym.scorer import ReasoningGymScorer

TASK = "assay.verifiers.reasoning_gym:ReasoningGymScorer"  # this folder is the `reasoning_gym` task

__all__ = ["ReasoningGymScorer", "draw"]
