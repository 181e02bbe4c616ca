"""A TRL environment over an Assay session, for `GRPOTrainer(environment_factory=...)`.

TRL 1.16 builds one environment per rollout from `environment_factory`, calls `reset(**row)` with the
dataset row before generation, and offers every other public method *of the environment's class* as a
tool (`inspect.getmembers(type(env))`; the schema from the method's signature and docstring, through
transformers' `get_json_schema`). An `AssayEnv` therefore is an instance of a class made for its tools:
one method per session tool named in the constructor (`tools`, or the tools its `task` brings; default:
`python`), whose signature and docstring are written from the tool's schema as the server lists it (`GET
/v1/tasks`), so the model is offered the arguments the server validates, for any tool a task brings
(`sql`, `run_tests`, `repo`, a plugin's).
`reset` opens a fresh Assay session on the row's item fields (and ends the previous one).

There is no `get_reward`: TRL calls it without the completion, and a verdict needs the final response;
score with Assay's TRL reward function (`assay.integrations.trl`), the same verdict path as `verify`. TRL
ships no HTTP client for OpenEnv servers in 1.16, so this speaks Assay's own session routes (with OpenEnv
installed, its client drives the same sessions through `/openenv`: docs/sessions.md).

    from functools import partial
    GRPOTrainer(..., environment_factory=partial(AssayEnv, url="http://127.0.0.1:8000", task="sql"))
"""

from __future__ import annotations

import contextlib
import inspect
import keyword
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, Union

import httpx

from assay.integrations.clients import shared_http, task_tools
from assay.integrations.signatures import JSON_TYPES, parameters
from assay.suggest import did_you_mean
from assay.types import Item

__all__ = [
    "AssayEnv",
    "AssayPythonEnv",
]

_NOT_FROM_ROWS = {"response", "id"}  # the rollout writes the response; a session item needs no id
_RESERVED = {"reset", "get_reward"}  # what TRL does not offer as a tool


class AssayEnv:
    """One rollout's Assay session with session tools as TRL tools: `tools` (names), else the tools
    `task` brings (python when it brings none; rows that name no task are `task`'s), else python."""

    def __init__(
        self,
        url: str = "http://127.0.0.1:8000",
        limits: dict[str, Any] | None = None,
        tools: Sequence[str] | None = None,
        task: str | None = None,
    ) -> None:
        listed = _listed(url.rstrip("/"))
        schemas = _schemas(url.rstrip("/"), listed, _tool_names(listed, tools, task))
        # TRL lists the tools on the class: this instance's class is one made for its tools.
        methods = {schema["function"]["name"]: _method(schema["function"]) for schema in schemas}
        name = f"{type(self).__name__}[{','.join(methods)}]"
        self.__class__ = type(name, (type(self),), {**methods, "__module__": __name__})
        self._client = shared_http(url.rstrip("/"))  # one pool per process, not one per environment
        self._limits = dict(limits or {})
        self._tools = list(methods)
        self._task = task or "math"
        # The fields a row of each task may give: Item's and the task's own (`item_fields` lists them).
        self._fields = {info["name"]: set(info["item_fields"]) for info in listed["tasks"]}
        self._session: str | None = None

    def reset(self, **row: Any) -> str | None:
        """Start a new rollout: a fresh session on the row's item fields (task, reference, tests, ...)."""
        self._end()
        task = row.get("task") or self._task
        fields = (Item.FIELDS | self._fields.get(task, set())) - _NOT_FROM_ROWS
        item = {k: v for k, v in row.items() if k in fields and v is not None}
        if not isinstance(item.get("prompt"), str):
            item.pop("prompt", None)  # a conversational prompt is a list of messages
        item.setdefault("task", self._task)
        response = self._client.post(
            "/v1/sessions", json={"item": item, "tools": self._tools, "limits": self._limits}
        )
        response.raise_for_status()
        self._session = response.json()["session_id"]
        return None

    def _step(self, tool: str, arguments: dict[str, Any]) -> str:
        """One call of `tool`: its observation (a traceback or a refused query too)."""
        if self._session is None:
            return "[no session: reset was not called]"
        response = self._client.post(
            f"/v1/sessions/{self._session}/step", json={"tool": tool, "arguments": arguments}
        )
        if response.status_code in (404, 410):
            return f"[session ended: {response.json()['error'].get('reason', 'gone')}]"
        response.raise_for_status()
        return str(response.json()["observation"])

    def __del__(self) -> None:
        """TRL has no close hook: the last session ends here (or at its TTL)."""
        if getattr(self, "_client", None) is None:  # __init__ never ran
            return
        with contextlib.suppress(httpx.HTTPError, RuntimeError):
            self._end()

    def _end(self) -> None:
        if self._session is not None:
            self._client.delete(f"/v1/sessions/{self._session}")
            self._session = None


# The name existing users know: an `AssayEnv` with its default tool, python.
AssayPythonEnv = AssayEnv


def _listed(url: str) -> dict[str, Any]:
    """What the server's GET /v1/tasks says."""
    response = httpx.get(f"{url}/v1/tasks", timeout=60.0)
    response.raise_for_status()
    return dict(response.json())


def _tool_names(listed: dict[str, Any], tools: Sequence[str] | None, task: str | None) -> list[str]:
    """`tools` when named; else the tools `task`'s sessions hold (`task_tools`), math's when none."""
    return list(tools) if tools is not None else task_tools(listed, task or "math")


def _schemas(url: str, listed: dict[str, Any], names: list[str]) -> list[dict[str, Any]]:
    """The OpenAI function schemas of the named tools, as the server lists them."""
    if not names:
        raise ValueError("an AssayEnv needs at least one tool")
    offered = {schema["function"]["name"]: schema for schema in listed["tools"]}
    for name in names:
        if name not in offered:
            raise ValueError(
                f'the Assay server at {url} has no tool "{name}"{did_you_mean(name, offered)};'
                f" its tools: {', '.join(sorted(offered)) or 'none'}"
            )
        if name in _RESERVED or name.startswith("_") or not _usable(name):
            raise ValueError(f'a tool named "{name}" cannot be a TRL environment method')
    return [offered[name] for name in dict.fromkeys(names)]


def _usable(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _method(function: dict[str, Any]) -> Callable[..., str]:
    """A method that steps the session's tool, with the signature and Google-style docstring that
    transformers' `get_json_schema` reads back into the tool's schema."""
    name = function["name"]
    properties, required, ordered = parameters(function)
    for arg in properties:
        if not _usable(arg) or arg == "self":
            raise ValueError(f'tool "{name}": argument "{arg}" cannot be a Python parameter name')
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    params += [
        inspect.Parameter(
            arg,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            annotation=_hint(properties[arg]),
            **({} if arg in required else {"default": properties[arg].get("default")}),
        )
        for arg in ordered
    ]
    signature = inspect.Signature(params, return_annotation=str)

    def tool(self: AssayEnv, *args: Any, **kwargs: Any) -> str:
        bound = signature.bind(self, *args, **kwargs)
        return self._step(name, {k: v for k, v in bound.arguments.items() if k != "self"})

    tool.__name__ = tool.__qualname__ = name
    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__annotations__ = {arg: _hint(properties[arg]) for arg in ordered} | {"return": str}
    tool.__doc__ = _docstring(str(function.get("description") or name), properties, ordered)
    return tool


def _docstring(description: str, properties: dict[str, Any], ordered: list[str]) -> str:
    lines = [_one_line(description), "", "Args:"]
    lines += [f"    {arg}: {_one_line(str(properties[arg].get('description') or arg))}" for arg in ordered]
    return "\n".join(lines)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _hint(schema: dict[str, Any]) -> Any:
    """The Python type hint of one JSON-schema property (what `get_json_schema` turns back into it)."""
    if "enum" in schema:
        return Literal[tuple(schema["enum"])]
    if "anyOf" in schema:
        return Union[tuple(_hint(option) for option in schema["anyOf"])]  # noqa: UP007
    kind = schema.get("type")
    if isinstance(kind, list):
        return Union[tuple(JSON_TYPES.get(k, Any) for k in kind)]  # noqa: UP007
    if kind == "array" and isinstance(schema.get("items"), dict):
        return list[_hint(schema["items"])]  # type: ignore[misc]
    return JSON_TYPES.get(str(kind), Any)
