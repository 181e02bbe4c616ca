"""Call formats of multi-turn tool use (issue 26): where a call ends, what it asks, how the answer shows.

- `tags`: `<python>code</python>` (`<sql>query</sql>`, `<run_tests>code</run_tests>`). The closing tag
  is the stop string; the body is the tool's one argument, named by the tool's own schema (the tools a
  session answers with when it opens), so any one-argument tool a task offers works without an edit
  here. The observation is `observation_template`.
- `hermes`: the tool-call markup of the Hermes, Qwen2.5 and Qwen3 chat templates,
  `<tool_call>\\n{"name": "python", "arguments": {"code": "print(1)"}}\\n</tool_call>`. `</tool_call>`
  is the stop string; the JSON names the tool and its arguments. The observation is the tokenizer's own
  chat template rendering a `{"role": "tool"}` message: the text it puts between the assistant's call and
  the next assistant turn, so the policy sees tool output the way its template shows it. A tokenizer
  without a chat template uses `observation_template`.

Adapters that read free-form turns (verl-tool's tool server, OpenRLHF's agent) read them with
`ActionCalls`: a `<tool_call>`, else a tag of one of the session's tools, else a fenced code block for the
session's one tool (verl-tool's python_code form, whatever tool the task offers).

A call that cannot be read (malformed JSON, no tool name, arguments that are not an object, text that
cannot go on the wire) is a `BadCall`: the rollout shows it as an `invalid_call` observation, counts it
as a tool error and goes on. It is the policy's mistake, so it is neither sent to the session nor a crash.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from assay.errors import ConfigError

HERMES_OPEN, HERMES_CLOSE = "<tool_call>", "</tool_call>"
# Markers no chat template writes: where the call ends and the observation goes in a rendered tool turn.
_CALL_MARK, _SEEN_MARK = "ASSAY-CALL-5f0c1e", "ASSAY-OBSERVATION-9b2d47"

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class BadCall:
    """A call the policy wrote that cannot be run; `reason` is what its observation says."""

    reason: str


class CallFormat(Protocol):
    stop: tuple[str, ...]  # generation stops once one of these is written

    def learn(self, schemas: Sequence[Mapping[str, Any]]) -> None:
        """Take what the format needs from the tools' schemas (OpenAI function-tool form)."""
        ...

    def parse(self, text: str) -> Call | BadCall | None:
        """The call a turn ends with; None: the turn wrote no call (it is the answer)."""
        ...


def tag_argument(schema: Mapping[str, Any]) -> str | None:
    """The argument a tag's body can be: the tool's one required parameter (its one parameter when none
    is required); None when it takes more than one."""
    parameters = schema.get("function", schema).get("parameters") or {}
    names = list(parameters.get("required") or parameters.get("properties") or ())
    return str(names[0]) if len(names) == 1 else None


class TagCalls:
    """`<tool>body</tool>`: the body is the tool's one argument, named by its schema (`learn`)."""

    def __init__(self, tools: Sequence[str], arguments: Mapping[str, str] | None = None) -> None:
        self.tools = tuple(tools)
        self.arguments = dict(arguments or {})
        self.stop = tuple(f"</{tool}>" for tool in self.tools)

    def learn(self, schemas: Sequence[Mapping[str, Any]]) -> None:
        """Each tool's argument from its schema; a tool of several arguments cannot be a tag."""
        for schema in schemas:
            name = schema.get("function", schema).get("name")
            if name not in self.tools or name in self.arguments:
                continue
            argument = tag_argument(schema)
            if argument is None:
                raise ConfigError(
                    f"tool {name!r} takes several arguments and a tag passes one: use call_format: hermes"
                )
            self.arguments[name] = argument

    def parse(self, text: str) -> Call | BadCall | None:
        """The body of the last `<tool>...</tool>` block (the one whose closing tag comes last)."""
        found: tuple[int, str, str] | None = None
        for tool in self.tools:
            for match in re.finditer(rf"<{re.escape(tool)}>(.*?)</{re.escape(tool)}>", text, re.DOTALL):
                if found is None or match.end() > found[0]:
                    found = (match.end(), tool, match.group(1))
        if found is None:
            return None
        _, tool, body = found
        if tool not in self.arguments:
            return BadCall(f"the {tool} tool's arguments are not known: no session has described it")
        return tool, {self.arguments[tool]: body.strip("\n")}


class HermesCalls:
    """`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`; `arguments` may also be a JSON string
    holding the object (the OpenAI wire form), and may be left out (no arguments)."""

    stop: tuple[str, ...] = (HERMES_CLOSE,)

    def learn(self, schemas: Sequence[Mapping[str, Any]]) -> None:
        """Nothing to learn: the call names its arguments itself."""

    def parse(self, text: str) -> Call | BadCall | None:
        end = text.rfind(HERMES_CLOSE)
        start = text.rfind(HERMES_OPEN, 0, end) if end >= 0 else -1
        if start < 0:
            return None
        body = text[start + len(HERMES_OPEN) : end].strip()
        try:
            call = json.loads(body, parse_constant=_no_constant)
        except ValueError as exc:
            return BadCall(f"the tool call is not valid JSON ({exc})")
        if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not call["name"]:
            return BadCall('a tool call is a JSON object with a "name" (the tool) and "arguments"')
        arguments = call.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments, parse_constant=_no_constant)
            except ValueError as exc:
                return BadCall(f'"arguments" is a string that is not a JSON object ({exc})')
        if not isinstance(arguments, dict):
            return BadCall('"arguments" must be a JSON object, e.g. {"code": "print(1)"}')
        try:  # lone surrogates are valid JSON escapes but cannot be sent as UTF-8
            json.dumps(arguments, ensure_ascii=False).encode("utf-8")
            call["name"].encode("utf-8")
        except UnicodeEncodeError:
            return BadCall("the tool call holds text that is not valid Unicode")
        return call["name"], arguments


# A fenced code block (```python, ```py or bare ```), verl-tool's python_code form.
_FENCED = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


def fenced_code(text: str) -> str | None:
    """The last fenced code block of `text`, else None (an empty block is no code)."""
    found = _FENCED.findall(text)
    return found[-1] if found and found[-1].strip() else None


class ActionCalls:
    """The call of one free-form turn against one session's tools (their schemas): its last
    `<tool_call>`, else its last `<tool>body</tool>` for a tool of the session, else its last fenced code
    block, run by the session's one tool as its one argument. Code in a session of several tools (or
    whose one tool takes several arguments) names no tool: a BadCall that says to name one."""

    def __init__(self, schemas: Sequence[Mapping[str, Any]]) -> None:
        functions = [schema.get("function", schema) for schema in schemas]
        self.tools = [str(function["name"]) for function in functions]
        arguments = {name: tag_argument(schema) for name, schema in zip(self.tools, schemas, strict=True)}
        self.tags = TagCalls(self.tools, {name: arg for name, arg in arguments.items() if arg is not None})
        self.hermes = HermesCalls()

    def parse(self, text: str) -> Call | BadCall | None:
        call = self.hermes.parse(text)
        if call is None:
            call = self.tags.parse(text)
        if call is not None:
            return call
        code = fenced_code(text)
        if code is None:
            return None
        if not self.tools:
            return BadCall("code that names no tool, in a session with no tool to run it")
        if len(self.tools) > 1:
            return BadCall(
                f"code that names no tool, in a session of several tools ({', '.join(self.tools)}):"
                " name one with <tool_call>"
            )
        (tool,) = self.tools
        argument = self.tags.arguments.get(tool)
        if argument is None:
            return BadCall(f"the {tool} tool takes several arguments: call it with <tool_call>")
        return tool, {argument: code}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def call_format(name: str, tools: Sequence[str]) -> CallFormat:
    if name == "tags":
        return TagCalls(tools)
    if name == "hermes":
        return HermesCalls()
    raise ConfigError(f"unknown call_format {name!r}: tags or hermes")


def observation_template(name: str, tokenizer: Any, default: str) -> str:
    """The wrapper of an observation (`{observation}` marks where it goes) for call format `name`."""
    if name != "hermes" or not getattr(tokenizer, "chat_template", None):
        return default
    return chat_tool_turn(tokenizer)


def chat_tool_turn(tokenizer: Any) -> str:
    """What the tokenizer's chat template writes after an assistant's tool call, around the tool's
    message, up to the next assistant turn (e.g. Qwen2.5: `<|im_end|>\\n<|im_start|>user\\n
    <tool_response>\\n{observation}\\n</tool_response><|im_end|>\\n<|im_start|>assistant\\n`)."""
    messages = [
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": _CALL_MARK},
        {"role": "tool", "content": _SEEN_MARK},
    ]
    try:
        text = str(tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True))
    except Exception as exc:  # a template that refuses a tool message: jinja raises its own errors
        raise ConfigError(
            f"call_format hermes: the tokenizer's chat template cannot render a tool message ({exc}); "
            "use call_format tags"
        ) from exc
    after = text.split(_CALL_MARK, 1)[-1]
    if _CALL_MARK not in text or _SEEN_MARK not in after:
        raise ConfigError(
            "call_format hermes: the tokenizer's chat template does not show tool messages after the "
            "assistant's call; use call_format tags"
        )
    return after.replace(_SEEN_MARK, "{observation}", 1)
