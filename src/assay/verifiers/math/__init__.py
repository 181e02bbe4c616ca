"""The `math` task: extract a final answer from a chain of thought and compare it with the gold."""

from assay.verifiers.math.scorer import MathOptions, MathScorer

__all__ = ["MathOptions", "MathScorer"]
