"""One judge backend as the graders see it: render -> (cache) -> ask -> completion.

Graders (pointwise, pairwise, second opinion) build a prompt and call `Judge.ask`; the cache lookup and
store happen here, once, so every grader gets the same keying (see cache.py) and hit reporting.
"""

from __future__ import annotations

from dataclasses import dataclass

from assay.judges.cache import JudgeCache, cache_key
from assay.judges.client import ChatRequest, Completion, JudgeClient
from assay.judges.prompts import Rendered


@dataclass(frozen=True)
class Answer:
    """A completion and whether it came from the cache."""

    completion: Completion
    cached: bool


@dataclass(frozen=True)
class Judge:
    client: JudgeClient
    cache: JudgeCache | None = None
    max_tokens: int = 512
    top_logprobs: int = 0

    async def ask(
        self,
        model: str,
        rendered: Rendered,
        *,
        temperature: float,
        seed: int | None = None,
        logprobs: bool = True,
    ) -> Answer:
        request = ChatRequest(
            model=model,
            messages=rendered.messages,
            temperature=temperature,
            max_tokens=self.max_tokens,
            top_logprobs=self.top_logprobs if logprobs else 0,
            seed=seed,
        )
        key = cache_key(self.client.base_url, rendered.template, request) if self.cache is not None else ""
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                return Answer(hit, cached=True)
        completion = await self.client.complete(request)
        if self.cache is not None:
            await self.cache.put(key, completion)
        return Answer(completion, cached=False)
