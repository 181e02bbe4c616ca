"""The TRL environment inside TRL 1.16's own `GRPOTrainer`, at the scale of a generation batch (issue 38).

The trainer is TRL's, built on a tiny model made here (tests/tiny_models.py, with TRL's own Qwen3 chat
template so TRL parses the tool calls itself); only the model's generation is scripted
(`_generate_single_turn`). Everything else is TRL's `_generate_and_score_completions`, the call its
`training_step` makes per generation batch: the environment pool, `reset` of every environment in one
thread, `_generate`, `_tool_call_loop` (sync tools called one after another), and the rewards, here
`AssayReward`.

The script of rollout `t` in batch `s`: call A `assert 'x' not in globals(); x = V`, then call B
`print(x)`, then the answer `\\boxed{V}`, V = 1000 * s + t. Right observations are "" and "V\\n": a
rollout sent to another rollout's interpreter, or to one left from the batch before, sees an
AssertionError or the wrong V; one whose call failed sees TRL's `{'error': ...}`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pytest
from assay_testing import LiveServer
from session_testing import live_sessions
from tiny_models import build_tokenizer, qwen2_config

from assay.integrations.clients import RolloutAborted
from assay.integrations.trl import AssayReward
from assay.integrations.trl_env import AssayEnv, end_sessions

# Two batches of 256 rollouts are 512 sandbox starts: about 30 s on 2 cores, plus importing TRL.
pytestmark = pytest.mark.slow

ROLLOUTS = 256
FULL_AT = 64  # a server that allows fewer sessions than the batch has rollouts
RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.DOTALL)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    yield from live_sessions(max_open=ROLLOUTS)  # one session per rollout, no more


@pytest.fixture(scope="module")
def small_server() -> Iterator[LiveServer]:
    yield from live_sessions(max_open=FULL_AT)


def _call(code: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "python", "arguments": {"code": code}}) + "\n</tool_call>"


class ScriptedPolicy:
    """`_generate_single_turn` of a scripted policy: each turn is read off the prompt so far, and the
    tool responses a rollout was shown are recorded when it answers."""

    def __init__(self, tok: Any) -> None:
        self.tok = tok
        self.seen: dict[tuple[int, int], list[str]] = {}
        self.turns = 0

    def __call__(self, prompt_ids: list[list[int]], *_: Any, **__: Any) -> tuple[list[list[int]], None]:
        self.turns += 1
        return [self.tok.encode(self.text(self.tok.decode(ids)) + "<|im_end|>") for ids in prompt_ids], None

    def text(self, prompt: str) -> str:
        batch, rollout = map(int, re.findall(r"batch (\d+) rollout (\d+)", prompt)[0])
        value = 1000 * batch + rollout
        shown = RESPONSE.findall(prompt)
        if not shown:
            return "A cell." + _call(f"assert 'x' not in globals(); x = {value}")
        if len(shown) == 1:
            return "Another." + _call("print(x)")
        self.seen[batch, rollout] = shown
        return f"The answer is \\boxed{{{value}}}."


def _rows(batch: int) -> list[dict[str, Any]]:
    """A generation batch: one row per rollout, as TRL's sampler hands them to the trainer."""
    return [
        {
            "prompt": [{"role": "user", "content": f"batch {batch} rollout {t}: compute V."}],
            "task": "math",
            "reference": str(1000 * batch + t),
            "answer": str(1000 * batch + t),
        }
        for t in range(ROLLOUTS)
    ]


def _trainer(tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, ScriptedPolicy]:
    """TRL's GRPOTrainer with `environment_factory=AssayEnv`, its generation scripted."""
    import torch
    from datasets import Dataset
    from transformers import Qwen2ForCausalLM
    from trl import GRPOConfig, GRPOTrainer
    from trl.chat_template_utils import qwen3_chat_template

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    tok = build_tokenizer(tmp_path / "tokenizer")
    tok.chat_template = qwen3_chat_template  # one TRL knows: it sets the tool-call parser itself
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(qwen2_config(tok, 4096, tie_word_embeddings=True))
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=ROLLOUTS,
        num_generations=8,
        max_completion_length=1024,
        use_cpu=True,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(
        model=model,
        args=args,
        processing_class=tok,
        train_dataset=Dataset.from_list(_rows(0)),
        reward_funcs=[AssayReward(url)],
        environment_factory=partial(AssayEnv, url),
    )
    policy = ScriptedPolicy(tok)
    monkeypatch.setattr(trainer, "_generate_single_turn", policy)
    return trainer, policy


def _sandboxes() -> int:
    """Processes of this test's sessions: bubblewrap's and what runs under it."""
    return sum(
        any(p.name() == "bwrap" for p in [child, *child.parents()])
        for child in psutil.Process().children(recursive=True)
    )


def test_two_batches_of_256_rollouts_in_trls_own_trainer(
    server: LiveServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer, policy = _trainer(tmp_path, server.url, monkeypatch)
    baseline = _sandboxes()
    pools = []
    for batch in (1, 2):
        trainer._generate_and_score_completions(_rows(batch))
        wrong = {
            t: policy.seen.get((batch, t))
            for t in range(ROLLOUTS)
            if policy.seen.get((batch, t)) != ["", f"{1000 * batch + t}\n"]
        }
        assert not wrong, list(wrong.items())[:3]
        metrics = trainer._metrics["train"]
        assert metrics["tools/failure_frequency"][-1] == 0.0  # no call raised into TRL's handler
        assert metrics["rewards/assay_math/mean"][-1] == 1.0  # every rollout scored, by Assay
        assert server.engine.sessions.open_count == 0  # AssayReward ended every rollout's session
        assert _sandboxes() == baseline
        pools.append(list(trainer.environments))
    assert all(a is b for a, b in zip(*pools, strict=True))  # the second batch reused the environments


def test_a_server_full_of_this_processs_own_sessions_fails_the_step_at_once(
    small_server: LiveServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trainer, policy = _trainer(tmp_path, small_server.url, monkeypatch)
    started = time.monotonic()
    held = f"allows {FULL_AT} open sessions and this process holds {FULL_AT}"
    with pytest.raises(RolloutAborted, match=held):
        trainer._generate_and_score_completions(_rows(1))
    assert time.monotonic() - started < 60  # it did not wait out open_wait_s (600 s)
    assert policy.turns == 1 and not policy.seen  # the policy was shown no tool output at all
    assert small_server.engine.sessions.open_count == FULL_AT
    end_sessions(trainer.environments)  # what the next reset, or dropping the trainer, does
    assert small_server.engine.sessions.open_count == 0
