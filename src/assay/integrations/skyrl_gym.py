"""A SkyRL-gym environment over an Assay session: `skyrl_gym.make("assay", env_config, extras=row)`.

SkyRL's generator (skyrl-train's `SkyRLGymGenerator`) builds one environment per trajectory with
`skyrl_gym.make(env_class, env_config=..., extras=row)`, calls `init(prompt)`, then `step(action)` with
each model turn until `done`, and `close()`; it runs those calls in a thread pool
(`max_env_workers`), so the environment is synchronous. `AssayGymEnv` maps that onto one Assay session:

- `init` opens the session on the row's item (waiting while the server is full); a single-turn
  environment (`max_turns` 1, SkyRL's default) opens none: its one turn can call no tool, and it is
  scored as `POST /v1/rewards` scores it, without a sandbox;
- a turn with a tool call is one session step; its observation is the next user message, reward 0.0
  (SkyRL's convention for intermediate turns: its own envs pay only on the final turn);
- a turn with `<answer>...</answer>`, or the last turn (`max_turns`), is verified by Assay, exactly as
  `POST /v1/rewards` scores the item with that turn as the response; the session is closed then, on an
  error, and on `close()`.

The row (SkyRL's dataset columns other than `prompt` and `env_class`): `reward_spec.ground_truth` is the
item's `reference`; `assay` holds the other item fields (`task`, default math; `options`, `tests`,
`db_id`, ...) and may name the session's `tools`. `env_config` (SkyRL's `environment.skyrl_gym.assay`):
`url` (else `ASSAY_URL`), `tools` (default: the tools the item's task brings, as `GET /v1/tasks` lists
them; python for a task that brings none), `limits`, `max_turns` (SkyRL's generator sets
`extras["max_turns"]`, which wins), `open_wait_s` (default 600), `unscored`.

Unscored is not 0. SkyRL 0.3.1's generator reads only `reward` and `done` of a step (it drops
`metadata`), asserts a step's reward is not None and has no way to mask a trajectory. So by default
(`unscored: raise`) a verdict that is not `ok`, or a failure of Assay's, raises `RewardUnavailable`
with Assay's status and reason (the session closed first), and the generation fails loudly;
`unscored: none` returns `reward: None` with `done: true`, for loops that mask such samples. Either way
`metadata["assay"]` carries the verdict and `get_metrics()` counts it (`assay_unscored`).
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from skyrl_gym import error as gym_error
from skyrl_gym import register as gym_register
from skyrl_gym import registry as gym_registry
from skyrl_gym.envs.base_text_env import BaseTextEnv

from assay.client import AssayClient
from assay.errors import ClientError, PayloadError, RewardUnavailable, ServiceError, SessionGoneError
from assay.integrations.clients import (
    assay_url,
    listed_tasks,
    session_tools,
    shared_sync_session_client,
)
from assay.types import Result

__all__ = [
    "ENV_ID",
    "AssayGymEnv",
    "parse_call",
    "register",
]

ENV_ID = "assay"
ENTRY_POINT = "assay.integrations.skyrl_gym:AssayGymEnv"
_ANSWER = re.compile(r"<answer>.*?</answer>", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_REOPEN_S = 1.0  # seconds between rounds of opening a session on a full server (Assay's Retry-After)
_REFUSED = (413, 422)  # a call the server would not take (too large, malformed): the policy's doing


def register(env_id: str = ENV_ID) -> None:
    """Register `AssayGymEnv` in skyrl_gym's registry under `env_id` (SkyRL's `environment.env_class`).

    Idempotent for this entry point; another environment already under `env_id` is skyrl_gym's
    RegistrationError."""
    spec = gym_registry.get(env_id)
    if spec is not None and spec.entry_point in (ENTRY_POINT, AssayGymEnv):
        return
    if spec is not None:
        raise gym_error.RegistrationError(
            f"skyrl_gym already has an environment {env_id!r}: {spec.entry_point}"
        )
    gym_register(id=env_id, entry_point=ENTRY_POINT)


class AssayGymEnv(BaseTextEnv):
    """One trajectory, one Assay session: tool calls are session steps, the answer is Assay's verdict."""

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        config = _plain(env_config)
        row = dict(extras or {})
        self.url = assay_url(config.get("url"))
        self.item, tools = _item(row)
        named = tools or config.get("tools")
        self.tools: list[str] | None = list(named) if named else None  # None: the task's own (`_open`)
        self.limits = dict(config.get("limits") or {})
        self.max_turns = int(row.get("max_turns") or config.get("max_turns") or 1)
        self.open_wait_s = float(config.get("open_wait_s", 600.0))
        self.unscored = str(config.get("unscored", "raise"))
        if self.unscored not in ("raise", "none"):
            raise ValueError(f"env_config.unscored is 'raise' or 'none', not {self.unscored!r}")
        self.session_id: str | None = None
        self._arguments: dict[str, str | None] = {}  # tool -> its one required argument (tag form)
        self._failure: dict[str, Any] | None = None  # why the session could not be opened
        self._verdict: dict[str, Any] = {}
        self._calls = 0
        self._open_turns = False  # between init and the episode's end

    def _client(self) -> AssayClient:
        return shared_sync_session_client(self.url)

    # -- skyrl_gym's interface ---------------------------------------------------------------------
    def init(self, prompt: Any) -> tuple[Any, dict[str, Any]]:
        """Open the trajectory's session; the prompt goes on unchanged (it names the tools and tags)."""
        self.close()
        self.turns, self._calls, self._verdict, self._failure = 0, 0, {}, None
        self._open_turns = True
        if self.max_turns <= 1:  # one turn, the answer: no tool to call, no session to hold
            return prompt, {"assay": {"tools": []}}
        try:
            opened = self._open()
        except ClientError as exc:  # the first step reports it; a 422 is the row's item, refused
            status = "invalid" if isinstance(exc, ServiceError) and exc.status_code == 422 else "error"
            self._failure = {"status": status, "reason": f"cannot open an Assay session: {exc}"}
            return prompt, {"assay": dict(self._failure)}
        except ValueError as exc:  # the row names a task the server does not have
            self._failure = {"status": "invalid", "reason": f"cannot open an Assay session: {exc}"}
            return prompt, {"assay": dict(self._failure)}
        self.session_id = opened.session_id
        self._arguments = {_name(schema): _main_argument(schema) for schema in opened.tools}
        return prompt, {"assay": {"session_id": self.session_id, "tools": opened.tools}}

    def step(self, action: str) -> dict[str, Any]:
        """One model turn: a tool call (an observation back), or the answer (Assay's verdict)."""
        if not self._open_turns:  # never started, or the episode ended (done) or was closed
            raise RuntimeError("step outside an episode: init(prompt) starts one, done or close() ends it")
        self.turns += 1
        if self._failure is not None:
            return self._unscored(self._failure)
        text = action if isinstance(action, str) else str(action)
        if _ANSWER.search(text) or self.turns >= self.max_turns:
            return self._verify(text)
        return self._tool_turn(text)

    def close(self) -> None:
        """End the session (idempotent; an unreachable server leaves it to the session's TTL)."""
        session_id, self.session_id, self._open_turns = self.session_id, None, False
        if session_id is not None:
            with contextlib.suppress(ClientError):
                self._client().close_session(session_id)

    def __del__(self) -> None:
        """Dropped without close(): SkyRL's generator drops the other trajectories' environments when one
        of them raises (its gather fails); their sessions end here rather than at their TTL."""
        with contextlib.suppress(Exception):  # at interpreter exit the client may already be closed
            self.close()

    def get_metrics(self) -> dict[str, Any]:
        """Per-episode numbers SkyRL averages over a batch: tool calls, unscored, correct (scored only)."""
        metrics: dict[str, Any] = {"assay_tool_calls": self._calls}
        if self._verdict:
            metrics["assay_unscored"] = float(self._verdict.get("reward") is None)
            if isinstance(self._verdict.get("correct"), bool):
                metrics["assay_correct"] = float(self._verdict["correct"])
        return metrics

    # -- the turns ---------------------------------------------------------------------------------
    def _open(self) -> Any:
        """Open a session, waiting while the server is full (429; the client honours Retry-After).

        The wait is bounded: SkyRL runs `init` on one of its `max_env_workers` threads, and when every
        thread holds a trajectory waiting for a session, the trajectories that hold sessions cannot step
        and free them (measured: 64 trajectories, 32 threads, 32 sessions never finished)."""
        deadline = time.monotonic() + self.open_wait_s
        if self.tools is None:
            self.tools = session_tools(listed_tasks(self.url), None, self.item.get("task"))
        while True:
            try:
                return self._client().open_session(self.item, self.tools, self.limits)
            except ServiceError as exc:
                if exc.status_code != 429:
                    raise
                if time.monotonic() >= deadline:
                    raise ServiceError(
                        f"the Assay server stayed full for {self.open_wait_s:g} s: size its sessions.max_open"
                        " for the trajectories in flight (each waiting one holds a SkyRL env thread)",
                        429,
                    ) from exc
            # jittered, so that waiting trajectories do not come back in lock-step
            time.sleep(min(max(0.0, deadline - time.monotonic()), _REOPEN_S * random.uniform(1.0, 1.5)))

    def _tool_turn(self, action: str) -> dict[str, Any]:
        call = parse_call(action, self._arguments)
        if isinstance(call, str):
            return _observe(call, {"status": "no_call"})
        tool, arguments = call
        assert self.session_id is not None
        try:
            step = self._client().step(self.session_id, tool, arguments)
        except SessionGoneError as exc:  # its step limit, its interpreter gone: the answer still counts
            return _observe(f"[session ended: {exc.reason}]", {"tool": tool, "status": "session_gone"})
        except ServiceError as exc:
            if exc.status_code not in _REFUSED:
                return self._unscored({"status": "error", "reason": f"the {tool} call failed: {exc}"})
            return _observe(f"[tool call refused: {exc}]", {"tool": tool, "status": "refused"})
        except PayloadError as exc:  # text JSON cannot carry (a lone surrogate)
            return _observe(f"[tool call refused: {exc}]", {"tool": tool, "status": "refused"})
        except ClientError as exc:
            return self._unscored({"status": "error", "reason": f"the {tool} call failed: {exc}"})
        if step.status == "error":  # the tool failed on the server's side: not the policy's doing
            return self._unscored({"status": "error", "reason": f"Assay's {tool} tool failed: {step.reason}"})
        self._calls += 1
        return _observe(step.observation, {"tool": tool, "status": step.status, "step": step.step})

    def _verify(self, action: str) -> dict[str, Any]:
        """Assay's verdict on the final turn (the policy's own text, never a tool's output): the
        session's verify, or, single-turn, the item scored with it as the response."""
        try:
            if self.session_id is None:
                (result,) = self._client().score([{**self.item, "response": action}])
            else:
                result = self._client().verify_session(self.session_id, action)
        except ClientError as exc:
            return self._unscored({"status": "error", "reason": f"verify failed: {exc}"})
        finally:
            self.close()
        self._verdict = _verdict(result)
        if result.reward is None:
            return self._unscored(self._verdict)
        return _done(float(result.reward), self._verdict)

    def _unscored(self, verdict: dict[str, Any]) -> dict[str, Any]:
        """No reward: RewardUnavailable (`unscored: raise`) or `reward: None` (`unscored: none`)."""
        self.close()
        self._verdict = {"reward": None, "correct": None, **verdict}
        if self.unscored == "raise":
            raise RewardUnavailable(f"Assay returned {verdict['status']}: {verdict.get('reason')}")
        return _done(None, self._verdict)


def parse_call(action: str, tools: Mapping[str, str | None]) -> tuple[str, Any] | str:
    """The first tool call in `action`, as `(tool, arguments)`, or what to tell the policy instead.

    Two forms: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` (Hermes/Qwen), for any tool;
    and `<NAME>text</NAME>` (SkyRL's `<sql>`, `<python>` tags) for a session tool with one required
    argument, which gets the text. The server validates the tool and its arguments."""
    found: list[tuple[int, str, str]] = []
    if (match := _TOOL_CALL.search(action)) is not None:
        found.append((match.start(), "", match.group(1)))
    for name, argument in tools.items():
        if argument is not None:
            tag = re.escape(name)
            if (match := re.search(rf"<{tag}>(.*?)</{tag}>", action, re.DOTALL)) is not None:
                found.append((match.start(), name, match.group(1)))
    if not found:
        forms = ", ".join(f"<{name}>...</{name}>" for name, arg in tools.items() if arg is not None)
        return (
            "[no tool call found: call a tool with "
            + (f"{forms} or " if forms else "")
            + '<tool_call>{"name": ..., "arguments": {...}}</tool_call>,'
            + " or answer inside <answer>...</answer>]"
        )
    _, name, body = min(found)
    if name:
        return name, {tools[name]: body.strip("\n")}
    return _json_call(body)


def _json_call(body: str) -> tuple[str, Any] | str:
    try:
        call = json.loads(body)
    except ValueError as exc:
        return f"[malformed tool call: the <tool_call> body is not JSON ({exc})]"
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return '[malformed tool call: expected {"name": "<tool>", "arguments": {...}}]'
    return call["name"], call.get("arguments") or {}


def _observe(text: str, info: dict[str, Any]) -> dict[str, Any]:
    return {
        "observations": [{"role": "user", "content": text}],
        "reward": 0.0,
        "done": False,
        "metadata": {"assay": info},
    }


def _done(reward: float | None, verdict: dict[str, Any]) -> dict[str, Any]:
    return {"observations": [], "reward": reward, "done": True, "metadata": {"assay": verdict}}


def _verdict(result: Result) -> dict[str, Any]:
    return {
        "status": result.status.value,
        "reward": result.reward,
        "correct": result.correct,
        "reason": result.reason,
    }


def _item(row: Mapping[str, Any]) -> tuple[dict[str, Any], Sequence[str] | None]:
    """The Assay item of a SkyRL row, and the tools it names: `assay` fields + the ground truth."""
    fields = _plain(row.get("assay"))
    tools = fields.pop("tools", None)
    item = {"task": "math", **fields}
    spec = _plain(row.get("reward_spec"))
    if "reference" not in item and spec.get("ground_truth") is not None:
        item["reference"] = str(spec["ground_truth"])
    return item, tools


def _plain(value: Any) -> dict[str, Any]:
    """A dict of an omegaconf DictConfig (SkyRL's env_config), a mapping, or None."""
    if value is None:
        return {}
    if hasattr(value, "_metadata"):  # an omegaconf container; omegaconf comes with skyrl_gym
        from omegaconf import OmegaConf

        value = OmegaConf.to_container(value, resolve=True)
    return dict(value) if isinstance(value, Mapping) else {}


def _name(schema: Mapping[str, Any]) -> str:
    return str(schema.get("function", {}).get("name", ""))


def _main_argument(schema: Mapping[str, Any]) -> str | None:
    """The tool's one required string argument (python's `code`, sql's `query`), else None."""
    parameters = schema.get("function", {}).get("parameters") or {}
    required = list(parameters.get("required") or [])
    if len(required) != 1:
        return None
    kind = (parameters.get("properties") or {}).get(required[0], {}).get("type")
    return str(required[0]) if kind == "string" else None
