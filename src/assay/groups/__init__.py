"""Group arithmetic over verified rewards: what a GRPO/DAPO trainer's Control stage needs about the G
responses it sampled for one prompt. One module per thing: `stats` (the statistics /v1/groups reports),
`parts` (how groups arrive and are cut into rounds), `window` (the /metrics gauges over recent groups),
`shaping` (length control: ShorterBetter, AdaptThink, S-GRPO), `rubric` (weighted components with gates)
and `members` (the per-item fields and length rule those two read).
"""

from assay.groups.members import ShapingStats
from assay.groups.parts import group_parts, group_rounds, responses_of
from assay.groups.stats import (
    GroupOutcome,
    GroupResult,
    GroupStats,
    group_stats,
    learning_value,
    pass_at_k,
    raw_score,
)
from assay.groups.window import GroupGauges, GroupWindow

__all__ = [
    "GroupGauges",
    "GroupOutcome",
    "GroupResult",
    "GroupStats",
    "GroupWindow",
    "ShapingStats",
    "group_parts",
    "group_rounds",
    "group_stats",
    "learning_value",
    "pass_at_k",
    "raw_score",
    "responses_of",
]
