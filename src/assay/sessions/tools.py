"""Session tools: plugins like tasks. A tool is a name, an arguments model (its JSON schema is what the
policy sees), an options model (server-side settings), and a `call` that turns arguments into an
`Observation`.

Writing one (another package can; register it under the `assay.tools` entry-point group or list it in
`sessions.plugins`):

    class Echo(Tool[EchoArgs]):
        name = "echo"
        description = "Repeat the text."
        Arguments = EchoArgs

        def call(self, session, arguments):
            return Observation(arguments.text)

`open` builds what a tool keeps per session (a sandbox, a database connection) and `close` frees it; the
state lives there, never in the API process's own memory beyond a handle. A tool is total: a failure of
the policy's call is an `Observation` with status `tool_error`, shown to the model; only our side failing
raises.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from assay.errors import ConfigError, ItemError
from assay.registry import Registry, Scorer, load_object
from assay.suggest import did_you_mean

if TYPE_CHECKING:
    from assay.sessions.limits import SessionLimits
    from assay.settings import Settings
    from assay.types import Item

__all__ = [
    "Observation",
    "SessionContext",
    "Tool",
    "ToolArguments",
    "ToolRegistry",
    "ToolUnavailable",
    "task_tools",
]

ENTRY_POINT_GROUP = "assay.tools"
# The tools of no one task; every other tool comes with the task that offers it (`Scorer.tools`).
BUILTIN_TOOLS: dict[str, str] = {"python": "assay.sessions.python_tool:PythonTool"}


def task_tools(task: type[Scorer]) -> list[str]:
    """The tools a session of `task` holds when its caller names none: the tools the task brings
    (`Scorer.tools`), else the tools of no one task (python)."""
    return list(task.tools or BUILTIN_TOOLS)


OK, TOOL_ERROR, INVALID_CALL, SESSION_ENDED = "ok", "tool_error", "invalid_call", "session_ended"
ERROR = "error"  # our side failed during the call (not the policy's doing); the session goes on


class ToolArguments(BaseModel):
    """Base of a tool's arguments: unknown keys are refused (a typo is shown to the model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


ArgsT = TypeVar("ArgsT", bound=ToolArguments)


@dataclass(frozen=True)
class Observation:
    """What one call shows the model. `status`: ok, tool_error (the call failed: a traceback, a bad
    query, a timeout), invalid_call (no such tool, bad arguments), session_ended (the call ended the
    session; `reason` says why), error (our side failed; not the policy's doing)."""

    text: str
    status: str = OK
    reason: str | None = None
    truncated: int = 0  # bytes of output dropped past the output cap
    details: dict[str, Any] = field(default_factory=dict)


class ToolUnavailable(ItemError):
    """The tool cannot serve this item (sql without a db_id, run_tests without tests): HTTP 422."""


@dataclass
class SessionContext:
    """What a tool sees of its session: the item (without the response), the limits, and the session id
    (for naming its sandbox). Tools keep their own per-session state in what `open` returns."""

    session_id: str
    item: Item
    limits: SessionLimits


class Tool(Generic[ArgsT]):
    """Base class of every tool. Subclasses set the class attributes and implement `call`."""

    name: ClassVar[str]
    description: ClassVar[str]
    Arguments: ClassVar[type[ToolArguments]]

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def check(self, item: Item) -> None:
        """Raise ToolUnavailable when this item gives the tool nothing to work on."""

    def open(self, session: SessionContext) -> Any:
        """Per-session state (started when the session is created). None: the tool keeps none."""
        return None

    def call(self, session: SessionContext, state: Any, arguments: ArgsT) -> Observation:
        raise NotImplementedError

    def close(self, state: Any) -> None:
        """Free what `open` built. Called once, from any thread; must not raise."""

    def shutdown(self) -> None:
        """The server is stopping: free what the tool shares between sessions (pools, cgroups)."""

    def alive(self, state: Any) -> str | None:
        """None while the state is usable; else why not (the session then ends with that reason)."""
        return None

    @classmethod
    def schema(cls) -> dict[str, Any]:
        """The OpenAI function-tool schema the policy is prompted with."""
        parameters = cls.Arguments.model_json_schema()
        parameters.pop("title", None)
        for prop in parameters.get("properties", {}).values():
            prop.pop("title", None)
        return {
            "type": "function",
            "function": {"name": cls.name, "description": cls.description, "parameters": parameters},
        }


def _load(path: str) -> type[Tool[Any]]:
    obj = load_object(path, "tool plugin")
    if not (isinstance(obj, type) and issubclass(obj, Tool)):
        raise ConfigError(f'tool plugin "{path}" is not a subclass of assay.sessions.Tool')
    return obj


class ToolRegistry(Mapping[str, type[Tool[Any]]]):
    """The tools one server offers: built-ins, its tasks' tools, `assay.tools` entry points, then
    `sessions.plugins`."""

    def __init__(self, tools: Mapping[str, type[Tool[Any]]]) -> None:
        self._tools = dict(tools)

    @classmethod
    def from_settings(cls, settings: Settings) -> ToolRegistry:
        offered = dict(BUILTIN_TOOLS)
        for task in Registry.from_settings(settings).values():
            offered.update(task.tools)
        found = {name: _load(path) for name, path in offered.items()}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            found[ep.name] = _load(ep.value)
        for path in settings.sessions.plugins:
            tool = _load(path)
            found[tool.name] = tool
        return cls(found)

    def __getitem__(self, name: str) -> type[Tool[Any]]:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._tools))

    def __len__(self) -> int:
        return len(self._tools)

    def lookup(self, name: str) -> type[Tool[Any]]:
        try:
            return self._tools[name]
        except KeyError:
            raise ToolUnavailable(
                f'unknown tool "{name}"{did_you_mean(name, self._tools)}; known tools: {", ".join(self)}'
            ) from None

    def info(self) -> list[dict[str, Any]]:
        """What `GET /v1/tasks` lists under `tools`."""
        return [self._tools[name].schema() for name in self]
