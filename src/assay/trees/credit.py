"""Credit on a tree of rollouts: each node's value and each method's advantage (docs/trees.md).

Every function here is pure and total over a checked `Tree` and one reward per leaf (`None` for a leaf
that is not `ok`: it enters no mean, so an unscored leaf never drags a sibling's credit towards 0).

- value V(n): the mean reward of the ok leaves at or below n; None when there are none.
- TreeRL (Hou et al. 2025, "TreeRL: LLM Reinforcement Learning with On-Policy Tree Search", ACL; code
  THUDM/TreeRL `tree_node.py`): global advantage V(n) - V(root) plus local advantage V(n) - V(parent(n)),
  divided by sqrt(|L(n)|), the number of ok leaves below n, so that a step shared by many leaves is not
  over-weighted (`reweight: "none"` drops the division). The root's advantage is 0.
- TreeRPO (Yang et al. 2025, "TreeRPO: Tree Relative Policy Optimization", arXiv 2506.05183): the children
  of a node are a group; a child's advantage is its value normalised within that sibling group,
  (V - mean) / (std + eps) with the sample std as Assay's GRPO loss uses it (`scale_std: false` keeps the
  mean-centred value only). A group with fewer than two valued members teaches nothing: 0.
- TreePO (Li et al. 2025, "TreePO", code multimodal-art-projection/TreePO, `core_algos.py`,
  `compute_tree_reinforce_plus_plus_baseline_outcome_advantage`): a leaf's advantage is its reward minus
  the mean reward of the subgroup of leaves under each of its ancestors (the root's group always, a deeper
  one when it holds more than one ok leaf), averaged over those subgroups (`weighting: "group_size"`
  weights each by its size, the recipe's other setting). A node's advantage is the mean advantage of the
  ok leaves below it: its tokens are credited once. The recipe then whitens over the whole batch; that is
  the trainer's step, not the server's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.errors import ItemError
from assay.trees.shape import Tree


@dataclass(frozen=True)
class Credit:
    """One node's credit: its value, its advantage (None where its value is None) and ok leaves below."""

    value: float | None
    advantage: float | None
    leaves: int


def _option(options: Mapping[str, Any], name: str, default: Any, allowed: Callable[[Any], bool]) -> Any:
    value = options.get(name, default)
    if not allowed(value):
        raise ItemError(f"option {name}={value!r} is not allowed")
    return value


def _check_options(tree: Tree, known: set[str]) -> None:
    unknown = sorted(set(tree.options) - known)
    if unknown:
        raise ItemError(f"unknown option(s) {unknown} for method {tree.method!r}; known: {sorted(known)}")


def below(tree: Tree, rewards: Sequence[float | None]) -> dict[str, list[float]]:
    """The ok leaf rewards at or below each node."""
    under: dict[str, list[float]] = {n: [] for n in tree.order}
    for (node, _), reward in zip(tree.leaves, rewards, strict=True):
        if reward is not None:
            under[node].append(reward)
    for node in reversed(tree.order):  # children before parents
        up = tree.parent[node]
        if up is not None:
            under[up].extend(under[node])
    return under


def _means(under: Mapping[str, list[float]]) -> dict[str, float | None]:
    return {n: (sum(r) / len(r) if r else None) for n, r in under.items()}


def values(tree: Tree, rewards: Sequence[float | None]) -> dict[str, float | None]:
    """V(n) for every node."""
    return _means(below(tree, rewards))


def treerl(tree: Tree, rewards: Sequence[float | None]) -> dict[str, Credit]:
    _check_options(tree, {"reweight"})
    reweight = _option(tree.options, "reweight", "sqrt", lambda v: v in ("sqrt", "none"))
    under = below(tree, rewards)
    value = _means(under)
    root = value[tree.root]
    out: dict[str, Credit] = {}
    for node in tree.order:
        v, up = value[node], tree.parent[node]
        if v is None or root is None:
            out[node] = Credit(v, None, len(under[node]))
            continue
        local = 0.0 if up is None else v - (value[up] or 0.0)  # a valued node's parent is valued
        advantage = (v - root) + local
        if reweight == "sqrt":
            advantage /= math.sqrt(len(under[node]))
        out[node] = Credit(v, advantage, len(under[node]))
    return out


def treerpo(tree: Tree, rewards: Sequence[float | None]) -> dict[str, Credit]:
    _check_options(tree, {"scale_std", "eps"})
    scale_std = _option(tree.options, "scale_std", True, lambda v: isinstance(v, bool))
    eps = _option(tree.options, "eps", 1e-6, lambda v: isinstance(v, int | float) and v > 0)
    under = below(tree, rewards)
    value = _means(under)
    advantage: dict[str, float | None] = {n: None for n in tree.order}
    if value[tree.root] is not None:
        advantage[tree.root] = 0.0
    for node in tree.order:
        group = [c for c in tree.children[node] if value[c] is not None]
        scores = [value[c] or 0.0 for c in group]
        if len(scores) < 2:
            advantage.update(dict.fromkeys(group, 0.0))
            continue
        mean = sum(scores) / len(scores)
        scale = 1.0
        if scale_std:
            std = math.sqrt(sum((s - mean) ** 2 for s in scores) / (len(scores) - 1))
            scale = 1.0 / (std + eps)
        advantage.update({c: (s - mean) * scale for c, s in zip(group, scores, strict=True)})
    return {n: Credit(value[n], advantage[n], len(under[n])) for n in tree.order}


def treepo(tree: Tree, rewards: Sequence[float | None]) -> dict[str, Credit]:
    _check_options(tree, {"weighting"})
    weighting = _option(tree.options, "weighting", "average", lambda v: v in ("average", "group_size"))
    under = below(tree, rewards)
    mean = _means(under)
    leaf_advantage: dict[str, list[float]] = {n: [] for n in tree.order}
    for (node, _), reward in zip(tree.leaves, rewards, strict=True):
        if reward is None:
            continue
        ancestors, up = [], tree.parent[node]
        while up is not None:
            ancestors.append(up)
            up = tree.parent[up]
        if not ancestors:  # a one-node tree: the root's own group
            ancestors = [node]
        groups = [a for a in ancestors if a == tree.root or len(under[a]) > 1]
        parts = [(reward - (mean[a] or 0.0), len(under[a])) for a in groups]
        if weighting == "average":
            advantage = sum(p for p, _ in parts) / len(parts)
        else:
            advantage = sum(p * size for p, size in parts) / sum(size for _, size in parts)
        leaf_advantage[node].append(advantage)
    for node in reversed(tree.order):
        up = tree.parent[node]
        if up is not None:
            leaf_advantage[up].extend(leaf_advantage[node])
    return {
        n: Credit(mean[n], (sum(a) / len(a) if a else None), len(under[n])) for n, a in leaf_advantage.items()
    }


METHODS: dict[str, Callable[[Tree, Sequence[float | None]], dict[str, Credit]]] = {
    "treerl": treerl,
    "treerpo": treerpo,
    "treepo": treepo,
}
