"""The hf backend's sampling loop: shapes, end tokens, truncation, seeded sampling, and behaviour
log-probabilities that agree with a full forward pass (left padding and the KV cache done right)."""

from __future__ import annotations

import pytest
import torch

from assay.rl_client.backends.hf import HFBackend
from assay.rl_client.generate import Sample, SamplingParams
from assay.rl_client.policy import collate, token_logprobs
from assay.rl_client.runs.demo import EOS, PAD, CharTokenizer, build_model

PROMPTS = ["1+2=", "12+34=", "7+7=", "99+1="]  # different lengths: left padding is exercised


@pytest.fixture
def backend() -> HFBackend:
    tokenizer = CharTokenizer()
    return HFBackend(build_model(tokenizer, seed=0, width=32), tokenizer, seed=0)


def test_one_completion_per_prompt_with_prompt_ids(backend: HFBackend) -> None:
    outs = backend.generate(PROMPTS, SamplingParams(1.0, 5))
    assert len(outs) == len(PROMPTS)
    for prompt, out in zip(PROMPTS, outs, strict=True):
        assert out.prompt_ids == backend.tokenizer.encode(prompt)
        assert len(out.logprobs) == len(out.token_ids) <= 5
        assert out.truncated == (EOS not in out.token_ids)
        if EOS in out.token_ids:
            assert out.token_ids.index(EOS) == len(out.token_ids) - 1


def test_sampling_is_reproducible_from_the_seed_and_state(backend: HFBackend) -> None:
    state = backend.state_dict()
    first = [o.token_ids for o in backend.generate(PROMPTS * 4, SamplingParams(1.0, 5))]
    backend.load_state_dict(state)
    again = [o.token_ids for o in backend.generate(PROMPTS * 4, SamplingParams(1.0, 5))]
    assert first == again


def test_behaviour_logprobs_match_a_full_forward_pass(backend: HFBackend) -> None:
    outs = backend.generate(PROMPTS * 2, SamplingParams(0.7, 5))
    samples = [Sample(o, 0) for o in outs]
    batch = collate(samples, [0.0] * len(samples), PAD)
    with torch.no_grad():
        logp, _ = token_logprobs(backend.model, batch.input_ids, batch.attention_mask, 0.7)
    mask = torch.zeros_like(batch.mask)
    for i, o in enumerate(outs):
        start = len(o.prompt_ids) - 1
        mask[i, start : start + len(o.token_ids)] = 1
    diff = ((logp - batch.behaviour_logp) * mask).abs().max().item()
    assert diff < 1e-4


def test_greedy_decoding_is_deterministic_and_uses_no_randomness(backend: HFBackend) -> None:
    state = backend.generator.get_state()
    first = backend.generate(PROMPTS, SamplingParams(0.0, 4))
    assert torch.equal(backend.generator.get_state(), state)
    assert [o.token_ids for o in first] == [
        o.token_ids for o in backend.generate(PROMPTS, SamplingParams(0.0, 4))
    ]


def test_generation_restores_training_mode(backend: HFBackend) -> None:
    backend.model.train()
    backend.generate(PROMPTS, SamplingParams(1.0, 2))
    assert backend.model.training
