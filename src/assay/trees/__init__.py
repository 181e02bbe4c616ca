"""Tree rollouts scored on the server (`POST /v1/trees`, issue 41): leaves verified like `/v1/rewards`,
credit assigned to the nodes the leaves share.

A trainer that samples a tree (TreeRL's entropy-guided branching, TreePO's fixed segments) sends the
tree's nodes (each with its parent) and its leaves (a node and a complete item). Assay scores every leaf
(identical leaves once), gives each node its value (the mean reward of the `ok` leaves below it, `None`
when none is ok: unassigned credit is None, not zero) and the advantage the method defines. The trainer
applies a node's advantage to that node's own tokens, once, however many leaves share them.

- `shape`: a tree as sent, checked (one root, known parents, no cycle, leaves on known nodes);
- `credit`: the arithmetic of each method, pure functions over values (docs/trees.md has the formulas
  and their sources);
- `scoring`: the wire models and the one function the route and the client share.
"""

from assay.trees.credit import METHODS
from assay.trees.scoring import NodeCredit, TreeOutcome, TreePlan, TreeStats, plan_trees, score_trees

__all__ = ["METHODS", "NodeCredit", "TreeOutcome", "TreePlan", "TreeStats", "plan_trees", "score_trees"]
