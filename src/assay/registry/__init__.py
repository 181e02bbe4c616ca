"""Task name -> scorer, with plugins and "did you mean" errors.

A scorer is a plain class (see `Scorer`): a name, a frozen options model, and a synchronous
`score(item, options) -> Result` that is total (bad input maps to a status with a reason). `runs_in` says
where the pipeline runs it:

- "process": in the killable worker pool (CPU-bound, may hang: math, sql). Built once per worker.
- "thread":  in a thread (waits on something that enforces its own deadline: code sandboxes).
- "async":   `ascore` on the event loop (network-bound: judges, prm over HTTP).

A scorer may also review other tasks' verdicts (`reviews`, `review`): the judge's second opinion on math
answers the rules rejected is one, registered by the judges package through its scorer.

Built-in tasks are the task folders under `assay/verifiers/` (a package whose `__init__` sets
`TASK = "module:Class"`; `assay new-task NAME` writes one): math, code, sql, repo, judge, prm,
reasoning_gym. Third-party tasks register through the `assay.tasks` entry-point group; `Settings.plugins`
adds "module:Class" paths (tests, private deployments). A task brings its session tools (`Scorer.tools`) and
may bring a generator of its items (`Scorer.source`, a run config's `data.source`).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar
from weakref import WeakKeyDictionary

from pydantic import ValidationError

from assay.errors import ConfigError, OptionsError, UnknownTaskError
from assay.registry.audit import Probe as AuditProbe
from assay.registry.equivalence import Equivalence, MutualVerdicts
from assay.registry.gate import Gate
from assay.settings import Section as SettingsSection
from assay.settings import Settings
from assay.suggest import did_you_mean
from assay.types import Item, Result, TaskFields, TaskInfo, TaskOptions, use_builtin_fields

if TYPE_CHECKING:
    from prometheus_client.registry import Collector

__all__ = [
    "Audit",
    "AuditProbe",
    "Equivalence",
    "Finding",
    "Gate",
    "MutualVerdicts",
    "Recheck",
    "Registry",
    "Scorer",
    "Source",
    "Validation",
    "ValidationProbe",
    "folder_tasks",
    "load_object",
    "read_section",
]

Runner = Literal["process", "thread", "async"]
Expect = Literal["accepted", "rejected"]

OptionsT = TypeVar("OptionsT", bound=TaskOptions)
SectionT = TypeVar("SectionT", bound=SettingsSection)

ENTRY_POINT_GROUP = "assay.tasks"

# The tasks that ship with Assay: each sub-package of TASK_FOLDERS that sets TASK = "module:Class". A task
# whose extra is missing still registers: its scorer reports the missing extra per item instead of
# breaking start-up.
TASK_FOLDERS = "assay.verifiers"


def folder_tasks() -> dict[str, str]:
    """The task folders under `TASK_FOLDERS`, by folder name: what a task folder declares in its
    `__init__` (`TASK`), so a new folder is a new task with no edit anywhere else."""
    home = importlib.import_module(TASK_FOLDERS)
    found = {}
    for info in pkgutil.iter_modules(home.__path__):
        if info.ispkg:
            path = getattr(importlib.import_module(f"{TASK_FOLDERS}.{info.name}"), "TASK", None)
            if isinstance(path, str):
                found[info.name] = path
    return found


@dataclass(frozen=True)
class ValidationProbe:
    """One answer whose verdict a well-posed task fixes in advance (`assay validate`): scored as an
    ordinary item through the engine, so validation never disagrees with the reward a trainer gets."""

    task: int  # index of the task in the input
    item: dict[str, Any]
    expect: Expect  # accepted: judged correct; rejected: earns no reward
    label: str  # what the response is, in words, for the report
    run: int = 0  # which repeat of a determinism probe

    @classmethod
    def answer(
        cls, index: int, item: Item, response: str, expect: Expect, label: str, run: int = 0
    ) -> ValidationProbe:
        """The probe that scores `item` with `response` in place of its own."""
        raw = item.model_dump(exclude_none=True)
        raw["response"] = response
        raw.pop("id", None)
        return cls(index, raw, expect, label, run)


@dataclass(frozen=True)
class Finding:
    """What a task reads in its probes' results beyond accepted/rejected, for the task's report."""

    check: str  # a problem name of `assay validate` (reference_rejected, nondeterministic, ...)
    reason: str
    severity: Literal["error", "warning"] = "error"


class Recheck:
    """A check of the tasks that passed their probes, opened once per validation run (it may keep copies
    of the data it reads between tasks, as the sql task's storage-order check does) and closed after."""

    def findings(self, item: Item) -> list[Finding]:
        return []

    def close(self) -> None:
        """Free what the check kept (temporary copies)."""


class Validation:
    """What `assay validate` (POST /v1/validate) checks of a task: answers whose verdict a well-posed task
    fixes, and what to read in their results. This base checks nothing (a judge has no verdict of its
    own to check); a task declares its own as `Scorer.validation`."""

    # How `assay validate --gate TASK` keeps proposed tasks of this task (assay.registry.gate); None: it
    # cannot establish a proposal's answer.
    gate: Gate | None = None

    def row(self, row: dict[str, Any], model: type[Item] = Item) -> dict[str, Any]:
        """The item fields of one row of a task file that names this task (a repository task's row may
        be a SWE-bench instance), whose items are read with `model` (`Scorer.item_model`: the fields it
        may keep); this base keeps the row as it is. An override without `model` is still called, with
        the row alone."""
        return row

    def check_prompt(self, item: Item) -> list[Finding]:
        """Findings on the task as written, before any probe (a math reference given away in the prompt)."""
        return []

    def recheck(self, settings: Settings) -> Recheck | None:
        """The check of tasks that passed their probes, for one run; None: the task has none."""
        return None

    def most(self, repeats: int) -> int:
        """The most probes one item can need (sizes a request's budget)."""
        return 0

    def probes(self, index: int, item: Item, repeats: int) -> list[ValidationProbe]:
        """The reference (accepted; `repeats` runs where a verdict could vary) and trivial answers
        (rejected)."""
        return []

    def read_reference(self, result: Result) -> list[Finding]:
        """Findings on the first run of an accepted probe the task judged correct."""
        return []

    def read_repeats(self, runs: Sequence[Result]) -> list[Finding]:
        """Findings across two or more `ok` runs of the same accepted probe."""
        return []


class Source:
    """Where a task's items come from besides a file: a generator drawn by a spec (reasoning-gym's
    datasets by name, size and seed), so a run config names the draw, not a file (`data.source`). This
    base has none; a task declares its own as `Scorer.source`."""

    def rows(self, spec: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The items (as rows: prompt, reference, task and the task's own fields) that `spec` draws;
        ConfigError says what is wrong with the spec."""
        raise ConfigError("this task draws no items: give a data file")


class Audit:
    """What `assay audit` tries on a task: reward hacks written as a policy would, with honest controls
    (assay.registry.audit). This base tries nothing; a task declares its own as `Scorer.audit`."""

    def probes(self, seed: int) -> list[AuditProbe]:
        return []

    def settings(self, settings: Settings, workdir: Path) -> Settings:
        """`settings` with what the probes need written under `workdir` (the SQL probes' database)."""
        return settings


class Scorer(Generic[OptionsT]):
    """Base class of every task. Subclasses set the class attributes and implement `score`.

    Generic over its options model (`class MathScorer(Scorer[MathOptions])`): the pipeline validates an
    item's options with `Options` before calling `score`, so a scorer never re-checks their type."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    Options: ClassVar[type[TaskOptions]] = TaskOptions
    # `Item`'s fields the task reads, for /v1/tasks (which lists its own `Fields` after them)
    item_fields: ClassVar[tuple[str, ...]] = ("response",)
    # The item fields the task adds to `Item`'s (a `TaskFields`): its items are read with
    # `Item.with_fields(Fields)` (`item_model`), and it reads them typed with `Fields.of(item)`.
    Fields: ClassVar[type[TaskFields] | None] = None
    runs_in: ClassVar[Runner] = "process"
    # The kind of slot a thread-run item waits for first ("sandbox"), fairly across requests, at the
    # engine's gate (assay.engine.scheduling); None: it needs none. The gate is the only wait for that slot.
    gate: ClassVar[str | None] = None
    # The session tools the task brings, by name: "module:Class" of `assay.sessions.Tool` subclasses.
    tools: ClassVar[Mapping[str, str]] = {}
    # The task's own settings section, read from `settings.tasks[name]` (`read_section`); None: it has none.
    Section: ClassVar[type[SettingsSection] | None] = None
    validation: ClassVar[Validation] = Validation()  # what `assay validate` checks of the task
    audit: ClassVar[Audit] = Audit()  # what `assay audit` tries on it
    source: ClassVar[Source] = Source()  # items it draws from a generator (`data.source` of a run)
    # When two of its answers are one answer, for answer clusters and majority votes (issue 42).
    equivalence: ClassVar[Equivalence] = Equivalence()
    # The Ray deployment that runs this task's items under `assay serve --ray` (assay.distributed.dispatch):
    # "scorers" (CPU), "code" (sandbox slots: a task that waits at the sandbox gate), "judge", "prm".
    work: ClassVar[str] = "scorers"
    # The `assay bench` baselines (assay.bench.baselines, by name) run beside the task when none is named.
    baselines: ClassVar[tuple[str, ...]] = ()
    # Loggers of libraries that warn on every input they cannot read (a verdict here, not news): quieted
    # to ERROR in Assay's own worker processes only, never where a user builds the scorer (issue 24).
    quiet_loggers: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: OptionsT) -> float:
        """How long the pipeline waits for this item before answering `timeout`. A class method, so the
        engine reads it without building the scorer (a process-run one lives in the worker processes)."""
        return settings.deadline_s

    @classmethod
    def reviews(cls, settings: Settings) -> tuple[str, ...]:
        """The tasks whose verdicts this scorer takes a second look at (`review`) under `settings`."""
        return ()

    @classmethod
    def collectors(cls, built: Callable[[], Scorer | None]) -> list[Collector]:
        """Prometheus collectors of the numbers the scorer keeps itself (a judge's cache hits, its answer
        quality), read at scrape time from the engine's instance: `built()`, None until first used."""
        return []

    async def review(self, item: Item, result: Result) -> Result:
        """A second look at `result`, the verdict on `item` of a task in `reviews`; returns the result
        to keep. It runs on the event loop after the item is scored, bounded by this scorer's own
        `deadline_for` (past it the first verdict stands), and must not raise for a failure of its own."""
        return result

    def score(self, item: Item, options: OptionsT) -> Result:
        raise NotImplementedError

    async def ascore(self, item: Item, options: OptionsT) -> Result:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the scorer holds (pools, clients). Called once at shutdown."""

    async def aclose(self) -> None:
        """Release what is bound to the running event loop (async clients); `close` follows."""

    @classmethod
    def item_model(cls) -> type[Item]:
        """The model an item of this task is read with: `Item`, with the `Fields` of this class and of
        the scorers it extends (a plugin extending the repo task keeps the repo task's fields), and, for
        a task that is not built in, every built-in task's fields, which `Item` held before issue 36."""
        model = _ITEM_MODELS.get(cls)
        if model is None:
            own = [vars(c)["Fields"] for c in cls.__mro__ if vars(c).get("Fields") is not None]
            model = Item.with_fields(*own, *_BUILTIN.fields(cls.name))
            if _BUILTIN.loaded:  # not while the task folders import (their fields are not known yet)
                _ITEM_MODELS[cls] = model
        return model

    @classmethod
    def parse_options(cls, raw: Mapping[str, Any]) -> TaskOptions:
        """Validate an item's options; unknown keys get a "did you mean"."""
        known = set(cls.Options.model_fields)
        for key in raw:
            if key not in known:
                raise OptionsError(
                    f'unknown option "{key}" for task "{cls.name}"{did_you_mean(key, known)};'
                    f" known options: {sorted(known) or 'none'}"
                )
        try:
            return cls.Options.model_validate(dict(raw))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
            )
            raise OptionsError(f'bad options for task "{cls.name}": {problems}') from exc

    @classmethod
    def info(cls, settings: Settings | None = None) -> TaskInfo:
        return TaskInfo(
            name=cls.name,
            description=cls.description,
            item_fields=list(
                dict.fromkeys([*cls.item_fields, *(cls.Fields.model_fields if cls.Fields else ())])
            ),
            options_schema=cls.Options.model_json_schema(),
            runtime=cls.runtime_info(settings) if settings is not None else None,
            tools=list(cls.tools),
        )

    @classmethod
    def runtime_info(cls, settings: Settings) -> dict[str, Any] | None:
        """What the task's execution environment offers under `settings`; None when it has none."""
        return None


def read_section(settings: Settings, task: str, model: type[SectionT]) -> SectionT:
    """`settings.tasks[task]` read as the task's section `model` (its defaults where a key is not set);
    ConfigError names a key the section does not know (with "did you mean") or a value it refuses."""
    raw = settings.tasks.get(task, {})
    known = set(model.model_fields)
    for key in raw:
        if key not in known:
            raise ConfigError(
                f'unknown setting "tasks.{task}.{key}"{did_you_mean(key, known)};'
                f' known settings of task "{task}": {sorted(known) or "none"}'
            )
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"tasks.{task}.{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f'bad settings for task "{task}": {problems}') from exc


def _check_sections(settings: Settings, scorers: Mapping[str, type[Scorer]]) -> None:
    """Every `tasks.<task>` names a task with a section, and reads as that section (at start-up, so a
    typo fails the server before the first item, as a bad plugin path does)."""
    sectioned = {name: cls.Section for name, cls in scorers.items() if cls.Section is not None}
    for task in settings.tasks:
        if task not in sectioned:
            raise ConfigError(
                f'settings for task "{task}" (tasks.{task}), which has no section of its own'
                f"{did_you_mean(task, sectioned)}; tasks with one: {sorted(sectioned) or 'none'}"
            )
    for task, model in sectioned.items():
        read_section(settings, task, model)


def load_object(path: str, what: str = "plugin") -> Any:
    """The object a "package.module:name" path names; ConfigError says what is wrong with the path."""
    module_name, _, attr = path.partition(":")
    if not attr:
        raise ConfigError(f'{what} "{path}" must look like "package.module:name"')
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f'cannot load {what} "{path}": {exc}') from exc


def _load(path: str) -> type[Scorer]:
    obj = load_object(path)
    if not (isinstance(obj, type) and issubclass(obj, Scorer)):
        raise ConfigError(f'plugin "{path}" is not a subclass of assay.registry.Scorer')
    return obj


class _BuiltinFields:
    """The built-in tasks' own item fields (`Scorer.Fields`), read from the task folders on first use:
    what `Item(task=..., ...)` and `Item.model_validate` read an item of such a task with."""

    def __init__(self) -> None:
        self._by_task: dict[str, type[TaskFields] | None] | None = None
        self._names: frozenset[str] = frozenset()
        self._loading = False

    def _found(self) -> dict[str, type[TaskFields] | None]:
        if self._by_task is None and not self._loading:  # an item read while the folders import: none
            self._loading = True
            try:
                scorers = [_load(path) for path in folder_tasks().values()]
            finally:
                self._loading = False
            self._names = frozenset().union(*(cls.Fields.model_fields for cls in scorers if cls.Fields))
            self._by_task = {cls.name: cls.Fields for cls in scorers}
        return self._by_task or {}

    @property
    def loaded(self) -> bool:
        return self._by_task is not None

    def fields(self, task: str) -> tuple[type[TaskFields], ...]:
        found = self._found()
        if task in found:
            own = found[task]
            return () if own is None else (own,)
        return tuple(f for f in found.values() if f is not None)  # what `Item` held before issue 36

    def field_names(self) -> frozenset[str]:
        self._found()
        return self._names


_BUILTIN = _BuiltinFields()
_ITEM_MODELS: WeakKeyDictionary[type[Scorer], type[Item]] = WeakKeyDictionary()  # Scorer.item_model's
use_builtin_fields(_BUILTIN)


class Registry(Mapping[str, type[Scorer]]):
    """The tasks known to one engine. Immutable once built."""

    def __init__(self, scorers: Mapping[str, type[Scorer]]) -> None:
        self._scorers = dict(scorers)

    @classmethod
    def from_settings(cls, settings: Settings) -> Registry:
        """Built-in tasks and entry-point plugins, then `settings.plugins` (which may override)."""
        found = {name: _load(path) for name, path in folder_tasks().items()}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            found[ep.name] = _load(ep.value)
        for path in settings.plugins:
            scorer = _load(path)
            found[scorer.name] = scorer
        _check_sections(settings, found)
        return cls(found)

    def __getitem__(self, name: str) -> type[Scorer]:
        return self._scorers[name]

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._scorers))

    def __len__(self) -> int:
        return len(self._scorers)

    def program_runner(self) -> type[Scorer] | None:
        """The task that runs one program on one stdin for `POST /run_code`: the first, by name, whose
        scorer offers `run_program(program) -> Execution` (the code task's); None when no task does."""
        return next((cls for _, cls in sorted(self._scorers.items()) if hasattr(cls, "run_program")), None)

    def item_model(self, raw: Any) -> type[Item]:
        """The model to read the raw item `raw` with: its task's (`Scorer.item_model`) when it names a
        task here, else `Item` (which then says what is wrong with it)."""
        task = raw.get("task") if isinstance(raw, Mapping) else None
        scorer = self._scorers.get(task) if isinstance(task, str) else None
        return scorer.item_model() if scorer is not None else Item

    def item_fields(self) -> frozenset[str]:
        """Every field an item of some task here may carry: `Item`'s and each task's own (`Scorer.Fields`)."""
        models = (cls.item_model() for cls in self._scorers.values())
        return frozenset(Item.FIELDS).union(*(model.model_fields for model in models))

    def lookup(self, name: str) -> type[Scorer]:
        """The scorer class for `name`, or UnknownTaskError with a suggestion."""
        try:
            return self._scorers[name]
        except KeyError:
            raise UnknownTaskError(
                f'unknown task "{name}"{did_you_mean(name, self._scorers)}; known tasks: {", ".join(self)}'
            ) from None
