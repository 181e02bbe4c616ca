"""Request cost is bounded before parsing work (issue 28, part 6), tried as an attacker would.

- one POST of 1,000,000 empty groups (about 23 MB) is refused (413) after counting, not expanded, and
  /healthz, probed all the while, keeps answering within a second;
- the largest body the limits allow (every item at its value budget) is read while /healthz answers;
- nesting at any depth in one item gives that item `invalid` on every POST route that takes items, and
  never a 500: a 422 where the nesting is not inside an item.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from assay_testing import LiveServer
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.api.body import MAX_DEPTH, MAX_ITEM_VALUES, SHAPES, TooMuch, read_json
from assay.items import Unreadable
from assay.settings import Settings

MATH = {"id": "ok", "task": "math", "response": "\\boxed{4}", "reference": "4"}
DEPTHS = [MAX_DEPTH + 1, 490, 5_000, 200_000]


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _probing(server: LiveServer, send: Callable[[], httpx.Response]) -> tuple[httpx.Response, list[float]]:
    """`send` in a thread while /healthz is asked again and again; its answer and the probes' times."""
    answer: dict[str, httpx.Response] = {}
    worker = threading.Thread(target=lambda: answer.update(response=send()))
    probes: list[float] = []
    with httpx.Client(base_url=server.url, timeout=30) as http:
        worker.start()
        while worker.is_alive() or not probes:
            started = time.perf_counter()
            assert http.get("/healthz").status_code == 200
            probes.append(time.perf_counter() - started)
            worker.join(0.05)
    return answer["response"], probes


@pytest.mark.slow
def test_a_million_empty_groups_are_refused_and_healthz_keeps_answering(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server()
    body = b'{"groups":[' + b",".join([b'{"id":null,"items":[]}'] * 1_000_000) + b"]}"
    headers = {"content-type": "application/json"}

    def send() -> httpx.Response:
        with httpx.Client(base_url=server.url, timeout=120) as http:
            return http.post("/v1/groups", content=body, headers=headers)

    response, probes = _probing(server, send)
    assert response.status_code == 413, response.text
    assert "groups" in response.json()["error"]["message"]
    assert max(probes) < 1.0, f"/healthz took {max(probes):.2f}s while the body was read"
    assert server.engine.pending == 0


@pytest.mark.slow
def test_the_largest_allowed_body_is_read_while_healthz_answers(
    live_server: Callable[..., LiveServer],
) -> None:
    server = live_server(queue_size=30)
    values = [0] * (MAX_ITEM_VALUES - 100)  # each item just under its value budget: the costliest read
    items = [{"task": "math", "response": "4", "reference": "4", "junk": values} for _ in range(30)]
    body = json.dumps({"items": items}).encode()

    def send() -> httpx.Response:
        with httpx.Client(base_url=server.url, timeout=120) as http:
            return http.post("/v1/rewards", content=body, headers={"content-type": "application/json"})

    response, probes = _probing(server, send)
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert len(results) == 30 and all(r["status"] == "invalid" and "junk" in r["reason"] for r in results)
    assert max(probes) < 1.0, f"/healthz took {max(probes):.2f}s while the body was read"


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(workers=1)), raise_server_exceptions=False) as test_client:
        yield test_client


def _post(client: TestClient, path: str, body: str) -> httpx.Response:
    return client.post(path, content=body, headers={"content-type": "application/json"})


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_item_is_invalid_and_its_batch_is_scored(client: TestClient, depth: int) -> None:
    deep = '{"id": "deep", "task": "math", "response": "4", "reference": "4", "options": {"x": %s}}'
    body = '{"items": [' + deep % _nested(depth) + ", " + json.dumps(MATH) + "]}"
    response = _post(client, "/v1/rewards", body)
    assert response.status_code == 200, response.text
    first, second = response.json()["results"]
    assert first["status"] == "invalid" and "nested deeper" in first["reason"]
    assert (second["id"], second["status"], second["reward"]) == ("ok", "ok", 1.0)


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_item_in_a_group_is_invalid_and_the_group_is_scored(client: TestClient, depth: int) -> None:
    body = '{"groups": [{"id": "g", "items": [' + _nested(depth) + ", " + json.dumps(MATH) + "]}]}"
    response = _post(client, "/v1/groups", body)
    assert response.status_code == 200, response.text
    (group,) = response.json()["groups"]
    assert [r["status"] for r in group["results"]] == ["invalid", "ok"]
    assert group["stats"]["n_scored"] == 1


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize(
    ("path", "template"),
    [
        ("/get_reward", '{"query": ["a", %s]}'),
        ("/run_code", '{"code": %s}'),
        ("/v1/groups", '{"groups": [{"id": %s, "items": []}]}'),
        ("/v1/rewards", '{"items": [], "extra": %s}'),
    ],
)
def test_nesting_outside_an_item_is_a_422_never_a_500(
    client: TestClient, depth: int, path: str, template: str
) -> None:
    response = _post(client, path, template % _nested(depth))
    assert response.status_code == 422, response.text
    assert response.json()["error"]["type"] == "validation_error"


def test_counts_are_refused_before_anything_is_expanded() -> None:
    with pytest.raises(TooMuch, match="more than 3 items"):
        read_json(b'{"items": [{}, {}, {}, {}' + b", {}" * 10**5 + b"]}", SHAPES["/v1/rewards"], 3)
    groups = b'{"groups": [' + b",".join([b'{"items": [{}, {}]}'] * 2) + b"]}"
    with pytest.raises(TooMuch, match="more than 3 items"):  # items counted across groups
        read_json(groups, SHAPES["/v1/groups"], 3)
    assert len(read_json(groups, SHAPES["/v1/groups"], 4)["groups"]) == 2


def test_the_scan_reads_what_json_reads() -> None:
    body = {
        "items": [
            {"id": "a,]}", "response": 'tricky "}]" text \\', "tests": [{"args": [[1, [2]], {"k": "]"}]}]},
            5,
            "text",
            [],
            {},
        ],
        "other": {"items": [1, 2]},
    }
    assert read_json(json.dumps(body).encode(), SHAPES["/v1/rewards"], 10) == body
    spaced = json.dumps(body, indent=3).encode()
    assert read_json(spaced, SHAPES["/v1/rewards"], 10) == body


def test_a_repeated_key_in_the_envelope_is_refused() -> None:
    with pytest.raises(ValueError, match="twice"):
        read_json(b'{"items": [{}, {}, {}], "items": [{}]}', SHAPES["/v1/rewards"], 10)


def test_an_item_over_its_value_budget_is_unreadable() -> None:
    big = b'{"items": [{"x": [' + b",".join([b"0"] * (MAX_ITEM_VALUES + 1)) + b"]}]}"
    (item,) = read_json(big, SHAPES["/v1/rewards"], 10)["items"]
    assert isinstance(item, Unreadable) and "values" in item.reason
