"""The one driver loop of configured runs (GRPO and STaR alike): checkpoints every `every` steps and at
the end, resume from the newest checkpoint, the time budget, and the starting accuracy recorded once."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from assay.rl_client import checkpoints
from assay.rl_client.runs.driver import drive, start_accuracy


class Counting:
    """An algorithm whose state is its step and history, saved as JSON."""

    reward_requests = 0

    def __init__(self) -> None:
        self.step = 0
        self.history: list[dict[str, Any]] = []

    def train_step(self) -> dict[str, Any]:
        self.step += 1
        record = {"step": self.step}
        self.history.append(record)
        return record

    def save(self, directory: Path) -> Path:
        return checkpoints.save(directory, {}, {"step": self.step, "history": self.history})

    def load(self, directory: Path) -> None:
        _, state = checkpoints.load(directory)
        self.step, self.history = state["step"], state["history"]


def _session(out: Path, budget: float | None = None) -> Any:
    output = SimpleNamespace(tensorboard=False, keep=10, resume=True)
    return SimpleNamespace(cfg=SimpleNamespace(output=output, time_budget_s=budget), out=out, eval=["p"])


def _written(out: Path) -> list[int]:
    return [checkpoints.step_of(p) for p in sorted((out / "checkpoints").glob("step-*"))]


class Accuracy:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return 0.25 * self.calls


def test_checkpoints_every_few_steps_and_once_at_the_end(tmp_path: Path) -> None:
    evaluate = Accuracy()
    after = drive(_session(tmp_path), Counting(), evaluate, total=5, every=2, started=time.perf_counter())
    assert _written(tmp_path) == [2, 4, 5]
    assert start_accuracy(_session(tmp_path)) == 0.25 and after == 0.5  # before and after training


def test_every_zero_checkpoints_only_at_the_end(tmp_path: Path) -> None:
    drive(_session(tmp_path), Counting(), Accuracy(), total=3, every=0, started=time.perf_counter())
    assert _written(tmp_path) == [3]


def test_a_stopped_run_resumes_from_its_newest_checkpoint(tmp_path: Path) -> None:
    drive(_session(tmp_path), Counting(), Accuracy(), total=3, every=2, started=time.perf_counter())
    start = json.loads((tmp_path / "eval_start.json").read_text())
    resumed, evaluate = Counting(), Accuracy()
    drive(_session(tmp_path), resumed, evaluate, total=5, every=2, started=time.perf_counter())
    assert resumed.history == [{"step": s} for s in range(1, 6)]
    assert _written(tmp_path) == [2, 3, 4, 5]
    assert evaluate.calls == 1  # only after training: the starting accuracy is the first run's
    assert json.loads((tmp_path / "eval_start.json").read_text()) == start


def test_a_finished_run_started_again_takes_no_step_and_writes_nothing(tmp_path: Path) -> None:
    drive(_session(tmp_path), Counting(), Accuracy(), total=2, every=1, started=time.perf_counter())
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "checkpoints").rglob("*")}
    again = Counting()
    drive(_session(tmp_path), again, Accuracy(), total=2, every=1, started=time.perf_counter())
    assert again.step == 2
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "checkpoints").rglob("*")} == before


def test_the_time_budget_stops_the_loop_and_the_state_is_still_checkpointed(tmp_path: Path) -> None:
    algorithm = Counting()
    long_ago = time.perf_counter() - 100.0
    drive(_session(tmp_path, budget=10.0), algorithm, Accuracy(), total=5, every=2, started=long_ago)
    assert algorithm.step == 0
    assert _written(tmp_path) == [0]
