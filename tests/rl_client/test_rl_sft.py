"""The one SFT step (`runs/sft.py`): a target's masked spans take no loss, and the tools demo's warm-up
(`demo_tools.sft`), now built on `sft_step`, trains bit for bit as its own loop did before (issue 24)."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch

from assay.rl_client.generate import Problem
from assay.rl_client.runs import demo_tools
from assay.rl_client.runs.demo import EOS, CharTokenizer
from assay.rl_client.runs.demo_tools import ALPHABET, problems, trace
from assay.rl_client.runs.models import TextTokenizer, build_char_model, char_tokenizer
from assay.rl_client.runs.sft import batch_tensors, sft_step


def old_demo_tools_sft(
    model: Any, tok: Any, traces: Sequence[Problem], steps: int, seed: int, losses: list[float]
) -> float:
    """REFERENCE, NOT PRODUCT CODE: `demo_tools.sft` as it was before it called `sft_step` (commit
    63cf647), kept verbatim but for `losses`, which records every step's loss."""
    eos, pad = tok.eos_token_id, tok.pad_token_id
    rows = []
    for p in traces:
        call, obs, answer = trace(p)
        ids = tok.encode(p.prompt)
        labels = [-100] * len(ids)
        for text, learn in ((call, True), (obs, False), (answer, True)):
            part = tok.encode_plain(text)
            ids += part
            labels += part if learn else [-100] * len(part)
        rows.append(([*ids, eos], [*labels, eos]))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = random.Random(seed)
    loss_value = 0.0
    model.train()
    for _ in range(steps):
        batch = [rng.choice(rows) for _ in range(32)]
        width = max(len(r[0]) for r in batch)
        inputs = torch.full((len(batch), width), pad)
        targets = torch.full((len(batch), width), -100)
        for i, (row, lab) in enumerate(batch):
            inputs[i, : len(row)] = torch.tensor(row)
            targets[i, : len(lab)] = torch.tensor(lab)
        logits = model(input_ids=inputs, attention_mask=(inputs != pad).long()).logits[:, :-1]
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets[:, 1:].reshape(-1)
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        loss_value = float(loss.item())
        losses.append(loss_value)
    model.eval()
    return loss_value


class PadIsEos(CharTokenizer):
    """A tokenizer whose pad id is its end id (what `TextTokenizer` falls back to without a pad token)."""

    pad_token_id = EOS


TOKENIZERS: dict[str, Callable[[], tuple[Any, Any]]] = {
    "char": lambda: (CharTokenizer(ALPHABET), CharTokenizer(ALPHABET)),
    "transformers": lambda: (lambda raw: (raw, TextTokenizer(raw)))(char_tokenizer(alphabet=ALPHABET)),
    "pad-is-eos": lambda: (PadIsEos(ALPHABET), PadIsEos(ALPHABET)),
}


def _model(raw: Any, seed: int) -> Any:
    return build_char_model(raw, seed, width=64, layers=2, positions=96)


def _new_sft(monkeypatch: pytest.MonkeyPatch, model: Any, tok: Any, traces: Sequence[Problem],
             steps: int, seed: int) -> tuple[float, list[float]]:  # fmt: skip
    """`demo_tools.sft`, with every `sft_step` loss it sees recorded."""
    losses: list[float] = []

    def recorded(*args: Any) -> float:
        losses.append(sft_step(*args))
        return losses[-1]

    monkeypatch.setattr(demo_tools, "sft_step", recorded)
    return demo_tools.sft(model, tok, traces, steps, seed), losses


@pytest.mark.parametrize("kind", sorted(TOKENIZERS))
def test_the_tools_sft_gives_the_old_loops_weights_and_losses_bit_for_bit(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw, tok = TOKENIZERS[kind]()
    traces = problems(64, random.Random(3))
    old_model, new_model = _model(raw, 7), _model(raw, 7)
    old_losses: list[float] = []
    old_last = old_demo_tools_sft(old_model, tok, traces, 6, 11, old_losses)
    new_last, new_losses = _new_sft(monkeypatch, new_model, tok, traces, 6, 11)
    assert new_losses == old_losses and new_last == old_last == old_losses[-1]
    assert len(set(old_losses)) == 6  # it trained: every step's loss differs
    old_weights, new_weights = old_model.state_dict(), new_model.state_dict()
    assert old_weights.keys() == new_weights.keys()
    assert all(torch.equal(old_weights[name], new_weights[name]) for name in old_weights)
    assert not new_model.training
    fresh = _model(raw, 7).state_dict()
    assert not all(torch.equal(fresh[name], new_weights[name]) for name in fresh)  # the weights moved


def _logit_grads(model: Any) -> list[torch.Tensor]:
    """Collects d loss / d logits of every backward pass through `model`'s output layer."""
    grads: list[torch.Tensor] = []

    def watch(_module: Any, _inputs: Any, logits: torch.Tensor) -> None:
        logits.register_hook(grads.append)

    model.lm_head.register_forward_hook(watch)
    return grads


def _learned_positions(tok: Any, drawn: Sequence[Problem], width: int) -> torch.Tensor:
    """Where each row's logits predict a token the policy wrote (the call, the answer, the end), worked
    out from the trace's parts: position t predicts token t + 1."""
    expected = torch.zeros((len(drawn), width), dtype=torch.bool)
    for i, p in enumerate(drawn):
        call, obs, answer = (len(tok.encode_plain(text)) for text in trace(p))
        start = len(tok.encode(p.prompt))
        expected[i, start - 1 : start - 1 + call] = True
        answer_start = start + call + obs
        expected[i, answer_start - 1 : answer_start + answer] = True  # the answer and the end token
    return expected


@pytest.mark.parametrize("kind", ["char", "transformers"])
def test_only_the_policys_tokens_carry_gradient_old_and_new_alike(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The prompt, the observation and the padding take no loss; the call, the answer and the end token
    do; the old loop and the new one send the same gradient into the logits."""
    raw, tok = TOKENIZERS[kind]()
    traces = problems(64, random.Random(5))
    old_model, new_model = _model(raw, 2), _model(raw, 2)
    old_grads, new_grads = _logit_grads(old_model), _logit_grads(new_model)
    old_demo_tools_sft(old_model, tok, traces, 1, 13, [])
    _new_sft(monkeypatch, new_model, tok, traces, 1, 13)
    ((old,), (new,)) = old_grads, new_grads
    assert torch.equal(old, new)
    rng = random.Random(13)
    drawn = [rng.choice(traces) for _ in range(32)]  # the rows `sft` drew: its rng, its batch of 32
    carries = new[:, :-1].abs().sum(-1) > 0  # the last position predicts nothing (logits[:, :-1])
    assert torch.equal(carries, _learned_positions(tok, drawn, new.shape[1])[:, :-1])


def test_a_masked_pair_labels_only_its_learned_target_tokens() -> None:
    prompt, target = [1, 5, 6], [7, 8, 9, 10, 2]
    learn = [True, False, False, True, True]
    ids, attention, labels = batch_tensors([(prompt, target, learn), ([1, 5], [9, 2])], 0)
    assert ids.tolist() == [[1, 5, 6, 7, 8, 9, 10, 2], [1, 5, 9, 2, 0, 0, 0, 0]]
    assert attention.tolist() == [[1] * 8, [1] * 4 + [0] * 4]
    assert labels.tolist() == [[-100, -100, -100, 7, -100, -100, 10, 2], [-100, -100, 9, 2] + [-100] * 4]


def test_a_pair_and_its_all_learned_masked_pair_give_the_same_batch() -> None:
    pairs = [([1, 4], [5, 6, 2]), ([1], [7, 2]), ([1, 3, 3, 3], [2])]
    masked = [(p, t, [True] * len(t)) for p, t in pairs]
    for plain, flagged in zip(batch_tensors(pairs, 0), batch_tensors(masked, 0), strict=True):
        assert torch.equal(plain, flagged)


def test_a_learn_mask_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="2 flags for 3 target tokens"):
        batch_tensors([([1], [4, 5, 2], [True, True])], 0)
