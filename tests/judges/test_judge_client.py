"""The HTTP client against a real loopback server: retries, Retry-After, time limits, secrets, limits."""

from __future__ import annotations

import asyncio
import random

import pytest
from pydantic import SecretStr

from assay.backoff import Backoff
from assay.judges.client import ChatReply, ChatRequest, JudgeClient, parse_retry_after
from assay.judges.failures import JudgeBadResponse, JudgeRejected, JudgeTimeout, JudgeUnavailable
from judges.judge_harness import Harness, closed_port_url


def _request(model: str, logprobs: int = 0) -> ChatRequest:
    return ChatRequest(
        model=model, messages=(("user", "### Response\nx\n### End of Response"),), top_logprobs=logprobs
    )


class Sleeps:
    """Records the waits the client asks for instead of waiting (the server answers Retry-After: 0)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_a_429_with_retry_after_is_retried_after_at_least_that_long(harness: Harness) -> None:
    sleeps = Sleeps()
    client = JudgeClient(harness.judges.base_url, backoff=Backoff(3, rng=random.Random(0)), sleep=sleeps)
    completion = harness.run(_complete(client, _request("flaky")))
    assert "[RESULT] 2" in completion.text
    assert len(harness.judges.requests_for("flaky")) == 3  # two 429s, then the answer
    # Retry-After: 0 plus a jitter below min(backoff, 1 s), once per 429
    assert len(sleeps.waits) == 2
    assert all(0.0 <= wait <= 0.5 for wait in sleeps.waits)


def test_retry_after_is_read_as_seconds_or_an_http_date() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == pytest.approx(10.0)
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_5xx_is_retried_then_reported_unavailable(harness: Harness) -> None:
    sleeps = Sleeps()
    client = JudgeClient(harness.judges.base_url, backoff=Backoff(2, 0.5), sleep=sleeps)
    with pytest.raises(JudgeUnavailable, match=r"HTTP 500; gave up after 3 attempts"):
        harness.run(_complete(client, _request("broken")))
    assert len(harness.judges.requests_for("broken")) == 3
    # full jitter under an exponential cap: attempt n waits at most backoff * 2^n
    assert [wait <= 0.5 * 2**n for n, wait in enumerate(sleeps.waits)] == [True, True]


def test_a_backend_that_is_down_is_unavailable_after_retries(harness: Harness) -> None:
    sleeps = Sleeps()
    client = JudgeClient(closed_port_url(), backoff=Backoff(2), sleep=sleeps)
    with pytest.raises(JudgeUnavailable, match=r"cannot reach the judge backend .*ConnectError"):
        harness.run(_complete(client, _request("fair")))
    assert len(sleeps.waits) == 2


def test_a_slow_backend_times_out_without_retrying(harness: Harness) -> None:
    client = JudgeClient(harness.judges.base_url, timeout_s=0.2, backoff=Backoff(3))
    with pytest.raises(JudgeTimeout, match=r"did not answer within 0.2s"):
        harness.run(_complete(client, _request("slow")))
    assert len(harness.judges.requests_for("slow")) == 1


def test_the_api_key_is_sent_as_bearer_and_redacted_from_echoed_errors(harness: Harness) -> None:
    key = "sk-test-very-secret-123"
    client = JudgeClient(harness.judges.base_url, SecretStr(key))
    with pytest.raises(JudgeRejected) as caught:
        harness.run(_complete(client, _request("echo-auth")))
    (seen,) = harness.judges.requests_for("echo-auth")
    assert seen["headers"]["authorization"] == f"Bearer {key}"
    assert "HTTP 401" in str(caught.value)
    assert "Bearer ***" in str(caught.value)
    assert key not in str(caught.value) + repr(caught.value.details) + repr(client)


def test_a_non_json_answer_is_a_bad_response(harness: Harness) -> None:
    client = JudgeClient(harness.judges.base_url)
    with pytest.raises(JudgeBadResponse, match="not JSON") as caught:
        harness.run(_complete(client, _request("notjson")))
    assert caught.value.details["raw"] == "<html>gateway says hi</html>"


def test_logprobs_are_read_token_by_token_and_add_up_to_the_text(harness: Harness) -> None:
    client = JudgeClient(harness.judges.base_url)
    completion = harness.run(_complete(client, _request("unsure", logprobs=5)))
    assert "".join(t.token for t in completion.tokens) == completion.text
    assert dict(completion.tokens[-1].top)[" 2"] == pytest.approx(-0.6931, abs=1e-3)


def test_no_more_requests_are_in_flight_than_the_concurrency_limit(harness: Harness) -> None:
    client = JudgeClient(harness.judges.base_url, concurrency=2)

    async def many() -> None:
        try:
            await asyncio.gather(*(client.complete(_request("count")) for _ in range(8)))
        finally:
            await client.aclose()

    harness.run(many())
    assert len(harness.judges.requests_for("count")) == 8
    assert 1 <= harness.judges.max_in_flight <= 2


async def _complete(client: JudgeClient, request: ChatRequest) -> ChatReply:
    try:
        return await client.complete(request)
    finally:
        await client.aclose()


def test_the_wait_after_a_429_is_at_least_its_retry_after(harness: Harness) -> None:
    sleeps = Sleeps()
    client = JudgeClient(harness.judges.base_url, backoff=Backoff(2, 0.5, 10), sleep=sleeps)
    with pytest.raises(JudgeUnavailable, match=r"HTTP 429; gave up after 3 attempts"):
        harness.run(_complete(client, _request("ratelimit-3")))
    assert len(sleeps.waits) == 2
    assert all(3.0 <= wait <= 3.5 for wait in sleeps.waits)  # Retry-After plus at most backoff_s of jitter


def test_a_retry_after_beyond_max_backoff_ends_the_retries_at_once(harness: Harness) -> None:
    sleeps = Sleeps()
    client = JudgeClient(harness.judges.base_url, backoff=Backoff(3, max_s=10), sleep=sleeps)
    with pytest.raises(JudgeUnavailable, match=r"asked to retry after 60s \(max_backoff_s=10\)"):
        harness.run(_complete(client, _request("ratelimit-60")))
    assert sleeps.waits == []
    assert len(harness.judges.requests_for("ratelimit-60")) == 1


def test_credentials_in_the_base_url_stay_out_of_messages() -> None:
    client = JudgeClient("http://user:hunter2@127.0.0.1:9/v1")
    assert client.public_url == "http://127.0.0.1:9/v1"
    assert "hunter2" not in repr(client)
