"""The vLLM backend against a scripted server speaking vLLM's exact /pooling and /tokenize format."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prm_fake_vllm import MARKER_ID, FakeVllm, probability

from assay.engine.scoring import Engine
from assay.prm.backends.base import PrmBadInput, PrmTimeout, PrmUnavailable, StepRequest, StepScores
from assay.prm.backends.vllm_pooling import VllmPoolingBackend
from assay.prm.formats import QWEN_SYSTEM, make_format
from assay.settings import PrmSettings, Settings
from assay.types import Status

REQUEST = StepRequest("What is 6 * 7?", ("6 * 7 = 42.", "So the answer is 42."))
MATH_OK = {"task": "math", "response": "\\boxed{2}", "reference": "2"}


@pytest.fixture
def fake() -> Iterator[FakeVllm]:
    with FakeVllm() as server:
        yield server


def _score(settings: PrmSettings, request: StepRequest = REQUEST) -> StepScores:
    backend = VllmPoolingBackend(settings, make_format("qwen"))

    async def run() -> StepScores:
        try:
            return await backend.score(request)
        finally:
            await backend.aclose()

    return asyncio.run(run())


def _expected(fake: FakeVllm) -> list[float]:
    return [probability(i) for i, token in enumerate(fake.last_tokens) if token == MARKER_ID]


def test_the_pooling_request_is_vllms_wire_format(fake: FakeVllm) -> None:
    _score(PrmSettings(backend="vllm", base_url=fake.url, model="tiny-prm"))
    path, body = fake.requests[0]
    assert path == "/pooling"
    assert body == {
        "model": "tiny-prm",
        "messages": [
            {"role": "system", "content": QWEN_SYSTEM},
            {"role": "user", "content": "What is 6 * 7?"},
            {"role": "assistant", "content": "6 * 7 = 42.<extra_0>So the answer is 42.<extra_0>"},
        ],
        "task": "token_classify",
        "use_activation": True,
    }


def test_one_row_per_step_tag_gives_the_positive_class(fake: FakeVllm) -> None:
    got = _score(PrmSettings(backend="vllm", base_url=fake.url))
    assert list(got.scores) == _expected(fake) and len(got.scores) == 2
    assert got.details["vllm_layout"] == "per-tag"
    assert [path for path, _ in fake.requests] == ["/pooling"]


def test_one_row_per_token_is_read_at_the_tags_found_by_tokenize(fake: FakeVllm) -> None:
    fake.mode = "per-token"
    got = _score(PrmSettings(backend="vllm", base_url=fake.url))
    assert list(got.scores) == _expected(fake) and len(got.scores) == 2
    assert got.details["vllm_layout"] == "per-token"
    tokenize = [body for path, body in fake.requests if path == "/tokenize"]
    assert {"prompt": "<extra_0>", "add_special_tokens": False} in tokenize
    assert any(b.get("add_generation_prompt") is False and "messages" in b for b in tokenize)


@pytest.mark.parametrize("mode", ["empty-rows", "empty-data"])
def test_an_empty_answer_is_unavailable_and_names_the_step_tag_flag(fake: FakeVllm, mode: str) -> None:
    fake.mode = mode
    with pytest.raises(PrmUnavailable, match=r"--pooler-config '\{\"step_tag_id\": 3\}'"):
        _score(PrmSettings(backend="vllm", base_url=fake.url))


@pytest.mark.parametrize(
    ("mode", "match"),
    [("error-500", "HTTP 500.*EngineCore died"), ("not-json", "not JSON"), ("logits", "not probabilities")],
)
def test_a_broken_answer_is_unavailable(fake: FakeVllm, mode: str, match: str) -> None:
    fake.mode = mode
    with pytest.raises(PrmUnavailable, match=match):
        _score(PrmSettings(backend="vllm", base_url=fake.url))


def test_an_input_over_the_servers_context_is_bad_input(fake: FakeVllm) -> None:
    fake.mode = "too-long"
    with pytest.raises(PrmBadInput, match="maximum context length is 2048"):
        _score(PrmSettings(backend="vllm", base_url=fake.url))


def test_a_server_slower_than_the_timeout_is_a_timeout(fake: FakeVllm) -> None:
    fake.mode = "hang"
    with pytest.raises(PrmTimeout, match=r"did not answer within 0\.3s"):
        _score(PrmSettings(backend="vllm", base_url=fake.url, timeout_s=0.3))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


def test_a_server_that_is_down_is_unavailable() -> None:
    with pytest.raises(PrmUnavailable, match="unreachable"):
        _score(PrmSettings(backend="vllm", base_url=f"http://127.0.0.1:{_closed_port()}"))


def _engine_settings(make_settings: Callable[..., Settings], **prm: Any) -> Settings:
    return make_settings(workers=1, prm={"backend": "vllm", **prm})


def test_through_the_engine_prm_is_graded_and_math_still_works(
    make_settings: Callable[..., Settings], fake: FakeVllm
) -> None:
    with Engine(_engine_settings(make_settings, base_url=fake.url)) as engine:
        prm, math = engine.score(
            [{"task": "prm", "prompt": REQUEST.prompt, "steps": list(REQUEST.steps)}, MATH_OK]
        )
    assert prm.status is Status.OK and prm.details["step_scores"] == _expected(fake)
    assert prm.reward == min(_expected(fake)) and prm.details["first_error_step"] is not None
    assert math.status is Status.OK and math.reward == 1.0


@pytest.mark.parametrize("base_url", [None, "down"])
def test_through_the_engine_a_missing_or_down_server_is_an_error_and_math_still_works(
    make_settings: Callable[..., Settings], base_url: str | None
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}" if base_url == "down" else None
    with Engine(_engine_settings(make_settings, base_url=url)) as engine:
        prm, math = engine.score([{"task": "prm", "prompt": "p", "steps": ["a"]}, MATH_OK])
    assert prm.status is Status.ERROR and prm.reward is None
    assert ("unreachable" if url else "ASSAY_PRM__BASE_URL") in prm.reason
    assert math.status is Status.OK
