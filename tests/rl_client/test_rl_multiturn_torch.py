"""Multi-turn rollouts with torch: observation tokens carry no gradient, the hf backend stops at stop
strings, and a trainer step against a live server with real python sessions."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from assay_testing import LiveServer, bwrap_works
from session_testing import session_settings

from assay.client import AssayClient
from assay.rl_client.backends.hf import HFBackend
from assay.rl_client.config import ControlConfig, GenerateConfig, ToolsConfig, TrainConfig
from assay.rl_client.filter import ServiceRewards
from assay.rl_client.generate import Completion, Problem, Sample, SamplingParams
from assay.rl_client.loss import policy_loss
from assay.rl_client.policy import collate, token_logprobs
from assay.rl_client.runs.demo import PAD, CharTokenizer
from assay.rl_client.runs.models import build_char_model
from assay.rl_client.trainer import Trainer
from rl_client.multiturn_testing import TurnBackend, tokenizer

CALL = "I will run it. <python>print(6*7)</python>"


def _sample(tokens: list[int], mask: list[int] | None, prompt: list[int]) -> Sample:
    return Sample(Completion(prompt, tokens, "", [0.0] * len(tokens), False, action_mask=mask), 0)


def _grads(model: Any, samples: list[Sample]) -> tuple[list[torch.Tensor], torch.Tensor]:
    model.zero_grad(set_to_none=True)
    batch = collate(samples, [1.0] * len(samples), PAD)
    logp, _ = token_logprobs(model, batch.input_ids, batch.attention_mask, 1.0)
    logp.retain_grad()
    parts = policy_loss(logp, logp.detach(), batch.advantages, batch.mask, TrainConfig().loss, 64)
    parts.loss.backward()
    assert logp.grad is not None
    return [p.grad.detach().clone() for p in model.parameters() if p.grad is not None], logp.grad


@pytest.fixture(scope="module")
def model() -> Any:
    return build_char_model(tokenizer(), seed=0, width=32, layers=1, positions=128)


def test_perturbing_observation_tokens_does_not_change_the_gradient(model: Any) -> None:
    tok = tokenizer()
    prompt = tok.encode("Q: 6*7? ")
    action = tok.encode_plain(CALL)
    obs = tok.encode_plain("<output>\n42\n</output>\n")
    gen = torch.Generator().manual_seed(0)
    other = torch.randint(3, tok.vocab_size, (len(obs),), generator=gen).tolist()  # any other tokens
    assert obs != other
    mask = [1] * len(action) + [0] * len(obs)
    first, _ = _grads(model, [_sample(action + obs, mask, prompt)])
    again, _ = _grads(model, [_sample(action + other, mask, prompt)])
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    assert any(g.abs().sum() > 0 for g in first)  # there is a gradient to compare
    # the same perturbation without the mask does change it: the test can fail
    unmasked, _ = _grads(model, [_sample(action + obs, None, prompt)])
    unmasked_other, _ = _grads(model, [_sample(action + other, None, prompt)])
    assert not all(torch.equal(a, b) for a, b in zip(unmasked, unmasked_other, strict=True))


def test_an_observation_mid_response_gets_no_gradient_and_the_answer_after_it_does(model: Any) -> None:
    tok = tokenizer()
    prompt = tok.encode("Q ")
    action, obs, answer = (
        tok.encode_plain(CALL),
        tok.encode_plain("<output>\n42\n</output>\n"),
        tok.encode_plain("\\boxed{42}"),
    )
    mask = [1] * len(action) + [0] * len(obs) + [1] * len(answer)
    _, grad = _grads(model, [_sample(action + obs + answer, mask, prompt)])
    start = len(prompt) - 1 + len(action)
    assert grad[0, start : start + len(obs)].abs().sum() == 0
    assert (grad[0, start + len(obs) : start + len(obs) + len(answer)].abs() > 0).all()
    assert (grad[0, len(prompt) - 1 : start].abs() > 0).all()


def test_hf_backend_stops_at_a_stop_string_and_keeps_its_token() -> None:
    tok = CharTokenizer("ab")
    backend = HFBackend(build_char_model(tok, seed=1, width=16, layers=1, positions=64), tok, seed=0)
    outs = backend.generate(["a"] * 64, SamplingParams(1.0, 24, stop=("ab",)))
    stopped = [o for o in outs if o.stop == "ab"]
    assert stopped  # rule-blind: the sampler hits "ab" somewhere in 64 rows of 24 tokens
    for out in outs:
        text = tok.decode(out.token_ids)
        if out.stop == "ab":
            assert text.endswith("ab") and "ab" not in text[:-1] and not out.truncated
        else:
            assert "ab" not in text
        assert len(out.logprobs) == len(out.token_ids)
    # the behaviour log-probabilities of stopped rows agree with a full forward pass
    samples = [Sample(o, 0) for o in stopped]
    batch = collate(samples, [0.0] * len(samples), PAD)
    with torch.no_grad():
        logp, _ = token_logprobs(backend.model, batch.input_ids, batch.attention_mask, 1.0)
    assert ((logp - batch.behaviour_logp) * batch.mask).abs().max().item() < 1e-4


def test_generate_ids_continues_a_response_from_its_tokens() -> None:
    tok = tokenizer()
    model = build_char_model(tok, seed=0, width=32, layers=1, positions=128)
    backend = HFBackend(model, tok, seed=0)
    prefix = tok.encode("Q ") + tok.encode_plain("<output>\n1\n</output>\n")
    out = backend.generate_ids([prefix], SamplingParams(0.0, 8))[0]
    whole = backend.generate_ids([prefix], SamplingParams(0.0, 8))[0]
    assert out.prompt_ids == prefix and out.token_ids == whole.token_ids  # greedy: the same continuation


# -- against a live server with python sessions ---------------------------------------------------
@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    live = LiveServer(session_settings(max_open=16))
    live.start()
    yield live
    live.stop()


def _answer_from_output(text: str) -> str:
    printed = re.findall(r"<output>\n(.*?)</output>", text, re.DOTALL)
    return f"\\boxed{{{printed[-1].strip() if printed else ''}}}"


@pytest.mark.slow
def test_a_trainer_step_with_real_python_sessions(server: LiveServer) -> None:
    scripts = {
        # a policy that calls the tool and copies what it printed: right about half the time
        "Q: 6*7? ": ["<python>import random\nprint(random.choice([42, 41]))</python>", _answer_from_output],
        # a policy whose code kills its own interpreter: the session ends, it must answer, verify works
        "Q: 5*8? ": ["<python>import os\nos._exit(3)</python>", "\\boxed{40}"],
    }
    backend = TurnBackend(scripts)
    problems = [Problem("a", "Q: 6*7? ", "42"), Problem("b", "Q: 5*8? ", "40")]
    cfg = TrainConfig(
        steps=1,
        generate=GenerateConfig(group_size=4, max_new_tokens=96),
        control=ControlConfig(prompts_per_step=2, dynamic_sampling=False),
        tools=ToolsConfig(tools=("python",), max_turns=3, limits={"max_steps": 4}),
    )
    model = build_char_model(backend.tokenizer, seed=0, width=32, layers=1, positions=256)
    with AssayClient(server.url) as sessions:
        trainer = Trainer(
            model, backend, ServiceRewards.at(server.url), problems, cfg, pad_id=PAD, sessions=sessions
        )
        try:
            groups = trainer.rollout.generate_scored(problems, [4, 4], 0)
            record = trainer.train_step()
        finally:
            trainer.close()
    by_id = {g.problem.id: g for g in groups}
    for sample in by_id["a"].samples:
        c = sample.completion
        printed = _answer_from_output(backend.tokenizer.decode(c.token_ids))
        assert sample.reward == (1.0 if printed == "\\boxed{42}" else 0.0)  # Assay's verdict of the answer
        assert (c.turns, c.tool_calls, c.failure) == (2, 1, None)
    for sample in by_id["b"].samples:
        assert sample.completion.tool_errors == 1 and sample.reward == 1.0  # verify after the death
    assert record["turns"] == 2.0 and record["tool_calls"] == 8.0 and record["session_failures"] == 0.0
    assert record["tool_errors"] in (0.0, 4.0, 8.0) and math.isfinite(record["loss"])
    assert not server.engine.sessions.manager._sessions  # every rollout's session was deleted


def test_dynamic_sampling_and_replay_work_on_multi_turn_groups() -> None:
    from assay.client.sessions import SessionStep
    from assay.rl_client.replay import ReplayBuffer
    from rl_client.multiturn_testing import FakeSessions

    printed = iter(["42\n", "41\n"] * 100)  # alternate: every group of 2 has one right, one wrong

    def observe(code: str) -> SessionStep:
        return SessionStep(session_id="", observation=next(printed), status="ok", step=1)

    scripts = {"Q: 6*7? ": [CALL, _answer_from_output], "Q: 1*1? ": ["\\boxed{42}"]}  # the 2nd: all right
    backend = TurnBackend(scripts)
    problems = [Problem("a", "Q: 6*7? ", "42"), Problem("b", "Q: 1*1? ", "42")]
    cfg = TrainConfig(
        steps=1,
        generate=GenerateConfig(group_size=2, max_new_tokens=64),
        control=ControlConfig(prompts_per_step=2, dynamic_sampling=True, max_rounds=2),
        tools=ToolsConfig(tools=("python",), max_turns=2),
    )
    model = build_char_model(backend.tokenizer, seed=0, width=32, layers=1, positions=256)
    trainer = Trainer(model, backend, ServiceRewards.at("http://127.0.0.1:9"), problems, cfg, pad_id=PAD,
                      sessions=FakeSessions(observe))  # fmt: skip
    try:
        record = trainer.train_step()
        kept = record["groups_kept"]
        assert record["groups_seen"] >= kept and kept >= 1
        seen = trainer.replay.state_dict()
    finally:
        trainer.close()
    buffer = ReplayBuffer(cfg.replay)
    buffer.load_state_dict(seen)
    again = buffer.state_dict()
    assert again == seen  # multi-turn completions (action mask, turns) survive a checkpoint
    masks = [s["completion"]["action_mask"] for g in again["groups"] for s in g["samples"]]
    assert masks and all(m is not None for m in masks) and any(0 in m for m in masks)


def test_a_vllm_server_choice_stopped_on_a_stop_string_gets_no_end_token() -> None:
    from assay.rl_client.runs.vllm_server import TOKEN_PREFIX, to_completion

    logprobs = {"tokens": [f"{TOKEN_PREFIX}7", f"{TOKEN_PREFIX}8"], "token_logprobs": [-0.1, -0.2]}
    stopped = {
        "text": "x</python>",
        "finish_reason": "stop",
        "stop_reason": "</python>",
        "logprobs": logprobs,
    }
    out = to_completion([1], stopped, eos=2)
    assert (out.token_ids, out.stop, out.truncated) == ([7, 8], "</python>", False)
    ended = {
        "text": "x",
        "finish_reason": "stop",
        "stop_reason": None,
        "logprobs": dict(logprobs, token_logprobs=[-0.1, -0.2]),
    }
    assert to_completion([1], ended, eos=2).token_ids == [7, 8, 2]  # the end token, as before


def test_a_server_that_dies_mid_rollout_masks_the_rollouts_never_a_zero() -> None:
    """The service goes away between a rollout's tool call and its next turn: the rollouts that needed
    it have no verdict (error, reward None, weight 0), instead of a reward of 0."""
    from assay.rl_client.multiturn import ToolRollouts

    if not bwrap_works():
        pytest.skip("bubblewrap cannot run here")
    live = LiveServer(session_settings(max_open=8))
    live.start()
    stopped = False

    def die_then_answer(text: str) -> str:
        nonlocal stopped
        if not stopped:
            live.stop()  # the whole server: its sessions end with it
            stopped = True
        return "\\boxed{42}"

    backend = TurnBackend({"Q: 6*7? ": ["<python>print(6*7)</python>", die_then_answer]})
    cfg = TrainConfig(
        generate=GenerateConfig(group_size=2, max_new_tokens=64),
        tools=ToolsConfig(tools=("python",), max_turns=3),
    )
    try:
        with AssayClient(live.url, max_retries=1, backoff_s=0.01) as client:
            groups = ToolRollouts(backend, client, cfg).sample_groups(
                [Problem("a", "Q: 6*7? ", "42")], [2], 0
            )
    finally:
        live.stop()
    assert stopped
    for sample in groups[0].samples:
        assert sample.completion.tool_calls == 1  # the call ran before the server died
        assert sample.result is not None and sample.result.status.value == "error"
        assert (
            sample.reward is None
            and sample.weight == 0.0
            and "verify failed" in str(sample.completion.failure)
        )


def test_reward_latency_of_a_tool_run_measures_its_verify_calls() -> None:
    """With tools the verdicts come from the sessions' verify, not the reward pipe (whose latency list
    stays empty): the step's reward_latency_s and reward_wait_s are those calls' (they read 0 before)."""
    import threading

    from rl_client.multiturn_testing import FakeSessions

    class SlowVerify(FakeSessions):
        def verify_session(self, session_id: str, response: str) -> Any:
            threading.Event().wait(0.02)  # a verify that takes at least 20 ms
            return super().verify_session(session_id, response)

    sessions = SlowVerify()
    backend = TurnBackend({"Q: 6*7? ": [CALL, "\\boxed{42}"]})
    cfg = TrainConfig(
        steps=1,
        generate=GenerateConfig(group_size=2, max_new_tokens=64),
        control=ControlConfig(prompts_per_step=1, dynamic_sampling=False),
        tools=ToolsConfig(tools=("python",), max_turns=2),
    )
    model = build_char_model(backend.tokenizer, seed=0, width=32, layers=1, positions=256)
    problems = [Problem("a", "Q: 6*7? ", "42")]
    trainer = Trainer(model, backend, ServiceRewards.at("http://127.0.0.1:9"), problems, cfg, pad_id=PAD,
                      sessions=sessions)  # fmt: skip
    try:
        record = trainer.train_step()
        tools = trainer.rollout.tools
        assert tools is not None and len(tools.latencies) == len(sessions.verified) == 2
    finally:
        trainer.close()
    assert trainer.pipe.latencies == []  # nothing went through the reward pipe
    assert record["reward_latency_s"] >= 0.02
    assert record["reward_latency_s"] == pytest.approx(sum(tools.latencies) / 2)
    assert record["reward_wait_s"] >= 0.02  # the two verify calls run side by side: at least one's time
