"""One judge backend as the graders see it: render -> (cache) -> ask -> read -> (store).

Graders (pointwise, pairwise, second opinion) build a prompt and call `Judge.ask` with the function that
reads their verdict out of a completion. The cache lookup and store happen here, once, so every grader
gets the same keying (see cache.py), and only answers that were read successfully are stored: an
unparseable answer is never replayed from the cache (a cached one, from an older reader, is re-asked).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from assay.judges.cache import JudgeCache, cache_key
from assay.judges.client import ChatReply, ChatRequest, JudgeClient
from assay.judges.failures import JudgeUnparseable
from assay.judges.prompts import Rendered
from assay.judges.quality import JudgeQuality

T = TypeVar("T")


@dataclass(frozen=True)
class Answer(Generic[T]):
    """A completion, what was read from it, and whether it came from the cache."""

    completion: ChatReply
    value: T
    cached: bool


def _read_or_none(read: Callable[[ChatReply], T], completion: ChatReply) -> tuple[bool, T | None]:
    try:
        return True, read(completion)
    except JudgeUnparseable:
        return False, None


@dataclass(frozen=True)
class Judge:
    client: JudgeClient
    cache: JudgeCache | None = None
    max_tokens: int = 512
    top_logprobs: int = 0
    structured_output: bool = True
    quality: JudgeQuality | None = None

    async def ask(
        self,
        model: str,
        rendered: Rendered,
        read: Callable[[ChatReply], T],
        *,
        temperature: float,
        seed: int | None = None,
        logprobs: bool = True,
        response_format: dict[str, Any] | None = None,
    ) -> Answer[T]:
        """Ask (or replay) one judgement and read it; JudgeUnparseable if `read` cannot."""
        extra = {"response_format": response_format} if response_format and self.structured_output else {}
        request = ChatRequest(
            model=model,
            messages=rendered.messages,
            temperature=temperature,
            max_tokens=self.max_tokens,
            top_logprobs=self.top_logprobs if logprobs else 0,
            seed=seed,
            extra=extra,
        )
        keyed = replace(request, messages=rendered.key_messages or rendered.messages)
        key = cache_key(self.client.base_url, rendered.template, keyed) if self.cache is not None else ""
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                ok, value = _read_or_none(read, hit)
                if ok:
                    self._count(model, parsed=True)
                    return Answer(hit, value, cached=True)  # type: ignore[arg-type]
        completion = await self.client.complete(request)
        try:
            value = read(completion)  # raises before anything is stored
        except JudgeUnparseable:
            self._count(model, parsed=False)
            raise
        self._count(model, parsed=True)
        if self.cache is not None:
            await self.cache.put(key, completion)
        return Answer(completion, value, cached=False)

    def _count(self, model: str, parsed: bool) -> None:
        if self.quality is not None:
            self.quality.answer(model, parsed)
