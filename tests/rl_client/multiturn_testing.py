"""Stand-ins for the multi-turn tests: a printable-character tokenizer, a backend that plays a script
turn by turn (as a policy that calls tools would), and a session client that records what it is asked."""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from typing import Any

from assay.client.sessions import OpenedSession, SessionStep, ToolCall
from assay.rl_client.generate import Completion, SamplingParams
from assay.rl_client.runs.demo import CharTokenizer
from assay.types import Result
from rl_client.fakes import StatelessBackend

PRINTABLE = "".join(c for c in string.printable if c not in "\x0b\x0c\r")


def tokenizer() -> CharTokenizer:
    return CharTokenizer(PRINTABLE)


def tool_schema(name: str, argument: str = "code") -> dict[str, Any]:
    """A one-argument tool as a session describes it when it opens (OpenAI function-tool form)."""
    parameters = {"type": "object", "properties": {argument: {"type": "string"}}, "required": [argument]}
    return {"type": "function", "function": {"name": name, "description": name, "parameters": parameters}}


ARGUMENTS = {"python": "code", "sql": "query", "run_tests": "code"}  # what the server's tools take


class TurnBackend(StatelessBackend):
    """Plays `scripts[prompt][turn]` for each row (turn: observations seen so far), honouring stop
        strings and the token limit as a real backend does; a script entry may be a function of the text so
    far (the policy reading the observation). Behaviour log-probabilities are -1.0."""

    def __init__(self, scripts: dict[str, list[Any]], tok: Any = None, marker: str = "</output>") -> None:
        self.tokenizer = tok if tok is not None else tokenizer()
        self.scripts = scripts
        self.marker = marker  # what ends an observation: the turn is how many the text holds
        self.calls: list[SamplingParams] = []

    def generate_ids(self, prompt_ids: Sequence[list[int]], params: SamplingParams) -> list[Completion]:
        self.calls.append(params)
        out = []
        for ids in prompt_ids:
            text = self.tokenizer.decode(list(ids))
            prompt = next(p for p in self.scripts if text.startswith(p))
            turn = text.count(self.marker)
            script = self.scripts[prompt]
            segment = script[min(turn, len(script) - 1)]
            if callable(segment):  # a policy that reads what the tool printed
                segment = segment(text)
            stop = next((s for s in params.stop if s in segment), None)
            if stop is not None:
                segment = segment[: segment.index(stop) + len(stop)]
            eos = self.tokenizer.eos_token_id
            tokens = self.tokenizer.encode_plain(segment) + ([] if stop else [eos])
            truncated = len(tokens) > params.max_new_tokens
            tokens = tokens[: params.max_new_tokens]
            body = [t for t in tokens if t != eos]
            out.append(Completion(list(ids), tokens, self.tokenizer.decode(body), [-1.0] * len(tokens),
                                  truncated, stop=None if truncated else stop))  # fmt: skip
        return out

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[Completion]:
        return self.generate_ids([self.tokenizer.encode(p) for p in prompts], params)


class FakeSessions:
    """A session client whose tool evaluates `observe(code)`; `step_hook` may replace an outcome."""

    def __init__(self, observe: Callable[[str], SessionStep | Exception] | None = None) -> None:
        self.observe = observe or (
            lambda code: SessionStep(session_id="", observation="ok\n", status="ok", step=1)
        )
        self.opened: list[dict[str, Any]] = []
        self.batches: list[list[ToolCall]] = []
        self.verified: list[tuple[str, str]] = []
        self.closed: list[str] = []
        self.open_error: Exception | None = None

    def open_session(self, item: Any, tools: Sequence[str], limits: Any = None) -> OpenedSession:
        if self.open_error is not None:
            raise self.open_error
        self.opened.append(item)
        schemas = [tool_schema(t, ARGUMENTS.get(t, "code")) for t in tools]
        return OpenedSession(session_id=f"s{len(self.opened)}", expires_at=0.0, tools=schemas)

    def step_many(self, calls: Sequence[Any]) -> list[Any]:
        self.batches.append(list(calls))
        outs: list[Any] = []
        for call in calls:
            out = self.observe(call.arguments.get("code", ""))
            if isinstance(out, SessionStep):
                out = out.model_copy(update={"session_id": call.session_id})
            outs.append(out)
        return outs

    def verify_session(self, session_id: str, response: str) -> Result:
        self.verified.append((session_id, response))
        return Result.verdict("\\boxed{42}" in response)

    def close_session(self, session_id: str) -> None:
        self.closed.append(session_id)
