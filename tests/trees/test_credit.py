"""Tree credit (assay.trees.credit) against hand-computed trees and brute-force properties."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.errors import ItemError
from assay.trees.credit import METHODS, values
from assay.trees.shape import Tree, parse_tree

# r -> a -> {a1, a2};  r -> b -> {b1, b2};  leaves a1 = a2 = b1 = 1, b2 = 0.
# V: a1 = a2 = b1 = 1, b2 = 0, a = 1, b = 0.5, r = 0.75.
_NODES = [("r", None), ("a", "r"), ("b", "r"), ("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")]
_LEAVES = ["a1", "a2", "b1", "b2"]
_REWARDS: list[float | None] = [1.0, 1.0, 1.0, 0.0]


def _tree(method: str, options: dict[str, Any] | None = None, leaves: list[str] = _LEAVES) -> Tree:
    raw = {
        "id": "t",
        "method": method,
        "options": options or {},
        "nodes": [{"id": n, "parent": p} for n, p in _NODES],
        "leaves": [{"node": n, "item": {}} for n in leaves],
    }
    return parse_tree(raw, METHODS)


def _advantages(method: str, rewards: list[float | None] = _REWARDS, **options: Any) -> dict[str, Any]:
    credit = METHODS[method](_tree(method, options), rewards)
    return {n: c.advantage for n, c in credit.items()}


def test_values_are_the_mean_reward_of_the_leaves_below() -> None:
    assert values(_tree("treerl"), _REWARDS) == {
        "r": 0.75, "a": 1.0, "b": 0.5, "a1": 1.0, "a2": 1.0, "b1": 1.0, "b2": 0.0
    }  # fmt: skip


def test_treerl_is_global_plus_local_over_sqrt_of_leaves() -> None:
    s2 = math.sqrt(2)
    expected = {"r": 0.0, "a": 0.5 / s2, "b": -0.5 / s2, "a1": 0.25, "a2": 0.25, "b1": 0.75, "b2": -1.25}
    assert _advantages("treerl") == pytest.approx(expected)
    plain = {**expected, "a": 0.5, "b": -0.5}
    assert _advantages("treerl", reweight="none") == pytest.approx(plain)


def test_treerpo_normalises_within_each_sibling_group() -> None:
    half = 1 / math.sqrt(2)  # (x - mean) / sample std for two values 0.5 apart (or 1 apart)
    expected = {"r": 0.0, "a": half, "b": -half, "a1": 0.0, "a2": 0.0, "b1": half, "b2": -half}
    assert _advantages("treerpo") == pytest.approx(expected, abs=1e-5)
    centred = {**expected, "a": 0.25, "b": -0.25, "b1": 0.5, "b2": -0.5}
    assert _advantages("treerpo", scale_std=False) == pytest.approx(centred)


def test_treepo_averages_the_leaf_advantage_over_its_ancestors_subgroups() -> None:
    # a1: (1 - V(a)) and (1 - V(r)) -> (0 + 0.25) / 2; b1: (0.5 + 0.25) / 2; b2: (-0.5 - 0.75) / 2.
    leaf = {"a1": 0.125, "a2": 0.125, "b1": 0.375, "b2": -0.625}
    expected = {**leaf, "a": 0.125, "b": (0.375 - 0.625) / 2, "r": 0.0}
    assert _advantages("treepo") == pytest.approx(expected)
    # group_size weights each subgroup by its leaf count (2 under a or b, 4 under r).
    sized = _advantages("treepo", weighting="group_size")
    assert [sized[n] for n in _LEAVES] == pytest.approx([1 / 6, 1 / 6, 2 / 6, -4 / 6])


def test_a_leaf_that_is_not_ok_shifts_no_credit() -> None:
    rewards: list[float | None] = [1.0, 1.0, 1.0, None]  # b2 unscored: b holds b1 alone
    credit = METHODS["treerl"](_tree("treerl"), rewards)
    assert credit["b2"].value is None and credit["b2"].advantage is None and credit["b2"].leaves == 0
    assert credit["b"].value == 1.0 and credit["r"].value == 1.0
    assert all(credit[n].advantage == 0.0 for n in ("r", "a", "b", "a1", "b1"))
    nothing = METHODS["treepo"](_tree("treepo"), [None] * 4)
    assert all(c.value is None and c.advantage is None for c in nothing.values())


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nodes": [{"id": "r", "parent": None}, {"id": "r", "parent": None}]}, "appears twice"),
        ({"nodes": [{"id": "r", "parent": None}, {"id": "x", "parent": None}]}, "exactly one root"),
        ({"nodes": [{"id": "r", "parent": None}, {"id": "x", "parent": "y"}]}, "not a node"),
        (
            {"nodes": [{"id": "r", "parent": None}, {"id": "x", "parent": "y"}, {"id": "y", "parent": "x"}]},
            "a cycle",
        ),
        ({"leaves": [{"node": "zz", "item": {}}]}, "not a node of the tree"),
        ({"method": "mcts"}, "method must be one of"),
        ({"nodes": [{"id": "r", "parent": None, "length": -3}]}, "non-negative integer"),
        ({"leaves": []}, "non-empty list"),
        ({"colour": "red"}, "unknown tree field"),
    ],
)
def test_a_malformed_tree_says_what_is_wrong(change: dict[str, Any], message: str) -> None:
    raw = {"method": "treerl", "nodes": [{"id": "r", "parent": None}], "leaves": [{"node": "r", "item": {}}]}
    with pytest.raises(ItemError, match=message):
        parse_tree({**raw, **change}, METHODS)


def test_a_deep_chain_needs_no_recursion() -> None:
    depth = 5000
    nodes = [{"id": str(i), "parent": None if i == 0 else str(i - 1)} for i in range(depth)]
    tree = parse_tree(
        {"method": "treepo", "nodes": nodes, "leaves": [{"node": str(depth - 1), "item": {}}]}, METHODS
    )
    credit = METHODS["treepo"](tree, [1.0])
    assert credit["0"].value == 1.0 and credit[str(depth - 1)].advantage == 0.0


@st.composite
def _random_trees(draw: st.DrawFn) -> tuple[Tree, list[float | None]]:
    size = draw(st.integers(1, 25))
    parents = [None] + [draw(st.integers(0, i - 1)) for i in range(1, size)]
    leaf_nodes = draw(st.lists(st.integers(0, size - 1), min_size=1, max_size=30))
    rewards = draw(
        st.lists(
            st.one_of(st.none(), st.sampled_from([0.0, 0.5, 1.0])),
            min_size=len(leaf_nodes),
            max_size=len(leaf_nodes),
        )
    )
    raw = {
        "method": draw(st.sampled_from(sorted(METHODS))),
        "nodes": [{"id": f"n{i}", "parent": None if p is None else f"n{p}"} for i, p in enumerate(parents)],
        "leaves": [{"node": f"n{i}", "item": {}} for i in leaf_nodes],
    }
    return parse_tree(raw, METHODS), rewards


@given(_random_trees())
def test_values_match_a_walk_up_from_every_leaf(case: tuple[Tree, list[float | None]]) -> None:
    tree, rewards = case
    seen: dict[str, list[float]] = {n: [] for n in tree.order}
    for (node, _), reward in zip(tree.leaves, rewards, strict=True):
        at: str | None = node
        while at is not None and reward is not None:
            seen[at].append(reward)
            at = tree.parent[at]
    credit = METHODS[tree.method](tree, rewards)
    for node, got in credit.items():
        want = seen[node]
        assert got.leaves == len(want)
        assert got.value == (pytest.approx(sum(want) / len(want)) if want else None)
        assert (got.advantage is None) == (got.value is None)


@given(_random_trees())
def test_treerpo_advantages_of_a_sibling_group_sum_to_zero(case: tuple[Tree, list[float | None]]) -> None:
    tree, rewards = case
    credit = METHODS["treerpo"](Tree(**{**tree.__dict__, "method": "treerpo", "options": {}}), rewards)
    for node in tree.order:
        group = [credit[c].advantage for c in tree.children[node] if credit[c].advantage is not None]
        assert sum(group) == pytest.approx(0.0, abs=1e-6)
