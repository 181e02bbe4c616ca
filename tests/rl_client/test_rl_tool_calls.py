"""The chat template's tool-call markup as a call format (issue 26, `call_format: hermes`): parsing the
JSON call, what a malformed call does (an observation, never a crash), and the observation rendered by
the tokenizer's own chat template, on a tokenizer built here."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.client.sessions import SessionStep
from assay.errors import ConfigError
from assay.rl_client.config import GenerateConfig, ToolsConfig, TrainConfig
from assay.rl_client.generate import Problem
from assay.rl_client.multiturn import ToolRollouts
from assay.rl_client.tokenizer import TextTokenizer
from assay.rl_client.tool_calls import ActionCalls, BadCall, HermesCalls, chat_tool_turn
from assay.types import Status
from rl_client.multiturn_testing import FakeSessions, TurnBackend

# Written here in the shape of the Qwen2.5 template: consecutive tool messages go into one user turn,
# each inside <tool_response> tags.
QWEN_LIKE = (
    "{%- for message in messages %}"
    "{%- if message.role == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
NO_TOOLS = (
    "{% for message in messages %}{% if message['role'] == 'tool' %}"
    "{{ raise_exception('tool messages are not supported') }}{% endif %}"
    "{{ message['content'] }}{% endfor %}"
)
QWEN_TURN = (
    "<|im_end|>\n<|im_start|>user\n<tool_response>\n{observation}\n</tool_response><|im_end|>\n"
    "<|im_start|>assistant\n"
)
CALL = '<tool_call>\n{"name": "python", "arguments": {"code": "print(6*7)"}}\n</tool_call>'
ANSWER = "The answer is \\boxed{42}."


def chat_tokenizer(template: str | None) -> TextTokenizer:
    """A character-level transformers tokenizer with ChatML's special tokens and `template`."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"]
    chars = [c for c in string.printable if c not in "\x0b\x0c\r"]
    vocab = {token: i for i, token in enumerate(specials + chars)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    core.decoder = decoders.Fuse()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=core, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<unk>",
        additional_special_tokens=["<|im_start|>"],
    )  # fmt: skip
    fast.chat_template = template
    return TextTokenizer(fast, add_special_tokens=False)


def _cfg(**tools: Any) -> TrainConfig:
    values: dict[str, Any] = {"tools": ("python",), "max_turns": 3, "call_format": "hermes"}
    values.update(tools)
    return TrainConfig(generate=GenerateConfig(group_size=2, max_new_tokens=96), tools=ToolsConfig(**values))


def _ok(observation: str = "42\n") -> SessionStep:
    return SessionStep(session_id="", observation=observation, status="ok", step=1)


def _run(script: list[str], sessions: FakeSessions, template: str | None = QWEN_LIKE) -> Any:
    tok = chat_tokenizer(template)
    marker = "</tool_response>" if template == QWEN_LIKE else "</output>"
    prompt = "Q: 6*7? "
    backend = TurnBackend({prompt: script}, tok=tok, marker=marker)
    groups = ToolRollouts(backend, sessions, _cfg()).sample_groups([Problem("q", prompt, "42")], [1], 0)
    return tok, backend, groups[0].samples[0]


# -- parsing --------------------------------------------------------------------------------------
def test_a_hermes_call_names_the_tool_and_its_arguments() -> None:
    fmt = HermesCalls()
    assert fmt.stop == ("</tool_call>",)
    assert fmt.parse(f"Let me run it. {CALL}") == ("python", {"code": "print(6*7)"})
    # the OpenAI wire form: arguments as a JSON string holding the object; and no arguments at all
    quoted = json.dumps({"name": "sql", "arguments": json.dumps({"query": "SELECT 1"})})
    assert fmt.parse(f"<tool_call>{quoted}</tool_call>") == ("sql", {"query": "SELECT 1"})
    assert fmt.parse('<tool_call>{"name": "python"}</tool_call>') == ("python", {})
    # the call a turn ends with is the last one
    two = '<tool_call>{"name": "a"}</tool_call> <tool_call>{"name": "b"}</tool_call>'
    assert fmt.parse(two) == ("b", {})
    assert fmt.parse("no call here") is None and fmt.parse("only a close </tool_call>") is None


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ('{"name": "python", "arguments": {"code": "print(1)"}', "not valid JSON"),  # cut short
        ("{'name': 'python'}", "not valid JSON"),  # Python, not JSON
        ('{"name": "python", "arguments": {"x": NaN}}', "not valid JSON"),  # NaN cannot go on the wire
        ('["python", {"code": "1"}]', '"name"'),
        ('{"arguments": {"code": "1"}}', '"name"'),
        ('{"name": "", "arguments": {}}', '"name"'),
        ('{"name": 3}', '"name"'),
        ('{"name": "python", "arguments": ["print(1)"]}', "must be a JSON object"),
        ('{"name": "python", "arguments": "print(1)"}', "not a JSON object"),
        ('{"name": "python", "arguments": {"code": "\\ud800"}}', "not valid Unicode"),  # lone surrogate
        ("", "not valid JSON"),
    ],
)
def test_a_malformed_call_is_a_bad_call_saying_why(body: str, says: str) -> None:
    parsed = HermesCalls().parse(f"<tool_call>{body}</tool_call>")
    assert isinstance(parsed, BadCall) and says in parsed.reason


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from('<>/{}[]":, _nametoolcu\\') | st.characters(), max_size=80))
def test_parsing_any_text_never_raises(text: str) -> None:
    for candidate in (text, f"<tool_call>{text}</tool_call>", f"<tool_call>{{{text}</tool_call>"):
        parsed = HermesCalls().parse(candidate)
        assert parsed is None or isinstance(parsed, BadCall) or isinstance(parsed[1], dict)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(), lambda inner: st.lists(inner, max_size=3)
)


@settings(max_examples=200, deadline=None)
@given(
    st.text(min_size=1, alphabet=st.characters(blacklist_categories=("Cs",))),
    st.dictionaries(st.text(alphabet=st.characters(blacklist_categories=("Cs",))), json_values, max_size=4),
)
def test_any_well_formed_call_parses_back(name: str, arguments: dict[str, Any]) -> None:
    text = f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"
    assert HermesCalls().parse(text) == (name, arguments)


# -- the observation as the chat template shows it ------------------------------------------------
def test_the_tool_turn_comes_from_the_chat_template() -> None:
    assert chat_tool_turn(chat_tokenizer(QWEN_LIKE)) == QWEN_TURN
    plain = "<|im_end|>\n<|im_start|>tool\n{observation}<|im_end|>\n<|im_start|>assistant\n"
    assert chat_tool_turn(chat_tokenizer(CHATML)) == plain


def test_a_template_that_refuses_tool_messages_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot render a tool message"):
        ToolRollouts(TurnBackend({}, tok=chat_tokenizer(NO_TOOLS)), FakeSessions(), _cfg())


def test_without_a_chat_template_the_observation_template_is_used() -> None:
    runner = ToolRollouts(TurnBackend({}, tok=chat_tokenizer(None)), FakeSessions(), _cfg())
    assert runner.wrapper == ToolsConfig().observation_template


# -- rollouts ---------------------------------------------------------------------------------------
def test_a_hermes_call_runs_and_its_tool_turn_is_masked() -> None:
    sessions = FakeSessions(lambda code: _ok("42\n") if code == "print(6*7)" else _ok("?"))
    tok, backend, sample = _run([CALL, ANSWER], sessions)
    c = sample.completion
    assert backend.calls[0].stop == ("</tool_call>",)
    call = sessions.batches[0][0]
    assert (call.tool, call.arguments) == ("python", {"code": "print(6*7)"})
    turn = QWEN_TURN.replace("{observation}", "42\n")
    call_ids, turn_ids = tok.encode_plain(CALL), tok.encode_plain(turn)
    assert c.token_ids[: len(call_ids) + len(turn_ids)] == call_ids + turn_ids  # special tokens as ids
    assert tok.tokenizer.convert_tokens_to_ids("<|im_start|>") in turn_ids
    n = len(c.token_ids) - len(call_ids) - len(turn_ids)
    assert c.action_mask == [1] * len(call_ids) + [0] * len(turn_ids) + [1] * n
    assert sessions.verified == [("s1", ANSWER)] and sample.reward == 1.0
    assert (c.turns, c.tool_calls, c.tool_errors) == (2, 1, 0)


def test_a_malformed_call_is_an_invalid_call_observation_and_the_rollout_goes_on() -> None:
    broken = '<tool_call>\n{"name": "python", "arguments": {"code": "print(6*7)"\n</tool_call>'
    sessions = FakeSessions(lambda code: _ok())
    tok, _, sample = _run([broken, ANSWER], sessions)
    c = sample.completion
    assert sessions.batches == []  # nothing to run: not sent to the session
    text = tok.tokenizer.decode(c.token_ids)
    assert "<tool_response>\ninvalid tool call: the tool call is not valid JSON" in text
    assert (c.tool_calls, c.tool_errors, c.failure) == (1, 1, None)
    assert sample.result is not None and sample.result.status is Status.OK and sample.reward == 1.0
    assert sessions.closed == ["s1"]


def test_a_call_to_a_tool_the_session_lacks_goes_to_the_session_which_judges_it() -> None:
    other = '<tool_call>{"name": "shell", "arguments": {"cmd": "ls"}}</tool_call>'
    refused = SessionStep(session_id="", observation="no tool shell", status="invalid_call", step=1)
    sessions = FakeSessions(lambda code: refused)
    _, _, sample = _run([other, ANSWER], sessions)
    assert sessions.batches[0][0].tool == "shell"
    assert (sample.completion.tool_errors, sample.reward) == (1, 1.0)


def _schema(name: str, *arguments: str) -> dict[str, Any]:
    properties = {argument: {"type": "string"} for argument in arguments}
    return {"type": "function", "function": {"name": name, "parameters": {"properties": properties}}}


PYTHON, SQL, EDIT = _schema("python", "code"), _schema("sql", "query"), _schema("edit", "path", "text")


@pytest.mark.parametrize(
    ("schemas", "action", "call"),
    [
        (
            [SQL],
            '<tool_call>{"name": "sql", "arguments": {"query": "SELECT 1"}}</tool_call>',
            ("sql", {"query": "SELECT 1"}),
        ),
        (
            [SQL],
            '<tool_call>{"name": "a"}</tool_call> <tool_call>{"name": "b", "arguments": {}}</tool_call>',
            ("b", {}),
        ),
        ([PYTHON], "```python\nprint(1)\n```", ("python", {"code": "print(1)\n"})),
        ([SQL], "first ```\nSELECT 1\n``` then ```\nSELECT 2\n```", ("sql", {"query": "SELECT 2\n"})),
        ([SQL, PYTHON], "<python>x</python> and <sql>y</sql>", ("sql", {"query": "y"})),
        ([SQL], "<python>x</python>", None),  # a tag of no tool of the session is text
        ([PYTHON], "no call here", None),
        ([PYTHON], "```python\n\n```", None),
    ],
)
def test_an_actions_call_is_its_tool_call_else_a_tag_else_code_for_the_sessions_one_tool(
    schemas: list[dict[str, Any]], action: str, call: object
) -> None:
    assert ActionCalls(schemas).parse(action) == call


@pytest.mark.parametrize(
    ("schemas", "says"),
    [([SQL, PYTHON], "several tools (sql, python)"), ([EDIT], "takes several arguments"), ([], "no tool")],
)
def test_code_that_names_no_tool_is_a_bad_call_saying_to_name_one(
    schemas: list[dict[str, Any]], says: str
) -> None:
    call = ActionCalls(schemas).parse("```python\nprint(1)\n```")
    assert isinstance(call, BadCall) and says in call.reason
