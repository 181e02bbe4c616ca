"""Drives multi-turn tool-use rollouts on `VLLMBackend` with a real vLLM (the CPU build in `.venv-vllm`)
for `test_rl_vllm_tools.py`:

    PYTHONPATH=src .venv-vllm/bin/python tests/rl_client/vllm_tools_driver.py MODEL_DIR WORK_DIR OUT_JSON

A random model never writes a tool call, so the driver first teaches the tiny chat model one trace by
heart (a few hundred supervised steps on `CALL`, the observation, `ANSWER`, each encoded as the rollout
will encode it), saves it, and serves that with vLLM. Then it runs `ToolRollouts` greedily and sampled
against a session client kept here (the tool prints "42"), records every generate call (its stop strings
and where each request stopped), the completions, the calls and verify requests the sessions saw, and
the log-probability of every response token under a transformers forward pass of the same weights. It
writes what it saw to OUT_JSON; the test makes the assertions.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from assay.client.sessions import OpenedSession, SessionStep
from assay.rl_client.backends.vllm import VLLMBackend
from assay.rl_client.config import GenerateConfig, ToolsConfig, TrainConfig
from assay.rl_client.generate import Completion, Problem, SamplingParams
from assay.rl_client.multiturn import ToolRollouts
from assay.rl_client.tokenizer import TextTokenizer
from assay.types import Result

QUESTION = "What is 6 * 7?"
CALL = "<python>print(6 * 7)</python>"
OBSERVATION = "<output>\n42\n</output>\n"
ANSWER = "The answer is 42."
SFT_STEPS = 200


class Sessions:
    """A session client whose python tool prints 42; it records what it was asked."""

    def __init__(self) -> None:
        self.opened = 0
        self.calls: list[dict[str, Any]] = []
        self.verified: list[str] = []
        self.closed: list[str] = []

    def open_session(self, item: Any, tools: Sequence[str], limits: Any = None) -> OpenedSession:
        self.opened += 1
        parameters = {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}
        schemas = [{"type": "function", "function": {"name": t, "parameters": parameters}} for t in tools]
        return OpenedSession(session_id=f"s{self.opened}", expires_at=0.0, tools=schemas)

    def step_many(self, calls: Sequence[Any]) -> list[SessionStep]:
        self.calls += [{"session": c.session_id, "tool": c.tool, "arguments": c.arguments} for c in calls]
        return [SessionStep(session_id=c.session_id, observation="42\n", status="ok", step=1) for c in calls]

    def verify_session(self, session_id: str, response: str) -> Result:
        self.verified.append(response)
        return Result.verdict("42" in response)

    def close_session(self, session_id: str) -> None:
        self.closed.append(session_id)


class Recording(VLLMBackend):
    """The backend under test, noting each `generate_ids` call's stop strings and outcomes."""

    log: ClassVar[list[dict[str, Any]]] = []

    def generate_ids(self, prompt_ids: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        outs = super().generate_ids(prompt_ids, params)
        self.log.append(
            {"stop": list(params.stop), "stopped": [o.stop for o in outs], "texts": [o.text for o in outs]}
        )
        return outs


def teach(model_dir: str, out_dir: Path, tok: TextTokenizer, prompt: str) -> Any:
    """Supervised steps on the whole trace until the model writes it greedily; saved to `out_dir`."""
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    ids = tok.encode(prompt)
    start = len(ids)
    for text in (CALL, OBSERVATION, ANSWER):
        ids += tok.encode_plain(text)
    ids.append(tok.eos_token_id)
    inputs = torch.tensor([ids])
    labels = inputs.clone()
    labels[0, :start] = -100
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(SFT_STEPS):
        loss = model(input_ids=inputs, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    model.save_pretrained(str(out_dir))
    tok.tokenizer.save_pretrained(str(out_dir))
    return model, float(loss.item())


def hf_logprobs(model: Any, prompt_ids: list[int], token_ids: list[int]) -> list[float]:
    ids = torch.tensor([prompt_ids + token_ids])
    with torch.no_grad():
        logits = model(ids).logits[0].float()
    logp = torch.log_softmax(logits[len(prompt_ids) - 1 : len(prompt_ids) - 1 + len(token_ids)], dim=-1)
    return [float(v) for v in logp.gather(1, torch.tensor(token_ids)[:, None])[:, 0]]


def main(model_dir: str, work: str, out_path: str) -> None:
    torch.set_num_threads(1)  # on a busy 2-core machine more threads ran many times slower
    raw = AutoTokenizer.from_pretrained(model_dir)
    tok = TextTokenizer(raw, add_special_tokens=False)
    prompt = raw.apply_chat_template([{"role": "user", "content": QUESTION}], tokenize=False,
                                     add_generation_prompt=True)  # fmt: skip
    taught_dir = Path(work) / "taught"
    model, sft_loss = teach(model_dir, taught_dir, tok, prompt)
    backend = Recording(str(taught_dir), seed=0, tokenizer=tok, enforce_eager=True,
                        distributed_executor_backend="uni", dtype="float32", max_model_len=256)  # fmt: skip
    cfg = TrainConfig(
        generate=GenerateConfig(group_size=4, max_new_tokens=40),
        tools=ToolsConfig(tools=("python",), max_turns=3, max_total_tokens=128),
    )
    sessions = Sessions()
    rollouts = ToolRollouts(backend, sessions, cfg)
    problem = Problem("q", prompt, "42")
    report: dict[str, Any] = {"sft_loss": sft_loss, "eos": tok.eos_token_id, "encoded": {}}
    for name, text in (("call", CALL), ("observation", OBSERVATION), ("answer", ANSWER)):
        report["encoded"][name] = tok.encode_plain(text)
    for name, temperature in (("greedy", 0.0), ("sampled", 1.0)):
        Recording.log = []
        groups = rollouts.sample_groups([problem], [4 if temperature else 1], 0, temperature=temperature)
        report[name] = {
            "generate_calls": Recording.log,
            "samples": [
                {
                    "token_ids": s.completion.token_ids,
                    "prompt_ids": s.completion.prompt_ids,
                    "mask": s.completion.action_mask,
                    "logprobs": s.completion.logprobs,
                    "hf_logprobs": hf_logprobs(model, s.completion.prompt_ids, s.completion.token_ids),
                    "text": s.completion.text,
                    "turns": s.completion.turns,
                    "tool_calls": s.completion.tool_calls,
                    "failure": s.completion.failure,
                    "reward": s.reward,
                }
                for s in groups[0].samples
            ],
        }
    report["sessions"] = {
        "opened": sessions.opened,
        "calls": sessions.calls,
        "verified": sessions.verified,
        "closed": sessions.closed,
    }
    Path(out_path).write_text(json.dumps(report))


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(f"usage: {sys.argv[0]} MODEL_DIR WORK_DIR OUT_JSON")
    main(sys.argv[1], sys.argv[2], sys.argv[3])
