"""A scorer for the cluster tests, importable by Ray replicas and their worker processes."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import ClassVar

from assay.registry import Scorer
from assay.settings import Settings
from assay.types import Item, Result, TaskOptions


class MarkedGateOptions(TaskOptions):
    gate: str = ""  # the item is held until this file exists
    marks: str = ""  # a directory: the item leaves "<pid>-<id>" there when its work starts


class MarkedGateScorer(Scorer):
    """Says where and when it started (so a test knows which replicas hold work), then waits for the gate."""

    name: ClassVar[str] = "marked_gate"
    Options: ClassVar[type[TaskOptions]] = MarkedGateOptions
    runs_in = "process"

    @classmethod
    def deadline_for(cls, settings: Settings, item: Item, options: TaskOptions) -> float:
        return 120.0

    def score(self, item: Item, options: TaskOptions) -> Result:
        assert isinstance(options, MarkedGateOptions)
        (Path(options.marks) / f"{os.getpid()}-{item.id}").touch()
        gate = Path(options.gate)
        while not gate.exists():
            time.sleep(0.005)  # sleep-ok: the workload polls its gate; tests never sleep
        return Result.verdict(item.response == item.reference, f"scored by {os.getpid()}")


PLUGINS = ["ray_plugins:MarkedGateScorer"]
