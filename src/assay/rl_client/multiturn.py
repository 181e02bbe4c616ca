"""Multi-turn tool-use rollouts (issue 26): generate, call a tool in an Assay session, read, go on.

Each rollout holds one Assay session (`POST /v1/sessions`). A turn generates until the end token, the
token budget, or a tool call closing (`</python>` in the "tags" call format, `</tool_call>` in the
chat template's "hermes" markup: `tool_calls.py`). The calls of every rollout that stopped on one go
out together (`POST /v1/sessions/step`, the batch form); each observation, wrapped as the call format
shows it, is appended to the response as tokens the policy did not choose (`Completion.action_mask` 0:
no loss on them). Up to `max_turns` segments and `max_total_tokens` in all (response and
observations); the last turn cannot call a tool. The final turn's text goes to the session's `verify`,
which scores it exactly as `/v1/rewards` would.

What is whose fault, as the contract says:
- a tool error, an invalid call (one that cannot even be read is answered here), a session that ended
  by the policy's doing (step limit, its interpreter killed by its own code): an observation; the
  rollout goes on (after `session_ended` it must answer);
- our side failing (a step answered `error`, a session gone, the server unreachable, a create refused):
  the rollout has no verdict: its result is `error` with the reason, reward None, loss weight 0. Never a
  silent 0.

Only backends with `generate_ids(prompt_ids, params)` (honouring `params.stop`) and a `tokenizer` can
continue a response from its tokens: hf, vllm and vllm_server. This module does not import torch.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from assay.client.sessions import SessionStep, ToolCall
from assay.errors import ClientError, ConfigError
from assay.groups import group_stats
from assay.rl_client.config import TrainConfig
from assay.rl_client.filter import apply_results
from assay.rl_client.generate import Completion, Group, Problem, Sample, SamplingParams
from assay.rl_client.tool_calls import BadCall, TagCalls, call_format, observation_template
from assay.types import Result, Status

T = TypeVar("T")
R = TypeVar("R")

TOOL_ERROR_STATUSES = frozenset({"tool_error", "invalid_call", "session_ended"})


class SessionClient(Protocol):
    """What the rollouts need of `assay.client.AssayClient` (its sync session calls)."""

    def open_session(self, item: Any, tools: Sequence[str], limits: Any = None) -> Any: ...

    def step_many(self, calls: Sequence[ToolCall | dict[str, Any]]) -> list[Any]: ...

    def verify_session(self, session_id: str, response: str) -> Result: ...

    def close_session(self, session_id: str) -> None: ...


def stop_strings(tools: Sequence[str]) -> tuple[str, ...]:
    """The closing tag of each tool (the "tags" format): generation stops there and the call runs."""
    return TagCalls(tools).stop


def parse_call(
    text: str, tools: Sequence[str], schemas: Sequence[Mapping[str, Any]]
) -> tuple[str, dict[str, Any]] | BadCall | None:
    """The "tags" call a turn ends with: the body of the last `<tool>...</tool>` whose closing tag is
    the last one in `text`, as the argument the tool's schema names; None when there is none (a
    closing tag without its opening). `schemas`: the tools as a session (or GET /v1/tasks) gives them."""
    calls = TagCalls(tools)
    calls.learn(schemas)
    return calls.parse(text)


def plain_ids(tokenizer: Any, text: str) -> list[int]:
    """Token ids of `text` as a continuation (no begin token)."""
    encode = getattr(tokenizer, "encode_plain", None)
    if encode is not None:
        return list(encode(text))
    ids = list(tokenizer.encode(text))
    bos = getattr(tokenizer, "bos_token_id", None)
    return ids[1:] if ids and bos is not None and ids[0] == bos else ids


@dataclass
class ToolRollout:
    problem: Problem
    prompt_ids: list[int]
    hint: str
    session_id: str | None = None
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)  # the policy version that sampled each action token
    final_text: str = ""
    turns: int = 0
    calls: int = 0
    errors: int = 0
    truncated: bool = False
    must_answer: bool = False  # the session ended: no more tools, only the answer
    kept_calling: bool = False  # its answering turn (no tools left) wrote a whole tool call anyway
    done: bool = False
    failure: str | None = None
    pending: tuple[str, dict[str, Any]] | BadCall | None = None

    def fail(self, why: str) -> None:
        self.failure, self.done = why, True

    def append(self, ids: Sequence[int], logprobs: Sequence[float], action: int, version: int = 0) -> None:
        self.tokens.extend(ids)
        self.logprobs.extend(logprobs)
        self.mask.extend([action] * len(ids))
        if action:
            self.versions.extend([version] * len(ids))


class ToolRollouts:
    """Samples groups of multi-turn rollouts and scores them through their sessions' `verify`.

    `latencies` holds the seconds of each `verify` call and `verify_wait_s` the wall time spent in
    them (the trainer's `reward_latency_s` and `reward_wait_s` of a tool-using run)."""

    def __init__(self, backend: Any, client: SessionClient, cfg: TrainConfig, threads: int = 8) -> None:
        if not hasattr(backend, "generate_ids") or not hasattr(backend, "tokenizer"):
            raise ConfigError(
                f"the {type(backend).__name__} backend cannot continue a response from its tokens; "
                "multi-turn tool use needs the hf, vllm or vllm_server backend"
            )
        self.backend = backend
        self.client = client
        self.tools = cfg.tools
        self.format = call_format(cfg.tools.call_format, cfg.tools.tools)
        self.wrapper = observation_template(
            cfg.tools.call_format, backend.tokenizer, cfg.tools.observation_template
        )
        self.max_new_tokens = cfg.generate.max_new_tokens
        self.temperature = cfg.generate.temperature
        self.budget = cfg.tools.max_total_tokens or cfg.generate.max_new_tokens * cfg.tools.max_turns
        self.threads = threads
        self.latencies: list[float] = []
        self.verify_wait_s = 0.0

    def sample_groups(
        self,
        problems: Sequence[Problem],
        sizes: Sequence[int],
        version: int,
        hints: Sequence[str] | None = None,
        template: str = "{prompt}{hint}",
        temperature: float | None = None,
    ) -> list[Group]:
        """`sizes[i]` scored rollouts of `problems[i]`, as groups with verdicts and statistics."""
        hint_list = list(hints) if hints is not None else [""] * len(problems)
        texts = [
            template.format(prompt=p.prompt, hint=h) if h else p.prompt
            for p, h in zip(problems, hint_list, strict=True)
        ]
        rollouts = [
            self.new_rollout(p, t, h)
            for p, t, h, n in zip(problems, texts, hint_list, sizes, strict=True)
            for _ in range(n)
        ]
        results = self.run(rollouts, self.temperature if temperature is None else temperature, version)
        flat = iter(zip(rollouts, results, strict=True))
        return [
            self.group(problem, text, [next(flat) for _ in range(n)], hint)
            for problem, text, hint, n in zip(problems, texts, hint_list, sizes, strict=True)
        ]

    def new_rollout(self, problem: Problem, text: str, hint: str = "") -> ToolRollout:
        return ToolRollout(problem, list(self.backend.tokenizer.encode(text)), hint)

    def group(
        self, problem: Problem, text: str, pairs: Sequence[tuple[ToolRollout, Result]], hint: str = ""
    ) -> Group:
        """A scored group of finished rollouts; one whose turns span policy versions is off-policy."""
        samples = []
        for rollout, _ in pairs:
            versions = rollout.versions or [0]
            samples.append(Sample(_completion(rollout), min(versions), off_policy=len(set(versions)) > 1))
        apply_results(samples, [res for _, res in pairs])
        group = Group(problem, text, samples, hint=hint)
        group.stats = group_stats([res for _, res in pairs], [r.final_text for r, _ in pairs])
        return group

    def run(self, rollouts: list[ToolRollout], temperature: float, version: int = 0) -> list[Result]:
        """Open a session per rollout, take the turns, verify; every session is deleted after."""
        try:
            self.open(rollouts)
            for _ in range(self.tools.max_turns):
                active = [r for r in rollouts if not r.done]
                if not active:
                    break
                self.turn(active, temperature, version)
            return self.verify(rollouts)
        finally:
            self.close(rollouts)

    def open(self, rollouts: Sequence[ToolRollout]) -> None:
        self._parallel(self._open, [r for r in rollouts if r.session_id is None and not r.done])

    def turn(self, rollouts: Sequence[ToolRollout], temperature: float, version: int) -> None:
        """One turn of each unfinished rollout: generate, then run the calls it ended with, in one batch
        step. A rollout in its last turn (or whose session ended) cannot call a tool."""
        active = [r for r in rollouts if not r.done]
        answering = [r for r in active if r.must_answer or r.turns >= self.tools.max_turns - 1]
        tooled = [r for r in active if r not in answering]
        self._generate(answering, temperature, (), version)
        self._generate(tooled, temperature, self.format.stop, version)
        self._step([r for r in tooled if r.pending is not None])

    def verify(self, rollouts: Sequence[ToolRollout]) -> list[Result]:
        started = time.perf_counter()
        try:
            return self._parallel(self._verify, rollouts)
        finally:
            self.verify_wait_s += time.perf_counter() - started

    def close(self, rollouts: Sequence[ToolRollout]) -> None:
        """Delete the rollouts' sessions (idempotent: a closed rollout forgets its session)."""
        self._parallel(self._close, [r for r in rollouts if r.session_id is not None])

    # -- the pieces --------------------------------------------------------------------------------
    def _parallel(self, fn: Callable[[T], R], values: Sequence[T]) -> list[R]:
        if len(values) <= 1:
            return [fn(v) for v in values]
        with ThreadPoolExecutor(min(self.threads, len(values)), thread_name_prefix="assay-sessions") as pool:
            return list(pool.map(fn, values))

    def _open(self, rollout: ToolRollout) -> None:
        p = rollout.problem
        item = {"id": p.id, "task": p.task, "prompt": p.prompt, "reference": p.reference, **p.fields}
        try:
            opened = self.client.open_session(item, list(self.tools.tools), dict(self.tools.limits))
            rollout.session_id = opened.session_id
            self.format.learn(opened.tools)  # the argument each tool's schema names (tags format)
        except ClientError as exc:
            rollout.fail(f"session could not be opened: {exc}")

    def _generate(
        self, rollouts: list[ToolRollout], temperature: float, stop: tuple[str, ...], version: int
    ) -> None:
        if not rollouts:
            return
        left = [self.budget - len(r.tokens) for r in rollouts]
        params = SamplingParams(temperature, max(1, min(self.max_new_tokens, max(left))), stop)
        outs: list[Completion] = self.backend.generate_ids(
            [r.prompt_ids + r.tokens for r in rollouts], params
        )
        for rollout, out, room in zip(rollouts, outs, left, strict=True):
            cut = len(out.token_ids) > room
            ids, logprobs = out.token_ids[:room], out.logprobs[:room]
            rollout.append(ids, logprobs, 1, version)
            rollout.turns += 1
            rollout.final_text = self.backend.tokenizer.decode(ids) if cut else out.text
            call = self.format.parse(out.text) if stop and out.stop and not cut else None
            rollout.kept_calling = not stop and any(end in out.text for end in self.format.stop)
            if call is not None:
                rollout.pending = call
            else:
                rollout.truncated = cut or out.truncated or len(rollout.tokens) >= self.budget
                rollout.done = True

    def _step(self, rollouts: list[ToolRollout]) -> None:
        """Run the calls in one batch step; a call that could not be read is answered here."""
        unreadable = [r for r in rollouts if isinstance(r.pending, BadCall)]
        for rollout in unreadable:
            reason = rollout.pending.reason if isinstance(rollout.pending, BadCall) else ""
            rollout.pending = None
            seen = SessionStep(session_id=str(rollout.session_id), observation=f"invalid tool call: "
                               f"{reason}\n", status="invalid_call", step=0, reason=reason)  # fmt: skip
            self._observe(rollout, seen)
        runnable = [r for r in rollouts if isinstance(r.pending, tuple)]
        if not runnable:
            return
        calls = [
            ToolCall(session_id=str(r.session_id), tool=r.pending[0], arguments=r.pending[1])
            for r in runnable
            if isinstance(r.pending, tuple)
        ]
        try:
            outcomes = self.client.step_many(calls)
        except ClientError as exc:
            for rollout in runnable:
                rollout.fail(f"tool call failed on our side: {exc}")
            return
        for rollout, outcome in zip(runnable, outcomes, strict=True):
            rollout.pending = None
            if not isinstance(outcome, SessionStep):
                rollout.fail(f"session gone: {getattr(outcome, 'reason', outcome)}")
            elif outcome.status == "error":
                rollout.fail(f"the tool failed on our side: {outcome.reason}")
            else:
                self._observe(rollout, outcome)

    def _observe(self, rollout: ToolRollout, outcome: SessionStep) -> None:
        rollout.calls += 1
        rollout.errors += outcome.status in TOOL_ERROR_STATUSES
        rollout.must_answer = rollout.must_answer or outcome.status == "session_ended"
        # The observation is cut, never its wrapper: the policy must see where the output ends.
        before, after = self.wrapper.split("{observation}", 1)
        tok = self.backend.tokenizer
        body = plain_ids(tok, outcome.observation)[: self.tools.max_observation_tokens]
        ids = plain_ids(tok, before) + body + plain_ids(tok, after)
        room = self.budget - len(rollout.tokens)
        rollout.append(ids[:room], [0.0] * len(ids[:room]), 0)
        if len(ids) >= room:  # the observation filled the budget: nothing left to answer with
            rollout.truncated = rollout.done = True
            rollout.final_text = ""

    def _verify(self, rollout: ToolRollout) -> Result:
        if rollout.failure is not None or rollout.session_id is None:
            return Result(id=rollout.problem.id, status=Status.ERROR, reason=rollout.failure or "no session")
        response = rollout.hint + rollout.final_text if rollout.calls == 0 else rollout.final_text
        started = time.perf_counter()
        try:
            return self.client.verify_session(rollout.session_id, response)
        except ClientError as exc:
            rollout.failure = f"verify failed: {exc}"
            return Result(id=rollout.problem.id, status=Status.ERROR, reason=rollout.failure)
        finally:
            self.latencies.append(time.perf_counter() - started)

    def _close(self, rollout: ToolRollout) -> None:
        session, rollout.session_id = str(rollout.session_id), None
        with contextlib.suppress(ClientError):  # its TTL ends it; the verdict is already in
            self.client.close_session(session)


def _completion(rollout: ToolRollout) -> Completion:
    return Completion(
        prompt_ids=rollout.prompt_ids,
        token_ids=rollout.tokens,
        text=rollout.final_text,
        logprobs=rollout.logprobs,
        truncated=rollout.truncated,
        action_mask=rollout.mask,
        turns=rollout.turns,
        tool_calls=rollout.calls,
        tool_errors=rollout.errors,
        kept_calling=rollout.kept_calling,
        failure=rollout.failure,
    )
