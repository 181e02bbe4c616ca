"""The tree path: wire models and `score_trees`, which the route and any engine front end share.

Leaves are scored through the engine's ordinary `score_async` (one verdict path: a leaf is exactly the
item it would be in `/v1/rewards`), with identical leaves sent once: branches that converge on the same
text are common in tree sampling, and a verdict is a function of the item. A malformed tree is `invalid`
with its reason and none of its leaves is scored.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from assay.errors import ItemError
from assay.trees.credit import METHODS, Credit
from assay.trees.shape import Tree, parse_tree
from assay.types import Result, Status, id_text

ScoreItems = Callable[[Sequence[Any]], Awaitable[list[Result]]]


class NodeCredit(BaseModel):
    """A node with its credit: what the trainer applies to the node's own tokens."""

    id: str
    parent: str | None
    value: float | None = Field(description="Mean reward of the ok leaves at or below; null when none.")
    advantage: float | None = Field(description="The method's advantage; null where the value is null.")
    leaves: int = Field(description="Ok leaves at or below this node.")


class TreeStats(BaseModel):
    n_leaves: int = Field(description="Leaves sent.")
    n_scored: int = Field(description="Leaves scored `ok`; values and advantages are over these.")
    n_unique: int = Field(description="Distinct leaf items actually scored (identical leaves once).")
    n_correct: int = Field(0, description="Leaves with `correct: true`.")
    root_value: float | None = Field(None, description="V(root): the tree's mean reward.")
    tokens: int | None = Field(
        None,
        description="Sum of the nodes' `length` (tokens generated for the tree), when every node has one.",
    )


class TreeOutcome(BaseModel):
    """One scored tree: leaf results in leaf order, every node's credit in the order sent."""

    id: str | None = None
    method: str | None = None
    status: Literal["ok", "invalid"] = "ok"
    reason: str | None = Field(None, description="Why the tree is invalid (then nothing was scored).")
    results: list[Result] = Field(default_factory=list)
    nodes: list[NodeCredit] = Field(default_factory=list)
    stats: TreeStats | None = None


def _key(raw: Any) -> str | None:
    """A leaf's identity for de-duplication: the item without its id; None when it cannot be encoded
    (such an item is scored on its own, and gets its own `invalid`)."""
    if not isinstance(raw, dict):
        return None
    try:
        return json.dumps({k: v for k, v in raw.items() if k != "id"}, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None


def _check(tree: Tree) -> None:
    """The method reads its own options: a dry run over no rewards checks them where they are read."""
    METHODS[tree.method](tree, [None] * len(tree.leaves))


@dataclass(frozen=True)
class TreePlan:
    """Trees parsed (or the reason each is invalid), the distinct leaf items to score, and for each valid
    tree the index of each of its leaves in `unique`. Built before admission, so a request is admitted for
    the leaves it will really score."""

    raw: Sequence[Any]
    parsed: list[Tree | str]
    unique: list[Any]
    where: list[list[int]]

    async def score(self, score: ScoreItems) -> list[TreeOutcome]:
        """Every tree's outcome, in order; `score` is the engine's `score_async` (results in item order)."""
        verdicts = await score(self.unique) if self.unique else []
        out: list[TreeOutcome] = []
        for raw, tree, slots in zip(self.raw, self.parsed, self.where, strict=True):
            if isinstance(tree, str):
                gid = id_text(raw.get("id")) if isinstance(raw, dict) else None
                out.append(TreeOutcome(id=None if gid is None else str(gid), status="invalid", reason=tree))
                continue
            results = [
                _leaf_result(verdicts[s], item) for s, (_, item) in zip(slots, tree.leaves, strict=True)
            ]
            out.append(credit_tree(tree, results, len(set(slots))))
        return out


def plan_trees(trees: Sequence[Any]) -> TreePlan:
    """Parse and check every tree, and find the distinct leaves (see `TreePlan`)."""
    parsed: list[Tree | str] = []
    unique: list[Any] = []
    seen: dict[str, int] = {}
    where: list[list[int]] = []
    for raw in trees:
        try:
            tree = parse_tree(raw, METHODS)
            _check(tree)
        except ItemError as exc:
            parsed.append(str(exc))
            where.append([])
            continue
        parsed.append(tree)
        slots = []
        for _, item in tree.leaves:
            key = _key(item)
            if key is None or key not in seen:
                if key is not None:
                    seen[key] = len(unique)
                slots.append(len(unique))
                unique.append(item)
            else:
                slots.append(seen[key])
        where.append(slots)
    return TreePlan(trees, parsed, unique, where)


def _leaf_result(result: Result, raw: Any) -> Result:
    """The shared verdict under this leaf's own id."""
    own = raw.get("id") if isinstance(raw, dict) else None
    return result if own == result.id else result.model_copy(update={"id": own})


def credit_tree(tree: Tree, results: list[Result], unique: int) -> TreeOutcome:
    rewards = [r.reward if r.status is Status.OK else None for r in results]
    credit: dict[str, Credit] = METHODS[tree.method](tree, rewards)
    lengths = [tree.length[n] for n in tree.order]
    ok = [r for r in results if r.status is Status.OK]
    return TreeOutcome(
        id=tree.id,
        method=tree.method,
        results=results,
        nodes=[
            NodeCredit(id=n, parent=tree.parent[n], value=c.value, advantage=c.advantage, leaves=c.leaves)
            for n, c in ((n, credit[n]) for n in tree.order)
        ],
        stats=TreeStats(
            n_leaves=len(results),
            n_scored=len(ok),
            n_unique=unique,
            n_correct=sum(r.correct is True for r in ok),
            root_value=credit[tree.root].value,
            tokens=None if any(x is None for x in lengths) else sum(x or 0 for x in lengths),
        ),
    )


async def score_trees(trees: Sequence[Any], score: ScoreItems) -> list[TreeOutcome]:
    """Every tree's outcome, in order; `score` is the engine's `score_async` (results in item order)."""
    return await plan_trees(trees).score(score)
