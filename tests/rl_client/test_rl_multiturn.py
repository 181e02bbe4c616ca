"""Multi-turn tool-use rollouts (issue 26): turns, stop strings, the observation mask, the token budget,
and every way a session can fail, which masks the rollout instead of scoring it 0."""

from __future__ import annotations

from typing import Any

import pytest

from assay.client.sessions import SessionStep
from assay.errors import ConfigError, SessionGoneError, UnreachableError
from assay.rl_client.config import GenerateConfig, ToolsConfig, TrainConfig
from assay.rl_client.generate import Problem
from assay.rl_client.multiturn import ToolRollouts, parse_call
from assay.rl_client.tool_calls import BadCall
from assay.rl_client.trainer import tool_signals
from assay.types import Status
from rl_client.multiturn_testing import FakeSessions, TurnBackend, tool_schema
from rl_client.multiturn_testing import tokenizer as printable_tokenizer

CALL = "Let me compute. <python>print(6*7)</python>"
ANSWER = "The answer is \\boxed{42}."


def _cfg(**tools: Any) -> TrainConfig:
    values: dict[str, Any] = {"tools": ("python",), "max_turns": 3}
    values.update(tools)
    return TrainConfig(generate=GenerateConfig(group_size=2, max_new_tokens=64), tools=ToolsConfig(**values))


def _problem(prompt: str = "Q: 6*7? ") -> Problem:
    return Problem("q1", prompt, "42")


def _ok(observation: str = "42\n", status: str = "ok", reason: str | None = None) -> SessionStep:
    return SessionStep(session_id="", observation=observation, status=status, step=1, reason=reason)


def _run(
    scripts: dict[str, list[str]], sessions: FakeSessions, cfg: TrainConfig | None = None, n: int = 1
) -> Any:
    backend = TurnBackend(scripts)
    runner = ToolRollouts(backend, sessions, cfg or _cfg())
    problems = [_problem(p) for p in scripts]
    return backend, runner.sample_groups(problems, [n] * len(problems), version=0)


def test_parse_call_takes_the_last_closed_block() -> None:
    schemas = [tool_schema("python"), tool_schema("sql", "query")]
    assert parse_call("<python>a</python> then <python>\nb\n</python>", ["python"], schemas) == (
        "python",
        {"code": "b"},
    )
    assert parse_call("x <sql>SELECT 1</sql>", ["python", "sql"], schemas) == ("sql", {"query": "SELECT 1"})
    assert parse_call("no opening </python>", ["python"], schemas) is None


def test_a_tag_takes_the_argument_its_tool_schema_names() -> None:
    """Any one-argument tool a task offers is callable in tags, its argument named by its schema."""
    schemas = [tool_schema("lean", "proof"), tool_schema("python")]
    assert parse_call("<lean>rfl</lean>", ["lean"], schemas) == ("lean", {"proof": "rfl"})
    unknown = parse_call("<lean>rfl</lean>", ["lean"], [])
    assert isinstance(unknown, BadCall) and "not known" in unknown.reason
    several = tool_schema("repo", "command")
    several["function"]["parameters"]["required"] = ["command", "path"]
    with pytest.raises(ConfigError, match="use call_format: hermes"):
        parse_call("<repo>x</repo>", ["repo"], [several])


def test_a_tool_call_is_run_and_its_observation_masked_out_of_the_loss() -> None:
    sessions = FakeSessions(lambda code: _ok("42\n"))
    backend, groups = _run({"Q: 6*7? ": [CALL, ANSWER]}, sessions)
    sample = groups[0].samples[0]
    c = sample.completion
    tok = backend.tokenizer
    observation = "<output>\n42\n</output>\n"
    assert tok.decode(c.token_ids) == CALL + observation + ANSWER  # the end token is not printable
    assert c.action_mask is not None and len(c.action_mask) == len(c.token_ids) == len(c.logprobs)
    # exactly the observation's tokens are 0, and their behaviour log-probabilities too
    start = len(tok.encode_plain(CALL))
    obs = len(tok.encode_plain(observation))
    assert c.action_mask == [1] * start + [0] * obs + [1] * (len(c.token_ids) - start - obs)
    assert c.logprobs[start : start + obs] == [0.0] * obs
    assert (c.turns, c.tool_calls, c.tool_errors, c.failure) == (2, 1, 0, None)
    assert sessions.batches[0][0].arguments == {"code": "print(6*7)"}
    assert sessions.verified == [("s1", ANSWER)]  # the final turn is the answer verified
    assert sample.reward == 1.0 and sample.weight == 1.0
    assert sessions.closed == ["s1"]
    assert backend.calls[0].stop == ("</python>",)


def test_calls_of_the_whole_batch_go_out_in_one_batch_step() -> None:
    sessions = FakeSessions(lambda code: _ok())
    _, groups = _run({"A ": [CALL, ANSWER], "B ": [CALL, ANSWER], "C ": ["\\boxed{41}"]}, sessions, n=2)
    assert [len(b) for b in sessions.batches] == [4]
    assert len({c.session_id for c in sessions.batches[0]}) == 4
    assert [s.raw_score for g in groups for s in g.samples] == [True, True, True, True, False, False]
    assert groups[0].stats is not None and groups[0].stats.all_equal


def test_the_last_turn_cannot_call_a_tool_and_a_policy_that_never_stops_is_cut_at_max_turns() -> None:
    sessions = FakeSessions(lambda code: _ok())
    backend, groups = _run({"Q ": [CALL]}, sessions, _cfg(max_turns=3))
    c = groups[0].samples[0].completion
    assert c.tool_calls == 2 and c.turns == 3
    assert [p.stop for p in backend.calls] == [("</python>",), ("</python>",), ()]
    assert groups[0].samples[0].raw_score is False  # scored: it never answered, which is its doing
    assert c.kept_calling  # its answering turn wrote a call again: what the doctor's never-stop reads


def test_a_rollout_that_uses_every_turn_and_then_answers_did_stop_calling() -> None:
    sessions = FakeSessions(lambda code: _ok())
    _, groups = _run({"Q ": [CALL, ANSWER]}, sessions, _cfg(max_turns=2))
    c = groups[0].samples[0].completion
    assert (c.tool_calls, c.turns, c.kept_calling) == (1, 2, False)
    assert tool_signals(groups[0].samples)["never_stop_calling_share"] == 0.0
    _, stuck = _run({"Q ": [CALL]}, sessions, _cfg(max_turns=2))
    assert tool_signals(stuck[0].samples)["never_stop_calling_share"] == 1.0


def test_tool_errors_are_observations_and_the_rollout_goes_on() -> None:
    trace = "Traceback (most recent call last):\nZeroDivisionError: division by zero\n"
    sessions = FakeSessions(lambda code: _ok(trace, "tool_error", "exception"))
    _, groups = _run({"Q ": [CALL, ANSWER]}, sessions)
    sample = groups[0].samples[0]
    assert (sample.completion.tool_errors, sample.reward) == (1, 1.0)


def test_a_session_that_ended_leaves_only_the_answer() -> None:
    sessions = FakeSessions(lambda code: _ok("the interpreter exited", "session_ended", "exited"))
    backend, groups = _run({"Q ": [CALL, CALL, ANSWER]}, sessions)
    c = groups[0].samples[0].completion
    assert backend.calls[1].stop == ()  # no tool after the session ended
    assert (c.tool_calls, c.tool_errors, groups[0].samples[0].reward) == (1, 1, 0.0)


@pytest.mark.parametrize(
    "failure",
    [
        SessionGoneError("gone", None, "s1", "expired (600 s after its last call)"),
        _ok("", "error", "sandbox lost"),
    ],
)
def test_a_session_failing_on_our_side_masks_the_rollout_never_a_zero(failure: Any) -> None:
    sessions = FakeSessions(lambda code: failure)
    _, groups = _run({"Q ": [CALL, ANSWER]}, sessions)
    sample = groups[0].samples[0]
    assert sample.result is not None and sample.result.status is Status.ERROR
    assert sample.reward is None and sample.weight == 0.0 and not sample.scored
    assert sample.completion.failure is not None
    assert sessions.verified == []  # no verdict asked for a rollout that could not finish
    assert sessions.closed == ["s1"]


def test_an_unreachable_server_masks_every_rollout_of_the_batch() -> None:
    sessions = FakeSessions()

    def down(calls: Any) -> Any:
        raise UnreachableError("connection reset")

    sessions.step_many = down  # type: ignore[method-assign]
    _, groups = _run({"A ": [CALL, ANSWER], "B ": [ANSWER]}, sessions)
    assert groups[0].samples[0].weight == 0.0 and groups[0].samples[0].reward is None
    assert groups[1].samples[0].reward == 1.0  # a rollout that made no call is unaffected


def test_a_session_that_cannot_be_opened_masks_the_rollout() -> None:
    sessions = FakeSessions()
    sessions.open_error = UnreachableError("refused")
    backend, groups = _run({"Q ": [ANSWER]}, sessions)
    assert groups[0].samples[0].reward is None and groups[0].samples[0].weight == 0.0
    assert backend.calls == [] and sessions.closed == []


def test_the_total_token_budget_counts_observations_and_truncates() -> None:
    flood = "x" * 500
    sessions = FakeSessions(lambda code: _ok(flood))
    cfg = _cfg(max_total_tokens=80, max_observation_tokens=1000)
    _, groups = _run({"Q ": [CALL, ANSWER]}, sessions, cfg)
    c = groups[0].samples[0].completion
    assert len(c.token_ids) == 80 and c.truncated
    assert c.action_mask is not None and c.action_mask[-1] == 0
    assert groups[0].samples[0].reward == 0.0  # it flooded its own context: a verdict, not a mask


def test_observations_are_cut_to_max_observation_tokens() -> None:
    sessions = FakeSessions(lambda code: _ok("y" * 500))
    cfg = _cfg(max_observation_tokens=16, max_total_tokens=400)
    _, groups = _run({"Q ": [CALL, ANSWER]}, sessions, cfg)
    c = groups[0].samples[0].completion
    wrapper = len("<output>\n") + len("</output>\n")  # the wrapper is never cut: the policy sees the end
    assert c.action_mask is not None and c.action_mask.count(0) == 16 + wrapper
    assert (c.tool_calls, groups[0].samples[0].reward) == (1, 1.0)


def test_a_backend_without_token_continuation_is_refused() -> None:
    class TextOnly:
        def generate(self, prompts: Any, params: Any) -> Any: ...

    with pytest.raises(ValueError, match="hf, vllm or vllm_server backend"):
        ToolRollouts(TextOnly(), FakeSessions(), _cfg())


def test_unknown_characters_in_an_observation_are_left_out_not_a_crash() -> None:
    sessions = FakeSessions(lambda code: _ok("42 \u00e9\u4e2d\n"))
    backend, groups = _run({"Q ": [CALL, ANSWER]}, sessions)
    assert "<output>\n42 \n</output>" in backend.tokenizer.decode(groups[0].samples[0].completion.token_ids)
    assert printable_tokenizer().encode_plain("\u4e2d") == []
