"""POST /v1/trees and the client's score_trees: leaves scored as /v1/rewards scores them, credit on nodes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.client import AssayClient
from assay.settings import Settings
from assay.types import Item


def _math(leaf: str, answer: str, reference: str = "4") -> dict[str, Any]:
    return {"id": leaf, "task": "math", "response": f"so \\boxed{{{answer}}}", "reference": reference}


def _tree(method: str = "treerl", tid: str = "t") -> dict[str, Any]:
    # r -> a -> {a1, a2}; r -> b -> {b1, b2}; a1 and a2 give the same text (one verdict for both).
    nodes = [("r", None, 5), ("a", "r", 3), ("b", "r", 4), ("a1", "a", 2), ("a2", "a", 2), ("b1", "b", 1)]
    nodes.append(("b2", "b", 6))
    answers = {"a1": "4", "a2": "4", "b1": "\\frac{8}{2}", "b2": "5"}
    return {
        "id": tid,
        "method": method,
        "nodes": [{"id": n, "parent": p, "length": k} for n, p, k in nodes],
        "leaves": [{"node": n, "item": _math(f"{tid}-{n}", a)} for n, a in answers.items()],
    }


@pytest.fixture
def client(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings()), raise_server_exceptions=False) as test_client:
        yield test_client


def test_leaves_get_the_rewards_verdicts_and_nodes_their_credit(client: TestClient) -> None:
    tree = _tree()
    flat = [leaf["item"] for leaf in tree["leaves"]]
    rewards = client.post("/v1/rewards", json={"items": flat}).json()["results"]
    response = client.post("/v1/trees", json={"trees": [tree]})
    assert response.status_code == 200, response.text
    out = response.json()["trees"][0]
    keep = ("id", "status", "correct", "reward", "extracted")
    assert [{k: r[k] for k in keep} for r in out["results"]] == [{k: r[k] for k in keep} for r in rewards]
    nodes = {n["id"]: n for n in out["nodes"]}
    assert [n["id"] for n in out["nodes"]] == ["r", "a", "b", "a1", "a2", "b1", "b2"]
    assert (nodes["r"]["value"], nodes["a"]["value"], nodes["b"]["value"]) == (0.75, 1.0, 0.5)
    assert nodes["b2"]["advantage"] == pytest.approx(-1.25) and nodes["r"]["advantage"] == 0.0
    assert out["stats"] == {
        "n_leaves": 4, "n_scored": 4, "n_unique": 3, "n_correct": 3, "root_value": 0.75, "tokens": 23
    }  # fmt: skip


def test_a_malformed_tree_is_invalid_alone_and_a_bad_leaf_is_its_own_invalid(client: TestClient) -> None:
    bad = {**_tree(tid="bad"), "nodes": [{"id": "r", "parent": "r"}]}
    good = _tree("treepo", tid="good")
    good["leaves"][3]["item"] = {"id": "good-b2", "task": "nope", "response": "x"}
    out = client.post("/v1/trees", json={"trees": [bad, good]}).json()["trees"]
    assert (
        out[0]["status"] == "invalid" and "exactly one root" in out[0]["reason"] and out[0]["results"] == []
    )
    assert out[1]["status"] == "ok" and out[1]["results"][3]["status"] == "invalid"
    nodes = {n["id"]: n for n in out[1]["nodes"]}
    assert nodes["b2"]["value"] is None and nodes["b2"]["advantage"] is None
    assert nodes["b"]["value"] == 1.0 and out[1]["stats"]["n_scored"] == 3


def test_a_bad_body_gets_the_envelope_and_too_many_leaves_a_413(
    make_settings: Callable[..., Settings],
) -> None:
    with TestClient(create_app(make_settings(queue_size=3)), raise_server_exceptions=False) as small:
        assert small.post("/v1/trees", json={"tree": []}).status_code == 422
        response = small.post("/v1/trees", json={"trees": [_tree()]})
    assert response.status_code == 413 and "leaves" in response.json()["error"]["message"]


def test_client_score_trees_sync_and_async(live_server: Callable[..., Any]) -> None:
    server = live_server()
    trees = [_tree(tid=f"t{i}") for i in range(3)]
    trees[0]["leaves"][0]["item"] = Item.model_validate(trees[0]["leaves"][0]["item"])  # an Item is sent too
    with AssayClient(server.url, batch_size=5) as client:  # one tree (4 leaves) per request
        assert len(client.tree_chunks(trees)) == 3
        sync = client.score_trees(trees)

        async def run() -> list[Any]:
            async with AssayClient(server.url) as async_client:
                return await async_client.ascore_trees(trees)

        concurrent = asyncio.run(run())
    for outcomes in (sync, concurrent):
        assert [o.id for o in outcomes] == ["t0", "t1", "t2"]
        assert all(o.stats is not None and o.stats.root_value == 0.75 for o in outcomes)
