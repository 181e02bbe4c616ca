"""Assay: the Filter stage of RL on verifiable rewards.

    >>> import assay
    >>> [r.reward for r in assay.score([{"task": "math", "response": "\\\\boxed{4}", "reference": "4"}])]
    [1.0]

The public names are pinned by a test; everything else is an implementation module.
"""

from assay.engine.scoring import Engine, score
from assay.registry import Scorer
from assay.settings import Settings
from assay.types import Item, Result, Status, TaskOptions

__version__ = "0.1.0"

__all__ = [
    "Engine",
    "Item",
    "Result",
    "Scorer",
    "Settings",
    "Status",
    "TaskOptions",
    "__version__",
    "score",
]
