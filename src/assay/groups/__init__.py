"""Group arithmetic over verified rewards: what a GRPO/DAPO trainer's Control stage needs about the G
responses it sampled for one prompt. One module per thing: `stats` (the statistics /v1/groups reports),
`parts` (how groups arrive and are cut into rounds), `window` (the /metrics gauges over recent groups),
`shaping` (length control: ShorterBetter, AdaptThink, S-GRPO), `rubric` (weighted components with gates),
`members` (the per-item fields and length rule those two read), `clusters` (answer clusters and the
majority vote) and `estimators` (Maj@K).
"""

from assay.groups.clusters import (
    AnswerCluster,
    ClusteringTimeout,
    Vote,
    answer_clusters,
    cluster_indices,
    cluster_keys,
    majority,
)
from assay.groups.estimators import majority_at_k
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
    "AnswerCluster",
    "ClusteringTimeout",
    "GroupGauges",
    "GroupOutcome",
    "GroupResult",
    "GroupStats",
    "GroupWindow",
    "ShapingStats",
    "Vote",
    "answer_clusters",
    "cluster_indices",
    "cluster_keys",
    "group_parts",
    "group_rounds",
    "group_stats",
    "learning_value",
    "majority",
    "majority_at_k",
    "pass_at_k",
    "raw_score",
    "responses_of",
]
