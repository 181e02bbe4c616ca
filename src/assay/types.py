"""The shared vocabulary of Assay: what comes in (`Item`), what goes out (`Result`, `Status`).

This is the wire contract of DESIGN.md. It changes only additively: trainers and outside checks rely on
every field here. Scorers return `Result`; infrastructure failure is a status, never a reward of 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from enum import StrEnum
from functools import cache
from typing import Any, ClassVar, Protocol, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import from_json

from assay.messages import assistant_text, check_messages

__all__ = [
    "BuiltinFields",
    "Item",
    "Result",
    "Status",
    "TaskFields",
    "TaskInfo",
    "TaskOptions",
    "escape_surrogates",
    "find_surrogate",
    "id_text",
    "lone_surrogate",
    "number_as_text",
    "use_builtin_fields",
]


def lone_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate (U+D800..U+DFFF) in `text`, else None.

    JSON may carry one as an escape (`"\\ud800"`) and Python decodes it into a `str`, but it is not
    Unicode: encoding it to UTF-8 fails, which used to answer HTTP 500 for a whole batch (issue 12)."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def find_surrogate(value: Any, where: str) -> str | None:
    """Where in a JSON-like value (strings, lists, dict keys and values) a lone surrogate sits."""
    if isinstance(value, str):
        at = lone_surrogate(value)
        return None if at is None else f"{where} (character {at})"
    if isinstance(value, list | tuple):
        return next((f for i, v in enumerate(value) if (f := find_surrogate(v, f"{where}[{i}]"))), None)
    if isinstance(value, dict):
        for key, v in value.items():
            found = find_surrogate(key, f"{where} key") or find_surrogate(v, f"{where}.{key}")
            if found:
                return found
    return None


def escape_surrogates(value: Any) -> Any:
    """`value` with each lone surrogate written out as the six characters `\\udXXX`."""
    if isinstance(value, str):
        return value if lone_surrogate(value) is None else value.encode("utf-8", "backslashreplace").decode()
    if isinstance(value, list | tuple):
        return [escape_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {escape_surrogates(k): escape_surrogates(v) for k, v in value.items()}
    return value


def id_text(value: Any) -> Any:
    """An id as the contract echoes it: an integer (not a bool) as its text, since trainers often number
    their samples; anything else unchanged, so the field's own validation still speaks about it. The one
    id coercion: items, groups, and the ids read back from items that failed validation."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


def number_as_text(value: Any) -> Any:
    """A number where text belongs (a reference, an answer, a test's stdout) as its canonical string;
    anything else unchanged, so the field's own validation still speaks about it.

    Datasets store numeric gold answers as JSON numbers or integer Parquet columns; refusing them made
    every such item `invalid` (issue 31). Integers keep all digits; a float that is a whole number loses
    its `.0` (`3.0` -> "3", so a string-matching baseline agrees); other floats use Python's shortest
    round-trip form. Booleans are not numbers here."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return format(value.normalize(), "f") if value.is_finite() else str(value)
    if math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value)


# Item fields that hold text but that datasets often give as numbers.
NUMERIC_TEXT_FIELDS = ("prompt", "response", "reference")


class Status(StrEnum):
    """How scoring ended. Only `ok` carries a reward."""

    OK = "ok"  # a verdict was reached (also: the policy's answer is wrong, missing, too slow or too big)
    INVALID = "invalid"  # the item itself is malformed, or its reference cannot be used
    TIMEOUT = "timeout"  # our deadline passed, not the policy's
    ERROR = "error"  # infrastructure failure (a crashed worker, an unreachable judge)


class Item(BaseModel):
    """One thing to score. Unknown top-level keys are rejected (a typo must not pass silently)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = Field(default=None, description="Echoed back in the result.")
    task: str = Field(description="A registered task name: math, code, sql, judge, prm, or a plugin's.")
    prompt: str | None = Field(default=None, description="The prompt the policy answered.")
    response: str | None = Field(default=None, description="The model's full output.")
    messages: list[dict[str, Any]] | None = Field(
        default=None,
        description='A chat transcript ([{"role", "content"}]) instead of `response`: its assistant turns '
        "are the response scored; tool, user and system text is never read.",
    )
    reference: str | None = Field(
        default=None, description="Gold answer (math), gold SQL (sql), reference answer (judge)."
    )
    options: dict[str, Any] = Field(default_factory=dict, description="Validated by the task's options.")
    # A task's own fields (code's `tests`, sql's `db_id`, repo's `FAIL_TO_PASS`, ...) are declared by the
    # task, in its folder (`Scorer.Fields`, a `TaskFields`): an item of that task is read with
    # `Item.with_fields(Fields)`, which `Item(...)` and `Item.model_validate` pick by `task` (issue 36).

    @model_validator(mode="before")
    @classmethod
    def _response_of_messages(cls, data: Any) -> Any:
        """`response` is the assistant turns of `messages`. Both given must agree (an item dumped and read
        again carries both): a `response` beside a transcript is refused, not silently preferred."""
        if not isinstance(data, dict) or data.get("messages") is None:
            return data
        problem = check_messages(data["messages"])
        if problem is not None:
            raise ValueError(problem)
        text = assistant_text(data["messages"])
        if data.get("response") is not None and data["response"] != text:
            raise ValueError(
                "give response or messages, not both: the response scored is the assistant turns"
            )
        return {**data, "response": text}

    @model_validator(mode="before")
    @classmethod
    def _other_tasks_fields_ignored(cls, data: Any) -> Any:
        """A field that another built-in task declares is accepted and ignored, as it was while every
        task's fields lived on `Item`: a mixed dataset gives every row every column."""
        if not isinstance(data, dict) or _builtin is None:
            return data
        other = _builtin.field_names() & data.keys()
        if not other or other <= cls.model_fields.keys():
            return data
        return {k: v for k, v in data.items() if k not in other or k in cls.model_fields}

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return id_text(value)

    @field_validator(*NUMERIC_TEXT_FIELDS, mode="before")
    @classmethod
    def _number_as_text(cls, value: Any) -> Any:
        return number_as_text(value)

    @model_validator(mode="after")
    def _valid_unicode(self) -> Item:
        for name in type(self).model_fields:
            found = find_surrogate(getattr(self, name), name)
            if found:
                raise ValueError(
                    f"{found} holds a lone surrogate, which is not valid Unicode; send UTF-8 text"
                )
        return self

    FIELDS: ClassVar[frozenset[str]]
    # The task fields this item model adds to Item's (`with_fields`), each importable; () on Item itself.
    task_fields: ClassVar[tuple[type[TaskFields], ...]] = ()

    @staticmethod
    def with_fields(*fields: type[TaskFields] | None) -> type[Item]:
        """`Item` with task fields (`Scorer.Fields`) besides its own: the model an item of a task is read
        with, so its fields are known, typed and checked, and a key none declares is still an unknown
        field. Several: all of them (a plugin extending a built-in scorer keeps that task's fields beside
        its own). One model per set of fields (cached)."""
        parts = _leaves(f for f in fields if f is not None)
        return _with_fields(parts) if parts else Item

    def __new__(cls, *args: Any, **data: Any) -> Any:
        # `Item(task="code", tests=...)` is an item of the code task, read with its fields.
        return super().__new__(cls.model_for(data.get("task")) if cls is Item else cls)

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """As pydantic's; on `Item` itself, an item of a built-in task is read with that task's fields."""
        model = cls.model_for(obj.get("task")) if cls is Item and isinstance(obj, Mapping) else cls
        if model is not cls:
            return model.model_validate(obj, *args, **kwargs)  # type: ignore[return-value]
        return super().model_validate(obj, *args, **kwargs)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, *args: Any, **kwargs: Any) -> Self:
        """As pydantic's; on `Item` itself, an item of a built-in task is read with that task's fields."""
        if cls is Item:
            try:
                obj = from_json(json_data)
            except ValueError:  # not JSON: pydantic's own error says so
                obj = None
            model = cls.model_for(obj.get("task")) if isinstance(obj, dict) else cls
            if model is not cls:
                return model.model_validate_json(json_data, *args, **kwargs)  # type: ignore[return-value]
        return super().model_validate_json(json_data, *args, **kwargs)

    @staticmethod
    def model_for(task: Any) -> type[Item]:
        """The model an item of `task` is read with when no registry is at hand: a built-in task's own
        fields; for any other task every built-in task's, as `Item` held them all before issue 36 (a
        registry's `item_model` also knows its plugins' own fields)."""
        if _builtin is None or not isinstance(task, str):
            return Item
        return Item.with_fields(*_builtin.fields(task))

    def __reduce__(self) -> Any:
        # An item model made by `with_fields` is not importable by name: such an item pickles as its
        # task fields (importable) and its values, and is read again on the other side.
        fields = type(self).task_fields
        if not fields:
            return super().__reduce__()
        return _read_with_fields, (fields, self.model_dump())


Item.FIELDS = frozenset(Item.model_fields)


class BuiltinFields(Protocol):
    """The built-in tasks' own item fields, as `assay.registry` finds them in the task folders."""

    def fields(self, task: str) -> tuple[type[TaskFields], ...]:
        """The fields an item of `task` carries: a built-in task's own (none for math); for any other
        task, every built-in task's."""

    def field_names(self) -> frozenset[str]:
        """Every field some built-in task declares."""


_builtin: BuiltinFields | None = None


def use_builtin_fields(builtin: BuiltinFields) -> None:
    """Installed once by `assay.registry` (imported with `assay`): the vocabulary cannot import the task
    folders, which build on it."""
    global _builtin
    _builtin = builtin


class TaskFields(BaseModel):
    """Base of a task's own item fields (`Scorer.Fields`), for a task whose items carry more than
    `Item`'s: each field optional or defaulted (the wire only gains keys), frozen, unknown keys an error.
    The task reads them typed with `Fields.of(item)`. A field may not take one of `Item`'s names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def of(cls, item: Item) -> Self:
        """This task's fields of `item`: the item itself where it was read with `Item.with_fields(cls)`
        (as every item of the task is), else read from its values (defaults where it has none)."""
        if isinstance(item, cls):
            return item
        return cls.model_validate(item.model_dump(include=set(cls.model_fields)))


def _leaves(fields: Iterable[type[TaskFields]]) -> tuple[type[TaskFields], ...]:
    """The field classes without those another one extends, in a fixed order (one model per set)."""
    unique = list(dict.fromkeys(fields))
    kept = [f for f in unique if not any(other is not f and issubclass(other, f) for other in unique)]
    return tuple(sorted(kept, key=lambda f: (f.__module__, f.__qualname__)))


@cache
def _with_fields(parts: tuple[type[TaskFields], ...]) -> type[Item]:
    owner = dict.fromkeys(Item.FIELDS, "Item")
    for fields in parts:
        for field in fields.model_fields:
            if owner.setdefault(field, fields.__name__) != fields.__name__:
                raise TypeError(f"{fields.__name__} redeclares {owner[field]}'s field {field!r}")
    # Item's fields first, then the task's (pydantic lists the bases' fields from the last base on)
    name = "".join(f.__name__ for f in parts) + "Item"
    model: type[Item] = type(name, (*parts, Item), {"__module__": parts[0].__module__})
    model.task_fields = parts
    return model


def _read_with_fields(fields: tuple[type[TaskFields], ...], values: dict[str, Any]) -> Item:
    return Item.with_fields(*fields).model_validate(values)


class Result(BaseModel):
    """The verdict on one item. `reward` is a float exactly when `status` is ok."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    task: str | None = None
    status: Status
    correct: bool | None = Field(default=None, description="A bool for verifiable tasks; null if graded.")
    reward: float | None = Field(default=None, description="Null unless status is ok.")
    reason: str = ""
    extracted: str | None = Field(default=None, description="What was taken from the response.")
    details: dict[str, Any] = Field(default_factory=dict)
    elapsed_ms: float = 0.0

    @model_validator(mode="after")
    def _reward_only_when_ok(self) -> Result:
        if self.status is Status.OK and self.reward is None:
            raise ValueError("an ok result needs a reward")
        if self.status is not Status.OK and self.reward is not None:
            raise ValueError(f"a {self.status.value} result has no reward (got {self.reward})")
        return self

    def json_safe(self) -> Result:
        """This result with lone surrogates (echoed from a bad item) escaped, so it always serialises."""
        fields = ("id", "task", "reason", "extracted", "details")
        update = {
            f: escape_surrogates(getattr(self, f)) for f in fields if find_surrogate(getattr(self, f), f)
        }
        return self.model_copy(update=update) if update else self

    # Constructors that keep the status/reward rule in one place.
    @classmethod
    def verdict(cls, correct: bool, reason: str = "", **fields: Any) -> Result:
        """A verifiable verdict: reward 1.0 if correct else 0.0."""
        return cls(status=Status.OK, correct=correct, reward=1.0 if correct else 0.0, reason=reason, **fields)

    @classmethod
    def partial(cls, correct: bool, reward: float, reason: str = "", **fields: Any) -> Result:
        """A verdict with partial credit (a share of the tests passed, a query that runs but answers
        wrong): `correct` is the verdict, `reward` in [0, 1] need not be 0 or 1."""
        if not 0.0 <= reward <= 1.0:
            raise ValueError(f"a partial reward is in [0, 1], got {reward}")
        return cls(status=Status.OK, correct=correct, reward=float(reward), reason=reason, **fields)

    @classmethod
    def graded(cls, reward: float, reason: str = "", **fields: Any) -> Result:
        """A graded score (judge, prm): `correct` stays null."""
        return cls(status=Status.OK, correct=None, reward=float(reward), reason=reason, **fields)

    @classmethod
    def invalid(cls, reason: str, **fields: Any) -> Result:
        return cls(status=Status.INVALID, reason=reason, **fields)

    @classmethod
    def timeout(cls, reason: str, **fields: Any) -> Result:
        return cls(status=Status.TIMEOUT, reason=reason, **fields)

    @classmethod
    def error(cls, reason: str, **fields: Any) -> Result:
        return cls(status=Status.ERROR, reason=reason, **fields)

    @classmethod
    def of_error(cls, exc: Exception) -> Result:
        """The result an `AssayError` ends as: its own status, its message and details (the one place
        failures become statuses; see assay.errors)."""
        details = dict(getattr(exc, "details", None) or {})
        return cls(status=Status(getattr(exc, "status", Status.ERROR)), reason=str(exc), details=details)


class TaskOptions(BaseModel):
    """Base of every task's options model: frozen, unknown keys are an error, and no number is infinite
    or NaN (a client's `rel_tol: Infinity` matched any number; issue 28). Each numeric field also
    carries bounds of its own."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class TaskInfo(BaseModel):
    """What `GET /v1/tasks` says about one task."""

    name: str
    description: str
    item_fields: list[str]
    options_schema: dict[str, Any]
    runtime: dict[str, Any] | None = Field(
        None, description="What the task's execution environment offers (code: languages, packages)."
    )
    tools: list[str] = Field(
        default_factory=list,
        description="The session tools the task brings (GET /v1/tasks lists their schemas under `tools`);"
        " python, the tool of no one task, serves every task.",
    )
