"""Scorers that misbehave on purpose, loaded through `Settings.plugins` to test the pipeline's guards.

They run inside worker processes (or threads / the event loop), so they live in an importable module
rather than in a test file.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import ClassVar

from pydantic import Field

from assay.registry import Scorer, read_section
from assay.settings import Section, Settings
from assay.types import Item, Result, TaskFields, TaskOptions


class GateOptions(TaskOptions):
    gate: str = ""  # a path; the scorer holds its item until the file exists


class HangScorer(Scorer):
    """Never returns: only killing the worker ends it."""

    name: ClassVar[str] = "hang"
    runs_in = "process"

    def score(self, item: Item, options: TaskOptions) -> Result:
        while True:
            pass


class CrashScorer(Scorer):
    """Kills its own worker process."""

    name: ClassVar[str] = "crash"
    runs_in = "process"

    def score(self, item: Item, options: TaskOptions) -> Result:
        os._exit(3)


class BuggyScorer(Scorer):
    """Raises: a scorer bug must become `error`, not a lost batch."""

    name: ClassVar[str] = "buggy"
    runs_in = "process"

    def score(self, item: Item, options: TaskOptions) -> Result:
        raise ZeroDivisionError("scorer bug")


class BareBugScorer(Scorer):
    """Raises an exception with no message, in a worker or (response "thread") in a thread."""

    name: ClassVar[str] = "bare_bug"
    runs_in = "process"

    def score(self, item: Item, options: TaskOptions) -> Result:
        raise RuntimeError()


class BareBugThreadScorer(BareBugScorer):
    name: ClassVar[str] = "bare_bug_thread"
    runs_in = "thread"


class GateScorer(Scorer):
    """Holds its item in a worker until the test creates the gate file: keeps work in flight on demand."""

    name: ClassVar[str] = "gate"
    Options: ClassVar[type[TaskOptions]] = GateOptions
    runs_in = "process"

    def score(self, item: Item, options: TaskOptions) -> Result:
        assert isinstance(options, GateOptions)
        gate = Path(options.gate)
        while not gate.exists():
            time.sleep(0.005)  # sleep-ok: the workload polls its gate; tests never sleep
        return Result.verdict(item.response == item.reference, "gate opened")


class OverstayScorer(Scorer):
    """A process-run scorer that finishes, but after its own short deadline."""

    name: ClassVar[str] = "overstay"
    runs_in = "process"

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: TaskOptions) -> float:
        return 0.05

    def score(self, item: Item, options: TaskOptions) -> Result:
        time.sleep(0.2)  # sleep-ok: the workload overstays its deadline, then answers
        return Result.verdict(True, "answered late")


class SlowThreadScorer(Scorer):
    """A thread-run scorer that overstays its deadline."""

    name: ClassVar[str] = "slow_thread"
    runs_in = "thread"

    def deadline_s(self, item: Item, options: TaskOptions) -> float:  # the older, instance form
        return 0.1

    def score(self, item: Item, options: TaskOptions) -> Result:
        time.sleep(5)  # sleep-ok: the workload overstays; the pipeline must not wait for it
        return Result.verdict(True)


class HeldThreadScorer(Scorer):
    """A thread-run scorer that works 0.3 s on response "hold" and answers at once otherwise."""

    name: ClassVar[str] = "held_thread"
    runs_in = "thread"

    def score(self, item: Item, options: TaskOptions) -> Result:
        if item.response == "hold":
            time.sleep(0.3)  # sleep-ok: the workload keeps the only scoring thread busy
        return Result.verdict(True)


class SlowAsyncScorer(Scorer):
    """An async scorer that overstays its deadline, or answers at once for response "fast"."""

    name: ClassVar[str] = "slow_async"
    runs_in = "async"

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: TaskOptions) -> float:
        return 0.2

    async def ascore(self, item: Item, options: TaskOptions) -> Result:
        if item.response != "fast":
            await asyncio.sleep(30)
        return Result.graded(0.25, "answered")


class FlagOptions(TaskOptions):
    flag: str = ""  # a path the scorer creates once it holds the item


class HoldScorer(Scorer):
    """Signals that it started (creates the flag file), then never returns: work caught mid-run."""

    name: ClassVar[str] = "hold"
    Options: ClassVar[type[TaskOptions]] = FlagOptions
    runs_in = "process"

    def score(self, item: Item, options: TaskOptions) -> Result:
        assert isinstance(options, FlagOptions)
        Path(options.flag).touch()
        while True:
            time.sleep(0.05)  # sleep-ok: the workload holds its worker until it is killed


class MathReviewer(Scorer):
    """Takes a second look at every math verdict: notes it, or fails ("boom") or stalls ("stall")."""

    name: ClassVar[str] = "math_reviewer"
    runs_in = "async"

    @classmethod
    def reviews(cls, settings: Settings) -> tuple[str, ...]:
        return ("math",)

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: TaskOptions) -> float:
        return 0.3

    async def review(self, item: Item, result: Result) -> Result:
        if "boom" in (item.response or ""):
            raise RuntimeError("the reviewer broke")
        if "stall" in (item.response or ""):
            await asyncio.sleep(30)
        return result.model_copy(update={"details": {**result.details, "seen_by": self.name}})


PLUGINS = [
    f"assay_test_plugins:{cls.__name__}"
    for cls in (
        HangScorer,
        CrashScorer,
        BuggyScorer,
        GateScorer,
        OverstayScorer,
        SlowThreadScorer,
        SlowAsyncScorer,
    )
]


class GullibleMathScorer(Scorer):
    """A math verifier that can be hacked on purpose (the audit must catch it): any response that holds
    the reference as a substring is correct, so hedges, restatements and `4%` all pass."""

    name: ClassVar[str] = "gullible_math"
    runs_in = "thread"

    def score(self, item: Item, options: TaskOptions) -> Result:
        found = bool(item.reference) and item.reference in (item.response or "")
        flags = {"flags": ["reference_substring"]} if found and item.response != item.reference else {}
        return Result.verdict(found, "the reference occurs in the response", details=flags)


class LimitSettings(Section):
    limit: int = Field(3, ge=1)


class SectionedScorer(Scorer):
    """A task with a settings section of its own (`tasks.sectioned`): its reward is the limit set."""

    name: ClassVar[str] = "sectioned"
    Section: ClassVar[type[Section] | None] = LimitSettings
    runs_in = "thread"

    def score(self, item: Item, options: TaskOptions) -> Result:
        return Result.graded(read_section(self.settings, self.name, LimitSettings).limit / 10)


class KeyFields(TaskFields):
    answer_key: list[str] = Field(default_factory=list, max_length=8)


class KeyedScorer(Scorer):
    """A task whose items carry a field of their own (`answer_key`, `Scorer.Fields`): correct when the
    response is one of the keys. Run in the worker processes, so its items cross them."""

    name: ClassVar[str] = "keyed"
    Fields: ClassVar[type[TaskFields] | None] = KeyFields
    runs_in = "process"

    def score(self, item: Item, options: TaskOptions) -> Result:
        return Result.verdict((item.response or "").strip() in KeyFields.of(item).answer_key)
