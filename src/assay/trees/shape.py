"""A tree of rollout segments as a trainer sends it, checked before any leaf is scored.

A malformed tree is the trainer's bug, reported for that tree alone (`invalid` with the reason), so one bad
tree never costs the others in the request their verdicts. Everything is iterative: a chain of thousands of
segments must not hit Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ItemError
from assay.types import id_text


@dataclass(frozen=True)
class Tree:
    """Nodes in an order where every parent comes before its children (`order`), each node's parent,
    children and token length, and the leaves as (node id, raw item) in the order sent."""

    id: str | None
    method: str
    options: Mapping[str, Any]
    order: tuple[str, ...]
    parent: Mapping[str, str | None]
    children: Mapping[str, tuple[str, ...]]
    length: Mapping[str, int | None]
    leaves: tuple[tuple[str, Any], ...] = field(default=())

    @property
    def root(self) -> str:
        return self.order[0]


def _node_id(value: Any, what: str) -> str:
    value = id_text(value)
    if not isinstance(value, str) or not value:
        raise ItemError(f"{what} must be a non-empty string or an integer, got {value!r}")
    return value


def _length(value: Any, node: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ItemError(f"node {node!r}: length must be a non-negative integer of tokens, got {value!r}")
    return value


def parse_tree(raw: Any, methods: Mapping[str, Any]) -> Tree:
    """The tree in `raw` (`{"id", "method", "options", "nodes", "leaves"}`), or ItemError saying what is
    wrong with it."""
    if not isinstance(raw, dict):
        raise ItemError('a tree must be {"id", "method", "nodes": [...], "leaves": [...]}')
    unknown = sorted(set(raw) - {"id", "method", "options", "nodes", "leaves"})
    if unknown:
        raise ItemError(f"unknown tree field(s) {unknown}; a tree has id, method, options, nodes, leaves")
    method = raw.get("method")
    if not isinstance(method, str) or method not in methods:
        raise ItemError(f"method must be one of {sorted(methods)}, got {method!r}")
    options = raw.get("options") or {}
    if not isinstance(options, dict):
        raise ItemError("options must be an object")
    nodes, leaves = raw.get("nodes"), raw.get("leaves")
    if not isinstance(nodes, list) or not nodes:
        raise ItemError("nodes must be a non-empty list of {id, parent, length}")
    if not isinstance(leaves, list) or not leaves:
        raise ItemError("leaves must be a non-empty list of {node, item}")

    parent: dict[str, str | None] = {}
    length: dict[str, int | None] = {}
    for index, node in enumerate(nodes):
        if not isinstance(node, dict) or set(node) - {"id", "parent", "length"}:
            raise ItemError(f"node {index} must be {{id, parent, length}}")
        nid = _node_id(node.get("id"), f"node {index}'s id")
        if nid in parent:
            raise ItemError(f"node id {nid!r} appears twice")
        up = node.get("parent")
        parent[nid] = None if up is None else _node_id(up, f"node {nid!r}'s parent")
        length[nid] = _length(node.get("length"), nid)

    roots = [n for n, p in parent.items() if p is None]
    if len(roots) != 1:
        raise ItemError(f"a tree has exactly one root (a node with parent null); found {len(roots)}")
    children: dict[str, list[str]] = {n: [] for n in parent}
    for nid, up in parent.items():
        if up is not None:
            if up not in parent:
                raise ItemError(f"node {nid!r} names parent {up!r}, which is not a node of the tree")
            children[up].append(nid)
    order = [roots[0]]
    for nid in order:  # breadth-first from the root; grows while it is read
        order.extend(children[nid])
    if len(order) != len(parent):
        stuck = sorted(set(parent) - set(order))[:5]
        raise ItemError(f"nodes {stuck} do not lead to the root (a cycle)")

    placed: list[tuple[str, Any]] = []
    for index, leaf in enumerate(leaves):
        if not isinstance(leaf, dict) or set(leaf) != {"node", "item"}:
            raise ItemError(f"leaf {index} must be {{node, item}}")
        nid = _node_id(leaf["node"], f"leaf {index}'s node")
        if nid not in parent:
            raise ItemError(f"leaf {index} is on node {nid!r}, which is not a node of the tree")
        placed.append((nid, leaf["item"]))
    gid = id_text(raw.get("id"))
    return Tree(
        id=None if gid is None else str(gid),
        method=method,
        options=options,
        order=tuple(order),
        parent=parent,
        children={n: tuple(c) for n, c in children.items()},
        length=length,
        leaves=tuple(placed),
    )
