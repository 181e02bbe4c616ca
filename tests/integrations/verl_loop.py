"""verl 0.9.1's own `ToolAgentLoop`, driven with a scripted LLM: what the verl tests and
benchmarks/verl_tools.py run.

Only the LLM is scripted (`ScriptedServer.generate` returns the token ids of text holding Hermes
`<tool_call>` blocks); the agent loop, its Hermes parser, its chat-template tokenization, its
`_call_tool` and the tool (loaded from a tool-config YAML by `initialize_tools_from_config`) are verl's
and Assay's own. The tokenizer is tests/tiny_models.py's byte-level BPE with a Qwen-like chat template
that renders tools, tool calls and tool messages (no hub download).

The script of trajectory `t` in step `s`: call A `assert 'x' not in globals(); x = V` then call B
`print(x)` (in one turn with `max_parallel_calls: 2`, in two turns with 1), then a final turn that
answers `\\boxed{V}`, V = 1000 * s + t. Right observations are "" for A and "V\\n" for B: a trajectory
split over two interpreters sees a NameError, one that lands in an earlier one an AssertionError.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tiny_models import build_tokenizer

TEMPLATE = (
    "{%- if tools %}<|im_start|>system\n<tools>"
    "{%- for tool in tools %}\n{{ tool | tojson }}{%- endfor %}\n</tools><|im_end|>\n{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'tool' %}"
    "<|im_start|>user\n<tool_response>\n{{ message['content'] }}\n</tool_response><|im_end|>\n"
    "{%- elif message['role'] == 'assistant' %}<|im_start|>assistant\n{{ message['content'] }}"
    "{%- for call in message.get('tool_calls') or [] %}<tool_call>\n"
    '{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}\n'
    "</tool_call>{%- endfor %}<|im_end|>\n"
    "{%- else %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)
RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.DOTALL)


def tokenizer(directory: Path) -> Any:
    tok = build_tokenizer(directory)
    tok.chat_template = TEMPLATE
    return tok


def value(step: int, trajectory: int) -> int:
    return 1000 * step + trajectory


def _call(code: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "python", "arguments": {"code": code}}) + "\n</tool_call>"


class ScriptedServer:
    """`server_manager.generate` of a scripted policy: the turn is read off the prompt so far."""

    def __init__(self, tok: Any, parallel: int, answer_in_tool: bool = False) -> None:
        self.tok = tok
        self.parallel = parallel
        self.answer_in_tool = answer_in_tool

    def text(self, prompt: str) -> str:
        step, trajectory = map(int, re.findall(r"step (\d+) trajectory (\d+)", prompt)[0])
        v = value(step, trajectory)
        calls = [_call(f"assert 'x' not in globals(); x = {v}"), _call("print(x)")]
        if self.answer_in_tool:  # the tool prints the answer; the model never writes one
            printed = _call(f"print(chr(92) + 'boxed{{%d}}' % ({v} * 1))")
            return "Let me run it." + printed if "<tool_response>" not in prompt else "Done."
        turn = prompt.count("<tool_response>") // (2 if self.parallel >= 2 else 1)
        if self.parallel >= 2:
            return "Two cells." + "".join(calls) if turn == 0 else f"The answer is \\boxed{{{v}}}."
        if turn < 2:
            return "A cell." + calls[turn]
        return f"The answer is \\boxed{{{v}}}."

    async def generate(self, *, prompt_ids: list[int], **_: Any) -> Any:
        from verl.workers.rollout.replica import TokenOutput

        text = self.text(self.tok.decode(prompt_ids))
        return TokenOutput(token_ids=self.tok.encode(text + "<|im_end|>"), stop_reason="completed")


def tools_yaml(directory: Path, url: str, **config: Any) -> Path:
    path = directory / "tools.yaml"
    extra = "".join(f", {key}: {json.dumps(val)}" for key, val in config.items())
    path.write_text(
        "tools:\n"
        "  - class_name: assay.integrations.verl_tools.AssaySessionTool\n"
        f"    config: {{type: native, url: '{url}', tool: python{extra}}}\n"
    )
    return path


def agent_loop(
    tok: Any, tools_path: Path, parallel: int, determinism: bool, answer_in_tool: bool = False
) -> Any:
    """verl's `ToolAgentLoop` with the tools of `tools_path` and a scripted server."""
    from omegaconf import OmegaConf
    from verl.experimental.agent_loop.agent_loop import DictConfigWrap, ToolListWrap
    from verl.experimental.agent_loop.tool_agent_loop import ToolAgentLoop
    from verl.tools.tool_registry import initialize_tools_from_config

    rollout = {
        "prompt_length": 4096,
        "response_length": 4096,
        "full_determinism": determinism,
        "multi_turn": {
            "format": "hermes",
            "max_parallel_calls": parallel,
            "max_user_turns": 8,
            "max_assistant_turns": 8,
            "max_tool_response_length": 256,
            "tool_response_truncate_side": "middle",
        },
    }
    config = OmegaConf.create({"actor_rollout_ref": {"rollout": rollout}})
    return ToolAgentLoop(
        trainer_config=DictConfigWrap(config),
        server_manager=ScriptedServer(tok, parallel, answer_in_tool),
        tokenizer=tok,
        processor=None,
        dataset_cls=None,
        data_config=DictConfigWrap(OmegaConf.create({})),
        tools=ToolListWrap(initialize_tools_from_config(str(tools_path))),
    )


def prompt(step: int, trajectory: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"step {step} trajectory {trajectory}: compute V."}]


async def run_step(loop: Any, step: int, trajectories: int) -> list[Any]:
    """One step: every trajectory's `run`, concurrently, with its priority as verl gives it."""
    import asyncio

    item = {"task": "math", "reference": "0"}
    runs = [
        loop.run(
            {"temperature": 1.0},
            priority=t,
            raw_prompt=prompt(step, t),
            tools_kwargs={"python": {"create_kwargs": {"item": item}}},
        )
        for t in range(trajectories)
    ]
    return list(await asyncio.gather(*runs))


def observations(tok: Any, output: Any) -> list[str]:
    """The tool responses the policy saw, read back from the trajectory's tokens."""
    return RESPONSE.findall(tok.decode(output.response_ids))


def expected(step: int, trajectory: int) -> list[str]:
    return ["", f"{value(step, trajectory)}\n"]


async def run_step_and_release(loop: Any, tok: Any, step: int, trajectories: int) -> None:
    """One step (`run_step`) in which every trajectory saw exactly its own observations; then the
    trajectories end as verl ends them (their AgentData dropped) and the tool has closed their sessions."""
    outputs = await run_step(loop, step, trajectories)
    seen = [observations(tok, output) for output in outputs]
    wrong = [(t, s) for t, s in enumerate(seen) if s != expected(step, t)]
    assert not wrong, wrong[:3]
    del outputs
    await loop.tools["python"].wait_closed()
