"""The vllm backend without a GPU: output mapping, seeding and weight sync on stand-in objects, and the
missing-extra message. The real engine path is exercised by test_rl_vllm_real.py."""

from __future__ import annotations

import importlib.util
import sys
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from assay.rl_client.backends.vllm import VLLMBackend, _load_weights, to_completion
from assay.rl_client.generate import SamplingParams


def _output(token_ids: list[int], finish: str, logprobs: list[float] | None) -> Any:
    lp = (
        None
        if logprobs is None
        else [{t: SimpleNamespace(logprob=v)} for t, v in zip(token_ids, logprobs, strict=True)]
    )
    sample = SimpleNamespace(token_ids=token_ids, text="42", logprobs=lp, finish_reason=finish)
    return SimpleNamespace(prompt_token_ids=[1, 2, 3], outputs=[sample])


def test_request_output_maps_to_a_completion() -> None:
    done = to_completion(_output([7, 8, 2], "stop", [-0.1, -0.2, -0.3]))
    assert done.prompt_ids == [1, 2, 3]
    assert done.token_ids == [7, 8, 2]
    assert done.logprobs == [-0.1, -0.2, -0.3]
    assert not done.truncated
    assert to_completion(_output([7, 8], "length", [-0.1, -0.2])).truncated


def test_missing_logprobs_are_an_error_not_zeros() -> None:
    with pytest.raises(ValueError, match="logprobs=0"):
        to_completion(_output([7, 8], "stop", None))


class _FakeLLM:
    def __init__(self) -> None:
        self.worker = SimpleNamespace(model_runner=SimpleNamespace(model=self))
        self.loaded: list[tuple[str, Any]] = []
        self.resets = 0

    def load_weights(self, weights: list[tuple[str, Any]]) -> None:
        self.loaded = list(weights)

    def collective_rpc(self, method: Any, args: tuple[Any, ...] = ()) -> list[Any]:
        return [method(self.worker, *args)]

    def reset_prefix_cache(self) -> None:
        self.resets += 1


def test_sync_weights_loads_every_tensor_and_resets_the_prefix_cache() -> None:
    llm = _FakeLLM()
    backend = VLLMBackend("unused", llm=llm)
    model = torch.nn.Linear(2, 3)
    backend.sync_weights(model)
    assert [name for name, _ in llm.loaded] == ["weight", "bias"]
    assert torch.equal(llm.loaded[0][1], model.weight.detach())
    assert llm.resets == 1


def test_workers_with_reload_weights_reload_in_place() -> None:
    # vLLM 0.32 cannot `load_weights` twice into a processed model; its workers have `reload_weights`.
    calls: list[Any] = []
    worker = SimpleNamespace(reload_weights=lambda weights_iterator: calls.append(weights_iterator))
    _load_weights(worker, [("w", torch.zeros(1))])
    assert [name for name, _ in calls[0]] == ["w"]


def test_every_request_gets_its_own_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt repeated G times must not come back as G copies of one sample."""
    seen: list[Any] = []

    class Params:
        def __init__(self, **kwargs: Any) -> None:
            self.__dict__.update(kwargs)

    class LLM(_FakeLLM):
        def generate(self, prompts: list[str], params: list[Any], use_tqdm: bool) -> list[Any]:
            seen.extend(params)
            return [_output([5, 2], "stop", [-1.0, -0.5]) for _ in prompts]

    monkeypatch.setitem(sys.modules, "vllm", SimpleNamespace(SamplingParams=Params))
    backend = VLLMBackend("unused", llm=LLM())
    outs = backend.generate(["2+2="] * 4, SamplingParams(1.0, 8))
    assert len(outs) == 4
    assert len({p.seed for p in seen}) == 4
    assert {(p.n, p.temperature, p.max_tokens, p.logprobs) for p in seen} == {(1, 1.0, 8, 0)}
    backend.generate(["2+2="] * 4, SamplingParams(1.0, 8))
    assert len({p.seed for p in seen}) == 8  # a new call draws new seeds


def test_generate_call_count_is_checkpointed() -> None:
    backend = VLLMBackend("unused", llm=_FakeLLM())
    backend.load_state_dict({"calls": 7})
    assert backend.state_dict() == {"calls": 7}


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_without_vllm_the_error_names_the_extra() -> None:
    with pytest.raises(ImportError, match=r"assay\[vllm\]"):
        VLLMBackend("some/model")
