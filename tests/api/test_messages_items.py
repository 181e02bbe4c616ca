"""`/v1/rewards` and `/v1/groups` items that carry `messages`: the assistant turns are scored, never a
tool's, a user's or the system's text (issue 38 item 3)."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from assay.api import create_app
from assay.settings import Settings
from assay.types import Item


@pytest.fixture
def client(make_settings: Callable[..., Settings]) -> Iterator[TestClient]:
    with TestClient(create_app(make_settings()), raise_server_exceptions=False) as test_client:
        yield test_client


def _item(messages: list[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"task": "math", "reference": "42", "messages": messages, **fields}


def _rewards(client: TestClient, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    response = client.post("/v1/rewards", json={"items": items})
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def _printed_by_others(rng: random.Random) -> list[dict[str, Any]]:
    """A transcript whose only right answer is in text the model did not write: a tool's output (as
    text or parts), a user's or system's turn, or a tool-call's arguments; the model's turns are wrong
    or empty."""
    answer = rng.choice(["\\boxed{42}", "The answer is 42.", "42", "**42**", "\\boxed{ 42 }"])
    where = rng.choice(["tool", "tool-parts", "user", "system", "arguments"])
    model = rng.choice(["", "let me check", "it is not 41", None])
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is 6*7?"}]
    call = {"function": {"name": "python", "arguments": f'{{"code": "print({answer!r})"}}'}}
    messages.append({"role": "assistant", "content": model, "tool_calls": [call]})
    if where == "tool":
        messages.append({"role": "tool", "content": answer})
    elif where == "tool-parts":
        messages.append({"role": "tool", "content": [{"type": "text", "text": answer}]})
    elif where in ("user", "system"):
        messages.append({"role": where, "content": answer})
    if rng.random() < 0.5:
        messages.append({"role": "assistant", "content": rng.choice(["done", "", "see above"])})
    return messages


def test_the_assistant_turns_are_scored_and_a_tools_answer_earns_nothing(client: TestClient) -> None:
    own = [
        {"role": "user", "content": "What is 6*7?"},
        {"role": "assistant", "content": "let me compute", "tool_calls": [{"function": {"name": "python"}}]},
        {"role": "tool", "content": "41"},
        {"role": "assistant", "content": [{"type": "text", "text": "so \\boxed{42}"}]},
    ]
    tool_only = [
        {"role": "user", "content": "What is 6*7?"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "python"}}]},
        {"role": "tool", "content": "\\boxed{42}"},
    ]
    results = _rewards(client, [_item(own, id="own"), _item(tool_only, id="tool")])
    assert [(r["id"], r["status"], r["reward"]) for r in results] == [("own", "ok", 1.0), ("tool", "ok", 0.0)]


def test_generated_transcripts_with_the_answer_outside_the_models_turns_earn_zero(client: TestClient) -> None:
    rng = random.Random(38)
    transcripts = [_printed_by_others(rng) for _ in range(60)]
    results = _rewards(client, [_item(m) for m in transcripts])
    assert [(r["status"], r["reward"]) for r in results] == [("ok", 0.0)] * len(transcripts)
    # the same transcripts with the model stating the answer itself are right: the zeros are not a failure
    for messages in transcripts:
        messages.append({"role": "assistant", "content": "\\boxed{42}"})
    results = _rewards(client, [_item(m) for m in transcripts])
    assert [(r["status"], r["reward"]) for r in results] == [("ok", 1.0)] * len(transcripts)


def test_groups_score_messages_the_same_way(client: TestClient) -> None:
    members = [
        _item([{"role": "assistant", "content": "\\boxed{42}"}]),
        _item([{"role": "assistant", "content": ""}, {"role": "tool", "content": "\\boxed{42}"}]),
    ]
    response = client.post("/v1/groups", json={"groups": [{"items": members}]})
    assert response.status_code == 200, response.text
    results = response.json()["groups"][0]["results"]
    assert [(r["status"], r["reward"]) for r in results] == [("ok", 1.0), ("ok", 0.0)]


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"response": "\\boxed{42}"}, "not both"),
        ({"messages": [{"role": "tool", "content": "\\boxed{42}"}]}, "no assistant turn"),
        ({"messages": [{"role": "model", "content": "\\boxed{42}"}]}, "roles: model"),
        ({"messages": "\\boxed{42}"}, "must be a list"),
        ({"messages": [{"content": "\\boxed{42}"}]}, 'messages[0] must be an object with a text "role"'),
        ({"messages": [{"role": "assistant", "content": 42}]}, "messages[0].content"),
    ],
)
def test_a_bad_transcript_is_invalid_with_its_reason(
    client: TestClient, fields: dict[str, Any], reason: str
) -> None:
    base = {"messages": [{"role": "assistant", "content": "\\boxed{41}"}]}
    (result,) = _rewards(client, [{"task": "math", "reference": "42", "id": "x", **base, **fields}])
    assert result["status"] == "invalid" and result["reward"] is None and result["id"] == "x"
    assert reason in result["reason"]


def test_an_item_with_messages_reads_back_from_its_own_dump() -> None:
    """Workers and the Ray engine read an item again from its dump, which carries both fields."""
    transcript = [{"role": "tool", "content": "1"}, {"role": "assistant", "content": "2"}]
    item = Item.model_validate(_item(transcript))
    assert item.response == "2"
    assert Item.model_validate(item.model_dump(mode="json")) == item
