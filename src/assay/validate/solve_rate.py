"""Solve-rate probing: k answers per prompt from a policy, scored by Assay, so a run can start on the prompts
the policy can learn from.

A prompt the policy always solves (p = 1) or never solves (p = 0) gives every sample of a GRPO group the
same reward, hence zero advantage and no gradient; the group's reward variance p(1 - p) is the signal
(VCRL's group-variance curriculum). `learning_value` is 4p(1 - p): 1 at p = 0.5, 0 at either end.

Samplers: any OpenAI-compatible server (`openai:URL`, vLLM's among them), or the trainer's own backends
(`hf:MODEL_DIR` with transformers; `vllm:MODEL` in-process), through `sampler_from_spec`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from assay.errors import ConfigError, MissingExtraError
from assay.types import Result, Status
from assay.validate.report import META_FIELDS

if TYPE_CHECKING:
    from assay.engine.scoring import Engine


class Sampler(Protocol):
    def sample(self, prompts: Sequence[str], k: int) -> list[list[str]]:
        """k responses for each prompt, in prompt order."""
        ...


@dataclass
class OpenAISampler:
    """`/v1/completions` with `n = k` on an OpenAI-compatible server (vLLM, SGLang, TGI, ...)."""

    url: str
    model: str | None = None
    temperature: float = 1.0
    max_tokens: int = 512
    concurrency: int = 16
    timeout_s: float = 300.0
    transport: httpx.AsyncBaseTransport | None = None

    def sample(self, prompts: Sequence[str], k: int) -> list[list[str]]:
        return asyncio.run(self._sample(prompts, k))

    async def _sample(self, prompts: Sequence[str], k: int) -> list[list[str]]:
        base = self.url.rstrip("/")
        base = base if base.endswith("/v1") else base + "/v1"
        limit = asyncio.Semaphore(self.concurrency)
        async with httpx.AsyncClient(base_url=base, timeout=self.timeout_s, transport=self.transport) as http:
            model = self.model or str((await http.get("/models")).raise_for_status().json()["data"][0]["id"])

            async def one(prompt: str) -> list[str]:
                body = {
                    "model": model,
                    "prompt": prompt,
                    "n": k,
                    "temperature": self.temperature,
                    "max_tokens": self.max_tokens,
                }
                async with limit:
                    reply = (await http.post("/completions", json=body)).raise_for_status().json()
                choices = sorted(reply["choices"], key=lambda c: c.get("index", 0))
                return [str(c["text"]) for c in choices]

            return list(await asyncio.gather(*(one(p) for p in prompts)))


@dataclass
class BackendSampler:
    """The trainer's own Generate backends (`assay.rl_client.backends`): each prompt repeated k times."""

    backend: Any
    temperature: float = 1.0
    max_tokens: int = 512

    def sample(self, prompts: Sequence[str], k: int) -> list[list[str]]:
        from assay.rl_client.generate import SamplingParams

        params = SamplingParams(temperature=self.temperature, max_new_tokens=self.max_tokens)
        repeated = [p for p in prompts for _ in range(k)]
        texts = [c.text for c in self.backend.generate(repeated, params)]
        return [texts[i * k : (i + 1) * k] for i in range(len(prompts))]


def _hf_backend(path: str, seed: int) -> Any:
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from assay.rl_client.backends.hf import HFBackend
    except ImportError as exc:
        raise MissingExtraError("torch and transformers", "train") from exc
    tokenizer: Any = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    return HFBackend(model, tokenizer, seed=seed)


def sampler_from_spec(spec: str, *, temperature: float, max_tokens: int, seed: int = 0) -> Sampler:
    """`openai:URL[#MODEL]`, `hf:MODEL_DIR` or `vllm:MODEL` -> a sampler; ConfigError names the forms."""
    kind, _, where = spec.partition(":")
    if kind == "openai" and where:
        url, _, model = where.partition("#")
        return OpenAISampler(url, model or None, temperature=temperature, max_tokens=max_tokens)
    if kind == "hf" and where:
        return BackendSampler(_hf_backend(where, seed), temperature, max_tokens)
    if kind == "vllm" and where:
        try:
            from assay.rl_client.backends.vllm import VLLMBackend

            backend = VLLMBackend(where, seed=seed)
        except ImportError as exc:
            raise MissingExtraError("vllm", "vllm") from exc
        return BackendSampler(backend, temperature, max_tokens)
    raise ConfigError(f'policy "{spec}": write openai:URL[#MODEL], hf:MODEL_DIR or vllm:MODEL')


@dataclass(frozen=True)
class SolveRate:
    """One prompt's pass rate over the samples Assay could score (`ok`); None when it scored none."""

    rate: float | None
    samples: int
    scored: int

    @property
    def learning_value(self) -> float | None:
        return None if self.rate is None else 4.0 * self.rate * (1.0 - self.rate)


def _rate(results: Sequence[Result]) -> SolveRate:
    ok = [r for r in results if r.status is Status.OK]
    rate = sum(r.correct is True for r in ok) / len(ok) if ok else None
    return SolveRate(rate, len(results), len(ok))


def solve_rates(tasks: Sequence[dict[str, Any]], sampler: Sampler, engine: Engine, k: int) -> list[SolveRate]:
    """Per task (a dict with a prompt): sample k responses, score them as training would, pass rate."""
    prompts = [str(t.get("prompt") or "") for t in tasks]
    samples = sampler.sample(prompts, k)
    bare = [{k: v for k, v in t.items() if k not in META_FIELDS} for t in tasks]
    items = [
        {**t, "response": response}
        for t, responses in zip(bare, samples, strict=True)
        for response in responses
    ]
    results = engine.score(items)  # a task that is not a valid item gets `invalid` results: no rate
    return [_rate(results[i * k : (i + 1) * k]) for i in range(len(tasks))]


def in_band(rate: float | None, low: float | None, high: float | None) -> bool:
    """Whether a solve rate is inside [low, high]; a prompt with no rate is kept only without a band."""
    if low is None and high is None:
        return True
    if rate is None:
        return False
    return (low is None or rate >= low) and (high is None or rate <= high)
