"""An async client for any OpenAI-compatible chat-completions endpoint (vLLM `serve`, hosted APIs).

What it guarantees:
- at most `concurrency` requests in flight (an `asyncio.Semaphore`, released while backing off);
- a total time limit per request (`asyncio.timeout`; httpx's own read timeout is per read, so a server
  trickling bytes would evade it), which ends as `JudgeTimeout`, never retried (a slow backend would
  only get slower with more load);
- retries on 429, 5xx and refused connections with the shared policy (assay/backoff.py: full jitter,
  `Retry-After` honoured plus a small jitter, a `Retry-After` beyond `max_backoff_s` ends the retries);
- the wait for a free request slot is reported to the item's clock (clock.py), so an item's deadline
  counts the judge's time, not the queue;
- the API key is a `SecretStr`, sent only in the Authorization header and redacted from any response
  text quoted in an error (a backend may echo the header back).

Every failure is a `JudgeFailure` (see failures.py); the scorer turns it into a status.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx
from pydantic import SecretStr

from assay.backoff import Backoff, parse_retry_after
from assay.judges.clock import judging, waiting_for_slot
from assay.judges.failures import JudgeBadResponse, JudgeRejected, JudgeTimeout, JudgeUnavailable
from assay.settings import JudgeSettings

_SNIPPET_CHARS = 300


@dataclass(frozen=True)
class TokenLogprobs:
    """One generated token, its log-probability and the most likely alternatives at its position."""

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class ChatReply:
    """What the judge said: its text and, when the backend returns them, per-token logprobs."""

    text: str
    tokens: tuple[TokenLogprobs, ...] = ()
    finish_reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ChatReply:
        tokens = tuple(
            TokenLogprobs(t["token"], t["logprob"], tuple((a, b) for a, b in t["top"]))
            for t in data.get("tokens", ())
        )
        return cls(text=data["text"], tokens=tokens, finish_reason=data.get("finish_reason"))


@dataclass(frozen=True)
class ChatRequest:
    """One chat-completions request; its `payload()` is also what the cache keys on."""

    model: str
    messages: tuple[tuple[str, str], ...]  # (role, content)
    temperature: float = 0.0
    max_tokens: int = 512
    top_logprobs: int = 0  # 0: do not ask for logprobs
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def payload(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": role, "content": content} for role, content in self.messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.top_logprobs > 0:
            body["logprobs"] = True
            body["top_logprobs"] = self.top_logprobs
        if self.seed is not None:
            body["seed"] = self.seed
        body.update(self.extra)
        return body


def parse_completion(data: Any) -> ChatReply:
    """Read the first choice of a chat-completions answer; JudgeBadResponse if it is not one."""
    try:
        choice = data["choices"][0]
        text = choice["message"].get("content") or ""
        finish_reason = choice.get("finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise JudgeBadResponse(
            "the judge backend's answer is not a chat completion", raw=str(data)[:_SNIPPET_CHARS]
        ) from exc
    if not isinstance(text, str):
        raise JudgeBadResponse("the judge backend's message content is not text")
    return ChatReply(text=text, tokens=_parse_logprobs(choice.get("logprobs")), finish_reason=finish_reason)


def _parse_logprobs(block: Any) -> tuple[TokenLogprobs, ...]:
    # Absent or in another shape (some backends return none, or the legacy completions format):
    # the judge then falls back to reading its text, so a shape we do not know is not an error.
    if not isinstance(block, dict) or not isinstance(block.get("content"), list):
        return ()
    tokens = []
    try:
        for entry in block["content"]:
            top = tuple((str(alt["token"]), float(alt["logprob"])) for alt in entry.get("top_logprobs") or ())
            tokens.append(TokenLogprobs(str(entry["token"]), float(entry["logprob"]), top))
    except (KeyError, TypeError, ValueError):
        return ()
    return tuple(tokens)


def public_url(url: str) -> str:
    """The URL without user:password, for messages (a base URL may carry credentials)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=host))


Sleep = Callable[[float], Awaitable[None]]


class JudgeClient:
    """Chat completions over httpx with a concurrency limit, a time limit, and retries."""

    def __init__(
        self,
        base_url: str,
        api_key: SecretStr | None = None,
        *,
        concurrency: int = 16,
        timeout_s: float = 60.0,
        connect_timeout_s: float = 5.0,
        backoff: Backoff | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        """`backoff`: the retry policy (default `Backoff()`: 3 retries, 0.5 s base, 10 s longest wait)."""
        self.base_url = base_url.rstrip("/")
        self.public_url = public_url(self.base_url)
        self._secret = api_key.get_secret_value() if api_key is not None else ""
        headers = {"Authorization": f"Bearer {self._secret}"} if self._secret else {}
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s),
            transport=transport,
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )
        self._semaphore = asyncio.Semaphore(concurrency)
        self._timeout_s = timeout_s
        self._backoff = backoff if backoff is not None else Backoff()
        self._sleep = sleep

    @classmethod
    def from_settings(cls, settings: JudgeSettings, **overrides: Any) -> JudgeClient:
        if settings.base_url is None:
            raise ValueError("JudgeSettings.base_url is not set")
        values: dict[str, Any] = {
            "concurrency": settings.concurrency,
            "timeout_s": settings.timeout_s,
            "connect_timeout_s": settings.connect_timeout_s,
            "backoff": Backoff(settings.retries, settings.backoff_s, settings.max_backoff_s),
        }
        values.update(overrides)
        return cls(settings.base_url, settings.api_key, **values)

    def __repr__(self) -> str:  # never the key
        return f"JudgeClient({self.public_url!r})"

    async def complete(self, request: ChatRequest) -> ChatReply:
        """One completion, retried on transient failures; raises a JudgeFailure otherwise."""
        attempt = 0
        while True:
            problem, retry_after, completion = await self._attempt(request)
            if completion is not None:
                return completion
            delay = self._backoff.delay(attempt, retry_after)
            if delay is None:
                why = self._backoff.why_stopped(attempt, retry_after)
                raise JudgeUnavailable(f"{problem}; {why}", backend=self.public_url)
            await self._sleep(delay)
            attempt += 1

    async def _attempt(self, request: ChatRequest) -> tuple[str, float | None, ChatReply | None]:
        """One request: (problem, Retry-After, None) when worth retrying, or (_, _, completion)."""
        with waiting_for_slot():
            await self._semaphore.acquire()
        try:
            with judging():
                async with asyncio.timeout(self._timeout_s):
                    response = await self._http.post(
                        f"{self.base_url}/chat/completions", json=request.payload()
                    )
        except TimeoutError as exc:
            raise JudgeTimeout(
                f"the judge backend did not answer within {self._timeout_s:g}s", backend=self.public_url
            ) from exc
        except httpx.TransportError as exc:
            return f"cannot reach the judge backend at {self.public_url} ({type(exc).__name__})", None, None
        finally:
            self._semaphore.release()
        if response.status_code == 200:
            return "", None, self._read(response)
        if response.status_code != 429 and response.status_code < 500:
            raise JudgeRejected(
                f"the judge backend refused the request: HTTP {response.status_code}: "
                f"{self._snippet(response.text)}",
                backend=self.public_url,
            )
        retry_after = parse_retry_after(response.headers.get("retry-after"))
        return f"the judge backend answered HTTP {response.status_code}", retry_after, None

    def _read(self, response: httpx.Response) -> ChatReply:
        try:
            data = response.json()
        except ValueError as exc:
            raise JudgeBadResponse(
                "the judge backend's answer is not JSON", raw=self._snippet(response.text)
            ) from exc
        try:
            return parse_completion(data)
        except JudgeBadResponse as exc:
            exc.details["raw"] = self._snippet(str(data))
            raise

    def _snippet(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "***")
        return text[:_SNIPPET_CHARS]

    async def aclose(self) -> None:
        await self._http.aclose()
